//! The membership state machine of one member.
//!
//! Sans-IO: the caller feeds it datagrams and timeouts, with the time, and
//! drains what it wants to send, when it next needs to be woken, and what
//! happened. Call order, after creating the node (and [`Node::join`]):
//!
//! 1. on a datagram: [`Node::handle_datagram`];
//! 2. at or after [`Node::poll_timeout`]: [`Node::handle_timeout`];
//! 3. after either: drain [`Node::poll_transmit`] and [`Node::poll_event`].
//!
//! A late or spurious `handle_timeout` is harmless.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vigil_detector::{Akka, AkkaConfig, Detector, Instant};

use crate::config::{Config, ConfigError, Mode};
use crate::message::{Message, NodeId, Packet, Status, Update};
use crate::wire::{self, MAX_DATAGRAM, MAX_STREAM, WireError};

/// Something the node wants sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Destination.
    pub to: SocketAddr,
    /// The encoded packet.
    pub bytes: Vec<u8>,
    /// Whether it is a stream message (push-pull), to be sent reliably;
    /// otherwise a datagram of at most [`MAX_DATAGRAM`] bytes.
    pub stream: bool,
}

/// What the node observed.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A member joined, or came back with a new generation or after death.
    Up {
        /// Who.
        id: NodeId,
        /// Where.
        addr: SocketAddr,
    },
    /// A member is suspected.
    Suspected {
        /// Who.
        id: NodeId,
        /// The accuser.
        by: NodeId,
        /// The φ that started it, when this node is the accuser in φ mode.
        phi: Option<f64>,
    },
    /// A suspected member refuted the suspicion.
    Refuted {
        /// Who.
        id: NodeId,
        /// Its new incarnation.
        incarnation: u64,
    },
    /// A member was declared dead.
    Dead {
        /// Who.
        id: NodeId,
        /// Who declared it.
        by: NodeId,
    },
    /// A member left voluntarily.
    Left {
        /// Who.
        id: NodeId,
    },
    /// φ said a member was silent, but it answered a probe: its heartbeats
    /// are not getting through, it is not dead.
    PathProblem {
        /// The member.
        id: NodeId,
        /// φ when probing started.
        phi: f64,
        /// Whether only an indirect probe got an answer.
        indirect: bool,
    },
    /// This node was accused and refuted it.
    SelfRefuted {
        /// Its new incarnation.
        incarnation: u64,
    },
}

/// Why a datagram was dropped. The node's state is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejected {
    /// Not a valid packet.
    Malformed(WireError),
    /// A packet of another cluster.
    WrongCluster {
        /// Its cluster id.
        cluster: u64,
    },
    /// A packet claiming to come from this node's own name.
    FromSelf,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejected::Malformed(e) => write!(f, "malformed packet: {e}"),
            Rejected::WrongCluster { cluster } => write!(f, "packet of cluster {cluster:#x}"),
            Rejected::FromSelf => f.write_str("packet claims to come from this node"),
        }
    }
}

impl std::error::Error for Rejected {}

/// Counters, as data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Packets sent, by message kind: heartbeat, ping, ping-req, ack, nack,
    /// gossip, push-pull.
    pub sent: [u64; 7],
    /// Packets received and accepted, by message kind.
    pub received: [u64; 7],
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes received (accepted packets).
    pub bytes_received: u64,
    /// Malformed packets dropped.
    pub rejected_malformed: u64,
    /// Packets of another cluster dropped.
    pub rejected_cluster: u64,
    /// Packets claiming to be from this node dropped.
    pub rejected_self: u64,
    /// Probes started (φ-triggered or classic).
    pub probes: u64,
    /// Indirect probe requests sent.
    pub indirect_probes: u64,
    /// Probes answered only indirectly, or after φ crossed (path problems).
    pub path_problems: u64,
    /// Suspicions this node started.
    pub suspicions_started: u64,
    /// Deaths this node declared.
    pub deaths_declared: u64,
    /// Times this node refuted an accusation about itself.
    pub self_refutations: u64,
    /// Suspicions of others this node saw refuted.
    pub refutations_seen: u64,
    /// Late timers (local stalls) noticed.
    pub local_stalls: u64,
    /// Updates dropped because they were stale.
    pub stale_updates: u64,
}

/// Index of a message kind in [`Stats::sent`] and [`Stats::received`].
pub fn kind_index(m: &Message) -> usize {
    match m {
        Message::Heartbeat => 0,
        Message::Ping { .. } => 1,
        Message::PingReq { .. } => 2,
        Message::Ack { .. } => 3,
        Message::Nack { .. } => 4,
        Message::Gossip => 5,
        Message::PushPull { .. } => 6,
    }
}

/// The names of the message kinds, in [`kind_index`] order.
pub const KIND_NAMES: [&str; 7] = ["heartbeat", "ping", "ping-req", "ack", "nack", "gossip", "push-pull"];

#[derive(Debug, Clone)]
struct Suspicion {
    started: Instant,
    accusers: BTreeSet<String>,
    min: Duration,
    max: Duration,
    k: u32,
}

impl Suspicion {
    /// Lifeguard's shrinking timeout: from `max` towards `min` as independent
    /// confirmations arrive (memberlist's formula).
    fn deadline(&self) -> Instant {
        let c = self.accusers.len().saturating_sub(1) as f64;
        let timeout = if self.k == 0 {
            self.min
        } else {
            let frac = ((c + 1.0).ln() / (f64::from(self.k) + 1.0).ln()).min(1.0);
            let span = self.max.as_secs_f64() - self.min.as_secs_f64();
            Duration::from_secs_f64((self.max.as_secs_f64() - frac * span).max(self.min.as_secs_f64()))
        };
        self.started.saturating_add(timeout)
    }
}

/// What this node knows of one member. Kept small: a node of a large
/// cluster holds one per member.
#[derive(Debug, Clone)]
struct Member {
    name: Arc<str>,
    generation: u64,
    addr: SocketAddr,
    incarnation: u64,
    status: Status,
    since: Instant,
    suspicion: Option<Box<Suspicion>>,
}

impl Member {
    fn new(id: &NodeId, name: Arc<str>, addr: SocketAddr, incarnation: u64, status: Status, now: Instant) -> Member {
        Member { name, generation: id.generation, addr, incarnation, status, since: now, suspicion: None }
    }

    fn id(&self) -> NodeId {
        NodeId { name: self.name.to_string(), generation: self.generation }
    }

    fn is(&self, id: &NodeId) -> bool {
        self.generation == id.generation && *self.name == *id.name
    }
}

/// A member this node watches (φ mode): its detector and probe state.
#[derive(Debug, Clone)]
struct Watch {
    name: Arc<str>,
    /// The watched member's generation (kept current by `refresh_ring`).
    generation: u64,
    detector: Akka,
    /// No φ-triggered probe before this instant (after a probe was answered).
    quiet_until: Instant,
    /// Cached `(threshold, detector.crossing(threshold))`, cleared by each
    /// heartbeat.
    phi_at: Option<(f64, Option<Instant>)>,
}

/// The member table: a slab of members in insertion order (so iteration is
/// deterministic) and a hash index by name.
#[derive(Debug, Clone, Default)]
struct Members {
    slots: Vec<Option<Member>>,
    index: HashMap<Arc<str>, u32>,
    free: Vec<u32>,
}

impl Members {
    fn get(&self, name: &str) -> Option<&Member> {
        let i = *self.index.get(name)?;
        self.slots.get(i as usize)?.as_ref()
    }

    fn get_mut(&mut self, name: &str) -> Option<&mut Member> {
        let i = *self.index.get(name)?;
        self.slots.get_mut(i as usize)?.as_mut()
    }

    /// The interned name, if known.
    fn name(&self, name: &str) -> Option<Arc<str>> {
        self.index.get_key_value(name).map(|(k, _)| k.clone())
    }

    fn insert(&mut self, m: Member) {
        if let Some(&i) = self.index.get(&*m.name) {
            self.slots[i as usize] = Some(m);
            return;
        }
        let name = m.name.clone();
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(m);
                i
            }
            None => {
                self.slots.push(Some(m));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(name, i);
    }

    fn remove(&mut self, name: &str) -> Option<Member> {
        let i = self.index.remove(name)?;
        self.free.push(i);
        self.slots.get_mut(i as usize)?.take()
    }

    fn values(&self) -> impl Iterator<Item = &Member> {
        self.slots.iter().flatten()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProbeStage {
    /// Waiting for a direct ack; indirect requests at `next`.
    Direct,
    /// Indirect requests sent; give up at `next`.
    Indirect,
}

#[derive(Debug, Clone)]
struct Probe {
    target: NodeId,
    addr: SocketAddr,
    phi: Option<f64>,
    stage: ProbeStage,
    next: Instant,
    expected_nacks: u32,
    nacks: u32,
    /// When the probe started.
    started: Instant,
}

#[derive(Debug, Clone)]
struct Relay {
    requester: SocketAddr,
    seq: u32,
    deadline: Instant,
    nack: bool,
}

#[derive(Debug, Clone)]
struct Broadcast {
    update: Update,
    left: u32,
}

/// One member's protocol state machine. See the module documentation for the
/// call order.
#[derive(Clone)]
pub struct Node {
    config: Config,
    me: NodeId,
    addr: SocketAddr,
    incarnation: u64,
    status: Status,
    rng: ChaCha8Rng,
    members: Members,
    broadcasts: Vec<Broadcast>,
    probes: BTreeMap<u32, Probe>,
    relays: BTreeMap<u32, Relay>,
    seq: u32,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
    stats: Stats,
    awareness: u32,
    /// φ mode: who this node sends heartbeats to, and whom it watches.
    heartbeat_to: Vec<Arc<str>>,
    watch: Vec<Watch>,
    /// Members alive or suspected (not this node), for random choices.
    live: Vec<Arc<str>>,
    /// Members currently suspected.
    suspects: BTreeSet<Arc<str>>,
    /// Members dead or gone (tombstones).
    dead: Vec<Arc<str>>,
    ring_dirty: bool,
    next_heartbeat: Instant,
    next_probe: Instant,
    probe_order: Vec<Arc<str>>,
    next_gossip: Instant,
    next_push_pull: Instant,
    next_reannounce: Instant,
    next_gc: Instant,
    /// When the node last expected to be woken, to notice its own stalls.
    expected_wake: Option<Instant>,
    /// No accusations before this instant (after a local stall).
    accuse_after: Instant,
}

const MAX_QUEUE: usize = 100_000;

/// Indirect probes relayed at once, at most.
const MAX_RELAYS: usize = 4_096;

/// Members (including tombstones) a node keeps, at most: rumours of more are
/// ignored.
pub const MAX_MEMBERS: usize = 1_000_000;

fn ring_hash(name: &str) -> u64 {
    // FNV-1a: stable across runs and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Node {
    /// A node named `id`, reachable at `addr`, with randomness from `seed`.
    pub fn new(id: NodeId, addr: SocketAddr, config: Config, seed: u64, now: Instant) -> Result<Node, ConfigError> {
        config.validate()?;
        if id.name.is_empty() || id.name.len() > crate::message::MAX_NAME_LEN {
            return Err(ConfigError { field: "name", reason: format!("must be 1 to 64 bytes, got {}", id.name.len()) });
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // Stagger the periodic timers so a cluster started at once does not
        // act in lockstep.
        let spread = config.stagger_timers;
        let mut stagger = |d: Duration| {
            let f = if spread { rng.random::<f64>() } else { 0.0 };
            now.saturating_add(Duration::from_secs_f64(d.as_secs_f64() * f))
        };
        let next_heartbeat = stagger(config.heartbeat_interval);
        let next_probe = stagger(config.probe_interval);
        let next_gossip = stagger(config.gossip_interval);
        let next_push_pull = stagger(config.push_pull_interval);
        let next_reannounce = stagger(config.reannounce_interval);
        let mut node = Node {
            config,
            me: id,
            addr,
            incarnation: 0,
            status: Status::Alive,
            rng,
            members: Members::default(),
            broadcasts: Vec::new(),
            probes: BTreeMap::new(),
            relays: BTreeMap::new(),
            seq: 0,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            awareness: 0,
            heartbeat_to: Vec::new(),
            watch: Vec::new(),
            live: Vec::new(),
            suspects: BTreeSet::new(),
            dead: Vec::new(),
            ring_dirty: true,
            next_heartbeat,
            next_probe,
            probe_order: Vec::new(),
            next_gossip,
            next_push_pull,
            next_reannounce,
            next_gc: now,
            expected_wake: None,
            accuse_after: now,
        };
        node.broadcast(node.self_update(Status::Alive));
        Ok(node)
    }

    /// This node's identity.
    pub fn id(&self) -> &NodeId {
        &self.me
    }

    /// This node's incarnation.
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Lifeguard's local health score (0 is healthy).
    pub fn awareness(&self) -> u32 {
        self.awareness
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The known members (not this node), with what this node believes.
    pub fn members(&self) -> impl Iterator<Item = (NodeId, SocketAddr, u64, Status)> + '_ {
        self.members.values().map(|m| (m.id(), m.addr, m.incarnation, m.status))
    }

    /// What this node believes about `name`.
    pub fn status_of(&self, name: &str) -> Option<(NodeId, u64, Status)> {
        self.members.get(name).map(|m| (m.id(), m.incarnation, m.status))
    }

    /// Members this node watches (φ mode).
    pub fn watching(&self) -> impl Iterator<Item = &str> {
        self.watch.iter().map(|w| &*w.name)
    }

    /// Adds members known to be alive, silently (no events, no rumours): a
    /// cluster that has already converged, for simulations and restarts
    /// from a saved view.
    pub fn bootstrap(&mut self, now: Instant, members: &[(NodeId, SocketAddr)]) {
        let shared: Vec<(Arc<str>, u64, SocketAddr)> =
            members.iter().map(|(id, addr)| (Arc::from(id.name.as_str()), id.generation, *addr)).collect();
        self.bootstrap_shared(now, &shared);
    }

    /// As [`Node::bootstrap`], with names already shared: a simulator of many
    /// nodes then stores each name once.
    pub fn bootstrap_shared(&mut self, now: Instant, members: &[(Arc<str>, u64, SocketAddr)]) {
        for (name, generation, addr) in members {
            if **name == *self.me.name || name.is_empty() || name.len() > crate::message::MAX_NAME_LEN {
                continue;
            }
            let id = NodeId { name: String::new(), generation: *generation };
            self.members.insert(Member::new(&id, name.clone(), *addr, 0, Status::Alive, now));
        }
        self.broadcasts.clear();
        self.ring_dirty = true;
    }

    /// Asks `seeds` for their view (push-pull), to join the cluster.
    pub fn join(&mut self, _now: Instant, seeds: &[SocketAddr]) {
        for &to in seeds {
            if to != self.addr {
                let members = self.view();
                self.send(to, Message::PushPull { reply: true, members }, true);
            }
        }
    }

    /// Announces a voluntary leave. The node stops heartbeating and probing.
    pub fn leave(&mut self, _now: Instant) {
        self.incarnation += 1;
        self.status = Status::Left;
        let update = self.self_update(Status::Left);
        self.broadcast(update);
        // Tell a few members directly so the leave spreads even if gossip is
        // about to stop.
        let targets = self.pick(self.config.gossip_nodes.max(3), |m| m.status == Status::Alive);
        for name in targets {
            if let Some(addr) = self.members.get(&name).map(|m| m.addr) {
                self.send(addr, Message::Gossip, false);
            }
        }
    }

    fn self_update(&self, status: Status) -> Update {
        Update { id: self.me.clone(), addr: self.addr, incarnation: self.incarnation, status, from: self.me.clone() }
    }

    fn view(&self) -> Vec<Update> {
        let mut out = vec![self.self_update(self.status)];
        for m in self.members.values() {
            let from = match (&m.status, &m.suspicion) {
                (Status::Suspect, Some(s)) => {
                    s.accusers.iter().next().map_or_else(|| self.me.clone(), |a| NodeId::new(a.clone(), 0))
                }
                _ => m.id(),
            };
            out.push(Update { id: m.id(), addr: m.addr, incarnation: m.incarnation, status: m.status, from });
        }
        out
    }

    fn live_count(&self) -> usize {
        1 + self.live.len()
    }

    fn retransmits(&self) -> u32 {
        let n = self.live_count() as f64;
        self.config.retransmit_mult * ((n + 1.0).log10().ceil().max(1.0) as u32)
    }

    fn broadcast(&mut self, update: Update) {
        // A newer rumour about a member replaces older ones, except that
        // suspicions from different accusers travel side by side: each is an
        // independent confirmation that shortens the suspicion timeout.
        self.broadcasts.retain(|b| {
            b.update.id.name != update.id.name
                || (update.status == Status::Suspect
                    && b.update.status == Status::Suspect
                    && b.update.incarnation == update.incarnation
                    && b.update.from.name != update.from.name)
        });
        let left = self.retransmits();
        self.broadcasts.push(Broadcast { update, left });
        if self.broadcasts.len() > 4096 {
            // Keep the freshest (fewest transmissions) when overwhelmed.
            self.broadcasts.sort_by_key(|b| std::cmp::Reverse(b.left));
            self.broadcasts.truncate(4096);
        }
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Builds and queues a packet, filling a datagram with rumours.
    fn send(&mut self, to: SocketAddr, message: Message, stream: bool) {
        let kind = kind_index(&message);
        let mut packet = Packet {
            cluster: self.config.cluster,
            from: self.me.clone(),
            incarnation: self.incarnation,
            message,
            updates: Vec::new(),
        };
        let max = if stream { MAX_STREAM } else { MAX_DATAGRAM };
        if !stream && !self.broadcasts.is_empty() {
            let mut room = MAX_DATAGRAM.saturating_sub(wire::encoded_len(&packet));
            // Least-transmitted first.
            if self.broadcasts.len() > 1 {
                self.broadcasts.sort_by_key(|b| std::cmp::Reverse(b.left));
            }
            for b in &mut self.broadcasts {
                let len = wire::update_len(&b.update);
                if len <= room && packet.updates.len() < wire::MAX_UPDATES {
                    room -= len;
                    packet.updates.push(b.update.clone());
                    b.left = b.left.saturating_sub(1);
                }
            }
            self.broadcasts.retain(|b| b.left > 0);
        }
        match wire::encode(&packet, max) {
            Ok(bytes) => {
                self.stats.sent[kind] += 1;
                self.stats.bytes_sent += bytes.len() as u64;
                if self.transmits.len() < MAX_QUEUE {
                    self.transmits.push_back(Transmit { to, bytes, stream });
                }
            }
            Err(_) => {
                // Only a push-pull of an enormous view can fail; it is
                // skipped (the next round sends a fresh one).
            }
        }
    }

    fn emit(&mut self, event: Event) {
        if self.events.len() < MAX_QUEUE {
            self.events.push_back(event);
        }
    }

    /// The next thing to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next thing that happened.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn phi_threshold(&self) -> f64 {
        self.config.suspect_phi * f64::from(1 + self.awareness)
    }

    fn scaled(&self, d: Duration) -> Duration {
        d * (1 + self.awareness)
    }

    /// When the node next needs [`Node::handle_timeout`].
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        if matches!(self.status, Status::Left) {
            return None;
        }
        self.refresh_ring();
        let mut t = self.next_gossip.min(self.next_push_pull).min(self.next_reannounce);
        match self.config.mode {
            Mode::Phi => {
                t = t.min(self.next_heartbeat);
                let th = self.phi_threshold();
                let mut watch = std::mem::take(&mut self.watch);
                let accuse_after = self.accuse_after;
                for w in &mut watch {
                    let probing = !self.probes.is_empty() && self.probing(&w.name);
                    let Some(m) = self.members.get(&w.name) else { continue };
                    if !may_accuse(&self.me.name, m) || probing {
                        continue;
                    }
                    let at = match w.phi_at {
                        Some((cached, at)) if cached == th => at,
                        _ => {
                            let at = w.detector.crossing(th);
                            w.phi_at = Some((th, at));
                            at
                        }
                    };
                    if let Some(at) = at {
                        t = t.min(at.max(w.quiet_until).max(accuse_after));
                    }
                }
                self.watch = watch;
            }
            Mode::Classic => t = t.min(self.next_probe),
        }
        for p in self.probes.values() {
            t = t.min(p.next);
        }
        for r in self.relays.values() {
            t = t.min(r.deadline);
        }
        for name in &self.suspects {
            if let Some(s) = self.members.get(name).and_then(|m| m.suspicion.as_ref()) {
                t = t.min(s.deadline());
            }
        }
        self.expected_wake = Some(t);
        Some(t)
    }

    /// Whether this node may accuse `m`: it is alive, or suspected by
    /// others but not yet by this node.
    fn may_accuse(&self, m: &Member) -> bool {
        may_accuse(&self.me.name, m)
    }

    /// φ said `target` was silent, but it answered: its heartbeats are not
    /// getting through. Reported, and no new probe for a probe interval.
    fn path_problem(&mut self, now: Instant, target: NodeId, phi: f64, indirect: bool) {
        self.stats.path_problems += 1;
        let quiet = now.saturating_add(self.config.probe_interval);
        if let Some(w) = self.watch_mut(&target.name) {
            w.quiet_until = quiet;
        }
        self.emit(Event::PathProblem { id: target, phi, indirect });
    }

    /// The watch entry of `name`, if this node watches it.
    fn watch_mut(&mut self, name: &str) -> Option<&mut Watch> {
        self.watch.iter_mut().find(|w| *w.name == *name)
    }

    fn probing(&self, name: &str) -> bool {
        self.probes.values().any(|p| p.target.name == name)
    }

    /// Recomputes the monitoring ring: whom to heartbeat, whom to watch.
    fn refresh_ring(&mut self) {
        if !self.ring_dirty {
            return;
        }
        self.ring_dirty = false;
        self.live = self
            .members
            .values()
            .filter(|m| matches!(m.status, Status::Alive | Status::Suspect))
            .map(|m| m.name.clone())
            .collect();
        self.suspects = self.members.values().filter(|m| m.status == Status::Suspect).map(|m| m.name.clone()).collect();
        self.dead = self
            .members
            .values()
            .filter(|m| matches!(m.status, Status::Dead | Status::Left))
            .map(|m| m.name.clone())
            .collect();
        if self.config.mode != Mode::Phi {
            return;
        }
        let me: Arc<str> = Arc::from(self.me.name.as_str());
        let mut ring: Vec<(u64, Arc<str>)> = self.live.iter().map(|name| (ring_hash(name), name.clone())).collect();
        ring.push((ring_hash(&me), me.clone()));
        ring.sort();
        let n = ring.len();
        let k = self.config.observers.min(n.saturating_sub(1));
        let pos = ring.iter().position(|(_, name)| *name == me).unwrap_or(0);
        self.heartbeat_to = (1..=k).map(|i| ring[(pos + i) % n].1.clone()).collect();
        let watched: Vec<Arc<str>> = (1..=k).map(|i| ring[(pos + n - i) % n].1.clone()).collect();
        let cfg = AkkaConfig {
            threshold: self.config.suspect_phi,
            window: self.config.window,
            min_std_dev: self.config.min_std_dev,
            acceptable_pause: Duration::ZERO,
            first_heartbeat_estimate: self.config.heartbeat_interval,
        };
        let mut old = std::mem::take(&mut self.watch);
        for name in watched {
            let generation = self.members.get(&name).map_or(0, |m| m.generation);
            if let Some(pos) = old.iter().position(|w| w.name == name) {
                let mut w = old.swap_remove(pos);
                w.generation = generation;
                self.watch.push(w);
            } else if let Ok(detector) = Akka::new(cfg.clone()) {
                self.watch.push(Watch { name, generation, detector, quiet_until: self.accuse_after, phi_at: None });
            }
        }
    }

    /// Handles the passage of time: sends heartbeats, gossip and probes due
    /// by `now`, and settles probes and suspicions.
    pub fn handle_timeout(&mut self, now: Instant) {
        if matches!(self.status, Status::Left) {
            return;
        }
        // Local health: a timer that fires late means this node stalled.
        if let Some(expected) = self.expected_wake.take()
            && now > expected.saturating_add(self.config.local_stall)
        {
            let late = now.saturating_duration_since(expected);
            self.stats.local_stalls += 1;
            self.raise_awareness(1);
            // Whatever this node measured during the stall is its own fault:
            // no accusations for as long again, and a fresh start for φ.
            self.accuse_after = now.saturating_add(late.max(self.config.probe_timeout));
        }
        self.refresh_ring();
        if self.config.mode == Mode::Phi && now >= self.next_heartbeat {
            for name in self.heartbeat_to.clone() {
                if let Some(addr) = self.members.get(&name).map(|m| m.addr) {
                    self.send(addr, Message::Heartbeat, false);
                }
            }
            self.next_heartbeat = advance(self.next_heartbeat, self.config.heartbeat_interval, now);
        }
        if self.config.mode == Mode::Phi && now >= self.accuse_after {
            let th = self.phi_threshold();
            let due: Vec<(Arc<str>, f64)> = self
                .watch
                .iter()
                .filter_map(|w| {
                    let m = self.members.get(&w.name)?;
                    if !self.may_accuse(m) || now < w.quiet_until || self.probing(&w.name) {
                        return None;
                    }
                    let level = w.detector.level(now);
                    (level >= th).then(|| (w.name.clone(), level))
                })
                .collect();
            for (name, level) in due {
                self.start_probe(now, &name, Some(level), true);
            }
        }
        if self.config.mode == Mode::Classic && now >= self.next_probe {
            self.next_probe = advance(self.next_probe, self.scaled(self.config.probe_interval), now);
            if let Some(name) = self.next_classic_target() {
                self.start_probe(now, &name, None, false);
            }
        }
        self.settle_probes(now);
        self.settle_relays(now);
        self.settle_suspicions(now);
        if now >= self.next_gossip {
            self.next_gossip = advance(self.next_gossip, self.config.gossip_interval, now);
            self.gossip(now);
        }
        if now >= self.next_push_pull {
            let n = self.live_count() as f64;
            let scale = if n <= 32.0 { 1.0 } else { (n.log2() - 32f64.log2()).ceil() + 1.0 };
            self.next_push_pull = advance(self.next_push_pull, self.config.push_pull_interval.mul_f64(scale), now);
            self.push_pull(now);
        }
        if now >= self.next_reannounce {
            self.next_reannounce = advance(self.next_reannounce, self.config.reannounce_interval, now);
            self.reannounce(now);
        }
    }

    fn raise_awareness(&mut self, by: u32) {
        self.awareness = (self.awareness + by).min(self.config.max_awareness);
    }

    fn next_classic_target(&mut self) -> Option<Arc<str>> {
        if self.config.random_probe_targets {
            return self.pick(1, |m| matches!(m.status, Status::Alive | Status::Suspect)).pop();
        }
        loop {
            if self.probe_order.is_empty() {
                let mut names: Vec<Arc<str>> = self
                    .members
                    .values()
                    .filter(|m| matches!(m.status, Status::Alive | Status::Suspect))
                    .map(|m| m.name.clone())
                    .collect();
                if names.is_empty() {
                    return None;
                }
                // Fisher–Yates with the node's seeded generator.
                for i in (1..names.len()).rev() {
                    let j = self.rng.random_range(0..=i);
                    names.swap(i, j);
                }
                self.probe_order = names;
            }
            let name = self.probe_order.pop()?;
            if self.members.get(&name).is_some_and(|m| matches!(m.status, Status::Alive | Status::Suspect)) {
                return Some(name);
            }
        }
    }

    /// Starts a probe of `name`: a direct ping, and in φ mode indirect
    /// requests at once (the silence has already lasted).
    fn start_probe(&mut self, now: Instant, name: &str, phi: Option<f64>, indirect_now: bool) {
        let Some((target, addr)) = self.members.get(name).map(|m| (m.id(), m.addr)) else { return };
        let seq = self.next_seq();
        self.stats.probes += 1;
        self.send(addr, Message::Ping { seq, target: target.clone() }, false);
        let timeout = self.scaled(self.config.probe_timeout);
        let mut probe = Probe {
            target,
            addr,
            phi,
            stage: ProbeStage::Direct,
            next: now.saturating_add(timeout),
            expected_nacks: 0,
            nacks: 0,
            started: now,
        };
        if indirect_now {
            self.send_indirect(seq, &mut probe);
            probe.stage = ProbeStage::Indirect;
        }
        self.probes.insert(seq, probe);
    }

    fn send_indirect(&mut self, seq: u32, probe: &mut Probe) {
        let target = probe.target.name.clone();
        let helpers = self.pick(self.config.indirect_checks, |m| m.status == Status::Alive && *m.name != *target);
        for name in helpers {
            if let Some(addr) = self.members.get(&name).map(|m| m.addr) {
                self.stats.indirect_probes += 1;
                let msg = Message::PingReq { seq, target: probe.target.clone(), target_addr: probe.addr, nack: true };
                self.send(addr, msg, false);
                probe.expected_nacks += 1;
            }
        }
    }

    /// Up to `n` distinct random members satisfying `keep`. Draws from the
    /// live members first (constant time per draw); falls back to scanning
    /// every member when few qualify.
    fn pick(&mut self, n: usize, keep: impl Fn(&Member) -> bool) -> Vec<Arc<str>> {
        self.refresh_ring();
        let mut out: Vec<Arc<str>> = Vec::with_capacity(n);
        if n == 0 {
            return out;
        }
        if !self.live.is_empty() {
            for _ in 0..(4 * n) {
                if out.len() == n {
                    return out;
                }
                let name = &self.live[self.rng.random_range(0..self.live.len())];
                if !out.contains(name) && self.members.get(name).is_some_and(&keep) {
                    out.push(name.clone());
                }
            }
        }
        let mut rest: Vec<Arc<str>> =
            self.members.values().filter(|m| keep(m) && !out.contains(&m.name)).map(|m| m.name.clone()).collect();
        while out.len() < n && !rest.is_empty() {
            let j = self.rng.random_range(0..rest.len());
            out.push(rest.swap_remove(j));
        }
        out
    }

    fn settle_probes(&mut self, now: Instant) {
        let due: Vec<u32> = self.probes.iter().filter(|(_, p)| p.next <= now).map(|(s, _)| *s).collect();
        for seq in due {
            let Some(mut probe) = self.probes.remove(&seq) else { continue };
            match probe.stage {
                ProbeStage::Direct => {
                    // Classic: indirect probes until the end of the period.
                    self.send_indirect(seq, &mut probe);
                    probe.stage = ProbeStage::Indirect;
                    let period = self.scaled(self.config.probe_interval);
                    let rest = period.saturating_sub(self.scaled(self.config.probe_timeout));
                    probe.next = now.saturating_add(rest.max(self.config.probe_timeout));
                    self.probes.insert(seq, probe);
                }
                ProbeStage::Indirect => {
                    // Missing nacks are Lifeguard's evidence that this node's
                    // own network is the problem.
                    let missing = probe.expected_nacks.saturating_sub(probe.nacks);
                    if missing > 0 {
                        self.raise_awareness(missing);
                    }
                    if now < self.accuse_after {
                        continue;
                    }
                    let name = probe.target.name.clone();
                    // A heartbeat that arrived while the probe was out is an
                    // answer too: under loss, the probe's own packets are as
                    // likely to be lost as the heartbeat that set φ off.
                    if let Some(phi) = probe.phi
                        && self
                            .watch_mut(&name)
                            .and_then(|w| w.detector.last_heartbeat())
                            .is_some_and(|last| last > probe.started)
                    {
                        self.path_problem(now, probe.target, phi, false);
                        continue;
                    }
                    let Some(m) = self.members.get(&name) else { continue };
                    // A failed probe of a member already suspected by others
                    // is an independent confirmation (Lifeguard).
                    if !m.is(&probe.target) || !self.may_accuse(m) {
                        continue;
                    }
                    let (id, inc) = (m.id(), m.incarnation);
                    self.stats.suspicions_started += 1;
                    let update = Update {
                        id,
                        addr: probe.addr,
                        incarnation: inc,
                        status: Status::Suspect,
                        from: self.me.clone(),
                    };
                    self.apply(now, update, probe.phi);
                }
            }
        }
    }

    fn settle_relays(&mut self, now: Instant) {
        let due: Vec<u32> = self.relays.iter().filter(|(_, r)| r.deadline <= now).map(|(s, _)| *s).collect();
        for seq in due {
            if let Some(r) = self.relays.remove(&seq)
                && r.nack
            {
                self.send(r.requester, Message::Nack { seq: r.seq }, false);
            }
        }
    }

    fn settle_suspicions(&mut self, now: Instant) {
        let due: Vec<Arc<str>> = self
            .suspects
            .iter()
            .filter(|name| {
                self.members.get(name).is_some_and(|m| {
                    m.status == Status::Suspect && m.suspicion.as_ref().is_some_and(|s| s.deadline() <= now)
                })
            })
            .cloned()
            .collect();
        for name in due {
            let Some(m) = self.members.get(&name) else { continue };
            let update = Update {
                id: m.id(),
                addr: m.addr,
                incarnation: m.incarnation,
                status: Status::Dead,
                from: self.me.clone(),
            };
            self.stats.deaths_declared += 1;
            self.apply(now, update, None);
        }
    }

    fn gossip(&mut self, now: Instant) {
        if self.broadcasts.is_empty() {
            return;
        }
        let retention = self.config.dead_retention;
        let targets = self.pick(self.config.gossip_nodes, |m| match m.status {
            Status::Alive | Status::Suspect => true,
            Status::Dead => now.saturating_duration_since(m.since) < retention,
            Status::Left => false,
        });
        for name in targets {
            if self.broadcasts.is_empty() {
                break;
            }
            if let Some(addr) = self.members.get(&name).map(|m| m.addr) {
                self.send(addr, Message::Gossip, false);
            }
        }
        if now >= self.next_gc {
            self.next_gc = now.saturating_add(Duration::from_secs(5));
            self.collect_tombstones(now);
        }
    }

    fn collect_tombstones(&mut self, now: Instant) {
        self.refresh_ring();
        if self.dead.is_empty() {
            return;
        }
        let retention = self.config.dead_retention * 4;
        let mut tombs: Vec<(Instant, Arc<str>)> =
            self.dead.iter().filter_map(|name| self.members.get(name).map(|m| (m.since, m.name.clone()))).collect();
        tombs.sort();
        let excess = tombs.len().saturating_sub(self.config.max_tombstones);
        let mut removed = false;
        for (i, (since, name)) in tombs.iter().enumerate() {
            if i < excess || now.saturating_duration_since(*since) >= retention {
                self.members.remove(name);
                removed = true;
            }
        }
        if removed {
            self.ring_dirty = true;
        }
    }

    fn push_pull(&mut self, _now: Instant) {
        if let Some(name) = self.pick(1, |m| m.status == Status::Alive).pop()
            && let Some(addr) = self.members.get(&name).map(|m| m.addr)
        {
            let members = self.view();
            self.send(addr, Message::PushPull { reply: true, members }, true);
        }
    }

    /// Re-announces this node to one member believed dead (while its
    /// tombstone lasts), with a short push-pull: this node, and the death it
    /// believes. If the member is in fact alive (a healed partition, an
    /// isolated node), it refutes and answers with its full view and a
    /// request for ours, so both sides merge.
    fn reannounce(&mut self, now: Instant) {
        self.refresh_ring();
        let lifetime = self.config.dead_retention * 4;
        let dead: Vec<Arc<str>> = self
            .dead
            .iter()
            .filter(|name| {
                self.members
                    .get(name)
                    .is_some_and(|m| m.status == Status::Dead && now.saturating_duration_since(m.since) < lifetime)
            })
            .cloned()
            .collect();
        if dead.is_empty() {
            return;
        }
        let name = &dead[self.rng.random_range(0..dead.len())];
        let Some(m) = self.members.get(name) else { return };
        let addr = m.addr;
        let tomb = Update { id: m.id(), addr, incarnation: m.incarnation, status: m.status, from: self.me.clone() };
        let members = vec![self.self_update(self.status), tomb];
        self.send(addr, Message::PushPull { reply: true, members }, true);
    }

    /// Handles one datagram (or stream message) from `from`. On an error the
    /// node's state is unchanged and the rejection is counted.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Result<(), Rejected> {
        if matches!(self.status, Status::Left) {
            return Ok(());
        }
        let packet = match wire::decode(bytes, MAX_STREAM) {
            Ok(p) => p,
            Err(e) => {
                self.stats.rejected_malformed += 1;
                return Err(Rejected::Malformed(e));
            }
        };
        if packet.cluster != self.config.cluster {
            self.stats.rejected_cluster += 1;
            return Err(Rejected::WrongCluster { cluster: packet.cluster });
        }
        if packet.from.name == self.me.name {
            self.stats.rejected_self += 1;
            return Err(Rejected::FromSelf);
        }
        let kind = kind_index(&packet.message);
        if !matches!(packet.message, Message::PushPull { .. }) && bytes.len() > MAX_DATAGRAM {
            self.stats.rejected_malformed += 1;
            return Err(Rejected::Malformed(WireError::TooLarge { len: bytes.len(), max: MAX_DATAGRAM }));
        }
        self.stats.received[kind] += 1;
        // Membership changes since the last call must show in the watch list
        // before a heartbeat is matched against it.
        self.refresh_ring();
        self.stats.bytes_received += bytes.len() as u64;
        // The sender is alive as far as its own packet goes.
        self.learn_sender(now, &packet.from, from, packet.incarnation);
        for u in packet.updates {
            self.apply(now, u, None);
        }
        match packet.message {
            Message::Heartbeat => {
                if let Some(w) = self.watch_mut(&packet.from.name)
                    && w.generation == packet.from.generation
                {
                    w.detector.heartbeat(now);
                    w.phi_at = None;
                }
            }
            Message::Ping { seq, target } => {
                if target == self.me {
                    self.send(from, Message::Ack { seq }, false);
                }
            }
            Message::PingReq { seq, target, target_addr, nack } if self.relays.len() < MAX_RELAYS => {
                let own = self.next_seq();
                self.send(target_addr, Message::Ping { seq: own, target }, false);
                let deadline = now.saturating_add(self.config.probe_timeout);
                self.relays.insert(own, Relay { requester: from, seq, deadline, nack });
            }
            Message::PingReq { .. } => {
                // Too many relays in flight: a flood, not a cluster.
            }
            Message::Ack { seq } => {
                if let Some(r) = self.relays.remove(&seq) {
                    self.send(r.requester, Message::Ack { seq: r.seq }, false);
                } else if let Some(p) = self.probes.remove(&seq) {
                    self.awareness = self.awareness.saturating_sub(1);
                    let direct = packet.from == p.target;
                    if let Some(phi) = p.phi {
                        // φ said silent, the member answered: a path problem.
                        self.path_problem(now, p.target, phi, !direct);
                    }
                }
            }
            Message::Nack { seq } => {
                if let Some(p) = self.probes.get_mut(&seq) {
                    p.nacks += 1;
                }
            }
            Message::Gossip => {}
            Message::PushPull { reply, members } => {
                // A short push-pull is a re-announcement: answer with the
                // full view and ask for the sender's.
                let short = members.len() <= 2;
                for mut u in members {
                    // A remote view's "dead" is only a suspicion here, for a
                    // member this node believes alive: it gets to refute
                    // (memberlist does the same).
                    if u.status == Status::Dead
                        && self.members.get(&u.id.name).is_some_and(|m| m.status == Status::Alive && m.is(&u.id))
                    {
                        u.status = Status::Suspect;
                    }
                    self.apply(now, u, None);
                }
                if reply {
                    let view = self.view();
                    self.send(from, Message::PushPull { reply: short && view.len() > 2, members: view }, true);
                }
            }
        }
        Ok(())
    }

    fn learn_sender(&mut self, now: Instant, id: &NodeId, addr: SocketAddr, incarnation: u64) {
        let known = self.members.get(&id.name);
        let unknown = known.is_none_or(|m| id.generation > m.generation);
        if unknown {
            self.apply(
                now,
                Update { id: id.clone(), addr, incarnation, status: Status::Alive, from: id.clone() },
                None,
            );
        }
    }

    /// The shared copy of a name: the table's if known, else a new one.
    fn intern(&self, name: &str) -> Arc<str> {
        self.members.name(name).unwrap_or_else(|| Arc::from(name))
    }

    /// Applies a rumour; the heart of the protocol's state rules.
    fn apply(&mut self, now: Instant, u: Update, phi: Option<f64>) {
        if u.id.name == self.me.name {
            self.about_me(now, u);
            return;
        }
        if u.id.name.is_empty() {
            return;
        }
        let entry = self.members.get(&u.id.name);
        // The common case in anti-entropy: nothing new.
        if let Some(m) = entry
            && m.generation == u.id.generation
            && u.incarnation <= m.incarnation
            && (u.status == m.status || u.status == Status::Alive)
            && !(u.status == Status::Suspect && u.incarnation == m.incarnation)
        {
            self.stats.stale_updates += 1;
            return;
        }
        let retransmit = u.clone();
        // Older generations lose to newer ones, whatever they say.
        if let Some(m) = entry {
            if u.id.generation < m.generation {
                self.stats.stale_updates += 1;
                return;
            }
            if u.id.generation > m.generation {
                self.members.remove(&u.id.name);
                self.ring_dirty = true;
            }
        }
        if self.members.get(&u.id.name).is_none() && self.members.index.len() >= MAX_MEMBERS {
            self.stats.stale_updates += 1;
            return;
        }
        let Some(m) = self.members.get_mut(&u.id.name) else {
            // A new member (or a new generation of one).
            if matches!(u.status, Status::Alive | Status::Suspect) {
                let name = self.intern(&u.id.name);
                self.members.insert(Member::new(&u.id, name, u.addr, u.incarnation, Status::Alive, now));
                self.ring_dirty = true;
                self.emit(Event::Up { id: u.id.clone(), addr: u.addr });
                self.broadcast(Update { status: Status::Alive, from: u.id.clone(), ..u.clone() });
                if u.status == Status::Suspect {
                    self.apply(now, u, phi);
                }
            } else {
                // A tombstone for someone never seen: remember it so a late
                // alive rumour of the same incarnation cannot resurrect it.
                let name = self.intern(&u.id.name);
                self.members.insert(Member::new(&u.id, name, u.addr, u.incarnation, u.status, now));
                self.ring_dirty = true;
            }
            return;
        };
        match u.status {
            Status::Alive => {
                if u.incarnation > m.incarnation {
                    let was = m.status;
                    m.incarnation = u.incarnation;
                    m.addr = u.addr;
                    m.status = Status::Alive;
                    m.since = now;
                    m.suspicion = None;
                    let id = m.id();
                    self.suspects.remove(id.name.as_str());
                    match was {
                        Status::Suspect => {
                            self.stats.refutations_seen += 1;
                            self.emit(Event::Refuted { id, incarnation: u.incarnation });
                        }
                        Status::Dead | Status::Left => {
                            self.ring_dirty = true;
                            self.emit(Event::Up { id, addr: u.addr });
                        }
                        _ => {}
                    }
                    self.broadcast(retransmit);
                } else {
                    self.stats.stale_updates += 1;
                }
            }
            Status::Suspect => {
                if u.incarnation < m.incarnation || matches!(m.status, Status::Dead | Status::Left) {
                    self.stats.stale_updates += 1;
                    return;
                }
                if m.status == Status::Suspect && u.incarnation == m.incarnation {
                    // A confirmation: shrinks the timeout if it is new.
                    if let Some(s) = &mut m.suspicion
                        && s.accusers.insert(u.from.name.clone())
                    {
                        self.broadcast(retransmit);
                    }
                    return;
                }
                m.incarnation = u.incarnation;
                m.status = Status::Suspect;
                m.since = now;
                let interned = m.name.clone();
                self.refresh_ring();
                let n = 1 + self.live.len();
                let (min, max, k) = suspicion_bounds(&self.config, n);
                self.suspects.insert(interned);
                let mut accusers = BTreeSet::new();
                accusers.insert(u.from.name.clone());
                let Some(m) = self.members.get_mut(&u.id.name) else { return };
                m.suspicion = Some(Box::new(Suspicion { started: now, accusers, min, max, k }));
                let (id, addr) = (m.id(), m.addr);
                self.emit(Event::Suspected { id, by: u.from.clone(), phi });
                self.broadcast(retransmit);
                // Buddy system: tell the suspect at once so it can refute.
                self.send(addr, Message::Gossip, false);
            }
            Status::Dead | Status::Left => {
                if u.incarnation < m.incarnation || matches!(m.status, Status::Dead | Status::Left) {
                    self.stats.stale_updates += 1;
                    return;
                }
                m.incarnation = u.incarnation;
                m.status = u.status;
                m.since = now;
                m.suspicion = None;
                let id = m.id();
                self.suspects.remove(id.name.as_str());
                self.ring_dirty = true;
                self.probes.retain(|_, p| p.target != id);
                if u.status == Status::Left {
                    self.emit(Event::Left { id });
                } else {
                    self.emit(Event::Dead { id, by: u.from.clone() });
                }
                self.broadcast(retransmit);
            }
        }
    }

    /// A rumour about this node: refute accusations, ignore the rest.
    fn about_me(&mut self, _now: Instant, u: Update) {
        if u.id.generation != self.me.generation {
            // About an older (or, impossibly, newer) process of this name.
            self.stats.stale_updates += 1;
            return;
        }
        if matches!(u.status, Status::Suspect | Status::Dead)
            && u.incarnation >= self.incarnation
            && self.status == Status::Alive
        {
            self.incarnation = u.incarnation.saturating_add(1);
            self.stats.self_refutations += 1;
            self.raise_awareness(1);
            let update = self.self_update(Status::Alive);
            self.broadcast(update);
            self.emit(Event::SelfRefuted { incarnation: self.incarnation });
        }
    }
}

/// Whether `me` may accuse `m`: it is alive, or suspected by others but not
/// yet by `me`.
fn may_accuse(me: &str, m: &Member) -> bool {
    match m.status {
        Status::Alive => true,
        Status::Suspect => m.suspicion.as_ref().is_some_and(|s| !s.accusers.contains(me)),
        Status::Dead | Status::Left => false,
    }
}

/// Suspicion timeout bounds and expected confirmations for `n` members.
fn suspicion_bounds(c: &Config, n: usize) -> (Duration, Duration, u32) {
    match c.mode {
        Mode::Phi => {
            let k = c.observers.saturating_sub(1).min(n.saturating_sub(2)) as u32;
            (c.suspicion_min, c.suspicion_max, k)
        }
        Mode::Classic => {
            // memberlist's util.go: log10 with a floor of 1.
            let scale = (n.max(1) as f64).log10().max(1.0);
            let min = c.probe_interval.mul_f64(f64::from(c.suspicion_mult) * scale);
            let max = min * c.suspicion_max_timeout_mult;
            let k = c.suspicion_mult.saturating_sub(2);
            let k = if (n as u32).saturating_sub(2) < k { 0 } else { k };
            (min, max, k)
        }
    }
}

/// The next periodic deadline after `now`.
fn advance(mut at: Instant, period: Duration, now: Instant) -> Instant {
    at = at.saturating_add(period);
    if at <= now { now.saturating_add(period) } else { at }
}
