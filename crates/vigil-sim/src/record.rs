//! What happened in a run, as typed records in time order.

use std::time::Duration;

use vigil_detector::fnv::Fnv1a;
use vigil_membership::Event;

/// One thing that happened, at a virtual time since the start of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// When, since the start.
    pub at: Duration,
    /// What.
    pub what: What,
}

/// What a [`Record`] records.
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
}

impl Record {
    /// The time in milliseconds since the start.
    pub fn at_ms(&self) -> f64 {
        self.at.as_secs_f64() * 1e3
    }

    /// The node and event, for a membership record.
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
