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
