//! The agent's HTTP surface: the JSON API under `/v1`, OpenMetrics at
//! `/metrics`, and the dashboard at `/`.
//!
//! Reads are open; what changes the member (keyring operations, leaving,
//! outcomes, and in `vigil cluster` the injected faults) needs the bearer
//! token when one is set, and is refused without one unless the server
//! listens on a loopback address only. Whatever the token, a web page can
//! neither change anything nor read anything ([`origin`]), and no idle or
//! slow client can keep the others out ([`listener`]). Every error is JSON:
//! `{"error": "..."}`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use futures_util::stream::{self, Stream};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use vigil_membership::keyring::KeyId;
use vigil_net::Cluster;

pub(crate) mod fleet;
pub(crate) mod history;
pub(crate) mod lab;
mod listener;
pub(crate) mod metrics;
mod origin;
pub(crate) mod recorder;
pub(crate) mod traces;
pub(crate) mod views;

use fleet::Fleet;
use history::{Entry, History};
pub(crate) use origin::{Host, host_names};
use recorder::Recorder;

/// The dashboard: one page, no external assets.
const DASHBOARD: &str = include_str!("dashboard.html");
/// The API's description.
pub(crate) const OPENAPI: &str = include_str!("openapi.json");
/// The largest request body taken (a key is well under 1 KiB).
const MAX_BODY: usize = 16 * 1024;
/// The largest batch of outcomes, in bytes and in entries.
const MAX_OUTCOMES_BODY: usize = 1024 * 1024;
const MAX_OUTCOMES: usize = 10_000;
/// OpenMetrics' content type.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What the handlers share.
#[derive(Clone)]
pub(crate) struct Api {
    pub(crate) cluster: Arc<Cluster>,
    /// The member's events, metrics and φ samples.
    pub(crate) recorder: Recorder,
    /// The bearer token for changes, if one is set.
    pub(crate) token: Option<Arc<str>>,
    /// Whether the server listens on loopback only (changes are then
    /// allowed without a token).
    pub(crate) loopback: bool,
    /// Asks the owner to leave the cluster and stop.
    pub(crate) leave: mpsc::Sender<()>,
    /// Whether packets are sealed.
    pub(crate) sealed: bool,
    /// Whether the member was given members to join through (readiness
    /// then needs a live one).
    pub(crate) expects_peers: bool,
    /// `vigil cluster`'s members, for injecting faults from the page.
    pub(crate) fleet: Option<Arc<Fleet>>,
    /// Names the API may be reached by besides its own addresses
    /// (`--http-host`).
    pub(crate) hosts: Vec<Host>,
}

/// An error as the API answers it.
#[derive(Debug)]
pub(crate) struct ApiError(StatusCode, String);

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError(status, message.into())
    }

    /// What went wrong, for a terminal.
    pub(crate) fn message(&self) -> &str {
        &self.1
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, axum::Json(json!({"error": self.1}))).into_response()
    }
}

type ApiResult<T> = Result<T, ApiError>;

fn stopped() -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "the member has stopped")
}

/// The router, for `api` reached by `hosts`.
fn router(api: Api, hosts: Arc<origin::Hosts>) -> Router {
    let guarded = Router::new()
        .route("/v1/keys", get(keys_list).post(keys_install))
        .route("/v1/keys/{id}/use", post(keys_use))
        .route("/v1/keys/{id}", delete(keys_remove))
        .route("/v1/leave", post(leave))
        .route("/v1/outcomes", post(outcomes).layer(axum::extract::DefaultBodyLimit::max(MAX_OUTCOMES_BODY)))
        .route("/v1/fleet/{name}/{fault}", post(fleet::inject))
        .route_layer(middleware::from_fn_with_state(api.clone(), authorize));
    Router::new()
        .route("/", get(dashboard))
        .route("/v1/self", get(self_view))
        .route("/v1/members", get(members))
        .route("/v1/members/{name}", get(member))
        .route("/v1/events", get(events))
        .route("/v1/health/live", get(live))
        .route("/v1/health/ready", get(ready))
        .route("/v1/traces", get(traces::list))
        .route("/v1/traces/{name}", get(traces::one))
        .route("/v1/fleet", get(fleet::list))
        .route("/v1/phi", get(phi_history))
        .route("/v1/openapi.json", get(openapi))
        .route("/metrics", get(metrics_text))
        .merge(guarded)
        .merge(lab::routes())
        .fallback(not_found)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(hosts, origin::same_origin))
        .layer(middleware::map_response(json_errors))
        .with_state(api)
}

/// Serves `api` on `listener`, and samples its member once a second for
/// the metrics and the charts, in the background until the process ends.
/// Says in the log when the API can be reached from other hosts without a
/// token.
pub(crate) fn start(listener: tokio::net::TcpListener, api: Api) {
    let bound = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            tracing::error!("no HTTP API: its listener has no address ({e})");
            return;
        }
    };
    if !is_loopback(bound) && api.token.is_none() {
        tracing::warn!(
            "the HTTP API on {bound} can be reached from other hosts and has no token: anyone who reaches it \
             reads the cluster's state (changes are refused); give --http-token-file, or listen on 127.0.0.1"
        );
    }
    let hosts = Arc::new(origin::Hosts::new(bound, api.hosts.clone()));
    tokio::spawn(api.recorder.clone().sample(api.cluster.clone()));
    tokio::spawn(listener::serve(listener, router(api, hosts)));
}

/// Every error as JSON: what axum answers by itself (a body too large, a
/// query that does not parse, a method not allowed) is plain text, and is
/// wrapped here as `{"error": "..."}`.
async fn json_errors(res: Response) -> Response {
    let status = res.status();
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return res;
    }
    let (parts, body) = res.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024).await.unwrap_or_default();
    let mut message = String::from_utf8_lossy(&text).trim().to_owned();
    if message.is_empty() {
        message = status.canonical_reason().unwrap_or("error").to_owned();
    }
    let mut out = ApiError::new(status, message).into_response();
    for (k, v) in parts.headers.iter().filter(|(k, _)| *k == header::ALLOW) {
        out.headers_mut().insert(k, v.clone());
    }
    out
}

/// Whether the server may be reached from elsewhere than this host.
pub(crate) fn is_loopback(addr: SocketAddr) -> bool {
    addr.ip().is_loopback()
}

async fn not_found(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no such endpoint: {} {} (see /v1/openapi.json)", req.method(), req.uri().path()),
    )
}

/// Equal in time whatever the contents: the comparison does not tell an
/// attacker how much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token of `Authorization: Bearer TOKEN`; the scheme in any case,
/// then one or more spaces (RFC 7235).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim_matches(' '))
}

async fn authorize(State(api): State<Api>, req: Request, next: Next) -> Response {
    match &api.token {
        Some(token) => {
            let given = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer);
            match given {
                Some(g) if same(g.as_bytes(), token.as_bytes()) => next.run(req).await,
                Some(_) => ApiError::new(StatusCode::FORBIDDEN, "wrong bearer token").into_response(),
                None => ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "this needs the bearer token: Authorization: Bearer <token>",
                )
                .into_response(),
            }
        }
        None if api.loopback => next.run(req).await,
        None => ApiError::new(
            StatusCode::FORBIDDEN,
            "changes over a non-loopback address need a token: start the agent with --http-token-file",
        )
        .into_response(),
    }
}

async fn dashboard() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], DASHBOARD)
}

async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI)
}

async fn self_view(State(api): State<Api>) -> ApiResult<axum::Json<Value>> {
    let s = api.cluster.snapshot().await.map_err(|_| stopped())?;
    let addr = api.cluster.advertise_addr().to_string();
    let mut v = views::self_json(&s, api.sealed, &addr, api.expects_peers);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("fleet".into(), json!(api.fleet.is_some()));
    }
    Ok(axum::Json(v))
}

async fn members(State(api): State<Api>) -> ApiResult<axum::Json<Value>> {
    let s = api.cluster.snapshot().await.map_err(|_| stopped())?;
    Ok(axum::Json(views::members_json(&s)))
}

async fn member(State(api): State<Api>, Path(name): Path<String>) -> ApiResult<axum::Json<Value>> {
    let s = api.cluster.snapshot().await.map_err(|_| stopped())?;
    match s.node.members.iter().find(|m| *m.id.name == *name) {
        Some(m) => Ok(axum::Json(views::member_json(&s, m))),
        None if *s.node.id.name == *name => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("{} is this member: see /v1/self", vigil_lab::millis::quoted(&name)),
        )),
        None => {
            Err(ApiError::new(StatusCode::NOT_FOUND, format!("no member named {}", vigil_lab::millis::quoted(&name))))
        }
    }
}

async fn live() -> axum::Json<Value> {
    axum::Json(json!({"status": "live"}))
}

async fn ready(State(api): State<Api>) -> Response {
    let Ok(s) = api.cluster.snapshot().await else {
        return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "the member has stopped").into_response();
    };
    let why = views::not_ready(&s, api.expects_peers);
    if why.is_empty() {
        axum::Json(json!({"status": "ready"})).into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, axum::Json(json!({"status": "not ready", "reasons": why}))).into_response()
    }
}

async fn metrics_text(State(api): State<Api>) -> ApiResult<Response> {
    let s = api.cluster.snapshot().await.map_err(|_| stopped())?;
    let text = {
        let m = api.recorder.metrics();
        m.refresh(&s);
        m.encode()
    };
    Ok(([(header::CONTENT_TYPE, HeaderValue::from_static(OPENMETRICS))], text).into_response())
}

/// The last two minutes of φ of each watched member, sampled once a
/// second, for the dashboard's charts.
async fn phi_history(State(api): State<Api>) -> axum::Json<Value> {
    let members: serde_json::Map<String, Value> = api
        .recorder
        .phi_history()
        .into_iter()
        .map(|(name, ring)| {
            let points: Vec<Value> = ring.iter().map(|(t, phi)| json!([t, phi.filter(|p| p.is_finite())])).collect();
            (name, Value::Array(points))
        })
        .collect();
    axum::Json(json!({"interval_ms": 1000, "members": members}))
}

// ---- events ----

#[derive(Debug, Deserialize)]
struct EventsQuery {
    /// Resume after this id (as `Last-Event-ID` does), or `now` for new
    /// events only.
    after: Option<String>,
}

/// Where a stream starts: after an id, or after the newest event.
fn start_after(headers: &HeaderMap, query: &EventsQuery, history: &History) -> ApiResult<u64> {
    let given = headers
        .get("last-event-id")
        .map(|v| (v.to_str().unwrap_or("\u{fffd}").to_owned(), "Last-Event-ID"))
        .or_else(|| query.after.clone().map(|a| (a, "after")));
    match given {
        None => Ok(0),
        Some((text, _)) if text == "now" => Ok(history.last_id()),
        Some((text, what)) => text.trim().parse::<u64>().map_err(|_| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("{what}: {} is not an event id (a whole number, or `now`)", vigil_lab::millis::quoted(&text)),
            )
        }),
    }
}

fn sse(e: &Entry) -> SseEvent {
    SseEvent::default().id(e.id.to_string()).data(&*e.json)
}

fn missed(n: u64) -> SseEvent {
    SseEvent::default().event("missed").data(json!({"missed": n}).to_string())
}

async fn events(
    State(api): State<Api>,
    headers: HeaderMap,
    Query(query): Query<EventsQuery>,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let after = start_after(&headers, &query, &api.recorder.history)?;
    // Subscribe first, then read the history: nothing falls in between.
    let live = api.recorder.history.subscribe();
    let resume = api.recorder.history.after(after);
    let mut first: Vec<SseEvent> = Vec::new();
    if resume.missed > 0 {
        first.push(missed(resume.missed));
    }
    let last = resume.entries.last().map_or(after, |e| e.id);
    first.extend(resume.entries.iter().map(sse));
    let backlog = stream::iter(first.into_iter().map(Ok));
    let follow = stream::unfold((live, last), |(mut live, mut last)| async move {
        loop {
            match live.recv().await {
                Ok(e) if e.id <= last => continue,
                Ok(e) => {
                    last = e.id;
                    return Some((Ok(sse(&e)), (live, last)));
                }
                Err(broadcast::error::RecvError::Lagged(n)) => return Some((Ok(missed(n)), (live, last))),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    use futures_util::StreamExt as _;
    Ok(Sse::new(backlog.chain(follow)).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

// ---- keyring and leaving ----

async fn keys_list(State(api): State<Api>) -> axum::Json<Value> {
    let keys = api.cluster.keys().await.unwrap_or_default();
    axum::Json(json!({
        "keys": keys.iter().map(|k| json!({
            "id": k.id.to_string(),
            "primary": k.primary,
            "sealed": k.sealed,
            "opened": k.opened,
        })).collect::<Vec<_>>(),
    }))
}

#[derive(Debug, Deserialize)]
struct NewKey {
    key: String,
}

fn key_id(text: &str) -> ApiResult<KeyId> {
    (text.len() == 8).then(|| u32::from_str_radix(text, 16).ok()).flatten().map(KeyId).ok_or_else(|| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("{} is not a key id (8 hex digits, as listed)", vigil_lab::millis::quoted(text)),
        )
    })
}

fn keyring_error(e: vigil_net::KeyError) -> ApiError {
    use vigil_net::{KeyError, KeyringError};
    match e {
        KeyError::Stopped => stopped(),
        KeyError::NoKeyring => {
            ApiError::new(StatusCode::CONFLICT, "this member has no keyring: start it with --key-file")
        }
        KeyError::Keyring(e @ KeyringError::Unknown(_)) => ApiError::new(StatusCode::NOT_FOUND, e.to_string()),
        KeyError::Keyring(e) => ApiError::new(StatusCode::CONFLICT, e.to_string()),
        other => ApiError::new(StatusCode::CONFLICT, other.to_string()),
    }
}

async fn keys_install(State(api): State<Api>, body: axum::body::Bytes) -> ApiResult<(StatusCode, axum::Json<Value>)> {
    let NewKey { key } = serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(StatusCode::BAD_REQUEST, format!("expected {{\"key\": \"<64 hex digits or base64>\"}}: {e}"))
    })?;
    let key = crate::keys::parse_key(key.trim()).ok_or_else(|| {
        ApiError::new(StatusCode::BAD_REQUEST, "key: not a 32-byte key (64 hex digits, or 44 characters of base64)")
    })?;
    let id = api.cluster.install_key(key).await.map_err(keyring_error)?;
    Ok((StatusCode::CREATED, axum::Json(json!({"id": id.to_string()}))))
}

async fn keys_use(State(api): State<Api>, Path(id): Path<String>) -> ApiResult<axum::Json<Value>> {
    let id = key_id(&id)?;
    api.cluster.use_key(id).await.map_err(keyring_error)?;
    Ok(axum::Json(json!({"primary": id.to_string()})))
}

async fn keys_remove(State(api): State<Api>, Path(id): Path<String>) -> ApiResult<axum::Json<Value>> {
    let id = key_id(&id)?;
    api.cluster.remove_key(id).await.map_err(keyring_error)?;
    Ok(axum::Json(json!({"removed": id.to_string()})))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutcomeIn {
    member: String,
    outcome: Value,
    #[serde(default)]
    latency_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutcomesIn {
    outcomes: Vec<OutcomeIn>,
}

/// Request outcomes from the application (a sidecar, a proxy's log), for
/// outlier detection. Every entry is checked before any is recorded.
async fn outcomes(State(api): State<Api>, body: axum::body::Bytes) -> ApiResult<axum::Json<Value>> {
    let bad = |m: String| ApiError::new(StatusCode::BAD_REQUEST, m);
    let batch: OutcomesIn = serde_json::from_slice(&body).map_err(|e| {
        bad(format!("expected {{\"outcomes\": [{{\"member\": NAME, \"outcome\": STATUS or \"timeout\", \"latency_ms\": MS}}]}}: {e}"))
    })?;
    if batch.outcomes.len() > MAX_OUTCOMES {
        return Err(bad(format!("{} outcomes in one batch, at most {MAX_OUTCOMES}", batch.outcomes.len())));
    }
    let mut parsed = Vec::with_capacity(batch.outcomes.len());
    for (i, o) in batch.outcomes.into_iter().enumerate() {
        let text = o.outcome.as_str().map_or_else(|| o.outcome.to_string(), str::to_owned);
        let outcome = vigil_lab::fleet_trace::parse_outcome(&text).ok_or_else(|| {
            bad(format!(
                "outcomes[{i}].outcome: {} is not an outcome (an HTTP status 100-599, timeout, connect-failed or connected)",
                vigil_lab::millis::quoted(&text)
            ))
        })?;
        let latency = match o.latency_ms {
            Some(ms) if ms.is_finite() && (0.0..=86_400_000.0).contains(&ms) => Some(Duration::from_secs_f64(ms / 1e3)),
            Some(ms) => {
                return Err(bad(format!(
                    "outcomes[{i}].latency_ms: {} is not a latency (0 to a day, in ms)",
                    crate::limits::number(ms)
                )));
            }
            None => None,
        };
        parsed.push(vigil_net::RequestOutcome { member: o.member, outcome, latency });
    }
    let names: Vec<String> = parsed.iter().map(|p| p.member.clone()).collect();
    let taken = api.cluster.record_outcomes(parsed).await.map_err(|_| stopped())?;
    let mut unknown: Vec<String> = names.into_iter().zip(&taken).filter(|(_, t)| !**t).map(|(n, _)| n).collect();
    unknown.sort();
    unknown.dedup();
    unknown.truncate(20);
    let unknown: Vec<String> = unknown.iter().map(|n| vigil_lab::millis::quoted(n)).collect();
    Ok(axum::Json(json!({"accepted": taken.iter().filter(|t| **t).count(), "unknown_members": unknown})))
}

async fn leave(State(api): State<Api>) -> (StatusCode, axum::Json<Value>) {
    let _ = api.leave.try_send(());
    (StatusCode::ACCEPTED, axum::Json(json!({"status": "leaving"})))
}
