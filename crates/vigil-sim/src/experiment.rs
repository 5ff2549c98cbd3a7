//! Rapid's stability experiments (Suresh et al., USENIX ATC 2018), as
//! scenarios and as the figures that paper reports: members wrongly
//! removed, whether the faulty ones were removed, how long the views of
//! the healthy members disagreed, and how many membership changes each
//! healthy member saw.
//!
//! ```
//! use vigil_sim::experiment::{Experiment, Setup};
//!
//! // Ten simultaneous crashes among 60 members, φ with keep-majority.
//! let setup = Setup::parse("phi/keep-majority").unwrap();
//! let outcome = Experiment::Crashes.run(60, &setup, 1);
//! assert_eq!(outcome.faulty_removed, outcome.faulty);
//! assert_eq!(outcome.wrongly_removed, 0);
//! // One decision downs all ten: each healthy member sees one change.
//! assert!(outcome.changes_per_member <= 2.0, "{}", outcome.changes_per_member);
//! ```

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use vigil_membership::{Event, Status};

use crate::fault::{Fault, Timed, Way};
use crate::scenario::{Downing, Protocol, Scenario, Start};
use crate::sim::Sim;

/// When the faults start (s): a minute of calm first; egress loss after 90 s.
const FAULT_AT: u64 = 60;
const EGRESS_AT: u64 = 90;
/// How long the lasting faults act (s): Rapid's 10 minutes.
const FAULT_FOR: u64 = 600;

/// One of Rapid's experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// 1 % of the members (at least one) lose 80 % of their packets, both
    /// ways, for 10 minutes.
    Lossy,
    /// 10 members (or 1 %, the larger; at most a tenth) drop every packet
    /// they receive, 20 s on and 20 s off, for 10 minutes.
    FlipFlop,
    /// 10 members (as above) lose 80 % of what they send, from 90 s on.
    Egress,
    /// 10 members (as above) crash at once.
    Crashes,
}

impl Experiment {
    /// All four, in the paper's order.
    pub const ALL: [Experiment; 4] = [Experiment::Lossy, Experiment::FlipFlop, Experiment::Egress, Experiment::Crashes];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::Lossy => "1 % at 80 % loss",
            Experiment::FlipFlop => "flip-flop",
            Experiment::Egress => "80 % egress loss",
            Experiment::Crashes => "10 crashes",
        }
    }

    /// The faulty members of a cluster of `n`: the last ones.
    pub fn faulty(self, n: usize) -> Vec<usize> {
        let k = match self {
            Experiment::Lossy => n.div_ceil(100),
            _ => 10.max(n / 100).min(n / 10).max(1),
        };
        (n - k..n).collect()
    }

    /// The scenario for a cluster of `n` running `setup`, seed `seed`.
    pub fn scenario(self, n: usize, setup: &Setup, seed: u64) -> Scenario {
        let mut s = Scenario::new(&format!("{} ({})", self.name(), setup.name()), n);
        s.seed = seed;
        s.protocol = setup.protocol;
        s.downing = setup.downing.clone();
        s.check_liveness = false;
        let secs = Duration::from_secs;
        let faulty = self.faulty(n);
        match self {
            Experiment::Lossy => {
                s.duration = secs(FAULT_AT + FAULT_FOR + 60);
                for &i in &faulty {
                    let f = Fault::Lossy { node: i, p: 0.8, way: Way::Both };
                    s.faults.push(Timed::new(secs(FAULT_AT), f).lasting(secs(FAULT_FOR)));
                }
            }
            Experiment::FlipFlop => {
                s.duration = secs(FAULT_AT + FAULT_FOR + 60);
                for k in 0..FAULT_FOR / 40 {
                    for &i in &faulty {
                        let f = Fault::Lossy { node: i, p: 1.0, way: Way::In };
                        s.faults.push(Timed::new(secs(FAULT_AT + 40 * k), f).lasting(secs(20)));
                    }
                }
            }
            Experiment::Egress => {
                s.duration = secs(EGRESS_AT + FAULT_FOR);
                for &i in &faulty {
                    let f = Fault::Lossy { node: i, p: 0.8, way: Way::Out };
                    s.faults.push(Timed::new(secs(EGRESS_AT), f).lasting(secs(FAULT_FOR)));
                }
            }
            Experiment::Crashes => {
                s.duration = secs(180);
                s.detection_bound = secs(120);
                for &i in &faulty {
                    s.faults.push(Timed::new(secs(FAULT_AT), Fault::Crash { node: i }));
                }
            }
        }
        s
    }

    /// Runs it on `n` members with `setup` and measures it.
    pub fn run(self, n: usize, setup: &Setup, seed: u64) -> Outcome {
        let s = self.scenario(n, setup, seed);
        let faulty: BTreeSet<usize> = self.faulty(n).into_iter().collect();
        let healthy: Vec<usize> = (0..n).filter(|i| !faulty.contains(i)).collect();
        let mut sim = Sim::new(&s).expect("the experiments' scenarios are valid").keep_records(true);
        // The healthy members' views, every 5 s: how long they disagree.
        let (mut inconsistent, mut samples, mut sizes) = (0u32, 0u32, Vec::new());
        let step = Duration::from_secs(5);
        let mut t = step;
        while t <= s.duration {
            sim.run_until(t);
            let mut views: HashMap<Vec<(String, u64)>, usize> = HashMap::new();
            for &i in &healthy {
                let Some(node) = sim.node(i) else { continue };
                // Itself included, so that two members that agree on
                // everyone have the same list.
                let me = node.id();
                let mut alive: Vec<(String, u64)> = node
                    .members()
                    .filter(|m| m.status == Status::Alive)
                    .map(|m| (m.id.name, m.id.generation))
                    .chain([(me.name.clone(), me.generation)])
                    .collect();
                alive.sort();
                *views.entry(alive).or_default() += 1;
            }
            samples += 1;
            if views.len() > 1 {
                inconsistent += 1;
            }
            sizes.push((t.as_secs_f64(), views.len()));
            t += step;
        }
        let report = sim.run(&mut |_| {});
        let name = |i: usize| format!("n{i}");
        let index = |name: &str| name.strip_prefix('n').and_then(|x| x.parse::<usize>().ok());
        // Who was removed: declared dead by a healthy member, or downed by
        // itself. A faulty member's own view is not the cluster's: what it
        // declares dead there (members it cannot hear, once it is back)
        // removes no one from the healthy members' views.
        let mut removed: BTreeSet<usize> = BTreeSet::new();
        let mut changes: HashMap<usize, BTreeSet<u64>> = HashMap::new();
        let mut events_per: HashMap<usize, u64> = HashMap::new();
        for (at, i, e) in report.events() {
            match e {
                Event::Dead { id, .. } if !faulty.contains(&i) => removed.extend(index(&id.name)),
                Event::Downed { id, .. } if id.name == name(i) => {
                    removed.insert(i);
                }
                _ => {}
            }
            if matches!(e, Event::Dead { .. } | Event::Up { .. } | Event::Left { .. }) && !faulty.contains(&i) {
                // Changes at the same millisecond are one change.
                changes.entry(i).or_default().insert(at.round() as u64);
                *events_per.entry(i).or_default() += 1;
            }
        }
        let h = healthy.len().max(1) as f64;
        Outcome {
            experiment: self,
            setup: setup.name(),
            members: n,
            faulty: faulty.len(),
            faulty_removed: removed.iter().filter(|i| faulty.contains(i)).count(),
            wrongly_removed: removed.iter().filter(|i| !faulty.contains(i)).count(),
            inconsistent_secs: f64::from(inconsistent) * step.as_secs_f64(),
            observed_secs: f64::from(samples) * step.as_secs_f64(),
            most_views: sizes.iter().map(|&(_, v)| v).max().unwrap_or(0),
            changes_per_member: changes.values().map(|c| c.len() as f64).fold(0.0, |a, b| a + b) / h,
            events_per_member: events_per.values().map(|&c| c as f64).fold(0.0, |a, b| a + b) / h,
            messages_per_member_second: report.messages_per_member_second,
            log_hash: report.log_hash,
            views: sizes,
        }
    }

    /// When its faults act, in seconds from the start: `(from, to)`.
    pub fn fault_window(self) -> (f64, f64) {
        let (at, span) = match self {
            Experiment::Lossy | Experiment::FlipFlop => (FAULT_AT, FAULT_FOR),
            Experiment::Egress => (EGRESS_AT, FAULT_FOR),
            Experiment::Crashes => (FAULT_AT, 0),
        };
        (at as f64, (at + span) as f64)
    }
}

/// Rapid's bootstrap experiment: `n` members start at once, each knowing
/// only a seed (n0), and join through it. Rapid reported 4 to 8 distinct
/// cluster sizes per process before convergence, memberlist 901 to 1,858
/// (N = 1,000 to 2,000).
///
/// ```
/// use vigil_sim::experiment::{Setup, bootstrap};
///
/// let b = bootstrap(50, &Setup::parse("phi/auto").unwrap(), 1);
/// assert!(b.converged_secs.is_some(), "50 members converge within the run");
/// assert!(b.sizes.2 >= b.sizes.1 && b.sizes.1 >= b.sizes.0);
/// ```
pub fn bootstrap(n: usize, setup: &Setup, seed: u64) -> Bootstrap {
    let mut s = Scenario::new(&format!("bootstrap ({})", setup.name()), n);
    s.seed = seed;
    s.protocol = setup.protocol;
    s.downing = setup.downing.clone();
    s.check_liveness = false;
    s.start = Start::Join;
    s.duration = Duration::from_secs(180);
    let mut sim = Sim::new(&s).expect("the bootstrap scenario is valid").keep_records(true);
    // When each member first saw all the others alive: sampled each second.
    let step = Duration::from_secs(1);
    let mut t = step;
    let mut complete: Vec<Option<f64>> = vec![None; n];
    while t <= s.duration && complete.iter().any(Option::is_none) {
        sim.run_until(t);
        for (i, at) in complete.iter_mut().enumerate() {
            if at.is_none()
                && sim.node(i).is_some_and(|node| node.members().filter(|m| m.status == Status::Alive).count() == n - 1)
            {
                *at = Some(t.as_secs_f64());
            }
        }
        t += step;
    }
    let converged = complete.iter().copied().collect::<Option<Vec<f64>>>();
    let mean_complete_secs = converged.as_ref().map(|c| c.iter().sum::<f64>() / n as f64);
    let converged = converged.map(|c| c.into_iter().fold(0.0, f64::max));
    let report = sim.run(&mut |_| {});
    // Each member's view size after every instant it changed.
    let mut live: Vec<i64> = vec![0; n];
    let mut last_at: Vec<Option<u64>> = vec![None; n];
    let mut sizes: Vec<BTreeSet<i64>> = vec![BTreeSet::new(); n];
    for (at, i, e) in report.events() {
        let delta = match e {
            Event::Up { .. } => 1,
            Event::Dead { .. } | Event::Left { .. } => -1,
            _ => continue,
        };
        let at = at.round() as u64;
        if last_at[i].is_some_and(|l| l != at) {
            sizes[i].insert(live[i]);
        }
        live[i] += delta;
        last_at[i] = Some(at);
    }
    for i in 0..n {
        if last_at[i].is_some() {
            sizes[i].insert(live[i]);
        }
    }
    let mut counts: Vec<usize> = sizes.iter().map(BTreeSet::len).collect();
    counts.sort_unstable();
    Bootstrap {
        setup: setup.name(),
        members: n,
        sizes: (
            counts.first().copied().unwrap_or(0),
            counts.get(counts.len() / 2).copied().unwrap_or(0),
            counts.last().copied().unwrap_or(0),
        ),
        converged_secs: converged,
        mean_complete_secs,
        messages_per_member_second: report.messages_per_member_second,
        bytes_per_member_second: report.bytes_per_member_second,
        log_hash: report.log_hash,
    }
}

/// What a bootstrap showed.
#[derive(Debug, Clone, PartialEq)]
pub struct Bootstrap {
    /// The setup's name.
    pub setup: String,
    /// Cluster size.
    pub members: usize,
    /// Distinct cluster sizes each member went through (its view after
    /// each instant it changed), fewest, median and most over the members.
    pub sizes: (usize, usize, usize),
    /// When every member had seen every other alive (1 s samples): the
    /// last member's first complete view; `None` if not within the 180 s
    /// run.
    pub converged_secs: Option<f64>,
    /// When a member first saw every other alive, averaged over the
    /// members (Rapid's "average convergence"); `None` if some member
    /// never did within the run.
    pub mean_complete_secs: Option<f64>,
    /// The traffic, over the run.
    pub messages_per_member_second: f64,
    /// The bytes on the wire, over the run (views exchanged whole
    /// included).
    pub bytes_per_member_second: f64,
    /// The run's log hash.
    pub log_hash: u64,
}

/// A protocol and a downing strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// The protocol.
    pub protocol: Protocol,
    /// The downing strategy (`None`: `auto`).
    pub downing: Option<Downing>,
}

impl Setup {
    /// `phi/STRATEGY` or `classic/STRATEGY` (`auto`, `keep-majority`, ...,
    /// with the default timing).
    pub fn parse(text: &str) -> Option<Setup> {
        let (protocol, strategy) = text.split_once('/')?;
        let protocol = match protocol {
            "phi" => Protocol::Phi,
            "classic" => Protocol::Classic,
            _ => return None,
        };
        strategy.parse::<vigil_membership::downing::Strategy>().ok()?;
        let downing = (strategy != "auto").then(|| Downing::new(strategy));
        Some(Setup { protocol, downing })
    }

    /// Its text form, as [`Setup::parse`] reads it.
    pub fn name(&self) -> String {
        let protocol = if self.protocol == Protocol::Classic { "classic" } else { "phi" };
        let strategy = self.downing.as_ref().map_or("auto", |d| d.strategy.as_str());
        format!("{protocol}/{strategy}")
    }
}

/// What one run of an experiment showed.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Which.
    pub experiment: Experiment,
    /// The setup's name.
    pub setup: String,
    /// Cluster size.
    pub members: usize,
    /// Faulty members.
    pub faulty: usize,
    /// Faulty members removed at least once (declared dead by a healthy
    /// member, or downed by themselves).
    pub faulty_removed: usize,
    /// Healthy members removed at least once: declared dead by a healthy
    /// member, or downed by themselves (what a faulty member declares in
    /// its own view is not counted).
    pub wrongly_removed: usize,
    /// Seconds (in 5 s samples) during which the healthy members' views
    /// (who is alive) were not all the same.
    pub inconsistent_secs: f64,
    /// Seconds observed.
    pub observed_secs: f64,
    /// The most distinct views among the healthy members at one sample.
    pub most_views: usize,
    /// Membership changes (distinct instants of up, dead or left events)
    /// per healthy member: Rapid's "one decision" is 1.
    pub changes_per_member: f64,
    /// Up, dead and left events per healthy member.
    pub events_per_member: f64,
    /// The traffic.
    pub messages_per_member_second: f64,
    /// The run's log hash (same seed, same hash).
    pub log_hash: u64,
    /// Every 5 s: the time (s) and how many distinct views of who is alive
    /// the healthy members held (1: they all agreed).
    pub views: Vec<(f64, usize)>,
}
