//! `GET /v1/traces`: the recorded heartbeat arrivals of watched members,
//! as lab traces (`vigil lab replay` and `vigil lab recommend` read them).

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use vigil_detector::Instant;
use vigil_lab::trace::{Beat, Trace};
use vigil_net::{Arrivals, Recorded};

use super::body::{TraceInfo, Traces};
use super::{ApiError, ApiState};

/// The recording as a trace whose clock starts when the recording did, and
/// which ends at `now` (so the silence since the last arrival is part of
/// it).
pub(crate) fn trace_of(arrivals: &Arrivals, now: Instant) -> Trace {
    let origin = arrivals.since;
    let beats =
        arrivals.times.iter().map(|&t| Beat { arrival: Instant::ZERO + (t - origin), sent: None, seq: None }).collect();
    Trace { beats, crash: None, end: Some(Instant::ZERO + (now - origin)) }
}

pub(super) async fn list(State(state): State<ApiState>) -> Result<Json<Traces>, ApiError> {
    let s = state.member.snapshot().await?;
    let mut members = Vec::new();
    for w in &s.node.watched {
        if let Some(Recorded { arrivals: a, now }) = state.member.arrivals(&w.name, None).await? {
            members.push(TraceInfo {
                name: w.name.clone(),
                generation: a.generation,
                arrivals: a.times.len(),
                dropped: a.dropped,
                recording_for_ms: (now - a.since).as_secs_f64() * 1e3,
                url: format!("/v1/traces/{}", w.name),
            });
        }
    }
    Ok(Json(Traces { recorded_arrivals: s.node.recorded_arrivals, members }))
}

#[derive(Debug, Deserialize)]
pub(super) struct Format {
    format: Option<String>,
}

pub(super) async fn one(
    State(state): State<ApiState>,
    name: Result<Path<String>, PathRejection>,
    format: Result<Query<Format>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (Path(name), Query(f)) = (name?, format?);
    let jsonl = match f.format.as_deref() {
        None | Some("csv") => false,
        Some("jsonl") => true,
        Some(other) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("format: {} is not a trace format (csv or jsonl)", vigil_lab::millis::quoted(other)),
            ));
        }
    };
    let s = state.member.snapshot().await?;
    if s.node.recorded_arrivals == 0 {
        return Err(ApiError::new(StatusCode::CONFLICT, "recording is off: start the agent with --record-arrivals N"));
    }
    let Some(Recorded { arrivals, now }) = state.member.arrivals(&name, None).await? else {
        let watched: Vec<&str> = s.node.watched.iter().map(|w| w.name.as_str()).collect();
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "{} is not watched by this member (it watches: {})",
                vigil_lab::millis::quoted(&name),
                watched.join(", ")
            ),
        ));
    };
    let trace = trace_of(&arrivals, now);
    let (text, kind) = if jsonl {
        (trace.to_jsonl(), "application/jsonl")
    } else {
        let head = format!(
            "# heartbeat arrivals of {} (generation {}) at {}, {} recorded, {} dropped to stay within the bound\n",
            name,
            arrivals.generation,
            s.node.id.name,
            arrivals.times.len(),
            arrivals.dropped
        );
        (head + &trace.to_csv(), "text/csv; charset=utf-8")
    };
    let disposition =
        format!("attachment; filename=\"{}-{}.{}\"", s.node.id.name, safe(&name), if jsonl { "jsonl" } else { "csv" });
    Ok(([(header::CONTENT_TYPE, kind.to_owned()), (header::CONTENT_DISPOSITION, disposition)], text).into_response())
}

/// A name made safe for a file name: anything but letters, digits, `-`, `_`
/// and `.` becomes `_`.
fn safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_becomes_a_trace_from_its_start_to_now() {
        let mut a = Arrivals::default();
        a.since = Instant::from_millis(5_000);
        a.times = vec![Instant::from_millis(6_000), Instant::from_millis(7_050)];
        let t = trace_of(&a, Instant::from_millis(9_000));
        assert_eq!(
            t.beats.iter().map(|b| b.arrival).collect::<Vec<_>>(),
            [Instant::from_millis(1_000), Instant::from_millis(2_050)]
        );
        assert_eq!(t.end, Some(Instant::from_millis(4_000)));
        // What the lab reads back is the same trace.
        assert_eq!(Trace::parse(&t.to_csv()).unwrap(), t);
        assert_eq!(safe("a/b c"), "a_b_c");
    }
}
