//! Swarm testing of downing (`vigil_sim::swarm`): random fault schedules
//! over every strategy, each from a seed, held to every checker — no
//! split brain, no collateral, members others downed down themselves, one
//! cluster once faults stop, nothing moved by a forgery. CI runs the first
//! few hundred seeds; `vigil sim swarm --schedules 10000` runs more (the
//! README's downing section gives the last count and what it found), and
//! `vigil sim swarm --replay SEED --events` replays one.

/// The first seeds, every one: a violation fails the test with its seed.
#[test]
fn the_first_schedules_violate_no_property() {
    const SCHEDULES: u64 = 250;
    let summary = vigil_sim::swarm::run_many(1, SCHEDULES, &mut |_| {});
    let shown: Vec<String> = summary.violating.iter().map(ToString::to_string).collect();
    println!(
        "{} schedules, {:.1} virtual hours, {} forged datagrams, {} members downed by decisions",
        summary.schedules,
        summary.virtual_secs / 3600.0,
        summary.forged,
        summary.downed_deaths
    );
    assert_eq!(summary.schedules, SCHEDULES);
    assert!(summary.violating.is_empty(), "{}", shown.join("\n"));
    // The schedules did what they are for: forgeries went out, and
    // decisions downed members.
    assert!(summary.forged > 10_000, "{} forged datagrams", summary.forged);
    assert!(summary.downed_deaths > 100, "{} members downed", summary.downed_deaths);
}

/// A seed is its run: the same seed replays the same records.
#[test]
fn a_seed_replays_its_run_exactly() {
    for seed in [3, 80, 4_000_000_000] {
        let (a, b) = (vigil_sim::swarm::run(seed), vigil_sim::swarm::run(seed));
        assert_eq!((a.log_hash, a.violations.total), (b.log_hash, b.violations.total), "seed {seed}");
        assert_eq!(vigil_sim::swarm::schedule(seed), vigil_sim::swarm::schedule(seed));
    }
    assert_ne!(vigil_sim::swarm::run(3).log_hash, vigil_sim::swarm::run(4).log_hash);
}

/// Schedules that once violated a property, found in the ten thousand:
/// a verdict one member carried out alone (the rest of its side spared
/// the member, which reached them and so never downed itself) kept them
/// apart for good, until such a verdict was withdrawn once the member
/// answered as itself two windows later.
#[test]
fn schedules_a_lone_verdict_once_split_now_end_in_one_cluster() {
    for seed in [1421, 3192, 4961, 5798, 6279, 6856, 7348, 7877, 8657, 8910] {
        let report = vigil_sim::swarm::run(seed);
        assert_eq!(report.violations.total, 0, "seed {seed}: {:?}", report.violations);
    }
}
