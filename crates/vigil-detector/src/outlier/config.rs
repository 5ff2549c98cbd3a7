//! Outlier detection's settings: Envoy's, with its defaults, and vigil's
//! additions.

use std::time::Duration;

use crate::error::ConfigError;

/// How a host's latency is judged against its peers' (vigil's addition;
/// Envoy has no latency-based ejection).
///
/// Each interval, every host with at least `request_volume` timed requests
/// gets its typical latency: the geometric mean of the interval's
/// latencies (a mean of logarithms, so one slow request does not dominate
/// and the cost is two additions a request). If at least `minimum_hosts`
/// qualify, a host whose typical latency is at least `factor` times the
/// median of theirs is an outlier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyConfig {
    /// How many times slower than the median host counts as an outlier.
    /// Default 4.
    pub factor: f64,
    /// Hosts with enough timed requests needed for the comparison. Default 5.
    pub minimum_hosts: u32,
    /// Timed requests a host needs in the interval. Default 50.
    pub request_volume: u32,
    /// Percent chance that a detected latency outlier is ejected. Default
    /// 100.
    pub enforcing: u32,
}

impl Default for LatencyConfig {
    fn default() -> Self {
        LatencyConfig { factor: 4.0, minimum_hosts: 5, request_volume: 50, enforcing: 100 }
    }
}

/// Outlier detection's settings. [`OutlierConfig::envoy`] (also the
/// [`Default`]) is Envoy's `OutlierDetection` with every field at its
/// documented default; [`OutlierConfig::vigil`] is vigil's recommendation.
///
/// Percentages are whole numbers 0 to 100, as in Envoy. Thresholds of
/// consecutive errors of 0 disable that detector (as `++count == 0` never
/// holds in Envoy).
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::outlier::OutlierConfig;
///
/// let envoy = OutlierConfig::envoy();
/// assert_eq!((envoy.consecutive_5xx, envoy.interval), (5, Duration::from_secs(10)));
/// assert_eq!((envoy.max_ejection_percent, envoy.success_rate_stdev_factor), (10, 1.9));
/// assert!(!envoy.always_eject_one_host);
/// assert!(envoy.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct OutlierConfig {
    /// Consecutive server errors (5xx, and local-origin failures unless
    /// split) that eject a host at once. Envoy: 5.
    pub consecutive_5xx: u32,
    /// Percent chance a consecutive-5xx outlier is ejected. Envoy: 100.
    pub enforcing_consecutive_5xx: u32,
    /// Consecutive gateway failures (502, 503, 504, and local-origin
    /// failures unless split). Envoy: 5.
    pub consecutive_gateway_failure: u32,
    /// Envoy: 0 (detected and counted, never ejected).
    pub enforcing_consecutive_gateway_failure: u32,
    /// Judge local-origin failures (timeouts, failed connections) apart from
    /// the responses the host sent. Envoy: false.
    pub split_local_origin_errors: bool,
    /// Consecutive local-origin failures, when split. Envoy: 5.
    pub consecutive_local_origin_failure: u32,
    /// Envoy: 100.
    pub enforcing_consecutive_local_origin_failure: u32,
    /// The statistics' period: success rate, failure percentage and latency
    /// are judged, and ejected hosts returned, at each tick. Envoy: 10 s.
    pub interval: Duration,
    /// An ejection lasts this times the host's ejection multiplier. Envoy:
    /// 30 s.
    pub base_ejection_time: Duration,
    /// The longest ejection (before jitter). Envoy: 300 s (or the base
    /// ejection time, if longer).
    pub max_ejection_time: Duration,
    /// Up to this much is added to each ejection, drawn from the seed.
    /// Envoy: 0.
    pub max_ejection_time_jitter: Duration,
    /// The most hosts ejected at once, as a percent of all hosts: an
    /// ejection happens only if the ejected hosts, it included, are at most
    /// this share. Envoy: 10.
    pub max_ejection_percent: u32,
    /// One host may always be ejected, whatever the percent allows (a
    /// cluster of fewer than ten hosts ejects nobody at 10 % otherwise).
    /// Envoy: false (since 1.31; before 1.28 the first ejection was always
    /// allowed).
    pub always_eject_one_host: bool,
    /// Percent chance a success-rate outlier is ejected. Envoy: 100.
    pub enforcing_success_rate: u32,
    /// Envoy: 100.
    pub enforcing_local_origin_success_rate: u32,
    /// Hosts with enough requests needed for success-rate ejection. Envoy: 5.
    pub success_rate_minimum_hosts: u32,
    /// Requests a host needs in the interval to count. Envoy: 100.
    pub success_rate_request_volume: u32,
    /// A host whose success rate is below `mean − factor × σ` of the
    /// qualifying hosts' is an outlier. Envoy: 1.9 (1900 / 1000).
    pub success_rate_stdev_factor: f64,
    /// ... and at least this many percentage points below the mean (vigil's
    /// addition; Envoy: 0). In a fleet of equally healthy hosts the rates
    /// differ by noise alone, σ is tiny, and `mean − 1.9 σ` ejects whichever
    /// host was unluckiest; a floor on the drop keeps noise from ejecting.
    pub success_rate_minimum_drop: f64,
    /// A host failing at least this percent of its requests is an outlier.
    /// Envoy: 85.
    pub failure_percentage_threshold: u32,
    /// Envoy: 0 (off).
    pub enforcing_failure_percentage: u32,
    /// Envoy: 0 (off).
    pub enforcing_failure_percentage_local_origin: u32,
    /// Hosts with enough requests needed. Envoy: 5.
    pub failure_percentage_minimum_hosts: u32,
    /// Requests a host needs in the interval to count. Envoy: 50.
    pub failure_percentage_request_volume: u32,
    /// Latency-based ejection (vigil's; `None` in Envoy's preset).
    pub latency: Option<LatencyConfig>,
    /// The most hosts tracked. Default 100,000.
    pub max_hosts: usize,
    /// Seed of the enforcement draws and the jitter.
    pub seed: u64,
}

impl Default for OutlierConfig {
    fn default() -> Self {
        OutlierConfig::envoy()
    }
}

impl OutlierConfig {
    /// Envoy's `OutlierDetection` with every field at its documented default
    /// (Envoy 1.31 and later).
    pub fn envoy() -> OutlierConfig {
        OutlierConfig {
            consecutive_5xx: 5,
            enforcing_consecutive_5xx: 100,
            consecutive_gateway_failure: 5,
            enforcing_consecutive_gateway_failure: 0,
            split_local_origin_errors: false,
            consecutive_local_origin_failure: 5,
            enforcing_consecutive_local_origin_failure: 100,
            interval: Duration::from_secs(10),
            base_ejection_time: Duration::from_secs(30),
            max_ejection_time: Duration::from_secs(300),
            max_ejection_time_jitter: Duration::ZERO,
            max_ejection_percent: 10,
            always_eject_one_host: false,
            enforcing_success_rate: 100,
            enforcing_local_origin_success_rate: 100,
            success_rate_minimum_hosts: 5,
            success_rate_request_volume: 100,
            success_rate_stdev_factor: 1.9,
            success_rate_minimum_drop: 0.0,
            failure_percentage_threshold: 85,
            enforcing_failure_percentage: 0,
            enforcing_failure_percentage_local_origin: 0,
            failure_percentage_minimum_hosts: 5,
            failure_percentage_request_volume: 50,
            latency: None,
            max_hosts: 100_000,
            seed: 0,
        }
    }

    /// vigil's recommendation: Envoy's defaults, plus one host may always be
    /// ejected, a success rate must also be 5 points below the mean,
    /// failure-percentage ejection enforced, and latency-based ejection on.
    pub fn vigil() -> OutlierConfig {
        OutlierConfig {
            always_eject_one_host: true,
            success_rate_minimum_drop: 5.0,
            enforcing_failure_percentage: 100,
            enforcing_failure_percentage_local_origin: 100,
            latency: Some(LatencyConfig::default()),
            ..OutlierConfig::envoy()
        }
    }

    /// Checks every setting.
    ///
    /// # Errors
    ///
    /// The first setting out of range, named.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let out =
            |field: &'static str, value: f64, range: &'static str| ConfigError::OutOfRange { field, value, range };
        let secs = |d: Duration| d.as_secs_f64();
        let day = Duration::from_secs(86_400);
        for (name, d) in [("interval", self.interval), ("base_ejection_time", self.base_ejection_time)] {
            if d.is_zero() || d > day {
                return Err(out(name, secs(d), "(0, 86400] seconds"));
            }
        }
        if self.max_ejection_time < self.base_ejection_time || self.max_ejection_time > day {
            return Err(out("max_ejection_time", secs(self.max_ejection_time), "[base_ejection_time, 86400] seconds"));
        }
        if self.max_ejection_time_jitter > day {
            return Err(out("max_ejection_time_jitter", secs(self.max_ejection_time_jitter), "[0, 86400] seconds"));
        }
        let mut percents = vec![
            ("enforcing_consecutive_5xx", self.enforcing_consecutive_5xx),
            ("enforcing_consecutive_gateway_failure", self.enforcing_consecutive_gateway_failure),
            ("enforcing_consecutive_local_origin_failure", self.enforcing_consecutive_local_origin_failure),
            ("max_ejection_percent", self.max_ejection_percent),
            ("enforcing_success_rate", self.enforcing_success_rate),
            ("enforcing_local_origin_success_rate", self.enforcing_local_origin_success_rate),
            ("failure_percentage_threshold", self.failure_percentage_threshold),
            ("enforcing_failure_percentage", self.enforcing_failure_percentage),
            ("enforcing_failure_percentage_local_origin", self.enforcing_failure_percentage_local_origin),
        ];
        if let Some(l) = &self.latency {
            percents.push(("latency.enforcing", l.enforcing));
            if !(l.factor.is_finite() && l.factor > 1.0) {
                return Err(out("latency.factor", l.factor, "(1, ∞)"));
            }
        }
        for (name, p) in percents {
            if p > 100 {
                return Err(out(name, f64::from(p), "[0, 100]"));
            }
        }
        if !(self.success_rate_minimum_drop.is_finite() && (0.0..=100.0).contains(&self.success_rate_minimum_drop)) {
            return Err(out("success_rate_minimum_drop", self.success_rate_minimum_drop, "[0, 100]"));
        }
        if !(self.success_rate_stdev_factor.is_finite() && self.success_rate_stdev_factor >= 0.0) {
            return Err(out("success_rate_stdev_factor", self.success_rate_stdev_factor, "[0, ∞)"));
        }
        if self.max_hosts == 0 || self.max_hosts > 10_000_000 {
            return Err(out("max_hosts", self.max_hosts as f64, "[1, 10000000]"));
        }
        Ok(())
    }
}
