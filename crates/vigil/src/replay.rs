//! `vigil replay`: what a model says about a heartbeat trace.
//!
//! The contract (scripts and the compatibility suite depend on it):
//!
//! - `vigil replay --model MODEL [options] FILE`, FILE a path or `-`.
//! - Input: CSV, one event a line, `TIME_MS,EVENT`; EVENT is `hb` (a
//!   heartbeat arrives) or `q` (a query). Blank lines and `#` lines are
//!   ignored.
//! - Output: `time_ms,phi,available`, one row per `q`, in order; `phi` is the
//!   level printed with `{}`; `available` is `level < threshold`.
//! - Bad input: exit status 2, a message naming the line; no rows after it.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use vigil_detector::{
    Admission, AkkaConfig, BertierConfig, Bootstrap, ChenConfig, DeadlineConfig, Detector, EmpiricalConfig,
    ExponentialConfig, FixedConfig, HeartbeatOutcome, MaxInterval, Model, ModelConfig, NormalConfig, Prior,
    TwoWindowConfig,
};

use crate::UsageError;
use crate::time_arg::{format_millis, parse_duration, parse_instant};

const DEFAULTS: &str = "\
Defaults (the anchors' defaults):
  normal       threshold 8, window 1000, min-std-ms 100, pause-ms 0, no bootstrap
               (the paper's model with Akka's sigma floor)
  akka         threshold 8, window 1000, min-std-ms 100, pause-ms 3000,
               first-estimate-ms 1000 (Akka cluster failure detector)
  deadline     threshold 1, timeout-ms 10000 (acceptable pause), interval-ms 3000
               (Akka multi-data-center deadline detector)
  exponential  threshold 8, window 1000, initial-ms 2000, max-interval-ms 2000,
               no prior (Cassandra)
  fixed        threshold 1, timeout-ms 1000
  chen         threshold 1, window 1000, alpha-ms 200, interval estimated
  bertier      threshold 1, window 1000, beta 1, phi 4, gamma 0.1, interval estimated
  2w           threshold 1, n1 1, n2 1000, alpha-ms 200, interval estimated
  empirical    threshold 3, window 1000

Options that take a duration accept `none` where absence means something:
  --initial-ms none, --max-interval-ms none.

What the level means:
  normal, akka, exponential, empirical: -log10 P(a heartbeat would still come later)
  fixed: elapsed / timeout;  deadline: elapsed / (interval + pause)
  chen, bertier, 2w: 1 at the freshness point, +1 per heartbeat interval after it

Input: one event a line, TIME_MS,EVENT with EVENT `hb` (heartbeat) or `q` (query);
blank lines and lines starting with # are ignored. A heartbeat earlier than the
previous one is ignored (and counted on stderr).";

/// Arguments of `vigil replay`.
#[derive(Debug, Args)]
#[command(after_long_help = DEFAULTS)]
pub(crate) struct ReplayArgs {
    /// The detector model: normal, akka, deadline, exponential, fixed, chen,
    /// bertier, 2w or empirical.
    #[arg(long, value_name = "MODEL")]
    model: Model,
    /// The trace: a path, or `-` for standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Level at which the peer is unavailable (all models).
    #[arg(long, value_name = "X")]
    threshold: Option<f64>,
    /// Samples kept (normal, akka, exponential, chen, bertier, empirical).
    #[arg(long, value_name = "N")]
    window: Option<usize>,
    /// Floor on the standard deviation, ms (normal, akka).
    #[arg(long, value_name = "X")]
    min_std_ms: Option<String>,
    /// Acceptable pause added to the mean, ms (normal, akka).
    #[arg(long, value_name = "X")]
    pause_ms: Option<String>,
    /// Bootstrap estimate, ms: two samples at ±25% at the first heartbeat
    /// (normal, akka, chen, bertier, 2w, empirical; for normal, absent means
    /// no bootstrap).
    #[arg(long, value_name = "X")]
    first_estimate_ms: Option<String>,
    /// Seed interval pushed at the first heartbeat, ms, or `none`
    /// (exponential).
    #[arg(long, value_name = "X")]
    initial_ms: Option<String>,
    /// Intervals longer than this are not recorded, ms, or `none` (normal,
    /// exponential, chen, bertier, 2w, empirical).
    #[arg(long, value_name = "X")]
    max_interval_ms: Option<String>,
    /// Prior mean of the additive-smoothing prior, ms (exponential).
    #[arg(long, value_name = "X")]
    prior_mean_ms: Option<String>,
    /// Weight of the prior, in samples (exponential).
    #[arg(long, value_name = "W")]
    prior_weight: Option<f64>,
    /// Timeout, ms (fixed); acceptable pause, ms (deadline).
    #[arg(long, value_name = "X")]
    timeout_ms: Option<String>,
    /// Heartbeat interval, ms (deadline; chen, bertier and 2w: the known
    /// sender interval instead of an estimate).
    #[arg(long, value_name = "X")]
    interval_ms: Option<String>,
    /// Safety margin, ms (chen, 2w).
    #[arg(long, value_name = "X")]
    alpha_ms: Option<String>,
    /// Short window, heartbeats (2w).
    #[arg(long, value_name = "N")]
    n1: Option<usize>,
    /// Long window, heartbeats (2w).
    #[arg(long, value_name = "N")]
    n2: Option<usize>,
    /// Weight of the smoothed delay in the margin (bertier).
    #[arg(long, value_name = "X")]
    beta: Option<f64>,
    /// Weight of the smoothed deviation in the margin (bertier).
    #[arg(long, value_name = "X")]
    phi: Option<f64>,
    /// Smoothing gain in (0, 1] (bertier).
    #[arg(long, value_name = "X")]
    gamma: Option<f64>,
}

/// A flag that takes a duration in milliseconds or `none`.
fn duration_or_none(flag: &str, value: &str) -> Result<Option<Duration>> {
    if value == "none" {
        return Ok(None);
    }
    parse_duration(value).map(Some).map_err(|e| UsageError(format!("--{flag}: {e}")).into())
}

fn duration(flag: &str, value: &str) -> Result<Duration> {
    match duration_or_none(flag, value)? {
        Some(d) => Ok(d),
        None => bail!(UsageError(format!("--{flag}: 'none' is not allowed here"))),
    }
}

impl ReplayArgs {
    /// The options given, by flag name, for the "does not apply" check.
    fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let mut add = |name: &'static str, present: bool| {
            if present {
                v.push(name);
            }
        };
        add("threshold", self.threshold.is_some());
        add("window", self.window.is_some());
        add("min-std-ms", self.min_std_ms.is_some());
        add("pause-ms", self.pause_ms.is_some());
        add("first-estimate-ms", self.first_estimate_ms.is_some());
        add("initial-ms", self.initial_ms.is_some());
        add("max-interval-ms", self.max_interval_ms.is_some());
        add("prior-mean-ms", self.prior_mean_ms.is_some());
        add("prior-weight", self.prior_weight.is_some());
        add("timeout-ms", self.timeout_ms.is_some());
        add("interval-ms", self.interval_ms.is_some());
        add("alpha-ms", self.alpha_ms.is_some());
        add("n1", self.n1.is_some());
        add("n2", self.n2.is_some());
        add("beta", self.beta.is_some());
        add("phi", self.phi.is_some());
        add("gamma", self.gamma.is_some());
        v
    }

    fn bootstrap(&self) -> Result<Option<Bootstrap>> {
        Ok(match &self.first_estimate_ms {
            Some(v) => Some(Bootstrap::Estimate(duration("first-estimate-ms", v)?)),
            None => None,
        })
    }

    fn admission(&self, base: Admission) -> Result<Admission> {
        let mut a = base;
        if let Some(v) = &self.max_interval_ms {
            a.max_interval = duration_or_none("max-interval-ms", v)?.map(MaxInterval::Ignore);
        }
        Ok(a)
    }

    /// Builds the model configuration and the threshold from the flags.
    pub(crate) fn config(&self) -> Result<(ModelConfig, f64)> {
        let model = self.model;
        let allowed: &[&str] = match model {
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
        };
        if let Some(flag) = self.given().into_iter().find(|f| !allowed.contains(f)) {
            let list: Vec<String> = allowed.iter().map(|f| format!("--{f}")).collect();
            bail!(UsageError(format!("--{flag} does not apply to the {model} model (it takes {})", list.join(", "))));
        }
        let threshold = self.threshold.unwrap_or(model.default_threshold());
        if !(threshold.is_finite() && threshold > 0.0) {
            bail!(UsageError(format!("--threshold: must be a finite number greater than zero (got {threshold})")));
        }
        let config = match model {
            Model::Normal => {
                let mut c = NormalConfig::default();
                set(&mut c.window, self.window);
                if let Some(v) = &self.min_std_ms {
                    c.min_std_dev = duration("min-std-ms", v)?;
                }
                if let Some(v) = &self.pause_ms {
                    c.acceptable_pause = duration("pause-ms", v)?;
                }
                c.bootstrap = self.bootstrap()?.unwrap_or(c.bootstrap);
                c.admission = self.admission(c.admission)?;
                ModelConfig::Normal(c)
            }
            Model::Akka => {
                let mut c = AkkaConfig { threshold, ..AkkaConfig::default() };
                set(&mut c.window, self.window);
                if let Some(v) = &self.min_std_ms {
                    c.min_std_dev = duration("min-std-ms", v)?;
                }
                if let Some(v) = &self.pause_ms {
                    c.acceptable_pause = duration("pause-ms", v)?;
                }
                if let Some(Bootstrap::Estimate(d)) = self.bootstrap()? {
                    c.first_heartbeat_estimate = d;
                }
                ModelConfig::Akka(c)
            }
            Model::Deadline => {
                let mut c = DeadlineConfig::default();
                if let Some(v) = &self.timeout_ms {
                    c.acceptable_pause = duration("timeout-ms", v)?;
                }
                if let Some(v) = &self.interval_ms {
                    c.heartbeat_interval = duration("interval-ms", v)?;
                }
                ModelConfig::Deadline(c)
            }
            Model::Exponential => {
                let mut c = ExponentialConfig::cassandra();
                set(&mut c.window, self.window);
                if let Some(v) = &self.initial_ms {
                    c.bootstrap = duration_or_none("initial-ms", v)?.map_or(Bootstrap::None, Bootstrap::Seed);
                }
                c.admission = self.admission(c.admission)?;
                match (&self.prior_mean_ms, self.prior_weight) {
                    (Some(mean), Some(weight)) => {
                        c.prior = Some(Prior { mean: duration("prior-mean-ms", mean)?, weight });
                    }
                    (None, None) => {}
                    _ => bail!(UsageError("--prior-mean-ms and --prior-weight go together".into())),
                }
                ModelConfig::Exponential(c)
            }
            Model::Fixed => {
                let mut c = FixedConfig::default();
                if let Some(v) = &self.timeout_ms {
                    c.timeout = duration("timeout-ms", v)?;
                }
                ModelConfig::Fixed(c)
            }
            Model::Chen => {
                let mut c = ChenConfig::default();
                set(&mut c.window, self.window);
                if let Some(v) = &self.alpha_ms {
                    c.alpha = duration("alpha-ms", v)?;
                }
                if let Some(v) = &self.interval_ms {
                    c.interval = Some(duration("interval-ms", v)?);
                }
                c.bootstrap = self.bootstrap()?.unwrap_or(c.bootstrap);
                c.admission = self.admission(c.admission)?;
                ModelConfig::Chen(c)
            }
            Model::Bertier => {
                let mut c = BertierConfig::default();
                set(&mut c.window, self.window);
                set(&mut c.beta, self.beta);
                set(&mut c.phi, self.phi);
                set(&mut c.gamma, self.gamma);
                if let Some(v) = &self.interval_ms {
                    c.interval = Some(duration("interval-ms", v)?);
                }
                c.bootstrap = self.bootstrap()?.unwrap_or(c.bootstrap);
                c.admission = self.admission(c.admission)?;
                ModelConfig::Bertier(c)
            }
            Model::TwoWindow => {
                let mut c = TwoWindowConfig::default();
                set(&mut c.n1, self.n1);
                set(&mut c.n2, self.n2);
                if let Some(v) = &self.alpha_ms {
                    c.alpha = duration("alpha-ms", v)?;
                }
                if let Some(v) = &self.interval_ms {
                    c.interval = Some(duration("interval-ms", v)?);
                }
                c.bootstrap = self.bootstrap()?.unwrap_or(c.bootstrap);
                c.admission = self.admission(c.admission)?;
                ModelConfig::TwoWindow(c)
            }
            Model::Empirical => {
                let mut c = EmpiricalConfig::default();
                set(&mut c.window, self.window);
                c.bootstrap = self.bootstrap()?.unwrap_or(c.bootstrap);
                c.admission = self.admission(c.admission)?;
                ModelConfig::Empirical(c)
            }
        };
        config.validate().map_err(|e| UsageError(format!("invalid {model} configuration: {e}")))?;
        Ok((config, threshold))
    }
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

/// One parsed line of a trace.
enum Line {
    Skip,
    Heartbeat(vigil_detector::Instant),
    Query(vigil_detector::Instant),
}

fn parse_line(bytes: &[u8]) -> Result<Line, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not valid UTF-8 (byte {})", e.valid_up_to() + 1))?;
    let text = text.trim();
    if text.is_empty() || text.starts_with('#') {
        return Ok(Line::Skip);
    }
    let mut fields = text.split(',');
    let (Some(time), Some(event), None) = (fields.next(), fields.next(), fields.next()) else {
        return Err(format!("expected TIME_MS,EVENT, found '{text}'"));
    };
    let time = parse_instant(time.trim()).map_err(|e| format!("TIME_MS: {e}"))?;
    match event.trim() {
        "hb" => Ok(Line::Heartbeat(time)),
        "q" => Ok(Line::Query(time)),
        other => Err(format!("EVENT must be 'hb' or 'q', found '{other}'")),
    }
}

/// Runs `vigil replay`.
pub(crate) fn run(args: &ReplayArgs, out: &mut impl Write) -> Result<()> {
    let (config, threshold) = args.config()?;
    let mut detector = config.build().map_err(|e| UsageError(format!("invalid configuration: {e}")))?;
    let name = args.file.display().to_string();
    let mut input: Box<dyn BufRead> = if args.file.as_os_str() == "-" {
        Box::new(BufReader::new(io::stdin().lock()))
    } else {
        let file = File::open(&args.file).with_context(|| format!("cannot open trace '{name}'"))?;
        Box::new(BufReader::new(file))
    };
    let name = if name == "-" { "<stdin>".to_owned() } else { name };
    writeln!(out, "time_ms,phi,available")?;
    let mut line = Vec::new();
    let mut number = 0usize;
    let mut backwards = Vec::new();
    loop {
        line.clear();
        let n =
            input.read_until(b'\n', &mut line).with_context(|| format!("{name}: cannot read line {}", number + 1))?;
        if n == 0 {
            break;
        }
        number += 1;
        // A byte-order mark at the start of the file is not part of the data.
        let bytes = if number == 1 { line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line) } else { &line[..] };
        match parse_line(bytes) {
            Ok(Line::Skip) => {}
            Ok(Line::Heartbeat(t)) => {
                if let HeartbeatOutcome::Backwards { .. } = detector.heartbeat(t) {
                    backwards.push(number);
                }
            }
            Ok(Line::Query(t)) => {
                let level = detector.level(t);
                writeln!(out, "{},{},{}", format_millis(t), level, level < threshold)?;
            }
            Err(what) => {
                out.flush()?;
                bail!(UsageError(format!("{name}:{number}: {what}")));
            }
        }
    }
    if !backwards.is_empty() {
        let shown: Vec<String> = backwards.iter().take(10).map(|n| n.to_string()).collect();
        let more = if backwards.len() > 10 { ", ..." } else { "" };
        eprintln!(
            "vigil: note: {} heartbeat(s) earlier than the previous one were ignored (line {}{more})",
            backwards.len(),
            shown.join(", ")
        );
    }
    Ok(())
}
