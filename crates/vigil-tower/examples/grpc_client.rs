//! A tonic client over the balanced channel: calls go to the members
//! tagged `service=greeter`, each behind the health layer, chosen by the
//! guarded p2c balancer.
//!
//! `cargo run -p vigil-tower --example grpc_client`
//!
//! It starts three gRPC servers in this process (tonic's health service,
//! each beside a vigil member tagged with its port), calls them through
//! the channel, then stops one as a crash would and calls again: no call
//! goes to the stopped server once φ has taken it out of rotation.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use vigil_net::{Cluster, Config, DEFAULT_CLUSTER, Tags};
use vigil_tower::{BoxError, ClusterHealth, HealthLayer, Source};

/// A gRPC server and its member.
struct Server {
    cluster: Cluster,
    task: tokio::task::JoinHandle<()>,
}

async fn server(name: &str, seed: Option<std::net::SocketAddr>) -> Result<Server, BoxError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let tags = Tags::new([("service", "greeter".to_owned()), ("port", port.to_string())])?;
    let cluster = Cluster::builder(name).bind("127.0.0.1:0".parse()?).seeds(seed).tags(tags).start().await?;
    let (reporter, service) = tonic_health::server::health_reporter();
    reporter.set_service_status("", tonic_health::ServingStatus::Serving).await;
    // Each server says who it is in the answer's metadata.
    let who = http::HeaderValue::from_str(name)?;
    let named = name_header::SetHeader(who);
    let task = tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .layer(named)
            .add_service(service)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
            .await;
    });
    Ok(Server { cluster, task })
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    // The client's member: it routes by `route=2,ejection`.
    let mut config = Config::lan(DEFAULT_CLUSTER);
    config.policies = vec!["route=2,ejection".parse()?];
    let client = Arc::new(Cluster::builder("client").bind("127.0.0.1:0".parse()?).config(config).start().await?);
    let seed = Some(client.local_addr());
    let servers = [server("g-1", seed).await?, server("g-2", seed).await?, server("g-3", seed).await?];

    // The balanced channel, and tonic's generated client over it.
    let health = ClusterHealth::new(client.clone(), "route");
    let layer = HealthLayer::new(health.clone());
    let channel = vigil_tower::grpc::channel(client.clone(), "service=greeter".parse()?, layer, |e| {
        e.connect_timeout(Duration::from_millis(500)).timeout(Duration::from_secs(1))
    });
    let mut grpc = HealthClient::new(channel);
    tokio::time::sleep(Duration::from_secs(3)).await;

    let mut calls = async |n: usize| {
        let mut by: BTreeMap<String, usize> = BTreeMap::new();
        for _ in 0..n {
            let who = match grpc.check(HealthCheckRequest { service: String::new() }).await {
                Ok(res) => res.metadata().get("x-server").and_then(|v| v.to_str().ok()).unwrap_or("?").to_owned(),
                Err(status) => format!("failed ({})", status.code()),
            };
            *by.entry(who).or_default() += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        by
    };
    println!("30 calls: {:?}", calls(30).await);

    let [s1, s2, s3] = servers;
    s2.task.abort();
    s2.cluster.shutdown().await;
    println!("g-2 stopped without leaving; waiting 3 s");
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!("30 calls: {:?}", calls(30).await);
    for change in health.changes() {
        println!("  {change}");
    }
    drop((s1, s3));
    Ok(())
}

/// A layer that names the server in every answer's `x-server` header.
mod name_header {
    use std::task::{Context, Poll};

    #[derive(Clone)]
    pub(crate) struct SetHeader(pub(crate) http::HeaderValue);

    impl<S> tower::Layer<S> for SetHeader {
        type Service = Named<S>;
        fn layer(&self, inner: S) -> Named<S> {
            Named { inner, value: self.0.clone() }
        }
    }

    #[derive(Clone)]
    pub(crate) struct Named<S> {
        inner: S,
        value: http::HeaderValue,
    }

    impl<S, Req, B> tower::Service<Req> for Named<S>
    where
        S: tower::Service<Req, Response = http::Response<B>>,
        S::Future: Send + 'static,
    {
        type Response = http::Response<B>;
        type Error = S::Error;
        type Future = std::pin::Pin<Box<dyn Future<Output = Result<http::Response<B>, S::Error>> + Send>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
            self.inner.poll_ready(cx)
        }

        fn call(&mut self, req: Req) -> Self::Future {
            let value = self.value.clone();
            let fut = self.inner.call(req);
            Box::pin(async move {
                let mut res = fut.await?;
                res.headers_mut().insert("x-server", value);
                Ok(res)
            })
        }
    }
}
