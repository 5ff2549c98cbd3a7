//! Compatibility tests: the published test suites of other failure detectors,
//! ported as facts (same inputs, same expected values, same tolerances).
//!
//! Sources (see the provenance table of the extracted vectors):
//!
//! - Akka / Pekko `AccrualFailureDetectorSpec`, `DeadlineFailureDetectorSpec`,
//!   `FailureDetectorRegistrySpec` (identical numbers in Akka 2013, Akka 2025
//!   and Pekko);
//! - Cassandra `ArrivalWindowTest`, `ArrayBackedBoundedStatsTest`,
//!   `FailureDetectorTest`;
//! - chitchat `failure_detector.rs` tests;
//! - Hazelcast `PhiAccrualFailureDetectorTest`, `ClusterFailureDetectorTest`;
//! - GreptimeDB's and `phi-accrual-failure-detector`'s ports of Akka's spec;
//! - regression tests for the bugs of other Rust crates.
//!
//! How fake clocks are translated. Akka's tests drive a fake clock whose
//! ticks are consumed by calls: `heartbeat()`, `phi` and `isAvailable` each
//! consume one tick, `isMonitoring` none. Our API takes the time as an
//! argument, so each call is given the tick it would have consumed.
//!
//! How levels compare. Akka's `phi` returns `-0.0` far left of the mean and
//! `+inf` beyond y ≈ 21.59; this crate's softplus form returns a value ≥ 0 and
//! a large finite value there. Assertions are ported in their intended
//! meaning: "== 0.0" stays `== 0.0`, and "+inf / unavailable" becomes
//! "unavailable", i.e. `level >= threshold`. Where Akka's `-0.0` comes from
//! rounding (`1 - 1/(1+e)` is 1.0 once `e >= 2^54`), this crate returns
//! exactly 0 too; see
//! `the_level_at_the_heartbeat_instant_is_exactly_zero_as_in_hazelcast`.
//!
//! Tolerances: `±t (≤)` is inclusive, as ScalaTest's `+-` and JUnit's
//! `assertEquals(expected, actual, delta)`; `±t (<)` is strict, as chitchat's
//! and GreptimeDB's `abs() < t`.

use std::collections::BTreeMap;
use std::f64::consts::{LN_10, LOG10_2};
use std::time::Duration;

use vigil_detector::{
    Admission, Akka, AkkaConfig, Bootstrap, ConfigError, Deadline, DeadlineConfig, Detector, Exponential,
    ExponentialConfig, HeartbeatOutcome, Instant, MaxInterval, Model, ModelConfig, Normal, NormalConfig, Policy,
    PolicyId, Registry, RegistryConfig, SkipReason,
};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// The instant `ms` milliseconds after the origin (a fake-clock tick).
fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// `|got - expected| <= tol` (inclusive, ScalaTest `+-`, JUnit delta).
#[track_caller]
fn assert_within(got: f64, expected: f64, tol: f64, what: &str) {
    assert!((got - expected).abs() <= tol, "{what}: got {got}, expected {expected} ± {tol} (inclusive)");
}

/// `|got - expected| < tol` (strict, chitchat's and GreptimeDB's `abs() < t`).
#[track_caller]
fn assert_strictly_within(got: f64, expected: f64, tol: f64, what: &str) {
    assert!((got - expected).abs() < tol, "{what}: got {got}, expected {expected} ± {tol} (strict)");
}

/// Feeds heartbeats at the given ticks (milliseconds).
fn beat<D: Detector>(d: &mut D, ticks: impl IntoIterator<Item = u64>) {
    for t in ticks {
        d.heartbeat(at(t));
    }
}

/// An Akka detector with the five parameters of Akka's constructor.
fn akka(threshold: f64, window: usize, min_std_ms: u64, pause_ms: u64, first_estimate_ms: u64) -> Akka {
    Akka::new(AkkaConfig {
        threshold,
        window,
        min_std_dev: millis(min_std_ms),
        acceptable_pause: millis(pause_ms),
        first_heartbeat_estimate: millis(first_estimate_ms),
    })
    .expect("valid Akka configuration")
}

/// `createFailureDetector` of Akka's `AccrualFailureDetectorSpec`: window
/// 1,000, min σ 100 ms, first-heartbeat estimate 1 s.
fn akka_spec(threshold: f64, pause_ms: u64) -> Akka {
    akka(threshold, 1000, 100, pause_ms, 1000)
}

/// Akka's `isAvailable`: `phi < threshold` (strict), at the detector's own
/// threshold.
fn available(d: &Akka, tick: u64) -> bool {
    d.is_available(at(tick), d.threshold())
}

/// Akka's test helper `cdf(phi) = 1 - 10^(-phi)`.
fn cdf(phi: f64) -> f64 {
    1.0 - 10f64.powf(-phi)
}

/// Where the fitted detectors of the pure-function tests had their last
/// heartbeat.
const T0_MS: u64 = 1_000_000;

/// An Akka detector whose fitted parameters are exactly μ = `mean_ms` and
/// σ = `std_ms`, last heartbeat at `T0_MS`.
///
/// Akka's μ is the window mean plus the acceptable pause, and σ the window's
/// standard deviation floored at `min_std_dev`. A window of 2 filled with
/// zero-length intervals (three heartbeats at the same instant; the two
/// bootstrap samples are evicted) has mean 0 and σ 0, so μ = pause and σ =
/// the floor, both exactly.
fn akka_fitted(mean_ms: u64, std_ms: u64) -> Akka {
    let mut d = akka(8.0, 2, std_ms, mean_ms, 1000);
    beat(&mut d, [T0_MS; 3]);
    let s = d.stats();
    assert_eq!(
        (s.samples, s.mean, s.std_dev),
        (2, Some(Duration::ZERO), Some(Duration::ZERO)),
        "bootstrap samples must be evicted, leaving two zero intervals"
    );
    d
}

/// Akka's pure `phi(timeDiff, mean, std)`, through a fitted detector.
///
/// The function depends on `y = (timeDiff - mean) / std` only (its branch
/// `timeDiff > mean` is `y > 0`), and every quantity here is a whole number
/// of nanoseconds, exact in `f64`, so `y` is the same double as Akka's.
fn phi(time_diff_ms: u64, mean_ms: u64, std_ms: u64) -> f64 {
    akka_fitted(mean_ms, std_ms).level(at(T0_MS + time_diff_ms))
}

// ---------------------------------------------------------------------------
// Akka / Pekko: AccrualFailureDetectorSpec, pure phi function
// ---------------------------------------------------------------------------

mod akka_accrual_phi_function {
    use super::*;

    #[test]
    fn the_fitted_detector_has_exactly_the_requested_mean_and_deviation() {
        // Guards the premise of the helper: an offset of exactly one σ past μ
        // is y = 1, where the logistic φ is 0.79951 (reference table B1,
        // 5 decimals, so ±0.000005).
        assert_within(phi(1_100, 1_000, 100), 0.79951, 5e-6, "phi(1100, 1000, 100)");
        assert_within(phi(20, 0, 10), 1.64283, 5e-6, "phi(20, 0, 10)");
    }

    #[test]
    fn uses_a_good_enough_cumulative_distribution_function() {
        // Tolerances are Akka's: ±0.001 (≤) on cdf(phi), ±0.0001 for 40 ms.
        for (time_diff, mean, std, expected, tol) in [
            (0, 0, 10, 0.5, 0.001),
            (6, 0, 10, 0.7257, 0.001),
            (15, 0, 10, 0.9332, 0.001),
            (20, 0, 10, 0.97725, 0.001),
            (25, 0, 10, 0.99379, 0.001),
            (35, 0, 10, 0.99977, 0.001),
            (40, 0, 10, 0.99997, 0.0001),
            (22, 20, 3, 0.7475, 0.001),
        ] {
            let got = cdf(phi(time_diff, mean, std));
            assert_within(got, expected, tol, &format!("cdf(phi({time_diff}, {mean}, {std}))"));
        }
        // Strictly increasing over 0..=40 ms (Akka: sliding pairs of 0 to 40).
        let d = akka_fitted(0, 10);
        for x in 0..40 {
            let (a, b) = (d.level(at(T0_MS + x)), d.level(at(T0_MS + x + 1)));
            assert!(a < b, "phi({x}, 0, 10) = {a} must be < phi({}, 0, 10) = {b}", x + 1);
        }
    }

    #[test]
    fn handles_outliers_without_losing_precision_or_hitting_exceptions() {
        // Akka: phi(10, 0, 1) = 38.0 ± 1.0 (≤).
        assert_within(phi(10, 0, 1), 38.0, 1.0, "phi(10, 0, 1)");
        // Akka: phi(-25, 0, 1) == 0.0 (Akka's value is -0.0; ours is +0.0).
        // Our time cannot run before the last heartbeat, so the same y = -25
        // is reached as phi(0, 25, 1): only y matters (see `phi`).
        assert_eq!(phi(0, 25, 1), 0.0, "phi at y = -25");
    }

    #[test]
    fn returns_realistic_phi_values() {
        // Mean 1000 ms, σ 100 ms; Akka's tolerance ±0.1 (≤).
        for (time_diff, expected) in
            [(0, 0.0), (500, 0.1), (1000, 0.3), (1200, 1.6), (1400, 4.7), (1600, 10.8), (1700, 15.3)]
        {
            assert_within(phi(time_diff, 1000, 100), expected, 0.1, &format!("phi({time_diff}, 1000, 100)"));
        }
        // A larger σ means less suspicion for the same lateness (strict).
        let (wide, narrow) = (phi(1100, 1000, 500), phi(1100, 1000, 100));
        assert!(wide < narrow, "phi(1100, 1000, 500) = {wide} must be < phi(1100, 1000, 100) = {narrow}");
    }
}

// ---------------------------------------------------------------------------
// Akka / Pekko: AccrualFailureDetectorSpec, stateful cases
// ---------------------------------------------------------------------------

mod akka_accrual_detector {
    use super::*;

    #[test]
    fn returns_phi_of_zero_on_startup_when_there_are_no_heartbeats() {
        // Akka uses the real clock here: any two instants will do.
        let d = akka_spec(8.0, 0);
        assert_eq!(d.level(at(12_345)), 0.0);
        assert_eq!(d.level(at(67_890)), 0.0);
    }

    #[test]
    fn returns_phi_based_on_the_guess_when_only_one_heartbeat_arrived() {
        // Ticks 0, 1000, 2000, 3000 (4000 unused).
        let mut d = akka_spec(8.0, 0);
        d.heartbeat(at(0));
        assert_within(d.level(at(1000)), 0.3, 0.2, "phi at tick 1000");
        assert_within(d.level(at(2000)), 4.5, 0.3, "phi at tick 2000");
        let l = d.level(at(3000));
        assert!(l > 15.0, "phi at tick 3000 = {l} must be > 15.0");
    }

    #[test]
    fn returns_phi_using_the_first_interval_after_the_second_heartbeat() {
        // Ticks 0 (heartbeat), 100 (phi), 200 (heartbeat), 300 (phi).
        let mut d = akka_spec(8.0, 0);
        d.heartbeat(at(0));
        let l = d.level(at(100));
        assert!(l > 0.0, "phi at tick 100 = {l} must be > 0");
        d.heartbeat(at(200));
        // The phi call consumed tick 100, so the interval recorded is 200 ms.
        let s = d.stats();
        assert_eq!((s.samples, s.last_interval), (3, Some(millis(200))));
        let l = d.level(at(300));
        assert!(l > 0.0, "phi at tick 300 = {l} must be > 0");
    }

    #[test]
    fn marks_a_node_as_monitored_after_a_series_of_successful_heartbeats() {
        // Ticks 0, 1000, 1100 (heartbeats), 1200 (isAvailable).
        let mut d = akka_spec(8.0, 0);
        assert!(!d.is_monitoring());
        beat(&mut d, [0, 1000, 1100]);
        assert!(d.is_monitoring());
        assert!(available(&d, 1200));
    }

    #[test]
    fn marks_a_node_as_dead_if_heartbeats_are_missed() {
        // Threshold 3; ticks 0, 1000, 1100 (heartbeats), 1200, 8200.
        let mut d = akka_spec(3.0, 0);
        beat(&mut d, [0, 1000, 1100]);
        assert!(available(&d, 1200));
        assert!(!available(&d, 8200));
    }

    #[test]
    fn marks_a_node_as_available_again_when_it_resumes_heartbeats_after_being_marked_dead() {
        // Threshold 8, pause 3 s. 1,000 heartbeats at 0, 1000, ..., 999000.
        let mut d = akka_spec(8.0, 3000);
        beat(&mut d, (0..1000).map(|i| i * 1000));
        // After a 5 minute pause. Akka's phi is +inf here; ours is large and
        // finite, so "unavailable" is the ported meaning.
        assert!(!available(&d, 1_299_000));
        d.heartbeat(at(1_299_100)); // interval 300100 dropped: not available
        assert!(available(&d, 1_300_000));
        d.heartbeat(at(1_300_100));
        // After a 7 s pause (Akka: +inf).
        assert!(!available(&d, 1_307_100));
        d.heartbeat(at(1_307_200)); // interval 7100 dropped
        assert!(available(&d, 1_308_100));
        d.heartbeat(at(1_308_200));
        assert!(available(&d, 1_309_100));
        // The two intervals that ended unavailable periods were not recorded.
        assert_eq!(d.stats().skipped, 2);
    }

    #[test]
    fn accepts_some_configured_missing_heartbeats() {
        // Pause 3 s; ticks 0..3000 (heartbeats), 7000, 8000 (heartbeat), 9000.
        let mut d = akka_spec(8.0, 3000);
        beat(&mut d, [0, 1000, 2000, 3000]);
        assert!(available(&d, 7000));
        d.heartbeat(at(8000));
        assert!(available(&d, 9000));
    }

    #[test]
    fn fails_after_the_configured_acceptable_missing_heartbeats() {
        // Pause 3 s; ticks 0..5000 (6 heartbeats), 5500, 6000 (heartbeat), 11000.
        let mut d = akka_spec(8.0, 3000);
        beat(&mut d, [0, 1000, 2000, 3000, 4000, 5000]);
        assert!(available(&d, 5500));
        d.heartbeat(at(6000));
        assert!(!available(&d, 11_000));
    }

    #[test]
    fn uses_at_most_max_sample_size_heartbeats() {
        // Window 3; ticks 0, 100, 200, 300 (heartbeats), 400 (phi1), 1000,
        // 1500, 2000, 2500 (heartbeats), 3000 (phi2).
        let mut d = akka(8.0, 3, 100, 0, 1000);
        beat(&mut d, [0, 100, 200, 300]);
        let phi1 = d.level(at(400));
        beat(&mut d, [1000, 1500, 2000, 2500]);
        let phi2 = d.level(at(3000));
        // Akka: phi2 should === (phi1 +- 0.001) (≤).
        assert_within(phi2, phi1, 0.001, "phi2 vs phi1");
        // The window now holds only the last three 500 ms intervals (the
        // 700 ms interval ended an unavailable period and was dropped).
        let s = d.stats();
        assert_eq!((s.samples, s.mean, s.std_dev, s.skipped), (3, Some(millis(500)), Some(Duration::ZERO), 1));
    }
}

// ---------------------------------------------------------------------------
// Akka / Pekko: AccrualFailureDetectorSpec, "Statistics for heartbeats"
// ---------------------------------------------------------------------------

mod akka_heartbeat_history {
    use super::*;

    /// A window of `window` samples holding exactly the given intervals (no
    /// bootstrap), as a `Normal` detector.
    ///
    /// Akka's `HeartbeatHistory` holds unitless integers (milliseconds in
    /// practice). Our `stats()` reports the standard deviation as a
    /// `Duration` rounded to the nanosecond, so a variance rebuilt from it in
    /// ms² carries an error up to 2σ × 0.5 ns (8.7e-5 ms² for σ = 87 ms),
    /// more than Akka's ±0.00001. The same numbers are therefore fed as
    /// seconds, where that error is 1e-6 times smaller.
    fn history(intervals_s: &[u64], window: usize) -> Normal {
        let mut d =
            Normal::new(NormalConfig { window, bootstrap: Bootstrap::None, ..NormalConfig::default() }).unwrap();
        let mut t = secs(1000);
        d.heartbeat(Instant::ZERO + t);
        for &i in intervals_s {
            t += secs(i);
            d.heartbeat(Instant::ZERO + t);
        }
        d
    }

    /// (mean, population variance) in the window's unit.
    fn mean_and_variance(d: &Normal) -> (f64, f64) {
        let s = d.stats();
        let mean = s.mean.expect("samples").as_secs_f64();
        let std = s.std_dev.expect("samples").as_secs_f64();
        (mean, std * std)
    }

    // Akka's tolerance: ±0.00001 (≤) on mean and variance.
    const TOL: f64 = 0.00001;

    #[test]
    fn calculates_the_correct_mean_and_variance() {
        let d = history(&[100, 200, 125, 340, 130], 20);
        let (mean, variance) = mean_and_variance(&d);
        assert_within(mean, 179.0, TOL, "mean");
        assert_within(variance, 7584.0, TOL, "variance");
    }

    #[test]
    fn has_zero_variance_for_one_sample() {
        let d = history(&[1000], 600);
        let (_, variance) = mean_and_variance(&d);
        assert_within(variance, 0.0, TOL, "variance");
    }

    #[test]
    fn is_capped_by_the_max_sample_size() {
        let mut d = history(&[100, 110, 90], 3);
        let (mean, variance) = mean_and_variance(&d);
        assert_within(mean, 100.0, TOL, "mean of [100, 110, 90]");
        assert_within(variance, 66.6666667, TOL, "variance of [100, 110, 90]");

        let last = d.last_heartbeat().unwrap();
        d.heartbeat(last + secs(140));
        let (mean, variance) = mean_and_variance(&d);
        assert_eq!(d.stats().samples, 3);
        assert_within(mean, 113.333333, TOL, "mean of [110, 90, 140]");
        assert_within(variance, 422.222222, TOL, "variance of [110, 90, 140]");

        let last = d.last_heartbeat().unwrap();
        d.heartbeat(last + secs(80));
        let (mean, variance) = mean_and_variance(&d);
        assert_eq!(d.stats().samples, 3);
        assert_within(mean, 103.333333, TOL, "mean of [90, 140, 80]");
        assert_within(variance, 688.88888889, TOL, "variance of [90, 140, 80]");
    }
}

// ---------------------------------------------------------------------------
// Akka: bootstrap (PhiAccrualFailureDetector.scala, "firstHeartbeat")
// ---------------------------------------------------------------------------

mod akka_bootstrap {
    use super::*;

    #[test]
    fn the_bootstrap_is_the_estimate_plus_and_minus_a_quarter() {
        // Default 1 s: intervals [750, 1250] ms, mean 1000, population σ 250.
        let mut d = akka_spec(8.0, 0);
        d.heartbeat(at(0));
        let s = d.stats();
        assert_eq!((s.samples, s.mean, s.std_dev), (2, Some(millis(1000)), Some(millis(250))));
        // With a window of 1 the second bootstrap sample evicts the first:
        // history [1250].
        let mut d = akka(8.0, 1, 100, 0, 1000);
        d.heartbeat(at(0));
        let s = d.stats();
        assert_eq!((s.samples, s.mean), (1, Some(millis(1250))));
    }

    #[test]
    fn the_bootstrap_spread_is_a_quarter_of_the_estimate_in_whole_milliseconds() {
        // Akka: mean = estimate.toMillis (Long), std = mean / 4 (Long
        // division), history = [mean - std, mean + std]. With 1 ms: [1, 1].
        let mut d = akka(8.0, 1000, 100, 0, 1);
        d.heartbeat(at(0));
        let s = d.stats();
        assert_eq!((s.samples, s.mean, s.std_dev), (2, Some(millis(1)), Some(Duration::ZERO)), "estimate 1 ms");
        // With 1001 ms: 1001 / 4 = 250 -> [751, 1251], σ exactly 250 ms.
        let mut d = akka(8.0, 1000, 100, 0, 1001);
        d.heartbeat(at(0));
        let s = d.stats();
        assert_eq!((s.mean, s.std_dev), (Some(millis(1001)), Some(millis(250))), "estimate 1001 ms");
    }
}

// ---------------------------------------------------------------------------
// Akka / Pekko: DeadlineFailureDetectorSpec
// ---------------------------------------------------------------------------

mod akka_deadline {
    use super::*;

    /// The spec's helper: heartbeat interval 1 s; every case uses an
    /// acceptable pause of 4 s, so the deadline is 5,000 ms.
    fn deadline() -> Deadline {
        Deadline::new(DeadlineConfig { heartbeat_interval: secs(1), acceptable_pause: secs(4) }).unwrap()
    }

    /// Akka: `heartbeatTimestamp + deadline > now`; ours: level < 1.
    fn available(d: &Deadline, tick: u64) -> bool {
        d.is_available(at(tick), 1.0)
    }

    #[test]
    fn marks_a_node_as_monitored_after_a_series_of_successful_heartbeats() {
        let mut d = deadline();
        assert!(!d.is_monitoring());
        beat(&mut d, [0, 1000, 1100]);
        assert!(d.is_monitoring());
        assert!(available(&d, 1200));
    }

    #[test]
    fn marks_a_node_as_dead_if_heartbeats_are_missed() {
        let mut d = deadline();
        beat(&mut d, [0, 1000, 1100]);
        assert!(available(&d, 1200));
        assert!(!available(&d, 8200)); // 1100 + 5000 > 8200 is false
    }

    #[test]
    fn marks_a_node_as_available_again_when_it_resumes_heartbeats_after_being_marked_dead() {
        let mut d = deadline();
        beat(&mut d, (0..1000).map(|i| i * 1000));
        assert!(!available(&d, 1_299_000));
        d.heartbeat(at(1_299_100));
        assert!(available(&d, 1_300_000));
        d.heartbeat(at(1_300_100));
        assert!(!available(&d, 1_307_100)); // 1305100 > 1307100 is false
        d.heartbeat(at(1_307_200));
        assert!(available(&d, 1_308_100));
        d.heartbeat(at(1_308_200));
        assert!(available(&d, 1_309_100));
    }

    #[test]
    fn accepts_some_configured_missing_heartbeats() {
        let mut d = deadline();
        beat(&mut d, [0, 1000, 2000, 3000]);
        assert!(available(&d, 7000)); // 8000 > 7000
        d.heartbeat(at(8000));
        assert!(available(&d, 9000));
    }

    #[test]
    fn fails_after_the_configured_acceptable_missing_heartbeats_exactly_at_the_deadline() {
        let mut d = deadline();
        beat(&mut d, [0, 1000, 2000, 3000, 4000, 5000]);
        assert!(available(&d, 5500));
        d.heartbeat(at(6000));
        // Boundary: 6000 + 5000 > 11000 is false, so unavailable at 11000.
        assert!(!available(&d, 11_000));
        // One millisecond earlier it is still available.
        assert!(available(&d, 10_999));
    }
}

// ---------------------------------------------------------------------------
// Akka / Pekko: FailureDetectorRegistrySpec
// ---------------------------------------------------------------------------

mod akka_registry {
    use super::*;

    type Reg = Registry<&'static str, Akka>;

    /// The spec's registry: Akka detectors with min σ 10 ms (this spec's
    /// default), window 1,000, estimate 1 s; one policy at the threshold.
    fn registry(threshold: f64, pause_ms: u64) -> Reg {
        let prototype = akka(threshold, 1000, 10, pause_ms, 1000);
        Registry::new(prototype, RegistryConfig::new(vec![Policy::new("available", threshold)])).unwrap()
    }

    /// Availability as Akka's registry would compute it for a known peer
    /// (`level < threshold`); `None` for a peer the registry does not know.
    fn available(r: &Reg, peer: &'static str, tick: u64) -> Option<bool> {
        let threshold = r.policy(PolicyId(0)).threshold;
        r.level(&peer, at(tick)).map(|l| l < threshold)
    }

    /// Akka's `isMonitoring`: no detector -> false.
    fn monitoring(r: &Reg, peer: &'static str) -> bool {
        r.detector(&peer).is_some_and(Akka::is_monitoring)
    }

    fn beat(r: &mut Reg, peer: &'static str, ticks: impl IntoIterator<Item = u64>) {
        for t in ticks {
            r.heartbeat(peer, at(t)).expect("admitted");
        }
    }

    #[test]
    fn marks_a_node_as_available_after_a_series_of_successful_heartbeats() {
        let mut r = registry(8.0, 0);
        beat(&mut r, "r1", [0, 1000, 1100]);
        assert_eq!(available(&r, "r1", 1200), Some(true));
    }

    #[test]
    fn marks_a_node_as_dead_if_heartbeats_are_missed() {
        // Threshold 3. The heartbeat of r2 consumes tick 5200 of the shared
        // fake clock; r1 is asked at 8200.
        let mut r = registry(3.0, 0);
        beat(&mut r, "r1", [0, 1000, 1100]);
        assert_eq!(available(&r, "r1", 1200), Some(true));
        beat(&mut r, "r2", [5200]);
        assert_eq!(available(&r, "r1", 8200), Some(false));
    }

    #[test]
    fn accepts_some_configured_missing_heartbeats() {
        let mut r = registry(8.0, 3000);
        beat(&mut r, "r1", [0, 1000, 2000, 3000]);
        assert_eq!(available(&r, "r1", 7000), Some(true));
        beat(&mut r, "r1", [8000]);
        assert_eq!(available(&r, "r1", 9000), Some(true));
    }

    #[test]
    fn fails_after_the_configured_acceptable_missing_heartbeats() {
        let mut r = registry(8.0, 3000);
        beat(&mut r, "r1", [0, 1000, 2000, 3000, 4000, 5000]);
        assert_eq!(available(&r, "r1", 5500), Some(true));
        beat(&mut r, "r1", [6000]);
        assert_eq!(available(&r, "r1", 11_000), Some(false));
    }

    #[test]
    fn forgets_a_node_after_explicit_removal_of_its_connection() {
        let mut r = registry(8.0, 0);
        beat(&mut r, "r1", [0, 1000, 1100]);
        assert_eq!(available(&r, "r1", 1200), Some(true));
        assert!(r.remove(&"r1", at(1300)));
        // Akka answers isAvailable = true for a removed resource (no detector,
        // no tick consumed). Our registry deliberately never claims an unknown
        // peer is available: it answers None.
        assert_eq!(r.level(&"r1", at(1300)), None);
        assert!(r.report(&"r1", at(1300)).is_none());
    }

    #[test]
    fn monitors_a_node_again_after_removal_when_heartbeats_resume() {
        // Ticks: heartbeats 0, 1000, 1100; isAvailable 2200; (isAvailable on
        // the removed resource consumes no tick); heartbeats 3300, 4400,
        // 5500; isAvailable 6600. (The source's comments assume one more
        // tick; the expected booleans are the same either way.)
        let mut r = registry(8.0, 0);
        assert!(!monitoring(&r, "r1"));
        beat(&mut r, "r1", [0, 1000, 1100]);
        assert_eq!(available(&r, "r1", 2200), Some(true));
        assert!(monitoring(&r, "r1"));
        assert!(r.remove(&"r1", at(2200)));
        assert!(!monitoring(&r, "r1"));
        // Akka: available (true). Ours: unknown (None).
        assert_eq!(available(&r, "r1", 3300), None);
        beat(&mut r, "r1", [3300, 4400, 5500]);
        assert_eq!(available(&r, "r1", 6600), Some(true));
        assert!(monitoring(&r, "r1"));
        // A fresh detector: bootstrap [750, 1250] plus two 1100 ms intervals.
        assert_eq!(r.report(&"r1", at(6600)).unwrap().stats.samples, 4);
    }
}

// ---------------------------------------------------------------------------
// Cassandra: ArrivalWindowTest, ArrayBackedBoundedStatsTest, FailureDetectorTest
// ---------------------------------------------------------------------------

mod cassandra {
    use super::*;

    /// Cassandra's `ArrivalWindow` with the test's window of 4.
    fn arrival_window() -> Exponential {
        Exponential::new(ExponentialConfig { window: 4, ..ExponentialConfig::cassandra() }).unwrap()
    }

    #[test]
    #[allow(clippy::approx_constant, reason = "0.4342 is Cassandra's published expectation, not a constant")]
    fn arrival_window_with_nano_time_gives_the_published_phi_values() {
        let mut d = arrival_window();
        // add(111, 222, 333, 444, 555 ms): the seed and four 111 ms
        // intervals; the window of 4 evicts the seed.
        beat(&mut d, [111, 222, 333, 444, 555]);
        let s = d.stats();
        assert_eq!((s.samples, s.mean), (4, Some(millis(111))));

        // Cassandra 2.0 (PHI_FACTOR · t / mean, the units of this crate):
        // 0.4342 and 9.566, tolerance ±0.01 (≤).
        assert_within(d.level(at(666)), 0.4342, 0.01, "2.0-era phi(666)");
        assert_within(d.level(at(3000)), 9.566, 0.01, "2.0-era phi(3000)");
        // Cassandra ≥ 2.1 (t / mean; conviction multiplies by PHI_FACTOR):
        // 1.0 and 22.03, tolerance ±0.01 (≤).
        assert_within(d.level(at(666)) * LN_10, 1.0, 0.01, "newer phi(666)");
        assert_within(d.level(at(3000)) * LN_10, 22.03, 0.01, "newer phi(3000)");
    }

    /// A window of `size` that has recorded the given intervals (ms), no seed.
    fn bounded_stats(size: usize, intervals_ms: impl IntoIterator<Item = u64>) -> Exponential {
        let mut d = Exponential::new(ExponentialConfig { window: size, ..ExponentialConfig::plain() }).unwrap();
        let mut t = 10_000;
        d.heartbeat(at(t));
        for i in intervals_ms {
            t += i;
            d.heartbeat(at(t));
        }
        d
    }

    #[test]
    fn bounded_stats_keep_the_last_values_and_their_mean() {
        // Cassandra: empty -> mean() == 0 (±0.001). This crate has no mean
        // for an empty window (None) and its level stays 0.
        let empty = bounded_stats(4, []);
        assert_eq!(empty.stats().mean, None);
        assert_eq!(empty.level(at(20_000)), 0.0);
        // add 1, 2, 3, 4, 5 -> {2, 3, 4, 5}, mean 3.5 (±0.001). The window
        // contents are not exposed; count, mean (3.5) and population σ
        // (sqrt(1.25)) identify {2, 3, 4, 5} among windows of later values.
        let d = bounded_stats(4, 1..=5);
        let s = d.stats();
        assert_eq!(s.samples, 4);
        assert_within(s.mean.unwrap().as_secs_f64() * 1e3, 3.5, 0.001, "mean (ms)");
        assert_within(s.std_dev.unwrap().as_secs_f64() * 1e3, 1.25f64.sqrt(), 1e-6, "σ (ms), ns rounding");
    }

    #[test]
    fn bounded_stats_over_multiple_rounds_keep_the_last_five_values() {
        // Size 5, add 0..=1000 -> {996, 997, 998, 999, 1000}: mean 998,
        // population variance 2. Tolerance: exact mean; σ to the nanosecond
        // rounding of `stats()` (±1e-6 ms).
        let d = bounded_stats(5, 0..=1000);
        let s = d.stats();
        assert_eq!((s.samples, s.mean), (5, Some(millis(998))));
        assert_within(s.std_dev.unwrap().as_secs_f64() * 1e3, 2f64.sqrt(), 1e-6, "σ (ms)");
    }

    #[test]
    fn a_single_report_convicts_at_threshold_zero_after_any_elapsed_time() {
        // FailureDetectorTest.testConvictAfterLeft: threshold 0, one report,
        // then interpret: PHI_FACTOR · t / mean > 0 for any t > 0.
        let mut d = Exponential::new(ExponentialConfig::cassandra()).unwrap();
        d.heartbeat(at(5000));
        let l = d.level(Instant::from_nanos(at(5000).as_nanos() + 1));
        assert!(l > 0.0, "level 1 ns after the only report = {l} must be > 0");
    }
}

// ---------------------------------------------------------------------------
// chitchat: failure_detector.rs tests
// ---------------------------------------------------------------------------

mod chitchat {
    use super::*;
    use std::collections::BTreeSet;

    /// chitchat's φ is `t / mean`; ours is `t / (mean · ln 10)`.
    fn chitchat_phi<D: Detector>(d: &D, now: Instant) -> f64 {
        d.level(now) * LN_10
    }

    /// chitchat's `SamplingWindow` exactly: the first report records
    /// `initial_interval` as a real sample, intervals above `max_interval`
    /// are ignored (≤ kept), no prior.
    fn sampling_window(window: usize, max_interval: Duration, initial_interval: Duration) -> ExponentialConfig {
        ExponentialConfig {
            window,
            bootstrap: Bootstrap::Seed(initial_interval),
            admission: Admission { max_interval: Some(MaxInterval::Ignore(max_interval)), ..Admission::default() },
            prior: None,
        }
    }

    /// chitchat's `FailureDetectorConfig::default()` as its code reads:
    /// threshold 8, window 1,000, max interval 10 s, initial interval 5 s.
    fn chitchat_default() -> ExponentialConfig {
        sampling_window(1000, secs(10), secs(5))
    }

    const START: Instant = Instant::from_secs(1_000);

    #[test]
    fn sampling_window_ignores_long_intervals_but_restarts_the_silence() {
        // Window 10, max interval 5 s, initial interval 2 s; tolerance
        // f64::EPSILON (<), applied to chitchat's unscaled φ.
        let mut w = Exponential::new(sampling_window(10, secs(5), secs(2))).unwrap();
        w.heartbeat(START); // window [2.0]
        w.heartbeat(START + secs(3)); // window [2.0, 3.0], mean 2.5
        assert_strictly_within(chitchat_phi(&w, START + secs(3)), 0.0, f64::EPSILON, "phi at 3 s");
        assert_strictly_within(chitchat_phi(&w, START + secs(4)), 0.4, f64::EPSILON, "phi at 4 s");
        // 6 s > 5 s: not recorded, but the silence restarts at 9 s.
        let outcome = w.heartbeat(START + secs(9));
        assert!(
            matches!(outcome, HeartbeatOutcome::Skipped { reason: SkipReason::TooLong, .. }),
            "6 s interval must be skipped as too long, got {outcome:?}"
        );
        // "Mean value should not change."
        assert_strictly_within(chitchat_phi(&w, START + secs(11)), 0.8, f64::EPSILON, "phi at 11 s");
    }

    #[test]
    fn bounded_array_stats_average_the_last_ten_values() {
        // Size 10: append 1..9 -> len 9, mean 5.0; append 10..13 -> len 10,
        // mean 8.5 (window [4..13]). Tolerance f64::EPSILON (<) in chitchat;
        // here exact equality of the mean (in seconds).
        let mut d = Exponential::new(ExponentialConfig { window: 10, ..ExponentialConfig::plain() }).unwrap();
        let mut t = START;
        d.heartbeat(t);
        for x in 1..=9 {
            t = t + secs(x);
            d.heartbeat(t);
        }
        let s = d.stats();
        assert_eq!((s.samples, s.mean), (9, Some(secs(5))));
        for x in 10..=13 {
            t = t + secs(x);
            d.heartbeat(t);
        }
        let s = d.stats();
        assert_eq!((s.samples, s.mean), (10, Some(millis(8500))));
    }

    #[test]
    fn a_node_is_live_after_its_initial_interval_and_dead_past_eight_means() {
        // Default config: one report (window [5.0]); after 1 s φ = 0.2
        // (live); after 41 s φ = 8.2 > 8 (dead, strict comparison).
        for (name, config) in [
            ("chitchat as published", chitchat_default()),
            ("ExponentialConfig::chitchat()", ExponentialConfig::chitchat()),
        ] {
            let mut d = Exponential::new(config).unwrap();
            d.heartbeat(START);
            let phi = chitchat_phi(&d, START + secs(1));
            assert!(phi <= 8.0, "{name}: phi after 1 s = {phi} must not exceed 8 (live)");
            let phi = chitchat_phi(&d, START + secs(41));
            assert!(phi > 8.0, "{name}: phi after 41 s = {phi} must exceed 8 (dead)");
        }
    }

    /// A tiny deterministic PRNG (xorshift64) standing in for
    /// `rand::thread_rng()` in chitchat's randomised tests.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        /// chitchat's random step: 1 or 2 seconds.
        fn step(&mut self) -> Duration {
            secs(1 + self.next() % 2)
        }
    }

    /// chitchat's `FailureDetector` bookkeeping around our detectors: one
    /// window per node, live and dead sets, `update_node_liveness`.
    struct Chitchat {
        config: ExponentialConfig,
        /// chitchat deletes a node's window when it is judged dead. With
        /// `false` the detector is kept and its own reset rule
        /// (`ExponentialConfig::chitchat()`) restarts it at the next
        /// heartbeat instead.
        delete_on_dead: bool,
        windows: BTreeMap<&'static str, Exponential>,
        live: BTreeSet<&'static str>,
        dead: BTreeSet<&'static str>,
    }

    impl Chitchat {
        fn new(config: ExponentialConfig, delete_on_dead: bool) -> Chitchat {
            Chitchat { config, delete_on_dead, windows: BTreeMap::new(), live: BTreeSet::new(), dead: BTreeSet::new() }
        }

        fn report(&mut self, node: &'static str, now: Instant) -> HeartbeatOutcome {
            let config = &self.config;
            self.windows.entry(node).or_insert_with(|| Exponential::new(config.clone()).unwrap()).heartbeat(now)
        }

        fn update(&mut self, node: &'static str, now: Instant) {
            let Some(d) = self.windows.get(node) else { return };
            if chitchat_phi(d, now) > 8.0 {
                self.live.remove(node);
                self.dead.insert(node);
                if self.delete_on_dead {
                    self.windows.remove(node);
                }
            } else {
                self.live.insert(node);
                self.dead.remove(node);
            }
        }

        fn live(&self) -> Vec<&'static str> {
            self.live.iter().copied().collect()
        }

        fn dead(&self) -> Vec<&'static str> {
            self.dead.iter().copied().collect()
        }
    }

    /// The two settings the randomised tests run with: chitchat's own
    /// semantics, and this crate's chitchat preset.
    fn settings() -> [(&'static str, Chitchat); 2] {
        [
            ("chitchat as published", Chitchat::new(chitchat_default(), true)),
            ("ExponentialConfig::chitchat()", Chitchat::new(ExponentialConfig::chitchat(), false)),
        ]
    }

    const NODES: [&str; 3] = ["node-10001", "node-10002", "node-10003"];

    #[test]
    fn randomly_reporting_nodes_are_live_and_all_are_dead_after_fifty_seconds_of_silence() {
        // 2001 reports, each after a random 1-2 s step, to one of 3 random
        // nodes; all live. 50 s later, all dead. (chitchat then checks its
        // garbage collection after a 24 h grace period: membership
        // bookkeeping with no counterpart in this crate; not ported.)
        for (name, mut fd) in settings() {
            let mut rng = XorShift(0x5eed_c417_c4a7_0001);
            let mut now = START;
            for _ in 0..2001 {
                now = now + rng.step();
                let node = NODES[(rng.next() % 3) as usize];
                fd.report(node, now);
            }
            for node in NODES {
                fd.update(node, now);
            }
            assert_eq!(fd.live(), NODES, "{name}: all live after the reports");
            assert!(fd.dead().is_empty(), "{name}");

            now = now + secs(50);
            for node in NODES {
                fd.update(node, now);
            }
            assert!(fd.live().is_empty(), "{name}: none live after 50 s of silence");
            assert_eq!(fd.dead(), NODES, "{name}: all dead after 50 s of silence");
        }
    }

    #[test]
    fn a_node_goes_from_live_to_dead_to_live_with_a_fresh_window() {
        // One node: 2001 reports after random 1-2 s steps -> live; 20 s of
        // silence -> dead (φ ≈ 20 / 1.5 ≈ 13 > 8); 501 more reports -> live
        // when asked right after the last one (φ = 0).
        for (name, mut fd) in settings() {
            let node = NODES[0];
            let mut rng = XorShift(0x0dd_ba11_cafe_f00d);
            let mut now = START;
            for _ in 0..2001 {
                now = now + rng.step();
                fd.report(node, now);
            }
            fd.update(node, now);
            assert_eq!(fd.live(), [node], "{name}: live after 2001 reports");

            now = now + secs(20);
            fd.update(node, now);
            assert!(fd.live().is_empty(), "{name}: not live after 20 s of silence");

            for i in 0..501 {
                now = now + rng.step();
                let outcome = fd.report(node, now);
                if i == 0 {
                    // The window starts afresh: a new window (chitchat) or a
                    // restart by the preset's reset rule.
                    let expected_first = if fd.delete_on_dead {
                        matches!(outcome, HeartbeatOutcome::First)
                    } else {
                        matches!(outcome, HeartbeatOutcome::Restarted { .. })
                    };
                    assert!(expected_first, "{name}: first report after death gave {outcome:?}");
                }
            }
            fd.update(node, now);
            assert_eq!(fd.live(), [node], "{name}: live again");
            // The fresh window holds only what came after the death: the
            // 5 s seed (chitchat) plus 500 intervals.
            let s = fd.windows[node].stats();
            let expected_samples = if fd.delete_on_dead { 501 } else { 500 };
            assert_eq!(s.samples, expected_samples, "{name}: fresh window");
        }
    }
}

// ---------------------------------------------------------------------------
// Hazelcast: PhiAccrualFailureDetectorTest, ClusterFailureDetectorTest
// ---------------------------------------------------------------------------

mod hazelcast {
    use super::*;

    /// The test's fixture: threshold 1, window 100, min σ 100 ms, pause
    /// 1000 ms, first-heartbeat estimate 100 ms (bootstrap [75, 125]).
    fn phi_detector() -> Akka {
        akka(1.0, 100, 100, 1000, 100)
    }

    /// An arbitrary origin (Hazelcast uses the wall clock).
    const TS: u64 = 1_700_000_000_000;

    #[test]
    fn phi_accrual_member_is_assumed_alive_before_the_first_heartbeat() {
        let d = phi_detector();
        assert!(d.is_available(at(TS), 1.0));
        // nonSuspected_beforeFirstHeartbeat: 0, delta 0.
        assert_eq!(d.level(at(TS)), 0.0);
        // lastHeartbeat_whenNoHeartbeat: Hazelcast's NO_HEARTBEAT_TIMESTAMP
        // (-1) is None here.
        assert_eq!(d.last_heartbeat(), None);
    }

    #[test]
    fn phi_accrual_member_is_alive_until_the_heartbeat_timeout() {
        let mut d = phi_detector();
        d.heartbeat(at(TS));
        assert_eq!(d.last_heartbeat(), Some(at(TS)));
        assert!(d.is_available(at(TS), 1.0), "alive at the heartbeat");
        assert!(d.is_available(at(TS + 500), 1.0), "alive before the timeout");
        assert!(!d.is_available(at(TS + 2000), 1.0), "not alive after the timeout");
        let before = d.level(at(TS + 500));
        assert!(before < 1.0, "suspicion before the timeout = {before} must be < 1");
        let after = d.level(at(TS + 2000));
        assert!(after >= 1.0, "suspicion after the timeout = {after} must be >= 1");
        // suspicionLevel_whenHeartbeat expects exactly 0 (delta 0); Hazelcast
        // gets -0.0 by rounding, and so does this crate's Akka form (exact 0).
        let at_heartbeat = d.level(at(TS));
        assert_eq!(at_heartbeat, 0.0, "suspicion at the heartbeat");
    }

    #[test]
    fn phi_accrual_rejects_invalid_construction_arguments() {
        // Constructor order: (threshold, maxSampleSize, minStdDev, pause,
        // firstEstimate), all 1 except the one under test.
        let config = |threshold: f64, window: usize, first_ms: u64| AkkaConfig {
            threshold,
            window,
            min_std_dev: millis(1),
            acceptable_pause: millis(1),
            first_heartbeat_estimate: millis(first_ms),
        };
        // construct_withNegativeThreshold, construct_withZeroThreshold.
        for threshold in [-1.0, 0.0] {
            let err = Akka::new(config(threshold, 1, 1)).unwrap_err();
            assert!(matches!(err, ConfigError::NotPositive { field: "threshold", .. }), "{threshold}: {err:?}");
        }
        // construct_withNegativeMinStdDev / construct_withZeroMinStdDev pass
        // -1 and 0 in the maxSampleSize position. A negative size is not
        // representable in `usize`; zero is rejected.
        let err = Akka::new(config(1.0, 0, 1)).unwrap_err();
        assert!(matches!(err, ConfigError::ZeroWindow { .. }), "{err:?}");
        // construct_with{Negative,Zero}FirstHeartbeatEstimation: negative
        // durations are not representable; zero is rejected.
        let err = Akka::new(config(1.0, 1, 0)).unwrap_err();
        assert!(matches!(err, ConfigError::ZeroDuration { field: "first_heartbeat_estimate" }), "{err:?}");
        // construct_withNegativeAcceptableHeartbeatPause: not representable
        // (`Duration` is non-negative), so there is nothing to reject.
        // And the name the test meant: a zero minimum σ is rejected.
        let err = Akka::new(AkkaConfig { min_std_dev: Duration::ZERO, ..config(1.0, 1, 1) }).unwrap_err();
        assert!(matches!(err, ConfigError::ZeroDuration { field: "min_std_dev" }), "{err:?}");
    }

    /// `ClusterFailureDetectorTest`'s cases for one detector type, through a
    /// registry. `failure_level` is the assertions' failure level (1 for the
    /// deadline type, 10 for phi accrual).
    fn cluster_cases<D: Detector + Clone>(prototype: D, failure_level: f64, name: &str) {
        let new = || {
            Registry::<&'static str, D>::new(
                prototype.clone(),
                RegistryConfig::new(vec![Policy::new("alive", failure_level)]),
            )
            .unwrap()
        };
        let m = "member-localhost:5000";
        let alive = |r: &Registry<&'static str, D>, t: u64| r.level(&m, at(t)).map(|l| l < failure_level);
        let last = |r: &Registry<&'static str, D>| r.detector(&m).and_then(Detector::last_heartbeat);

        // Unknown member: Hazelcast answers isAlive false, lastHeartbeat 0
        // and suspicionLevel = the failure level. Our registry never claims
        // an unknown peer is available: every query answers None.
        let r = new();
        assert_eq!(alive(&r, TS), None, "{name}: member_isNotAlive_whenNoHeartbeat");
        assert_eq!(last(&r), None, "{name}: lastHeartbeat_whenNoHeartbeat");
        assert_eq!(r.level(&m, at(TS)), None, "{name}: suspicionLevel_whenNoHeartbeat");

        let mut r = new();
        r.heartbeat(m, at(TS)).unwrap();
        assert_eq!(alive(&r, TS), Some(true), "{name}: member_isAlive_whenHeartbeat");
        assert_eq!(alive(&r, TS + 500), Some(true), "{name}: member_isAlive_beforeHeartbeatTimeout");
        assert_eq!(alive(&r, TS + 2000), Some(false), "{name}: member_isNotAlive_afterHeartbeatTimeout");
        assert_eq!(last(&r), Some(at(TS)), "{name}: lastHeartbeat");
        let before = r.level(&m, at(TS + 500)).unwrap();
        assert!(before < failure_level, "{name}: suspicionLevel_beforeHeartbeatTimeout = {before}");
        let after = r.level(&m, at(TS + 2000)).unwrap();
        assert!(after >= failure_level, "{name}: suspicionLevel_afterHeartbeatTimeout = {after}");
        // suspicionLevel_whenHeartbeat (0, delta 0): exact for both types.
        let at_heartbeat = r.level(&m, at(TS)).unwrap();
        assert_eq!(at_heartbeat, 0.0, "{name}: suspicionLevel_whenHeartbeat");

        // remove_whenNoHeartbeat, remove_afterHeartbeat.
        let mut r = new();
        assert!(!r.remove(&m, at(TS)));
        assert_eq!(alive(&r, TS), None, "{name}: remove_whenNoHeartbeat");
        r.heartbeat(m, at(TS)).unwrap();
        assert!(r.remove(&m, at(TS)));
        assert_eq!(alive(&r, TS + 1), None, "{name}: remove_afterHeartbeat");

        // reset_whenNoHeartbeat, reset_afterHeartbeat: Hazelcast's reset()
        // clears every member, which is removing every peer here.
        // (`Registry::reset` instead keeps the peer and restarts its
        // first-heartbeat clock.)
        for heartbeat_first in [false, true] {
            let mut r = new();
            if heartbeat_first {
                r.heartbeat(m, at(TS)).unwrap();
            }
            let peers: Vec<&'static str> = r.peers().copied().collect();
            for p in peers {
                r.remove(&p, at(TS));
            }
            assert_eq!(alive(&r, TS + 1), None, "{name}: reset (heartbeat first: {heartbeat_first})");
        }
    }

    /// `PhiAccrualClusterFailureDetector(maxNoHeartbeatMillis = 1000,
    /// heartbeatIntervalMillis = 1)`: threshold 10, window 200, min σ 100 ms,
    /// pause 1000 ms, first-heartbeat estimate 1 ms.
    fn cluster_phi() -> Akka {
        akka(10.0, 200, 100, 1000, 1)
    }

    #[test]
    fn cluster_failure_detector_of_the_deadline_type() {
        // DeadlineClusterFailureDetector(1000): alive iff last + 1000 > ts.
        let d = Deadline::new(DeadlineConfig { heartbeat_interval: millis(1000), acceptable_pause: Duration::ZERO })
            .unwrap();
        cluster_cases(d, 1.0, "deadline");
    }

    #[test]
    fn cluster_failure_detector_of_the_phi_accrual_type() {
        cluster_cases(cluster_phi(), 10.0, "phi accrual");
    }

    #[test]
    fn the_level_at_the_heartbeat_instant_is_exactly_zero_as_in_hazelcast() {
        // PhiAccrualFailureDetectorTest.suspicionLevel_whenHeartbeat:
        // assertEquals(0, suspicionLevel(ts), 0).
        let mut d = phi_detector();
        d.heartbeat(at(TS));
        assert_eq!(d.level(at(TS)), 0.0, "PhiAccrualFailureDetectorTest");
        // ClusterFailureDetectorTest.suspicionLevel_whenHeartbeat (PHI).
        let mut d = cluster_phi();
        d.heartbeat(at(TS));
        assert_eq!(d.level(at(TS)), 0.0, "ClusterFailureDetectorTest");
    }
}

// ---------------------------------------------------------------------------
// Ports of Akka's spec in other projects (GreptimeDB, phi-accrual-failure-detector)
// ---------------------------------------------------------------------------

mod other_ports {
    use super::*;

    #[test]
    fn greptimedb_is_available_with_a_ten_second_pause() {
        // GreptimeDB defaults: threshold 8, min σ 100 ms, pause 10 s, window
        // 1,000, estimate 1 s.
        let ts = 1_700_000_000_000;
        let mut d = akka(8.0, 1000, 100, 10_000, 1000);
        assert!(available(&d, ts));
        assert_eq!(d.level(at(ts)), 0.0, "test_phi before any heartbeat");
        d.heartbeat(at(ts));
        assert!(available(&d, ts));
        // test_phi: phi(ts) == 0.0 after the heartbeat (y = -44: exactly 0).
        assert_eq!(d.level(at(ts)), 0.0, "test_phi at the heartbeat");
        assert!(available(&d, ts + 5000));
        assert!(d.level(at(ts + 5000)) < 8.0);
        assert!(!available(&d, ts + 20_000));
        assert!(d.level(at(ts + 20_000)) >= 8.0);
    }

    #[test]
    fn greptimedb_marks_a_node_available_again_with_its_shifted_timestamps() {
        // GreptimeDB's version of Akka's test: threshold 8, pause 3 s; after
        // the loop its `now` is 1,000,000 + 300,000.
        let mut d = akka_spec(8.0, 3000);
        beat(&mut d, (0..1000).map(|i| i * 1000));
        assert!(!available(&d, 1_300_000));
        d.heartbeat(at(1_300_100));
        assert!(available(&d, 1_301_000));
        d.heartbeat(at(1_301_100));
        assert!(!available(&d, 1_308_100));
        d.heartbeat(at(1_308_200));
        assert!(available(&d, 1_309_100));
        d.heartbeat(at(1_309_200));
        assert!(available(&d, 1_310_100));
    }

    /// `phi-accrual-failure-detector` 0.1's integration tests: threshold 8,
    /// window 100, min σ 10 ms, estimate 1 s.
    fn heilhead(pause_ms: u64) -> Akka {
        akka(8.0, 100, 10, pause_ms, 1000)
    }

    #[test]
    fn phi_accrual_failure_detector_integration_cases() {
        // node_available.
        let mut d = heilhead(0);
        beat(&mut d, [0, 1000, 1100]);
        assert!(available(&d, 1200), "node_available");
        // node_heartbeat_missed_dead1 (threshold 8).
        assert!(!available(&d, 8200), "node_heartbeat_missed_dead1");

        // node_heartbeat_missed_dead2 (pause 3 s).
        let mut d = heilhead(3000);
        beat(&mut d, [0, 1000, 2000, 3000, 4000, 5000]);
        assert!(available(&d, 5500), "node_heartbeat_missed_dead2 at 5500");
        d.heartbeat(at(6000));
        assert!(!available(&d, 11_000), "node_heartbeat_missed_dead2 at 11000");

        // node_heartbeat_missed_alive (pause 3 s).
        let mut d = heilhead(3000);
        beat(&mut d, [0, 1000, 2000, 3000]);
        assert!(available(&d, 7000), "node_heartbeat_missed_alive at 7000");
        d.heartbeat(at(8000));
        assert!(available(&d, 9000), "node_heartbeat_missed_alive at 9000");
    }

    #[test]
    fn a_dead_node_is_available_again_and_its_outage_interval_is_not_learned() {
        // dead_node_alive_again (pause 0): unavailable at 6000; the 4 s
        // interval ending at 7000 is dropped; available at 8000.
        let mut d = heilhead(0);
        beat(&mut d, [0, 1000, 2000, 3000]);
        assert!(!available(&d, 6000));
        let outcome = d.heartbeat(at(7000));
        assert!(matches!(outcome, HeartbeatOutcome::Skipped { reason: SkipReason::EndedSuspicion, .. }), "{outcome:?}");
        assert!(available(&d, 8000));
    }
}

// ---------------------------------------------------------------------------
// Regressions: bugs of other Rust crates (reference notes, B5)
// ---------------------------------------------------------------------------

mod regressions {
    use super::*;

    /// Every model at its default configuration.
    fn every_model() -> Vec<vigil_detector::AnyDetector> {
        Model::ALL.into_iter().map(|m| ModelConfig::default_for(m).build().unwrap()).collect()
    }

    #[test]
    fn regular_heartbeats_keep_the_level_at_log10_2_one_interval_later_however_many_arrive() {
        // phi-accrual-failure-detector 0.1 divided the window's sum by the
        // number of samples ever pushed: with 1,000 ms heartbeats (window
        // 100, pause 0, min σ 100 ms) its φ one interval after the last
        // heartbeat drifted 0.3010, 0.3269, 0.8061, 1.3849, 2.9145, 8.0028 at
        // 11, 100, 201, 401, 1001, 5000 heartbeats. Here it must stay
        // -log10(1/2) = 0.30103 at every checkpoint (y = 0 exactly; ±1e-12
        // for double rounding).
        let mut akka = akka(8.0, 100, 100, 0, 1000);
        let mut normal = Normal::new(NormalConfig { window: 100, ..NormalConfig::default() }).unwrap();
        let checkpoints = [11, 100, 201, 401, 1001, 5000];
        for n in 1..=5000u64 {
            let t = (n - 1) * 1000;
            akka.heartbeat(at(t));
            normal.heartbeat(at(t));
            if checkpoints.contains(&n) {
                let next = at(t + 1000);
                assert_within(normal.level(next), LOG10_2, 1e-12, &format!("normal after {n} heartbeats"));
                assert_eq!(normal.stats().mean, Some(millis(1000)), "normal mean after {n}");
                assert_eq!(normal.stats().samples, ((n - 1) as usize).min(100), "normal samples after {n}");
                if n == 100 {
                    // Akka's bootstrap [750, 1250] plus 99 intervals: the
                    // window of 100 has evicted the 750 but still holds the
                    // 1250, so the mean is 1002.5 ms and φ is correctly a
                    // little below log10 2 (y = -0.025).
                    assert_eq!(akka.stats().mean, Some(Duration::from_micros(1_002_500)), "akka mean after {n}");
                    let l = akka.level(next);
                    assert!(l < LOG10_2 && l > 0.28, "akka after {n} heartbeats: {l}");
                } else {
                    // 11: both bootstrap samples in, mean still 1000 ms;
                    // 201 and later: both evicted.
                    assert_within(akka.level(next), LOG10_2, 1e-12, &format!("akka after {n} heartbeats"));
                    assert_eq!(akka.stats().mean, Some(millis(1000)), "akka mean after {n}");
                }
            }
        }
        assert!(available(&akka, 4_999_000 + 1000));
    }

    #[test]
    fn ten_to_thirty_milliseconds_of_jitter_do_not_convict_with_a_sigma_floor() {
        // phi-detector 0.4 had a 1 ms σ floor: after 100 pings of 1,000 ms,
        // φ(1005 ms) = 7.3, φ(1010 ms) = 37.6, φ(1030 ms) = inf. With the
        // 100 ms floor, 5-30 ms late is y <= 0.3: the level must stay far
        // below 8 (bound: < 1).
        let mut akka = akka(8.0, 1000, 100, 0, 1000);
        let mut normal = Normal::new(NormalConfig::default()).unwrap();
        for i in 0..=100 {
            akka.heartbeat(at(i * 1000));
            normal.heartbeat(at(i * 1000));
        }
        let last = 100_000;
        for late in [5, 10, 30] {
            let t = at(last + 1000 + late);
            let (a, n) = (akka.level(t), normal.level(t));
            assert!(a < 1.0, "akka {late} ms late: {a}");
            assert!(n < 1.0, "normal {late} ms late: {n}");
        }
        // Threshold 8 is reached no sooner than 5 σ past the mean.
        for (name, crossing) in [("akka", akka.crossing(8.0)), ("normal", normal.crossing(8.0))] {
            let after = crossing.unwrap() - at(last);
            assert!(after >= millis(1500), "{name}: threshold 8 reached {after:?} after the last heartbeat");
        }
    }

    #[test]
    fn the_mean_is_the_average_interval_not_its_reciprocal() {
        // phi-accrual 0.1 computed mean = count / sum (a rate), which only
        // "works" for 1-unit intervals. Regular intervals of 250 ms, 2 s and
        // 30 s must give that mean, φ = log10 2 one interval later
        // (y = 0 exactly; ±1e-12 for double rounding), and the threshold-8 crossing at μ + 5.6120 σ with σ the
        // 100 ms floor (reference table; ±0.00005 σ = ±5 µs, plus the 1 ns
        // grid).
        for interval in [millis(250), secs(2), secs(30)] {
            let mut d = Normal::new(NormalConfig::default()).unwrap();
            let mut t = Instant::from_secs(10);
            for _ in 0..50 {
                d.heartbeat(t);
                t = t + interval;
            }
            let last = d.last_heartbeat().unwrap();
            assert_eq!(d.stats().mean, Some(interval), "{interval:?}");
            assert_within(d.level(last + interval), LOG10_2, 1e-12, &format!("{interval:?}"));
            let after = (d.crossing(8.0).unwrap() - last).as_secs_f64();
            let expected = interval.as_secs_f64() + 5.6120 * 0.1;
            assert_within(after, expected, 5e-6 + 1e-9, &format!("crossing for {interval:?}"));
        }
    }

    #[test]
    fn the_exact_normal_level_at_y_is_minus_log10_of_the_normal_tail_at_y() {
        // phi-accrual-detector 0.3 used 0.5 + 0.5 erf(z), missing the 1/√2
        // (at z = 1 that gives 1.104 instead of 0.79955) and reached inf at
        // z ≈ 5.83. Reference -log10 Q(y), mpmath, 5 decimals (±0.000005;
        // ±0.00005 for the 4-decimal value at y = 20).
        let mut d = Normal::new(NormalConfig::default()).unwrap();
        for i in 0..=100 {
            d.heartbeat(at(i * 1000));
        }
        let (mu, sigma) = d.fitted().unwrap();
        assert_eq!((mu, sigma), (millis(1000), millis(100)));
        let last = 100_000;
        for (y, expected, tol) in [
            (0, LOG10_2, 5e-6),
            (1, 0.79955, 5e-6),
            (2, 1.64302, 5e-6),
            (3, 2.86970, 5e-6),
            (4, 4.49933, 5e-6),
            (5, 6.54265, 5e-6),
            (6, 9.00586, 5e-6),
            (7, 11.89285, 5e-6),
            (8, 15.20614, 5e-6),
            (10, 23.11805, 5e-6),
            (20, 88.5601, 5e-5),
        ] {
            let got = d.level(at(last + 1000 + y * 100));
            assert_within(got, expected, tol, &format!("exact normal at y = {y}"));
        }
    }

    #[test]
    fn the_akka_level_at_y_matches_akkas_logistic_approximation() {
        // Companion of the previous test for the Akka model (reference table
        // B1, logistic row; 5 decimals, 3 at y = 20).
        let d = akka_fitted(1000, 100);
        for (y, expected, tol) in [
            (0, LOG10_2, 5e-6),
            (1, 0.79951, 5e-6),
            (2, 1.64283, 5e-6),
            (3, 2.90948, 5e-6),
            (4, 4.73669, 5e-6),
            (5, 7.29995, 5e-6),
            (6, 10.78260, 5e-6),
            (7, 15.36853, 5e-6),
            (8, 21.24160, 5e-6),
            (10, 37.58471, 5e-6),
            (20, 259.048, 5e-4),
        ] {
            let got = d.level(at(T0_MS + 1000 + y * 100));
            assert_within(got, expected, tol, &format!("logistic at y = {y}"));
        }
    }

    #[test]
    fn a_heartbeat_earlier_than_the_last_one_is_ignored_and_counted_by_every_model() {
        // phi-accrual 0.1 and phi-accrual-detector 0.3 subtracted u64 times
        // and panicked (or wrapped) when time went backwards.
        for mut d in every_model() {
            let model = d.model();
            d.heartbeat(Instant::from_secs(10));
            d.heartbeat(Instant::from_secs(11));
            let before = d.stats();
            let level_before = d.level(Instant::from_secs(12));
            let outcome = d.heartbeat(Instant::from_secs(5));
            assert_eq!(outcome, HeartbeatOutcome::Backwards { by: secs(6) }, "{model}");
            let after = d.stats();
            assert_eq!(after.backwards, 1, "{model}");
            assert_eq!(after.heartbeats, 2, "{model}");
            assert_eq!(after.last_heartbeat, Some(Instant::from_secs(11)), "{model}");
            assert_eq!((after.samples, after.mean, after.std_dev), (before.samples, before.mean, before.std_dev));
            assert_eq!(d.level(Instant::from_secs(12)), level_before, "{model}: level unchanged");
            // A query before the last heartbeat is treated as at it.
            assert_eq!(d.level(Instant::from_secs(5)), d.level(Instant::from_secs(11)), "{model}");
            // The next in-order heartbeat measures from 11 s, not from 5 s.
            d.heartbeat(Instant::from_secs(12));
            assert_eq!(d.stats().last_interval, Some(secs(1)), "{model}");
        }
    }

    #[test]
    fn one_heartbeat_never_gives_a_nan_or_negative_level() {
        // phi-accrual 0.1 returned NaN after a single heartbeat (no interval
        // yet). Every model, and zero-length intervals (duplicates), must
        // give finite levels >= 0 that never decrease with time.
        let mut detectors = every_model();
        detectors.push(vigil_detector::AnyDetector::Exponential(Exponential::new(ExponentialConfig::plain()).unwrap()));
        for mut d in detectors {
            let model = d.model();
            for duplicates in 1..=3 {
                let mut d = d.clone();
                for _ in 0..duplicates {
                    d.heartbeat(Instant::from_secs(7));
                }
                let mut previous = 0.0;
                for t in [
                    Instant::from_secs(7),
                    Instant::from_millis(7_001),
                    Instant::from_secs(8),
                    Instant::from_secs(3_600),
                    Instant::MAX,
                ] {
                    let l = d.level(t);
                    assert!(l.is_finite() && l >= 0.0, "{model} ×{duplicates} at {t}: {l}");
                    assert!(l >= previous, "{model} ×{duplicates}: level fell to {l} at {t}");
                    previous = l;
                }
                // The inverse is consistent with the level wherever it exists.
                if let Some(t) = d.crossing(8.0) {
                    assert!(d.level(t) >= 8.0, "{model} ×{duplicates}: crossing {t} below 8");
                }
                d.reset();
                assert_eq!(d.level(Instant::from_secs(9)), 0.0, "{model}: after reset, level 0");
                assert_eq!(d.last_heartbeat(), None, "{model}: after reset, no heartbeat");
            }
            // Never fed at all: level 0.
            d.reset();
            assert_eq!(d.level(Instant::from_secs(9)), 0.0, "{model}: no heartbeat, level 0");
        }
    }

    #[test]
    fn backwards_timestamps_are_ignored_as_in_greptimedb_but_counted() {
        // GreptimeDB ignores a heartbeat older than the last one silently.
        // Here it is ignored too (state unchanged) but counted, by the
        // detector and by the registry.
        let mut d = akka(8.0, 1000, 100, 10_000, 1000);
        beat(&mut d, [0, 1000]);
        let before = d.stats();
        assert!(matches!(d.heartbeat(at(500)), HeartbeatOutcome::Backwards { .. }));
        let after = d.stats();
        assert_eq!((after.samples, after.mean, after.backwards), (before.samples, before.mean, 1));
        d.heartbeat(at(2000));
        assert_eq!(d.stats().last_interval, Some(millis(1000)));

        let mut r = Registry::new(akka(8.0, 1000, 100, 10_000, 1000), RegistryConfig::new(vec![Policy::new("a", 8.0)]))
            .unwrap();
        r.heartbeat("p", at(0)).unwrap();
        r.heartbeat("p", at(1000)).unwrap();
        assert!(matches!(r.heartbeat("p", at(500)), Ok(HeartbeatOutcome::Backwards { .. })));
        assert_eq!(r.counters().backwards, 1);
        assert_eq!(r.report(&"p", at(1000)).unwrap().stats.last_heartbeat, Some(at(1000)));
    }
}
