//! The simulation loop: virtual time, the nodes, the event queue, and the
//! bookkeeping that becomes the report.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vigil_detector::Instant;
use vigil_membership::seal::Seal;
use vigil_membership::wire::{MAX_DATAGRAM, MAX_STREAM};
use vigil_membership::{Config, ConfigError, Event, Node, NodeId, Status};

use crate::checkers::{self, Violations};
use crate::clock::{START, since_start};
use crate::job::Job;
use crate::links::Links;
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

/// One simulated machine: the node it runs (if up) and what the faults do
/// to it.
pub(crate) struct SimNode {
    pub(crate) node: Option<Node>,
    pub(crate) name: String,
    pub(crate) generation: u64,
    pub(crate) addr: SocketAddr,
    /// Generations of this machine that crashed.
    pub(crate) crashed: Vec<u64>,
    /// Down since, for each time it went down: (crash, restart).
    pub(crate) downs: Vec<(Instant, Option<Instant>)>,
    pub(crate) paused_until: Option<Instant>,
    /// Messages that arrived during a pause: (from, bytes, stream).
    pub(crate) inbox: Vec<(usize, Vec<u8>, bool)>,
    pub(crate) slow: Duration,
    /// Outside the liveness envelope until then (after a fault of its own).
    pub(crate) disturbed_until: Instant,
    timer_gen: u64,
    scheduled: Option<Instant>,
    pub(crate) epoch: (u64, u64),
    /// The node's probe and accusation counters last seen.
    pub(crate) seen: (u64, u64),
    /// What it sends is sealed with this, and what it receives opened.
    pub(crate) seal: Seal,
}

impl SimNode {
    /// Whether the machine was up throughout `[from, to]`.
    fn up_throughout(&self, from: Instant, to: Instant) -> bool {
        self.downs.iter().all(|&(down, up)| down > to || up.is_some_and(|u| u <= from))
    }

    fn up_at(&self, t: Instant) -> bool {
        self.up_throughout(t, t)
    }
}

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
    pub(crate) nodes: Vec<SimNode>,
    by_addr: HashMap<SocketAddr, usize>,
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

/// The seed node `i` joins through, as a cluster of agents is started.
pub(crate) fn seed_of(i: usize) -> usize {
    usize::from(i == 0)
}

pub(crate) fn addr_of(i: usize) -> SocketAddr {
    let i = i as u32;
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, (i >> 16) as u8, (i >> 8) as u8, i as u8), 7946))
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
        // One copy of each name, shared by every node's table.
        let shared: Vec<(Arc<str>, u64, SocketAddr)> =
            (0..n).map(|i| (Arc::from(format!("n{i}")), 1, addr_of(i))).collect();
        let mut nodes = Vec::with_capacity(n);
        for (name, generation, addr) in &shared {
            let seed = rng.random::<u64>();
            let id = NodeId::new(name.to_string(), *generation);
            let mut node = Node::new(id, *addr, config.clone(), seed, START).map_err(SimError::Config)?;
            node.bootstrap_shared(START, &shared);
            // As a cluster of agents is started: every member joins through
            // a seed (n0; n0 through n1), which it goes back to whenever it
            // knows no live member.
            node.set_seeds(START, &[addr_of(seed_of(nodes.len()))]);
            nodes.push(SimNode {
                node: Some(node),
                name: name.to_string(),
                generation: *generation,
                addr: *addr,
                crashed: Vec::new(),
                downs: Vec::new(),
                paused_until: None,
                inbox: Vec::new(),
                slow: Duration::ZERO,
                disturbed_until: START,
                timer_gen: 0,
                scheduled: None,
                epoch: (*generation, 0),
                seen: (0, 0),
                seal: sealer.seal_for_start(None, crate::clock::unix_secs(START)),
            });
        }
        let by_addr = nodes.iter().enumerate().map(|(i, n)| (n.addr, i)).collect();
        let mut sim = Sim {
            scenario: scenario.clone(),
            config,
            now: START,
            queue: Queue::default(),
            nodes,
            by_addr,
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

    pub(crate) fn push(&mut self, at: Instant, job: Job) {
        self.queue.push(at, job);
    }

    pub(crate) fn queue_jobs(&mut self, jobs: Vec<(Instant, Job)>) {
        self.queue.extend(jobs);
    }

    pub(crate) fn schedule_wake(&mut self, i: usize) {
        let slow = self.nodes[i].slow;
        let Some(node) = self.nodes[i].node.as_ref() else { return };
        let Some(t) = node.poll_timeout() else { return };
        let at = t.max(self.now).saturating_add(slow);
        if self.nodes[i].scheduled == Some(at) {
            return;
        }
        self.nodes[i].scheduled = Some(at);
        self.nodes[i].timer_gen += 1;
        let g = self.nodes[i].timer_gen;
        self.push(at, Job::Wake { machine: i, generation: g });
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
        let mut out = Vec::new();
        let mut events = Vec::new();
        let Some(node) = self.nodes[i].node.as_mut() else { return };
        while let Some(t) = node.poll_transmit() {
            out.push(t);
        }
        while let Some(e) = node.poll_event() {
            events.push(e);
        }
        let stats = node.stats();
        let seen = (stats.probes, stats.suspicions_started);
        let epoch = (node.id().generation, node.incarnation());
        let sn = &mut self.nodes[i];
        self.totals.probes += seen.0.saturating_sub(sn.seen.0);
        self.totals.accusations += seen.1.saturating_sub(sn.seen.1);
        sn.seen = seen;
        for t in out {
            // What goes on the wire: sealed, when the cluster seals.
            let seal = &mut self.nodes[i].seal;
            seal.tick(crate::clock::unix_secs(self.now));
            let bytes = seal.seal(&t.bytes);
            self.totals.messages += 1;
            self.totals.bytes += bytes.len() as u64;
            if !t.stream {
                self.totals.datagrams += 1;
                self.totals.datagram_bytes += bytes.len() as u64;
            }
            *self.by_kind.entry(t.kind.name()).or_default() += 1;
            let Some(&to) = self.by_addr.get(&t.to) else { continue };
            if let Some(latency) = self.links.send(i, to, t.stream, &mut self.rng) {
                let at = self.now.saturating_add(latency);
                self.push(at, Job::Deliver { to, from: i, bytes, stream: t.stream });
            }
        }
        for e in events {
            self.observe(i, e);
        }
        let before = self.nodes[i].epoch;
        let name = self.nodes[i].name.clone();
        let at = self.ms(self.now);
        self.violations.add(at, checkers::EPOCHS_NEVER_DECREASE, checkers::epoch_never_decreases(&name, before, epoch));
        self.nodes[i].epoch = epoch;
        self.nodes[i].generation = epoch.0;
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        name.strip_prefix('n').and_then(|s| s.parse().ok()).filter(|&i: &usize| i < self.nodes.len())
    }

    /// Whether node `j` is inside the liveness envelope right now.
    fn inside_envelope(&self, j: usize) -> bool {
        let n = &self.nodes[j];
        n.node.is_some()
            && n.paused_until.is_none()
            && n.slow.is_zero()
            && self.now >= n.disturbed_until
            && self.links.calm_for(j, self.now, self.scenario.envelope.max_loss)
    }

    fn observe(&mut self, i: usize, e: Event) {
        match &e {
            Event::Suspected { id, .. }
                if self.index_of(&id.name).is_some_and(|j| !self.nodes[j].crashed.contains(&id.generation)) =>
            {
                self.totals.false_suspicions += 1;
            }
            Event::Dead { id, .. } => {
                if let Some(j) = self.index_of(&id.name) {
                    if !self.nodes[j].crashed.contains(&id.generation) {
                        self.totals.false_deaths += 1;
                        *self.false_deaths_of.entry(id.name.clone()).or_default() += 1;
                        let inside = self.scenario.check_liveness && self.inside_envelope(j);
                        if !inside {
                            self.false_deaths_outside += 1;
                        }
                        let at = self.ms(self.now);
                        let declarer = self.nodes[i].name.clone();
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

    /// A machine crashed: remember which generation, and since when it is
    /// down.
    pub(crate) fn note_crash(&mut self, node: usize, generation: u64) {
        let now = self.now;
        let sn = &mut self.nodes[node];
        sn.crashed.push(generation);
        sn.downs.push((now, None));
        self.crashes.push(Crash { node, generation, at: now });
    }

    pub(crate) fn note_restart(&mut self, node: usize) {
        let now = self.now;
        if let Some(last) = self.nodes[node].downs.last_mut() {
            last.1 = Some(now);
        }
    }

    pub(crate) fn deliver(&mut self, to: usize, from: usize, bytes: &[u8], stream: bool) {
        let now = self.now;
        let from_addr = self.nodes[from].addr;
        let sn = &mut self.nodes[to];
        let Some(node) = sn.node.as_mut() else { return };
        let max = if stream { MAX_STREAM } else { MAX_DATAGRAM };
        // A packet that does not open (forged, replayed, of another key) is
        // counted by the seal and never reaches the protocol.
        sn.seal.tick(crate::clock::unix_secs(now));
        let Ok(plain) = sn.seal.open(bytes, max) else { return };
        let _ = if stream {
            node.handle_stream(now, from_addr, &plain)
        } else {
            node.handle_datagram(now, from_addr, &plain)
        };
        self.flush(to);
        self.schedule_wake(to);
    }

    pub(crate) fn wake(&mut self, i: usize) {
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.handle_timeout(now);
            self.flush(i);
            self.schedule_wake(i);
        }
    }

    /// Pairs of live nodes (observer, member) where the observer does not
    /// see the member alive with its current generation.
    fn disagreements(&self) -> u64 {
        self.count_disagreements(u64::MAX)
    }

    /// Whether every live node sees every other live node alive.
    fn converged(&self) -> bool {
        self.count_disagreements(1) == 0
    }

    /// As [`Sim::disagreements`], stopping at `enough`.
    fn count_disagreements(&self, enough: u64) -> u64 {
        let mut count = 0;
        for (i, a) in self.nodes.iter().enumerate() {
            let Some(node) = &a.node else { continue };
            for (j, b) in self.nodes.iter().enumerate() {
                if i == j || b.node.is_none() {
                    continue;
                }
                let sees =
                    node.member(&b.name).is_some_and(|m| m.id.generation == b.generation && m.status == Status::Alive);
                count += u64::from(!sees);
                if count >= enough {
                    return count;
                }
            }
        }
        count
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
                    if self.nodes[to].node.is_none() {
                        continue;
                    }
                    if self.nodes[to].paused_until.is_some() {
                        self.nodes[to].inbox.push((from, bytes, stream));
                        continue;
                    }
                    let slow = self.nodes[to].slow;
                    if !slow.is_zero() {
                        // A starved node handles the message late.
                        self.push(at.saturating_add(slow), Job::Process { to, from, bytes, stream });
                        continue;
                    }
                    self.deliver(to, from, &bytes, stream);
                }
                Job::Replayed { to, from, bytes } => {
                    if self.nodes[to].node.is_some() && self.nodes[to].paused_until.is_none() {
                        self.deliver(to, from, &bytes, false);
                    } else {
                        self.sealer.copy_undelivered();
                    }
                }
                Job::Key(i, step) => self.sealer.step(&mut self.nodes[i].seal, step),
                Job::Process { to, from, bytes, stream } => {
                    if self.nodes[to].paused_until.is_some() {
                        self.nodes[to].inbox.push((from, bytes, stream));
                    } else {
                        self.deliver(to, from, &bytes, stream);
                    }
                }
                Job::Wake { machine: i, generation: g } => {
                    if g != self.nodes[i].timer_gen || self.nodes[i].paused_until.is_some() {
                        continue;
                    }
                    self.nodes[i].scheduled = None;
                    self.wake(i);
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

    /// Nodes up at `t`.
    fn running_at(&self, t: Instant) -> usize {
        self.nodes.iter().filter(|n| n.up_at(t)).count()
    }

    /// Figures over `[from, to]` from the snapshots (which exist at every
    /// instant this is called with).
    fn stretch(&self, from: Instant, to: Instant) -> Stretch {
        let at = |t: Instant| self.snapshots.range(..=t).next_back().map(|(_, s)| *s).unwrap_or_default();
        let totals = at(to).since(&at(from));
        let secs = to.saturating_duration_since(from).as_secs_f64();
        let members = self.running_at(from).max(1) as f64;
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
        let survivors: Vec<usize> =
            (0..self.nodes.len()).filter(|&j| j != c.node && self.nodes[j].up_throughout(c.at, horizon)).collect();
        let declared = self.deaths.get(&(self.nodes[c.node].name.clone(), c.generation));
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
        let running_after = self.running_at(c.at).max(1) as f64;
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
        let restarted =
            self.nodes[c.node].downs.iter().any(|&(down, up)| down == c.at && up.is_some_and(|u| u <= horizon));
        let checkable = !restarted && c.at.saturating_add(bound) <= end;
        let bound_ms = bound.as_secs_f64() * 1e3;
        let in_time = times.iter().filter(|&&t| t <= bound_ms).count();
        (report, (checkable && in_time < survivors.len()).then_some(in_time))
    }

    fn finish(mut self) -> Report {
        let end = self.now;
        let secs = self.scenario.duration.as_secs_f64();
        let n = self.nodes.len() as f64;
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
            nodes: self.nodes.len(),
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
            sealing: self.sealer.report(self.nodes.iter().map(|n| &n.seal)),
            final_disagreements: self.disagreements(),
            log_hash: self.log.hash(),
            records: self.log.into_records(),
        }
    }
}
