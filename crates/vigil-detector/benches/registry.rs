//! Registry cost at 10,000 and 1,000,000 peers: taking a heartbeat, polling
//! when nothing is due, and settling a wave of suspicions (ingest and poll).
//!
//! Run: `cargo bench -p vigil-detector --bench registry`.
//!
//! Peers use Akka's detector with its defaults (window 1,000) and three
//! policies (route at 1, elect at 8 after 2 s, evict at 12 after 10 s,
//! destructive). The 1,000,000-peer registry reserves 4 GB of windows (the
//! pages are only touched as samples arrive), so it is built only when the
//! benches run for measurement (`cargo bench`), not in `cargo test` mode.

#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use vigil_detector::{Akka, AkkaConfig, Instant, Policy, Registry, RegistryConfig};

fn config() -> RegistryConfig {
    RegistryConfig {
        // The benchmark drives time itself; no stall detection.
        pause_guard: None,
        ..RegistryConfig::new(vec![
            Policy::new("route", 1.0),
            Policy::new("elect", 8.0).dwell(Duration::from_secs(2)),
            Policy::new("evict", 12.0).dwell(Duration::from_secs(10)).destructive(true),
        ])
    }
}

/// A registry of `n` peers that have each sent `rounds` heartbeats, one
/// second apart (peers spread over the second). Returns it and the time of
/// the last round.
fn populated(n: u64, rounds: u64) -> (Registry<u64, Akka>, u64) {
    let mut r = Registry::new(Akka::new(AkkaConfig::default()).unwrap(), config()).unwrap();
    let spread = 1_000_000_000 / n.max(1);
    for round in 0..rounds {
        for p in 0..n {
            r.heartbeat(p, Instant::from_nanos(round * 1_000_000_000 + p * spread)).unwrap();
        }
    }
    (r, (rounds - 1) * 1_000_000_000)
}

fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn bench_registry(c: &mut Criterion) {
    let sizes: &[u64] = if measuring() { &[10_000, 1_000_000] } else { &[10_000] };
    for &n in sizes {
        let mut group = c.benchmark_group(format!("registry/{n}"));
        let spread = 1_000_000_000 / n;
        // Built once: criterion calls the routine once per sample.
        let (mut r, last_round) = populated(n, 3);
        let mut round = last_round / 1_000_000_000 + 1;
        let mut p = 0u64;
        group.bench_function("heartbeat", |b| {
            b.iter(|| {
                let t = Instant::from_nanos(round * 1_000_000_000 + p * spread);
                black_box(r.heartbeat(p, t).unwrap());
                p += 1;
                if p == n {
                    p = 0;
                    round += 1;
                }
            });
        });
        // Idle: between rounds, nothing is due.
        let now = Instant::from_nanos(round * 1_000_000_000 - 1);
        group.bench_function("poll-idle", |b| {
            b.iter(|| {
                black_box(r.next_deadline());
                black_box(r.poll(black_box(now)))
            });
        });
        group.finish();
    }
    // A wave: every peer falls silent, and one poll settles all 3n policy
    // decisions (including the brake's withholding). Reported per poll; the
    // registry is rebuilt, untimed, for every iteration.
    for &n in sizes {
        let mut group = c.benchmark_group(format!("registry/{n}"));
        group.sample_size(10);
        let name = format!("settle-wave-of-{}-decisions", 3 * n);
        if n <= 10_000 {
            let (r, last_round) = populated(n, 3);
            let later = Instant::from_nanos(last_round + 60_000_000_000);
            group.bench_function(name, |b| {
                b.iter_batched(|| r.clone(), |mut r| black_box(r.poll(later).len()), BatchSize::LargeInput);
            });
        } else {
            group.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let (mut r, last_round) = populated(n, 3);
                        let later = Instant::from_nanos(last_round + 60_000_000_000);
                        // A benchmark times itself: the one wall clock in
                        // this crate.
                        #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
                        let start = std::time::Instant::now();
                        black_box(r.poll(later).len());
                        total += start.elapsed();
                    }
                    total
                });
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench_registry);
criterion_main!(benches);
