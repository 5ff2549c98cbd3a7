//! Seeded scenarios: heartbeat traces generated from a description of the
//! sender and the network.
//!
//! A [`Scenario`] describes one sender watched by one observer:
//!
//! - **Sending.** A heartbeat every `period_ms`. `jitter` offsets each send
//!   from its nominal time (a uniform draw in ±`ms`, or a normal one with
//!   `sd_ms`); offsets do not accumulate. `sender_pauses` hold a heartbeat
//!   back (a GC-like stall of the sender): with probability `chance` per
//!   heartbeat, the send is delayed by a uniform draw in `[min_ms, max_ms]`,
//!   and the schedule resumes from the delayed send.
//! - **Network.** Each heartbeat's delay is drawn from its phase's
//!   [`Delay`]. Phases follow one another after a number of heartbeats; a
//!   phase may ramp in from the previous one over `ramp_beats` heartbeats
//!   (parameters interpolated linearly for two delays of the same family,
//!   samples mixed `(1 − f)·old + f·new` otherwise). `loss` drops heartbeats,
//!   independently (Bernoulli) or in bursts (Gilbert–Elliott).
//! - **Receiver.** `receiver_stalls` freeze the observer: with probability
//!   `chance` per heartbeat a stall begins somewhere in that heartbeat's
//!   period and lasts a uniform draw in `[min_ms, max_ms]`; heartbeats that
//!   arrive during it are delivered when it ends.
//! - **Order.** `reorder` decides what overtaken heartbeats do:
//!   `force-monotonic` delays each arrival to no earlier than the one sent
//!   before it (seed 001's rule), `drop-stale` discards a heartbeat that
//!   arrives after a later one, `keep` delivers everything in arrival order.
//! - **Crash.** `after-last-beat` (the default: the sender dies right after
//!   sending its last heartbeat, which is the crash time), `{ at-ms = T }`
//!   (no heartbeat is sent at or after T), or `none`.
//!
//! Trace `i` of a run with seed `s` is generated from its own ChaCha8 stream
//! (`seed_from_u64(s)`, stream `i`), so a trace does not depend on how many
//! others are generated, or on which thread.
//!
//! Scenarios are built in by name ([`builtin`], [`BUILTIN`]) or read from
//! TOML ([`Scenario::from_toml`]):
//!
//! ```
//! use vigil_lab::scenario::Scenario;
//!
//! let s = Scenario::from_toml(r#"
//!     name = "two-regimes"
//!     period_ms = 100
//!     traces = 10
//!     [[phases]]
//!     beats = 50
//!     delay = { kind = "normal", mean_ms = 10, sd_ms = 3 }
//!     [[phases]]
//!     beats = 50
//!     ramp_beats = 10
//!     delay = { kind = "lognormal", median_ms = 40, sigma = 0.6 }
//! "#)?;
//! let traces = s.generate(7, 10);
//! assert_eq!(traces.len(), 10);
//! assert_eq!(traces[0].beats.len(), 100);
//! assert_eq!(traces, s.generate(7, 10));
//! # Ok::<(), vigil_lab::scenario::ScenarioError>(())
//! ```

use std::fmt;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};
use vigil_detector::Instant;

use crate::dist::Delay;
use crate::trace::{Beat, Trace};

/// A scenario that could not be read or is not valid: which scenario, which
/// field (as the TOML file names it, `phases[0].delay`), and what is wrong.
///
/// ```
/// use vigil_lab::scenario::Scenario;
///
/// let e = Scenario::from_toml("name = 'x'\nperiod_ms = 0\n[[phases]]\nbeats = 5\ndelay = { kind = 'constant', ms = 1 }")
///     .unwrap_err();
/// assert_eq!(e.field.as_deref(), Some("period_ms"));
/// assert!(e.to_string().starts_with("scenario 'x': period_ms must be a positive number"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScenarioError {
    /// The scenario's name, once known.
    pub scenario: Option<String>,
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// What is wrong (beginning with the field, when there is one).
    pub message: String,
}

impl ScenarioError {
    /// An error not about one field.
    fn new(message: impl Into<String>) -> ScenarioError {
        ScenarioError { scenario: None, field: None, message: message.into() }
    }

    /// An error about `field`; the message is `field` followed by `what`.
    fn field(field: &str, what: impl fmt::Display) -> ScenarioError {
        ScenarioError { scenario: None, field: Some(field.into()), message: format!("{field} {what}") }
    }

    /// The same error, in scenario `name`.
    fn in_scenario(mut self, name: &str) -> ScenarioError {
        self.scenario = Some(name.into());
        self
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.scenario {
            Some(name) => write!(f, "scenario '{name}': {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// Offsets of each send from its nominal time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Jitter {
    /// Sends are exactly on schedule.
    #[default]
    None,
    /// A uniform offset in ±`ms`.
    Uniform {
        /// Half-width of the offset, ms.
        ms: f64,
    },
    /// A normal offset with standard deviation `sd_ms`.
    Normal {
        /// Standard deviation, ms.
        sd_ms: f64,
    },
}

/// Which heartbeats the network loses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Loss {
    /// None.
    #[default]
    None,
    /// Each heartbeat independently, with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Gilbert–Elliott bursts: a good and a bad state with their own loss
    /// probabilities; per heartbeat the chain moves good→bad with
    /// `p_enter_bad` and bad→good with `p_leave_bad` (mean burst length
    /// 1/`p_leave_bad` heartbeats).
    GilbertElliott {
        /// Good → bad, per heartbeat.
        p_enter_bad: f64,
        /// Bad → good, per heartbeat.
        p_leave_bad: f64,
        /// Loss probability in the good state.
        loss_good: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
    },
}

/// Random stalls: with probability `chance` per heartbeat, one of
/// `[min_ms, max_ms]` (uniform).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pauses {
    /// Probability per heartbeat.
    pub chance: f64,
    /// Shortest stall, ms.
    pub min_ms: f64,
    /// Longest stall, ms.
    pub max_ms: f64,
}

/// What overtaken heartbeats do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Reorder {
    /// Each arrival is delayed to no earlier than the previous heartbeat's.
    #[default]
    ForceMonotonic,
    /// A heartbeat arriving after a later-sent one is dropped.
    DropStale,
    /// Everything is delivered, in arrival order.
    Keep,
}

/// When the sender crashes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Crash {
    /// Right after sending its last heartbeat.
    #[default]
    AfterLastBeat,
    /// At this time (ms): nothing is sent at or after it.
    AtMs(f64),
    /// Never.
    None,
}

/// A stretch of heartbeats with one delay distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Heartbeats sent in this phase.
    pub beats: u64,
    /// Their network delay.
    pub delay: Delay,
    /// Heartbeats over which the delay ramps in from the previous phase's
    /// (0: a step).
    #[serde(default)]
    pub ramp_beats: u64,
}

/// A description of a sender, a network and an observer; see the module
/// documentation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name, as reports show it.
    pub name: String,
    /// One line on what it is.
    #[serde(default)]
    pub description: String,
    /// Traces generated by default.
    #[serde(default = "default_traces")]
    pub traces: usize,
    /// Heartbeat period, ms.
    pub period_ms: f64,
    /// Send-time jitter.
    #[serde(default)]
    pub jitter: Jitter,
    /// Delay phases, in order; their heartbeats add up to the trace length.
    pub phases: Vec<Phase>,
    /// Loss.
    #[serde(default)]
    pub loss: Loss,
    /// Sender pauses.
    #[serde(default)]
    pub sender_pauses: Option<Pauses>,
    /// Receiver stalls.
    #[serde(default)]
    pub receiver_stalls: Option<Pauses>,
    /// Reordering policy.
    #[serde(default)]
    pub reorder: Reorder,
    /// Crash.
    #[serde(default)]
    pub crash: Crash,
}

fn default_traces() -> usize {
    200
}

fn probability(name: &str, p: f64) -> Result<(), ScenarioError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(ScenarioError::field(name, format!("must be a probability in [0, 1], got {p}")))
    }
}

/// The longest duration any one field of a scenario may give, in ms (about
/// 11.6 days): long enough for any heartbeat period or pause, and short
/// enough that a trace of [`MAX_BEATS`] heartbeats stays within the times an
/// `vigil_detector::Instant` can hold.
pub const MAX_FIELD_MS: f64 = 1e9;

/// The longest a trace may span, in ms (about 31.7 years): every heartbeat
/// sent at its period plus its longest pause. Times up to about 584 years
/// fit an `Instant`, so sends, delays and stalls stay well inside it.
pub const MAX_SPAN_MS: f64 = 1e12;

/// The probability of a delay beyond [`MAX_FIELD_MS`] above which a delay
/// distribution is refused: a delay of more than 11.6 days is an outage, not
/// a delay. Rarer samples beyond it are capped at it.
pub const MAX_LONG_DELAY_CHANCE: f64 = 1e-6;

/// A duration field in ms: finite, 0 or more, at most [`MAX_FIELD_MS`].
fn field_ms(name: &str, v: f64) -> Result<(), ScenarioError> {
    if v.is_finite() && (0.0..=MAX_FIELD_MS).contains(&v) {
        Ok(())
    } else {
        Err(ScenarioError::field(name, format!("must be 0 to {MAX_FIELD_MS:e} ms, got {v:e}")))
    }
}

impl Pauses {
    fn validate(&self, what: &str) -> Result<(), ScenarioError> {
        probability(&format!("{what}.chance"), self.chance)?;
        field_ms(&format!("{what}.min_ms"), self.min_ms)?;
        field_ms(&format!("{what}.max_ms"), self.max_ms)?;
        if self.max_ms < self.min_ms {
            return Err(ScenarioError::field(
                &format!("{what}.min_ms"),
                format!("must be at most max_ms (got {} and {})", self.min_ms, self.max_ms),
            ));
        }
        Ok(())
    }

    fn draw(&self, rng: &mut ChaCha8Rng) -> Option<f64> {
        if self.chance > 0.0 && rng.random::<f64>() < self.chance {
            Some(if self.max_ms > self.min_ms { rng.random_range(self.min_ms..=self.max_ms) } else { self.min_ms })
        } else {
            None
        }
    }
}

/// Stalls `(begin, end)` sorted and merged where they overlap or touch:
/// what an arrival waits for is then one interval.
fn merge_stalls(mut stalls: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    stalls.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(stalls.len());
    for (b, e) in stalls {
        match merged.last_mut() {
            Some(last) if b <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((b, e)),
        }
    }
    merged
}

/// When an arrival at `t` is seen, given merged stalls: at the end of the
/// stall it falls in, if any.
fn released(merged: &[(f64, f64)], t: f64) -> f64 {
    let i = merged.partition_point(|&(b, _)| b <= t);
    match i.checked_sub(1).and_then(|i| merged.get(i)) {
        Some(&(_, e)) if t < e => e,
        _ => t,
    }
}

/// The largest number of heartbeats a scenario may send per trace.
pub const MAX_BEATS: u64 = 10_000_000;

impl Scenario {
    /// Parses and validates a scenario written in TOML.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario = toml::from_str(text).map_err(|e| ScenarioError::new(format!("not a valid scenario: {e}")))?;
        s.validate()?;
        Ok(s)
    }

    /// The scenario as TOML (parsing it gives the same scenario).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Checks every field; the error names the one at fault.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let named = |e: ScenarioError| e.in_scenario(&self.name);
        let err = |field: &str, what: String| Err(ScenarioError::field(field, what).in_scenario(&self.name));
        if !(self.period_ms.is_finite() && self.period_ms > 0.0 && self.period_ms <= MAX_FIELD_MS) {
            return err(
                "period_ms",
                format!(
                    "must be a positive number of milliseconds, at most {MAX_FIELD_MS:e}, got {:e}",
                    self.period_ms
                ),
            );
        }
        if self.phases.is_empty() {
            return err("phases", "needs at least one [[phases]] entry".into());
        }
        let total: u64 = self.phases.iter().map(|p| p.beats).fold(0, u64::saturating_add);
        if total == 0 || total > MAX_BEATS {
            return err("phases", format!("send {total} heartbeats; between 1 and {MAX_BEATS} are allowed"));
        }
        for (i, p) in self.phases.iter().enumerate() {
            let field = format!("phases[{i}].delay");
            if let Err(e) = p.delay.validate() {
                return err(&field, format!("is not valid: {e}"));
            }
            let long = p.delay.sf(MAX_FIELD_MS);
            if long.is_nan() || long > MAX_LONG_DELAY_CHANCE {
                return err(
                    &field,
                    format!(
                        "is {}, which would exceed {MAX_FIELD_MS:e} ms (11.6 days) with probability {long:.3e}; at \
                         most {MAX_LONG_DELAY_CHANCE:e} is allowed",
                        p.delay.describe()
                    ),
                );
            }
        }
        match self.jitter {
            Jitter::None => {}
            Jitter::Uniform { ms: v } | Jitter::Normal { sd_ms: v } => field_ms("jitter", v).map_err(named)?,
        }
        let check = |r: Result<(), ScenarioError>| r.map_err(named);
        match self.loss {
            Loss::None => {}
            Loss::Bernoulli { p } => check(probability("loss.p", p))?,
            Loss::GilbertElliott { p_enter_bad, p_leave_bad, loss_good, loss_bad } => {
                check(probability("loss.p_enter_bad", p_enter_bad))?;
                check(probability("loss.p_leave_bad", p_leave_bad))?;
                check(probability("loss.loss_good", loss_good))?;
                check(probability("loss.loss_bad", loss_bad))?;
            }
        }
        if let Some(p) = &self.sender_pauses {
            check(p.validate("sender_pauses"))?;
        }
        if let Some(p) = &self.receiver_stalls {
            check(p.validate("receiver_stalls"))?;
        }
        // The span: every heartbeat at its period plus its longest pause.
        let longest_pause = self.sender_pauses.as_ref().map_or(0.0, |p| if p.chance > 0.0 { p.max_ms } else { 0.0 });
        let span = total as f64 * (self.period_ms + longest_pause.max(0.0));
        if span.is_nan() || span > MAX_SPAN_MS {
            return err(
                "phases",
                format!(
                    "send {total} heartbeats every {} ms{}, which could span {span:.3e} ms; a trace may span at most \
                     {MAX_SPAN_MS:e} ms (about 31.7 years)",
                    self.period_ms,
                    if longest_pause > 0.0 {
                        format!(" with pauses up to {longest_pause:e} ms")
                    } else {
                        String::new()
                    }
                ),
            );
        }
        if let Crash::AtMs(t) = self.crash
            && !(t.is_finite() && (0.0..=MAX_SPAN_MS).contains(&t))
        {
            return err("crash.at-ms", format!("must be 0 to {MAX_SPAN_MS:e} ms, got {t:e}"));
        }
        if self.traces == 0 {
            return err("traces", "must be at least 1".into());
        }
        Ok(())
    }

    /// Heartbeats sent per trace (before any crash time cuts them short).
    pub fn beats(&self) -> u64 {
        self.phases.iter().map(|p| p.beats).sum()
    }

    /// Generates `count` traces from `seed`, in parallel; trace `i` is the
    /// same whatever `count` is. The scenario must be valid.
    pub fn generate(&self, seed: u64, count: usize) -> Vec<Trace> {
        use rayon::prelude::*;
        (0..count).into_par_iter().map(|i| self.trace(seed, i as u64)).collect()
    }

    /// Generates trace number `index` of the run with `seed`.
    pub fn trace(&self, seed: u64, index: u64) -> Trace {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(index);
        self.generate_one(&mut rng)
    }

    fn delay_for(&self, beat: u64, rng: &mut ChaCha8Rng) -> f64 {
        let mut first = 0;
        let mut prev: Option<&Phase> = None;
        for phase in &self.phases {
            if beat < first + phase.beats {
                let offset = beat - first;
                if let Some(old) = prev
                    && offset < phase.ramp_beats
                {
                    let f = (offset + 1) as f64 / phase.ramp_beats as f64;
                    return match old.delay.interpolate(&phase.delay, f) {
                        Some(d) => d.sample(rng),
                        None => {
                            let (a, b) = (old.delay.sample(rng), phase.delay.sample(rng));
                            (1.0 - f) * a + f * b
                        }
                    };
                }
                return phase.delay.sample(rng);
            }
            first += phase.beats;
            prev = Some(phase);
        }
        self.phases.last().map_or(0.0, |p| p.delay.sample(rng))
    }

    fn generate_one(&self, rng: &mut ChaCha8Rng) -> Trace {
        let total = self.beats();
        let crash_at = match self.crash {
            Crash::AtMs(t) => Some(t),
            _ => None,
        };
        // (send, arrival, seq), in send order; arrival None when lost.
        let mut sent: Vec<(f64, Option<f64>, u64)> = Vec::with_capacity(total as usize);
        let mut stalls: Vec<(f64, f64)> = Vec::new();
        let mut nominal = 0.0f64;
        let mut last_send = f64::NEG_INFINITY;
        let mut bad = false;
        let normal_jitter = match self.jitter {
            Jitter::Normal { sd_ms } if sd_ms > 0.0 => Normal::new(0.0, sd_ms).ok(),
            _ => None,
        };
        for i in 0..total {
            if i > 0 {
                nominal += self.period_ms;
            }
            if let Some(p) = &self.sender_pauses
                && let Some(hold) = p.draw(rng)
            {
                nominal += hold;
            }
            let offset = match self.jitter {
                Jitter::None => 0.0,
                Jitter::Uniform { ms } if ms > 0.0 => rng.random_range(-ms..=ms),
                Jitter::Uniform { .. } => 0.0,
                Jitter::Normal { .. } => normal_jitter.map_or(0.0, |n| n.sample(rng)),
            };
            // Sends stay in order and never go below zero.
            let send = (nominal + offset).max(last_send).max(0.0);
            if crash_at.is_some_and(|c| send >= c) {
                break;
            }
            last_send = send;
            if let Some(st) = &self.receiver_stalls
                && let Some(len) = st.draw(rng)
            {
                let begin = send + rng.random::<f64>() * self.period_ms;
                stalls.push((begin, begin + len));
            }
            let lost = match self.loss {
                Loss::None => false,
                Loss::Bernoulli { p } => rng.random::<f64>() < p,
                Loss::GilbertElliott { p_enter_bad, p_leave_bad, loss_good, loss_bad } => {
                    let flip = rng.random::<f64>();
                    bad = if bad { flip >= p_leave_bad } else { flip < p_enter_bad };
                    rng.random::<f64>() < if bad { loss_bad } else { loss_good }
                }
            };
            // Validation keeps delays beyond MAX_FIELD_MS below one in a
            // million; the rare one is capped there.
            let delay = self.delay_for(i, rng).clamp(0.0, MAX_FIELD_MS);
            sent.push((send, (!lost).then_some(send + delay), i));
        }
        // Receiver stalls: an arrival inside a stall waits for its end, and
        // one that ends inside the next stall waits for that one too. Stalls
        // that overlap or touch are merged into one, so each arrival finds
        // its stall by binary search (linear in the stalls, not quadratic).
        let merged = merge_stalls(stalls);
        let stalled = |t: f64| released(&merged, t);
        let mut arrivals: Vec<(f64, f64, u64)> =
            sent.iter().filter_map(|&(s, a, q)| a.map(|a| (s, stalled(a), q))).collect();
        match self.reorder {
            Reorder::ForceMonotonic => {
                let mut floor = f64::NEG_INFINITY;
                for a in &mut arrivals {
                    a.1 = a.1.max(floor);
                    floor = a.1;
                }
            }
            Reorder::Keep => arrivals.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.2.cmp(&b.2))),
            Reorder::DropStale => {
                arrivals.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.2.cmp(&b.2)));
                let mut newest: Option<u64> = None;
                arrivals.retain(|a| {
                    let fresh = newest.is_none_or(|n| a.2 > n);
                    if fresh {
                        newest = Some(a.2);
                    }
                    fresh
                });
            }
        }
        let ns = |ms: f64| Instant::from_nanos((ms * 1e6).round().max(0.0) as u64);
        let beats: Vec<Beat> =
            arrivals.iter().map(|&(s, a, q)| Beat { arrival: ns(a), sent: Some(ns(s)), seq: Some(q) }).collect();
        let crash = match self.crash {
            Crash::AfterLastBeat => sent.last().map(|&(s, _, _)| ns(s)),
            Crash::AtMs(t) => Some(ns(t)),
            Crash::None => None,
        };
        Trace { beats, crash, end: None }
    }
}

fn normal(mean_ms: f64, sd_ms: f64) -> Delay {
    Delay::Normal { mean_ms, sd_ms }
}

fn phase(beats: u64, delay: Delay) -> Phase {
    Phase { beats, delay, ramp_beats: 0 }
}

fn base(name: &str, description: &str, period_ms: f64, phases: Vec<Phase>) -> Scenario {
    Scenario {
        name: name.into(),
        description: description.into(),
        traces: 200,
        period_ms,
        jitter: Jitter::None,
        phases,
        loss: Loss::None,
        sender_pauses: None,
        receiver_stalls: None,
        reorder: Reorder::ForceMonotonic,
        crash: Crash::AfterLastBeat,
    }
}

/// Seed 002's four paths: heartbeat period, jitter, pause chance (percent per
/// heartbeat) and pause size, with the crash at 26 s.
fn seed002(name: &str, label: &str, heartbeat: f64, jitter: f64, pause_chance: f64, pause_size: f64) -> Scenario {
    seed002_path(name, label, heartbeat, jitter, pause_chance, pause_size)
}

/// A path in the manner of seed 002's lab: a heartbeat every `heartbeat` ms,
/// each send offset uniformly within ±`jitter` ms, a `pause_chance` percent
/// chance per heartbeat of a sender pause of half to all of `pause_size` ms,
/// and the crash at 26 s ([`SEED002_CRASH_MS`]). The built-in `noisy`,
/// `quiet`, `bursty` and `very-noisy` scenarios are its four audit cases.
///
/// ```
/// let s = vigil_lab::scenario::seed002_path("mine", "my path", 500.0, 50.0, 5.0, 1000.0);
/// let t = s.trace(1, 0);
/// assert!(t.beats.iter().all(|b| b.arrival.as_millis_f64() < 26_000.0));
/// assert_eq!(t.crash.unwrap().as_millis_f64(), 26_000.0);
/// ```
pub fn seed002_path(
    name: &str,
    label: &str,
    heartbeat: f64,
    jitter: f64,
    pause_chance: f64,
    pause_size: f64,
) -> Scenario {
    let mut s = base(
        name,
        &format!(
            "seed 002's {label}: a heartbeat every {heartbeat} ms, ±{jitter} ms jitter, a {pause_chance}% chance per \
             heartbeat of a sender pause of {} to {pause_size} ms, crash at 26 s",
            pause_size / 2.0
        ),
        heartbeat,
        vec![phase((SEED002_CRASH_MS / heartbeat).ceil() as u64 + 1, Delay::Constant { ms: 0.0 })],
    );
    s.jitter = Jitter::Uniform { ms: jitter };
    s.sender_pauses = Some(Pauses { chance: pause_chance / 100.0, min_ms: pause_size / 2.0, max_ms: pause_size });
    s.crash = Crash::AtMs(SEED002_CRASH_MS);
    s
}

/// When seed 002's peer crashes, in milliseconds.
pub const SEED002_CRASH_MS: f64 = 26_000.0;

/// The names of the built-in scenarios.
pub const BUILTIN: [&str; 11] = [
    "regime-change",
    "ramp",
    "calm",
    "congested",
    "noisy",
    "quiet",
    "bursty",
    "very-noisy",
    "gc-pauses",
    "heavy-tail",
    "bursty-loss",
];

/// The default ramp length of the built-in `ramp` scenario, in heartbeats.
pub const DEFAULT_RAMP_BEATS: u64 = 30;

/// A built-in scenario by name. `ramp` takes its length as `ramp:N` (default
/// [`DEFAULT_RAMP_BEATS`]).
///
/// ```
/// let s = vigil_lab::scenario::builtin("regime-change").unwrap();
/// assert_eq!((s.period_ms, s.beats(), s.traces), (100.0, 100, 200));
/// assert_eq!(vigil_lab::scenario::builtin("ramp:10").unwrap().phases[1].ramp_beats, 10);
/// ```
pub fn builtin(name: &str) -> Result<Scenario, ScenarioError> {
    let calm = || normal(10.0, 3.0);
    let congested = || normal(80.0, 40.0);
    let (head, arg) = match name.split_once(':') {
        Some((h, a)) => (h, Some(a)),
        None => (name, None),
    };
    if arg.is_some() && head != "ramp" {
        return Err(ScenarioError::new(format!("scenario '{head}' takes no argument (only ramp:N does)")));
    }
    Ok(match head {
        "regime-change" => base(
            "regime-change",
            "seed 001: a heartbeat every 100 ms; delay N(10, 3) ms for 40 beats, N(80, 40) for 30, N(10, 3) for 30; \
             the sender dies after beat 100",
            100.0,
            vec![phase(40, calm()), phase(30, congested()), phase(30, calm())],
        ),
        "ramp" => {
            let beats = match arg {
                None => DEFAULT_RAMP_BEATS,
                Some(a) => {
                    a.trim_start_matches("beats=").parse::<u64>().ok().filter(|&b| b <= 30).ok_or_else(|| {
                        ScenarioError::new(format!("ramp:{a}: expected a number of heartbeats from 0 to 30"))
                    })?
                }
            };
            let mut s = base(
                &format!("ramp:{beats}"),
                &format!("seed 001 §6.4: regime-change with the congestion ramped in over {beats} heartbeats"),
                100.0,
                vec![phase(40, calm()), Phase { beats: 30, delay: congested(), ramp_beats: beats }, phase(30, calm())],
            );
            s.name = if arg.is_none() { "ramp".into() } else { s.name };
            s
        }
        "calm" => base(
            "calm",
            "seed 001 §6.5: N(10, 3) ms delay throughout, 100 beats, then a crash",
            100.0,
            vec![phase(100, calm())],
        ),
        "congested" => base(
            "congested",
            "seed 001 §6.5: N(80, 40) ms delay throughout, 100 beats, then a crash",
            100.0,
            vec![phase(100, congested())],
        ),
        "noisy" => seed002("noisy", "default noisy path", 1000.0, 140.0, 10.0, 1800.0),
        "quiet" => seed002("quiet", "quiet path", 800.0, 60.0, 3.0, 900.0),
        "bursty" => seed002("bursty", "bursty path", 1200.0, 260.0, 12.0, 2400.0),
        "very-noisy" => seed002("very-noisy", "very noisy path", 1500.0, 450.0, 18.0, 3200.0),
        "gc-pauses" => {
            let mut s = base(
                "gc-pauses",
                "a heartbeat every 100 ms over N(10, 3) ms delay, 1,200 beats; 0.5% of heartbeats are held by a \
                 200–1,000 ms sender pause and the observer stalls for 100–500 ms with 0.2% chance per heartbeat",
                100.0,
                vec![phase(1200, calm())],
            );
            s.sender_pauses = Some(Pauses { chance: 0.005, min_ms: 200.0, max_ms: 1000.0 });
            s.receiver_stalls = Some(Pauses { chance: 0.002, min_ms: 100.0, max_ms: 500.0 });
            s
        }
        "heavy-tail" => {
            let mut s = base(
                "heavy-tail",
                "a heartbeat every 100 ms; 600 beats of lognormal delay (median 20 ms, σ 0.8), then 600 of Pareto \
                 delay (scale 10 ms, shape 1.8); overtaken heartbeats dropped as stale",
                100.0,
                vec![
                    phase(600, Delay::LogNormal { median_ms: 20.0, sigma: 0.8 }),
                    phase(600, Delay::Pareto { scale_ms: 10.0, shape: 1.8 }),
                ],
            );
            s.reorder = Reorder::DropStale;
            s
        }
        "bursty-loss" => {
            let mut s = base(
                "bursty-loss",
                "a heartbeat every 100 ms over N(10, 3) ms delay, 1,200 beats; Gilbert–Elliott loss: bursts begin \
                 with 1% chance per heartbeat, last 5 heartbeats on average, lose 90% inside, 0.1% outside",
                100.0,
                vec![phase(1200, calm())],
            );
            s.loss = Loss::GilbertElliott { p_enter_bad: 0.01, p_leave_bad: 0.2, loss_good: 0.001, loss_bad: 0.9 };
            s
        }
        other => {
            return Err(ScenarioError::new(format!(
                "no built-in scenario '{other}' (built in: {}; or give a TOML file)",
                BUILTIN.join(", ")
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_is_valid_and_round_trips_through_toml() {
        for name in BUILTIN {
            let s = builtin(name).unwrap();
            s.validate().unwrap();
            let back = Scenario::from_toml(&s.to_toml()).unwrap();
            assert_eq!(back, s, "{name}");
        }
    }

    #[test]
    fn regime_change_matches_seed_001() {
        let s = builtin("regime-change").unwrap();
        let traces = s.generate(1, 200);
        assert_eq!(traces.len(), 200);
        for t in &traces {
            assert_eq!(t.beats.len(), 100);
            // Sent every 100 ms exactly; crash right after the last send.
            assert_eq!(t.beats[99].sent, Some(Instant::from_millis(9_900)));
            assert_eq!(t.crash, Some(Instant::from_millis(9_900)));
            assert_eq!(t.first_missing_due(), Some(Instant::from_millis(10_000)));
            assert!(t.beats.windows(2).all(|w| w[0].arrival <= w[1].arrival));
        }
        // Delays by phase: mean of N(10, 3) over 200 × 70 calm draws, and of
        // N(80, 40) (clamped at 0: mean 80.2) over 200 × 30; 5 standard errors.
        let delay =
            |t: &Trace, i: usize| (t.beats[i].arrival.as_nanos() - t.beats[i].sent.unwrap().as_nanos()) as f64 / 1e6;
        let calm: Vec<f64> = traces.iter().flat_map(|t| (0..40).map(move |i| delay(t, i))).collect();
        let mean = calm.iter().sum::<f64>() / calm.len() as f64;
        assert!((mean - 10.0).abs() < 5.0 * 3.0 / (calm.len() as f64).sqrt(), "{mean}");
        // Forced monotonic arrivals can only add delay in the congested phase.
        let cong: Vec<f64> = traces.iter().flat_map(|t| (40..70).map(move |i| delay(t, i))).collect();
        let mean = cong.iter().sum::<f64>() / cong.len() as f64;
        assert!(mean > 80.0 - 5.0 * 40.0 / (cong.len() as f64).sqrt() && mean < 95.0, "{mean}");
    }

    #[test]
    fn traces_depend_on_seed_and_index_only() {
        let s = builtin("bursty-loss").unwrap();
        let a = s.generate(9, 5);
        let b = s.generate(9, 3);
        assert_eq!(&a[..3], &b[..]);
        assert_eq!(a[4], s.trace(9, 4));
        assert_ne!(a[0], s.generate(10, 1)[0]);
    }

    #[test]
    fn seed_002_paths_crash_at_26_s() {
        for name in ["noisy", "quiet", "bursty", "very-noisy"] {
            let s = builtin(name).unwrap();
            for t in s.generate(3, 20) {
                assert_eq!(t.crash, Some(Instant::from_millis(26_000)));
                assert!(t.beats.iter().all(|b| b.sent.unwrap() < Instant::from_millis(26_000)));
                // Even if every heartbeat were held by the longest pause and
                // jittered late, 26 s fits more than 26000 / (P + J + pause)
                // of them: at least 5 on the very noisy path.
                let worst = s.period_ms + 3200.0 + 450.0;
                assert!(t.beats.len() as f64 >= (26_000.0 / worst).floor(), "{name}: {}", t.beats.len());
            }
        }
    }

    #[test]
    fn loss_rates_match_their_parameters() {
        let mut s = builtin("calm").unwrap();
        s.phases[0].beats = 20_000;
        s.loss = Loss::Bernoulli { p: 0.1 };
        let t = s.trace(1, 0);
        let lost = 20_000 - t.beats.len();
        // Binomial(20000, 0.1): sd 42.4; 5 sd.
        assert!((lost as f64 - 2000.0).abs() < 5.0 * 42.4, "{lost}");
        let ge = builtin("bursty-loss").unwrap();
        let mut s = ge.clone();
        s.phases[0].beats = 200_000;
        let t = s.trace(1, 0);
        // Stationary bad fraction 0.01/(0.01+0.2) = 0.0476; loss
        // 0.0476·0.9 + 0.9524·0.001 = 0.0438. Bursty, so allow ±15%.
        let rate = 1.0 - t.beats.len() as f64 / 200_000.0;
        assert!((rate - 0.0438).abs() < 0.15 * 0.0438, "{rate}");
    }

    #[test]
    fn merged_stalls_release_arrivals_as_scanning_every_stall_does() {
        // The rule: scan stalls in order of their start; an arrival inside
        // one waits for its end, and then for any stall it lands in next.
        let scan = |stalls: &[(f64, f64)], mut t: f64| {
            let mut sorted = stalls.to_vec();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            for &(b, e) in &sorted {
                if b > t {
                    break;
                }
                if t < e {
                    t = e;
                }
            }
            t
        };
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for _ in 0..200 {
            let stalls: Vec<(f64, f64)> = (0..rng.random_range(0..30))
                .map(|_| {
                    let b = rng.random_range(0.0..100.0);
                    (b, b + rng.random_range(0.0..10.0))
                })
                .collect();
            let merged = merge_stalls(stalls.clone());
            for _ in 0..50 {
                let t = rng.random_range(-5.0..120.0);
                assert_eq!(released(&merged, t), scan(&stalls, t), "{stalls:?} at {t}");
            }
            // The stalls' own edges too.
            for &(b, e) in &stalls {
                assert_eq!(released(&merged, b), scan(&stalls, b));
                assert_eq!(released(&merged, e), scan(&stalls, e));
            }
        }
    }

    #[test]
    fn stalls_and_stale_drops_and_ramps() {
        let mut s = builtin("calm").unwrap();
        s.phases[0].beats = 2_000;
        s.receiver_stalls = Some(Pauses { chance: 0.05, min_ms: 300.0, max_ms: 300.0 });
        let t = s.trace(2, 0);
        // Stalls bunch arrivals: some arrive together at a stall's end.
        assert!(t.beats.windows(2).any(|w| w[0].arrival == w[1].arrival));
        let mut s = builtin("congested").unwrap();
        s.reorder = Reorder::DropStale;
        let t = s.trace(2, 0);
        assert!(t.beats.len() < 100);
        assert!(t.beats.windows(2).all(|w| w[0].seq < w[1].seq && w[0].arrival <= w[1].arrival));
        let r = builtin("ramp:10").unwrap();
        assert_eq!(r.phases[1].ramp_beats, 10);
        assert!(builtin("ramp:31").is_err());
        assert!(builtin("calm:3").is_err());
        assert!(builtin("nope").unwrap_err().to_string().contains("regime-change"));
    }

    #[test]
    fn bad_toml_is_named() {
        let err = Scenario::from_toml(
            "name = 'x'\nperiod_ms = -1\n[[phases]]\nbeats = 3\ndelay = { kind = 'constant', ms = 1 }",
        )
        .unwrap_err();
        assert!(err.to_string().contains("period_ms"), "{err}");
        let err = Scenario::from_toml("name = 'x'\nperiod_ms = 1\nphases = []\nbogus = 1").unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
        let err = Scenario::from_toml(
            "name = 'x'\nperiod_ms = 1\n[loss]\nkind = 'bernoulli'\np = 2\n[[phases]]\nbeats = 3\ndelay = { kind = 'constant', ms = 1 }",
        )
        .unwrap_err();
        assert!(err.to_string().contains("loss.p"), "{err}");
    }
}
