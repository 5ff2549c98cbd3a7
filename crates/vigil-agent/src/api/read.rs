//! The reads: this member, the members, health, φ over time, metrics and
//! the dashboard.

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use vigil_lab::millis::quoted;
use vigil_net::Status;

use super::body::{self, Counts, Live, Member, Members, PhiHistory, Queues, Ready, SelfView};
use super::{ApiError, ApiState};
use crate::defaults::SAMPLE_INTERVAL;

/// The dashboard: one page, no external assets.
const DASHBOARD: &str = include_str!("dashboard.html");
/// OpenMetrics' content type.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

pub(super) async fn dashboard() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], DASHBOARD)
}

pub(super) async fn self_view(State(state): State<ApiState>) -> Result<Json<SelfView>, ApiError> {
    let s = state.member.snapshot().await?;
    let not_ready = body::not_ready(&s, state.expects_peers);
    let not_converged = body::not_converged(&s);
    let n = &s.node;
    Ok(Json(SelfView {
        name: n.id.name.clone(),
        generation: n.id.generation,
        incarnation: n.incarnation,
        address: state.member.advertise_addr().to_string(),
        tags: n.tags.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
        sealed: state.sealed,
        uptime_ms: body::ms(s.uptime),
        awareness: n.awareness,
        max_awareness: n.max_awareness,
        members: Counts {
            alive: n.count(Status::Alive),
            suspect: n.count(Status::Suspect),
            dead: n.count(Status::Dead),
            left: n.count(Status::Left),
        },
        watching: n.watched.iter().map(|w| w.name.clone()).collect(),
        queues: Queues {
            broadcasts: n.queued_broadcasts,
            suspicions: n.suspicions,
            probes: n.probes_in_flight,
            relays: n.relays_in_flight,
        },
        recorded_arrivals: n.recorded_arrivals,
        ready: not_ready.is_empty(),
        not_ready,
        converged: not_converged.is_empty(),
        not_converged,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        event_format: crate::record::FORMAT_VERSION,
        detector: state.detector.clone(),
        suspect_level: state.suspect_level,
        fleet: state.fleet.is_some(),
        downing: body::DowningView::of(&s),
        self_downs: n.stats.self_downs,
    }))
}

pub(super) async fn members(State(state): State<ApiState>) -> Result<Json<Members>, ApiError> {
    let s = state.member.snapshot().await?;
    Ok(Json(Members::from(&s)))
}

pub(super) async fn member(
    State(state): State<ApiState>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<Member>, ApiError> {
    let Path(name) = name?;
    let s = state.member.snapshot().await?;
    match s.node.member(&name) {
        Some(m) => Ok(Json(Member::of(m, &s))),
        None if s.node.id.name == name => {
            Err(ApiError::NotFound(format!("{} is this member: see /v1/self", quoted(&name))))
        }
        None => Err(ApiError::NotFound(format!("no member named {}", quoted(&name)))),
    }
}

pub(super) async fn live() -> Json<Live> {
    Json(Live { status: "live".into() })
}

/// The readiness probe's query.
#[derive(Debug, serde::Deserialize)]
pub(super) struct ReadyQuery {
    /// Also require a converged view (`true`; default `false`).
    #[serde(default)]
    converged: bool,
}

pub(super) async fn ready(
    State(state): State<ApiState>,
    query: Result<Query<ReadyQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query?;
    let s = state.member.snapshot().await?;
    let mut reasons = body::not_ready(&s, state.expects_peers);
    if query.converged {
        reasons.extend(body::not_converged(&s));
    }
    Ok(if reasons.is_empty() {
        Json(Ready { status: "ready".into(), reasons }).into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Json(Ready { status: "not ready".into(), reasons })).into_response()
    })
}

pub(super) async fn metrics(State(state): State<ApiState>) -> Result<Response, ApiError> {
    let s = state.member.snapshot().await?;
    let ready = body::not_ready(&s, state.expects_peers).is_empty();
    // /proc's files are in memory: reading them does not wait on a disk.
    let process = crate::process::Process::read();
    let text = {
        let m = state.recorder.metrics();
        m.refresh(&s);
        m.set_ready(ready);
        if let Some(p) = &process {
            m.set_process(p);
        }
        m.encode()
    };
    Ok(([(header::CONTENT_TYPE, HeaderValue::from_static(OPENMETRICS))], text).into_response())
}

/// The last two minutes of φ of each watched member, sampled once a
/// second, for the dashboard's charts.
pub(super) async fn phi_history(State(state): State<ApiState>) -> Json<PhiHistory> {
    let members = state
        .recorder
        .phi_history()
        .into_iter()
        .map(|(name, ring)| (name, ring.into_iter().map(|(t, phi)| (t, phi.filter(|p| p.is_finite()))).collect()))
        .collect();
    Json(PhiHistory { interval_ms: SAMPLE_INTERVAL.as_millis() as u64, members })
}
