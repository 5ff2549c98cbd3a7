//! `GET /v1/monitor`: the agent's log as server-sent events, from now on,
//! at the level asked (`?level=debug`; default `info`), whatever the
//! agent's own `--log-level`. Each event's data is a log line as JSON; a
//! `missed` event says how many lines a follower too slow to read lost.

use std::convert::Infallible;

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use serde::Deserialize;

use super::ApiError;
use crate::defaults::SSE_KEEP_ALIVE;
use crate::log_stream::{Level, LogStream, Next};

/// The stream's query.
#[derive(Debug, Deserialize)]
pub(super) struct MonitorQuery {
    /// `error`, `warn`, `info` (the default), `debug` or `trace`.
    level: Option<String>,
}

pub(super) async fn follow(
    query: Result<Query<MonitorQuery>, QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let Query(query) = query?;
    let level = match &query.level {
        None => Level::Info,
        Some(text) => text.parse::<Level>().map_err(|e| ApiError::BadRequest(format!("level: {e}")))?,
    };
    let follower = LogStream::global().follow(level);
    let lines = stream::unfold(follower, |mut f| async move {
        let event = match f.next().await? {
            Next::Line(line) => SseEvent::default().data(serde_json::to_string(&*line).unwrap_or_default()),
            Next::Missed(n) => SseEvent::default().event("missed").data(format!("{{\"missed\":{n}}}")),
        };
        Some((Ok(event), f))
    });
    Ok(Sse::new(lines).keep_alive(KeepAlive::new().interval(SSE_KEEP_ALIVE)))
}
