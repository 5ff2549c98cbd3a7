//! Choosing a model at run time: [`Model`], [`ModelConfig`], [`AnyDetector`].

use core::fmt;
use core::str::FromStr;

use crate::models::chen::{Bertier, BertierConfig, Chen, ChenConfig, TwoWindow, TwoWindowConfig};
use crate::models::empirical::{Empirical, EmpiricalConfig};
use crate::models::exponential::{Exponential, ExponentialConfig};
use crate::models::normal::{Akka, AkkaConfig, Normal, NormalConfig};
use crate::models::timeout::{Deadline, DeadlineConfig, Fixed, FixedConfig};
use crate::{ConfigError, Detector, HeartbeatOutcome, Instant, Stats};

/// The names of the models, as used on command lines and in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Model {
    /// [`Normal`]: φ with the exact normal tail.
    Normal,
    /// [`Akka`]: φ with Akka's logistic approximation.
    Akka,
    /// [`Deadline`]: Akka's deadline detector.
    Deadline,
    /// [`Exponential`]: Cassandra's and chitchat's φ.
    Exponential,
    /// [`Fixed`]: a constant timeout.
    Fixed,
    /// [`Chen`]: estimated arrival plus a constant margin.
    Chen,
    /// [`Bertier`]: estimated arrival plus a dynamic margin.
    Bertier,
    /// [`TwoWindow`]: 2W-FD.
    TwoWindow,
    /// [`Empirical`]: accrual from the window's empirical distribution.
    Empirical,
}

impl Model {
    /// Every model, in documentation order.
    pub const ALL: [Model; 9] = [
        Model::Normal,
        Model::Akka,
        Model::Deadline,
        Model::Exponential,
        Model::Fixed,
        Model::Chen,
        Model::Bertier,
        Model::TwoWindow,
        Model::Empirical,
    ];

    /// The model's name: `normal`, `akka`, `deadline`, `exponential`, `fixed`,
    /// `chen`, `bertier`, `2w` or `empirical`.
    pub fn name(self) -> &'static str {
        match self {
            Model::Normal => "normal",
            Model::Akka => "akka",
            Model::Deadline => "deadline",
            Model::Exponential => "exponential",
            Model::Fixed => "fixed",
            Model::Chen => "chen",
            Model::Bertier => "bertier",
            Model::TwoWindow => "2w",
            Model::Empirical => "empirical",
        }
    }

    /// The conventional threshold for the model: 8 for the φ models (Akka's,
    /// Cassandra's and chitchat's default), 1 for the timeout-shaped models
    /// (the timeout or freshness point itself), and 3 for the empirical model
    /// (past every sample of a 1,000-sample window).
    pub fn default_threshold(self) -> f64 {
        match self {
            Model::Normal | Model::Akka | Model::Exponential => 8.0,
            Model::Deadline | Model::Fixed | Model::Chen | Model::Bertier | Model::TwoWindow => 1.0,
            Model::Empirical => 3.0,
        }
    }

    /// One line on what the model's level means.
    pub fn level_meaning(self) -> &'static str {
        match self {
            Model::Normal => "-log10 P(later) under a normal fit (exact tail)",
            Model::Akka => "-log10 P(later) under a normal fit (Akka's logistic approximation)",
            Model::Exponential => "-log10 P(later) under an exponential fit: elapsed / (mean ln 10)",
            Model::Empirical => "-log10 P(later) from the window's own samples, exponential beyond them",
            Model::Fixed => "elapsed / timeout",
            Model::Deadline => "elapsed / (interval + pause)",
            Model::Chen | Model::Bertier | Model::TwoWindow => {
                "1 at the freshness point, +1 per heartbeat interval after it"
            }
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown model name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownModel(pub String);

impl fmt::Display for UnknownModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Model::ALL.iter().map(|m| m.name()).collect();
        write!(f, "unknown model '{}' (expected one of: {})", self.0, names.join(", "))
    }
}

impl std::error::Error for UnknownModel {}

/// By name: `"akka"`, `"normal"`, ...
#[cfg(feature = "serde")]
impl serde::Serialize for Model {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Model {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Model, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl FromStr for Model {
    type Err = UnknownModel;
    fn from_str(s: &str) -> Result<Model, UnknownModel> {
        Model::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| UnknownModel(s.to_owned()))
    }
}

/// The configuration of any model.
///
/// # Example
///
/// ```
/// use vigil_detector::{Detector, Model, ModelConfig};
///
/// let config = ModelConfig::default_for("akka".parse::<Model>()?);
/// let mut detector = config.build()?;
/// detector.heartbeat(vigil_detector::Instant::from_secs(1));
/// assert_eq!(detector.model(), Model::Akka);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ModelConfig {
    /// Configures [`Normal`].
    Normal(NormalConfig),
    /// Configures [`Akka`].
    Akka(AkkaConfig),
    /// Configures [`Deadline`].
    Deadline(DeadlineConfig),
    /// Configures [`Exponential`].
    Exponential(ExponentialConfig),
    /// Configures [`Fixed`].
    Fixed(FixedConfig),
    /// Configures [`Chen`].
    Chen(ChenConfig),
    /// Configures [`Bertier`].
    Bertier(BertierConfig),
    /// Configures [`TwoWindow`].
    TwoWindow(TwoWindowConfig),
    /// Configures [`Empirical`].
    Empirical(EmpiricalConfig),
}

impl ModelConfig {
    /// The model's default configuration.
    pub fn default_for(model: Model) -> ModelConfig {
        match model {
            Model::Normal => ModelConfig::Normal(NormalConfig::default()),
            Model::Akka => ModelConfig::Akka(AkkaConfig::default()),
            Model::Deadline => ModelConfig::Deadline(DeadlineConfig::default()),
            Model::Exponential => ModelConfig::Exponential(ExponentialConfig::default()),
            Model::Fixed => ModelConfig::Fixed(FixedConfig::default()),
            Model::Chen => ModelConfig::Chen(ChenConfig::default()),
            Model::Bertier => ModelConfig::Bertier(BertierConfig::default()),
            Model::TwoWindow => ModelConfig::TwoWindow(TwoWindowConfig::default()),
            Model::Empirical => ModelConfig::Empirical(EmpiricalConfig::default()),
        }
    }

    /// Which model this configures.
    pub fn model(&self) -> Model {
        match self {
            ModelConfig::Normal(_) => Model::Normal,
            ModelConfig::Akka(_) => Model::Akka,
            ModelConfig::Deadline(_) => Model::Deadline,
            ModelConfig::Exponential(_) => Model::Exponential,
            ModelConfig::Fixed(_) => Model::Fixed,
            ModelConfig::Chen(_) => Model::Chen,
            ModelConfig::Bertier(_) => Model::Bertier,
            ModelConfig::TwoWindow(_) => Model::TwoWindow,
            ModelConfig::Empirical(_) => Model::Empirical,
        }
    }

    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            ModelConfig::Normal(c) => c.validate(),
            ModelConfig::Akka(c) => c.validate(),
            ModelConfig::Deadline(c) => c.validate(),
            ModelConfig::Exponential(c) => c.validate(),
            ModelConfig::Fixed(c) => c.validate(),
            ModelConfig::Chen(c) => c.validate(),
            ModelConfig::Bertier(c) => c.validate(),
            ModelConfig::TwoWindow(c) => c.validate(),
            ModelConfig::Empirical(c) => c.validate(),
        }
    }

    /// Builds the detector.
    pub fn build(&self) -> Result<AnyDetector, ConfigError> {
        Ok(match self.clone() {
            ModelConfig::Normal(c) => AnyDetector::Normal(Normal::new(c)?),
            ModelConfig::Akka(c) => AnyDetector::Akka(Akka::new(c)?),
            ModelConfig::Deadline(c) => AnyDetector::Deadline(Deadline::new(c)?),
            ModelConfig::Exponential(c) => AnyDetector::Exponential(Exponential::new(c)?),
            ModelConfig::Fixed(c) => AnyDetector::Fixed(Fixed::new(c)?),
            ModelConfig::Chen(c) => AnyDetector::Chen(Chen::new(c)?),
            ModelConfig::Bertier(c) => AnyDetector::Bertier(Bertier::new(c)?),
            ModelConfig::TwoWindow(c) => AnyDetector::TwoWindow(TwoWindow::new(c)?),
            ModelConfig::Empirical(c) => AnyDetector::Empirical(Empirical::new(c)?),
        })
    }
}

/// Any of the models, chosen at run time. Dispatch is a `match`, not a
/// virtual call.
///
/// # Example
///
/// ```
/// use vigil_detector::{AnyDetector, Detector, Instant, Model, ModelConfig};
///
/// // A model picked from configuration text, then driven like any detector.
/// let model: Model = "2w".parse()?;
/// let mut d = AnyDetector::new(&ModelConfig::default_for(model))?;
/// for i in 0..20 {
///     d.heartbeat(Instant::from_millis(i * 100));
/// }
/// assert_eq!(d.model(), Model::TwoWindow);
/// assert!(d.is_available(Instant::from_millis(1_950), model.default_threshold()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub enum AnyDetector {
    /// A [`Normal`] detector.
    Normal(Normal),
    /// An [`Akka`] detector.
    Akka(Akka),
    /// A [`Deadline`] detector.
    Deadline(Deadline),
    /// An [`Exponential`] detector.
    Exponential(Exponential),
    /// A [`Fixed`] detector.
    Fixed(Fixed),
    /// A [`Chen`] detector.
    Chen(Chen),
    /// A [`Bertier`] detector.
    Bertier(Bertier),
    /// A [`TwoWindow`] detector.
    TwoWindow(TwoWindow),
    /// An [`Empirical`] detector.
    Empirical(Empirical),
}

macro_rules! dispatch {
    ($self:expr, $d:ident => $body:expr) => {
        match $self {
            AnyDetector::Normal($d) => $body,
            AnyDetector::Akka($d) => $body,
            AnyDetector::Deadline($d) => $body,
            AnyDetector::Exponential($d) => $body,
            AnyDetector::Fixed($d) => $body,
            AnyDetector::Chen($d) => $body,
            AnyDetector::Bertier($d) => $body,
            AnyDetector::TwoWindow($d) => $body,
            AnyDetector::Empirical($d) => $body,
        }
    };
}

impl AnyDetector {
    /// Builds a detector from a configuration.
    pub fn new(config: &ModelConfig) -> Result<AnyDetector, ConfigError> {
        config.build()
    }

    /// Which model this is.
    pub fn model(&self) -> Model {
        match self {
            AnyDetector::Normal(_) => Model::Normal,
            AnyDetector::Akka(_) => Model::Akka,
            AnyDetector::Deadline(_) => Model::Deadline,
            AnyDetector::Exponential(_) => Model::Exponential,
            AnyDetector::Fixed(_) => Model::Fixed,
            AnyDetector::Chen(_) => Model::Chen,
            AnyDetector::Bertier(_) => Model::Bertier,
            AnyDetector::TwoWindow(_) => Model::TwoWindow,
            AnyDetector::Empirical(_) => Model::Empirical,
        }
    }
}

impl Detector for AnyDetector {
    #[inline]
    fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome {
        dispatch!(self, d => d.heartbeat(now))
    }
    #[inline]
    fn level(&self, now: Instant) -> f64 {
        dispatch!(self, d => d.level(now))
    }
    fn crossing(&self, threshold: f64) -> Option<Instant> {
        dispatch!(self, d => d.crossing(threshold))
    }
    fn stats(&self) -> Stats {
        dispatch!(self, d => d.stats())
    }
    fn reset(&mut self) {
        dispatch!(self, d => d.reset())
    }
    fn last_heartbeat(&self) -> Option<Instant> {
        dispatch!(self, d => d.last_heartbeat())
    }
    fn heap_bytes(&self) -> usize {
        dispatch!(self, d => d.heap_bytes())
    }
}
