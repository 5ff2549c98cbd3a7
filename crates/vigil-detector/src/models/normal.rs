//! The φ accrual detector with the exact normal tail, and Akka's variant.

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

/// Refits μ and σ from a history's window.
#[inline]
fn fit(history: &History, pause_ns: f64, min_std_ns: f64) -> Option<Fit> {
    let w = &history.window;
    if w.is_empty() {
        return None;
    }
    let mu = w.mean_us() * 1e3 + pause_ns;
    let sigma = (w.variance_us2().sqrt() * 1e3).max(min_std_ns);
    Some(Fit { mu, sigma, inv_sigma: 1.0 / sigma })
}

fn elapsed_ns(last: Instant, now: Instant) -> f64 {
    now.nanos_since(last) as f64
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
    history: History,
    pause_ns: f64,
    min_std_ns: f64,
    fit: Option<Fit>,
}

impl Normal {
    /// Builds a detector after validating `config`.
    pub fn new(config: NormalConfig) -> Result<Normal, ConfigError> {
        config.validate()?;
        Ok(Normal {
            history: History::new(config.window, config.admission, config.bootstrap),
            pause_ns: config.acceptable_pause.as_nanos() as f64,
            min_std_ns: config.min_std_dev.as_nanos() as f64,
            fit: None,
        })
    }

    /// The fitted mean (including the acceptable pause) and σ (including the
    /// floor), if the model has an estimate.
    pub fn fitted(&self) -> Option<(Duration, Duration)> {
        self.fit.map(|f| (Duration::from_nanos(f.mu as u64), Duration::from_nanos(f.sigma as u64)))
    }
}

impl Detector for Normal {
    fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome {
        let level = if self.history.needs_level() { self.level(now) } else { 0.0 };
        let (outcome, change) = self.history.observe(now, level);
        if change != crate::window::Change::None {
            self.fit = fit(&self.history, self.pause_ns, self.min_std_ns);
        }
        outcome
    }

    #[inline]
    fn level(&self, now: Instant) -> f64 {
        match (self.history.last(), self.fit) {
            (Some(last), Some(f)) => normal_phi(f.y(elapsed_ns(last, now))),
            _ => 0.0,
        }
    }

    fn crossing(&self, threshold: f64) -> Option<Instant> {
        crossing_from_guess(
            self.history.last(),
            threshold,
            || self.fit.map(|f| f.mu + normal_phi_inverse(threshold) * f.sigma),
            |t| self.level(t),
        )
    }

    fn stats(&self) -> Stats {
        self.history.stats()
    }

    fn reset(&mut self) {
        self.history.reset();
        self.fit = None;
    }

    fn last_heartbeat(&self) -> Option<Instant> {
        self.history.last()
    }

    fn heap_bytes(&self) -> usize {
        self.history.window.heap_bytes()
    }
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
    /// Bootstrap estimate (`heartbeat-interval`): two samples at ±25 %.
    /// Default 1 s.
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
        check::positive_duration("first_heartbeat_estimate", self.first_heartbeat_estimate)
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
#[derive(Debug, Clone)]
pub struct Akka {
    history: History,
    threshold: f64,
    /// `pause + threshold_y × min σ`, ns: a silence shorter than the mean plus
    /// this is below the threshold whatever the window's σ (σ >= min σ).
    surely_available_ns: f64,
    pause_ns: f64,
    min_std_ns: f64,
    fit: Option<Fit>,
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
        Ok(Akka {
            history: History::new(config.window, admission, bootstrap),
            threshold: config.threshold,
            // Only a lower bound when the threshold is past the mean (y >= 0);
            // below that (thresholds under log10 2) always compute the level.
            surely_available_ns: match logistic_phi_inverse(config.threshold) {
                y if y >= 0.0 => config.acceptable_pause.as_nanos() as f64 + y * config.min_std_dev.as_nanos() as f64,
                _ => f64::NEG_INFINITY,
            },
            pause_ns: config.acceptable_pause.as_nanos() as f64,
            min_std_ns: config.min_std_dev.as_nanos() as f64,
            fit: None,
        })
    }

    /// The configured threshold.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// Whether a heartbeat has ever arrived (Akka's `isMonitoring`).
    pub fn is_monitoring(&self) -> bool {
        self.history.last().is_some()
    }
}

impl Detector for Akka {
    fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome {
        // Akka records the interval only if the peer is still available when
        // the heartbeat arrives. Well before the threshold (the usual case)
        // that is certain from the window's sum alone, without the fitted σ:
        // elapsed < mean + pause + y_threshold × min σ. The comparison is
        // scaled by n to avoid a division, and kept a little on the safe side.
        let w = &self.history.window;
        let n = w.len() as f64;
        let surely_available = |last: Instant| {
            let bound = (w.sum() as f64 * 1e3 + self.surely_available_ns * n) * (1.0 - 1e-9);
            !w.is_empty() && elapsed_ns(last, now) * n < bound
        };
        let level = match self.history.last() {
            Some(last) if surely_available(last) => 0.0,
            _ => self.level(now),
        };
        let (outcome, change) = self.history.observe(now, level);
        if change != crate::window::Change::None {
            self.fit = fit(&self.history, self.pause_ns, self.min_std_ns);
        }
        outcome
    }

    #[inline]
    fn level(&self, now: Instant) -> f64 {
        match (self.history.last(), self.fit) {
            (Some(last), Some(f)) => logistic_phi(f.y(elapsed_ns(last, now))),
            _ => 0.0,
        }
    }

    fn crossing(&self, threshold: f64) -> Option<Instant> {
        crossing_from_guess(
            self.history.last(),
            threshold,
            || self.fit.map(|f| f.mu + logistic_phi_inverse(threshold) * f.sigma),
            |t| self.level(t),
        )
    }

    fn stats(&self) -> Stats {
        self.history.stats()
    }

    fn reset(&mut self) {
        self.history.reset();
        self.fit = None;
    }

    fn last_heartbeat(&self) -> Option<Instant> {
        self.history.last()
    }

    fn heap_bytes(&self) -> usize {
        self.history.window.heap_bytes()
    }
}
