//! The exponential accrual model (Cassandra, chitchat, ED FD).

use core::f64::consts::LN_10;
use std::time::Duration;

use crate::detector::crossing_from_guess;
use crate::error::check;
use crate::window::{Admission, Bootstrap, History, MaxInterval};
use crate::{ConfigError, Detector, HeartbeatOutcome, Instant, Stats};

/// An additive-smoothing prior on the mean (chitchat): the mean is
/// `(Σ samples + weight × mean) / (n + weight)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    /// The prior mean interval (chitchat: `initial_interval`, 5 s).
    pub mean: Duration,
    /// How many samples the prior counts for (chitchat: 5).
    pub weight: f64,
}

/// Configuration of [`Exponential`].
///
/// The default is Cassandra's `ArrivalWindow`: 1,000 samples, a seed interval
/// of 2 s pushed at the first heartbeat, intervals above 2 s ignored.
/// [`ExponentialConfig::chitchat`] and [`ExponentialConfig::plain`] give the
/// other common settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ExponentialConfig {
    /// Samples kept. Default 1,000 (Cassandra's `SAMPLE_SIZE`).
    pub window: usize,
    /// How the window is seeded. Default: a 2 s seed (Cassandra's
    /// `INITIAL_VALUE`, twice the gossip interval).
    pub bootstrap: Bootstrap,
    /// Which intervals are recorded. Default: ignore intervals above 2 s
    /// (Cassandra's `MAX_INTERVAL`).
    pub admission: Admission,
    /// A smoothing prior on the mean. Default none.
    pub prior: Option<Prior>,
}

impl Default for ExponentialConfig {
    fn default() -> Self {
        ExponentialConfig::cassandra()
    }
}

impl ExponentialConfig {
    /// Cassandra's failure detector (also the default).
    pub fn cassandra() -> ExponentialConfig {
        ExponentialConfig {
            window: 1_000,
            bootstrap: Bootstrap::Seed(Duration::from_secs(2)),
            admission: Admission {
                max_interval: Some(MaxInterval::Ignore(Duration::from_secs(2))),
                ..Admission::default()
            },
            prior: None,
        }
    }

    /// chitchat's failure detector: 1,000 samples, intervals above 10 s
    /// ignored, a prior of 5 s with weight 5, and the window reset when the
    /// peer is judged dead (chitchat's threshold of 8 on `t / mean`, which is
    /// 8 / ln 10 = 3.474 in this crate's log10 units).
    ///
    /// This is chitchat 0.10's additive smoothing. One difference remains:
    /// chitchat reports no φ (and treats the peer as dead) until one real
    /// interval is recorded; with the prior this model already has an
    /// estimate after the first heartbeat. Older chitchat releases instead
    /// pushed `initial_interval` into the window as a real sample at the
    /// first heartbeat: for those, use `Bootstrap::Seed(5 s)` and no prior.
    pub fn chitchat() -> ExponentialConfig {
        ExponentialConfig {
            window: 1_000,
            bootstrap: Bootstrap::None,
            admission: Admission {
                max_interval: Some(MaxInterval::Ignore(Duration::from_secs(10))),
                reset_if_level_at_least: Some(8.0 / LN_10),
                ..Admission::default()
            },
            prior: Some(Prior { mean: Duration::from_secs(5), weight: 5.0 }),
        }
    }

    /// The bare model: no seed, no cap, no prior.
    pub fn plain() -> ExponentialConfig {
        ExponentialConfig { window: 1_000, bootstrap: Bootstrap::None, admission: Admission::default(), prior: None }
    }

    /// Checks every field; see [`ConfigError`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        check::window("window", self.window)?;
        self.bootstrap.validate()?;
        self.admission.validate()?;
        if let Some(prior) = self.prior {
            check::positive_duration("prior_mean", prior.mean)?;
            check::positive("prior_weight", prior.weight)?;
        }
        Ok(())
    }
}

/// The exponential accrual model: `φ = Δ / (mean · ln 10)`.
///
/// If inter-arrival times were exponential with this mean, the probability
/// that the next heartbeat comes later than Δ would be `exp(-Δ / mean)`, and
/// `-log10` of that is the formula above. It has no variance term, so a sudden
/// change of jitter cannot surprise it; it is also slow: φ = 8 is reached at
/// 18.42 × mean.
///
/// Cassandra computes `t / mean` and convicts when `t / mean / ln 10 >
/// phi_convict_threshold`, so its thresholds are in the same units as this
/// model's. chitchat compares `t / mean` with its threshold directly: its 8 is
/// 3.474 here.
///
/// The mean is floored at 1 µs so that a window of zero-length intervals
/// (duplicates) does not divide by zero.
///
/// # Example
///
/// ```
/// use vigil_detector::{Detector, Exponential, ExponentialConfig, Instant};
///
/// let mut d = Exponential::new(ExponentialConfig::plain())?;
/// for i in 0..=10 {
///     d.heartbeat(Instant::from_millis(i * 1_000));
/// }
/// // Mean 1 s: the level at 1 s of silence is 1 / ln 10.
/// let level = d.level(Instant::from_millis(11_000));
/// assert!((level - 0.4342944819032518).abs() < 1e-12);
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Exponential {
    history: History,
    prior: Option<(f64, f64)>,
}

impl Exponential {
    /// Builds a detector after validating `config`.
    pub fn new(config: ExponentialConfig) -> Result<Exponential, ConfigError> {
        config.validate()?;
        Ok(Exponential {
            history: History::new(config.window, config.admission, config.bootstrap),
            prior: config.prior.map(|p| (p.mean.as_nanos() as f64 / 1e3, p.weight)),
        })
    }

    /// `mean · ln 10` in nanoseconds (the mean floored at 1 µs), if there is
    /// an estimate. Computed from the window's sum when asked, so a heartbeat
    /// costs no division.
    #[inline]
    fn scale_ns(&self) -> Option<f64> {
        let w = &self.history.window;
        let (sum_us, n) = (w.sum() as f64, w.len() as f64);
        let mean_us = match self.prior {
            // Written so that a huge weight cannot overflow to infinity.
            Some((prior_us, weight)) => sum_us / (n + weight) + prior_us * (weight / (n + weight)),
            None if n > 0.0 => sum_us / n,
            None => return None,
        };
        Some((mean_us * 1e3).max(1e3) * LN_10)
    }

    /// The mean used by the model (with the prior), if it has one.
    pub fn effective_mean(&self) -> Option<Duration> {
        self.scale_ns().map(|s| Duration::from_nanos((s / LN_10).round() as u64))
    }
}

impl Detector for Exponential {
    #[inline(always)]
    fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome {
        let level = if self.history.needs_level() { self.level(now) } else { 0.0 };
        self.history.observe(now, level).0
    }

    #[inline]
    fn level(&self, now: Instant) -> f64 {
        match (self.history.last(), self.scale_ns()) {
            (Some(last), Some(scale)) => now.nanos_since(last) as f64 / scale,
            _ => 0.0,
        }
    }

    fn crossing(&self, threshold: f64) -> Option<Instant> {
        crossing_from_guess(
            self.history.last(),
            threshold,
            || self.scale_ns().map(|scale| threshold * scale),
            |t| self.level(t),
        )
    }

    fn stats(&self) -> Stats {
        self.history.stats()
    }

    fn reset(&mut self) {
        self.history.reset();
    }

    fn last_heartbeat(&self) -> Option<Instant> {
        self.history.last()
    }

    fn heap_bytes(&self) -> usize {
        self.history.window.heap_bytes()
    }
}
