//! Who survives a partition, with each downing strategy: the simulator's
//! checkers hold every run to at most one surviving side (no partition
//! ends with both sides having downed the other) and to decisions taken
//! only after `stable_after` of calm; each test adds what its strategy
//! promises. Figures are printed (`cargo test -p vigil-sim --release --test
//! downing -- --nocapture`).

use std::time::Duration;

use vigil_membership::Event;
use vigil_sim::{Downing, Fault, Report, Scenario, Sim, Timed};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Akka's default, 20 s: well above
/// the LAN preset's longest suspicion (10 s for a member that only heard
/// of it, less for its accusers), so every suspect has had its chance to
/// refute before anyone decides.
const STABLE_AFTER: u64 = 20;

fn downing(strategy: &str) -> Downing {
    let mut d = Downing::new(strategy);
    d.stable_after = Some(secs(STABLE_AFTER));
    d
}

/// `nodes` members, `strategy`, a partition at `split` from 30 s for
/// `lasting` seconds, then two minutes to heal.
fn partition(nodes: usize, split: usize, lasting: u64, strategy: &str, seed: u64) -> Scenario {
    let mut s = Scenario::new(&format!("{strategy}: {split}|{} for {lasting} s", nodes - split), nodes);
    s.seed = seed;
    s.duration = secs(30 + lasting + 120);
    s.downing = Some(downing(strategy));
    s.faults.push(Timed::new(secs(30), Fault::Partition { split }).lasting(secs(lasting)));
    s
}

fn run(s: &Scenario) -> Report {
    let r = Sim::new(s).unwrap().keep_records(true).run(&mut |_| {});
    let h = &r.heals[0];
    println!(
        "{} (seed {}): surviving sides {}, self-downed {:?}, one view {:?} ms after the heal; false deaths {}, \
         deaths by decision {}; violations {:?}",
        s.name,
        s.seed,
        h.surviving_sides,
        h.self_downed,
        h.converged_after_ms,
        r.false_deaths,
        r.downed_deaths,
        r.violations
    );
    r
}

/// Self-downs by node index.
fn self_downed(r: &Report) -> Vec<usize> {
    let mut v: Vec<usize> = r
        .events()
        .filter(|(_, i, e)| matches!(e, Event::Downed { id, .. } if id.name == format!("n{i}")))
        .map(|(_, i, _)| i)
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn keep_majority_downs_the_minority_which_rejoins_at_new_generations_after_the_heal() {
    for seed in 1..=3 {
        let s = partition(6, 4, 90, "keep-majority", seed);
        let r = run(&s);
        assert!(r.violations.is_empty(), "{}: {:?}", s.name, r.violations);
        let h = &r.heals[0];
        assert_eq!(
            (h.surviving_sides, h.self_downed),
            (1, [0, 2]),
            "{}: the two down themselves, the four go on",
            s.name
        );
        assert_eq!(self_downed(&r), [4, 5]);
        // Every death was a decision's: none a detection's mistake.
        assert_eq!(r.false_deaths, 0, "{}", s.name);
        assert!(r.downed_deaths >= 8, "{}: each of the four learned both deaths", s.name);
        // One cluster again, with the minority at new generations.
        assert!(h.converged_after_ms.is_some_and(|ms| ms <= 60_000.0), "{}: {:?}", s.name, h.converged_after_ms);
        assert_eq!(r.final_disagreements, 0);
        // The majority declared the minority's old generations dead (after
        // the removal margin), and nobody of the majority was declared dead.
        let dead: Vec<(usize, String)> = r
            .events()
            .filter_map(|(_, i, e)| match e {
                Event::Dead { id, .. } => Some((i, id.name.clone())),
                _ => None,
            })
            .collect();
        assert!(dead.iter().all(|(_, who)| who == "n4" || who == "n5"), "{}: {dead:?}", s.name);
        assert!(dead.iter().any(|(by, _)| *by < 4), "{}: the majority removed the minority", s.name);
    }
}

#[test]
fn an_even_split_keeps_the_side_with_the_lowest_address_under_keep_majority() {
    let s = partition(6, 3, 90, "keep-majority", 1);
    let r = run(&s);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!((r.heals[0].surviving_sides, r.heals[0].self_downed), (1, [0, 3]));
}

#[test]
fn no_side_survives_an_even_split_under_a_static_quorum_of_four_and_both_wait() {
    // Neither side can hold a quorum of four, so neither is threatened:
    // nobody downs anybody, and the cluster is one again after the heal.
    let s = partition(6, 3, 90, "static-quorum:size=4", 1);
    let r = run(&s);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!((r.heals[0].surviving_sides, r.heals[0].self_downed), (0, [0, 0]));
    assert!(r.heals[0].converged_after_ms.is_some_and(|ms| ms <= 10_000.0), "{:?}", r.heals[0].converged_after_ms);
    assert_eq!(r.false_deaths + r.downed_deaths, 0);
}

#[test]
fn down_all_downs_everyone_and_auto_leaves_two_clusters() {
    let s = partition(6, 4, 90, "down-all", 1);
    let r = run(&s);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!((r.heals[0].surviving_sides, r.heals[0].self_downed), (0, [4, 2]));
    // The unsafe baseline: each side declares the other dead and carries on.
    let mut s = partition(6, 4, 90, "auto", 1);
    s.downing = None;
    let r = run(&s);
    assert_eq!((r.heals[0].surviving_sides, r.heals[0].self_downed), (2, [0, 0]));
}

#[test]
fn with_a_lease_exactly_one_side_of_an_even_split_survives() {
    for seed in 1..=3 {
        let s = partition(6, 3, 90, "lease-majority", seed);
        let r = run(&s);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        let h = &r.heals[0];
        assert_eq!(h.surviving_sides, 1, "seed {seed}");
        assert!(h.self_downed == [0, 3] || h.self_downed == [3, 0], "seed {seed}: {:?}", h.self_downed);
    }
}

#[test]
fn a_crashed_member_is_downed_after_the_calm_and_the_margin() {
    let mut s = Scenario::new("keep-majority: one crash", 10);
    s.duration = secs(120);
    s.downing = Some(downing("keep-majority"));
    // Detection now includes stable-after and the removal margin.
    s.detection_bound = secs(60);
    s.faults.push(Timed::new(secs(30), Fault::Crash { node: 7 }));
    let r = Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let c = &r.crashes[0];
    assert_eq!(c.detected_by, c.survivors);
    println!("crash detected: median {:.1} s, max {:.1} s", c.median_ms / 1e3, c.max_ms / 1e3);
    // At least stable-after and the margin after the crash.
    assert!(c.first_ms >= (2 * STABLE_AFTER * 1000) as f64, "{}", c.first_ms);
    assert!(self_downed(&r).is_empty());
}

#[test]
fn one_bad_link_downs_nobody() {
    // n1 and n2 cannot hear each other for two minutes: indirect probes
    // find each alive through the others, so nobody is even unreachable.
    let mut s = Scenario::new("keep-majority: one bad link", 8);
    s.duration = secs(240);
    s.downing = Some(downing("keep-majority"));
    for (from, to) in [(1, 2), (2, 1)] {
        s.faults.push(Timed::new(secs(30), Fault::Block { from, to }).lasting(secs(120)));
    }
    let r = Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(self_downed(&r).is_empty());
    assert!(!r.events().any(|(_, _, e)| matches!(e, Event::Downed { .. } | Event::Dead { .. })));
}

#[test]
fn a_member_that_flaps_is_removed_not_the_cluster() {
    // n9 is cut off 10 s out of every 20 s for three minutes (Rapid's
    // flip-flop, on one member of ten): never 20 s of calm, so after the
    // instability margin the members decide with n9 counted unreachable.
    let mut s = Scenario::new("keep-majority: n9 flaps", 10);
    s.duration = secs(330);
    s.downing = Some(downing("keep-majority"));
    for k in 0..9 {
        s.faults.push(Timed::new(secs(30 + 20 * k), Fault::Partition { split: 9 }).lasting(secs(10)));
    }
    let r = Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
    let downs = self_downed(&r);
    let decisions: Vec<String> = r
        .events()
        .filter_map(|(t, i, e)| match e {
            Event::Decided { unstable, decision, down, .. } => Some(format!(
                "{:.0} s n{i}: {decision}{} {down:?}",
                t / 1e3,
                if *unstable { " (unstable)" } else { "" }
            )),
            _ => None,
        })
        .collect();
    println!("n9 flapping: self-downed {downs:?}; {} decisions: {decisions:?}", decisions.len());
    println!("violations {:?}; false deaths {}, deaths by decision {}", r.violations, r.false_deaths, r.downed_deaths);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(downs.iter().all(|&i| i == 9), "only the flapping member downs itself: {downs:?}");
    assert_eq!(r.false_deaths, 0);
    assert_eq!(r.final_disagreements, 0, "one cluster at the end, n9 included");
}

#[test]
fn under_a_static_quorum_the_members_left_after_their_side_crashed_re_form_and_act() {
    // Three members, a quorum of two. n2 is cut off and downs itself (one
    // of three); n0, the other side's, crashes while the partition lasts,
    // so n1 is left alone and downs itself too. Nobody that survived is
    // left to rejoin through: once the partition heals, n1 and n2 re-form
    // (they wait `stable_after` and the margin, doubled the second time),
    // hold a quorum of two between them, and down the crashed n0.
    for seed in 1..=3 {
        let mut s = partition(3, 2, 120, "static-quorum:size=2", seed);
        s.faults.push(Timed::new(secs(90), Fault::Crash { node: 0 }));
        s.duration = secs(30 + 120 + 300);
        s.check_liveness = true;
        s.outage_bound = secs(240);
        // Nobody is left to detect the crash until the two have re-formed.
        s.detection_bound = s.duration;
        let r = Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
        assert!(r.violations.is_empty(), "seed {seed}: {:?}", r.violations);
        assert_eq!(self_downed(&r), [1, 2], "seed {seed}");
        // Both declared n0 dead, by a decision of theirs after the heal.
        let healed_ms = ((30 + 120) * 1000) as f64;
        for by in [1, 2] {
            let at = r.events().find_map(|(t, i, e)| match e {
                Event::Dead { id, .. } if i == by && id.name == "n0" && t > healed_ms => Some(t),
                _ => None,
            });
            assert!(at.is_some(), "seed {seed}: n{by} never declared the crashed n0 dead after the heal");
        }
        // And they see each other alive at the end.
        assert_eq!(r.final_disagreements, 0, "seed {seed}");
    }
}

/// The fault of the real-agent test `downing_attacks.rs`
/// (`under_a_static_quorum_the_members_left_after_a_crash_re_form`), with
/// its settings (4 s of calm, 2 s of margin): n2 paused until n0 and n1
/// have downed it, then n0 crashed, so n1 is left below the quorum and
/// downs itself; n2 resumes 25 s after its pause began. The two re-form,
/// hold a quorum of two between them, and down n0: the same outcome as
/// the agents'.
#[test]
fn under_a_static_quorum_a_paused_member_and_the_one_left_after_a_crash_re_form() {
    for seed in 1..=20 {
        let mut s = Scenario::new("static-quorum:size=2: n2 paused, n0 crashed", 3);
        s.seed = seed;
        s.duration = secs(30 + 25 + 180);
        let mut d = Downing::new("static-quorum:size=2");
        d.stable_after = Some(secs(4));
        d.down_removal_margin = Some(secs(2));
        s.downing = Some(d);
        s.detection_bound = s.duration;
        s.check_liveness = true;
        s.outage_bound = secs(120);
        s.faults.push(Timed::new(secs(30), Fault::Pause { node: 2 }).lasting(secs(25)));
        s.faults.push(Timed::new(secs(44), Fault::Crash { node: 0 }));
        let r = Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
        assert!(r.violations.is_empty(), "seed {seed}: {:?}", r.violations);
        assert_eq!(self_downed(&r), [1, 2], "seed {seed}");
        let dead_n0: Vec<usize> = r
            .events()
            .filter(|(_, _, e)| matches!(e, Event::Dead { id, .. } if id.name == "n0"))
            .map(|(_, i, _)| i)
            .collect();
        assert!(dead_n0.contains(&1) && dead_n0.contains(&2), "seed {seed}: both declare n0 dead: {dead_n0:?}");
        assert_eq!(r.final_disagreements, 0, "seed {seed}");
        let one_at = r
            .events()
            .filter(|(_, i, e)| *i == 1 && matches!(e, Event::Dead { id, .. } if id.name == "n0"))
            .map(|(t, _, _)| t)
            .next()
            .unwrap();
        println!("seed {seed}: n1 declared n0 dead {:.1} s after n2 resumed", (one_at - 55_000.0) / 1e3);
    }
}

/// Every member of four is cut off from every other (three partitions at
/// once) and downs itself; at 90 s the pairs {n0, n1} and {n2, n3} reach
/// each other again, each pair back as a group through one of its own
/// while the other pair is still cut off; at 210 s that cut heals too.
/// Each pair asked the other once when it came back, unheard then; it
/// calls again each reconnect interval, and the four are one cluster
/// again well within the outage bound. (Asked only once, the two pairs
/// stayed two clusters for ever, neither knowing the other: swarm 15410.)
#[test]
fn two_groups_of_downed_members_find_each_other_once_the_cut_between_them_heals() {
    let mut s = Scenario::new("everyone alone, then two pairs, then one cut healed", 4);
    s.duration = secs(210 + 180);
    s.downing = Some(downing("keep-majority"));
    s.check_liveness = true;
    for split in [1, 3] {
        s.faults.push(Timed::new(secs(30), Fault::Partition { split }).lasting(secs(60)));
    }
    s.faults.push(Timed::new(secs(30), Fault::Partition { split: 2 }).lasting(secs(180)));
    let r = Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(self_downed(&r), [0, 1, 2, 3], "everyone alone downs itself");
    // n0 hears of n2's new process after the last heal, and the four see
    // each other alive at the end.
    let healed_ms = 210_000.0;
    let met = r
        .events()
        .find_map(|(t, i, e)| match e {
            Event::Up { id, .. } if i == 0 && id.name == "n2" && t > healed_ms => Some(t),
            _ => None,
        })
        .expect("n0 never heard n2 again after the cut between the pairs healed");
    println!("the two pairs one cluster {:.1} s after the last heal", (met - healed_ms) / 1e3);
    // One reconnect interval (10 s on the LAN preset), and the merge.
    assert!(met - healed_ms < 20_000.0, "{met}");
    assert_eq!(r.final_disagreements, 0);
}
