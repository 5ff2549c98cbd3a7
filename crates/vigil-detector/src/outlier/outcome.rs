//! What became of one request: [`Outcome`], and its text form (`503`,
//! `timeout`, `connect-failed`, `connected`), shared by request traces,
//! command lines and APIs.

use std::fmt;
use std::str::FromStr;

use crate::text::quoted;

/// What became of one request to a host.
///
/// Written as the status (`200` ... `599`, any from 100 to 599), or
/// `timeout`, `connect-failed` or `connected`:
///
/// ```
/// use vigil_detector::outlier::Outcome;
///
/// assert_eq!("503".parse::<Outcome>()?, Outcome::Response(503));
/// assert_eq!("connect-failed".parse::<Outcome>()?, Outcome::ConnectFailed);
/// assert_eq!(Outcome::Timeout.to_string(), "timeout");
/// assert_eq!(
///     "600".parse::<Outcome>().unwrap_err().to_string(),
///     "'600' is not an outcome (a status from 100 to 599, timeout, connect-failed or connected)"
/// );
/// # Ok::<(), vigil_detector::outlier::UnknownOutcome>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The host answered, with this HTTP status (other protocols map their
    /// results onto statuses: a server fault to 500, unavailable to 503).
    Response(u16),
    /// No answer in time (a local-origin failure; 504 unless split).
    Timeout,
    /// The connection could not be made, or was reset (a local-origin
    /// failure; 503 unless split).
    ConnectFailed,
    /// The connection was made; a response is to follow (when split, a
    /// local-origin success; otherwise not counted, so the response is not
    /// counted twice).
    Connected,
}

impl fmt::Display for Outcome {
    /// The outcome as written; a status outside 100 to 599 is printed as it
    /// is, though it does not parse back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Response(code) => write!(f, "{code}"),
            Outcome::Timeout => f.write_str("timeout"),
            Outcome::ConnectFailed => f.write_str("connect-failed"),
            Outcome::Connected => f.write_str("connected"),
        }
    }
}

/// Text that is not an outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownOutcome {
    /// The text as written.
    pub text: String,
}

impl fmt::Display for UnknownOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not an outcome (a status from 100 to 599, timeout, connect-failed or connected)",
            quoted(&self.text)
        )
    }
}

impl std::error::Error for UnknownOutcome {}

impl FromStr for Outcome {
    type Err = UnknownOutcome;

    /// Reads an outcome, ignoring spaces around it.
    fn from_str(text: &str) -> Result<Outcome, UnknownOutcome> {
        match text.trim() {
            "timeout" => Some(Outcome::Timeout),
            "connect-failed" => Some(Outcome::ConnectFailed),
            "connected" => Some(Outcome::Connected),
            s => s.parse::<u16>().ok().filter(|c| (100..600).contains(c)).map(Outcome::Response),
        }
        .ok_or_else(|| UnknownOutcome { text: text.to_owned() })
    }
}

/// As written: `503`, `timeout`, `connect-failed`, `connected`.
#[cfg(feature = "serde")]
impl serde::Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Outcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Outcome, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_print_as_they_parse() {
        let all =
            (100..600).map(Outcome::Response).chain([Outcome::Timeout, Outcome::ConnectFailed, Outcome::Connected]);
        for o in all {
            assert_eq!(o.to_string().parse::<Outcome>(), Ok(o));
        }
        assert_eq!(" 200 ".parse::<Outcome>(), Ok(Outcome::Response(200)));
    }

    #[test]
    fn anything_else_is_refused_and_quoted() {
        for bad in ["", "99", "600", "2000", "20x", "2 00", "Timeout", "ok", "-1", "\u{1b}[2J"] {
            let e = bad.parse::<Outcome>().unwrap_err();
            assert_eq!(e.text, bad);
        }
        let e = "\u{1b}[2J".parse::<Outcome>().unwrap_err().to_string();
        assert!(e.starts_with("'\\u{1b}[2J' is not an outcome"), "{e}");
    }
}
