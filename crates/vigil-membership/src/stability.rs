//! When a downing decision may be taken: only once the picture (who is a
//! member, who finds whom unreachable) has held still for `stable_after`,
//! so that a decision is not taken halfway through a partition forming, or
//! on a link that flaps. If it never holds still, everyone is downed after
//! `stable_after + down_all_when_unstable`: a cluster that cannot tell its
//! sides apart must not guess.
//!
//! Pure: the caller says when the picture changed and asks at a time.
//!
//! ```
//! use std::time::Duration;
//! use vigil_detector::Instant;
//! use vigil_membership::stability::{Gate, Stability};
//!
//! let s = |secs: u64| Instant::from_secs(secs);
//! let mut gate = Stability::new(Duration::from_secs(20), Some(Duration::from_secs(15)));
//! assert_eq!(gate.poll(s(0)), Gate::Idle);
//! gate.changed(s(10), true); // a member became unreachable
//! assert_eq!(gate.poll(s(20)), Gate::Wait { until: s(30) });
//! gate.changed(s(25), true); // and another: the clock starts again
//! assert_eq!(gate.poll(s(30)), Gate::Wait { until: s(45) });
//! assert_eq!(gate.poll(s(45)), Gate::Decide);
//! gate.decided();
//! assert_eq!(gate.poll(s(50)), Gate::Idle);
//! ```

use std::time::Duration;

use vigil_detector::Instant;

/// What the gate says at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Nothing is unreachable: nothing to decide.
    Idle,
    /// Not yet: ask again at `until`.
    Wait {
        /// When the picture will have held still long enough, or the
        /// instability lasted too long, whichever comes first.
        until: Instant,
    },
    /// The picture has held still for `stable_after`: decide.
    Decide,
    /// The picture has not held still for `stable_after +
    /// down_all_when_unstable`: down everyone.
    DownAll,
}

/// The stability gate. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stability {
    stable_after: Duration,
    down_all_when_unstable: Option<Duration>,
    /// The last change, while something is unreachable.
    changed_at: Option<Instant>,
    /// The first change since the last decision or the last time nothing
    /// was unreachable.
    unstable_since: Option<Instant>,
}

impl Stability {
    /// A gate that waits `stable_after` without a change, and downs everyone
    /// after `stable_after + down_all_when_unstable` of changes (never, for
    /// `None`).
    pub fn new(stable_after: Duration, down_all_when_unstable: Option<Duration>) -> Stability {
        Stability { stable_after, down_all_when_unstable, changed_at: None, unstable_since: None }
    }

    /// Akka's margin for a `stable_after`: three quarters of it, at least
    /// 4 s.
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_membership::stability::Stability;
    ///
    /// assert_eq!(Stability::default_margin(Duration::from_secs(20)), Duration::from_secs(15));
    /// assert_eq!(Stability::default_margin(Duration::from_secs(2)), Duration::from_secs(4));
    /// ```
    pub fn default_margin(stable_after: Duration) -> Duration {
        (stable_after * 3 / 4).max(Duration::from_secs(4))
    }

    /// The picture changed at `now`: a member came or went, or a
    /// reachability record did. `anything_unreachable` says whether some
    /// member is still found unreachable after the change; if not, there is
    /// nothing to decide and the gate rests.
    pub fn changed(&mut self, now: Instant, anything_unreachable: bool) {
        if anything_unreachable {
            self.changed_at = Some(now);
            self.unstable_since.get_or_insert(now);
        } else {
            self.decided();
        }
    }

    /// A decision was taken (or nothing is left to decide): the gate rests
    /// until the next change.
    pub fn decided(&mut self) {
        self.changed_at = None;
        self.unstable_since = None;
    }

    /// When the gate next says something other than [`Gate::Wait`]: the
    /// end of the calm it waits for, or of the instability it tolerates,
    /// whichever is first; `None` while it rests.
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_detector::Instant;
    /// use vigil_membership::stability::Stability;
    ///
    /// let mut gate = Stability::new(Duration::from_secs(20), Some(Duration::from_secs(15)));
    /// assert_eq!(gate.deadline(), None);
    /// gate.changed(Instant::from_secs(10), true);
    /// assert_eq!(gate.deadline(), Some(Instant::from_secs(30)));
    /// ```
    pub fn deadline(&self) -> Option<Instant> {
        let (changed, since) = (self.changed_at?, self.unstable_since?);
        let stable = changed.saturating_add(self.stable_after);
        let give_up = self.down_all_when_unstable.map(|m| since.saturating_add(self.stable_after).saturating_add(m));
        Some(give_up.map_or(stable, |g| stable.min(g)))
    }

    /// What to do at `now`.
    pub fn poll(&self, now: Instant) -> Gate {
        let (Some(changed), Some(since)) = (self.changed_at, self.unstable_since) else { return Gate::Idle };
        let stable = changed.saturating_add(self.stable_after);
        if now >= stable {
            return Gate::Decide;
        }
        match self.down_all_when_unstable.map(|m| since.saturating_add(self.stable_after).saturating_add(m)) {
            Some(give_up) if now >= give_up => Gate::DownAll,
            Some(give_up) => Gate::Wait { until: stable.min(give_up) },
            None => Gate::Wait { until: stable },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn a_link_that_flaps_faster_than_stable_after_ends_with_everyone_down() {
        // Akka's defaults: 20 s, and 15 s more.
        let mut g = Stability::new(Duration::from_secs(20), Some(Duration::from_secs(15)));
        // A change every 10 s from t = 0: never 20 s of calm.
        let mut t = 0;
        let mut first_down_all = None;
        while t <= 60_000 {
            if t % 10_000 == 0 {
                g.changed(at(t), true);
            }
            match g.poll(at(t)) {
                Gate::Decide => panic!("decided at {t} ms without 20 s of calm"),
                Gate::DownAll => {
                    first_down_all.get_or_insert(t);
                }
                _ => {}
            }
            t += 500;
        }
        assert_eq!(first_down_all, Some(35_000), "20 s + 15 s after the first change");
    }

    #[test]
    fn without_a_margin_the_gate_waits_for_calm_however_long() {
        let mut g = Stability::new(Duration::from_secs(5), None);
        for t in (0..100_000).step_by(4_000) {
            g.changed(at(t), true);
            assert_eq!(g.poll(at(t + 3_999)), Gate::Wait { until: at(t + 5_000) });
        }
        assert_eq!(g.poll(at(96_000 + 5_000)), Gate::Decide);
    }

    #[test]
    fn everything_reachable_again_rests_the_gate() {
        let mut g = Stability::new(Duration::from_secs(5), Some(Duration::from_secs(4)));
        g.changed(at(0), true);
        g.changed(at(1_000), false);
        assert_eq!(g.poll(at(10_000)), Gate::Idle);
        // And a new instability counts from its own start.
        g.changed(at(20_000), true);
        assert_eq!(g.poll(at(24_000)), Gate::Wait { until: at(25_000) });
    }
}
