//! Sweeps: a detector family over a parameter grid, the Pareto frontier of
//! detection time against mistake rate, and recommendations.
//!
//! A [`Family`] is a base detector spec and one parameter to vary. Sweeping
//! gives one [`Point`] per setting; a point is on the frontier when no other
//! point detects at least as fast with at most as many mistakes, and is
//! strictly better on one of the two.
//!
//! ```
//! use vigil_lab::sweep::{Family, frontier};
//!
//! let fixed = Family::new("fixed", "fixed", "timeout-ms", &["150", "250", "400"])?;
//! assert_eq!(fixed.specs()?[1].to_string(), "fixed:timeout-ms=250");
//! # Ok::<(), vigil_lab::sweep::FamilyError>(())
//! ```

use serde::Serialize;
use vigil_detector::ConfigError;

use crate::engine::judge_all;
use crate::qos::Qos;
use crate::spec::{DetectorSpec, SpecError};
use crate::trace::Trace;

/// A base spec and a parameter grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Name shown in tables and legends.
    pub name: String,
    /// The spec every setting starts from.
    pub base: DetectorSpec,
    /// The parameter varied.
    pub param: String,
    /// Its values, as text.
    pub values: Vec<String>,
}

/// A family that could not be read, or default grids that could not be
/// built.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FamilyError {
    /// Not written `SPEC@PARAM=V1,V2,...`.
    Format {
        /// The family as written.
        text: String,
    },
    /// The heartbeat period the default grids would be scaled to is not one
    /// they can use.
    Period {
        /// The period, in milliseconds.
        ms: f64,
    },
    /// The base spec, or the spec for one of the values.
    Spec(SpecError),
}

impl std::fmt::Display for FamilyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FamilyError::Format { text } => write!(
                f,
                "family {}: expected SPEC@PARAM=V1,V2,... (e.g. fixed@timeout-ms=150,250)",
                crate::millis::quoted(text)
            ),
            FamilyError::Period { ms } => write!(
                f,
                "the default detector grids are scaled to the heartbeat period, and {ms} ms is not one they can use \
                 (1 ms to 57 min); give the families to sweep with --family"
            ),
            FamilyError::Spec(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for FamilyError {}

impl From<SpecError> for FamilyError {
    fn from(e: SpecError) -> FamilyError {
        FamilyError::Spec(e)
    }
}

impl Family {
    /// A family from a base spec's text, a parameter and its values.
    ///
    /// # Errors
    ///
    /// [`FamilyError::Spec`] for the base spec or the spec of a value.
    pub fn new(name: &str, base: &str, param: &str, values: &[&str]) -> Result<Family, FamilyError> {
        let family = Family {
            name: name.to_string(),
            base: base.parse()?,
            param: param.to_string(),
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        family.specs()?;
        Ok(family)
    }

    /// Parses `NAME=SPEC@PARAM=V1,V2,...` or `SPEC@PARAM=V1,V2,...` (the
    /// name defaults to the spec), for example
    /// `akka:pause-ms=0@threshold=1,2,4,8`.
    ///
    /// # Errors
    ///
    /// [`FamilyError::Format`], or [`FamilyError::Spec`] as for
    /// [`Family::new`].
    pub fn parse(text: &str) -> Result<Family, FamilyError> {
        let bad = || FamilyError::Format { text: text.to_owned() };
        let (spec, grid) = text.rsplit_once('@').ok_or_else(bad)?;
        let (param, values) = grid.split_once('=').ok_or_else(bad)?;
        let values: Vec<&str> = values.split(',').map(str::trim).filter(|v| !v.is_empty()).collect();
        if values.is_empty() {
            return Err(bad());
        }
        let (name, spec) = match spec.split_once('=') {
            Some((n, s)) if !n.contains(':') => (n.to_string(), s),
            _ => (spec.to_string(), spec),
        };
        Family::new(&name, spec, param.trim(), &values)
    }

    /// One spec per value.
    ///
    /// # Errors
    ///
    /// The [`SpecError`] of the first value the base spec does not take.
    pub fn specs(&self) -> Result<Vec<DetectorSpec>, SpecError> {
        self.values.iter().map(|v| self.base.with(&self.param, v)).collect()
    }
}

/// A parameter value as text: at most three decimals, no trailing zeros
/// (`250`, `0.75`, `33.333`).
pub fn format_value(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The longest heartbeat period the default grids are scaled to, in ms
/// (about 57 minutes): a detector's window holds intervals up to
/// [`vigil_detector::MAX_SAMPLE`] (71.6 minutes), and a bootstrap estimate
/// of the period must leave room for its upper sample (5/4 of it).
pub const MAX_DEFAULT_PERIOD_MS: f64 = 3_435_973.0;

/// The families `sweep` and `recommend` use when none are given, with grids
/// scaled to the heartbeat period (ms).
///
/// # Errors
///
/// [`FamilyError::Period`] if the period is not between 1 ms and
/// [`MAX_DEFAULT_PERIOD_MS`] (a trace whose median gap is 0, say): the grids
/// would hold timeouts of 0 or out of range.
pub fn default_families(period_ms: f64) -> Result<Vec<Family>, FamilyError> {
    if !(period_ms.is_finite() && (1.0..=MAX_DEFAULT_PERIOD_MS).contains(&period_ms)) {
        return Err(FamilyError::Period { ms: period_ms });
    }
    let scaled = |factors: &[f64]| -> Vec<String> { factors.iter().map(|f| format_value(f * period_ms)).collect() };
    let list = |v: &[f64]| -> Vec<String> { v.iter().map(|x| format_value(*x)).collect() };
    let phi =
        list(&[0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 30.0, 50.0, 100.0, 200.0, 400.0]);
    let make = |name: &str, base: &str, param: &str, values: Vec<String>| -> Result<Family, FamilyError> {
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        Family::new(name, base, param, &refs)
    };
    let margins = scaled(&[0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.3, 1.7, 2.2, 3.0, 4.0, 6.0, 9.0]);
    vec![
        make(
            "fixed",
            "fixed",
            "timeout-ms",
            scaled(&[1.1, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0, 11.0, 15.0, 20.0]),
        ),
        make("normal σ≥1ms", "normal:window=100,min-std-ms=1", "threshold", phi.clone()),
        make(
            "normal σ≥P/4",
            &format!("normal:window=100,min-std-ms={}", format_value(period_ms / 4.0)),
            "threshold",
            phi.clone(),
        ),
        make("akka", "akka:window=100,pause-ms=0", "threshold", phi),
        make(
            "exponential",
            "exponential:window=100,initial-ms=none",
            "threshold",
            list(&[0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0]),
        ),
        make("chen n=1000", "chen:window=1000", "alpha-ms", margins.clone()),
        make("chen n=10", "chen:window=10", "alpha-ms", margins.clone()),
        make("bertier", "bertier:window=1000", "phi", list(&[0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 96.0])),
        make("2w n1=1", "2w:n1=1,n2=1000", "alpha-ms", margins),
        make(
            "empirical",
            "empirical:window=100",
            "threshold",
            list(&[0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0]),
        ),
    ]
    .into_iter()
    .collect()
}

/// One setting's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The family.
    pub family: String,
    /// The full spec.
    pub spec: String,
    /// The value of the family's parameter.
    pub value: String,
    /// The detection time used as the frontier's axis, ms: the mean detection
    /// time from the crash, or on traces without one the mean time to suspect
    /// after a heartbeat.
    pub detection_ms: f64,
    /// Mistakes per hour.
    pub mistakes_per_hour: f64,
    /// All the metrics.
    pub qos: Qos,
}

/// Evaluates every setting of every family on `traces`.
///
/// The detection axis is the mean detection time from the crash when the
/// traces have crashes; on traces without one it is the mean time to suspect
/// after a heartbeat ([`Timeline::time_to_suspect_ms`](crate::qos::Timeline),
/// measured in the same pass), which is what a crash right after that
/// heartbeat would have cost. `progress` is called once per trace and
/// family group finished.
pub fn sweep(
    traces: &[Trace],
    families: &[Family],
    warmup: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<Point>, ConfigError> {
    let mut specs: Vec<(usize, DetectorSpec)> = Vec::new();
    for (f, family) in families.iter().enumerate() {
        // Families were checked when built.
        for spec in family.specs().unwrap_or_default() {
            specs.push((f, spec));
        }
    }
    let only: Vec<DetectorSpec> = specs.iter().map(|(_, s)| s.clone()).collect();
    let timelines = judge_all(traces, &only, warmup, progress)?;
    let qos: Vec<Qos> = timelines.iter().map(Qos::from_timelines).collect();
    let crashed = traces.iter().any(|t| t.crash.is_some());
    let detection: Vec<f64> = if crashed {
        qos.iter().map(|q| q.detection_ms.mean).collect()
    } else {
        // The mean time to suspect over every judged heartbeat of every
        // trace, from the timelines' own measurements.
        timelines
            .iter()
            .map(|per_trace| {
                let (sum, n) = per_trace
                    .iter()
                    .filter_map(|t| t.time_to_suspect_ms.as_ref())
                    .fold((0.0, 0usize), |(sum, n), s| (sum + s.mean * s.count as f64, n + s.count));
                if n == 0 { f64::NAN } else { sum / n as f64 }
            })
            .collect()
    };
    Ok(specs
        .into_iter()
        .zip(qos)
        .zip(detection)
        .map(|(((f, spec), qos), detection_ms)| Point {
            family: families[f].name.clone(),
            value: spec.param(&families[f].param).unwrap_or_default().to_string(),
            spec: spec.to_string(),
            detection_ms,
            mistakes_per_hour: qos.mistake_rate_per_hour,
            qos,
        })
        .collect())
}

/// Indices of the points on the Pareto frontier (minimising both detection
/// time and mistake rate), sorted by detection time. Points with an
/// undefined detection time are never on it.
pub fn frontier(points: &[Point]) -> Vec<usize> {
    let valid = |p: &Point| p.detection_ms.is_finite() && p.mistakes_per_hour.is_finite();
    let mut idx: Vec<usize> = (0..points.len()).filter(|&i| valid(&points[i])).collect();
    idx.sort_by(|&a, &b| {
        points[a]
            .detection_ms
            .total_cmp(&points[b].detection_ms)
            .then(points[a].mistakes_per_hour.total_cmp(&points[b].mistakes_per_hour))
    });
    let mut out = Vec::new();
    let mut best = f64::INFINITY;
    for i in idx {
        if points[i].mistakes_per_hour < best {
            best = points[i].mistakes_per_hour;
            out.push(i);
        }
    }
    out
}

/// The fastest point (lowest detection time) with at most `max_per_hour`
/// mistakes per hour.
pub fn fastest_within(points: &[Point], max_per_hour: f64) -> Option<&Point> {
    points.iter().filter(|p| p.mistakes_per_hour <= max_per_hour && p.detection_ms.is_finite()).min_by(|a, b| {
        a.detection_ms.total_cmp(&b.detection_ms).then(a.mistakes_per_hour.total_cmp(&b.mistakes_per_hour))
    })
}

/// The point with the fewest mistakes among those detecting within
/// `max_detection_ms` (ties: the faster).
pub fn fewest_mistakes_within(points: &[Point], max_detection_ms: f64) -> Option<&Point> {
    points.iter().filter(|p| p.detection_ms <= max_detection_ms && p.mistakes_per_hour.is_finite()).min_by(|a, b| {
        a.mistakes_per_hour.total_cmp(&b.mistakes_per_hour).then(a.detection_ms.total_cmp(&b.detection_ms))
    })
}

/// Whether `p` is dominated by some point of `others`: another detects at
/// least as fast with at most as many mistakes, and is strictly better on one.
pub fn dominated_by<'a>(p: &Point, others: &'a [Point]) -> Option<&'a Point> {
    others.iter().find(|o| {
        o.detection_ms <= p.detection_ms
            && o.mistakes_per_hour <= p.mistakes_per_hour
            && (o.detection_ms < p.detection_ms || o.mistakes_per_hour < p.mistakes_per_hour)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(td: f64, rate: f64) -> Point {
        let qos = Qos::from_timelines(std::iter::empty());
        Point {
            family: "f".into(),
            spec: format!("{td}/{rate}"),
            value: String::new(),
            detection_ms: td,
            mistakes_per_hour: rate,
            qos,
        }
    }

    #[test]
    fn frontier_keeps_only_non_dominated_points() {
        let pts = vec![
            point(100.0, 50.0),
            point(150.0, 60.0),
            point(200.0, 10.0),
            point(90.0, 80.0),
            point(300.0, 10.0),
            point(400.0, 0.0),
            point(f64::NAN, 0.0),
        ];
        assert_eq!(frontier(&pts), vec![3, 0, 2, 5]);
        assert_eq!(fastest_within(&pts, 10.0).unwrap().detection_ms, 200.0);
        assert_eq!(fastest_within(&pts, 0.0).unwrap().detection_ms, 400.0);
        assert!(fastest_within(&pts, -1.0).is_none());
        assert_eq!(fewest_mistakes_within(&pts, 160.0).unwrap().detection_ms, 100.0);
        assert_eq!(dominated_by(&pts[1], &pts).unwrap().detection_ms, 100.0);
        assert!(dominated_by(&pts[0], &pts).is_none());
    }

    #[test]
    fn families_parse_and_default_grids_build() {
        let f = Family::parse("floor=normal:window=100@min-std-ms=1,30,50").unwrap();
        assert_eq!(f.name, "floor");
        assert_eq!(f.specs().unwrap()[2].to_string(), "normal:window=100,min-std-ms=50");
        let f = Family::parse("akka:pause-ms=0@threshold=1,2").unwrap();
        assert_eq!(f.name, "akka:pause-ms=0");
        assert!(Family::parse("akka").is_err());
        assert!(Family::parse("akka@threshold=").is_err());
        assert!(Family::parse("fixed@window=3").is_err());
        for period in [1.0, 100.0, 1000.0, 1500.0, MAX_DEFAULT_PERIOD_MS] {
            let fams = default_families(period).unwrap();
            assert_eq!(fams.len(), 10);
            assert!(fams.iter().all(|f| f.specs().is_ok()), "{period}");
        }
        for period in [0.0, -1.0, 0.999, 1e-9, 1e12, f64::NAN, f64::INFINITY] {
            let e = default_families(period).unwrap_err();
            assert!(e.to_string().contains("--family"), "{period}: {e}");
        }
    }
}
