//! The [`Detector`] trait and the exact inverse shared by all models.

use crate::{HeartbeatOutcome, Instant, Stats};

/// A failure detector for one monitored peer.
///
/// A detector turns the arrival times of one peer's heartbeats into a
/// *suspicion level*: a number that is 0 or more, finite, never NaN, and
/// non-decreasing in `now` for as long as no heartbeat arrives. What the level
/// means depends on the model (see the crate documentation's table); a
/// consumer compares it with a threshold of its own choosing, and considers
/// the peer available while `level < threshold`.
///
/// Time is always an argument. Detectors never read a clock.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::{Akka, AkkaConfig, Detector, Instant};
///
/// let mut d = Akka::new(AkkaConfig::default())?;
/// for i in 0..10 {
///     d.heartbeat(Instant::from_millis(i * 1_000));
/// }
/// let last = Instant::from_millis(9_000);
/// assert!(d.level(last + Duration::from_millis(1_000)) < 1.0);
/// // When will the level reach 8 if nothing else arrives?
/// let at = d.crossing(8.0).unwrap();
/// assert!(d.level(at) >= 8.0);
/// assert!(d.level(at - Duration::from_micros(1)) < 8.0);
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
pub trait Detector {
    /// Records a heartbeat that arrived at `now`.
    ///
    /// A heartbeat earlier than the last one is ignored (and counted in
    /// [`Stats::backwards`]); it never panics and never produces a wrapped
    /// interval.
    fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome;

    /// The suspicion level at `now`: finite, at least 0, never NaN, and
    /// non-decreasing in `now` until the next heartbeat.
    ///
    /// Before the first heartbeat, and while a model has no estimate yet, the
    /// level is 0. A `now` earlier than the last heartbeat is treated as the
    /// instant of the last heartbeat.
    fn level(&self, now: Instant) -> f64;

    /// The earliest instant, at or after the last heartbeat, at which the level
    /// is at least `threshold` if no heartbeat arrives in the meantime.
    ///
    /// The answer is exact on the nanosecond grid: `level(t) >= threshold` and
    /// `level(t - 1ns) < threshold` (unless `t` is the last heartbeat itself,
    /// when the level was already at the threshold). `None` means never: no
    /// heartbeat yet, no estimate yet, a NaN threshold, or not before
    /// [`Instant::MAX`].
    ///
    /// This is what lets a runtime arm one timer per peer instead of polling,
    /// and what lets the lab measure detection and mistakes exactly.
    fn crossing(&self, threshold: f64) -> Option<Instant>;

    /// The model's statistics and counters.
    fn stats(&self) -> Stats;

    /// Forgets every heartbeat and sample, as if newly built (counters stay).
    fn reset(&mut self);

    /// When the last heartbeat arrived, if any.
    fn last_heartbeat(&self) -> Option<Instant>;

    /// Heap memory owned by the detector, in bytes (excluding its own size).
    fn heap_bytes(&self) -> usize;

    /// `level(now) < threshold`.
    fn is_available(&self, now: Instant, threshold: f64) -> bool {
        self.level(now) < threshold
    }
}

/// The common shape of [`Detector::crossing`]: handles the degenerate cases,
/// then refines an analytic guess (elapsed nanoseconds after the last
/// heartbeat) on the integer grid. `guess` returns `None` when the model has
/// no estimate, in which case its level stays 0 and never reaches a positive
/// threshold.
pub(crate) fn crossing_from_guess(
    last: Option<Instant>,
    threshold: f64,
    guess: impl FnOnce() -> Option<f64>,
    level: impl Fn(Instant) -> f64,
) -> Option<Instant> {
    let last = last?;
    if threshold.is_nan() {
        return None;
    }
    if threshold <= 0.0 {
        return Some(last);
    }
    let elapsed = guess()?;
    refine_crossing(last, last.add_nanos_f64_ceil(elapsed), |t| level(t) >= threshold)
}

/// Finds the exact crossing on the integer nanosecond grid, given an analytic
/// guess. `reached(t)` must be monotone (false, then true) for `t >= last`.
///
/// Gallops from the guess toward the boundary and then bisects, so a guess
/// within `k` nanoseconds costs about `2 log2 k` evaluations.
pub(crate) fn refine_crossing(last: Instant, guess: Instant, reached: impl Fn(Instant) -> bool) -> Option<Instant> {
    if reached(last) {
        return Some(last);
    }
    let last_n = last.as_nanos();
    let guess_n = guess.as_nanos().max(last_n.saturating_add(1));
    let at = |n: u64| reached(Instant::from_nanos(n));
    // Invariant once established: !at(lo) && at(hi), lo < hi.
    let (mut lo, mut hi);
    if at(guess_n) {
        hi = guess_n;
        let mut step = 1u64;
        loop {
            let probe = hi.saturating_sub(step).max(last_n);
            if !at(probe) {
                lo = probe;
                break;
            }
            hi = probe;
            step = step.saturating_mul(2);
        }
    } else {
        lo = guess_n;
        let mut step = 1u64;
        loop {
            if lo == u64::MAX {
                return None;
            }
            let probe = lo.saturating_add(step);
            if at(probe) {
                hi = probe;
                break;
            }
            lo = probe;
            step = step.saturating_mul(2);
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if at(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(Instant::from_nanos(hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refine_finds_the_boundary_from_either_side() {
        let boundary = 1_000_000_123u64;
        let reached = |t: Instant| t.as_nanos() >= boundary;
        let last = Instant::from_nanos(1_000);
        for guess in [0, 1_000, 999_999_000, boundary, boundary + 7, u64::MAX / 2, u64::MAX] {
            let got = refine_crossing(last, Instant::from_nanos(guess), reached);
            assert_eq!(got, Some(Instant::from_nanos(boundary)), "guess {guess}");
        }
    }

    #[test]
    fn refine_reports_never_and_already() {
        let last = Instant::from_nanos(50);
        assert_eq!(refine_crossing(last, Instant::from_nanos(60), |_| false), None);
        assert_eq!(refine_crossing(last, Instant::from_nanos(60), |_| true), Some(last));
        // Reached only at the very end of time.
        let got = refine_crossing(last, Instant::from_nanos(60), |t| t == Instant::MAX);
        assert_eq!(got, Some(Instant::MAX));
    }
}
