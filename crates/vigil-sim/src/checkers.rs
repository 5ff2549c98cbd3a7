//! The invariants a run is held to, one named function each, and a bounded
//! list of their violations.
//!
//! - [`EPOCHS_NEVER_DECREASE`]: a node's (generation, incarnation) only
//!   grows;
//! - [`NO_FALSE_DEATH_INSIDE_ENVELOPE`]: nobody declares dead a node that
//!   runs, is reachable and was not disturbed lately (the scenario's
//!   [`Envelope`](crate::Envelope));
//! - [`EVERY_CRASH_DETECTED_WITHIN_BOUND`]: every survivor declares every
//!   crash within the scenario's detection bound;
//! - [`HEALED_PARTITIONS_CONVERGE_WITHIN_BOUND`]: once a partition ends
//!   (and no other is in force), every live node sees every other live node
//!   alive within the scenario's heal bound, however long the partition
//!   lasted.
//! - [`AT_MOST_ONE_SIDE_SURVIVES`]: with a downing strategy, no partition
//!   ends with members of both sides having downed the other side;
//! - [`DECISIONS_WAIT_FOR_STABILITY`]: with a downing strategy, no node
//!   decides before its row and its membership have held still for
//!   `stable_after` (but for a decision on members that flapped for too
//!   long);
//! - [`NO_COLLATERAL`]: with a downing strategy and the faulty members
//!   (crashed, and members forging as holders of the key) within the
//!   strategy's tolerance, no member inside the liveness envelope is
//!   downed, downs itself, or is declared dead, whatever is forged;
//! - [`DOWNED_MEMBERS_STOP`]: a member that others downed downs itself
//!   (or is gone) within a bound (`stable_after`, the margin and 60 s)
//!   of acting as a member: of being downed, or, if paused then, of
//!   resuming; unless its removal stands for nothing: every member that
//!   downed it withdrew the verdict, downed itself later, or crashed
//!   before any other member took the death;
//! - [`ONE_CLUSTER_AFTER_FAULTS`]: once no fault has been in force for the
//!   scenario's outage bound, and the faulty members are within the
//!   strategy's tolerance, every running member is alive (none downed for
//!   good) and sees every other alive;
//! - [`NOTHING_MOVED_BY_A_FORGERY`]: no member ever holds another at the
//!   address a forged move named.
//!
//! # Example
//!
//! ```
//! use vigil_sim::checkers::{self, EPOCHS_NEVER_DECREASE};
//!
//! // Each checker says what went wrong, or nothing when the invariant holds.
//! assert!(checkers::epoch_never_decreases("n1", (1, 4), (1, 5)).is_none());
//! let detail = checkers::epoch_never_decreases("n1", (1, 5), (1, 4)).unwrap();
//! assert_eq!(detail, "n1: (generation, incarnation) fell from (1, 5) to (1, 4)");
//! assert_eq!(EPOCHS_NEVER_DECREASE, "epochs never decrease");
//! ```

use serde::Serialize;

/// The checker name of [`epoch_never_decreases`].
///
/// # Example
///
/// ```
/// // Violations name their checker with it.
/// assert!(!vigil_sim::checkers::EPOCHS_NEVER_DECREASE.is_empty());
/// ```
pub const EPOCHS_NEVER_DECREASE: &str = "epochs never decrease";
/// The checker name of [`no_false_death_inside_envelope`].
///
/// # Example
///
/// ```
/// // Violations name their checker with it.
/// assert!(!vigil_sim::checkers::NO_FALSE_DEATH_INSIDE_ENVELOPE.is_empty());
/// ```
pub const NO_FALSE_DEATH_INSIDE_ENVELOPE: &str = "no false death inside the envelope";
/// The checker name of [`every_crash_detected_within_bound`].
///
/// # Example
///
/// ```
/// // Violations name their checker with it.
/// assert!(!vigil_sim::checkers::EVERY_CRASH_DETECTED_WITHIN_BOUND.is_empty());
/// ```
pub const EVERY_CRASH_DETECTED_WITHIN_BOUND: &str = "every crash detected within the bound";
/// The checker name of [`healed_partition_converges_within_bound`].
///
/// # Example
///
/// ```
/// // Violations name their checker with it.
/// assert!(!vigil_sim::checkers::HEALED_PARTITIONS_CONVERGE_WITHIN_BOUND.is_empty());
/// ```
pub const HEALED_PARTITIONS_CONVERGE_WITHIN_BOUND: &str = "healed partitions converge within the bound";

/// The checker name of [`at_most_one_side_survives`].
///
/// # Example
///
/// ```
/// assert!(!vigil_sim::checkers::AT_MOST_ONE_SIDE_SURVIVES.is_empty());
/// ```
pub const AT_MOST_ONE_SIDE_SURVIVES: &str = "at most one side survives a partition";
/// The checker name of [`decision_waits_for_stability`].
///
/// # Example
///
/// ```
/// assert!(!vigil_sim::checkers::DECISIONS_WAIT_FOR_STABILITY.is_empty());
/// ```
pub const DECISIONS_WAIT_FOR_STABILITY: &str = "decisions wait for stable-after";

/// The checker name of [`no_collateral`].
///
/// # Example
///
/// ```
/// assert!(!vigil_sim::checkers::NO_COLLATERAL.is_empty());
/// ```
pub const NO_COLLATERAL: &str = "no correct member downed or declared dead";
/// The checker name of [`downed_members_stop`].
///
/// # Example
///
/// ```
/// assert!(!vigil_sim::checkers::DOWNED_MEMBERS_STOP.is_empty());
/// ```
pub const DOWNED_MEMBERS_STOP: &str = "a member others downed downs itself";
/// The checker name of [`one_cluster_after_faults`].
///
/// # Example
///
/// ```
/// assert!(!vigil_sim::checkers::ONE_CLUSTER_AFTER_FAULTS.is_empty());
/// ```
pub const ONE_CLUSTER_AFTER_FAULTS: &str = "one cluster again once faults stop";
/// The checker name of [`nothing_moved_by_a_forgery`].
///
/// # Example
///
/// ```
/// assert!(!vigil_sim::checkers::NOTHING_MOVED_BY_A_FORGERY.is_empty());
/// ```
pub const NOTHING_MOVED_BY_A_FORGERY: &str = "no address moved by a forgery";

/// A violated invariant.
///
/// # Example
///
/// ```
/// use vigil_sim::Violation;
/// use vigil_sim::checkers::{self, EPOCHS_NEVER_DECREASE};
///
/// let detail = checkers::epoch_never_decreases("n1", (2, 0), (1, 9)).unwrap();
/// let v = Violation { at_ms: 1500.0, checker: EPOCHS_NEVER_DECREASE, detail };
/// assert!(v.detail.starts_with("n1:"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violation {
    /// When, ms since the start.
    pub at_ms: f64,
    /// Which checker.
    pub checker: &'static str,
    /// What happened.
    pub detail: String,
}

/// Violations kept in full; beyond these only the count grows.
///
/// # Example
///
/// ```
/// assert_eq!(vigil_sim::checkers::MAX_KEPT, 20);
/// ```
pub const MAX_KEPT: usize = 20;

/// The violations of a run: the first [`MAX_KEPT`] in full, and the count
/// of all.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Scenario, Sim};
///
/// let mut s = Scenario::new("calm", 5);
/// s.duration = Duration::from_secs(20);
/// let report = Sim::new(&s)?.run(&mut |_| {});
/// assert!(report.violations.is_empty());
/// assert!(report.violations.first.is_empty() && report.violations.total == 0);
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Violations {
    /// The first ones.
    pub first: Vec<Violation>,
    /// How many in all.
    pub total: u64,
}

impl Violations {
    pub(crate) fn add(&mut self, at_ms: f64, checker: &'static str, detail: Option<String>) {
        let Some(detail) = detail else { return };
        self.total += 1;
        if self.first.len() < MAX_KEPT {
            self.first.push(Violation { at_ms, checker, detail });
        }
    }

    /// Whether every invariant held.
    ///
    /// # Example
    ///
    /// ```
    /// assert!(vigil_sim::Violations::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// A node's epoch went from `before` to `after`: a violation if it fell.
///
/// # Example
///
/// ```
/// use vigil_sim::checkers::epoch_never_decreases;
///
/// // A restart's new generation may start its incarnations again.
/// assert!(epoch_never_decreases("n1", (1, 7), (2, 0)).is_none());
/// assert!(epoch_never_decreases("n1", (2, 0), (1, 7)).is_some());
/// ```
pub fn epoch_never_decreases(node: &str, before: (u64, u64), after: (u64, u64)) -> Option<String> {
    (after < before).then(|| format!("{node}: (generation, incarnation) fell from {before:?} to {after:?}"))
}

/// `declarer` declared `victim` dead; `inside` says whether the victim was
/// inside the liveness envelope.
///
/// # Example
///
/// ```
/// use vigil_sim::checkers::no_false_death_inside_envelope;
///
/// // Outside the envelope (a partition, heavy loss) a false death is only
/// // counted.
/// assert!(no_false_death_inside_envelope("n0", "n3#1", false).is_none());
/// assert_eq!(
///     no_false_death_inside_envelope("n0", "n3#1", true).unwrap(),
///     "n0 declared n3#1 dead, but it runs, is reachable and was not disturbed"
/// );
/// ```
pub fn no_false_death_inside_envelope(declarer: &str, victim: &str, inside: bool) -> Option<String> {
    inside.then(|| format!("{declarer} declared {victim} dead, but it runs, is reachable and was not disturbed"))
}

/// A crash of `node` had `survivors`, of which `in_time` declared it dead
/// within `bound_ms`.
///
/// # Example
///
/// ```
/// use vigil_sim::checkers::every_crash_detected_within_bound;
///
/// assert!(every_crash_detected_within_bound("n3#1", 9, 9, 30_000.0).is_none());
/// assert_eq!(
///     every_crash_detected_within_bound("n3#1", 9, 7, 30_000.0).unwrap(),
///     "crash of n3#1: 7 of 9 survivors declared it dead within 30000 ms"
/// );
/// ```
pub fn every_crash_detected_within_bound(
    node: &str,
    survivors: usize,
    in_time: usize,
    bound_ms: f64,
) -> Option<String> {
    // The bound to the microsecond: ms conversions leave float noise below.
    let bound = format!("{bound_ms:.3}");
    let bound = bound.trim_end_matches('0').trim_end_matches('.');
    (in_time < survivors)
        .then(|| format!("crash of {node}: {in_time} of {survivors} survivors declared it dead within {bound} ms"))
}

/// A partition (fault `fault`, lasting `lasted_ms`) healed, and `bound_ms`
/// later `disagreeing` pairs of live nodes still did not see each other
/// alive.
///
/// # Example
///
/// ```
/// use vigil_sim::checkers::healed_partition_converges_within_bound;
///
/// assert!(healed_partition_converges_within_bound(0, 60_000.0, 60_000.0, 0).is_none());
/// let detail = healed_partition_converges_within_bound(0, 60_000.0, 60_000.0, 12).unwrap();
/// assert!(detail.ends_with("12 pairs of live nodes still did not see each other alive"));
/// ```
pub fn healed_partition_converges_within_bound(
    fault: usize,
    lasted_ms: f64,
    bound_ms: f64,
    disagreeing: u64,
) -> Option<String> {
    (disagreeing > 0).then(|| {
        format!(
            "partition (fault {fault}) of {:.0} s healed, and {:.0} s later {disagreeing} pairs of live nodes \
             still did not see each other alive",
            lasted_ms / 1e3,
            bound_ms / 1e3
        )
    })
}

/// A partition (fault `fault`) ended with `first` of the first side and
/// `second` of the second having downed members of the other side: two
/// sides survived, each believing it owns the cluster.
///
/// # Example
///
/// ```
/// use vigil_sim::checkers::at_most_one_side_survives;
///
/// assert!(at_most_one_side_survives(2, &["n0"], &[]).is_none());
/// let detail = at_most_one_side_survives(2, &["n0", "n1"], &["n5"]).unwrap();
/// assert_eq!(detail, "partition (fault 2): both sides downed the other (n0, n1 on one side; n5 on the other)");
/// ```
pub fn at_most_one_side_survives(fault: usize, first: &[&str], second: &[&str]) -> Option<String> {
    (!first.is_empty() && !second.is_empty()).then(|| {
        format!(
            "partition (fault {fault}): both sides downed the other ({} on one side; {} on the other)",
            first.join(", "),
            second.join(", ")
        )
    })
}

/// Node `node` decided after `calm_ms` without a change in its picture,
/// less than `stable_after_ms`.
///
/// # Example
///
/// ```
/// use vigil_sim::checkers::decision_waits_for_stability;
///
/// assert!(decision_waits_for_stability("n3", 20_000.0, 20_000.0).is_none());
/// let detail = decision_waits_for_stability("n3", 4_500.0, 20_000.0).unwrap();
/// assert_eq!(detail, "n3 decided 4.5 s after its last membership change, before stable-after (20.0 s)");
/// ```
pub fn decision_waits_for_stability(node: &str, calm_ms: f64, stable_after_ms: f64) -> Option<String> {
    (calm_ms < stable_after_ms).then(|| {
        format!(
            "{node} decided {:.1} s after its last membership change, before stable-after ({:.1} s)",
            calm_ms / 1e3,
            stable_after_ms / 1e3
        )
    })
}

/// `what` happened to `victim` (`downed by n2`, `downed itself`,
/// `declared dead by n3`): a violation if it runs inside the liveness
/// envelope, forges nothing, and the faulty members are within the
/// strategy's tolerance (`inside`).
///
/// # Example
///
/// ```
/// use vigil_sim::checkers::no_collateral;
///
/// assert!(no_collateral("n3#1", "downed by n0", false).is_none());
/// assert_eq!(
///     no_collateral("n3#1", "downed by n0", true).unwrap(),
///     "n3#1 downed by n0, but it runs, is reachable, was not disturbed, and the faulty members are within the strategy's tolerance"
/// );
/// ```
pub fn no_collateral(victim: &str, what: &str, inside: bool) -> Option<String> {
    inside.then(|| {
        format!(
            "{victim} {what}, but it runs, is reachable, was not disturbed, and the faulty members are within the \
             strategy's tolerance"
        )
    })
}

/// `victim`, downed by others and acting as a member since `at_ms`, had
/// not downed itself `bound_ms` later.
///
/// # Example
///
/// ```
/// use vigil_sim::checkers::downed_members_stop;
///
/// assert_eq!(
///     downed_members_stop("n4#1", 30_000.0, 60_000.0),
///     "n4#1, downed by others, acted as a member from 30.0 s and had not downed itself 60.0 s later"
/// );
/// ```
pub fn downed_members_stop(victim: &str, at_ms: f64, bound_ms: f64) -> String {
    format!(
        "{victim}, downed by others, acted as a member from {:.1} s and had not downed itself {:.1} s later",
        at_ms / 1e3,
        bound_ms / 1e3
    )
}

/// `quiet_ms` after the last fault, `out` (members downed for good) and
/// `disagreeing` pairs of live members that do not see each other alive.
///
/// # Example
///
/// ```
/// use vigil_sim::checkers::one_cluster_after_faults;
///
/// assert!(one_cluster_after_faults(180_000.0, &[], 0).is_none());
/// assert_eq!(
///     one_cluster_after_faults(180_000.0, &["n2"], 3).unwrap(),
///     "180 s after the last fault: out for good: n2; 3 pairs of live members do not see each other alive"
/// );
/// ```
pub fn one_cluster_after_faults(quiet_ms: f64, out: &[&str], disagreeing: u64) -> Option<String> {
    (!out.is_empty() || disagreeing > 0).then(|| {
        let out = if out.is_empty() { "none".to_owned() } else { out.join(", ") };
        format!(
            "{:.0} s after the last fault: out for good: {out}; {disagreeing} pairs of live members do not see each \
             other alive",
            quiet_ms / 1e3
        )
    })
}

/// `holder` holds `member` at `addr`, which a forgery named.
///
/// # Example
///
/// ```
/// use vigil_sim::checkers::nothing_moved_by_a_forgery;
///
/// assert_eq!(nothing_moved_by_a_forgery("n0", "n2", "10.255.255.253:7946"), "n0 holds n2 at 10.255.255.253:7946, where a forgery said it moved");
/// ```
pub fn nothing_moved_by_a_forgery(holder: &str, member: &str, addr: &str) -> String {
    format!("{holder} holds {member} at {addr}, where a forgery said it moved")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_are_bounded_but_counted() {
        let mut v = Violations::default();
        for i in 0..1000 {
            v.add(i as f64, EPOCHS_NEVER_DECREASE, epoch_never_decreases("n1", (1, 5), (1, 4)));
            v.add(i as f64, EPOCHS_NEVER_DECREASE, epoch_never_decreases("n1", (1, 5), (2, 0)));
        }
        assert_eq!((v.total, v.first.len()), (1000, MAX_KEPT));
        assert!(v.first[0].detail.contains("fell from (1, 5) to (1, 4)"));
        assert!(every_crash_detected_within_bound("n3", 9, 9, 1.0).is_none());
        assert_eq!(
            every_crash_detected_within_bound("n3", 9, 0, 0.0010000000000000002).unwrap(),
            "crash of n3: 0 of 9 survivors declared it dead within 0.001 ms"
        );
        assert!(no_false_death_inside_envelope("a", "b", false).is_none());
        assert!(healed_partition_converges_within_bound(0, 3.6e6, 6e4, 0).is_none());
        assert_eq!(
            healed_partition_converges_within_bound(2, 3.6e6, 6e4, 38).unwrap(),
            "partition (fault 2) of 3600 s healed, and 60 s later 38 pairs of live nodes still did not see each other alive"
        );
    }
}
