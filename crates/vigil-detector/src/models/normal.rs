//! The φ accrual detector with the exact normal tail, and Akka's variant.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::detector::crossing_from_guess;
use crate::error::check;
use crate::math::{logistic_phi, logistic_phi_inverse, normal_phi, normal_phi_inverse};
use crate::window::{Admission, Bootstrap, History, Seed};
use crate::{ConfigError, Detector, HeartbeatOutcome, Instant, Stats};

/// Configuration of [`Normal`], the paper's φ detector with an exact tail.
///
/// The defaults are the paper's window of 1,000 samples with Akka's
/// production floor of 100 ms on σ (the paper has no floor; a perfectly
/// regular link then has σ = 0 and φ explodes on the first late heartbeat),
/// no acceptable pause, no bootstrap and no admission rules.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::{Bootstrap, Normal, NormalConfig};
///
/// let config = NormalConfig {
///     window: 100,
///     min_std_dev: Duration::from_millis(30),
///     bootstrap: Bootstrap::Estimate(Duration::from_millis(100)),
///     ..NormalConfig::default()
/// };
/// let detector = Normal::new(config)?;
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct NormalConfig {
    /// Samples kept (inter-arrival intervals). Default 1,000.
    pub window: usize,
    /// Floor on the standard deviation. Must be positive. Default 100 ms.
    pub min_std_dev: Duration,
    /// Added to the mean: a margin for known pauses (GC, VM migration).
    /// Default 0.
    pub acceptable_pause: Duration,
    /// How the window is seeded at the first heartbeat. Default none.
    pub bootstrap: Bootstrap,
    /// Which intervals are recorded. Default: all.
    pub admission: Admission,
}

impl Default for NormalConfig {
    fn default() -> Self {
        NormalConfig {
            window: 1_000,
            min_std_dev: Duration::from_millis(100),
            acceptable_pause: Duration::ZERO,
            bootstrap: Bootstrap::None,
            admission: Admission::default(),
        }
    }
}

impl NormalConfig {
    /// Checks every field; see [`ConfigError`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        check::window("window", self.window)?;
        check::positive_duration("min_std_dev", self.min_std_dev)?;
        self.bootstrap.validate()?;
        self.admission.validate()
    }
}

/// The fitted parameters of a normal model, in nanoseconds: μ (mean plus
/// pause), σ (floored) and 1/σ.
#[derive(Debug, Clone, Copy)]
struct Fit {
    mu: f64,
    sigma: f64,
    inv_sigma: f64,
}

impl Fit {
    #[inline]
    fn y(&self, elapsed_ns: f64) -> f64 {
        (elapsed_ns - self.mu) * self.inv_sigma
    }
}

/// Fits μ and σ from a history's window.
///
/// Arranged for a short dependency chain to 1/σ, which every level query
/// needs first: `1/σ = min(n / sqrt(n Σx² - (Σx)²), 1 / min σ)`, one square
/// root and one division.
#[inline(always)]
fn fit(history: &History, pause_ns: f64, min_std_ns: f64) -> Option<Fit> {
    let w = &history.window;
    if w.is_empty() {
        return None;
    }
    let (n, sum_us, scaled) = w.variance_parts();
    let root_ns = scaled.sqrt() * 1e3; // n σ, in ns
    Some(Fit {
        mu: sum_us * 1e3 / n + pause_ns,
        sigma: (root_ns / n).max(min_std_ns),
        // root = 0 gives +inf, and the floor takes over.
        inv_sigma: (n / root_ns).min(1.0 / min_std_ns),
    })
}

/// The last fit, computed on the first query after the window changed.
///
/// A heartbeat only marks the cache stale, so taking one costs no square root
/// or division, and a window that changes several times between queries is
/// fitted once. The cache uses atomics (plain loads and stores on common
/// hardware) so detectors stay `Sync`: readers that race to fill it store
/// identical values, and the `fresh` flag is published with release/acquire
/// ordering after the values. Writers hold `&mut`.
#[derive(Debug, Default)]
struct FitCache {
    mu: AtomicU64,
    sigma: AtomicU64,
    inv_sigma: AtomicU64,
    fresh: AtomicBool,
}

impl Clone for FitCache {
    fn clone(&self) -> Self {
        // A clone refits on first use.
        FitCache::default()
    }
}

impl FitCache {
    #[inline(always)]
    fn get(&self, history: &History, pause_ns: f64, min_std_ns: f64) -> Option<Fit> {
        if self.fresh.load(Ordering::Acquire) {
            return Some(Fit {
                mu: f64::from_bits(self.mu.load(Ordering::Relaxed)),
                sigma: f64::from_bits(self.sigma.load(Ordering::Relaxed)),
                inv_sigma: f64::from_bits(self.inv_sigma.load(Ordering::Relaxed)),
            });
        }
        let f = fit(history, pause_ns, min_std_ns)?;
        self.mu.store(f.mu.to_bits(), Ordering::Relaxed);
        self.sigma.store(f.sigma.to_bits(), Ordering::Relaxed);
        self.inv_sigma.store(f.inv_sigma.to_bits(), Ordering::Relaxed);
        self.fresh.store(true, Ordering::Release);
        Some(f)
    }

    #[inline]
    fn invalidate(&mut self) {
        *self.fresh.get_mut() = false;
    }
}

/// What the two normal-model detectors share: the history, the pause and σ
/// floor, and the lazily fitted μ and σ.
#[derive(Debug, Clone)]
struct GaussianCore {
    history: History,
    pause_ns: f64,
    min_std_ns: f64,
    cache: FitCache,
}

impl GaussianCore {
    fn new(window: usize, admission: Admission, seed: impl Into<Seed>, pause: Duration, min_std: Duration) -> Self {
        GaussianCore {
            history: History::new(window, admission, seed),
            pause_ns: pause.as_nanos() as f64,
            min_std_ns: min_std.as_nanos() as f64,
            cache: FitCache::default(),
        }
    }

    #[inline]
    fn fit(&self) -> Option<Fit> {
        self.cache.get(&self.history, self.pause_ns, self.min_std_ns)
    }

    /// Standard deviations past μ at `now`, if there is a heartbeat and an
    /// estimate.
    #[inline]
    fn y(&self, now: Instant) -> Option<f64> {
        let last = self.history.last()?;
        Some(self.fit()?.y(now.nanos_since(last) as f64))
    }

    /// Records a heartbeat, given the level at arrival (for admission).
    #[inline]
    fn observe(&mut self, now: Instant, level_at_arrival: f64) -> HeartbeatOutcome {
        let (outcome, change) = self.history.observe(now, level_at_arrival);
        if change != crate::window::Change::None {
            self.cache.invalidate();
        }
        outcome
    }

    /// The crossing of `threshold`, given where the model's level reaches it
    /// (`y_at_threshold` σ past μ) and the level function.
    fn crossing(
        &self,
        threshold: f64,
        y_at_threshold: impl FnOnce() -> f64,
        level: impl Fn(Instant) -> f64,
    ) -> Option<Instant> {
        crossing_from_guess(
            self.history.last(),
            threshold,
            || self.fit().map(|f| f.mu + y_at_threshold() * f.sigma),
            level,
        )
    }
}

/// The [`Detector`] methods that are the same for both normal models.
macro_rules! gaussian_common {
    () => {
        fn stats(&self) -> Stats {
            self.core.history.stats()
        }

        fn reset(&mut self) {
            self.core.history.reset();
            self.core.cache.invalidate();
        }

        fn last_heartbeat(&self) -> Option<Instant> {
            self.core.history.last()
        }

        fn heap_bytes(&self) -> usize {
            self.core.history.window.heap_bytes()
        }
    };
}

/// The φ accrual detector of Hayashibara et al. with the exact normal tail.
///
/// `φ = -log10 Q((Δ - μ) / σ)`, where Δ is the time since the last heartbeat,
/// μ is the window's mean plus the acceptable pause, σ is the window's
/// population standard deviation floored at `min_std_dev`, and `Q` is the
/// standard normal survival function. The tail is computed in log space, so φ
/// is finite and strictly increasing in Δ however long the silence: it does
/// not saturate at 300 or jump to infinity, and two levels can be compared.
///
/// A threshold Φ is reached `μ + z σ` after the last heartbeat, with
/// `z = Q⁻¹(10^-Φ)`: 5.61 σ for Φ = 8.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::{Detector, Instant, Normal, NormalConfig};
///
/// let mut d = Normal::new(NormalConfig::default())?;
/// for i in 0..=100 {
///     d.heartbeat(Instant::from_millis(i * 1_000));
/// }
/// // Regular 1 s heartbeats: σ is the 100 ms floor, so φ = 8 at μ + 5.61 σ.
/// let at = d.crossing(8.0).unwrap();
/// let after = at - Instant::from_millis(100_000);
/// assert!((after.as_secs_f64() - 1.5612).abs() < 1e-3);
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Normal {
    core: GaussianCore,
}

impl Normal {
    /// Builds a detector after validating `config`.
    pub fn new(config: NormalConfig) -> Result<Normal, ConfigError> {
        config.validate()?;
        let core = GaussianCore::new(
            config.window,
            config.admission,
            config.bootstrap,
            config.acceptable_pause,
            config.min_std_dev,
        );
        Ok(Normal { core })
    }

    /// The fitted mean (including the acceptable pause) and σ (including the
    /// floor), if the model has an estimate.
    pub fn fitted(&self) -> Option<(Duration, Duration)> {
        self.core.fit().map(|f| (Duration::from_nanos(f.mu as u64), Duration::from_nanos(f.sigma as u64)))
    }
}

impl Detector for Normal {
    #[inline(always)]
    fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome {
        let level = if self.core.history.needs_level() { self.level(now) } else { 0.0 };
        self.core.observe(now, level)
    }

    #[inline]
    fn level(&self, now: Instant) -> f64 {
        self.core.y(now).map_or(0.0, normal_phi)
    }

    fn crossing(&self, threshold: f64) -> Option<Instant> {
        self.core.crossing(threshold, || normal_phi_inverse(threshold), |t| self.level(t))
    }

    gaussian_common!();
}

/// Configuration of [`Akka`]: exactly the five parameters of Akka's and
/// Pekko's `PhiAccrualFailureDetector`.
///
/// The defaults are Akka's cluster failure detector defaults
/// (`akka.cluster.failure-detector`): threshold 8, 1,000 samples, σ floor
/// 100 ms, acceptable pause 3 s, first-heartbeat estimate 1 s (the heartbeat
/// interval). [`AkkaConfig::remote_watch`] gives the remote-watch defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct AkkaConfig {
    /// The level at which the peer is unavailable. In Akka this also decides
    /// whether an interval is recorded: the heartbeat that ends an
    /// unavailable period does not add its interval. Default 8.
    pub threshold: f64,
    /// Samples kept (`max-sample-size`). Default 1,000.
    pub window: usize,
    /// Floor on σ (`min-std-deviation`). Default 100 ms.
    pub min_std_dev: Duration,
    /// Added to the mean (`acceptable-heartbeat-pause`). Default 3 s.
    pub acceptable_pause: Duration,
    /// Bootstrap estimate (`heartbeat-interval`): two samples at ±25 %,
    /// computed in whole milliseconds as Akka does (the estimate is truncated
    /// to milliseconds, and 1 ms gives two samples of 1 ms). Default 1 s.
    pub first_heartbeat_estimate: Duration,
}

impl Default for AkkaConfig {
    fn default() -> Self {
        AkkaConfig {
            threshold: 8.0,
            window: 1_000,
            min_std_dev: Duration::from_millis(100),
            acceptable_pause: Duration::from_secs(3),
            first_heartbeat_estimate: Duration::from_secs(1),
        }
    }
}

impl AkkaConfig {
    /// Akka's `remote.watch-failure-detector` defaults: threshold 10, 200
    /// samples, σ floor 100 ms, pause 10 s, estimate 1 s.
    pub fn remote_watch() -> AkkaConfig {
        AkkaConfig { threshold: 10.0, window: 200, acceptable_pause: Duration::from_secs(10), ..AkkaConfig::default() }
    }

    /// Checks every field the way Akka's constructor does.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check::positive("threshold", self.threshold)?;
        check::window("window", self.window)?;
        check::positive_duration("min_std_dev", self.min_std_dev)?;
        check::estimate("first_heartbeat_estimate", self.first_heartbeat_estimate)
    }
}

/// Akka's and Pekko's `PhiAccrualFailureDetector`, behaviour for behaviour.
///
/// The normal model with Akka's logistic approximation of the CDF
/// (`1 / (1 + exp(-y (1.5976 + 0.070566 y²)))`, error 0.00014 at ±3.16),
/// μ = mean + acceptable pause, σ = max(std, min σ); the two-sample bootstrap
/// at the first heartbeat; the interval that ends an unavailable period is not
/// recorded; level 0 before any heartbeat.
///
/// One deliberate difference: where Akka's expression overflows to `+inf`
/// (beyond y ≈ 21.6, φ ≈ 323), this one keeps growing finitely. Every
/// comparison with a threshold below 323 is unchanged.
///
/// The logistic tail is steeper than the true normal tail: Akka's 8 is reached
/// at 5.23 σ past μ, the exact model's at 5.61 σ. Thresholds do not carry over
/// between the two.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::{Akka, AkkaConfig, Detector, Instant};
///
/// // Akka's cluster defaults: φ 8, σ >= 100 ms, 3 s acceptable pause.
/// let mut d = Akka::new(AkkaConfig::default())?;
/// for s in 0..=100 {
///     d.heartbeat(Instant::from_secs(s));
/// }
/// // Steady 1 s heartbeats: unavailable after 4522.6 ms of silence.
/// let silence = d.crossing(8.0).unwrap() - Instant::from_secs(100);
/// assert!((silence.as_secs_f64() * 1e3 - 4522.6).abs() < 0.05);
/// // A heartbeat that ends a suspicion does not teach the window the gap.
/// d.heartbeat(Instant::from_secs(130));
/// assert_eq!(d.stats().skipped, 1);
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Akka {
    core: GaussianCore,
    threshold: f64,
    /// `pause + threshold_y × min σ` in whole ns, rounded down: a silence
    /// shorter than the mean plus this is below the threshold whatever the
    /// window's σ (σ >= min σ). `None` when the threshold is below the mean
    /// (thresholds under log10 2), where this bound does not hold.
    surely_available_ns: Option<u64>,
}

impl Akka {
    /// Builds a detector after validating `config`.
    pub fn new(config: AkkaConfig) -> Result<Akka, ConfigError> {
        config.validate()?;
        let admission = Admission { skip_if_level_at_least: Some(config.threshold), ..Admission::default() };
        // Akka computes the bootstrap in whole milliseconds: est - est/4 and
        // est + est/4 with integer division (1 ms gives [1, 1]).
        let estimate_ms = u32::try_from(config.first_heartbeat_estimate.as_millis()).unwrap_or(u32::MAX / 2_000);
        let spread_ms = estimate_ms / 4;
        let to_us = |ms: u32| ms.saturating_mul(1_000);
        let bootstrap = Seed::pair(to_us(estimate_ms - spread_ms), to_us(estimate_ms + spread_ms));
        let surely_available_ns = match logistic_phi_inverse(config.threshold) {
            y if y >= 0.0 => {
                let ns = config.acceptable_pause.as_nanos() as f64 + y * config.min_std_dev.as_nanos() as f64;
                // One microsecond on the safe side of float rounding.
                Some((ns - 1e3).max(0.0).min(u64::MAX as f64) as u64)
            }
            _ => None,
        };
        Ok(Akka {
            core: GaussianCore::new(config.window, admission, bootstrap, config.acceptable_pause, config.min_std_dev),
            threshold: config.threshold,
            surely_available_ns,
        })
    }

    /// The level, out of line: the heartbeat path needs it only near or past
    /// the threshold.
    #[cold]
    #[inline(never)]
    fn level_slow(&self, now: Instant) -> f64 {
        self.level(now)
    }

    /// The configured threshold.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// Whether a heartbeat has ever arrived (Akka's `isMonitoring`).
    pub fn is_monitoring(&self) -> bool {
        self.core.history.last().is_some()
    }
}

impl Detector for Akka {
    #[inline(always)]
    fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome {
        // Akka records the interval only if the peer is still available when
        // the heartbeat arrives. Well before the threshold (the usual case)
        // that is certain from the window's sum alone, without the fitted σ:
        // elapsed < mean + pause + y_threshold × min σ. Compared exactly in
        // integers, scaled by n to avoid a division (the mean times n is the
        // sum of whole-microsecond samples).
        let w = &self.core.history.window;
        let surely_available = |last: Instant| match self.surely_available_ns {
            Some(margin) if !w.is_empty() => {
                // elapsed < mean + margin, i.e. (elapsed - margin) n < Σ.
                // A silence within the margin alone needs no arithmetic.
                let elapsed = now.nanos_since(last);
                elapsed <= margin || u128::from(elapsed - margin) * (w.len() as u128) < u128::from(w.sum()) * 1_000
            }
            _ => false,
        };
        let level = match self.core.history.last() {
            Some(last) if surely_available(last) => 0.0,
            _ => self.level_slow(now),
        };
        self.core.observe(now, level)
    }

    #[inline]
    fn level(&self, now: Instant) -> f64 {
        self.core.y(now).map_or(0.0, logistic_phi)
    }

    fn crossing(&self, threshold: f64) -> Option<Instant> {
        self.core.crossing(threshold, || logistic_phi_inverse(threshold), |t| self.level(t))
    }

    gaussian_common!();
}
