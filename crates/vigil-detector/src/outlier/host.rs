//! One host's outlier state: its streaks of errors, its interval counts,
//! and its ejection.

use std::time::Duration;

use crate::time::Instant;

use super::EjectReason;

/// Requests counted in one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Bucket {
    /// Responses the host sent (and, unless split, local-origin results).
    pub(crate) total: u64,
    pub(crate) success: u64,
    /// Local-origin results, when split.
    pub(crate) local_total: u64,
    pub(crate) local_success: u64,
    /// Timed requests: their number and the sum of the logarithms of their
    /// latencies in milliseconds.
    pub(crate) timed: u64,
    pub(crate) log_latency: f64,
}

impl Bucket {
    /// Success rate in percent and volume, of the host's own responses or
    /// of local-origin results; `None` without requests.
    pub(crate) fn rate(&self, local: bool) -> Option<(f64, u64)> {
        let (s, t) = if local { (self.local_success, self.local_total) } else { (self.success, self.total) };
        (t > 0).then(|| (s as f64 * 100.0 / t as f64, t))
    }

    /// The geometric mean latency in milliseconds and the number of timed
    /// requests; `None` without any.
    pub(crate) fn latency(&self) -> Option<(f64, u64)> {
        (self.timed > 0).then(|| ((self.log_latency / self.timed as f64).exp(), self.timed))
    }
}

/// An ejection in force.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ejection {
    pub(crate) reason: EjectReason,
    pub(crate) at: Instant,
    /// When it may end (the host returns at the first tick at or after).
    pub(crate) until: Instant,
}

/// One host.
#[derive(Debug, Clone)]
pub(crate) struct Host<K> {
    pub(crate) key: K,
    /// When it was first tracked, in order: ties are broken on it.
    pub(crate) seq: u64,
    pub(crate) consecutive_5xx: u32,
    pub(crate) consecutive_gateway: u32,
    pub(crate) consecutive_local: u32,
    /// The interval being counted.
    pub(crate) current: Bucket,
    /// The last complete interval: what the statistics judge.
    pub(crate) previous: Bucket,
    pub(crate) ejection: Option<Ejection>,
    /// Envoy's ejection multiplier: grows by one an ejection (while
    /// `multiplier × base < max + base`), shrinks by one a tick once the
    /// host has been back for an interval.
    pub(crate) multiplier: u32,
    pub(crate) last_unejected: Option<Instant>,
    /// Ejections over the host's life.
    pub(crate) ejections: u64,
}

impl<K> Host<K> {
    pub(crate) fn new(key: K, seq: u64) -> Host<K> {
        Host {
            key,
            seq,
            consecutive_5xx: 0,
            consecutive_gateway: 0,
            consecutive_local: 0,
            current: Bucket::default(),
            previous: Bucket::default(),
            ejection: None,
            multiplier: 0,
            last_unejected: None,
            ejections: 0,
        }
    }

    /// Ejects the host at `now`: the multiplier grows, and the ejection lasts
    /// `min(base × multiplier, max) + jitter`.
    pub(crate) fn eject(&mut self, reason: EjectReason, now: Instant, base: Duration, max: Duration, jitter: Duration) {
        if u128::from(self.multiplier) * base.as_nanos() < max.as_nanos() + base.as_nanos() {
            self.multiplier += 1;
        }
        let length = base.saturating_mul(self.multiplier).min(max) + jitter;
        self.ejection = Some(Ejection { reason, at: now, until: now + length });
        self.ejections += 1;
    }

    /// Returns the host to service at `now`: its streaks start again.
    pub(crate) fn uneject(&mut self, now: Instant) {
        self.ejection = None;
        self.consecutive_5xx = 0;
        self.consecutive_gateway = 0;
        self.consecutive_local = 0;
        self.last_unejected = Some(now);
    }
}
