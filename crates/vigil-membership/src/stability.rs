//! When a downing decision may be taken: only once the picture (who is a
//! member, who finds whom unreachable) has held still for `stable_after`,
//! so that a decision is not taken halfway through a partition forming, or
//! on a link that flaps. If it flaps (a member found unreachable becomes
//! reachable again, and the picture never holds still), the gate says so
//! `stable_after + decide_when_unstable` after the first flap
//! ([`Gate::Unstable`]): Akka downs everyone then (its
//! `down-all-when-unstable`); vigil's node decides instead with every
//! member that flapped counted unreachable, so that one flaky member is
//! removed rather than the cluster (see [`Downing`](crate::downing::Downing)).
//! A partition being found, member after member, is not a flap: its
//! members only ever become unreachable, however long finding them all
//! takes.
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
//! // A member that comes back and goes again: a flap starts the clock
//! // after which everyone is downed.
//! gate.changed(s(60), true);
//! gate.flapped(s(70));
//! assert_eq!(gate.poll(s(71)), Gate::Wait { until: s(90) });
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
    /// The picture has flapped for `stable_after + decide_when_unstable`
    /// without holding still: decide as it is, the members that flapped
    /// counted unreachable.
    Unstable,
}

/// The stability gate. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stability {
    stable_after: Duration,
    decide_when_unstable: Option<Duration>,
    /// The last change, while something is unreachable.
    changed_at: Option<Instant>,
    /// The first flap since the last decision or the last calm.
    unstable_since: Option<Instant>,
    /// The latest flap.
    last_flap: Option<Instant>,
}

impl Stability {
    /// A gate that waits `stable_after` without a change, and downs everyone
    /// after `stable_after + decide_when_unstable` of changes (never, for
    /// `None`).
    pub fn new(stable_after: Duration, decide_when_unstable: Option<Duration>) -> Stability {
        Stability { stable_after, decide_when_unstable, changed_at: None, unstable_since: None, last_flap: None }
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
    /// nothing to decide and the gate rests (and forgets earlier flaps once
    /// they are `stable_after` old).
    pub fn changed(&mut self, now: Instant, anything_unreachable: bool) {
        let resting = self.changed_at.is_none();
        if (resting || !anything_unreachable)
            && self.last_flap.is_none_or(|f| now >= f.saturating_add(self.stable_after))
        {
            self.unstable_since = None;
            self.last_flap = None;
        }
        self.changed_at = anything_unreachable.then_some(now);
    }

    /// A member found unreachable became reachable again at `now` (a
    /// change too): the picture flaps.
    pub fn flapped(&mut self, now: Instant) {
        self.unstable_since.get_or_insert(now);
        self.last_flap = Some(now);
        self.changed_at = Some(now);
    }

    /// A decision was taken: the gate rests until the next change.
    pub fn decided(&mut self) {
        self.changed_at = None;
        self.unstable_since = None;
        self.last_flap = None;
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
        let stable = self.changed_at?.saturating_add(self.stable_after);
        Some(self.give_up().map_or(stable, |g| stable.min(g)))
    }

    /// When everyone is downed, if the flapping goes on.
    fn give_up(&self) -> Option<Instant> {
        let (since, margin) = (self.unstable_since?, self.decide_when_unstable?);
        Some(since.saturating_add(self.stable_after).saturating_add(margin))
    }

    /// What to do at `now`.
    pub fn poll(&self, now: Instant) -> Gate {
        let Some(changed) = self.changed_at else { return Gate::Idle };
        let stable = changed.saturating_add(self.stable_after);
        if now >= stable {
            return Gate::Decide;
        }
        match self.give_up() {
            Some(give_up) if now >= give_up => Gate::Unstable,
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
        // A member comes back every 10 s from t = 0 (and another stays
        // unreachable): never 20 s of calm.
        let mut t = 0;
        let mut first_down_all = None;
        while t <= 60_000 {
            if t % 10_000 == 0 {
                g.changed(at(t), true);
                g.flapped(at(t));
            }
            match g.poll(at(t)) {
                Gate::Decide => panic!("decided at {t} ms without 20 s of calm"),
                Gate::Unstable => {
                    first_down_all.get_or_insert(t);
                }
                _ => {}
            }
            t += 500;
        }
        assert_eq!(first_down_all, Some(35_000), "20 s + 15 s after the first flap");
    }

    #[test]
    fn a_partition_found_member_after_member_is_no_flap() {
        let mut g = Stability::new(Duration::from_secs(12), Some(Duration::from_secs(9)));
        // One more member of the other side found every 4 s, for 40 s:
        // the decision waits, and nobody is downed for it.
        for t in (0..=40_000).step_by(4_000) {
            g.changed(at(t), true);
            assert!(matches!(g.poll(at(t + 3_999)), Gate::Wait { .. }), "at {t}");
        }
        assert_eq!(g.poll(at(52_000)), Gate::Decide);
    }

    #[test]
    fn a_flap_is_remembered_through_a_short_calm() {
        let mut g = Stability::new(Duration::from_secs(20), Some(Duration::from_secs(15)));
        g.changed(at(0), true);
        g.flapped(at(5_000));
        // Everything reachable for 10 s, then unreachable again: the flap
        // at 5 s still counts.
        g.changed(at(6_000), false);
        g.changed(at(16_000), true);
        assert_eq!(g.poll(at(17_000)), Gate::Wait { until: at(36_000) });
        // After a calm of stable_after, it is forgotten.
        g.changed(at(17_000), false);
        g.changed(at(40_000), true);
        assert_eq!(g.poll(at(41_000)), Gate::Wait { until: at(60_000) });
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
