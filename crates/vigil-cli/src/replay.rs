//! `vigil replay`: what a model says about a heartbeat trace.
//!
//! The contract (scripts and the compatibility suite depend on it):
//!
//! - `vigil replay --model MODEL [options] FILE`, FILE a path or `-`.
//! - Input: the trace grammar of [`vigil_lab::event`], one event a line
//!   (`TIME_MS,EVENT[,SENT_MS[,SEQ]]` or a JSON object); `hb` is a heartbeat,
//!   `q` a query, `crash` and `end` change nothing. Blank lines, `#` lines
//!   and a header are ignored.
//! - Output: `time_ms,phi,available`, one row per `q`, in order; `phi` is the
//!   level printed with `{}`; `available` is `level < threshold`.
//! - Bad input: exit status 2, a message naming the line; no rows after it.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use vigil_detector::{Detector, HeartbeatOutcome, MAX_SAMPLE, Model, ModelConfig};

use crate::error::UsageError;
use vigil_lab::event::{Event, EventReader};
use vigil_lab::millis::format_millis;
use vigil_lab::spec::Params;

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

Input: one event a line, TIME_MS,EVENT[,SENT_MS[,SEQ]] (the lab's trace grammar),
with EVENT `hb` (heartbeat) or `q` (query); `crash` and `end` lines change nothing.
A line starting with { is the same event as JSON: {\"t\": 1500, \"event\": \"q\"}.
Blank lines, lines starting with # and a first line starting with `time` (a
header) are ignored. A heartbeat earlier than the previous one is ignored (and
counted on stderr).";

/// Arguments of `vigil replay`.
#[derive(Debug, Args)]
#[command(after_long_help = DEFAULTS, allow_negative_numbers = true)]
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
    threshold: Option<String>,
    /// Samples kept (normal, akka, exponential, chen, bertier, empirical).
    #[arg(long, value_name = "N")]
    window: Option<String>,
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
    prior_weight: Option<String>,
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
    n1: Option<String>,
    /// Long window, heartbeats (2w).
    #[arg(long, value_name = "N")]
    n2: Option<String>,
    /// Weight of the smoothed delay in the margin (bertier).
    #[arg(long, value_name = "X")]
    beta: Option<String>,
    /// Weight of the smoothed deviation in the margin (bertier).
    #[arg(long, value_name = "X")]
    phi: Option<String>,
    /// Smoothing gain in (0, 1] (bertier).
    #[arg(long, value_name = "X")]
    gamma: Option<String>,
}

impl ReplayArgs {
    /// The parameters given on the command line, by name.
    fn given(&self) -> Vec<(&'static str, &str)> {
        let flags: [(&'static str, &Option<String>); 17] = [
            ("threshold", &self.threshold),
            ("window", &self.window),
            ("min-std-ms", &self.min_std_ms),
            ("pause-ms", &self.pause_ms),
            ("first-estimate-ms", &self.first_estimate_ms),
            ("initial-ms", &self.initial_ms),
            ("max-interval-ms", &self.max_interval_ms),
            ("prior-mean-ms", &self.prior_mean_ms),
            ("prior-weight", &self.prior_weight),
            ("timeout-ms", &self.timeout_ms),
            ("interval-ms", &self.interval_ms),
            ("alpha-ms", &self.alpha_ms),
            ("n1", &self.n1),
            ("n2", &self.n2),
            ("beta", &self.beta),
            ("phi", &self.phi),
            ("gamma", &self.gamma),
        ];
        flags.into_iter().filter_map(|(name, value)| value.as_deref().map(|v| (name, v))).collect()
    }

    /// Builds the model configuration and the threshold from the flags.
    pub(crate) fn config(&self) -> Result<(ModelConfig, f64)> {
        let params = Params::new(self.model, self.given()).map_err(|e| UsageError(e.to_string()))?;
        Ok(params.build().map_err(|e| UsageError(e.to_string()))?)
    }
}

/// The longest line of a trace, in bytes.
const MAX_LINE: usize = 4096;

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
    let name = if name == "-" { "stdin".to_owned() } else { name };
    writeln!(out, "time_ms,phi,available")?;
    let mut line = Vec::new();
    let mut number = 0usize;
    let mut reader = EventReader::new();
    // The first lines that went backwards, and how many in all.
    let mut backwards = Vec::new();
    let mut backwards_total = 0usize;
    // The first lines whose interval is longer than a window sample holds.
    let mut long = Vec::new();
    // Heartbeats at the same time as the previous one (0 ms intervals).
    let mut same: Vec<usize> = Vec::new();
    let learns = !matches!(args.model, Model::Fixed | Model::Deadline);
    let mut same_total = 0u64;
    loop {
        line.clear();
        // A line is read up to a bound, so a file without newlines cannot
        // fill the memory.
        let n = io::Read::take(&mut input, MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .with_context(|| format!("{name}: cannot read line {}", number + 1))?;
        if n == 0 {
            break;
        }
        number += 1;
        if line.len() > MAX_LINE {
            out.flush()?;
            bail!(UsageError(format!("{name}:{number}: the line is longer than {MAX_LINE} bytes")));
        }
        // A byte-order mark at the start of the file is not part of the data.
        let bytes = if number == 1 { line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line) } else { &line[..] };
        let event = std::str::from_utf8(bytes)
            .map_err(|e| format!("not UTF-8 text (byte {} of the line)", e.valid_up_to() + 1))
            .and_then(|text| reader.read(number, text).map_err(|e| format!("{}: {}", e.field, e.message)));
        match event {
            Ok(Some(Event::Heartbeat(beat))) => match detector.heartbeat(beat.arrival) {
                HeartbeatOutcome::Backwards { .. } => {
                    backwards_total += 1;
                    if backwards.len() < 10 {
                        backwards.push(number);
                    }
                }
                HeartbeatOutcome::Recorded { interval } if interval > MAX_SAMPLE && long.len() < 10 => {
                    long.push(number);
                }
                HeartbeatOutcome::Recorded { interval } if learns && interval.is_zero() => {
                    same_total += 1;
                    if same.len() < 10 {
                        same.push(number);
                    }
                }
                _ => {}
            },
            Ok(Some(Event::Query(t))) => {
                let level = detector.level(t);
                writeln!(out, "{},{},{}", format_millis(t), level, level < threshold)?;
            }
            Err(what) => {
                out.flush()?;
                bail!(UsageError(format!("{name}:{number}: {what}")));
            }
            // Blank lines, comments, a header, and the lab's crash and end
            // events: nothing to answer.
            Ok(_) => {}
        }
    }
    if backwards_total > 0 {
        let shown: Vec<String> = backwards.iter().map(|n| n.to_string()).collect();
        let more = if backwards_total > backwards.len() { ", ..." } else { "" };
        say!(
            "vigil: note: {backwards_total} heartbeat(s) earlier than the previous one were ignored (line {}{more})",
            shown.join(", ")
        );
    }
    if same_total > 0 {
        let shown: Vec<String> = same.iter().map(|n| n.to_string()).collect();
        let more = if same_total > same.len() as u64 { ", ..." } else { "" };
        say!(
            "vigil: note: {same_total} heartbeat(s) at the same time as the previous one were recorded as 0 ms \
             intervals, which teach a model that heartbeats come at once (line {}{more})",
            shown.join(", ")
        );
    }
    // Only models with a window clamp; their statistics count it.
    let clamped = detector.stats().clamped;
    if clamped > 0 {
        let shown: Vec<String> = long.iter().map(|n| n.to_string()).collect();
        let more = if clamped > long.len() as u64 { ", ..." } else { "" };
        say!(
            "vigil: note: {clamped} interval(s) longer than {} ms were recorded as {} ms, the longest a window \
             sample holds (line {}{more})",
            MAX_SAMPLE.as_millis(),
            MAX_SAMPLE.as_millis(),
            shown.join(", ")
        );
    }
    Ok(())
}
