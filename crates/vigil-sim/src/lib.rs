//! A deterministic discrete-event simulator for `vigil-membership`.
//!
//! It drives N real [`Node`]s on virtual time over a modelled network:
//! per-link latency (a base plus an exponential tail), loss, asymmetric and
//! full partitions; and node faults: pauses (a GC-like stop: nothing is
//! processed, datagrams wait in the socket buffer), slow processing (every
//! datagram and timer handled late), crashes and restarts with a new
//! generation. The same seed gives the same event log, byte for byte.
//!
//! Checkers run during the run:
//! - a node's incarnation never decreases;
//! - in a liveness window (a fault-free stretch the scenario declares), no
//!   live, reachable, unpaused node is declared dead by anyone;
//! - every crash is detected by every survivor within the scenario's bound.
//!
//! ```
//! use std::time::Duration;
//! use vigil_sim::{Fault, Scenario, Sim};
//!
//! let mut s = Scenario::new("one crash", 20);
//! s.duration = Duration::from_secs(40);
//! s.faults.push(Fault::Crash { node: 3, at: Duration::from_secs(15) });
//! let report = Sim::new(&s).run(&mut |_| {});
//! assert!(report.violations.is_empty(), "{:?}", report.violations);
//! let crash = &report.crashes[0];
//! assert_eq!(crash.detected_by, 19);
//! assert!(crash.median_ms < 6_000.0);
//! ```

#![forbid(unsafe_code)]

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use vigil_detector::Instant;
use vigil_membership::{Config, ConfigError, Event, Node, NodeId};

/// The network between nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Fixed one-way latency, ms.
    #[serde(default = "default_base")]
    pub base_ms: f64,
    /// Mean of an exponential extra latency, ms.
    #[serde(default = "default_jitter")]
    pub jitter_ms: f64,
    /// Probability that a datagram is lost (stream messages are reliable).
    #[serde(default)]
    pub loss: f64,
    /// Links differ: each directed link's latency (base and tail) is scaled
    /// by its own factor, drawn once from the seed, uniform in
    /// `[1 − spread, 1 + spread]`. Default 0.5.
    #[serde(default = "default_spread")]
    pub link_spread: f64,
}

fn default_spread() -> f64 {
    0.5
}

fn default_base() -> f64 {
    0.5
}
fn default_jitter() -> f64 {
    0.5
}

impl Default for Network {
    fn default() -> Self {
        Network { base_ms: default_base(), jitter_ms: default_jitter(), loss: 0.0, link_spread: default_spread() }
    }
}

/// A fault injected at a virtual time (measured from the start).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Fault {
    /// The node stops for good.
    Crash {
        /// Node index.
        node: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
    },
    /// A crashed node starts again under the same name with a new
    /// generation, and joins through node 0 (or 1 if it is node 0).
    Restart {
        /// Node index.
        node: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
    },
    /// The node stops processing for a while (datagrams wait).
    Pause {
        /// Node index.
        node: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
        /// How long.
        #[serde(with = "secs")]
        duration: Duration,
    },
    /// The node handles every datagram and timer `delay` late for a while.
    Slow {
        /// Node index.
        node: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
        /// How long.
        #[serde(with = "secs")]
        duration: Duration,
        /// Processing delay.
        #[serde(with = "secs")]
        delay: Duration,
    },
    /// Datagrams from `from` to `to` are dropped (one direction).
    Block {
        /// Sender.
        from: usize,
        /// Receiver.
        to: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
        /// How long.
        #[serde(with = "secs")]
        duration: Duration,
    },
    /// Nodes below `split` and the others cannot reach each other.
    Partition {
        /// The first node of the second side.
        split: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
        /// How long.
        #[serde(with = "secs")]
        duration: Duration,
    },
    /// Every link loses datagrams with probability `p` for a while.
    Loss {
        /// Loss probability.
        p: f64,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
        /// How long.
        #[serde(with = "secs")]
        duration: Duration,
    },
}

mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v)
            .map_err(|_| serde::de::Error::custom(format!("{v} is not a duration in seconds")))
    }
}

/// Which protocol the nodes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// φ-monitored SWIM with LAN defaults.
    #[default]
    Phi,
    /// Classic SWIM with memberlist's LAN constants.
    Classic,
}

/// A simulation: the cluster, the network, the faults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name.
    pub name: String,
    /// Cluster size.
    pub nodes: usize,
    /// Virtual run time.
    #[serde(with = "secs", default = "default_duration")]
    pub duration: Duration,
    /// Seed of every random choice.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Protocol.
    #[serde(default)]
    pub protocol: Protocol,
    /// Network.
    #[serde(default)]
    pub network: Network,
    /// Faults.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Every crash must be detected by every survivor within this bound.
    #[serde(with = "secs", default = "default_bound")]
    pub detection_bound: Duration,
    /// Whether the liveness checker applies: no live, reachable, unpaused
    /// node may be declared dead.
    #[serde(default = "default_true")]
    pub check_liveness: bool,
    /// From this time on, check every 500 ms whether every live node sees
    /// every other live node alive (with its current generation); the first
    /// time it holds is reported as `converged_ms`.
    #[serde(with = "opt_secs", default)]
    pub converge_after: Option<Duration>,
}

mod opt_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let v = Option::<f64>::deserialize(d)?;
        v.map(|v| {
            Duration::try_from_secs_f64(v)
                .map_err(|_| serde::de::Error::custom(format!("{v} is not a duration in seconds")))
        })
        .transpose()
    }
}

fn default_duration() -> Duration {
    Duration::from_secs(60)
}
fn default_seed() -> u64 {
    1
}
fn default_bound() -> Duration {
    Duration::from_secs(30)
}
fn default_true() -> bool {
    true
}

impl Scenario {
    /// A fault-free scenario of `nodes` nodes, 60 s, seed 1, φ protocol.
    pub fn new(name: &str, nodes: usize) -> Scenario {
        Scenario {
            name: name.into(),
            nodes,
            duration: default_duration(),
            seed: 1,
            protocol: Protocol::Phi,
            network: Network::default(),
            faults: Vec::new(),
            detection_bound: default_bound(),
            check_liveness: true,
            converge_after: None,
        }
    }

    /// Parses and checks a scenario written in TOML.
    pub fn from_toml(text: &str) -> Result<Scenario, String> {
        let s: Scenario = toml::from_str(text).map_err(|e| format!("not a valid simulation scenario: {e}"))?;
        s.validate()?;
        Ok(s)
    }

    /// Checks sizes, indices and probabilities.
    pub fn validate(&self) -> Result<(), String> {
        if self.nodes < 2 || self.nodes > 100_000 {
            return Err(format!("nodes must be 2 to 100000, got {}", self.nodes));
        }
        let p = &self.network;
        if !(p.base_ms.is_finite() && p.base_ms >= 0.0 && p.jitter_ms.is_finite() && p.jitter_ms >= 0.0) {
            return Err("network latencies must be finite and 0 or more".into());
        }
        if !(0.0..=1.0).contains(&p.loss) {
            return Err(format!("network.loss must be in [0, 1], got {}", p.loss));
        }
        if !(0.0..1.0).contains(&p.link_spread) {
            return Err(format!("network.link_spread must be in [0, 1), got {}", p.link_spread));
        }
        for (i, f) in self.faults.iter().enumerate() {
            let node_ok = |n: usize| n < self.nodes;
            let ok = match f {
                Fault::Crash { node, .. }
                | Fault::Restart { node, .. }
                | Fault::Pause { node, .. }
                | Fault::Slow { node, .. } => node_ok(*node),
                Fault::Block { from, to, .. } => node_ok(*from) && node_ok(*to),
                Fault::Partition { split, .. } => *split > 0 && *split < self.nodes,
                Fault::Loss { p, .. } => (0.0..=1.0).contains(p),
            };
            if !ok {
                return Err(format!("faults[{i}]: a node index or probability is out of range ({f:?})"));
            }
        }
        Ok(())
    }
}

/// How one crash was detected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrashReport {
    /// The crashed node.
    pub node: usize,
    /// Survivors at the time.
    pub survivors: usize,
    /// Survivors that declared it dead.
    pub detected_by: usize,
    /// First declaration, ms after the crash.
    pub first_ms: f64,
    /// Median over survivors, ms after the crash.
    pub median_ms: f64,
    /// Last survivor (full dissemination), ms after the crash.
    pub max_ms: f64,
}

/// What a run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Scenario name.
    pub scenario: String,
    /// Nodes.
    pub nodes: usize,
    /// Seed.
    pub seed: u64,
    /// Virtual seconds simulated.
    pub virtual_secs: f64,
    /// Per crash.
    pub crashes: Vec<CrashReport>,
    /// Suspicions raised about members that had not crashed.
    pub false_suspicions: u64,
    /// Deaths declared about members that had not crashed (counted once per
    /// declaring node).
    pub false_deaths: u64,
    /// False deaths by the member declared dead.
    pub false_deaths_of: BTreeMap<String, u64>,
    /// Suspicions refuted.
    pub refuted: u64,
    /// Path problems reported (φ said silent, a probe got an answer).
    pub path_problems: u64,
    /// False suspicions per member-hour.
    pub false_suspicions_per_member_hour: f64,
    /// False deaths per member-hour.
    pub false_deaths_per_member_hour: f64,
    /// Datagrams and stream messages sent per member per second.
    pub messages_per_member_second: f64,
    /// Bytes sent per member per second.
    pub bytes_per_member_second: f64,
    /// Checker violations (empty when everything held).
    pub violations: Vec<String>,
    /// When every live node first saw every other live node alive, ms after
    /// the start (only with `converge_after`).
    pub converged_ms: Option<f64>,
    /// Pairs (observer, member) of live nodes where the observer does not
    /// see the member alive, at the end of the run.
    pub final_disagreements: u64,
    /// A hash of the event log (equal for equal seeds).
    pub log_hash: u64,
    /// Log lines (events in order), when kept.
    #[serde(skip)]
    pub log: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Job {
    /// Deliver bytes to a node (index, from index, bytes).
    Deliver(usize, usize, Vec<u8>),
    /// Process bytes already delivered to a slow node.
    Process(usize, usize, Vec<u8>),
    /// Wake a node if its timer generation still matches.
    Wake(usize, u64),
    /// Apply fault number i (start).
    FaultStart(usize),
    /// End fault number i.
    FaultEnd(usize),
    /// Check convergence.
    Check,
}

struct SimNode {
    node: Option<Node>,
    name: String,
    generation: u64,
    addr: SocketAddr,
    crashed_at: Option<Instant>,
    /// Generations of this node that crashed.
    crashed_generations: Vec<u64>,
    paused_until: Option<Instant>,
    inbox: Vec<(usize, Vec<u8>)>,
    slow: Duration,
    timer_gen: u64,
    scheduled: Option<Instant>,
    last_incarnation: u64,
}

/// The simulator. Build with [`Sim::new`], then [`Sim::run`].
pub struct Sim {
    scenario: Scenario,
    /// The protocol configuration every node runs (restarted ones too).
    config: Config,
    now: Instant,
    queue: BinaryHeap<Reverse<(Instant, u64, Job)>>,
    order: u64,
    nodes: Vec<SimNode>,
    by_addr: HashMap<SocketAddr, usize>,
    rng: ChaCha8Rng,
    blocked: BTreeMap<(usize, usize), u32>,
    partitions: Vec<usize>,
    extra_loss: Vec<f64>,
    /// Deaths seen: (dead name, generation) → declarer → time.
    deaths: HashMap<(String, u64), BTreeMap<usize, Instant>>,
    report: Report,
    log_hash: u64,
    keep_log: bool,
    liveness_ok: bool,
}

/// A uniform number in [0, 1) fixed for the directed link `a → b` and the
/// seed (SplitMix64 of the three).
fn link_uniform(seed: u64, a: usize, b: usize) -> f64 {
    let mut z = seed ^ (a as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (b as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

fn addr_of(i: usize) -> SocketAddr {
    let i = i as u32;
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, (i >> 16) as u8, (i >> 8) as u8, i as u8), 7946))
}

const START: Instant = Instant::from_secs(1);

/// The cluster id of simulated nodes.
const CLUSTER: u64 = 0x5eed;

impl Sim {
    /// A simulator for `scenario` (which must be valid), every node running
    /// the scenario's protocol with LAN defaults.
    pub fn new(scenario: &Scenario) -> Sim {
        let config = match scenario.protocol {
            Protocol::Phi => Config::lan(CLUSTER),
            Protocol::Classic => Config::classic_lan(CLUSTER),
        };
        // The presets validate (vigil-membership's tests check it).
        Sim::with_config(scenario, config).expect("the LAN presets are valid")
    }

    /// As [`Sim::new`], with a protocol configuration of your own (its
    /// cluster id is kept). Fails if the configuration does not validate.
    pub fn with_config(scenario: &Scenario, config: Config) -> Result<Sim, ConfigError> {
        config.validate()?;
        let mut rng = ChaCha8Rng::seed_from_u64(scenario.seed);
        let n = scenario.nodes;
        let ids: Vec<(NodeId, SocketAddr)> = (0..n).map(|i| (NodeId::new(format!("n{i}"), 1), addr_of(i))).collect();
        // One copy of each name, shared by every node's table.
        let shared: Vec<(std::sync::Arc<str>, u64, SocketAddr)> =
            ids.iter().map(|(id, addr)| (std::sync::Arc::from(id.name.as_str()), id.generation, *addr)).collect();
        let mut nodes = Vec::with_capacity(n);
        for (i, (id, addr)) in ids.iter().enumerate() {
            let seed = rng.random::<u64>();
            let mut node = Node::new(id.clone(), *addr, config.clone(), seed, START)?;
            node.bootstrap_shared(START, &shared);
            nodes.push(SimNode {
                node: Some(node),
                name: id.name.clone(),
                generation: 1,
                addr: *addr,
                crashed_at: None,
                crashed_generations: Vec::new(),
                paused_until: None,
                inbox: Vec::new(),
                slow: Duration::ZERO,
                timer_gen: 0,
                scheduled: None,
                last_incarnation: 0,
            });
            let _ = i;
        }
        let by_addr = nodes.iter().enumerate().map(|(i, n)| (n.addr, i)).collect();
        let mut sim = Sim {
            scenario: scenario.clone(),
            config,
            now: START,
            queue: BinaryHeap::new(),
            order: 0,
            nodes,
            by_addr,
            rng,
            blocked: BTreeMap::new(),
            partitions: Vec::new(),
            extra_loss: Vec::new(),
            deaths: HashMap::new(),
            report: Report {
                scenario: scenario.name.clone(),
                nodes: n,
                seed: scenario.seed,
                virtual_secs: scenario.duration.as_secs_f64(),
                crashes: Vec::new(),
                false_suspicions: 0,
                false_deaths: 0,
                false_deaths_of: BTreeMap::new(),
                refuted: 0,
                path_problems: 0,
                false_suspicions_per_member_hour: 0.0,
                false_deaths_per_member_hour: 0.0,
                messages_per_member_second: 0.0,
                bytes_per_member_second: 0.0,
                violations: Vec::new(),
                converged_ms: None,
                final_disagreements: 0,
                log_hash: 0,
                log: Vec::new(),
            },
            log_hash: 0xcbf2_9ce4_8422_2325,
            keep_log: false,
            liveness_ok: true,
        };
        for (i, f) in scenario.faults.iter().enumerate() {
            let at = match f {
                Fault::Crash { at, .. }
                | Fault::Restart { at, .. }
                | Fault::Pause { at, .. }
                | Fault::Slow { at, .. }
                | Fault::Block { at, .. }
                | Fault::Partition { at, .. }
                | Fault::Loss { at, .. } => *at,
            };
            sim.push(START.saturating_add(at), Job::FaultStart(i));
        }
        for i in 0..n {
            sim.schedule_wake(i);
        }
        if let Some(after) = scenario.converge_after {
            sim.push(START.saturating_add(after), Job::Check);
        }
        Ok(sim)
    }

    /// Pairs of live nodes (observer, member) where the observer does not
    /// see the member alive with its current generation.
    fn disagreements(&self) -> u64 {
        let mut count = 0;
        for (i, a) in self.nodes.iter().enumerate() {
            let Some(node) = &a.node else { continue };
            for (j, b) in self.nodes.iter().enumerate() {
                if i == j || b.node.is_none() {
                    continue;
                }
                let sees = node.status_of(&b.name).is_some_and(|(id, _, status)| {
                    id.generation == b.generation && status == vigil_membership::Status::Alive
                });
                count += u64::from(!sees);
            }
        }
        count
    }

    /// Keeps every event-log line in the report (for inspection and tests).
    pub fn keep_log(mut self, keep: bool) -> Sim {
        self.keep_log = keep;
        self
    }

    fn push(&mut self, at: Instant, job: Job) {
        self.order += 1;
        self.queue.push(Reverse((at, self.order, job)));
    }

    fn schedule_wake(&mut self, i: usize) {
        let slow = self.nodes[i].slow;
        let Some(node) = self.nodes[i].node.as_mut() else { return };
        if let Some(t) = node.poll_timeout() {
            let at = t.max(self.now).saturating_add(slow);
            if self.nodes[i].scheduled == Some(at) {
                return;
            }
            self.nodes[i].scheduled = Some(at);
            self.nodes[i].timer_gen += 1;
            let g = self.nodes[i].timer_gen;
            self.push(at, Job::Wake(i, g));
        }
    }

    fn log(&mut self, line: String) {
        for b in line.as_bytes() {
            self.log_hash ^= u64::from(*b);
            self.log_hash = self.log_hash.wrapping_mul(0x0100_0000_01b3);
        }
        if self.keep_log {
            self.report.log.push(line);
        }
    }

    fn ms(&self, t: Instant) -> f64 {
        t.saturating_duration_since(START).as_secs_f64() * 1e3
    }

    /// Whether datagrams from `a` reach `b` right now (partitions and blocks).
    fn connected(&self, a: usize, b: usize) -> bool {
        if self.blocked.get(&(a, b)).is_some_and(|c| *c > 0) {
            return false;
        }
        self.partitions.iter().all(|&split| (a < split) == (b < split))
    }

    fn loss(&self) -> f64 {
        let mut keep = 1.0 - self.scenario.network.loss;
        for p in &self.extra_loss {
            keep *= 1.0 - p;
        }
        1.0 - keep
    }

    /// Sends everything node `i` has queued.
    fn flush(&mut self, i: usize) {
        let mut out = Vec::new();
        let mut events = Vec::new();
        if let Some(node) = self.nodes[i].node.as_mut() {
            while let Some(t) = node.poll_transmit() {
                out.push(t);
            }
            while let Some(e) = node.poll_event() {
                events.push(e);
            }
        }
        for t in out {
            let Some(&to) = self.by_addr.get(&t.to) else { continue };
            if !self.connected(i, to) {
                continue;
            }
            if !t.stream && self.rng.random::<f64>() < self.loss() {
                continue;
            }
            let net = &self.scenario.network;
            let jitter = if net.jitter_ms > 0.0 { -net.jitter_ms * (1.0 - self.rng.random::<f64>()).ln() } else { 0.0 };
            let factor = 1.0 + net.link_spread * (2.0 * link_uniform(self.scenario.seed, i, to) - 1.0);
            let latency = Duration::from_secs_f64((net.base_ms + jitter) * factor / 1e3);
            let at = self.now.saturating_add(latency);
            self.push(at, Job::Deliver(to, i, t.bytes));
        }
        for e in events {
            self.observe(i, e);
        }
        // Incarnations never decrease.
        if let Some(node) = self.nodes[i].node.as_ref() {
            let inc = node.incarnation();
            if inc < self.nodes[i].last_incarnation {
                let msg = format!(
                    "{}: incarnation fell from {} to {inc}",
                    self.nodes[i].name, self.nodes[i].last_incarnation
                );
                self.report.violations.push(msg);
            }
            self.nodes[i].last_incarnation = inc;
        }
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        name.strip_prefix('n').and_then(|s| s.parse().ok()).filter(|&i: &usize| i < self.nodes.len())
    }

    /// Whether node `j` is, right now, alive, unpaused and reachable both
    /// ways from everyone: a node nobody should declare dead.
    fn healthy(&self, j: usize) -> bool {
        let n = &self.nodes[j];
        n.node.is_some()
            && n.paused_until.is_none()
            && n.slow.is_zero()
            && self.partitions.is_empty()
            && !self.blocked.iter().any(|(&(a, b), c)| *c > 0 && (a == j || b == j))
    }

    fn observe(&mut self, i: usize, e: Event) {
        let t = self.ms(self.now);
        let me = self.nodes[i].name.clone();
        match &e {
            Event::Suspected { id, by, .. } => {
                let target = self.index_of(&id.name);
                if target.is_some_and(|j| !self.nodes[j].crashed_generations.contains(&id.generation)) {
                    self.report.false_suspicions += 1;
                }
                self.log(format!("{t:.3} {me} suspected {id} by {}", by.name));
            }
            Event::Dead { id, by } => {
                if let Some(j) = self.index_of(&id.name) {
                    let crashed = self.nodes[j].crashed_generations.contains(&id.generation);
                    if !crashed {
                        self.report.false_deaths += 1;
                        *self.report.false_deaths_of.entry(id.name.clone()).or_default() += 1;
                        if self.scenario.check_liveness && self.liveness_ok && self.healthy(j) {
                            self.report
                                .violations
                                .push(format!("{t:.3} ms: {me} declared {id} dead, but it is alive and reachable"));
                        }
                    }
                    self.deaths.entry((id.name.clone(), id.generation)).or_default().entry(i).or_insert(self.now);
                }
                self.log(format!("{t:.3} {me} dead {id} by {}", by.name));
            }
            Event::Refuted { id, incarnation } => {
                self.report.refuted += 1;
                self.log(format!("{t:.3} {me} refuted {id} at {incarnation}"));
            }
            Event::PathProblem { id, .. } => {
                self.report.path_problems += 1;
                self.log(format!("{t:.3} {me} path-problem {id}"));
            }
            Event::Up { id, .. } => self.log(format!("{t:.3} {me} up {id}")),
            Event::Left { id } => self.log(format!("{t:.3} {me} left {id}")),
            Event::SelfRefuted { incarnation } => self.log(format!("{t:.3} {me} self-refuted at {incarnation}")),
        }
    }

    fn fault_start(&mut self, k: usize) {
        let f = self.scenario.faults[k].clone();
        let now = self.now;
        self.log(format!("{:.3} fault {f:?}", self.ms(now)));
        match f {
            Fault::Crash { node, .. } => {
                let n = &mut self.nodes[node];
                if n.node.take().is_some() {
                    n.crashed_at = Some(now);
                    n.crashed_generations.push(n.generation);
                    n.inbox.clear();
                    n.paused_until = None;
                }
            }
            Fault::Restart { node, .. } => {
                if self.nodes[node].node.is_none() {
                    let generation = self.nodes[node].generation + 1;
                    let id = NodeId::new(self.nodes[node].name.clone(), generation);
                    let seed = self.rng.random::<u64>();
                    if let Ok(mut fresh) = Node::new(id, self.nodes[node].addr, self.config.clone(), seed, now) {
                        let seed_node = if node == 0 { 1 } else { 0 };
                        fresh.join(now, &[addr_of(seed_node)]);
                        let n = &mut self.nodes[node];
                        n.node = Some(fresh);
                        n.generation = generation;
                        n.crashed_at = None;
                        n.last_incarnation = 0;
                        n.scheduled = None;
                        self.flush(node);
                        self.schedule_wake(node);
                    }
                }
            }
            Fault::Pause { node, duration, .. } => {
                if self.nodes[node].node.is_some() {
                    let until = now.saturating_add(duration);
                    self.nodes[node].paused_until = Some(until);
                    self.push(until, Job::FaultEnd(k));
                }
            }
            Fault::Slow { node, duration, delay, .. } => {
                self.nodes[node].slow = delay;
                self.push(now.saturating_add(duration), Job::FaultEnd(k));
            }
            Fault::Block { from, to, duration, .. } => {
                *self.blocked.entry((from, to)).or_default() += 1;
                self.push(now.saturating_add(duration), Job::FaultEnd(k));
            }
            Fault::Partition { split, duration, .. } => {
                self.partitions.push(split);
                self.push(now.saturating_add(duration), Job::FaultEnd(k));
            }
            Fault::Loss { p, duration, .. } => {
                self.extra_loss.push(p);
                self.push(now.saturating_add(duration), Job::FaultEnd(k));
            }
        }
    }

    fn fault_end(&mut self, k: usize) {
        let f = self.scenario.faults[k].clone();
        self.log(format!("{:.3} fault-end {k}", self.ms(self.now)));
        match f {
            Fault::Pause { node, .. } => {
                self.nodes[node].paused_until = None;
                let inbox = std::mem::take(&mut self.nodes[node].inbox);
                for (from, bytes) in inbox {
                    self.deliver(node, from, &bytes);
                }
                self.wake(node);
            }
            Fault::Slow { node, .. } => self.nodes[node].slow = Duration::ZERO,
            Fault::Block { from, to, .. } => {
                if let Some(c) = self.blocked.get_mut(&(from, to)) {
                    *c = c.saturating_sub(1);
                }
            }
            Fault::Partition { split, .. } => {
                if let Some(pos) = self.partitions.iter().position(|&s| s == split) {
                    self.partitions.remove(pos);
                }
            }
            Fault::Loss { p, .. } => {
                if let Some(pos) = self.extra_loss.iter().position(|&x| x == p) {
                    self.extra_loss.remove(pos);
                }
            }
            _ => {}
        }
    }

    fn deliver(&mut self, to: usize, from: usize, bytes: &[u8]) {
        let now = self.now;
        let from_addr = self.nodes[from].addr;
        if let Some(node) = self.nodes[to].node.as_mut() {
            let _ = node.handle_datagram(now, from_addr, bytes);
            self.flush(to);
            self.schedule_wake(to);
        }
    }

    fn wake(&mut self, i: usize) {
        let now = self.now;
        if let Some(node) = self.nodes[i].node.as_mut() {
            node.handle_timeout(now);
            self.flush(i);
            self.schedule_wake(i);
        }
    }

    /// Runs to the end of the scenario. `progress` is called with the
    /// fraction of virtual time done, about a hundred times.
    pub fn run(mut self, progress: &mut dyn FnMut(f64)) -> Report {
        let end = START.saturating_add(self.scenario.duration);
        let step = self.scenario.duration / 100;
        let mut next_progress = START.saturating_add(step);
        while let Some(Reverse((at, _, job))) = self.queue.pop() {
            if at > end {
                break;
            }
            let processing = matches!(job, Job::Process(..));
            self.now = at;
            if at >= next_progress {
                progress(
                    (at.saturating_duration_since(START).as_secs_f64() / self.scenario.duration.as_secs_f64()).min(1.0),
                );
                next_progress = at.saturating_add(step);
            }
            match job {
                Job::Deliver(to, from, bytes) | Job::Process(to, from, bytes) => {
                    if self.nodes[to].node.is_none() {
                        continue;
                    }
                    if self.nodes[to].paused_until.is_some() {
                        self.nodes[to].inbox.push((from, bytes));
                        continue;
                    }
                    let slow = self.nodes[to].slow;
                    if !slow.is_zero() && !processing {
                        // A starved node handles the datagram late.
                        self.push(at.saturating_add(slow), Job::Process(to, from, bytes));
                        continue;
                    }
                    self.deliver(to, from, &bytes);
                }
                Job::Wake(i, g) => {
                    if g != self.nodes[i].timer_gen || self.nodes[i].paused_until.is_some() {
                        continue;
                    }
                    self.nodes[i].scheduled = None;
                    self.wake(i);
                }
                Job::FaultStart(k) => self.fault_start(k),
                Job::FaultEnd(k) => self.fault_end(k),
                Job::Check => {
                    if self.report.converged_ms.is_none() {
                        if self.disagreements() == 0 {
                            self.report.converged_ms = Some(self.ms(at));
                            self.log(format!("{:.3} converged", self.ms(at)));
                        } else {
                            self.push(at.saturating_add(Duration::from_millis(500)), Job::Check);
                        }
                    }
                }
            }
        }
        self.now = end;
        progress(1.0);
        self.finish()
    }

    fn finish(mut self) -> Report {
        let secs = self.scenario.duration.as_secs_f64();
        let n = self.nodes.len() as f64;
        let member_hours = n * secs / 3600.0;
        let mut messages = 0u64;
        let mut bytes = 0u64;
        for sn in &self.nodes {
            if let Some(node) = &sn.node {
                messages += node.stats().sent.iter().sum::<u64>();
                bytes += node.stats().bytes_sent;
            }
        }
        // Crashes: who declared each crashed generation dead, and when.
        let crashes: Vec<(usize, Instant, u64)> = self
            .scenario
            .faults
            .iter()
            .filter_map(|f| match f {
                Fault::Crash { node, at } => Some((*node, START.saturating_add(*at), 0)),
                _ => None,
            })
            .collect();
        for (node, at, _) in crashes {
            // The generation that crashed: the one alive before `at`
            // (restarts bump it afterwards).
            let restarts_before = self
                .scenario
                .faults
                .iter()
                .filter(
                    |f| matches!(f, Fault::Restart { node: r, at: t } if *r == node && START.saturating_add(*t) < at),
                )
                .count() as u64;
            let generation = 1 + restarts_before;
            let name = format!("n{node}");
            let declared = self.deaths.get(&(name, generation)).cloned().unwrap_or_default();
            let survivors: Vec<usize> =
                (0..self.nodes.len()).filter(|&i| i != node && !self.crashed_before(i, at)).collect();
            let mut times: Vec<f64> = survivors
                .iter()
                .filter_map(|i| declared.get(i))
                .map(|t| t.saturating_duration_since(at).as_secs_f64() * 1e3)
                .collect();
            times.sort_by(f64::total_cmp);
            let detected_by = times.len();
            let median = if times.is_empty() { f64::NAN } else { times[(times.len() - 1) / 2] };
            let report = CrashReport {
                node,
                survivors: survivors.len(),
                detected_by,
                first_ms: times.first().copied().unwrap_or(f64::NAN),
                median_ms: median,
                max_ms: times.last().copied().unwrap_or(f64::NAN),
            };
            let bound = self.scenario.detection_bound.as_secs_f64() * 1e3;
            let in_time = times.iter().filter(|&&t| t <= bound).count();
            // A restart within the bound supersedes the old generation: not
            // declaring it dead is then correct.
            let restarted = self.scenario.faults.iter().any(|f| {
                matches!(f, Fault::Restart { node: r, at: t }
                    if *r == node && START.saturating_add(*t) >= at
                        && START.saturating_add(*t) <= at.saturating_add(self.scenario.detection_bound))
            });
            if !restarted
                && in_time < survivors.len()
                && at.saturating_add(self.scenario.detection_bound) <= START.saturating_add(self.scenario.duration)
            {
                self.report.violations.push(format!(
                    "crash of n{node}: {in_time} of {} survivors declared it dead within {bound} ms",
                    survivors.len()
                ));
            }
            self.report.crashes.push(report);
        }
        self.report.false_suspicions_per_member_hour = self.report.false_suspicions as f64 / member_hours;
        self.report.false_deaths_per_member_hour = self.report.false_deaths as f64 / member_hours;
        self.report.messages_per_member_second = messages as f64 / n / secs;
        self.report.bytes_per_member_second = bytes as f64 / n / secs;
        self.report.final_disagreements = self.disagreements();
        self.report.log_hash = self.log_hash;
        self.report
    }

    /// Whether node `i` had crashed (and not restarted) by `at`.
    fn crashed_before(&self, i: usize, at: Instant) -> bool {
        let last = |kind: fn(&Fault) -> Option<(usize, Duration)>| {
            self.scenario
                .faults
                .iter()
                .filter_map(kind)
                .filter(|(n, t)| *n == i && START.saturating_add(*t) <= at)
                .map(|(_, t)| t)
                .max()
        };
        let crash = last(|f| if let Fault::Crash { node, at } = f { Some((*node, *at)) } else { None });
        let restart = last(|f| if let Fault::Restart { node, at } = f { Some((*node, *at)) } else { None });
        match (crash, restart) {
            (Some(c), Some(r)) => c >= r,
            (Some(_), None) => true,
            _ => false,
        }
    }
}
