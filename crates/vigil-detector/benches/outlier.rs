//! Passive outlier detection at 10,000 hosts: the cost of recording one
//! request's outcome (a success, a server error, a success with its
//! latency), and of one interval tick that judges every host's success
//! rate, failure percentage and latency.
//!
//! Run: `cargo bench -p vigil-detector --bench outlier`.
//!
//! The detector is vigil's preset (Envoy's defaults, failure percentage
//! enforced, latency detection on); every host had 200 requests in the
//! interval being judged, with latencies around 10 ms, and one host in a
//! hundred fails half of its requests (so the tick finds outliers and the
//! cap stops most of them, as in a bad interval). The recording benches
//! send to the hosts in a scattered order, as traffic does.

#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use vigil_detector::Instant;
use vigil_detector::outlier::{Outcome, OutlierConfig, Outliers};

const HOSTS: u32 = 10_000;

fn loaded() -> Outliers<u32> {
    let mut od = Outliers::new(OutlierConfig::vigil()).unwrap();
    let t = Instant::from_secs(1);
    for h in 0..HOSTS {
        od.insert(h, t).unwrap();
    }
    for h in 0..HOSTS {
        for k in 0..200u32 {
            let fail = h % 100 == 7 && k % 2 == 1;
            let outcome = if fail { Outcome::Response(503) } else { Outcome::Response(200) };
            let latency = Duration::from_micros(10_000 + u64::from((h * 31 + k * 17) % 3_000));
            od.record(h, outcome, Some(latency), t).unwrap();
        }
    }
    od.take_events();
    od
}

fn bench(c: &mut Criterion) {
    let mut od = loaded();
    let t = Instant::from_secs(2);
    let mut h = 0u32;
    c.bench_function("outlier/record success (10k hosts)", |b| {
        b.iter(|| {
            h = (h + 7919) % HOSTS;
            od.record(black_box(h), Outcome::Response(200), None, t).unwrap();
        })
    });
    c.bench_function("outlier/record 500 (10k hosts)", |b| {
        b.iter(|| {
            h = (h + 7919) % HOSTS;
            // Every fifth 500 a host gets completes a streak: an ejection
            // or, past the cap, an overflow; its event is taken each time.
            od.record(black_box(h), Outcome::Response(500), None, t).unwrap();
            black_box(od.take_events());
        })
    });
    c.bench_function("outlier/record success with latency (10k hosts)", |b| {
        b.iter(|| {
            h = (h + 7919) % HOSTS;
            od.record(black_box(h), Outcome::Response(200), Some(Duration::from_micros(10_250)), t).unwrap();
        })
    });
    let ready = loaded();
    let tick = ready.next_deadline().unwrap();
    c.bench_function("outlier/interval tick judging 10k hosts", |b| {
        b.iter_batched(|| ready.clone(), |mut od| black_box(od.poll(tick)), BatchSize::LargeInput)
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
