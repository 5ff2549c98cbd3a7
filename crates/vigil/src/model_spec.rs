//! Building a detector configuration from named parameters.
//!
//! `vigil replay` takes them as flags (`--window 100`); the same names and
//! values are what a detector spec such as `akka:threshold=8,min-std-ms=100`
//! carries. Every model accepts only the parameters that make sense for it;
//! anything else is an error that says which parameters it takes.

use std::time::Duration;

use vigil_detector::{
    Admission, AkkaConfig, BertierConfig, Bootstrap, ChenConfig, DeadlineConfig, EmpiricalConfig, ExponentialConfig,
    FixedConfig, MaxInterval, Model, ModelConfig, NormalConfig, Prior, TwoWindowConfig,
};

use crate::time_arg::parse_duration;

/// The parameters each model takes, in the order `--help` lists them.
pub(crate) fn allowed(model: Model) -> &'static [&'static str] {
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

/// Named parameter values, checked against a model.
pub(crate) struct Params<'a> {
    model: Model,
    given: Vec<(&'static str, &'a str)>,
}

impl<'a> Params<'a> {
    /// Checks that every parameter applies to `model` and none is repeated.
    /// `given` pairs a parameter name with its text.
    pub(crate) fn new(model: Model, given: Vec<(&'static str, &'a str)>) -> Result<Params<'a>, String> {
        let allowed = allowed(model);
        for (i, (name, _)) in given.iter().enumerate() {
            if !allowed.contains(name) {
                let list: Vec<String> = allowed.iter().map(|f| format!("--{f}")).collect();
                return Err(format!("--{name} does not apply to the {model} model (it takes {})", list.join(", ")));
            }
            if given[..i].iter().any(|(other, _)| other == name) {
                return Err(format!("--{name} is given twice"));
            }
        }
        Ok(Params { model, given })
    }

    fn text(&self, name: &str) -> Option<&'a str> {
        self.given.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
    }

    fn number<T: std::str::FromStr>(&self, name: &str, what: &str) -> Result<Option<T>, String> {
        match self.text(name) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| format!("--{name}: expected {what}, found '{v}'")),
        }
    }

    /// A duration in milliseconds; `none` gives `Some(None)` where allowed.
    fn millis_or_none(&self, name: &str) -> Result<Option<Option<Duration>>, String> {
        match self.text(name) {
            None => Ok(None),
            Some("none") => Ok(Some(None)),
            Some(v) => parse_duration(v).map(|d| Some(Some(d))).map_err(|e| format!("--{name}: {e}")),
        }
    }

    fn millis(&self, name: &str) -> Result<Option<Duration>, String> {
        match self.millis_or_none(name)? {
            Some(None) => Err(format!("--{name}: 'none' is not allowed here")),
            Some(Some(d)) => Ok(Some(d)),
            None => Ok(None),
        }
    }

    /// The bootstrap and admission rules every window model shares.
    fn window_rules(&self, bootstrap: &mut Bootstrap, admission: &mut Admission) -> Result<(), String> {
        if let Some(d) = self.millis("first-estimate-ms")? {
            *bootstrap = Bootstrap::Estimate(d);
        }
        if let Some(cap) = self.millis_or_none("max-interval-ms")? {
            admission.max_interval = cap.map(MaxInterval::Ignore);
        }
        Ok(())
    }

    /// The configuration, and the threshold to compare the level with.
    pub(crate) fn build(&self) -> Result<(ModelConfig, f64), String> {
        let model = self.model;
        let threshold = self.number::<f64>("threshold", "a number")?.unwrap_or(model.default_threshold());
        if !(threshold.is_finite() && threshold > 0.0) {
            return Err(format!("--threshold: must be a finite number greater than zero (got {threshold})"));
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
                    _ => return Err("--prior-mean-ms and --prior-weight go together".into()),
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
        config.validate().map_err(|e| format!("invalid {model} configuration: {e}"))?;
        Ok((config, threshold))
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
                assert!(!err.is_empty());
            }
        }
    }

    #[test]
    fn repeated_and_foreign_parameters_are_errors() {
        assert!(Params::new(Model::Akka, vec![("window", "5"), ("window", "6")]).is_err());
        let err = Params::new(Model::Fixed, vec![("window", "5")]).err().unwrap();
        assert_eq!(err, "--window does not apply to the fixed model (it takes --threshold, --timeout-ms)");
    }
}
