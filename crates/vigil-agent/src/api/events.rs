//! `GET /v1/events`: the event records as server-sent events, each with its
//! id, resumed from the history after `Last-Event-ID` (or `?after=`), and
//! then followed live. Events the client can no longer have are said by a
//! `missed` record.

use std::convert::Infallible;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt as _};
use serde::Deserialize;
use tokio::sync::broadcast;
use vigil_lab::millis::quoted;

use super::{ApiError, ApiState};
use crate::defaults::SSE_KEEP_ALIVE;
use crate::history::{Entry, History};
use crate::record::{EventRecord, Sink};

/// The stream's query.
#[derive(Debug, Deserialize)]
pub(super) struct EventsQuery {
    /// Resume after this id (as `Last-Event-ID` does), or `now` for new
    /// events only.
    after: Option<String>,
}

/// Where a stream starts: after an id, or after the newest event.
fn start_after(headers: &HeaderMap, query: &EventsQuery, history: &History) -> Result<u64, ApiError> {
    let given = headers
        .get("last-event-id")
        .map(|v| (v.to_str().unwrap_or("\u{fffd}").to_owned(), "Last-Event-ID"))
        .or_else(|| query.after.clone().map(|a| (a, "after")));
    match given {
        None => Ok(0),
        Some((text, _)) if text == "now" => Ok(history.last_id()),
        Some((text, what)) => text.trim().parse::<u64>().map_err(|_| {
            ApiError::BadRequest(format!("{what}: {} is not an event id (a whole number, or `now`)", quoted(&text)))
        }),
    }
}

fn sse(e: &Entry) -> SseEvent {
    SseEvent::default().id(e.id.to_string()).data(&*e.json)
}

/// The record saying `n` events are gone, as a `missed` event.
fn missed(node: &str, n: u64) -> SseEvent {
    let record = EventRecord::missed(node, crate::pipeline::unix_ms(), n, Sink::History);
    SseEvent::default().event("missed").data(record.to_line())
}

pub(super) async fn follow(
    State(state): State<ApiState>,
    headers: HeaderMap,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let Query(query) = query?;
    let history = &state.recorder.history;
    let after = start_after(&headers, &query, history)?;
    let node = state.member.id().name.clone();
    // Subscribe first, then read the history: nothing falls in between.
    let live = history.subscribe();
    let resume = history.after(after);
    let mut first: Vec<SseEvent> = Vec::new();
    if resume.missed > 0 {
        first.push(missed(&node, resume.missed));
    }
    let last = resume.entries.last().map_or(after, |e| e.id);
    first.extend(resume.entries.iter().map(sse));
    let backlog = stream::iter(first.into_iter().map(Ok));
    let follow = stream::unfold((live, last, node), |(mut live, mut last, node)| async move {
        loop {
            match live.recv().await {
                Ok(e) if e.id <= last => continue,
                Ok(e) => {
                    last = e.id;
                    return Some((Ok(sse(&e)), (live, last, node)));
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    let m = missed(&node, n);
                    return Some((Ok(m), (live, last, node)));
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Ok(Sse::new(backlog.chain(follow)).keep_alive(KeepAlive::new().interval(SSE_KEEP_ALIVE)))
}
