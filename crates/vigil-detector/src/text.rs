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
//! any script and any emoji, is left as it is. [`quoted`] does the same for
//! what a user typed, bounded, for an error message that names it.
//!
//! ```
//! use vigil_detector::text::{escaped, escaped_lines, quoted};
//!
//! assert_eq!(escaped("h3\u{1b}[2J"), "h3\\u{1b}[2J");
//! assert_eq!(escaped("abc\u{202e}fed"), "abc\\u{202e}fed");
//! assert_eq!(escaped("φ ≥ 8, 東京"), "φ ≥ 8, 東京");
//! assert_eq!(escaped_lines("one\ntwo\t\u{7}"), "one\ntwo\\t\\u{7}");
//! assert_eq!(quoted("akka:window=x"), "'akka:window=x'");
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

/// What the user typed, quoted for an error message and bounded: at most 40
/// characters, then an ellipsis and the full length (a 10 MB field is not
/// echoed whole), with the characters a terminal would act on shown as
/// escapes ([`escaped`]).
pub fn quoted(text: &str) -> String {
    const SHOWN: usize = 40;
    match text.char_indices().nth(SHOWN) {
        None => format!("'{}'", escaped(text)),
        Some((end, _)) => format!("'{}…' ({} bytes)", escaped(&text[..end]), text.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_input_is_quoted_bounded() {
        assert_eq!(quoted("12x"), "'12x'");
        let long = "1".repeat(10_000_000);
        let q = quoted(&long);
        assert!(q.len() < 80, "{q}");
        assert!(q.ends_with("…' (10000000 bytes)"), "{q}");
        let e = crate::millis::parse_millis(&format!("{long}x")).unwrap_err().to_string();
        assert!(e.len() < 120, "{e}");
        // What a terminal would act on is shown, not sent.
        assert_eq!(quoted("1\u{1b}[2J"), "'1\\u{1b}[2J'");
        assert_eq!(quoted("\u{202e}"), "'\\u{202e}'");
    }

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
