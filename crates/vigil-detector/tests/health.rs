//! The composition of φ and outlier detection under graded policies: which
//! signal fires which policy, when a verdict clears, and the brake on
//! destructive verdicts whichever signal asks.

use vigil_detector::health::{Health, HealthConfig, HealthEvent, HealthPolicy, Signal, Verdict};
use vigil_detector::outlier::{EjectReason, Outcome, OutlierConfig};
use vigil_detector::{Instant, Model, ModelConfig};

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

/// route: stop sending new requests (φ ≥ 2 or ejected); remove: evict (φ ≥
/// 8, destructive).
fn health(peers: &[&'static str]) -> Health<&'static str> {
    let policies =
        vec![HealthPolicy::new("route").phi(2.0).on_ejection(), HealthPolicy::new("remove").phi(8.0).destructive()];
    let mut h =
        Health::new(&ModelConfig::default_for(Model::Akka), HealthConfig::new(policies, OutlierConfig::vigil()))
            .unwrap();
    for p in peers {
        h.insert(*p, ms(0)).unwrap();
    }
    h
}

fn fired<'a>(events: &'a [HealthEvent<&'static str>], peer: &str, policy: &str) -> Option<&'a Signal> {
    events.iter().find_map(|e| match e {
        HealthEvent::Fired { peer: p, policy: q, signal, .. } if *p == peer && q == policy => Some(signal),
        _ => None,
    })
}

/// A gray failure: heartbeats on time, every request failing. Only the
/// passive signal sees it: route fires on the ejection, remove never.
#[test]
fn a_gray_failure_fires_route_on_the_ejection_only() {
    let peers = ["a", "b", "c", "d"];
    let mut h = health(&peers);
    let mut events = Vec::new();
    for s in 0..30u64 {
        for p in peers {
            h.heartbeat(p, ms(s * 1000)).unwrap();
            let code = if p == "c" && s >= 10 { 500 } else { 200 };
            h.record(p, Outcome::Response(code), None, ms(s * 1000 + 5)).unwrap();
        }
        events.extend(h.poll(ms(s * 1000 + 10)));
    }
    assert_eq!(fired(&events, "c", "route"), Some(&Signal::Ejected { reason: EjectReason::Consecutive5xx }));
    assert!(fired(&events, "c", "remove").is_none(), "heartbeats are fine: no eviction");
    for p in ["a", "b", "d"] {
        assert!(fired(&events, p, "route").is_none(), "{p}");
    }
    assert!(matches!(h.verdict(&"c", "route"), Some(Verdict::Fired(Signal::Ejected { .. }))));
}

/// A silent crash with no traffic: only φ sees it. route fires first (φ ≥
/// 2), then remove (φ ≥ 8), both on the φ signal.
#[test]
fn a_silent_crash_without_traffic_fires_both_on_phi() {
    let peers = ["a", "b", "c"];
    let mut h = health(&peers);
    let mut events = Vec::new();
    for s in 0..40u64 {
        for p in peers {
            if !(p == "b" && s >= 20) {
                h.heartbeat(p, ms(s * 1000)).unwrap();
            }
        }
        events.extend(h.poll(ms(s * 1000 + 10)));
    }
    let at = |policy: &str| {
        events.iter().find_map(|e| match e {
            HealthEvent::Fired { peer: "b", policy: q, signal: Signal::Phi { level }, at } if q == policy => {
                Some((*at, *level))
            }
            _ => None,
        })
    };
    let (route, level_route) = at("route").expect("route fired on φ");
    let (remove, level_remove) = at("remove").expect("remove fired on φ");
    assert!(route < remove, "route first");
    assert!(level_route.unwrap() >= 2.0 && level_remove.unwrap() >= 8.0);
    // The last heartbeat was at 19 s: both after it.
    assert!(route > ms(19_000));
}

/// Both signals on one peer: route fires once, on the first; it clears only
/// when neither asks any more.
#[test]
fn a_verdict_clears_only_when_both_signals_do() {
    let peers = ["a", "b", "c"];
    let mut h = health(&peers);
    // b ejected at 1 s (five 500s).
    for p in peers {
        h.heartbeat(p, ms(0)).unwrap();
    }
    for _ in 0..5 {
        h.record("b", Outcome::Response(500), None, ms(1000)).unwrap();
    }
    let e1 = h.poll(ms(1001));
    assert!(matches!(fired(&e1, "b", "route"), Some(Signal::Ejected { .. })));
    // Then b goes silent too: φ crosses 2, but route has fired already.
    let mut events = Vec::new();
    for s in 1..29u64 {
        for p in ["a", "c"] {
            h.heartbeat(p, ms(s * 1000)).unwrap();
        }
        events.extend(h.poll(ms(s * 1000 + 10)));
    }
    assert!(fired(&events, "b", "route").is_none(), "no second firing");
    // The ejection ends at the first tick after 31 s (40 s), but φ is high:
    // still fired.
    for s in 29..45u64 {
        for p in ["a", "c"] {
            h.heartbeat(p, ms(s * 1000)).unwrap();
        }
        events.extend(h.poll(ms(s * 1000 + 10)));
    }
    assert!(
        events.iter().any(|e| matches!(
            e,
            HealthEvent::Outlier(vigil_detector::outlier::OutlierEvent::Returned { host: "b", .. })
        ))
    );
    assert!(!events.iter().any(|e| matches!(e, HealthEvent::Cleared { peer: "b", .. })), "φ still asks");
    assert!(matches!(h.verdict(&"b", "route"), Some(Verdict::Fired(_))));
    // b's heartbeats come back: route clears.
    for s in 45..50u64 {
        for p in peers {
            h.heartbeat(p, ms(s * 1000)).unwrap();
        }
        events.extend(h.poll(ms(s * 1000 + 10)));
    }
    assert!(events.iter().any(|e| matches!(e, HealthEvent::Cleared { peer: "b", policy, .. } if policy == "route")));
    assert_eq!(h.verdict(&"b", "route"), Some(Verdict::Clear));
}

/// The brake: ten peers, five go silent at once. remove (destructive) fires
/// for at most 30 % (three); the other two are withheld, and one fires when
/// a removed peer comes back.
#[test]
fn the_brake_withholds_destructive_verdicts_beyond_its_share() {
    let peers = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"];
    let mut h = health(&peers);
    let silent = ["p1", "p3", "p5", "p7", "p9"];
    let mut events = Vec::new();
    for s in 0..60u64 {
        for p in peers {
            if !(silent.contains(&p) && (20..50).contains(&s)) || (p == "p1" && s >= 45) {
                h.heartbeat(p, ms(s * 1000)).unwrap();
            }
        }
        events.extend(h.poll(ms(s * 1000 + 10)));
        let count = |h: &Health<&'static str>, policy: &str| {
            let fired = peers.iter().filter(|p| matches!(h.verdict(p, policy), Some(Verdict::Fired(_)))).count();
            let withheld = peers.iter().filter(|p| matches!(h.verdict(p, policy), Some(Verdict::Withheld(_)))).count();
            (fired, withheld)
        };
        if s == 44 {
            assert_eq!(count(&h, "remove"), (3, 2), "30 % of 10 fire, the rest wait");
            // route is not destructive: all five.
            assert_eq!(count(&h, "route"), (5, 0));
        }
        if s == 46 {
            // p1 is back: whether it had fired (a slot frees and a withheld
            // peer takes it) or waited, three fire and one waits.
            assert_eq!(count(&h, "remove"), (3, 1));
            assert_eq!(count(&h, "route"), (4, 0));
        }
        if s == 59 {
            assert_eq!(count(&h, "remove"), (0, 0), "everyone is back");
        }
    }
    let withheld = events.iter().filter(|e| matches!(e, HealthEvent::Withheld { .. })).count();
    assert_eq!(withheld, 2);
}

#[test]
fn bad_compositions_are_refused() {
    let model = ModelConfig::default_for(Model::Akka);
    let only_passive = HealthConfig::new(vec![HealthPolicy::new("route").on_ejection()], OutlierConfig::vigil());
    assert!(Health::<u32>::new(&model, only_passive).is_err(), "no φ policy");
    let twice = HealthConfig::new(
        vec![HealthPolicy::new("x").phi(1.0), HealthPolicy::new("x").phi(2.0)],
        OutlierConfig::vigil(),
    );
    assert!(Health::<u32>::new(&model, twice).is_err(), "duplicate names");
    let mut brake = HealthConfig::new(vec![HealthPolicy::new("x").phi(1.0)], OutlierConfig::vigil());
    brake.brake_fraction = 0.0;
    assert!(Health::<u32>::new(&model, brake).is_err());
}

/// A peer removed while the registry still held news of it stays removed,
/// and untaken outlier diagnostics are bounded.
#[test]
fn removed_peers_stay_removed_and_diagnostics_are_bounded() {
    let peers = ["a", "b", "c"];
    let mut h = health(&peers);
    for s in 0..10u64 {
        for p in ["a", "c"] {
            h.heartbeat(p, ms(s * 1000)).unwrap();
        }
        h.poll(ms(s * 1000 + 10));
    }
    assert!(matches!(h.verdict(&"b", "route"), Some(Verdict::Fired(_))), "b is silent");
    // A heartbeat queues b's recovery; b is removed before the next poll.
    h.heartbeat("b", ms(10_000)).unwrap();
    h.remove(&"b", ms(10_001));
    h.poll(ms(10_002));
    assert!(h.report(&"b", ms(10_003)).is_none(), "no ghost of b");

    // A million server errors over ten peers, never polled: the diagnostics
    // (cap overflows) stop at the bound.
    let many: Vec<&'static str> = vec!["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"];
    let mut h = health(&many);
    for k in 0..1_000_000u64 {
        h.record(many[(k % 10) as usize], Outcome::Response(500), None, ms(1)).unwrap();
    }
    let events = h.poll(ms(2));
    assert!(events.len() <= vigil_detector::outlier::MAX_EVENTS + 10, "{} events", events.len());
    assert!(h.events_dropped() > 0);
}

/// route listens to φ and ejection; drain to ejection only.
fn split_health() -> Health<&'static str> {
    let policies = vec![HealthPolicy::new("route").phi(2.0).on_ejection(), "drain=ejection".parse().unwrap()];
    Health::new(&ModelConfig::default_for(Model::Akka), HealthConfig::new(policies, OutlierConfig::vigil())).unwrap()
}

fn eject(h: &mut Health<&'static str>, peer: &'static str, at: Instant) -> Vec<HealthEvent<&'static str>> {
    for _ in 0..5 {
        h.record(peer, Outcome::Response(500), None, at).unwrap();
    }
    h.take_events()
}

/// A peer may be judged by one signal only: φ for those heard from,
/// outcomes for those requests go to.
#[test]
fn each_signal_follows_its_own_peers() {
    let mut h = split_health();
    assert!(h.watch("a", ms(0)).unwrap());
    assert!(!h.watch("a", ms(0)).unwrap(), "already watched");
    assert!(h.track("b", ms(0)).unwrap());
    assert!(h.is_watched(&"a") && !h.is_tracked(&"a"));
    assert!(h.is_tracked(&"b") && !h.is_watched(&"b"));
    assert_eq!(h.registry().len(), 1);
    assert_eq!(h.outliers().len(), 1);
    // Only the watched one has a level and a detector; both have reports.
    assert!(h.level(&"a", ms(10)).is_some() && h.level(&"b", ms(10)).is_none());
    assert!(h.detector(&"a").is_some() && h.detector(&"b").is_none());
    let a = h.report(&"a", ms(10)).unwrap();
    assert!(a.phi.is_some() && a.outlier.is_none());
    let b = h.report(&"b", ms(10)).unwrap();
    assert!(b.phi.is_none() && b.outlier.is_some());
    // Adding the other signal, then dropping both, forgets the peer.
    h.track("a", ms(20)).unwrap();
    assert!(h.is_tracked(&"a"));
    assert!(h.unwatch(&"a", ms(30)));
    assert!(h.report(&"a", ms(30)).is_some(), "still tracked");
    assert!(h.forget(&"a", ms(30)));
    assert!(h.report(&"a", ms(30)).is_none());
    assert!(!h.unwatch(&"a", ms(30)) && !h.forget(&"a", ms(30)));
}

/// An ejection-only policy fires on the ejection, which comes first among
/// the events, and clears on the return with the ejection's reason.
#[test]
fn an_ejection_only_policy_fires_and_clears_with_the_ejection() {
    let mut h = split_health();
    for p in ["a", "b", "c"] {
        h.track(p, ms(0)).unwrap();
    }
    let events = eject(&mut h, "b", ms(1000));
    let first_verdict = events.iter().position(|e| matches!(e, HealthEvent::Fired { .. })).unwrap();
    let ejected = events
        .iter()
        .position(|e| matches!(e, HealthEvent::Outlier(vigil_detector::outlier::OutlierEvent::Ejected { .. })))
        .unwrap();
    assert!(ejected < first_verdict, "the cause before its verdicts: {events:?}");
    let reason = EjectReason::Consecutive5xx;
    assert_eq!(fired(&events, "b", "drain"), Some(&Signal::Ejected { reason }));
    assert_eq!(fired(&events, "b", "route"), Some(&Signal::Ejected { reason }));
    let since = h.report(&"b", ms(1001)).unwrap().since;
    assert_eq!(since, vec![ms(1000), ms(1000)]);
    // It returns at the first tick after 30 s.
    let events = h.poll(ms(41_000));
    let cleared: Vec<(&str, Signal)> = events
        .iter()
        .filter_map(|e| match e {
            HealthEvent::Cleared { peer: "b", policy, signal, .. } => Some((policy.as_str(), *signal)),
            _ => None,
        })
        .collect();
    assert_eq!(cleared, [("route", Signal::Ejected { reason }), ("drain", Signal::Ejected { reason })]);
}

/// A φ recovery clears with the level just after the heartbeat that
/// recovered the peer.
#[test]
fn a_recovery_carries_the_level_after_the_heartbeat() {
    let mut h = split_health();
    h.watch("a", ms(0)).unwrap();
    for s in 0..10u64 {
        h.heartbeat("a", ms(s * 1000)).unwrap();
    }
    // Polled every second (a late poll would be the observer's own stall).
    let events: Vec<_> = (10..=20u64).flat_map(|s| h.poll(ms(s * 1000))).collect();
    assert!(matches!(fired(&events, "a", "route"), Some(Signal::Phi { level: Some(l) }) if *l >= 2.0));
    h.heartbeat("a", ms(20_000)).unwrap();
    let events = h.poll(ms(20_001));
    let signal = events.iter().find_map(|e| match e {
        HealthEvent::Cleared { peer: "a", policy, signal, .. } if policy == "route" => Some(*signal),
        _ => None,
    });
    assert!(matches!(signal, Some(Signal::Phi { level: Some(l) }) if l < 2.0), "{events:?}");
}

/// Withdrawing a signal (unwatch, forget, reset) ends the verdicts only it
/// asked for without an event; one the other signal asks for stands.
#[test]
fn withdrawing_a_signal_ends_its_verdicts_quietly() {
    let mut h = split_health();
    for p in ["a", "b", "c"] {
        h.insert(p, ms(0)).unwrap();
    }
    for s in 0..10u64 {
        for p in ["a", "c"] {
            h.heartbeat(p, ms(s * 1000)).unwrap();
        }
        h.poll(ms(s * 1000));
    }
    // b was never heard from: route fired on φ (never heard) by now.
    assert!(matches!(h.verdict(&"b", "route"), Some(Verdict::Fired(Signal::Phi { level: None }))));
    // Ejected too: route keeps standing, drain fires.
    eject(&mut h, "b", ms(10_000));
    assert!(matches!(h.verdict(&"b", "drain"), Some(Verdict::Fired(Signal::Ejected { .. }))));
    // A new process under b's name: φ starts afresh, the ejection holds.
    assert!(h.reset(&"b", ms(10_001)));
    assert!(matches!(h.verdict(&"b", "route"), Some(Verdict::Fired(Signal::Ejected { .. }))));
    // Outcomes no longer followed: everything ends, quietly.
    assert!(h.forget(&"b", ms(10_002)));
    assert_eq!(h.verdict(&"b", "route"), Some(Verdict::Clear));
    assert_eq!(h.verdict(&"b", "drain"), Some(Verdict::Clear));
    assert!(!h.take_events().iter().any(|e| matches!(e, HealthEvent::Cleared { .. })));
    assert!(!h.poll(ms(10_003)).iter().any(|e| matches!(e, HealthEvent::Cleared { .. })));
    // a: silent, so route fires on φ; unwatched, the verdict ends quietly.
    let events: Vec<_> = (11..=30u64).flat_map(|s| h.poll(ms(s * 1000))).collect();
    assert!(fired(&events, "a", "route").is_some());
    h.unwatch(&"a", ms(30_001));
    assert_eq!(h.verdict(&"a", "route"), Some(Verdict::Clear));
    assert!(!h.reset(&"a", ms(30_002)), "not watched any more");
}

/// The brake's share counts every peer either signal follows: ten peers
/// tracked by their outcomes only, four ejected, three evicted.
#[test]
fn the_brake_counts_the_peers_of_both_signals() {
    let policies = vec!["evict=ejection,destructive".parse().unwrap(), HealthPolicy::new("route").phi(2.0)];
    // Outlier detection may eject them all: only the brake holds back.
    let outliers = OutlierConfig { max_ejection_percent: 100, ..OutlierConfig::vigil() };
    let mut h: Health<&'static str> =
        Health::new(&ModelConfig::default_for(Model::Akka), HealthConfig::new(policies, outliers)).unwrap();
    let peers = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"];
    for p in peers {
        h.track(p, ms(0)).unwrap();
    }
    let mut events = Vec::new();
    for p in ["p0", "p1", "p2", "p3"] {
        events.extend(eject(&mut h, p, ms(1000)));
    }
    let count = |f: fn(&HealthEvent<&'static str>) -> bool| events.iter().filter(|e| f(e)).count();
    assert_eq!(count(|e| matches!(e, HealthEvent::Outlier(vigil_detector::outlier::OutlierEvent::Ejected { .. }))), 4);
    assert_eq!(count(|e| matches!(e, HealthEvent::Fired { .. })), 3, "30 % of ten");
    assert_eq!(count(|e| matches!(e, HealthEvent::Withheld { .. })), 1);
    assert!(matches!(h.verdict(&"p3", "evict"), Some(Verdict::Withheld(Signal::Ejected { .. }))));
}

#[test]
fn a_policy_that_listens_to_nothing_is_refused() {
    let model = ModelConfig::default_for(Model::Akka);
    let deaf =
        HealthConfig::new(vec![HealthPolicy::new("route").phi(2.0), HealthPolicy::new("x")], OutlierConfig::vigil());
    assert!(Health::<u32>::new(&model, deaf).is_err());
}
