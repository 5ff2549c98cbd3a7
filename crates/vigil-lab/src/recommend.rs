//! The recommendation rule: the fastest setting within a bound on the
//! mistake rate.
//!
//! Among the settings a sweep measured, the recommendation is the one with
//! the shortest detection time whose mistake rate is at most the bound; for
//! each family, its own fastest setting within the bound is kept beside it.
//! With no mistake observed, what the data shows is bounded by how long it
//! watched: with zero events in `h` hours, rates up to `3 / h` per hour are
//! consistent with it at 95 % (the Poisson "rule of three"), and the
//! recommendation says so.
//!
//! ```
//! use vigil_lab::recommend::{NoSetting, Recommendation};
//! use vigil_lab::scenario::builtin;
//! use vigil_lab::sweep::{Family, sweep};
//!
//! let traces = builtin("calm")?.generate(1, 5);
//! let families = [Family::parse("fixed@timeout-ms=150,250,400")?];
//! let points = sweep(&traces, &families, 1, &|| {})?;
//! let r = Recommendation::choose(&points, &families, 1000.0).unwrap();
//! assert_eq!(r.best.family, "fixed");
//! assert!(r.best.mistakes_per_hour <= 1000.0);
//! let none = Recommendation::choose(&points, &families, -1.0).unwrap_err();
//! assert!(matches!(none, NoSetting { .. }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use crate::sweep::{Family, Point, fastest_within};

/// The recommended setting, and each family's best within the bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    /// The bound on mistakes per hour.
    pub max_mistakes_per_hour: f64,
    /// The fastest setting within it.
    pub best: Point,
    /// Each family's fastest setting within it, in the families' order
    /// (families with none are left out).
    pub best_per_family: Vec<Point>,
    /// Alive time observed, hours (the same for every setting).
    pub observed_hours: f64,
}

/// No setting met the bound; the one with the fewest mistakes is named.
#[derive(Debug, Clone, PartialEq)]
pub struct NoSetting {
    /// The bound on mistakes per hour.
    pub max_mistakes_per_hour: f64,
    /// The setting with the fewest mistakes per hour, if any was measured.
    pub fewest: Option<Box<Point>>,
}

impl fmt::Display for NoSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no setting makes at most {} mistakes per hour", self.max_mistakes_per_hour)?;
        if let Some(p) = &self.fewest {
            write!(f, "; the fewest is {} with {:.1} per hour", p.spec, p.mistakes_per_hour)?;
        }
        Ok(())
    }
}

impl std::error::Error for NoSetting {}

impl Recommendation {
    /// Applies the rule to a sweep's `points` of `families`.
    ///
    /// # Errors
    ///
    /// [`NoSetting`] when no point is within the bound (or it is not a
    /// number of 0 or more).
    pub fn choose(
        points: &[Point],
        families: &[Family],
        max_mistakes_per_hour: f64,
    ) -> Result<Recommendation, NoSetting> {
        let Some(best) = fastest_within(points, max_mistakes_per_hour) else {
            let fewest =
                points.iter().min_by(|x, y| x.mistakes_per_hour.total_cmp(&y.mistakes_per_hour)).cloned().map(Box::new);
            return Err(NoSetting { max_mistakes_per_hour, fewest });
        };
        let best_per_family = families
            .iter()
            .filter_map(|f| {
                let own: Vec<Point> = points.iter().filter(|p| p.family == f.name).cloned().collect();
                fastest_within(&own, max_mistakes_per_hour).cloned()
            })
            .collect();
        Ok(Recommendation {
            max_mistakes_per_hour,
            best: best.clone(),
            best_per_family,
            observed_hours: points.first().map_or(0.0, |p| p.qos.alive_hours),
        })
    }

    /// With no mistake observed, the highest rate per hour the observation
    /// cannot rule out at 95 % (`3 / hours`); `None` when there were
    /// mistakes.
    pub fn unobserved_rate_bound(&self) -> Option<f64> {
        (self.best.qos.mistakes == 0).then(|| 3.0 / self.observed_hours.max(f64::MIN_POSITIVE))
    }

    /// Whether the observation is long enough to show the bound is met: some
    /// mistakes were seen, or none were in long enough that `3 / hours` is
    /// within the bound.
    pub fn observation_supports_bound(&self) -> bool {
        self.unobserved_rate_bound().is_none_or(|r| r <= self.max_mistakes_per_hour)
    }
}
