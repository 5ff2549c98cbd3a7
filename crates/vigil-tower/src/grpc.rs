//! A balanced gRPC channel over the members that carry a tag (feature
//! `tonic`): [`channel`].
//!
//! tonic's own `Channel::balance_channel` balances over connections it
//! owns, with no hook for each endpoint's readiness; [`channel`] builds the
//! same thing from parts that have one: a tonic [`Channel`](tonic::transport::Channel)
//! per member, each behind the [`HealthLayer`], balanced by power of two
//! choices over [`MemberDiscover`], behind a buffer so that it can be
//! cloned. A generated client takes it where it would take a `Channel`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::transport::Endpoint;
use tower::buffer::Buffer;
use tower::util::BoxService;
use tower::{Layer, Service};
use vigil_net::Cluster;

use crate::BoxError;
use crate::discover::{Member, MemberDiscover, Selector};
use crate::guard::balance;
use crate::layer::HealthLayer;

type Request = http::Request<Body>;
type Response = http::Response<Body>;
type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response, BoxError>> + Send>>;

/// Requests waiting for the balancer at most; beyond, callers wait.
pub const BUFFER: usize = 1024;

/// A cloneable, balanced gRPC channel. See [`channel`].
#[derive(Clone)]
pub struct GrpcChannel {
    inner: Buffer<Request, ResponseFuture>,
}

impl std::fmt::Debug for GrpcChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcChannel").finish_non_exhaustive()
    }
}

impl Service<Request> for GrpcChannel {
    type Response = Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        Box::pin(self.inner.call(req))
    }
}

/// A channel to the members of `cluster` that `selector` matches, reached
/// at their `port` tag (and `scheme`, `http` by default), each endpoint
/// behind `layer`, configured by `configure` (timeouts, keep-alive; the
/// identity for none). Connections are made lazily, on the first request.
///
/// Made inside a tokio runtime.
///
/// ```no_run
/// use std::sync::Arc;
/// use std::time::Duration;
/// use vigil_net::{Cluster, Config, DEFAULT_CLUSTER};
/// use vigil_tower::{ClusterHealth, HealthLayer};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut config = Config::lan(DEFAULT_CLUSTER);
/// config.policies = vec!["route=2,ejection".parse()?];
/// let cluster = Arc::new(Cluster::builder("client").config(config).seeds(["10.0.0.2:7946".parse()?]).start().await?);
/// let layer = HealthLayer::new(ClusterHealth::new(cluster.clone(), "route"));
/// let channel = vigil_tower::grpc::channel(cluster, "service=billing".parse()?, layer, |e| {
///     e.connect_timeout(Duration::from_secs(1)).timeout(Duration::from_secs(2))
/// });
/// let mut client = tonic_health::pb::health_client::HealthClient::new(channel);
/// # Ok(())
/// # }
/// ```
pub fn channel(
    cluster: Arc<Cluster>,
    selector: Selector,
    layer: HealthLayer,
    configure: impl Fn(Endpoint) -> Endpoint + Send + 'static,
) -> GrpcChannel {
    let per_endpoint = layer.clone();
    let discover = MemberDiscover::new(cluster, selector, move |m: &Member| {
        let endpoint = configure(Endpoint::from(m.http_uri()));
        per_endpoint.endpoint(&m.name).layer(endpoint.connect_lazy())
    });
    let balanced = balance(discover, layer.source().clone(), layer.all_out_rule());
    let boxed: BoxService<Request, Response, BoxError> = BoxService::new(balanced);
    GrpcChannel { inner: Buffer::new(boxed, BUFFER) }
}
