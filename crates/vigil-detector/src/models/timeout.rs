//! Timeout detectors: a constant timeout, and Akka's deadline detector.

use std::time::Duration;

use crate::detector::crossing_from_guess;
use crate::error::check;
use crate::window::{Arrival, Arrivals};
use crate::{ConfigError, Detector, HeartbeatOutcome, Instant, Stats};

/// A timeout detector's whole state: the last arrival and the timeout. The
/// level is the elapsed silence as a fraction of the timeout.
#[derive(Debug, Clone)]
struct TimeoutCore {
    arrivals: Arrivals,
    timeout_ns: f64,
}

impl TimeoutCore {
    fn new(timeout: Duration) -> TimeoutCore {
        TimeoutCore { arrivals: Arrivals::default(), timeout_ns: timeout.as_nanos() as f64 }
    }
}

/// Implements [`Detector`] for a newtype around [`TimeoutCore`].
macro_rules! timeout_detector {
    ($ty:ty) => {
        impl Detector for $ty {
            #[inline]
            fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome {
                match self.core.arrivals.arrive(now) {
                    Arrival::Backwards(by) => HeartbeatOutcome::Backwards { by },
                    Arrival::First => HeartbeatOutcome::First,
                    // Nothing is learned from intervals, but they count as recorded.
                    Arrival::After(interval) => HeartbeatOutcome::Recorded { interval: Duration::from_nanos(interval) },
                }
            }

            #[inline]
            fn level(&self, now: Instant) -> f64 {
                match self.core.arrivals.last {
                    Some(last) => now.nanos_since(last) as f64 / self.core.timeout_ns,
                    None => 0.0,
                }
            }

            fn crossing(&self, threshold: f64) -> Option<Instant> {
                let timeout_ns = self.core.timeout_ns;
                crossing_from_guess(
                    self.core.arrivals.last,
                    threshold,
                    || Some(threshold * timeout_ns),
                    |t| self.level(t),
                )
            }

            fn stats(&self) -> Stats {
                self.core.arrivals.stats()
            }

            fn reset(&mut self) {
                self.core.arrivals.reset();
            }

            fn last_heartbeat(&self) -> Option<Instant> {
                self.core.arrivals.last
            }

            fn heap_bytes(&self) -> usize {
                0
            }
        }
    };
}

/// Configuration of [`Fixed`].
#[derive(Debug, Clone, PartialEq)]
pub struct FixedConfig {
    /// Silence after which the peer is suspected (at threshold 1). Default
    /// 1 s (etcd's default election timeout).
    pub timeout: Duration,
}

impl Default for FixedConfig {
    fn default() -> Self {
        FixedConfig { timeout: Duration::from_secs(1) }
    }
}

impl FixedConfig {
    /// Checks that the timeout is positive.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check::positive_duration("timeout", self.timeout)
    }
}

/// A constant timeout: the baseline every adaptive detector must beat.
///
/// The level is the silence as a fraction of the timeout, `Δ / timeout`: at
/// threshold 1 the peer is suspected once the timeout has passed, at
/// threshold 2 after twice the timeout. Nothing is learned from the history.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::{Detector, Fixed, FixedConfig, Instant};
///
/// let mut d = Fixed::new(FixedConfig { timeout: Duration::from_millis(250) })?;
/// d.heartbeat(Instant::from_millis(1_000));
/// assert_eq!(d.level(Instant::from_millis(1_125)), 0.5);
/// assert_eq!(d.crossing(1.0), Some(Instant::from_millis(1_250)));
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Fixed {
    core: TimeoutCore,
}

impl Fixed {
    /// Builds a detector after validating `config`.
    pub fn new(config: FixedConfig) -> Result<Fixed, ConfigError> {
        config.validate()?;
        Ok(Fixed { core: TimeoutCore::new(config.timeout) })
    }
}

timeout_detector!(Fixed);

/// Configuration of [`Deadline`]: Akka's `DeadlineFailureDetector`.
///
/// The defaults are Akka's cross-data-center failure detector
/// (`akka.cluster.multi-data-center.failure-detector`): heartbeat interval
/// 3 s, acceptable pause 10 s, so a deadline of 13 s.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadlineConfig {
    /// The expected heartbeat interval. Must be positive. Default 3 s.
    pub heartbeat_interval: Duration,
    /// The pause tolerated on top of it. Default 10 s.
    pub acceptable_pause: Duration,
}

impl Default for DeadlineConfig {
    fn default() -> Self {
        DeadlineConfig { heartbeat_interval: Duration::from_secs(3), acceptable_pause: Duration::from_secs(10) }
    }
}

impl DeadlineConfig {
    /// Checks that the interval is positive (as Akka requires).
    pub fn validate(&self) -> Result<(), ConfigError> {
        check::positive_duration("heartbeat_interval", self.heartbeat_interval)
    }

    /// `heartbeat_interval + acceptable_pause`.
    pub fn deadline(&self) -> Duration {
        self.heartbeat_interval.saturating_add(self.acceptable_pause)
    }
}

/// Akka's deadline detector: available while `last + interval + pause > now`.
///
/// The level is `Δ / (interval + pause)`, so threshold 1 gives exactly Akka's
/// strict comparison: at `Δ = interval + pause` the level is 1 and the peer is
/// unavailable. Before the first heartbeat the level is 0 (Akka: a detector
/// that is not active is available).
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::{Deadline, DeadlineConfig, Detector, Instant};
///
/// let config = DeadlineConfig {
///     heartbeat_interval: Duration::from_secs(1),
///     acceptable_pause: Duration::from_secs(4),
/// };
/// let mut d = Deadline::new(config)?;
/// d.heartbeat(Instant::from_millis(6_000));
/// assert!(d.is_available(Instant::from_millis(10_999), 1.0));
/// assert!(!d.is_available(Instant::from_millis(11_000), 1.0));
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Deadline {
    core: TimeoutCore,
}

impl Deadline {
    /// Builds a detector after validating `config`.
    pub fn new(config: DeadlineConfig) -> Result<Deadline, ConfigError> {
        config.validate()?;
        Ok(Deadline { core: TimeoutCore::new(config.deadline()) })
    }

    /// Whether a heartbeat has ever arrived (Akka's `isMonitoring`).
    pub fn is_monitoring(&self) -> bool {
        self.core.arrivals.last.is_some()
    }
}

timeout_detector!(Deadline);
