//! What the layer costs per request (classify, record, gate) beside the
//! bare service, and what the balancer costs per request over 1,000
//! endpoints.
//!
//! `cargo bench -p vigil-tower --bench layer`

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tower::discover::ServiceList;
use tower::{Layer, Service, ServiceExt};
use vigil_net::{Cluster, Config, DEFAULT_CLUSTER};
use vigil_tower::{AllOut, ClusterHealth, HealthLayer, LocalHealth, Outcome, OutlierConfig, Source, balance_seeded};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// An endpoint that answers at once: what is measured is what wraps it.
fn ok() -> impl Service<(), Response = http::Response<()>, Error = Infallible, Future: Send> + Clone + Send {
    tower::service_fn(|()| std::future::ready(Ok(http::Response::new(()))))
}

/// `iters` requests through `svc`, one after another.
async fn drive<S>(svc: &mut S, iters: u64) -> Duration
where
    S: Service<()>,
    S::Error: std::fmt::Debug,
{
    let t = Instant::now();
    for _ in 0..iters {
        let r = svc.ready().await.unwrap().call(()).await.unwrap();
        std::hint::black_box(r);
    }
    t.elapsed()
}

fn per_request(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("per request");
    g.bench_function("bare service", |b| {
        let mut svc = ok();
        b.iter_custom(|iters| rt.block_on(drive(&mut svc, iters)));
    });
    g.bench_function("layer, local health", |b| {
        let health = rt.block_on(async { LocalHealth::outliers(OutlierConfig::vigil()).unwrap() });
        let layer = HealthLayer::new(health);
        let mut svc = layer.endpoint("a").layer(ok());
        b.iter_custom(|iters| rt.block_on(drive(&mut svc, iters)));
    });
    g.bench_function("layer, local health, 1,000 endpoints known", |b| {
        let health = rt.block_on(async { LocalHealth::outliers(OutlierConfig::vigil()).unwrap() });
        let layer = HealthLayer::new(health.clone());
        let _others: Vec<_> = (0..999).map(|i| layer.endpoint(&format!("e{i}")).layer(ok())).collect();
        let mut svc = layer.endpoint("a").layer(ok());
        b.iter_custom(|iters| rt.block_on(drive(&mut svc, iters)));
    });
    g.bench_function("layer, cluster health", |b| {
        let (cluster, health) = rt.block_on(async {
            let mut config = Config::lan(DEFAULT_CLUSTER);
            config.policies = vec!["route=2,ejection".parse().unwrap()];
            let cluster = Arc::new(
                Cluster::builder("bench").bind("127.0.0.1:0".parse().unwrap()).config(config).start().await.unwrap(),
            );
            let health = ClusterHealth::new(cluster.clone(), "route");
            (cluster, health)
        });
        let layer = HealthLayer::new(health.clone());
        let mut svc = layer.endpoint("a").layer(ok());
        b.iter_custom(|iters| {
            rt.block_on(async {
                // In chunks, each followed by a few yields, inside the time
                // measured: the task that passes outcomes on to the member,
                // and the member itself, run on this thread then, as they
                // would between a real service's I/O. Without them the
                // queue would fill and the measure be of dropped outcomes.
                let t = Instant::now();
                let mut left = iters;
                while left > 0 {
                    let n = left.min(1024);
                    drive(&mut svc, n).await;
                    for _ in 0..16 {
                        tokio::task::yield_now().await;
                    }
                    left -= n;
                }
                t.elapsed()
            })
        });
        assert_eq!(health.dropped(), 0, "outcomes dropped: the measure would be of a full queue");
        drop(cluster);
    });
    g.bench_function("classify and record only (local)", |b| {
        let health = rt.block_on(async { LocalHealth::outliers(OutlierConfig::vigil()).unwrap() });
        health.enter("a");
        b.iter(|| health.record("a", Outcome::Response(200), Duration::from_micros(300)));
    });
    g.finish();
}

fn balancer(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("balancer, 1,000 endpoints");
    g.sample_size(30);
    for (label, out) in [("all in rotation", 0usize), ("100 ejected", 100)] {
        g.bench_function(label, |b| {
            let mut balancer = rt.block_on(async {
                let health =
                    LocalHealth::outliers(OutlierConfig { max_ejection_percent: 20, ..OutlierConfig::vigil() })
                        .unwrap();
                let layer = HealthLayer::new(health.clone()).all_out(AllOut::Panic { below: 0.5 });
                let endpoints: Vec<_> = (0..1000).map(|i| layer.endpoint(&format!("e{i}")).layer(ok())).collect();
                for i in 0..out {
                    for _ in 0..5 {
                        health.record(&format!("e{i}"), Outcome::Response(503), Duration::from_millis(1));
                    }
                }
                assert_eq!(health.census().out, out);
                balance_seeded(ServiceList::new(endpoints), health, AllOut::Panic { below: 0.5 }, 1)
            });
            b.iter_custom(|iters| rt.block_on(drive(&mut balancer, iters)));
        });
    }
    g.bench_function("bare p2c (tower's PeakEWMA, no layer)", |b| {
        let mut balancer = rt.block_on(async {
            let endpoints: Vec<_> = (0..1000)
                .map(|_| {
                    tower::load::PeakEwma::new(
                        ok(),
                        Duration::from_millis(30),
                        10e9,
                        tower::load::CompleteOnResponse::default(),
                    )
                })
                .collect();
            tower::balance::p2c::Balance::new(ServiceList::new(endpoints))
        });
        b.iter_custom(|iters| rt.block_on(drive(&mut balancer, iters)));
    });
    g.finish();
}

criterion_group!(benches, per_request, balancer);
criterion_main!(benches);
