//! Many peers, graded policies, one timer.
//!
//! A [`Registry`] keeps one detector per peer and interprets their levels
//! through named [`Policy`]s: each consumer (a router, a leader election, a
//! re-replicator) picks its own threshold, dwell time and hysteresis. The
//! registry never reads a clock: heartbeats and polls carry the time, and
//! [`Registry::next_deadline`] says when the next policy decision is due, so
//! a runtime arms one timer instead of polling.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use crate::error::check;
use crate::{AnyDetector, ConfigError, Detector, HeartbeatOutcome, Instant, ModelConfig, Stats};

/// Identifies a policy of a registry: its index in
/// [`RegistryConfig::policies`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PolicyId(pub u16);

impl PolicyId {
    /// The index into [`RegistryConfig::policies`].
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// How one consumer interprets the suspicion level.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::Policy;
///
/// // Stop routing at the first sign of trouble, and route again only after
/// // three heartbeats in a row, the last two arriving before the level
/// // reached 0.5. Re-replicate only after the level has stayed above 16 for
/// // five minutes.
/// let route = Policy::new("route", 1.0).rearm(0.5).recovery_heartbeats(3);
/// let rereplicate = Policy::new("re-replicate", 16.0)
///     .dwell(Duration::from_secs(300))
///     .destructive(true);
/// assert!(route.validate().is_ok() && rereplicate.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// A name for reports and events. Unique within a registry.
    pub name: String,
    /// The level at which the policy starts to suspect.
    pub threshold: f64,
    /// How long the level must stay at or above the threshold before the
    /// policy fires. A heartbeat during the dwell cancels it. Default 0.
    pub dwell: Duration,
    /// The re-arm level (hysteresis), at most the threshold; default the
    /// threshold. A suspected peer earns trust back with punctual heartbeats:
    /// after the heartbeat that ends its silence, each of the next
    /// `recovery_heartbeats - 1` must arrive while the level is still below
    /// `rearm`. A heartbeat that arrives later starts the count again. (A
    /// level resets when a heartbeat arrives, so the level *at arrival*,
    /// which measures how late the heartbeat was, is what hysteresis can use.)
    pub rearm: f64,
    /// Heartbeats needed to recover, counting the one that ends the silence.
    /// Default 1: the first heartbeat recovers the peer (Akka's behaviour).
    /// A re-arm level below the threshold needs 2 or more to have an effect.
    pub recovery_heartbeats: u32,
    /// Whether acting on this policy is destructive (eviction,
    /// re-replication): destructive policies are withheld by the
    /// [`Brake`] when many peers cross at once. Default false.
    pub destructive: bool,
}

impl Policy {
    /// A policy with the given name and threshold, no dwell, re-arming at the
    /// threshold, recovering on the first calm heartbeat, not destructive.
    pub fn new(name: impl Into<String>, threshold: f64) -> Policy {
        Policy {
            name: name.into(),
            threshold,
            dwell: Duration::ZERO,
            rearm: threshold,
            recovery_heartbeats: 1,
            destructive: false,
        }
    }

    /// Sets [`dwell`](Self::dwell).
    pub fn dwell(mut self, dwell: Duration) -> Policy {
        self.dwell = dwell;
        self
    }

    /// Sets [`rearm`](Self::rearm).
    pub fn rearm(mut self, level: f64) -> Policy {
        self.rearm = level;
        self
    }

    /// Sets [`recovery_heartbeats`](Self::recovery_heartbeats).
    pub fn recovery_heartbeats(mut self, n: u32) -> Policy {
        self.recovery_heartbeats = n;
        self
    }

    /// Sets [`destructive`](Self::destructive).
    pub fn destructive(mut self, yes: bool) -> Policy {
        self.destructive = yes;
        self
    }

    /// Checks the policy.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.name.is_empty() {
            return Err(ConfigError::Inconsistent { reason: "policy name must not be empty".into() });
        }
        check::positive("threshold", self.threshold)?;
        check::positive("rearm", self.rearm)?;
        if self.rearm > self.threshold {
            return Err(ConfigError::Inconsistent {
                reason: format!(
                    "policy '{}': rearm ({}) must not exceed threshold ({})",
                    self.name, self.rearm, self.threshold
                ),
            });
        }
        if self.recovery_heartbeats == 0 {
            return Err(ConfigError::OutOfRange { field: "recovery_heartbeats", value: 0.0, range: "1 or more" });
        }
        if self.rearm < self.threshold && self.recovery_heartbeats < 2 {
            return Err(ConfigError::Inconsistent {
                reason: format!(
                    "policy '{}': a rearm level below the threshold only acts on the heartbeats after the first, \
                     so it needs recovery_heartbeats of 2 or more",
                    self.name
                ),
            });
        }
        Ok(())
    }
}

/// Doubt a mass-failure signal: when more than a fraction of the peers cross
/// a destructive policy's threshold within a window, withhold destructive
/// verdicts and raise an alarm instead.
///
/// If half the fleet goes silent at once, the observer or its network is the
/// likelier fault. The brake engages when a crossing makes the count of
/// crossings within `window` exceed `fraction` of the monitored peers (and
/// reach `min_peers`). While it is engaged, destructive policies do not fire
/// (they are *withheld*); non-destructive ones (routing) still do. It releases
/// itself once the peers whose silence crossed a destructive threshold are
/// back within the fraction, or when [`Registry::release_brake`] is called. A
/// real mass failure thus keeps the alarm up until an operator confirms it.
/// On release, each withheld peer that is still silent starts its policy's
/// dwell again, so a peer that was about to come back is not evicted.
///
/// The brake counts crossings as they happen, so give destructive policies a
/// dwell: it is what lets the brake see the whole wave before anything fires.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::{Brake, Fixed, FixedConfig, Instant, Policy, Registry, RegistryConfig};
///
/// let evict = Policy::new("evict", 1.0).dwell(Duration::from_secs(30)).destructive(true);
/// let config = RegistryConfig {
///     brake: Some(Brake { fraction: 0.25, window: Duration::from_secs(10), min_peers: 2 }),
///     ..RegistryConfig::new(vec![evict])
/// };
/// let timeout = Fixed::new(FixedConfig { timeout: Duration::from_secs(1) })?;
/// let mut r = Registry::new(timeout, config)?;
/// for p in 0..8u32 {
///     r.heartbeat(p, Instant::ZERO).unwrap();
/// }
/// // Peers 0..4 keep talking; 4..8 all go quiet at once (our network?).
/// for s in 1..=40 {
///     for p in 0..4u32 {
///         r.heartbeat(p, Instant::from_secs(s)).unwrap();
///     }
///     r.poll(Instant::from_secs(s));
/// }
/// assert!(r.brake_engaged());
/// assert_eq!(r.counters().suspicions, 0); // no eviction fired
/// assert_eq!(r.counters().withheld, 4);
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Brake {
    /// The fraction of peers, in (0, 1]. Default 0.3.
    pub fraction: f64,
    /// The window in which crossings are counted. Default 10 s.
    pub window: Duration,
    /// Never engage for fewer crossings than this. Default 3.
    pub min_peers: usize,
}

impl Default for Brake {
    fn default() -> Self {
        Brake { fraction: 0.3, window: Duration::from_secs(10), min_peers: 3 }
    }
}

/// Cassandra's local-pause guard: when the observer itself stalled, its view
/// of everyone's silence is unreliable, so no policy fires for a while.
///
/// A stall is noticed when a call (heartbeat or poll) comes more than
/// `max_lateness` after the previous call, while a decision that fell due
/// after that previous call is now more than `max_lateness` overdue: the
/// runtime neither took heartbeats nor fired its timer, so the process was
/// frozen or starved. A runtime may also report its own lag with
/// [`Registry::note_local_pause`]. Decisions that fall due during the quiet
/// period are deferred to its end and taken then only if the silence
/// continued (deferred decisions do not count as a new stall).
///
/// In a cluster whose heartbeats keep arriving, any poll rhythm works. A
/// runtime that polls on a fixed grid slower than `max_lateness` while no
/// heartbeat arrives at all will see its late polls as stalls: poll at
/// [`Registry::next_deadline`], or raise `max_lateness`.
///
/// # Example
///
/// ```
/// use vigil_detector::{Event, Fixed, FixedConfig, Instant, Policy, Registry, RegistryConfig};
///
/// let mut r = Registry::new(Fixed::new(FixedConfig::default())?, RegistryConfig::new(vec![Policy::new("p", 1.0)]))?;
/// r.heartbeat("a", Instant::ZERO).unwrap();
/// // The observer froze for 12 s: its first call since shows the stall, and
/// // a's heartbeat, queued meanwhile, arrives before the deferred decision.
/// let events = r.poll(Instant::from_secs(12));
/// assert!(matches!(events[..], [Event::LocalPause { .. }]));
/// r.heartbeat("a", Instant::from_secs(12)).unwrap();
/// // The suspicion due at 1 s was deferred, then cancelled by the heartbeat.
/// assert!(r.poll(Instant::from_millis(12_900)).is_empty());
/// assert_eq!(r.counters().suspicions, 0);
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PauseGuard {
    /// How late a poll may be before it counts as a stall. Default 5 s
    /// (Cassandra's `max_local_pause_in_ms`).
    pub max_lateness: Duration,
    /// How long no policy fires after a stall. Default 5 s.
    pub quiet: Duration,
}

impl Default for PauseGuard {
    fn default() -> Self {
        PauseGuard { max_lateness: Duration::from_secs(5), quiet: Duration::from_secs(5) }
    }
}

/// What a heartbeat from a peer the registry does not know does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownPeers {
    /// Start monitoring it (Akka's registry). The default.
    #[default]
    Admit,
    /// Reject it with [`HeartbeatError::UnknownPeer`]; only peers added with
    /// [`Registry::register`] are monitored. Use when peer keys come from
    /// untrusted input.
    Reject,
}

/// Configuration of a [`Registry`].
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::{Policy, RegistryConfig, UnknownPeers};
///
/// let config = RegistryConfig {
///     // Peer keys come from the network: only monitor registered peers.
///     unknown_peers: UnknownPeers::Reject,
///     max_peers: 5_000,
///     first_heartbeat_timeout: Some(Duration::from_secs(3)),
///     ..RegistryConfig::new(vec![Policy::new("route", 1.0), Policy::new("evict", 12.0).destructive(true)])
/// };
/// assert!(config.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RegistryConfig {
    /// The policies; at least one, names unique.
    pub policies: Vec<Policy>,
    /// Heartbeats from unknown peers. Default: admit.
    pub unknown_peers: UnknownPeers,
    /// The most peers monitored at once; heartbeats that would exceed it are
    /// rejected. Default 10,000,000.
    pub max_peers: usize,
    /// A peer added with [`Registry::register`] and never heard from crosses
    /// every policy's threshold this long after registration (Akka's
    /// `expected-response-after`); each policy then fires after its own dwell.
    /// Default 1 s. `None`: never.
    pub first_heartbeat_timeout: Option<Duration>,
    /// The mass-failure brake. Default: on, with [`Brake::default`].
    pub brake: Option<Brake>,
    /// The local-pause guard. Default: on, with [`PauseGuard::default`].
    pub pause_guard: Option<PauseGuard>,
}

impl RegistryConfig {
    /// A configuration with these policies and every other setting at its
    /// default.
    pub fn new(policies: Vec<Policy>) -> RegistryConfig {
        RegistryConfig {
            policies,
            unknown_peers: UnknownPeers::Admit,
            max_peers: 10_000_000,
            first_heartbeat_timeout: Some(Duration::from_secs(1)),
            brake: Some(Brake::default()),
            pause_guard: Some(PauseGuard::default()),
        }
    }

    /// Checks every policy and setting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.policies.is_empty() {
            return Err(ConfigError::Inconsistent { reason: "a registry needs at least one policy".into() });
        }
        if self.policies.len() > usize::from(u16::MAX) {
            return Err(ConfigError::Inconsistent { reason: "too many policies (at most 65535)".into() });
        }
        for (i, p) in self.policies.iter().enumerate() {
            p.validate()?;
            if self.policies[..i].iter().any(|q| q.name == p.name) {
                return Err(ConfigError::Inconsistent { reason: format!("duplicate policy name '{}'", p.name) });
            }
        }
        if self.max_peers == 0 || self.max_peers > u32::MAX as usize {
            return Err(ConfigError::OutOfRange {
                field: "max_peers",
                value: self.max_peers as f64,
                range: "[1, 4294967295]",
            });
        }
        if let Some(t) = self.first_heartbeat_timeout {
            check::positive_duration("first_heartbeat_timeout", t)?;
        }
        if let Some(b) = &self.brake {
            if !(b.fraction > 0.0 && b.fraction <= 1.0) {
                return Err(ConfigError::OutOfRange { field: "brake.fraction", value: b.fraction, range: "(0, 1]" });
            }
            check::positive_duration("brake.window", b.window)?;
        }
        if let Some(g) = &self.pause_guard {
            check::positive_duration("pause_guard.max_lateness", g.max_lateness)?;
        }
        Ok(())
    }
}

/// Why a policy fired.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Cause {
    /// The level reached the threshold (and stayed for the dwell); this is the
    /// level at the moment the policy fired.
    Level(f64),
    /// The peer was registered and never heard from.
    NeverHeard {
        /// When it was registered.
        registered_at: Instant,
    },
}

/// What a registry reports from [`Registry::poll`].
///
/// # Example
///
/// ```
/// use vigil_detector::{Cause, Event, Fixed, FixedConfig, Instant, Policy, Registry, RegistryConfig};
///
/// let mut r = Registry::new(Fixed::new(FixedConfig::default())?, RegistryConfig::new(vec![Policy::new("p", 1.0)]))?;
/// r.heartbeat("a", Instant::ZERO).unwrap();
/// for event in r.poll(Instant::from_secs(2)) {
///     match event {
///         Event::Suspected { peer, at, cause: Cause::Level(level), .. } => {
///             assert_eq!((peer, at, level), ("a", Instant::from_secs(1), 1.0));
///         }
///         other => panic!("unexpected {other:?}"),
///     }
/// }
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event<K> {
    /// A policy started suspecting a peer.
    Suspected {
        /// The peer.
        peer: K,
        /// The policy.
        policy: PolicyId,
        /// When the policy fired: the crossing plus the dwell (or the end of a
        /// quiet period, or a brake release). Exact, not when `poll` ran.
        at: Instant,
        /// Why.
        cause: Cause,
    },
    /// A suspected peer recovered for a policy.
    Recovered {
        /// The peer.
        peer: K,
        /// The policy.
        policy: PolicyId,
        /// The heartbeat that completed the recovery.
        at: Instant,
        /// The level just after that heartbeat.
        level: f64,
    },
    /// Too many peers crossed destructive thresholds at once: destructive
    /// verdicts are now withheld.
    BrakeEngaged {
        /// When.
        at: Instant,
        /// Distinct peers that crossed within the window.
        crossed: usize,
        /// Peers monitored.
        peers: usize,
    },
    /// The brake released: withheld peers that are still silent start their
    /// dwell again from `at`.
    BrakeReleased {
        /// When.
        at: Instant,
        /// Withheld suspicions that resumed their dwell.
        resumed: usize,
        /// Whether [`Registry::release_brake`] released it.
        by_operator: bool,
    },
    /// The observer stalled; no policy fires until `quiet_until`.
    LocalPause {
        /// When the stall was noticed.
        at: Instant,
        /// How late the observer was.
        lateness: Duration,
        /// End of the quiet period.
        quiet_until: Instant,
    },
}

impl<K> Event<K> {
    /// When the event happened.
    pub fn at(&self) -> Instant {
        match self {
            Event::Suspected { at, .. }
            | Event::Recovered { at, .. }
            | Event::BrakeEngaged { at, .. }
            | Event::BrakeReleased { at, .. }
            | Event::LocalPause { at, .. } => *at,
        }
    }
}

/// Where one policy stands for one peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PolicyState {
    /// Below the threshold (or never crossed since the last heartbeat).
    Trusted,
    /// At or above the threshold since `since`, waiting out the dwell (or a
    /// quiet period).
    Crossed {
        /// When the threshold was reached.
        since: Instant,
    },
    /// Fired; waiting for recovery.
    Suspected {
        /// When it fired.
        since: Instant,
    },
    /// Would have fired, but the brake withholds it.
    Withheld {
        /// When the threshold was reached.
        since: Instant,
    },
}

#[derive(Debug, Clone, Copy)]
struct PolicySlot {
    state: PolicyState,
    /// Calm heartbeats counted toward recovery.
    calm: u32,
}

impl PolicySlot {
    const TRUSTED: PolicySlot = PolicySlot { state: PolicyState::Trusted, calm: 0 };
}

/// One policy's view of a peer, in a [`PeerReport`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PolicyReport {
    /// The policy.
    pub policy: PolicyId,
    /// Where it stands.
    pub state: PolicyState,
    /// When the level will reach the policy's threshold if nothing arrives
    /// (for a trusted peer); `None` if never or not trusted.
    pub reaches_threshold_at: Option<Instant>,
}

/// Everything the registry knows about one peer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PeerReport {
    /// The detector's statistics.
    pub stats: Stats,
    /// The level at the time asked.
    pub level: f64,
    /// Whether any heartbeat has been received.
    pub heard: bool,
    /// When the peer was registered (or first heard).
    pub registered_at: Instant,
    /// One entry per policy.
    pub policies: Vec<PolicyReport>,
}

/// Why a heartbeat was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeartbeatError {
    /// The peer is not registered and [`UnknownPeers::Reject`] is set.
    UnknownPeer,
    /// The registry already monitors [`RegistryConfig::max_peers`] peers.
    Full {
        /// The limit.
        max_peers: usize,
    },
}

impl core::fmt::Display for HeartbeatError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HeartbeatError::UnknownPeer => f.write_str("heartbeat from an unregistered peer"),
            HeartbeatError::Full { max_peers } => write!(f, "registry is full ({max_peers} peers)"),
        }
    }
}

impl std::error::Error for HeartbeatError {}

/// Registry-wide counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RegistryCounters {
    /// Heartbeats taken.
    pub heartbeats: u64,
    /// Heartbeats ignored as earlier than the peer's last one.
    pub backwards: u64,
    /// Heartbeats rejected from unknown peers.
    pub unknown_rejected: u64,
    /// Heartbeats rejected because the registry was full.
    pub full_rejected: u64,
    /// Suspicions fired.
    pub suspicions: u64,
    /// Recoveries.
    pub recoveries: u64,
    /// Destructive suspicions withheld by the brake.
    pub withheld: u64,
    /// Withheld suspicions dropped because the peer spoke again.
    pub withheld_dropped: u64,
    /// Times the brake engaged.
    pub brake_engagements: u64,
    /// Local pauses noticed or reported.
    pub local_pauses: u64,
    /// Suspicions deferred by a quiet period.
    pub deferred_by_pause: u64,
}

#[derive(Debug, Clone)]
struct Peer<K, D> {
    key: K,
    detector: D,
    registered_at: Instant,
    heard: bool,
    /// Whether this silence's destructive crossing was counted by the brake.
    counted: bool,
    /// When the brake last recorded a crossing of this peer (one entry per
    /// peer per window).
    noted_at: Option<Instant>,
    /// The time of this peer's live heap entry (never later than its next
    /// decision).
    scheduled: Option<Instant>,
    /// Whether `scheduled` is exactly the next decision (it was computed and
    /// nothing has changed since), as opposed to possibly early.
    exact: bool,
}

#[derive(Debug, Clone)]
struct Slot<K, D> {
    generation: u32,
    peer: Option<Peer<K, D>>,
}

#[derive(Debug, Clone, Default)]
struct BrakeState {
    engaged: bool,
    /// Times of recent destructive crossings, oldest first.
    crossings: VecDeque<Instant>,
    /// Withheld (slot, generation, policy); may hold stale entries.
    withheld: Vec<(u32, u32, u16)>,
    /// Peers whose current silence crossed a destructive threshold.
    silent: usize,
}

/// Per-peer detectors and graded policies.
///
/// `K` is any hashable peer key; `D` the detector model, cloned from a
/// prototype for each new peer ([`AnyDetector`] to choose at run time, or a
/// concrete model for the smallest footprint).
///
/// # Semantics
///
/// - **Unknown peers.** Queries about a peer the registry does not know
///   return `None`; the registry never claims such a peer is available. A
///   heartbeat from one starts monitoring it, unless
///   [`UnknownPeers::Reject`] is configured.
/// - **Registered but never heard.** [`register`](Self::register) starts the
///   first-heartbeat clock: without a heartbeat within
///   [`RegistryConfig::first_heartbeat_timeout`], every policy crosses, and
///   fires after its dwell with [`Cause::NeverHeard`].
/// - **Time.** Pass monotonic times. Decisions are exact: a policy fires at
///   the crossing instant plus its dwell, whenever `poll` is called; a
///   heartbeat first settles the decisions that were due before it.
/// - **Events** come out of [`poll`](Self::poll) in time order.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use vigil_detector::{Akka, AkkaConfig, Event, Instant, Policy, Registry, RegistryConfig};
///
/// let policies = vec![Policy::new("route", 2.0), Policy::new("evict", 8.0).destructive(true)];
/// let mut registry = Registry::new(Akka::new(AkkaConfig::default())?, RegistryConfig::new(policies))?;
/// for i in 0..20 {
///     registry.heartbeat("db-1", Instant::from_secs(i)).unwrap();
/// }
/// // Nothing arrives after 19 s. The router gives up first, eviction later.
/// // (Simulated time: the timer fires exactly at each deadline.)
/// let mut fired = Vec::new();
/// while let Some(deadline) = registry.next_deadline() {
///     for event in registry.poll(deadline) {
///         if let Event::Suspected { policy, at, .. } = event {
///             fired.push((registry.policy(policy).name.clone(), at));
///         }
///     }
/// }
/// assert_eq!(fired.len(), 2);
/// assert_eq!(fired[0].0, "route");
/// assert!(fired[0].1 < fired[1].1);
/// # Ok::<(), vigil_detector::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Registry<K, D = AnyDetector> {
    prototype: D,
    config: RegistryConfig,
    min_threshold: f64,
    index: HashMap<K, u32>,
    slots: Vec<Slot<K, D>>,
    free: Vec<u32>,
    /// `slots.len() * policies` entries.
    states: Vec<PolicySlot>,
    heap: BinaryHeap<Reverse<(Instant, u64, u32, u32)>>,
    seq: u64,
    events: Vec<Event<K>>,
    brake: BrakeState,
    quiet_until: Instant,
    /// The latest time of any call, for the stall check.
    last_call: Option<Instant>,
    counters: RegistryCounters,
}

impl<K: Hash + Eq + Clone> Registry<K, AnyDetector> {
    /// A registry whose detectors are built from a model configuration.
    pub fn with_model(model: &ModelConfig, config: RegistryConfig) -> Result<Self, ConfigError> {
        Registry::new(model.build()?, config)
    }
}

impl<K: Hash + Eq + Clone, D: Detector + Clone> Registry<K, D> {
    /// A registry that clones `prototype` (which should be freshly built) for
    /// each new peer.
    pub fn new(prototype: D, config: RegistryConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let min_threshold = config.policies.iter().map(|p| p.threshold).fold(f64::INFINITY, f64::min);
        Ok(Registry {
            prototype,
            config,
            min_threshold,
            index: HashMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            states: Vec::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            events: Vec::new(),
            brake: BrakeState::default(),
            quiet_until: Instant::ZERO,
            last_call: None,
            counters: RegistryCounters::default(),
        })
    }

    /// Reserves room for `additional` more peers, so that growing to a known
    /// size does not over-allocate (vectors double when they grow).
    pub fn reserve(&mut self, additional: usize) {
        let free = self.free.len();
        let extra = additional.saturating_sub(free);
        self.slots.reserve_exact(extra);
        self.states.reserve_exact(extra * self.npolicies());
        self.index.reserve(additional);
        self.heap.reserve(additional);
    }

    /// The configuration.
    pub fn config(&self) -> &RegistryConfig {
        &self.config
    }

    /// A policy by id. Panics if the id is not from this registry.
    pub fn policy(&self, id: PolicyId) -> &Policy {
        &self.config.policies[id.index()]
    }

    /// The id of the policy with this name.
    pub fn policy_id(&self, name: &str) -> Option<PolicyId> {
        self.config.policies.iter().position(|p| p.name == name).map(|i| PolicyId(i as u16))
    }

    /// Peers monitored.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether no peer is monitored.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The monitored peers, in no particular order.
    pub fn peers(&self) -> impl Iterator<Item = &K> {
        self.index.keys()
    }

    /// Registry-wide counters.
    pub fn counters(&self) -> RegistryCounters {
        self.counters
    }

    /// Whether the brake is engaged.
    pub fn brake_engaged(&self) -> bool {
        self.brake.engaged
    }

    fn npolicies(&self) -> usize {
        self.config.policies.len()
    }

    fn peer(&self, slot: u32) -> Option<&Peer<K, D>> {
        self.slots.get(slot as usize)?.peer.as_ref()
    }

    fn insert(&mut self, key: K, now: Instant) -> Result<u32, HeartbeatError> {
        if self.index.len() >= self.config.max_peers {
            self.counters.full_rejected += 1;
            return Err(HeartbeatError::Full { max_peers: self.config.max_peers });
        }
        let peer = Peer {
            key: key.clone(),
            detector: self.prototype.clone(),
            registered_at: now,
            heard: false,
            counted: false,
            noted_at: None,
            scheduled: None,
            exact: false,
        };
        let np = self.npolicies();
        let slot = match self.free.pop() {
            Some(slot) => {
                let s = &mut self.slots[slot as usize];
                s.generation = s.generation.wrapping_add(1);
                s.peer = Some(peer);
                let base = slot as usize * np;
                self.states[base..base + np].fill(PolicySlot::TRUSTED);
                slot
            }
            None => {
                self.slots.push(Slot { generation: 0, peer: Some(peer) });
                self.states.extend(std::iter::repeat_n(PolicySlot::TRUSTED, np));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(key, slot);
        Ok(slot)
    }

    /// Starts monitoring `peer` as of `now`, before any heartbeat, so that the
    /// first-heartbeat rule applies. Returns false if it was already known.
    pub fn register(&mut self, peer: K, now: Instant) -> Result<bool, HeartbeatError> {
        self.check_stall(now);
        if self.index.contains_key(&peer) {
            return Ok(false);
        }
        let slot = self.insert(peer, now)?;
        self.reschedule(slot);
        Ok(true)
    }

    /// Records a heartbeat from `peer` at `now`.
    ///
    /// Decisions about this peer that were due before `now` are settled first
    /// (so a late caller loses nothing); then recoveries are checked and
    /// queued for the next [`poll`](Self::poll).
    pub fn heartbeat(&mut self, peer: K, now: Instant) -> Result<HeartbeatOutcome, HeartbeatError> {
        self.check_stall(now);
        let slot = match self.index.entry(peer) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                if self.config.unknown_peers == UnknownPeers::Reject {
                    self.counters.unknown_rejected += 1;
                    return Err(HeartbeatError::UnknownPeer);
                }
                let key = e.into_key();
                self.insert(key, now)?
            }
        };
        // Settle what was due strictly before this heartbeat.
        if let Some(p) = self.peer(slot)
            && p.scheduled.is_some_and(|s| s < now)
        {
            self.settle(slot, now - Duration::from_nanos(1));
        }
        let np = self.npolicies();
        let base = slot as usize * np;
        let Some(p) = self.slots[slot as usize].peer.as_mut() else { unreachable_slot() };
        // Levels around the heartbeat matter only to suspected policies.
        let any_suspected =
            self.states[base..base + np].iter().any(|s| matches!(s.state, PolicyState::Suspected { .. }));
        let level_before = if p.heard && any_suspected { p.detector.level(now) } else { 0.0 };
        let outcome = p.detector.heartbeat(now);
        if let HeartbeatOutcome::Backwards { .. } = outcome {
            self.counters.backwards += 1;
            return Ok(outcome);
        }
        self.counters.heartbeats += 1;
        p.heard = true;
        let was_counted = std::mem::replace(&mut p.counted, false);
        if was_counted {
            self.brake.silent = self.brake.silent.saturating_sub(1);
        }
        let level_after = if any_suspected { p.detector.level(now) } else { 0.0 };
        let mut must_reschedule = p.scheduled.is_none();
        for i in 0..np {
            let policy = &self.config.policies[i];
            let st = &mut self.states[base + i];
            match st.state {
                PolicyState::Trusted => {}
                PolicyState::Crossed { .. } => {
                    *st = PolicySlot::TRUSTED;
                    must_reschedule = true;
                }
                PolicyState::Withheld { .. } => {
                    *st = PolicySlot::TRUSTED;
                    self.counters.withheld_dropped += 1;
                    must_reschedule = true;
                }
                PolicyState::Suspected { .. } => {
                    // The heartbeat that ends the silence proves life; each
                    // later one counts only if it came before the level
                    // reached the re-arm level, else the count starts again.
                    st.calm = if st.calm == 0 || level_before >= policy.rearm { 1 } else { st.calm.saturating_add(1) };
                    if st.calm >= policy.recovery_heartbeats {
                        *st = PolicySlot::TRUSTED;
                        self.counters.recoveries += 1;
                        self.events.push(Event::Recovered {
                            peer: p.key.clone(),
                            policy: PolicyId(i as u16),
                            at: now,
                            level: level_after,
                        });
                        must_reschedule = true;
                    }
                }
            }
        }
        // The live heap entry stays valid if it is not later than the next
        // crossing, i.e. the level there is still below every threshold.
        if !must_reschedule
            && let Some(s) = p.scheduled
            && p.detector.level(s) >= self.min_threshold
        {
            must_reschedule = true;
        }
        if must_reschedule {
            self.reschedule(slot);
        } else if let Some(p) = self.slots[slot as usize].peer.as_mut() {
            // The kept entry is no later than the next decision, but may be
            // earlier now.
            p.exact = false;
        }
        if was_counted {
            self.maybe_release(now);
        }
        Ok(outcome)
    }

    /// Stops monitoring `peer`. Returns whether it was known.
    ///
    /// If the brake is engaged, removing silent peers can release it; the
    /// events come out of the next [`poll`](Self::poll).
    pub fn remove(&mut self, peer: &K, now: Instant) -> bool {
        let Some(slot) = self.index.remove(peer) else { return false };
        let np = self.npolicies();
        let base = slot as usize * np;
        self.states[base..base + np].fill(PolicySlot::TRUSTED);
        let s = &mut self.slots[slot as usize];
        let counted = s.peer.take().is_some_and(|p| p.counted);
        s.generation = s.generation.wrapping_add(1);
        self.free.push(slot);
        if counted {
            self.brake.silent = self.brake.silent.saturating_sub(1);
            self.maybe_release(now);
        }
        true
    }

    /// Forgets `peer`'s history (as after a restart with a new identity) and
    /// restarts its first-heartbeat clock at `now`. Suspicions are cleared
    /// without events. Returns whether it was known.
    pub fn reset(&mut self, peer: &K, now: Instant) -> bool {
        let Some(&slot) = self.index.get(peer) else { return false };
        let np = self.npolicies();
        let base = slot as usize * np;
        self.states[base..base + np].fill(PolicySlot::TRUSTED);
        let mut counted = false;
        if let Some(p) = self.slots[slot as usize].peer.as_mut() {
            p.detector.reset();
            p.heard = false;
            counted = std::mem::replace(&mut p.counted, false);
            p.registered_at = now;
        }
        self.reschedule(slot);
        if counted {
            self.brake.silent = self.brake.silent.saturating_sub(1);
            self.maybe_release(now);
        }
        true
    }

    /// The peer's level at `now`; `None` for an unknown peer.
    pub fn level(&self, peer: &K, now: Instant) -> Option<f64> {
        let slot = *self.index.get(peer)?;
        Some(self.peer(slot)?.detector.level(now))
    }

    /// Where `policy` stands for `peer`; `None` for an unknown peer.
    pub fn state(&self, peer: &K, policy: PolicyId) -> Option<PolicyState> {
        let slot = *self.index.get(peer)?;
        let np = self.npolicies();
        if policy.index() >= np {
            return None;
        }
        self.states.get(slot as usize * np + policy.index()).map(|s| s.state)
    }

    /// Whether `policy` currently suspects `peer` (withheld suspicions do
    /// not count); `None` for an unknown peer.
    pub fn is_suspected(&self, peer: &K, policy: PolicyId) -> Option<bool> {
        self.state(peer, policy).map(|s| matches!(s, PolicyState::Suspected { .. }))
    }

    /// The detector for `peer`, for model-specific inspection.
    pub fn detector(&self, peer: &K) -> Option<&D> {
        let slot = *self.index.get(peer)?;
        Some(&self.peer(slot)?.detector)
    }

    /// Statistics, level and per-policy predictions for `peer` at `now`.
    pub fn report(&self, peer: &K, now: Instant) -> Option<PeerReport> {
        let slot = *self.index.get(peer)?;
        let p = self.peer(slot)?;
        let np = self.npolicies();
        let policies = (0..np)
            .map(|i| {
                let state = self.states[slot as usize * np + i].state;
                let reaches_threshold_at = match state {
                    PolicyState::Trusted => self.crossing_of(p, i),
                    _ => None,
                };
                PolicyReport { policy: PolicyId(i as u16), state, reaches_threshold_at }
            })
            .collect();
        Some(PeerReport {
            stats: p.detector.stats(),
            level: p.detector.level(now),
            heard: p.heard,
            registered_at: p.registered_at,
            policies,
        })
    }

    /// When policy `i` will cross for this peer if nothing arrives.
    fn crossing_of(&self, p: &Peer<K, D>, i: usize) -> Option<Instant> {
        if p.heard {
            p.detector.crossing(self.config.policies[i].threshold)
        } else {
            self.config.first_heartbeat_timeout.map(|t| p.registered_at + t)
        }
    }

    /// When a crossed policy may fire.
    fn fire_time(&self, crossed: Instant, i: usize) -> Instant {
        (crossed + self.config.policies[i].dwell).max(self.quiet_until)
    }

    /// The next instant at which this peer has a decision due.
    fn next_wake(&self, slot: u32) -> Option<Instant> {
        let p = self.peer(slot)?;
        let np = self.npolicies();
        let base = slot as usize * np;
        let mut next: Option<Instant> = None;
        for i in 0..np {
            let t = match self.states[base + i].state {
                PolicyState::Trusted => self.crossing_of(p, i),
                PolicyState::Crossed { since } => Some(self.fire_time(since, i)),
                PolicyState::Suspected { .. } | PolicyState::Withheld { .. } => None,
            };
            next = match (next, t) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        next
    }

    fn reschedule(&mut self, slot: u32) {
        let wake = self.next_wake(slot);
        self.schedule_at(slot, wake);
    }

    /// Queues `slot` at `wake`, which must be its exact next decision.
    fn schedule_at(&mut self, slot: u32, wake: Option<Instant>) {
        let generation = self.slots[slot as usize].generation;
        let Some(p) = self.slots[slot as usize].peer.as_mut() else { return };
        p.scheduled = wake;
        p.exact = true;
        if let Some(t) = wake {
            self.seq += 1;
            self.heap.push(Reverse((t, self.seq, slot, generation)));
        }
    }

    /// Takes the decisions due for `slot` at exactly time `t` (and any
    /// earlier ones it had not taken).
    fn decide(&mut self, slot: u32, t: Instant) {
        let np = self.npolicies();
        let base = slot as usize * np;
        for i in 0..np {
            loop {
                let st = self.states[base + i];
                match st.state {
                    PolicyState::Trusted => {
                        let Some(p) = self.peer(slot) else { return };
                        let Some(c) = self.crossing_of(p, i) else { break };
                        if c > t {
                            break;
                        }
                        self.states[base + i].state = PolicyState::Crossed { since: c };
                        if self.config.policies[i].destructive {
                            self.note_crossing(slot, c);
                        }
                    }
                    PolicyState::Crossed { since } => {
                        let due = self.fire_time(since, i);
                        if due > t {
                            break;
                        }
                        if since + self.config.policies[i].dwell < due {
                            self.counters.deferred_by_pause += 1;
                        }
                        self.fire(slot, i, since, due);
                        break;
                    }
                    PolicyState::Suspected { .. } | PolicyState::Withheld { .. } => break,
                }
            }
        }
    }

    /// Counts a peer's first destructive crossing of this silence, and
    /// engages the brake if the crossings in the window are too many.
    fn note_crossing(&mut self, slot: u32, at: Instant) {
        let Some(b) = &self.config.brake else { return };
        let Some(p) = self.slots[slot as usize].peer.as_mut() else { return };
        if p.counted {
            return;
        }
        p.counted = true;
        self.brake.silent += 1;
        let horizon = at - b.window;
        // One entry per peer per window: a flapping peer is one peer.
        if p.noted_at.is_none_or(|t| t < horizon) {
            p.noted_at = Some(at);
            // Crossings settled by a heartbeat can come out of time order.
            let i = self.brake.crossings.partition_point(|&c| c <= at);
            self.brake.crossings.insert(i, at);
        }
        while self.brake.crossings.front().is_some_and(|&c| c < horizon) {
            self.brake.crossings.pop_front();
        }
        let count = self.brake.crossings.len();
        let peers = self.index.len();
        if !self.brake.engaged && count >= b.min_peers && count as f64 > b.fraction * peers as f64 {
            self.brake.engaged = true;
            self.counters.brake_engagements += 1;
            self.events.push(Event::BrakeEngaged { at, crossed: count, peers });
        }
    }

    fn fire(&mut self, slot: u32, i: usize, crossed: Instant, at: Instant) {
        let np = self.npolicies();
        if self.config.policies[i].destructive && self.brake.engaged {
            self.states[slot as usize * np + i].state = PolicyState::Withheld { since: crossed };
            let generation = self.slots[slot as usize].generation;
            self.brake.withheld.push((slot, generation, i as u16));
            self.counters.withheld += 1;
            return;
        }
        let Some(p) = self.peer(slot) else { return };
        let cause = if p.heard {
            Cause::Level(p.detector.level(at))
        } else {
            Cause::NeverHeard { registered_at: p.registered_at }
        };
        let key = p.key.clone();
        self.states[slot as usize * np + i] = PolicySlot { state: PolicyState::Suspected { since: at }, calm: 0 };
        self.counters.suspicions += 1;
        self.events.push(Event::Suspected { peer: key, policy: PolicyId(i as u16), at, cause });
    }

    /// Settles every decision of `slot` due at or before `until`.
    fn settle(&mut self, slot: u32, until: Instant) {
        // Each round moves at least one policy forward (Trusted -> Crossed ->
        // fired), so 2 rounds per policy bound the loop.
        for _ in 0..=2 * self.npolicies() {
            match self.next_wake(slot) {
                Some(t) if t <= until => self.decide(slot, t),
                wake => return self.schedule_at(slot, wake),
            }
        }
        self.reschedule(slot);
    }

    /// Drops stale entries from the top of the heap and re-queues entries
    /// that are early, until the top is exact. Returns it.
    fn clean_top(&mut self) -> Option<Instant> {
        loop {
            let &Reverse((t, _, slot, generation)) = self.heap.peek()?;
            let live = self
                .slots
                .get(slot as usize)
                .and_then(|s| (s.generation == generation).then_some(s.peer.as_ref()).flatten());
            match live {
                Some(p) if p.scheduled == Some(t) && p.exact => return Some(t),
                Some(p) if p.scheduled == Some(t) => {
                    let wake = self.next_wake(slot);
                    if wake == Some(t) {
                        return Some(t);
                    }
                    self.heap.pop();
                    self.reschedule(slot);
                }
                _ => {
                    self.heap.pop();
                }
            }
        }
    }

    /// The next instant at which [`poll`](Self::poll) has a policy decision to
    /// take. Arm one timer for it.
    ///
    /// Takes `&mut self` because it tidies the timer queue (entries made
    /// early by heartbeats are moved to their true time), so the answer is
    /// exact rather than an early guess.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        self.clean_top()
    }

    /// Takes every decision due at or before `now` and returns the events, in
    /// time order (including recoveries noted by heartbeats since the last
    /// poll).
    pub fn poll(&mut self, now: Instant) -> Vec<Event<K>> {
        self.check_stall(now);
        while let Some(&Reverse((t, _, slot, generation))) = self.heap.peek() {
            if t > now {
                break;
            }
            self.heap.pop();
            let valid = self
                .slots
                .get(slot as usize)
                .is_some_and(|s| s.generation == generation && s.peer.as_ref().is_some_and(|p| p.scheduled == Some(t)));
            if !valid {
                continue;
            }
            if let Some(p) = self.slots[slot as usize].peer.as_mut() {
                p.scheduled = None;
            }
            self.decide(slot, t);
            self.reschedule(slot);
        }
        self.maybe_release(now);
        self.events.sort_by_key(|e| e.at());
        std::mem::take(&mut self.events)
    }

    /// Notices a stall of the observer (see [`PauseGuard`]) and records the
    /// time of this call.
    fn check_stall(&mut self, now: Instant) {
        if let Some(guard) = self.config.pause_guard.clone()
            && let Some(prev) = self.last_call
            && now > prev + guard.max_lateness
            && let Some(due) = self.clean_top()
            && due > prev.max(self.quiet_until)
            && due + guard.max_lateness < now
        {
            self.enter_quiet(now, now - due, guard.quiet);
        }
        self.last_call = Some(self.last_call.map_or(now, |p| p.max(now)));
    }

    fn enter_quiet(&mut self, at: Instant, lateness: Duration, quiet: Duration) {
        let until = at + quiet;
        if until > self.quiet_until {
            // Decisions may move later, never earlier: existing timer entries
            // stay valid (at worst early), so nothing is rescheduled here.
            self.quiet_until = until;
        }
        self.counters.local_pauses += 1;
        self.events.push(Event::LocalPause { at, lateness, quiet_until: self.quiet_until });
    }

    /// Reports that the observer itself stalled (a runtime that measures its
    /// own scheduling lag can call this): no policy fires before the guard's
    /// quiet period, or the stall's own length if that is longer, has passed
    /// (what the observer measured while frozen is its own fault, and it
    /// needs as long again to measure afresh). Does nothing without a
    /// [`PauseGuard`].
    pub fn note_local_pause(&mut self, now: Instant, stalled_for: Duration) {
        if let Some(guard) = self.config.pause_guard.clone() {
            self.enter_quiet(now, stalled_for, guard.quiet.max(stalled_for));
        }
    }

    /// The end of the current quiet period after a local pause (see
    /// [`PauseGuard`]): no policy fires before it. [`Instant::ZERO`] if there
    /// has been none.
    pub fn quiet_until(&self) -> Instant {
        self.quiet_until
    }

    /// Releases the brake once the silent peers are back within the fraction.
    fn maybe_release(&mut self, now: Instant) {
        let Some(b) = &self.config.brake else { return };
        if self.brake.engaged && self.brake.silent as f64 <= b.fraction * self.len() as f64 {
            self.release(now, false);
        }
    }

    /// Releases the brake now (an operator confirming the failures): every
    /// withheld peer that is still silent starts its policy's dwell again from
    /// `now`. Events come out of [`poll`](Self::poll).
    pub fn release_brake(&mut self, now: Instant) {
        if self.brake.engaged {
            self.release(now, true);
        }
    }

    fn release(&mut self, now: Instant, by_operator: bool) {
        self.brake.engaged = false;
        self.brake.crossings.clear();
        let withheld = std::mem::take(&mut self.brake.withheld);
        let np = self.npolicies();
        let mut resumed = 0;
        for (slot, generation, i) in withheld {
            let live = self.slots.get(slot as usize).is_some_and(|s| s.generation == generation && s.peer.is_some());
            let state = &mut self.states[slot as usize * np + usize::from(i)].state;
            if live && matches!(state, PolicyState::Withheld { .. }) {
                *state = PolicyState::Crossed { since: now };
                resumed += 1;
                self.reschedule(slot);
            }
        }
        self.events.push(Event::BrakeReleased { at: now, resumed, by_operator });
    }

    /// Replaces the settings of the policy named as `policy` (threshold,
    /// dwell, hysteresis, recovery; whether it is destructive stays what it
    /// was) on a running registry, as an operator retunes it without a
    /// restart. Each peer's decision is then what it would be had the
    /// policy always been so: a peer not yet suspected is judged again from
    /// its silence so far (a lower threshold it already crossed counts from
    /// when it crossed it; a higher one it has not crossed puts it back to
    /// trusted); a suspected or withheld peer stays so until its heartbeats
    /// recover it under the new settings. Events come out of
    /// [`poll`](Self::poll).
    ///
    /// # Errors
    ///
    /// [`ConfigError`]: no policy of that name, or settings that do not
    /// validate.
    ///
    /// # Examples
    ///
    /// ```
    /// use vigil_detector::{Akka, AkkaConfig, Event, Instant, Policy, Registry, RegistryConfig};
    ///
    /// let config = RegistryConfig::new(vec![Policy::new("route", 8.0)]);
    /// let mut r = Registry::new(Akka::new(AkkaConfig::default())?, config)?;
    /// for t in 0..20 {
    ///     r.heartbeat("a", Instant::from_secs(t)).unwrap();
    /// }
    /// let at_8 = r.next_deadline().unwrap();
    /// r.retune(Policy::new("route", 2.0), Instant::from_millis(19_500))?;
    /// assert!(r.next_deadline().unwrap() < at_8, "a lower threshold is crossed sooner");
    /// assert!(r.retune(Policy::new("nope", 2.0), Instant::from_millis(19_500)).is_err());
    /// // Already silent past a yet lower threshold: suspected from when it
    /// // crossed it, at the next poll.
    /// let now = Instant::from_millis(23_300);
    /// r.retune(Policy::new("route", 0.5), now)?;
    /// let fired = r.poll(now);
    /// assert!(matches!(fired[..], [Event::Suspected { at, .. }] if at < now), "{fired:?}");
    /// # Ok::<(), vigil_detector::ConfigError>(())
    /// ```
    pub fn retune(&mut self, mut policy: Policy, now: Instant) -> Result<(), ConfigError> {
        let i = self
            .config
            .policies
            .iter()
            .position(|p| p.name == policy.name)
            .ok_or_else(|| ConfigError::Inconsistent { reason: format!("no policy named '{}'", policy.name) })?;
        policy.destructive = self.config.policies[i].destructive;
        policy.validate()?;
        self.config.policies[i] = policy;
        let np = self.npolicies();
        for slot in 0..self.slots.len() {
            let slot = slot as u32;
            if self.peer(slot).is_none() {
                continue;
            }
            let st = &mut self.states[slot as usize * np + i];
            if matches!(st.state, PolicyState::Crossed { .. }) {
                st.state = PolicyState::Trusted;
            }
            self.settle(slot, now);
        }
        Ok(())
    }

    /// Approximate heap memory of the registry in bytes: detectors' buffers,
    /// slots, policy states, the index and the timer queue.
    pub fn heap_bytes(&self) -> usize {
        let detectors: usize = self.slots.iter().filter_map(|s| s.peer.as_ref()).map(|p| p.detector.heap_bytes()).sum();
        detectors
            + self.slots.capacity() * size_of::<Slot<K, D>>()
            + self.states.capacity() * size_of::<PolicySlot>()
            + self.index.capacity() * (size_of::<(K, u32)>() + 1)
            + self.heap.capacity() * size_of::<Reverse<(Instant, u64, u32, u32)>>()
    }
}

#[cold]
fn unreachable_slot() -> ! {
    // The index only ever maps keys to occupied slots.
    unreachable!("registry index points at an empty slot")
}
