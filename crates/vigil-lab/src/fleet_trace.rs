//! Fleet traces: what a client saw of a set of hosts, heartbeats and
//! request outcomes together, for the fleet lab
//! ([`crate::fleet::replay`]).
//!
//! # Formats
//!
//! CSV lines `TIME_MS,HOST,EVENT[,OUTCOME[,LATENCY_MS]]` (a header line and
//! `#` comments are skipped) or JSON lines
//! `{"t": TIME_MS, "host": "h3", "event": "req", "outcome": "503", "latency_ms": 12.5}`.
//! Events: `hb` (a heartbeat from the host arrived), `req` (a request to
//! the host ended with OUTCOME: an HTTP status `100`–`599`, `timeout`,
//! `connect-failed` or `connected`; LATENCY_MS optional), and `bad` (the
//! host went bad: the ground truth the lab scores against); `hb` and `bad`
//! lines take no outcome and no latency (a line that gives one is refused,
//! not read as something else). Times are
//! non-decreasing; host names are 1 to 64 bytes, without commas, control
//! characters, quotes or surrounding spaces; at most [`MAX_HOSTS`] hosts.
//! A byte order mark at the start is skipped (as heartbeat traces skip
//! it); CSV fields are plain, and a quoted one is refused as such.
//!
//! ```
//! use vigil_lab::fleet_trace::FleetTrace;
//!
//! let text = "time_ms,host,event,outcome,latency_ms\n0,a,hb\n5,a,req,200,9.5\n7,b,req,timeout\n9,b,bad\n";
//! let trace = FleetTrace::parse(text)?;
//! assert_eq!(trace.hosts, ["a", "b"]);
//! assert_eq!(trace.events.len(), 4);
//! assert_eq!(FleetTrace::parse(&trace.to_csv())?, trace);
//! # Ok::<(), vigil_lab::fleet_trace::FleetTraceError>(())
//! ```

use std::fmt::{self, Write as _};
use std::time::Duration;

use serde::Deserialize;
use vigil_detector::Instant;
use vigil_detector::outlier::Outcome;

use crate::millis::{format_millis, parse_instant, parse_millis, quoted};

/// The most hosts in one trace.
pub const MAX_HOSTS: usize = 10_000;
/// The longest host name, in bytes.
pub const MAX_HOST_NAME: usize = 64;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetEventKind {
    /// A heartbeat arrived.
    Heartbeat,
    /// A request ended.
    Request {
        /// How.
        outcome: Outcome,
        /// Its latency, if measured.
        latency: Option<Duration>,
    },
    /// The host went bad (ground truth).
    Bad,
}

/// One line of a fleet trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetEvent {
    /// When.
    pub at: Instant,
    /// The host: an index into [`FleetTrace::hosts`].
    pub host: u32,
    /// What.
    pub kind: FleetEventKind,
}

/// A fleet trace: hosts in order of first appearance, events in time
/// order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FleetTrace {
    /// Host names.
    pub hosts: Vec<String>,
    /// Events.
    pub events: Vec<FleetEvent>,
}

/// A fleet trace that could not be read: the line, the field, what is
/// wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetTraceError {
    /// 1-based line number.
    pub line: usize,
    /// The field at fault (`time_ms`, `host`, `event`, `outcome`,
    /// `latency_ms`, or `line`).
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for FleetTraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, field {}: {}", self.line, self.field, self.message)
    }
}

impl std::error::Error for FleetTraceError {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonLine {
    t: f64,
    host: String,
    event: String,
    #[serde(default)]
    outcome: Option<serde_json::Value>,
    #[serde(default)]
    latency_ms: Option<f64>,
}

/// An outcome as written: a status, or a local-origin word (the grammar of
/// [`Outcome`]'s `FromStr`).
pub fn parse_outcome(text: &str) -> Option<Outcome> {
    text.parse().ok()
}

/// An outcome as written (its `Display`).
pub fn outcome_name(o: Outcome) -> String {
    o.to_string()
}

impl FleetTrace {
    /// Parses CSV or JSON lines (decided by the first non-blank,
    /// non-comment line).
    ///
    /// # Errors
    ///
    /// A [`FleetTraceError`] naming the line and the field.
    pub fn parse(text: &str) -> Result<FleetTrace, FleetTraceError> {
        // A byte order mark at the start of the file is not part of the
        // data.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut trace = FleetTrace::default();
        let mut index: std::collections::HashMap<String, u32> = Default::default();
        let mut last = Instant::ZERO;
        let mut json = None;
        let mut seen_data = false;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let l = raw.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let err = |field, message: String| FleetTraceError { line, field, message };
            let is_json = *json.get_or_insert(l.starts_with('{'));
            let (t, host, event, outcome, latency): (Instant, String, String, Option<String>, Option<Duration>) =
                if is_json {
                    let j: JsonLine = serde_json::from_str(l)
                        .map_err(|e| err("line", format!("not a fleet trace JSON line: {e}")))?;
                    if !(j.t.is_finite() && j.t >= 0.0) {
                        return Err(err("t", format!("{} is not a time in ms (a finite number, 0 or more)", j.t)));
                    }
                    let t = parse_instant(&j.t.to_string()).map_err(|e| err("t", e.to_string()))?;
                    let outcome = j.outcome.map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
                    let latency = match j.latency_ms {
                        Some(x) if x.is_finite() && x >= 0.0 => Some(Duration::from_nanos(
                            parse_millis(&x.to_string()).map_err(|e| err("latency_ms", e.to_string()))?,
                        )),
                        Some(x) => return Err(err("latency_ms", format!("{x} is not a latency in ms"))),
                        None => None,
                    };
                    (t, j.host, j.event, outcome, latency)
                } else {
                    // The header: the first line that is not blank or a
                    // comment.
                    if !seen_data && l.starts_with("time_ms") {
                        seen_data = true;
                        continue;
                    }
                    let fields: Vec<&str> = l.split(',').map(str::trim).collect();
                    if let Some(at) = fields.iter().position(|f| f.contains('"')) {
                        const NAMES: [&str; 5] = ["time_ms", "host", "event", "outcome", "latency_ms"];
                        return Err(err(
                            NAMES.get(at).copied().unwrap_or("line"),
                            "quoted fields are not supported: fields are plain text, without quotes (host names \
                             hold no commas)"
                                .into(),
                        ));
                    }
                    if fields.len() < 3 || fields.len() > 5 {
                        return Err(err(
                            "line",
                            format!("expected TIME_MS,HOST,EVENT[,OUTCOME[,LATENCY_MS]], got {} fields", fields.len()),
                        ));
                    }
                    let t = parse_instant(fields[0]).map_err(|e| err("time_ms", e.to_string()))?;
                    let latency = match fields.get(4).filter(|f| !f.is_empty()) {
                        Some(f) => {
                            Some(Duration::from_nanos(parse_millis(f).map_err(|e| err("latency_ms", e.to_string()))?))
                        }
                        None => None,
                    };
                    (
                        t,
                        fields[1].to_owned(),
                        fields[2].to_owned(),
                        fields.get(3).filter(|f| !f.is_empty()).map(|f| (*f).to_owned()),
                        latency,
                    )
                };
            if t < last {
                return Err(err(
                    "time_ms",
                    format!("{} is earlier than the line before ({})", format_millis(t), format_millis(last)),
                ));
            }
            last = t;
            seen_data = true;
            if host.is_empty() || host.len() > MAX_HOST_NAME {
                return Err(err("host", format!("{} must be 1 to {MAX_HOST_NAME} bytes", quoted(&host))));
            }
            // Names that CSV could not carry back are refused in both
            // formats, so that a trace always reads back as itself.
            if host.contains([',', '"']) || host.chars().any(char::is_control) || host.trim() != host {
                return Err(err(
                    "host",
                    format!("{} holds a comma, a quote, a control character or surrounding spaces", quoted(&host)),
                ));
            }
            let kind = match event.as_str() {
                "hb" | "bad" => {
                    // A field that means nothing here is refused, not
                    // dropped: the line is not what its writer thought.
                    let (field, given) = match (&outcome, latency) {
                        (Some(o), _) => ("outcome", quoted(o)),
                        (None, Some(l)) => ("latency_ms", format!("'{}'", format_millis(Instant::ZERO + l))),
                        (None, None) => ("", String::new()),
                    };
                    if !field.is_empty() {
                        return Err(err(field, format!("'{event}' takes no {field} (got {given}); only req does")));
                    }
                    if event == "hb" { FleetEventKind::Heartbeat } else { FleetEventKind::Bad }
                }
                "req" => {
                    let text = outcome.ok_or_else(|| err("outcome", "a request needs its outcome".into()))?;
                    let outcome = parse_outcome(&text).ok_or_else(|| {
                        err(
                            "outcome",
                            format!(
                                "{} is not an outcome (an HTTP status 100-599, timeout, connect-failed or connected)",
                                quoted(&text)
                            ),
                        )
                    })?;
                    FleetEventKind::Request { outcome, latency }
                }
                other => return Err(err("event", format!("{} is not an event (hb, req or bad)", quoted(other)))),
            };
            let host = match index.get(&host) {
                Some(&h) => h,
                None => {
                    if trace.hosts.len() == MAX_HOSTS {
                        return Err(err("host", format!("more than {MAX_HOSTS} hosts")));
                    }
                    let h = trace.hosts.len() as u32;
                    index.insert(host.clone(), h);
                    trace.hosts.push(host);
                    h
                }
            };
            trace.events.push(FleetEvent { at: t, host, kind });
        }
        Ok(trace)
    }

    /// The trace as CSV, with a header; parsing it gives the same trace.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("time_ms,host,event,outcome,latency_ms\n");
        for e in &self.events {
            let host = &self.hosts[e.host as usize];
            let t = format_millis(e.at);
            let _ = match e.kind {
                FleetEventKind::Heartbeat => writeln!(out, "{t},{host},hb"),
                FleetEventKind::Bad => writeln!(out, "{t},{host},bad"),
                FleetEventKind::Request { outcome, latency: Some(l) } => {
                    writeln!(out, "{t},{host},req,{},{}", outcome_name(outcome), format_millis(Instant::ZERO + l))
                }
                FleetEventKind::Request { outcome, latency: None } => {
                    writeln!(out, "{t},{host},req,{}", outcome_name(outcome))
                }
            };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_are_named() {
        for (text, line, field) in [
            ("0,a,hb\nx,a,hb\n", 2, "time_ms"),
            ("5,a,hb\n4,a,hb\n", 2, "time_ms"),
            ("0,a,req\n", 1, "outcome"),
            ("0,a,req,700\n", 1, "outcome"),
            ("0,a,jump\n", 1, "event"),
            ("0,,hb\n", 1, "host"),
            ("0,a\n", 1, "line"),
            ("0,a,req,200,-3\n", 1, "latency_ms"),
            ("{\"t\": 1, \"host\": \"a,b\", \"event\": \"hb\"}\n", 1, "host"),
            ("{\"t\": 1, \"host\": \" c\", \"event\": \"hb\"}\n", 1, "host"),
            ("{\"t\": -1, \"host\": \"a\", \"event\": \"hb\"}\n", 1, "t"),
            ("{\"t\": 1, \"host\": \"a\"}\n", 1, "line"),
            // Fields that only a request has.
            ("0,a,hb\n1,a,hb,503\n", 2, "outcome"),
            ("0,a,bad,timeout\n", 1, "outcome"),
            ("0,a,hb,,12\n", 1, "latency_ms"),
            ("{\"t\": 1, \"host\": \"a\", \"event\": \"hb\", \"outcome\": 200}\n", 1, "outcome"),
            ("{\"t\": 1, \"host\": \"a\", \"event\": \"bad\", \"latency_ms\": 3}\n", 1, "latency_ms"),
        ] {
            let e = FleetTrace::parse(text).unwrap_err();
            assert_eq!((e.line, e.field), (line, field), "{text:?}: {e}");
        }
        let e = FleetTrace::parse("0,a,hb,503,12\n").unwrap_err();
        assert_eq!(e.to_string(), "line 1, field outcome: 'hb' takes no outcome (got '503'); only req does");
        // Empty trailing fields are fields left out.
        assert_eq!(FleetTrace::parse("0,a,hb,,\n").unwrap().events.len(), 1);
        let long = format!("0,{},hb\n", "h".repeat(65));
        assert_eq!(FleetTrace::parse(&long).unwrap_err().field, "host");
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_quoted_fields_are_refused_as_such() {
        let t = FleetTrace::parse("\u{feff}time_ms,host,event\n0,a,hb\n").unwrap();
        assert_eq!((t.hosts.len(), t.events.len()), (1, 1));
        assert_eq!(FleetTrace::parse("\u{feff}0,a,hb\n").unwrap().events.len(), 1);
        for (text, field) in [
            ("0,\"a\",hb\n", "host"),
            ("0,\"a,b\",hb\n", "host"),
            ("\"0\",a,hb\n", "time_ms"),
            ("0,a,req,\"503\"\n", "outcome"),
        ] {
            let e = FleetTrace::parse(text).unwrap_err();
            assert_eq!((e.line, e.field), (1, field), "{text:?}: {e}");
            assert!(e.message.starts_with("quoted fields are not supported"), "{e}");
        }
        // Nor can JSON lines name a host CSV could not carry back.
        let e = FleetTrace::parse("{\"t\": 0, \"host\": \"a\\\"b\", \"event\": \"hb\"}\n").unwrap_err();
        assert_eq!(e.field, "host", "{e}");
    }

    #[test]
    fn the_header_may_follow_comments_and_blank_lines() {
        let t = FleetTrace::parse("# recorded by x\n\ntime_ms,host,event,outcome,latency_ms\n0,a,hb\n").unwrap();
        assert_eq!(t.events.len(), 1);
        // After data, a header line is an error.
        assert_eq!(FleetTrace::parse("0,a,hb\ntime_ms,host,event\n").unwrap_err().line, 2);
    }

    #[test]
    fn json_lines_read_like_csv() {
        let j = "{\"t\": 0, \"host\": \"a\", \"event\": \"hb\"}\n{\"t\": 2.5, \"host\": \"a\", \"event\": \"req\", \"outcome\": \"503\", \"latency_ms\": 4}\n{\"t\": 3, \"host\": \"a\", \"event\": \"req\", \"outcome\": 200}\n";
        let c = "0,a,hb\n2.5,a,req,503,4\n3,a,req,200\n";
        assert_eq!(FleetTrace::parse(j).unwrap(), FleetTrace::parse(c).unwrap());
    }
}
