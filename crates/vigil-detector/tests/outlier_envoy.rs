//! Envoy's outlier detection, as facts from its documentation and source,
//! checked against `vigil_detector::outlier` with the compatible preset
//! (`OutlierConfig::envoy()`): inputs, and the ejections Envoy makes of
//! them.
//!
//! Sources: the `config.cluster.v3.OutlierDetection` proto documentation
//! (Envoy latest, 1.31+), the architecture overview "Outlier detection"
//! (1.38), and `source/common/upstream/outlier_detection_impl.cc`.

use std::time::Duration;

use vigil_detector::Instant;
use vigil_detector::outlier::{EjectReason, Outcome, OutlierConfig, OutlierEvent, Outliers};

const S: Duration = Duration::from_secs(1);

fn at(secs: u64) -> Instant {
    Instant::from_secs(secs)
}

/// `n` hosts h0..h{n-1}, tracked from time 0.
fn cluster(n: usize, config: OutlierConfig) -> Outliers<String> {
    let mut od = Outliers::new(config).unwrap();
    for i in 0..n {
        od.insert(format!("h{i}"), at(0)).unwrap();
    }
    od
}

fn send(od: &mut Outliers<String>, host: &str, outcomes: &[Outcome], t: Instant) {
    for &o in outcomes {
        od.record(host.to_owned(), o, None, t).unwrap();
    }
}

fn ejections(events: &[OutlierEvent<String>]) -> Vec<(String, EjectReason)> {
    events
        .iter()
        .filter_map(|e| match e {
            OutlierEvent::Ejected { host, reason, .. } => Some((host.clone(), *reason)),
            _ => None,
        })
        .collect()
}

const E500: Outcome = Outcome::Response(500);
const OK: Outcome = Outcome::Response(200);

#[test]
fn the_defaults_are_envoys() {
    let c = OutlierConfig::envoy();
    // consecutive_5xx 5 (enforced 100 %), consecutive_gateway_failure 5
    // (enforced 0 %), consecutive_local_origin_failure 5 (100 %).
    assert_eq!((c.consecutive_5xx, c.enforcing_consecutive_5xx), (5, 100));
    assert_eq!((c.consecutive_gateway_failure, c.enforcing_consecutive_gateway_failure), (5, 0));
    assert_eq!((c.consecutive_local_origin_failure, c.enforcing_consecutive_local_origin_failure), (5, 100));
    assert!(!c.split_local_origin_errors);
    // interval 10 s, base ejection 30 s, max ejection 300 s, no jitter.
    assert_eq!((c.interval, c.base_ejection_time, c.max_ejection_time), (10 * S, 30 * S, 300 * S));
    assert_eq!(c.max_ejection_time_jitter, Duration::ZERO);
    // max_ejection_percent 10, always_eject_one_host false.
    assert_eq!((c.max_ejection_percent, c.always_eject_one_host), (10, false));
    // Success rate: minimum hosts 5, request volume 100, stdev factor 1900/1000,
    // enforced 100 % (and 100 % for local origin).
    assert_eq!((c.success_rate_minimum_hosts, c.success_rate_request_volume), (5, 100));
    assert_eq!(
        (c.success_rate_stdev_factor, c.enforcing_success_rate, c.enforcing_local_origin_success_rate),
        (1.9, 100, 100)
    );
    // Failure percentage: threshold 85, minimum hosts 5, request volume 50,
    // enforced 0 % (off), local origin 0 %.
    assert_eq!(
        (c.failure_percentage_threshold, c.failure_percentage_minimum_hosts, c.failure_percentage_request_volume),
        (85, 5, 50)
    );
    assert_eq!((c.enforcing_failure_percentage, c.enforcing_failure_percentage_local_origin), (0, 0));
    // No latency detection in Envoy.
    assert!(c.latency.is_none());
}

/// "consecutive_5xx: the number of consecutive 5xx responses ... before a
/// consecutive 5xx ejection occurs": four, then a success (any non-5xx
/// resets the streak), then five.
#[test]
fn five_consecutive_5xx_eject_and_any_non_5xx_resets_the_streak() {
    let mut od = cluster(10, OutlierConfig::envoy());
    send(&mut od, "h1", &[E500, E500, E500, E500, OK, E500, E500, E500, E500], at(1));
    assert!(ejections(&od.take_events()).is_empty(), "the 200 broke the streak");
    // A 4xx is not a server error: it resets the streak too.
    send(&mut od, "h1", &[Outcome::Response(404), E500, E500, E500, E500], at(1));
    assert!(ejections(&od.take_events()).is_empty());
    send(&mut od, "h1", &[E500], at(1));
    assert_eq!(ejections(&od.take_events()), [("h1".to_owned(), EjectReason::Consecutive5xx)]);
    assert!(od.is_ejected(&"h1".to_owned()));
}

/// Since Envoy 1.28 `max_ejection_percent` is strict: the ejected hosts, the
/// new one included, must be at most that share of all hosts. At the
/// default 10 %, a cluster of 5 ejects nobody; `always_eject_one_host`
/// (1.31) allows one whatever the percent.
#[test]
fn the_ejection_cap_counts_the_host_being_ejected() {
    let mut small = cluster(5, OutlierConfig::envoy());
    send(&mut small, "h0", &[E500; 5], at(1));
    let events = small.take_events();
    assert!(matches!(&events[..], [OutlierEvent::Overflow { reason: EjectReason::Consecutive5xx, .. }]), "{events:?}");
    assert_eq!(small.ejected_count(), 0);

    let mut one = cluster(5, OutlierConfig { always_eject_one_host: true, ..OutlierConfig::envoy() });
    send(&mut one, "h0", &[E500; 5], at(1));
    send(&mut one, "h1", &[E500; 5], at(1));
    let events = one.take_events();
    assert_eq!(ejections(&events), [("h0".to_owned(), EjectReason::Consecutive5xx)], "only the first: {events:?}");
    assert!(matches!(events.last(), Some(OutlierEvent::Overflow { .. })));

    // 20 hosts at 10 %: two at once, not three.
    let mut twenty = cluster(20, OutlierConfig::envoy());
    for h in ["h0", "h1", "h2"] {
        send(&mut twenty, h, &[E500; 5], at(1));
    }
    assert_eq!(twenty.ejected_count(), 2);
}

/// Gateway failures are 502, 503 and 504; they count toward the 5xx
/// streak too. Another 5xx resets the gateway streak (not the 5xx one).
/// By default the gateway detector is not enforced.
#[test]
fn gateway_failures_count_twice_and_are_not_enforced_by_default() {
    let mut od = cluster(10, OutlierConfig::envoy());
    send(&mut od, "h0", &[Outcome::Response(502); 5], at(1));
    let events = od.take_events();
    assert!(
        matches!(
            &events[..],
            [
                OutlierEvent::NotEnforced { reason: EjectReason::ConsecutiveGatewayFailure, .. },
                OutlierEvent::Ejected { reason: EjectReason::Consecutive5xx, .. }
            ]
        ),
        "{events:?}"
    );
    // Enforced: 502, 503, 500, 504, 502, 503 — the 500 breaks the gateway
    // streak (3 after it), so only the 5xx streak (6) fires, at the fifth.
    let mut od = cluster(
        10,
        OutlierConfig { enforcing_consecutive_gateway_failure: 100, consecutive_5xx: 6, ..OutlierConfig::envoy() },
    );
    let codes = [502, 503, 500, 504, 502, 503].map(Outcome::Response);
    send(&mut od, "h0", &codes, at(1));
    assert_eq!(ejections(&od.take_events()), [("h0".to_owned(), EjectReason::Consecutive5xx)]);
    // Five gateway failures in a row, enforced, eject for that reason.
    let mut od = cluster(
        10,
        OutlierConfig { enforcing_consecutive_gateway_failure: 100, consecutive_5xx: 7, ..OutlierConfig::envoy() },
    );
    send(&mut od, "h0", &[Outcome::Response(504); 5], at(1));
    assert_eq!(ejections(&od.take_events()), [("h0".to_owned(), EjectReason::ConsecutiveGatewayFailure)]);
}

/// Not split (the default), local-origin failures are mapped to 5xx
/// (timeout 504, connection failure 503) and counted with the responses:
/// "two connect timeouts followed by a 500 give an error count of 3". Split,
/// they have a streak of their own, and the responses' streak ignores them.
#[test]
fn local_origin_failures_join_the_5xx_streak_unless_split() {
    let mixed = [Outcome::Timeout, Outcome::ConnectFailed, E500, E500, E500];
    let mut joined = cluster(10, OutlierConfig::envoy());
    send(&mut joined, "h0", &mixed, at(1));
    assert_eq!(ejections(&joined.take_events()), [("h0".to_owned(), EjectReason::Consecutive5xx)]);
    // A made connection is not counted unless split (the response follows).
    let mut od = cluster(10, OutlierConfig::envoy());
    send(&mut od, "h0", &[E500, E500, Outcome::Connected, E500, E500], at(1));
    assert_eq!(od.report(&"h0".to_owned()).unwrap().consecutive.0, 4);

    let split = OutlierConfig { split_local_origin_errors: true, ..OutlierConfig::envoy() };
    let mut od = cluster(10, split.clone());
    send(&mut od, "h0", &mixed, at(1));
    assert!(ejections(&od.take_events()).is_empty(), "2 local failures, 3 server errors: neither streak reaches 5");
    let mut od = cluster(10, split.clone());
    send(
        &mut od,
        "h0",
        &[Outcome::ConnectFailed, Outcome::Timeout, Outcome::Timeout, Outcome::ConnectFailed, Outcome::Timeout],
        at(1),
    );
    assert_eq!(ejections(&od.take_events()), [("h0".to_owned(), EjectReason::ConsecutiveLocalOriginFailure)]);
    // A made connection is a local-origin success, and resets that streak.
    let mut od = cluster(10, split);
    send(&mut od, "h0", &[Outcome::Timeout; 4], at(1));
    send(&mut od, "h0", &[Outcome::Connected, Outcome::Timeout], at(1));
    assert_eq!(od.report(&"h0".to_owned()).unwrap().consecutive.2, 1);
}

/// "The number of milliseconds is equal to base_ejection_time multiplied by
/// the number of times the host has been ejected in a row ... When ejection
/// time reaches max_ejection_time it does not increase any more." A host
/// returns at the first interval tick after its time is up.
#[test]
fn ejection_time_grows_with_the_multiplier_up_to_the_cap_and_returns_on_a_tick() {
    let mut od = cluster(10, OutlierConfig::envoy());
    let h = "h0".to_owned();
    let mut now = 1u64;
    let mut lengths = Vec::new();
    for _ in 0..12 {
        send(&mut od, "h0", &[E500; 5], at(now));
        let e = od.take_events();
        let Some(OutlierEvent::Ejected { at: from, until, multiplier, .. }) = e.last() else { panic!("{e:?}") };
        lengths.push(((*until - *from).as_secs(), *multiplier));
        // Back at the first tick (every 10 s from 0) at or after `until`.
        let back = until.as_nanos().div_ceil(10_000_000_000) * 10;
        od.poll(at(back - 1));
        assert!(od.is_ejected(&h), "still out just before the tick");
        let events = od.poll(at(back));
        assert!(events.iter().any(|e| matches!(e, OutlierEvent::Returned { .. })), "returned at {back} s");
        now = back;
    }
    let want: Vec<(u64, u32)> = [
        (30, 1),
        (60, 2),
        (90, 3),
        (120, 4),
        (150, 5),
        (180, 6),
        (210, 7),
        (240, 8),
        (270, 9),
        (300, 10),
        (300, 11),
        (300, 11),
    ]
    .to_vec();
    assert_eq!(
        lengths, want,
        "(seconds, multiplier): capped at 300 s; the multiplier stops at 11 (11 × 30 ≥ 300 + 30)"
    );
}

/// "If the host is healthy during that check, the ejection time multiplier
/// is decremented" — since 1.28, once it has been back a whole interval.
#[test]
fn the_multiplier_decays_once_a_tick_after_a_whole_interval_back() {
    let mut od = cluster(10, OutlierConfig::envoy());
    let h = "h0".to_owned();
    send(&mut od, "h0", &[E500; 5], at(1)); // out until 31 s: multiplier 1
    od.poll(at(40)); // back at 40 s
    send(&mut od, "h0", &[E500; 5], at(41)); // multiplier 2: until 101 s
    od.poll(at(110)); // back at 110 s
    assert_eq!(od.report(&h).unwrap().multiplier, 2);
    od.poll(at(119));
    assert_eq!(od.report(&h).unwrap().multiplier, 2, "not back a whole interval yet at 110 s");
    od.poll(at(120));
    assert_eq!(od.report(&h).unwrap().multiplier, 1, "120 s: back 10 s");
    od.poll(at(130));
    assert_eq!(od.report(&h).unwrap().multiplier, 0);
    od.poll(at(200));
    assert_eq!(od.report(&h).unwrap().multiplier, 0);
    // Back at multiplier 0, the next ejection lasts the base again.
    send(&mut od, "h0", &[E500; 5], at(201));
    let e = od.take_events();
    assert!(matches!(e.last(), Some(OutlierEvent::Ejected { multiplier: 1, .. })), "{e:?}");
}

/// On return the consecutive counters start again ("to avoid re-ejection on
/// very few new errors").
#[test]
fn a_returning_host_starts_its_streaks_again() {
    let mut od = cluster(10, OutlierConfig::envoy());
    send(&mut od, "h0", &[E500; 5], at(1));
    // Errors while out keep counting (traffic may still reach it).
    send(&mut od, "h0", &[E500; 3], at(2));
    od.poll(at(40));
    assert_eq!(od.report(&"h0".to_owned()).unwrap().consecutive, (0, 0, 0));
    send(&mut od, "h0", &[E500; 4], at(41));
    assert!(!od.is_ejected(&"h0".to_owned()));
}

/// Success rate, from Envoy's source: rates {50, 100, 100, 100, 100} give a
/// mean of 90, a population σ of 20 and a threshold of 90 − 1.9 × 20 = 52;
/// the host at 50 % is strictly below it. Here with ten hosts (nine at
/// 100 %: mean 95, σ 15, threshold 66.5) so that the 10 % cap admits one.
#[test]
fn success_rate_ejects_hosts_below_mean_minus_factor_sigma() {
    let mut od = cluster(10, OutlierConfig::envoy());
    for i in 0..10 {
        for k in 0..100 {
            // h3 fails every other request: 50 %, never two in a row.
            let fail = i == 3 && k % 2 == 1;
            send(&mut od, &format!("h{i}"), &[if fail { E500 } else { OK }], at(1));
        }
    }
    assert!(od.take_events().is_empty());
    let events = od.poll(at(10));
    assert_eq!(ejections(&events), [("h3".to_owned(), EjectReason::SuccessRate)]);
    let r = od.report(&"h3".to_owned()).unwrap();
    assert_eq!(r.success_rate, Some((50.0, 100)));
}

/// Success rate needs `success_rate_request_volume` (100) requests a host,
/// and at least `success_rate_minimum_hosts` (5) such hosts; equal rates
/// (σ = 0) eject nobody.
#[test]
fn success_rate_needs_volume_and_enough_hosts() {
    let run = |volume: usize, hosts_with_volume: usize, bad_rate_every: usize| {
        let mut od = cluster(10, OutlierConfig::envoy());
        for i in 0..10 {
            let n = if i < hosts_with_volume { volume } else { 99 };
            for k in 0..n {
                let fail = i == 0 && k % bad_rate_every == 1;
                send(&mut od, &format!("h{i}"), &[if fail { E500 } else { OK }], at(1));
            }
        }
        ejections(&od.poll(at(10)))
    };
    assert_eq!(run(100, 5, 2), [("h0".to_owned(), EjectReason::SuccessRate)], "5 hosts with 100 requests");
    assert!(run(100, 4, 2).is_empty(), "only 4 hosts have 100 requests");
    assert!(run(99, 10, 2).is_empty(), "nobody has 100 requests");
    // Everybody at 100 %: σ = 0, threshold = mean, nobody strictly below.
    let mut od = cluster(10, OutlierConfig::envoy());
    for i in 0..10 {
        send(&mut od, &format!("h{i}"), &[OK; 100], at(1));
    }
    assert!(ejections(&od.poll(at(10))).is_empty());
}

/// The statistics of a tick cover the interval before it only (two buckets
/// swapped at each tick).
#[test]
fn each_tick_judges_the_interval_before_it() {
    let mut od = cluster(10, OutlierConfig::envoy());
    for i in 0..10 {
        for k in 0..100 {
            let fail = i == 3 && k % 2 == 1;
            send(&mut od, &format!("h{i}"), &[if fail { E500 } else { OK }], at(1));
        }
    }
    // The tick at 10 s judges [0, 10); h3's bad interval is before it.
    od.poll(at(9));
    for i in 0..10 {
        send(&mut od, &format!("h{i}"), &[OK; 100], at(9));
    }
    // Those later requests are still in [0, 10): h3 at 150/200 = 75 %, the
    // others at 100 %: mean 97.5, σ 7.5, threshold 83.25.
    assert_eq!(ejections(&od.poll(at(10))), [("h3".to_owned(), EjectReason::SuccessRate)]);
    // The next interval has no requests: nothing to judge.
    assert!(ejections(&od.poll(at(20))).is_empty());
}

/// Failure percentage: "ejects a host if its failure percentage is greater
/// than or equal to" the threshold (85), among hosts with 50 requests, when
/// at least 5 have them; off by default (enforcement 0).
#[test]
fn failure_percentage_ejects_at_or_over_the_threshold_when_enforced() {
    // Streaks of five would eject h0 at once: a larger consecutive_5xx keeps
    // this to the interval's statistics, and success rate is not enforced.
    let build = |enforcing: u32, failures_of_h0: usize| {
        let config = OutlierConfig {
            enforcing_failure_percentage: enforcing,
            enforcing_success_rate: 0,
            consecutive_5xx: 1000,
            ..OutlierConfig::envoy()
        };
        let mut od = cluster(10, config);
        for i in 0..10 {
            for k in 0..100 {
                let fail = i == 0 && spread(k, failures_of_h0);
                send(&mut od, &format!("h{i}"), &[if fail { Outcome::Response(503) } else { OK }], at(1));
            }
        }
        od.take_events();
        od.poll(at(10))
    };
    let e = build(100, 85);
    assert_eq!(ejections(&e), [("h0".to_owned(), EjectReason::FailurePercentage)], "85 % fails ≥ 85: {e:?}");
    assert!(ejections(&build(100, 84)).is_empty(), "84 % is below");
    let off = build(0, 90);
    assert!(ejections(&off).is_empty());
    assert!(off.iter().any(|e| matches!(e, OutlierEvent::NotEnforced { reason: EjectReason::FailurePercentage, .. })));
}

/// `n` failures among 100 requests, as evenly spread as possible.
fn spread(k: usize, n: usize) -> bool {
    // Request k fails if the count of failures up to k grows here.
    (k + 1) * n / 100 > k * n / 100
}

/// "enforcing_*: the % chance that a host will be actually ejected when an
/// outlier status is detected". 2,000 detections at 30 %: 600 expected, σ
/// ≈ 20.5; a bound of ±100 (about 5 σ) cannot fail by chance in practice.
#[test]
fn enforcement_is_a_percent_chance() {
    let config = OutlierConfig {
        enforcing_consecutive_5xx: 30,
        always_eject_one_host: true,
        seed: 42,
        ..OutlierConfig::envoy()
    };
    let mut od = cluster(1, config);
    let mut ejected = 0;
    for round in 0..2000u64 {
        send(&mut od, "h0", &[E500; 5], at(round * 1000 + 1));
        if od.take_events().iter().any(|e| matches!(e, OutlierEvent::Ejected { .. })) {
            ejected += 1;
            od.poll(at(round * 1000 + 999));
        }
    }
    assert!((500..=700).contains(&ejected), "{ejected} of 2000 at 30 %");
}

/// Jitter: each ejection gets up to `max_ejection_time_jitter` more, drawn
/// from the seed, and the same seed gives the same draws.
#[test]
fn jitter_is_within_its_bound_and_seeded() {
    let run = |seed: u64| {
        let config = OutlierConfig {
            max_ejection_time_jitter: 5 * S,
            always_eject_one_host: true,
            seed,
            ..OutlierConfig::envoy()
        };
        let mut od = cluster(1, config);
        let mut extra = Vec::new();
        for round in 0..50u64 {
            let t = at(round * 10_000 + 1);
            send(&mut od, "h0", &[E500; 5], t);
            for e in od.take_events() {
                if let OutlierEvent::Ejected { at, until, multiplier, .. } = e {
                    let length = (30 * S).saturating_mul(multiplier).min(300 * S);
                    extra.push((until - at) - length);
                }
            }
            od.poll(at(round * 10_000 + 9_999));
        }
        extra
    };
    let a = run(1);
    assert_eq!(a.len(), 50);
    assert!(a.iter().all(|&j| j <= 5 * S), "{a:?}");
    assert!(a.iter().any(|&j| j > Duration::ZERO));
    assert_eq!(a, run(1));
    assert_ne!(a, run(2));
}
