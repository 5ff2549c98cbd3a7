//! Text from users and the network, made safe to print on a terminal.
//!
//! A scenario name, a trace's host, a file name or a member's name may hold
//! characters a terminal acts on instead of showing: C0 controls (escape
//! sequences that clear the screen or retitle the window), DEL, C1 controls
//! (U+0080 to U+009F, which some terminals take as escape sequences too),
//! and the invisible characters that reorder or hide text (bidirectional
//! overrides and isolates, line and paragraph separators, zero-width space,
//! the byte order mark). [`escaped`] shows each as an escape (`\u{1b}`,
//! `\n`), so what is printed is what was given, visibly; everything else,
//! any script and any emoji, is left as it is.
//!
//! ```
//! use vigil_lab::text::{escaped, escaped_lines};
//!
//! assert_eq!(escaped("h3\u{1b}[2J"), "h3\\u{1b}[2J");
//! assert_eq!(escaped("abc\u{202e}fed"), "abc\\u{202e}fed");
//! assert_eq!(escaped("φ ≥ 8, 東京"), "φ ≥ 8, 東京");
//! assert_eq!(escaped_lines("one\ntwo\t\u{7}"), "one\ntwo\\t\\u{7}");
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is one a terminal acts on or that hides or reorders text
/// (see the module's documentation).
pub fn is_unsafe(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200b}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// `text` with every character [`is_unsafe`] shown as an escape: `\t`,
/// `\n` and `\r` as such, the others as `\u{..}` in hex.
pub fn escaped(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// As [`escaped`], but line breaks are kept: for a message of several
/// lines.
pub fn escaped_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let unsafe_here = |c: char| is_unsafe(c) && !(keep_newlines && c == '\n');
    if !text.chars().any(unsafe_here) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            _ if !unsafe_here(c) => out.push(c),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            _ => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_terminal_acts_on_is_shown_as_an_escape() {
        for (given, shown) in [
            ("\u{1b}]0;pwned\u{7}", "\\u{1b}]0;pwned\\u{7}"),
            ("a\u{7f}b", "a\\u{7f}b"),
            ("\u{9b}2J", "\\u{9b}2J"),
            ("x\u{0}y", "x\\u{0}y"),
            ("\r\n\t", "\\r\\n\\t"),
            ("\u{2066}\u{2069}\u{61c}\u{200e}\u{200f}", "\\u{2066}\\u{2069}\\u{61c}\\u{200e}\\u{200f}"),
            ("\u{feff}0", "\\u{feff}0"),
            ("\u{2028}", "\\u{2028}"),
        ] {
            assert_eq!(escaped(given), shown, "{given:?}");
        }
        // Everything else is left as it is, without a copy.
        for plain in ["", "h3", "φ ≥ 8 · 東京 · مرحبا · a\u{200d}b · 👩‍💻", "C:\\path"] {
            assert!(matches!(escaped(plain), Cow::Borrowed(_)), "{plain:?}");
        }
        assert_eq!(escaped_lines("a\nb\u{1b}"), "a\nb\\u{1b}");
    }
}
