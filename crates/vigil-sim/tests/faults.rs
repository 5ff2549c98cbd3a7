//! Fault scenarios at N = 100 with LAN defaults, run through the simulator
//! with its checkers on. Each prints its figures (`cargo test -p vigil-sim
//! -- --nocapture`).

use std::time::Duration;

use vigil_membership::{Config, Mode};
use vigil_sim::{Fault, Protocol, Report, Scenario, Sim};

const N: usize = 100;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn run(s: &Scenario) -> Report {
    let r = Sim::new(s).run(&mut |_| {});
    println!(
        "{}: crashes {:?}; false suspicions {}, false deaths {}, refuted {}, path problems {}, {:.2} msgs and {:.0} B per member-second, converged {:?} ms",
        s.name,
        r.crashes,
        r.false_suspicions,
        r.false_deaths,
        r.refuted,
        r.path_problems,
        r.messages_per_member_second,
        r.bytes_per_member_second,
        r.converged_ms
    );
    r
}

#[test]
fn one_crash_is_detected_by_every_survivor_in_under_4_s_median_and_twice_as_fast_as_classic_swim() {
    let mut medians = Vec::new();
    for protocol in [Protocol::Phi, Protocol::Classic] {
        let mut s = Scenario::new(&format!("crash ({protocol:?})"), N);
        s.protocol = protocol;
        s.duration = secs(60);
        s.faults.push(Fault::Crash { node: 42, at: secs(20) });
        let r = run(&s);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        let c = &r.crashes[0];
        assert_eq!(c.detected_by, N - 1, "every survivor marks it dead");
        assert_eq!(r.false_deaths, 0);
        medians.push(c.median_ms);
    }
    assert!(medians[0] <= 4_000.0, "φ mode median {} ms", medians[0]);
    assert!(medians[0] <= medians[1] / 2.0, "φ {} ms against classic {} ms", medians[0], medians[1]);
}

#[test]
fn a_three_second_pause_is_suspected_refuted_and_never_declared_dead() {
    for (seed, node) in [(1, 17), (2, 63), (3, 5)] {
        let mut s = Scenario::new("pause 3 s", N);
        s.seed = seed;
        s.duration = secs(50);
        s.faults.push(Fault::Pause { node, at: secs(20), duration: secs(3) });
        let r = run(&s);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(r.false_suspicions > 0, "the pause is noticed");
        assert!(r.refuted > 0, "and refuted");
        assert_eq!(r.false_deaths, 0, "never declared dead");
        assert_eq!(r.final_disagreements, 0);
    }
}

#[test]
fn ten_percent_loss_on_every_link_for_ten_minutes_kills_nobody() {
    let mut s = Scenario::new("10% loss, 10 min", N);
    s.duration = secs(630);
    s.faults.push(Fault::Loss { p: 0.10, at: secs(15), duration: secs(600) });
    let r = run(&s);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.false_deaths, 0);
    assert!(r.path_problems > 0, "lost heartbeats are caught by probes, not accusations");
    assert_eq!(r.final_disagreements, 0);
}

#[test]
fn a_slowed_observer_kills_nobody_else() {
    let mut s = Scenario::new("slow observer", N);
    s.duration = secs(90);
    s.faults.push(Fault::Slow { node: 30, at: secs(15), duration: secs(60), delay: secs(2) });
    let r = run(&s);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    // Deaths of others: the slow node itself may be suspected, nobody else
    // may die.
    let others_dead: u64 = r.false_deaths_of.iter().filter(|(name, _)| *name != "n30").map(|(_, n)| n).sum();
    assert_eq!(others_dead, 0, "false deaths of others");
}

#[test]
fn an_asymmetric_link_does_not_kill_either_end() {
    // Node 1 cannot reach node 2 (one direction), and separately node 2
    // cannot reach node 1; everyone else reaches both.
    for (from, to) in [(1, 2), (2, 1)] {
        let mut s = Scenario::new("asymmetric link", N);
        s.duration = secs(90);
        s.faults.push(Fault::Block { from, to, at: secs(15), duration: secs(60) });
        let r = run(&s);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.false_deaths, 0);
    }
}

#[test]
fn a_healed_partition_reconverges_within_30_s() {
    let mut s = Scenario::new("partition 60 s", N);
    s.duration = secs(140);
    s.check_liveness = false;
    s.faults.push(Fault::Partition { split: N / 2, at: secs(20), duration: secs(60) });
    s.converge_after = Some(secs(80));
    let r = run(&s);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(r.false_deaths > 0, "each side declared the other dead");
    let converged = r.converged_ms.expect("membership reconverges");
    assert!(converged - 80_000.0 <= 30_000.0, "reconverged {} ms after the heal", converged - 80_000.0);
    assert_eq!(r.final_disagreements, 0);
}

#[test]
fn a_restart_with_a_new_generation_beats_old_accusations() {
    let mut s = Scenario::new("restart", N);
    s.duration = secs(60);
    // Restarted before the old generation's death has spread.
    s.faults.push(Fault::Crash { node: 9, at: secs(20) });
    s.faults.push(Fault::Restart { node: 9, at: secs(22) });
    s.converge_after = Some(secs(22));
    let r = Sim::new(&s).keep_log(true).run(&mut |_| {});
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(r.log.iter().any(|l| l.contains("suspected n9#1")), "the old generation was accused");
    assert!(!r.log.iter().any(|l| l.contains("dead n9#2") || l.contains("suspected n9#2")));
    assert_eq!(r.false_deaths, 0, "the new generation is never declared dead");
    assert_eq!(r.final_disagreements, 0, "everyone sees the new generation alive");
    assert!(r.converged_ms.is_some());
}

#[test]
fn the_same_seed_gives_the_same_event_log() {
    let mut s = Scenario::new("determinism", 40);
    s.duration = secs(40);
    s.network.loss = 0.05;
    s.faults.push(Fault::Crash { node: 3, at: secs(10) });
    s.faults.push(Fault::Pause { node: 4, at: secs(12), duration: secs(3) });
    let a = Sim::new(&s).keep_log(true).run(&mut |_| {});
    let b = Sim::new(&s).keep_log(true).run(&mut |_| {});
    assert!(!a.log.is_empty());
    assert_eq!(a.log, b.log);
    assert_eq!(a.log_hash, b.log_hash);
    s.seed = 2;
    let c = Sim::new(&s).keep_log(true).run(&mut |_| {});
    assert_ne!(a.log, c.log);
}

#[test]
fn classic_swim_first_detection_takes_e_over_e_minus_1_periods() {
    // SWIM's analysis: with random targets and synchronised rounds, a crashed
    // member is first probed after a geometric number of rounds with
    // success probability 1 − (1 − 1/(n−1))^(n−1) ≈ 1 − 1/e, so the first
    // suspicion comes e/(e−1) ≈ 1.582 periods after a crash at a round's
    // start (each probe round ends one period after it starts).
    let n = 60;
    let p = 1.0 - (1.0 - 1.0 / (n as f64 - 1.0)).powi(n as i32 - 1);
    let expected = 1.0 / p;
    let mut total = 0.0;
    let trials = 40;
    for seed in 0..trials {
        let mut s = Scenario::new("swim analysis", n);
        s.seed = seed;
        s.duration = secs(30);
        s.check_liveness = false;
        // Just before a round starts (rounds start at whole seconds).
        s.faults.push(Fault::Crash { node: 7, at: Duration::from_millis(9_999) });
        let mut config = Config::classic_lan(0x5eed);
        config.random_probe_targets = true;
        config.stagger_timers = false;
        let r = Sim::with_config(&s, config).unwrap().keep_log(true).run(&mut |_| {});
        let first = r
            .log
            .iter()
            .filter(|l| l.contains(" suspected n7#1"))
            .map(|l| l.split(' ').next().unwrap().parse::<f64>().unwrap())
            .fold(f64::INFINITY, f64::min);
        total += (first - 9_999.0) / 1_000.0;
    }
    let mean = total / trials as f64;
    // The number of rounds is geometric with p ≈ 0.63: standard deviation
    // √(1−p)/p ≈ 0.96 rounds; over 40 trials the mean's is 0.15. Allow 3.
    println!("mean periods to first detection {mean:.3}, SWIM predicts {expected:.3}");
    assert!((mean - expected).abs() < 0.45, "mean {mean:.3} against {expected:.3}");
}

#[test]
fn a_death_reaches_everyone_within_the_retransmit_bound() {
    // Infection-style dissemination: each node passes a rumour on
    // retransmit_mult × ⌈log10(n + 1)⌉ times (12 at n = 100), to 3 members
    // per 200 ms gossip round: all of that is spent within 4 rounds of
    // learning it, so the last survivor learns of a death at most a few
    // rounds after the first.
    let mut s = Scenario::new("dissemination", N);
    s.duration = secs(40);
    s.faults.push(Fault::Crash { node: 11, at: secs(15) });
    let r = run(&s);
    let c = &r.crashes[0];
    assert_eq!(c.detected_by, N - 1);
    let config = Config::lan(0);
    assert_eq!(config.mode, Mode::Phi);
    let retransmits = f64::from(config.retransmit_mult) * ((N as f64 + 1.0).log10().ceil());
    let bound_ms = retransmits * config.gossip_interval.as_secs_f64() * 1e3;
    assert!(c.max_ms - c.first_ms <= bound_ms, "{} ms spread against {bound_ms} ms", c.max_ms - c.first_ms);
}
