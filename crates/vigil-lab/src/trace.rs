//! Heartbeat traces: what one observer saw of one sender.
//!
//! A [`Trace`] is the arrival times of one sender's heartbeats, in arrival
//! order, optionally with the time each was sent and its sequence number, and
//! optionally the time the sender crashed and the time observation ended.
//!
//! # Formats
//!
//! The grammar is [`crate::event`]'s, the one `vigil replay` reads: CSV
//! lines `TIME_MS,EVENT[,SENT_MS[,SEQ]]` or JSON lines, with `hb`, `crash`
//! and `end` events (a trace has no `q` queries). On top of the grammar a
//! trace has order: heartbeats in arrival order (an arrival earlier than the
//! one before it is an error), at most one crash, nothing after the end, and
//! no heartbeat sent after it arrived. A sample is in
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

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use vigil_detector::Instant;

pub use crate::event::{Beat, TraceError};
use crate::event::{Event, EventReader};
use crate::millis::format_millis;

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

#[derive(Serialize)]
struct JsonOut {
    t: f64,
    event: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    sent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
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
            Event::Query(_) => {
                return Err(err(
                    "event",
                    "'q' (a query) is for vigil replay; a lab trace has hb, crash and end".into(),
                ));
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

impl Trace {
    /// Parses a trace (CSV or JSON lines; see [`crate::event`]). A
    /// byte-order mark is ignored.
    ///
    /// # Errors
    ///
    /// A [`TraceError`] naming the line and the field: bad grammar, a query,
    /// or events out of order.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut reader = EventReader::new();
        let mut b = Builder { trace: Trace::default(), last_arrival_line: 0 };
        for (i, raw) in text.lines().enumerate() {
            if let Some(event) = reader.read(i + 1, raw)? {
                b.push(i + 1, event)?;
            }
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
                // A trace holds no queries.
                Event::Query(_) => {}
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
                Event::Query(_) => continue,
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
