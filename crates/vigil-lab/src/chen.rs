//! Chen, Toueg and Aguilera's NFD-S failure detector: its quality of service
//! in closed form, and their procedures for configuring it from QoS
//! requirements.
//!
//! # The algorithm
//!
//! The monitored process p sends heartbeat m_i at σ_i = iη (i = 1, 2, …);
//! each is lost with probability p_L, otherwise delayed by an independent
//! draw of D. Clocks are synchronized. The monitor q has **freshness
//! points** τ_i = σ_i + δ, and during [τ_i, τ_{i+1}) it trusts p iff it has
//! received some m_j with j ≥ i. Suspicions therefore start only at
//! freshness points, and T_D ≤ δ + η whatever the delays.
//!
//! # The closed forms
//!
//! With k = ⌈δ/η⌉, for 0 ≤ x < η and j = 0..=k,
//!
//! ```text
//! p_j(x) = p_L + (1 − p_L)·P(D > δ + x − jη)   m_{i+j} not received by τ_i + x
//! u(x)   = ∏_{j=0}^{k} p_j(x)                 q suspects at τ_i + x
//! q_0    = (1 − p_L)·P(D < δ + η)             m_{i−1} received before τ_i
//! p_S    = q_0·u(0)                           an S-transition at τ_i
//! ```
//!
//! (the message m_{i+j}, sent at τ_i + x − (δ + x − jη), is not received by
//! τ_i + x iff it is lost or its delay exceeds δ + x − jη; for j > k that is
//! negative, so the factor is 1). Then λ_M = p_S/η, E(T_MR) = η/p_S,
//! E(T_M) = ∫₀^η u/p_S and P_A = 1 − ∫₀^η u/η. [`predict_nfds`] evaluates
//! them; [`crate::nfds::simulate_nfds`] simulates the algorithm, and its
//! tests check the two against each other.
//!
//! The index conventions above were re-derived from the algorithm rather
//! than copied from the paper (which we could not read): a message arriving
//! exactly at t counts as received at t, so suspicion at τ_i + x needs
//! D > δ + x − jη (strict), and the S-transition at τ_i needs m_{i−1} to
//! have arrived strictly before τ_i, D < δ + η. The two differ only for a
//! distribution with an atom (a constant delay, or the clamped normal's atom
//! at 0).
//!
//! # Configuration
//!
//! Given requirements T_D ≤ T_D^U, E(T_MR) ≥ T_MR^L and E(T_M) ≤ T_M^U,
//! [`configure`] runs Chen et al.'s procedure for a known delay
//! distribution, [`configure_moments`] the distribution-free one that knows
//! only p_L, E(D) and V(D) (the one-sided Chebyshev, or Cantelli, bound).
//!
//! ```
//! use vigil_lab::chen::{configure, Network, Requirements};
//! use vigil_lab::dist::Delay;
//!
//! // Chen et al.'s example: detect within 30 s, at most one mistake a month
//! // on average, mistakes shorter than a minute on average; 1 % loss and an
//! // exponential delay with mean 20 ms.
//! let req = Requirements {
//!     max_detection_ms: 30_000.0,
//!     min_recurrence_ms: 30.0 * 86_400_000.0,
//!     max_mistake_duration_ms: 60_000.0,
//! };
//! let net = Network { loss: 0.01, delay: Delay::Exponential { mean_ms: 20.0 } };
//! let c = configure(&req, &net)?;
//! assert!((c.eta_ms - 9_976.3).abs() < 0.5 && (c.delta_ms - 20_023.7).abs() < 0.5);
//! assert!(c.prediction.mean_recurrence_ms >= req.min_recurrence_ms);
//! # Ok::<(), vigil_lab::chen::ChenError>(())
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::dist::{Delay, DistError};

const MS_PER_HOUR: f64 = 3.6e6;

/// The largest δ/η accepted: the closed forms multiply up to δ/η + 2
/// factors at every evaluation of u.
const MAX_WINDOW: f64 = 1e4;

/// How far below η_max the configuration search looks, relatively.
const SEARCH_FLOOR: f64 = 1e-4;

/// The network between p and q: independent losses and delays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// p_L: the probability that a heartbeat is lost, in [0, 1).
    pub loss: f64,
    /// The delay of a heartbeat that is not lost.
    pub delay: Delay,
}

impl Network {
    /// Checks that the loss probability is in [0, 1) and the delay valid.
    pub fn validate(&self) -> Result<(), ChenError> {
        check_loss(self.loss)?;
        self.delay.validate()?;
        Ok(())
    }
}

/// NFD-S's quality of service, in closed form (from [`predict_nfds`]), or
/// guaranteed bounds on it (from [`predict_nfds_cantelli`] and
/// [`configure_moments`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NfdsPrediction {
    /// p_S: the probability of an S-transition (a new mistake) at a
    /// freshness point.
    pub p_s: f64,
    /// λ_M = p_S/η, in mistakes per hour.
    pub mistake_rate_per_hour: f64,
    /// E(T_MR) = η/p_S, in ms (+∞ when p_S = 0).
    pub mean_recurrence_ms: f64,
    /// E(T_M) = ∫u/p_S, in ms (NaN when p_S = 0: there are no mistakes).
    pub mean_mistake_duration_ms: f64,
    /// P_A = 1 − ∫u/η.
    pub query_accuracy: f64,
    /// The detection-time bound δ + η, in ms (tight).
    pub max_detection_ms: f64,
}

/// Quality-of-service requirements, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirements {
    /// T_D^U: every crash detected within this time.
    pub max_detection_ms: f64,
    /// T_MR^L: the mean time between mistakes at least this.
    pub min_recurrence_ms: f64,
    /// T_M^U: the mean mistake duration at most this.
    pub max_mistake_duration_ms: f64,
}

impl Requirements {
    /// Checks that every bound is finite and positive.
    pub fn validate(&self) -> Result<(), ChenError> {
        positive("max_detection_ms", self.max_detection_ms)?;
        positive("min_recurrence_ms", self.min_recurrence_ms)?;
        positive("max_mistake_duration_ms", self.max_mistake_duration_ms)
    }
}

/// Which of Chen et al.'s procedures produced a [`Configuration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Procedure (a): the delay distribution is known ([`configure`]).
    KnownDistribution,
    /// Procedure (b): only p_L, E(D) and V(D) are known
    /// ([`configure_moments`]).
    Moments,
}

/// An NFD-S setting that meets the requirements, with its predicted QoS.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Configuration {
    /// η: the heartbeat period, in ms.
    pub eta_ms: f64,
    /// δ: how long after each send its freshness point falls, in ms. For an
    /// NFD-U/NFD-E (unsynchronized clocks) the shift past the expected
    /// arrival is α = δ − E(D).
    pub delta_ms: f64,
    /// η_max from step 1: the largest period that can meet the bound on the
    /// mistake duration (and the detection bound).
    pub eta_max_ms: f64,
    /// The QoS at (η, δ): exact for [`Method::KnownDistribution`];
    /// guaranteed bounds for [`Method::Moments`] (see
    /// [`predict_nfds_cantelli`]).
    pub prediction: NfdsPrediction,
    /// The procedure used.
    pub method: Method,
}

/// Why an NFD-S analysis or configuration failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ChenError {
    /// A parameter is out of its domain.
    Invalid {
        /// The parameter.
        field: &'static str,
        /// The value given.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },
    /// The delay distribution is invalid.
    Delay(DistError),
    /// No NFD-S setting meets the requirements on this network.
    Unachievable {
        /// Which step of the procedure failed, with the numbers.
        reason: String,
    },
}

impl fmt::Display for ChenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChenError::Invalid { field, value, expected } => write!(f, "invalid {field} = {value}: must be {expected}"),
            ChenError::Delay(e) => write!(f, "{e}"),
            ChenError::Unachievable { reason } => write!(f, "QoS requirements cannot be met: {reason}"),
        }
    }
}

/// The message already includes the delay error's, so it is not also given
/// as a source (a chain would print it twice).
impl std::error::Error for ChenError {}

impl From<DistError> for ChenError {
    fn from(e: DistError) -> ChenError {
        ChenError::Delay(e)
    }
}

fn positive(field: &'static str, value: f64) -> Result<(), ChenError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(ChenError::Invalid { field, value, expected: "finite and > 0" })
    }
}

fn check_loss(loss: f64) -> Result<(), ChenError> {
    if (0.0..1.0).contains(&loss) {
        Ok(())
    } else {
        Err(ChenError::Invalid { field: "loss", value: loss, expected: "in [0, 1)" })
    }
}

pub(crate) fn check_timing(eta_ms: f64, delta_ms: f64) -> Result<(), ChenError> {
    positive("eta_ms", eta_ms)?;
    if !(delta_ms.is_finite() && delta_ms >= 0.0) {
        return Err(ChenError::Invalid { field: "delta_ms", value: delta_ms, expected: "finite and >= 0" });
    }
    if delta_ms / eta_ms > MAX_WINDOW {
        return Err(ChenError::Invalid { field: "delta_ms", value: delta_ms, expected: "at most 1e4 × eta_ms" });
    }
    Ok(())
}

/// A delay tail P(D > y) (or an upper bound on it, non-increasing in y) with
/// the loss probability: the factors p_j of the closed forms.
struct Tail<'a> {
    loss: f64,
    sf: &'a dyn Fn(f64) -> f64,
}

impl Tail<'_> {
    /// ∏_{j=lo}^{hi} (p_L + (1 − p_L)·P(D > top − jη)), from the smallest
    /// argument (j = hi) up. Once P(D > ·) is negligible beside p_L (below
    /// 1e-17 of it) every remaining factor is p_L to double precision, since
    /// the tail does not increase, and they are taken as one power.
    fn ladder(&self, top: f64, eta: f64, lo: u64, hi: u64) -> f64 {
        let mut prod = 1.0;
        for j in (lo..=hi).rev() {
            let s = (self.sf)(top - j as f64 * eta);
            if s <= 1e-17 * self.loss || s == 0.0 {
                return prod * self.loss.powf((j - lo + 1) as f64);
            }
            prod *= self.loss + (1.0 - self.loss) * s;
            if prod == 0.0 {
                break;
            }
        }
        prod
    }

    /// u(x): the probability that q suspects at τ_i + x. Factors with a
    /// negative argument are 1; starting one past ⌊(δ + x)/η⌋ is safe
    /// against rounding (that extra factor's argument is ≤ 0).
    fn u(&self, eta: f64, delta: f64, x: f64) -> f64 {
        let top = delta + x;
        let hi = (top / eta).floor() as u64 + 1;
        self.ladder(top, eta, 0, hi)
    }
}

/// Nodes and weights of the n-point Gauss–Legendre rule on [−1, 1], by
/// Newton's method on the Legendre recurrence.
fn gauss_legendre(n: usize) -> Vec<(f64, f64)> {
    let nf = n as f64;
    (1..=n)
        .map(|i| {
            let mut x = (std::f64::consts::PI * (i as f64 - 0.25) / (nf + 0.5)).cos();
            let mut dp = 1.0;
            for _ in 0..100 {
                let (mut p0, mut p1) = (1.0, x);
                for k in 2..=n {
                    let kf = k as f64;
                    let p2 = ((2.0 * kf - 1.0) * x * p1 - (kf - 1.0) * p0) / kf;
                    p0 = p1;
                    p1 = p2;
                }
                dp = nf * (x * p1 - p0) / (x * x - 1.0);
                let dx = p1 / dp;
                x -= dx;
                if dx.abs() < 1e-16 {
                    break;
                }
            }
            (x, 2.0 / ((1.0 - x * x) * dp * dp))
        })
        .collect()
}

/// ∫_a^b g by adaptive Gauss–Legendre (10 points): a panel is accepted when
/// splitting it changes its integral by less than `rel` of the value, so
/// the result has about that relative accuracy when g ≥ 0. Jumps must be at
/// panel ends (the callers split at every known one); an unforeseen one
/// costs at most `MAX_DEPTH` extra levels along one path, and a budget of
/// panels bounds the work whatever g does.
fn integrate(g: &dyn Fn(f64) -> f64, a: f64, b: f64, rel: f64) -> f64 {
    const MAX_DEPTH: u32 = 48;
    const MAX_PANELS: u32 = 20_000;
    struct Quad<'a> {
        g: &'a dyn Fn(f64) -> f64,
        rule: Vec<(f64, f64)>,
        rel: f64,
        panels: u32,
    }
    impl Quad<'_> {
        fn panel(&mut self, a: f64, b: f64) -> f64 {
            self.panels += 1;
            let (c, h) = (0.5 * (a + b), 0.5 * (b - a));
            h * self.rule.iter().map(|&(x, w)| w * (self.g)(c + h * x)).sum::<f64>()
        }
        fn refine(&mut self, a: f64, b: f64, whole: f64, depth: u32) -> f64 {
            let m = 0.5 * (a + b);
            let (l, r) = (self.panel(a, m), self.panel(m, b));
            let s = l + r;
            let done = (s - whole).abs() <= self.rel * s.abs();
            if done || depth >= MAX_DEPTH || self.panels >= MAX_PANELS || m <= a || m >= b {
                return s;
            }
            self.refine(a, m, l, depth + 1) + self.refine(m, b, r, depth + 1)
        }
    }
    if b <= a {
        return 0.0;
    }
    let mut q = Quad { g, rule: gauss_legendre(10), rel, panels: 0 };
    let whole = q.panel(a, b);
    q.refine(a, b, whole, 0)
}

/// ∫₀^η u(x) dx, split where a factor's argument δ + x − jη crosses a point
/// where the tail jumps or has a kink (`breaks`, plus 0).
fn integrate_u(tail: &Tail<'_>, eta: f64, delta: f64, breaks: &[f64]) -> f64 {
    let mut cuts = vec![0.0, eta];
    for &b in breaks.iter().chain([0.0].iter()) {
        // x = b − δ + jη in (0, η) for j near (δ − b)/η.
        let j0 = ((delta - b) / eta).floor();
        for dj in -1..=2 {
            let j = j0 + f64::from(dj);
            let x = b - delta + j * eta;
            if j >= 0.0 && x > 0.0 && x < eta {
                cuts.push(x);
            }
        }
    }
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let u = |x: f64| tail.u(eta, delta, x);
    cuts.windows(2).map(|w| integrate(&u, w[0], w[1], 1e-11)).sum()
}

/// Assembles the metrics from p_S and ∫u.
fn metrics(eta: f64, delta: f64, p_s: f64, integral: f64, mean_duration: f64) -> NfdsPrediction {
    NfdsPrediction {
        p_s,
        mistake_rate_per_hour: p_s / eta * MS_PER_HOUR,
        mean_recurrence_ms: if p_s > 0.0 { eta / p_s } else { f64::INFINITY },
        mean_mistake_duration_ms: mean_duration,
        query_accuracy: 1.0 - integral / eta,
        max_detection_ms: delta + eta,
    }
}

/// NFD-S's quality of service with period η and shift δ on `network`, by
/// the closed forms (see the module documentation).
///
/// ∫₀^η u is computed by adaptive Gauss–Legendre quadrature, split at every
/// point where a factor jumps or has a kink (the delay's atoms and the lower
/// end of its support), to about 1e-11 relative accuracy, so a constant
/// delay's step function is integrated exactly.
///
/// Errors: η not finite and positive, δ not finite and ≥ 0, δ/η above 10⁴
/// (each evaluation of u multiplies up to δ/η + 2 factors), or an invalid
/// network.
///
/// ```
/// use vigil_lab::chen::{predict_nfds, Network};
/// use vigil_lab::dist::Delay;
///
/// // A constant 120 ms delay, no loss, η = 100 ms, δ = 50 ms: every m_i
/// // misses its freshness point τ_i by 70 ms, and m_{i−1} (in at τ_i − 30 ms)
/// // does not cover it: a 70 ms mistake every 100 ms.
/// let net = Network { loss: 0.0, delay: Delay::Constant { ms: 120.0 } };
/// let p = predict_nfds(100.0, 50.0, &net)?;
/// assert_eq!(p.p_s, 1.0);
/// assert!((p.mean_mistake_duration_ms - 70.0).abs() < 1e-9);
/// assert!((p.query_accuracy - 0.3).abs() < 1e-12);
/// # Ok::<(), vigil_lab::chen::ChenError>(())
/// ```
pub fn predict_nfds(eta_ms: f64, delta_ms: f64, network: &Network) -> Result<NfdsPrediction, ChenError> {
    check_timing(eta_ms, delta_ms)?;
    network.validate()?;
    let delay = &network.delay;
    let sf = |y: f64| delay.sf(y);
    let tail = Tail { loss: network.loss, sf: &sf };
    let q0 = (1.0 - network.loss) * delay.cdf_below(delta_ms + eta_ms);
    let p_s = q0 * tail.u(eta_ms, delta_ms, 0.0);
    let integral = integrate_u(&tail, eta_ms, delta_ms, &delay.breakpoints());
    let duration = if p_s > 0.0 { integral / p_s } else { f64::NAN };
    Ok(metrics(eta_ms, delta_ms, p_s, integral, duration))
}

/// Guaranteed bounds on NFD-S's quality of service when only p_L, E(D) and
/// V(D) are known: the §1.3 formulas with the Cantelli bound
/// P(D > E(D) + t) ≤ V(D)/(V(D) + t²) (t > 0; 1 otherwise) in place of
/// P(D > ·). Every number is on the pessimistic side, for every delay
/// distribution with these moments:
///
/// - `p_s` ≥ p_S: it is (1 − p_L)·u_B(0), using q_0 ≤ 1 − p_L and
///   u(0) ≤ u_B(0), with u_B the product of bounded factors;
/// - `mistake_rate_per_hour` ≥ λ_M and `mean_recurrence_ms` ≤ E(T_MR),
///   from that;
/// - `mean_mistake_duration_ms` ≥ E(T_M): it is η/q_0B, because u does not
///   increase (so ∫u ≤ η·u(0)) and q_0 ≥ q_0B = (1 − p_L)·t²/(V + t²) with
///   t = δ + η − E(D) > 0 (if t ≤ 0 the bound is +∞);
/// - `query_accuracy` ≤ P_A: it is 1 − ∫u_B/η.
///
/// ```
/// use vigil_lab::chen::{predict_nfds, predict_nfds_cantelli, Network};
/// use vigil_lab::dist::Delay;
///
/// let net = Network { loss: 0.01, delay: Delay::Exponential { mean_ms: 20.0 } };
/// let exact = predict_nfds(100.0, 150.0, &net)?;
/// let bound = predict_nfds_cantelli(100.0, 150.0, 0.01, 20.0, 400.0)?;
/// assert!(bound.mean_recurrence_ms <= exact.mean_recurrence_ms);
/// assert!(bound.query_accuracy <= exact.query_accuracy);
/// assert!(bound.mean_mistake_duration_ms >= exact.mean_mistake_duration_ms);
/// # Ok::<(), vigil_lab::chen::ChenError>(())
/// ```
pub fn predict_nfds_cantelli(
    eta_ms: f64,
    delta_ms: f64,
    loss: f64,
    mean_ms: f64,
    variance_ms2: f64,
) -> Result<NfdsPrediction, ChenError> {
    check_timing(eta_ms, delta_ms)?;
    check_loss(loss)?;
    check_moments(mean_ms, variance_ms2)?;
    let sf = |y: f64| cantelli(y - mean_ms, variance_ms2);
    let tail = Tail { loss, sf: &sf };
    let p_s = (1.0 - loss) * tail.u(eta_ms, delta_ms, 0.0);
    let integral = integrate_u(&tail, eta_ms, delta_ms, &[mean_ms]);
    let q0 = (1.0 - loss) * (1.0 - cantelli(delta_ms + eta_ms - mean_ms, variance_ms2));
    let duration = if q0 > 0.0 { eta_ms / q0 } else { f64::INFINITY };
    Ok(metrics(eta_ms, delta_ms, p_s, integral, duration))
}

/// The Cantelli bound on P(D − E(D) ≥ t): V/(V + t²) for t > 0, else 1.
fn cantelli(t: f64, variance: f64) -> f64 {
    if t <= 0.0 {
        1.0
    } else if variance == 0.0 {
        0.0
    } else {
        variance / (variance + t * t)
    }
}

fn check_moments(mean_ms: f64, variance_ms2: f64) -> Result<(), ChenError> {
    if !(mean_ms.is_finite() && mean_ms >= 0.0) {
        return Err(ChenError::Invalid { field: "mean_ms", value: mean_ms, expected: "finite and >= 0" });
    }
    if !(variance_ms2.is_finite() && variance_ms2 >= 0.0) {
        return Err(ChenError::Invalid { field: "variance_ms2", value: variance_ms2, expected: "finite and >= 0" });
    }
    Ok(())
}

/// The largest η in (0, η_max] with f(η) ≥ target.
///
/// f is not monotone in general: ⌈T/η⌉ jumps, and each factor grows with η
/// while the numerator does too (for a constant delay f even rises between
/// jumps). So: if f(η_max) meets the target, that is the answer; otherwise
/// scan downward on a geometric grid η_max·rⁿ (r = 1 − 1/256, a 0.4 % step)
/// to the first grid point that meets it, then bisect between it and the
/// grid point above to 1e-13 relative, keeping the lower end feasible. The
/// result is a point with f ≥ target whose upper neighbour (within 1e-13)
/// does not; a feasible stretch narrower than 0.4 % lying entirely between
/// two infeasible grid points above it would be missed. The scan stops at
/// `floor` (`None`).
fn largest_eta(eta_max: f64, floor: f64, target: f64, f: impl Fn(f64) -> f64) -> Option<f64> {
    let ok = |eta: f64| f(eta) >= target; // NaN is not ok
    if ok(eta_max) {
        return Some(eta_max);
    }
    let ratio = 1.0 - 1.0 / 256.0;
    let mut hi = eta_max;
    loop {
        let mut lo = hi * ratio;
        if lo < floor {
            return None;
        }
        if ok(lo) {
            for _ in 0..200 {
                if hi - lo <= 1e-13 * hi {
                    break;
                }
                let mid = 0.5 * (lo + hi);
                if ok(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            return Some(lo);
        }
        hi = lo;
    }
}

/// Step 2 of both procedures: the largest η ≤ η_max with f(η) ≥ T_MR^L,
/// searched down to max(η_max·10⁻⁴, T_D^U·10⁻⁴). The second limit keeps
/// f(η), which has ⌈T_D^U/η⌉ − 1 factors, cheap, and δ/η within what
/// [`predict_nfds`] accepts.
fn search(req: &Requirements, eta_max: f64, f: impl Fn(f64) -> f64) -> Result<f64, ChenError> {
    let t_d = req.max_detection_ms;
    let floor = (eta_max * SEARCH_FLOOR).max(t_d / MAX_WINDOW);
    if eta_max < floor {
        return Err(ChenError::Unachievable {
            reason: format!(
                "η_max = {eta_max:e} ms is below T_D^U/1e4 = {:e} ms: more than 1e4 heartbeats per detection bound",
                t_d / MAX_WINDOW
            ),
        });
    }
    largest_eta(eta_max, floor, req.min_recurrence_ms, f).ok_or_else(|| ChenError::Unachievable {
        reason: format!(
            "no η in [{floor:.6}, {eta_max:.6}] ms gives f(η) ≥ T_MR^L = {} ms (f grows as η shrinks, but the \
             search stops at max(η_max·1e-4, T_D^U·1e-4))",
            req.min_recurrence_ms
        ),
    })
}

/// Chen et al.'s configuration procedure when the delay distribution is
/// known:
///
/// 1. q'_0 = (1 − p_L)·P(D < T_D^U); η_max = min(q'_0·T_M^U, T_D^U). If
///    η_max = 0 the requirements cannot be met.
/// 2. f(η) = η / ∏_{j=1}^{⌈T_D^U/η⌉−1} (p_L + (1 − p_L)·P(D > T_D^U − jη));
///    find the largest η ≤ η_max with f(η) ≥ T_MR^L.
/// 3. δ = T_D^U − η.
///
/// Why it works: with δ = T_D^U − η the product is u(0) ≥ p_S, so
/// E(T_MR) = η/p_S ≥ f(η); and u does not increase, so
/// E(T_M) ≤ η·u(0)/p_S = η/q'_0 ≤ T_M^U. The detection bound is δ + η =
/// T_D^U exactly.
///
/// Step 2's search: `f` is not monotone, so it is a downward scan on a 0.4 %
/// geometric grid from η_max, then bisection to 1e-13 relative (see the
/// source of `largest_eta`). It gives up below max(η_max·10⁻⁴,
/// T_D^U·10⁻⁴) ([`ChenError::Unachievable`]), although f → ∞ as η → 0
/// whenever η_max > 0: beyond that the analysis would multiply more than
/// 10⁴ factors per evaluation.
///
/// The returned prediction is [`predict_nfds`] at (η, δ): exact.
///
/// ```
/// use vigil_lab::chen::{configure, ChenError, Network, Requirements};
/// use vigil_lab::dist::Delay;
///
/// // Every delay is 40 ms but we want detection within 30 ms: impossible.
/// let req = Requirements { max_detection_ms: 30.0, min_recurrence_ms: 1e6, max_mistake_duration_ms: 100.0 };
/// let net = Network { loss: 0.0, delay: Delay::Constant { ms: 40.0 } };
/// assert!(matches!(configure(&req, &net), Err(ChenError::Unachievable { .. })));
/// ```
pub fn configure(req: &Requirements, network: &Network) -> Result<Configuration, ChenError> {
    req.validate()?;
    network.validate()?;
    let (t_d, p_l, delay) = (req.max_detection_ms, network.loss, &network.delay);
    let q0 = (1.0 - p_l) * delay.cdf_below(t_d);
    let eta_max = (q0 * req.max_mistake_duration_ms).min(t_d);
    if eta_max <= 0.0 || eta_max.is_nan() {
        return Err(ChenError::Unachievable {
            reason: format!(
                "η_max = 0: no heartbeat arrives within T_D^U = {t_d} ms (P(D < T_D^U) = {})",
                delay.cdf_below(t_d)
            ),
        });
    }
    let sf = |y: f64| delay.sf(y);
    let tail = Tail { loss: p_l, sf: &sf };
    let f = |eta: f64| {
        let m = (t_d / eta).ceil() as u64;
        eta / tail.ladder(t_d, eta, 1, m.saturating_sub(1))
    };
    let eta = search(req, eta_max, f)?;
    let delta = t_d - eta;
    let prediction = predict_nfds(eta, delta, network)?;
    Ok(Configuration {
        eta_ms: eta,
        delta_ms: delta,
        eta_max_ms: eta_max,
        prediction,
        method: Method::KnownDistribution,
    })
}

/// Chen et al.'s configuration procedure when only p_L, E(D) and V(D) are
/// known, in the NFD-E form DIET's configurator codes, with
/// T_D^u = T_D^U − E(D) (it needs T_D^U > E(D)):
///
/// 1. γ' = (1 − p_L)·(T_D^u)²/(V(D) + (T_D^u)²);
///    η_max = min(γ'·T_M^U, T_D^u).
/// 2. f(η) = η·∏_{j=1}^{⌈T_D^u/η⌉−1} (V(D) + (T_D^u − jη)²) /
///    (V(D) + p_L·(T_D^u − jη)²); find the largest η ≤ η_max with
///    f(η) ≥ T_MR^L (the same search as [`configure`]).
/// 3. α = T_D^u − η; for NFD-S δ = E(D) + α = T_D^U − η.
///
/// It is procedure (a) with the Cantelli bound in place of P(D > ·), so
/// the requirements hold for every delay distribution with these moments.
/// The returned prediction is [`predict_nfds_cantelli`] at (η, δ): bounds,
/// not estimates.
///
/// ```
/// use vigil_lab::chen::{configure_moments, Method, Requirements};
///
/// let req = Requirements {
///     max_detection_ms: 30_000.0,
///     min_recurrence_ms: 30.0 * 86_400_000.0,
///     max_mistake_duration_ms: 60_000.0,
/// };
/// let c = configure_moments(&req, 0.01, 20.0, 400.0)?;
/// assert_eq!(c.method, Method::Moments);
/// assert!((c.eta_ms - 9_954.0).abs() < 2.0);
/// assert!(c.prediction.mean_recurrence_ms >= req.min_recurrence_ms); // a guaranteed bound
/// # Ok::<(), vigil_lab::chen::ChenError>(())
/// ```
pub fn configure_moments(
    req: &Requirements,
    loss: f64,
    mean_ms: f64,
    variance_ms2: f64,
) -> Result<Configuration, ChenError> {
    req.validate()?;
    check_loss(loss)?;
    check_moments(mean_ms, variance_ms2)?;
    let t_u = req.max_detection_ms - mean_ms;
    if t_u <= 0.0 {
        return Err(ChenError::Unachievable {
            reason: format!("T_D^U = {} ms does not exceed the mean delay E(D) = {mean_ms} ms", req.max_detection_ms),
        });
    }
    let gamma = (1.0 - loss) * t_u * t_u / (variance_ms2 + t_u * t_u);
    let eta_max = (gamma * req.max_mistake_duration_ms).min(t_u);
    if eta_max <= 0.0 || eta_max.is_nan() {
        return Err(ChenError::Unachievable { reason: format!("η_max = 0 (γ' = {gamma})") });
    }
    let f = |eta: f64| {
        let m = (t_u / eta).ceil() as u64;
        let mut value = eta;
        for j in 1..m {
            let t = t_u - j as f64 * eta;
            value *= (variance_ms2 + t * t) / (variance_ms2 + loss * t * t);
            if !value.is_finite() {
                break;
            }
        }
        value
    };
    let eta = search(req, eta_max, f)?;
    let delta = req.max_detection_ms - eta;
    let prediction = predict_nfds_cantelli(eta, delta, loss, mean_ms, variance_ms2)?;
    Ok(Configuration { eta_ms: eta, delta_ms: delta, eta_max_ms: eta_max, prediction, method: Method::Moments })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_MS: f64 = 86_400_000.0;

    fn chen_requirements() -> Requirements {
        Requirements { max_detection_ms: 30_000.0, min_recurrence_ms: 30.0 * DAY_MS, max_mistake_duration_ms: 60_000.0 }
    }

    fn chen_network() -> Network {
        Network { loss: 0.01, delay: Delay::Exponential { mean_ms: 20.0 } }
    }

    #[test]
    fn gauss_legendre_is_exact_for_polynomials() {
        // A 10-point rule integrates degree ≤ 19 exactly: ∫_{-1}^{1} x^18 = 2/19.
        let rule = gauss_legendre(10);
        assert!((rule.iter().map(|(_, w)| w).sum::<f64>() - 2.0).abs() < 1e-14);
        let i18: f64 = rule.iter().map(|(x, w)| w * x.powi(18)).sum();
        assert!((i18 - 2.0 / 19.0).abs() < 1e-14);
        // Adaptive: a narrow exponential spike, ∫_0^1000 e^{-x/2} = 2(1 − e^{-500}).
        let v = integrate(&|x: f64| (-x / 2.0).exp(), 0.0, 1000.0, 1e-12);
        assert!((v - 2.0).abs() < 1e-10, "{v}");
    }

    #[test]
    fn chen_example_procedure_a() {
        // The reference note's reproduction of Chen et al.'s example (§1.5):
        // η = 9.9763 s, δ = 20.0237 s, E(T_MR) = 30.3 days, E(T_M) = 2.62 s,
        // P_A = 0.999999. The note gives 4 decimals in seconds, so 0.5 ms.
        let c = configure(&chen_requirements(), &chen_network()).unwrap();
        let p = c.prediction;
        println!(
            "(a): eta_max {:.4} ms, eta {:.4} ms, delta {:.4} ms, E(T_MR) {:.4} days, E(T_M) {:.2} ms, P_A {:.9}, p_S {:.4e}",
            c.eta_max_ms,
            c.eta_ms,
            c.delta_ms,
            p.mean_recurrence_ms / DAY_MS,
            p.mean_mistake_duration_ms,
            p.query_accuracy,
            p.p_s
        );
        assert_eq!(c.method, Method::KnownDistribution);
        // Step 1: q'_0 = 0.99·(1 − e^{−1500}) → η_max = min(59.4 s, 30 s).
        assert_eq!(c.eta_max_ms, 30_000.0);
        assert!((c.eta_ms - 9_976.3).abs() < 0.5, "eta {}", c.eta_ms);
        assert!((c.delta_ms - 20_023.7).abs() < 0.5, "delta {}", c.delta_ms);
        assert_eq!(c.eta_ms + c.delta_ms, 30_000.0);
        assert_eq!(p.max_detection_ms, 30_000.0);
        // 30.3 days to 3 digits; at least the required 30.
        assert!((p.mean_recurrence_ms / DAY_MS - 30.3).abs() < 0.05);
        assert!(p.mean_recurrence_ms >= 30.0 * DAY_MS);
        assert!((p.mean_mistake_duration_ms - 2_620.0).abs() < 5.0);
        assert!((p.query_accuracy - 0.999_999).abs() < 5e-7);
        // The identities the closed forms must satisfy.
        assert!((p.mistake_rate_per_hour * p.mean_recurrence_ms / MS_PER_HOUR - 1.0).abs() < 1e-12);
        assert!((1.0 - p.mean_mistake_duration_ms / p.mean_recurrence_ms - p.query_accuracy).abs() < 1e-15);
    }

    #[test]
    fn chen_example_is_the_largest_feasible_eta() {
        // f(η) = η/u(0) with δ = T_D^U − η; u(0) = q_0·… so E(T_MR) =
        // f/q'_0 with q'_0 = 0.99: the answer makes E(T_MR)·0.99 equal to
        // 30 days (to the bisection precision), and a slightly larger η fails.
        let net = chen_network();
        let c = configure(&chen_requirements(), &net).unwrap();
        let f = |eta: f64| predict_nfds(eta, 30_000.0 - eta, &net).unwrap().mean_recurrence_ms * 0.99;
        assert!((f(c.eta_ms) / (30.0 * DAY_MS) - 1.0).abs() < 1e-9);
        assert!(f(c.eta_ms * (1.0 + 1e-6)) < 30.0 * DAY_MS);
    }

    #[test]
    fn chen_example_procedure_b() {
        // Distribution-free with V(D) = E(D)² = 400 ms² (the exponential's):
        // the reference note computed η = 9.954 s, δ = 20.046 s. The exact
        // boundary of f(η) ≥ T_MR^L is η = 9954.531 ms (checked
        // independently); DIET's configurator bisects only until the bracket
        // is under 1 ms, and such a bisection over [0, η_max] ends at
        // [9954.297, 9955.212] ms, whose lower end rounds to the note's
        // 9.954 / 20.046. Hence the 2 ms tolerance.
        let c = configure_moments(&chen_requirements(), 0.01, 20.0, 400.0).unwrap();
        let p = c.prediction;
        println!(
            "(b): eta_max {:.4} ms, eta {:.4} ms, delta {:.4} ms, bounds: E(T_MR) >= {:.4} days, E(T_M) <= {:.2} ms, P_A >= {:.9}",
            c.eta_max_ms,
            c.eta_ms,
            c.delta_ms,
            p.mean_recurrence_ms / DAY_MS,
            p.mean_mistake_duration_ms,
            p.query_accuracy
        );
        assert_eq!(c.method, Method::Moments);
        assert!((c.eta_ms - 9_954.0).abs() < 2.0, "eta {}", c.eta_ms);
        assert!((c.delta_ms - 20_046.0).abs() < 2.0, "delta {}", c.delta_ms);
        // The bounds meet the requirements, and are pessimistic relative to
        // the exact values for the exponential at the same (η, δ).
        let req = chen_requirements();
        assert!(p.mean_recurrence_ms >= req.min_recurrence_ms);
        assert!(p.mean_mistake_duration_ms <= req.max_mistake_duration_ms);
        let exact = predict_nfds(c.eta_ms, c.delta_ms, &chen_network()).unwrap();
        assert!(p.mean_recurrence_ms <= exact.mean_recurrence_ms);
        assert!(p.mean_mistake_duration_ms >= exact.mean_mistake_duration_ms);
        assert!(p.query_accuracy <= exact.query_accuracy);
        // Less information, a more cautious η.
        let a = configure(&req, &chen_network()).unwrap();
        assert!(c.eta_ms < a.eta_ms);
    }

    #[test]
    fn constant_delay_closed_forms_are_exact() {
        // Constant delay c = 120, η = 100, δ = 50, p_L = 0.2. u(x) for
        // x ∈ [0, 100): j = 0: P(c > 50 + x) = 1 (x < 70) → p_0 = 1 for
        // x < 70 and 0.2 after; j = 1: P(c > x − 50) = 1 → 1; j = 2:
        // arguments < 0 → 1. So ∫u = 70 + 0.2·30 = 76; u(0) = 1;
        // q_0 = 0.8·[120 < 150] = 0.8; p_S = 0.8.
        let net = Network { loss: 0.2, delay: Delay::Constant { ms: 120.0 } };
        let p = predict_nfds(100.0, 50.0, &net).unwrap();
        assert!((p.p_s - 0.8).abs() < 1e-15);
        assert!((p.query_accuracy - (1.0 - 0.76)).abs() < 1e-12);
        assert!((p.mean_mistake_duration_ms - 76.0 / 0.8).abs() < 1e-9);
        assert!((p.mean_recurrence_ms - 125.0).abs() < 1e-12);
        // An arrival exactly at τ_i + η counts as after it: q_0 uses
        // P(D < δ + η) = P(120 < 120) = 0, so no S-transitions (q never
        // trusts in the first place: P_A = 0).
        let p = predict_nfds(100.0, 20.0, &Network { loss: 0.0, delay: Delay::Constant { ms: 120.0 } }).unwrap();
        assert_eq!(p.p_s, 0.0);
        assert_eq!(p.mean_recurrence_ms, f64::INFINITY);
        assert!(p.mean_mistake_duration_ms.is_nan());
        assert!(p.query_accuracy.abs() < 1e-12);
    }

    #[test]
    fn exponential_closed_form_with_one_factor() {
        // δ ≤ η and no loss: k = 1, u(x) = e^{−(δ+x)/μ} (the j = 1 factor
        // has argument δ + x − η; it is 1 for x < η − δ, then e^{−(δ+x−η)/μ}).
        // With μ = 10, η = 100, δ = 40: ∫u = ∫_0^100 e^{−(40+x)/10}·g(x) dx,
        // g = 1 for x < 60, e^{−(x−60)/10} after. Closed form:
        // 10 e^{−4}(1 − e^{−6}) + e^{−4}·e^{6}·∫_60^100 e^{−x/5} dx.
        let net = Network { loss: 0.0, delay: Delay::Exponential { mean_ms: 10.0 } };
        let p = predict_nfds(100.0, 40.0, &net).unwrap();
        let e = f64::exp;
        let integral = 10.0 * e(-4.0) * (1.0 - e(-6.0)) + e(-4.0) * e(6.0) * 5.0 * (e(-12.0) - e(-20.0));
        let q0 = 1.0 - e(-14.0);
        assert!((p.query_accuracy - (1.0 - integral / 100.0)).abs() < 1e-14);
        assert!((p.p_s / (q0 * e(-4.0)) - 1.0).abs() < 1e-13);
        assert!((p.mean_mistake_duration_ms / (integral / (q0 * e(-4.0))) - 1.0).abs() < 1e-10);
    }

    #[test]
    fn cantelli_bounds_dominate_exact_values() {
        // Whatever the distribution with these moments, the bounds hold: try
        // three with mean 20 and variance 400.
        let delays = [
            Delay::Exponential { mean_ms: 20.0 },
            Delay::ShiftedGamma { shift_ms: 0.0, shape: 1.0, scale_ms: 20.0 },
            Delay::Normal { mean_ms: 20.0, sd_ms: 20.0 }, // clamped: moments differ a little; skip exactness
        ];
        for d in &delays[..2] {
            assert!((d.mean_ms() - 20.0).abs() < 1e-12 && (d.variance_ms2() - 400.0).abs() < 1e-9);
        }
        let ln = Delay::LogNormal { median_ms: 20.0 / 2f64.sqrt(), sigma: 2f64.ln().sqrt() };
        assert!((ln.mean_ms() - 20.0).abs() < 1e-9 && (ln.variance_ms2() - 400.0).abs() < 1e-9);
        for d in [delays[0].clone(), ln] {
            for (eta, delta) in [(30.0, 40.0), (50.0, 100.0), (100.0, 25.0)] {
                let net = Network { loss: 0.05, delay: d.clone() };
                let x = predict_nfds(eta, delta, &net).unwrap();
                let b = predict_nfds_cantelli(eta, delta, 0.05, 20.0, 400.0).unwrap();
                assert!(b.p_s >= x.p_s, "{d:?} {eta} {delta}");
                assert!(b.mean_recurrence_ms <= x.mean_recurrence_ms);
                assert!(b.query_accuracy <= x.query_accuracy);
                assert!(b.mean_mistake_duration_ms >= x.mean_mistake_duration_ms);
            }
        }
    }

    #[test]
    fn unachievable_and_invalid_inputs_are_typed_errors() {
        let req = chen_requirements();
        // Every delay above T_D^U: η_max = 0.
        let slow = Network { loss: 0.0, delay: Delay::Constant { ms: 31_000.0 } };
        let err = configure(&req, &slow).unwrap_err();
        assert!(matches!(err, ChenError::Unachievable { .. }));
        assert!(err.to_string().contains("η_max = 0"), "{err}");
        // Mean delay above the detection bound (procedure b).
        assert!(matches!(configure_moments(&req, 0.01, 40_000.0, 1.0), Err(ChenError::Unachievable { .. })));
        // A recurrence so large that no η the search tries reaches it: with
        // p_L = 0.5 and D ~ Exp(10 s), every factor's argument is below 1 s,
        // so each factor is at least 0.5 + 0.5·e^{−0.1} ≈ 0.952, and for
        // η ≥ the floor max(η_max·1e-4, T_D^U·1e-4) = 0.1 ms,
        // f(η) ≤ η·0.952^{−T_D^U/η} ≤ 0.1·e^{492} ≈ 1e213 < 1e300.
        let hard = Requirements { max_detection_ms: 1_000.0, min_recurrence_ms: 1e300, max_mistake_duration_ms: 1e9 };
        let lossy = Network { loss: 0.5, delay: Delay::Exponential { mean_ms: 10_000.0 } };
        let err = configure(&hard, &lossy).unwrap_err();
        assert!(matches!(err, ChenError::Unachievable { .. }), "{err:?}");
        // Invalid parameters.
        assert!(matches!(predict_nfds(0.0, 1.0, &chen_network()), Err(ChenError::Invalid { field: "eta_ms", .. })));
        assert!(matches!(predict_nfds(1.0, -1.0, &chen_network()), Err(ChenError::Invalid { field: "delta_ms", .. })));
        let bad_loss = Network { loss: 1.0, ..chen_network() };
        assert!(matches!(predict_nfds(1.0, 1.0, &bad_loss), Err(ChenError::Invalid { field: "loss", .. })));
        let bad_delay = Network { loss: 0.0, delay: Delay::Exponential { mean_ms: -1.0 } };
        let err = predict_nfds(1.0, 1.0, &bad_delay).unwrap_err();
        assert!(matches!(err, ChenError::Delay(DistError::Invalid { field: "exponential.mean_ms", .. })));
        // The message carries the delay's; a chain does not print it twice.
        assert!(std::error::Error::source(&err).is_none());
        assert_eq!(err.to_string(), "invalid delay parameter exponential.mean_ms = -1: must be finite and > 0");
        let bad_req = Requirements { max_detection_ms: f64::NAN, ..req };
        assert!(matches!(configure(&bad_req, &chen_network()), Err(ChenError::Invalid { .. })));
        assert!(matches!(
            configure_moments(&req, 0.01, 20.0, -1.0),
            Err(ChenError::Invalid { field: "variance_ms2", .. })
        ));
    }

    #[test]
    fn search_handles_a_non_monotone_f() {
        // Constant delay c = 100, T_D^U = 1000, p_L = 0.1: factor j is p_L
        // when T_D^U − jη ≥ c (the message is not in by then, a tie counting
        // as late) and 1 otherwise, so f(η) = η·10^{⌊900/η⌋} for η ≤ 100: it
        // rises with η between the jumps at η = 900/n and falls at each.
        let net = Network { loss: 0.1, delay: Delay::Constant { ms: 100.0 } };
        let req =
            |l: f64| Requirements { max_detection_ms: 1000.0, min_recurrence_ms: l, max_mistake_duration_ms: 1e4 };
        // T_MR^L = 1e12: (900/11, 90] gives at most 9e11, so the answer is
        // the jump at 900/11, where the eleventh factor appears.
        let c = configure(&req(1e12), &net).unwrap();
        assert_eq!(c.eta_max_ms, 1000.0);
        assert!((c.eta_ms - 900.0 / 11.0).abs() < 1e-9, "{}", c.eta_ms);
        // T_MR^L = 8.5e11: feasible on [85, 90] and below 900/11, not in
        // between; the largest is 90.
        let c = configure(&req(8.5e11), &net).unwrap();
        assert!((c.eta_ms - 90.0).abs() < 1e-9, "{}", c.eta_ms);
        // In both cases the exact prediction meets the requirement (E(T_MR) =
        // f/q'_0 with q'_0 = 0.9).
        assert!(c.prediction.mean_recurrence_ms >= 8.5e11);
        assert!((c.prediction.mean_recurrence_ms - 1e12).abs() < 1e3);
    }

    #[test]
    fn easy_requirements_take_eta_max() {
        // No loss, tiny delays: f(η_max) is already huge, so η = η_max =
        // min(q'_0·T_M^U, T_D^U) = T_M^U·(1 − e^{−100}) = 500 ms.
        let req = Requirements { max_detection_ms: 1_000.0, min_recurrence_ms: 1e7, max_mistake_duration_ms: 500.0 };
        let net = Network { loss: 0.0, delay: Delay::Exponential { mean_ms: 10.0 } };
        let c = configure(&req, &net).unwrap();
        assert_eq!((c.eta_ms, c.delta_ms), (500.0, 500.0));
        assert!(c.prediction.mean_mistake_duration_ms <= 500.0);
    }
}
