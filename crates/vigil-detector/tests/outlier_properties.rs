//! Properties of passive outlier detection over arbitrary sequences of
//! outcomes, ticks, insertions and removals: never more hosts ejected than
//! the cap allows, ejection time monotone in the multiplier and within its
//! bounds, every ejection ended by a return at a tick, no panic on any
//! sequence (hostile status codes, latencies of zero and of years, times
//! out of order, hosts beyond the limit), and the latency outlier (vigil's
//! addition) found among peers.

use std::time::Duration;

use proptest::prelude::*;
use vigil_detector::Instant;
use vigil_detector::outlier::{EjectReason, LatencyConfig, Outcome, OutlierConfig, OutlierEvent, Outliers};

#[derive(Debug, Clone)]
enum Op {
    Record { host: u8, outcome: Outcome, latency_us: Option<u64> },
    Advance { ms: u64 },
    Insert { host: u8 },
    Remove { host: u8 },
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        4 => prop_oneof![Just(200u16), Just(500), Just(502), Just(503), Just(504), Just(404), any::<u16>()].prop_map(Outcome::Response),
        1 => Just(Outcome::Timeout),
        1 => Just(Outcome::ConnectFailed),
        1 => Just(Outcome::Connected),
    ]
}

fn op(hosts: u8) -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => (0..hosts, outcome(), proptest::option::of(prop_oneof![0u64..2_000_000, Just(u64::MAX / 2)]))
            .prop_map(|(host, outcome, latency_us)| Op::Record { host, outcome, latency_us }),
        4 => prop_oneof![0u64..5_000, 5_000u64..400_000].prop_map(|ms| Op::Advance { ms }),
        1 => (0..hosts).prop_map(|host| Op::Insert { host }),
    ]
}

fn config() -> impl Strategy<Value = OutlierConfig> {
    (
        1u32..8,
        prop_oneof![Just(0u32), Just(50), Just(100)],
        0u32..=100,
        any::<bool>(),
        any::<bool>(),
        0u64..20,
        any::<u64>(),
        1u32..6,
    )
        .prop_map(|(streak, enforcing, max_percent, one, split, jitter_s, seed, volume)| OutlierConfig {
            consecutive_5xx: streak,
            consecutive_gateway_failure: streak,
            consecutive_local_origin_failure: streak,
            enforcing_consecutive_gateway_failure: enforcing,
            enforcing_failure_percentage: enforcing,
            enforcing_failure_percentage_local_origin: enforcing,
            max_ejection_percent: max_percent,
            always_eject_one_host: one,
            split_local_origin_errors: split,
            max_ejection_time_jitter: Duration::from_secs(jitter_s),
            success_rate_request_volume: volume * 5,
            failure_percentage_request_volume: volume * 5,
            success_rate_minimum_hosts: 2,
            failure_percentage_minimum_hosts: 2,
            latency: Some(LatencyConfig { factor: 3.0, minimum_hosts: 2, request_volume: volume, enforcing }),
            max_hosts: 12,
            seed,
            ..OutlierConfig::envoy()
        })
}

/// The most hosts that may be out at once among `n`.
fn cap(c: &OutlierConfig, n: usize) -> usize {
    let by_percent = (c.max_ejection_percent as usize * n) / 100;
    if c.always_eject_one_host { by_percent.max(1) } else { by_percent }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    /// With hosts only ever added, the ejected never exceed the cap of the
    /// moment; every event is consistent with the configuration.
    #[test]
    fn the_cap_holds_and_ejections_are_bounded(c in config(), ops in proptest::collection::vec(op(16), 1..400)) {
        let mut od: Outliers<u8> = Outliers::new(c.clone()).unwrap();
        let mut now = Instant::from_secs(1);
        let mut out: std::collections::HashSet<u8> = Default::default();
        for op in ops {
            // `poll` hands over the events of the ticks and of the records
            // before them; `take_events` those of the records.
            let events = match op {
                Op::Record { host, outcome, latency_us } => {
                    let r = od.record(host, outcome, latency_us.map(Duration::from_micros), now);
                    // More distinct hosts than the limit are refused, not taken.
                    prop_assert!(r.is_ok() || od.len() == c.max_hosts);
                    od.take_events()
                }
                Op::Advance { ms } => {
                    now = now + Duration::from_millis(ms);
                    od.poll(now)
                }
                Op::Insert { host } => {
                    let _ = od.insert(host, now);
                    od.take_events()
                }
                Op::Remove { .. } => unreachable!("not generated here"),
            };
            for e in events {
                match e {
                    OutlierEvent::Ejected { host, at, until, multiplier, reason } => {
                        prop_assert!(out.insert(host));
                        // min(base × multiplier, max) plus at most the jitter.
                        let length = c.base_ejection_time.saturating_mul(multiplier).min(c.max_ejection_time);
                        prop_assert!(until - at >= length && until - at <= length + c.max_ejection_time_jitter);
                        prop_assert!(multiplier >= 1);
                        if !c.split_local_origin_errors {
                            prop_assert!(!matches!(reason, EjectReason::ConsecutiveLocalOriginFailure | EjectReason::LocalOriginSuccessRate));
                        }
                    }
                    OutlierEvent::Returned { host, at } => {
                        prop_assert!(out.remove(&host), "returned without having been ejected");
                        prop_assert!(at <= now);
                    }
                    OutlierEvent::NotEnforced { .. } | OutlierEvent::Overflow { .. } => {}
                }
            }
            prop_assert_eq!(od.ejected_count(), out.len());
            prop_assert!(od.ejected_count() <= cap(&c, od.len()), "{} out of {} hosts", od.ejected_count(), od.len());
        }
    }

    /// Insertions and removals in any order, times out of order: nothing
    /// panics, and the count of ejected hosts stays the count of hosts
    /// marked ejected.
    #[test]
    fn any_sequence_is_taken_without_panic(c in config(), ops in proptest::collection::vec(
        prop_oneof![op(20), (0u8..20).prop_map(|host| Op::Remove { host })], 1..400), back in any::<bool>()) {
        let mut od: Outliers<u8> = Outliers::new(c).unwrap();
        let mut now = Instant::from_secs(1_000);
        for (k, op) in ops.into_iter().enumerate() {
            match op {
                Op::Record { host, outcome, latency_us } => {
                    // Every so often a time from the past.
                    let t = if back && k % 7 == 0 { Instant::from_secs(1) } else { now };
                    let _ = od.record(host, outcome, latency_us.map(Duration::from_micros), t);
                }
                Op::Advance { ms } => {
                    now = now + Duration::from_millis(ms);
                    od.poll(now);
                }
                Op::Insert { host } => {
                    let _ = od.insert(host, now);
                }
                Op::Remove { host } => {
                    od.remove(&host);
                }
            }
            let marked = (0u8..20).filter(|h| od.is_ejected(h)).count();
            prop_assert_eq!(marked, od.ejected_count());
        }
    }

    /// A poll long after the last one does in one step what a poll at every
    /// tick would do: the same returns at the same times, the same
    /// multipliers, the same next tick.
    #[test]
    fn a_long_gap_is_caught_up_as_its_ticks_would_be(
        c in config(),
        ops in proptest::collection::vec(op(8), 1..200),
        gap_ms in 0u64..3_000_000,
    ) {
        let mut od: Outliers<u8> = Outliers::new(c.clone()).unwrap();
        let mut now = Instant::from_secs(1);
        for op in ops {
            match op {
                Op::Record { host, outcome, latency_us } => {
                    let _ = od.record(host, outcome, latency_us.map(Duration::from_micros), now);
                }
                Op::Advance { ms } => {
                    now = now + Duration::from_millis(ms);
                    od.poll(now);
                }
                Op::Insert { host } => {
                    let _ = od.insert(host, now);
                }
                Op::Remove { .. } => {}
            }
        }
        od.take_events();
        let target = now + Duration::from_millis(gap_ms);
        let mut at_once = od.clone();
        let one_step = at_once.poll(target);
        let mut stepwise = od.clone();
        let mut step_events = Vec::new();
        while let Some(t) = stepwise.next_deadline().filter(|&t| t <= target) {
            step_events.extend(stepwise.poll(t));
        }
        step_events.extend(stepwise.poll(target));
        prop_assert_eq!(one_step, step_events);
        prop_assert_eq!(at_once.next_deadline(), stepwise.next_deadline());
        prop_assert_eq!(at_once.ejected_count(), stepwise.ejected_count());
        for h in 0..8u8 {
            prop_assert_eq!(at_once.report(&h), stepwise.report(&h), "host {}", h);
        }
    }

    /// The longer a host keeps failing, the longer each ejection: lengths are
    /// non-decreasing in the multiplier, and never past the cap.
    #[test]
    fn ejection_length_is_monotone_in_the_count(base_s in 1u64..60, max_mult in 1u32..20, rounds in 1usize..30) {
        let c = OutlierConfig {
            base_ejection_time: Duration::from_secs(base_s),
            max_ejection_time: Duration::from_secs(base_s * u64::from(max_mult)),
            always_eject_one_host: true,
            ..OutlierConfig::envoy()
        };
        let mut od: Outliers<u8> = Outliers::new(c.clone()).unwrap();
        let mut now = Instant::from_secs(1);
        let mut last = Duration::ZERO;
        for _ in 0..rounds {
            for _ in 0..5 {
                od.record(0, Outcome::Response(500), None, now).unwrap();
            }
            let e = od.take_events();
            let Some(OutlierEvent::Ejected { at, until, .. }) = e.into_iter().last() else {
                return Err(TestCaseError::fail("five 500s eject"));
            };
            let length = until - at;
            prop_assert!(length >= last && length <= c.max_ejection_time);
            last = length;
            // Come back at the first tick after, and fail again at once.
            now = until + c.interval;
            od.poll(now);
            prop_assert!(!od.is_ejected(&0));
        }
    }
}

/// vigil's latency detection: among ten hosts answering in about 10 ms, one
/// answering in about 100 ms (×10, no errors) is ejected for latency, and
/// only it; a host 3× slower is not (the factor is 4).
#[test]
fn a_slow_host_is_ejected_for_latency_alone() {
    let mut od: Outliers<u8> = Outliers::new(OutlierConfig::vigil()).unwrap();
    let t = Instant::from_secs(1);
    for host in 0..10u8 {
        for k in 0..100u64 {
            let base = match host {
                3 => 100_000,
                5 => 30_000,
                _ => 10_000,
            };
            let us = base + (k * 37 % 2_000);
            od.record(host, Outcome::Response(200), Some(Duration::from_micros(us)), t).unwrap();
        }
    }
    // The first host arrived at 1 s: the first tick is at 11 s.
    let events = od.poll(Instant::from_secs(11));
    let ejected: Vec<(u8, EjectReason)> = events
        .iter()
        .filter_map(|e| match e {
            OutlierEvent::Ejected { host, reason, .. } => Some((*host, *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(ejected, [(3, EjectReason::Latency)]);
    let (ms, n) = od.report(&3).unwrap().latency_ms.unwrap();
    assert!((100.0..102.0).contains(&ms) && n == 100, "{ms} ms over {n}");
    // Envoy's preset has no latency detection.
    let mut envoy: Outliers<u8> = Outliers::new(OutlierConfig::envoy()).unwrap();
    for host in 0..10u8 {
        let us = if host == 3 { 100_000 } else { 10_000 };
        for _ in 0..100 {
            envoy.record(host, Outcome::Response(200), Some(Duration::from_micros(us)), t).unwrap();
        }
    }
    assert!(envoy.poll(Instant::from_secs(11)).is_empty());
}

/// A brownout: every host degrades together (30 % errors, ten times the
/// latency). Success rate, failure percentage and latency all compare a
/// host with its peers, so nobody stands out and nobody is ejected.
#[test]
fn a_cluster_wide_brownout_ejects_nobody() {
    let mut od: Outliers<u8> = Outliers::new(OutlierConfig::vigil()).unwrap();
    let t = Instant::from_secs(1);
    for host in 0..10u8 {
        for k in 0..200u64 {
            let outcome = if (k + u64::from(host)) % 10 < 3 && k % 4 != 0 {
                Outcome::Response(503)
            } else {
                Outcome::Response(200)
            };
            od.record(host, outcome, Some(Duration::from_millis(100 + k % 7)), t).unwrap();
        }
    }
    let events = od.poll(Instant::from_secs(11));
    assert!(events.iter().all(|e| !matches!(e, OutlierEvent::Ejected { .. })), "{events:?}");
    // Judged, not skipped: every host had its interval counted.
    assert!((0..10u8).all(|h| od.report(&h).unwrap().success_rate.is_some_and(|(r, n)| n == 200 && r < 90.0)));
}

/// An embedder that never takes the events does not make the detector grow
/// without bound: past `MAX_EVENTS` the diagnostics are counted and dropped.
#[test]
fn untaken_events_are_bounded_and_counted() {
    use vigil_detector::outlier::MAX_EVENTS;
    // Five hosts at 10 %: every streak of five is an overflow event.
    let mut od: Outliers<u8> = Outliers::new(OutlierConfig::envoy()).unwrap();
    let t = Instant::from_secs(1);
    for h in 0..5u8 {
        od.insert(h, t).unwrap();
    }
    let streaks = MAX_EVENTS as u64 + 100;
    for _ in 0..streaks * 5 {
        od.record(0, Outcome::Response(500), None, t).unwrap();
    }
    assert_eq!(od.events_dropped(), 100);
    assert_eq!(od.take_events().len(), MAX_EVENTS);
}

/// Time at the end of the range: polling there ends (there is no tick
/// after the last representable one), and a poll months past the last one
/// returns and decays hosts as its million ticks would.
#[test]
fn polls_at_the_end_of_time_and_after_long_gaps_end() {
    let mut od: Outliers<u8> = Outliers::new(OutlierConfig::vigil()).unwrap();
    let late = Instant::MAX - Duration::from_secs(25);
    od.insert(0, late).unwrap();
    for _ in 0..5 {
        od.record(0, Outcome::Response(500), None, late).unwrap();
    }
    let events = od.poll(Instant::MAX);
    assert!(events.iter().any(|e| matches!(e, OutlierEvent::Ejected { .. })));
    assert_eq!(od.next_deadline(), None, "no tick after the end of time");
    assert!(od.poll(Instant::MAX).is_empty());
    // 10,000 hosts, a poll 10^10 ms later: about 10^6 intervals.
    let mut big: Outliers<u32> = Outliers::new(OutlierConfig::vigil()).unwrap();
    for h in 0..10_000 {
        big.insert(h, Instant::ZERO).unwrap();
    }
    for _ in 0..5 {
        big.record(7, Outcome::Response(500), None, Instant::ZERO).unwrap();
    }
    // One tick's work and a closed-form catch-up (tick by tick, this poll
    // took about a minute in a debug build).
    let events = big.poll(Instant::from_millis(10_000_000_000));
    assert!(events.iter().any(|e| matches!(e, OutlierEvent::Returned { host: 7, .. })));
    assert_eq!(big.report(&7).unwrap().multiplier, 0, "decayed over the long quiet");
}
