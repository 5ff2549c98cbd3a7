//! A deterministic discrete-event simulator for `vigil-membership`.
//!
//! It drives N real [`vigil_membership::Node`]s on virtual time over a
//! modelled network: per-link latency (a base plus an exponential tail),
//! loss, asymmetric and full partitions, and network-wide degradation; and
//! node faults: pauses (a GC-like stop: nothing is processed, datagrams wait
//! in the socket buffer), slow processing (every datagram and timer handled
//! late), crashes and restarts with a new generation. The same seed gives
//! the same run, record for record.
//!
//! The parts, each in its own module: the [`Scenario`] (what to simulate)
//! and its [`Timed`] entries (each [`Fault`] or [`Operation`] once with its
//! time); the simulation loop ([`Sim`]), which hands every job to the part
//! that owns what it concerns (the machines and the nodes they run, the
//! links between them, the sealer with the cluster's keys and the replaying
//! attacker, the recorder of everything the report is made of) and queues
//! the jobs they return; the [`checkers`] (one named function per
//! invariant), the typed [`Record`]s of what happened, and the [`Report`].
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use vigil_sim::{Fault, Scenario, Sim, Timed};
//!
//! let mut s = Scenario::new("one crash", 20);
//! s.duration = Duration::from_secs(40);
//! s.faults.push(Timed::new(Duration::from_secs(15), Fault::Crash { node: 3 }));
//! let report = Sim::new(&s)?.run(&mut |_| {});
//! assert!(report.violations.is_empty(), "{:?}", report.violations);
//! let crash = &report.crashes[0];
//! assert_eq!(crash.detected_by, 19);
//! assert!(crash.median_ms < 6_000.0);
//! # Ok::<(), vigil_sim::SimError>(())
//! ```

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

mod adversary;
pub mod checkers;
mod clock;
pub mod experiment;
mod fault;
pub mod frontier;
mod job;
mod lease;
mod links;
mod machines;
mod preset;
mod queue;
mod record;
mod recorder;
mod report;
mod scenario;
mod sealer;
mod secs;
mod shown;
mod sim;
pub mod swarm;

pub use checkers::{Violation, Violations};
pub use fault::{Action, Fault, Forger, Forgery, Operation, Timed, Way};
pub use preset::{CLUSTER, preset};
pub use record::{Record, What};
pub use report::{CrashReport, FaultWindow, HealReport, Report, SealReport, Stretch, Totals};
pub use scenario::{
    Downing, Envelope, MAX_DURATION, MAX_LATENCY_MS, MAX_NODES, MIN_DURATION, Network, Protocol, Scenario,
    ScenarioError, Sealing, Start,
};
pub use sim::{Sim, SimError};
