//! Message-delay distributions: sampling, exact tail probabilities, moments
//! and a command-line syntax.
//!
//! A [`Delay`] is the law of one heartbeat's transit time, in milliseconds.
//! Every family has an exact survival function ([`Delay::sf`]), so the
//! closed forms of [`crate::chen`] can be evaluated without sampling, and a
//! sampler ([`Delay::sample`]) that draws from exactly the same law, so a
//! simulation can be checked against them.
//!
//! | family | parameters | law |
//! |---|---|---|
//! | `constant` | `ms` | D = ms |
//! | `normal` | `mean_ms`, `sd_ms` | D = max(0, X), X ~ N(mean, sd²): the draws below 0 are clamped, so P(D = 0) = Φ(−mean/sd) |
//! | `exponential` | `mean_ms` | P(D > x) = exp(−x/mean) |
//! | `log-normal` | `median_ms`, `sigma` | ln D ~ N(ln median, σ²) |
//! | `pareto` | `scale_ms`, `shape` | D ≥ scale, P(D > x) = (scale/x)^shape |
//! | `shifted-gamma` | `shift_ms`, `shape`, `scale_ms` | D = shift + Gamma(shape, scale) |
//!
//! ```
//! use vigil_lab::dist::Delay;
//!
//! let d: Delay = "normal:mean=80,sd=40".parse()?;
//! assert_eq!(d, Delay::Normal { mean_ms: 80.0, sd_ms: 40.0 });
//! // Two standard deviations above the mean.
//! assert!((d.sf(160.0) - 0.022_750_131_948_179_2).abs() < 1e-15);
//! // The clamped mean is a little above 80 ms: the mass below 0 moved up to 0.
//! assert!(d.mean_ms() > 80.0 && d.mean_ms() < 80.4);
//! assert_eq!(d.to_string(), "normal:mean=80,sd=40");
//! # Ok::<(), vigil_lab::dist::DistError>(())
//! ```
//!
//! The special functions the tails need (erfc, ln Γ and the regularized
//! incomplete gamma function) are implemented here, to about 1e-14 relative
//! accuracy; the tests check them against tabulated values.

use std::f64::consts::{PI, SQRT_2};
use std::fmt;
use std::str::FromStr;

use rand::{Rng, RngExt};
use rand_distr::{Distribution, Exp1, Gamma, StandardNormal};
use serde::{Deserialize, Serialize};

/// The law of one message delay, in milliseconds.
///
/// Construct it directly, parse it (`"exp:mean=20"`, see [`FromStr`]) or
/// deserialize it (`{"kind": "exponential", "mean_ms": 20}`), then
/// [`validate`](Delay::validate) it: the other methods assume valid
/// parameters (they never panic, but return meaningless numbers otherwise).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Delay {
    /// Always the same delay.
    Constant {
        /// The delay (≥ 0).
        ms: f64,
    },
    /// A normal delay, with the draws below 0 clamped to 0 (so
    /// P(D = 0) = Φ(−mean/sd)).
    Normal {
        /// Mean of the unclamped normal (any finite value).
        mean_ms: f64,
        /// Standard deviation of the unclamped normal (> 0).
        sd_ms: f64,
    },
    /// An exponential delay (`kind` `exponential`, or `exp` on input).
    #[serde(alias = "exp")]
    Exponential {
        /// The mean (> 0).
        mean_ms: f64,
    },
    /// A log-normal delay: ln D ~ N(ln median, sigma²) (`kind` `log-normal`,
    /// or `lognormal` on input).
    #[serde(alias = "lognormal")]
    LogNormal {
        /// The median (> 0).
        median_ms: f64,
        /// Standard deviation of ln D (> 0, dimensionless).
        sigma: f64,
    },
    /// A Pareto delay: D ≥ scale and P(D > x) = (scale/x)^shape.
    Pareto {
        /// The minimum delay (> 0).
        scale_ms: f64,
        /// The tail index (> 0); the mean is finite only above 1, the
        /// variance only above 2.
        shape: f64,
    },
    /// A gamma delay shifted by a constant: D = shift + Gamma(shape, scale)
    /// (`kind` `shifted-gamma`, or `gamma` on input).
    #[serde(alias = "gamma")]
    ShiftedGamma {
        /// The minimum delay (≥ 0).
        shift_ms: f64,
        /// The gamma shape k (> 0).
        shape: f64,
        /// The gamma scale θ (> 0); the gamma part has mean kθ.
        scale_ms: f64,
    },
}

/// Why a delay distribution was rejected, or could not be parsed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DistError {
    /// A parameter is out of its domain.
    Invalid {
        /// The parameter, as `family.field` (for example `normal.sd_ms`).
        field: &'static str,
        /// The value given.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },
    /// The text has no `family:` prefix, or a parameter is not `key=value`.
    Syntax {
        /// The offending text.
        input: String,
        /// What was expected.
        expected: &'static str,
    },
    /// The family name is not one of those known.
    UnknownFamily {
        /// The name given.
        family: String,
    },
    /// A parameter key the family does not have.
    UnknownKey {
        /// The family.
        family: &'static str,
        /// The key given.
        key: String,
    },
    /// A required parameter is missing.
    MissingKey {
        /// The family.
        family: &'static str,
        /// The missing key.
        key: &'static str,
    },
    /// A parameter was given twice.
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
    /// A parameter value is not a number.
    BadValue {
        /// The key.
        key: String,
        /// The text that is not a number.
        value: String,
    },
    /// A parameter of a `family:key=value` spec out of its domain, named as
    /// it was typed.
    InvalidParam {
        /// The key, as typed.
        key: String,
        /// The value, as typed.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistError::Invalid { field, value, expected } => {
                let value =
                    if value.is_finite() && value.abs() >= 1e15 { format!("{value:e}") } else { value.to_string() };
                write!(f, "invalid delay parameter {field} = {value}: must be {expected}")
            }
            DistError::Syntax { input, expected } => write!(f, "cannot parse delay `{input}`: expected {expected}"),
            DistError::UnknownFamily { family } => write!(
                f,
                "unknown delay family `{family}` (expected constant, normal, exp, lognormal, pareto or gamma)"
            ),
            DistError::UnknownKey { family, key } => write!(f, "unknown parameter `{key}` for delay family {family}"),
            DistError::MissingKey { family, key } => write!(f, "delay family {family} needs parameter `{key}`"),
            DistError::DuplicateKey { key } => write!(f, "delay parameter `{key}` given twice"),
            DistError::BadValue { key, value } => write!(f, "delay parameter `{key}`: `{value}` is not a number"),
            DistError::InvalidParam { key, value, expected } => {
                write!(f, "delay parameter `{key}={value}`: must be {expected}")
            }
        }
    }
}

impl std::error::Error for DistError {}

fn check(field: &'static str, value: f64, ok: bool, expected: &'static str) -> Result<(), DistError> {
    if ok && value.is_finite() { Ok(()) } else { Err(DistError::Invalid { field, value, expected }) }
}

impl Delay {
    /// Checks every parameter: finite, and positive (or non-negative) where
    /// the family needs it. The error names the field.
    pub fn validate(&self) -> Result<(), DistError> {
        match *self {
            Delay::Constant { ms } => check("constant.ms", ms, ms >= 0.0, "finite and >= 0"),
            Delay::Normal { mean_ms, sd_ms } => {
                check("normal.mean_ms", mean_ms, true, "finite")?;
                check("normal.sd_ms", sd_ms, sd_ms > 0.0, "finite and > 0")
            }
            Delay::Exponential { mean_ms } => check("exponential.mean_ms", mean_ms, mean_ms > 0.0, "finite and > 0"),
            Delay::LogNormal { median_ms, sigma } => {
                check("log-normal.median_ms", median_ms, median_ms > 0.0, "finite and > 0")?;
                check("log-normal.sigma", sigma, sigma > 0.0, "finite and > 0")
            }
            Delay::Pareto { scale_ms, shape } => {
                check("pareto.scale_ms", scale_ms, scale_ms > 0.0, "finite and > 0")?;
                check("pareto.shape", shape, shape > 0.0, "finite and > 0")
            }
            Delay::ShiftedGamma { shift_ms, shape, scale_ms } => {
                check("shifted-gamma.shift_ms", shift_ms, shift_ms >= 0.0, "finite and >= 0")?;
                check("shifted-gamma.shape", shape, shape > 0.0, "finite and > 0")?;
                check("shifted-gamma.scale_ms", scale_ms, scale_ms > 0.0, "finite and > 0")
            }
        }
    }

    /// Draws one delay, in milliseconds: always finite and ≥ 0 (a Pareto
    /// draw beyond `f64::MAX` is capped there). Assumes the parameters are
    /// valid.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// use vigil_lab::dist::Delay;
    ///
    /// let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    /// let d = Delay::Exponential { mean_ms: 20.0 };
    /// let mean = (0..10_000).map(|_| d.sample(&mut rng)).sum::<f64>() / 10_000.0;
    /// assert!((mean - 20.0).abs() < 1.0); // 5 standard errors (0.2 ms each)
    /// ```
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let x = match *self {
            Delay::Constant { ms } => ms,
            Delay::Normal { mean_ms, sd_ms } => {
                let z: f64 = StandardNormal.sample(rng);
                mean_ms + sd_ms * z
            }
            Delay::Exponential { mean_ms } => {
                let e: f64 = Exp1.sample(rng);
                mean_ms * e
            }
            Delay::LogNormal { median_ms, sigma } => {
                let z: f64 = StandardNormal.sample(rng);
                median_ms * (sigma * z).exp()
            }
            Delay::Pareto { scale_ms, shape } => {
                // Inversion: 1 − U is uniform on (0, 1].
                let u: f64 = rng.random();
                scale_ms * (1.0 - u).powf(-1.0 / shape)
            }
            Delay::ShiftedGamma { shift_ms, shape, scale_ms } => match Gamma::new(shape, scale_ms) {
                Ok(g) => shift_ms + g.sample(rng),
                Err(_) => f64::NAN,
            },
        };
        // NaN (invalid parameters) maps to 0; +∞ to f64::MAX.
        if x.is_nan() { 0.0 } else { x.clamp(0.0, f64::MAX) }
    }

    /// The mean delay of the (clamped) distribution, in milliseconds; +∞ for
    /// a Pareto shape ≤ 1.
    pub fn mean_ms(&self) -> f64 {
        match *self {
            Delay::Constant { ms } => ms,
            Delay::Normal { mean_ms, sd_ms } => {
                let a = mean_ms / sd_ms;
                sd_ms * (a * normal_cdf(a) + normal_pdf(a))
            }
            Delay::Exponential { mean_ms } => mean_ms,
            Delay::LogNormal { median_ms, sigma } => median_ms * (0.5 * sigma * sigma).exp(),
            Delay::Pareto { scale_ms, shape } => {
                if shape > 1.0 {
                    shape * scale_ms / (shape - 1.0)
                } else {
                    f64::INFINITY
                }
            }
            Delay::ShiftedGamma { shift_ms, shape, scale_ms } => shift_ms + shape * scale_ms,
        }
    }

    /// The variance of the (clamped) distribution, in ms²; +∞ for a Pareto
    /// shape ≤ 2.
    pub fn variance_ms2(&self) -> f64 {
        match *self {
            Delay::Constant { .. } => 0.0,
            Delay::Normal { mean_ms, sd_ms } => {
                // Var(max(0, X)) / sd² = a²ΦQ + Φ + aφ(Q − Φ) − φ², with
                // a = mean/sd, Φ = Φ(a), Q = 1 − Φ(a): free of the
                // cancellation in E(D²) − E(D)² when a is large.
                let a = mean_ms / sd_ms;
                let (p, q, d) = (normal_cdf(a), normal_sf(a), normal_pdf(a));
                let v = a * a * p * q + p + a * d * (q - p) - d * d;
                sd_ms * sd_ms * v.max(0.0)
            }
            Delay::Exponential { mean_ms } => mean_ms * mean_ms,
            Delay::LogNormal { median_ms, sigma } => {
                let s2 = sigma * sigma;
                median_ms * median_ms * s2.exp() * s2.exp_m1()
            }
            Delay::Pareto { scale_ms, shape } => {
                if shape > 2.0 {
                    scale_ms * scale_ms * shape / ((shape - 1.0) * (shape - 1.0) * (shape - 2.0))
                } else {
                    f64::INFINITY
                }
            }
            Delay::ShiftedGamma { shape, scale_ms, .. } => shape * scale_ms * scale_ms,
        }
    }

    /// P(D > x): the survival function, exact for the clamped distribution
    /// (1 for every x < 0).
    pub fn sf(&self, x_ms: f64) -> f64 {
        if x_ms.is_nan() {
            return f64::NAN;
        }
        match *self {
            Delay::Constant { ms } => f64::from(u8::from(x_ms < ms)),
            Delay::Normal { mean_ms, sd_ms } => {
                if x_ms < 0.0 {
                    1.0
                } else {
                    normal_sf((x_ms - mean_ms) / sd_ms)
                }
            }
            Delay::Exponential { mean_ms } => {
                if x_ms <= 0.0 {
                    1.0
                } else {
                    (-x_ms / mean_ms).exp()
                }
            }
            Delay::LogNormal { median_ms, sigma } => {
                if x_ms <= 0.0 {
                    1.0
                } else {
                    normal_sf((x_ms / median_ms).ln() / sigma)
                }
            }
            Delay::Pareto { scale_ms, shape } => {
                if x_ms <= scale_ms {
                    1.0
                } else {
                    (scale_ms / x_ms).powf(shape)
                }
            }
            Delay::ShiftedGamma { shift_ms, shape, scale_ms } => {
                if x_ms <= shift_ms {
                    1.0
                } else {
                    gamma_q(shape, (x_ms - shift_ms) / scale_ms)
                }
            }
        }
    }

    /// P(D ≤ x): the distribution function, computed directly (not as
    /// 1 − sf) so that it is accurate in the lower tail.
    pub fn cdf(&self, x_ms: f64) -> f64 {
        if x_ms.is_nan() {
            return f64::NAN;
        }
        match *self {
            Delay::Constant { ms } => f64::from(u8::from(x_ms >= ms)),
            Delay::Normal { mean_ms, sd_ms } => {
                if x_ms < 0.0 {
                    0.0
                } else {
                    normal_cdf((x_ms - mean_ms) / sd_ms)
                }
            }
            Delay::Exponential { mean_ms } => {
                if x_ms <= 0.0 {
                    0.0
                } else {
                    -(-x_ms / mean_ms).exp_m1()
                }
            }
            Delay::LogNormal { median_ms, sigma } => {
                if x_ms <= 0.0 {
                    0.0
                } else {
                    normal_cdf((x_ms / median_ms).ln() / sigma)
                }
            }
            Delay::Pareto { scale_ms, shape } => {
                if x_ms <= scale_ms {
                    0.0
                } else {
                    -(shape * (scale_ms / x_ms).ln()).exp_m1()
                }
            }
            Delay::ShiftedGamma { shift_ms, shape, scale_ms } => {
                if x_ms <= shift_ms {
                    0.0
                } else {
                    gamma_p(shape, (x_ms - shift_ms) / scale_ms)
                }
            }
        }
    }

    /// P(D < x): differs from [`cdf`](Delay::cdf) only at an atom (the
    /// constant delay, and 0 for the clamped normal).
    pub(crate) fn cdf_below(&self, x_ms: f64) -> f64 {
        match *self {
            Delay::Constant { ms } => f64::from(u8::from(ms < x_ms)),
            Delay::Normal { .. } if x_ms <= 0.0 => 0.0,
            _ => self.cdf(x_ms),
        }
    }

    /// Points where the survival function jumps or has a kink: the atoms and
    /// the lower end of the support. Integration splits its range there.
    pub(crate) fn breakpoints(&self) -> [f64; 2] {
        match *self {
            Delay::Constant { ms } => [0.0, ms],
            Delay::Normal { .. } | Delay::Exponential { .. } | Delay::LogNormal { .. } => [0.0, 0.0],
            Delay::Pareto { scale_ms, .. } => [0.0, scale_ms],
            Delay::ShiftedGamma { shift_ms, .. } => [0.0, shift_ms],
        }
    }

    /// The distribution a fraction `f` of the way from `self` to `to`: every
    /// parameter interpolated linearly, `self` at 0 and `to` at 1. `None`
    /// when the families differ or `f` is not in [0, 1].
    ///
    /// ```
    /// use vigil_lab::dist::Delay;
    ///
    /// let calm = Delay::Normal { mean_ms: 10.0, sd_ms: 3.0 };
    /// let storm = Delay::Normal { mean_ms: 80.0, sd_ms: 40.0 };
    /// assert_eq!(calm.interpolate(&storm, 0.5), Some(Delay::Normal { mean_ms: 45.0, sd_ms: 21.5 }));
    /// assert_eq!(calm.interpolate(&Delay::Exponential { mean_ms: 10.0 }, 0.5), None);
    /// ```
    pub fn interpolate(&self, to: &Delay, f: f64) -> Option<Delay> {
        if !(0.0..=1.0).contains(&f) {
            return None;
        }
        let l = |a: &f64, b: &f64| a * (1.0 - f) + b * f;
        Some(match (self, to) {
            (Delay::Constant { ms: a }, Delay::Constant { ms: b }) => Delay::Constant { ms: l(a, b) },
            (Delay::Normal { mean_ms: m1, sd_ms: s1 }, Delay::Normal { mean_ms: m2, sd_ms: s2 }) => {
                Delay::Normal { mean_ms: l(m1, m2), sd_ms: l(s1, s2) }
            }
            (Delay::Exponential { mean_ms: a }, Delay::Exponential { mean_ms: b }) => {
                Delay::Exponential { mean_ms: l(a, b) }
            }
            (Delay::LogNormal { median_ms: m1, sigma: s1 }, Delay::LogNormal { median_ms: m2, sigma: s2 }) => {
                Delay::LogNormal { median_ms: l(m1, m2), sigma: l(s1, s2) }
            }
            (Delay::Pareto { scale_ms: c1, shape: a1 }, Delay::Pareto { scale_ms: c2, shape: a2 }) => {
                Delay::Pareto { scale_ms: l(c1, c2), shape: l(a1, a2) }
            }
            (
                Delay::ShiftedGamma { shift_ms: h1, shape: k1, scale_ms: t1 },
                Delay::ShiftedGamma { shift_ms: h2, shape: k2, scale_ms: t2 },
            ) => Delay::ShiftedGamma { shift_ms: l(h1, h2), shape: l(k1, k2), scale_ms: l(t1, t2) },
            _ => return None,
        })
    }

    /// A short human description, e.g. `N(80, 40) ms`, `Exp(mean 20) ms`,
    /// `lognormal(median 20, σ 0.5) ms`.
    pub fn describe(&self) -> String {
        // Plain when short, exponent form when plain would run long.
        let n = |v: f64| {
            if v == 0.0 || (v.is_finite() && (1e-4..1e15).contains(&v.abs())) {
                format!("{v}")
            } else {
                format!("{v:e}")
            }
        };
        match *self {
            Delay::Constant { ms } => format!("constant {} ms", n(ms)),
            Delay::Normal { mean_ms, sd_ms } => format!("N({}, {}) ms", n(mean_ms), n(sd_ms)),
            Delay::Exponential { mean_ms } => format!("Exp(mean {}) ms", n(mean_ms)),
            Delay::LogNormal { median_ms, sigma } => format!("lognormal(median {}, σ {}) ms", n(median_ms), n(sigma)),
            Delay::Pareto { scale_ms, shape } => format!("Pareto(scale {}, shape {}) ms", n(scale_ms), n(shape)),
            Delay::ShiftedGamma { shift_ms, shape, scale_ms } => {
                if shift_ms == 0.0 {
                    format!("Gamma(shape {}, scale {}) ms", n(shape), n(scale_ms))
                } else {
                    format!("{} + Gamma(shape {}, scale {}) ms", n(shift_ms), n(shape), n(scale_ms))
                }
            }
        }
    }

    /// A distribution with the given mean (ms) and variance (ms²), for
    /// simulating from moments alone: a gamma with shape mean²/var and scale
    /// var/mean (a [`Delay::ShiftedGamma`] with shift 0), or a
    /// [`Delay::Constant`] when the variance is 0.
    ///
    /// ```
    /// use vigil_lab::dist::Delay;
    ///
    /// let d = Delay::from_moments(20.0, 400.0)?; // the moments of Exp(mean 20)
    /// assert_eq!(d, Delay::ShiftedGamma { shift_ms: 0.0, shape: 1.0, scale_ms: 20.0 });
    /// assert_eq!(Delay::from_moments(5.0, 0.0)?, Delay::Constant { ms: 5.0 });
    /// assert!(Delay::from_moments(0.0, 1.0).is_err()); // a delay ≥ 0 with mean 0 has variance 0
    /// # Ok::<(), vigil_lab::dist::DistError>(())
    /// ```
    pub fn from_moments(mean_ms: f64, variance_ms2: f64) -> Result<Delay, DistError> {
        check("moments.mean_ms", mean_ms, mean_ms >= 0.0, "finite and >= 0")?;
        check("moments.variance_ms2", variance_ms2, variance_ms2 >= 0.0, "finite and >= 0")?;
        if variance_ms2 == 0.0 {
            return Ok(Delay::Constant { ms: mean_ms });
        }
        check("moments.mean_ms", mean_ms, mean_ms > 0.0, "> 0 when the variance is positive")?;
        let d = Delay::ShiftedGamma {
            shift_ms: 0.0,
            shape: mean_ms * mean_ms / variance_ms2,
            scale_ms: variance_ms2 / mean_ms,
        };
        d.validate()?;
        Ok(d)
    }
}

/// Writes the command-line form that [`FromStr`] reads back exactly, e.g.
/// `normal:mean=80,sd=40` or `gamma:shift=5,shape=2,scale=10`.
impl fmt::Display for Delay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Delay::Constant { ms } => write!(f, "constant:ms={ms}"),
            Delay::Normal { mean_ms, sd_ms } => write!(f, "normal:mean={mean_ms},sd={sd_ms}"),
            Delay::Exponential { mean_ms } => write!(f, "exp:mean={mean_ms}"),
            Delay::LogNormal { median_ms, sigma } => write!(f, "lognormal:median={median_ms},sigma={sigma}"),
            Delay::Pareto { scale_ms, shape } => write!(f, "pareto:scale={scale_ms},shape={shape}"),
            Delay::ShiftedGamma { shift_ms, shape, scale_ms } => {
                write!(f, "gamma:shift={shift_ms},shape={shape},scale={scale_ms}")
            }
        }
    }
}

/// Parses `family:key=value,...`, values in milliseconds (σ and the shapes
/// are dimensionless):
///
/// | text | distribution |
/// |---|---|
/// | `constant:ms=10` | [`Delay::Constant`] |
/// | `normal:mean=80,sd=40` | [`Delay::Normal`] |
/// | `exp:mean=20` (or `exponential:`) | [`Delay::Exponential`] |
/// | `lognormal:median=20,sigma=0.5` | [`Delay::LogNormal`] |
/// | `pareto:scale=5,shape=2.5` | [`Delay::Pareto`] |
/// | `gamma:shift=5,shape=2,scale=10` (`shift` defaults to 0) | [`Delay::ShiftedGamma`] |
///
/// Whitespace around names and values is ignored. The result is validated;
/// errors name the offending key or value.
///
/// ```
/// use vigil_lab::dist::{Delay, DistError};
///
/// assert_eq!("exp:mean=20".parse::<Delay>()?, Delay::Exponential { mean_ms: 20.0 });
/// let err = "normal:mean=80,sd=-1".parse::<Delay>().unwrap_err();
/// assert_eq!(err.to_string(), "delay parameter `sd=-1`: must be finite and > 0");
/// # Ok::<(), DistError>(())
/// ```
impl FromStr for Delay {
    type Err = DistError;

    fn from_str(s: &str) -> Result<Delay, DistError> {
        let (family, params) = s
            .split_once(':')
            .ok_or_else(|| DistError::Syntax { input: s.to_string(), expected: "`family:key=value,...`" })?;
        let family = family.trim().to_ascii_lowercase();
        let (name, keys): (&'static str, &[&'static str]) = match family.as_str() {
            "constant" | "const" => ("constant", &["ms"]),
            "normal" => ("normal", &["mean", "sd"]),
            "exp" | "exponential" => ("exp", &["mean"]),
            "lognormal" | "log-normal" => ("lognormal", &["median", "sigma"]),
            "pareto" => ("pareto", &["scale", "shape"]),
            "gamma" | "shifted-gamma" => ("gamma", &["shift", "shape", "scale"]),
            _ => return Err(DistError::UnknownFamily { family }),
        };
        let mut values: [Option<f64>; 3] = [None; 3];
        let mut typed: [(&str, &str); 3] = [("", ""); 3];
        for item in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| DistError::Syntax { input: item.to_string(), expected: "`key=value`" })?;
            let (key, value) = (key.trim(), value.trim());
            let slot = keys
                .iter()
                .position(|k| k.eq_ignore_ascii_case(key))
                .ok_or_else(|| DistError::UnknownKey { family: name, key: key.to_string() })?;
            if values[slot].is_some() {
                return Err(DistError::DuplicateKey { key: key.to_string() });
            }
            let v = value
                .parse::<f64>()
                .map_err(|_| DistError::BadValue { key: key.to_string(), value: value.to_string() })?;
            values[slot] = Some(v);
            typed[slot] = (key, value);
        }
        let get = |i: usize| values[i].ok_or(DistError::MissingKey { family: name, key: keys[i] });
        let delay = match name {
            "constant" => Delay::Constant { ms: get(0)? },
            "normal" => Delay::Normal { mean_ms: get(0)?, sd_ms: get(1)? },
            "exp" => Delay::Exponential { mean_ms: get(0)? },
            "lognormal" => Delay::LogNormal { median_ms: get(0)?, sigma: get(1)? },
            "pareto" => Delay::Pareto { scale_ms: get(0)?, shape: get(1)? },
            _ => Delay::ShiftedGamma { shift_ms: values[0].unwrap_or(0.0), shape: get(1)?, scale_ms: get(2)? },
        };
        // A value out of its domain is named as typed (`mean=-1`), not by the
        // scenario file's field (`exponential.mean_ms`).
        delay.validate().map_err(|e| match e {
            DistError::Invalid { field, expected, .. } => {
                let short = field.rsplit('.').next().unwrap_or(field);
                let short = if short == "ms" { short } else { short.strip_suffix("_ms").unwrap_or(short) };
                match keys.iter().position(|k| *k == short).map(|i| typed[i]) {
                    Some((key, value)) if !key.is_empty() => DistError::InvalidParam {
                        key: crate::millis::quoted(key).trim_matches('\'').to_string(),
                        value: crate::millis::quoted(value).trim_matches('\'').to_string(),
                        expected,
                    },
                    _ => e,
                }
            }
            e => e,
        })?;
        Ok(delay)
    }
}

// ---------------------------------------------------------------------------
// Special functions.

/// The standard normal density φ(z).
pub(crate) fn normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * PI).sqrt()
}

/// The standard normal upper tail 1 − Φ(z), accurate in the far tail.
pub(crate) fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / SQRT_2)
}

/// The standard normal distribution function Φ(z), accurate in the far
/// lower tail.
pub(crate) fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / SQRT_2)
}

/// The workspace's complementary error function (in `vigil-detector`).
pub(crate) use vigil_detector::erfc;

/// Evaluates b0 + a1/(b1 + a2/(b2 + …)) by the modified Lentz method;
/// `terms(n)` gives (a_n, b_n) for n ≥ 1.
fn lentz(b0: f64, terms: impl Fn(f64) -> (f64, f64)) -> f64 {
    const TINY: f64 = 1e-300;
    let mut f = if b0 == 0.0 { TINY } else { b0 };
    let (mut c, mut d) = (f, 0.0);
    for n in 1..10_000 {
        let (a, b) = terms(f64::from(n));
        d = b + a * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = b + a / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    f
}

/// ln Γ(x) for x > 0, by Lanczos' approximation (g = 7, nine terms), about
/// 1e-15 relative accuracy.
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Γ(x) = Γ(x + 1)/x keeps the argument in the approximation's range.
        return ln_gamma(x + 1.0) - x.ln();
    }
    let z = x - 1.0;
    let mut sum = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        sum += c / (z + i as f64);
    }
    let t = z + G + 0.5;
    0.5 * (2.0 * PI).ln() + (z + 0.5) * t.ln() - t + sum.ln()
}

/// The regularized lower incomplete gamma function P(a, x) = γ(a, x)/Γ(a).
pub(crate) fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        0.0
    } else if x < a + 1.0 {
        gamma_series(a, x)
    } else {
        1.0 - gamma_cf(a, x)
    }
}

/// The regularized upper incomplete gamma function Q(a, x) = 1 − P(a, x).
pub(crate) fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        1.0
    } else if x < a + 1.0 {
        1.0 - gamma_series(a, x)
    } else {
        gamma_cf(a, x)
    }
}

/// e^{−x} x^a / Γ(a), the common prefactor, computed in logarithms.
fn gamma_prefactor(a: f64, x: f64) -> f64 {
    (a * x.ln() - x - ln_gamma(a)).exp()
}

/// P(a, x) by its series e^{−x} x^a / Γ(a) · Σ xⁿ / (a (a+1) ··· (a+n));
/// converges quickly for x < a + 1.
fn gamma_series(a: f64, x: f64) -> f64 {
    let (mut term, mut sum, mut n) = (1.0 / a, 1.0 / a, 0.0);
    while term > 1e-17 * sum && n < 10_000.0 {
        n += 1.0;
        term *= x / (a + n);
        sum += term;
    }
    (sum * gamma_prefactor(a, x)).min(1.0)
}

/// Q(a, x) by the continued fraction e^{−x} x^a / Γ(a) · 1/(x + 1 − a −
/// 1·(1−a)/(x + 3 − a − 2·(2−a)/(x + 5 − a − …))); converges quickly for
/// x ≥ a + 1.
fn gamma_cf(a: f64, x: f64) -> f64 {
    let cf = lentz(x + 1.0 - a, |n| (-n * (n - a), x + 2.0 * n + 1.0 - a));
    (gamma_prefactor(a, x) / cf).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn erfc_matches_tabulated_values() {
        // Reference values: erfc to 16 significant digits (e.g. from
        // Abramowitz & Stegun / any arbitrary-precision package). Tolerance
        // 1e-14 relative: the continued fraction and the series converge to
        // machine precision; e^{−x²} costs a few ulps more at x = 5.
        let cases = [
            (0.0, 1.0),
            (0.1, 0.887_537_083_981_715),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (1.5, 0.033_894_853_524_689_27),
            (2.0, 0.004_677_734_981_047_266),
            (3.0, 2.209_049_699_858_544e-5),
            (5.0, 1.537_459_794_428_035e-12),
            (-1.0, 1.842_700_792_949_715),
            (-0.5, 1.520_499_877_813_046_5),
        ];
        for (x, want) in cases {
            assert!(rel(erfc(x), want) < 1e-14, "erfc({x}) = {} want {want}", erfc(x));
        }
        // Far tail, where only the continued fraction is usable; e^{−100}
        // loses about 1e-14 to the rounding of x².
        assert!(rel(erfc(10.0), 2.088_487_583_762_545e-45) < 1e-13);
        assert_eq!(erfc(30.0), 0.0);
        assert_eq!(erfc(-30.0), 2.0);
    }

    #[test]
    fn normal_tail_values() {
        // 1 − Φ(2) and 1 − Φ(1), the classic table values.
        assert!(rel(normal_sf(2.0), 0.022_750_131_948_179_2) < 1e-14);
        assert!(rel(normal_sf(1.0), 0.158_655_253_931_457_05) < 1e-14);
        assert!(rel(normal_cdf(-6.0), 9.865_876_450_376_98e-10) < 1e-13);
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-16);
    }

    #[test]
    fn ln_gamma_matches_exact_values() {
        // Γ(1/2) = √π, Γ(1) = 1, Γ(10) = 9!, Γ(0.1) = 9.513507698668732;
        // Lanczos (g = 7, n = 9) is accurate to ~1e-15.
        assert!((ln_gamma(0.5) - 0.5 * PI.ln()).abs() < 1e-14);
        assert!(ln_gamma(1.0).abs() < 1e-14);
        assert!(ln_gamma(2.0).abs() < 1e-14);
        assert!(rel(ln_gamma(10.0), 362_880f64.ln()) < 1e-14);
        assert!((ln_gamma(0.1) - 9.513_507_698_668_732f64.ln()).abs() < 1e-13);
        // Stirling-dominated range: ln Γ(101) = ln 100!.
        assert!(rel(ln_gamma(101.0), 363.739_375_555_563_5) < 1e-14);
    }

    #[test]
    fn incomplete_gamma_closed_forms() {
        // Q(1, x) = e^{−x}; Q(2, x) = e^{−x}(1 + x); Q(1/2, x) = erfc(√x).
        // Both the series (x < a+1) and the continued fraction (x ≥ a+1)
        // branches are exercised; 1e-13 relative allows for the ln Γ and
        // exp rounding in the prefactor.
        for x in [0.01, 0.3, 1.0, 1.9, 2.5, 7.0, 30.0] {
            assert!(rel(gamma_q(1.0, x), (-x).exp()) < 1e-13, "Q(1, {x})");
            assert!(rel(gamma_q(2.0, x), (-x).exp() * (1.0 + x)) < 1e-13, "Q(2, {x})");
            assert!(rel(gamma_q(0.5, x), erfc(x.sqrt())) < 1e-13, "Q(0.5, {x})");
            assert!((gamma_p(3.0, x) + gamma_q(3.0, x) - 1.0).abs() < 1e-15);
        }
        // P(3, 2) = 1 − 5 e^{−2}.
        assert!(rel(gamma_p(3.0, 2.0), 1.0 - 5.0 * (-2.0f64).exp()) < 1e-14);
    }

    fn all_families() -> Vec<Delay> {
        vec![
            Delay::Constant { ms: 10.0 },
            Delay::Normal { mean_ms: 80.0, sd_ms: 40.0 },
            Delay::Normal { mean_ms: 5.0, sd_ms: 10.0 }, // heavily clamped: P(D = 0) = 0.31
            Delay::Exponential { mean_ms: 20.0 },
            Delay::LogNormal { median_ms: 20.0, sigma: 0.5 },
            Delay::Pareto { scale_ms: 5.0, shape: 6.0 }, // shape > 4: finite fourth moment
            Delay::ShiftedGamma { shift_ms: 5.0, shape: 2.0, scale_ms: 10.0 },
            Delay::ShiftedGamma { shift_ms: 0.0, shape: 0.4, scale_ms: 30.0 },
        ]
    }

    #[test]
    fn sample_moments_match_the_formulas() {
        // 200,000 seeded draws per family. The sample mean's standard error
        // is sd/√n; the sample variance's is √((m4 − s⁴)/n), with m4 the
        // sample fourth central moment. 5 standard errors: a false failure
        // has probability below 1e-6 per check, and the seed is fixed anyway.
        const N: usize = 200_000;
        for (i, d) in all_families().into_iter().enumerate() {
            d.validate().unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(1000 + i as u64);
            let xs: Vec<f64> = (0..N).map(|_| d.sample(&mut rng)).collect();
            assert!(xs.iter().all(|x| x.is_finite() && *x >= 0.0));
            let n = N as f64;
            let mean = xs.iter().sum::<f64>() / n;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
            let m4 = xs.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / n;
            let (se_mean, se_var) = ((var / n).sqrt(), ((m4 - var * var).max(0.0) / n).sqrt());
            let (want_mean, want_var) = (d.mean_ms(), d.variance_ms2());
            println!(
                "{}: mean {mean:.4} vs {want_mean:.4} (se {se_mean:.4}); var {var:.3} vs {want_var:.3} (se {se_var:.3})",
                d.describe()
            );
            if want_var == 0.0 {
                assert_eq!((mean, var), (want_mean, 0.0));
                continue;
            }
            assert!((mean - want_mean).abs() < 5.0 * se_mean, "{d:?} mean");
            assert!((var - want_var).abs() < 5.0 * se_var, "{d:?} variance");
        }
    }

    #[test]
    fn sample_distribution_matches_sf() {
        // The empirical survival at three points vs sf: binomial standard
        // error √(p(1−p)/n), 5 SE.
        const N: usize = 100_000;
        for (i, d) in all_families().into_iter().enumerate() {
            let mut rng = ChaCha8Rng::seed_from_u64(2000 + i as u64);
            let xs: Vec<f64> = (0..N).map(|_| d.sample(&mut rng)).collect();
            let m = d.mean_ms();
            for x in [0.5 * m, m, 2.0 * m] {
                let p = d.sf(x);
                let emp = xs.iter().filter(|&&v| v > x).count() as f64 / N as f64;
                let se = (p * (1.0 - p) / N as f64).sqrt().max(1e-12);
                assert!((emp - p).abs() <= 5.0 * se, "{d:?} at {x}: empirical {emp} vs sf {p}");
            }
        }
    }

    #[test]
    fn sf_and_cdf_spot_values() {
        let n = Delay::Normal { mean_ms: 80.0, sd_ms: 40.0 };
        // 1 − Φ(2) = 0.0227501319481792 at mean + 2 sd.
        assert!(rel(n.sf(160.0), 0.022_750_131_948_179_2) < 1e-14);
        assert!(rel(n.cdf(0.0), normal_cdf(-2.0)) < 1e-14); // the atom at 0
        assert_eq!(n.sf(-1.0), 1.0);
        assert_eq!(n.cdf(-1.0), 0.0);
        assert_eq!(n.cdf_below(0.0), 0.0);
        // N(0, 1) clamped: E = φ(0) = 1/√(2π); E(D²) = 1/2.
        let half = Delay::Normal { mean_ms: 0.0, sd_ms: 1.0 };
        let m = 1.0 / (2.0 * PI).sqrt();
        assert!(rel(half.mean_ms(), m) < 1e-15);
        assert!(rel(half.variance_ms2(), 0.5 - m * m) < 1e-14);
        assert!((half.cdf(0.0) - 0.5).abs() < 1e-16);
        // Far above the mean the clamp is immaterial: the moments are the
        // normal's (to within Φ(−100) ≈ 0).
        let far = Delay::Normal { mean_ms: 1e4, sd_ms: 1.0 };
        assert!(rel(far.mean_ms(), 1e4) < 1e-15 && rel(far.variance_ms2(), 1.0) < 1e-12);

        let e = Delay::Exponential { mean_ms: 20.0 };
        assert!(rel(e.sf(20.0), (-1.0f64).exp()) < 1e-15);
        assert!(rel(e.cdf(1e-6), 5e-8) < 1e-7); // lower tail without cancellation

        // Gamma with shape 1 is the exponential; the shift moves it.
        let g = Delay::ShiftedGamma { shift_ms: 0.0, shape: 1.0, scale_ms: 20.0 };
        let g5 = Delay::ShiftedGamma { shift_ms: 5.0, shape: 1.0, scale_ms: 20.0 };
        for x in [0.5, 10.0, 20.0, 55.0, 400.0] {
            assert!(rel(g.sf(x), e.sf(x)) < 1e-13, "gamma(1) sf at {x}");
            assert!(rel(g.cdf(x), e.cdf(x)) < 1e-13, "gamma(1) cdf at {x}");
            assert!(rel(g5.sf(x + 5.0), e.sf(x)) < 1e-13);
        }
        assert_eq!(g5.sf(4.0), 1.0);

        // Log-normal: the median splits the mass; one σ above it in log
        // space the tail is 1 − Φ(1).
        let ln = Delay::LogNormal { median_ms: 20.0, sigma: 0.5 };
        assert!((ln.cdf(20.0) - 0.5).abs() < 1e-15);
        assert!(rel(ln.sf(20.0 * 0.5f64.exp()), 0.158_655_253_931_457_05) < 1e-14);

        // Pareto: P(D > 2 scale) = 2^−shape.
        let p = Delay::Pareto { scale_ms: 5.0, shape: 2.5 };
        assert!(rel(p.sf(10.0), 2f64.powf(-2.5)) < 1e-15);
        assert_eq!(p.sf(5.0), 1.0);
        assert!(rel(p.mean_ms(), 2.5 * 5.0 / 1.5) < 1e-15);
        assert_eq!(Delay::Pareto { scale_ms: 5.0, shape: 1.0 }.mean_ms(), f64::INFINITY);
        assert_eq!(Delay::Pareto { scale_ms: 5.0, shape: 2.0 }.variance_ms2(), f64::INFINITY);

        // Constant: a step at the value; P(D < c) = 0 but P(D ≤ c) = 1.
        let c = Delay::Constant { ms: 10.0 };
        assert_eq!((c.sf(9.9), c.sf(10.0), c.cdf(10.0), c.cdf_below(10.0)), (1.0, 0.0, 1.0, 0.0));

        for d in all_families() {
            for x in [-1.0, 0.0, 3.0, 10.0, 25.0, 90.0, 300.0] {
                let s = d.sf(x) + d.cdf(x);
                assert!((s - 1.0).abs() < 1e-14, "{d:?}: sf + cdf at {x} = {s}");
            }
        }
    }

    #[test]
    fn validation_names_the_field() {
        let bad = [
            (Delay::Constant { ms: -1.0 }, "constant.ms"),
            (Delay::Normal { mean_ms: 1.0, sd_ms: 0.0 }, "normal.sd_ms"),
            (Delay::Normal { mean_ms: f64::NAN, sd_ms: 1.0 }, "normal.mean_ms"),
            (Delay::Exponential { mean_ms: f64::INFINITY }, "exponential.mean_ms"),
            (Delay::LogNormal { median_ms: 1.0, sigma: -0.5 }, "log-normal.sigma"),
            (Delay::Pareto { scale_ms: 0.0, shape: 2.0 }, "pareto.scale_ms"),
            (Delay::ShiftedGamma { shift_ms: 0.0, shape: 0.0, scale_ms: 1.0 }, "shifted-gamma.shape"),
        ];
        for (d, name) in bad {
            match d.validate() {
                Err(DistError::Invalid { field, .. }) => assert_eq!(field, name),
                other => panic!("{d:?}: {other:?}"),
            }
        }
        for d in all_families() {
            assert_eq!(d.validate(), Ok(()));
        }
    }

    #[test]
    fn parser_reads_every_family_and_round_trips() {
        let cases = [
            ("normal:mean=80,sd=40", Delay::Normal { mean_ms: 80.0, sd_ms: 40.0 }),
            ("exp:mean=20", Delay::Exponential { mean_ms: 20.0 }),
            ("exponential: mean = 20 ", Delay::Exponential { mean_ms: 20.0 }),
            ("lognormal:median=20,sigma=0.5", Delay::LogNormal { median_ms: 20.0, sigma: 0.5 }),
            ("pareto:scale=5,shape=2.5", Delay::Pareto { scale_ms: 5.0, shape: 2.5 }),
            ("gamma:shift=5,shape=2,scale=10", Delay::ShiftedGamma { shift_ms: 5.0, shape: 2.0, scale_ms: 10.0 }),
            ("gamma:shape=2,scale=10", Delay::ShiftedGamma { shift_ms: 0.0, shape: 2.0, scale_ms: 10.0 }),
            ("constant:ms=10", Delay::Constant { ms: 10.0 }),
            ("Normal:SD=1e-3,mean=0.1", Delay::Normal { mean_ms: 0.1, sd_ms: 1e-3 }),
        ];
        for (text, want) in cases {
            let got: Delay = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string().parse::<Delay>(), Ok(got.clone()), "{text} via {got}");
        }
        // Display is exact for awkward values too.
        let d = Delay::LogNormal { median_ms: 0.1 + 0.2, sigma: 1.0 / 3.0 };
        assert_eq!(d.to_string().parse::<Delay>(), Ok(d));
        for d in all_families() {
            assert_eq!(d.to_string().parse::<Delay>(), Ok(d));
        }
    }

    #[test]
    fn parser_errors_name_the_problem() {
        let err = |s: &str| s.parse::<Delay>().unwrap_err();
        assert_eq!(err("weibull:shape=2"), DistError::UnknownFamily { family: "weibull".into() });
        assert_eq!(err("normal:mean=80,sdev=4"), DistError::UnknownKey { family: "normal", key: "sdev".into() });
        assert_eq!(err("normal:mean=80"), DistError::MissingKey { family: "normal", key: "sd" });
        assert_eq!(err("exp:mean=20,mean=30"), DistError::DuplicateKey { key: "mean".into() });
        assert_eq!(err("exp:mean=twenty"), DistError::BadValue { key: "mean".into(), value: "twenty".into() });
        assert!(matches!(err("exp"), DistError::Syntax { .. }));
        assert!(matches!(err("exp:mean"), DistError::Syntax { .. }));
        // Out of the domain: named as typed, not by the scenario file's field.
        assert!(matches!(err("pareto:scale=5,shape=0"), DistError::InvalidParam { ref key, .. } if key == "shape"));
        assert!(matches!(err("constant:ms=inf"), DistError::InvalidParam { ref key, .. } if key == "ms"));
        assert_eq!(err("normal:mean=20,sd=-1").to_string(), "delay parameter `sd=-1`: must be finite and > 0");
        assert_eq!(
            err("gamma:shift=-1e300,shape=1,scale=1").to_string(),
            "delay parameter `shift=-1e300`: must be finite and >= 0"
        );
        let text = err("normal:mean=80,sdev=4").to_string();
        assert!(text.contains("`sdev`") && text.contains("normal"), "{text}");
        assert!(err("exp:mean=twenty").to_string().contains("`twenty`"));
    }

    #[test]
    fn serde_uses_the_kind_tag() {
        let d = Delay::Normal { mean_ms: 80.0, sd_ms: 40.0 };
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, r#"{"kind":"normal","mean_ms":80.0,"sd_ms":40.0}"#);
        for d in all_families() {
            let back: Delay = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
            assert_eq!(back, d);
        }
        let g: Delay =
            serde_json::from_str(r#"{"kind":"shifted-gamma","shift_ms":5,"shape":2,"scale_ms":10}"#).unwrap();
        assert_eq!(g, Delay::ShiftedGamma { shift_ms: 5.0, shape: 2.0, scale_ms: 10.0 });
        let l: Delay = serde_json::from_str(r#"{"kind":"log-normal","median_ms":20,"sigma":0.5}"#).unwrap();
        assert_eq!(l, Delay::LogNormal { median_ms: 20.0, sigma: 0.5 });
        // The command-line family names are accepted as aliases on input.
        let l: Delay = serde_json::from_str(r#"{"kind":"lognormal","median_ms":20,"sigma":0.5}"#).unwrap();
        assert_eq!(l, Delay::LogNormal { median_ms: 20.0, sigma: 0.5 });
        let e: Delay = serde_json::from_str(r#"{"kind":"exp","mean_ms":20}"#).unwrap();
        assert_eq!(e, Delay::Exponential { mean_ms: 20.0 });
        let g: Delay = serde_json::from_str(r#"{"kind":"gamma","shift_ms":0,"shape":2,"scale_ms":10}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&g).unwrap(),
            r#"{"kind":"shifted-gamma","shift_ms":0.0,"shape":2.0,"scale_ms":10.0}"#
        );
        assert!(serde_json::from_str::<Delay>(r#"{"kind":"exponential","mean_ms":20,"sd_ms":1}"#).is_err());
        assert!(serde_json::from_str::<Delay>(r#"{"kind":"cauchy","mean_ms":20}"#).is_err());
    }

    #[test]
    fn interpolation_and_descriptions() {
        let a = Delay::ShiftedGamma { shift_ms: 0.0, shape: 1.0, scale_ms: 10.0 };
        let b = Delay::ShiftedGamma { shift_ms: 10.0, shape: 3.0, scale_ms: 20.0 };
        assert_eq!(a.interpolate(&b, 0.0), Some(a.clone()));
        assert_eq!(a.interpolate(&b, 1.0), Some(b.clone()));
        assert_eq!(a.interpolate(&b, 0.25), Some(Delay::ShiftedGamma { shift_ms: 2.5, shape: 1.5, scale_ms: 12.5 }));
        assert_eq!(a.interpolate(&b, 1.5), None);
        assert_eq!(a.interpolate(&Delay::Constant { ms: 1.0 }, 0.5), None);
        let c = Delay::Constant { ms: 10.0 }.interpolate(&Delay::Constant { ms: 20.0 }, 0.5);
        assert_eq!(c, Some(Delay::Constant { ms: 15.0 }));

        assert_eq!(Delay::Normal { mean_ms: 80.0, sd_ms: 40.0 }.describe(), "N(80, 40) ms");
        assert_eq!(Delay::Exponential { mean_ms: 20.0 }.describe(), "Exp(mean 20) ms");
        assert_eq!(Delay::LogNormal { median_ms: 20.0, sigma: 0.5 }.describe(), "lognormal(median 20, σ 0.5) ms");
        assert_eq!(b.describe(), "10 + Gamma(shape 3, scale 20) ms");
        assert_eq!(Delay::Constant { ms: 10.0 }.describe(), "constant 10 ms");
    }

    #[test]
    fn from_moments_reproduces_the_moments() {
        for (m, v) in [(20.0, 400.0), (80.0, 1600.0), (10.0, 9.0), (1.0, 100.0)] {
            let d = Delay::from_moments(m, v).unwrap();
            assert!(rel(d.mean_ms(), m) < 1e-14 && rel(d.variance_ms2(), v) < 1e-14, "{d:?}");
        }
        assert_eq!(Delay::from_moments(0.0, 0.0), Ok(Delay::Constant { ms: 0.0 }));
        assert!(matches!(Delay::from_moments(-1.0, 1.0), Err(DistError::Invalid { field: "moments.mean_ms", .. })));
        assert!(matches!(
            Delay::from_moments(1.0, f64::NAN),
            Err(DistError::Invalid { field: "moments.variance_ms2", .. })
        ));
    }
}
