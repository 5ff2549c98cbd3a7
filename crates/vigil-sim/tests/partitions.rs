//! Partitions of any length heal. Members keep trying to reconnect to the
//! members they believe dead for `reconnect_timeout` (a day on the LAN
//! preset), one attempt per interval; a member alone goes back to its seed.
//! The heal checker holds every run to one view within the scenario's heal
//! bound (60 s) after the partition ends. Each test prints its figures
//! (`cargo test -p vigil-sim --release --test partitions -- --nocapture`).

use std::time::Duration;

use vigil_membership::{Config, Event, Status};
use vigil_sim::{CLUSTER, Fault, Protocol, Report, Scenario, Sim, Timed, checkers};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn partition(nodes: usize, split: usize, lasting: u64, protocol: Protocol, seed: u64) -> Scenario {
    let mut s = Scenario::new(&format!("partition {split}|{} for {lasting} s", nodes - split), nodes);
    s.protocol = protocol;
    s.seed = seed;
    s.duration = secs(30 + lasting + 120);
    s.faults.push(Timed::new(secs(30), Fault::Partition { split }).lasting(secs(lasting)));
    s
}

fn print(s: &Scenario, r: &Report) {
    println!(
        "{} ({:?}, seed {}): heals {:?}; false deaths {}, refuted {}, {:.2} msgs per member-second, violations {:?}",
        s.name,
        s.protocol,
        s.seed,
        r.heals.iter().map(|h| h.converged_after_ms).collect::<Vec<_>>(),
        r.false_deaths,
        r.refuted,
        r.messages_per_member_second,
        r.violations
    );
}

/// The heal: one view again within the bound, and no disagreement left.
fn healed(s: &Scenario, r: &Report) -> f64 {
    print(s, r);
    assert!(r.violations.is_empty(), "{}: {:?}", s.name, r.violations);
    assert_eq!(r.heals.len(), 1);
    let after = r.heals[0].converged_after_ms.unwrap_or_else(|| panic!("{}: never one view again", s.name));
    assert!(after <= 60_000.0, "{}: one view {after} ms after the heal", s.name);
    assert_eq!(r.final_disagreements, 0, "{}", s.name);
    after
}

#[test]
fn hour_long_partitions_heal_within_a_minute_whichever_the_split() {
    // One member alone, a small side, an even split, the big side alone:
    // every side believes the other dead for an hour, thirty times the old
    // two minutes of tombstones.
    for (nodes, split, seeds) in [(20, 1, 2), (20, 19, 2), (20, 10, 2), (100, 50, 1), (100, 3, 1)] {
        for seed in 1..=seeds {
            let s = partition(nodes, split, 3_600, Protocol::Phi, seed);
            let r = Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
            healed(&s, &r);
            assert!(r.false_deaths > 0, "{}: each side declared the other dead", s.name);
            // Nobody was forgotten: the tombstones lasted, and so did the
            // attempts to reconnect.
            assert!(!r.events().any(|(_, _, e)| matches!(e, Event::Reaped { .. })), "{}", s.name);
        }
    }
}

#[test]
fn classic_swim_heals_the_same_way() {
    for split in [1, 10] {
        let s = partition(20, split, 3_600, Protocol::Classic, 1);
        let r = Sim::new(&s).unwrap().run(&mut |_| {});
        healed(&s, &r);
    }
}

/// The fault the runtime's loopback and network-namespace tests inject: one
/// member of five cut off for 300 s.
#[test]
fn one_member_of_five_cut_off_for_300_s_comes_back() {
    for seed in 1..=5 {
        let s = partition(5, 4, 300, Protocol::Phi, seed);
        let r = Sim::new(&s).unwrap().run(&mut |_| {});
        healed(&s, &r);
    }
}

#[test]
fn the_heal_checker_fails_when_the_sides_forget_each_other() {
    // Tombstones reaped after a minute and nobody alone: the two halves
    // never try each other again, so the partition never heals, and the
    // checker says so.
    let mut config = vigil_sim::preset(Protocol::Phi);
    config.reconnect_timeout = secs(60);
    let s = partition(20, 10, 600, Protocol::Phi, 1);
    let r = Sim::with_config(&s, config).unwrap().keep_records(true).run(&mut |_| {});
    print(&s, &r);
    assert_eq!(r.heals[0].converged_after_ms, None);
    assert_eq!(r.violations.total, 1, "{:?}", r.violations);
    let v = &r.violations.first[0];
    assert_eq!(v.checker, checkers::HEALED_PARTITIONS_CONVERGE_WITHIN_BOUND);
    // 10 × 10 pairs each way.
    assert!(v.detail.contains("200 pairs"), "{}", v.detail);
    assert!((v.at_ms - (630_000.0 + 60_000.0)).abs() <= 500.0, "{}", v.at_ms);
    // Every member reaped the ten of the other side, once each.
    let reaped = r.events().filter(|(_, _, e)| matches!(e, Event::Reaped { status: Status::Dead, .. })).count();
    assert_eq!(reaped, 200);
    assert_eq!(r.final_disagreements, 200);
}

#[test]
fn a_member_alone_goes_back_to_its_seed() {
    // The same short tombstones, but one side is a single member: once it
    // has reaped everyone it knows no live member, and asks its seed again,
    // backing off up to 30 s, for as long as it runs.
    let mut config = Config::lan(CLUSTER);
    config.reconnect_timeout = secs(60);
    let s = partition(10, 9, 600, Protocol::Phi, 1);
    let r = Sim::with_config(&s, config).unwrap().keep_records(true).run(&mut |_| {});
    let after = healed(&s, &r);
    // Reaped on both sides before the heal: the seed brought it back, within
    // the 30 s back-off (and the exchange that follows).
    let reaped_before_heal =
        r.events().filter(|(ms, _, e)| *ms < 630_000.0 && matches!(e, Event::Reaped { .. })).count();
    assert_eq!(reaped_before_heal, 9 + 9, "n9 reaped nine, and nine reaped n9");
    assert!(after <= 31_000.0, "{after}");
}

/// Views in pages heal a partition as whole views do: 100 members, 50 on
/// each side for 10 minutes, the views in pages of 1 KiB (about 2 KB of
/// members each: 2 or 3 pages) against one page each. The runtime sends
/// the same pages on sockets (`vigil-net`'s `tests/pages.rs`).
#[test]
fn views_in_pages_heal_a_partition_as_whole_views_do() {
    let s = partition(100, 50, 600, Protocol::Phi, 1);
    let whole = Sim::new(&s).unwrap().run(&mut |_| {});
    let mut config = vigil_sim::preset(Protocol::Phi);
    config.view_page = 1024;
    let paged = Sim::with_config(&s, config).unwrap().run(&mut |_| {});
    let (whole_ms, paged_ms) = (healed(&s, &whole), healed(&s, &paged));
    let push_pulls = |r: &Report| r.messages_by_kind.get("push-pull").copied().unwrap_or(0);
    println!(
        "one view {whole_ms} ms after the heal with whole views ({} push-pulls), {paged_ms} ms with pages ({})",
        push_pulls(&whole),
        push_pulls(&paged)
    );
    // Most push-pulls are reconnection attempts (this member and the death
    // it believes: one page); the views that do go out (answers to them,
    // and exchanges whose digests differ) go in two pages or more, so
    // there are more push-pulls (5,997 and 6,021 with seed 1).
    assert!(push_pulls(&paged) > push_pulls(&whole), "{} against {}", push_pulls(&paged), push_pulls(&whole));
}
