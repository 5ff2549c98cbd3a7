//! Virtual time: the instant a run starts at, and the wall clock the
//! simulated hosts share (their seals read it).

use std::time::Duration;

use vigil_detector::Instant;

/// The instant virtual time starts at.
pub(crate) const START: Instant = Instant::from_secs(1);

/// Seconds since the Unix epoch at the start of a run: the clock every
/// simulated host shares (2026-01-01).
pub(crate) const EPOCH_SECS: u64 = 1_767_225_600;

/// Virtual time elapsed at `t` since the start of the run.
pub(crate) fn since_start(t: Instant) -> Duration {
    t.saturating_duration_since(START)
}

/// Milliseconds since the start of the run, as reports give times.
pub(crate) fn ms(t: Instant) -> f64 {
    since_start(t).as_secs_f64() * 1e3
}

/// The hosts' clock at `t`, in seconds since the Unix epoch.
pub(crate) fn unix_secs(t: Instant) -> u64 {
    EPOCH_SECS + since_start(t).as_secs()
}
