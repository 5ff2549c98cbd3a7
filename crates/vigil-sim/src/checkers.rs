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

use serde::Serialize;

/// The checker name of [`epoch_never_decreases`].
pub const EPOCHS_NEVER_DECREASE: &str = "epochs never decrease";
/// The checker name of [`no_false_death_inside_envelope`].
pub const NO_FALSE_DEATH_INSIDE_ENVELOPE: &str = "no false death inside the envelope";
/// The checker name of [`every_crash_detected_within_bound`].
pub const EVERY_CRASH_DETECTED_WITHIN_BOUND: &str = "every crash detected within the bound";
/// The checker name of [`healed_partition_converges_within_bound`].
pub const HEALED_PARTITIONS_CONVERGE_WITHIN_BOUND: &str = "healed partitions converge within the bound";

/// A violated invariant.
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
pub const MAX_KEPT: usize = 20;

/// The violations of a run: the first [`MAX_KEPT`] in full, and the count
/// of all.
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
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// A node's epoch went from `before` to `after`: a violation if it fell.
pub fn epoch_never_decreases(node: &str, before: (u64, u64), after: (u64, u64)) -> Option<String> {
    (after < before).then(|| format!("{node}: (generation, incarnation) fell from {before:?} to {after:?}"))
}

/// `declarer` declared `victim` dead; `inside` says whether the victim was
/// inside the liveness envelope.
pub fn no_false_death_inside_envelope(declarer: &str, victim: &str, inside: bool) -> Option<String> {
    inside.then(|| format!("{declarer} declared {victim} dead, but it runs, is reachable and was not disturbed"))
}

/// A crash of `node` had `survivors`, of which `in_time` declared it dead
/// within `bound_ms`.
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
