//! An axum service that calls its peers through the layer and balancer:
//! every instance serves `GET /work` and `GET /ask`, which asks one of the
//! *other* instances for `/work`, chosen by the guarded p2c balancer over
//! the members tagged `service=billing`, held back while vigil judges them
//! out of rotation.
//!
//! One instance per process, on a real network:
//!
//! ```text
//! cargo run -p vigil-tower --example axum_peers -- billing-1 127.0.0.1:8081 127.0.0.1:7947
//! cargo run -p vigil-tower --example axum_peers -- billing-2 127.0.0.1:8082 127.0.0.1:7948 127.0.0.1:7947
//! curl http://127.0.0.1:8082/ask
//! ```
//!
//! (name, HTTP address, gossip address, then seeds). With no arguments it
//! starts three instances in this process, asks through one of them,
//! stops another as a crash would, and shows that no request goes to it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tower::buffer::Buffer;
use tower::util::BoxService;
use tower::{Layer, Service, ServiceExt};
use vigil_net::{Cluster, Config, DEFAULT_CLUSTER, Tags};
use vigil_tower::discover::Member;
use vigil_tower::{BoxError, ClusterHealth, HealthLayer, MemberDiscover, Source, balance};

type Request = http::Request<Empty<Bytes>>;
type Response = http::Response<hyper::body::Incoming>;
type Peers = Buffer<Request, std::pin::Pin<Box<dyn Future<Output = Result<Response, BoxError>> + Send>>>;

struct Instance {
    name: String,
    peers: Peers,
    health: Arc<ClusterHealth>,
    cluster: Arc<Cluster>,
    server: tokio::task::JoinHandle<()>,
}

/// Starts one instance: its member, its peers' balancer, its HTTP service.
async fn start(name: &str, http: SocketAddr, gossip: SocketAddr, seeds: Vec<SocketAddr>) -> Result<Instance, BoxError> {
    let listener = tokio::net::TcpListener::bind(http).await?;
    let port = listener.local_addr()?.port();

    // 1. A vigil member, tagged with the service and the port it serves on,
    //    judging the members it routes to by `route=2,ejection`.
    let mut config = Config::lan(DEFAULT_CLUSTER);
    config.policies = vec!["route=2,ejection".parse()?];
    let tags = Tags::new([("service", "billing".to_owned()), ("port", port.to_string())])?;
    let cluster = Arc::new(Cluster::builder(name).bind(gossip).seeds(seeds).tags(tags).config(config).start().await?);

    // 2. The five lines: source, layer, discovery, balancer.
    let health = ClusterHealth::new(cluster.clone(), "route");
    let layer = HealthLayer::new(health.clone());
    let client = Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let discover = MemberDiscover::new(cluster.clone(), "service=billing".parse()?, move |m: &Member| {
        layer.endpoint(&m.name).layer(to_member(client.clone(), m))
    });
    let balancer = balance(discover, health.clone(), vigil_tower::AllOut::default());
    let peers = Buffer::new(BoxService::new(balancer), 64);

    let app = axum::Router::new()
        .route("/work", get(|State(name): State<Arc<str>>| async move { format!("{name} did the work\n") }))
        .route("/ask", get(ask))
        .with_state(AppState { name: Arc::from(name), peers: peers.clone() });
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app.into_make_service()).await;
    });
    Ok(Instance { name: name.to_owned(), peers, health, cluster, server })
}

/// A client to one member's HTTP service: the request's path, at its address.
fn to_member(client: Client<HttpConnector, Empty<Bytes>>, m: &Member) -> BoxService<Request, Response, BoxError> {
    let base = m.uri();
    let svc = tower::service_fn(move |mut req: Request| {
        let path = req.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
        *req.uri_mut() = format!("{base}{path}").parse().expect("a member's address and a path");
        client.request(req)
    });
    BoxService::new(tower::ServiceBuilder::new().timeout(Duration::from_secs(2)).service(svc))
}

#[derive(Clone)]
struct AppState {
    name: Arc<str>,
    peers: Peers,
}

impl axum::extract::FromRef<AppState> for Arc<str> {
    fn from_ref(s: &AppState) -> Arc<str> {
        s.name.clone()
    }
}

/// Asks a peer (possibly itself: it is a member of the service too).
async fn ask(State(state): State<AppState>) -> Result<String, (http::StatusCode, String)> {
    let fail = |e: BoxError| (http::StatusCode::BAD_GATEWAY, format!("{}: {e}\n", state.name));
    let req = http::Request::get("/work").body(Empty::new()).expect("a request");
    let res = state.peers.clone().ready().await.map_err(fail)?.call(req).await.map_err(fail)?;
    let body = res.into_body().collect().await.map_err(|e| fail(e.into()))?.to_bytes();
    Ok(format!("{} asked: {}", state.name, String::from_utf8_lossy(&body)))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [name, http, gossip, seeds @ ..] = args.as_slice() {
        let parse = |what: &str, s: &str| s.parse::<SocketAddr>().map_err(|e| format!("{what} {s:?}: {e}"));
        let seeds = seeds.iter().map(|s| parse("seed", s)).collect::<Result<Vec<_>, _>>()?;
        let i = start(name, parse("HTTP address", http)?, parse("gossip address", gossip)?, seeds).await?;
        println!("{} serving; ask it at /ask", i.name);
        tokio::signal::ctrl_c().await?;
        i.cluster.leave().await;
        return Ok(());
    }
    demo().await
}

/// Three instances in this process; `b` is stopped as a crash would stop it.
async fn demo() -> Result<(), BoxError> {
    let any: SocketAddr = "127.0.0.1:0".parse()?;
    let a = start("a", any, any, vec![]).await?;
    let seed = vec![a.cluster.local_addr()];
    let b = start("b", any, any, seed.clone()).await?;
    let c = start("c", any, any, seed).await?;
    println!("three instances; a asks its peers through the balancer");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut asked = std::collections::BTreeMap::new();
    for _ in 0..30 {
        let req = http::Request::get("/work").body(Empty::new())?;
        let res = a.peers.clone().ready().await?.call(req).await?;
        let body = res.into_body().collect().await?.to_bytes();
        *asked.entry(String::from_utf8_lossy(&body).trim().to_owned()).or_insert(0) += 1;
    }
    println!("before: {asked:?}");
    // A crash: no leave, the service and the member stop at once.
    b.server.abort();
    b.cluster.shutdown().await;
    println!("b stopped without leaving; waiting 3 s");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut after = std::collections::BTreeMap::new();
    for _ in 0..30 {
        let req = http::Request::get("/work").body(Empty::new())?;
        let answer = match a.peers.clone().ready().await?.call(req).await {
            Ok(res) => String::from_utf8_lossy(&res.into_body().collect().await?.to_bytes()).trim().to_owned(),
            Err(e) => format!("failed: {e}"),
        };
        *after.entry(answer).or_insert(0) += 1;
    }
    println!("after: {after:?}");
    for change in a.health.changes() {
        println!("  {change}");
    }
    drop(c);
    Ok(())
}
