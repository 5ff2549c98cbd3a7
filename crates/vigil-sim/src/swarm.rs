//! Swarm testing of downing: many random fault schedules, each from a
//! seed, over every strategy, held to the checkers (no split brain, no
//! collateral, downed members stop, one cluster once faults stop, nothing
//! moved by a forgery, and the rest). A violation names its seed; the same
//! seed gives the same schedule and the same run, so it replays exactly
//! (`vigil sim swarm --replay SEED`).
//!
//! A schedule draws, from its seed: three to seven members; a strategy
//! (`keep-majority`, a static quorum, `keep-oldest` with and without
//! down-if-alone, `keep-referee`, `lease-majority`, `down-all`); a
//! `stable-after` of 4 to 20 s; plaintext or sealed; and one to four faults
//! among crashes (some restarted), partitions, pauses, a member whose links
//! flap, network-wide loss, forgeries (a stranger's accusations of every
//! member by every other, a stranger's forged move, a member holding the
//! key accusing everyone and naming everyone unreachable in its row), an
//! unusable lease, and a second process taking a member's name; in some,
//! gray evidence counts towards downing and one to three members'
//! applications see their requests to a member fail. The run goes on for
//! the outage bound after the last fault.
//!
//! ```
//! let outcome = vigil_sim::swarm::run(7);
//! assert_eq!(outcome.seed, 7);
//! assert!(outcome.violations.is_empty(), "{outcome}");
//! // The same seed, the same run.
//! assert_eq!(vigil_sim::swarm::run(7).log_hash, outcome.log_hash);
//! ```

use std::fmt;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::fault::{Fault, Forger, Forgery, Timed, Way};
use crate::scenario::{Downing, Scenario, Sealing};
use crate::{Sim, Violations};

/// The schedule of `seed`: see the module documentation.
///
/// ```
/// let s = vigil_sim::swarm::schedule(3);
/// assert!((3..=7).contains(&s.nodes) && !s.faults.is_empty());
/// assert_eq!(s, vigil_sim::swarm::schedule(3));
/// s.validate()?;
/// # Ok::<(), vigil_sim::ScenarioError>(())
/// ```
pub fn schedule(seed: u64) -> Scenario {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5a4d_5a4d_5a4d_5a4d);
    let n = rng.random_range(3..=7usize);
    let strategies = [
        "keep-majority".to_owned(),
        format!("static-quorum:size={}", n / 2 + 1),
        "keep-oldest".to_owned(),
        "keep-oldest:down-if-alone=off".to_owned(),
        "keep-referee:address=10.0.0.1:7946".to_owned(),
        "lease-majority".to_owned(),
        "down-all".to_owned(),
    ];
    let strategy = strategies[rng.random_range(0..strategies.len())].clone();
    let lease = strategy.starts_with("lease");
    let mut downing = Downing::new(&strategy);
    downing.stable_after = Some(Duration::from_secs(rng.random_range(4..=20u64)));
    let mut s = Scenario::new(&format!("swarm {seed}: {n} members, {strategy}"), n);
    s.seed = seed;
    s.downing = Some(downing);
    s.sealing = if rng.random_bool(0.5) { Sealing::Sealed } else { Sealing::Plaintext };
    let secs = |rng: &mut ChaCha8Rng, lo: u64, hi: u64| Duration::from_secs(rng.random_range(lo..=hi));
    let node = |rng: &mut ChaCha8Rng| rng.random_range(0..n);
    let faults = rng.random_range(1..=4usize);
    for _ in 0..faults {
        let at = secs(&mut rng, 20, 150);
        match rng.random_range(0..10u32) {
            0 => {
                let v = node(&mut rng);
                s.faults.push(Timed::new(at, Fault::Crash { node: v }));
                if rng.random_bool(0.3) {
                    let back = at + secs(&mut rng, 30, 90);
                    s.faults.push(Timed::new(back, Fault::Restart { node: v }));
                }
            }
            1 => {
                let split = rng.random_range(1..n);
                s.faults.push(Timed::new(at, Fault::Partition { split }).lasting(secs(&mut rng, 10, 150)));
            }
            2 => s.faults.push(Timed::new(at, Fault::Pause { node: node(&mut rng) }).lasting(secs(&mut rng, 5, 60))),
            3 => {
                // A member whose links flap: cut off both ways on and off.
                let v = node(&mut rng);
                let mut t = at;
                for _ in 0..rng.random_range(2..=6u32) {
                    let on = secs(&mut rng, 5, 15);
                    s.faults.push(Timed::new(t, Fault::Lossy { node: v, p: 1.0, way: Way::Both }).lasting(on));
                    t += on + secs(&mut rng, 5, 15);
                }
            }
            4 => {
                let p = rng.random_range(5..=30u32) as f64 / 100.0;
                s.faults.push(Timed::new(at, Fault::Loss { p }).lasting(secs(&mut rng, 30, 120)));
            }
            5 => {
                let f = Fault::Forge { by: Forger::Stranger, forgery: Forgery::Accuse };
                s.faults.push(Timed::new(at, f).lasting(secs(&mut rng, 20, 120)));
            }
            6 => {
                let f = Fault::Forge { by: Forger::Stranger, forgery: Forgery::Move { victim: node(&mut rng) } };
                s.faults.push(Timed::new(at, f).lasting(secs(&mut rng, 20, 120)));
            }
            7 => {
                let f = Fault::Forge { by: Forger::Insider { node: node(&mut rng) }, forgery: Forgery::Accuse };
                s.faults.push(Timed::new(at, f).lasting(secs(&mut rng, 20, 120)));
            }
            8 if lease => s.faults.push(Timed::new(at, Fault::LeaseDown).lasting(secs(&mut rng, 20, 120))),
            _ => {
                s.faults.push(Timed::new(at, Fault::Impostor { node: node(&mut rng) }).lasting(secs(&mut rng, 10, 60)))
            }
        }
    }
    // Gray evidence, drawn apart (the draws above stay as they were): in
    // some schedules it counts towards downing, and members' applications
    // see requests to one member fail — one reporter (which downs nobody)
    // or several.
    let mut gray = ChaCha8Rng::seed_from_u64(seed ^ 0x6772_6179_6772_6179);
    if gray.random_bool(0.3) {
        if let Some(d) = s.downing.as_mut() {
            d.gray_evidence = true;
        }
        for _ in 0..gray.random_range(1..=2u32) {
            let victim = gray.random_range(0..n);
            let at = secs(&mut gray, 20, 150);
            let lasting = secs(&mut gray, 20, 90);
            let mut reporters: Vec<usize> = (0..n).filter(|&i| i != victim).collect();
            for _ in 0..gray.random_range(1..=3usize).min(reporters.len()) {
                let by = reporters.swap_remove(gray.random_range(0..reporters.len()));
                s.faults.push(Timed::new(at, Fault::Errors { by, victim }).lasting(lasting));
            }
        }
    }
    // Under `lease-majority`, a side that took the lease and then crashed
    // holds it for its time to live after its last renewal: the others
    // cannot re-form before (the bound the membership crate states).
    if lease {
        s.outage_bound += crate::lease::TTL;
    }
    s.faults.sort_by_key(|f| f.at);
    let last = s.faults.iter().map(|f| f.at + f.duration.unwrap_or_default()).max().unwrap_or_default();
    s.duration = last + s.outage_bound + Duration::from_secs(10);
    // Crashes are checked by the downing checkers here (a crash beyond the
    // strategy's tolerance is never declared dead, by design), and a heal
    // may overlap other faults: the bounds of the plain checkers stand
    // aside.
    s.detection_bound = s.duration;
    s.heal_bound = s.outage_bound;
    s
}

/// What one schedule's run found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The seed: `vigil sim swarm --replay SEED` runs it again.
    pub seed: u64,
    /// The schedule's name (members and strategy).
    pub name: String,
    /// Its downing strategy, as `--downing` spells it.
    pub strategy: String,
    /// Its faults, by kind, in order.
    pub faults: Vec<&'static str>,
    /// Virtual seconds run.
    pub virtual_secs: f64,
    /// What the checkers found.
    pub violations: Violations,
    /// Forged datagrams sent.
    pub forged: u64,
    /// Members downed by decisions, as members learned it.
    pub downed_deaths: u64,
    /// The hash of the run's records (the same seed gives the same hash).
    pub log_hash: u64,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seed {} ({}; {}): ", self.seed, self.name, self.faults.join(", "))?;
        if self.violations.is_empty() {
            return f.write_str("no violation");
        }
        write!(f, "{} violations:", self.violations.total)?;
        for v in &self.violations.first {
            write!(f, "\n  {:.1} s {}: {}", v.at_ms / 1e3, v.checker, v.detail)?;
        }
        Ok(())
    }
}

/// Runs the schedule of `seed`.
///
/// # Panics
///
/// Never for a schedule [`schedule`] makes (each validates).
pub fn run(seed: u64) -> Outcome {
    let s = schedule(seed);
    let report = Sim::new(&s).expect("a swarm schedule validates").run(&mut |_| {});
    Outcome::of(seed, &s, &report)
}

impl Outcome {
    /// The outcome of the schedule `s` of `seed`, from its run's report
    /// (which may keep its records: see `Sim::keep_records`).
    pub fn of(seed: u64, s: &Scenario, report: &crate::Report) -> Outcome {
        Outcome {
            seed,
            name: s.name.clone(),
            strategy: s.downing.as_ref().map_or_else(String::new, |d| d.strategy.clone()),
            faults: s.faults.iter().map(Timed::kind).collect(),
            virtual_secs: report.virtual_secs,
            violations: report.violations.clone(),
            forged: report.forged,
            downed_deaths: report.downed_deaths,
            log_hash: report.log_hash,
        }
    }
}

/// What a swarm of schedules found.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Schedules run.
    pub schedules: u64,
    /// Virtual seconds run in all.
    pub virtual_secs: f64,
    /// Forged datagrams sent in all.
    pub forged: u64,
    /// Members downed by decisions in all.
    pub downed_deaths: u64,
    /// The schedules with a violation.
    pub violating: Vec<Outcome>,
}

/// Runs the schedules of seeds `first .. first + count`, calling
/// `progress` after each.
///
/// ```
/// let summary = vigil_sim::swarm::run_many(1, 3, &mut |_| {});
/// assert_eq!(summary.schedules, 3);
/// assert!(summary.violating.is_empty());
/// ```
pub fn run_many(first: u64, count: u64, progress: &mut dyn FnMut(&Outcome)) -> Summary {
    let mut summary = Summary::default();
    for seed in first..first.saturating_add(count) {
        let o = run(seed);
        summary.schedules += 1;
        summary.virtual_secs += o.virtual_secs;
        summary.forged += o.forged;
        summary.downed_deaths += o.downed_deaths;
        progress(&o);
        if !o.violations.is_empty() {
            summary.violating.push(o);
        }
    }
    summary
}
