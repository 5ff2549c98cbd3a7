//! A detector and its threshold as text: `model[:name=value,...]`.
//!
//! The grammar every tool of the workspace shares: `vigil lab` takes specs
//! such as `akka:threshold=8,min-std-ms=100` ([`DetectorSpec`]), and
//! `vigil replay` takes the same names and values as flags (`--window 100`,
//! through [`Params`]). Every model accepts only the parameters that make
//! sense for it ([`allowed`]); anything else is an error that says which
//! parameters it takes. Durations are milliseconds (fractions allowed, exact
//! to the nanosecond); the threshold is the level the detector's is compared
//! with. Errors ([`SpecError`]) name the spec and the parameter as the user
//! wrote them.
//!
//! ```
//! use vigil_detector::Model;
//! use vigil_detector::spec::DetectorSpec;
//!
//! let spec: DetectorSpec = "normal:window=1000,min-std-ms=100,threshold=8".parse()?;
//! assert_eq!((spec.model(), spec.threshold()), (Model::Normal, 8.0));
//! assert_eq!(spec.to_string().parse::<DetectorSpec>()?, spec);
//! let err = "akka:window=0".parse::<DetectorSpec>().unwrap_err();
//! assert_eq!(err.param.as_deref(), Some("window"));
//! assert_eq!(err.to_string(), "detector 'akka:window=0': window=0: must hold at least one sample (got 0)");
//! # Ok::<(), vigil_detector::spec::SpecError>(())
//! ```

use std::fmt;
use std::time::Duration;

use crate::any::{Model, ModelConfig, UnknownModel};
use crate::error::ConfigError;
use crate::millis::{MillisError, parse_duration};
use crate::models::chen::{BertierConfig, ChenConfig, TwoWindowConfig};
use crate::models::empirical::EmpiricalConfig;
use crate::models::exponential::{ExponentialConfig, Prior};
use crate::models::normal::{AkkaConfig, NormalConfig};
use crate::models::timeout::{DeadlineConfig, FixedConfig};
use crate::text::quoted;
use crate::window::{Admission, Bootstrap, MaxInterval};

/// The parameters each model takes, in the order `--help` lists them.
///
/// ```
/// use vigil_detector::Model;
/// assert_eq!(vigil_detector::spec::allowed(Model::Fixed), ["threshold", "timeout-ms"]);
/// ```
pub fn allowed(model: Model) -> &'static [&'static str] {
    match model {
        Model::Normal => &["threshold", "window", "min-std-ms", "pause-ms", "first-estimate-ms", "max-interval-ms"],
        Model::Akka => &["threshold", "window", "min-std-ms", "pause-ms", "first-estimate-ms"],
        Model::Deadline => &["threshold", "timeout-ms", "interval-ms"],
        Model::Exponential => {
            &["threshold", "window", "initial-ms", "max-interval-ms", "prior-mean-ms", "prior-weight"]
        }
        Model::Fixed => &["threshold", "timeout-ms"],
        Model::Chen => &["threshold", "window", "alpha-ms", "interval-ms", "first-estimate-ms", "max-interval-ms"],
        Model::Bertier => {
            &["threshold", "window", "beta", "phi", "gamma", "interval-ms", "first-estimate-ms", "max-interval-ms"]
        }
        Model::TwoWindow => {
            &["threshold", "n1", "n2", "alpha-ms", "interval-ms", "first-estimate-ms", "max-interval-ms"]
        }
        Model::Empirical => &["threshold", "window", "first-estimate-ms", "max-interval-ms"],
    }
}

/// Named parameter values, checked against a model: what a spec carries
/// after its model name, or what a command line gives as flags.
///
/// ```
/// use vigil_detector::Model;
/// use vigil_detector::spec::Params;
///
/// let (config, threshold) = Params::new(Model::Fixed, vec![("timeout-ms", "250")])?.build()?;
/// assert_eq!((config.model(), threshold), (Model::Fixed, 1.0));
/// let err = Params::new(Model::Fixed, vec![("window", "5")]).err().unwrap();
/// assert_eq!(err.to_string(), "--window does not apply to the fixed model (it takes --threshold, --timeout-ms)");
/// # Ok::<(), vigil_detector::spec::SpecError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Params<'a> {
    model: Model,
    given: Vec<(&'a str, &'a str)>,
    prefix: &'static str,
}

impl<'a> Params<'a> {
    /// Checks that every parameter applies to `model` and none is repeated.
    /// `given` pairs a parameter name with its text. Errors name parameters
    /// as flags (`--window`).
    ///
    /// # Errors
    ///
    /// A [`SpecError`] naming the parameter.
    pub fn new(model: Model, given: Vec<(&'a str, &'a str)>) -> Result<Params<'a>, SpecError> {
        Params::with_prefix(model, given, "--")
    }

    /// As [`Params::new`], naming parameters with `prefix` in errors (`""`
    /// for detector specs).
    ///
    /// # Errors
    ///
    /// A [`SpecError`] naming the parameter.
    pub fn with_prefix(
        model: Model,
        given: Vec<(&'a str, &'a str)>,
        prefix: &'static str,
    ) -> Result<Params<'a>, SpecError> {
        let allowed = allowed(model);
        for (i, (name, _)) in given.iter().enumerate() {
            if !allowed.contains(name) {
                return Err(SpecError::about(prefix, name, SpecErrorKind::NotApplicable { model }));
            }
            if given[..i].iter().any(|(other, _)| other == name) {
                return Err(SpecError::about(prefix, name, SpecErrorKind::Repeated));
            }
        }
        Ok(Params { model, given, prefix })
    }

    /// An error about parameter `name`.
    fn fail(&self, name: &str, kind: SpecErrorKind) -> SpecError {
        SpecError::about(self.prefix, name, kind)
    }

    fn text(&self, name: &str) -> Option<&'a str> {
        self.given.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
    }

    fn number<T: std::str::FromStr>(&self, name: &str, what: &'static str) -> Result<Option<T>, SpecError> {
        match self.text(name) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| self.fail(name, SpecErrorKind::NotANumber { expected: what, found: v.to_owned() })),
        }
    }

    /// A duration in milliseconds; `none` gives `Some(None)` where allowed.
    fn millis_or_none(&self, name: &str) -> Result<Option<Option<Duration>>, SpecError> {
        match self.text(name) {
            None => Ok(None),
            Some("none") => Ok(Some(None)),
            Some(v) => parse_duration(v).map(|d| Some(Some(d))).map_err(|e| self.fail(name, SpecErrorKind::Millis(e))),
        }
    }

    fn millis(&self, name: &str) -> Result<Option<Duration>, SpecError> {
        match self.millis_or_none(name)? {
            Some(None) => Err(self.fail(name, SpecErrorKind::NoneNotAllowed)),
            Some(Some(d)) => Ok(Some(d)),
            None => Ok(None),
        }
    }

    /// The bootstrap and admission rules every window model shares.
    fn window_rules(&self, bootstrap: &mut Bootstrap, admission: &mut Admission) -> Result<(), SpecError> {
        if let Some(d) = self.millis("first-estimate-ms")? {
            *bootstrap = Bootstrap::Estimate(d);
        }
        if let Some(cap) = self.millis_or_none("max-interval-ms")? {
            admission.max_interval = cap.map(MaxInterval::Ignore);
        }
        Ok(())
    }

    /// The configuration, and the threshold to compare the level with.
    ///
    /// # Errors
    ///
    /// A [`SpecError`] naming the parameter as given, or the configuration
    /// the library refused.
    pub fn build(&self) -> Result<(ModelConfig, f64), SpecError> {
        let model = self.model;
        let threshold = self.number::<f64>("threshold", "a number")?.unwrap_or(model.default_threshold());
        if !(threshold.is_finite() && threshold > 0.0) {
            let typed = self.text("threshold").map_or_else(|| threshold.to_string(), str::to_owned);
            return Err(self.fail("threshold", SpecErrorKind::Threshold { typed }));
        }
        let window = self.number::<usize>("window", "a whole number of samples")?;
        let set = |slot: &mut usize, v: Option<usize>| {
            if let Some(v) = v {
                *slot = v;
            }
        };
        let config = match model {
            Model::Normal => {
                let mut c = NormalConfig::default();
                set(&mut c.window, window);
                c.min_std_dev = self.millis("min-std-ms")?.unwrap_or(c.min_std_dev);
                c.acceptable_pause = self.millis("pause-ms")?.unwrap_or(c.acceptable_pause);
                self.window_rules(&mut c.bootstrap, &mut c.admission)?;
                ModelConfig::Normal(c)
            }
            Model::Akka => {
                let mut c = AkkaConfig { threshold, ..AkkaConfig::default() };
                set(&mut c.window, window);
                c.min_std_dev = self.millis("min-std-ms")?.unwrap_or(c.min_std_dev);
                c.acceptable_pause = self.millis("pause-ms")?.unwrap_or(c.acceptable_pause);
                c.first_heartbeat_estimate = self.millis("first-estimate-ms")?.unwrap_or(c.first_heartbeat_estimate);
                ModelConfig::Akka(c)
            }
            Model::Deadline => {
                let mut c = DeadlineConfig::default();
                c.acceptable_pause = self.millis("timeout-ms")?.unwrap_or(c.acceptable_pause);
                c.heartbeat_interval = self.millis("interval-ms")?.unwrap_or(c.heartbeat_interval);
                ModelConfig::Deadline(c)
            }
            Model::Exponential => {
                let mut c = ExponentialConfig::cassandra();
                set(&mut c.window, window);
                if let Some(seed) = self.millis_or_none("initial-ms")? {
                    c.bootstrap = seed.map_or(Bootstrap::None, Bootstrap::Seed);
                }
                self.window_rules(&mut c.bootstrap, &mut c.admission)?;
                match (self.millis("prior-mean-ms")?, self.number::<f64>("prior-weight", "a number")?) {
                    (Some(mean), Some(weight)) => c.prior = Some(Prior { mean, weight }),
                    (None, None) => {}
                    _ => {
                        let name = if self.text("prior-mean-ms").is_some() { "prior-mean-ms" } else { "prior-weight" };
                        return Err(self.fail(name, SpecErrorKind::Unpaired));
                    }
                }
                ModelConfig::Exponential(c)
            }
            Model::Fixed => {
                let mut c = FixedConfig::default();
                c.timeout = self.millis("timeout-ms")?.unwrap_or(c.timeout);
                ModelConfig::Fixed(c)
            }
            Model::Chen => {
                let mut c = ChenConfig::default();
                set(&mut c.window, window);
                c.alpha = self.millis("alpha-ms")?.unwrap_or(c.alpha);
                c.interval = self.millis("interval-ms")?.or(c.interval);
                self.window_rules(&mut c.bootstrap, &mut c.admission)?;
                ModelConfig::Chen(c)
            }
            Model::Bertier => {
                let mut c = BertierConfig::default();
                set(&mut c.window, window);
                c.beta = self.number("beta", "a number")?.unwrap_or(c.beta);
                c.phi = self.number("phi", "a number")?.unwrap_or(c.phi);
                c.gamma = self.number("gamma", "a number")?.unwrap_or(c.gamma);
                c.interval = self.millis("interval-ms")?.or(c.interval);
                self.window_rules(&mut c.bootstrap, &mut c.admission)?;
                ModelConfig::Bertier(c)
            }
            Model::TwoWindow => {
                let mut c = TwoWindowConfig::default();
                set(&mut c.n1, self.number("n1", "a whole number of heartbeats")?);
                set(&mut c.n2, self.number("n2", "a whole number of heartbeats")?);
                c.alpha = self.millis("alpha-ms")?.unwrap_or(c.alpha);
                c.interval = self.millis("interval-ms")?.or(c.interval);
                self.window_rules(&mut c.bootstrap, &mut c.admission)?;
                ModelConfig::TwoWindow(c)
            }
            Model::Empirical => {
                let mut c = EmpiricalConfig::default();
                set(&mut c.window, window);
                self.window_rules(&mut c.bootstrap, &mut c.admission)?;
                ModelConfig::Empirical(c)
            }
        };
        config.validate().map_err(|e| self.explain(&e))?;
        Ok((config, threshold))
    }

    /// A configuration error in the words the user typed: the parameter, as
    /// given, in place of the library's field name.
    fn explain(&self, e: &ConfigError) -> SpecError {
        match e.field().and_then(parameter_of) {
            Some(param) => {
                let typed = self.text(param).map(str::to_owned);
                self.fail(param, SpecErrorKind::Invalid { error: Box::new(e.clone()), typed })
            }
            None => SpecError {
                spec: None,
                param: None,
                prefix: self.prefix,
                kind: SpecErrorKind::Model { model: self.model, error: Box::new(e.clone()) },
            },
        }
    }
}

/// The parameter that sets a configuration field.
fn parameter_of(field: &str) -> Option<&'static str> {
    Some(match field {
        "threshold" => "threshold",
        "window" => "window",
        "min_std_dev" => "min-std-ms",
        "acceptable_pause" => "pause-ms",
        "first_heartbeat_estimate" => "first-estimate-ms",
        "initial_interval" => "initial-ms",
        "max_interval" => "max-interval-ms",
        "prior_mean" => "prior-mean-ms",
        "prior_weight" => "prior-weight",
        "timeout" => "timeout-ms",
        "heartbeat_interval" | "interval" => "interval-ms",
        "alpha" => "alpha-ms",
        "beta" => "beta",
        "phi" => "phi",
        "gamma" => "gamma",
        "n1" => "n1",
        "n2" => "n2",
        _ => return None,
    })
}

/// A detector and its threshold, written `model[:name=value,...]`, for
/// example `akka:threshold=8,min-std-ms=100` or `fixed:timeout-ms=250`.
///
/// Parameter names and defaults are those of `vigil replay`'s flags
/// ([`allowed`]); unnamed parameters keep the model's defaults.
///
/// ```
/// use vigil_detector::spec::DetectorSpec;
///
/// let spec: DetectorSpec = "normal:window=100,min-std-ms=1,threshold=8".parse()?;
/// assert_eq!(spec.threshold(), 8.0);
/// assert_eq!(spec.to_string(), "normal:window=100,min-std-ms=1,threshold=8");
/// let other = spec.with("threshold", "12")?;
/// assert_eq!(other.to_string(), "normal:window=100,min-std-ms=1,threshold=12");
/// assert!("normal:timeout-ms=5".parse::<DetectorSpec>().is_err());
/// # Ok::<(), vigil_detector::spec::SpecError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorSpec {
    model: Model,
    params: Vec<(String, String)>,
    config: ModelConfig,
    threshold: f64,
}

/// A detector spec or a parameter that could not be parsed or built. The
/// message names the spec and the parameter as the user wrote them
/// (`detector 'akka:window=0': window=0: must hold at least one sample`).
///
/// ```
/// use vigil_detector::spec::{DetectorSpec, SpecErrorKind};
///
/// let err = "normal:timeout-ms=3".parse::<DetectorSpec>().unwrap_err();
/// assert_eq!(err.spec.as_deref(), Some("normal:timeout-ms=3"));
/// assert_eq!(err.param.as_deref(), Some("timeout-ms"));
/// assert!(matches!(err.kind, SpecErrorKind::NotApplicable { .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SpecError {
    /// The spec as written, when the error is in one.
    pub spec: Option<String>,
    /// The parameter at fault as named in the input (`--window` among
    /// flags, `window` in a spec), when one is.
    pub param: Option<String>,
    /// What is wrong.
    pub kind: SpecErrorKind,
    /// How parameters are named in the input: `--` for flags, nothing in a
    /// spec.
    prefix: &'static str,
}

/// What is wrong with a spec or a parameter.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SpecErrorKind {
    /// The model name is not one of [`Model::ALL`].
    UnknownModel(UnknownModel),
    /// A parameter is not written `name=value`.
    NotNameValue {
        /// The item as written.
        item: String,
    },
    /// The parameter is not one the model takes ([`allowed`]).
    NotApplicable {
        /// The model.
        model: Model,
    },
    /// The parameter is given twice.
    Repeated,
    /// The value is not a number of the kind expected.
    NotANumber {
        /// What was expected (`a number`, `a whole number of samples`).
        expected: &'static str,
        /// The value as written.
        found: String,
    },
    /// A duration in milliseconds that could not be read.
    Millis(MillisError),
    /// `none` given where a duration is required.
    NoneNotAllowed,
    /// The threshold is not a finite number above zero.
    Threshold {
        /// The value as written.
        typed: String,
    },
    /// `prior-mean-ms` without `prior-weight`, or the other way round.
    Unpaired,
    /// The model refused the value the parameter set.
    Invalid {
        /// The model's error.
        error: Box<ConfigError>,
        /// The value as written; `None` when the model's default is at fault.
        typed: Option<String>,
    },
    /// The model refused its configuration as a whole.
    Model {
        /// The model.
        model: Model,
        /// Its error.
        error: Box<ConfigError>,
    },
}

impl SpecError {
    /// An error about parameter `name`, named with `prefix` as in the input.
    fn about(prefix: &'static str, name: &str, kind: SpecErrorKind) -> SpecError {
        SpecError { spec: None, param: Some(format!("{prefix}{name}")), kind, prefix }
    }

    /// An error in spec `spec` that is about no parameter.
    fn in_spec(spec: &str, kind: SpecErrorKind) -> SpecError {
        SpecError { spec: Some(spec.to_owned()), param: None, kind, prefix: "" }
    }

    /// This error, as found in spec `spec`.
    fn within(mut self, spec: &str) -> SpecError {
        self.spec = Some(spec.to_owned());
        self
    }

    /// The parameter at fault, shown with its prefix (`--window`), or
    /// nothing.
    fn shown_param(&self) -> &str {
        self.param.as_deref().unwrap_or_default()
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(spec) = &self.spec {
            write!(f, "detector {}: ", quoted(spec))?;
        }
        let (p, param) = (self.prefix, self.shown_param());
        match &self.kind {
            SpecErrorKind::UnknownModel(e) => e.fmt(f),
            SpecErrorKind::NotNameValue { item } => write!(f, "{} is not name=value", quoted(item)),
            SpecErrorKind::NotApplicable { model } => {
                let name = param.strip_prefix(p).unwrap_or(param);
                let list: Vec<String> = allowed(*model).iter().map(|a| format!("{p}{a}")).collect();
                write!(
                    f,
                    "{p}{} does not apply to the {model} model (it takes {})",
                    quoted(name).trim_matches('\''),
                    list.join(", ")
                )
            }
            SpecErrorKind::Repeated => write!(f, "{param} is given twice"),
            SpecErrorKind::NotANumber { expected, found } => {
                write!(f, "{param}: expected {expected}, found {}", quoted(found))
            }
            SpecErrorKind::Millis(e) => write!(f, "{param}: {e}"),
            SpecErrorKind::NoneNotAllowed => write!(f, "{param}: 'none' is not allowed here"),
            SpecErrorKind::Threshold { typed } => {
                write!(f, "{param}: must be a finite number greater than zero (got {})", quoted(typed))
            }
            SpecErrorKind::Unpaired => write!(f, "{p}prior-mean-ms and {p}prior-weight go together"),
            SpecErrorKind::Invalid { error, typed } => {
                let message = error.to_string();
                let field = error.field().unwrap_or_default();
                let rest = message.strip_prefix(field).unwrap_or(&message).trim_start();
                match typed {
                    // As typed: `--window 0` on a command line, `window=0` in a spec.
                    Some(typed) => {
                        let sep = if p.is_empty() { "=" } else { " " };
                        write!(f, "{param}{sep}{}: {rest}", quoted(typed).trim_matches('\''))?;
                        // A value above zero that rounds to 0 ns says so.
                        let rounds = matches!(**error, ConfigError::ZeroDuration { .. })
                            && typed.parse::<f64>().is_ok_and(|v| v > 0.0);
                        if rounds {
                            f.write_str(" (it rounds to 0 ns; the smallest is 0.000001 ms)")?;
                        }
                        Ok(())
                    }
                    None => write!(f, "{param} (default): {rest}"),
                }
            }
            SpecErrorKind::Model { model, error } => write!(f, "invalid {model} configuration: {error}"),
        }
    }
}

impl std::error::Error for SpecError {}

impl DetectorSpec {
    /// Builds a spec from a model and named parameter values.
    ///
    /// # Errors
    ///
    /// A [`SpecError`] naming the parameter the model does not take or
    /// refuses, within the spec as it would be written.
    pub fn new(model: Model, params: Vec<(String, String)>) -> Result<DetectorSpec, SpecError> {
        let text = render(model, &params);
        let given: Vec<(&str, &str)> = params.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let (config, threshold) =
            Params::with_prefix(model, given, "").and_then(|p| p.build()).map_err(|e| e.within(&text))?;
        Ok(DetectorSpec { model, params, config, threshold })
    }

    /// The model.
    pub fn model(&self) -> Model {
        self.model
    }

    /// The detector configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The threshold the level is compared with.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The parameters given, in order.
    pub fn params(&self) -> &[(String, String)] {
        &self.params
    }

    /// The value given for a parameter, if any.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The same spec with one parameter set (replaced if given, appended if
    /// not).
    ///
    /// # Errors
    ///
    /// As [`DetectorSpec::new`], for the spec with that parameter.
    pub fn with(&self, name: &str, value: &str) -> Result<DetectorSpec, SpecError> {
        let mut params = self.params.clone();
        match params.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value.to_string(),
            None => params.push((name.to_string(), value.to_string())),
        }
        DetectorSpec::new(self.model, params)
    }

    /// The spec without its threshold: two specs with the same base build the
    /// same detector (except Akka, whose threshold also decides which
    /// intervals are recorded), so one run can serve many thresholds.
    pub fn base(&self) -> String {
        let params: Vec<(String, String)> = self.params.iter().filter(|(k, _)| k != "threshold").cloned().collect();
        render(self.model, &params)
    }

    /// Whether the threshold changes the detector itself, not only the
    /// comparison (true for Akka).
    pub fn threshold_shapes_detector(&self) -> bool {
        matches!(self.config, ModelConfig::Akka(_))
    }
}

fn render(model: Model, params: &[(String, String)]) -> String {
    if params.is_empty() {
        return model.name().to_string();
    }
    let list: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}:{}", model.name(), list.join(","))
}

impl fmt::Display for DetectorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render(self.model, &self.params))
    }
}

impl std::str::FromStr for DetectorSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<DetectorSpec, SpecError> {
        let text = text.trim();
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let model: Model =
            name.trim().parse().map_err(|e: UnknownModel| SpecError::in_spec(text, SpecErrorKind::UnknownModel(e)))?;
        let mut params = Vec::new();
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| SpecError::in_spec(text, SpecErrorKind::NotNameValue { item: item.to_owned() }))?;
            params.push((k.trim().to_string(), v.trim().to_string()));
        }
        DetectorSpec::new(model, params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allowed_parameter_of_every_model_is_read() {
        // A parameter listed as allowed but never read would be silently
        // ignored: give each one an invalid value and expect an error.
        for model in Model::ALL {
            for &name in allowed(model) {
                let params = Params::new(model, vec![(name, "-7")]).expect("allowed");
                let err = params.build().expect_err(&format!("{model} --{name} -7 must be rejected"));
                assert_eq!(err.param.as_deref(), Some(format!("--{name}").as_str()), "{err}");
            }
        }
    }

    #[test]
    fn repeated_and_foreign_parameters_are_errors() {
        assert!(Params::new(Model::Akka, vec![("window", "5"), ("window", "6")]).is_err());
        let err = Params::new(Model::Fixed, vec![("window", "5")]).err().unwrap();
        assert_eq!(err.to_string(), "--window does not apply to the fixed model (it takes --threshold, --timeout-ms)");
        assert_eq!(err.param.as_deref(), Some("--window"));
    }

    #[test]
    fn detector_specs_parse_and_name_their_errors() {
        let spec: DetectorSpec = "akka:threshold=8,min-std-ms=100".parse().unwrap();
        assert_eq!(spec.model(), Model::Akka);
        assert!(spec.threshold_shapes_detector());
        assert_eq!(spec.base(), "akka:min-std-ms=100");
        let fixed: DetectorSpec = "fixed".parse().unwrap();
        assert_eq!(fixed.threshold(), 1.0);
        let err = "akka:window".parse::<DetectorSpec>().unwrap_err().to_string();
        assert_eq!(err, "detector 'akka:window': 'window' is not name=value");
        let err = "akka:window=0".parse::<DetectorSpec>().unwrap_err().to_string();
        assert_eq!(err, "detector 'akka:window=0': window=0: must hold at least one sample (got 0)");
        let err = "normal:timeout-ms=3".parse::<DetectorSpec>().unwrap_err().to_string();
        assert!(err.contains("timeout-ms does not apply to the normal model (it takes threshold, window"), "{err}");
        assert!("nope:x=1".parse::<DetectorSpec>().is_err());
    }

    #[test]
    fn specs_print_as_they_parse() {
        for text in [
            "akka",
            "exponential:threshold=4",
            "normal:window=1000,min-std-ms=100,threshold=8",
            "fixed:timeout-ms=250.5",
            "exponential:initial-ms=none,prior-mean-ms=1000,prior-weight=5",
            "2w:n1=1,n2=1000,alpha-ms=0.000001",
        ] {
            let spec: DetectorSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
            assert_eq!(spec.to_string().parse::<DetectorSpec>().unwrap(), spec);
        }
        // Spaces around names and values are not part of them.
        let spaced: DetectorSpec = " normal : window = 10 , threshold=3 ".parse().unwrap();
        assert_eq!(spaced.to_string(), "normal:window=10,threshold=3");
    }

    #[test]
    fn every_error_says_what_was_typed() {
        let err = |text: &str| text.parse::<DetectorSpec>().unwrap_err().to_string();
        assert_eq!(
            err("normall"),
            "detector 'normall': unknown model 'normall' (expected one of: normal, akka, deadline, exponential, \
             fixed, chen, bertier, 2w, empirical)"
        );
        assert_eq!(err("akka:window=5,window=6"), "detector 'akka:window=5,window=6': window is given twice");
        assert_eq!(
            err("akka:window=x"),
            "detector 'akka:window=x': window: expected a whole number of samples, found 'x'"
        );
        assert_eq!(
            err("fixed:timeout-ms=-1"),
            "detector 'fixed:timeout-ms=-1': timeout-ms: '-1' is negative; times and durations are zero or more"
        );
        assert_eq!(
            err("fixed:timeout-ms=none"),
            "detector 'fixed:timeout-ms=none': timeout-ms: 'none' is not allowed here"
        );
        assert_eq!(
            err("fixed:threshold=0"),
            "detector 'fixed:threshold=0': threshold: must be a finite number greater than zero (got '0')"
        );
        assert_eq!(
            err("exponential:prior-weight=2"),
            "detector 'exponential:prior-weight=2': prior-mean-ms and prior-weight go together"
        );
        assert_eq!(
            err("normal:min-std-ms=0.0000001"),
            "detector 'normal:min-std-ms=0.0000001': min-std-ms=0.0000001: must be greater than zero (it rounds to \
             0 ns; the smallest is 0.000001 ms)"
        );
        // Flags are named as flags.
        let flags = Params::new(Model::Normal, vec![("window", "0")]).unwrap().build().unwrap_err();
        assert_eq!(flags.to_string(), "--window 0: must hold at least one sample (got 0)");
        assert_eq!((flags.spec, flags.param.as_deref()), (None, Some("--window")));
        // What a terminal would act on is shown, not sent.
        assert_eq!(
            err("akka:\u{1b}[2J=1"),
            "detector 'akka:\\u{1b}[2J=1': \\u{1b}[2J does not apply to the akka model (it takes threshold, window, min-std-ms, pause-ms, first-estimate-ms)"
        );
    }
}
