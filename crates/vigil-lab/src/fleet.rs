//! The fleet lab: a client sending real requests to a set of hosts that
//! also heartbeat, with one of them (or all) failing in a way heartbeats
//! see or do not see, judged by φ alone, outlier detection alone, and the
//! two composed.
//!
//! A [`FleetScenario`] is simulated closed-loop and seeded: requests go to
//! the hosts the detector under test still routes to, so a detector that
//! stops routing to a bad host early spares the requests that would have
//! gone to it. The faults:
//!
//! - `crash`: the host stops (no heartbeats; requests fail to connect);
//! - `gray`: heartbeats as usual, requests failing at a rising rate (from 0
//!   at the fault to every one a minute later): a gray failure;
//! - `slow`: heartbeats as usual, no errors, latency ten times the others';
//! - `low-traffic-crash`: a crash while the client sends a request every
//!   few seconds to the whole fleet;
//! - `brownout`: every host degrades at once (20 % errors, latency × 5):
//!   nobody is worse than the others, and nobody should be ejected beyond
//!   the cap.
//!
//! Healthy hosts fail 0.5 % of requests and answer in about 10 ms (log-normal),
//! so a detector tuned too tight ejects healthy hosts too.
//!
//! ```
//! use vigil_lab::fleet::{FleetScenario, Setup, run};
//!
//! let gray = FleetScenario::builtin("gray").unwrap();
//! let phi = run(&gray, &Setup::builtin("phi").unwrap(), 1).unwrap();
//! let composed = run(&gray, &Setup::builtin("composed").unwrap(), 1).unwrap();
//! assert!(phi.stopped_routing_after_ms.is_none(), "heartbeats do not see a gray failure");
//! assert!(composed.stopped_routing_after_ms.is_some());
//! assert!(composed.requests_to_bad_host < phi.requests_to_bad_host);
//! ```

use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, LogNormal, Normal};
use serde::Serialize;
use vigil_detector::health::{Health, HealthConfig, HealthPolicy, Verdict};
use vigil_detector::outlier::{Outcome, OutlierConfig, Outliers};
use vigil_detector::{Instant, Model, ModelConfig, Policy, PolicyId, Registry, RegistryConfig};

use crate::fleet_trace::{FleetEvent, FleetEventKind, FleetTrace};

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// The bad host stops.
    Crash,
    /// The bad host's requests fail at a rising rate; heartbeats are fine.
    Gray,
    /// The bad host answers ten times slower; no errors.
    Slow,
    /// Every host degrades.
    Brownout,
}

/// A fleet and its fault.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetScenario {
    /// Its name.
    pub name: String,
    /// What it shows.
    pub description: String,
    /// Hosts.
    pub hosts: u32,
    /// Which host goes bad (ignored for a brownout).
    pub bad_host: u32,
    /// The fault.
    pub fault: Fault,
    /// When it starts (ms).
    pub fault_at_ms: f64,
    /// How long the run lasts (ms).
    pub duration_ms: f64,
    /// Requests a second from the client, to the whole fleet.
    pub request_rate: f64,
    /// Heartbeat period (ms).
    pub heartbeat_ms: f64,
}

/// The built-in scenarios' names.
pub const SCENARIOS: [&str; 5] = ["crash", "gray", "slow", "low-traffic-crash", "brownout"];

impl FleetScenario {
    /// A built-in scenario: `crash`, `gray`, `slow`, `low-traffic-crash`,
    /// `brownout` ([`SCENARIOS`]). Ten hosts, h3 the bad one, the fault at
    /// 60 s, 300 s in all, heartbeats every second, 200 requests a second
    /// (one every 5 s for the low-traffic crash).
    pub fn builtin(name: &str) -> Option<FleetScenario> {
        let base = |fault, description: &str| FleetScenario {
            name: name.to_owned(),
            description: description.to_owned(),
            hosts: 10,
            bad_host: 3,
            fault,
            fault_at_ms: 60_000.0,
            duration_ms: 300_000.0,
            request_rate: 200.0,
            heartbeat_ms: 1_000.0,
        };
        Some(match name {
            "crash" => base(Fault::Crash, "h3 crashes at 60 s; 200 requests a second"),
            "gray" => base(
                Fault::Gray,
                "h3's requests fail at a rising rate from 60 s (all of them by 120 s); its heartbeats are fine",
            ),
            "slow" => {
                base(Fault::Slow, "h3 answers ten times slower from 60 s, without errors; its heartbeats are fine")
            }
            "low-traffic-crash" => FleetScenario {
                request_rate: 0.2,
                ..base(Fault::Crash, "h3 crashes at 60 s; one request every 5 s to the whole fleet")
            },
            "brownout" => base(Fault::Brownout, "every host degrades at 60 s: 20 % errors, latency × 5"),
            _ => return None,
        })
    }
}

/// A detector setup under test.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// Its name.
    pub name: String,
    /// What routes requests away from a host.
    pub judge: JudgeKind,
}

/// What routes requests away from a host.
#[derive(Debug, Clone, PartialEq)]
pub enum JudgeKind {
    /// Nothing routes requests away: the baseline.
    None,
    /// φ (Akka's) at this threshold, from heartbeats alone.
    Phi(f64),
    /// Outlier detection alone, from request outcomes.
    Outliers(OutlierConfig),
    /// Both: φ at this threshold, or an ejection.
    Composed(f64, OutlierConfig),
}

/// The built-in setups' names.
pub const SETUPS: [&str; 6] = ["none", "phi", "phi-tight", "outliers", "outliers-eager", "composed"];

impl Setup {
    /// A built-in setup ([`SETUPS`]): `none` (no detection: the baseline),
    /// `phi` (φ ≥ 2), `phi-tight` (φ ≥ 1),
    /// `outliers` (vigil's outlier preset), `outliers-eager` (tuned to catch
    /// a crash on its first failed request: one server error ejects, a 5 s
    /// interval, success rate at 1 σ over 20 requests), `composed` (φ ≥ 2 or
    /// ejected, vigil's preset).
    pub fn builtin(name: &str) -> Option<Setup> {
        let eager = OutlierConfig {
            consecutive_5xx: 1,
            interval: Duration::from_secs(5),
            success_rate_stdev_factor: 1.0,
            success_rate_request_volume: 20,
            failure_percentage_request_volume: 20,
            ..OutlierConfig::vigil()
        };
        let judge = match name {
            "none" => JudgeKind::None,
            "phi" => JudgeKind::Phi(2.0),
            "phi-tight" => JudgeKind::Phi(1.0),
            "outliers" => JudgeKind::Outliers(OutlierConfig::vigil()),
            "outliers-eager" => JudgeKind::Outliers(eager),
            "composed" => JudgeKind::Composed(2.0, OutlierConfig::vigil()),
            _ => return None,
        };
        Some(Setup { name: name.to_owned(), judge })
    }
}

/// What one setup made of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetResult {
    /// The scenario.
    pub scenario: String,
    /// The setup.
    pub setup: String,
    /// From the fault to when requests first stopped going to the bad host
    /// (ms); `None` if they never did (or for a simulated brownout). With
    /// several bad hosts (a replayed trace), the longest such time, `None`
    /// if one was never routed away. Outlier detection sends traffic again
    /// when an ejection ends, so requests may reach the bad host again
    /// later: see the counts.
    pub stopped_routing_after_ms: Option<f64>,
    /// Requests sent to the bad host from the fault on (to a bad host from
    /// its fault on, with several).
    pub requests_to_bad_host: u64,
    /// Of those, the ones that failed or were slow (over 50 ms).
    pub bad_requests: u64,
    /// Times a healthy host was routed away from (false ejections or
    /// suspicions).
    pub false_removals: u64,
    /// The most hosts routed away from at once.
    pub max_removed_at_once: u32,
    /// Requests sent in all.
    pub requests: u64,
    /// Requests the setup sent nowhere (failed on the client's side, every
    /// host being held back): only a [`Router`] of another crate does.
    pub refused: u64,
    /// Replaying a recorded trace (open loop): requests that reached the bad
    /// host while the setup had it routed away, which it would have sent
    /// elsewhere (0 in a closed-loop scenario, where they were).
    pub spared: u64,
    /// Cumulative requests to the bad host over time: `(ms, count)` at each
    /// change of routing and every 5 s, for the plot.
    pub to_bad_host_over_time: Vec<(f64, u64)>,
}

impl FleetScenario {
    /// Checks the scenario.
    ///
    /// # Errors
    ///
    /// The first field out of range, named.
    pub fn validate(&self) -> Result<(), vigil_detector::ConfigError> {
        let out = |field: &'static str, value: f64, range: &'static str| {
            Err(vigil_detector::ConfigError::OutOfRange { field, value, range })
        };
        if !(1..=10_000).contains(&self.hosts) {
            return out("hosts", f64::from(self.hosts), "[1, 10000]");
        }
        if self.bad_host >= self.hosts {
            return out("bad_host", f64::from(self.bad_host), "[0, hosts)");
        }
        for (field, v, lo, hi, range) in [
            ("request_rate", self.request_rate, 1e-6, 100_000.0, "[1e-6, 100000] per second"),
            ("heartbeat_ms", self.heartbeat_ms, 1.0, 3_600_000.0, "[1, 3600000]"),
            ("duration_ms", self.duration_ms, 1.0, 86_400_000.0, "[1, 86400000]"),
            ("fault_at_ms", self.fault_at_ms, 0.0, 86_400_000.0, "[0, 86400000]"),
        ] {
            if !(v.is_finite() && (lo..=hi).contains(&v)) {
                return out(field, v, range);
            }
        }
        Ok(())
    }
}

impl FleetResult {
    fn empty(scenario: &str, setup: &str) -> FleetResult {
        FleetResult {
            scenario: scenario.to_owned(),
            setup: setup.to_owned(),
            stopped_routing_after_ms: None,
            requests_to_bad_host: 0,
            bad_requests: 0,
            false_removals: 0,
            max_removed_at_once: 0,
            requests: 0,
            refused: 0,
            spared: 0,
            to_bad_host_over_time: vec![(0.0, 0)],
        }
    }

    /// A request that reached the bad host, and whether it went badly
    /// (failed, or slower than 50 ms).
    fn reached_bad_host(&mut self, outcome: Outcome, latency: Option<Duration>) {
        self.requests_to_bad_host += 1;
        if outcome != Outcome::Response(200) || latency.is_some_and(|l| l > Duration::from_millis(50)) {
            self.bad_requests += 1;
        }
    }
}

/// What the fleet offers a [`Router`] while it routes one request: the
/// run's seeded draws, and the answer of the host it picks.
pub trait Hosts {
    /// A number drawn uniformly from `0..n` (`n` at least 1), from the
    /// run's seed: for a router that picks at random.
    fn uniform(&mut self, n: usize) -> usize;

    /// What `host` answers to this request: the outcome, and how long it
    /// takes (`None`: at once, as a refused connection). Asked at most once
    /// per request: the request goes to the host asked.
    fn answer(&mut self, host: u32) -> (Outcome, Option<Duration>);
}

/// A setup as the closed loop drives it: it hears every heartbeat, routes
/// every request, learns what became of it, and says which hosts it has
/// routed away from. The built-in setups ([`Setup`]) are routers over
/// vigil's detectors; another crate can bring its own (`vigil-tower` runs
/// real tower balancers through this), run by [`run_router`].
///
/// Time is the run's virtual time: a router reads no clock of its own.
pub trait Router {
    /// A heartbeat from `host` at `now`.
    fn heartbeat(&mut self, host: u32, now: Instant);

    /// Takes the decisions due by `now` (and lets time pass to it).
    fn poll(&mut self, now: Instant);

    /// When [`Router::poll`] next has work, if the router keeps deadlines.
    fn next_deadline(&mut self) -> Option<Instant>;

    /// Routes the request sent at `now`: the host it went to (after
    /// [`Hosts::answer`] for it), or `None` if the router sent it nowhere
    /// (it failed at once on the client's side).
    fn route(&mut self, now: Instant, hosts: &mut dyn Hosts) -> Option<u32>;

    /// Whether requests are routed away from `host` now.
    fn routed_away(&self, host: u32) -> bool;
}

/// The judge under test, routing requests.
#[derive(Debug)]
enum Judge {
    None,
    Phi(Box<Registry<u32>>),
    Outliers(Box<Outliers<u32>>),
    Composed(Box<Health<u32>>),
}

fn registry_config(threshold: f64) -> RegistryConfig {
    RegistryConfig {
        // Virtual time: no local stalls, and no brake (routing is not
        // destructive).
        pause_guard: None,
        brake: None,
        first_heartbeat_timeout: Some(Duration::from_secs(3)),
        ..RegistryConfig::new(vec![Policy::new("route", threshold)])
    }
}

fn model() -> ModelConfig {
    ModelConfig::default_for(Model::Akka)
}

impl Judge {
    fn new(kind: &JudgeKind, hosts: u32) -> Result<Judge, vigil_detector::ConfigError> {
        let t0 = Instant::ZERO;
        Ok(match kind {
            JudgeKind::None => Judge::None,
            JudgeKind::Phi(threshold) => {
                let mut r = Registry::with_model(&model(), registry_config(*threshold))?;
                for h in 0..hosts {
                    let _ = r.register(h, t0);
                }
                Judge::Phi(Box::new(r))
            }
            JudgeKind::Outliers(c) => {
                let mut o = Outliers::new(c.clone())?;
                for h in 0..hosts {
                    let _ = o.insert(h, t0);
                }
                Judge::Outliers(Box::new(o))
            }
            JudgeKind::Composed(threshold, c) => {
                let policies = vec![HealthPolicy::new("route").phi(*threshold).on_ejection()];
                let config =
                    HealthConfig { registry: registry_config(*threshold), ..HealthConfig::new(policies, c.clone()) };
                let mut health = Health::new(&model(), config)?;
                for h in 0..hosts {
                    let _ = health.insert(h, t0);
                }
                Judge::Composed(Box::new(health))
            }
        })
    }

    fn heartbeat(&mut self, h: u32, t: Instant) {
        match self {
            Judge::Phi(r) => {
                let _ = r.heartbeat(h, t);
            }
            Judge::None | Judge::Outliers(_) => {}
            Judge::Composed(c) => {
                let _ = c.heartbeat(h, t);
            }
        }
    }

    fn record(&mut self, h: u32, o: Outcome, latency: Option<Duration>, t: Instant) {
        match self {
            Judge::None | Judge::Phi(_) => {}
            Judge::Outliers(od) => {
                let _ = od.record(h, o, latency, t);
                od.take_events();
            }
            Judge::Composed(c) => {
                let _ = c.record(h, o, latency, t);
            }
        }
    }

    fn poll(&mut self, t: Instant) {
        match self {
            Judge::None => {}
            Judge::Phi(r) => {
                r.poll(t);
            }
            Judge::Outliers(od) => {
                od.poll(t);
            }
            Judge::Composed(c) => {
                c.poll(t);
            }
        }
    }

    fn next_deadline(&mut self) -> Option<Instant> {
        match self {
            Judge::None => None,
            Judge::Phi(r) => r.next_deadline(),
            Judge::Outliers(od) => od.next_deadline(),
            Judge::Composed(c) => c.next_deadline(),
        }
    }

    fn routed_away(&self, h: u32) -> bool {
        match self {
            Judge::None => false,
            Judge::Phi(r) => r.is_suspected(&h, PolicyId(0)).unwrap_or(false),
            Judge::Outliers(od) => od.is_ejected(&h),
            Judge::Composed(c) => matches!(c.verdict(&h, "route"), Some(Verdict::Fired(_))),
        }
    }
}

/// A built-in setup's judge routing requests at random among the hosts it
/// has not routed away from (to all when it has routed away from every
/// one: Envoy's panic routing).
#[derive(Debug)]
struct JudgeRouter {
    judge: Judge,
    hosts: u32,
}

impl Router for JudgeRouter {
    fn heartbeat(&mut self, host: u32, now: Instant) {
        self.judge.heartbeat(host, now);
    }

    fn poll(&mut self, now: Instant) {
        self.judge.poll(now);
    }

    fn next_deadline(&mut self) -> Option<Instant> {
        self.judge.next_deadline()
    }

    fn route(&mut self, now: Instant, hosts: &mut dyn Hosts) -> Option<u32> {
        let routable: Vec<u32> = (0..self.hosts).filter(|&h| !self.judge.routed_away(h)).collect();
        let pool: Vec<u32> = if routable.is_empty() { (0..self.hosts).collect() } else { routable };
        let h = pool[hosts.uniform(pool.len())];
        let (outcome, latency) = hosts.answer(h);
        self.judge.record(h, outcome, latency, now);
        Some(h)
    }

    fn routed_away(&self, host: u32) -> bool {
        self.judge.routed_away(host)
    }
}

/// The closed loop's draws for one request at `t` (ms).
struct Draws<'a> {
    scenario: &'a FleetScenario,
    t: f64,
    rng: &'a mut ChaCha8Rng,
    healthy_latency: &'a LogNormal<f64>,
    /// The host asked, and its answer.
    answered: Option<(u32, Outcome, Option<Duration>)>,
}

impl Hosts for Draws<'_> {
    fn uniform(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n.max(1))
    }

    fn answer(&mut self, host: u32) -> (Outcome, Option<Duration>) {
        let host = host.min(self.scenario.hosts - 1);
        let (outcome, latency) = answer(self.scenario, host, self.t, self.rng, self.healthy_latency);
        self.answered = Some((host, outcome, latency));
        (outcome, latency)
    }
}

/// What a request to host `h` at `t` gets, in `scenario`.
fn answer(
    s: &FleetScenario,
    h: u32,
    t: f64,
    rng: &mut ChaCha8Rng,
    healthy_latency: &LogNormal<f64>,
) -> (Outcome, Option<Duration>) {
    let after = t >= s.fault_at_ms;
    let bad = h == s.bad_host;
    let mut latency = healthy_latency.sample(rng);
    let mut error = 0.005;
    match s.fault {
        Fault::Crash if bad && after => return (Outcome::ConnectFailed, None),
        Fault::Gray if bad && after => error = ((t - s.fault_at_ms) / 60_000.0).clamp(0.0, 1.0).max(error),
        Fault::Slow if bad && after => latency *= 10.0,
        Fault::Brownout if after => {
            error = 0.2;
            latency *= 5.0;
        }
        _ => {}
    }
    let outcome = if rng.random::<f64>() < error { Outcome::Response(503) } else { Outcome::Response(200) };
    (outcome, Some(Duration::from_secs_f64(latency / 1e3)))
}

/// Simulates `scenario` under `setup`, seeded.
///
/// # Errors
///
/// The setup's configuration is invalid.
pub fn run(scenario: &FleetScenario, setup: &Setup, seed: u64) -> Result<FleetResult, vigil_detector::ConfigError> {
    let mut router = JudgeRouter { judge: Judge::new(&setup.judge, scenario.hosts)?, hosts: scenario.hosts };
    simulate(scenario, &setup.name, &mut router, seed, None)
}

/// Simulates `scenario` with requests routed by `router` (named `name` in
/// the result), seeded: the same fleet, faults and draws as [`run`] gives a
/// built-in setup.
///
/// # Errors
///
/// The scenario is invalid ([`FleetScenario::validate`]).
pub fn run_router(
    scenario: &FleetScenario,
    name: &str,
    router: &mut dyn Router,
    seed: u64,
) -> Result<FleetResult, vigil_detector::ConfigError> {
    simulate(scenario, name, router, seed, None)
}

/// Simulates `scenario` with nothing routing requests away (the `none`
/// setup) and returns what a client would have recorded: every heartbeat,
/// every request's outcome and latency, and the fault as `bad` (a trace for
/// [`replay`], or to write out).
///
/// # Errors
///
/// The scenario is invalid ([`FleetScenario::validate`]).
pub fn record(scenario: &FleetScenario, seed: u64) -> Result<FleetTrace, vigil_detector::ConfigError> {
    let mut trace = FleetTrace { hosts: (0..scenario.hosts).map(|h| format!("h{h}")).collect(), events: Vec::new() };
    let mut none = JudgeRouter { judge: Judge::None, hosts: scenario.hosts };
    simulate(scenario, "none", &mut none, seed, Some(&mut trace))?;
    Ok(trace)
}

fn simulate(
    scenario: &FleetScenario,
    setup: &str,
    judge: &mut dyn Router,
    seed: u64,
    mut trace: Option<&mut FleetTrace>,
) -> Result<FleetResult, vigil_detector::ConfigError> {
    scenario.validate()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = scenario.hosts;
    let healthy_latency = LogNormal::new(10f64.ln(), 0.3).expect("valid");
    let jitter = Normal::new(0.0, 20.0).expect("valid");
    let gaps = Exp::new(scenario.request_rate / 1e3).expect("a positive rate");
    let crashed =
        |h: u32, t: f64| scenario.fault == Fault::Crash && h == scenario.bad_host && t >= scenario.fault_at_ms;
    // Next heartbeat per host, and the next request.
    let mut next_hb: Vec<f64> = (0..n).map(|h| f64::from(h) * scenario.heartbeat_ms / f64::from(n)).collect();
    let mut next_req = gaps.sample(&mut rng);
    let mut result = FleetResult::empty(&scenario.name, setup);
    let mut away = vec![false; n as usize];
    let mut next_sample = 5_000.0;
    let brownout = scenario.fault == Fault::Brownout;
    let mut marked_bad = false;
    let mut log = |t: f64, host: u32, kind: FleetEventKind| {
        if let Some(tr) = trace.as_deref_mut() {
            tr.events.push(FleetEvent { at: Instant::from_nanos((t * 1e6) as u64), host, kind });
        }
    };
    loop {
        let hb = next_hb.iter().copied().enumerate().min_by(|a, b| a.1.total_cmp(&b.1)).expect("hosts");
        let deadline_at = judge.next_deadline();
        let deadline = deadline_at.map_or(f64::INFINITY, |d| d.as_nanos() as f64 / 1e6);
        let t = hb.1.min(next_req).min(deadline).min(next_sample);
        if t > scenario.duration_ms {
            break;
        }
        // A deadline is polled at its exact instant (milliseconds as a float
        // could land a nanosecond short of it, and nothing would be due).
        let now = match deadline_at {
            Some(d) if t == deadline => d,
            _ => Instant::from_nanos((t * 1e6) as u64),
        };
        if !marked_bad && t >= scenario.fault_at_ms {
            marked_bad = true;
            let bad: Vec<u32> = if brownout { (0..n).collect() } else { vec![scenario.bad_host] };
            for h in bad {
                log(scenario.fault_at_ms, h, FleetEventKind::Bad);
            }
        }
        judge.poll(now);
        if t == hb.1 {
            let h = hb.0 as u32;
            if !crashed(h, t) {
                judge.heartbeat(h, now);
                log(t, h, FleetEventKind::Heartbeat);
            }
            next_hb[hb.0] = t + (scenario.heartbeat_ms + jitter.sample(&mut rng)).max(1.0);
        } else if t == next_req {
            next_req = t + gaps.sample(&mut rng);
            let mut draws = Draws { scenario, t, rng: &mut rng, healthy_latency: &healthy_latency, answered: None };
            let routed = judge.route(now, &mut draws);
            match (routed, draws.answered) {
                (Some(h), Some((asked, outcome, latency))) if h == asked => {
                    result.requests += 1;
                    if h == scenario.bad_host && t >= scenario.fault_at_ms && !brownout {
                        result.reached_bad_host(outcome, latency);
                    }
                    log(t, h, FleetEventKind::Request { outcome, latency });
                }
                _ => result.refused += 1,
            }
        } else if t == next_sample {
            next_sample += 5_000.0;
            result.to_bad_host_over_time.push((t, result.requests_to_bad_host));
        }
        judge.poll(now);
        // Routing changes.
        let mut changed = false;
        for h in 0..n {
            let a = judge.routed_away(h);
            if a != away[h as usize] {
                changed = true;
                away[h as usize] = a;
                let bad = !brownout && h == scenario.bad_host && t >= scenario.fault_at_ms;
                if a && !bad {
                    result.false_removals += 1;
                }
            }
        }
        if changed {
            result.to_bad_host_over_time.push((t, result.requests_to_bad_host));
            let removed = away.iter().filter(|&&a| a).count() as u32;
            result.max_removed_at_once = result.max_removed_at_once.max(removed);
            if !brownout {
                let b = scenario.bad_host as usize;
                if away[b] && t >= scenario.fault_at_ms && result.stopped_routing_after_ms.is_none() {
                    result.stopped_routing_after_ms = Some(t - scenario.fault_at_ms);
                }
            }
        }
    }
    result.to_bad_host_over_time.push((scenario.duration_ms, result.requests_to_bad_host));
    Ok(result)
}

/// Deadlines taken one by one, at their own times, before an event of a
/// replayed trace.
const MAX_STEPS: usize = 64;

/// The hosts a replayed trace marks bad, each from its first `bad` line,
/// and when each was first routed away after that.
struct BadHosts {
    /// Per host: when it went bad (ms), if it did.
    since: Vec<Option<f64>>,
    /// Per host: when it was first routed away after going bad (ms).
    stopped: Vec<Option<f64>>,
}

impl BadHosts {
    fn of(trace: &FleetTrace) -> BadHosts {
        let mut since = vec![None; trace.hosts.len()];
        for e in trace.events.iter().filter(|e| e.kind == FleetEventKind::Bad) {
            since[e.host as usize].get_or_insert(e.at.as_nanos() as f64 / 1e6);
        }
        BadHosts { stopped: vec![None; since.len()], since }
    }

    /// Whether host `h` is bad at `t` (ms).
    fn bad_at(&self, h: u32, t: f64) -> bool {
        self.since[h as usize].is_some_and(|at| t >= at)
    }

    /// From each bad host's fault to when it was first routed away, the
    /// longest of them: `None` if some bad host never was (or none is bad).
    fn stopped_routing_after_ms(&self) -> Option<f64> {
        let mut longest: Option<f64> = None;
        for (since, stopped) in self.since.iter().zip(&self.stopped) {
            if let Some(at) = since {
                let after = (*stopped)? - at;
                longest = Some(longest.map_or(after, |l| l.max(after)));
            }
        }
        longest
    }
}

/// Notes the routing changes among `hosts` at `t` (ms).
fn note_routing(
    judge: &Judge,
    away: &mut [bool],
    result: &mut FleetResult,
    bad: &mut BadHosts,
    hosts: std::ops::Range<u32>,
    t: f64,
) {
    let mut changed = false;
    for h in hosts {
        let a = judge.routed_away(h);
        if a != away[h as usize] {
            changed = true;
            away[h as usize] = a;
            let is_bad = bad.bad_at(h, t);
            if a && !is_bad {
                result.false_removals += 1;
            }
            if a && is_bad {
                bad.stopped[h as usize].get_or_insert(t);
            }
        }
    }
    if changed {
        result.to_bad_host_over_time.push((t, result.requests_to_bad_host));
        let removed = away.iter().filter(|&&a| a).count() as u32;
        result.max_removed_at_once = result.max_removed_at_once.max(removed);
    }
}

/// Replays a recorded fleet trace under `setup` (open loop: requests went
/// where the trace says). Every host the trace marks `bad` is scored as bad
/// from its first `bad` line: requests that reached a bad host while the
/// setup had it routed away are counted as [`FleetResult::spared`], the
/// others as [`FleetResult::requests_to_bad_host`]; routing it away is not
/// a false removal; [`FleetResult::stopped_routing_after_ms`] is the
/// longest time, over the bad hosts, from a host's fault to when it was
/// first routed away.
///
/// # Errors
///
/// The setup's configuration is invalid.
pub fn replay(trace: &FleetTrace, name: &str, setup: &Setup) -> Result<FleetResult, vigil_detector::ConfigError> {
    let n = trace.hosts.len() as u32;
    let mut judge = Judge::new(&setup.judge, n)?;
    let mut bad = BadHosts::of(trace);
    let mut result = FleetResult::empty(name, &setup.name);
    let mut away = vec![false; n as usize];
    for e in &trace.events {
        // Decisions due before this event, each at its own time (at most
        // MAX_STEPS of them; the rest are taken with the event, their times
        // kept by the detectors themselves). Routing changes are noted when
        // they happen.
        let mut steps = 0;
        while let Some(d) = judge.next_deadline().filter(|&d| d <= e.at) {
            if steps == MAX_STEPS {
                break;
            }
            steps += 1;
            judge.poll(d);
            note_routing(&judge, &mut away, &mut result, &mut bad, 0..n, d.as_nanos() as f64 / 1e6);
            if judge.next_deadline() == Some(d) {
                break;
            }
        }
        let due = judge.next_deadline().is_some_and(|d| d <= e.at);
        judge.poll(e.at);
        let t = e.at.as_nanos() as f64 / 1e6;
        match e.kind {
            FleetEventKind::Heartbeat => judge.heartbeat(e.host, e.at),
            FleetEventKind::Request { outcome, latency } => {
                result.requests += 1;
                if bad.bad_at(e.host, t) {
                    if judge.routed_away(e.host) {
                        result.spared += 1;
                    } else {
                        result.reached_bad_host(outcome, latency);
                    }
                }
                judge.record(e.host, outcome, latency, e.at);
            }
            FleetEventKind::Bad => {}
        }
        judge.poll(e.at);
        // Only a decision falling due can change other hosts than this
        // event's.
        let hosts = if due { 0..n } else { e.host..e.host + 1 };
        note_routing(&judge, &mut away, &mut result, &mut bad, hosts, t);
    }
    let end = trace.events.last().map_or(0.0, |e| e.at.as_nanos() as f64 / 1e6);
    result.to_bad_host_over_time.push((end, result.requests_to_bad_host));
    result.stopped_routing_after_ms = bad.stopped_routing_after_ms();
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go(scenario: &str, setup: &str) -> FleetResult {
        run(&FleetScenario::builtin(scenario).unwrap(), &Setup::builtin(setup).unwrap(), 1).unwrap()
    }

    #[test]
    fn a_recorded_scenario_replays_like_the_baseline() {
        let s = FleetScenario::builtin("gray").unwrap();
        let trace = record(&s, 1).unwrap();
        let none = go("gray", "none");
        // The trace is what the baseline sent, and reads back the same.
        let requests = trace.events.iter().filter(|e| matches!(e.kind, FleetEventKind::Request { .. })).count() as u64;
        assert_eq!(requests, none.requests);
        // Hosts are numbered by first appearance when read back; the text is
        // the same.
        let csv = trace.to_csv();
        assert!(FleetTrace::parse(&csv).unwrap().to_csv() == csv, "the CSV reads back to itself");
        // Replayed under the composition: the requests to h3 after the
        // fault are split between sent and spared.
        let composed = replay(&trace, "gray", &Setup::builtin("composed").unwrap()).unwrap();
        assert_eq!(composed.requests_to_bad_host + composed.spared, none.requests_to_bad_host);
        assert!(composed.spared > composed.requests_to_bad_host, "{composed:?}");
        let phi = replay(&trace, "gray", &Setup::builtin("phi").unwrap()).unwrap();
        assert_eq!(phi.spared, 0, "heartbeats do not see it");
    }

    #[test]
    fn bad_scenarios_and_hostile_traces_are_refused_or_bounded() {
        let mut s = FleetScenario::builtin("gray").unwrap();
        s.hosts = 0;
        assert!(run(&s, &Setup::builtin("phi").unwrap(), 1).is_err());
        let mut s = FleetScenario::builtin("gray").unwrap();
        s.request_rate = -1.0;
        assert!(record(&s, 1).is_err());
        // A trace whose last line is at the end of time: replayed at once.
        let t = FleetTrace::parse("0,a,req,200\n18446744073709.551615,a,hb\n").unwrap();
        for setup in SETUPS {
            let r = replay(&t, "end", &Setup::builtin(setup).unwrap()).unwrap();
            assert_eq!(r.requests, 1, "{setup}");
        }
    }

    #[test]
    fn every_host_a_trace_marks_bad_is_scored_as_bad() {
        // Four hosts heartbeat every second; a and b stop at 60 s and are
        // marked bad then; requests to them fail from then on.
        let mut text = String::new();
        for s in 0..120u32 {
            for (k, h) in ["a", "b", "c", "d"].iter().enumerate() {
                let t = s * 1000 + k as u32 * 10;
                if s == 60 && k < 2 {
                    text.push_str(&format!("{t},{h},bad\n"));
                }
                if s < 60 || k >= 2 {
                    text.push_str(&format!("{t},{h},hb\n"));
                }
                let outcome = if s >= 60 && k < 2 { "connect-failed" } else { "200" };
                text.push_str(&format!("{},{h},req,{outcome}\n", t + 5));
            }
        }
        let trace = FleetTrace::parse(&text).unwrap();
        let phi = replay(&trace, "two", &Setup::builtin("phi").unwrap()).unwrap();
        assert_eq!(phi.false_removals, 0, "{phi:?}");
        let stopped = phi.stopped_routing_after_ms.expect("both are routed away");
        assert!(stopped > 0.0 && stopped < 10_000.0, "{phi:?}");
        // Every request to a or b after 60 s: sent, or spared.
        assert_eq!(phi.requests_to_bad_host + phi.spared, 2 * 60, "{phi:?}");
        assert!(phi.spared > phi.requests_to_bad_host, "{phi:?}");
        // Nothing routed away: no time to stop, every request sent.
        let none = replay(&trace, "two", &Setup::builtin("none").unwrap()).unwrap();
        assert_eq!((none.stopped_routing_after_ms, none.requests_to_bad_host), (None, 120));
    }

    #[test]
    fn runs_are_deterministic_for_a_seed() {
        assert_eq!(go("gray", "composed"), go("gray", "composed"));
        let other = run(&FleetScenario::builtin("gray").unwrap(), &Setup::builtin("composed").unwrap(), 2).unwrap();
        assert_ne!(go("gray", "composed").requests, other.requests);
    }

    #[test]
    fn the_composition_catches_what_each_signal_alone_misses() {
        // A gray failure: φ alone never stops routing to h3.
        let phi = go("gray", "phi");
        assert_eq!(phi.stopped_routing_after_ms, None);
        let composed = go("gray", "composed");
        assert!(composed.stopped_routing_after_ms.is_some());
        assert!(composed.requests_to_bad_host * 3 < phi.requests_to_bad_host, "{composed:?} {phi:?}");
        // A low-traffic crash: outlier detection alone has too few requests.
        let outliers = go("low-traffic-crash", "outliers");
        let composed = go("low-traffic-crash", "composed");
        assert!(composed.stopped_routing_after_ms.is_some_and(|ms| ms < 10_000.0), "{composed:?}");
        assert!(outliers.stopped_routing_after_ms.is_none_or(|ms| ms > 30_000.0), "{outliers:?}");
        // A brownout: nobody beyond the cap (10 % of 10, at least one).
        for setup in ["outliers", "composed"] {
            assert!(go("brownout", setup).max_removed_at_once <= 1, "{setup}");
        }
    }
}
