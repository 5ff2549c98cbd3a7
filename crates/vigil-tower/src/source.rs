//! Where the layer takes its verdicts from and gives its outcomes to: a
//! [`Source`]. Two are provided: [`LocalHealth`](crate::LocalHealth), a
//! [`Health`](vigil_detector::health::Health) owned by this process, and
//! `ClusterHealth` (feature `cluster`), the health
//! view of an embedded vigil member, whose φ comes from heartbeats.
//!
//! A source knows the endpoints the layer routes to (each service the
//! layer wraps [enters](Source::enter) it, and leaves it when dropped), so
//! it can say what share of them is in rotation ([`Census`]): the panic
//! rule's input.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use vigil_detector::health::Signal;
use vigil_detector::outlier::Outcome;

/// Whether an endpoint takes new requests, by the routing policy's verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Standing {
    /// In rotation.
    In,
    /// Out of rotation, on this signal (φ over the threshold, or an
    /// ejection by outlier detection).
    Out(Signal),
}

impl Standing {
    /// Whether the endpoint is out of rotation.
    pub fn is_out(&self) -> bool {
        matches!(self, Standing::Out(_))
    }
}

/// The endpoints a source routes to, and how many of them are out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Census {
    /// Endpoints entered (wrapped by the layer and not yet dropped).
    pub known: usize,
    /// Of them, out of rotation.
    pub out: usize,
}

impl Census {
    /// The share in rotation, from 0 to 1 (1 when none is known: nothing is
    /// out).
    ///
    /// ```
    /// use vigil_tower::Census;
    ///
    /// assert_eq!(Census { known: 4, out: 1 }.in_rotation(), 0.75);
    /// assert_eq!(Census { known: 0, out: 0 }.in_rotation(), 1.0);
    /// ```
    pub fn in_rotation(&self) -> f64 {
        if self.known == 0 { 1.0 } else { (self.known - self.out.min(self.known)) as f64 / self.known as f64 }
    }
}

/// An endpoint left or re-entered rotation.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteChange {
    /// The endpoint.
    pub endpoint: Arc<str>,
    /// The signal that took it out (`Some`), or `None` when it came back.
    pub out: Option<Signal>,
    /// When, since the source was made.
    pub at: Duration,
}

impl fmt::Display for RouteChange {
    /// `2.104s billing-2 out (φ 2.31)`, `9.500s billing-2 back`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}s {} ", self.at.as_secs_f64(), self.endpoint)?;
        match &self.out {
            Some(signal) => write!(f, "out ({signal})"),
            None => f.write_str("back"),
        }
    }
}

/// The most [`RouteChange`]s a source keeps; older ones are dropped.
pub const MAX_CHANGES: usize = 4096;

/// Verdicts for the layer, and a sink for its outcomes. See the
/// [module](self).
pub trait Source: Send + Sync + fmt::Debug + 'static {
    /// The outcome of one request to `endpoint`, and how long it took. Must
    /// not block: a source that forwards outcomes elsewhere drops what it
    /// cannot queue (and counts it).
    fn record(&self, endpoint: &str, outcome: Outcome, latency: Duration);

    /// The routing policy's verdict on `endpoint` now.
    fn standing(&self, endpoint: &str) -> Standing;

    /// `endpoint`'s φ now, when its heartbeats are judged.
    fn level(&self, endpoint: &str) -> Option<f64>;

    /// The layer routes to `endpoint` (once per service wrapping it).
    fn enter(&self, endpoint: &str);

    /// A service wrapping `endpoint` was dropped; after the last, the
    /// endpoint is forgotten.
    fn exit(&self, endpoint: &str);

    /// The endpoints entered, and how many are out.
    fn census(&self) -> Census;

    /// The changes of rotation so far (at most [`MAX_CHANGES`], oldest first).
    fn changes(&self) -> Vec<RouteChange>;
}

/// The endpoints entered and their standing: what both sources keep.
#[derive(Debug, Default)]
pub(crate) struct Board {
    endpoints: HashMap<Arc<str>, Entry>,
    out: usize,
    changes: VecDeque<RouteChange>,
}

#[derive(Debug)]
struct Entry {
    key: Arc<str>,
    refs: usize,
    out: Option<Signal>,
    /// Read only by the cluster's source, which keeps it.
    #[cfg_attr(not(feature = "cluster"), allow(dead_code))]
    level: Option<f64>,
}

impl Board {
    /// Counts one more service for `endpoint`; `Some(key)` when it is new.
    pub(crate) fn enter(&mut self, endpoint: &str) -> Option<Arc<str>> {
        if let Some(e) = self.endpoints.get_mut(endpoint) {
            e.refs += 1;
            return None;
        }
        let key: Arc<str> = Arc::from(endpoint);
        self.endpoints.insert(key.clone(), Entry { key: key.clone(), refs: 1, out: None, level: None });
        Some(key)
    }

    /// Counts one service less; `Some(key)` when it was the last.
    pub(crate) fn exit(&mut self, endpoint: &str) -> Option<Arc<str>> {
        let e = self.endpoints.get_mut(endpoint)?;
        e.refs -= 1;
        if e.refs > 0 {
            return None;
        }
        let e = self.endpoints.remove(endpoint)?;
        if e.out.is_some() {
            self.out -= 1;
        }
        Some(e.key)
    }

    /// The key of an entered endpoint.
    pub(crate) fn key(&self, endpoint: &str) -> Option<Arc<str>> {
        self.endpoints.get(endpoint).map(|e| e.key.clone())
    }

    #[cfg_attr(not(feature = "cluster"), allow(dead_code))]
    pub(crate) fn keys(&self) -> impl Iterator<Item = &Arc<str>> {
        self.endpoints.keys()
    }

    /// Sets `endpoint`'s standing (ignored for one not entered), logging a
    /// change.
    pub(crate) fn set(&mut self, endpoint: &str, out: Option<Signal>, at: Duration) {
        let Some(e) = self.endpoints.get_mut(endpoint) else { return };
        match (e.out.is_some(), out.is_some()) {
            (false, true) => self.out += 1,
            (true, false) => self.out -= 1,
            (true, true) => {
                e.out = out;
                return;
            }
            (false, false) => return,
        }
        e.out = out;
        if self.changes.len() == MAX_CHANGES {
            self.changes.pop_front();
        }
        self.changes.push_back(RouteChange { endpoint: e.key.clone(), out, at });
    }

    #[cfg_attr(not(feature = "cluster"), allow(dead_code))]
    pub(crate) fn set_level(&mut self, endpoint: &str, level: Option<f64>) {
        if let Some(e) = self.endpoints.get_mut(endpoint) {
            e.level = level;
        }
    }

    pub(crate) fn standing(&self, endpoint: &str) -> Standing {
        match self.endpoints.get(endpoint).and_then(|e| e.out) {
            Some(signal) => Standing::Out(signal),
            None => Standing::In,
        }
    }

    #[cfg_attr(not(feature = "cluster"), allow(dead_code))]
    pub(crate) fn level(&self, endpoint: &str) -> Option<f64> {
        self.endpoints.get(endpoint).and_then(|e| e.level)
    }

    pub(crate) fn census(&self) -> Census {
        Census { known: self.endpoints.len(), out: self.out }
    }

    pub(crate) fn changes(&self) -> Vec<RouteChange> {
        self.changes.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_counts_services_and_outs() {
        let mut b = Board::default();
        let at = Duration::ZERO;
        assert!(b.enter("a").is_some());
        assert!(b.enter("a").is_none(), "a second service for the same endpoint");
        b.enter("b");
        b.set("a", Some(Signal::Phi { level: Some(3.0) }), at);
        b.set("a", Some(Signal::Phi { level: Some(4.0) }), at);
        b.set("nobody", Some(Signal::Phi { level: None }), at);
        assert_eq!(b.census(), Census { known: 2, out: 1 });
        assert_eq!(b.changes().len(), 1, "a second verdict on the same side is not a change");
        assert!(b.exit("a").is_none(), "one service for a is left");
        assert!(b.exit("a").is_some());
        assert_eq!(b.census(), Census { known: 1, out: 0 }, "the out endpoint left");
        assert!(b.exit("a").is_none());
        assert_eq!(b.standing("b"), Standing::In);
    }

    #[test]
    fn the_change_log_is_bounded() {
        let mut b = Board::default();
        b.enter("a");
        for i in 0..MAX_CHANGES + 10 {
            let out = (i % 2 == 0).then_some(Signal::Phi { level: None });
            b.set("a", out, Duration::from_millis(i as u64));
        }
        let changes = b.changes();
        assert_eq!(changes.len(), MAX_CHANGES);
        assert_eq!(changes[0].at, Duration::from_millis(10));
    }
}
