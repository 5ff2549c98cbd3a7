//! Memory per monitored peer, measured with a counting allocator.
//!
//! Run: `cargo bench -p vigil-detector --bench memory`.
//!
//! Counts the bytes requested from the allocator while building detectors
//! and a registry of 100,000 peers, each having sent heartbeats, and prints
//! bytes per peer (inline size plus heap). This is the allocation the API
//! promises; resident memory can be lower because untouched window pages are
//! never faulted in.

#![allow(missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use vigil_detector::{
    Akka, AkkaConfig, Detector, Empirical, EmpiricalConfig, Exponential, ExponentialConfig, Instant, Normal,
    NormalConfig, Policy, Registry, RegistryConfig,
};

/// Delegates to the system allocator and keeps a running total of live
/// bytes. The only unsafe code in the project: a `GlobalAlloc` impl must be
/// an `unsafe impl`, and its methods forward their contracts unchanged.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const PEERS: u64 = 100_000;
const WINDOW: usize = 1_000;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Bytes per detector: a Vec of `PEERS` detectors, each fed 20 heartbeats.
fn per_detector<D: Detector>(name: &str, make: impl Fn() -> D) {
    let before = live();
    let mut all: Vec<D> = Vec::with_capacity(PEERS as usize);
    for p in 0..PEERS {
        let mut d = make();
        for i in 0..20u64 {
            d.heartbeat(Instant::from_millis(i * 1_000 + p % 1_000));
        }
        all.push(d);
    }
    let bytes = live() - before;
    println!(
        "{name:<40} {:>8.0} bytes/peer  ({} inline + {} heap)",
        bytes as f64 / PEERS as f64,
        size_of::<D>(),
        all[0].heap_bytes()
    );
    drop(all);
}

fn registry<D: Detector + Clone>(name: &str, prototype: D) {
    let before = live();
    let config = RegistryConfig::new(vec![
        Policy::new("route", 1.0),
        Policy::new("elect", 8.0).dwell(Duration::from_secs(2)),
        Policy::new("evict", 12.0).dwell(Duration::from_secs(10)).destructive(true),
    ]);
    let mut r: Registry<u64, D> = Registry::new(prototype, config).unwrap();
    r.reserve(PEERS as usize);
    for i in 0..3u64 {
        for p in 0..PEERS {
            r.heartbeat(p, Instant::from_millis(i * 1_000 + p % 1_000)).unwrap();
        }
    }
    let bytes = live() - before;
    println!(
        "{name:<40} {:>8.0} bytes/peer  ({:.2} KiB; heap_bytes() estimate {:.0})",
        bytes as f64 / PEERS as f64,
        bytes as f64 / PEERS as f64 / 1024.0,
        r.heap_bytes() as f64 / PEERS as f64
    );
    drop(r);
}

fn main() {
    // `cargo test --benches` runs this once too; it is fast enough (~2 s).
    println!("memory per peer, window {WINDOW}, {PEERS} peers (counting allocator)");
    per_detector("detector akka", || Akka::new(AkkaConfig::default()).unwrap());
    per_detector("detector normal", || Normal::new(NormalConfig::default()).unwrap());
    per_detector("detector exponential", || {
        Exponential::new(ExponentialConfig { window: WINDOW, ..ExponentialConfig::cassandra() }).unwrap()
    });
    per_detector("detector empirical", || Empirical::new(EmpiricalConfig::default()).unwrap());
    registry("registry<u64, Akka>, 3 policies", Akka::new(AkkaConfig::default()).unwrap());
    registry("registry<u64, Normal>, 3 policies", Normal::new(NormalConfig::default()).unwrap());
    registry(
        "registry<u64, AnyDetector(akka)>, 3 policies",
        vigil_detector::AnyDetector::Akka(Akka::new(AkkaConfig::default()).unwrap()),
    );
}
