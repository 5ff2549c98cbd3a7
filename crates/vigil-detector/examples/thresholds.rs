//! Prints what a threshold means in each model: where the level reaches it,
//! in standard deviations past the mean or in multiples of the mean, and
//! the steady-state detection times of common defaults.
//!
//! Run: `cargo run -p vigil-detector --example thresholds`.

use std::time::Duration;

use vigil_detector::{
    Akka, AkkaConfig, Deadline, DeadlineConfig, Detector, Exponential, ExponentialConfig, Instant, Normal, NormalConfig,
};

/// Feeds `n` perfectly regular heartbeats and returns how long after the last
/// one the level reaches `threshold`.
fn silence_to(d: &mut impl Detector, interval: Duration, n: u64, threshold: f64) -> Duration {
    let mut t = Instant::ZERO;
    for _ in 0..n {
        d.heartbeat(t);
        t = t + interval;
    }
    let last = d.last_heartbeat().expect("fed");
    d.crossing(threshold).expect("reached") - last
}

fn main() {
    let sigma = Duration::from_millis(100);
    let second = Duration::from_secs(1);
    println!("threshold | exact normal: σ past μ | Akka logistic: σ past μ | exponential: × mean");
    for th in [1.0, 2.0, 3.0, 5.0, 8.0, 10.0, 12.0, 16.0] {
        // Regular 1 s heartbeats with σ floored at 100 ms and no pause: the
        // crossing is μ + y σ, so y = (crossing - 1 s) / 100 ms.
        let mut n = Normal::new(NormalConfig { min_std_dev: sigma, ..NormalConfig::default() }).unwrap();
        let yn = (silence_to(&mut n, second, 200, th).as_secs_f64() - 1.0) / 0.1;
        let akka = AkkaConfig { acceptable_pause: Duration::ZERO, threshold: th, ..AkkaConfig::default() };
        let mut a = Akka::new(akka).unwrap();
        let ya = (silence_to(&mut a, second, 2_000, th).as_secs_f64() - 1.0) / 0.1;
        let mut e = Exponential::new(ExponentialConfig::plain()).unwrap();
        let k = silence_to(&mut e, second, 200, th).as_secs_f64();
        println!("{th:>9} | {yn:>22.4} | {ya:>23.4} | {k:>20.3}");
    }
    println!();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut a = Akka::new(AkkaConfig::default()).unwrap();
    println!(
        "Akka cluster defaults, regular 1 s heartbeats:   φ = 8 after {:.1} ms of silence",
        ms(silence_to(&mut a, second, 2_000, 8.0))
    );
    let mut a = Akka::new(AkkaConfig::default()).unwrap();
    println!(
        "Akka cluster defaults, one heartbeat only:       φ = 8 after {:.1} ms",
        ms(silence_to(&mut a, second, 1, 8.0))
    );
    let mut a = Akka::new(AkkaConfig::remote_watch()).unwrap();
    println!(
        "Akka remote-watch defaults, regular 1 s:         φ = 10 after {:.1} ms",
        ms(silence_to(&mut a, second, 2_000, 10.0))
    );
    let mut c = Exponential::new(ExponentialConfig::cassandra()).unwrap();
    println!(
        "Cassandra defaults, regular 1 s gossip:          φ = 8 after {:.1} ms",
        ms(silence_to(&mut c, second, 2_000, 8.0))
    );
    let mut d = Deadline::new(DeadlineConfig::default()).unwrap();
    println!(
        "Akka deadline defaults (3 s + 10 s):             unavailable after {:.1} ms",
        ms(silence_to(&mut d, second, 2, 1.0))
    );
}
