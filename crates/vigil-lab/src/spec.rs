//! Building a detector configuration from named parameters.
//!
//! `vigil replay` takes them as flags (`--window 100`); the same names and
//! values are what a detector spec such as `akka:threshold=8,min-std-ms=100`
//! carries ([`DetectorSpec`]). Every model accepts only the parameters that
//! make sense for it; anything else is an error that says which parameters it
//! takes. Durations are milliseconds (fractions allowed).

use std::time::Duration;

use vigil_detector::{
    Admission, AkkaConfig, BertierConfig, Bootstrap, ChenConfig, ConfigError, DeadlineConfig, EmpiricalConfig,
    ExponentialConfig, FixedConfig, MaxInterval, Model, ModelConfig, NormalConfig, Prior, TwoWindowConfig,
};

use crate::millis::{parse_duration, quoted};

/// The parameters each model takes, in the order `--help` lists them.
///
/// ```
/// use vigil_detector::Model;
/// assert_eq!(vigil_lab::spec::allowed(Model::Fixed), ["threshold", "timeout-ms"]);
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
        // A model added to the detector crate takes its threshold until its
        // parameters are listed here.
        _ => &["threshold"],
    }
}

/// Named parameter values, checked against a model.
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
            let param = Some(format!("{prefix}{name}"));
            if !allowed.contains(name) {
                let list: Vec<String> = allowed.iter().map(|f| format!("{prefix}{f}")).collect();
                return Err(SpecError {
                    spec: None,
                    param,
                    message: format!(
                        "{prefix}{} does not apply to the {model} model (it takes {})",
                        crate::millis::quoted(name).trim_matches('\''),
                        list.join(", ")
                    ),
                });
            }
            if given[..i].iter().any(|(other, _)| other == name) {
                return Err(SpecError { spec: None, param, message: format!("{prefix}{name} is given twice") });
            }
        }
        Ok(Params { model, given, prefix })
    }

    /// An error about parameter `name`, which the message follows.
    fn fail(&self, name: &str, message: impl std::fmt::Display) -> SpecError {
        let param = format!("{}{name}", self.prefix);
        SpecError { spec: None, message: format!("{param}: {message}"), param: Some(param) }
    }

    fn text(&self, name: &str) -> Option<&'a str> {
        self.given.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
    }

    fn number<T: std::str::FromStr>(&self, name: &str, what: &str) -> Result<Option<T>, SpecError> {
        match self.text(name) {
            None => Ok(None),
            Some(v) => {
                v.parse().map(Some).map_err(|_| self.fail(name, format!("expected {what}, found {}", quoted(v))))
            }
        }
    }

    /// A duration in milliseconds; `none` gives `Some(None)` where allowed.
    fn millis_or_none(&self, name: &str) -> Result<Option<Option<Duration>>, SpecError> {
        match self.text(name) {
            None => Ok(None),
            Some("none") => Ok(Some(None)),
            Some(v) => parse_duration(v).map(|d| Some(Some(d))).map_err(|e| self.fail(name, e)),
        }
    }

    fn millis(&self, name: &str) -> Result<Option<Duration>, SpecError> {
        match self.millis_or_none(name)? {
            Some(None) => Err(self.fail(name, "'none' is not allowed here")),
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
            let typed = self.text("threshold").map_or_else(|| threshold.to_string(), quoted);
            return Err(self.fail("threshold", format!("must be a finite number greater than zero (got {typed})")));
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
                        let p = self.prefix;
                        let name = if self.text("prior-mean-ms").is_some() { "prior-mean-ms" } else { "prior-weight" };
                        return Err(SpecError {
                            spec: None,
                            param: Some(format!("{p}{name}")),
                            message: format!("{p}prior-mean-ms and {p}prior-weight go together"),
                        });
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
            other => {
                return Err(SpecError {
                    spec: None,
                    param: None,
                    message: format!("the {other} model has no parameters here yet"),
                });
            }
        };
        config.validate().map_err(|e| self.explain(&e))?;
        Ok((config, threshold))
    }

    /// A configuration error in the words the user typed: the parameter, as
    /// given, in place of the library's field name.
    fn explain(&self, e: &ConfigError) -> SpecError {
        let message = e.to_string();
        let named = e.field().and_then(|field| Some((field, parameter_of(field)?)));
        let (param, message) = match named {
            Some((field, param)) => {
                let rest = message.strip_prefix(field).unwrap_or(&message).trim_start();
                let message = match self.text(param) {
                    // As typed: `--window 0` on a command line, `window=0` in a spec.
                    Some(typed) => {
                        let sep = if self.prefix.is_empty() { "=" } else { " " };
                        // A value above zero that rounds to 0 ns says so.
                        let rounds = matches!(e, ConfigError::ZeroDuration { .. })
                            && typed.parse::<f64>().is_ok_and(|v| v > 0.0);
                        let rest = if rounds {
                            format!("{rest} (it rounds to 0 ns; the smallest is 0.000001 ms)")
                        } else {
                            rest.to_owned()
                        };
                        format!("{}{param}{sep}{}: {rest}", self.prefix, quoted(typed).trim_matches('\''))
                    }
                    None => format!("{}{param} (default): {rest}", self.prefix),
                };
                (Some(format!("{}{param}", self.prefix)), message)
            }
            None => (None, format!("invalid {} configuration: {message}", self.model)),
        };
        SpecError { spec: None, param, message }
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
/// use vigil_lab::spec::DetectorSpec;
///
/// let spec: DetectorSpec = "normal:window=100,min-std-ms=1,threshold=8".parse()?;
/// assert_eq!(spec.threshold(), 8.0);
/// assert_eq!(spec.to_string(), "normal:window=100,min-std-ms=1,threshold=8");
/// let other = spec.with("threshold", "12")?;
/// assert_eq!(other.to_string(), "normal:window=100,min-std-ms=1,threshold=12");
/// assert!("normal:timeout-ms=5".parse::<DetectorSpec>().is_err());
/// # Ok::<(), vigil_lab::spec::SpecError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorSpec {
    model: Model,
    params: Vec<(String, String)>,
    config: ModelConfig,
    threshold: f64,
}

/// A detector spec, a family or a parameter that could not be parsed or
/// built. The message names the spec and the parameter as the user wrote
/// them (`detector 'akka:window=0': window=0: must hold at least one
/// sample`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpecError {
    /// The spec or family as written, when the error is in one.
    pub spec: Option<String>,
    /// The parameter at fault as named in the input (`--window`, `window`),
    /// when one is.
    pub param: Option<String>,
    /// What is wrong (naming the parameter, if any).
    pub message: String,
}

impl SpecError {
    /// An error that is not about one spec's parameter.
    pub(crate) fn new(message: impl Into<String>) -> SpecError {
        SpecError { spec: None, param: None, message: message.into() }
    }

    /// An error in spec `spec`.
    pub(crate) fn in_spec(spec: &str, message: impl Into<String>) -> SpecError {
        SpecError { spec: Some(quoted(spec)), param: None, message: message.into() }
    }

    /// This error, as found in spec `spec`.
    fn within(mut self, spec: &str) -> SpecError {
        self.spec = Some(quoted(spec));
        self
    }
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.spec {
            Some(spec) => write!(f, "detector {spec}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for SpecError {}

impl DetectorSpec {
    /// Builds a spec from a model and named parameter values.
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

impl std::fmt::Display for DetectorSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&render(self.model, &self.params))
    }
}

impl std::str::FromStr for DetectorSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<DetectorSpec, SpecError> {
        let text = text.trim();
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let model: Model =
            name.trim().parse().map_err(|e: vigil_detector::UnknownModel| SpecError::in_spec(text, e.to_string()))?;
        let mut params = Vec::new();
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| SpecError::in_spec(text, format!("{} is not name=value", quoted(item))))?;
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
}
