//! Freshness-point detectors: Chen's estimator with a constant safety margin,
//! Bertier's dynamic margin, and 2W-FD's two windows.
//!
//! All three predict the *expected arrival* (EA) of the next heartbeat and add
//! a safety margin to get a freshness point τ; the peer is trusted until τ.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use crate::detector::crossing_from_guess;
use crate::error::check;
use crate::window::{Admission, Bootstrap, Change, History, Window};
use crate::{ConfigError, Detector, HeartbeatOutcome, Instant, Stats};

/// Running sums that give Chen's expected-arrival estimate over the last `n`
/// heartbeats in O(1).
///
/// Chen et al. estimate the next arrival as
/// `EA = (1/n) Σ (A_i - η s_i) + (ℓ + 1) η` over the `n` most recent arrivals
/// `A_i` with sequence numbers `s_i`. With consecutive sequence numbers this
/// is `A_ℓ + η (n + 1) / 2 - W / n`, where `W = Σ_{j=1}^{n-1} (n - j) I_j` and
/// `I_j` is the j-th most recent inter-arrival interval. `W` and
/// `S = Σ_{j=1}^{n-1} I_j` slide in O(1): a new interval `x` gives
/// `W' = W - S + (n - 1) x` and `S' = S + x - I_{n-1}`.
#[derive(Debug, Clone)]
struct PhaseSum {
    n: u64,
    /// Sum of the `n - 1` most recent intervals (µs).
    s: u64,
    /// `Σ (n - j) I_j` over them (µs).
    w: u128,
}

impl PhaseSum {
    fn new(n: usize) -> PhaseSum {
        PhaseSum { n: n as u64, s: 0, w: 0 }
    }

    /// Updates the sums after `x` was pushed onto `window` (which holds at
    /// least `n` slots, so the interval leaving the sums is still in it).
    fn on_push(&mut self, x: u32, window: &Window) {
        // W >= S always (every weight is at least 1), so this cannot underflow.
        self.w = self.w - u128::from(self.s) + u128::from(self.n - 1) * u128::from(x);
        let leaving = window.nth_recent(self.n as usize).map_or(0, u64::from);
        self.s = self.s + u64::from(x) - leaving;
    }

    fn rebuild(&mut self, window: &Window) {
        self.s = 0;
        self.w = 0;
        for j in 1..self.n {
            let Some(x) = window.nth_recent(j as usize) else { break };
            self.s += u64::from(x);
            self.w += u128::from(self.n - j) * u128::from(x);
        }
    }

    /// `EA - A_ℓ` in microseconds, for a window holding `intervals` samples.
    fn offset_us(&self, intervals: usize, eta_us: f64) -> f64 {
        // Arrivals available: one more than the intervals, at most n.
        let m = (intervals as u64 + 1).min(self.n);
        // With fewer than n arrivals the missing intervals count as 0 in W;
        // re-weight to W_m = W - (n - m) S.
        let w_m = self.w - u128::from(self.n - m) * u128::from(self.s);
        eta_us * (m as f64 + 1.0) / 2.0 - w_m as f64 / m as f64
    }
}

/// The safety margin added to the expected arrival.
#[derive(Debug, Clone)]
enum Margin {
    /// Chen's and 2W-FD's constant α (ns).
    Constant(f64),
    /// Bertier's Jacobson-style margin `β delay + φ var`.
    Jacobson {
        beta: f64,
        phi: f64,
        gamma: f64,
        /// Smoothed error of the EA predictions (ns).
        delay: f64,
        /// Smoothed absolute deviation of that error (ns).
        var: f64,
    },
}

impl Margin {
    fn value_ns(&self) -> f64 {
        match *self {
            Margin::Constant(alpha) => alpha,
            // Bounded weights and finite errors keep this finite; the clamp
            // (±31 years) is a last guard so a level can never be infinite.
            Margin::Jacobson { beta, phi, delay, var, .. } => (beta * delay + phi * var).clamp(-1e18, 1e18),
        }
    }

    fn restart(&mut self) {
        if let Margin::Jacobson { delay, var, .. } = self {
            *delay = 0.0;
            *var = 0.0;
        }
    }

    /// Feeds the prediction error of a heartbeat that arrived `interval_ns`
    /// after the previous one, which had predicted `predicted_ns`.
    fn observe(&mut self, interval_ns: f64, predicted_ns: f64) {
        if let Margin::Jacobson { gamma, delay, var, .. } = self {
            let error = interval_ns - predicted_ns - *delay;
            *delay += *gamma * error;
            *var += *gamma * (error.abs() - *var);
        }
    }
}

/// The freshness point as of the last heartbeat, computed on first use and
/// cached: `(EA − A_ℓ, τ − A_ℓ, level unit)` in nanoseconds. Readers may
/// race to fill it; they compute identical values, and `fresh` is published
/// with release/acquire ordering after them. Writers hold `&mut`.
#[derive(Debug, Default)]
struct FreshFit {
    predicted: AtomicU64,
    offset: AtomicU64,
    scale: AtomicU64,
    /// 0: stale; 1: fresh, no estimate; 2: fresh with an estimate.
    state: AtomicU8,
}

impl Clone for FreshFit {
    fn clone(&self) -> Self {
        FreshFit::default()
    }
}

/// One computed freshness point.
#[derive(Debug, Clone, Copy)]
struct Fit {
    predicted_ns: f64,
    offset_ns: f64,
    scale_ns: f64,
}

/// The machinery the three freshness-point models share.
#[derive(Debug, Clone)]
struct FreshnessCore {
    history: History,
    phases: Vec<PhaseSum>,
    /// The sender's heartbeat interval η in µs, if configured.
    interval_us: Option<f64>,
    margin: Margin,
    /// The freshness point, computed lazily after each heartbeat: a
    /// heartbeat only records its interval (and, for Bertier, the error of
    /// the previous prediction).
    fit: FreshFit,
}

impl FreshnessCore {
    fn new(
        windows: &[usize],
        interval: Option<Duration>,
        margin: Margin,
        bootstrap: Bootstrap,
        admission: Admission,
    ) -> FreshnessCore {
        let capacity = windows.iter().copied().max().unwrap_or(1).max(1);
        FreshnessCore {
            history: History::new(capacity, admission, bootstrap),
            phases: windows.iter().map(|&n| PhaseSum::new(n)).collect(),
            interval_us: interval.map(|d| d.as_nanos() as f64 / 1e3),
            margin,
            fit: FreshFit::default(),
        }
    }

    #[inline]
    fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome {
        let level = if self.history.needs_level() { self.level(now) } else { 0.0 };
        // Bertier's margin learns from the error of the prediction made
        // before this heartbeat.
        let predicted = match self.margin {
            Margin::Jacobson { .. } => self.fit().map(|f| f.predicted_ns),
            Margin::Constant(_) => None,
        };
        let (outcome, change) = self.history.observe(now, level);
        match outcome {
            HeartbeatOutcome::Backwards { .. } => return outcome,
            HeartbeatOutcome::First | HeartbeatOutcome::Restarted { .. } => self.margin.restart(),
            HeartbeatOutcome::Recorded { interval } | HeartbeatOutcome::Skipped { interval, .. } => {
                if let Some(predicted) = predicted {
                    self.margin.observe(interval.as_nanos() as f64, predicted);
                }
            }
        }
        match change {
            Change::None => {}
            Change::Pushed { sample, .. } => {
                for phase in &mut self.phases {
                    phase.on_push(sample, &self.history.window);
                }
            }
            Change::Rebuilt => {
                for phase in &mut self.phases {
                    phase.rebuild(&self.history.window);
                }
            }
        }
        *self.fit.state.get_mut() = 0;
        outcome
    }

    /// The freshness point as of the last heartbeat (cached).
    #[inline]
    fn fit(&self) -> Option<Fit> {
        match self.fit.state.load(Ordering::Acquire) {
            2 => {
                return Some(Fit {
                    predicted_ns: f64::from_bits(self.fit.predicted.load(Ordering::Relaxed)),
                    offset_ns: f64::from_bits(self.fit.offset.load(Ordering::Relaxed)),
                    scale_ns: f64::from_bits(self.fit.scale.load(Ordering::Relaxed)),
                });
            }
            1 => return None,
            _ => {}
        }
        let f = self.compute();
        if let Some(f) = f {
            self.fit.predicted.store(f.predicted_ns.to_bits(), Ordering::Relaxed);
            self.fit.offset.store(f.offset_ns.to_bits(), Ordering::Relaxed);
            self.fit.scale.store(f.scale_ns.to_bits(), Ordering::Relaxed);
        }
        self.fit.state.store(if f.is_some() { 2 } else { 1 }, Ordering::Release);
        f
    }

    fn compute(&self) -> Option<Fit> {
        let w = &self.history.window;
        let eta_us = match self.interval_us {
            Some(eta) => eta,
            None if !w.is_empty() => w.mean_us(),
            None => return None,
        };
        let ea_us = self.phases.iter().map(|p| p.offset_us(w.len(), eta_us)).fold(f64::NEG_INFINITY, f64::max);
        let ea_ns = ea_us * 1e3;
        Some(Fit { predicted_ns: ea_ns, offset_ns: ea_ns + self.margin.value_ns(), scale_ns: (eta_us * 1e3).max(1e3) })
    }

    #[inline]
    fn level(&self, now: Instant) -> f64 {
        let Some(last) = self.history.last() else { return 0.0 };
        match self.fit() {
            Some(f) => {
                let elapsed = now.nanos_since(last) as f64;
                (1.0 + (elapsed - f.offset_ns) / f.scale_ns).max(0.0)
            }
            None => 0.0,
        }
    }

    fn crossing(&self, threshold: f64) -> Option<Instant> {
        crossing_from_guess(
            self.history.last(),
            threshold,
            || self.fit().map(|f| f.offset_ns + (threshold - 1.0) * f.scale_ns),
            |t| self.level(t),
        )
    }

    fn freshness_point(&self) -> Option<Instant> {
        let last = self.history.last()?;
        let offset = self.fit()?.offset_ns;
        if offset <= 0.0 { Some(last) } else { Some(last.add_nanos_f64_ceil(offset)) }
    }

    fn reset(&mut self) {
        self.history.reset();
        self.margin.restart();
        for phase in &mut self.phases {
            phase.rebuild(&self.history.window);
        }
        *self.fit.state.get_mut() = 0;
    }
}

/// Implements [`Detector`] for a newtype around [`FreshnessCore`].
macro_rules! delegate_detector {
    ($ty:ty) => {
        impl Detector for $ty {
            #[inline]
            fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome {
                self.core.heartbeat(now)
            }
            #[inline]
            fn level(&self, now: Instant) -> f64 {
                self.core.level(now)
            }
            fn crossing(&self, threshold: f64) -> Option<Instant> {
                self.core.crossing(threshold)
            }
            fn stats(&self) -> Stats {
                self.core.history.stats()
            }
            fn reset(&mut self) {
                self.core.reset()
            }
            fn last_heartbeat(&self) -> Option<Instant> {
                self.core.history.last()
            }
            fn heap_bytes(&self) -> usize {
                self.core.history.window.heap_bytes() + self.core.phases.capacity() * core::mem::size_of::<PhaseSum>()
            }
        }

        impl $ty {
            /// The current freshness point τ (expected arrival plus margin):
            /// the instant at which the level reaches 1.
            pub fn freshness_point(&self) -> Option<Instant> {
                self.core.freshness_point()
            }
        }
    };
}

fn check_interval(interval: Option<Duration>) -> Result<(), ConfigError> {
    match interval {
        Some(d) => check::positive_duration("interval", d),
        None => Ok(()),
    }
}

/// Configuration of [`Chen`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChenConfig {
    /// Heartbeats averaged by the estimator (n). Default 1,000, the window
    /// used in the φ paper's comparison.
    pub window: usize,
    /// Safety margin α added to the expected arrival. Default 200 ms (this
    /// crate's choice; Chen et al. derive α from QoS requirements, which the
    /// lab's configurator does).
    pub alpha: Duration,
    /// The sender's heartbeat interval η, if known. `None` estimates it as the
    /// mean of the window's intervals.
    pub interval: Option<Duration>,
    /// How the window is seeded at the first heartbeat. Default none.
    pub bootstrap: Bootstrap,
    /// Which intervals are recorded. Default: all.
    pub admission: Admission,
}

impl Default for ChenConfig {
    fn default() -> Self {
        ChenConfig {
            window: 1_000,
            alpha: Duration::from_millis(200),
            interval: None,
            bootstrap: Bootstrap::None,
            admission: Admission::default(),
        }
    }
}

impl ChenConfig {
    /// Checks every field; see [`ConfigError`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        check::window("window", self.window)?;
        check_interval(self.interval)?;
        self.bootstrap.validate()?;
        self.admission.validate()
    }
}

/// Chen, Toueg and Aguilera's NFD-E: estimated arrival plus a constant margin.
///
/// The expected arrival of the next heartbeat is estimated from the last `n`
/// arrivals (sequence numbers are taken as consecutive), and the freshness
/// point is `τ = EA + α`. The level is measured in heartbeat intervals from
/// there: `max(0, 1 + (now - τ) / η)`. It is 1 at the freshness point (so
/// threshold 1 is Chen's detector), 2 one interval later, and below 1 before
/// τ.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::{Chen, ChenConfig, Detector, Instant};
///
/// let config = ChenConfig { window: 10, alpha: Duration::from_millis(50), ..ChenConfig::default() };
/// let mut d = Chen::new(config)?;
/// for i in 0..20 {
///     d.heartbeat(Instant::from_millis(i * 100));
/// }
/// // Perfectly regular: EA = last + 100 ms, τ = EA + 50 ms.
/// assert_eq!(d.freshness_point(), Some(Instant::from_millis(1_900 + 150)));
/// assert_eq!(d.crossing(1.0), d.freshness_point());
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Chen {
    core: FreshnessCore,
}

impl Chen {
    /// Builds a detector after validating `config`.
    pub fn new(config: ChenConfig) -> Result<Chen, ConfigError> {
        config.validate()?;
        let margin = Margin::Constant(config.alpha.as_nanos() as f64);
        Ok(Chen {
            core: FreshnessCore::new(&[config.window], config.interval, margin, config.bootstrap, config.admission),
        })
    }
}

delegate_detector!(Chen);

/// Configuration of [`Bertier`].
#[derive(Debug, Clone, PartialEq)]
pub struct BertierConfig {
    /// Heartbeats averaged by Chen's estimator. Default 1,000.
    pub window: usize,
    /// β: weight of the smoothed delay in the margin, in [0, 100]. Default 1.
    pub beta: f64,
    /// φ: weight of the smoothed deviation in the margin, in [0, 100].
    /// Default 4.
    pub phi: f64,
    /// γ: smoothing gain of both estimates, in (0, 1]. Default 0.1.
    pub gamma: f64,
    /// The sender's heartbeat interval, if known; else estimated.
    pub interval: Option<Duration>,
    /// How the window is seeded at the first heartbeat. Default none.
    pub bootstrap: Bootstrap,
    /// Which intervals are recorded. Default: all.
    pub admission: Admission,
}

impl Default for BertierConfig {
    fn default() -> Self {
        BertierConfig {
            window: 1_000,
            beta: 1.0,
            phi: 4.0,
            gamma: 0.1,
            interval: None,
            bootstrap: Bootstrap::None,
            admission: Admission::default(),
        }
    }
}

impl BertierConfig {
    /// Checks every field; see [`ConfigError`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        check::window("window", self.window)?;
        for (field, value) in [("beta", self.beta), ("phi", self.phi)] {
            if !(value.is_finite() && (0.0..=100.0).contains(&value)) {
                return Err(ConfigError::OutOfRange { field, value, range: "[0, 100]" });
            }
        }
        if !(self.gamma > 0.0 && self.gamma <= 1.0) {
            return Err(ConfigError::OutOfRange { field: "gamma", value: self.gamma, range: "(0, 1]" });
        }
        check_interval(self.interval)?;
        self.bootstrap.validate()?;
        self.admission.validate()
    }
}

/// Bertier, Marin and Sens: Chen's expected arrival plus a Jacobson-style
/// dynamic margin.
///
/// After each heartbeat the prediction error `e = A - EA - delay` updates
/// `delay += γ e` and `var += γ (|e| - var)`, and the margin becomes
/// `β delay + φ var` (starting from 0). Like TCP's retransmission timeout, it
/// widens quickly after late heartbeats and narrows on a calm link. The level
/// has the same meaning as [`Chen`]'s.
///
/// # Example
///
/// ```
/// use vigil_detector::{Bertier, BertierConfig, Detector, Instant};
///
/// let mut d = Bertier::new(BertierConfig::default())?;
/// for i in 0..50 {
///     d.heartbeat(Instant::from_millis(i * 100));
/// }
/// // A perfectly regular stream leaves no margin: τ is the expected arrival.
/// assert_eq!(d.freshness_point(), Some(Instant::from_millis(4_900 + 100)));
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Bertier {
    core: FreshnessCore,
}

impl Bertier {
    /// Builds a detector after validating `config`.
    pub fn new(config: BertierConfig) -> Result<Bertier, ConfigError> {
        config.validate()?;
        let margin = Margin::Jacobson { beta: config.beta, phi: config.phi, gamma: config.gamma, delay: 0.0, var: 0.0 };
        Ok(Bertier {
            core: FreshnessCore::new(&[config.window], config.interval, margin, config.bootstrap, config.admission),
        })
    }

    /// The current dynamic margin `β delay + φ var`.
    pub fn margin(&self) -> Duration {
        Duration::from_nanos(self.core.margin.value_ns().max(0.0) as u64)
    }
}

delegate_detector!(Bertier);

/// Configuration of [`TwoWindow`].
#[derive(Debug, Clone, PartialEq)]
pub struct TwoWindowConfig {
    /// The short window (heartbeats). Default 1, which tracks the last
    /// arrival.
    pub n1: usize,
    /// The long window (heartbeats). Default 1,000.
    pub n2: usize,
    /// Safety margin α. Default 200 ms (as [`ChenConfig::alpha`]).
    pub alpha: Duration,
    /// The sender's heartbeat interval, if known; else estimated.
    pub interval: Option<Duration>,
    /// How the window is seeded at the first heartbeat. Default none.
    pub bootstrap: Bootstrap,
    /// Which intervals are recorded. Default: all.
    pub admission: Admission,
}

impl Default for TwoWindowConfig {
    fn default() -> Self {
        TwoWindowConfig {
            n1: 1,
            n2: 1_000,
            alpha: Duration::from_millis(200),
            interval: None,
            bootstrap: Bootstrap::None,
            admission: Admission::default(),
        }
    }
}

impl TwoWindowConfig {
    /// Checks every field; see [`ConfigError`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        check::window("n1", self.n1)?;
        check::window("n2", self.n2)?;
        check_interval(self.interval)?;
        self.bootstrap.validate()?;
        self.admission.validate()
    }
}

/// 2W-FD (Tomsic et al.): the later of two expected arrivals, over a short and
/// a long window, plus α.
///
/// When delay jumps up, the short window follows within a few heartbeats, so
/// the detector stops suspecting; when delay falls back, the long window still
/// remembers the slow period, so it stays cautious. The level has the same
/// meaning as [`Chen`]'s.
///
/// # Example
///
/// ```
/// use vigil_detector::{Detector, Instant, TwoWindow, TwoWindowConfig};
///
/// let mut d = TwoWindow::new(TwoWindowConfig::default())?;
/// for i in 0..30 {
///     d.heartbeat(Instant::from_millis(i * 100));
/// }
/// // One late heartbeat: the short window (n1 = 1) moves the freshness point.
/// d.heartbeat(Instant::from_millis(2_900 + 180));
/// let tau = d.freshness_point().unwrap();
/// assert!(tau >= Instant::from_millis(3_080 + 100));
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TwoWindow {
    core: FreshnessCore,
}

impl TwoWindow {
    /// Builds a detector after validating `config`.
    pub fn new(config: TwoWindowConfig) -> Result<TwoWindow, ConfigError> {
        config.validate()?;
        let margin = Margin::Constant(config.alpha.as_nanos() as f64);
        Ok(TwoWindow {
            core: FreshnessCore::new(
                &[config.n1, config.n2],
                config.interval,
                margin,
                config.bootstrap,
                config.admission,
            ),
        })
    }
}

delegate_detector!(TwoWindow);

#[cfg(test)]
mod tests {
    use super::*;

    /// Chen's formula evaluated directly from arrival times, for comparison.
    fn naive_offset_us(arrivals_us: &[f64], n: usize, eta_us: f64) -> f64 {
        let k = arrivals_us.len();
        let m = n.min(k);
        let recent = &arrivals_us[k - m..];
        // Sequence numbers: consecutive, last one = k - 1.
        let mean_phase: f64 =
            recent.iter().enumerate().map(|(i, a)| a - eta_us * (k - m + i) as f64).sum::<f64>() / m as f64;
        let ea = mean_phase + eta_us * k as f64;
        ea - arrivals_us[k - 1]
    }

    #[test]
    fn sliding_sums_match_chens_formula() {
        let intervals = [100u32, 120, 95, 300, 80, 101, 99, 250, 100, 100, 7, 130];
        for n in [1usize, 2, 3, 5, 8] {
            let mut window = Window::new(n.max(1));
            let mut phase = PhaseSum::new(n);
            let mut arrivals = vec![0.0];
            for &x in &intervals {
                window.push(x);
                phase.on_push(x, &window);
                arrivals.push(arrivals.last().unwrap() + f64::from(x));
                let eta = 110.0;
                let got = phase.offset_us(window.len(), eta);
                let want = naive_offset_us(&arrivals, n, eta);
                assert!((got - want).abs() < 1e-9, "n={n}: {got} vs {want}");
                let mut rebuilt = PhaseSum::new(n);
                rebuilt.rebuild(&window);
                assert_eq!((rebuilt.s, rebuilt.w), (phase.s, phase.w), "n={n}");
            }
        }
    }

    #[test]
    fn bertier_margin_grows_after_a_late_heartbeat_and_decays() {
        let mut d = Bertier::new(BertierConfig::default()).unwrap();
        let mut t = 0;
        for _ in 0..100 {
            d.heartbeat(Instant::from_millis(t));
            t += 100;
        }
        assert_eq!(d.margin(), Duration::ZERO);
        // One heartbeat 70 ms late; the sender keeps its phase afterwards.
        d.heartbeat(Instant::from_millis(t + 70));
        let wide = d.margin();
        // error = 70 ms: delay = 7 ms, var = 7 ms, margin = 7 + 4 * 7 = 35 ms.
        assert!((wide.as_secs_f64() * 1e3 - 35.0).abs() < 0.5, "{wide:?}");
        for i in 1..=50 {
            d.heartbeat(Instant::from_millis(t + i * 100));
        }
        assert!(d.margin() < wide / 2, "{:?}", d.margin());
    }
}
