//! Accrual from the empirical distribution of the window (after Satzger et al.).

use core::f64::consts::LN_10;

use crate::detector::crossing_from_guess;
use crate::error::check;
use crate::window::{Admission, Bootstrap, Change, History};
use crate::{ConfigError, Detector, HeartbeatOutcome, Instant, Stats};

/// The largest window the empirical model accepts (65,536 samples).
///
/// Each heartbeat moves part of a sorted copy of the window, so a heartbeat
/// costs up to `4 × window` bytes of memory traffic: about 2 µs at this
/// bound (`vigil replay --model empirical --window 65536` takes 4.2 s over
/// 2·10⁶ heartbeats, release build), where a window of 10⁶ takes about 19 µs
/// and one of 16·10⁶ would take hundreds.
pub const MAX_EMPIRICAL_WINDOW: usize = 1 << 16;

/// Configuration of [`Empirical`].
#[derive(Debug, Clone, PartialEq)]
pub struct EmpiricalConfig {
    /// Samples kept. Default 1,000 (the public ports of Satzger's detector);
    /// at most [`MAX_EMPIRICAL_WINDOW`].
    pub window: usize,
    /// How the window is seeded at the first heartbeat. Default none.
    pub bootstrap: Bootstrap,
    /// Which intervals are recorded. Default: all.
    pub admission: Admission,
}

impl Default for EmpiricalConfig {
    fn default() -> Self {
        EmpiricalConfig { window: 1_000, bootstrap: Bootstrap::None, admission: Admission::default() }
    }
}

impl EmpiricalConfig {
    /// Checks every field; see [`ConfigError`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        check::window("window", self.window)?;
        if self.window > MAX_EMPIRICAL_WINDOW {
            return Err(ConfigError::WindowTooLarge { field: "window", size: self.window, max: MAX_EMPIRICAL_WINDOW });
        }
        self.bootstrap.validate()?;
        self.admission.validate()
    }
}

/// An accrual detector with no distributional assumption: the survival
/// probability is read off the window's own samples.
///
/// With `n` samples of which `c` are longer than the current silence Δ, the
/// estimated probability that the next heartbeat comes later still is
/// `(c + 1) / (n + 1)`, and the level is `-log10` of that: 0 at Δ = 0 (unless
/// zero-length samples, duplicates, are in the window), and `log10(n + 1)`
/// once Δ reaches the longest sample. Beyond the longest sample
/// the data says nothing, so the survival is continued with an exponential
/// tail of the window's mean: the level grows by `1 / ln 10` per mean interval
/// of further silence. The level is thus finite, non-decreasing, and grows
/// without bound after a crash.
///
/// Thresholds up to `log10(n + 1)` (3.0 at n = 1,000) mean "the silence
/// exceeds all but a `10^-Φ` fraction of observed intervals". Satzger's
/// original level is the fraction itself, `1 - 10^-Φ` here.
///
/// Level queries are O(log n) (a binary search in a sorted copy of the
/// window); a heartbeat is O(n) in the worst case (a memory move in that
/// copy), about 4n bytes, which is why the window is bounded by
/// [`MAX_EMPIRICAL_WINDOW`].
///
/// # Example
///
/// ```
/// use vigil_detector::{Detector, Empirical, EmpiricalConfig, Instant};
///
/// let mut d = Empirical::new(EmpiricalConfig { window: 9, ..EmpiricalConfig::default() })?;
/// // Intervals 100, 110, ..., 180 ms.
/// let mut t = 0;
/// d.heartbeat(Instant::from_millis(t));
/// for i in 0..9 {
///     t += 100 + 10 * i;
///     d.heartbeat(Instant::from_millis(t));
/// }
/// // After 145 ms of silence, 4 of 9 samples are longer: P = 5/10.
/// let level = d.level(Instant::from_millis(t + 145));
/// assert!((level - 2f64.log10()).abs() < 1e-12);
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Empirical {
    history: History,
    /// The window's samples in ascending order.
    sorted: Vec<u32>,
    /// `1 / (mean_ns · ln 10)`: the tail's slope.
    tail_rate: f64,
}

impl Empirical {
    /// Builds a detector after validating `config`.
    pub fn new(config: EmpiricalConfig) -> Result<Empirical, ConfigError> {
        config.validate()?;
        Ok(Empirical {
            history: History::new(config.window, config.admission, config.bootstrap),
            sorted: Vec::with_capacity(config.window),
            tail_rate: 0.0,
        })
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::None => return,
            Change::Pushed { sample, evicted } => {
                if let Some(old) = evicted
                    && let Ok(i) = self.sorted.binary_search(&old)
                {
                    self.sorted.remove(i);
                }
                let i = self.sorted.partition_point(|&s| s <= sample);
                self.sorted.insert(i, sample);
            }
            Change::Rebuilt => {
                self.sorted.clear();
                self.sorted.extend(self.history.window.iter());
                self.sorted.sort_unstable();
            }
        }
        let w = &self.history.window;
        if !w.is_empty() {
            let mean_ns = (w.mean_us() * 1e3).max(1e3);
            self.tail_rate = 1.0 / (mean_ns * LN_10);
        }
    }

    fn level_after(&self, elapsed_ns: u64) -> f64 {
        let n = self.sorted.len();
        let Some(&max) = self.sorted.last() else { return 0.0 };
        let top = ((n + 1) as f64).log10();
        let max_ns = u64::from(max) * 1_000;
        if elapsed_ns >= max_ns {
            return top + (elapsed_ns - max_ns) as f64 * self.tail_rate;
        }
        let longer = n - self.sorted.partition_point(|&s| u64::from(s) * 1_000 <= elapsed_ns);
        top - ((longer + 1) as f64).log10()
    }
}

impl Detector for Empirical {
    #[inline]
    fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome {
        let level = if self.history.needs_level() { self.level(now) } else { 0.0 };
        let (outcome, change) = self.history.observe(now, level);
        self.apply(change);
        outcome
    }

    fn level(&self, now: Instant) -> f64 {
        match self.history.last() {
            Some(last) => self.level_after(now.nanos_since(last)),
            None => 0.0,
        }
    }

    fn crossing(&self, threshold: f64) -> Option<Instant> {
        crossing_from_guess(
            self.history.last(),
            threshold,
            || {
                let n = self.sorted.len();
                let &max = self.sorted.last()?;
                let top = ((n + 1) as f64).log10();
                let max_ns = f64::from(max) * 1e3;
                if threshold >= top {
                    return Some(max_ns + (threshold - top) / self.tail_rate);
                }
                // Need (c + 1) <= (n + 1) 10^-threshold samples longer than Δ.
                let allowed = ((n + 1) as f64 * 10f64.powf(-threshold) - 1.0).floor().max(0.0) as usize;
                let idx = n.saturating_sub(allowed + 1);
                self.sorted.get(idx).map(|&s| f64::from(s) * 1e3)
            },
            |t| self.level(t),
        )
    }

    fn stats(&self) -> Stats {
        self.history.stats()
    }

    fn reset(&mut self) {
        self.history.reset();
        self.sorted.clear();
    }

    fn last_heartbeat(&self) -> Option<Instant> {
        self.history.last()
    }

    fn heap_bytes(&self) -> usize {
        self.history.window.heap_bytes() + self.sorted.capacity() * size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_past_the_bound_are_refused() {
        let ok = EmpiricalConfig { window: MAX_EMPIRICAL_WINDOW, ..EmpiricalConfig::default() };
        assert!(ok.validate().is_ok());
        let big = EmpiricalConfig { window: MAX_EMPIRICAL_WINDOW + 1, ..EmpiricalConfig::default() };
        let e = big.validate().unwrap_err();
        assert_eq!(e.to_string(), "window must hold at most 65536 samples (got 65537)");
    }

    #[test]
    fn sorted_copy_tracks_the_window() {
        let mut d = Empirical::new(EmpiricalConfig { window: 4, ..EmpiricalConfig::default() }).unwrap();
        let mut t = 0;
        d.heartbeat(Instant::from_millis(0));
        for gap in [5u64, 3, 9, 3, 1, 7, 7, 2] {
            t += gap;
            d.heartbeat(Instant::from_millis(t));
            let mut want: Vec<u32> = d.history.window.iter().collect();
            want.sort_unstable();
            assert_eq!(d.sorted, want);
        }
    }
}
