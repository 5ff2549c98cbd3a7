//! The trace grammar: one event a line, shared by `vigil replay` and the lab.
//!
//! # Grammar
//!
//! **CSV**: `TIME_MS,EVENT[,SENT_MS[,SEQ]]`.
//!
//! - `EVENT` is `hb` (a heartbeat arrived at `TIME_MS`), `q` (a query: what
//!   is the level at `TIME_MS`?), `crash` (the sender crashed at `TIME_MS`)
//!   or `end` (observation ended at `TIME_MS`).
//! - `SENT_MS` (the send time, on the same clock) and `SEQ` (a whole number)
//!   are optional and belong to heartbeats; leave a field empty to omit it.
//! - Times are decimal milliseconds, fractions allowed (`1500.25`, `1.5e3`),
//!   converted exactly to nanoseconds; at most about 584 years.
//! - Blank lines and lines starting with `#` are ignored, and so is a first
//!   line starting with `time` (a header such as `time_ms,event`); a byte
//!   order mark at the start of line 1 is skipped.
//! - Fields are plain: a quoted one (`"1500"`) is refused as such.
//!
//! **JSON lines**: a line starting with `{` is one object, `{"t": 100.5,
//! "event": "hb", "sent": 90, "seq": 1}`, with the same meaning; `event`
//! defaults to `hb`.
//!
//! Each reader takes the events it has a use for: `vigil replay` answers `q`
//! lines and lets `crash` and `end` pass (they are what the lab measures
//! against); a lab [`Trace`](crate::trace::Trace) has no queries. Order rules
//! belong to the reader too: the lab refuses a heartbeat that arrives before
//! the previous one, `vigil replay` ignores it and says so.
//!
//! ```
//! use vigil_lab::event::{Event, EventReader};
//!
//! let mut reader = EventReader::new();
//! assert_eq!(reader.read(1, "time_ms,event").unwrap(), None);
//! let Some(Event::Heartbeat(beat)) = reader.read(2, "10.5,hb,10,1").unwrap() else { panic!() };
//! assert_eq!((beat.arrival.as_nanos(), beat.seq), (10_500_000, Some(1)));
//! assert!(matches!(reader.read(3, r#"{"t": 20, "event": "q"}"#).unwrap(), Some(Event::Query(_))));
//! let err = reader.read(4, "30,beat").unwrap_err();
//! assert_eq!(err.to_string(), "line 4, field event: unknown event 'beat' (expected hb, q, crash or end)");
//! ```

use std::fmt;

use serde::Deserialize;
use vigil_detector::Instant;

use crate::millis::{parse_instant, quoted};

/// One heartbeat as the observer received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Beat {
    /// When it arrived, on the observer's clock.
    pub arrival: Instant,
    /// When it was sent, if known (same clock).
    pub sent: Option<Instant>,
    /// Its sequence number, if known.
    pub seq: Option<u64>,
}

/// One event of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A heartbeat arrived.
    Heartbeat(Beat),
    /// A question: the level at this time.
    Query(Instant),
    /// The sender crashed at this time.
    Crash(Instant),
    /// Observation ended at this time.
    End(Instant),
}

/// Bad trace input: the line (1-based), the field, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// The field at fault: `time_ms`, `event`, `sent_ms`, `seq` (CSV), `t`,
    /// `sent` (JSON), or `line` for the line as a whole.
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, field {}: {}", self.line, self.field, self.message)
    }
}

impl std::error::Error for TraceError {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonEvent {
    t: f64,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    sent: Option<f64>,
    #[serde(default)]
    seq: Option<u64>,
}

/// Reads a trace line by line. It remembers only whether a data line has been
/// seen (a header is allowed before the first), so any source can feed it: a
/// whole file, or a stream of unbounded length.
#[derive(Debug, Clone, Default)]
pub struct EventReader {
    seen_data: bool,
}

impl EventReader {
    /// A reader at the start of a trace.
    pub fn new() -> EventReader {
        EventReader::default()
    }

    /// Parses line number `line` (1-based, for errors). `None` for a line
    /// that carries no event: blank, a comment, or the header.
    ///
    /// # Errors
    ///
    /// A [`TraceError`] naming the line and the field.
    pub fn read(&mut self, line: usize, text: &str) -> Result<Option<Event>, TraceError> {
        // A byte order mark at the start of the file is not part of the
        // data.
        let text = if line == 1 { text.strip_prefix('\u{feff}').unwrap_or(text) } else { text };
        let row = text.trim();
        if row.is_empty() || row.starts_with('#') {
            return Ok(None);
        }
        let first = !self.seen_data;
        self.seen_data = true;
        if row.starts_with('{') {
            return read_json(line, row).map(Some);
        }
        if first && row.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("time")) {
            return Ok(None);
        }
        read_csv(line, row).map(Some)
    }
}

fn read_csv(line: usize, row: &str) -> Result<Event, TraceError> {
    let err = |field, message: String| TraceError { line, field, message };
    let fields: Vec<&str> = row.splitn(5, ',').map(str::trim).collect();
    if let Some(at) = fields.iter().position(|f| f.contains('"')) {
        const NAMES: [&str; 4] = ["time_ms", "event", "sent_ms", "seq"];
        return Err(err(
            NAMES.get(at).copied().unwrap_or("line"),
            "quoted fields are not supported: fields are plain text, without quotes".into(),
        ));
    }
    if fields.len() < 2 || fields.len() > 4 {
        return Err(err("line", format!("expected TIME_MS,EVENT[,SENT_MS[,SEQ]], found {}", quoted(row))));
    }
    let at = |field, text: &str| parse_instant(text).map_err(|e| err(field, e.to_string()));
    let t = at("time_ms", fields[0])?;
    let sent = match fields.get(2) {
        Some(s) if !s.is_empty() => Some(at("sent_ms", s)?),
        _ => None,
    };
    let seq = match fields.get(3) {
        Some(s) if !s.is_empty() => {
            Some(s.parse::<u64>().map_err(|_| err("seq", format!("{} is not a whole number", quoted(s))))?)
        }
        _ => None,
    };
    event_of(line, "event", "sent_ms", fields[1], t, sent, seq)
}

fn read_json(line: usize, row: &str) -> Result<Event, TraceError> {
    let e: JsonEvent = serde_json::from_str(row).map_err(|e| TraceError {
        line,
        field: "line",
        message: format!("not a trace event object: {e}"),
    })?;
    let t = float_ms(line, "t", e.t)?;
    let sent = e.sent.map(|s| float_ms(line, "sent", s)).transpose()?;
    event_of(line, "event", "sent", e.event.as_deref().unwrap_or("hb"), t, sent, e.seq)
}

fn event_of(
    line: usize,
    event_field: &'static str,
    sent_field: &'static str,
    name: &str,
    t: Instant,
    sent: Option<Instant>,
    seq: Option<u64>,
) -> Result<Event, TraceError> {
    let event = match name {
        "hb" => return Ok(Event::Heartbeat(Beat { arrival: t, sent, seq })),
        "q" => Event::Query(t),
        "crash" => Event::Crash(t),
        "end" => Event::End(t),
        other => {
            return Err(TraceError {
                line,
                field: event_field,
                message: format!("unknown event {} (expected hb, q, crash or end)", quoted(other)),
            });
        }
    };
    if sent.is_some() || seq.is_some() {
        return Err(TraceError {
            line,
            field: sent_field,
            message: format!("'{name}' takes no send time or sequence (only hb does)"),
        });
    }
    Ok(event)
}

/// A JSON time in milliseconds, bounded as CSV times are.
fn float_ms(line: usize, field: &'static str, v: f64) -> Result<Instant, TraceError> {
    let ns = (v * 1e6).round();
    if !(v.is_finite() && v >= 0.0 && ns < u64::MAX as f64) {
        let shown = if v.is_finite() && v.abs() < 1e15 { format!("{v}") } else { format!("{v:e}") };
        return Err(TraceError {
            line,
            field,
            message: format!("{shown} is not a time in milliseconds (0 to about 584 years)"),
        });
    }
    Ok(Instant::from_nanos(ns as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str) -> Result<Vec<Event>, TraceError> {
        let mut r = EventReader::new();
        let mut out = Vec::new();
        for (i, l) in text.lines().enumerate() {
            out.extend(r.read(i + 1, l)?);
        }
        Ok(out)
    }

    #[test]
    fn every_event_in_both_spellings() {
        let csv = read_all("time_ms,event,sent_ms,seq\n# c\n\n1,hb,0.5,7\n2,q\n3,crash\n4,end\n5,hb,,\n").unwrap();
        let json = read_all(
            "{\"t\":1,\"sent\":0.5,\"seq\":7}\n{\"t\":2,\"event\":\"q\"}\n{\"t\":3,\"event\":\"crash\"}\n\
             {\"t\":4,\"event\":\"end\"}\n{\"t\":5,\"event\":\"hb\"}\n",
        )
        .unwrap();
        let ms = Instant::from_millis;
        let want = vec![
            Event::Heartbeat(Beat { arrival: ms(1), sent: Some(Instant::from_nanos(500_000)), seq: Some(7) }),
            Event::Query(ms(2)),
            Event::Crash(ms(3)),
            Event::End(ms(4)),
            Event::Heartbeat(Beat { arrival: ms(5), sent: None, seq: None }),
        ];
        assert_eq!(csv, want);
        assert_eq!(json, want);
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_quoted_fields_are_refused_as_such() {
        assert_eq!(read_all("\u{feff}time_ms,event\n0,hb\n").unwrap().len(), 1);
        assert_eq!(read_all("\u{feff}0,hb\n").unwrap().len(), 1);
        for (text, field) in [("\"0\",hb", "time_ms"), ("0,\"hb\"", "event"), ("0,hb,\"1\"", "sent_ms")] {
            let e = EventReader::new().read(3, text).unwrap_err();
            assert_eq!((e.line, e.field), (3, field), "{text}: {e}");
            assert!(e.message.starts_with("quoted fields are not supported"), "{e}");
        }
    }

    #[test]
    fn a_header_is_only_allowed_first() {
        assert!(read_all("time_ms,event\n0,hb\n").is_ok());
        let err = read_all("0,hb\ntime_ms,event\n").unwrap_err();
        assert_eq!((err.line, err.field), (2, "time_ms"));
    }

    #[test]
    fn errors_name_the_line_and_field_and_stay_short() {
        for (text, field) in [
            ("x,hb", "time_ms"),
            ("5,beat", "event"),
            ("5,hb,abc", "sent_ms"),
            ("5,hb,1,-3", "seq"),
            ("5", "line"),
            ("5,hb,1,2,3", "line"),
            ("5,q,1", "sent_ms"),
            ("{\"t\": -1}", "t"),
            ("{\"t\": 1e308}", "t"),
            ("{\"t\": 1, \"sent\": -2}", "sent"),
            ("{\"t\": 2, \"extra\": 1}", "line"),
            ("{\"t\": 1, \"event\": \"q\", \"seq\": 1}", "sent"),
        ] {
            let err = EventReader::new().read(9, text).unwrap_err();
            assert_eq!((err.line, err.field), (9, field), "{text}: {err}");
        }
        let e = EventReader::new().read(1, "{\"t\": 1e308}").unwrap_err();
        assert_eq!(e.message, "1e308 is not a time in milliseconds (0 to about 584 years)");
        let long = format!("5,{}", "x".repeat(1_000_000));
        let e = EventReader::new().read(1, &long).unwrap_err();
        assert!(e.to_string().len() < 160, "{e}");
    }
}
