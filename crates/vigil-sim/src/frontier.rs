//! The frontier: both protocols across their main knobs, each setting
//! measured on what it costs (messages and bytes per member-second in steady
//! state), how fast it detects a crash, and how often it is wrong under
//! loss.
//!
//! For each setting, [`FrontierSpec::crash_runs`] runs crash one member
//! after a steady stretch (each its own seed); the detection figure is the
//! median over every survivor of every run, and the cost is the steady
//! stretch's. One more run puts [`FrontierSpec::loss`] on every link for
//! [`FrontierSpec::loss_duration`] and counts false suspicions and deaths.
//! Then, for every classic setting, the fastest φ setting is found that
//! costs no more messages and no more bytes, raises no more false
//! suspicions, and detects in at most half the time.
//!
//! Runs are spread over threads; every run's seed comes from the spec's seed
//! and the run's place in the grid, so the result does not depend on the
//! number of threads.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use vigil_sim::frontier::{self, ClassicSetting, FrontierSpec, PhiSetting, Setting};
//!
//! // Two settings on six members, one short crash run and one loss run each.
//! let mut spec = FrontierSpec::new(6);
//! spec.crash_runs = 1;
//! spec.crash_at = Duration::from_secs(30);
//! spec.crash_run = Duration::from_secs(60);
//! spec.loss_duration = Duration::from_secs(20);
//! spec.settings = vec![
//!     Setting::Phi(PhiSetting { heartbeat: Duration::from_millis(525), observers: 1, suspect_level: 8.0 }),
//!     Setting::Classic(ClassicSetting { probe_interval: Duration::from_secs(1), suspicion_mult: 4 }),
//! ];
//! let result = frontier::run(&spec, &|_, _| {})?;
//! assert_eq!(result.points.len(), 2);
//! assert!(result.points.iter().all(|p| p.detected_by_all));
//! # Ok::<(), vigil_sim::SimError>(())
//! ```

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;
use vigil_membership::Config;

use crate::fault::{Fault, Timed};
use crate::preset::CLUSTER;
use crate::report::median;
use crate::scenario::Scenario;
use crate::sim::{Sim, SimError};

/// A φ-mode setting: the LAN preset with its φ timing scaled (see
/// `Config::with_heartbeat_interval`), a number of observers and a suspect
/// level.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::frontier::{PhiSetting, Setting};
///
/// let fast = Setting::Phi(PhiSetting { heartbeat: Duration::from_millis(525), observers: 2, suspect_level: 8.0 });
/// assert_eq!(fast.config().observers, 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PhiSetting {
    /// Heartbeat interval.
    pub heartbeat: Duration,
    /// Observers per member (K).
    pub observers: usize,
    /// The φ level at which observers probe.
    pub suspect_level: f64,
}

/// A classic-mode setting: memberlist's LAN constants with another probe
/// interval and suspicion multiplier. The probe timeout is memberlist's
/// 500 ms, or half the interval if that is shorter.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::frontier::{ClassicSetting, Setting};
///
/// let quick = Setting::Classic(ClassicSetting { probe_interval: Duration::from_millis(500), suspicion_mult: 4 });
/// assert_eq!(quick.config().probe_timeout, Duration::from_millis(250));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClassicSetting {
    /// Probe interval.
    pub probe_interval: Duration,
    /// memberlist's `SuspicionMult`.
    pub suspicion_mult: u32,
}

/// One point of the sweep.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::frontier::{ClassicSetting, Setting};
///
/// let memberlist = Setting::Classic(ClassicSetting { probe_interval: Duration::from_secs(1), suspicion_mult: 4 });
/// assert!(!memberlist.is_phi());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "protocol", rename_all = "kebab-case")]
pub enum Setting {
    /// φ-monitored SWIM.
    Phi(PhiSetting),
    /// Classic SWIM.
    Classic(ClassicSetting),
}

impl Setting {
    /// The protocol configuration.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::frontier::{PhiSetting, Setting};
    ///
    /// let s = Setting::Phi(PhiSetting { heartbeat: Duration::from_secs(2), observers: 3, suspect_level: 12.0 });
    /// let config = s.config();
    /// assert_eq!((config.observers, config.suspect_level), (3, 12.0));
    /// assert!(config.validate().is_ok());
    /// ```
    pub fn config(&self) -> Config {
        match *self {
            Setting::Phi(p) => {
                let mut c = Config::lan(CLUSTER);
                c.suspect_level = p.suspect_level;
                let mut c = c.with_heartbeat_interval(p.heartbeat);
                c.observers = p.observers;
                c
            }
            Setting::Classic(s) => {
                let mut c = Config::classic_lan(CLUSTER);
                c.probe_interval = s.probe_interval;
                c.probe_timeout = c.probe_timeout.min(s.probe_interval / 2);
                c.suspicion_mult = s.suspicion_mult;
                c
            }
        }
    }

    /// A short label: `φ T=1.05s K=2 level=8` or `classic I=1s mult=4`.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::frontier::{ClassicSetting, Setting};
    ///
    /// let s = Setting::Classic(ClassicSetting { probe_interval: Duration::from_secs(1), suspicion_mult: 4 });
    /// assert_eq!(s.label(), "classic I=1s mult=4");
    /// ```
    pub fn label(&self) -> String {
        match self {
            Setting::Phi(p) => {
                format!("φ T={}s K={} level={}", p.heartbeat.as_secs_f64(), p.observers, p.suspect_level)
            }
            Setting::Classic(s) => format!("classic I={}s mult={}", s.probe_interval.as_secs_f64(), s.suspicion_mult),
        }
    }

    /// Whether this is a φ-mode setting.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::frontier::{PhiSetting, Setting};
    ///
    /// let s = Setting::Phi(PhiSetting { heartbeat: Duration::from_secs(1), observers: 2, suspect_level: 8.0 });
    /// assert!(s.is_phi());
    /// ```
    pub fn is_phi(&self) -> bool {
        matches!(self, Setting::Phi(_))
    }
}

/// What to sweep, and how.
///
/// # Example
///
/// ```
/// use vigil_sim::frontier::FrontierSpec;
///
/// let mut spec = FrontierSpec::new(50);
/// spec.crash_runs = 1;
/// spec.threads = 4;
/// assert_eq!(spec.runs(), spec.settings.len() * 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FrontierSpec {
    /// Cluster size.
    pub nodes: usize,
    /// Seed of the first run; each run's is derived from it.
    pub seed: u64,
    /// Crash runs per setting.
    pub crash_runs: usize,
    /// When the member crashes in each crash run (the stretch before it is
    /// the steady cost).
    pub crash_at: Duration,
    /// How long a crash run lasts (long enough for the slowest setting to
    /// detect).
    pub crash_run: Duration,
    /// Loss probability on every link in the loss run.
    pub loss: f64,
    /// How long the loss lasts.
    pub loss_duration: Duration,
    /// Worker threads.
    pub threads: usize,
    /// The settings.
    pub settings: Vec<Setting>,
}

impl FrontierSpec {
    /// The default sweep at `nodes` members: φ with the LAN preset's timing
    /// at ¼, ½, 1, 2, 2½ and 5 times its 1.05 s period, 1 to 3 observers and
    /// suspect levels 4, 8 and 12; classic with probe intervals 0.5, 1, 2
    /// and 5 s and suspicion multipliers 2, 3, 4 and 6. Three crash runs and
    /// 10 % loss for 10 minutes per setting.
    ///
    /// # Example
    ///
    /// ```
    /// use vigil_sim::frontier::FrontierSpec;
    ///
    /// let spec = FrontierSpec::new(100);
    /// // 54 φ settings and 16 classic ones.
    /// assert_eq!(spec.settings.iter().filter(|s| s.is_phi()).count(), 54);
    /// assert_eq!(spec.settings.len(), 70);
    /// ```
    pub fn new(nodes: usize) -> FrontierSpec {
        let mut settings = Vec::new();
        for f in [0.25, 0.5, 1.0, 2.0, 2.5, 5.0] {
            for observers in [1, 2, 3] {
                for suspect_level in [4.0, 8.0, 12.0] {
                    let heartbeat = Duration::from_micros((1_050_000.0 * f) as u64);
                    settings.push(Setting::Phi(PhiSetting { heartbeat, observers, suspect_level }));
                }
            }
        }
        for ms in [500, 1000, 2000, 5000] {
            for suspicion_mult in [2, 3, 4, 6] {
                let probe_interval = Duration::from_millis(ms);
                settings.push(Setting::Classic(ClassicSetting { probe_interval, suspicion_mult }));
            }
        }
        FrontierSpec {
            nodes,
            seed: 1,
            crash_runs: 3,
            crash_at: Duration::from_secs(120),
            crash_run: Duration::from_secs(360),
            loss: 0.1,
            loss_duration: Duration::from_secs(600),
            threads: 2,
            settings,
        }
    }

    /// The runs the sweep makes.
    ///
    /// # Example
    ///
    /// ```
    /// use vigil_sim::frontier::FrontierSpec;
    ///
    /// // Three crash runs and one loss run per setting.
    /// assert_eq!(FrontierSpec::new(100).runs(), 70 * 4);
    /// ```
    pub fn runs(&self) -> usize {
        self.settings.len() * (self.crash_runs + 1)
    }
}

/// What one setting measured.
///
/// # Example
///
/// ```
/// # use std::time::Duration;
/// # use vigil_sim::frontier::{self, ClassicSetting, FrontierSpec, PhiSetting, Setting};
/// # let mut spec = FrontierSpec::new(6);
/// # spec.crash_runs = 1;
/// # spec.crash_at = Duration::from_secs(30);
/// # spec.crash_run = Duration::from_secs(60);
/// # spec.loss_duration = Duration::from_secs(20);
/// # spec.settings = vec![
/// #     Setting::Phi(PhiSetting { heartbeat: Duration::from_millis(525), observers: 1, suspect_level: 8.0 }),
/// #     Setting::Classic(ClassicSetting { probe_interval: Duration::from_secs(1), suspicion_mult: 4 }),
/// # ];
/// # let result = frontier::run(&spec, &|_, _| {})?;
/// let phi = &result.points[0];
/// assert_eq!(phi.setting, spec.settings[0]);
/// assert!(phi.messages_per_member_second > 0.0 && phi.detection_median_ms <= phi.detection_max_ms);
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The setting.
    pub setting: Setting,
    /// Its label.
    pub label: String,
    /// Steady messages per member-second (before the crash).
    pub messages_per_member_second: f64,
    /// Steady bytes per member-second.
    pub bytes_per_member_second: f64,
    /// Crash → dead, median over every survivor of every crash run, ms.
    pub detection_median_ms: f64,
    /// The slowest survivor of any run, ms.
    pub detection_max_ms: f64,
    /// Whether every survivor of every run declared the crash.
    pub detected_by_all: bool,
    /// False suspicions (events at every node) in the loss run.
    pub loss_false_suspicions: u64,
    /// Accusations (suspicions started) in the loss run.
    pub loss_accusations: u64,
    /// False deaths in the loss run.
    pub loss_false_deaths: u64,
}

impl Point {
    /// Whether this point costs no more messages and bytes than `other`,
    /// raises no more false suspicions under loss, and detects in at most
    /// half its time.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use vigil_sim::frontier::{self, ClassicSetting, FrontierSpec, PhiSetting, Setting};
    /// # let mut spec = FrontierSpec::new(6);
    /// # spec.crash_runs = 1;
    /// # spec.crash_at = Duration::from_secs(30);
    /// # spec.crash_run = Duration::from_secs(60);
    /// # spec.loss_duration = Duration::from_secs(20);
    /// # spec.settings = vec![
    /// #     Setting::Phi(PhiSetting { heartbeat: Duration::from_millis(525), observers: 1, suspect_level: 8.0 }),
    /// #     Setting::Classic(ClassicSetting { probe_interval: Duration::from_secs(1), suspicion_mult: 4 }),
    /// # ];
    /// # let result = frontier::run(&spec, &|_, _| {})?;
    /// let classic = &result.points[1];
    /// // No point is twice as fast as itself.
    /// assert!(!classic.twice_as_fast_on_the_budget_of(classic));
    /// # Ok::<(), vigil_sim::SimError>(())
    /// ```
    pub fn twice_as_fast_on_the_budget_of(&self, other: &Point) -> bool {
        self.detected_by_all
            && self.messages_per_member_second <= other.messages_per_member_second
            && self.bytes_per_member_second <= other.bytes_per_member_second
            && self.loss_false_suspicions <= other.loss_false_suspicions
            && self.detection_median_ms <= other.detection_median_ms / 2.0
    }
}

/// The sweep's result.
///
/// # Example
///
/// ```
/// # use std::time::Duration;
/// # use vigil_sim::frontier::{self, ClassicSetting, FrontierSpec, PhiSetting, Setting};
/// # let mut spec = FrontierSpec::new(6);
/// # spec.crash_runs = 1;
/// # spec.crash_at = Duration::from_secs(30);
/// # spec.crash_run = Duration::from_secs(60);
/// # spec.loss_duration = Duration::from_secs(20);
/// # spec.settings = vec![
/// #     Setting::Phi(PhiSetting { heartbeat: Duration::from_millis(525), observers: 1, suspect_level: 8.0 }),
/// #     Setting::Classic(ClassicSetting { probe_interval: Duration::from_secs(1), suspicion_mult: 4 }),
/// # ];
/// # let result = frontier::run(&spec, &|_, _| {})?;
/// // The one classic setting (index 1), and the φ setting that answers it, if any.
/// assert_eq!(result.answers.len(), 1);
/// assert_eq!(result.answers[0].0, 1);
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frontier {
    /// Cluster size.
    pub nodes: usize,
    /// The spec's seed.
    pub seed: u64,
    /// Every setting, in the spec's order.
    pub points: Vec<Point>,
    /// For each classic point (its index in `points`), the fastest φ point
    /// that is twice as fast on its budget, if any.
    pub answers: Vec<(usize, Option<usize>)>,
}

impl Frontier {
    /// Whether every classic setting has a φ setting twice as fast on its
    /// budget.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use vigil_sim::frontier::{self, ClassicSetting, FrontierSpec, PhiSetting, Setting};
    /// # let mut spec = FrontierSpec::new(6);
    /// # spec.crash_runs = 1;
    /// # spec.crash_at = Duration::from_secs(30);
    /// # spec.crash_run = Duration::from_secs(60);
    /// # spec.loss_duration = Duration::from_secs(20);
    /// # spec.settings = vec![
    /// #     Setting::Phi(PhiSetting { heartbeat: Duration::from_millis(525), observers: 1, suspect_level: 8.0 }),
    /// #     Setting::Classic(ClassicSetting { probe_interval: Duration::from_secs(1), suspicion_mult: 4 }),
    /// # ];
    /// # let result = frontier::run(&spec, &|_, _| {})?;
    /// let answered = result.answers.iter().all(|(_, phi)| phi.is_some());
    /// assert_eq!(result.phi_answers_every_classic_setting(), answered);
    /// # Ok::<(), vigil_sim::SimError>(())
    /// ```
    pub fn phi_answers_every_classic_setting(&self) -> bool {
        self.answers.iter().all(|(_, a)| a.is_some())
    }

    /// The points on the Pareto frontier of messages against detection,
    /// among φ points or classic points: no other point of the same
    /// protocol is at least as cheap and at least as fast, and better in
    /// one.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use vigil_sim::frontier::{self, ClassicSetting, FrontierSpec, PhiSetting, Setting};
    /// # let mut spec = FrontierSpec::new(6);
    /// # spec.crash_runs = 1;
    /// # spec.crash_at = Duration::from_secs(30);
    /// # spec.crash_run = Duration::from_secs(60);
    /// # spec.loss_duration = Duration::from_secs(20);
    /// # spec.settings = vec![
    /// #     Setting::Phi(PhiSetting { heartbeat: Duration::from_millis(525), observers: 1, suspect_level: 8.0 }),
    /// #     Setting::Classic(ClassicSetting { probe_interval: Duration::from_secs(1), suspicion_mult: 4 }),
    /// # ];
    /// # let result = frontier::run(&spec, &|_, _| {})?;
    /// assert!(result.pareto(false).iter().all(|p| !p.setting.is_phi()));
    /// assert!(result.pareto(true).len() <= 1);
    /// # Ok::<(), vigil_sim::SimError>(())
    /// ```
    pub fn pareto(&self, phi: bool) -> Vec<&Point> {
        let same: Vec<&Point> = self.points.iter().filter(|p| p.setting.is_phi() == phi && p.detected_by_all).collect();
        let mut out: Vec<&Point> = same
            .iter()
            .filter(|p| {
                !same.iter().any(|q| {
                    q.messages_per_member_second <= p.messages_per_member_second
                        && q.detection_median_ms <= p.detection_median_ms
                        && (q.messages_per_member_second < p.messages_per_member_second
                            || q.detection_median_ms < p.detection_median_ms)
                })
            })
            .copied()
            .collect();
        out.sort_by(|a, b| a.messages_per_member_second.total_cmp(&b.messages_per_member_second));
        out
    }
}

/// Runs the sweep. `progress` is called with (runs done, runs in all).
///
/// # Errors
///
/// A [`SimError`] if a setting's configuration or the scenarios do not
/// validate (checked for every setting before any run starts).
///
/// # Example
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::time::Duration;
/// use vigil_sim::frontier::{self, FrontierSpec, PhiSetting, Setting};
///
/// let mut spec = FrontierSpec::new(6);
/// spec.crash_runs = 1;
/// spec.crash_at = Duration::from_secs(20);
/// spec.crash_run = Duration::from_secs(50);
/// spec.loss_duration = Duration::from_secs(10);
/// spec.settings = vec![Setting::Phi(PhiSetting { heartbeat: Duration::from_secs(1), observers: 2, suspect_level: 8.0 })];
/// let done = AtomicUsize::new(0);
/// let result = frontier::run(&spec, &|_, _| {
///     done.fetch_add(1, Ordering::Relaxed);
/// })?;
/// assert_eq!((result.points.len(), done.into_inner()), (1, spec.runs()));
///
/// spec.settings.push(Setting::Phi(PhiSetting { heartbeat: Duration::ZERO, observers: 2, suspect_level: 8.0 }));
/// assert!(frontier::run(&spec, &|_, _| {}).is_err());
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
pub fn run(spec: &FrontierSpec, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Frontier, SimError> {
    let jobs: Vec<(usize, Option<usize>)> = (0..spec.settings.len())
        .flat_map(|s| (0..spec.crash_runs).map(move |r| (s, Some(r))).chain(std::iter::once((s, None))))
        .collect();
    // Build every simulation's inputs first: nothing runs if one is invalid.
    let scenarios: Vec<(Scenario, Config)> =
        jobs.iter().map(|&(s, run)| (scenario(spec, s, run), spec.settings[s].config())).collect();
    for (s, c) in &scenarios {
        s.validate().map_err(SimError::Scenario)?;
        c.validate().map_err(SimError::Config)?;
    }
    let results: Mutex<Vec<Option<crate::Report>>> = Mutex::new(vec![None; jobs.len()]);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failure: Mutex<Option<SimError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..spec.threads.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((s, c)) = scenarios.get(i) else { break };
                    match Sim::with_config(s, c.clone()) {
                        Ok(sim) => {
                            let report = sim.run(&mut |_| {});
                            if let Ok(mut r) = results.lock() {
                                r[i] = Some(report);
                            }
                        }
                        Err(e) => {
                            if let Ok(mut f) = failure.lock() {
                                f.get_or_insert(e);
                            }
                        }
                    }
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1, jobs.len());
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let results = results.into_inner().unwrap_or_default();
    let mut points = Vec::with_capacity(spec.settings.len());
    for (s, setting) in spec.settings.iter().enumerate() {
        let reports: Vec<&crate::Report> =
            jobs.iter().zip(&results).filter(|((js, _), _)| *js == s).filter_map(|(_, r)| r.as_ref()).collect();
        let (crash, loss): (Vec<&crate::Report>, Vec<&crate::Report>) =
            reports.into_iter().partition(|r| !r.crashes.is_empty());
        let mut times = Vec::new();
        let mut all = true;
        for r in &crash {
            for c in &r.crashes {
                all &= c.detected_by == c.survivors;
            }
        }
        for r in &crash {
            for c in &r.crashes {
                times.extend(c.detection_times_ms.iter().copied());
            }
        }
        times.sort_by(f64::total_cmp);
        let steady =
            |f: fn(&crate::Stretch) -> f64| crash.iter().map(|r| f(&r.steady)).sum::<f64>() / crash.len().max(1) as f64;
        let loss = loss.first();
        points.push(Point {
            setting: *setting,
            label: setting.label(),
            messages_per_member_second: steady(|s| s.messages_per_member_second),
            bytes_per_member_second: steady(|s| s.bytes_per_member_second),
            detection_median_ms: median(&times),
            detection_max_ms: times.last().copied().unwrap_or(f64::NAN),
            detected_by_all: all && !times.is_empty(),
            loss_false_suspicions: loss.map_or(0, |r| r.false_suspicions),
            loss_accusations: loss.map_or(0, |r| r.totals.accusations),
            loss_false_deaths: loss.map_or(0, |r| r.false_deaths),
        });
    }
    let answers = points
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.setting.is_phi())
        .map(|(c, classic)| {
            let best = points
                .iter()
                .enumerate()
                .filter(|(_, p)| p.setting.is_phi() && p.twice_as_fast_on_the_budget_of(classic))
                .min_by(|a, b| a.1.detection_median_ms.total_cmp(&b.1.detection_median_ms))
                .map(|(i, _)| i);
            (c, best)
        })
        .collect();
    Ok(Frontier { nodes: spec.nodes, seed: spec.seed, points, answers })
}

/// The scenario of job (`setting`, `run`): a crash run, or the loss run.
fn scenario(spec: &FrontierSpec, setting: usize, run: Option<usize>) -> Scenario {
    let runs_per_setting = spec.crash_runs as u64 + 1;
    let index = setting as u64 * runs_per_setting + run.map_or(spec.crash_runs as u64, |r| r as u64);
    let mut s = Scenario::new("frontier", spec.nodes);
    s.seed = spec.seed.wrapping_add(index);
    s.check_liveness = false;
    match run {
        Some(r) => {
            s.duration = spec.crash_run;
            s.detection_bound = spec.crash_run.saturating_sub(spec.crash_at);
            let node = (r * 37 + 11) % spec.nodes;
            s.faults.push(Timed::new(spec.crash_at, Fault::Crash { node }));
        }
        None => {
            let start = Duration::from_secs(10);
            s.duration = start + spec.loss_duration + Duration::from_secs(20);
            s.faults.push(Timed::new(start, Fault::Loss { p: spec.loss }).lasting(spec.loss_duration));
        }
    }
    s
}
