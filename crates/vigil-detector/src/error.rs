//! Typed configuration errors.

use core::fmt;
use std::time::Duration;

/// A configuration value was rejected.
///
/// Returned by the `validate` methods of every configuration type and by the
/// constructors that call them. Nothing is constructed when validation fails.
/// The message names the field and the offending value, in lowercase with no
/// trailing period, so callers can prefix context (`"--window: {err}"`).
///
/// # Example
///
/// ```
/// use vigil_detector::{ConfigError, NormalConfig};
///
/// let mut config = NormalConfig::default();
/// config.window = 0;
/// let err = config.validate().unwrap_err();
/// assert!(matches!(err, ConfigError::ZeroWindow { .. }));
/// assert_eq!(err.to_string(), "window must hold at least one sample (got 0)");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A window size of zero.
    ZeroWindow {
        /// The field, for example `"window"` or `"n1"`.
        field: &'static str,
    },
    /// A window larger than the model allows ([`MAX_WINDOW`](crate::MAX_WINDOW),
    /// or [`MAX_EMPIRICAL_WINDOW`](crate::MAX_EMPIRICAL_WINDOW) for the
    /// empirical model).
    WindowTooLarge {
        /// The field.
        field: &'static str,
        /// The rejected size.
        size: usize,
        /// The largest allowed.
        max: usize,
    },
    /// A duration that must be strictly positive was zero.
    ZeroDuration {
        /// The field, for example `"min_std_dev"`.
        field: &'static str,
    },
    /// A number that must be finite and strictly positive was not.
    NotPositive {
        /// The field, for example `"threshold"`.
        field: &'static str,
        /// The rejected value (may be NaN or infinite).
        value: f64,
    },
    /// A number that must be finite and at least zero was not.
    Negative {
        /// The field.
        field: &'static str,
        /// The rejected value (may be NaN or infinite).
        value: f64,
    },
    /// A number outside its documented range.
    OutOfRange {
        /// The field.
        field: &'static str,
        /// The rejected value.
        value: f64,
        /// The allowed range, for the message (for example `"(0, 1]"`).
        range: &'static str,
    },
    /// A duration longer than a window sample can hold
    /// ([`MAX_SAMPLE`](crate::MAX_SAMPLE)).
    TooLong {
        /// The field, for example `"first_heartbeat_estimate"`.
        field: &'static str,
        /// The rejected duration.
        value: Duration,
        /// The longest accepted.
        max: Duration,
    },
    /// Two settings contradict each other.
    Inconsistent {
        /// What is wrong, for the message.
        reason: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::ZeroWindow { field } => {
                write!(f, "{field} must hold at least one sample (got 0)")
            }
            ConfigError::WindowTooLarge { field, size, max } => {
                write!(f, "{field} must hold at most {max} samples (got {size})")
            }
            ConfigError::ZeroDuration { field } => write!(f, "{field} must be greater than zero"),
            ConfigError::NotPositive { field, value } => {
                write!(f, "{field} must be a finite number greater than zero (got {})", Shown(*value))
            }
            ConfigError::Negative { field, value } => {
                write!(f, "{field} must be a finite number of zero or more (got {})", Shown(*value))
            }
            ConfigError::OutOfRange { field, value, range } => {
                write!(f, "{field} must be in {range} (got {})", Shown(*value))
            }
            ConfigError::TooLong { field, value, max } => write!(
                f,
                "{field} must be at most {} s, the longest interval a window holds (got {} s)",
                max.as_secs_f64(),
                value.as_secs_f64()
            ),
            ConfigError::Inconsistent { reason } => f.write_str(reason),
        }
    }
}

impl ConfigError {
    /// The configuration field at fault, when one field is (`None` for
    /// settings that contradict each other).
    ///
    /// Every message that has a field starts with it, so a caller that names
    /// the field differently (a command-line flag) can replace it:
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_detector::NormalConfig;
    ///
    /// let config = NormalConfig { min_std_dev: Duration::ZERO, ..NormalConfig::default() };
    /// let err = config.validate().unwrap_err();
    /// assert_eq!(err.field(), Some("min_std_dev"));
    /// let message = err.to_string();
    /// assert_eq!(message.strip_prefix("min_std_dev"), Some(" must be greater than zero"));
    /// ```
    pub fn field(&self) -> Option<&'static str> {
        match self {
            ConfigError::ZeroWindow { field }
            | ConfigError::WindowTooLarge { field, .. }
            | ConfigError::ZeroDuration { field }
            | ConfigError::NotPositive { field, .. }
            | ConfigError::Negative { field, .. }
            | ConfigError::OutOfRange { field, .. }
            | ConfigError::TooLong { field, .. } => Some(field),
            ConfigError::Inconsistent { .. } => None,
        }
    }
}

impl std::error::Error for ConfigError {}

/// A rejected number as a message shows it: plain when short, in exponent
/// form when plain would run to dozens of digits (`1e308`, not 309 of them).
struct Shown(f64);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v == 0.0 || !v.is_finite() || (1e-6..1e15).contains(&v.abs()) {
            write!(f, "{v}")
        } else {
            write!(f, "{v:e}")
        }
    }
}

/// Checks shared by the configuration types.
pub(crate) mod check {
    use super::ConfigError;
    use std::time::Duration;

    pub(crate) fn window(field: &'static str, size: usize) -> Result<(), ConfigError> {
        if size == 0 {
            Err(ConfigError::ZeroWindow { field })
        } else if size > crate::MAX_WINDOW {
            Err(ConfigError::WindowTooLarge { field, size, max: crate::MAX_WINDOW })
        } else {
            Ok(())
        }
    }

    pub(crate) fn positive_duration(field: &'static str, d: Duration) -> Result<(), ConfigError> {
        if d.is_zero() { Err(ConfigError::ZeroDuration { field }) } else { Ok(()) }
    }

    pub(crate) fn positive(field: &'static str, value: f64) -> Result<(), ConfigError> {
        if value.is_finite() && value > 0.0 { Ok(()) } else { Err(ConfigError::NotPositive { field, value }) }
    }

    /// A positive duration that fits one window sample.
    pub(crate) fn sample(field: &'static str, d: Duration) -> Result<(), ConfigError> {
        positive_duration(field, d)?;
        let max = crate::MAX_SAMPLE;
        if d > max { Err(ConfigError::TooLong { field, value: d, max }) } else { Ok(()) }
    }

    /// A bootstrap estimate: its upper sample (`estimate + estimate / 4`)
    /// must fit one window sample.
    pub(crate) fn estimate(field: &'static str, d: Duration) -> Result<(), ConfigError> {
        positive_duration(field, d)?;
        let max = crate::MAX_SAMPLE.mul_f64(0.8);
        if d > max { Err(ConfigError::TooLong { field, value: d, max }) } else { Ok(()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_send_sync_static() {
        fn assert_bounds<T: std::error::Error + Send + Sync + 'static>() {}
        assert_bounds::<ConfigError>();
    }

    #[test]
    fn messages_name_the_field_and_value() {
        let e = check::positive("threshold", f64::NAN).unwrap_err();
        assert_eq!(e.to_string(), "threshold must be a finite number greater than zero (got NaN)");
        let e = check::positive("threshold", -1.0).unwrap_err();
        assert_eq!(e.to_string(), "threshold must be a finite number greater than zero (got -1)");
        let e = check::positive("threshold", -1e300).unwrap_err();
        assert_eq!(e.to_string(), "threshold must be a finite number greater than zero (got -1e300)");
    }
}
