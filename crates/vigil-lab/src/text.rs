//! Text from users and the network, made safe to print on a terminal: the
//! detector crate's [`vigil_detector::text`], whose spec grammar quotes what
//! was typed in its errors, under the lab's name.
//!
//! ```
//! use vigil_lab::text::escaped;
//!
//! assert_eq!(escaped("h3\u{1b}[2J"), "h3\\u{1b}[2J");
//! ```

pub use vigil_detector::text::{escaped, escaped_lines, is_unsafe};

/// A number as a user would write it: at most 12 significant digits (so
/// the float noise of a unit conversion, 0.0000010000000000000002, reads
/// 1e-6), plain between 0.001 and 10¹⁵ and in exponent form beyond (so 1e20
/// is not echoed as 21 digits, nor 1e-300 as 300).
///
/// ```
/// use vigil_lab::text::number;
///
/// assert_eq!(number(0.1 + 0.2), "0.3");
/// assert_eq!(number(1e300), "1e300");
/// assert_eq!(number(250.0), "250");
/// ```
pub fn number(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v}");
    }
    // Round to 12 significant digits through the exponent form, which
    // is exact about where the digits are.
    let rounded: f64 = format!("{v:.11e}").parse().unwrap_or(v);
    if (1e-3..1e15).contains(&rounded.abs()) { format!("{rounded}") } else { format!("{rounded:e}") }
}
