//! The registry's policy semantics: exact firing times, dwell, hysteresis,
//! the first-heartbeat rule, unknown peers, the brake, the pause guard, and
//! one-timer scheduling checked against fine-grained polling.

use std::time::Duration;

use vigil_detector::{
    Akka, AkkaConfig, Brake, Cause, Detector, Event, Fixed, FixedConfig, HeartbeatError, HeartbeatOutcome, Instant,
    PauseGuard, Policy, PolicyId, PolicyState, Registry, RegistryConfig, UnknownPeers,
};

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

fn fixed(timeout_ms: u64) -> Fixed {
    Fixed::new(FixedConfig { timeout: Duration::from_millis(timeout_ms) }).unwrap()
}

/// A registry configuration without the brake and the pause guard, so tests
/// of other features are not affected by them.
fn plain(policies: Vec<Policy>) -> RegistryConfig {
    RegistryConfig { brake: None, pause_guard: None, ..RegistryConfig::new(policies) }
}

/// Runs the one-timer loop up to and including `until`, collecting events.
fn drive<K: std::hash::Hash + Eq + Clone, D: Detector + Clone>(
    r: &mut Registry<K, D>,
    until: Instant,
    log: &mut Vec<Event<K>>,
) {
    while let Some(d) = r.next_deadline().filter(|&d| d <= until) {
        log.extend(r.poll(d));
    }
    log.extend(r.poll(until));
}

/// (peer, policy, at) of every Suspected event.
fn suspicions<K: Clone>(log: &[Event<K>]) -> Vec<(K, PolicyId, Instant)> {
    log.iter()
        .filter_map(|e| match e {
            Event::Suspected { peer, policy, at, .. } => Some((peer.clone(), *policy, *at)),
            _ => None,
        })
        .collect()
}

fn recoveries<K: Clone>(log: &[Event<K>]) -> Vec<(K, PolicyId, Instant)> {
    log.iter()
        .filter_map(|e| match e {
            Event::Recovered { peer, policy, at, .. } => Some((peer.clone(), *policy, *at)),
            _ => None,
        })
        .collect()
}

#[test]
fn policies_fire_at_the_crossing_plus_the_dwell_exactly() {
    let policies = vec![Policy::new("route", 1.0), Policy::new("evict", 2.0).dwell(Duration::from_millis(500))];
    let mut r = Registry::new(fixed(1_000), plain(policies)).unwrap();
    r.heartbeat("a", ms(0)).unwrap();
    assert_eq!(r.next_deadline(), Some(ms(1_000)));
    let ev = r.poll(ms(1_000));
    assert_eq!(ev, vec![Event::Suspected { peer: "a", policy: PolicyId(0), at: ms(1_000), cause: Cause::Level(1.0) }]);
    // The second policy crosses at 2 s and must stay crossed for 500 ms.
    assert_eq!(r.next_deadline(), Some(ms(2_000)));
    assert!(r.poll(ms(2_000)).is_empty());
    assert_eq!(r.state(&"a", PolicyId(1)), Some(PolicyState::Crossed { since: ms(2_000) }));
    assert_eq!(r.next_deadline(), Some(ms(2_500)));
    let ev = r.poll(ms(2_500));
    assert_eq!(ev, vec![Event::Suspected { peer: "a", policy: PolicyId(1), at: ms(2_500), cause: Cause::Level(2.5) }]);
    assert_eq!(r.next_deadline(), None);
}

#[test]
fn a_late_poll_reports_the_exact_instants_in_order() {
    let policies = vec![Policy::new("route", 1.0), Policy::new("evict", 2.0).dwell(Duration::from_millis(500))];
    let mut r = Registry::new(fixed(1_000), plain(policies)).unwrap();
    r.heartbeat("a", ms(0)).unwrap();
    r.heartbeat("b", ms(300)).unwrap();
    let got = suspicions(&r.poll(ms(60_000)));
    let want = vec![
        ("a", PolicyId(0), ms(1_000)),
        ("b", PolicyId(0), ms(1_300)),
        ("a", PolicyId(1), ms(2_500)),
        ("b", PolicyId(1), ms(2_800)),
    ];
    assert_eq!(got, want);
}

#[test]
fn a_heartbeat_during_the_dwell_cancels_it_and_a_heartbeat_after_settles_first() {
    let policies = vec![Policy::new("evict", 1.0).dwell(Duration::from_secs(5))];
    let mut r = Registry::new(fixed(1_000), plain(policies)).unwrap();
    r.heartbeat("a", ms(0)).unwrap();
    // Crossed at 1 s; a heartbeat at 4 s (before 6 s) cancels the dwell.
    r.heartbeat("a", ms(4_000)).unwrap();
    assert_eq!(r.state(&"a", PolicyId(0)), Some(PolicyState::Trusted));
    let mut log = Vec::new();
    drive(&mut r, ms(9_999), &mut log);
    assert!(suspicions(&log).is_empty());
    // Crossed at 5 s, fires at 10 s. A heartbeat at 12 s, with no poll in
    // between, first settles the decision that was due at 10 s.
    r.heartbeat("a", ms(12_000)).unwrap();
    let ev = r.poll(ms(12_000));
    assert_eq!(suspicions(&ev), vec![("a", PolicyId(0), ms(10_000))]);
    assert_eq!(recoveries(&ev), vec![("a", PolicyId(0), ms(12_000))]);
}

#[test]
fn recovery_under_a_rearm_level_needs_punctual_heartbeats() {
    // Threshold 1 (the 1 s timeout), re-arm 0.5: after the heartbeat that
    // ends the silence, two more must each come within 500 ms.
    let policies = vec![Policy::new("p", 1.0).rearm(0.5).recovery_heartbeats(3)];
    let mut r = Registry::new(fixed(1_000), plain(policies)).unwrap();
    let mut log = Vec::new();
    r.heartbeat("a", ms(0)).unwrap();
    drive(&mut r, ms(1_500), &mut log);
    assert_eq!(suspicions(&log), vec![("a", PolicyId(0), ms(1_000))]);
    // 1.5 s ends it (1 of 3); 1.8 s is punctual (2); 2.4 s came at level 0.6,
    // late for the re-arm level: the count starts again (1); 2.7 s (2);
    // 2.9 s (3): recovered.
    for t in [1_500, 1_800, 2_400, 2_700] {
        r.heartbeat("a", ms(t)).unwrap();
        log.extend(r.poll(ms(t)));
        assert_eq!(r.is_suspected(&"a", PolicyId(0)), Some(true), "at {t}");
    }
    r.heartbeat("a", ms(2_900)).unwrap();
    let ev = r.poll(ms(2_900));
    assert_eq!(recoveries(&ev), vec![("a", PolicyId(0), ms(2_900))]);
    assert!(matches!(ev[0], Event::Recovered { level, .. } if level == 0.0));
}

#[test]
fn a_rearm_level_without_enough_recovery_heartbeats_is_rejected() {
    let bad = Policy::new("p", 4.0).rearm(2.0);
    assert!(bad.validate().is_err());
    assert!(Policy::new("p", 4.0).rearm(2.0).recovery_heartbeats(2).validate().is_ok());
}

#[test]
fn recovery_heartbeats_damp_flapping() {
    let policies = vec![Policy::new("p", 1.0).recovery_heartbeats(3)];
    let mut r = Registry::new(fixed(1_000), plain(policies)).unwrap();
    let mut log = Vec::new();
    r.heartbeat("a", ms(0)).unwrap();
    drive(&mut r, ms(1_500), &mut log);
    assert_eq!(suspicions(&log).len(), 1);
    // Two calm heartbeats, then a silence that crosses again: count restarts.
    for t in [1_500, 2_000, 3_200, 3_500] {
        r.heartbeat("a", ms(t)).unwrap();
        log.extend(r.poll(ms(t)));
    }
    assert!(recoveries(&log).is_empty(), "3.2 s came after a new crossing: the count restarted");
    r.heartbeat("a", ms(4_000)).unwrap();
    log.extend(r.poll(ms(4_000)));
    assert_eq!(recoveries(&log), vec![("a", PolicyId(0), ms(4_000))]);
    // While suspected nothing fires again.
    assert_eq!(suspicions(&log).len(), 1);
}

#[test]
fn registered_peers_never_heard_from_are_suspected_after_the_first_heartbeat_timeout() {
    let config = RegistryConfig {
        first_heartbeat_timeout: Some(Duration::from_millis(1_500)),
        ..plain(vec![Policy::new("route", 1.0), Policy::new("evict", 8.0).dwell(Duration::from_secs(1))])
    };
    let mut r = Registry::new(fixed(1_000), config).unwrap();
    assert_eq!(r.register("silent", ms(100)), Ok(true));
    assert_eq!(r.register("silent", ms(200)), Ok(false));
    assert_eq!(r.level(&"silent", ms(5_000)), Some(0.0));
    let mut log = Vec::new();
    drive(&mut r, ms(10_000), &mut log);
    let want_cause = Cause::NeverHeard { registered_at: ms(100) };
    let got: Vec<_> = log
        .iter()
        .map(|e| match e {
            Event::Suspected { policy, at, cause, .. } => (*policy, *at, *cause),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(got, vec![(PolicyId(0), ms(1_600), want_cause), (PolicyId(1), ms(2_600), want_cause)]);
    // The first heartbeat recovers both policies.
    r.heartbeat("silent", ms(11_000)).unwrap();
    assert_eq!(recoveries(&r.poll(ms(11_000))).len(), 2);
}

#[test]
fn unknown_peers_are_none_and_can_be_rejected() {
    let r = Registry::new(fixed(1_000), plain(vec![Policy::new("p", 1.0)])).unwrap();
    assert_eq!(r.level(&"ghost", ms(0)), None);
    assert_eq!(r.state(&"ghost", PolicyId(0)), None);
    assert_eq!(r.is_suspected(&"ghost", PolicyId(0)), None);
    assert!(r.report(&"ghost", ms(0)).is_none());
    let config =
        RegistryConfig { unknown_peers: UnknownPeers::Reject, max_peers: 2, ..plain(vec![Policy::new("p", 1.0)]) };
    let mut r = Registry::new(fixed(1_000), config).unwrap();
    assert_eq!(r.heartbeat("ghost", ms(0)), Err(HeartbeatError::UnknownPeer));
    assert_eq!(r.counters().unknown_rejected, 1);
    assert!(r.is_empty());
    r.register("a", ms(0)).unwrap();
    r.register("b", ms(0)).unwrap();
    assert_eq!(r.register("c", ms(0)), Err(HeartbeatError::Full { max_peers: 2 }));
    assert_eq!(r.heartbeat("a", ms(10)).map(|_| ()), Ok(()));
    assert_eq!(r.len(), 2);
}

#[test]
fn backwards_heartbeats_are_counted_and_change_nothing() {
    let mut r = Registry::new(fixed(1_000), plain(vec![Policy::new("p", 1.0)])).unwrap();
    r.heartbeat("a", ms(5_000)).unwrap();
    let outcome = r.heartbeat("a", ms(4_000)).unwrap();
    assert!(matches!(outcome, HeartbeatOutcome::Backwards { .. }));
    assert_eq!(r.counters().backwards, 1);
    assert_eq!(r.next_deadline(), Some(ms(6_000)));
}

#[test]
fn remove_and_reset_forget_a_peer() {
    let mut r = Registry::new(fixed(1_000), plain(vec![Policy::new("p", 1.0)])).unwrap();
    r.heartbeat("a", ms(0)).unwrap();
    r.heartbeat("b", ms(0)).unwrap();
    assert!(r.remove(&"a", ms(10)));
    assert!(!r.remove(&"a", ms(10)));
    assert_eq!(r.level(&"a", ms(10)), None);
    assert!(r.reset(&"b", ms(500)));
    // b is now registered-but-silent from 500 ms: the first-heartbeat rule
    // (1 s by default) applies, and a's old timer is gone.
    let mut log = Vec::new();
    drive(&mut r, ms(5_000), &mut log);
    assert_eq!(suspicions(&log), vec![("b", PolicyId(0), ms(1_500))]);
    // The freed slot is reused without confusing old timers.
    r.heartbeat("c", ms(6_000)).unwrap();
    let mut log = Vec::new();
    drive(&mut r, ms(10_000), &mut log);
    assert_eq!(suspicions(&log), vec![("c", PolicyId(0), ms(7_000))]);
}

#[test]
fn reports_predict_each_policys_crossing() {
    let policies = vec![Policy::new("route", 1.0), Policy::new("evict", 3.0)];
    let mut r = Registry::new(fixed(1_000), plain(policies)).unwrap();
    r.heartbeat("a", ms(0)).unwrap();
    r.heartbeat("a", ms(1_000)).unwrap();
    let report = r.report(&"a", ms(1_500)).unwrap();
    assert_eq!(report.level, 0.5);
    assert!(report.heard);
    assert_eq!(report.stats.last_interval, Some(Duration::from_secs(1)));
    let at: Vec<_> = report.policies.iter().map(|p| p.reaches_threshold_at).collect();
    assert_eq!(at, vec![Some(ms(2_000)), Some(ms(4_000))]);
}

fn braked(fraction: f64) -> RegistryConfig {
    RegistryConfig {
        brake: Some(Brake { fraction, window: Duration::from_secs(10), min_peers: 3 }),
        pause_guard: None,
        ..RegistryConfig::new(vec![
            Policy::new("route", 1.0),
            Policy::new("evict", 1.0).dwell(Duration::from_secs(5)).destructive(true),
        ])
    }
}

#[test]
fn the_brake_withholds_evictions_during_a_mass_silence_and_releases_when_peers_return() {
    let mut r = Registry::new(fixed(1_000), braked(0.3)).unwrap();
    let mut log = Vec::new();
    // Ten peers heartbeat every 500 ms; peers 0..5 are silent from 10 s to
    // 20 s (the observer lost them all at once).
    for t in (0..=19_500).step_by(500) {
        for p in 0..10u32 {
            if p >= 5 || t <= 10_000 {
                r.heartbeat(p, ms(t + u64::from(p))).unwrap();
            }
        }
        drive(&mut r, ms(t + 100), &mut log);
    }
    // Routing reacts to all five; eviction is withheld for all five.
    let routed: Vec<u32> = suspicions(&log).iter().filter(|s| s.1 == PolicyId(0)).map(|s| s.0).collect();
    assert_eq!(routed, (0..5).collect::<Vec<_>>());
    assert!(suspicions(&log).iter().all(|s| s.1 == PolicyId(0)), "no eviction: {log:?}");
    assert!(r.brake_engaged());
    let engaged: Vec<_> = log.iter().filter(|e| matches!(e, Event::BrakeEngaged { .. })).collect();
    // It engaged at the 4th crossing (4 > 0.3 × 10): 11.003 s.
    assert!(
        matches!(engaged[..], [Event::BrakeEngaged { at, crossed: 4, peers: 10 }] if *at == ms(11_003)),
        "{engaged:?}"
    );
    assert_eq!(r.counters().withheld, 5);
    // The silent peers come back, 10 ms apart.
    for p in 0..5u32 {
        r.heartbeat(p, ms(20_000 + u64::from(p) * 10)).unwrap();
    }
    let ev = r.poll(ms(20_100));
    assert!(!r.brake_engaged());
    let released: Vec<_> = ev.iter().filter(|e| matches!(e, Event::BrakeReleased { .. })).collect();
    // Released once at most 3 (0.3 × 10) remain silent, at the 2nd return;
    // the three still silent resumed their dwell and then came back too.
    assert!(
        matches!(released[..], [Event::BrakeReleased { at, resumed: 3, by_operator: false }] if *at == ms(20_010)),
        "{ev:?}"
    );
    assert_eq!(recoveries(&ev).len(), 5);
    let mut log = Vec::new();
    for t in (20_500..=40_000).step_by(500) {
        for p in 0..10u32 {
            r.heartbeat(p, ms(t + u64::from(p))).unwrap();
        }
        drive(&mut r, ms(t + 100), &mut log);
    }
    assert!(log.is_empty(), "{log:?}");
    let c = r.counters();
    assert_eq!((c.withheld, c.withheld_dropped, c.brake_engagements), (5, 2, 1));
}

#[test]
fn a_real_mass_failure_keeps_the_alarm_until_an_operator_releases_it() {
    let mut r = Registry::new(fixed(1_000), braked(0.3)).unwrap();
    for p in 0..10u32 {
        r.heartbeat(p, ms(0)).unwrap();
    }
    for p in 5..10u32 {
        r.heartbeat(p, ms(500)).unwrap();
    }
    // 0..5 never come back; 5..10 keep going.
    let mut log = Vec::new();
    for t in (1_000..=60_000).step_by(500) {
        for p in 5..10u32 {
            r.heartbeat(p, ms(t)).unwrap();
        }
        drive(&mut r, ms(t), &mut log);
    }
    assert!(r.brake_engaged());
    assert!(suspicions(&log).iter().all(|s| s.1 == PolicyId(0)));
    r.release_brake(ms(60_000));
    let mut log = Vec::new();
    for t in (60_500..=70_000).step_by(500) {
        for p in 5..10u32 {
            r.heartbeat(p, ms(t)).unwrap();
        }
        drive(&mut r, ms(t), &mut log);
    }
    assert!(matches!(log[0], Event::BrakeReleased { resumed: 5, by_operator: true, .. }), "{log:?}");
    let mut evicted: Vec<_> = suspicions(&log).into_iter().filter(|s| s.1 == PolicyId(1)).collect();
    evicted.sort();
    // Each resumed its 5 s dwell at the release.
    assert_eq!(evicted, (0..5u32).map(|p| (p, PolicyId(1), ms(65_000))).collect::<Vec<_>>());
}

#[test]
fn after_a_local_stall_nothing_fires_until_the_quiet_period_ends() {
    let config = RegistryConfig { brake: None, ..RegistryConfig::new(vec![Policy::new("p", 1.0)]) };
    let mut r = Registry::new(fixed(1_000), config).unwrap();
    r.heartbeat("a", ms(0)).unwrap();
    r.heartbeat("b", ms(0)).unwrap();
    // The observer was frozen: its first poll comes at 10 s, 9 s late.
    let ev = r.poll(ms(10_000));
    assert_eq!(
        ev,
        vec![Event::LocalPause { at: ms(10_000), lateness: Duration::from_secs(9), quiet_until: ms(15_000) }]
    );
    // a's heartbeat (queued while frozen) is processed; b stays silent.
    r.heartbeat("a", ms(10_001)).unwrap();
    assert_eq!(r.next_deadline(), Some(ms(11_001)));
    let mut log = Vec::new();
    for t in (11_000..=16_000).step_by(100) {
        r.heartbeat("a", ms(t)).unwrap();
        drive(&mut r, ms(t), &mut log);
    }
    assert_eq!(suspicions(&log), vec![("b", PolicyId(0), ms(15_000))]);
    assert_eq!(r.counters().deferred_by_pause, 1);
    assert_eq!(r.counters().local_pauses, 1);
}

#[test]
fn a_reported_local_pause_defers_decisions() {
    let config = RegistryConfig { brake: None, ..RegistryConfig::new(vec![Policy::new("p", 1.0)]) };
    let mut r = Registry::new(fixed(1_000), config).unwrap();
    r.heartbeat("a", ms(0)).unwrap();
    r.note_local_pause(ms(500), Duration::from_millis(300));
    let mut log = Vec::new();
    drive(&mut r, ms(10_000), &mut log);
    assert_eq!(suspicions(&log), vec![("a", PolicyId(0), ms(5_500))]);
}

#[test]
fn a_reported_pause_longer_than_the_quiet_period_defers_for_its_own_length() {
    // The guard's quiet period is 5 s; a reported 8 s stall keeps every
    // policy quiet for 8 s after the report.
    let config = RegistryConfig { brake: None, ..RegistryConfig::new(vec![Policy::new("p", 1.0)]) };
    let mut r = Registry::new(fixed(1_000), config).unwrap();
    r.heartbeat("a", ms(0)).unwrap();
    r.note_local_pause(ms(500), Duration::from_secs(8));
    assert_eq!(r.quiet_until(), ms(8_500));
    let mut log = Vec::new();
    drive(&mut r, ms(20_000), &mut log);
    assert_eq!(suspicions(&log), vec![("a", PolicyId(0), ms(8_500))]);
}

#[test]
fn heartbeats_taken_first_after_a_freeze_do_not_convict() {
    let config = RegistryConfig { brake: None, ..RegistryConfig::new(vec![Policy::new("p", 1.0)]) };
    let mut r = Registry::new(fixed(1_000), config).unwrap();
    r.heartbeat("a", ms(0)).unwrap();
    r.heartbeat("b", ms(0)).unwrap();
    // Frozen for 10 s; the runtime drains its socket before its timer.
    r.heartbeat("a", ms(10_001)).unwrap();
    let ev = r.poll(ms(10_002));
    assert!(matches!(ev[0], Event::LocalPause { at, .. } if at == ms(10_001)), "{ev:?}");
    // a spoke; its decision due at 1 s was deferred, then cancelled.
    assert!(suspicions(&ev).is_empty(), "{ev:?}");
    let mut log = Vec::new();
    for t in (10_500..=16_000).step_by(500) {
        r.heartbeat("a", ms(t)).unwrap();
        drive(&mut r, ms(t), &mut log);
    }
    assert_eq!(suspicions(&log), vec![("b", PolicyId(0), ms(15_001))]);
}

#[test]
fn a_slow_poll_grid_is_not_a_stall_while_heartbeats_flow() {
    let config = RegistryConfig {
        brake: None,
        pause_guard: Some(PauseGuard::default()),
        ..RegistryConfig::new(vec![Policy::new("p", 1.0)])
    };
    let mut r = Registry::new(fixed(1_000), config).unwrap();
    let mut log = Vec::new();
    // Heartbeats from a every 100 ms; b stops at 2 s; polls every 8 s.
    for t in (0..=40_000u64).step_by(100) {
        r.heartbeat("a", ms(t)).unwrap();
        if t <= 2_000 {
            r.heartbeat("b", ms(t)).unwrap();
        }
        if t % 8_000 == 0 {
            log.extend(r.poll(ms(t)));
        }
    }
    assert!(log.iter().all(|e| !matches!(e, Event::LocalPause { .. })), "{log:?}");
    assert_eq!(suspicions(&log), vec![("b", PolicyId(0), ms(3_000))]);
}

#[test]
fn one_flapping_peer_does_not_engage_the_brake() {
    let mut r = Registry::new(fixed(1_000), braked(0.3)).unwrap();
    let mut log = Vec::new();
    for p in 0..10u32 {
        r.heartbeat(p, ms(0)).unwrap();
    }
    // Peer 0 misses its heartbeat every other second; the rest are steady.
    for t in (500..=20_000u64).step_by(500) {
        for p in 1..10u32 {
            r.heartbeat(p, ms(t)).unwrap();
        }
        if t % 2_000 == 0 {
            r.heartbeat(0, ms(t)).unwrap();
        }
        drive(&mut r, ms(t), &mut log);
    }
    assert!(!r.brake_engaged());
    assert!(log.iter().all(|e| !matches!(e, Event::BrakeEngaged { .. })), "{log:?}");
}

#[test]
fn policy_ids_from_another_registry_are_not_found() {
    let mut r = Registry::new(fixed(1_000), plain(vec![Policy::new("p", 1.0)])).unwrap();
    r.heartbeat("a", ms(0)).unwrap();
    r.heartbeat("b", ms(0)).unwrap();
    assert_eq!(r.state(&"a", PolicyId(1)), None);
    assert_eq!(r.is_suspected(&"a", PolicyId(7)), None);
}

/// A small deterministic generator for the differential test.
struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn one_timer_scheduling_matches_polling_every_millisecond() {
    for seed in [1u64, 2, 3] {
        let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        // Six peers, jittered 200 ms heartbeats with random long gaps.
        let mut arrivals = Vec::new();
        for p in 0..6u32 {
            let mut t = u64::from(p) * 13;
            while t < 60_000 {
                arrivals.push((t, p));
                let gap = if rng.next().is_multiple_of(20) { 500 + rng.next() % 3_000 } else { 150 + rng.next() % 100 };
                t += gap;
            }
        }
        arrivals.sort();
        let policies = || {
            vec![
                Policy::new("route", 1.0),
                Policy::new("elect", 5.0).dwell(Duration::from_millis(300)),
                Policy::new("evict", 9.0).dwell(Duration::from_millis(700)).recovery_heartbeats(2),
            ]
        };
        let akka = Akka::new(AkkaConfig {
            acceptable_pause: Duration::ZERO,
            min_std_dev: Duration::from_millis(30),
            first_heartbeat_estimate: Duration::from_millis(200),
            ..AkkaConfig::default()
        })
        .unwrap();
        let mut timer = Registry::new(akka.clone(), plain(policies())).unwrap();
        let mut grid = Registry::new(akka, plain(policies())).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut next = 0;
        for t in 0..=65_000u64 {
            while next < arrivals.len() && arrivals[next].0 == t {
                timer.heartbeat(arrivals[next].1, ms(t)).unwrap();
                grid.heartbeat(arrivals[next].1, ms(t)).unwrap();
                next += 1;
            }
            // Timer-driven: poll only when the deadline is due.
            while let Some(d) = timer.next_deadline().filter(|&d| d <= ms(t)) {
                a.extend(timer.poll(d));
            }
            // Grid-driven: poll every millisecond.
            b.extend(grid.poll(ms(t)));
        }
        a.extend(timer.poll(ms(65_000)));
        let key = |log: &[Event<u32>]| {
            let mut v: Vec<_> = log
                .iter()
                .filter_map(|e| match e {
                    Event::Suspected { peer, policy, at, .. } => Some((*at, *peer, *policy, 'S')),
                    Event::Recovered { peer, policy, at, .. } => Some((*at, *peer, *policy, 'R')),
                    _ => None,
                })
                .collect();
            v.sort();
            v
        };
        let (ka, kb) = (key(&a), key(&b));
        assert!(ka.iter().filter(|e| e.3 == 'S').count() > 10, "seed {seed}: the scenario must exercise the policies");
        assert_eq!(ka, kb, "seed {seed}");
    }
}

#[test]
fn invalid_registry_configurations_are_rejected() {
    let bad = [
        RegistryConfig::new(vec![]),
        RegistryConfig::new(vec![Policy::new("a", 1.0), Policy::new("a", 2.0)]),
        RegistryConfig::new(vec![Policy::new("", 1.0)]),
        RegistryConfig::new(vec![Policy::new("a", f64::NAN)]),
        RegistryConfig::new(vec![Policy::new("a", 1.0).rearm(2.0)]),
        RegistryConfig::new(vec![Policy::new("a", 1.0).recovery_heartbeats(0)]),
        RegistryConfig { max_peers: 0, ..RegistryConfig::new(vec![Policy::new("a", 1.0)]) },
        RegistryConfig {
            brake: Some(Brake { fraction: 1.5, ..Brake::default() }),
            ..RegistryConfig::new(vec![Policy::new("a", 1.0)])
        },
    ];
    for config in bad {
        assert!(Registry::<u32, Fixed>::new(fixed(1_000), config.clone()).is_err(), "{config:?}");
    }
}

/// A registry retuned at some instant decides from then on as one that had
/// the new settings from the start, for every peer it had not suspected
/// before (a decision already due fires at once, at its exact instant),
/// whether the threshold goes down or up, with a dwell.
#[test]
fn a_retuned_policy_decides_as_if_it_had_always_been_so() {
    let akka = || Akka::new(AkkaConfig::default()).unwrap();
    let peers = ["a", "b", "c", "d"];
    // Each peer heartbeats every 1 s until its own last beat, then is silent.
    let last = |p: usize| 10_000 + 1_500 * p as u64;
    for (before, after, at) in [(8.0, 2.0, 12_000), (2.0, 8.0, 11_500), (8.0, 3.0, 14_700), (8.0, 0.5, 17_000)] {
        let tuned = |threshold: f64| Policy::new("route", threshold).dwell(Duration::from_millis(300));
        let mut retuned = Registry::new(akka(), plain(vec![tuned(before)])).unwrap();
        let mut always = Registry::new(akka(), plain(vec![tuned(after)])).unwrap();
        let (mut early, mut late, mut reference) = (Vec::new(), Vec::new(), Vec::new());
        let mut done = false;
        for t in (0..=20_000u64).step_by(1_000) {
            if t > at && !done {
                drive(&mut retuned, ms(at), &mut early);
                retuned.retune(tuned(after), ms(at)).unwrap();
                late.extend(retuned.poll(ms(at)));
                done = true;
            }
            for (i, p) in peers.iter().enumerate() {
                if t <= last(i) {
                    retuned.heartbeat(*p, ms(t)).unwrap();
                    always.heartbeat(*p, ms(t)).unwrap();
                }
            }
            let log = if t > at { &mut late } else { &mut early };
            drive(&mut retuned, ms(t), log);
            drive(&mut always, ms(t), &mut reference);
        }
        drive(&mut retuned, ms(60_000), &mut late);
        drive(&mut always, ms(60_000), &mut reference);
        let suspected_before: Vec<&str> = suspicions(&early).iter().map(|s| s.0).collect();
        let got = suspicions(&late);
        let want: Vec<_> = suspicions(&reference).into_iter().filter(|s| !suspected_before.contains(&s.0)).collect();
        assert_eq!(got, want, "retuned from {before} to {after} at {at} ms");
        assert!(!got.is_empty(), "something fired after the retune");
    }
}
