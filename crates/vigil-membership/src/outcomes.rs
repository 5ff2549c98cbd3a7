//! The passive signal: outcomes of the application's requests to members,
//! judged by outlier detection ([`vigil_detector::outlier`]) inside the
//! monitor's [`Health`].
//!
//! Nothing is spent until the application records its first outcome:
//! outlier detection then tracks every live member, follows the membership
//! (a member that joins is tracked, one that dies or leaves is forgotten, so
//! the ejection cap is a share of the live cluster), and ticks on its
//! interval. φ watches only some members; outcomes are tracked for all.

use std::sync::Arc;
use std::time::Duration;

use vigil_detector::health::Health;
use vigil_detector::outlier::Outcome;
use vigil_detector::{AnyDetector, Instant};

/// Whether outlier detection follows the membership yet.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestOutcomes {
    started: bool,
}

impl RequestOutcomes {
    /// Records an outcome of a request to the live member `name` (`live`
    /// lists every live member, for the first call). Returns whether it was
    /// taken.
    pub(crate) fn record(
        &mut self,
        health: &mut Health<Arc<str>, AnyDetector>,
        now: Instant,
        name: Arc<str>,
        outcome: Outcome,
        latency: Option<Duration>,
        live: impl FnOnce() -> Vec<Arc<str>>,
    ) -> bool {
        if !self.started {
            self.started = true;
            for m in live() {
                let _ = health.track(m, now);
            }
        }
        health.record(name, outcome, latency, now).is_ok()
    }

    /// A member joined, came back, or restarted: tracked afresh (the old
    /// process's ejection and streaks are not its own).
    pub(crate) fn member_up(&mut self, health: &mut Health<Arc<str>, AnyDetector>, name: Arc<str>, now: Instant) {
        if self.started {
            health.forget(&name, now);
            let _ = health.track(name, now);
        }
    }

    /// A member died or left.
    pub(crate) fn member_gone(&mut self, health: &mut Health<Arc<str>, AnyDetector>, name: &str, now: Instant) {
        if self.started {
            health.forget(&Arc::from(name), now);
        }
    }
}
