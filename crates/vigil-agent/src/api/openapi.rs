//! The API's description (OpenAPI 3.1), generated: the paths from the
//! table of endpoints below, the schemas from the body types
//! ([`super::body`], [`crate::record`]) by `schemars`. Nothing is kept by
//! hand beside the types.
//!
//! Adding an endpoint is a variant of [`Endpoint`]: the compiler then asks
//! for its path and its description (both matches are exhaustive), the
//! router routes it by [`Endpoint::path`], and the tests call every
//! endpoint in [`Endpoint::ALL`] and check that what it answers reads back
//! as the type its description names.
//!
//! ```
//! use vigil_agent::api::openapi::{Endpoint, document};
//!
//! let doc = document();
//! assert_eq!(doc["openapi"], "3.1.0");
//! assert!(doc["paths"][Endpoint::Members.path()]["get"].is_object());
//! assert!(doc["components"]["schemas"]["Members"].is_object());
//! ```

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

use super::body;
use crate::record::{EventRecord, FORMAT_VERSION};

/// Every endpoint of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Endpoint {
    /// `GET /`: the dashboard.
    Dashboard,
    /// `GET /v1/self`.
    SelfView,
    /// `GET /v1/members`.
    Members,
    /// `GET /v1/members/{name}`.
    Member,
    /// `GET /v1/events`.
    Events,
    /// `GET /v1/monitor`.
    Monitor,
    /// `GET /v1/health/live`.
    Live,
    /// `GET /v1/health/ready`.
    Ready,
    /// `GET /v1/traces`.
    Traces,
    /// `GET /v1/traces/{name}`.
    Trace,
    /// `GET /v1/phi`.
    Phi,
    /// `GET`, `POST /v1/keys`.
    Keys,
    /// `POST /v1/keys/{id}/use`.
    KeyUse,
    /// `DELETE /v1/keys/{id}`.
    KeyRemove,
    /// `POST /v1/leave`.
    Leave,
    /// `POST /v1/join`.
    Join,
    /// `PATCH /v1/self/tags`.
    SelfTags,
    /// `POST /v1/force-leave`.
    ForceLeave,
    /// `POST /v1/cluster/keys`.
    ClusterKeys,
    /// `POST /v1/policies`.
    Policies,
    /// `POST /v1/outcomes`.
    Outcomes,
    /// `GET /v1/fleet`.
    Fleet,
    /// `POST /v1/fleet/{name}/{fault}`.
    FleetFault,
    /// `GET /v1/openapi.json`.
    OpenApi,
    /// `GET /metrics`.
    Metrics,
    /// `GET /lab`.
    Lab,
    /// `GET /v1/lab/cases`.
    LabCases,
    /// `GET /v1/lab/run`.
    LabRun,
}

/// What an operation answers with.
#[derive(Clone, Copy)]
enum Content {
    /// JSON of this type.
    Json(fn(&mut SchemaGenerator) -> Schema),
    /// JSON described only as an object (the lab's shapes are the lab's).
    AnyJson,
    /// Another media type.
    Text(&'static str),
    /// Server-sent events whose data are event records.
    Events,
    /// Server-sent events whose data are log lines.
    LogLines,
}

fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// One operation of an endpoint.
struct Operation {
    method: &'static str,
    summary: &'static str,
    /// Behind the bearer token.
    guarded: bool,
    /// Query parameters: name, description.
    query: &'static [(&'static str, &'static str)],
    request: Option<fn(&mut SchemaGenerator) -> Schema>,
    /// Status, description, content.
    responses: Vec<(u16, &'static str, Content)>,
}

fn get(summary: &'static str, ok: Content) -> Operation {
    Operation { method: "get", summary, guarded: false, query: &[], request: None, responses: vec![(200, "OK", ok)] }
}

fn change(method: &'static str, summary: &'static str, status: u16, ok: Content) -> Operation {
    Operation { method, summary, guarded: true, query: &[], request: None, responses: vec![(status, "Done", ok)] }
}

impl Endpoint {
    /// Every endpoint.
    pub const ALL: [Endpoint; 28] = [
        Endpoint::Dashboard,
        Endpoint::SelfView,
        Endpoint::Members,
        Endpoint::Member,
        Endpoint::Events,
        Endpoint::Monitor,
        Endpoint::Live,
        Endpoint::Ready,
        Endpoint::Traces,
        Endpoint::Trace,
        Endpoint::Phi,
        Endpoint::Keys,
        Endpoint::KeyUse,
        Endpoint::KeyRemove,
        Endpoint::Leave,
        Endpoint::Join,
        Endpoint::SelfTags,
        Endpoint::ForceLeave,
        Endpoint::ClusterKeys,
        Endpoint::Policies,
        Endpoint::Outcomes,
        Endpoint::Fleet,
        Endpoint::FleetFault,
        Endpoint::OpenApi,
        Endpoint::Metrics,
        Endpoint::Lab,
        Endpoint::LabCases,
        Endpoint::LabRun,
    ];

    /// Its path, as the router takes it (`{name}` a path parameter).
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Dashboard => "/",
            Endpoint::SelfView => "/v1/self",
            Endpoint::Members => "/v1/members",
            Endpoint::Member => "/v1/members/{name}",
            Endpoint::Events => "/v1/events",
            Endpoint::Monitor => "/v1/monitor",
            Endpoint::Live => "/v1/health/live",
            Endpoint::Ready => "/v1/health/ready",
            Endpoint::Traces => "/v1/traces",
            Endpoint::Trace => "/v1/traces/{name}",
            Endpoint::Phi => "/v1/phi",
            Endpoint::Keys => "/v1/keys",
            Endpoint::KeyUse => "/v1/keys/{id}/use",
            Endpoint::KeyRemove => "/v1/keys/{id}",
            Endpoint::Leave => "/v1/leave",
            Endpoint::Join => "/v1/join",
            Endpoint::SelfTags => "/v1/self/tags",
            Endpoint::ForceLeave => "/v1/force-leave",
            Endpoint::ClusterKeys => "/v1/cluster/keys",
            Endpoint::Policies => "/v1/policies",
            Endpoint::Outcomes => "/v1/outcomes",
            Endpoint::Fleet => "/v1/fleet",
            Endpoint::FleetFault => "/v1/fleet/{name}/{fault}",
            Endpoint::OpenApi => "/v1/openapi.json",
            Endpoint::Metrics => "/metrics",
            Endpoint::Lab => "/lab",
            Endpoint::LabCases => "/v1/lab/cases",
            Endpoint::LabRun => "/v1/lab/run",
        }
    }

    fn operations(self) -> Vec<Operation> {
        use Content::{AnyJson, Events, Json, LogLines, Text};
        match self {
            Endpoint::Dashboard => vec![get("The dashboard: one page, no external assets", Text("text/html"))],
            Endpoint::SelfView => vec![get(
                "This member: identity, local health, queues, readiness, the detector it runs",
                Json(schema::<body::SelfView>),
            )],
            Endpoint::Members => vec![get(
                "Every member this one knows, tombstones included, with the detector state of those it watches",
                Json(schema::<body::Members>),
            )],
            Endpoint::Member => vec![Operation {
                responses: vec![(200, "The member", Json(schema::<body::Member>)), (404, "No such member", error())],
                ..get("One member", Json(schema::<body::Member>))
            }],
            Endpoint::Events => vec![Operation {
                query: &[("after", "Resume after this event id (as Last-Event-ID does), or `now` for new events only")],
                ..get(
                    "Server-sent events, each an event record with its id; a `missed` event says how many are gone",
                    Events,
                )
            }],
            Endpoint::Monitor => vec![Operation {
                guarded: true,
                query: &[(
                    "level",
                    "`error`, `warn`, `info` (the default), `debug` or `trace`, whatever the agent's own --log-level",
                )],
                responses: vec![
                    (
                        200,
                        "The agent's log from now on, a line an event; a `missed` event counts lines lost by a slow reader",
                        LogLines,
                    ),
                    (400, "Not a level", error()),
                ],
                ..get("The agent's log as it is written", LogLines)
            }],
            Endpoint::Live => vec![get("Liveness", Json(schema::<body::Live>))],
            Endpoint::Ready => vec![Operation {
                query: &[(
                    "converged",
                    "`true`: ready only once the view has converged too (nobody suspected, every watched member heard); \
                     default `false`, joined only, so that one slow member does not make every replica unready at once",
                )],
                responses: vec![
                    (200, "Ready: joined (and converged, if asked)", Json(schema::<body::Ready>)),
                    (503, "Not ready, with the reasons", Json(schema::<body::Ready>)),
                ],
                ..get("Readiness", Json(schema::<body::Ready>))
            }],
            Endpoint::Traces => {
                vec![get("The recorded heartbeat arrivals of watched members", Json(schema::<body::Traces>))]
            }
            Endpoint::Trace => vec![Operation {
                query: &[("format", "`csv` (default) or `jsonl`")],
                ..get("One watched member's arrivals as a lab trace", Text("text/csv"))
            }],
            Endpoint::Phi => {
                vec![get("φ of each watched member, once a second for two minutes", Json(schema::<body::PhiHistory>))]
            }
            Endpoint::Keys => vec![
                Operation { guarded: true, ..get("The keys, by id", Json(schema::<body::Keys>)) },
                Operation {
                    request: Some(schema::<body::NewKey>),
                    ..change("post", "Install a key", 201, Json(schema::<body::KeyInstalled>))
                },
            ],
            Endpoint::KeyUse => {
                vec![change("post", "Seal with this key from now on", 200, Json(schema::<body::KeyUsed>))]
            }
            Endpoint::KeyRemove => {
                vec![change("delete", "Remove a key (not the primary)", 200, Json(schema::<body::KeyRemoved>))]
            }
            Endpoint::Leave => vec![change("post", "Leave the cluster and stop", 202, Json(schema::<body::Leaving>))],
            Endpoint::Join => vec![Operation {
                request: Some(schema::<body::JoinRequest>),
                ..change(
                    "post",
                    "Join through more seeds now; says, seed by seed, which members answered within 5 s",
                    200,
                    Json(schema::<body::Joined>),
                )
            }],
            Endpoint::Policies => vec![Operation {
                request: Some(schema::<body::PolicyTune>),
                responses: vec![
                    (200, "Retuned", Json(schema::<body::PolicyTune>)),
                    (400, "Not a policy", error()),
                    (409, "No such policy, or a change that needs a restart", error()),
                ],
                ..change(
                    "post",
                    "Retune a graded policy (threshold, dwell, rearm, recovery) without a restart; watched members \
                     are judged again as if it had always been so",
                    200,
                    Json(schema::<body::PolicyTune>),
                )
            }],
            Endpoint::ClusterKeys => vec![Operation {
                request: Some(schema::<body::ClusterKeyOp>),
                ..change(
                    "post",
                    "A key operation (list, install, use, remove) on every member at once, over sealed frames; \
                     each member's keys after it, or why not (refused, or no answer within 5 s)",
                    200,
                    Json(schema::<body::ClusterKeys>),
                )
            }],
            Endpoint::ForceLeave => vec![Operation {
                request: Some(schema::<body::ForceLeave>),
                responses: vec![
                    (200, "Forced out", Json(schema::<body::ForcedOut>)),
                    (404, "No such member", error()),
                    (409, "The member is alive or suspected", error()),
                ],
                ..change(
                    "post",
                    "Force a member believed dead out of the cluster (left everywhere, no more reconnects)",
                    200,
                    Json(schema::<body::ForcedOut>),
                )
            }],
            Endpoint::SelfTags => vec![Operation {
                request: Some(schema::<body::TagChange>),
                ..change(
                    "patch",
                    "Set and delete this member's tags, announced to the cluster (the next SIGHUP applies the file's)",
                    200,
                    Json(schema::<body::TagsNow>),
                )
            }],
            Endpoint::Outcomes => vec![Operation {
                request: Some(schema::<body::OutcomesIn>),
                ..change(
                    "post",
                    "Outcomes of the application's requests to members, for outlier detection",
                    200,
                    Json(schema::<body::Accepted>),
                )
            }],
            Endpoint::Fleet => vec![get("`vigil cluster`'s members (404 in an agent)", Json(schema::<body::Fleet>))],
            Endpoint::FleetFault => vec![Operation {
                query: &[("seconds", "A pause's length, more than 0 and at most 60 (default 5)")],
                ..change(
                    "post",
                    "Inject a fault into a member of `vigil cluster`: crash, restart, pause, partition, heal",
                    200,
                    Json(schema::<body::Done>),
                )
            }],
            Endpoint::OpenApi => vec![get("This description", AnyJson)],
            Endpoint::Metrics => vec![get("OpenMetrics", Text("application/openmetrics-text"))],
            Endpoint::Lab => vec![get("Seed 002's lab in the browser", Text("text/html"))],
            Endpoint::LabCases => vec![get("The lab's four audit cases", AnyJson)],
            Endpoint::LabRun => vec![get("The lab recomputed for the controls given in the query", AnyJson)],
        }
    }
}

fn error() -> Content {
    Content::Json(schema::<body::ErrorBody>)
}

/// What every request can be refused with, whatever the endpoint.
const REFUSALS: [(u16, &str); 4] = [
    (403, "A page of another origin, or a change without the right to it"),
    (415, "A body that is not application/json"),
    (421, "A Host that does not name this API"),
    (503, "The member has stopped, or every connection is busy"),
];

fn content(c: Content, g: &mut SchemaGenerator) -> Value {
    match c {
        Content::Json(f) => json!({"application/json": {"schema": f(g)}}),
        Content::AnyJson => json!({"application/json": {"schema": {"type": "object"}}}),
        Content::Text(media) => json!({ media: {"schema": {"type": "string"}} }),
        Content::Events => {
            let record = g.subschema_for::<EventRecord>();
            json!({"text/event-stream": {"schema": {"type": "string"}, "x-data": record}})
        }
        Content::LogLines => {
            let line = g.subschema_for::<crate::log_stream::LogLine>();
            json!({"text/event-stream": {"schema": {"type": "string"}, "x-data": line}})
        }
    }
}

fn path_parameters(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect()
}

fn build() -> Value {
    let mut g =
        SchemaSettings::draft2020_12().with(|s| s.definitions_path = "#/components/schemas/".into()).into_generator();
    let mut paths = Map::new();
    for e in Endpoint::ALL {
        let mut item = Map::new();
        for op in e.operations() {
            let mut responses = Map::new();
            for (status, description, c) in &op.responses {
                responses
                    .insert(status.to_string(), json!({"description": description, "content": content(*c, &mut g)}));
            }
            if op.guarded {
                responses.insert("401".into(), json!({"$ref": "#/components/responses/Error"}));
            }
            for (status, _) in REFUSALS {
                responses.entry(status.to_string()).or_insert_with(|| json!({"$ref": "#/components/responses/Error"}));
            }
            let mut parameters = path_parameters(e.path());
            parameters.extend(op.query.iter().map(|(name, description)| {
                json!({"name": name, "in": "query", "required": false, "description": description, "schema": {"type": "string"}})
            }));
            let mut o = json!({"summary": op.summary, "responses": responses});
            if !parameters.is_empty() {
                o["parameters"] = Value::Array(parameters);
            }
            if let Some(request) = op.request {
                o["requestBody"] =
                    json!({"required": true, "content": {"application/json": {"schema": request(&mut g)}}});
            }
            if op.guarded {
                o["security"] = json!([{"bearer": []}]);
            }
            item.insert(op.method.to_owned(), o);
        }
        paths.insert(e.path().to_owned(), Value::Object(item));
    }
    let error = g.subschema_for::<body::ErrorBody>();
    let schemas = g.take_definitions(true);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "vigil agent API",
            "version": "1",
            "x-event-format": FORMAT_VERSION,
            "description": "The HTTP API of `vigil agent` (and `vigil cluster`), generated from the types that \
                answer it. Reads are open. Changes (keyring, leave, outcomes, faults) need `Authorization: Bearer \
                <token>` (the scheme in any case) when the agent has a token (`--http-token-file`); without one \
                they are allowed only on a loopback address. Whatever the token, every request must name the API \
                in its `Host` (an address it listens on, `localhost:PORT` on loopback, or a name given with \
                `--http-host`; 421 otherwise), a request with an `Origin` must come from the API's own pages (403 \
                otherwise), and every POST, and every request with a body, must be `Content-Type: \
                application/json` (415 otherwise). When every connection is busy, a newcomer is served \
                `/v1/health/*` only (503 with `Retry-After` otherwise). Every error is JSON: {\"error\": \"...\"}. \
                The data of `/v1/events` are event records (`x-data`), the objects the agent prints on standard \
                output."
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": {"Error": {"description": "An error", "content": {"application/json": {"schema": error}}}},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}
        }
    })
}

/// The description, built once.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(build)
}

pub(super) async fn serve() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], axum::Json(document()))
}
