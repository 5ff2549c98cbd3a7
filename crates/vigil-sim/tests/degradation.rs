//! Seed 001's regime change and seed 003's suspicion storm at the cluster
//! level: the whole network degrades for 30 s (every link's latency becomes
//! a base plus an exponential jitter) at N = 100, in both modes. Classic
//! SWIM's fixed 500 ms probe timeout is exactly the fixed timeout the seeds
//! warn about; φ adapts to the slower network.

use std::time::Duration;

use vigil_sim::{Fault, Protocol, Report, Scenario, Sim, Timed};

fn degraded(protocol: Protocol, base_ms: f64, jitter_ms: f64) -> Report {
    let mut s = Scenario::new(&format!("degrade {base_ms},{jitter_ms}"), 100);
    s.protocol = protocol;
    s.duration = Duration::from_secs(200);
    s.faults.push(
        Timed::new(Duration::from_secs(100), Fault::Degrade { base_ms, jitter_ms }).lasting(Duration::from_secs(30)),
    );
    let r = Sim::new(&s).unwrap().run(&mut |_| {});
    let w = &r.fault_windows[0];
    println!(
        "{} ({protocol:?}): {} false suspicions ({} accusations), {} false deaths; during: {} probes, {:.2} msgs/member-s; after: {} false suspicions, {} probes, {:.2} msgs/member-s",
        s.name,
        r.false_suspicions,
        r.totals.accusations,
        r.false_deaths,
        w.during.totals.probes,
        w.during.messages_per_member_second,
        w.after.totals.false_suspicions,
        w.after.totals.probes,
        w.after.messages_per_member_second
    );
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r
}

#[test]
fn a_degraded_network_kills_nobody_in_phi_mode_and_raises_fewer_suspicions_than_classic_swim() {
    for (base, jitter) in [(80.0, 40.0), (300.0, 150.0)] {
        let phi = degraded(Protocol::Phi, base, jitter);
        let classic = degraded(Protocol::Classic, base, jitter);
        assert_eq!(phi.false_deaths, 0, "φ mode kills nobody at {base},{jitter}");
        assert!(phi.false_suspicions <= classic.false_suspicions);
        if classic.false_suspicions > 0 {
            assert!(phi.false_suspicions < classic.false_suspicions);
        }
        // The degradation is over when it is over: φ mode is back to its
        // steady load and raises nothing after it.
        let after = &phi.fault_windows[0].after;
        assert_eq!(after.totals.false_suspicions, 0);
        assert!(after.messages_per_member_second <= 2.0, "{}", after.messages_per_member_second);
    }
}

#[test]
fn under_heavy_degradation_classic_swim_storms_and_phi_mode_does_not() {
    // 300 ms + Exp(150 ms) one way: every classic probe's round trip is
    // longer than its 500 ms timeout.
    let phi = degraded(Protocol::Phi, 300.0, 150.0);
    let classic = degraded(Protocol::Classic, 300.0, 150.0);
    assert!(classic.totals.accusations > 100, "{}", classic.totals.accusations);
    assert!(
        phi.totals.accusations * 10 < classic.totals.accusations,
        "{} against {}",
        phi.totals.accusations,
        classic.totals.accusations
    );
    let (p, c) = (&phi.fault_windows[0].during, &classic.fault_windows[0].during);
    assert!(p.messages_per_member_second * 3.0 < c.messages_per_member_second, "{p:?} against {c:?}");
}
