//! The passive signal: outcomes of the application's requests to members,
//! judged by outlier detection ([`vigil_detector::outlier`]).
//!
//! Nothing is spent until the application records its first outcome: the
//! detector is then created with every live member, follows the membership
//! (a member that joins is added, one that dies or leaves is removed, so the
//! ejection cap is a share of the live cluster), and ticks on its interval.

use std::sync::Arc;
use std::time::Duration;

use vigil_detector::Instant;
use vigil_detector::outlier::{HostReport, Outcome, OutlierConfig, OutlierEvent, Outliers};

/// Request outcomes and the ejections they lead to.
#[derive(Debug, Clone)]
pub(crate) struct RequestOutcomes {
    config: OutlierConfig,
    detector: Option<Outliers<Arc<str>>>,
}

impl RequestOutcomes {
    pub(crate) fn new(config: OutlierConfig) -> RequestOutcomes {
        RequestOutcomes { config, detector: None }
    }

    /// Records an outcome of a request to the live member `name` (`live`
    /// lists every live member, for the first call). Returns the ejections it
    /// caused.
    pub(crate) fn record(
        &mut self,
        now: Instant,
        name: Arc<str>,
        outcome: Outcome,
        latency: Option<Duration>,
        live: impl FnOnce() -> Vec<Arc<str>>,
    ) -> Vec<OutlierEvent<Arc<str>>> {
        let config = &self.config;
        let detector = self.detector.get_or_insert_with(|| {
            // The configuration was validated with the node's.
            let mut d = Outliers::new(config.clone()).expect("a validated configuration");
            for m in live() {
                let _ = d.insert(m, now);
            }
            d
        });
        if detector.record(name, outcome, latency, now).is_err() {
            return Vec::new();
        }
        detector.take_events()
    }

    /// A member joined (or came back).
    pub(crate) fn member_up(&mut self, name: Arc<str>, now: Instant) {
        if let Some(d) = &mut self.detector {
            let _ = d.insert(name, now);
        }
    }

    /// A member died or left.
    pub(crate) fn member_gone(&mut self, name: &str) {
        if let Some(d) = &mut self.detector {
            d.remove(&Arc::from(name));
        }
    }

    /// The interval ticks due by `now`: returns, statistics, decay.
    pub(crate) fn poll(&mut self, now: Instant) -> Vec<OutlierEvent<Arc<str>>> {
        self.detector.as_mut().map(|d| d.poll(now)).unwrap_or_default()
    }

    /// The next tick, once outcomes are recorded.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.detector.as_ref().and_then(Outliers::next_deadline)
    }

    /// What outlier detection knows of `name`.
    pub(crate) fn report(&self, name: &str) -> Option<HostReport> {
        self.detector.as_ref()?.report(&Arc::from(name))
    }
}
