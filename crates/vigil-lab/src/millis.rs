//! Exact parsing of millisecond values from traces and flags: the detector
//! crate's [`vigil_detector::millis`] (its spec grammar reads durations in
//! milliseconds), with [`quoted`] from [`vigil_detector::text`], under the
//! lab's names.
//!
//! ```
//! use vigil_lab::millis::{parse_millis, quoted};
//!
//! assert_eq!(parse_millis("1500.25"), Ok(1_500_250_000));
//! assert_eq!(quoted("12x"), "'12x'");
//! ```

pub use vigil_detector::millis::{MillisError, format_millis, parse_duration, parse_instant, parse_millis};
pub use vigil_detector::text::quoted;
