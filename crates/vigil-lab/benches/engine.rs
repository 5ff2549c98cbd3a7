//! The metric engine's throughput: heartbeats judged per second, per model.
//!
//! Run: `cargo bench -p vigil-lab --bench engine`.
//!
//! Workload: seed 001's regime-change scenario, 200 traces of 100 heartbeats
//! (20,000 heartbeats), judged by one detector at one threshold on one
//! thread; and the same with 8 thresholds sharing one run. Criterion reports
//! the throughput in heartbeats per second ("elem/s"). Trace generation is
//! outside the measurement.

#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use vigil_lab::engine::judge;
use vigil_lab::scenario::builtin;
use vigil_lab::spec::DetectorSpec;

const SPECS: [&str; 9] = [
    "normal:window=100,min-std-ms=1",
    "akka:pause-ms=0",
    "exponential",
    "fixed:timeout-ms=250",
    "deadline",
    "chen:alpha-ms=100",
    "bertier",
    "2w:alpha-ms=100",
    "empirical:window=100",
];

fn engine(c: &mut Criterion) {
    let traces = builtin("regime-change").unwrap().generate(1, 200);
    let beats: u64 = traces.iter().map(|t| t.beats.len() as u64).sum();
    let mut g = c.benchmark_group("judge");
    g.throughput(Throughput::Elements(beats));
    for text in SPECS {
        let spec: DetectorSpec = text.parse().unwrap();
        let name = text.split(':').next().unwrap();
        g.bench_function(name, |b| {
            b.iter(|| {
                for t in &traces {
                    black_box(judge(t, spec.config(), &[spec.threshold()], 1).unwrap());
                }
            })
        });
    }
    let spec: DetectorSpec = SPECS[0].parse().unwrap();
    let thresholds = [1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 20.0];
    g.bench_function("normal-8-thresholds", |b| {
        b.iter(|| {
            for t in &traces {
                black_box(judge(t, spec.config(), &thresholds, 1).unwrap());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
