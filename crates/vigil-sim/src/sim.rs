//! The simulation loop: virtual time and the queue of jobs. Each job is
//! handed to the component it concerns (the machines, the links, the
//! sealer, the recorder), and the jobs they return are queued.

use std::fmt;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;
use vigil_detector::Instant;
use vigil_membership::{Config, ConfigError, Node, NodeView};

use crate::clock::{START, since_start};
use crate::fault::{Action, Fault};
use crate::job::Job;
use crate::lease::Lease;
use crate::links::{Carrier, Links};
use crate::machines::{Arrival, Machines};
use crate::preset::preset;
use crate::queue::Queue;
use crate::record::What;
use crate::recorder::Recorder;
use crate::report::Report;
use crate::scenario::{Scenario, ScenarioError};
use crate::sealer::Sealer;

/// A simulation that cannot start.
///
/// # Example
///
/// ```
/// use vigil_sim::{Scenario, Sim, SimError};
///
/// let Err(e) = Sim::new(&Scenario::new("alone", 1)) else { panic!("one node is no cluster") };
/// assert!(matches!(e, SimError::Scenario(_)));
/// assert_eq!(e.to_string(), "invalid scenario: nodes: 1 is outside 2 to 100000");
/// ```
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

/// The simulator. Build with [`Sim::new`] or [`Sim::with_config`], then
/// [`Sim::run`].
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_sim::{Fault, Scenario, Sim, Timed};
///
/// let mut s = Scenario::new("a pause", 10);
/// s.duration = Duration::from_secs(30);
/// s.faults.push(Timed::new(Duration::from_secs(10), Fault::Pause { node: 4 }).lasting(Duration::from_secs(2)));
/// let mut done = 0.0;
/// let report = Sim::new(&s)?.run(&mut |fraction| done = fraction);
/// assert_eq!(done, 1.0);
/// assert!(report.violations.is_empty(), "{:?}", report.violations);
/// # Ok::<(), vigil_sim::SimError>(())
/// ```
pub struct Sim {
    scenario: Scenario,
    /// The protocol configuration every node runs (restarted ones too).
    config: Config,
    now: Instant,
    queue: Queue,
    /// The run's random stream: node seeds and the network's draws.
    rng: ChaCha8Rng,
    machines: Machines,
    links: Links,
    sealer: Sealer,
    recorder: Recorder,
    /// The lease `lease-majority` asks for.
    lease: Lease,
    /// The sender of the stream message being handled: the first stream
    /// message back to it is an answer on the same connection.
    answering: Option<usize>,
    /// Forgeries in force, by scenario entry.
    forging: std::collections::BTreeSet<usize>,
    /// Errors reported, by scenario entry.
    erring: std::collections::BTreeSet<usize>,
    /// Impostors running, by scenario entry: their machines.
    impostors: std::collections::BTreeMap<usize, usize>,
}

impl Sim {
    /// A simulator for `scenario`, every node running its protocol's preset.
    ///
    /// # Errors
    ///
    /// [`SimError::Scenario`] if the scenario does not validate.
    ///
    /// # Example
    ///
    /// ```
    /// use vigil_sim::{Protocol, Scenario, Sim};
    ///
    /// let mut s = Scenario::new("classic", 5);
    /// s.protocol = Protocol::Classic;
    /// assert!(Sim::new(&s).is_ok());
    /// ```
    pub fn new(scenario: &Scenario) -> Result<Sim, SimError> {
        Sim::with_config(scenario, preset(scenario.protocol))
    }

    /// As [`Sim::new`], with a protocol configuration of your own (its
    /// cluster id is kept; the scenario's protocol is ignored, its
    /// `downing`, when given, replaces the configuration's).
    ///
    /// # Errors
    ///
    /// [`SimError::Scenario`] or [`SimError::Config`] if either does not
    /// validate.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::{CLUSTER, Scenario, Sim, SimError};
    /// use vigil_membership::Config;
    ///
    /// let mut s = Scenario::new("slower heartbeats", 5);
    /// s.duration = Duration::from_secs(20);
    /// let config = Config::lan(CLUSTER).with_heartbeat_interval(Duration::from_secs(2));
    /// let report = Sim::with_config(&s, config)?.run(&mut |_| {});
    /// assert_eq!(report.false_deaths, 0);
    ///
    /// let mut broken = Config::lan(CLUSTER);
    /// broken.observers = 0;
    /// assert!(matches!(Sim::with_config(&s, broken), Err(SimError::Config(_))));
    /// # Ok::<(), SimError>(())
    /// ```
    pub fn with_config(scenario: &Scenario, mut config: Config) -> Result<Sim, SimError> {
        scenario.validate().map_err(SimError::Scenario)?;
        if let Some(d) = &scenario.downing {
            config.downing = d.settings().map_err(SimError::Scenario)?;
            if d.gray_evidence {
                config.gray.share = true;
                config.gray.counts_for_downing = true;
            }
        }
        config.validate().map_err(SimError::Config)?;
        let mut rng = ChaCha8Rng::seed_from_u64(scenario.seed);
        let mut sealer = Sealer::new(scenario);
        let join = scenario.start == crate::scenario::Start::Join;
        let machines = Machines::new(scenario.nodes, &config, &mut rng, &mut sealer, join).map_err(SimError::Config)?;
        let mut queue = Queue::default();
        queue.extend(Recorder::snapshot_jobs(scenario));
        for (k, f) in scenario.faults.iter().enumerate() {
            queue.push(START.saturating_add(f.at), Job::FaultStart(k));
        }
        let mut sim = Sim {
            scenario: scenario.clone(),
            config,
            now: START,
            queue,
            rng,
            machines,
            links: Links::new(scenario.seed, scenario.network.clone()),
            answering: None,
            sealer,
            recorder: Recorder::new(scenario),
            lease: Lease::default(),
            forging: std::collections::BTreeSet::new(),
            erring: std::collections::BTreeSet::new(),
            impostors: std::collections::BTreeMap::new(),
        };
        for i in 0..scenario.nodes {
            sim.schedule_wake(i);
        }
        if let Some(after) = scenario.converge_after {
            sim.queue.push(START.saturating_add(after), Job::Check);
        }
        Ok(sim)
    }

    /// Keeps every record of the run in the report (for inspection and
    /// tests); they are always hashed.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::{Fault, Scenario, Sim, Timed};
    ///
    /// let mut s = Scenario::new("a crash", 5);
    /// s.duration = Duration::from_secs(20);
    /// s.faults.push(Timed::new(Duration::from_secs(5), Fault::Crash { node: 1 }));
    /// let kept = Sim::new(&s)?.keep_records(true).run(&mut |_| {});
    /// let hashed = Sim::new(&s)?.run(&mut |_| {});
    /// assert!(!kept.records.is_empty() && hashed.records.is_empty());
    /// assert_eq!(kept.log_hash, hashed.log_hash);
    /// # Ok::<(), vigil_sim::SimError>(())
    /// ```
    pub fn keep_records(mut self, keep: bool) -> Sim {
        self.recorder.keep_records(keep);
        self
    }

    /// The node machine `i` runs: `None` if the machine is down or there
    /// is no machine `i`. Everything a node knows (its members, their
    /// states, its own incarnation) is read through it.
    ///
    /// # Example
    ///
    /// ```
    /// use vigil_sim::{Scenario, Sim};
    ///
    /// let sim = Sim::new(&Scenario::new("x", 5))?;
    /// let n0 = sim.node(0).expect("every machine starts up");
    /// assert_eq!(n0.id().name, "n0");
    /// assert!(n0.member("n4").is_some());
    /// assert!(sim.node(5).is_none());
    /// # Ok::<(), vigil_sim::SimError>(())
    /// ```
    pub fn node(&self, i: usize) -> Option<&Node> {
        self.machines.node(i)
    }

    /// Runs to the end of the scenario. `progress` is called with the
    /// fraction of virtual time done, about a hundred times.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::{Scenario, Sim};
    ///
    /// let mut s = Scenario::new("x", 5);
    /// s.duration = Duration::from_secs(20);
    /// let mut calls = 0;
    /// let report = Sim::new(&s)?.run(&mut |_| calls += 1);
    /// assert!((90..=110).contains(&calls), "{calls}");
    /// assert_eq!(report.virtual_secs, 20.0);
    /// # Ok::<(), vigil_sim::SimError>(())
    /// ```
    pub fn run(mut self, progress: &mut dyn FnMut(f64)) -> Report {
        let end = START.saturating_add(self.scenario.duration);
        self.advance(end, progress);
        self.now = end;
        self.recorder.snapshot(end);
        progress(1.0);
        let sealing = self.sealer.report(self.machines.seals());
        self.recorder.finish(&self.scenario, end, &self.machines, sealing)
    }

    /// Runs the scenario up to `at` of virtual time (from its start, and no
    /// further than its end), then stops, so that a test can look at the
    /// nodes in the middle of a run ([`Sim::snapshot`]); [`Sim::run`] goes
    /// on from there. The same seed gives the same state at the same time,
    /// however the run is cut.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_sim::{Fault, Scenario, Sim, Timed};
    ///
    /// let mut s = Scenario::new("a crash", 5);
    /// s.duration = Duration::from_secs(60);
    /// s.faults.push(Timed::new(Duration::from_secs(10), Fault::Crash { node: 4 }));
    /// let mut sim = Sim::new(&s)?;
    /// sim.run_until(Duration::from_secs(9));
    /// assert_eq!(sim.snapshot(0).unwrap().member("n4").map(|m| m.status), Some(vigil_membership::Status::Alive));
    /// sim.run_until(Duration::from_secs(40));
    /// assert_eq!(sim.snapshot(0).unwrap().member("n4").map(|m| m.status), Some(vigil_membership::Status::Dead));
    /// assert!(sim.snapshot(4).is_none(), "a crashed node has no state to show");
    /// let report = sim.run(&mut |_| {});
    /// assert!(report.violations.is_empty());
    /// # Ok::<(), vigil_sim::SimError>(())
    /// ```
    pub fn run_until(&mut self, at: Duration) {
        let until = START.saturating_add(at.min(self.scenario.duration));
        self.advance(until, &mut |_| {});
        self.now = self.now.max(until);
    }

    /// Everything node `i` knows at the current virtual time (the start
    /// before a run, or where [`Sim::run_until`] stopped): its members, the
    /// detectors of those it watches, its queues and counters, as the
    /// runtime's snapshot has them ([`vigil_membership::Node::snapshot`]).
    /// `None` while it is down, or if there is no node `i`.
    ///
    /// # Example
    ///
    /// ```
    /// use vigil_sim::{Scenario, Sim};
    ///
    /// let sim = Sim::new(&Scenario::new("x", 3))?;
    /// let view = sim.snapshot(0).expect("n0 runs");
    /// assert_eq!((view.id.name.as_str(), view.members.len()), ("n0", 2));
    /// # Ok::<(), vigil_sim::SimError>(())
    /// ```
    pub fn snapshot(&self, i: usize) -> Option<NodeView> {
        self.machines.node(i).map(|n| n.snapshot(self.now))
    }

    /// Does the jobs due by `until`, in order, calling `progress` with the
    /// fraction of the scenario done about a hundred times over a whole run.
    fn advance(&mut self, until: Instant, progress: &mut dyn FnMut(f64)) {
        let step = self.scenario.duration / 100;
        let mut next_progress = self.now.max(START).saturating_add(step);
        while let Some((at, job)) = self.queue.pop_due(until) {
            self.now = at;
            if at >= next_progress {
                progress((since_start(at).as_secs_f64() / self.scenario.duration.as_secs_f64()).min(1.0));
                next_progress = at.saturating_add(step);
            }
            self.handle(job);
        }
    }

    /// Does one job, at the current time.
    fn handle(&mut self, job: Job) {
        let now = self.now;
        match job {
            Job::Deliver { to, from, bytes, stream } => {
                // An attacker on the wire captures what arrives.
                if !stream {
                    let copies = self.sealer.capture(now, to, from, &bytes);
                    self.queue.extend(copies);
                }
                let arrival = self.machines.arrive(to, from, bytes, stream, now);
                self.after_message(to, from, stream, arrival);
            }
            Job::Process { to, from, bytes, stream } => {
                let arrival = self.machines.process(to, from, bytes, stream, now);
                self.after_message(to, from, stream, arrival);
            }
            Job::Replayed { to, from, bytes } => {
                if self.machines.listening(to) {
                    self.deliver(to, from, &bytes, false);
                } else {
                    self.sealer.copy_undelivered();
                }
            }
            Job::Wake { machine, generation } => {
                if self.machines.timer_due(machine, generation) {
                    self.wake(machine);
                }
            }
            Job::Key(i, step) => self.sealer.step(self.machines.seal_mut(i), step),
            Job::Forge(k, tick) => self.forge(k, tick),
            Job::Errors(k) => self.errors(k),
            Job::ImpostorGone(k) => {
                if let Some(i) = self.impostors.remove(&k) {
                    self.machines.drop_impostor(i);
                }
            }
            Job::FaultStart(k) => self.start(k),
            Job::FaultEnd(k) => self.end(k),
            Job::Check => {
                let next = self.recorder.converge_check(now, &self.machines);
                self.queue.extend(next);
            }
            Job::HealCheck(k, deadline) => {
                let next = self.recorder.heal_check(k, deadline, now, &self.machines, &self.links);
                self.queue.extend(next);
            }
            Job::Snapshot => self.recorder.snapshot(now),
        }
    }

    /// Scenario entry `k` starts: applied to the component it concerns,
    /// and recorded if it changed anything.
    fn start(&mut self, k: usize) {
        let t = self.scenario.faults[k].clone();
        let now = self.now;
        let end = t.duration.map(|d| now.saturating_add(d));
        // Validation gave whatever lasts a duration.
        let lasting = t.duration.unwrap_or_default();
        let applied = match &t.action {
            Action::Fault(Fault::Crash { node }) => {
                let crashed = self.machines.crash(*node, now);
                if let Some(generation) = crashed {
                    self.recorder.crashed(*node, generation, now);
                }
                crashed.is_some()
            }
            Action::Fault(Fault::Restart { node }) => {
                let restarted = self.machines.restart(*node, now, &self.config, &mut self.rng, &mut self.sealer);
                if restarted {
                    self.settle(*node);
                }
                restarted
            }
            Action::Fault(Fault::Pause { node }) => self.machines.pause(*node, end),
            Action::Fault(Fault::Slow { node, delay }) => {
                self.machines.slow(*node, *delay);
                true
            }
            Action::Fault(Fault::Block { from, to }) => {
                self.links.block(*from, *to);
                true
            }
            Action::Fault(Fault::Partition { split }) => {
                self.links.partition(*split);
                self.recorder.partitioned(k, *split, now);
                true
            }
            Action::Fault(Fault::Loss { p }) => {
                self.links.add_loss(*p);
                true
            }
            Action::Fault(Fault::Lossy { node, p, way }) => {
                self.links.make_lossy(*node, *p, *way);
                true
            }
            Action::Fault(Fault::Degrade { base_ms, jitter_ms }) => {
                self.links.degrade(*base_ms, *jitter_ms);
                true
            }
            Action::Fault(Fault::Replay) => {
                self.sealer.start_replay(now, lasting);
                true
            }
            Action::Fault(Fault::Forge { .. }) => {
                self.forging.insert(k);
                self.queue.push(now, Job::Forge(k, 0));
                true
            }
            Action::Fault(Fault::Errors { .. }) => {
                self.erring.insert(k);
                self.queue.push(now, Job::Errors(k));
                true
            }
            Action::Fault(Fault::LeaseDown) => {
                self.lease.down();
                self.recorder.lease_down(now);
                true
            }
            Action::Fault(Fault::Impostor { node }) => {
                match self.machines.spawn_impostor(*node, now, &self.config, &mut self.rng, &mut self.sealer) {
                    Some(i) => {
                        self.impostors.insert(k, i);
                        self.settle(i);
                        true
                    }
                    None => false,
                }
            }
            Action::Operation(operation) => {
                let steps = self.sealer.start(operation, now, lasting, self.machines.len());
                self.queue.extend(steps);
                true
            }
        };
        if applied {
            self.recorder.record(now, What::FaultStarted { fault: k });
            if let Some(end) = end {
                self.queue.push(end, Job::FaultEnd(k));
            }
        } else {
            self.recorder.ineffective(k);
        }
    }

    /// Scenario entry `k` ends: undone, and what it touched stays outside
    /// the liveness envelope for the grace period.
    fn end(&mut self, k: usize) {
        let t = self.scenario.faults[k].clone();
        let now = self.now;
        let calm = now.saturating_add(self.scenario.envelope.grace);
        self.recorder.record(now, What::FaultEnded { fault: k });
        // An operation queued all its steps when it started: nothing to undo.
        let Action::Fault(fault) = &t.action else { return };
        match *fault {
            Fault::Pause { node } => {
                for (from, bytes, stream) in self.machines.resume(node, calm) {
                    self.deliver(node, from, &bytes, stream);
                }
                self.wake(node);
            }
            Fault::Slow { node, .. } => self.machines.unslow(node, calm),
            Fault::Block { from, to } => {
                self.links.unblock(from, to);
                self.machines.disturbed_until(from, calm);
                self.machines.disturbed_until(to, calm);
            }
            Fault::Partition { split } => {
                self.links.heal(split);
                self.links.disturbed_until(calm);
                let (at, check) = self.recorder.healed(k, t.duration.unwrap_or_default(), now, &self.machines);
                self.queue.push(at, check);
            }
            Fault::Lossy { node, p, way } => {
                self.links.end_lossy(node, p, way);
                self.machines.disturbed_until(node, calm);
            }
            Fault::Loss { p } => {
                self.links.remove_loss(p);
                if p > self.scenario.envelope.max_loss {
                    self.links.disturbed_until(calm);
                }
            }
            Fault::Degrade { base_ms, jitter_ms } => {
                self.links.restore(base_ms, jitter_ms);
                self.links.disturbed_until(calm);
            }
            Fault::Forge { .. } => {
                self.forging.remove(&k);
            }
            Fault::Errors { .. } => {
                self.erring.remove(&k);
            }
            Fault::LeaseDown => {
                self.lease.up();
                self.recorder.lease_up(now);
            }
            Fault::Impostor { .. } => {
                if let Some(&i) = self.impostors.get(&k) {
                    self.machines.stop_impostor(i, now);
                    self.settle(i);
                    self.queue.push(now.saturating_add(std::time::Duration::from_secs(1)), Job::ImpostorGone(k));
                }
            }
            // Nothing to undo: a crash or a restart is over at once, and a
            // replay stops capturing by itself.
            Fault::Crash { .. } | Fault::Restart { .. } | Fault::Replay => {}
        }
    }

    /// Scenario entry `k` (a forgery) sends its datagrams of tick `tick` to
    /// every running member but its sender, and the next tick a second
    /// later while it lasts: a stranger's plaintext, from an address no
    /// machine has, straight to each member; a member's, sealed, over the
    /// links from its own address.
    fn forge(&mut self, k: usize, tick: u64) {
        if !self.forging.contains(&k) {
            return;
        }
        let Action::Fault(Fault::Forge { by, forgery }) = self.scenario.faults[k].action else { return };
        let known = self.machines.known();
        let packets = crate::adversary::forge(by, forgery, &known, tick);
        let targets: Vec<usize> = known.iter().map(|m| m.index).collect();
        self.recorder.forged(packets.len() * targets.len());
        for bytes in packets {
            for &to in &targets {
                match by {
                    crate::fault::Forger::Stranger => {
                        let arrival =
                            self.machines.handle_from(to, crate::adversary::STRANGER, &bytes, false, self.now);
                        self.after(to, arrival);
                    }
                    crate::fault::Forger::Insider { node } => {
                        if to == node {
                            continue;
                        }
                        let sealed = self.machines.seal_mut(node).seal(&bytes);
                        if let Some(latency) = self.links.send(node, to, Carrier::Datagram, &mut self.rng) {
                            let job = Job::Deliver { to, from: node, bytes: sealed, stream: false };
                            self.queue.push(self.now.saturating_add(latency), job);
                        }
                    }
                }
            }
        }
        self.queue.push(self.now.saturating_add(std::time::Duration::from_secs(1)), Job::Forge(k, tick + 1));
    }

    /// Scenario entry `k` (errors) reports one failed request of its
    /// machine's application to the victim, and the next two seconds later
    /// while it lasts (not while the machine is down or paused: its
    /// application is too).
    fn errors(&mut self, k: usize) {
        if !self.erring.contains(&k) {
            return;
        }
        let Action::Fault(Fault::Errors { by, victim }) = self.scenario.faults[k].action else { return };
        let name = self.machines.name(victim).to_owned();
        if self.machines.record_failure(by, &name, self.now) {
            self.settle(by);
        }
        // Its application fails the requests: the victim is faulty as far
        // as the checkers go, and for the grace period after.
        let calm = self.now.saturating_add(self.scenario.envelope.grace);
        self.machines.disturbed_until(victim, calm);
        self.queue.push(self.now.saturating_add(std::time::Duration::from_secs(2)), Job::Errors(k));
    }

    /// A message reaches machine `to` now, straight to its node.
    fn deliver(&mut self, to: usize, from: usize, bytes: &[u8], stream: bool) {
        let arrival = self.machines.handle(to, from, bytes, stream, self.now);
        self.after_message(to, from, stream, arrival);
    }

    /// What follows a message from `from` reaching machine `i`: as
    /// [`Sim::after`], with a stream message's sender known, so that the
    /// node's first stream message back to it answers on its connection.
    fn after_message(&mut self, i: usize, from: usize, stream: bool, arrival: Arrival) {
        self.answering = stream.then_some(from);
        self.after(i, arrival);
        self.answering = None;
    }

    /// Machine `i`'s timer fires now.
    fn wake(&mut self, i: usize) {
        if self.machines.tick(i, self.now) {
            self.settle(i);
        }
    }

    /// What follows a message's arrival at machine `i`.
    fn after(&mut self, i: usize, arrival: Arrival) {
        match arrival {
            Arrival::Handled => self.settle(i),
            Arrival::Late(at, job) => self.queue.push(at, job),
            Arrival::Dropped | Arrival::Held => {}
        }
    }

    /// Machine `i`'s node handled something (a message, a timer, its
    /// start): what it queued is sent and its timer set again.
    fn settle(&mut self, i: usize) {
        self.flush(i);
        self.schedule_wake(i);
    }

    /// Sends everything machine `i`'s node queued and records its events.
    fn flush(&mut self, i: usize) {
        let now = self.now;
        let Some(out) = self.machines.drain(i, now) else { return };
        self.recorder.started(out.probes, out.accusations);
        // The first stream message back to the sender of the stream message
        // just handled goes on its connection, as the runtime's does.
        let mut answering = self.answering.take();
        for sent in out.sent {
            self.recorder.sent(sent.kind, sent.bytes.len(), sent.stream);
            let Some(to) = sent.to else { continue };
            let carrier = match sent.stream {
                false => Carrier::Datagram,
                true if answering == Some(to) => {
                    answering = None;
                    Carrier::Answer
                }
                true => Carrier::Connect,
            };
            if let Some(latency) = self.links.send(i, to, carrier, &mut self.rng) {
                let job = Job::Deliver { to, from: i, bytes: sent.bytes, stream: sent.stream };
                self.queue.push(now.saturating_add(latency), job);
            }
        }
        for event in out.events {
            self.recorder.observe(i, event, now, &self.machines, &self.links);
        }
        let (before, after) = out.epochs;
        self.recorder.epoch(self.machines.name(i), before, after, now);
        self.recorder.acting(i, self.machines.acting_generation(i), now);
        if let Some(request) = out.lease {
            let answer = self.lease.acquire(&request, now);
            let vigil_membership::downing::LeaseRequest { holder, replacing, renewal } = request;
            let granted = answer.granted();
            self.recorder.record(now, What::Lease { node: i, holder, replacing, renewal, granted });
            self.machines.lease_answer(i, now, answer);
            self.flush(i);
        }
    }

    /// Sets machine `i`'s timer to what its node asks for.
    fn schedule_wake(&mut self, i: usize) {
        if let Some((at, job)) = self.machines.next_wake(i, self.now) {
            self.queue.push(at, job);
        }
    }
}
