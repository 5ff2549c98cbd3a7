//! Heartbeat and level-query cost of every model, and of the two crates.io
//! phi crates on the same workload.
//!
//! Run: `cargo bench -p vigil-detector --bench detectors`.
//!
//! Workload: window 1,000, heartbeats every ~1 s with ±50 ms of jitter, the
//! window already full. A "heartbeat" iteration records one heartbeat; a
//! "level" iteration asks the level at one of 64 silences spread over
//! 0–6.3 s (so the normal tail, the logistic's branches and the empirical
//! model's search are all exercised); a "heartbeat+level" iteration does
//! both, which is what a registry does per heartbeat (the normal-family
//! models fit μ and σ lazily, on the first query after a heartbeat, so this
//! pair is the honest total).

#![allow(missing_docs)]

use std::cell::Cell;
use std::hint::black_box;
use std::rc::Rc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use vigil_detector::{AnyDetector, Detector, Instant, Model, ModelConfig};

const WINDOW: usize = 1_000;

/// 4,096 jittered intervals around 1 s, in nanoseconds (deterministic).
fn intervals() -> Vec<u64> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            1_000_000_000 - 50_000_000 + x % 100_000_000
        })
        .collect()
}

/// Query offsets after the last heartbeat: 0 to 6.3 s.
fn silences() -> Vec<u64> {
    (0..64).map(|i| i * 100_000_000).collect()
}

fn config(model: Model) -> ModelConfig {
    let mut c = ModelConfig::default_for(model);
    match &mut c {
        ModelConfig::Exponential(e) => {
            // Cassandra's 2 s cap would keep 1 s intervals anyway; make the
            // window fill with real samples as for the others.
            e.window = WINDOW;
        }
        ModelConfig::TwoWindow(w) => w.n2 = WINDOW,
        _ => {}
    }
    c
}

/// A detector with a full window, and the time of its last heartbeat.
fn warmed(model: Model, gaps: &[u64]) -> (AnyDetector, u64) {
    let mut d = config(model).build().expect("default configurations are valid");
    let mut t = 0u64;
    for &g in gaps.iter().cycle().take(WINDOW + 10) {
        t += g;
        d.heartbeat(Instant::from_nanos(t));
    }
    (d, t)
}

fn bench_models(c: &mut Criterion) {
    let gaps = intervals();
    let offsets = silences();
    // The harness's own cost per iteration: advancing the time and keeping
    // the result alive, with no detector work.
    c.bench_function("baseline/loop", |b| {
        let mut t = 0u64;
        let mut i = 0usize;
        b.iter(|| {
            t += gaps[i & 4095];
            i += 1;
            black_box(Instant::from_nanos(black_box(t)))
        });
    });
    for model in Model::ALL {
        let mut group = c.benchmark_group(format!("model/{model}"));
        group.bench_function("heartbeat", |b| {
            let (mut d, mut t) = warmed(model, &gaps);
            let mut i = 0usize;
            b.iter(|| {
                t += gaps[i & 4095];
                i += 1;
                d.heartbeat(black_box(Instant::from_nanos(t)));
            });
        });
        group.bench_function("level", |b| {
            let (d, t) = warmed(model, &gaps);
            let mut i = 0usize;
            b.iter(|| {
                let now = Instant::from_nanos(t + offsets[i & 63]);
                i += 1;
                black_box(d.level(black_box(now)))
            });
        });
        group.bench_function("heartbeat+level", |b| {
            let (mut d, mut t) = warmed(model, &gaps);
            let mut i = 0usize;
            b.iter(|| {
                t += gaps[i & 4095];
                d.heartbeat(black_box(Instant::from_nanos(t)));
                let level = d.level(black_box(Instant::from_nanos(t + offsets[i & 63])));
                i += 1;
                black_box(level)
            });
        });
        group.bench_function("crossing", |b| {
            let (d, _) = warmed(model, &gaps);
            let th = model.default_threshold();
            b.iter(|| black_box(d.crossing(black_box(th))));
        });
        group.finish();
    }
}

/// The same workload through concrete types (no enum dispatch), for the
/// models the targets name.
fn bench_concrete(c: &mut Criterion) {
    let gaps = intervals();
    let offsets = silences();
    macro_rules! concrete {
        ($name:literal, $build:expr) => {{
            let mut group = c.benchmark_group(concat!("concrete/", $name));
            let warm = || {
                let mut d = $build;
                let mut t = 0u64;
                for &g in gaps.iter().cycle().take(WINDOW + 10) {
                    t += g;
                    d.heartbeat(Instant::from_nanos(t));
                }
                (d, t)
            };
            group.bench_function("heartbeat", |b| {
                let (mut d, mut t) = warm();
                let mut i = 0usize;
                b.iter(|| {
                    t += gaps[i & 4095];
                    i += 1;
                    d.heartbeat(black_box(Instant::from_nanos(t)));
                });
            });
            group.bench_function("level", |b| {
                let (d, t) = warm();
                let mut i = 0usize;
                b.iter(|| {
                    let now = Instant::from_nanos(t + offsets[i & 63]);
                    i += 1;
                    black_box(d.level(black_box(now)))
                });
            });
            group.bench_function("heartbeat+level", |b| {
                let (mut d, mut t) = warm();
                let mut i = 0usize;
                b.iter(|| {
                    t += gaps[i & 4095];
                    d.heartbeat(black_box(Instant::from_nanos(t)));
                    let level = d.level(black_box(Instant::from_nanos(t + offsets[i & 63])));
                    i += 1;
                    black_box(level)
                });
            });
            group.finish();
        }};
    }
    concrete!("akka", vigil_detector::Akka::new(vigil_detector::AkkaConfig::default()).unwrap());
    concrete!("normal", vigil_detector::Normal::new(vigil_detector::NormalConfig::default()).unwrap());
    concrete!(
        "exponential",
        vigil_detector::Exponential::new(vigil_detector::ExponentialConfig {
            window: WINDOW,
            ..vigil_detector::ExponentialConfig::cassandra()
        })
        .unwrap()
    );
}

/// A clock for `phi-accrual-failure-detector`, which reads time through a
/// trait: the benchmark sets it before each call.
#[derive(Clone)]
struct FakeClock(Rc<Cell<u64>>);

impl phi_accrual_failure_detector::Clock for FakeClock {
    type Timestamp = u64;
    fn timestamp(&self) -> u64 {
        self.0.get()
    }
    fn elapsed(before: &u64, after: &u64) -> Duration {
        Duration::from_nanos(after.saturating_sub(*before))
    }
}

fn bench_peer_crates(c: &mut Criterion) {
    use phi_accrual_failure_detector::Detector as _;
    let gaps = intervals();
    let offsets = silences();

    let mut group = c.benchmark_group("peer/phi-accrual-failure-detector-0.1");
    let warm = || {
        let clock = FakeClock(Rc::new(Cell::new(0)));
        let d = phi_accrual_failure_detector::Builder::default()
            .max_sample_size(WINDOW)
            .clock(clock.clone())
            .build()
            .expect("valid configuration");
        let mut t = 0u64;
        for &g in gaps.iter().cycle().take(WINDOW + 10) {
            t += g;
            clock.0.set(t);
            d.heartbeat();
        }
        (d, clock, t)
    };
    group.bench_function("heartbeat", |b| {
        let (d, clock, mut t) = warm();
        let mut i = 0usize;
        b.iter(|| {
            t += gaps[i & 4095];
            i += 1;
            clock.0.set(black_box(t));
            d.heartbeat();
        });
    });
    group.bench_function("level", |b| {
        let (d, clock, t) = warm();
        let mut i = 0usize;
        b.iter(|| {
            clock.0.set(black_box(t + offsets[i & 63]));
            i += 1;
            black_box(d.phi())
        });
    });
    group.bench_function("heartbeat+level", |b| {
        let (d, clock, mut t) = warm();
        let mut i = 0usize;
        b.iter(|| {
            t += gaps[i & 4095];
            clock.0.set(black_box(t));
            d.heartbeat();
            clock.0.set(black_box(t + offsets[i & 63]));
            i += 1;
            black_box(d.phi())
        });
    });
    group.finish();

    let mut group = c.benchmark_group("peer/phi-detector-0.4");
    let warm = || {
        let mut w = phi_detector::PingWindow::new(Duration::from_secs(1));
        for &g in gaps.iter().cycle().take(WINDOW + 10) {
            w.add_ping(Duration::from_nanos(g));
        }
        w
    };
    group.bench_function("heartbeat", |b| {
        let mut w = warm();
        let mut i = 0usize;
        b.iter(|| {
            w.add_ping(black_box(Duration::from_nanos(gaps[i & 4095])));
            i += 1;
        });
    });
    group.bench_function("level", |b| {
        let w = warm();
        let mut i = 0usize;
        b.iter(|| {
            // The crate's query is two calls: fit, then phi.
            let elapsed = Duration::from_nanos(offsets[i & 63]);
            i += 1;
            black_box(w.normal_dist().phi(black_box(elapsed)))
        });
    });
    group.bench_function("heartbeat+level", |b| {
        let mut w = warm();
        let mut i = 0usize;
        b.iter(|| {
            w.add_ping(black_box(Duration::from_nanos(gaps[i & 4095])));
            let elapsed = Duration::from_nanos(offsets[i & 63]);
            i += 1;
            black_box(w.normal_dist().phi(black_box(elapsed)))
        });
    });
    group.finish();
}

criterion_group!(benches, bench_models, bench_concrete, bench_peer_crates);
criterion_main!(benches);
