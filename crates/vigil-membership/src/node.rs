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
//! (`members.rs`), the suspicions (`suspicion.rs`), the broadcast queue
//! (`broadcast.rs`), probes and relays (`probe.rs`), monitoring and the
//! judge of φ and request outcomes (`monitor.rs`, `outcomes.rs`), local
//! health (`health.rs`) and the timer table
//! (`timer.rs`). This module takes the inputs and hands out the outputs; the
//! rules across the components are in `node/rules.rs` (what rumours do),
//! `node/probing.rs` (from silence to a verdict) and `node/dissemination.rs`
//! (spreading what this node knows).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vigil_detector::Instant;

use self::counted::Counted;
use crate::arrivals::Arrivals;
use crate::broadcast::Broadcasts;
use crate::checks::{Check, Checks, Kind as CheckKind};
use crate::config::{Config, ConfigError, Mode};
use crate::digest;
use crate::event::{Event, Signal};
use crate::health::LocalHealth;
use crate::introductions::{Candidate, Introductions, Refusal};
use crate::members::{Member, MemberTable};
use crate::message::{MAX_NAME_LEN, Message, MessageKind, NodeId, Packet, Status, Update};
use crate::monitor::{Change, Monitor, Notice};
use crate::node_view::NodeView;
use crate::probe::{Answered, Probe, ProbeOrder, Probes, Purpose, Stage};
use crate::reachability::Rows;
use crate::rejected::Rejected;
use crate::resolver::Resolver;
use crate::stats::Stats;
use crate::subscription::{self, Subscribers};
use crate::suspicion::{Bounds, Confirmed, Suspicions};
use crate::tags::Tags;
use crate::timer::{Timer, Timers};
use crate::transmit::Transmit;
use crate::view::MemberView;
use crate::watch_report::WatchReport;
use crate::wire::{self, MAX_DATAGRAM_ACCEPTED, MAX_STREAM};

mod counted;
mod dissemination;
mod downing;
mod probing;
mod rules;
#[cfg(test)]
mod tests;

/// A member that downed itself: the sides it knew, and, for want of the
/// lease or under a static quorum, when it may re-form (see
/// `Node::reform_if_due`).
#[derive(Debug, Clone)]
struct Reform {
    /// When to re-form, if no member of the side that won answered: only
    /// for want of the lease, or under a static quorum (see
    /// `Node::reform_if_due`).
    at: Option<Instant>,
    /// Where to re-form: its own side's addresses and the given seeds;
    /// under `lease-majority` and a static quorum, every member it knew.
    seeds: Vec<SocketAddr>,
    /// Its own side's addresses (members downed with it): after the first
    /// re-form (under a static quorum, at once), a call from anywhere else
    /// brings the next one forward (sorted).
    own: Vec<SocketAddr>,
    /// The members of the other side, counted again when it re-forms (a
    /// side that is gone is then found unreachable, and the strategy
    /// decides again).
    others: Vec<(Arc<str>, u64, SocketAddr)>,
}

/// What this node tells a member, at most once a probe interval each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Tell {
    /// That this node holds it dead in the generation it speaks in.
    Downed,
    /// That its name is held by a newer process.
    NameHeld,
    /// That it was refused: another process holds its name and answers.
    Refused,
    /// What this node holds of members its row says it cannot reach,
    /// where this node holds them dead or gone (see `Node::tell_held`).
    Held,
}

/// Transmits and events queued at most; more are counted and dropped.
const MAX_QUEUE: usize = 100_000;

/// Rumours queued for piggybacking at most.
const MAX_BROADCASTS: usize = 4_096;

/// Indirect probes relayed at once, at most.
const MAX_RELAYS: usize = 4_096;

/// Seeds kept at most.
const MAX_SEEDS: usize = 256;

/// A node that knows no live member asks its seeds again after this, then
/// twice as long each time, up to [`JOIN_RETRY_MAX`], for as long as it
/// runs.
const JOIN_RETRY_FIRST: Duration = Duration::from_secs(1);
const JOIN_RETRY_MAX: Duration = Duration::from_secs(30);

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
    /// This node's tags, once set ([`Node::set_tags`]).
    tags: Option<Tags>,
    /// The outlier verdicts this node shares (carried with its tags).
    shared: crate::gray::Shared,
    /// Grows whenever a member's shared verdicts change.
    gray_version: u64,
    /// Alive, or Left after [`Node::leave`].
    status: Status,
    rng: ChaCha8Rng,
    /// The latest time seen.
    now: Instant,
    /// The overdue deadline a stall was last noticed for.
    stall_seen: Option<Instant>,
    /// When this node last noticed a long stall of its own (its timers ran
    /// at least half of `stable_after` late). A verdict the others took
    /// meanwhile is one this node's own absence explains.
    long_stall: Option<Instant>,
    /// After a long stall, until when this node's picture is older than
    /// what it may have missed (its detectors stay quiet as long as it
    /// stalled): members it has not heard since still look reachable, so
    /// it downs nobody before then (see `Node::settle_downing`).
    stale_until: Option<Instant>,
    /// Newer processes of members a decision downed, not taken yet (see
    /// `Node::apply_as`): since when, by name. Kept out two windows at
    /// most: by then this node's side has decided, or cannot decide
    /// without them.
    rejoins_held: std::collections::HashMap<Arc<str>, Instant>,
    /// The members this node knew live when it last downed itself, that
    /// it has heard nothing of since (see `Node::decide_downing`):
    /// cleared once its picture has been clear for `stable_after`.
    past: std::collections::BTreeSet<Arc<str>>,
    /// Since when its picture has been clear, while `past` is kept.
    past_clear_since: Option<Instant>,
    /// When this node last started a push-pull of its own.
    pulled_at: Option<Instant>,
    /// The seeds given to [`Node::join`] (or [`Node::set_seeds`]), asked
    /// again whenever this node knows no live member, and the wait before
    /// asking them again.
    seeds: Vec<SocketAddr>,
    join_backoff: Duration,
    /// Whether the runtime should resolve the seeds' names again (set when
    /// the seeds are asked again; taken by [`Node::take_seed_refresh`]).
    seed_refresh: bool,
    /// Downed, and not yet back: only packets from the seeds (the side
    /// that survived) are heard, so that the members downed together do
    /// not form a cluster of their own again.
    rejoining: bool,
    /// The seeds the runtime gave, kept while the seeds are the surviving
    /// side's after a downing (a name resolved again does not undo that).
    given_seeds: Vec<SocketAddr>,
    /// Downed: both sides as they were (the members it calls once back,
    /// see `Node::reconnect_past`), and, downed for want of the lease,
    /// when it re-forms if the side that took it (or nobody) does not
    /// answer.
    reform: Option<Reform>,
    /// Back after a downing: the addresses of the members it knew then
    /// that it has not heard alive since, called again one a reconnect
    /// interval until this deadline (see `Node::call_past`).
    calling: Vec<SocketAddr>,
    calling_until: Option<Instant>,
    /// Re-forms since the side that won last answered: each doubles the
    /// wait before the next (a side that is only cut off, not gone, asks
    /// the lease again less and less often).
    reforms_in_a_row: u32,
    /// Members proposed by strangers, waiting for their answer.
    introductions: Introductions,
    /// Accusers told of this incarnation's refutation.
    refuted_to: std::collections::BTreeSet<Arc<str>>,
    members: MemberTable,
    suspicions: Suspicions,
    broadcasts: Broadcasts,
    probes: Probes,
    order: ProbeOrder,
    monitor: Monitor,
    subscribers: Subscribers,
    health: LocalHealth,
    /// The downing provider's gate and pending decision.
    resolver: Resolver,
    /// This node's reachability row and those others told it.
    rows: Rows,
    /// Members that told this node, themselves, that they hold it dead in
    /// its current generation.
    tellers: std::collections::BTreeSet<String>,
    /// Members (name → the generation held) that a newer process of their
    /// name, heard of from the others, supersedes, and that did not answer
    /// where this node knows them: kept until a decision downs them (see
    /// `Node::picture`).
    superseded: Counted<u64>,
    /// Members (name → the generation held, and who said so) that other
    /// members said, each first-hand, they hold dead, in the generation
    /// this node holds live: while this node finds one unreachable too,
    /// each of those members counts as finding it unreachable (they forgot
    /// it: their silence about it is not reaching it; see
    /// `Node::picture`).
    dead_elsewhere: Counted<(u64, std::collections::BTreeSet<Arc<str>>)>,
    /// When this node last told a member something it must hear (that it
    /// was downed, that its name is held by another process), by member
    /// and what it was told.
    told: std::collections::HashMap<(Arc<str>, Tell), Instant>,
    /// The last process of this node's name that asked whether this one
    /// runs (its address and generation), and when that was said.
    rival_said: Option<(SocketAddr, u64, Instant)>,
    /// Rumours checked with the member before they are taken.
    checks: Checks,
    /// When members were last removed on gray evidence.
    gray_removals: VecDeque<Instant>,
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
    /// ([`ConfigError::Name`]) or holds a control character
    /// ([`ConfigError::NameCharacter`]).
    pub fn new(id: NodeId, addr: SocketAddr, config: Config, seed: u64, now: Instant) -> Result<Node, ConfigError> {
        config.validate()?;
        if id.name.is_empty() || id.name.len() > MAX_NAME_LEN {
            return Err(ConfigError::Name { len: id.name.len() });
        }
        if let Some(at) = wire::control_character(&id.name) {
            return Err(ConfigError::NameCharacter { at });
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
        stagger(Timer::Reconnect, config.reconnect_interval);
        stagger(Timer::Collect, COLLECT_INTERVAL);
        let mut node = Node {
            health: LocalHealth::new(config.max_awareness),
            resolver: Resolver::new(&config.downing),
            rows: Rows::default(),
            tellers: std::collections::BTreeSet::new(),
            superseded: Counted::default(),
            dead_elsewhere: Counted::default(),
            told: std::collections::HashMap::new(),
            rival_said: None,
            checks: Checks::default(),
            gray_removals: VecDeque::new(),
            introductions: Introductions::new(config.introductions_per_source, config.introduction_window),
            config,
            me: id,
            addr,
            incarnation: 0,
            tags: None,
            shared: crate::gray::Shared::default(),
            gray_version: 0,
            status: Status::Alive,
            rng,
            now,
            stall_seen: None,
            long_stall: None,
            stale_until: None,
            rejoins_held: std::collections::HashMap::new(),
            past: std::collections::BTreeSet::new(),
            past_clear_since: None,
            pulled_at: None,
            seeds: Vec::new(),
            join_backoff: JOIN_RETRY_FIRST,
            seed_refresh: false,
            rejoining: false,
            given_seeds: Vec::new(),
            reform: None,
            calling: Vec::new(),
            calling_until: None,
            reforms_in_a_row: 0,
            refuted_to: std::collections::BTreeSet::new(),
            members: MemberTable::new(),
            suspicions: Suspicions::default(),
            broadcasts: Broadcasts::new(MAX_BROADCASTS),
            probes: Probes::new(MAX_RELAYS),
            order: ProbeOrder::default(),
            monitor,
            subscribers: Subscribers::default(),
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

    /// [`Status::Alive`]; [`Status::Left`] once it left ([`Node::leave`]),
    /// or was downed with nobody to rejoin through ([`Event::Downed`]).
    pub fn status(&self) -> Status {
        self.status
    }

    /// Whether this node was downed and is not yet back: it acts as no
    /// member, hears only the surviving side, and rejoins through it.
    pub fn is_rejoining(&self) -> bool {
        self.rejoining
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

    /// What monitoring knows about a watched member at `now`: level,
    /// interval statistics, and each policy's standing; `None` if it is not
    /// watched.
    pub fn watch_report(&self, name: &str, now: Instant) -> Option<WatchReport> {
        self.monitor.report(name, now)
    }

    /// A watched member's recorded heartbeat arrivals after `after` (all of
    /// them for `None`); `None` if it is not watched. Recording is off
    /// unless [`Config::recorded_arrivals`] is set.
    pub fn arrivals(&self, name: &str, after: Option<Instant>) -> Option<Arrivals> {
        self.monitor.arrivals(name, after)
    }

    /// Records the outcome of one of the application's requests to the live
    /// member `name` (and its latency, if measured), for outlier detection:
    /// consecutive errors eject the member at once; success rate, failure
    /// percentage and latency are judged on the detector's interval
    /// ([`Config::outliers`]). An ejection is reported as
    /// [`Event::Ejected`], a return as [`Event::Returned`]. Returns `false`
    /// (and records nothing) for a member not known to be alive.
    ///
    /// ```
    /// use vigil_detector::Instant;
    /// use vigil_detector::outlier::Outcome;
    /// use vigil_membership::{Config, Event, Node, NodeId};
    ///
    /// let mut node = Node::new(NodeId::new("a", 1), "10.0.0.1:7946".parse()?, Config::lan(7), 1, Instant::ZERO)?;
    /// node.bootstrap(Instant::ZERO, &[(NodeId::new("b", 1), "10.0.0.2:7946".parse()?)]);
    /// for _ in 0..5 {
    ///     assert!(node.record_outcome(Instant::from_millis(10), "b", Outcome::Response(500), None));
    /// }
    /// let ejected = std::iter::from_fn(|| node.poll_event()).any(|e| matches!(e, Event::Ejected { .. }));
    /// assert!(ejected);
    /// assert!(node.outlier_report("b").unwrap().ejected.is_some());
    /// assert!(!node.record_outcome(Instant::from_millis(10), "nobody", Outcome::Response(200), None));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn record_outcome(
        &mut self,
        now: Instant,
        name: &str,
        outcome: vigil_detector::outlier::Outcome,
        latency: Option<Duration>,
    ) -> bool {
        let now = self.enter(now);
        let Some(key) = self.members.get(name).filter(|m| m.is_live()).map(|m| m.name.clone()) else { return false };
        let members = &self.members;
        let live = || members.iter().filter(|m| m.is_live()).map(|m| m.name.clone()).collect();
        self.monitor.record_outcome(now, key, outcome, latency, live);
        self.take_notices();
        self.settle(now);
        true
    }

    /// What outlier detection knows of `name` (once outcomes are recorded).
    pub fn outlier_report(&self, name: &str) -> Option<vigil_detector::outlier::HostReport> {
        self.monitor.outlier_report(name)
    }

    /// The judge's verdicts, ejections and returns, as events.
    fn take_notices(&mut self) {
        for notice in self.monitor.take_notices() {
            match notice {
                Notice::Policy { name, generation, policy, change, signal } => {
                    let id = NodeId::new(&*name, generation);
                    let level = match signal {
                        Signal::Phi { level } => level,
                        Signal::Ejected { .. } => None,
                    };
                    let (fired, withheld) = (change == Change::Fired, change == Change::Withheld);
                    self.emit(Event::Policy { id, policy, fired, level, signal, withheld });
                }
                Notice::Ejected { name, reason, until } => {
                    if let Some(id) = self.members.get(&name).map(|m| m.id()) {
                        if self.config.gray.share && self.shared.ejected(name.clone(), id.generation, reason) {
                            self.announce_shared();
                        }
                        self.emit(Event::Ejected { id, reason, until });
                    }
                }
                Notice::Returned { name } => {
                    if self.shared.cleared(&name) {
                        self.announce_shared();
                    }
                    if let Some(id) = self.members.get(&name).map(|m| m.id()) {
                        self.emit(Event::Returned { id });
                    }
                }
            }
        }
    }

    /// Members proposed by strangers that wait for their answer to a ping
    /// before they are admitted (at most 1,024).
    pub fn candidates(&self) -> usize {
        self.introductions.len()
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

    /// Everything this node knows at `now`, in one owned value: members and
    /// watched members by name, outlier detection's reports, queue depths
    /// and counters. Reading it changes nothing.
    ///
    /// ```
    /// use vigil_detector::Instant;
    /// use vigil_membership::{Config, Node, NodeId};
    ///
    /// let node = Node::new(NodeId::new("a", 1), "10.0.0.1:7946".parse()?, Config::lan(7), 1, Instant::ZERO)?;
    /// let view = node.snapshot(Instant::ZERO);
    /// assert_eq!((view.incarnation, view.members.len(), view.suspicions), (0, 0, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self, now: Instant) -> NodeView {
        let mut members: Vec<MemberView> = self.members().collect();
        members.sort_by(|a, b| a.id.name.cmp(&b.id.name));
        let mut watched: Vec<WatchReport> = self.watching().filter_map(|n| self.watch_report(n, now)).collect();
        watched.sort_by(|a, b| a.name.cmp(&b.name));
        let outliers =
            members.iter().filter_map(|m| self.outlier_report(&m.id.name).map(|r| (m.id.name.clone(), r))).collect();
        NodeView {
            now,
            id: self.me.clone(),
            addr: self.addr,
            incarnation: self.incarnation,
            status: self.status,
            tags: self.tags(),
            awareness: self.health.score(),
            max_awareness: self.config.max_awareness,
            members,
            watched,
            outliers,
            suspicions: self.suspicions.len(),
            queued_broadcasts: self.broadcasts.len(),
            probes_in_flight: self.probes.in_flight(),
            relays_in_flight: self.probes.relays_in_flight(),
            candidates: self.introductions.len(),
            recorded_arrivals: self.config.recorded_arrivals,
            seeds: self.seeds.clone(),
            downing: self.downing_outlook(),
            gray: self.gray_reports(),
            stats: self.stats.clone(),
        }
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
            .filter(|(name, _, _)| {
                **name != *self.me.name
                    && !name.is_empty()
                    && name.len() <= MAX_NAME_LEN
                    && wire::control_character(name).is_none()
            })
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

    /// Asks `seeds` for their view (push-pull), to join the cluster, and
    /// keeps them: whenever this node knows no live member (none answered
    /// yet, or every member it knew is dead, or left), it asks them again
    /// after 1 s, then twice as long each time up to 30 s, for as long as it
    /// runs (a seed restarting, or not up yet, or a partition that outlasts
    /// every tombstone, does not leave it alone for good);
    /// [`Stats::join_retries`] counts the retries. Each retry also asks the
    /// runtime to resolve the seeds again ([`Node::take_seed_refresh`]).
    /// The views the seeds send back are taken as they are (a seed is
    /// trusted), not as a stranger's. A node that left ignores it.
    pub fn join(&mut self, now: Instant, seeds: &[SocketAddr]) {
        let now = self.enter(now);
        if self.status == Status::Left {
            return;
        }
        self.keep_seeds(seeds);
        self.join_backoff = JOIN_RETRY_FIRST;
        let all = self.seeds.clone();
        self.ask_seeds(&all);
        self.timers.set(Timer::Rejoin, None);
        self.settle(now);
    }

    /// Replaces the seeds (the runtime resolved their names again) without
    /// asking them, except those that are new while this node knows no live
    /// member. A node that left ignores it.
    pub fn set_seeds(&mut self, now: Instant, seeds: &[SocketAddr]) {
        let now = self.enter(now);
        if self.status == Status::Left {
            return;
        }
        if self.rejoining {
            // Downed: the seeds stay the surviving side's until it answers.
            self.given_seeds = seeds.to_vec();
            self.settle(now);
            return;
        }
        let before = std::mem::take(&mut self.seeds);
        self.keep_seeds(seeds);
        if self.members.live_count() == 0 {
            let new: Vec<SocketAddr> = self.seeds.iter().copied().filter(|s| !before.contains(s)).collect();
            self.ask_seeds(&new);
        }
        self.settle(now);
    }

    /// Asks `addrs` for their view now, as an operator's join of a running
    /// member does: they become seeds (first, within the limit of 256, so
    /// their answers are trusted as a seed's) and are asked at once, whether
    /// this node knows live members or not. A node that left ignores it.
    ///
    /// ```
    /// use vigil_detector::Instant;
    /// use vigil_membership::{Config, Node, NodeId};
    ///
    /// let addr = "10.0.0.1:7946".parse().unwrap();
    /// let mut a = Node::new(NodeId::new("a", 1), addr, Config::lan(1), 1, Instant::ZERO).unwrap();
    /// a.contact(Instant::ZERO, &["10.0.0.2:7946".parse().unwrap()]);
    /// assert_eq!(a.seeds(), ["10.0.0.2:7946".parse().unwrap()]);
    /// let sent = a.poll_transmit().expect("a push-pull to the new seed");
    /// assert_eq!(sent.to, "10.0.0.2:7946".parse().unwrap());
    /// ```
    pub fn contact(&mut self, now: Instant, addrs: &[SocketAddr]) {
        let now = self.enter(now);
        if self.status == Status::Left {
            return;
        }
        let mut all = addrs.to_vec();
        all.extend(self.seeds.iter().copied());
        self.keep_seeds(&all);
        let asked: Vec<SocketAddr> = addrs.iter().copied().filter(|a| *a != self.addr).collect();
        self.ask_seeds(&asked);
        self.settle(now);
    }

    /// The seeds this node goes back to when it knows no live member.
    pub fn seeds(&self) -> &[SocketAddr] {
        &self.seeds
    }

    /// Whether the seeds were just asked again, so that a runtime that
    /// resolves seed names should resolve them again and give the result to
    /// [`Node::set_seeds`]; reading it clears it.
    pub fn take_seed_refresh(&mut self) -> bool {
        std::mem::take(&mut self.seed_refresh)
    }

    fn keep_seeds(&mut self, seeds: &[SocketAddr]) {
        let mut kept: Vec<SocketAddr> = Vec::with_capacity(seeds.len().min(MAX_SEEDS));
        for &s in seeds {
            if s != self.addr && !kept.contains(&s) && kept.len() < MAX_SEEDS {
                kept.push(s);
            }
        }
        self.given_seeds.clone_from(&kept);
        self.seeds = kept;
    }

    fn ask_seeds(&mut self, seeds: &[SocketAddr]) {
        for &to in seeds {
            self.send_view(to, true);
        }
    }

    /// The seeds' retry: while no live member is known, ask them again,
    /// backing off; once one is, the retries stop until this node is alone
    /// again.
    fn rejoin(&mut self, now: Instant) {
        self.reform_if_due(now);
        if self.members.live_count() > 0 || self.seeds.is_empty() {
            self.join_backoff = JOIN_RETRY_FIRST;
            self.timers.set(Timer::Rejoin, None);
            return;
        }
        self.stats.join_retries += 1;
        let all = self.seeds.clone();
        self.ask_seeds(&all);
        self.seed_refresh = true;
        self.join_backoff = self.join_backoff.saturating_mul(2).min(JOIN_RETRY_MAX);
        self.timers.set(Timer::Rejoin, Some(now.saturating_add(self.join_backoff)));
    }

    /// Sets this node's tags and announces them: they take a new
    /// incarnation, so they replace the old ones everywhere (a member that
    /// first heard of this node without tags records them too, and every
    /// member reports [`Event::TagsUpdated`]). Setting the tags it already
    /// has does nothing. Call it before [`Node::join`] to join with them.
    pub fn set_tags(&mut self, now: Instant, tags: Tags) {
        self.enter(now);
        if self.tags.as_ref() == Some(&tags) || self.status != Status::Alive {
            return;
        }
        self.tags = Some(tags);
        self.renew(self.incarnation);
        self.broadcast(self.self_update(Status::Alive));
        self.settle(now);
    }

    /// This node's tags.
    pub fn tags(&self) -> Tags {
        self.tags.clone().unwrap_or_default()
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
        // node's gossip stops; while a strategy decides, every member (a
        // leave is taken there only from the member itself).
        let few = if self.decides() { self.members.len() } else { self.config.gossip_nodes.max(3) };
        let targets = self.members.pick(&mut self.rng, few, |m| m.status == Status::Alive);
        for name in targets {
            if let Some(addr) = self.members.get(&name).map(|m| m.addr) {
                self.send(addr, Message::Gossip);
            }
        }
        self.timers.clear();
    }

    /// Forces a member believed dead out of the cluster (Serf's
    /// force-leave): it becomes left here and the news is gossiped, so that
    /// no member keeps trying to reconnect to it for `reconnect_timeout`
    /// (a day by default); every member forgets it `tombstone_timeout`
    /// later. With `prune`, this node forgets it at once (the others at
    /// their tombstone timeout). A member that is alive after all refutes
    /// it and stays. Forcing out a member that already left does nothing
    /// but the prune.
    ///
    /// # Errors
    ///
    /// [`ForceLeaveError`]: the member is unknown, or not dead (a member
    /// believed alive or suspected must not be forced out; its suspicion
    /// decides).
    pub fn force_leave(&mut self, now: Instant, name: &str, prune: bool) -> Result<(), ForceLeaveError> {
        let now = self.enter(now);
        let m = self.members.get(name).ok_or_else(|| ForceLeaveError::Unknown(name.to_owned()))?;
        match m.status {
            Status::Alive | Status::Suspect => return Err(ForceLeaveError::NotDead(name.to_owned(), m.status)),
            Status::Left => {}
            Status::Dead => {
                let mut u = m.update(self.me.clone());
                u.status = Status::Left;
                self.members.set(name, u.incarnation, Status::Left, u.addr, now);
                self.member_gone(Event::Left { id: u.id.clone() });
                self.broadcast(u);
            }
        }
        if prune && let Some(id) = self.members.get(name).map(|m| m.id()) {
            self.forget(name);
            self.stats.reaped += 1;
            self.emit(Event::Reaped { id, status: Status::Left });
        }
        self.settle(now);
        Ok(())
    }

    /// Retunes one of the application's graded policies on the running
    /// node, without a restart: its φ settings (threshold, dwell, rearm,
    /// recovery) are replaced and every watched member is judged again as
    /// if the policy had always been so (see `Registry::retune` in
    /// `vigil_detector`); its verdicts come as [`Event::Policy`] events as
    /// before.
    ///
    /// # Errors
    ///
    /// [`ConfigError`]: no application policy of that name, settings that
    /// do not validate, or a change of what the policy listens to (ejection,
    /// a φ part) or of whether it is destructive, which need a restart.
    pub fn retune_policy(&mut self, now: Instant, policy: crate::config::HealthPolicy) -> Result<(), ConfigError> {
        let now = self.enter(now);
        self.monitor.retune(policy.clone(), now)?;
        if let Some(p) = self.config.policies.iter_mut().find(|p| p.name == policy.name) {
            *p = policy;
        }
        self.settle(now);
        Ok(())
    }

    /// Watches `name` for the application (any mode): its heartbeats are
    /// judged by this node's detector, and it is probed when silent. Does
    /// nothing for an unknown member. φ mode's members send heartbeats only
    /// to their ring observers, so a watch of another member is fed only if
    /// it heartbeats this node.
    pub fn watch(&mut self, now: Instant, name: &str) {
        let now = self.enter(now);
        if let Some(m) = self.members.get(name) {
            let (key, generation, addr) = (m.name.clone(), m.generation, m.addr);
            self.monitor.watch(key, generation, now);
            // Off the ring, its heartbeats must be asked for.
            if self.config.mode == Mode::Phi && !self.monitor.on_ring(name) && self.status == Status::Alive {
                self.send(addr, Message::Subscribe { lease_ms: subscription::LEASE.as_millis() as u32 });
                if self.timers.get(Timer::Subscribe).is_none() {
                    self.timers.set(Timer::Subscribe, Some(now.saturating_add(subscription::RENEW)));
                }
            }
        }
        self.settle(now);
    }

    /// Stops the application's watch of `name` (and its heartbeat
    /// subscription, if it had one).
    pub fn unwatch(&mut self, now: Instant, name: &str) {
        let now = self.enter(now);
        let was_app_only = self.monitor.app_only().iter().any(|n| &**n == name);
        self.monitor.unwatch(name, now);
        if was_app_only && let Some(addr) = self.members.get(name).map(|m| m.addr) {
            self.send(addr, Message::Subscribe { lease_ms: 0 });
        }
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
        let max = if stream { MAX_STREAM } else { MAX_DATAGRAM_ACCEPTED };
        let packet = match wire::decode(bytes, max) {
            Ok(p) => p,
            Err(e) => {
                self.stats.rejected_malformed += 1;
                return Err(Rejected::Malformed(e));
            }
        };
        let kind = packet.message.kind();
        // Any message may come on a stream (a stream ping, a stream-only
        // member); a push-pull never comes as a datagram.
        if kind.is_stream() && !stream {
            self.stats.rejected_transport += 1;
            return Err(Rejected::WrongTransport { kind });
        }
        if packet.cluster != self.config.cluster {
            self.stats.rejected_cluster += 1;
            return Err(Rejected::WrongCluster { cluster: packet.cluster });
        }
        if packet.from.name == self.me.name {
            // Another process of this name asking whether this one runs,
            // and its answer: the one exchange two processes of a name
            // have (see `Node::rival`). Anything else in this name is an
            // echo or a forgery.
            if packet.from.generation != self.me.generation && self.rival_exchange(now, from, &packet, stream) {
                return Ok(());
            }
            self.stats.rejected_self += 1;
            return Err(Rejected::FromSelf);
        }
        self.stats.received[kind] += 1;
        self.stats.bytes_received += bytes.len() as u64;
        self.stats.bytes_received_by_kind[kind] += bytes.len() as u64;
        self.receive(now, from, packet, stream);
        self.settle(now);
        Ok(())
    }

    /// Whether `packet`, from the address `from`, speaks for a member this
    /// node knows: its sender is a known member (this generation or a newer
    /// one) at the address this node knows it by, or a seed. Anything else
    /// is a stranger's (see `introductions.rs`).
    fn vouched(&self, from: SocketAddr, packet: &Packet) -> bool {
        let known = self.members.get(&packet.from.name).is_some_and(|m| {
            (m.addr == from || self.members.source_of(&m.name) == Some(from)) && packet.from.generation >= m.generation
        });
        known || self.seeds.contains(&from)
    }

    fn receive(&mut self, now: Instant, from: SocketAddr, packet: Packet, stream: bool) {
        if self.rejoining {
            if self.seeds.contains(&from) {
                self.rejoining = false;
                self.reforms_in_a_row = 0;
                self.reconnect_past(now, from);
            } else if (self.reforms_in_a_row > 0 || self.re_forms_at_will())
                && self.reform.as_ref().is_some_and(|r| r.own.binary_search(&from).is_err())
            {
                // Downed again for want of the lease after re-forming: the
                // side it waits for did not answer last time either. A call
                // from outside its own side (a member it held dead that
                // came back, one that downed itself on another side and
                // waits too) is heard, and this node re-forms at once,
                // counting the other side again (it asks the lease again
                // before anyone is downed). Its own side's members wait out
                // the wait with it. Under a static quorum, from the first
                // downing on: a quorum is counted on no membership, so the
                // members of two downed sides may meet at any time (left
                // to their waits, each asking when the other waits deaf,
                // they could miss each other for ever).
                self.reform_now(now);
            } else {
                self.stats.ignored_while_downed += 1;
                return;
            }
        }
        let vouched = self.vouched(from, &packet);
        if !vouched {
            self.stats.from_strangers += 1;
            self.check_source(now, &packet.from, from);
            self.catch_up_soon(now);
        }
        // A process of a name this node knows in a newer generation: it is
        // told which (it may be orphaned, or refused).
        if self.members.get(&packet.from.name).is_some_and(|m| m.generation > packet.from.generation) {
            self.tell_name_held(now, &packet.from.name, from);
        }
        // Who speaks for itself here: its word about itself is first-hand.
        let speaker = self.speaker(from, &packet, stream).map(|m| (m.id(), m.status));
        if let Some((id, Status::Dead)) = &speaker
            && self.decides()
        {
            // A member this node downed still speaks: it is told.
            self.tell_downed(now, &id.name);
        }
        // If this node's verdict was its alone, the member is asked.
        if self.decides()
            && self.members.get(&packet.from.name).is_some_and(|m| m.is(&packet.from) && m.status == Status::Dead)
        {
            self.withdraw_soon(now, &packet.from);
        }
        let speaker = speaker.filter(|(_, status)| matches!(status, Status::Alive | Status::Suspect)).map(|(id, _)| id);
        // The sender is alive as far as its own packet goes.
        self.learn_sender(now, &packet, from, vouched);
        for u in packet.updates {
            self.take(now, u, vouched, from, speaker.as_ref());
        }
        match packet.message {
            // A stranger's heartbeat is nobody's: it must not keep a silent
            // member alive.
            Message::Heartbeat if vouched => {
                // Membership changes in this very packet must show in the
                // watch list before the heartbeat is matched against it.
                self.sync_monitor(now);
                self.monitor.heartbeat(&packet.from.name, packet.from.generation, now);
                // A recovery for an application policy is reported now,
                // not at the next timer.
                if !self.config.policies.is_empty() {
                    self.check_silent(now);
                }
            }
            Message::Heartbeat => {}
            Message::Ping { seq, target } => {
                // A ping that came on a stream is answered on one: a stream
                // ping's answer goes back on its connection.
                if target == self.me {
                    self.send_by(from, Message::Ack { seq }, None, stream);
                }
            }
            // A stranger does not get this node to ping anyone for it.
            Message::PingReq { .. } if !vouched => self.stats.relays_refused += 1,
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
                    if stream {
                        self.stats.stream_acks += 1;
                    }
                    self.health.lower();
                    let indirect = packet.from != p.target;
                    if p.purpose == Purpose::Check {
                        self.check_answered(now, seq, &p, &packet.from, from);
                    } else if p.purpose == Purpose::Introduce {
                        self.introduced(now, seq, &p, &packet.from);
                    } else if p.purpose == Purpose::Source {
                        self.source_checked(seq, &p, &packet.from, from);
                    } else if p.purpose == Purpose::Verify {
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
            Message::Subscribe { lease_ms } => {
                // Only a member this node knows alive, at its own address,
                // may subscribe.
                let known =
                    vouched && self.members.get(&packet.from.name).is_some_and(|m| m.is(&packet.from) && m.is_live());
                if known && let Some(name) = self.members.get(&packet.from.name).map(|m| m.name.clone()) {
                    self.subscribers.request(name, lease_ms, now);
                }
            }
            Message::PushPull { reply, members } => {
                // A short push-pull is a reconnection attempt: answer with the
                // full view and ask for the sender's.
                let short = members.len() <= 2;
                let known = self.members.len();
                for mut u in members {
                    // The sender's own view, sent by itself (on a
                    // datagram, or a stream in stream-only mode).
                    if let Some(teller) = speaker.as_ref() {
                        self.held_gone_elsewhere(&u, teller);
                    }
                    // A remote view's "dead" is only a suspicion here, for a
                    // member this node believes alive: it gets to refute
                    // (memberlist does the same), and tells the view's
                    // sender, its accuser, at once.
                    // Unless it carries out a decision this node took too
                    // (see `apply`).
                    if u.status == Status::Dead
                        && self.members.get(&u.id.name).is_some_and(|m| m.status == Status::Alive && m.is(&u.id))
                        && !self.carries_out_mine(&u.id.name, u.id.generation, now)
                    {
                        u.status = Status::Suspect;
                        u.from = packet.from.clone();
                    }
                    self.take(now, u, vouched, from, None);
                }
                if self.members.len() > known {
                    self.catch_up_soon(now);
                }
                if reply {
                    let ask_back = short && self.members.len() > 1;
                    self.send_view(from, ask_back);
                }
            }
            Message::Digest { view } => self.compare_digest(from, view),
            Message::Reachability { version, page, pages, entries } => match speaker.filter(|_| self.decides()) {
                Some(sender) => self.take_row(now, &sender, version, (page, pages), entries),
                None => self.stats.rows_refused += 1,
            },
        }
    }

    /// A packet to `to` could not be sent: the network refused it (no
    /// route, no listener for a stream message). A classic probe's direct
    /// stage to `to` fails now rather than at its timeout, so its indirect
    /// probes go out at once (φ mode sends them with the ping already); a
    /// node whose sends fail does not go on believing everyone is alive.
    /// Counted in [`Stats::send_errors`].
    pub fn handle_send_error(&mut self, now: Instant, to: SocketAddr) {
        let now = self.enter(now);
        self.stats.send_errors += 1;
        if self.status == Status::Left {
            return;
        }
        if self.probes.fail_direct_to(to, now) > 0 {
            self.settle_probes(now);
        }
        self.settle(now);
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
            self.push_pull(now);
        }
        if self.timers.is_due(Timer::Reconnect, now) {
            self.timers.advance(Timer::Reconnect, self.config.reconnect_interval, now);
            self.reconnect(now);
        }
        if self.timers.is_due(Timer::Collect, now) {
            self.timers.advance(Timer::Collect, COLLECT_INTERVAL, now);
            self.collect_tombstones(now);
        }
        if self.timers.is_due(Timer::Subscribe, now) {
            self.renew_subscriptions(now);
        }
        if self.timers.is_due(Timer::Rejoin, now) {
            self.rejoin(now);
        }
        self.settle(now);
    }

    /// Renews the heartbeat subscriptions of application watches off the
    /// ring; the timer stops when there are none.
    fn renew_subscriptions(&mut self, now: Instant) {
        let lease_ms = subscription::LEASE.as_millis() as u32;
        let mut any = false;
        for name in self.monitor.app_only() {
            if let Some(addr) = self.members.get(&name).filter(|m| m.is_live()).map(|m| m.addr) {
                self.send(addr, Message::Subscribe { lease_ms });
                any = true;
            }
        }
        self.timers.set(Timer::Subscribe, any.then(|| now.saturating_add(subscription::RENEW)));
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
            if late >= self.config.downing.stable_after / 2 {
                self.long_stall = Some(now);
                self.stale_until = Some(now.saturating_add(late));
            }
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
        self.sync_monitor(now);
        // Alone with seeds: go back to them, after a back-off that grows
        // while nobody answers and starts again from 1 s once someone did.
        if self.members.live_count() > 0 {
            self.join_backoff = JOIN_RETRY_FIRST;
        } else if !self.seeds.is_empty() && self.timers.get(Timer::Rejoin).is_none() {
            self.timers.set(Timer::Rejoin, Some(now.saturating_add(self.join_backoff)));
        }
        self.timers.set(Timer::Probes, self.probes.next_deadline());
        self.timers.set(Timer::Suspicions, self.suspicions.next_deadline());
        self.timers.set(Timer::Monitor, self.monitor.next_deadline());
        self.settle_downing(now);
    }

    /// The watch list follows the ring; while a downing strategy decides,
    /// past the members this node suspects (their places go to the next
    /// ones, subscribed to at once). An application watch the ring no
    /// longer covers is subscribed to at once too: its member stopped
    /// heartbeating this node when the ring moved.
    fn sync_monitor(&mut self, now: Instant) {
        let subscribe = if self.decides() {
            let version = self.members.ring_version().wrapping_add(self.suspicions.version());
            let suspicions = &self.suspicions;
            self.monitor.sync(&self.members, &self.me.name, now, version, |n| suspicions.get(n).is_some())
        } else {
            self.monitor.sync(&self.members, &self.me.name, now, self.members.ring_version(), |_| false)
        };
        if subscribe && self.status == Status::Alive {
            self.timers.set(Timer::Subscribe, Some(now));
        }
    }

    fn heartbeat(&mut self) {
        let (suspicions, decides) = (&self.suspicions, self.decides());
        let mut targets =
            self.members.successors(&self.me.name, self.config.observers, |n| decides && suspicions.get(n).is_some());
        // Subscribers off the ring too, once each.
        self.subscribers.prune(self.now);
        for name in self.subscribers.current(self.now) {
            if !targets.contains(name) {
                targets.push(name.clone());
            }
        }
        for name in targets {
            if let Some(addr) = self.members.get(&name).filter(|m| m.is_live()).map(|m| m.addr) {
                self.send(addr, Message::Heartbeat);
            }
        }
    }

    /// What this node says about itself; its tags go with it while it is
    /// alive, once it has set any.
    fn self_update(&self, status: Status) -> Update {
        let tags =
            self.shared.compose(self.tags.as_ref()).filter(|_| matches!(status, Status::Alive | Status::Suspect));
        Update {
            id: self.me.clone(),
            addr: self.addr,
            incarnation: self.incarnation,
            status,
            from: self.me.clone(),
            tags,
        }
    }

    /// memberlist's estimate of the cluster's size: every member known,
    /// this node and the recently dead included (so a death is passed on as
    /// many times as the rumours before it).
    fn cluster_size(&self) -> usize {
        1 + self.members.len()
    }

    /// Builds and queues a packet; a datagram is filled with rumours.
    fn send(&mut self, to: SocketAddr, message: Message) {
        self.send_by(to, message, None, false);
    }

    /// As [`Node::send`], with `first` piggybacked before any queued rumour.
    fn send_with(&mut self, to: SocketAddr, message: Message, first: Option<Update>) {
        self.send_by(to, message, first, false);
    }

    /// As [`Node::send_with`], as a stream message if `by_stream` (or if
    /// the message only travels on streams, or this node sends nothing
    /// else). A stream message carries rumours only in stream-only mode,
    /// where it stands for a datagram.
    fn send_by(&mut self, to: SocketAddr, message: Message, first: Option<Update>, by_stream: bool) {
        // Downed and not yet back: it speaks to the surviving side only.
        if self.rejoining && !self.seeds.contains(&to) {
            return;
        }
        if self.transmits.len() >= MAX_QUEUE {
            self.stats.transmit_overflows += 1;
            return;
        }
        let kind: MessageKind = message.kind();
        let stream = kind.is_stream() || by_stream || self.config.stream_only;
        // A stream ping is itself only; a datagram, or a stream standing
        // for one in stream-only mode, carries rumours.
        let stream_ping = by_stream && !self.config.stream_only;
        let mut packet = Packet {
            cluster: self.config.cluster,
            from: self.me.clone(),
            incarnation: self.incarnation,
            message,
            updates: Vec::new(),
        };
        let max = if kind.is_stream() { MAX_STREAM } else { self.config.datagram_budget };
        packet.updates.extend(first);
        if !kind.is_stream() && !stream_ping {
            let room = max.saturating_sub(wire::encoded_len(&packet));
            self.broadcasts.fill(room, &mut packet.updates);
        }
        match wire::encode(&packet, max) {
            Ok(bytes) => {
                self.stats.sent[kind] += 1;
                self.stats.bytes_sent += bytes.len() as u64;
                self.stats.bytes_sent_by_kind[kind] += bytes.len() as u64;
                self.transmits.push_back(Transmit { to, bytes, kind, stream });
            }
            Err(_) => self.stats.encode_failures += 1,
        }
    }

    /// A member is up (new, a new process, or back from the dead): outlier
    /// detection starts it afresh (the old one's ejection and streaks are
    /// not its own), and the application hears of it.
    fn member_up(&mut self, id: NodeId, addr: SocketAddr, tags: Tags) {
        match self.members.get(&id.name).map(|m| m.name.clone()) {
            Some(key) => self.monitor.member_up(key, self.now),
            None => self.monitor.member_gone(&id.name, self.now),
        }
        // This node's verdict was about the old process.
        if self.shared.cleared(&id.name) {
            self.announce_shared();
        }
        let shared = tags.clone();
        self.emit(Event::Up { id: id.clone(), addr, tags });
        self.gray_changed(&id, None, &shared);
    }

    /// A member is gone (dead or left): outlier detection forgets it, and
    /// the application hears of it.
    fn member_gone(&mut self, event: Event) {
        if let Event::Dead { id, .. } | Event::Left { id } = &event {
            self.monitor.member_gone(&id.name, self.now);
            if self.shared.cleared(&id.name) {
                self.announce_shared();
            }
        }
        self.emit(event);
    }

    /// The verdicts this node shares changed: announced with a new
    /// incarnation, as a change of tags is.
    fn announce_shared(&mut self) {
        if self.status == Status::Alive {
            self.renew(self.incarnation);
            self.broadcast(self.self_update(Status::Alive));
        }
    }

    /// `by`'s tags went from `old` to `new`: the verdicts it shares that
    /// appeared or went away are reported.
    pub(super) fn gray_changed(&mut self, by: &NodeId, old: Option<&Tags>, new: &Tags) {
        use crate::gray::{GrayReport, reports};
        let before: std::collections::BTreeSet<GrayReport> =
            old.map(|t| reports(&by.name, t).collect()).unwrap_or_default();
        let after: std::collections::BTreeSet<GrayReport> = reports(&by.name, new).collect();
        if before == after {
            return;
        }
        self.gray_version = self.gray_version.wrapping_add(1);
        for r in after.difference(&before) {
            let id = NodeId::new(&*r.subject, r.generation);
            self.emit(Event::OutlierShared { id, by: by.clone(), reason: r.reason.clone() });
        }
        for r in before.difference(&after) {
            if !after.iter().any(|a| a.subject == r.subject) {
                let id = NodeId::new(&*r.subject, r.generation);
                self.emit(Event::OutlierWithdrawn { id, by: by.clone() });
            }
        }
    }

    /// Every verdict shared by a live member about a live member in the
    /// generation it names, this node's own included, in order.
    ///
    /// ```
    /// use vigil_detector::Instant;
    /// use vigil_detector::outlier::Outcome;
    /// use vigil_membership::{Config, Node, NodeId};
    ///
    /// let mut node = Node::new(NodeId::new("a", 1), "10.0.0.1:7946".parse()?, Config::lan(7), 1, Instant::ZERO)?;
    /// node.bootstrap(Instant::ZERO, &[(NodeId::new("b", 1), "10.0.0.2:7946".parse()?)]);
    /// for _ in 0..5 {
    ///     node.record_outcome(Instant::from_millis(10), "b", Outcome::Response(503), None);
    /// }
    /// let shared = node.gray_reports();
    /// assert_eq!((shared[0].by.as_str(), shared[0].subject.as_str()), ("a", "b"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn gray_reports(&self) -> Vec<crate::gray::GrayReport> {
        let live = |name: &str, generation: u64| {
            name == &*self.me.name && generation == self.me.generation
                || self.members.get(name).is_some_and(|m| m.is_live() && m.generation == generation)
        };
        let mine = self.shared.compose(None).unwrap_or_default();
        let mut out: Vec<crate::gray::GrayReport> = crate::gray::reports(&self.me.name, &mine)
            .chain(self.members.iter().filter(|m| m.is_live()).flat_map(|m| {
                let tags = m.tags().cloned().unwrap_or_default();
                crate::gray::reports(&m.name, &tags).collect::<Vec<_>>()
            }))
            .filter(|r| live(&r.subject, r.generation))
            .collect();
        out.sort();
        out
    }

    /// Queues an event for the application, and nothing else.
    fn emit(&mut self, event: Event) {
        if self.events.len() < MAX_QUEUE {
            self.events.push_back(event);
        } else {
            self.stats.event_overflows += 1;
        }
    }
}

fn view(m: &Member) -> MemberView {
    MemberView {
        id: m.id(),
        addr: m.addr,
        incarnation: m.incarnation,
        status: m.status,
        since: m.since,
        tags: m.tags().cloned().unwrap_or_default(),
    }
}

/// Why [`Node::force_leave`] refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForceLeaveError {
    /// No member of that name is known.
    Unknown(String),
    /// The member is not dead: alive, or suspected.
    NotDead(String, Status),
}

impl std::fmt::Display for ForceLeaveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForceLeaveError::Unknown(name) => write!(f, "no member named {name:?} is known"),
            ForceLeaveError::NotDead(name, status) => {
                let status = match status {
                    Status::Alive => "alive",
                    Status::Suspect => "suspected",
                    Status::Dead => "dead",
                    Status::Left => "left",
                };
                write!(f, "{name:?} is {status}: only a member believed dead can be forced out")
            }
        }
    }
}

impl std::error::Error for ForceLeaveError {}
