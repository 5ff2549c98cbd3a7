//! Exact parsing of millisecond values from traces, flags and specs.

use std::time::Duration;

use crate::text::quoted;
use crate::time::Instant;

/// A number of milliseconds that could not be read. The message quotes what
/// was typed (bounded, see [`quoted`]); the caller names the flag or field.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MillisError {
    /// Nothing was given.
    Empty,
    /// A minus sign: times and durations are zero or more.
    Negative {
        /// What was typed, quoted.
        text: String,
    },
    /// Not a decimal number (or not a number at all).
    NotANumber {
        /// What was typed, quoted.
        text: String,
    },
    /// Beyond the largest representable time (about 584 years).
    OutOfRange {
        /// What was typed, quoted.
        text: String,
    },
}

impl std::fmt::Display for MillisError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MillisError::Empty => f.write_str("expected a number of milliseconds, found nothing"),
            MillisError::Negative { text } => write!(f, "{text} is negative; times and durations are zero or more"),
            MillisError::NotANumber { text } => write!(f, "{text} is not a number of milliseconds"),
            MillisError::OutOfRange { text } => {
                write!(f, "{text} ms is out of range (0 to the largest representable time, about 584 years)")
            }
        }
    }
}

impl std::error::Error for MillisError {}

/// Parses a decimal number of milliseconds (`1500`, `1500.25`, `+3`,
/// `1.5e3`) into whole nanoseconds, rounding to nearest. Plain decimals are
/// converted exactly (no float rounding); exponent notation goes through
/// `f64`.
///
/// ```
/// use vigil_detector::millis::{MillisError, parse_millis};
/// assert_eq!(parse_millis("1500.25"), Ok(1_500_250_000));
/// assert!(matches!(parse_millis("-3"), Err(MillisError::Negative { .. })));
/// ```
///
/// # Errors
///
/// A [`MillisError`] quoting the text.
pub fn parse_millis(text: &str) -> Result<u64, MillisError> {
    let s = text.strip_prefix('+').unwrap_or(text);
    if s.is_empty() {
        return Err(MillisError::Empty);
    }
    let q = || quoted(text);
    if s.starts_with('-') {
        return Err(MillisError::Negative { text: q() });
    }
    if s.contains(['e', 'E']) {
        let v: f64 = s.parse().map_err(|_| MillisError::NotANumber { text: q() })?;
        if v.is_nan() {
            return Err(MillisError::NotANumber { text: q() });
        }
        return float_millis_to_nanos(v).ok_or_else(|| MillisError::OutOfRange { text: q() });
    }
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    let digits_only = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits_only(int) || !digits_only(frac) {
        return Err(MillisError::NotANumber { text: q() });
    }
    let too_big = || MillisError::OutOfRange { text: q() };
    let mut nanos: u64 = 0;
    for b in int.bytes() {
        nanos = nanos.checked_mul(10).and_then(|n| n.checked_add(u64::from(b - b'0'))).ok_or_else(too_big)?;
    }
    nanos = nanos.checked_mul(1_000_000).ok_or_else(too_big)?;
    // Six fraction digits are whole nanoseconds; the seventh rounds.
    let digits = frac.as_bytes();
    let mut sub: u64 = 0;
    for i in 0..6 {
        sub = sub * 10 + digits.get(i).map_or(0, |b| u64::from(b - b'0'));
    }
    if digits.get(6).is_some_and(|&b| b >= b'5') {
        sub += 1;
    }
    nanos.checked_add(sub).ok_or_else(too_big)
}

fn float_millis_to_nanos(ms: f64) -> Option<u64> {
    let ns = (ms * 1e6).round();
    (ns.is_finite() && ns >= 0.0 && ns < u64::MAX as f64).then_some(ns as u64)
}

/// Parses an instant given in milliseconds.
///
/// # Errors
///
/// See [`parse_millis`].
pub fn parse_instant(text: &str) -> Result<Instant, MillisError> {
    parse_millis(text).map(Instant::from_nanos)
}

/// Parses a duration given in milliseconds.
///
/// # Errors
///
/// See [`parse_millis`].
pub fn parse_duration(text: &str) -> Result<Duration, MillisError> {
    parse_millis(text).map(Duration::from_nanos)
}

/// Formats an instant as milliseconds, without trailing zeros.
pub fn format_millis(t: Instant) -> String {
    let ns = t.as_nanos();
    let (ms, frac) = (ns / 1_000_000, ns % 1_000_000);
    if frac == 0 {
        ms.to_string()
    } else {
        let f = format!("{frac:06}");
        format!("{ms}.{}", f.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_exact_to_the_nanosecond() {
        assert_eq!(parse_millis("0.1"), Ok(100_000));
        assert_eq!(parse_millis("1500"), Ok(1_500_000_000));
        assert_eq!(parse_millis("1500.000001"), Ok(1_500_000_001));
        assert_eq!(parse_millis("1500.0000005"), Ok(1_500_000_001));
        assert_eq!(parse_millis("1500.0000004"), Ok(1_500_000_000));
        assert_eq!(parse_millis("+2."), Ok(2_000_000));
        assert_eq!(parse_millis(".5"), Ok(500_000));
        assert_eq!(parse_millis("1.5e3"), Ok(1_500_000_000));
    }

    #[test]
    fn bad_numbers_are_named() {
        for bad in ["", "-1", "abc", "1.2.3", "1,5", ".", "nan", "inf", "1e400", "99999999999999999999"] {
            let err = parse_millis(bad).unwrap_err().to_string();
            assert!(!err.is_empty(), "{bad}");
        }
        assert!(parse_millis("-1").unwrap_err().to_string().contains("negative"));
        assert_eq!(parse_millis("1e400"), Err(MillisError::OutOfRange { text: "'1e400'".into() }));
        assert_eq!(parse_millis("1,5"), Err(MillisError::NotANumber { text: "'1,5'".into() }));
    }

    #[test]
    fn formatting_round_trips() {
        for ns in [0u64, 1, 1_000_000, 1_500_250_000, 123_456_789_012] {
            let text = format_millis(Instant::from_nanos(ns));
            assert_eq!(parse_millis(&text), Ok(ns), "{text}");
        }
    }
}
