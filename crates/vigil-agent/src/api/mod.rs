//! The agent's HTTP surface: the JSON API under `/v1`, OpenMetrics at
//! `/metrics`, and the dashboard at `/`.
//!
//! Reads are open; what changes the member (keyring operations, leaving,
//! outcomes, and in `vigil cluster` the injected faults) needs the bearer
//! token when one is set, and is refused without one unless the server
//! listens on a loopback address only. Whatever the token, a web page can
//! neither change anything nor read anything ([`origin`]), and no idle or
//! slow client can keep the others out ([`listener`]). Every error is JSON:
//! `{"error": "..."}` ([`ApiError`]).
//!
//! Bodies are types ([`body`]); the OpenAPI description is generated from
//! them and from the table of endpoints ([`openapi::Endpoint`]). [`router`]
//! is the whole API as a `tower` service, which tests call without a
//! socket; [`serve`] puts it on a listener.
//!
//! ```no_run
//! use std::sync::Arc;
//! use vigil_agent::api::{ApiState, serve};
//! use vigil_agent::recorder::Recorder;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let member = Arc::new(vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?);
//! let state = ApiState::new(member, Recorder::new(1_000));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8470").await?;
//! serve(listener, state)?;
//! # Ok(())
//! # }
//! ```

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, patch, post};
use tokio::sync::mpsc;
use vigil_net::Cluster;

pub mod body;
mod error;
mod events;
mod fleet;
pub mod join;
mod keys;
pub mod lab;
pub mod listener;
mod monitor;
pub mod openapi;
pub mod origin;
mod outcomes;
mod read;
mod tags;
mod traces;

pub use error::ApiError;
use openapi::Endpoint;
use origin::{Host, Hosts};

use crate::defaults::{MAX_BODY, MAX_OUTCOMES_BODY};
use crate::fleet::Fleet;
use crate::recorder::Recorder;

/// What the handlers share: the member, what the agent recorded of it, and
/// how the API is guarded.
#[derive(Clone)]
pub struct ApiState {
    member: Arc<Cluster>,
    recorder: Recorder,
    token: Option<Arc<str>>,
    leave: Option<mpsc::Sender<()>>,
    sealed: bool,
    expects_peers: bool,
    fleet: Option<Arc<Fleet>>,
    hosts: Vec<Host>,
    detector: String,
    suspect_level: f64,
}

impl std::fmt::Debug for ApiState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiState").field("member", &self.member.id()).finish_non_exhaustive()
    }
}

impl ApiState {
    /// The API of `member`, serving what `recorder` keeps: no token, no way
    /// to leave, plaintext, no seeds expected, no fleet.
    pub fn new(member: Arc<Cluster>, recorder: Recorder) -> ApiState {
        ApiState {
            member,
            recorder,
            token: None,
            leave: None,
            sealed: false,
            expects_peers: false,
            fleet: None,
            hosts: Vec::new(),
            detector: String::new(),
            suspect_level: 0.0,
        }
    }

    /// Changes need this bearer token.
    pub fn token(mut self, token: Option<String>) -> ApiState {
        self.token = token.map(Into::into);
        self
    }

    /// `POST /v1/leave` asks the owner to leave through this channel.
    pub fn leave(mut self, leave: mpsc::Sender<()>) -> ApiState {
        self.leave = Some(leave);
        self
    }

    /// Whether packets are sealed, and whether the member was given seeds
    /// (readiness then needs a live member).
    pub fn sealed(mut self, sealed: bool, expects_peers: bool) -> ApiState {
        self.sealed = sealed;
        self.expects_peers = expects_peers;
        self
    }

    /// `vigil cluster`'s members, for injecting faults.
    pub fn fleet(mut self, fleet: Arc<Fleet>) -> ApiState {
        self.fleet = Some(fleet);
        self
    }

    /// Names the API may be reached by besides its own addresses.
    pub fn hosts(mut self, hosts: Vec<Host>) -> ApiState {
        self.hosts = hosts;
        self
    }

    /// The detector the protocol runs, as a spec, and its suspect level,
    /// for `/v1/self`.
    pub fn detector(mut self, spec: impl Into<String>, suspect_level: f64) -> ApiState {
        self.detector = spec.into();
        self.suspect_level = suspect_level;
        self
    }

    /// The member served.
    pub fn member(&self) -> &Arc<Cluster> {
        &self.member
    }

    /// What the agent recorded of it.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }
}

/// The whole API for a server bound to `bound`: every route, the guards,
/// and JSON for every error. A `tower` service: tests call it with
/// `tower::ServiceExt::oneshot`, without a socket.
pub fn router(state: ApiState, bound: SocketAddr) -> Router {
    let hosts = Arc::new(Hosts::new(bound, state.hosts.clone()));
    let loopback = bound.ip().is_loopback();
    let guarded = Router::new()
        .route(Endpoint::Keys.path(), get(keys::list).post(keys::install))
        // The log, at a level the follower chooses (trace costs the agent
        // CPU, and shows more than the API's reads): guarded as the keys are.
        .route(Endpoint::Monitor.path(), get(monitor::follow))
        .route(Endpoint::KeyUse.path(), post(keys::use_key))
        .route(Endpoint::KeyRemove.path(), delete(keys::remove))
        .route(Endpoint::Leave.path(), post(leave))
        .route(Endpoint::Join.path(), post(join::join))
        .route(Endpoint::ClusterKeys.path(), post(keys::everywhere))
        .route(Endpoint::Policies.path(), post(retune))
        .route(Endpoint::ForceLeave.path(), post(force_leave))
        .route(Endpoint::SelfTags.path(), patch(tags::change))
        .route(
            Endpoint::Outcomes.path(),
            post(outcomes::record).layer(axum::extract::DefaultBodyLimit::max(MAX_OUTCOMES_BODY)),
        )
        .route(Endpoint::FleetFault.path(), post(fleet::inject))
        .route_layer(middleware::from_fn_with_state((state.clone(), loopback), authorize));
    Router::new()
        .route(Endpoint::Dashboard.path(), get(read::dashboard))
        .route(Endpoint::SelfView.path(), get(read::self_view))
        .route(Endpoint::Members.path(), get(read::members))
        .route(Endpoint::Member.path(), get(read::member))
        .route(Endpoint::Events.path(), get(events::follow))
        .route(Endpoint::Live.path(), get(read::live))
        .route(Endpoint::Ready.path(), get(read::ready))
        .route(Endpoint::Traces.path(), get(traces::list))
        .route(Endpoint::Trace.path(), get(traces::one))
        .route(Endpoint::Fleet.path(), get(fleet::list))
        .route(Endpoint::Phi.path(), get(read::phi_history))
        .route(Endpoint::OpenApi.path(), get(openapi::serve))
        .route(Endpoint::Metrics.path(), get(read::metrics))
        .merge(guarded)
        .merge(lab::routes())
        .fallback(not_found)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(hosts, origin::same_origin))
        .layer(middleware::map_response(json_errors))
        .with_state(state)
}

/// An HTTP listener that cannot serve.
#[derive(Debug)]
pub struct ServeError(std::io::Error);

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the HTTP listener has no address: {}", self.0)
    }
}

impl std::error::Error for ServeError {}

/// Serves `state` on `listener`, and samples its member once a second for
/// the metrics and the charts, in the background until the process ends.
/// Says in the log when the API can be reached from other hosts without a
/// token.
///
/// # Errors
///
/// The listener has no address.
pub fn serve(listener: tokio::net::TcpListener, state: ApiState) -> Result<SocketAddr, ServeError> {
    let bound = listener.local_addr().map_err(ServeError)?;
    if !bound.ip().is_loopback() && state.token.is_none() {
        tracing::warn!(
            "the HTTP API on {bound} can be reached from other hosts and has no token: anyone who reaches it \
             reads the cluster's state (changes are refused); give --http-token-file, or listen on 127.0.0.1"
        );
    }
    tokio::spawn(state.recorder.clone().sample(state.member.clone()));
    tokio::spawn(listener::serve(listener, router(state, bound)));
    Ok(bound)
}

/// Every error as JSON: what axum answers by itself (a method not allowed,
/// a body too large for a layer) is plain text, and is wrapped here.
pub(crate) async fn json_errors(res: Response) -> Response {
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
    for (k, v) in parts.headers.iter().filter(|(k, _)| *k == header::ALLOW || *k == header::RETRY_AFTER) {
        out.headers_mut().insert(k, v.clone());
    }
    out
}

async fn not_found(req: Request) -> ApiError {
    ApiError::NotFound(format!(
        "no such endpoint: {} {} (see /v1/openapi.json)",
        req.method(),
        vigil_lab::millis::quoted(req.uri().path())
    ))
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

async fn authorize(
    State((state, loopback)): State<(ApiState, bool)>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    match &state.token {
        Some(token) => {
            let given = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer);
            match given {
                Some(g) if same(g.as_bytes(), token.as_bytes()) => Ok(next.run(req).await),
                Some(_) => Err(ApiError::Forbidden("wrong bearer token".into())),
                None => Err(ApiError::Unauthorized),
            }
        }
        None if loopback => Ok(next.run(req).await),
        None => Err(ApiError::Forbidden(
            "changes over a non-loopback address need a token: start the agent with --http-token-file".into(),
        )),
    }
}

async fn leave(State(state): State<ApiState>) -> Result<(axum::http::StatusCode, axum::Json<body::Leaving>), ApiError> {
    let leave =
        state.leave.as_ref().ok_or_else(|| ApiError::Conflict("this member cannot be asked to leave".into()))?;
    let _ = leave.try_send(());
    Ok((axum::http::StatusCode::ACCEPTED, axum::Json(body::Leaving { status: "leaving".into() })))
}

async fn force_leave(
    State(state): State<ApiState>,
    body: Result<axum::Json<body::ForceLeave>, axum::extract::rejection::JsonRejection>,
) -> Result<axum::Json<body::ForcedOut>, ApiError> {
    let axum::Json(body::ForceLeave { member, prune }) =
        body.map_err(|e| ApiError::body("{\"member\": NAME, \"prune\": false}", e))?;
    match state.member.force_leave(&member, prune).await? {
        Ok(()) => {
            let status = if prune { "pruned" } else { "left" };
            Ok(axum::Json(body::ForcedOut { member, status: status.into() }))
        }
        Err(e @ vigil_net::ForceLeaveError::Unknown(_)) => Err(ApiError::NotFound(e.to_string())),
        Err(e) => Err(ApiError::Conflict(e.to_string())),
    }
}

/// `POST /v1/policies`: retune a graded policy without a restart.
async fn retune(
    State(state): State<ApiState>,
    body: Result<axum::Json<body::PolicyTune>, axum::extract::rejection::JsonRejection>,
) -> Result<axum::Json<body::PolicyTune>, ApiError> {
    let axum::Json(body::PolicyTune { policy }) =
        body.map_err(|e| ApiError::body("{\"policy\": \"NAME=THRESHOLD[,dwell=D][,rearm=L][,recovery=N]\"}", e))?;
    let parsed: vigil_detector::health::HealthPolicy = policy
        .parse()
        .map_err(|e| ApiError::BadRequest(format!("policy {}: {e}", vigil_lab::millis::quoted(&policy))))?;
    match state.member.retune_policy(parsed.clone()).await? {
        Ok(()) => {
            tracing::info!("policy retuned: {parsed}");
            Ok(axum::Json(body::PolicyTune { policy: parsed.to_string() }))
        }
        Err(e) => Err(ApiError::Conflict(e.to_string())),
    }
}
