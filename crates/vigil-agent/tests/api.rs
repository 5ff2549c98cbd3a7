//! The API as a `tower` service, called without a socket
//! (`tower::ServiceExt::oneshot`), against members running in this process
//! on loopback: every endpoint answers what its description names, every
//! error is typed JSON with its status, and the guards hold. What only
//! processes can show (signals, standard output, real sockets under
//! attack) is in `crates/vigil-cli/tests`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tower::ServiceExt as _;
use vigil_agent::api::body::{
    Accepted, Done, ErrorBody, Fleet, KeyInstalled, KeyUsed, Keys, Live, Member, Members, PhiHistory, Ready, SelfView,
    StatusName, Traces,
};
use vigil_agent::api::openapi::{Endpoint, document};
use vigil_agent::api::{ApiState, router};
use vigil_agent::fleet;
use vigil_agent::pipeline::Pipeline;
use vigil_agent::record::{EventRecord, What};
use vigil_agent::recorder::Recorder;
use vigil_net::{Cluster, Keyring, SealMode, Status};

/// The address the API is said to be bound to (nothing listens there: the
/// router is called directly).
const BOUND: &str = "127.0.0.1:8470";
const TOKEN: &str = "a-token-of-sixteen-or-more";

fn bound() -> SocketAddr {
    BOUND.parse().unwrap()
}

/// Two members, `a` and `b`, that know each other; `a`'s events go through
/// a pipeline into the recorder the API serves.
struct Pair {
    a: Arc<Cluster>,
    b: Cluster,
    recorder: Recorder,
    leave: mpsc::Receiver<()>,
    state: ApiState,
}

async fn pair(keys: Option<[u8; 32]>) -> Pair {
    let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut builder = Cluster::builder("a").bind(local);
    if let Some(k) = keys {
        builder = builder.keys(Keyring::new(k), SealMode::Sealed);
    }
    let mut config = vigil_net::Config::lan(vigil_net::DEFAULT_CLUSTER);
    config.recorded_arrivals = 1_000;
    builder = builder.config(config);
    let mut events = builder.events();
    let a = Arc::new(builder.start().await.unwrap());
    let mut b = Cluster::builder("b").bind(local).seeds([a.local_addr()]);
    if let Some(k) = keys {
        b = b.keys(Keyring::new(k), SealMode::Sealed);
    }
    let b = b.start().await.unwrap();
    let recorder = Recorder::new(100);
    let mut pipeline = Pipeline::new(a.clone(), recorder.clone(), BTreeSet::new());
    tokio::spawn(async move {
        while let Some(e) = events.next().await {
            pipeline.take(&e, events.missed()).await;
        }
    });
    // Until a sees b alive and has heard its heartbeats (bound 10 s).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let s = a.snapshot().await.unwrap();
        let alive = s.node.member("b").is_some_and(|m| m.status == Status::Alive);
        if alive && s.node.watch("b").is_some_and(|w| w.heartbeats >= 2) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "a and b converge");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (tx, leave) = mpsc::channel(1);
    let state = ApiState::new(a.clone(), recorder.clone())
        .token(Some(TOKEN.into()))
        .leave(tx)
        .sealed(keys.is_some(), true)
        .detector("akka", 8.0);
    Pair { a, b, recorder, leave, state }
}

/// A request to the API, named by its Host.
fn request(method: &str, path: &str) -> axum::http::request::Builder {
    Request::builder().method(method).uri(path).header(header::HOST, BOUND)
}

async fn call(state: &ApiState, req: Request<Body>) -> (StatusCode, String, Vec<u8>) {
    let res = router(state.clone(), bound()).oneshot(req).await.unwrap();
    let status = res.status();
    let kind = res.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let body = res.into_body().collect().await.unwrap().to_bytes().to_vec();
    (status, kind, body)
}

async fn get(state: &ApiState, path: &str) -> (StatusCode, String, Vec<u8>) {
    call(state, request("GET", path).body(Body::empty()).unwrap()).await
}

async fn authorized(state: &ApiState, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Vec<u8>) {
    let mut req = request(method, path).header(header::AUTHORIZATION, format!("Bearer {TOKEN}"));
    // Every POST says it is JSON (the API refuses one that does not).
    let body = match (body, method) {
        (Some(v), _) => Some(v),
        (None, "POST") => Some(json!({})),
        (None, _) => None,
    };
    let body = match body {
        Some(v) => {
            req = req.header(header::CONTENT_TYPE, "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    let (status, _, bytes) = call(state, req.body(body).unwrap()).await;
    (status, bytes)
}

fn read<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> T {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{what}: {e}: {}", String::from_utf8_lossy(bytes)))
}

fn error(bytes: &[u8]) -> String {
    read::<ErrorBody>("an error", bytes).error
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_answers_what_its_description_names() {
    let p = pair(None).await;
    let doc = document();
    // Every endpoint is described, and nothing else.
    let described: BTreeSet<&str> = doc["paths"].as_object().unwrap().keys().map(String::as_str).collect();
    let endpoints: BTreeSet<&str> = Endpoint::ALL.iter().map(|e| e.path()).collect();
    assert_eq!(described, endpoints);
    // And every one is routed: nothing answers 404 for want of a route.
    for e in Endpoint::ALL {
        let path = e.path().replace("{name}", "b").replace("{id}", "0a0b0c0d").replace("{fault}", "pause");
        for method in doc["paths"][e.path()].as_object().unwrap().keys() {
            let req = request(&method.to_uppercase(), &path)
                .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from("{}"))
                .unwrap();
            if matches!(e, Endpoint::Events | Endpoint::Monitor) {
                // A stream that does not end: its status is enough here.
                let res = router(p.state.clone(), bound()).oneshot(req).await.unwrap();
                assert_eq!(res.status(), StatusCode::OK, "{method} {path}");
                continue;
            }
            let (status, _, body) = call(&p.state, req).await;
            let routed = status != StatusCode::NOT_FOUND
                || !error(&body).starts_with("no such endpoint")
                    && matches!(e, Endpoint::Fleet | Endpoint::FleetFault | Endpoint::Trace | Endpoint::KeyUse);
            assert!(routed, "{method} {path}: {status} {}", String::from_utf8_lossy(&body));
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        }
    }

    // What each read answers reads back as the type its description names.
    let (status, _, body) = get(&p.state, "/v1/members").await;
    assert_eq!(status, StatusCode::OK);
    let members: Members = read("members", &body);
    assert_eq!(members.node, "a");
    assert_eq!(members.members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["b"]);
    let b = &members.members[0];
    assert_eq!(b.status, StatusName::Alive);
    let w = b.watched.as_ref().expect("a watches b");
    assert_eq!((w.model.as_str(), w.heard, w.policies[0].name.as_str()), ("akka", true, "probe"));
    assert!(w.phi.is_some_and(|phi| (0.0..8.0).contains(&phi)), "a healthy member's φ: {:?}", w.phi);
    let (_, _, body) = get(&p.state, "/v1/members/b").await;
    let one: Member = read("member", &body);
    assert_eq!((one.name.as_str(), one.address.clone()), ("b", p.b.advertise_addr().to_string()));
    let (_, _, body) = get(&p.state, "/v1/self").await;
    let me: SelfView = read("self", &body);
    assert_eq!((me.name.as_str(), me.members.alive, me.ready), ("a", 1, true));
    assert_eq!((me.detector.as_str(), me.suspect_level, me.event_format), ("akka", 8.0, 2));
    let (_, _, body) = get(&p.state, "/v1/health/live").await;
    assert_eq!(read::<Live>("live", &body).status, "live");
    let (status, _, body) = get(&p.state, "/v1/health/ready").await;
    assert_eq!((status, read::<Ready>("ready", &body).status.as_str()), (StatusCode::OK, "ready"));
    let (_, _, body) = get(&p.state, "/v1/traces").await;
    let traces: Traces = read("traces", &body);
    assert_eq!((traces.recorded_arrivals, traces.members[0].name.as_str()), (1_000, "b"));
    assert!(traces.members[0].arrivals >= 2);
    let (status, kind, body) = get(&p.state, "/v1/traces/b").await;
    assert_eq!((status, kind.as_str()), (StatusCode::OK, "text/csv; charset=utf-8"));
    let trace = vigil_lab::trace::Trace::parse(&String::from_utf8(body).unwrap()).unwrap();
    assert!(trace.beats.len() >= 2, "the recording reads back as a lab trace");
    let (_, _, body) = get(&p.state, "/v1/phi").await;
    assert_eq!(read::<PhiHistory>("phi", &body).interval_ms, 1_000);
    let (status, body) = authorized(&p.state, "GET", "/v1/keys", None).await;
    assert_eq!((status, read::<Keys>("keys", &body).keys.len()), (StatusCode::OK, 0));
    let (status, kind, body) = get(&p.state, "/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    assert!(String::from_utf8(body).unwrap().contains("vigil_members{status=\"alive\"} 1"));
    let (status, kind, _) = get(&p.state, "/").await;
    assert_eq!((status, kind.as_str()), (StatusCode::OK, "text/html; charset=utf-8"));
    let (_, _, body) = get(&p.state, "/v1/openapi.json").await;
    assert_eq!(&read::<Value>("openapi", &body), doc);
    p.b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_typed_json_with_their_status() {
    let p = pair(None).await;
    let cases: Vec<(Request<Body>, StatusCode, &str)> = vec![
        (
            request("GET", "/v1/nothing").body(Body::empty()).unwrap(),
            StatusCode::NOT_FOUND,
            "no such endpoint: GET '/v1/nothing'",
        ),
        (
            request("GET", "/v1/members/nobody").body(Body::empty()).unwrap(),
            StatusCode::NOT_FOUND,
            "no member named 'nobody'",
        ),
        (request("GET", "/v1/members/a").body(Body::empty()).unwrap(), StatusCode::NOT_FOUND, "'a' is this member"),
        (
            request("GET", "/v1/events?after=x").body(Body::empty()).unwrap(),
            StatusCode::BAD_REQUEST,
            "after: 'x' is not an event id",
        ),
        (
            request("GET", "/v1/traces/b?format=xml").body(Body::empty()).unwrap(),
            StatusCode::BAD_REQUEST,
            "format: 'xml'",
        ),
        (request("GET", "/v1/fleet").body(Body::empty()).unwrap(), StatusCode::NOT_FOUND, "only in `vigil cluster`"),
        (request("DELETE", "/v1/members").body(Body::empty()).unwrap(), StatusCode::METHOD_NOT_ALLOWED, ""),
        (
            request("GET", "/v1/keys").body(Body::empty()).unwrap(),
            StatusCode::UNAUTHORIZED,
            "this needs the bearer token",
        ),
        (
            request("GET", "/v1/keys")
                .header(header::AUTHORIZATION, "Bearer wrong-wrong-wrong-wrong")
                .body(Body::empty())
                .unwrap(),
            StatusCode::FORBIDDEN,
            "wrong bearer token",
        ),
        (
            Request::builder().uri("/v1/self").header(header::HOST, "evil.example:8470").body(Body::empty()).unwrap(),
            StatusCode::MISDIRECTED_REQUEST,
            "evil.example",
        ),
        (
            request("GET", "/v1/self").header(header::ORIGIN, "http://evil.example").body(Body::empty()).unwrap(),
            StatusCode::FORBIDDEN,
            "evil.example",
        ),
        (
            request("POST", "/v1/leave").header(header::CONTENT_TYPE, "text/plain").body(Body::from("x")).unwrap(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "application/json",
        ),
        (
            request("POST", "/v1/keys/zz/use")
                .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from("{}"))
                .unwrap(),
            StatusCode::BAD_REQUEST,
            "'zz': not a key id",
        ),
        (
            request("POST", "/v1/keys")
                .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(r#"{"key": "0000"}"#))
                .unwrap(),
            StatusCode::BAD_REQUEST,
            "key: not a 32-byte key",
        ),
        (
            request("POST", "/v1/keys")
                .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(r#"{"kee": "x"}"#))
                .unwrap(),
            StatusCode::BAD_REQUEST,
            "expected {\"key\"",
        ),
        (
            request("POST", "/v1/keys")
                .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(json!({"key": "A".repeat(20_000)}).to_string()))
                .unwrap(),
            StatusCode::PAYLOAD_TOO_LARGE,
            "",
        ),
        (
            request("POST", "/v1/keys")
                .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(json!({"key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}).to_string()))
                .unwrap(),
            StatusCode::CONFLICT,
            "this member has no keyring",
        ),
    ];
    for (req, status, says) in cases {
        let what = format!("{} {}", req.method(), req.uri());
        let (got, kind, body) = call(&p.state, req).await;
        assert_eq!(got, status, "{what}: {}", String::from_utf8_lossy(&body));
        assert!(kind.starts_with("application/json"), "{what}: every error is JSON, not {kind}");
        let e = error(&body);
        assert!(e.contains(says), "{what}: {e:?} does not say {says:?}");
        assert!(e.len() < 400, "{what}: an error is bounded: {e}");
    }
    p.b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_serves_records_and_resumes_after_an_id() {
    let p = pair(None).await;
    // The history holds a's events so far: b came up.
    let ups = p.recorder.history.after(0).entries;
    assert!(!ups.is_empty());
    let req = request("GET", "/v1/events").header("Last-Event-ID", "0").body(Body::empty()).unwrap();
    let res = router(p.state.clone(), bound()).oneshot(req).await.unwrap();
    assert_eq!(res.headers()[header::CONTENT_TYPE], "text/event-stream");
    let mut body = res.into_body();
    let frame = tokio::time::timeout(Duration::from_secs(5), body.frame()).await.unwrap().unwrap().unwrap();
    let text = String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap();
    let data = text.lines().find_map(|l| l.strip_prefix("data: ")).expect("an event's data");
    let record: EventRecord = read("a record", data.as_bytes());
    assert!(matches!(&record.what, What::Up { member, .. } if member == "b"), "{record:?}");
    assert!(text.lines().any(|l| l == "id: 1"), "{text}");
    // Resuming after the newest id serves nothing old; a crash of b then
    // arrives live, as a record.
    let last = p.recorder.history.last_id();
    let req = request("GET", &format!("/v1/events?after={last}")).body(Body::empty()).unwrap();
    let mut body = router(p.state.clone(), bound()).oneshot(req).await.unwrap().into_body();
    p.b.shutdown().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut kinds = Vec::new();
    while !kinds.contains(&"dead".to_owned()) {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let frame = tokio::time::timeout(left, body.frame()).await.expect("b is declared dead within 20 s");
        let data = frame.unwrap().unwrap().into_data().unwrap();
        for l in String::from_utf8(data.to_vec()).unwrap().lines() {
            if let Some(d) = l.strip_prefix("data: ") {
                let r: EventRecord = read("a record", d.as_bytes());
                kinds.push(r.kind().to_owned());
            }
        }
    }
    assert!(!kinds.contains(&"up".to_owned()), "nothing before the id resumed after: {kinds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcomes_are_checked_whole_then_eject() {
    let p = pair(None).await;
    let batch = |outcome: Value| json!({"outcomes": (0..5).map(|_| json!({"member": "b", "outcome": outcome, "latency_ms": 3.5})).collect::<Vec<_>>()});
    let bad = json!({"outcomes": [{"member": "b", "outcome": 200}, {"member": "b", "outcome": "999"}]});
    let (status, body) = authorized(&p.state, "POST", "/v1/outcomes", Some(bad)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error(&body).starts_with("outcomes[1].outcome: '999'"), "{}", error(&body));
    let slow = json!({"outcomes": [{"member": "b", "outcome": 200, "latency_ms": -1}]});
    let (status, body) = authorized(&p.state, "POST", "/v1/outcomes", Some(slow)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error(&body).contains("latency_ms: -1 is not a latency"), "{}", error(&body));
    let (_, body) = authorized(
        &p.state,
        "POST",
        "/v1/outcomes",
        Some(json!({"outcomes": [{"member": "nobody", "outcome": "timeout"}]})),
    )
    .await;
    let a: Accepted = read("accepted", &body);
    assert_eq!((a.accepted, a.unknown_members), (0, vec!["'nobody'".to_owned()]));
    let (status, body) = authorized(&p.state, "POST", "/v1/outcomes", Some(batch(json!(503)))).await;
    assert_eq!((status, read::<Accepted>("accepted", &body).accepted), (StatusCode::OK, 5));
    let (_, _, body) = get(&p.state, "/v1/members/b").await;
    let b: Member = read("member", &body);
    let o = b.outlier.expect("outlier detection's view");
    assert_eq!((o.ejected, o.reason.as_deref()), (true, Some("consecutive-5xx")));
    assert_eq!(b.status, StatusName::Alive, "ejected, not dead: its heartbeats are fine");
    p.b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_rotate_and_leaving_is_asked_of_the_owner() {
    let mut p = pair(Some([7; 32])).await;
    let (_, body) = authorized(&p.state, "GET", "/v1/keys", None).await;
    let keys: Keys = read("keys", &body);
    assert_eq!((keys.keys.len(), keys.keys[0].primary), (1, true));
    let old = keys.keys[0].id.clone();
    let new_key = vigil_net::Key([9; 32]).to_string();
    let (status, body) = authorized(&p.state, "POST", "/v1/keys", Some(json!({"key": new_key}))).await;
    assert_eq!(status, StatusCode::CREATED);
    let new = read::<KeyInstalled>("installed", &body).id;
    let (status, body) = authorized(&p.state, "DELETE", &format!("/v1/keys/{new}"), None).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let (status, _) = authorized(&p.state, "POST", "/v1/keys", Some(json!({"key": new_key}))).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, body) = authorized(&p.state, "POST", &format!("/v1/keys/{new}/use"), None).await;
    assert_eq!((status, read::<KeyUsed>("used", &body).primary), (StatusCode::OK, new.clone()));
    let (status, body) = authorized(&p.state, "DELETE", &format!("/v1/keys/{new}"), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "the primary cannot go: {}", error(&body));
    let (status, body) = authorized(&p.state, "DELETE", "/v1/keys/0badc0de", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{}", error(&body));
    assert!(error(&body).contains("0badc0de"));
    let (status, _) = authorized(&p.state, "DELETE", &format!("/v1/keys/{old}"), None).await;
    assert_eq!(status, StatusCode::OK);
    // Leaving: the owner is asked, once.
    let (status, _) = authorized(&p.state, "POST", "/v1/leave", None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(p.leave.try_recv(), Ok(()));
    // A stopped member answers 503, as JSON.
    p.a.shutdown().await;
    let (status, _, body) = get(&p.state, "/v1/self").await;
    assert_eq!((status, error(&body).as_str()), (StatusCode::SERVICE_UNAVAILABLE, "the member has stopped"));
    p.b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_go_to_the_fleet_and_never_to_its_observer() {
    let f = Arc::new(fleet::Fleet::start(3, vigil_net::Config::lan(vigil_net::DEFAULT_CLUSTER)).await.unwrap());
    let observer = f.observer().unwrap();
    let state = ApiState::new(observer, Recorder::new(10)).fleet(f.clone());
    let (_, _, body) = get(&state, "/v1/fleet").await;
    let list: Fleet = read("fleet", &body);
    assert_eq!(
        list.members.iter().map(|m| (m.name.as_str(), m.observer)).collect::<Vec<_>>(),
        [("n1", true), ("n2", false), ("n3", false)]
    );
    // No token is set and the API is said to be on loopback: changes pass.
    let inject = |path: &str| {
        request("POST", path).header(header::CONTENT_TYPE, "application/json").body(Body::from("{}")).unwrap()
    };
    let (status, _, body) = call(&state, inject("/v1/fleet/n3/partition")).await;
    assert_eq!(
        (status, read::<Done>("done", &body).done.as_str()),
        (StatusCode::OK, "n3 cut off from every other member")
    );
    let (status, _, body) = call(&state, inject("/v1/fleet/n1/crash")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{}", error(&body));
    let (status, _, body) = call(&state, inject("/v1/fleet/n2/dance")).await;
    assert_eq!(
        (status, error(&body).as_str()),
        (StatusCode::BAD_REQUEST, "'dance' is not a fault (crash, restart, pause, partition, heal)")
    );
    let (status, _, body) = call(&state, inject("/v1/fleet/n2/pause?seconds=61")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{}", error(&body));
    let (status, _, _) = call(&state, inject("/v1/fleet/n9/heal")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, _, body) = get(&state, "/v1/fleet").await;
    let list: Fleet = read("fleet", &body);
    assert!(list.members[2].partitioned && !list.members[1].partitioned);
    f.shutdown().await;
}
