//! What happened in a run, as typed records in time order.

use std::time::Duration;

use vigil_detector::fnv::Fnv1a;
use vigil_membership::Event;

/// One thing that happened, at a virtual time since the start of the run.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Fault, Scenario, Sim, Timed, What};
///
/// let mut s = Scenario::new("a pause", 5);
/// s.duration = Duration::from_secs(20);
/// s.faults.push(Timed::new(Duration::from_secs(5), Fault::Pause { node: 2 }).lasting(Duration::from_secs(1)));
/// let report = Sim::new(&s)?.keep_records(true).run(&mut |_| {});
/// let started = report.records.iter().find(|r| r.what == What::FaultStarted { fault: 0 }).unwrap();
/// assert_eq!(started.at, Duration::from_secs(5));
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// When, since the start.
    pub at: Duration,
    /// What.
    pub what: What,
}

/// What a [`Record`] records.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Scenario, Sim, What};
///
/// let mut s = Scenario::new("converging", 5);
/// s.duration = Duration::from_secs(20);
/// s.converge_after = Some(Duration::ZERO);
/// let report = Sim::new(&s)?.keep_records(true).run(&mut |_| {});
/// assert!(report.records.iter().any(|r| r.what == What::Converged));
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum What {
    /// A node reported a membership event.
    Membership {
        /// The node's index.
        node: usize,
        /// The event.
        event: Event,
    },
    /// Fault number `fault` of the scenario started (and applied).
    FaultStarted {
        /// Index into the scenario's faults.
        fault: usize,
    },
    /// Fault number `fault` ended.
    FaultEnded {
        /// Index into the scenario's faults.
        fault: usize,
    },
    /// Every live node saw every other live node alive.
    Converged,
    /// A node asked the lease for its side's holder, or renewed it.
    Lease {
        /// The node's index.
        node: usize,
        /// The holder asked for.
        holder: String,
        /// The holder it asked to replace (its side's earlier one), if any.
        replacing: Option<String>,
        /// Whether it renewed the lease its side held.
        renewal: bool,
        /// Whether it was granted.
        granted: bool,
    },
}

impl Record {
    /// The time in milliseconds since the start.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::{Record, What};
    ///
    /// let r = Record { at: Duration::from_millis(1500), what: What::Converged };
    /// assert_eq!(r.at_ms(), 1500.0);
    /// ```
    pub fn at_ms(&self) -> f64 {
        self.at.as_secs_f64() * 1e3
    }

    /// The node and event, for a membership record.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::{Record, What};
    ///
    /// let r = Record { at: Duration::ZERO, what: What::FaultEnded { fault: 0 } };
    /// assert!(r.event().is_none());
    /// ```
    pub fn event(&self) -> Option<(usize, &Event)> {
        match &self.what {
            What::Membership { node, event } => Some((*node, event)),
            _ => None,
        }
    }
}

/// The run's records: always hashed (equal seeds give equal hashes), kept
/// only on request.
#[derive(Debug, Clone)]
pub(crate) struct Log {
    keep: bool,
    records: Vec<Record>,
    hash: Fnv1a,
}

impl Log {
    pub(crate) fn new(keep: bool) -> Log {
        Log { keep, records: Vec::new(), hash: Fnv1a::new() }
    }

    pub(crate) fn push(&mut self, record: Record) {
        // FNV-1a over a stable rendering: the hash depends only on what
        // happened and when.
        self.hash.write(format!("{record:?}").as_bytes());
        if self.keep {
            self.records.push(record);
        }
    }

    pub(crate) fn hash(&self) -> u64 {
        self.hash.finish()
    }

    pub(crate) fn into_records(self) -> Vec<Record> {
        self.records
    }
}
