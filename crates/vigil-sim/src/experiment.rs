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
use crate::scenario::{Downing, Protocol, Scenario};
use crate::sim::Sim;

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
                s.duration = secs(60 + 600 + 60);
                for &i in &faulty {
                    let f = Fault::Lossy { node: i, p: 0.8, way: Way::Both };
                    s.faults.push(Timed::new(secs(60), f).lasting(secs(600)));
                }
            }
            Experiment::FlipFlop => {
                s.duration = secs(60 + 600 + 60);
                for k in 0..15 {
                    for &i in &faulty {
                        let f = Fault::Lossy { node: i, p: 1.0, way: Way::In };
                        s.faults.push(Timed::new(secs(60 + 40 * k), f).lasting(secs(20)));
                    }
                }
            }
            Experiment::Egress => {
                s.duration = secs(90 + 600);
                for &i in &faulty {
                    let f = Fault::Lossy { node: i, p: 0.8, way: Way::Out };
                    s.faults.push(Timed::new(secs(90), f).lasting(secs(600)));
                }
            }
            Experiment::Crashes => {
                s.duration = secs(180);
                s.detection_bound = secs(120);
                for &i in &faulty {
                    s.faults.push(Timed::new(secs(60), Fault::Crash { node: i }));
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
            sizes.push(views.len());
            t += step;
        }
        let report = sim.run(&mut |_| {});
        let name = |i: usize| format!("n{i}");
        let index = |name: &str| name.strip_prefix('n').and_then(|x| x.parse::<usize>().ok());
        // Who was removed: declared dead by someone, or downed by itself.
        let mut removed: BTreeSet<usize> = BTreeSet::new();
        let mut changes: HashMap<usize, BTreeSet<u64>> = HashMap::new();
        let mut events_per: HashMap<usize, u64> = HashMap::new();
        for (at, i, e) in report.events() {
            match e {
                Event::Dead { id, .. } => removed.extend(index(&id.name)),
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
            most_views: sizes.iter().copied().max().unwrap_or(0),
            changes_per_member: changes.values().map(|c| c.len() as f64).fold(0.0, |a, b| a + b) / h,
            events_per_member: events_per.values().map(|&c| c as f64).fold(0.0, |a, b| a + b) / h,
            messages_per_member_second: report.messages_per_member_second,
            log_hash: report.log_hash,
        }
    }
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
    /// Faulty members removed at least once (declared dead, or downed by
    /// themselves).
    pub faulty_removed: usize,
    /// Healthy members removed at least once.
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
}
