//! The simulation loop: virtual time, the nodes, the event queue, and the
//! bookkeeping that becomes the report.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use vigil_detector::Instant;
use vigil_membership::{Config, ConfigError, Event, Node};

use crate::checkers::{self, Violations};
use crate::clock::{START, since_start};
use crate::job::Job;
use crate::links::Links;
use crate::machines::{Arrival, Machines};
use crate::preset::preset;
use crate::queue::Queue;
use crate::record::{Log, Record, What};
use crate::report::{CrashReport, FaultWindow, HealReport, Report, Stretch, Totals, median};
use crate::scenario::{Fault, Scenario, ScenarioError};
use crate::sealer::Sealer;

/// The window before and after a crash over which its extra traffic is
/// measured (memberlist's measurement: 30 s).
const TRAFFIC_WINDOW: Duration = Duration::from_secs(30);

/// A simulation that cannot start.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SimError {
    /// The scenario is not valid.
    Scenario(ScenarioError),
    /// The protocol configuration is not valid.
    Config(ConfigError),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Scenario(e) => write!(f, "invalid scenario: {e}"),
            SimError::Config(e) => write!(f, "{e}"),
        }
    }
}

/// The message already includes the inner error's, so it is not also given
/// as a source (a chain would print it twice).
impl std::error::Error for SimError {}

/// A crash that was applied.
#[derive(Debug, Clone)]
struct Crash {
    node: usize,
    generation: u64,
    at: Instant,
}

/// The simulator. Build with [`Sim::new`] or [`Sim::with_config`], then
/// [`Sim::run`].
pub struct Sim {
    pub(crate) scenario: Scenario,
    /// The protocol configuration every node runs (restarted ones too).
    pub(crate) config: Config,
    pub(crate) now: Instant,
    queue: Queue,
    pub(crate) machines: Machines,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) links: Links,
    /// Deaths seen: (dead name, generation) → declarer → time.
    deaths: HashMap<(String, u64), BTreeMap<usize, Instant>>,
    crashes: Vec<Crash>,
    totals: Totals,
    snapshots: BTreeMap<Instant, Totals>,
    by_kind: BTreeMap<&'static str, u64>,
    pub(crate) log: Log,
    violations: Violations,
    refuted: u64,
    path_problems: u64,
    false_deaths_outside: u64,
    false_deaths_of: BTreeMap<String, u64>,
    converged_ms: Option<f64>,
    /// Partitions that ended, and how they converged.
    heals: Vec<HealReport>,
    pub(crate) ineffective_faults: Vec<usize>,
    pub(crate) sealer: Sealer,
}

impl Sim {
    /// A simulator for `scenario`, every node running its protocol's preset.
    ///
    /// # Errors
    ///
    /// [`SimError::Scenario`] if the scenario does not validate.
    pub fn new(scenario: &Scenario) -> Result<Sim, SimError> {
        Sim::with_config(scenario, preset(scenario.protocol))
    }

    /// As [`Sim::new`], with a protocol configuration of your own (its
    /// cluster id is kept; the scenario's protocol is ignored).
    ///
    /// # Errors
    ///
    /// [`SimError::Scenario`] or [`SimError::Config`] if either does not
    /// validate.
    pub fn with_config(scenario: &Scenario, config: Config) -> Result<Sim, SimError> {
        scenario.validate().map_err(SimError::Scenario)?;
        config.validate().map_err(SimError::Config)?;
        let mut rng = ChaCha8Rng::seed_from_u64(scenario.seed);
        let mut sealer = Sealer::new(scenario);
        let n = scenario.nodes;
        let machines = Machines::new(n, &config, &mut rng, &mut sealer).map_err(SimError::Config)?;
        let mut sim = Sim {
            scenario: scenario.clone(),
            config,
            now: START,
            queue: Queue::default(),
            machines,
            rng,
            links: Links::new(scenario.seed, scenario.network.clone()),
            deaths: HashMap::new(),
            crashes: Vec::new(),
            totals: Totals::default(),
            snapshots: BTreeMap::new(),
            by_kind: BTreeMap::new(),
            log: Log::new(false),
            violations: Violations::default(),
            refuted: 0,
            path_problems: 0,
            false_deaths_outside: 0,
            false_deaths_of: BTreeMap::new(),
            converged_ms: None,
            heals: Vec::new(),
            ineffective_faults: Vec::new(),
            sealer,
        };
        // Snapshots first, so that at equal times they see the totals from
        // before whatever else happens then.
        let end = START.saturating_add(scenario.duration);
        let mut marks = BTreeSet::from([START, end]);
        for f in &scenario.faults {
            let at = START.saturating_add(f.at());
            marks.insert(at);
            if let Some(d) = f.duration() {
                marks.insert(at.saturating_add(d).min(end));
            }
            if matches!(f, Fault::Crash { .. }) {
                marks.insert(at.saturating_sub(TRAFFIC_WINDOW).max(START));
                marks.insert(at.saturating_add(TRAFFIC_WINDOW).min(end));
            }
        }
        for at in marks {
            sim.push(at, Job::Snapshot);
        }
        for (i, f) in scenario.faults.iter().enumerate() {
            sim.push(START.saturating_add(f.at()), Job::FaultStart(i));
        }
        for i in 0..n {
            sim.schedule_wake(i);
        }
        if let Some(after) = scenario.converge_after {
            sim.push(START.saturating_add(after), Job::Check);
        }
        Ok(sim)
    }

    /// Keeps every record of the run in the report (for inspection and
    /// tests); they are always hashed.
    pub fn keep_records(mut self, keep: bool) -> Sim {
        self.log = Log::new(keep);
        self
    }

    /// The node machine `i` runs: `None` if the machine is down or there
    /// is no machine `i`. Everything a node knows (its members, their
    /// states, its own incarnation) is read through it.
    pub fn node(&self, i: usize) -> Option<&Node> {
        self.machines.node(i)
    }

    pub(crate) fn push(&mut self, at: Instant, job: Job) {
        self.queue.push(at, job);
    }

    pub(crate) fn queue_jobs(&mut self, jobs: Vec<(Instant, Job)>) {
        self.queue.extend(jobs);
    }

    pub(crate) fn schedule_wake(&mut self, i: usize) {
        if let Some((at, job)) = self.machines.next_wake(i, self.now) {
            self.push(at, job);
        }
    }

    fn ms(&self, t: Instant) -> f64 {
        crate::clock::ms(t)
    }

    pub(crate) fn record(&mut self, what: What) {
        let at = since_start(self.now);
        self.log.push(Record { at, what });
    }

    /// Sends everything node `i` has queued and takes its events.
    pub(crate) fn flush(&mut self, i: usize) {
        let Some(out) = self.machines.drain(i, self.now) else { return };
        self.totals.probes += out.probes;
        self.totals.accusations += out.accusations;
        for sent in out.sent {
            self.totals.messages += 1;
            self.totals.bytes += sent.bytes.len() as u64;
            if !sent.stream {
                self.totals.datagrams += 1;
                self.totals.datagram_bytes += sent.bytes.len() as u64;
            }
            *self.by_kind.entry(sent.kind).or_default() += 1;
            let Some(to) = sent.to else { continue };
            if let Some(latency) = self.links.send(i, to, sent.stream, &mut self.rng) {
                let at = self.now.saturating_add(latency);
                self.push(at, Job::Deliver { to, from: i, bytes: sent.bytes, stream: sent.stream });
            }
        }
        for e in out.events {
            self.observe(i, e);
        }
        let (before, epoch) = out.epochs;
        let name = self.machines.name(i).to_owned();
        let at = self.ms(self.now);
        self.violations.add(at, checkers::EPOCHS_NEVER_DECREASE, checkers::epoch_never_decreases(&name, before, epoch));
    }

    /// Whether node `j` is inside the liveness envelope right now.
    fn inside_envelope(&self, j: usize) -> bool {
        self.machines.calm(j, self.now) && self.links.calm_for(j, self.now, self.scenario.envelope.max_loss)
    }

    fn observe(&mut self, i: usize, e: Event) {
        match &e {
            Event::Suspected { id, .. }
                if self.machines.index_of(&id.name).is_some_and(|j| !self.machines.crashed(j, id.generation)) =>
            {
                self.totals.false_suspicions += 1;
            }
            Event::Dead { id, .. } => {
                if let Some(j) = self.machines.index_of(&id.name) {
                    if !self.machines.crashed(j, id.generation) {
                        self.totals.false_deaths += 1;
                        *self.false_deaths_of.entry(id.name.clone()).or_default() += 1;
                        let inside = self.scenario.check_liveness && self.inside_envelope(j);
                        if !inside {
                            self.false_deaths_outside += 1;
                        }
                        let at = self.ms(self.now);
                        let declarer = self.machines.name(i).to_owned();
                        self.violations.add(
                            at,
                            checkers::NO_FALSE_DEATH_INSIDE_ENVELOPE,
                            checkers::no_false_death_inside_envelope(&declarer, &id.to_string(), inside),
                        );
                    }
                    let now = self.now;
                    self.deaths.entry((id.name.clone(), id.generation)).or_default().entry(i).or_insert(now);
                }
            }
            Event::Refuted { .. } => self.refuted += 1,
            Event::PathProblem { .. } => self.path_problems += 1,
            _ => {}
        }
        self.record(What::Membership { node: i, event: e });
    }

    /// A machine crashed: remember which generation, and when.
    pub(crate) fn note_crash(&mut self, node: usize, generation: u64) {
        self.crashes.push(Crash { node, generation, at: self.now });
    }

    pub(crate) fn deliver(&mut self, to: usize, from: usize, bytes: &[u8], stream: bool) {
        let arrival = self.machines.handle(to, from, bytes, stream, self.now);
        self.after(to, arrival);
    }

    /// What follows a message's arrival at machine `i`.
    fn after(&mut self, i: usize, arrival: Arrival) {
        match arrival {
            Arrival::Handled => {
                self.flush(i);
                self.schedule_wake(i);
            }
            Arrival::Late(at, job) => self.push(at, job),
            Arrival::Dropped | Arrival::Held => {}
        }
    }

    pub(crate) fn wake(&mut self, i: usize) {
        if self.machines.tick(i, self.now) {
            self.flush(i);
            self.schedule_wake(i);
        }
    }

    fn disagreements(&self) -> u64 {
        self.machines.disagreements(u64::MAX)
    }

    fn converged(&self) -> bool {
        self.machines.converged()
    }

    /// Partition `k` healed: check every 500 ms whether the cluster is one
    /// again, until `deadline`.
    pub(crate) fn start_heal_check(&mut self, k: usize) {
        let healed_at = self.ms(self.now);
        let lasted_ms = self.scenario.faults[k].duration().map_or(0.0, |d| d.as_secs_f64() * 1e3);
        self.heals.push(HealReport { fault: k, healed_at_ms: healed_at, lasted_ms, converged_after_ms: None });
        let deadline = self.now.saturating_add(self.scenario.heal_bound);
        self.push(self.now.saturating_add(Duration::from_millis(500)), Job::HealCheck(k, deadline));
    }

    fn heal_check(&mut self, k: usize, deadline: Instant) {
        // Another partition in force: the cluster cannot be one.
        if self.links.partitioned() {
            return;
        }
        let Some(h) = self.heals.iter().position(|h| h.fault == k) else { return };
        if self.converged() {
            let after = self.ms(self.now) - self.heals[h].healed_at_ms;
            self.heals[h].converged_after_ms = Some(after);
            return;
        }
        if self.now >= deadline {
            let (lasted, bound) = (self.heals[h].lasted_ms, self.scenario.heal_bound.as_secs_f64() * 1e3);
            let detail = checkers::healed_partition_converges_within_bound(k, lasted, bound, self.disagreements());
            let at = self.ms(self.now);
            self.violations.add(at, checkers::HEALED_PARTITIONS_CONVERGE_WITHIN_BOUND, detail);
            return;
        }
        self.push(self.now.saturating_add(Duration::from_millis(500)), Job::HealCheck(k, deadline));
    }

    /// Runs to the end of the scenario. `progress` is called with the
    /// fraction of virtual time done, about a hundred times.
    pub fn run(mut self, progress: &mut dyn FnMut(f64)) -> Report {
        let end = START.saturating_add(self.scenario.duration);
        let step = self.scenario.duration / 100;
        let mut next_progress = START.saturating_add(step);
        while let Some((at, job)) = self.queue.pop() {
            if at > end {
                break;
            }
            self.now = at;
            if at >= next_progress {
                progress((since_start(at).as_secs_f64() / self.scenario.duration.as_secs_f64()).min(1.0));
                next_progress = at.saturating_add(step);
            }
            match job {
                Job::Deliver { to, from, bytes, stream } => {
                    // An attacker on the wire captures what arrives.
                    if !stream {
                        let copies = self.sealer.capture(at, to, from, &bytes);
                        self.queue.extend(copies);
                    }
                    let arrival = self.machines.arrive(to, from, bytes, stream, at);
                    self.after(to, arrival);
                }
                Job::Replayed { to, from, bytes } => {
                    if self.machines.listening(to) {
                        self.deliver(to, from, &bytes, false);
                    } else {
                        self.sealer.copy_undelivered();
                    }
                }
                Job::Key(i, step) => self.sealer.step(self.machines.seal_mut(i), step),
                Job::Process { to, from, bytes, stream } => {
                    let arrival = self.machines.process(to, from, bytes, stream, at);
                    self.after(to, arrival);
                }
                Job::Wake { machine: i, generation: g } => {
                    if self.machines.timer_due(i, g) {
                        self.wake(i);
                    }
                }
                Job::FaultStart(k) => self.fault_start(k),
                Job::FaultEnd(k) => self.fault_end(k),
                Job::Check => {
                    if self.converged_ms.is_none() {
                        if self.disagreements() == 0 {
                            self.converged_ms = Some(self.ms(at));
                            self.record(What::Converged);
                        } else {
                            self.push(at.saturating_add(Duration::from_millis(500)), Job::Check);
                        }
                    }
                }
                Job::HealCheck(k, deadline) => self.heal_check(k, deadline),
                Job::Snapshot => {
                    self.snapshots.insert(at, self.totals);
                }
            }
        }
        self.now = end;
        self.snapshots.insert(end, self.totals);
        progress(1.0);
        self.finish()
    }

    /// Figures over `[from, to]` from the snapshots (which exist at every
    /// instant this is called with).
    fn stretch(&self, from: Instant, to: Instant) -> Stretch {
        let at = |t: Instant| self.snapshots.range(..=t).next_back().map(|(_, s)| *s).unwrap_or_default();
        let totals = at(to).since(&at(from));
        let secs = to.saturating_duration_since(from).as_secs_f64();
        let members = self.machines.running_at(from).max(1) as f64;
        let rate = |v: u64| if secs > 0.0 { v as f64 / members / secs } else { 0.0 };
        Stretch {
            from_ms: self.ms(from),
            to_ms: self.ms(to),
            totals,
            messages_per_member_second: rate(totals.messages),
            bytes_per_member_second: rate(totals.bytes),
            datagrams_per_member_second: rate(totals.datagrams),
            datagram_bytes_per_member_second: rate(totals.datagram_bytes),
        }
    }

    /// The crash's report, and how many survivors declared it within the
    /// bound if that is fewer than all and the bound can be checked.
    fn crash_report(&self, c: &Crash, end: Instant) -> (CrashReport, Option<usize>) {
        let bound = self.scenario.detection_bound;
        let horizon = c.at.saturating_add(bound).min(end);
        let survivors: Vec<usize> = (0..self.machines.len())
            .filter(|&j| j != c.node && self.machines.up_throughout(j, c.at, horizon))
            .collect();
        let declared = self.deaths.get(&(self.machines.name(c.node).to_owned(), c.generation));
        let mut times: Vec<f64> = survivors
            .iter()
            .filter_map(|j| declared.and_then(|d| d.get(j)))
            .map(|t| t.saturating_duration_since(c.at).as_secs_f64() * 1e3)
            .collect();
        times.sort_by(f64::total_cmp);
        // Extra traffic: the 30 s after the crash against the steady rate of
        // the 30 s before.
        let before = c.at.saturating_sub(TRAFFIC_WINDOW).max(START);
        let after = c.at.saturating_add(TRAFFIC_WINDOW).min(end);
        let base = self.stretch(before, c.at);
        let post = self.stretch(c.at, after);
        let post_secs = after.saturating_duration_since(c.at).as_secs_f64();
        let running_after = self.machines.running_at(c.at).max(1) as f64;
        let extra = |post_total: u64, base_rate: f64| {
            (before < c.at).then(|| post_total as f64 / running_after - base_rate * post_secs)
        };
        let report = CrashReport {
            node: c.node,
            generation: c.generation,
            at_ms: self.ms(c.at),
            survivors: survivors.len(),
            detected_by: times.len(),
            first_ms: times.first().copied().unwrap_or(f64::NAN),
            median_ms: median(&times),
            max_ms: times.last().copied().unwrap_or(f64::NAN),
            detection_times_ms: times.clone(),
            extra_messages_per_member: extra(post.totals.datagrams, base.datagrams_per_member_second),
            extra_bytes_per_member: extra(post.totals.datagram_bytes, base.datagram_bytes_per_member_second),
        };
        // A restart within the bound supersedes the old generation: not
        // declaring it dead is then correct. A bound past the end of the run
        // cannot be checked.
        let restarted = self.machines.restarted(c.node, c.at, horizon);
        let checkable = !restarted && c.at.saturating_add(bound) <= end;
        let bound_ms = bound.as_secs_f64() * 1e3;
        let in_time = times.iter().filter(|&&t| t <= bound_ms).count();
        (report, (checkable && in_time < survivors.len()).then_some(in_time))
    }

    fn finish(mut self) -> Report {
        let end = self.now;
        let secs = self.scenario.duration.as_secs_f64();
        let n = self.machines.len() as f64;
        let member_hours = n * secs / 3600.0;
        let mut crashes = Vec::new();
        for c in self.crashes.clone() {
            let (report, missed) = self.crash_report(&c, end);
            if let Some(in_time) = missed {
                let bound_ms = self.scenario.detection_bound.as_secs_f64() * 1e3;
                let detail = checkers::every_crash_detected_within_bound(
                    &format!("n{}#{}", c.node, c.generation),
                    report.survivors,
                    in_time,
                    bound_ms,
                );
                self.violations.add(self.ms(c.at), checkers::EVERY_CRASH_DETECTED_WITHIN_BOUND, detail);
            }
            crashes.push(report);
        }
        let first_fault = self.scenario.faults.iter().map(|f| START.saturating_add(f.at())).min().unwrap_or(end);
        let steady = self.stretch(START, first_fault);
        let fault_windows = self
            .scenario
            .faults
            .iter()
            .enumerate()
            .filter_map(|(k, f)| {
                let start = START.saturating_add(f.at());
                let stop = start.saturating_add(f.duration()?).min(end);
                Some(FaultWindow {
                    fault: k,
                    kind: f.kind(),
                    during: self.stretch(start, stop),
                    after: self.stretch(stop, end),
                })
            })
            .collect();
        let totals = self.totals;
        Report {
            scenario: self.scenario.name.clone(),
            nodes: self.machines.len(),
            seed: self.scenario.seed,
            virtual_secs: secs,
            crashes,
            totals,
            false_suspicions: totals.false_suspicions,
            false_deaths: totals.false_deaths,
            false_deaths_outside_envelope: self.false_deaths_outside,
            false_deaths_of: std::mem::take(&mut self.false_deaths_of),
            refuted: self.refuted,
            path_problems: self.path_problems,
            false_suspicions_per_member_hour: totals.false_suspicions as f64 / member_hours,
            false_deaths_per_member_hour: totals.false_deaths as f64 / member_hours,
            messages_per_member_second: totals.messages as f64 / n / secs,
            bytes_per_member_second: totals.bytes as f64 / n / secs,
            messages_by_kind: std::mem::take(&mut self.by_kind),
            steady,
            fault_windows,
            heals: std::mem::take(&mut self.heals),
            violations: std::mem::take(&mut self.violations),
            converged_ms: self.converged_ms,
            ineffective_faults: std::mem::take(&mut self.ineffective_faults),
            sealing: self.sealer.report(self.machines.seals()),
            final_disagreements: self.disagreements(),
            log_hash: self.log.hash(),
            records: self.log.into_records(),
        }
    }
}
