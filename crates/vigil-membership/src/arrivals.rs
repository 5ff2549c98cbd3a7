//! The recording of a watched member's heartbeat arrivals.

use std::collections::VecDeque;

use vigil_detector::Instant;

/// A watched member's heartbeat arrivals as this node recorded them: the
/// newest [`Config::recorded_arrivals`](crate::Config::recorded_arrivals)
/// ones, oldest first.
///
/// ```
/// use vigil_detector::Instant;
/// use vigil_membership::{Config, Node, NodeId};
///
/// let mut config = Config::lan(7);
/// config.recorded_arrivals = 100;
/// let mut node = Node::new(NodeId::new("a", 1), "10.0.0.1:7946".parse()?, config, 1, Instant::ZERO)?;
/// assert!(node.arrivals("b", None).is_none(), "not watched");
/// node.bootstrap(Instant::ZERO, &[(NodeId::new("b", 3), "10.0.0.2:7946".parse()?)]);
/// let recorded = node.arrivals("b", None).expect("b is watched");
/// assert_eq!((recorded.generation, recorded.times.len()), (3, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Arrivals {
    /// The member's generation these arrivals are of.
    pub generation: u64,
    /// Arrival times, oldest first (after the time asked for, if one was).
    pub times: Vec<Instant>,
    /// Arrivals dropped to keep the recording within its bound since it
    /// started.
    pub dropped: u64,
    /// When the recording started (the watch began, or the generation
    /// changed).
    pub since: Instant,
}

/// A bounded ring of arrival times.
#[derive(Debug, Clone)]
pub(crate) struct ArrivalLog {
    times: VecDeque<Instant>,
    capacity: usize,
    dropped: u64,
    since: Instant,
}

impl ArrivalLog {
    pub(crate) fn new(capacity: usize, since: Instant) -> ArrivalLog {
        ArrivalLog { times: VecDeque::new(), capacity, dropped: 0, since }
    }

    /// Records an arrival, dropping the oldest one if the log is full.
    pub(crate) fn push(&mut self, at: Instant) {
        if self.capacity == 0 {
            return;
        }
        if self.times.len() == self.capacity {
            self.times.pop_front();
            self.dropped += 1;
        }
        self.times.push_back(at);
    }

    /// Forgets everything (a new generation starts a new recording).
    pub(crate) fn restart(&mut self, since: Instant) {
        self.times.clear();
        self.dropped = 0;
        self.since = since;
    }

    /// The arrivals after `after` (all of them for `None`).
    pub(crate) fn snapshot(&self, generation: u64, after: Option<Instant>) -> Arrivals {
        let start = match after {
            // Times are non-decreasing: the first one after `after` is found
            // by bisection.
            Some(t) => self.times.partition_point(|&x| x <= t),
            None => 0,
        };
        Arrivals {
            generation,
            times: self.times.range(start..).copied().collect(),
            dropped: self.dropped,
            since: self.since,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_the_newest_and_counts_what_it_dropped() {
        let mut log = ArrivalLog::new(3, Instant::ZERO);
        for ms in [10, 20, 30, 40, 50] {
            log.push(Instant::from_millis(ms));
        }
        let all = log.snapshot(4, None);
        assert_eq!(all.times, [30, 40, 50].map(Instant::from_millis));
        assert_eq!((all.dropped, all.generation), (2, 4));
        let after = log.snapshot(4, Some(Instant::from_millis(40)));
        assert_eq!(after.times, [Instant::from_millis(50)]);
        log.restart(Instant::from_millis(60));
        assert_eq!(
            log.snapshot(5, None),
            Arrivals { generation: 5, since: Instant::from_millis(60), ..Arrivals::default() }
        );
        let mut off = ArrivalLog::new(0, Instant::ZERO);
        off.push(Instant::from_millis(1));
        assert!(off.snapshot(1, None).times.is_empty());
    }
}
