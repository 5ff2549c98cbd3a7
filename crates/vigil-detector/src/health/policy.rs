//! A graded policy over both signals, and its text form.
//!
//! `NAME=THRESHOLD[,dwell=DURATION][,rearm=LEVEL][,recovery=N][,ejection][,destructive]`
//! fires when φ reaches `THRESHOLD` (and stays there for the dwell), with
//! hysteresis from the re-arm level and the recovery count, and on an
//! ejection by outlier detection if `ejection` is given; `NAME=ejection`
//! listens to ejection only. `destructive` puts it under the brake.
//! Durations take a unit (`500ms`, `2s`, `1.5s`, `1min`, `1h`), so a bare
//! `30` is never read as the wrong one. A name is 1 to 32 bytes of `A-Z`,
//! `a-z`, `0-9`, `_` and `-`.
//!
//! ```
//! use std::time::Duration;
//! use vigil_detector::health::HealthPolicy;
//!
//! let route: HealthPolicy = "route=2,ejection".parse()?;
//! assert_eq!(route, HealthPolicy::new("route").phi(2.0).on_ejection());
//! let remove: HealthPolicy = "remove=8,dwell=1.5s,destructive".parse()?;
//! assert_eq!(remove.phi.as_ref().map(|p| p.dwell), Some(Duration::from_millis(1500)));
//! assert_eq!(remove.to_string(), "remove=8,dwell=1500ms,destructive");
//! let err = "route=2,dwel=1s".parse::<HealthPolicy>().unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "policy 'route=2,dwel=1s': dwel: not a setting (dwell, rearm, recovery, ejection, destructive)"
//! );
//! # Ok::<(), vigil_detector::health::PolicyError>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::ConfigError;
use crate::millis::{MillisError, parse_millis};
use crate::registry::Policy;
use crate::text::quoted;

/// A graded policy over both signals: φ from heartbeats, ejection from
/// request outcomes. Build it with the methods below or parse it from its
/// text form (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct HealthPolicy {
    /// Its name, unique.
    pub name: String,
    /// The φ part, if any: a registry policy (threshold, dwell,
    /// hysteresis), named as the health policy.
    pub phi: Option<Policy>,
    /// Whether an ejection by outlier detection fires it.
    pub on_ejection: bool,
    /// Whether acting on it is destructive (the brake applies).
    pub destructive: bool,
}

impl HealthPolicy {
    /// A policy that listens to nothing yet.
    pub fn new(name: impl Into<String>) -> HealthPolicy {
        HealthPolicy { name: name.into(), phi: None, on_ejection: false, destructive: false }
    }

    /// Fires when φ reaches `threshold`.
    pub fn phi(self, threshold: f64) -> HealthPolicy {
        let name = self.name.clone();
        self.phi_policy(Policy::new(name, threshold))
    }

    /// Fires when this registry policy fires (its name is replaced by the
    /// health policy's).
    pub fn phi_policy(mut self, mut policy: Policy) -> HealthPolicy {
        policy.name.clone_from(&self.name);
        self.phi = Some(policy);
        self
    }

    /// Fires when the peer is ejected.
    pub fn on_ejection(mut self) -> HealthPolicy {
        self.on_ejection = true;
        self
    }

    /// Marks it destructive.
    pub fn destructive(mut self) -> HealthPolicy {
        self.destructive = true;
        self
    }

    /// Checks the policy: a name, a valid φ part if any, and at least one
    /// signal to listen to.
    ///
    /// # Errors
    ///
    /// The φ part's [`Policy::validate`] error, or
    /// [`ConfigError::Inconsistent`] for a policy without a name or one that
    /// listens to nothing.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.name.is_empty() {
            return Err(ConfigError::Inconsistent { reason: "health policy name must not be empty".into() });
        }
        if let Some(p) = &self.phi {
            p.validate()?;
        } else if !self.on_ejection {
            return Err(ConfigError::Inconsistent {
                reason: format!("health policy '{}' listens to nothing: give it a φ threshold or ejection", self.name),
            });
        }
        Ok(())
    }
}

/// The settings after the threshold, in the order they are printed.
const SETTINGS: [&str; 5] = ["dwell", "rearm", "recovery", "ejection", "destructive"];

/// The longest name, in bytes.
pub const MAX_POLICY_NAME: usize = 32;

/// A policy's text that could not be read. The message names the policy and
/// the part at fault as they were typed.
///
/// ```
/// use vigil_detector::health::{HealthPolicy, PolicyErrorKind};
///
/// let err = "route=2,dwell=500".parse::<HealthPolicy>().unwrap_err();
/// assert_eq!(err.part, "dwell=500");
/// assert!(matches!(err.kind, PolicyErrorKind::NoUnit));
/// assert_eq!(
///     err.to_string(),
///     "policy 'route=2,dwell=500': dwell=500: '500' has no unit; write 500ms, 500s, 500min or 500h"
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PolicyError {
    /// The policy as written.
    pub text: String,
    /// The part at fault as written: the name, the threshold, or one setting
    /// (`dwel`, `dwell=500`); the whole text when the shape is wrong.
    pub part: String,
    /// What is wrong.
    pub kind: PolicyErrorKind,
}

/// What is wrong with a policy's text.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PolicyErrorKind {
    /// Not `NAME=THRESHOLD...` or `NAME=ejection...`.
    Shape,
    /// The name is empty, longer than [`MAX_POLICY_NAME`] bytes, or holds
    /// another character than `A-Z`, `a-z`, `0-9`, `_` and `-`.
    Name,
    /// The threshold is not a finite number above zero, nor `ejection`.
    Threshold,
    /// Not one of the settings.
    NotASetting,
    /// A setting given twice.
    Repeated,
    /// A setting that takes a value was given none.
    NoValue,
    /// A setting that takes no value was given one.
    UnexpectedValue,
    /// A duration without a unit.
    NoUnit,
    /// A duration with a unit that is not `ms`, `s`, `min` or `h`.
    Unit {
        /// The unit as written.
        unit: String,
    },
    /// A duration that is not a number, negative or too long.
    Duration(MillisError),
    /// The re-arm level is not a finite number above zero.
    Level,
    /// The recovery count is not a whole number from 1.
    Count,
    /// A φ setting (dwell, re-arm, recovery) on a policy that listens to
    /// ejection only.
    PhiOnly,
    /// The re-arm level is above the threshold.
    RearmAboveThreshold {
        /// The threshold.
        threshold: f64,
    },
    /// A re-arm level below the threshold with a recovery count below 2: it
    /// would have no effect.
    RearmNeedsRecovery,
    /// The policy as a whole does not validate ([`HealthPolicy::validate`]).
    Invalid(ConfigError),
}

impl PolicyError {
    fn new(text: &str, part: &str, kind: PolicyErrorKind) -> PolicyError {
        PolicyError { text: text.to_owned(), part: part.to_owned(), kind }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "policy {}: ", quoted(&self.text))?;
        // The part as typed, escaped and bounded but not quoted: it reads as
        // the setting it is (`dwell=500: ...`).
        let quoted_part = quoted(&self.part);
        let part = quoted_part.trim_matches('\'');
        let value = self.part.split_once('=').map_or(self.part.as_str(), |(_, v)| v);
        match &self.kind {
            PolicyErrorKind::Shape => f.write_str(
                "expected NAME=THRESHOLD or NAME=ejection, then settings after commas \
                 (dwell=DURATION, rearm=LEVEL, recovery=N, ejection, destructive)",
            ),
            PolicyErrorKind::Name if self.part.is_empty() => {
                write!(f, "the name is empty (1 to {MAX_POLICY_NAME} bytes of A-Z, a-z, 0-9, _ and -)")
            }
            PolicyErrorKind::Name => {
                write!(f, "{part}: not a name (1 to {MAX_POLICY_NAME} bytes of A-Z, a-z, 0-9, _ and -)")
            }
            PolicyErrorKind::Threshold if self.part.is_empty() => {
                f.write_str("the threshold is missing (a finite number above zero, or ejection)")
            }
            PolicyErrorKind::Threshold => {
                write!(f, "{part}: not a threshold (a finite number above zero, or ejection)")
            }
            PolicyErrorKind::NotASetting => write!(f, "{part}: not a setting ({})", SETTINGS.join(", ")),
            PolicyErrorKind::Repeated => write!(f, "{part}: given twice"),
            PolicyErrorKind::NoValue => {
                let form = match self.part.as_str() {
                    "dwell" => "dwell=DURATION",
                    "rearm" => "rearm=LEVEL",
                    _ => "recovery=N",
                };
                write!(f, "{part}: needs a value ({form})")
            }
            PolicyErrorKind::UnexpectedValue => write!(f, "{part}: takes no value"),
            PolicyErrorKind::NoUnit => {
                let n = Some(value.trim()).filter(|n| n.len() <= 20).unwrap_or("N");
                let n = quoted(n);
                let n = n.trim_matches('\'');
                write!(f, "{part}: {} has no unit; write {n}ms, {n}s, {n}min or {n}h", quoted(value))
            }
            PolicyErrorKind::Unit { unit } => {
                write!(f, "{part}: unknown unit {} (ms, s, min, h)", quoted(unit))
            }
            PolicyErrorKind::Duration(MillisError::Negative { .. }) => {
                write!(f, "{part}: a duration is zero or more")
            }
            PolicyErrorKind::Duration(MillisError::OutOfRange { .. }) => {
                write!(f, "{part}: too long (at most about 584 years)")
            }
            PolicyErrorKind::Duration(_) => write!(f, "{part}: not a duration (like 500ms, 2s or 1.5s)"),
            PolicyErrorKind::Level => write!(f, "{part}: not a level (a finite number above zero)"),
            PolicyErrorKind::Count => write!(f, "{part}: not a number of heartbeats (a whole number from 1)"),
            PolicyErrorKind::PhiOnly => {
                write!(f, "{part}: a φ setting, and this policy listens to ejection only (give it a threshold)")
            }
            PolicyErrorKind::RearmAboveThreshold { threshold } => {
                write!(f, "{part}: must not be above the threshold ({threshold})")
            }
            PolicyErrorKind::RearmNeedsRecovery => write!(
                f,
                "{part}: a re-arm level below the threshold acts only on the heartbeats after the first, so it \
                 needs recovery=2 or more"
            ),
            PolicyErrorKind::Invalid(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PolicyError {}

/// Whether `name` is a policy name the text form accepts.
fn is_name(name: &str) -> bool {
    (1..=MAX_POLICY_NAME).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A duration with its unit (`500ms`, `2s`, `1.5s`, `1min`, `1h`), exact to
/// the nanosecond.
fn duration(text: &str) -> Result<Duration, PolicyErrorKind> {
    let t = text.trim();
    // The unit is the trailing letters.
    let split = t.trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
    let (number, unit) = t.split_at(split);
    let number = number.trim();
    let ms_per_unit: u64 = match unit {
        "" if parse_millis(number).is_ok() => return Err(PolicyErrorKind::NoUnit),
        "ms" => 1,
        "s" => 1_000,
        "min" => 60_000,
        "h" => 3_600_000,
        _ if number.is_empty() || parse_millis(number).is_err() => {
            return Err(PolicyErrorKind::Duration(MillisError::NotANumber { text: quoted(text) }));
        }
        other => return Err(PolicyErrorKind::Unit { unit: other.to_owned() }),
    };
    // The number read as milliseconds, then scaled: `1.5` s is 1.5 ms × 1000.
    let nanos = parse_millis(number).map_err(PolicyErrorKind::Duration)?;
    let nanos = nanos
        .checked_mul(ms_per_unit)
        .ok_or(PolicyErrorKind::Duration(MillisError::OutOfRange { text: quoted(text) }))?;
    Ok(Duration::from_nanos(nanos))
}

/// A duration in the largest unit that shows it exactly.
fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    for (unit, size) in [("h", 3_600_000_000_000u128), ("min", 60_000_000_000), ("s", 1_000_000_000)] {
        if ns > 0 && ns.is_multiple_of(size) {
            return format!("{}{unit}", ns / size);
        }
    }
    let (ms, frac) = (ns / 1_000_000, ns % 1_000_000);
    if frac == 0 { format!("{ms}ms") } else { format!("{ms}.{}ms", format!("{frac:06}").trim_end_matches('0')) }
}

/// A finite number above zero.
fn positive(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0)
}

impl FromStr for HealthPolicy {
    type Err = PolicyError;

    /// Reads `NAME=THRESHOLD[,setting...]` or `NAME=ejection[,setting...]`
    /// (spaces around names and values are ignored).
    fn from_str(text: &str) -> Result<HealthPolicy, PolicyError> {
        let fail = |part: &str, kind| PolicyError::new(text, part, kind);
        let (name, rest) = text.split_once('=').ok_or_else(|| fail(text, PolicyErrorKind::Shape))?;
        let name = name.trim();
        if !is_name(name) {
            return Err(fail(name, PolicyErrorKind::Name));
        }
        let mut items = rest.split(',').map(str::trim);
        let first = items.next().unwrap_or_default();
        let threshold = match first {
            "ejection" => None,
            t => Some(positive(t).ok_or_else(|| fail(t, PolicyErrorKind::Threshold))?),
        };
        let mut policy = HealthPolicy::new(name);
        policy.on_ejection = threshold.is_none();
        let mut phi = threshold.map(|t| Policy::new(name, t));
        let mut seen: Vec<&str> = if threshold.is_none() { vec!["ejection"] } else { Vec::new() };
        // The re-arm level as written, for its errors once all is read.
        let mut rearm_part = None;
        for item in items {
            let (key, value) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (item, None),
            };
            if !SETTINGS.contains(&key) {
                return Err(fail(key, PolicyErrorKind::NotASetting));
            }
            if seen.contains(&key) {
                return Err(fail(key, PolicyErrorKind::Repeated));
            }
            seen.push(key);
            match (key, value) {
                ("ejection" | "destructive", Some(_)) => return Err(fail(item, PolicyErrorKind::UnexpectedValue)),
                ("ejection", None) => policy.on_ejection = true,
                ("destructive", None) => policy.destructive = true,
                (_, None) => return Err(fail(key, PolicyErrorKind::NoValue)),
                (_, Some(_)) if phi.is_none() => return Err(fail(item, PolicyErrorKind::PhiOnly)),
                ("dwell", Some(v)) => {
                    let d = duration(v).map_err(|kind| fail(item, kind))?;
                    phi = phi.map(|p| p.dwell(d));
                }
                ("rearm", Some(v)) => {
                    let level = positive(v).ok_or_else(|| fail(item, PolicyErrorKind::Level))?;
                    phi = phi.map(|p| p.rearm(level));
                    rearm_part = Some(item);
                }
                (_, Some(v)) => {
                    let n = v.parse::<u32>().ok().filter(|&n| n >= 1);
                    let n = n.ok_or_else(|| fail(item, PolicyErrorKind::Count))?;
                    phi = phi.map(|p| p.recovery_heartbeats(n));
                }
            }
        }
        if let (Some(p), Some(part)) = (&phi, rearm_part) {
            if p.rearm > p.threshold {
                return Err(fail(part, PolicyErrorKind::RearmAboveThreshold { threshold: p.threshold }));
            }
            if p.rearm < p.threshold && p.recovery_heartbeats < 2 {
                return Err(fail(part, PolicyErrorKind::RearmNeedsRecovery));
            }
        }
        policy.phi = phi;
        policy.validate().map_err(|e| fail(text, PolicyErrorKind::Invalid(e)))?;
        Ok(policy)
    }
}

impl fmt::Display for HealthPolicy {
    /// The text form, settings at their defaults left out. A policy that
    /// listens to nothing prints as `NAME=none`, which does not parse.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=", self.name)?;
        match &self.phi {
            Some(p) => {
                write!(f, "{}", p.threshold)?;
                if !p.dwell.is_zero() {
                    write!(f, ",dwell={}", format_duration(p.dwell))?;
                }
                if p.rearm != p.threshold {
                    write!(f, ",rearm={}", p.rearm)?;
                }
                if p.recovery_heartbeats != 1 {
                    write!(f, ",recovery={}", p.recovery_heartbeats)?;
                }
                if self.on_ejection {
                    f.write_str(",ejection")?;
                }
            }
            None if self.on_ejection => f.write_str("ejection")?,
            None => f.write_str("none")?,
        }
        if self.destructive {
            f.write_str(",destructive")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        text.parse::<HealthPolicy>().unwrap_err().to_string()
    }

    #[test]
    fn policies_print_as_they_parse() {
        for text in [
            "route=2",
            "route=2,ejection",
            "route=ejection",
            "drain=ejection,destructive",
            "remove=8,dwell=1500ms,destructive",
            "re-replicate=16,dwell=5min",
            "elect=8,dwell=1h",
            "slow_path=0.5,dwell=1.000001ms,rearm=0.25,recovery=3,ejection,destructive",
        ] {
            let p: HealthPolicy = text.parse().unwrap();
            assert_eq!(p.to_string(), text);
            assert_eq!(p.to_string().parse::<HealthPolicy>().unwrap(), p);
        }
        let p: HealthPolicy = " route = 2 , dwell = 2s , ejection ".parse().unwrap();
        assert_eq!(p.to_string(), "route=2,dwell=2s,ejection");
        let p: HealthPolicy = "route=2,dwell=1.5s".parse().unwrap();
        assert_eq!(p.phi.unwrap().dwell, Duration::from_millis(1500));
        // The builder and the text agree.
        let built = HealthPolicy::new("remove")
            .phi_policy(Policy::new("x", 8.0).dwell(Duration::from_secs(2)))
            .on_ejection()
            .destructive();
        assert_eq!("remove=8,dwell=2s,ejection,destructive".parse::<HealthPolicy>().unwrap(), built);
    }

    #[test]
    fn errors_name_the_part_as_typed() {
        assert_eq!(
            err("route=2,dwel=1s"),
            "policy 'route=2,dwel=1s': dwel: not a setting (dwell, rearm, recovery, ejection, destructive)"
        );
        assert_eq!(
            err("route=2,dwell=500"),
            "policy 'route=2,dwell=500': dwell=500: '500' has no unit; write 500ms, 500s, 500min or 500h"
        );
        assert_eq!(err("route=2,dwell=5d"), "policy 'route=2,dwell=5d': dwell=5d: unknown unit 'd' (ms, s, min, h)");
        assert_eq!(
            err("route=2,dwell=abc"),
            "policy 'route=2,dwell=abc': dwell=abc: not a duration (like 500ms, 2s or 1.5s)"
        );
        assert_eq!(err("route=2,dwell=-1s"), "policy 'route=2,dwell=-1s': dwell=-1s: a duration is zero or more");
        assert_eq!(err("route=2,dwell"), "policy 'route=2,dwell': dwell: needs a value (dwell=DURATION)");
        assert_eq!(err("route=2,dwell=1s,dwell=2s"), "policy 'route=2,dwell=1s,dwell=2s': dwell: given twice");
        assert_eq!(err("route=2,ejection=yes"), "policy 'route=2,ejection=yes': ejection=yes: takes no value");
        assert_eq!(
            err("route"),
            "policy 'route': expected NAME=THRESHOLD or NAME=ejection, then settings after commas (dwell=DURATION, rearm=LEVEL, recovery=N, ejection, destructive)"
        );
        assert_eq!(err("=2"), "policy '=2': the name is empty (1 to 32 bytes of A-Z, a-z, 0-9, _ and -)");
        assert_eq!(err("a b=2"), "policy 'a b=2': a b: not a name (1 to 32 bytes of A-Z, a-z, 0-9, _ and -)");
        assert_eq!(err("route=0"), "policy 'route=0': 0: not a threshold (a finite number above zero, or ejection)");
        assert_eq!(
            err("route=NaN"),
            "policy 'route=NaN': NaN: not a threshold (a finite number above zero, or ejection)"
        );
        assert_eq!(
            err("route="),
            "policy 'route=': the threshold is missing (a finite number above zero, or ejection)"
        );
        assert_eq!(err("drain=ejection,ejection"), "policy 'drain=ejection,ejection': ejection: given twice");
        assert_eq!(err("route=2,rearm=3"), "policy 'route=2,rearm=3': rearm=3: must not be above the threshold (2)");
        assert_eq!(
            err("route=2,rearm=1"),
            "policy 'route=2,rearm=1': rearm=1: a re-arm level below the threshold acts only on the heartbeats \
             after the first, so it needs recovery=2 or more"
        );
        assert_eq!(
            err("route=2,recovery=0"),
            "policy 'route=2,recovery=0': recovery=0: not a number of heartbeats (a whole number from 1)"
        );
        assert_eq!(
            err("drain=ejection,dwell=1s"),
            "policy 'drain=ejection,dwell=1s': dwell=1s: a φ setting, and this policy listens to ejection only (give it a threshold)"
        );
        // Hostile text is shown, not sent, and bounded.
        let e = err(&format!("\u{1b}[2J{}=1", "x".repeat(10_000)));
        assert!(e.starts_with("policy '\\u{1b}[2Jxxx"), "{e}");
        assert!(e.len() < 300, "{e}");
    }

    #[test]
    fn names_are_short_and_plain() {
        assert!("a=1".parse::<HealthPolicy>().is_ok());
        assert!(format!("{}=1", "n".repeat(32)).parse::<HealthPolicy>().is_ok());
        assert!(format!("{}=1", "n".repeat(33)).parse::<HealthPolicy>().is_err());
        for bad in ["é=1", "a.b=1", "a/b=1", "a:b=1"] {
            assert_eq!(bad.parse::<HealthPolicy>().unwrap_err().kind, PolicyErrorKind::Name, "{bad}");
        }
    }

    #[test]
    fn a_policy_that_listens_to_nothing_does_not_validate() {
        assert!(HealthPolicy::new("x").validate().is_err());
        assert!(HealthPolicy::new("").phi(1.0).validate().is_err());
        assert!(HealthPolicy::new("x").phi(-1.0).validate().is_err());
        assert!(HealthPolicy::new("x").on_ejection().validate().is_ok());
        assert_eq!(HealthPolicy::new("x").to_string(), "x=none");
    }
}
