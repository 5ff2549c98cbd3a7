//! Seed 002's lab as one recomputable function: the controls of its page
//! (heartbeat period, jitter, pause chance and size, pause margin, φ
//! threshold, fixed timeout, seed) in, one trace and what φ and a fixed
//! timeout made of it out, with the seed's checks.
//!
//! One observer watches one peer that crashes at 26 s. φ is the normal model
//! over a 100-interval window, with the pause margin as its acceptable
//! pause (`elapsed − margin` is what is judged); the fixed timeout suspects
//! once the silence exceeds its budget. Everything is exact: suspicions start
//! at the detectors' crossing instants, not on a polling grid.
//!
//! ```
//! use vigil_lab::interactive::{Controls, run};
//!
//! let out = run(&Controls::audit_cases()[0].1)?;
//! assert_eq!(out.crash_ms, 26_000.0);
//! assert!(out.checks.iter().all(|c| c.passed), "{:?}", out.checks);
//! // Every suspicion of the fixed timeout starts where the silence exceeds it.
//! assert!(out.fixed.detection_ms.is_some());
//! # Ok::<(), vigil_lab::interactive::ControlError>(())
//! ```

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use vigil_detector::{FixedConfig, Instant, ModelConfig, NormalConfig};

use crate::engine::{judge, level_series};
use crate::qos::Timeline;
use crate::scenario::{SEED002_CRASH_MS, seed002_path};
use crate::trace::Trace;

/// The page's controls. Times in milliseconds, the pause chance in percent
/// per heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Controls {
    /// The nominal heartbeat period (50 to 10,000 ms).
    pub heartbeat: f64,
    /// Each send is offset uniformly within ± this (0 to the period).
    pub jitter: f64,
    /// The chance per heartbeat of a sender pause, in percent (0 to 100).
    pub pause_chance: f64,
    /// The longest pause; a pause holds a heartbeat back by half to all of
    /// it (0 to 60,000 ms).
    pub pause_size: f64,
    /// Silence φ forgives before it judges (0 to 60,000 ms).
    pub pause_margin: f64,
    /// φ's threshold (0.1 to 50).
    pub phi_threshold: f64,
    /// The fixed timeout (1 to 120,000 ms).
    pub fixed_timeout: f64,
    /// The seed of the trace.
    pub seed: u64,
}

/// A control out of its range: which one, what it was, what is allowed.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlError {
    /// The control's name.
    pub control: &'static str,
    /// Its value.
    pub value: f64,
    /// The allowed range, in words.
    pub allowed: String,
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} is out of range ({})", self.control, self.value, self.allowed)
    }
}

impl std::error::Error for ControlError {}

impl Controls {
    /// Seed 002's four audit cases, by their labels: the default noisy path,
    /// a quiet one, a bursty one and a very noisy one.
    pub fn audit_cases() -> [(&'static str, Controls); 4] {
        let c = |heartbeat, jitter, pause_chance, pause_size, pause_margin, phi_threshold, fixed_timeout, seed| {
            Controls { heartbeat, jitter, pause_chance, pause_size, pause_margin, phi_threshold, fixed_timeout, seed }
        };
        [
            ("default noisy path", c(1000.0, 140.0, 10.0, 1800.0, 250.0, 4.0, 1200.0, 92)),
            ("quiet path", c(800.0, 60.0, 3.0, 900.0, 150.0, 3.0, 1600.0, 7)),
            ("bursty path", c(1200.0, 260.0, 12.0, 2400.0, 600.0, 6.0, 3600.0, 87)),
            ("very noisy path", c(1500.0, 450.0, 18.0, 3200.0, 900.0, 8.0, 5200.0, 123)),
        ]
    }

    /// Checks every control against its range.
    ///
    /// # Errors
    ///
    /// The first control out of range.
    pub fn validate(&self) -> Result<(), ControlError> {
        let check = |control: &'static str, value: f64, lo: f64, hi: f64| {
            if value.is_finite() && (lo..=hi).contains(&value) {
                Ok(())
            } else {
                Err(ControlError { control, value, allowed: format!("{lo} to {hi}") })
            }
        };
        check("heartbeat", self.heartbeat, 50.0, 10_000.0)?;
        check("jitter", self.jitter, 0.0, self.heartbeat)?;
        check("pause_chance", self.pause_chance, 0.0, 100.0)?;
        check("pause_size", self.pause_size, 0.0, 60_000.0)?;
        check("pause_margin", self.pause_margin, 0.0, 60_000.0)?;
        check("phi_threshold", self.phi_threshold, 0.1, 50.0)?;
        check("fixed_timeout", self.fixed_timeout, 1.0, 120_000.0)?;
        Ok(())
    }

    fn phi_config(&self) -> ModelConfig {
        ModelConfig::Normal(NormalConfig {
            window: 100,
            min_std_dev: Duration::from_millis(1),
            acceptable_pause: millis(self.pause_margin),
            ..NormalConfig::default()
        })
    }

    fn fixed_config(&self) -> ModelConfig {
        ModelConfig::Fixed(FixedConfig { timeout: millis(self.fixed_timeout) })
    }
}

fn millis(ms: f64) -> Duration {
    Duration::from_nanos((ms * 1e6).round() as u64)
}

/// A suspicion: from `start` to `end` (ms), `end` `None` if it never ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Band {
    /// When the detector began to suspect.
    pub start: f64,
    /// When it trusted again.
    pub end: Option<f64>,
}

/// What one detector made of the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdicts {
    /// The detector, as a lab spec.
    pub spec: String,
    /// Its suspicions, in time order.
    pub suspicions: Vec<Band>,
    /// Suspicions that began before the crash (false suspicions).
    pub false_episodes: usize,
    /// From the crash to the suspicion that lasted, in ms (0 if one that
    /// began before the crash never ended); `None` if it never came.
    pub detection_ms: Option<f64>,
}

/// One of the seed's checks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// What is checked.
    pub name: &'static str,
    /// Whether it held.
    pub passed: bool,
}

/// Everything the page draws and tabulates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The controls it was computed for.
    pub controls: Controls,
    /// Heartbeat arrivals (ms).
    pub arrivals: Vec<f64>,
    /// The crash (ms).
    pub crash_ms: f64,
    /// The end of what is shown (ms).
    pub end_ms: f64,
    /// φ over time: `(ms, φ)`, at each arrival and at steps between.
    pub phi: Vec<(f64, f64)>,
    /// Mean of the intervals in φ's window at the crash (ms).
    pub mean_ms: f64,
    /// Their standard deviation (ms).
    pub std_dev_ms: f64,
    /// φ's verdicts.
    pub phi_verdicts: Verdicts,
    /// The fixed timeout's.
    pub fixed: Verdicts,
    /// The seed's checks.
    pub checks: Vec<Check>,
}

/// Points per gap between heartbeats in [`Outcome::phi`].
const STEPS: u64 = 12;
/// Points across the silence after the last heartbeat.
const TAIL_STEPS: u64 = 200;

fn ms(t: Instant) -> f64 {
    t.as_nanos() as f64 / 1e6
}

fn verdicts(spec: String, t: &Timeline, crash: f64) -> Verdicts {
    Verdicts {
        spec,
        suspicions: t.suspicions.iter().map(|s| Band { start: ms(s.start), end: s.end.map(ms) }).collect(),
        false_episodes: t.suspicions.iter().filter(|s| ms(s.start) < crash).count(),
        detection_ms: t.detection().map(|d| d as f64 / 1e6),
    }
}

/// Runs the lab for `c`.
///
/// # Errors
///
/// A control out of range.
pub fn run(c: &Controls) -> Result<Outcome, ControlError> {
    c.validate()?;
    let scenario = seed002_path("interactive", "interactive path", c.heartbeat, c.jitter, c.pause_chance, c.pause_size);
    let mut trace: Trace = scenario.trace(c.seed, 0);
    let crash = SEED002_CRASH_MS;
    // Long enough after the crash for both detectors to speak, and a little.
    let wait = (c.fixed_timeout + c.pause_margin + 8.0 * c.heartbeat).clamp(10_000.0, 180_000.0);
    let end = crash + wait;
    trace.end = Some(Instant::ZERO + millis(end));
    let (phi_cfg, fixed_cfg) = (c.phi_config(), c.fixed_config());
    // The configurations are valid for every control in range.
    let internal =
        |e: vigil_detector::ConfigError| ControlError { control: "model", value: f64::NAN, allowed: e.to_string() };
    let phi_t = judge(&trace, &phi_cfg, &[c.phi_threshold, c.phi_threshold + 1.0], 1).map_err(internal)?;
    let fixed_t = judge(&trace, &fixed_cfg, &[1.0], 1).map_err(internal)?;
    let last = trace.beats.len().saturating_sub(1);
    // Between heartbeats a few points a gap; after the last one (the
    // crash), many, since that silence is what the page is about.
    let mut phi = level_series(&trace, &phi_cfg, 0, last, STEPS, None).map_err(internal)?;
    let tail = level_series(&trace, &phi_cfg, last, last, TAIL_STEPS, trace.end).map_err(internal)?;
    phi.extend(tail.into_iter().skip(1));
    let arrivals: Vec<f64> = trace.beats.iter().map(|b| ms(b.arrival)).collect();
    let intervals: Vec<f64> = arrivals.windows(2).map(|w| w[1] - w[0]).collect();
    let window = &intervals[intervals.len().saturating_sub(100)..];
    let n = window.len().max(1) as f64;
    let mean = window.iter().sum::<f64>() / n;
    let var = window.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    let phi_v = verdicts(
        format!("normal:window=100,min-std-ms=1,pause-ms={},threshold={}", c.pause_margin, c.phi_threshold),
        &phi_t[0],
        crash,
    );
    let higher = verdicts(String::new(), &phi_t[1], crash);
    let fixed = verdicts(format!("fixed:timeout-ms={}", c.fixed_timeout), &fixed_t[0], crash);
    let checks = vec![
        Check { name: "arrivals are strictly increasing", passed: arrivals.windows(2).all(|w| w[1] > w[0]) },
        Check { name: "arrivals stop before crash", passed: arrivals.iter().all(|&a| a < crash) },
        Check {
            name: "phi scores are finite and nonnegative",
            passed: phi.iter().all(|&(_, p)| p.is_finite() && p >= 0.0),
        },
        Check { name: "sample window is bounded", passed: window.len() <= 100 },
        Check { name: "phi eventually detects the crash", passed: phi_v.detection_ms.is_some() },
        Check { name: "fixed timeout eventually detects the crash", passed: fixed.detection_ms.is_some() },
        Check {
            name: "higher phi threshold does not detect earlier",
            passed: match (phi_v.detection_ms, higher.detection_ms) {
                (Some(a), Some(b)) => b >= a,
                (_, None) => true,
                (None, Some(_)) => false,
            },
        },
    ];
    Ok(Outcome {
        controls: *c,
        arrivals,
        crash_ms: crash,
        end_ms: end,
        phi,
        mean_ms: mean,
        std_dev_ms: var.sqrt(),
        phi_verdicts: phi_v,
        fixed,
        checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_audit_cases_pass_the_seeds_checks_and_are_deterministic() {
        for (label, c) in Controls::audit_cases() {
            let out = run(&c).unwrap();
            assert!(out.checks.iter().all(|k| k.passed), "{label}: {:?}", out.checks);
            assert_eq!(out, run(&c).unwrap(), "{label}: the same controls give the same outcome");
            // The crash is at 26 s and both detectors speak after it, within
            // what is shown.
            for v in [&out.phi_verdicts, &out.fixed] {
                let d = v.detection_ms.unwrap();
                assert!(d >= 0.0 && out.crash_ms + d <= out.end_ms, "{label}: {d}");
            }
            // The fixed timeout suspects exactly `timeout` after the last
            // arrival before the crash (unless a suspicion was already open).
            let last = out.arrivals.last().unwrap();
            let fixed = out.fixed.suspicions.last().unwrap().start;
            assert!((fixed - (last + c.fixed_timeout)).abs() < 1e-3 || fixed < out.crash_ms, "{label}");
        }
    }

    #[test]
    fn a_lower_threshold_never_detects_later_or_with_fewer_false_suspicions() {
        let c = Controls::audit_cases()[0].1;
        let low = run(&Controls { phi_threshold: 2.0, ..c }).unwrap();
        let high = run(&Controls { phi_threshold: 8.0, ..c }).unwrap();
        assert!(low.phi_verdicts.detection_ms.unwrap() <= high.phi_verdicts.detection_ms.unwrap());
        assert!(low.phi_verdicts.false_episodes >= high.phi_verdicts.false_episodes);
    }

    #[test]
    fn controls_out_of_range_are_named() {
        let c = Controls::audit_cases()[0].1;
        for (bad, name) in [
            (Controls { heartbeat: 0.0, ..c }, "heartbeat"),
            (Controls { jitter: 5000.0, ..c }, "jitter"),
            (Controls { pause_chance: f64::NAN, ..c }, "pause_chance"),
            (Controls { phi_threshold: f64::INFINITY, ..c }, "phi_threshold"),
            (Controls { fixed_timeout: -1.0, ..c }, "fixed_timeout"),
        ] {
            assert_eq!(run(&bad).unwrap_err().control, name);
        }
        // The smallest period stays small: a heartbeat every 50 ms until the
        // crash at 26 s is 520 of them.
        let fast = run(&Controls { heartbeat: 50.0, jitter: 0.0, pause_chance: 0.0, ..c }).unwrap();
        assert_eq!(fast.arrivals.len(), 520);
    }
}
