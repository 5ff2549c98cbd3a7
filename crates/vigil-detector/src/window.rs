//! Heartbeat bookkeeping shared by the models: the last arrival, the bounded
//! window of inter-arrival samples with exact running sums, sample admission
//! and bootstrap.

use std::time::Duration;

use crate::Instant;
use crate::error::{ConfigError, check};

/// The largest window any model accepts (16 Mi samples).
///
/// The bound keeps the exact integer sums of squares far from overflow.
pub const MAX_WINDOW: usize = 1 << 24;

/// Samples are stored in whole microseconds, which bounds one sample to about
/// 71.6 minutes; longer intervals are stored as that maximum.
pub(crate) const MAX_SAMPLE_US: u32 = u32::MAX;

/// The longest interval a window sample holds: 2³² − 1 µs, about 71.6
/// minutes.
///
/// Samples are whole microseconds in four bytes, which keeps a window of
/// 1,000 samples at 4 KB. A longer interval is recorded as this maximum and
/// counted in [`Stats::clamped`], so the clamp is never silent; bootstrap
/// estimates beyond it are refused by validation. (A longer silence is an
/// outage, not a heartbeat period: clamping it only shortens an outlier.)
///
/// ```
/// use std::time::Duration;
/// assert_eq!(vigil_detector::MAX_SAMPLE, Duration::from_micros(4_294_967_295));
/// ```
pub const MAX_SAMPLE: Duration = Duration::from_micros(MAX_SAMPLE_US as u64);

/// [`MAX_SAMPLE`] in nanoseconds, for the hot path.
const MAX_SAMPLE_NS: u64 = MAX_SAMPLE_US as u64 * 1_000;

/// Converts an interval in nanoseconds to the window's sample unit:
/// microseconds, rounded to nearest, saturating at [`MAX_SAMPLE_US`].
#[inline]
pub(crate) fn ns_to_sample(nanos: u64) -> u32 {
    let micros = nanos.saturating_add(500) / 1_000;
    // Saturate, then narrow: the value fits after `min`.
    micros.min(u64::from(MAX_SAMPLE_US)) as u32
}

/// [`ns_to_sample`] for a duration.
pub(crate) fn to_sample(interval: Duration) -> u32 {
    ns_to_sample(u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX))
}

/// What to do with an interval longer than a cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxInterval {
    /// Do not record intervals longer than this (Cassandra, chitchat): a long
    /// outage does not teach the detector that long silences are normal.
    Ignore(Duration),
    /// Record intervals longer than this as exactly this.
    Clamp(Duration),
}

impl MaxInterval {
    /// The cap itself.
    pub fn limit(self) -> Duration {
        match self {
            MaxInterval::Ignore(d) | MaxInterval::Clamp(d) => d,
        }
    }
}

/// Which inter-arrival intervals enter the window.
///
/// The window is where a detector learns what "normal" looks like; these rules
/// keep it from learning the wrong thing. Every rule is off by default. The
/// arrival time itself is always taken: a heartbeat whose interval is not
/// recorded still proves the peer was alive when it arrived.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::{Admission, MaxInterval};
///
/// // Cassandra: ignore intervals above 2 s. ScyllaDB adds: ignore intervals
/// // below the gossip interval, which filters duplicate reports.
/// let scylla_like = Admission {
///     max_interval: Some(MaxInterval::Ignore(Duration::from_secs(2))),
///     min_interval: Some(Duration::from_secs(1)),
///     ..Admission::default()
/// };
/// assert!(scylla_like.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Admission {
    /// A cap on recorded intervals.
    pub max_interval: Option<MaxInterval>,
    /// Intervals shorter than this are not recorded. Filters duplicate
    /// reports of one heartbeat, which would otherwise drag the mean toward
    /// zero and make the detector jumpy (ScyllaDB #2861).
    pub min_interval: Option<Duration>,
    /// If the level is at or above this when a heartbeat arrives, the interval
    /// that heartbeat ends is not recorded (Akka: "don't use the first
    /// heartbeat after failure for the history, since a long pause will skew
    /// the stats").
    pub skip_if_level_at_least: Option<f64>,
    /// If the level is at or above this when a heartbeat arrives, the window is
    /// emptied and the heartbeat is treated as a first heartbeat (chitchat
    /// resets a peer's window when it is judged dead, so that when it comes
    /// back the detector starts afresh). Checked before
    /// [`skip_if_level_at_least`](Self::skip_if_level_at_least).
    pub reset_if_level_at_least: Option<f64>,
}

impl Admission {
    /// Checks that the caps are positive and consistent.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(cap) = self.max_interval {
            check::positive_duration("max_interval", cap.limit())?;
        }
        if let Some(min) = self.min_interval {
            check::positive_duration("min_interval", min)?;
            if let Some(cap) = self.max_interval
                && cap.limit() < min
            {
                return Err(ConfigError::Inconsistent {
                    reason: format!(
                        "min_interval ({min:?}) is larger than max_interval ({:?}): no interval could be recorded",
                        cap.limit()
                    ),
                });
            }
        }
        if let Some(level) = self.skip_if_level_at_least {
            check::positive("skip_if_level_at_least", level)?;
        }
        if let Some(level) = self.reset_if_level_at_least {
            check::positive("reset_if_level_at_least", level)?;
        }
        Ok(())
    }
}

/// How a window is seeded when the first heartbeat arrives, before any real
/// interval has been seen.
///
/// Without a bootstrap, models that need samples report level 0 until the
/// second heartbeat. (The registry's first-heartbeat rule covers peers that
/// are never heard from at all.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bootstrap {
    /// No synthetic samples.
    #[default]
    None,
    /// Akka's bootstrap: two samples, `estimate - estimate/4` and
    /// `estimate + estimate/4`, giving mean `estimate` and standard deviation
    /// `estimate/4`. Usually the configured heartbeat interval.
    Estimate(Duration),
    /// Cassandra's bootstrap: one sample of this length (Cassandra uses twice
    /// the gossip interval, 2 s, "to err high").
    Seed(Duration),
}

impl Bootstrap {
    /// Checks that the estimate or seed is positive and that its samples fit
    /// a window ([`MAX_SAMPLE`]).
    pub fn validate(&self) -> Result<(), ConfigError> {
        match *self {
            Bootstrap::None => Ok(()),
            Bootstrap::Estimate(d) => check::estimate("first_heartbeat_estimate", d),
            Bootstrap::Seed(d) => check::sample("initial_interval", d),
        }
    }
}

/// Why a heartbeat's interval was not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// Longer than the admission cap ([`MaxInterval::Ignore`]).
    TooLong,
    /// Shorter than the admission minimum (a duplicate).
    TooShort,
    /// The heartbeat ended a suspicion (Akka's rule).
    EndedSuspicion,
}

/// What a detector did with a heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeartbeatOutcome {
    /// The first heartbeat (or the first after a reset): there is no interval
    /// yet. A configured bootstrap was applied.
    First,
    /// The interval since the previous heartbeat was recorded (clamped to the
    /// cap if [`MaxInterval::Clamp`] applies).
    Recorded {
        /// The interval as observed.
        interval: Duration,
    },
    /// The heartbeat was taken as proof of life, but its interval was not
    /// recorded.
    Skipped {
        /// The interval as observed.
        interval: Duration,
        /// Which admission rule declined it.
        reason: SkipReason,
    },
    /// The level had reached the reset level: the window was emptied and this
    /// heartbeat starts a fresh history (bootstrap re-applied).
    Restarted {
        /// The silence that ended.
        interval: Duration,
    },
    /// The heartbeat's time is earlier than the last heartbeat's: ignored
    /// entirely (nothing changes but a counter).
    Backwards {
        /// How far before the last heartbeat it was.
        by: Duration,
    },
}

/// Counters every detector keeps. The rarer ones are 32-bit and saturate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counters {
    pub(crate) heartbeats: u64,
    pub(crate) backwards: u32,
    pub(crate) skipped: u32,
    pub(crate) restarts: u32,
    pub(crate) clamped: u32,
}

/// A model's statistics, as exposed by [`Detector::stats`](crate::Detector::stats).
///
/// Mean and standard deviation are of the window's samples, before any
/// model-specific adjustment (acceptable pause, σ floor, prior).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Samples in the window (including bootstrap samples still in it).
    pub samples: usize,
    /// Mean of the samples, if there are any.
    pub mean: Option<Duration>,
    /// Population standard deviation of the samples, if there are any.
    pub std_dev: Option<Duration>,
    /// The most recent interval between two heartbeats, recorded or not.
    pub last_interval: Option<Duration>,
    /// When the last heartbeat arrived.
    pub last_heartbeat: Option<Instant>,
    /// Heartbeats taken (all but the backwards ones).
    pub heartbeats: u64,
    /// Heartbeats ignored because they were earlier than the last one.
    pub backwards: u64,
    /// Intervals not recorded by an admission rule.
    pub skipped: u64,
    /// Window restarts by the reset rule.
    pub restarts: u64,
    /// Intervals recorded as [`MAX_SAMPLE`] because they were longer.
    pub clamped: u64,
}

/// A bounded ring of samples (whole microseconds) with exact integer sums.
///
/// The sums are integers, so they never drift, however many samples pass
/// through; the variance is computed from them as `n Σx² - (Σx)²`, which is
/// exactly non-negative.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    buf: Box<[u32]>,
    /// Index of the next write.
    head: u32,
    len: u32,
    sum: u64,
    sum_sq: u128,
}

impl Window {
    pub(crate) fn new(capacity: usize) -> Window {
        debug_assert!(capacity > 0 && capacity <= MAX_WINDOW);
        Window { buf: vec![0; capacity].into_boxed_slice(), head: 0, len: 0, sum: 0, sum_sq: 0 }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a sample, evicting (and returning) the oldest if full.
    #[inline(always)]
    pub(crate) fn push(&mut self, sample: u32) -> Option<u32> {
        let cap = self.buf.len() as u32;
        let slot = &mut self.buf[self.head as usize];
        let evicted = if self.len == cap {
            let old = *slot;
            self.sum -= u64::from(old);
            self.sum_sq -= u128::from(u64::from(old) * u64::from(old));
            Some(old)
        } else {
            self.len += 1;
            None
        };
        *slot = sample;
        self.sum += u64::from(sample);
        self.sum_sq += u128::from(u64::from(sample) * u64::from(sample));
        self.head = if self.head + 1 == cap { 0 } else { self.head + 1 };
        evicted
    }

    pub(crate) fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
        self.sum = 0;
        self.sum_sq = 0;
    }

    /// The `j`-th most recent sample (`j = 1` is the newest).
    pub(crate) fn nth_recent(&self, j: usize) -> Option<u32> {
        if j == 0 || j > self.len() {
            return None;
        }
        let cap = self.buf.len();
        let idx = (self.head as usize + cap - j) % cap;
        Some(self.buf[idx])
    }

    /// Samples from oldest to newest.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (1..=self.len()).rev().filter_map(|j| self.nth_recent(j))
    }

    #[inline]
    pub(crate) fn sum(&self) -> u64 {
        self.sum
    }

    /// Mean in microseconds (NaN if empty; callers check).
    #[inline]
    pub(crate) fn mean_us(&self) -> f64 {
        self.sum as f64 / f64::from(self.len)
    }

    /// Population variance in µs², from the exact integer sums.
    #[inline]
    pub(crate) fn variance_us2(&self) -> f64 {
        let n = u64::from(self.len);
        let s = u128::from(self.sum);
        // n Σx² >= (Σx)² by Cauchy–Schwarz, so this cannot underflow.
        let scaled = u128::from(n) * self.sum_sq - s * s;
        // n <= 2^24, so n² is exact as a u64 and as an f64.
        u128_to_f64(scaled) / (n * n) as f64
    }

    /// `(n, Σx, n Σx² - (Σx)²)` as floats (µs units): the parts of the mean
    /// and variance, with the variance's numerator exact before conversion.
    #[inline(always)]
    pub(crate) fn variance_parts(&self) -> (f64, f64, f64) {
        let n = u64::from(self.len);
        let s = u128::from(self.sum);
        let scaled = u128::from(n) * self.sum_sq - s * s;
        (n as f64, self.sum as f64, u128_to_f64(scaled))
    }

    /// Heap bytes owned by the window.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.buf.len() * size_of::<u32>()
    }

    pub(crate) fn stats_into(&self, stats: &mut Stats) {
        stats.samples = self.len();
        if !self.is_empty() {
            stats.mean = Some(Duration::from_nanos((self.mean_us() * 1e3).round() as u64));
            stats.std_dev = Some(Duration::from_nanos((self.variance_us2().sqrt() * 1e3).round() as u64));
        }
    }
}

/// `x as f64`, taking the cheap 64-bit conversion when the value fits (the
/// common case: n² σ² stays below 2^64 for windows of thousands of samples
/// with σ up to minutes).
#[inline]
fn u128_to_f64(x: u128) -> f64 {
    match u64::try_from(x) {
        Ok(small) => small as f64,
        Err(_) => x as f64,
    }
}

/// Last arrival and counters: what every model, with or without a window,
/// keeps about heartbeats.
#[derive(Debug, Clone)]
pub(crate) struct Arrivals {
    pub(crate) last: Option<Instant>,
    /// Nanoseconds; `u64::MAX` until there is one.
    last_interval_ns: u64,
    pub(crate) counters: Counters,
}

impl Default for Arrivals {
    fn default() -> Self {
        Arrivals { last: None, last_interval_ns: u64::MAX, counters: Counters::default() }
    }
}

/// The first step of taking a heartbeat, common to all models.
pub(crate) enum Arrival {
    /// No earlier heartbeat.
    First,
    /// An interval since the previous heartbeat, in nanoseconds.
    After(u64),
    /// Earlier than the last heartbeat: ignore.
    Backwards(Duration),
}

impl Arrivals {
    /// Classifies a heartbeat at `now`, updating the last arrival unless it is
    /// backwards.
    #[inline(always)]
    pub(crate) fn arrive(&mut self, now: Instant) -> Arrival {
        match self.last {
            Some(last) if now < last => {
                self.counters.backwards = self.counters.backwards.saturating_add(1);
                Arrival::Backwards(last - now)
            }
            Some(last) => {
                let interval = now.nanos_since(last);
                self.last = Some(now);
                self.last_interval_ns = interval;
                self.counters.heartbeats += 1;
                Arrival::After(interval)
            }
            None => {
                self.last = Some(now);
                self.counters.heartbeats += 1;
                Arrival::First
            }
        }
    }

    pub(crate) fn reset(&mut self) {
        self.last = None;
        self.last_interval_ns = u64::MAX;
    }

    pub(crate) fn stats(&self) -> Stats {
        Stats {
            last_interval: (self.last_interval_ns != u64::MAX).then(|| Duration::from_nanos(self.last_interval_ns)),
            last_heartbeat: self.last,
            heartbeats: self.counters.heartbeats,
            backwards: u64::from(self.counters.backwards),
            skipped: u64::from(self.counters.skipped),
            restarts: u64::from(self.counters.restarts),
            clamped: u64::from(self.counters.clamped),
            ..Stats::default()
        }
    }
}

/// How a heartbeat changed a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Not at all.
    None,
    /// One sample appended, possibly evicting the oldest.
    Pushed { sample: u32, evicted: Option<u32> },
    /// Emptied and re-seeded by the bootstrap (first heartbeat or restart).
    Rebuilt,
}

/// The synthetic samples a [`Bootstrap`] puts in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seed {
    samples: [u32; 2],
    len: u8,
}

impl Seed {
    pub(crate) const NONE: Seed = Seed { samples: [0; 2], len: 0 };

    /// Two samples, `low` and `high` (µs).
    pub(crate) fn pair(low: u32, high: u32) -> Seed {
        Seed { samples: [low, high], len: 2 }
    }

    fn samples(&self) -> &[u32] {
        &self.samples[..usize::from(self.len)]
    }
}

impl From<Bootstrap> for Seed {
    fn from(b: Bootstrap) -> Seed {
        match b {
            Bootstrap::None => Seed::NONE,
            Bootstrap::Estimate(estimate) => {
                let mean = to_sample(estimate);
                let spread = mean / 4;
                Seed::pair(mean - spread, mean.saturating_add(spread))
            }
            Bootstrap::Seed(seed) => Seed { samples: [to_sample(seed), 0], len: 1 },
        }
    }
}

/// [`Admission`] as plain numbers, for a small per-peer footprint: absent
/// rules are sentinels that never trigger.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rules {
    /// Intervals above this many ns are capped (`u64::MAX`: none).
    max_ns: u64,
    /// Cap by clamping rather than ignoring.
    clamp: bool,
    /// Intervals below this many ns are ignored (0: none).
    min_ns: u64,
    /// Level at which the ending interval is skipped (`+inf`: never).
    skip_at: f64,
    /// Level at which the window restarts (`+inf`: never).
    reset_at: f64,
    /// Whether either level rule is set (so the model must compute the level
    /// at arrival).
    needs_level: bool,
}

impl From<Admission> for Rules {
    fn from(a: Admission) -> Rules {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let (max_ns, clamp) = match a.max_interval {
            None => (u64::MAX, false),
            Some(MaxInterval::Ignore(d)) => (ns(d), false),
            Some(MaxInterval::Clamp(d)) => (ns(d), true),
        };
        Rules {
            max_ns,
            clamp,
            min_ns: a.min_interval.map_or(0, ns),
            skip_at: a.skip_if_level_at_least.unwrap_or(f64::INFINITY),
            reset_at: a.reset_if_level_at_least.unwrap_or(f64::INFINITY),
            needs_level: a.skip_if_level_at_least.is_some() || a.reset_if_level_at_least.is_some(),
        }
    }
}

/// Arrivals plus a window, with admission and bootstrap applied.
#[derive(Debug, Clone)]
pub(crate) struct History {
    pub(crate) arrivals: Arrivals,
    pub(crate) window: Window,
    rules: Rules,
    pub(crate) seed: Seed,
}

impl History {
    pub(crate) fn new(window: usize, admission: Admission, seed: impl Into<Seed>) -> History {
        History {
            arrivals: Arrivals::default(),
            window: Window::new(window),
            rules: admission.into(),
            seed: seed.into(),
        }
    }

    /// Whether [`observe`](Self::observe) needs the level at arrival.
    #[inline]
    pub(crate) fn needs_level(&self) -> bool {
        self.rules.needs_level
    }

    #[inline]
    pub(crate) fn last(&self) -> Option<Instant> {
        self.arrivals.last
    }

    /// Empties the window and applies the bootstrap: the rare path of a
    /// first heartbeat or a restart, kept out of line so the common path
    /// stays small.
    #[cold]
    #[inline(never)]
    fn rebuild(&mut self) {
        self.window.clear();
        for &sample in self.seed.samples() {
            self.window.push(sample);
        }
    }

    /// Takes a heartbeat at `now`. `level_at_arrival` is the model's level at
    /// `now` before this heartbeat (only read if an admission rule needs it;
    /// pass anything otherwise).
    ///
    /// Returns the outcome and how the window changed.
    #[inline(always)]
    pub(crate) fn observe(&mut self, now: Instant, level_at_arrival: f64) -> (HeartbeatOutcome, Change) {
        let interval = match self.arrivals.arrive(now) {
            Arrival::Backwards(by) => return (HeartbeatOutcome::Backwards { by }, Change::None),
            Arrival::First => {
                self.rebuild();
                return (HeartbeatOutcome::First, Change::Rebuilt);
            }
            Arrival::After(interval) => interval,
        };
        let interval_ns = interval;
        let interval = Duration::from_nanos(interval_ns);
        let r = self.rules;
        let counters = &mut self.arrivals.counters;
        if level_at_arrival >= r.reset_at {
            counters.restarts = counters.restarts.saturating_add(1);
            self.rebuild();
            return (HeartbeatOutcome::Restarted { interval }, Change::Rebuilt);
        }
        let reason = if level_at_arrival >= r.skip_at {
            Some(SkipReason::EndedSuspicion)
        } else if interval_ns < r.min_ns {
            Some(SkipReason::TooShort)
        } else if interval_ns > r.max_ns && !r.clamp {
            Some(SkipReason::TooLong)
        } else {
            None
        };
        if let Some(reason) = reason {
            counters.skipped = counters.skipped.saturating_add(1);
            return (HeartbeatOutcome::Skipped { interval, reason }, Change::None);
        }
        let kept_ns = interval_ns.min(r.max_ns);
        if kept_ns > MAX_SAMPLE_NS {
            counters.clamped = counters.clamped.saturating_add(1);
        }
        let sample = ns_to_sample(kept_ns);
        let evicted = self.window.push(sample);
        (HeartbeatOutcome::Recorded { interval }, Change::Pushed { sample, evicted })
    }

    pub(crate) fn reset(&mut self) {
        self.arrivals.reset();
        self.window.clear();
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut stats = self.arrivals.stats();
        self.window.stats_into(&mut stats);
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_sums_match_a_naive_recomputation_after_wrapping() {
        let mut w = Window::new(5);
        let samples = [7u32, 0, 4_000_000_000, 13, 13, 99, 1, 2, 3_000_000_000, 5, 8, 8];
        for (i, &s) in samples.iter().enumerate() {
            w.push(s);
            let start = (i + 1).saturating_sub(5);
            let live = &samples[start..=i];
            assert_eq!(w.len(), live.len());
            assert_eq!(w.sum(), live.iter().map(|&x| u64::from(x)).sum::<u64>());
            let kept: Vec<u32> = w.iter().collect();
            assert_eq!(kept, live);
            let n = live.len() as f64;
            let mean = live.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
            let var = live.iter().map(|&x| (f64::from(x) - mean).powi(2)).sum::<f64>() / n;
            // Relative tolerance: the naive two-pass float computation itself
            // carries rounding error of order 1e-16 of the squares.
            assert!((w.variance_us2() - var).abs() <= 1e-9 * var.max(1.0), "{} vs {var}", w.variance_us2());
        }
    }

    #[test]
    fn variance_of_identical_samples_is_exactly_zero() {
        let mut w = Window::new(1000);
        for _ in 0..5000 {
            w.push(1_000_000);
        }
        assert_eq!(w.variance_us2(), 0.0);
        assert_eq!(w.mean_us(), 1_000_000.0);
    }

    #[test]
    fn samples_round_to_microseconds_and_saturate() {
        assert_eq!(to_sample(Duration::from_nanos(1_499)), 1);
        assert_eq!(to_sample(Duration::from_nanos(1_500)), 2);
        assert_eq!(to_sample(Duration::from_secs(10_000)), MAX_SAMPLE_US);
    }

    #[test]
    fn intervals_beyond_the_longest_sample_are_counted_not_silent() {
        let mut h = History::new(10, Admission::default(), Bootstrap::None);
        let t0 = Instant::from_nanos(0);
        h.observe(t0, 0.0);
        // Exactly the longest sample: stored as it is, not counted.
        let at_max = t0 + MAX_SAMPLE;
        h.observe(at_max, 0.0);
        assert_eq!(h.stats().clamped, 0);
        assert_eq!(h.window.nth_recent(1), Some(MAX_SAMPLE_US));
        // Two hours: stored as the maximum, and counted.
        h.observe(at_max + Duration::from_secs(7_200), 0.0);
        assert_eq!(h.stats().clamped, 1);
        assert_eq!(h.window.nth_recent(1), Some(MAX_SAMPLE_US));
        // A cap below the maximum decides first: nothing is clamped by the
        // window itself.
        let capped =
            Admission { max_interval: Some(MaxInterval::Clamp(Duration::from_secs(60))), ..Admission::default() };
        let mut h = History::new(10, capped, Bootstrap::None);
        h.observe(t0, 0.0);
        h.observe(t0 + Duration::from_secs(7_200), 0.0);
        assert_eq!(h.stats().clamped, 0);
    }

    #[test]
    fn bootstraps_longer_than_a_sample_are_refused() {
        assert!(Bootstrap::Seed(MAX_SAMPLE).validate().is_ok());
        let e = Bootstrap::Seed(MAX_SAMPLE + Duration::from_micros(1)).validate().unwrap_err();
        assert_eq!(e.field(), Some("initial_interval"));
        assert!(matches!(e, ConfigError::TooLong { .. }), "{e:?}");
        // An estimate's upper sample is 5/4 of it.
        assert!(Bootstrap::Estimate(MAX_SAMPLE.mul_f64(0.8)).validate().is_ok());
        let e = Bootstrap::Estimate(Duration::from_secs(7_200)).validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "first_heartbeat_estimate must be at most 3435.973836 s, the longest interval a window holds \
             (got 7200 s)"
        );
    }

    #[test]
    fn admission_rejects_contradictions() {
        let a = Admission {
            max_interval: Some(MaxInterval::Ignore(Duration::from_millis(10))),
            min_interval: Some(Duration::from_millis(20)),
            ..Admission::default()
        };
        assert!(matches!(a.validate(), Err(ConfigError::Inconsistent { .. })));
        let a = Admission { skip_if_level_at_least: Some(f64::NAN), ..Admission::default() };
        assert!(a.validate().is_err());
    }
}
