//! The node's timer table: one deadline per kind of work, and the earliest
//! of them is when the node next needs waking.
//!
//! Periodic work (heartbeats, classic probes, gossip, anti-entropy,
//! reconnections, tombstone collection, a join's retries) has a fixed entry that the node
//! moves forward each time it runs. The components with deadlines of their
//! own (probes and relays, suspicions, monitoring) have one entry each, set
//! from their earliest deadline after every input. Reading the table changes
//! nothing.

use std::time::Duration;

use vigil_detector::Instant;

/// A kind of timed work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// φ mode: send heartbeats to the observers.
    Heartbeat,
    /// Classic mode: probe the next member.
    ClassicProbe,
    /// Piggyback queued rumours on gossip packets.
    Gossip,
    /// Exchange full views with a random member.
    PushPull,
    /// Try to reconnect to a member believed dead.
    Reconnect,
    /// Collect old tombstones.
    Collect,
    /// The earliest probe or relay deadline.
    Probes,
    /// The earliest suspicion deadline.
    Suspicions,
    /// Monitoring's next decision: φ's, outlier detection's interval tick,
    /// or a look at a silent member.
    Monitor,
    /// Renew the heartbeat subscriptions of application watches.
    Subscribe,
    /// Ask the seeds again: this node knows no live member.
    Rejoin,
    /// The downing provider's next decision, margin's end or lease.
    Downing,
}

impl Timer {
    const COUNT: usize = 12;

    fn index(self) -> usize {
        match self {
            Timer::Heartbeat => 0,
            Timer::ClassicProbe => 1,
            Timer::Gossip => 2,
            Timer::PushPull => 3,
            Timer::Reconnect => 4,
            Timer::Collect => 5,
            Timer::Probes => 6,
            Timer::Suspicions => 7,
            Timer::Monitor => 8,
            Timer::Subscribe => 9,
            Timer::Rejoin => 10,
            Timer::Downing => 11,
        }
    }
}

/// The table. See the module documentation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Timers {
    at: [Option<Instant>; Timer::COUNT],
}

impl Timers {
    pub(crate) fn set(&mut self, timer: Timer, at: Option<Instant>) {
        self.at[timer.index()] = at;
    }

    pub(crate) fn get(&self, timer: Timer) -> Option<Instant> {
        self.at[timer.index()]
    }

    /// Whether `timer` is set and due by `now`.
    pub(crate) fn is_due(&self, timer: Timer, now: Instant) -> bool {
        self.get(timer).is_some_and(|at| at <= now)
    }

    /// Moves a periodic timer one `period` on from its last deadline, or
    /// from `now` if that is already past (after a stall, the missed rounds
    /// are not made up).
    pub(crate) fn advance(&mut self, timer: Timer, period: Duration, now: Instant) {
        let next = self.get(timer).unwrap_or(now).saturating_add(period);
        self.set(timer, Some(if next <= now { now.saturating_add(period) } else { next }));
    }

    /// The earliest deadline.
    pub(crate) fn earliest(&self) -> Option<Instant> {
        self.at.iter().flatten().min().copied()
    }

    pub(crate) fn clear(&mut self) {
        self.at = [None; Timer::COUNT];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_entry_is_the_wake_up_time_and_periods_skip_missed_rounds() {
        let mut t = Timers::default();
        assert_eq!(t.earliest(), None);
        t.set(Timer::Gossip, Some(Instant::from_millis(200)));
        t.set(Timer::Suspicions, Some(Instant::from_millis(150)));
        assert_eq!(t.earliest(), Some(Instant::from_millis(150)));
        assert!(t.is_due(Timer::Gossip, Instant::from_millis(200)));
        t.advance(Timer::Gossip, Duration::from_millis(200), Instant::from_millis(200));
        assert_eq!(t.get(Timer::Gossip), Some(Instant::from_millis(400)));
        // Woken 10 s late: the next round is a period from now.
        t.advance(Timer::Gossip, Duration::from_millis(200), Instant::from_secs(10));
        assert_eq!(t.get(Timer::Gossip), Some(Instant::from_millis(10_200)));
        t.clear();
        assert_eq!(t.earliest(), None);
    }
}
