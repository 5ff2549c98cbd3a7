//! Heartbeat traces: what one observer saw of one sender.
//!
//! A [`Trace`] is the arrival times of one sender's heartbeats, in arrival
//! order, optionally with the time each was sent and its sequence number, and
//! optionally the time the sender crashed and the time observation ended.
//!
//! # Formats
//!
//! **CSV**, one event a line: `TIME_MS,EVENT[,SENT_MS[,SEQ]]`.
//!
//! - `EVENT` is `hb` (a heartbeat arrived at `TIME_MS`), `crash` (the sender
//!   crashed at `TIME_MS`) or `end` (observation ended at `TIME_MS`).
//! - `SENT_MS` (the send time, on the same clock) and `SEQ` (a whole number)
//!   are optional, per heartbeat; leave a field empty to omit it.
//! - Times are decimal milliseconds, fractions allowed, converted exactly to
//!   nanoseconds.
//! - Blank lines and lines starting with `#` are ignored, and so is a first
//!   line starting with `time`, taken as a header.
//! - Heartbeats are listed in arrival order: an arrival earlier than the one
//!   before it is an error.
//!
//! **JSON lines**, one object a line: `{"t": 100.5, "event": "hb", "sent":
//! 90, "seq": 1}`, with the same meaning; `event` defaults to `hb`.
//!
//! The same rules as `vigil replay`'s traces apply, so a lab trace whose
//! events are all `hb` is also a replay trace. A sample is in
//! `crates/vigil-lab/samples/regime-change.csv`.
//!
//! ```
//! use vigil_lab::trace::Trace;
//!
//! let text = "time_ms,event,sent_ms,seq\n0,hb,0,0\n10.5,hb,10,1\n# a crash\n20,crash\n";
//! let trace = Trace::parse(text)?;
//! assert_eq!(trace.beats.len(), 2);
//! assert_eq!(trace.crash.unwrap().as_nanos(), 20_000_000);
//! let back = Trace::parse(&trace.to_csv())?;
//! assert_eq!(back, trace);
//! # Ok::<(), vigil_lab::trace::TraceError>(())
//! ```

use std::fmt;
use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use vigil_detector::Instant;

use crate::millis::{format_millis, parse_instant};

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

/// The heartbeats one observer received from one sender.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Trace {
    /// Heartbeats in arrival order (non-decreasing arrival times).
    pub beats: Vec<Beat>,
    /// When the sender crashed, if it did.
    pub crash: Option<Instant>,
    /// When observation ended, if stated (otherwise the last event).
    pub end: Option<Instant>,
}

/// Bad trace input: the line (1-based), the field, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// The field at fault (`time_ms`, `event`, `sent_ms`, `seq`, or `line`).
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

#[derive(Serialize)]
struct JsonOut {
    t: f64,
    event: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    sent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
}

enum Event {
    Heartbeat(Beat),
    Crash(Instant),
    End(Instant),
}

/// Builds a trace from events, checking their order.
struct Builder {
    trace: Trace,
    last_arrival_line: usize,
}

impl Builder {
    fn push(&mut self, line: usize, event: Event) -> Result<(), TraceError> {
        let err = |field, message: String| TraceError { line, field, message };
        if let Some(end) = self.trace.end {
            return Err(err("event", format!("an event after the end of observation at {} ms", format_millis(end))));
        }
        match event {
            Event::Heartbeat(beat) => {
                if let Some(sent) = beat.sent
                    && sent > beat.arrival
                {
                    return Err(err(
                        "sent_ms",
                        format!(
                            "sent at {} ms, after it arrived at {} ms (both on the receiver's clock)",
                            format_millis(sent),
                            format_millis(beat.arrival)
                        ),
                    ));
                }
                if let Some(prev) = self.trace.beats.last()
                    && beat.arrival < prev.arrival
                {
                    return Err(err(
                        "time_ms",
                        format!(
                            "arrival {} ms is before the previous arrival {} ms (line {}); list heartbeats in arrival order",
                            format_millis(beat.arrival),
                            format_millis(prev.arrival),
                            self.last_arrival_line
                        ),
                    ));
                }
                self.trace.beats.push(beat);
                self.last_arrival_line = line;
            }
            Event::Crash(t) => {
                if self.trace.crash.is_some() {
                    return Err(err("event", "a second crash; a trace has at most one".into()));
                }
                self.trace.crash = Some(t);
            }
            Event::End(t) => {
                if let Some(crash) = self.trace.crash
                    && t < crash
                {
                    return Err(err(
                        "time_ms",
                        format!("end {} ms is before the crash at {} ms", format_millis(t), format_millis(crash)),
                    ));
                }
                if let Some(last) = self.trace.beats.last()
                    && t < last.arrival
                {
                    return Err(err(
                        "time_ms",
                        format!(
                            "end {} ms is before the last arrival {} ms",
                            format_millis(t),
                            format_millis(last.arrival)
                        ),
                    ));
                }
                self.trace.end = Some(t);
            }
        }
        Ok(())
    }
}

fn event_of(line: usize, name: &str, t: Instant, sent: Option<Instant>, seq: Option<u64>) -> Result<Event, TraceError> {
    let extra = sent.is_some() || seq.is_some();
    let event = match name {
        "hb" => return Ok(Event::Heartbeat(Beat { arrival: t, sent, seq })),
        "crash" => Event::Crash(t),
        "end" => Event::End(t),
        "q" => {
            return Err(TraceError {
                line,
                field: "event",
                message: "'q' (query) is for vigil replay; a lab trace has hb, crash and end".into(),
            });
        }
        other => {
            return Err(TraceError {
                line,
                field: "event",
                message: format!("unknown event '{other}' (expected hb, crash or end)"),
            });
        }
    };
    if extra {
        return Err(TraceError { line, field: "sent_ms", message: format!("'{name}' takes no send time or sequence") });
    }
    Ok(event)
}

fn float_ms(line: usize, field: &'static str, v: f64) -> Result<Instant, TraceError> {
    let ns = (v * 1e6).round();
    if !(v.is_finite() && v >= 0.0 && ns < u64::MAX as f64) {
        return Err(TraceError { line, field, message: format!("{v} is not a time in milliseconds (0 or more)") });
    }
    Ok(Instant::from_nanos(ns as u64))
}

impl Trace {
    /// Parses CSV or JSON lines (JSON when the first non-blank character is
    /// `{`). A byte-order mark is ignored.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if text.trim_start().starts_with('{') { Trace::parse_jsonl(text) } else { Trace::parse_csv(text) }
    }

    /// Parses the CSV format.
    pub fn parse_csv(text: &str) -> Result<Trace, TraceError> {
        let mut b = Builder { trace: Trace::default(), last_arrival_line: 0 };
        let mut seen_data = false;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let row = raw.trim();
            if row.is_empty() || row.starts_with('#') {
                continue;
            }
            if !seen_data && row.to_ascii_lowercase().starts_with("time") {
                seen_data = true;
                continue;
            }
            seen_data = true;
            let fields: Vec<&str> = row.split(',').map(str::trim).collect();
            if fields.len() < 2 || fields.len() > 4 {
                return Err(TraceError {
                    line,
                    field: "line",
                    message: format!("expected TIME_MS,EVENT[,SENT_MS[,SEQ]], found {} field(s)", fields.len()),
                });
            }
            let at = |field, text: &str| parse_instant(text).map_err(|message| TraceError { line, field, message });
            let t = at("time_ms", fields[0])?;
            let sent = match fields.get(2) {
                Some(s) if !s.is_empty() => Some(at("sent_ms", s)?),
                _ => None,
            };
            let seq = match fields.get(3) {
                Some(s) if !s.is_empty() => Some(s.parse::<u64>().map_err(|_| TraceError {
                    line,
                    field: "seq",
                    message: format!("'{s}' is not a whole number"),
                })?),
                _ => None,
            };
            b.push(line, event_of(line, fields[1], t, sent, seq)?)?;
        }
        Ok(b.trace)
    }

    /// Parses the JSON lines format.
    pub fn parse_jsonl(text: &str) -> Result<Trace, TraceError> {
        let mut b = Builder { trace: Trace::default(), last_arrival_line: 0 };
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let row = raw.trim();
            if row.is_empty() {
                continue;
            }
            let e: JsonEvent = serde_json::from_str(row).map_err(|e| TraceError {
                line,
                field: "line",
                message: format!("not a trace event object: {e}"),
            })?;
            let t = float_ms(line, "t", e.t)?;
            let sent = e.sent.map(|s| float_ms(line, "sent", s)).transpose()?;
            b.push(line, event_of(line, e.event.as_deref().unwrap_or("hb"), t, sent, e.seq)?)?;
        }
        Ok(b.trace)
    }

    /// The trace as CSV, with a header line. Parsing it gives the same trace.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("time_ms,event,sent_ms,seq\n");
        for ev in self.events() {
            match ev {
                Event::Heartbeat(b) => {
                    let sent = b.sent.map(format_millis).unwrap_or_default();
                    let seq = b.seq.map(|s| s.to_string()).unwrap_or_default();
                    let _ = writeln!(out, "{},hb,{},{}", format_millis(b.arrival), sent, seq);
                }
                Event::Crash(t) => {
                    let _ = writeln!(out, "{},crash", format_millis(t));
                }
                Event::End(t) => {
                    let _ = writeln!(out, "{},end", format_millis(t));
                }
            }
        }
        out
    }

    /// The trace as JSON lines (times in milliseconds as floating point, so
    /// exact to well under a nanosecond for times below about 100 days).
    pub fn to_jsonl(&self) -> String {
        let ms = |t: Instant| t.as_nanos() as f64 / 1e6;
        let mut out = String::new();
        for ev in self.events() {
            let row = match ev {
                Event::Heartbeat(b) => JsonOut { t: ms(b.arrival), event: "hb", sent: b.sent.map(ms), seq: b.seq },
                Event::Crash(t) => JsonOut { t: ms(t), event: "crash", sent: None, seq: None },
                Event::End(t) => JsonOut { t: ms(t), event: "end", sent: None, seq: None },
            };
            out.push_str(&serde_json::to_string(&row).unwrap_or_default());
            out.push('\n');
        }
        out
    }

    /// Events in time order (a crash is listed before a heartbeat at the same
    /// time; the end is last).
    fn events(&self) -> Vec<Event> {
        let mut out: Vec<Event> = Vec::with_capacity(self.beats.len() + 2);
        let mut crash = self.crash;
        for b in &self.beats {
            if let Some(c) = crash
                && c <= b.arrival
            {
                out.push(Event::Crash(c));
                crash = None;
            }
            out.push(Event::Heartbeat(*b));
        }
        if let Some(c) = crash {
            out.push(Event::Crash(c));
        }
        if let Some(e) = self.end {
            out.push(Event::End(e));
        }
        out
    }

    /// The end of observation: the stated end, else the later of the last
    /// arrival and the crash.
    pub fn observed_until(&self) -> Instant {
        let last = self.beats.last().map_or(Instant::ZERO, |b| b.arrival);
        self.end.unwrap_or_else(|| self.crash.map_or(last, |c| c.max(last)))
    }

    /// The sender's heartbeat period: from sequence numbers and send times
    /// when both are known, else the median interval between send times,
    /// else the median interval between arrivals. `None` with fewer than two
    /// heartbeats.
    pub fn period(&self) -> Option<Duration> {
        let with_seq: Vec<(u64, Instant)> = self.beats.iter().filter_map(|b| Some((b.seq?, b.sent?))).collect();
        if let (Some(&(s0, t0)), Some(&(s1, t1))) =
            (with_seq.iter().min_by_key(|x| x.0), with_seq.iter().max_by_key(|x| x.0))
            && s1 > s0
            && t1 > t0
        {
            return Some(Duration::from_nanos((t1.as_nanos() - t0.as_nanos()) / (s1 - s0)));
        }
        let mut sends: Vec<u64> = self.beats.iter().filter_map(|b| b.sent.map(Instant::as_nanos)).collect();
        if sends.len() < 2 {
            sends = self.beats.iter().map(|b| b.arrival.as_nanos()).collect();
        }
        sends.sort_unstable();
        let mut gaps: Vec<u64> = sends.windows(2).map(|w| w[1] - w[0]).collect();
        if gaps.is_empty() {
            return None;
        }
        gaps.sort_unstable();
        Some(Duration::from_nanos(gaps[gaps.len() / 2]))
    }

    /// When the first missing heartbeat was due: the last send at or before
    /// the crash plus one period. Needs send times and a crash.
    pub fn first_missing_due(&self) -> Option<Instant> {
        let crash = self.crash?;
        let last_sent = self.beats.iter().filter_map(|b| b.sent).filter(|&s| s <= crash).max()?;
        last_sent.checked_add(self.period()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    #[test]
    fn csv_and_jsonl_round_trip() {
        let trace = Trace {
            beats: vec![
                Beat { arrival: ms(10), sent: Some(ms(0)), seq: Some(0) },
                Beat { arrival: Instant::from_nanos(110_000_001), sent: Some(ms(100)), seq: Some(1) },
                Beat { arrival: ms(215), sent: None, seq: None },
            ],
            crash: Some(ms(250)),
            end: Some(ms(5000)),
        };
        assert_eq!(Trace::parse(&trace.to_csv()).unwrap(), trace);
        assert_eq!(Trace::parse(&trace.to_jsonl()).unwrap(), trace);
    }

    #[test]
    fn errors_name_the_line_and_field() {
        let cases = [
            ("0,hb\nx,hb\n", 2, "time_ms"),
            ("0,hb\n5,beat\n", 2, "event"),
            ("0,hb\n5,hb,abc\n", 2, "sent_ms"),
            ("0,hb\n5,hb,1,-3\n", 2, "seq"),
            ("0,hb\n5\n", 2, "line"),
            ("10,hb\n# comment\n5,hb\n", 3, "time_ms"),
            ("0,crash\n1,crash\n", 2, "event"),
            ("0,hb\n1,end\n2,hb\n", 3, "event"),
            ("0,q\n", 1, "event"),
            ("{\"t\": 1}\n{\"t\": -1}\n", 2, "t"),
            ("{\"t\": 1}\n{\"t\": 2, \"extra\": 1}\n", 2, "line"),
            ("{\"t\": 1}\nnot json\n", 2, "line"),
            ("0,hb\n10,hb,20\n", 2, "sent_ms"),
            ("0,hb\n500,crash\n400,end\n", 3, "time_ms"),
        ];
        for (text, line, field) in cases {
            let err = Trace::parse(text).unwrap_err();
            assert_eq!((err.line, err.field), (line, field), "{text:?}: {err}");
        }
        let err = Trace::parse("0,hb\n10,hb,20\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 2, field sent_ms: sent at 20 ms, after it arrived at 10 ms (both on the receiver's clock)"
        );
        let err = Trace::parse("10,hb\n5,hb\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 2, field time_ms: arrival 5 ms is before the previous arrival 10 ms (line 1); list heartbeats in arrival order"
        );
    }

    #[test]
    fn header_bom_comments_and_equal_times_are_accepted() {
        let t = Trace::parse("\u{feff}time_ms,event\n\n# x\n0,hb\n0,hb\n100.25,hb\n").unwrap();
        assert_eq!(t.beats.len(), 3);
        assert_eq!(t.beats[2].arrival.as_nanos(), 100_250_000);
    }

    #[test]
    fn period_and_due() {
        let beats = (0..5u64)
            .filter(|&i| i != 2)
            .map(|i| Beat { arrival: ms(i * 100 + 7), sent: Some(ms(i * 100)), seq: Some(i) })
            .collect();
        let t = Trace { beats, crash: Some(ms(400)), end: None };
        assert_eq!(t.period(), Some(Duration::from_millis(100)));
        assert_eq!(t.first_missing_due(), Some(ms(500)));
        let arrivals_only = Trace::parse("0,hb\n90,hb\n200,hb\n300,hb\n").unwrap();
        assert_eq!(arrivals_only.period(), Some(Duration::from_millis(100)));
        assert_eq!(arrivals_only.first_missing_due(), None);
    }
}
