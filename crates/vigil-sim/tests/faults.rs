//! Fault scenarios, run through the simulator with its checkers on. Each
//! prints its figures (`cargo test -p vigil-sim --release -- --nocapture`).

use std::time::Duration;

use vigil_membership::{Config, Event, Mode};
use vigil_sim::{CLUSTER, Fault, Protocol, Report, Scenario, Sim, Timed, What};

const N: usize = 100;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn run(s: &Scenario) -> Report {
    let r = Sim::new(s).unwrap().run(&mut |_| {});
    print(s, &r);
    r
}

fn run_kept(s: &Scenario) -> Report {
    let r = Sim::new(s).unwrap().keep_records(true).run(&mut |_| {});
    print(s, &r);
    r
}

fn print(s: &Scenario, r: &Report) {
    let crashes: Vec<String> = r
        .crashes
        .iter()
        .map(|c| {
            format!(
                "n{} at {:.0} ms: {}/{} survivors, first {:.0} ms, median {:.0} ms, last {:.0} ms",
                c.node, c.at_ms, c.detected_by, c.survivors, c.first_ms, c.median_ms, c.max_ms
            )
        })
        .collect();
    println!(
        "{} ({:?}): crashes {crashes:?}; false suspicions {}, false deaths {} ({} outside the envelope), accusations {}, refuted {}, path problems {}, {:.2} msgs and {:.0} B per member-second, converged {:?} ms",
        s.name,
        s.protocol,
        r.false_suspicions,
        r.false_deaths,
        r.false_deaths_outside_envelope,
        r.totals.accusations,
        r.refuted,
        r.path_problems,
        r.messages_per_member_second,
        r.bytes_per_member_second,
        r.converged_ms
    );
}

fn both() -> [Protocol; 2] {
    [Protocol::Phi, Protocol::Classic]
}

#[test]
fn one_crash_is_detected_by_every_survivor_within_5_s_median_and_twice_as_fast_as_classic_swim() {
    let mut medians = Vec::new();
    for protocol in both() {
        let mut s = Scenario::new("crash", N);
        s.protocol = protocol;
        s.duration = secs(150);
        s.faults.push(Timed::new(secs(120), Fault::Crash { node: 42 }));
        let r = run(&s);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        let c = &r.crashes[0];
        assert_eq!(c.detected_by, N - 1, "every survivor marks it dead");
        assert_eq!(r.false_deaths, 0);
        medians.push(c.median_ms);
    }
    // memberlist measured 10.0 s on loopback at N = 100; half of it.
    assert!(medians[0] <= 5_000.0, "φ mode median {} ms", medians[0]);
    assert!(medians[0] <= medians[1] / 2.0, "φ {} ms against classic {} ms", medians[0], medians[1]);
}

/// The LAN preset on memberlist's budget: memberlist 0.2.2 measured 2.00
/// messages and about 105 payload bytes per member-second at N = 100, and
/// about 35 extra packets and 1.5 kB per member in the 30 s after a crash.
#[test]
fn the_lan_preset_stays_within_memberlists_budget_steady_and_after_a_crash() {
    let mut s = Scenario::new("budget", N);
    s.duration = secs(400);
    s.faults.push(Timed::new(secs(300), Fault::Crash { node: 17 }));
    let r = run(&s);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let steady = &r.steady;
    println!("steady {steady:?}; by kind {:?}", r.messages_by_kind);
    // Over 300 s without faults: heartbeats and push-pull, nothing else.
    assert!(steady.messages_per_member_second <= 2.0, "{}", steady.messages_per_member_second);
    assert!(steady.bytes_per_member_second <= 105.0, "{}", steady.bytes_per_member_second);
    let c = &r.crashes[0];
    let (extra_msgs, extra_bytes) = (c.extra_messages_per_member.unwrap(), c.extra_bytes_per_member.unwrap());
    assert!(extra_msgs <= 35.0, "{extra_msgs} extra messages per member");
    assert!(extra_bytes <= 1_500.0, "{extra_bytes} extra bytes per member");
    assert!(c.median_ms <= 5_000.0, "{}", c.median_ms);
}

#[test]
fn a_three_second_pause_is_suspected_refuted_and_never_declared_dead() {
    for protocol in both() {
        for (seed, node) in [(1, 17), (2, 63), (3, 5)] {
            let mut s = Scenario::new("pause 3 s", N);
            s.protocol = protocol;
            s.seed = seed;
            s.duration = secs(80);
            s.faults.push(Timed::new(secs(50), Fault::Pause { node }).lasting(secs(3)));
            let r = run(&s);
            assert!(r.violations.is_empty(), "{:?}", r.violations);
            assert_eq!(r.false_deaths, 0, "never declared dead");
            assert_eq!(r.final_disagreements, 0);
            if protocol == Protocol::Phi {
                // φ notices every pause of more than about 1.3 s; classic
                // SWIM only if a probe happens to land in it.
                assert!(r.false_suspicions > 0, "the pause is noticed");
                assert!(r.refuted > 0, "and refuted");
            }
        }
    }
}

#[test]
fn ten_percent_loss_on_every_link_for_ten_minutes_kills_nobody() {
    let mut s = Scenario::new("10% loss, 10 min", N);
    s.duration = secs(630);
    s.faults.push(Timed::new(secs(15), Fault::Loss { p: 0.10 }).lasting(secs(600)));
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
    s.faults.push(Timed::new(secs(15), Fault::Slow { node: 30, delay: secs(2) }).lasting(secs(60)));
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
        s.faults.push(Timed::new(secs(15), Fault::Block { from, to }).lasting(secs(60)));
        let r = run(&s);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.false_deaths, 0);
    }
}

#[test]
fn a_healed_partition_reconverges_within_30_s() {
    for protocol in both() {
        let mut s = Scenario::new("partition 60 s", N);
        s.protocol = protocol;
        s.duration = secs(140);
        s.faults.push(Timed::new(secs(20), Fault::Partition { split: N / 2 }).lasting(secs(60)));
        s.converge_after = Some(secs(80));
        let r = run(&s);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(r.false_deaths > 0, "each side declared the other dead");
        assert_eq!(r.false_deaths, r.false_deaths_outside_envelope, "a partition is outside the envelope");
        let converged = r.converged_ms.expect("membership reconverges");
        assert!(converged - 80_000.0 <= 30_000.0, "reconverged {} ms after the heal", converged - 80_000.0);
        assert_eq!(r.final_disagreements, 0);
    }
}

#[test]
fn a_restart_with_a_new_generation_beats_old_accusations() {
    let mut s = Scenario::new("restart", N);
    s.duration = secs(60);
    // Restarted before the old generation's death has spread.
    s.faults.push(Timed::new(secs(20), Fault::Crash { node: 9 }));
    s.faults.push(Timed::new(secs(22), Fault::Restart { node: 9 }));
    s.converge_after = Some(secs(22));
    let r = run_kept(&s);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let about = |generation: u64| {
        r.events().filter(move |(_, _, e)| match e {
            Event::Suspected { id, .. } | Event::Dead { id, .. } => id.name == "n9" && id.generation == generation,
            _ => false,
        })
    };
    assert!(about(1).count() > 0, "the old generation was accused");
    assert_eq!(about(2).count(), 0, "the new one never is");
    assert_eq!(r.false_deaths, 0, "the new generation is never declared dead");
    assert_eq!(r.final_disagreements, 0, "everyone sees the new generation alive");
    assert!(r.converged_ms.is_some());
}

#[test]
fn crash_accounting_follows_what_actually_crashed() {
    let mut s = Scenario::new("accounting", 20);
    s.duration = secs(80);
    // A restart of a running node does nothing; the crash after it is of
    // generation 1. A second crash of a node that is down does nothing.
    s.faults.push(Timed::new(secs(2), Fault::Restart { node: 3 }));
    s.faults.push(Timed::new(secs(5), Fault::Crash { node: 3 }));
    s.faults.push(Timed::new(secs(20), Fault::Crash { node: 3 }));
    // A crash, a restart, and a crash of the new generation.
    s.faults.push(Timed::new(secs(5), Fault::Crash { node: 5 }));
    s.faults.push(Timed::new(secs(30), Fault::Restart { node: 5 }));
    s.faults.push(Timed::new(secs(45), Fault::Crash { node: 5 }));
    let r = run_kept(&s);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let crashes: Vec<(usize, u64, f64)> = r.crashes.iter().map(|c| (c.node, c.generation, c.at_ms)).collect();
    assert_eq!(crashes, [(3, 1, 5_000.0), (5, 1, 5_000.0), (5, 2, 45_000.0)]);
    for c in &r.crashes {
        assert_eq!(c.detected_by, c.survivors, "{c:?}");
        assert!(c.first_ms > 0.0, "{c:?}");
    }
    let started: Vec<usize> = r
        .records
        .iter()
        .filter_map(|rec| if let What::FaultStarted { fault } = rec.what { Some(fault) } else { None })
        .collect();
    assert_eq!(started, [1, 3, 4, 5], "the restart of a running node and the repeated crash did nothing");
}

#[test]
fn the_same_seed_gives_the_same_records() {
    let mut s = Scenario::new("determinism", 40);
    s.duration = secs(40);
    s.network.loss = 0.05;
    s.faults.push(Timed::new(secs(10), Fault::Crash { node: 3 }));
    s.faults.push(Timed::new(secs(12), Fault::Pause { node: 4 }).lasting(secs(3)));
    let a = Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
    let b = Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
    assert!(!a.records.is_empty());
    assert_eq!(a.records, b.records);
    assert_eq!(a.log_hash, b.log_hash);
    s.seed = 2;
    let c = Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
    assert_ne!(a.records, c.records);
    assert_ne!(a.log_hash, c.log_hash);
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
        s.faults.push(Timed::new(Duration::from_millis(9_999), Fault::Crash { node: 7 }));
        let mut config = Config::classic_lan(CLUSTER);
        config.random_probe_targets = true;
        config.stagger_timers = false;
        let r = Sim::with_config(&s, config).unwrap().keep_records(true).run(&mut |_| {});
        let first = r
            .events()
            .filter(|(_, _, e)| matches!(e, Event::Suspected { id, .. } if id.name == "n7"))
            .map(|(at, _, _)| at)
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
    s.faults.push(Timed::new(secs(15), Fault::Crash { node: 11 }));
    let r = run(&s);
    let c = &r.crashes[0];
    assert_eq!(c.detected_by, N - 1);
    let config = Config::lan(0);
    assert_eq!(config.mode, Mode::Phi);
    let retransmits = f64::from(config.retransmit_mult) * ((N as f64 + 1.0).log10().ceil());
    let bound_ms = retransmits * config.gossip_interval.as_secs_f64() * 1e3;
    assert!(c.max_ms - c.first_ms <= bound_ms, "{} ms spread against {bound_ms} ms", c.max_ms - c.first_ms);
}

/// Monitoring goes through `vigil_detector`: any model the lab can
/// recommend runs in the protocol, with its own suspect level. Each finds a
/// crash, and none kills a healthy member under 5 % loss.
#[test]
fn any_detector_model_runs_in_the_protocol() {
    use vigil_detector::{ChenConfig, ExponentialConfig, FixedConfig, ModelConfig, NormalConfig};
    let models = [
        (
            "normal",
            ModelConfig::Normal(NormalConfig {
                window: 100,
                min_std_dev: Duration::from_millis(50),
                ..NormalConfig::default()
            }),
            8.0,
        ),
        ("exponential (Cassandra)", ModelConfig::Exponential(ExponentialConfig::default()), 1.5),
        (
            "chen",
            ModelConfig::Chen(ChenConfig { window: 100, alpha: Duration::from_millis(300), ..ChenConfig::default() }),
            1.0,
        ),
        ("fixed 2 s", ModelConfig::Fixed(FixedConfig { timeout: Duration::from_secs(2) }), 1.0),
    ];
    for (name, detector, level) in models {
        let mut s = Scenario::new(name, 50);
        s.duration = secs(150);
        s.network.loss = 0.05;
        s.faults.push(Timed::new(secs(100), Fault::Crash { node: 7 }));
        let mut config = Config::lan(CLUSTER);
        config.detector = detector;
        config.suspect_level = level;
        let r = Sim::with_config(&s, config).unwrap().run(&mut |_| {});
        print(&s, &r);
        assert!(r.violations.is_empty(), "{name}: {:?}", r.violations);
        assert_eq!(r.false_deaths, 0, "{name}");
        let c = &r.crashes[0];
        assert_eq!(c.detected_by, 49, "{name}");
        assert!(c.median_ms < 10_000.0, "{name}: {}", c.median_ms);
    }
}

/// The faster preset says what it costs: about twice the messages, about
/// half the detection time, and pauses of about 1.5 s refuted.
#[test]
fn the_fast_preset_is_about_twice_as_fast_for_about_twice_the_messages() {
    let mut s = Scenario::new("fast", N);
    s.protocol = Protocol::PhiFast;
    s.duration = secs(150);
    s.faults.push(Timed::new(secs(120), Fault::Crash { node: 42 }));
    let r = run(&s);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(r.steady.messages_per_member_second <= 4.0, "{}", r.steady.messages_per_member_second);
    assert_eq!(r.crashes[0].detected_by, N - 1);
    assert!(r.crashes[0].median_ms <= 2_500.0, "{}", r.crashes[0].median_ms);
    for seed in [1, 2, 3] {
        let mut s = Scenario::new("fast, pause 1.5 s", N);
        s.protocol = Protocol::PhiFast;
        s.seed = seed;
        s.duration = secs(80);
        s.faults
            .push(Timed::new(secs(50), Fault::Pause { node: 20 + seed as usize }).lasting(Duration::from_millis(1500)));
        let r = run(&s);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(r.refuted > 0);
        assert_eq!(r.false_deaths, 0);
    }
}

/// Accusations, false deaths, and messages and bytes per member-second of a
/// run of `config` under `loss` on every link for `secs` s at N = `n`.
fn under_loss(n: usize, config: &Config, loss: f64, secs_: u64, seed: u64) -> (u64, u64, f64, f64) {
    let mut s = Scenario::new("loss", n);
    s.seed = seed;
    s.duration = secs(secs_ + 15);
    s.check_liveness = false;
    s.faults.push(Timed::new(secs(15), Fault::Loss { p: loss }).lasting(secs(secs_)));
    let r = Sim::with_config(&s, config.clone()).unwrap().run(&mut |_| {});
    let per = (n as f64) * (secs_ + 15) as f64;
    (r.totals.accusations, r.false_deaths, r.totals.messages as f64 / per, r.totals.bytes as f64 / per)
}

/// A stream ping beside the indirect requests (memberlist's TCP ping) gets
/// through loss that drops their datagrams: at N = 20 and 10 % or 20 %
/// loss on every link for two minutes, both modes raise a fraction of the
/// accusations for no more messages, though each stream ping must first
/// get its connection's SYN and SYN-ACK through (the network's default).
/// At 40 % it is printed, not asserted: φ mode then probes more (members a
/// stream ping answered for stay alive and are probed again), and raises
/// more accusations than without.
#[test]
fn stream_pings_cut_accusations_under_loss() {
    for (name, base) in [("classic", Config::classic_lan(CLUSTER)), ("phi", Config::lan(CLUSTER))] {
        for loss in [0.1, 0.2, 0.4] {
            let mut row = Vec::new();
            for stream_ping in [false, true] {
                let mut c = base.clone();
                c.stream_ping = stream_ping;
                let (mut acc, mut deaths, mut msgs, mut bytes) = (0, 0, 0.0, 0.0);
                for seed in 1..=3 {
                    let (a, d, m, b) = under_loss(20, &c, loss, 120, seed);
                    acc += a;
                    deaths += d;
                    msgs += m / 3.0;
                    bytes += b / 3.0;
                }
                row.push((acc, deaths, msgs, bytes));
            }
            let [(a0, d0, m0, b0), (a1, d1, m1, b1)] = [row[0], row[1]];
            println!(
                "{name}, {:.0} % loss: accusations {a0} → {a1}, false deaths {d0} → {d1}, \
                 messages / member·s {m0:.2} → {m1:.2}, bytes / member·s {b0:.0} → {b1:.0}",
                loss * 100.0
            );
            if loss <= 0.2 {
                // Three seeds each: the runs are deterministic. The cuts
                // measured are 2.3 to 12 times, the least φ's at 20 %
                // (1.8 times: a lost SYN costs the ping its second); on
                // real sockets the same cut at 20 % was 2.2 and 3.4 times
                // in two runs (`scripts/versus`, the README). Two thirds
                // leaves room for a change of the protocol's draws.
                assert!(a1 * 3 <= a0 * 2, "{name}, {loss}: {a0} accusations without, {a1} with stream pings");
                assert!(m1 <= m0 * 1.1, "{name}, {loss}: no more messages ({m0:.2} → {m1:.2})");
            }
        }
    }
}

/// The classic mode against the real memberlist under loss, with streams
/// that open their connections first (`Network::connections`, the
/// default): at N = 20
/// and 10, 20 and 40 % loss on every link for 60 s, the mean over five
/// seeds of the accusations raised, against memberlist 0.2.2's in network
/// namespaces, where the loss hits both ways as here (`scripts/versus
/// --netns`, one run: 2, 37 and 133; a later run gave 1, 28 and 122).
/// Within a factor of two either way (memberlist's own runs differ by that
/// much: 13 and 22 at 20 % in two runs on 127.0.0.1), and within 5 at
/// 10 %, where the counts are a
/// handful. Without the connections the stand-in raised 0.2, 7.2 and 77.0:
/// its stream ping got through loss that stops a real one's SYN.
#[test]
fn classic_mode_accuses_as_the_real_memberlist_does_under_loss() {
    for (loss, memberlist) in [(0.1, 2.0), (0.2, 37.0), (0.4, 133.0)] {
        let mut sum = 0;
        for seed in 1..=5 {
            let mut s = Scenario::new("loss", 20);
            s.seed = seed;
            s.duration = secs(75);
            s.check_liveness = false;
            s.faults.push(Timed::new(secs(15), Fault::Loss { p: loss }).lasting(secs(60)));
            let r = Sim::with_config(&s, Config::classic_lan(CLUSTER)).unwrap().run(&mut |_| {});
            sum += r.totals.accusations;
        }
        let mean = sum as f64 / 5.0;
        println!("classic, {:.0} % loss: {mean:.1} accusations (memberlist {memberlist})", loss * 100.0);
        if loss < 0.15 {
            assert!(mean <= 5.0, "{loss}: {mean}");
        } else {
            assert!(mean >= memberlist / 2.0 && mean <= memberlist * 2.0, "{loss}: {mean} against {memberlist}");
        }
    }
}
