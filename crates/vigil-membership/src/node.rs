//! One member's protocol state machine: the orchestrator of the components.
//!
//! Sans-IO: the caller feeds it datagrams, stream messages and timeouts,
//! with the time, and drains what it wants to send, when it next needs to be
//! woken, and what happened. Call order, after creating the node (and
//! [`Node::join`] or [`Node::bootstrap`]):
//!
//! 1. on a datagram: [`Node::handle_datagram`]; on a stream message:
//!    [`Node::handle_stream`];
//! 2. at or after [`Node::poll_timeout`]: [`Node::handle_timeout`];
//! 3. after either: drain [`Node::poll_transmit`] and [`Node::poll_event`].
//!
//! A late or spurious `handle_timeout` is harmless; a late one is noticed as
//! a stall of this node (Lifeguard's local health). Times must not go
//! backwards; if they do, the node keeps the latest time it has seen and
//! counts the call in [`Stats::time_backwards`].
//!
//! The state is owned by the components: the member table and its indexes
//! ([`crate::members`]), the suspicions ([`crate::suspicion`]), the
//! broadcast queue ([`crate::broadcast`]), probes and relays
//! ([`crate::probe`]), monitoring ([`crate::monitor`]), local health
//! ([`crate::health`]) and the timer table ([`crate::timer`]). This module
//! applies the protocol's rules across them.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vigil_detector::Instant;

use crate::broadcast::Broadcasts;
use crate::config::{Config, ConfigError, Mode};
use crate::event::Event;
use crate::health::LocalHealth;
use crate::members::{Member, MemberTable};
use crate::message::{MAX_NAME_LEN, Message, MessageKind, NodeId, Packet, Status, Update};
use crate::monitor::Monitor;
use crate::probe::{Answered, Probe, ProbeOrder, Probes, Purpose, Stage};
use crate::rejected::Rejected;
use crate::stats::Stats;
use crate::suspicion::{Bounds, Confirmed, Suspicions};
use crate::timer::{Timer, Timers};
use crate::transmit::Transmit;
use crate::view::MemberView;
use crate::wire::{self, MAX_DATAGRAM, MAX_STREAM};

/// Transmits and events queued at most; more are counted and dropped.
const MAX_QUEUE: usize = 100_000;

/// Rumours queued for piggybacking at most.
const MAX_BROADCASTS: usize = 4_096;

/// Indirect probes relayed at once, at most.
const MAX_RELAYS: usize = 4_096;

/// How often old tombstones are collected.
const COLLECT_INTERVAL: Duration = Duration::from_secs(5);

/// One member's protocol state machine. See the module documentation for the
/// call order.
#[derive(Clone)]
pub struct Node {
    config: Config,
    me: NodeId,
    addr: SocketAddr,
    incarnation: u64,
    /// Alive, or Left after [`Node::leave`].
    status: Status,
    rng: ChaCha8Rng,
    /// The latest time seen.
    now: Instant,
    /// The overdue deadline a stall was last noticed for.
    stall_seen: Option<Instant>,
    /// Accusers told of this incarnation's refutation.
    refuted_to: std::collections::BTreeSet<Arc<str>>,
    members: MemberTable,
    suspicions: Suspicions,
    broadcasts: Broadcasts,
    probes: Probes,
    order: ProbeOrder,
    monitor: Monitor,
    health: LocalHealth,
    timers: Timers,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
    stats: Stats,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("id", &self.me)
            .field("incarnation", &self.incarnation)
            .field("members", &self.members.len())
            .field("suspicions", &self.suspicions.len())
            .finish_non_exhaustive()
    }
}

impl Node {
    /// A node named `id`, reachable at `addr`, with randomness from `seed`.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] if the configuration does not validate, or if the
    /// name is empty or longer than [`MAX_NAME_LEN`] bytes
    /// ([`ConfigError::Name`]).
    pub fn new(id: NodeId, addr: SocketAddr, config: Config, seed: u64, now: Instant) -> Result<Node, ConfigError> {
        config.validate()?;
        if id.name.is_empty() || id.name.len() > MAX_NAME_LEN {
            return Err(ConfigError::Name { len: id.name.len() });
        }
        let monitor = Monitor::new(&config)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut timers = Timers::default();
        // Stagger the periodic timers so a cluster started at once does not
        // act in lockstep.
        let mut stagger = |timer: Timer, period: Duration| {
            let f = if config.stagger_timers { rng.random::<f64>() } else { 0.0 };
            timers.set(timer, Some(now.saturating_add(period.mul_f64(f))));
        };
        match config.mode {
            Mode::Phi => stagger(Timer::Heartbeat, config.heartbeat_interval),
            Mode::Classic => stagger(Timer::ClassicProbe, config.probe_interval),
        }
        stagger(Timer::Gossip, config.gossip_interval);
        stagger(Timer::PushPull, config.push_pull_interval);
        stagger(Timer::Reannounce, config.reannounce_interval);
        stagger(Timer::Collect, COLLECT_INTERVAL);
        let mut node = Node {
            health: LocalHealth::new(config.max_awareness),
            config,
            me: id,
            addr,
            incarnation: 0,
            status: Status::Alive,
            rng,
            now,
            stall_seen: None,
            refuted_to: std::collections::BTreeSet::new(),
            members: MemberTable::new(),
            suspicions: Suspicions::default(),
            broadcasts: Broadcasts::new(MAX_BROADCASTS),
            probes: Probes::new(MAX_RELAYS),
            order: ProbeOrder::default(),
            monitor,
            timers,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
        };
        node.broadcast(node.self_update(Status::Alive));
        Ok(node)
    }

    // ---- getters ----

    /// This node's identity (its generation changes only if its incarnation
    /// ran out: see [`Event::Renewed`]).
    pub fn id(&self) -> &NodeId {
        &self.me
    }

    /// This node's incarnation.
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Lifeguard's local health score (0 is healthy).
    pub fn awareness(&self) -> u32 {
        self.health.score()
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Every member this node knows (not itself), with what it believes,
    /// tombstones included.
    pub fn members(&self) -> impl Iterator<Item = MemberView> + '_ {
        self.members.iter().map(view)
    }

    /// What this node believes about `name`.
    pub fn member(&self, name: &str) -> Option<MemberView> {
        self.members.get(name).map(view)
    }

    /// Members this node watches (φ mode's ring, and the application's).
    pub fn watching(&self) -> impl Iterator<Item = &str> {
        self.monitor.watched().map(|n| &**n)
    }

    /// The detector level of a watched member at `now`; `None` if it is not
    /// watched.
    pub fn level(&self, name: &str, now: Instant) -> Option<f64> {
        self.monitor.level(name, now)
    }

    /// When a watched member's level will reach the suspect level if
    /// nothing arrives; `None` if it is not watched, never heard from, or
    /// never.
    pub fn reaches_suspect_level_at(&self, name: &str) -> Option<Instant> {
        self.monitor.crossing(name)
    }

    /// Suspicions open at this node.
    pub fn suspicions(&self) -> usize {
        self.suspicions.len()
    }

    /// Rumours waiting to be piggybacked.
    pub fn queued_broadcasts(&self) -> usize {
        self.broadcasts.len()
    }

    /// Probes in flight, and indirect probes relayed for others.
    pub fn probes_in_flight(&self) -> (usize, usize) {
        (self.probes.in_flight(), self.probes.relays_in_flight())
    }

    // ---- mutators ----

    /// Adds members known to be alive, silently (no events, no rumours): a
    /// cluster that has already converged, for simulations and restarts
    /// from a saved view. This node's own name, bad names and members beyond
    /// the table's capacity are skipped.
    pub fn bootstrap(&mut self, now: Instant, members: &[(NodeId, SocketAddr)]) {
        let shared: Vec<(Arc<str>, u64, SocketAddr)> =
            members.iter().map(|(id, addr)| (Arc::from(id.name.as_str()), id.generation, *addr)).collect();
        self.bootstrap_shared(now, &shared);
    }

    /// As [`Node::bootstrap`], with names already shared: a simulator of many
    /// nodes then stores each name once.
    pub fn bootstrap_shared(&mut self, now: Instant, members: &[(Arc<str>, u64, SocketAddr)]) {
        let now = self.enter(now);
        let others: Vec<(Arc<str>, u64, SocketAddr)> = members
            .iter()
            .filter(|(name, _, _)| **name != *self.me.name && !name.is_empty() && name.len() <= MAX_NAME_LEN)
            .cloned()
            .collect();
        self.members.insert_shared(&others, now);
        self.broadcasts.clear();
        // The anti-entropy period grows with the cluster: spread the first
        // exchange over the period for this size, so a cluster started at
        // once does not exchange views in waves.
        if self.config.stagger_timers && self.status == Status::Alive {
            let f = self.rng.random::<f64>();
            self.timers.set(Timer::PushPull, Some(now.saturating_add(self.push_pull_period().mul_f64(f))));
        }
        self.settle(now);
    }

    /// Asks `seeds` for their view (push-pull), to join the cluster.
    pub fn join(&mut self, now: Instant, seeds: &[SocketAddr]) {
        let now = self.enter(now);
        for &to in seeds {
            if to != self.addr {
                let members = self.view();
                self.send(to, Message::PushPull { reply: true, members });
            }
        }
        self.settle(now);
    }

    /// Announces a voluntary leave. The node stops heartbeating and probing,
    /// and ignores everything afterwards.
    pub fn leave(&mut self, now: Instant) {
        self.enter(now);
        if self.status == Status::Left {
            return;
        }
        self.renew(self.incarnation);
        self.status = Status::Left;
        self.broadcast(self.self_update(Status::Left));
        // Tell a few members directly so the leave spreads even though this
        // node's gossip stops.
        let targets = self.members.pick(&mut self.rng, self.config.gossip_nodes.max(3), |m| m.status == Status::Alive);
        for name in targets {
            if let Some(addr) = self.members.get(&name).map(|m| m.addr) {
                self.send(addr, Message::Gossip);
            }
        }
        self.timers.clear();
    }

    /// Watches `name` for the application (any mode): its heartbeats are
    /// judged by this node's detector, and it is probed when silent. Does
    /// nothing for an unknown member. φ mode's members send heartbeats only
    /// to their ring observers, so a watch of another member is fed only if
    /// it heartbeats this node.
    pub fn watch(&mut self, now: Instant, name: &str) {
        let now = self.enter(now);
        if let Some(m) = self.members.get(name) {
            self.monitor.watch(m.name.clone(), m.generation, now);
        }
        self.settle(now);
    }

    /// Stops the application's watch of `name`.
    pub fn unwatch(&mut self, now: Instant, name: &str) {
        let now = self.enter(now);
        self.monitor.unwatch(name, now);
        self.settle(now);
    }

    // ---- handle ----

    /// Handles one datagram from `from`. Its size is checked before anything
    /// is decoded.
    ///
    /// # Errors
    ///
    /// A [`Rejected`] says why the datagram was dropped: it is counted in
    /// [`Node::stats`], and the node's state is unchanged.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Result<(), Rejected> {
        self.handle(now, from, bytes, false)
    }

    /// Handles one stream message (a push-pull) from `from`, received whole.
    ///
    /// # Errors
    ///
    /// As [`Node::handle_datagram`].
    pub fn handle_stream(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Result<(), Rejected> {
        self.handle(now, from, bytes, true)
    }

    fn handle(&mut self, now: Instant, from: SocketAddr, bytes: &[u8], stream: bool) -> Result<(), Rejected> {
        let now = self.enter(now);
        if self.status == Status::Left {
            return Ok(());
        }
        let max = if stream { MAX_STREAM } else { MAX_DATAGRAM };
        let packet = match wire::decode(bytes, max) {
            Ok(p) => p,
            Err(e) => {
                self.stats.rejected_malformed += 1;
                return Err(Rejected::Malformed(e));
            }
        };
        let kind = packet.message.kind();
        if kind.is_stream() != stream {
            self.stats.rejected_transport += 1;
            return Err(Rejected::WrongTransport { kind });
        }
        if packet.cluster != self.config.cluster {
            self.stats.rejected_cluster += 1;
            return Err(Rejected::WrongCluster { cluster: packet.cluster });
        }
        if packet.from.name == self.me.name {
            self.stats.rejected_self += 1;
            return Err(Rejected::FromSelf);
        }
        self.stats.received[kind] += 1;
        self.stats.bytes_received += bytes.len() as u64;
        self.receive(now, from, packet);
        self.settle(now);
        Ok(())
    }

    fn receive(&mut self, now: Instant, from: SocketAddr, packet: Packet) {
        // The sender is alive as far as its own packet goes.
        self.learn_sender(now, &packet.from, from, packet.incarnation);
        for u in packet.updates {
            self.apply(now, u, None);
        }
        match packet.message {
            Message::Heartbeat => {
                // Membership changes in this very packet must show in the
                // watch list before the heartbeat is matched against it.
                self.monitor.sync(&self.members, &self.me.name, now);
                self.monitor.heartbeat(&packet.from.name, packet.from.generation, now);
            }
            Message::Ping { seq, target } => {
                if target == self.me {
                    self.send(from, Message::Ack { seq });
                }
            }
            Message::PingReq { seq, target, target_addr, nack } => {
                let own = self.probes.next_seq();
                let relay = crate::probe::Relay { requester: from, seq, nack };
                if self.probes.relay(own, relay, now.saturating_add(self.config.probe_timeout)) {
                    self.send(target_addr, Message::Ping { seq: own, target });
                } else {
                    self.stats.relays_refused += 1;
                }
            }
            Message::Ack { seq } => match self.probes.answer(seq) {
                Some(Answered::Relay(r)) => self.send(r.requester, Message::Ack { seq: r.seq }),
                Some(Answered::Probe(p)) => {
                    self.health.lower();
                    let indirect = packet.from != p.target;
                    if p.purpose == Purpose::Verify {
                        self.verified(p);
                    } else if p.purpose == Purpose::Silent || indirect {
                        // A silent member that answers, or a member that
                        // answers only through others: the path is the
                        // problem.
                        self.path_problem(now, p, indirect);
                    }
                }
                None => {}
            },
            Message::Nack { seq } => self.probes.nack(seq),
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
                    let ask_back = short && view.len() > 2;
                    self.send(from, Message::PushPull { reply: ask_back, members: view });
                }
            }
        }
    }

    /// Handles the passage of time: sends heartbeats, gossip and probes due
    /// by `now`, and settles probes and suspicions.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.enter(now);
        if self.status == Status::Left {
            return;
        }
        if self.timers.is_due(Timer::Heartbeat, now) {
            self.timers.advance(Timer::Heartbeat, self.config.heartbeat_interval, now);
            self.heartbeat();
        }
        self.check_silent(now);
        if self.timers.is_due(Timer::ClassicProbe, now) {
            let period = self.health.scale(self.config.probe_interval);
            self.timers.advance(Timer::ClassicProbe, period, now);
            if let Some(name) = self.order.next(&self.members, &mut self.rng, self.config.random_probe_targets) {
                self.start_probe(now, &name, Purpose::Classic, None);
            }
        }
        self.settle_probes(now);
        self.settle_suspicions(now);
        if self.timers.is_due(Timer::Gossip, now) {
            self.timers.advance(Timer::Gossip, self.config.gossip_interval, now);
            self.gossip(now);
        }
        if self.timers.is_due(Timer::PushPull, now) {
            self.timers.advance(Timer::PushPull, self.push_pull_period(), now);
            self.push_pull();
        }
        if self.timers.is_due(Timer::Reannounce, now) {
            self.timers.advance(Timer::Reannounce, self.config.reannounce_interval, now);
            self.reannounce(now);
        }
        if self.timers.is_due(Timer::Collect, now) {
            self.timers.advance(Timer::Collect, COLLECT_INTERVAL, now);
            self.collect_tombstones(now);
        }
        self.settle(now);
    }

    // ---- poll ----

    /// When the node next needs [`Node::handle_timeout`]; `None` after
    /// [`Node::leave`]. Reading it changes nothing.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.earliest()
    }

    /// The next thing to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next thing that happened.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // ---- the protocol ----

    /// Takes the time of an input: never earlier than the latest seen, and
    /// a stall is noticed if a deadline is long overdue.
    fn enter(&mut self, now: Instant) -> Instant {
        let now = if now < self.now {
            self.stats.time_backwards += 1;
            self.now
        } else {
            now
        };
        self.now = now;
        if let Some(due) = self.timers.earliest()
            && now > due.saturating_add(self.config.local_stall)
            && self.stall_seen != Some(due)
        {
            // This node did not run when it should have: whatever it measured
            // meanwhile is its own fault.
            self.stall_seen = Some(due);
            let late = now.saturating_duration_since(due);
            self.stats.local_stalls += 1;
            self.health.raise(1);
            self.monitor.note_stall(now, late);
            self.emit(Event::LocalStall { late });
        }
        now
    }

    /// After every input: the watch list follows the ring, and the timer
    /// table the components' deadlines.
    fn settle(&mut self, now: Instant) {
        if self.status == Status::Left {
            return;
        }
        self.monitor.sync(&self.members, &self.me.name, now);
        self.timers.set(Timer::Probes, self.probes.next_deadline());
        self.timers.set(Timer::Suspicions, self.suspicions.next_deadline());
        self.timers.set(Timer::Monitor, self.monitor.next_deadline());
    }

    fn heartbeat(&mut self) {
        for name in self.members.successors(&self.me.name, self.config.observers) {
            if let Some(addr) = self.members.get(&name).map(|m| m.addr) {
                self.send(addr, Message::Heartbeat);
            }
        }
    }

    /// Probes the watched members that went silent.
    fn check_silent(&mut self, now: Instant) {
        for silent in self.monitor.poll(now, self.health.multiplier()) {
            let allowed = self.members.get(&silent.name).is_some_and(|m| self.may_accuse(m))
                && !self.probes.probing(&silent.name)
                && now >= self.monitor.quiet_until();
            if allowed {
                self.start_probe(now, &silent.name, Purpose::Silent, silent.level);
            } else {
                let at = now.saturating_add(self.health.scale(self.config.probe_interval));
                self.monitor.recheck(&silent.name, at);
            }
        }
    }

    /// Whether this node may accuse `m`: it is alive, or suspected by others
    /// but not yet by this node (a confirmation).
    fn may_accuse(&self, m: &Member) -> bool {
        match m.status {
            Status::Alive => true,
            Status::Suspect => self.suspicions.get(&m.name).is_none_or(|s| !s.accused_by(&self.me.name)),
            Status::Dead | Status::Left => false,
        }
    }

    /// Starts a probe of `name`: a direct ping, and, for a silent watched
    /// member or a suspicion to verify, indirect requests at once (the
    /// silence has already lasted).
    fn start_probe(&mut self, now: Instant, name: &str, purpose: Purpose, level: Option<f64>) {
        let Some((target, addr)) = self.members.get(name).map(|m| (m.id(), m.addr)) else { return };
        let seq = self.probes.next_seq();
        self.stats.probes += 1;
        self.send(addr, Message::Ping { seq, target: target.clone() });
        let mut probe =
            Probe { target, addr, purpose, level, stage: Stage::Direct, started: now, expected_nacks: 0, nacks: 0 };
        if purpose != Purpose::Classic {
            self.send_indirect(seq, &mut probe);
            probe.stage = Stage::Indirect;
        }
        let deadline = now.saturating_add(self.health.scale(self.config.probe_timeout));
        self.probes.insert(seq, probe, deadline);
    }

    fn send_indirect(&mut self, seq: u32, probe: &mut Probe) {
        let target = probe.target.name.clone();
        let helpers = self
            .members
            .pick(&mut self.rng, self.config.indirect_checks, |m| m.status == Status::Alive && *m.name != *target);
        for name in helpers {
            if let Some(addr) = self.members.get(&name).map(|m| m.addr) {
                self.stats.indirect_probes += 1;
                let msg = Message::PingReq { seq, target: probe.target.clone(), target_addr: probe.addr, nack: true };
                self.send(addr, msg);
                probe.expected_nacks += 1;
            }
        }
    }

    fn settle_probes(&mut self, now: Instant) {
        for (seq, item) in self.probes.due(now) {
            match item {
                Answered::Relay(r) => {
                    if r.nack {
                        self.send(r.requester, Message::Nack { seq: r.seq });
                    }
                }
                Answered::Probe(mut probe) if probe.stage == Stage::Direct => {
                    // Classic: indirect probes until the end of the period.
                    self.send_indirect(seq, &mut probe);
                    probe.stage = Stage::Indirect;
                    let period = self.health.scale(self.config.probe_interval);
                    let rest = period.saturating_sub(self.health.scale(self.config.probe_timeout));
                    self.probes.insert(seq, probe, now.saturating_add(rest.max(self.config.probe_timeout)));
                }
                Answered::Probe(probe) => self.probe_failed(now, probe),
            }
        }
    }

    /// No ack came: accuse the target, unless this node is the likelier
    /// problem or a heartbeat answered in the meantime.
    fn probe_failed(&mut self, now: Instant, probe: Probe) {
        // Missing nacks are Lifeguard's evidence that this node's own
        // network is the problem.
        let missing = probe.expected_nacks.saturating_sub(probe.nacks);
        if missing > 0 {
            self.health.raise(missing);
        }
        let name = probe.target.name.clone();
        let monitored = probe.purpose == Purpose::Silent;
        let recheck = now.saturating_add(self.health.scale(self.config.probe_interval));
        if now < self.monitor.quiet_until() {
            // This node stalled while the probe was out.
            if monitored {
                self.monitor.recheck(&name, recheck);
            }
            return;
        }
        // A heartbeat that arrived while the probe was out is an answer too:
        // under loss, the probe's own packets are as likely to be lost as
        // the heartbeat that set it off.
        if monitored && self.monitor.last_heartbeat(&name).is_some_and(|last| last > probe.started) {
            self.path_problem(now, probe, false);
            return;
        }
        let Some(m) = self.members.get(&name) else { return };
        if probe.purpose == Purpose::Verify {
            // Nobody's verdict came, and the suspect does not answer this
            // node either: this node's own evidence.
            if m.is(&probe.target) && m.status == Status::Suspect {
                let death = Update { status: Status::Dead, ..m.update(self.me.clone()) };
                self.stats.deaths_declared += 1;
                self.apply(now, death, None);
            }
            return;
        }
        // A failed probe of a member already suspected by others is an
        // independent confirmation (Lifeguard).
        if !m.is(&probe.target) || !self.may_accuse(m) {
            return;
        }
        let accusation = m.update(self.me.clone());
        let accusation = Update { status: Status::Suspect, addr: probe.addr, ..accusation };
        self.stats.suspicions_started += 1;
        self.apply(now, accusation, probe.level);
        if monitored {
            self.monitor.recheck(&name, recheck);
        }
    }

    /// A silent member answered: its heartbeats are not getting through.
    /// Reported; it is looked at again after a probe interval, longer each
    /// time the silence goes on.
    fn path_problem(&mut self, now: Instant, probe: Probe, indirect: bool) {
        self.stats.path_problems += 1;
        if probe.purpose == Purpose::Silent {
            let base = self.health.scale(self.config.probe_interval);
            self.monitor.answered(&probe.target.name, now, base);
        }
        self.emit(Event::PathProblem { id: probe.target, level: probe.level, indirect });
    }

    fn settle_suspicions(&mut self, now: Instant) {
        for name in self.suspicions.due(now) {
            let Some(m) = self.members.get(&name) else {
                self.suspicions.remove(&name);
                continue;
            };
            let accuser = self.suspicions.get(&name).is_some_and(|s| s.accused_by(&self.me.name));
            if self.config.mode == Mode::Phi && !accuser {
                // This node only heard of the suspicion, and neither the
                // accusers' verdict nor a refutation reached it (a rumour
                // can miss a member): it looks for itself before acting.
                // The suspicion's clock starts again, in case the suspect
                // answers but does not refute.
                let bounds = self.suspicion_bounds(false);
                self.suspicions.restart(&name, now, bounds);
                if !self.probes.probing(&name) {
                    self.start_probe(now, &name, Purpose::Verify, None);
                }
                continue;
            }
            let death = Update { status: Status::Dead, ..m.update(self.me.clone()) };
            self.stats.deaths_declared += 1;
            self.apply(now, death, None);
            // Whatever happened, this suspicion is settled.
            self.suspicions.remove(&name);
        }
    }

    /// A suspect this node set out to verify answered. A refutation comes
    /// with the answer (its incarnation is in the header) if the suspect
    /// knows it is suspected; if it does not, tell it.
    fn verified(&mut self, probe: Probe) {
        let Some(m) = self.members.get(&probe.target.name) else { return };
        if m.is(&probe.target) && m.status == Status::Suspect {
            let (addr, accusation) = (m.addr, self.rumour(m));
            self.send_with(addr, Message::Gossip, Some(accusation));
        }
    }

    fn gossip(&mut self, now: Instant) {
        if self.broadcasts.is_empty() {
            return;
        }
        let retention = self.config.dead_retention;
        let targets = self.members.pick(&mut self.rng, self.config.gossip_nodes, |m| match m.status {
            Status::Alive | Status::Suspect => true,
            Status::Dead => now.saturating_duration_since(m.since) < retention,
            Status::Left => false,
        });
        for name in targets {
            if self.broadcasts.is_empty() {
                break;
            }
            if let Some(addr) = self.members.get(&name).map(|m| m.addr) {
                self.send(addr, Message::Gossip);
            }
        }
    }

    fn push_pull(&mut self) {
        let target = self.members.pick(&mut self.rng, 1, |m| m.status == Status::Alive).pop();
        if let Some(addr) = target.and_then(|name| self.members.get(&name).map(|m| m.addr)) {
            let members = self.view();
            self.send(addr, Message::PushPull { reply: true, members });
        }
    }

    /// Re-announces this node to one member believed dead (while its
    /// tombstone lasts), with a short push-pull: this node, and the death it
    /// believes. If the member is in fact alive (a healed partition, an
    /// isolated node), it refutes and answers with its full view and a
    /// request for ours, so both sides merge.
    fn reannounce(&mut self, now: Instant) {
        let lifetime = self.config.dead_retention.saturating_mul(4);
        let dead: Vec<Arc<str>> = self
            .members
            .tombstones()
            .filter(|m| m.status == Status::Dead && now.saturating_duration_since(m.since) < lifetime)
            .map(|m| m.name.clone())
            .collect();
        if dead.is_empty() {
            return;
        }
        let name = &dead[self.rng.random_range(0..dead.len())];
        let Some(m) = self.members.get(name) else { return };
        let (addr, tomb) = (m.addr, m.update(self.me.clone()));
        let members = vec![self.self_update(self.status), tomb];
        self.send(addr, Message::PushPull { reply: true, members });
    }

    /// Forgets tombstones older than four times `dead_retention`, and the
    /// oldest beyond `max_tombstones`.
    fn collect_tombstones(&mut self, now: Instant) {
        let lifetime = self.config.dead_retention.saturating_mul(4);
        let excess = self.members.tombstone_count().saturating_sub(self.config.max_tombstones);
        let old: Vec<Arc<str>> = self
            .members
            .tombstones()
            .enumerate()
            .take_while(|(i, m)| *i < excess || now.saturating_duration_since(m.since) >= lifetime)
            .map(|(_, m)| m.name.clone())
            .collect();
        for name in old {
            self.forget(&name);
        }
    }

    fn learn_sender(&mut self, now: Instant, id: &NodeId, addr: SocketAddr, incarnation: u64) {
        let unknown = self.members.get(&id.name).is_none_or(|m| id.generation > m.generation);
        // φ mode: a packet from a suspect at a higher incarnation is its own
        // refutation, whatever it carries (classic mode keeps memberlist's
        // rule: only an alive rumour refutes).
        let refutes = self.config.mode == Mode::Phi
            && self.members.get(&id.name).is_some_and(|m| {
                m.generation == id.generation && m.status == Status::Suspect && incarnation > m.incarnation
            });
        if unknown || refutes {
            let alive = Update { id: id.clone(), addr, incarnation, status: Status::Alive, from: id.clone() };
            self.apply(now, alive, None);
        }
    }

    /// Applies a rumour: the heart of the protocol's state rules.
    fn apply(&mut self, now: Instant, u: Update, level: Option<f64>) {
        if u.id.name == self.me.name {
            self.about_me(u);
            return;
        }
        let Some(m) = self.members.get(&u.id.name) else {
            self.apply_new(now, u, level);
            return;
        };
        // The common case in anti-entropy: nothing new.
        if m.generation == u.id.generation
            && u.incarnation <= m.incarnation
            && (u.status == m.status || u.status == Status::Alive)
            && !(u.status == Status::Suspect && u.incarnation == m.incarnation)
        {
            self.stats.stale_updates += 1;
            return;
        }
        // Older generations lose to newer ones, whatever they say.
        if u.id.generation < m.generation {
            self.stats.stale_updates += 1;
            return;
        }
        if u.id.generation > m.generation {
            self.forget(&u.id.name);
            self.apply_new(now, u, level);
            return;
        }
        let (name, was, incarnation, addr) = (m.name.clone(), m.status, m.incarnation, m.addr);
        match u.status {
            Status::Alive => {
                // The fast path above took every incarnation not above ours.
                self.members.set(&name, u.incarnation, Status::Alive, u.addr, now);
                self.suspicions.remove(&name);
                match was {
                    Status::Suspect => {
                        self.stats.refutations_seen += 1;
                        self.emit(Event::Refuted { id: u.id.clone(), incarnation: u.incarnation });
                    }
                    Status::Dead | Status::Left => self.emit(Event::Up { id: u.id.clone(), addr: u.addr }),
                    Status::Alive => {}
                }
                self.broadcast(u);
            }
            Status::Suspect => {
                if u.incarnation < incarnation || matches!(was, Status::Dead | Status::Left) {
                    self.stats.stale_updates += 1;
                    return;
                }
                if was == Status::Suspect && u.incarnation == incarnation {
                    // A confirmation: shrinks the timeout if it is new, and
                    // is passed on while few have been. If it is this node's
                    // own, this node now decides with the accusers.
                    if *u.from.name == *self.me.name {
                        let bounds = self.suspicion_bounds(true);
                        self.suspicions.set_bounds(&name, bounds);
                    }
                    let accuser = self.members.intern(&u.from.name);
                    if let Confirmed::New(c) = self.suspicions.confirm(&name, accuser)
                        && c <= self.config.max_confirmations_gossiped as usize
                    {
                        self.broadcast(u);
                    }
                    return;
                }
                self.members.set(&name, u.incarnation, Status::Suspect, addr, now);
                let accuser = self.members.intern(&u.from.name);
                let bounds = self.suspicion_bounds(*u.from.name == *self.me.name);
                self.suspicions.start(name, accuser, now, bounds);
                self.emit(Event::Suspected { id: u.id.clone(), by: u.from.clone(), level });
                self.broadcast(u);
                // Buddy system: tell the suspect at once so it can refute.
                self.send(addr, Message::Gossip);
            }
            Status::Dead | Status::Left => {
                if u.incarnation < incarnation || matches!(was, Status::Dead | Status::Left) {
                    self.stats.stale_updates += 1;
                    return;
                }
                self.members.set(&name, u.incarnation, u.status, addr, now);
                self.suspicions.remove(&name);
                self.probes.forget(&u.id);
                if u.status == Status::Left {
                    self.emit(Event::Left { id: u.id.clone() });
                } else {
                    self.emit(Event::Dead { id: u.id.clone(), by: u.from.clone() });
                }
                self.broadcast(u);
            }
        }
    }

    /// A rumour about a member this node does not know (or whose older
    /// generation it just forgot).
    fn apply_new(&mut self, now: Instant, u: Update, level: Option<f64>) {
        if self.members.is_full() {
            self.stats.members_full += 1;
            return;
        }
        match u.status {
            Status::Alive | Status::Suspect => {
                self.members.insert(&u.id, u.addr, u.incarnation, Status::Alive, now);
                self.emit(Event::Up { id: u.id.clone(), addr: u.addr });
                self.broadcast(Update { status: Status::Alive, from: u.id.clone(), ..u.clone() });
                if u.status == Status::Suspect {
                    self.apply(now, u, level);
                }
            }
            Status::Dead | Status::Left => {
                // A tombstone for someone never seen: remember it so a late
                // alive rumour of the same incarnation cannot resurrect it.
                self.members.insert(&u.id, u.addr, u.incarnation, u.status, now);
            }
        }
    }

    /// Forgets a member entirely (a newer generation replaces it, or its
    /// tombstone expired).
    fn forget(&mut self, name: &str) {
        if let Some(m) = self.members.remove(name) {
            self.suspicions.remove(name);
            self.probes.forget(&m.id());
        }
    }

    /// A rumour about this node: refute accusations, ignore the rest.
    fn about_me(&mut self, u: Update) {
        if u.id.generation != self.me.generation {
            // About an older (or, impossibly, newer) process of this name.
            self.stats.stale_updates += 1;
            return;
        }
        if !matches!(u.status, Status::Suspect | Status::Dead) || self.status != Status::Alive {
            return;
        }
        if u.incarnation >= self.incarnation {
            self.renew(u.incarnation);
            self.refuted_to.clear();
            self.stats.self_refutations += 1;
            self.health.raise(1);
            self.broadcast(self.self_update(Status::Alive));
            self.emit(Event::SelfRefuted { incarnation: self.incarnation });
        }
        // The accusers' timers are the ones that decide: tell each of them
        // directly, once per incarnation, even when its accusation arrives
        // after the refutation.
        let accuser = self.members.intern(&u.from.name);
        if let Some(addr) = self.members.get(&accuser).map(|m| m.addr)
            && self.refuted_to.insert(accuser)
        {
            let alive = self.self_update(Status::Alive);
            self.send_with(addr, Message::Gossip, Some(alive));
        }
    }

    /// Moves this node's incarnation past `at_least`; if it cannot grow any
    /// more, takes a new generation instead (which beats every rumour about
    /// the old one, as a restart does).
    fn renew(&mut self, at_least: u64) {
        if let Some(next) = at_least.checked_add(1) {
            self.incarnation = self.incarnation.max(next);
        } else if let Some(generation) = self.me.generation.checked_add(1) {
            self.me.generation = generation;
            self.incarnation = 0;
            self.stats.generation_renewals += 1;
            self.emit(Event::Renewed { id: self.me.clone() });
        }
    }

    fn self_update(&self, status: Status) -> Update {
        Update { id: self.me.clone(), addr: self.addr, incarnation: self.incarnation, status, from: self.me.clone() }
    }

    /// This node's full view: itself and every member.
    fn view(&self) -> Vec<Update> {
        let mut out = Vec::with_capacity(1 + self.members.len());
        out.push(self.self_update(self.status));
        out.extend(self.members.iter().map(|m| self.rumour(m)));
        out
    }

    /// What this node believes about `m`, as a rumour: a suspicion's source
    /// is its first accuser, anything else's the member itself.
    fn rumour(&self, m: &Member) -> Update {
        let accuser =
            self.suspicions.get(&m.name).and_then(|s| s.first_accuser()).filter(|_| m.status == Status::Suspect);
        let from = match accuser {
            Some(a) if **a == *self.me.name => self.me.clone(),
            Some(a) => NodeId { name: a.to_string(), generation: self.members.get(a).map_or(0, |x| x.generation) },
            None => m.id(),
        };
        m.update(from)
    }

    /// Suspicion timeout bounds and expected confirmations, for the current
    /// cluster size. In φ mode the accusers, who probed the member and found
    /// it silent, decide: their timeout runs from `suspicion_max` towards
    /// `suspicion_min` as the other observers confirm. A member that only
    /// heard of the suspicion waits for their verdict (or the suspect's
    /// refutation), and declares the death itself only after
    /// `suspicion_max`, should neither arrive: so a refutation has to reach
    /// the few accusers in time, not the whole cluster. Classic mode keeps
    /// memberlist's rule, every member's timer alike.
    fn suspicion_bounds(&self, accuser: bool) -> Bounds {
        let n = self.cluster_size();
        let c = &self.config;
        match c.mode {
            Mode::Phi if accuser => {
                let k = c.observers.saturating_sub(1).min(n.saturating_sub(2)) as u32;
                Bounds { min: c.suspicion_min, max: c.suspicion_max, k }
            }
            Mode::Phi => Bounds { min: c.suspicion_max, max: c.suspicion_max, k: 0 },
            Mode::Classic => {
                // memberlist's util.go: log10 with a floor of 1.
                let scale = (n.max(1) as f64).log10().max(1.0);
                let min = c.probe_interval.mul_f64(f64::from(c.suspicion_mult) * scale);
                let max = min.saturating_mul(c.suspicion_max_timeout_mult);
                let k = c.suspicion_mult.saturating_sub(2);
                let k = if (n as u32).saturating_sub(2) < k { 0 } else { k };
                Bounds { min, max, k }
            }
        }
    }

    /// The push-pull period: `push_pull_interval`, scaled up beyond 32
    /// members as memberlist does (`× (⌈log2 n − log2 32⌉ + 1)`).
    fn push_pull_period(&self) -> Duration {
        let n = self.cluster_size() as f64;
        let scale = if n <= 32.0 { 1.0 } else { (n.log2() - 32f64.log2()).ceil() + 1.0 };
        self.config.push_pull_interval.mul_f64(scale)
    }

    /// memberlist's estimate of the cluster's size: every member known,
    /// this node and the recently dead included (so a death is passed on as
    /// many times as the rumours before it).
    fn cluster_size(&self) -> usize {
        1 + self.members.len()
    }

    fn retransmits(&self) -> u32 {
        let n = self.cluster_size() as f64;
        self.config.retransmit_mult.saturating_mul((n + 1.0).log10().ceil().max(1.0) as u32)
    }

    fn broadcast(&mut self, update: Update) {
        let retransmits = self.retransmits();
        let dropped = self.broadcasts.push(update, retransmits);
        self.stats.broadcast_overflows += dropped as u64;
    }

    /// Builds and queues a packet; a datagram is filled with rumours.
    fn send(&mut self, to: SocketAddr, message: Message) {
        self.send_with(to, message, None);
    }

    /// As [`Node::send`], with `first` piggybacked before any queued rumour.
    fn send_with(&mut self, to: SocketAddr, message: Message, first: Option<Update>) {
        if self.transmits.len() >= MAX_QUEUE {
            self.stats.transmit_overflows += 1;
            return;
        }
        let kind: MessageKind = message.kind();
        let stream = kind.is_stream();
        let mut packet = Packet {
            cluster: self.config.cluster,
            from: self.me.clone(),
            incarnation: self.incarnation,
            message,
            updates: Vec::new(),
        };
        let max = if stream { MAX_STREAM } else { MAX_DATAGRAM };
        packet.updates.extend(first);
        if !stream {
            let room = MAX_DATAGRAM.saturating_sub(wire::encoded_len(&packet));
            self.broadcasts.fill(room, &mut packet.updates);
        }
        match wire::encode(&packet, max) {
            Ok(bytes) => {
                self.stats.sent[kind] += 1;
                self.stats.bytes_sent += bytes.len() as u64;
                self.transmits.push_back(Transmit { to, bytes, kind, stream });
            }
            Err(_) => self.stats.encode_failures += 1,
        }
    }

    fn emit(&mut self, event: Event) {
        if self.events.len() < MAX_QUEUE {
            self.events.push_back(event);
        } else {
            self.stats.event_overflows += 1;
        }
    }
}

fn view(m: &Member) -> MemberView {
    MemberView { id: m.id(), addr: m.addr, incarnation: m.incarnation, status: m.status, since: m.since }
}
