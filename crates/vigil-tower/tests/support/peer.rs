//! A peer for the routing tests: a child process (this test binary, started
//! again with `VIGIL_TOWER_PEER` set) that serves HTTP with hyper or gRPC
//! with tonic, and runs a vigil member tagged with the service and the
//! port, so the parent discovers it through membership and judges it by
//! its heartbeats. Killing the child is a crash: the socket closes and the
//! heartbeats stop.
//!
//! The peer's behaviour is set over HTTP (`POST /mode/{ok,gray,slow,fail}`
//! on its HTTP port; a gRPC peer serves the same control port beside its
//! gRPC one) and every answer names the peer in `x-peer`.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::TcpListener;
use vigil_net::{Cluster, Tags};

/// The variable that makes this test binary a peer.
pub(crate) const PEER_ENV: &str = "VIGIL_TOWER_PEER";
/// The test the child runs (which, in the child, serves and never returns).
pub(crate) const PEER_TEST: &str = "peer_fixture_answers_as_configured";

/// How a peer answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Mode {
    /// 200 after 2 ms.
    Ok = 0,
    /// As `Ok`, but 30 % of answers are 503 (gRPC: UNAVAILABLE), drawn
    /// from the peer's seed.
    Gray = 1,
    /// 200 after 20 ms: ten times slower.
    Slow = 2,
    /// Every answer a 503 (gRPC: UNAVAILABLE).
    Fail = 3,
}

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Ok => "ok",
            Mode::Gray => "gray",
            Mode::Slow => "slow",
            Mode::Fail => "fail",
        }
    }

    fn parse(s: &str) -> Option<Mode> {
        [Mode::Ok, Mode::Gray, Mode::Slow, Mode::Fail].into_iter().find(|m| m.name() == s)
    }
}

/// The answer's fate, shared by both protocols.
struct Behaviour {
    name: String,
    mode: AtomicU8,
    seed: u64,
    served: AtomicU64,
}

impl Behaviour {
    fn mode(&self) -> Mode {
        match self.mode.load(Ordering::Relaxed) {
            1 => Mode::Gray,
            2 => Mode::Slow,
            3 => Mode::Fail,
            _ => Mode::Ok,
        }
    }

    /// How long to wait, and whether to fail.
    fn next(&self) -> (Duration, bool) {
        let n = self.served.fetch_add(1, Ordering::Relaxed);
        match self.mode() {
            Mode::Ok => (Duration::from_millis(2), false),
            Mode::Slow => (Duration::from_millis(20), false),
            Mode::Fail => (Duration::from_millis(2), true),
            Mode::Gray => (Duration::from_millis(2), splitmix(self.seed ^ n) % 100 < 30),
        }
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What the parent asks of a peer: `name,seed-address,service,grpc|http,seed`.
pub(crate) struct Spec {
    pub(crate) name: String,
    pub(crate) join: SocketAddr,
    pub(crate) service: String,
    pub(crate) grpc: bool,
    pub(crate) seed: u64,
}

impl Spec {
    fn to_env(&self) -> String {
        format!(
            "{},{},{},{},{}",
            self.name,
            self.join,
            self.service,
            if self.grpc { "grpc" } else { "http" },
            self.seed
        )
    }

    fn from_env(s: &str) -> Spec {
        let f: Vec<&str> = s.split(',').collect();
        Spec {
            name: f[0].to_owned(),
            join: f[1].parse().expect("a seed address"),
            service: f[2].to_owned(),
            grpc: f[3] == "grpc",
            seed: f[4].parse().expect("a seed"),
        }
    }
}

/// A peer running in a child process; killed when dropped.
pub(crate) struct Peer {
    pub(crate) name: String,
    /// Where its control port (and, for HTTP, its service) listens.
    pub(crate) control: SocketAddr,
    child: tokio::process::Child,
}

impl Peer {
    /// Starts a peer and waits for it to listen.
    pub(crate) async fn start(spec: Spec) -> Peer {
        let exe = std::env::current_exe().expect("the test binary");
        let mut child = tokio::process::Command::new(exe)
            .args([PEER_TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(PEER_ENV, spec.to_env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start a peer");
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let control = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.expect("the peer's output") {
                // libtest's "test NAME ... " may come first on the line.
                if let Some((_, addr)) = line.split_once("vigil-tower-peer control=") {
                    return addr.trim().parse::<SocketAddr>().expect("an address");
                }
            }
            panic!("peer {} exited before listening", spec.name);
        })
        .await
        .expect("the peer listens within 30 s");
        // Keep reading, so that the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Peer { name: spec.name, control, child }
    }

    /// Sets how it answers.
    pub(crate) async fn set(&self, mode: Mode) {
        let stream = tokio::net::TcpStream::connect(self.control).await.expect("the peer's control port");
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("handshake");
        tokio::spawn(conn);
        let req = http::Request::post(format!("/mode/{}", mode.name())).body(Empty::<Bytes>::new()).unwrap();
        let res = send.send_request(req).await.expect("the peer answers");
        assert_eq!(res.status(), 200, "{} took mode {}", self.name, mode.name());
    }

    /// Kills it, as a crash would.
    pub(crate) async fn kill(&mut self) {
        self.child.start_kill().expect("kill the peer");
        let _ = self.child.wait().await;
    }
}

/// In the child: serves as `spec` says, until the parent closes stdin (or
/// kills it). Never returns.
pub(crate) fn run(spec: &str) -> ! {
    let spec = Spec::from_env(spec);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    rt.block_on(async move {
        let control = TcpListener::bind("127.0.0.1:0").await.expect("bind the control port");
        let grpc =
            if spec.grpc { Some(TcpListener::bind("127.0.0.1:0").await.expect("bind the gRPC port")) } else { None };
        let service_port = match &grpc {
            Some(l) => l.local_addr().unwrap().port(),
            None => control.local_addr().unwrap().port(),
        };
        let tags = Tags::new([("service", spec.service.clone()), ("port", service_port.to_string())]).expect("tags");
        let cluster = Cluster::builder(&spec.name)
            .bind("127.0.0.1:0".parse().unwrap())
            .seeds([spec.join])
            .tags(tags)
            .start()
            .await
            .expect("start the peer's member");
        let behaviour = Arc::new(Behaviour {
            name: spec.name.clone(),
            mode: AtomicU8::new(0),
            seed: spec.seed,
            served: AtomicU64::new(0),
        });
        println!("vigil-tower-peer control={}", control.local_addr().unwrap());
        tokio::spawn(async move {
            let mut byte = [0u8; 1];
            let _ = tokio::io::stdin().read(&mut byte).await;
            std::process::exit(0);
        });
        if let Some(grpc) = grpc {
            tokio::spawn(serve_grpc(grpc, behaviour.clone()));
        }
        serve_http(control, behaviour).await;
        drop(cluster);
    });
    std::process::exit(0)
}

async fn serve_http(listener: TcpListener, behaviour: Arc<Behaviour>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let b = behaviour.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: http::Request<Incoming>| {
                let b = b.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(&b, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}

async fn answer(b: &Behaviour, req: http::Request<Incoming>) -> http::Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    let _ = req.into_body().collect().await;
    let reply = |status: u16| {
        http::Response::builder().status(status).header("x-peer", &b.name).body(Full::new(Bytes::new())).unwrap()
    };
    if let Some(mode) = path.strip_prefix("/mode/") {
        return match Mode::parse(mode) {
            Some(m) => {
                b.mode.store(m as u8, Ordering::Relaxed);
                reply(200)
            }
            None => reply(400),
        };
    }
    let (wait, fail) = b.next();
    tokio::time::sleep(wait).await;
    reply(if fail { 503 } else { 200 })
}

async fn serve_grpc(listener: TcpListener, behaviour: Arc<Behaviour>) {
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter.set_service_status("", tonic_health::ServingStatus::Serving).await;
    let gray = tower::layer::layer_fn(move |inner| GrayGrpc { inner, behaviour: behaviour.clone() });
    tonic::transport::Server::builder()
        .layer(gray)
        .add_service(health)
        .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
        .await
        .expect("serve gRPC");
}

/// Fails gRPC calls as the mode says (UNAVAILABLE, in a trailers-only
/// response, as a server failing before any message does), delays them,
/// and names the peer.
#[derive(Clone)]
struct GrayGrpc<S> {
    inner: S,
    behaviour: Arc<Behaviour>,
}

type GrpcFuture<E> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<http::Response<tonic::body::Body>, E>> + Send>>;

impl<S> tower::Service<http::Request<tonic::body::Body>> for GrayGrpc<S>
where
    S: tower::Service<http::Request<tonic::body::Body>, Response = http::Response<tonic::body::Body>>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = GrpcFuture<S::Error>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let (wait, fail) = self.behaviour.next();
        let name = http::HeaderValue::from_str(&self.behaviour.name).unwrap();
        let mut inner = self.inner.clone();
        std::mem::swap(&mut inner, &mut self.inner);
        Box::pin(async move {
            tokio::time::sleep(wait).await;
            let mut res = if fail {
                tonic::Status::unavailable("gray").into_http::<tonic::body::Body>()
            } else {
                inner.call(req).await?
            };
            res.headers_mut().insert("x-peer", name);
            Ok(res)
        })
    }
}
