//! A fixed workload for counting instructions per operation with
//! `valgrind --tool=callgrind`, which is exact and unaffected by other load
//! on the machine (unlike wall-clock benchmarks on a shared host).
//!
//! Usage: `opcount IMPL OP N`, IMPL one of `akka`, `normal`, `exponential`,
//! `phi-accrual-failure-detector`, `phi-detector`; OP one of `heartbeat`,
//! `level`, `pair`. It fills a 1,000-sample window, then performs OP N times
//! (the same workload as the criterion benches). Run it with N and with 0
//! and divide the difference in instructions by N:
//! `scripts/opcount.sh` does that for every combination.

use std::cell::Cell;
use std::hint::black_box;
use std::rc::Rc;
use std::time::Duration;

use vigil_detector::{Akka, AkkaConfig, Detector, Exponential, ExponentialConfig, Instant, Normal, NormalConfig};

const WINDOW: usize = 1_000;

fn gaps() -> Vec<u64> {
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

/// What each iteration does.
#[derive(Clone, Copy, PartialEq)]
enum Op {
    Heartbeat,
    Level,
    Pair,
}

fn run_detector(mut d: impl Detector, op: Op, n: usize) {
    let gaps = gaps();
    let mut t = 0u64;
    for &g in gaps.iter().cycle().take(WINDOW + 10) {
        t += g;
        d.heartbeat(Instant::from_nanos(t));
    }
    for i in 0..n {
        let silence = (i as u64 & 63) * 100_000_000;
        match op {
            Op::Heartbeat => {
                t += gaps[i & 4095];
                d.heartbeat(black_box(Instant::from_nanos(t)));
            }
            Op::Level => {
                black_box(d.level(black_box(Instant::from_nanos(t + silence))));
            }
            Op::Pair => {
                t += gaps[i & 4095];
                d.heartbeat(black_box(Instant::from_nanos(t)));
                black_box(d.level(black_box(Instant::from_nanos(t + silence))));
            }
        }
    }
}

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

fn run_heilhead(op: Op, n: usize) {
    use phi_accrual_failure_detector::Detector as _;
    let gaps = gaps();
    let clock = FakeClock(Rc::new(Cell::new(0)));
    let d =
        phi_accrual_failure_detector::Builder::default().max_sample_size(WINDOW).clock(clock.clone()).build().unwrap();
    let mut t = 0u64;
    for &g in gaps.iter().cycle().take(WINDOW + 10) {
        t += g;
        clock.0.set(t);
        d.heartbeat();
    }
    for i in 0..n {
        let silence = (i as u64 & 63) * 100_000_000;
        if op != Op::Level {
            t += gaps[i & 4095];
            clock.0.set(black_box(t));
            d.heartbeat();
        }
        if op != Op::Heartbeat {
            clock.0.set(black_box(t + silence));
            black_box(d.phi());
        }
    }
}

fn run_akiradeveloper(op: Op, n: usize) {
    let gaps = gaps();
    let mut w = phi_detector::PingWindow::new(Duration::from_secs(1));
    for &g in gaps.iter().cycle().take(WINDOW + 10) {
        w.add_ping(Duration::from_nanos(g));
    }
    for i in 0..n {
        let silence = (i as u64 & 63) * 100_000_000;
        if op != Op::Level {
            w.add_ping(black_box(Duration::from_nanos(gaps[i & 4095])));
        }
        if op != Op::Heartbeat {
            black_box(w.normal_dist().phi(black_box(Duration::from_nanos(silence))));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: opcount IMPL OP N";
    let (imp, op, n) = match &args[..] {
        [_, imp, op, n] => (imp.as_str(), op.as_str(), n.parse::<usize>().expect(usage)),
        _ => panic!("{usage}"),
    };
    let op = match op {
        "heartbeat" => Op::Heartbeat,
        "level" => Op::Level,
        "pair" => Op::Pair,
        _ => panic!("{usage}"),
    };
    match imp {
        "akka" => run_detector(Akka::new(AkkaConfig::default()).unwrap(), op, n),
        "normal" => run_detector(Normal::new(NormalConfig::default()).unwrap(), op, n),
        "exponential" => run_detector(
            Exponential::new(ExponentialConfig { window: WINDOW, ..ExponentialConfig::cassandra() }).unwrap(),
            op,
            n,
        ),
        "phi-accrual-failure-detector" => run_heilhead(op, n),
        "phi-detector" => run_akiradeveloper(op, n),
        other => panic!("unknown implementation {other}; {usage}"),
    }
}
