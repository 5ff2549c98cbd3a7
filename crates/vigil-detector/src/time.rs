//! The crate's notion of time: a monotonic instant passed in by the caller.
//!
//! Nothing in this crate reads a clock. Every operation that depends on time
//! takes an [`Instant`], which is a count of nanoseconds since an origin of the
//! caller's choosing (process start, the start of a trace, the start of a
//! simulation). Intervals are [`std::time::Duration`].

use core::fmt;
use core::ops::{Add, Sub};
use std::time::Duration;

/// A point on a monotonic time line, in nanoseconds since an arbitrary origin.
///
/// `Instant` can be built from a number, so traces, simulations and tests can
/// drive detectors without a real clock. A runtime maps its own clock onto it,
/// for example by measuring `std::time::Instant::elapsed` from a start instant
/// captured once.
///
/// Arithmetic saturates instead of wrapping or panicking: adding a duration to
/// [`Instant::MAX`] gives `Instant::MAX`, and subtracting a later instant from
/// an earlier one gives [`Duration::ZERO`].
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::Instant;
///
/// let start = Instant::from_millis(1_000);
/// let later = start + Duration::from_millis(250);
/// assert_eq!(later.as_nanos(), 1_250_000_000);
/// assert_eq!(later - start, Duration::from_millis(250));
/// // Subtraction saturates: an earlier instant minus a later one is zero.
/// assert_eq!(start - later, Duration::ZERO);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(transparent))]
pub struct Instant(u64);

impl Instant {
    /// The origin of the time line.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant (about 584 years after the origin).
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Instant {
        Instant(nanos)
    }

    /// An instant `micros` microseconds after the origin (saturating).
    pub const fn from_micros(micros: u64) -> Instant {
        Instant(micros.saturating_mul(1_000))
    }

    /// An instant `millis` milliseconds after the origin (saturating).
    pub const fn from_millis(millis: u64) -> Instant {
        Instant(millis.saturating_mul(1_000_000))
    }

    /// An instant `secs` seconds after the origin (saturating).
    pub const fn from_secs(secs: u64) -> Instant {
        Instant(secs.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Milliseconds since the origin, as a float (for display and reports).
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Nanoseconds from `earlier` to `self`, or zero if `earlier` is later.
    #[inline]
    pub(crate) const fn nanos_since(self, earlier: Instant) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// The time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, or `None` if the result is past [`Instant::MAX`].
    pub fn checked_add(self, d: Duration) -> Option<Instant> {
        let nanos = u64::try_from(d.as_nanos()).ok()?;
        self.0.checked_add(nanos).map(Instant)
    }

    /// `self - d`, or `None` if the result is before the origin.
    pub fn checked_sub(self, d: Duration) -> Option<Instant> {
        let nanos = u64::try_from(d.as_nanos()).ok()?;
        self.0.checked_sub(nanos).map(Instant)
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    pub fn saturating_add(self, d: Duration) -> Instant {
        self.checked_add(d).unwrap_or(Instant::MAX)
    }

    /// `self - d`, saturating at [`Instant::ZERO`].
    pub fn saturating_sub(self, d: Duration) -> Instant {
        self.checked_sub(d).unwrap_or(Instant::ZERO)
    }

    /// Adds a non-negative number of nanoseconds given as a float, rounding up
    /// to the next whole nanosecond and saturating at [`Instant::MAX`].
    ///
    /// Used by the inverse computations, whose analytic answers are real
    /// numbers. Negative, NaN or infinite offsets are handled: negative and NaN
    /// give `self`, `+inf` gives `MAX`.
    pub(crate) fn add_nanos_f64_ceil(self, nanos: f64) -> Instant {
        if nanos.is_nan() || nanos <= 0.0 {
            return self;
        }
        let room = (u64::MAX - self.0) as f64;
        if nanos >= room {
            return Instant::MAX;
        }
        let step = nanos.ceil() as u64;
        Instant(self.0.saturating_add(step))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    /// Saturating addition.
    fn add(self, rhs: Duration) -> Instant {
        self.saturating_add(rhs)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    /// Saturating subtraction.
    fn sub(self, rhs: Duration) -> Instant {
        self.saturating_sub(rhs)
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating difference: zero when `rhs` is later than `self`.
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Instant({}ns)", self.0)
    }
}

impl fmt::Display for Instant {
    /// Milliseconds since the origin, with up to six decimals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0 / 1_000_000;
        let frac = self.0 % 1_000_000;
        if frac == 0 {
            write!(f, "{ms}ms")
        } else {
            let s = format!("{frac:06}");
            write!(f, "{ms}.{}ms", s.trim_end_matches('0'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_at_both_ends() {
        assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
        assert_eq!(Instant::ZERO - Duration::from_secs(1), Instant::ZERO);
        assert_eq!(Instant::from_secs(1) - Instant::from_secs(2), Duration::ZERO);
        assert_eq!(Instant::MAX.checked_add(Duration::from_nanos(1)), None);
        assert_eq!(Instant::ZERO.checked_sub(Duration::from_nanos(1)), None);
    }

    #[test]
    fn float_offsets_round_up_and_saturate() {
        let t = Instant::from_nanos(10);
        assert_eq!(t.add_nanos_f64_ceil(0.2), Instant::from_nanos(11));
        assert_eq!(t.add_nanos_f64_ceil(3.0), Instant::from_nanos(13));
        assert_eq!(t.add_nanos_f64_ceil(-5.0), t);
        assert_eq!(t.add_nanos_f64_ceil(f64::NAN), t);
        assert_eq!(t.add_nanos_f64_ceil(f64::INFINITY), Instant::MAX);
        assert_eq!(t.add_nanos_f64_ceil(1e30), Instant::MAX);
    }

    #[test]
    fn display_is_milliseconds() {
        assert_eq!(Instant::from_millis(1500).to_string(), "1500ms");
        assert_eq!(Instant::from_nanos(1_500_250_000).to_string(), "1500.25ms");
    }
}
