//! One health view per peer from two signals: the active one (φ from
//! heartbeats, through a [`Registry`]) and the passive one (ejection by
//! [`Outliers`], from the outcomes of real requests), judged by graded
//! policies.
//!
//! Heartbeats miss gray failures: a host whose heartbeat thread is fine
//! while its requests fail or crawl. Request outcomes miss a silent crash
//! when traffic is low. A [`HealthPolicy`] fires on either signal it listens
//! to, so a consumer can say "stop routing new requests when ejected or
//! φ ≥ 2; remove only when φ ≥ 8":
//!
//! ```
//! use vigil_detector::health::{Health, HealthConfig, HealthEvent, HealthPolicy, Signal};
//! use vigil_detector::outlier::{OutlierConfig, Outcome};
//! use vigil_detector::{Instant, Model, ModelConfig};
//!
//! let policies = vec![
//!     HealthPolicy::new("route").phi(2.0).on_ejection(),
//!     HealthPolicy::new("remove").phi(8.0).destructive(),
//! ];
//! let config = HealthConfig::new(policies, OutlierConfig::vigil());
//! let mut health = Health::new(&ModelConfig::default_for(Model::Akka), config)?;
//! let t = |ms: u64| Instant::from_millis(ms);
//! for h in ["a", "b", "c"] {
//!     health.insert(h, t(0))?;
//! }
//! // Heartbeats from everyone, every second; "b" answers requests with 503s.
//! let mut events = Vec::new();
//! for s in 0..10u64 {
//!     for h in ["a", "b", "c"] {
//!         health.heartbeat(h, t(s * 1000))?;
//!         let code = if h == "b" { 503 } else { 200 };
//!         health.record(h, Outcome::Response(code), None, t(s * 1000 + 1))?;
//!     }
//!     events.extend(health.poll(t(s * 1000 + 2)));
//! }
//! // "b" stops receiving traffic when ejected, though its heartbeats are fine;
//! // nothing destructive happens to it.
//! assert!(events.iter().any(|e| matches!(e,
//!     HealthEvent::Fired { peer: "b", policy, signal: Signal::Ejected { .. }, .. } if policy == "route")));
//! assert!(!events.iter().any(|e| matches!(e, HealthEvent::Fired { policy, .. } if policy == "remove")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **The brake applies to both signals.** A destructive policy fires for at
//! most a share of the peers at once ([`HealthConfig::brake_fraction`], at
//! least [`HealthConfig::brake_min`]); beyond it, a verdict is withheld
//! until others clear, whichever signal asked for it. (The registry's own
//! brake doubts mass φ crossings as before; outlier detection caps its
//! ejections.)
//!
//! **Each signal follows its own peers.** A runtime may judge only some
//! peers by φ (those whose heartbeats it receives) while outlier detection
//! follows every peer requests go to (its ejection cap is a share of them):
//! [`Health::watch`] and [`Health::unwatch`] add and remove a peer for φ,
//! [`Health::track`] and [`Health::forget`] for outcomes, and
//! [`Health::insert`] and [`Health::remove`] do both. A peer known to
//! neither is forgotten. When a signal is withdrawn from a peer (unwatched,
//! forgotten, or its φ history [reset](Health::reset) after a restart), the
//! verdicts that only it asked for end without an event, as the registry's
//! own reset does.
//!
//! A policy's text form (`route=2,ejection`, `remove=8,dwell=30s,destructive`,
//! `drain=ejection`) is [`HealthPolicy`]'s `FromStr` and `Display`.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use crate::any::{AnyDetector, ModelConfig};
use crate::detector::Detector;
use crate::error::ConfigError;
use crate::outlier::{EjectReason, HostReport, Outcome, OutlierConfig, OutlierError, OutlierEvent, Outliers};
use crate::registry::{Cause, Event as RegistryEvent, HeartbeatError, PeerReport, PolicyId, Registry, RegistryConfig};
use crate::time::Instant;

mod policy;

pub use policy::{HealthPolicy, MAX_POLICY_NAME, PolicyError, PolicyErrorKind};

/// The composition's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthConfig {
    /// The policies; at least one listens to φ, names unique.
    pub policies: Vec<HealthPolicy>,
    /// The registry's settings; its policies are the φ parts of
    /// [`HealthConfig::policies`] (any given here are replaced).
    pub registry: RegistryConfig,
    /// Outlier detection's settings.
    pub outliers: OutlierConfig,
    /// A destructive policy fires for at most this share of the peers at
    /// once. Default 0.3.
    pub brake_fraction: f64,
    /// ... and always for at least this many. Default 1.
    pub brake_min: usize,
}

impl HealthConfig {
    /// These policies, the registry's defaults, these outlier settings, and
    /// the brake at 30 % (at least one peer).
    pub fn new(policies: Vec<HealthPolicy>, outliers: OutlierConfig) -> HealthConfig {
        HealthConfig {
            policies,
            registry: RegistryConfig::new(Vec::new()),
            outliers,
            brake_fraction: 0.3,
            brake_min: 1,
        }
    }
}

/// Which signal moved a policy.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Signal {
    /// φ reached the policy's threshold, or came back under it (the level:
    /// when it fired, or just after the heartbeat that recovered the peer;
    /// `None` for a peer never heard from).
    Phi {
        /// The level.
        level: Option<f64>,
    },
    /// Outlier detection ejected the peer, or returned it to service.
    Ejected {
        /// Why it was ejected.
        reason: EjectReason,
    },
}

/// `φ 2.31`, `φ (never heard from)` or `ejection (consecutive-5xx)`.
///
/// ```
/// use vigil_detector::health::Signal;
/// use vigil_detector::outlier::EjectReason;
///
/// assert_eq!(Signal::Phi { level: Some(2.314) }.to_string(), "φ 2.31");
/// assert_eq!(Signal::Ejected { reason: EjectReason::Latency }.to_string(), "ejection (latency)");
/// ```
impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Signal::Phi { level: Some(l) } => write!(f, "φ {l:.2}"),
            Signal::Phi { level: None } => f.write_str("φ (never heard from)"),
            Signal::Ejected { reason } => write!(f, "ejection ({})", reason.name()),
        }
    }
}

/// A policy's verdict on a peer.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Verdict {
    /// Not fired.
    Clear,
    /// Fired, on this signal.
    Fired(Signal),
    /// Would have fired, but the brake withholds it.
    Withheld(Signal),
}

/// What changed.
#[derive(Debug, Clone, PartialEq)]
pub enum HealthEvent<K> {
    /// A policy fired for a peer.
    Fired {
        /// The peer.
        peer: K,
        /// The policy.
        policy: String,
        /// Which signal.
        signal: Signal,
        /// When.
        at: Instant,
    },
    /// A policy cleared for a peer: neither signal asks for it any more.
    Cleared {
        /// The peer.
        peer: K,
        /// The policy.
        policy: String,
        /// The signal whose change cleared it: φ recovered (with the level
        /// just after the heartbeat that recovered the peer), or the peer
        /// returned from its ejection.
        signal: Signal,
        /// When.
        at: Instant,
    },
    /// The brake withholds a destructive policy for a peer.
    Withheld {
        /// The peer.
        peer: K,
        /// The policy.
        policy: String,
        /// The signal that asked for it.
        signal: Signal,
        /// When.
        at: Instant,
    },
    /// Outlier detection's own events (ejections, returns, overflows). An
    /// ejection or a return comes before the verdicts it moves.
    Outlier(OutlierEvent<K>),
}

/// Everything known of one peer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PeerHealth {
    /// φ now (`None` if not watched by φ).
    pub level: Option<f64>,
    /// The registry's view: statistics and each φ part's standing (`None`
    /// if not watched by φ).
    pub phi: Option<PeerReport>,
    /// Outlier detection's view (`None` if not tracked).
    pub outlier: Option<HostReport>,
    /// Each policy's verdict, in [`HealthConfig::policies`] order.
    pub verdicts: Vec<(String, Verdict)>,
    /// When each verdict took its present value (when the peer became known,
    /// for one that never changed), in the same order.
    pub since: Vec<Instant>,
}

#[derive(Debug, Clone)]
struct PeerState {
    /// Per policy: whether its φ part has fired (with the level).
    phi: Vec<Option<Option<f64>>>,
    /// The ejection in force.
    ejected: Option<EjectReason>,
    verdicts: Vec<Verdict>,
    /// When each verdict took its present value.
    since: Vec<Instant>,
    /// Order of arrival, for deterministic brake releases.
    seq: u64,
    /// Judged by φ (in the registry).
    watched: bool,
    /// Judged by its outcomes (in outlier detection).
    tracked: bool,
}

/// The composition. See the module documentation.
#[derive(Debug, Clone)]
pub struct Health<K, D = AnyDetector> {
    registry: Registry<K, D>,
    outliers: Outliers<K>,
    policies: Vec<HealthPolicy>,
    /// Health policy index → registry policy.
    phi_ids: Vec<Option<PolicyId>>,
    /// Registry policy → health policy index.
    by_registry: HashMap<PolicyId, usize>,
    peers: HashMap<K, PeerState>,
    /// Per policy: peers for which it has fired now (derived from the
    /// verdicts, kept beside them so the brake costs nothing to check).
    fired: Vec<usize>,
    seq: u64,
    brake_fraction: f64,
    brake_min: usize,
    events: Vec<HealthEvent<K>>,
    events_dropped: u64,
}

impl<K: Hash + Eq + Clone> Health<K, AnyDetector> {
    /// A composition whose peers' detectors are built from `model`.
    ///
    /// # Errors
    ///
    /// An invalid model, policy, registry or outlier setting; no policy that
    /// listens to φ; two policies of one name; a brake fraction outside
    /// (0, 1].
    pub fn new(model: &ModelConfig, config: HealthConfig) -> Result<Health<K, AnyDetector>, ConfigError> {
        let prototype = AnyDetector::new(model)?;
        Health::with_detector(prototype, config)
    }
}

impl<K: Hash + Eq + Clone, D: Detector + Clone> Health<K, D> {
    /// A composition whose peers' detectors are clones of `prototype`.
    ///
    /// # Errors
    ///
    /// As [`Health::new`].
    pub fn with_detector(prototype: D, config: HealthConfig) -> Result<Health<K, D>, ConfigError> {
        let HealthConfig { policies, mut registry, outliers, brake_fraction, brake_min } = config;
        if !(brake_fraction > 0.0 && brake_fraction <= 1.0) {
            return Err(ConfigError::OutOfRange { field: "brake_fraction", value: brake_fraction, range: "(0, 1]" });
        }
        let mut names: Vec<&str> = Vec::new();
        for p in &policies {
            if p.name.is_empty() || names.contains(&p.name.as_str()) {
                return Err(ConfigError::Inconsistent {
                    reason: format!("health policy names must be distinct and not empty: {:?}", p.name),
                });
            }
            p.validate()?;
            names.push(&p.name);
        }
        if policies.len() > usize::from(u16::MAX) {
            return Err(ConfigError::Inconsistent { reason: "too many health policies (at most 65535)".into() });
        }
        // A φ part answers to its health policy's name.
        registry.policies = policies
            .iter()
            .filter_map(|p| {
                let mut phi = p.phi.clone()?;
                phi.name.clone_from(&p.name);
                Some(phi)
            })
            .collect();
        if registry.policies.is_empty() {
            return Err(ConfigError::Inconsistent { reason: "at least one health policy must listen to φ".into() });
        }
        let mut phi_ids = Vec::new();
        let mut by_registry = HashMap::new();
        let mut next = 0u16;
        for (i, p) in policies.iter().enumerate() {
            if p.phi.is_some() {
                phi_ids.push(Some(PolicyId(next)));
                by_registry.insert(PolicyId(next), i);
                next += 1;
            } else {
                phi_ids.push(None);
            }
        }
        let policies_len = policies.len();
        Ok(Health {
            registry: Registry::new(prototype, registry)?,
            outliers: Outliers::new(outliers)?,
            policies,
            phi_ids,
            by_registry,
            peers: HashMap::new(),
            fired: vec![0; policies_len],
            seq: 0,
            brake_fraction,
            brake_min,
            events: Vec::new(),
            events_dropped: 0,
        })
    }

    /// The φ signal's registry.
    pub fn registry(&self) -> &Registry<K, D> {
        &self.registry
    }

    /// The passive signal's detector.
    pub fn outliers(&self) -> &Outliers<K> {
        &self.outliers
    }

    /// The policies, in [`HealthConfig::policies`] order.
    pub fn policies(&self) -> &[HealthPolicy] {
        &self.policies
    }

    /// Replaces the φ settings (threshold, dwell, rearm, recovery) of the
    /// policy named as `policy`, on a running judge, as
    /// [`Registry::retune`] does: each peer is judged again as if the
    /// policy had always been so. What the policy listens to (φ, ejection)
    /// and whether it is destructive cannot change here: that is a new
    /// policy, for a restart.
    ///
    /// # Errors
    ///
    /// [`ConfigError`]: no policy of that name, settings that do not
    /// validate, or a change of what it listens to.
    pub fn retune(&mut self, mut policy: HealthPolicy, now: Instant) -> Result<(), ConfigError> {
        let i = self
            .policies
            .iter()
            .position(|p| p.name == policy.name)
            .ok_or_else(|| ConfigError::Inconsistent { reason: format!("no policy named '{}'", policy.name) })?;
        let was = &self.policies[i];
        if was.phi.is_some() != policy.phi.is_some()
            || was.on_ejection != policy.on_ejection
            || was.destructive != policy.destructive
        {
            return Err(ConfigError::Inconsistent {
                reason: format!(
                    "policy '{}': only its φ settings (threshold, dwell, rearm, recovery) change on a running \
                     member; what it listens to and whether it is destructive need a restart",
                    policy.name
                ),
            });
        }
        policy.validate()?;
        if let Some(phi) = policy.phi.as_mut() {
            phi.name.clone_from(&policy.name);
            self.registry.retune(phi.clone(), now)?;
        }
        self.policies[i] = policy;
        Ok(())
    }

    fn state(&mut self, peer: &K, now: Instant) -> &mut PeerState {
        let n = self.policies.len();
        if !self.peers.contains_key(peer) {
            self.seq += 1;
            let s = PeerState {
                phi: vec![None; n],
                ejected: None,
                verdicts: vec![Verdict::Clear; n],
                since: vec![now; n],
                seq: self.seq,
                watched: false,
                tracked: false,
            };
            self.peers.insert(peer.clone(), s);
        }
        self.peers.get_mut(peer).expect("just inserted")
    }

    /// Judges `peer` by both signals from `now` (its first heartbeat is
    /// expected from then on): [`Health::watch`] and [`Health::track`].
    /// Returns whether it is new to either.
    ///
    /// # Errors
    ///
    /// Either signal is full.
    pub fn insert(&mut self, peer: K, now: Instant) -> Result<bool, HealthError> {
        let watched = self.watch(peer.clone(), now)?;
        let tracked = self.track(peer, now)?;
        Ok(watched || tracked)
    }

    /// Forgets `peer` (it left): both signals.
    pub fn remove(&mut self, peer: &K, now: Instant) {
        self.registry.remove(peer, now);
        self.outliers.remove(peer);
        self.drop_peer(peer);
        self.release(now);
    }

    /// Judges `peer` by φ from `now`: its first heartbeat is expected from
    /// then on (the registry's first-heartbeat rule). Returns whether it was
    /// not watched yet.
    ///
    /// ```
    /// use vigil_detector::health::{Health, HealthConfig, HealthPolicy};
    /// use vigil_detector::outlier::OutlierConfig;
    /// use vigil_detector::{Instant, Model, ModelConfig};
    ///
    /// let config = HealthConfig::new(vec![HealthPolicy::new("route").phi(2.0)], OutlierConfig::vigil());
    /// let mut health = Health::new(&ModelConfig::default_for(Model::Akka), config)?;
    /// assert!(health.watch("a", Instant::ZERO)?);
    /// assert!(health.is_watched(&"a") && !health.is_tracked(&"a"));
    /// assert!(health.level(&"a", Instant::ZERO).is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The registry is full.
    pub fn watch(&mut self, peer: K, now: Instant) -> Result<bool, HealthError> {
        let new = self.registry.register(peer.clone(), now).map_err(HealthError::Heartbeat)?;
        self.state(&peer, now).watched = true;
        Ok(new)
    }

    /// Stops judging `peer` by φ: its detector is dropped, and verdicts only
    /// φ asked for end without an event. A peer not tracked either is
    /// forgotten. Returns whether it was watched.
    pub fn unwatch(&mut self, peer: &K, now: Instant) -> bool {
        let known = self.registry.remove(peer, now);
        if let Some(s) = self.peers.get_mut(peer) {
            s.watched = false;
            s.phi.iter_mut().for_each(|p| *p = None);
            if s.tracked {
                self.settle_quietly(peer, now);
            } else {
                self.drop_peer(peer);
            }
        }
        self.release(now);
        known
    }

    /// Judges `peer` by the outcomes of requests to it from `now` (it counts
    /// toward the ejection cap from then on, traffic or not). Returns whether
    /// it was not tracked yet.
    ///
    /// ```
    /// use vigil_detector::health::{Health, HealthConfig, HealthEvent, Verdict};
    /// use vigil_detector::outlier::{OutlierConfig, Outcome};
    /// use vigil_detector::{Instant, Model, ModelConfig};
    ///
    /// let config = HealthConfig::new(vec!["route=2,ejection".parse()?], OutlierConfig::vigil());
    /// let mut health = Health::new(&ModelConfig::default_for(Model::Akka), config)?;
    /// let t = Instant::from_secs(1);
    /// for peer in ["a", "b", "c"] {
    ///     health.track(peer, t)?;
    /// }
    /// for _ in 0..5 {
    ///     health.record("b", Outcome::Response(500), None, t)?;
    /// }
    /// assert!(health.take_events().iter().any(|e| matches!(e, HealthEvent::Fired { peer: "b", .. })));
    /// // "b" is replaced by a new process: its ejection ends, quietly.
    /// health.forget(&"b", t);
    /// health.track("b", t)?;
    /// assert_eq!(health.verdict(&"b", "route"), Some(Verdict::Clear));
    /// assert!(health.take_events().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Outlier detection is full.
    pub fn track(&mut self, peer: K, now: Instant) -> Result<bool, HealthError> {
        let new = self.outliers.insert(peer.clone(), now).map_err(HealthError::Outlier)?;
        self.state(&peer, now).tracked = true;
        Ok(new)
    }

    /// Stops judging `peer` by its outcomes: an ejection in force ends
    /// without a return, and verdicts only it asked for end without an
    /// event. A peer not watched either is forgotten. Returns whether it was
    /// tracked.
    pub fn forget(&mut self, peer: &K, now: Instant) -> bool {
        let known = self.outliers.remove(peer);
        if let Some(s) = self.peers.get_mut(peer) {
            s.tracked = false;
            s.ejected = None;
            if s.watched {
                self.settle_quietly(peer, now);
            } else {
                self.drop_peer(peer);
            }
        }
        self.release(now);
        known
    }

    /// Whether `peer` is judged by φ.
    pub fn is_watched(&self, peer: &K) -> bool {
        self.peers.get(peer).is_some_and(|s| s.watched)
    }

    /// Whether `peer` is judged by its outcomes.
    pub fn is_tracked(&self, peer: &K) -> bool {
        self.peers.get(peer).is_some_and(|s| s.tracked)
    }

    /// Forgets `peer`'s φ history (as after a restart with a new identity)
    /// and restarts its first-heartbeat clock at `now`: verdicts only φ
    /// asked for end without an event, as the registry's own
    /// [`reset`](Registry::reset) does. Returns whether it is watched.
    pub fn reset(&mut self, peer: &K, now: Instant) -> bool {
        if !self.registry.reset(peer, now) {
            return false;
        }
        if let Some(s) = self.peers.get_mut(peer) {
            s.phi.iter_mut().for_each(|p| *p = None);
            self.settle_quietly(peer, now);
        }
        self.release(now);
        true
    }

    /// Forgets `peer`'s state and the verdicts counted for it.
    fn drop_peer(&mut self, peer: &K) {
        if let Some(s) = self.peers.remove(peer) {
            for (i, v) in s.verdicts.iter().enumerate() {
                if matches!(v, Verdict::Fired(_)) {
                    self.fired[i] -= 1;
                }
            }
        }
    }

    /// Re-judges every policy of `peer` after a signal was withdrawn without
    /// news of its own: a verdict nothing asks for any more clears without
    /// an event, and one the other signal still asks for stands on it.
    fn settle_quietly(&mut self, peer: &K, now: Instant) {
        for i in 0..self.policies.len() {
            let Some(s) = self.peers.get(peer) else { return };
            let next = match (self.wanted(s, i, Signal::Phi { level: None }), s.verdicts[i]) {
                (None, Verdict::Fired(_) | Verdict::Withheld(_)) => Verdict::Clear,
                (Some(signal), Verdict::Fired(_)) => Verdict::Fired(signal),
                (Some(signal), Verdict::Withheld(_)) => Verdict::Withheld(signal),
                (_, Verdict::Clear) => continue,
            };
            if next != s.verdicts[i] {
                self.set_verdict(peer, i, next, now);
            }
        }
    }

    /// A heartbeat from `peer`.
    ///
    /// # Errors
    ///
    /// The registry's refusal (full, or an unknown peer when it admits none).
    pub fn heartbeat(&mut self, peer: K, now: Instant) -> Result<(), HealthError> {
        self.registry.heartbeat(peer.clone(), now).map_err(HealthError::Heartbeat)?;
        self.state(&peer, now).watched = true;
        Ok(())
    }

    /// The outcome of a request to `peer` (tracked from now if it was not).
    /// An ejection it causes is judged at once: its events wait for
    /// [`Health::poll`] or [`Health::take_events`].
    ///
    /// # Errors
    ///
    /// Outlier detection is full.
    pub fn record(
        &mut self,
        peer: K,
        outcome: Outcome,
        latency: Option<Duration>,
        now: Instant,
    ) -> Result<(), HealthError> {
        self.outliers.record(peer.clone(), outcome, latency, now).map_err(HealthError::Outlier)?;
        self.state(&peer, now).tracked = true;
        let events = self.outliers.take_events();
        self.take_outlier_events(events);
        Ok(())
    }

    /// When [`Health::poll`] next has work.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        match (self.registry.next_deadline(), self.outliers.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Takes both signals' decisions due by `now` and returns what changed
    /// since the last call.
    pub fn poll(&mut self, now: Instant) -> Vec<HealthEvent<K>> {
        for e in self.registry.poll(now) {
            match e {
                RegistryEvent::Suspected { peer, policy, at, cause } => {
                    let level = match cause {
                        Cause::Level(l) => Some(l),
                        _ => None,
                    };
                    // A peer removed since the registry queued this: gone.
                    if let (Some(&i), Some(s)) = (self.by_registry.get(&policy), self.peers.get_mut(&peer)) {
                        s.phi[i] = Some(level);
                        self.judge(&peer, i, Signal::Phi { level }, at);
                    }
                }
                RegistryEvent::Recovered { peer, policy, at, level } => {
                    if let (Some(&i), Some(s)) = (self.by_registry.get(&policy), self.peers.get_mut(&peer)) {
                        s.phi[i] = None;
                        self.judge(&peer, i, Signal::Phi { level: Some(level) }, at);
                    }
                }
                _ => {}
            }
        }
        let events = self.outliers.poll(now);
        self.take_outlier_events(events);
        self.release(now);
        std::mem::take(&mut self.events)
    }

    /// The events queued since the last call (by [`Health::record`], or a
    /// brake release), without taking any decision: for a runtime that
    /// reports an ejection as soon as the outcome that caused it.
    pub fn take_events(&mut self) -> Vec<HealthEvent<K>> {
        std::mem::take(&mut self.events)
    }

    fn take_outlier_events(&mut self, events: Vec<OutlierEvent<K>>) {
        for e in events {
            // Outlier detection's diagnostics are bounded, as in the
            // detector; ejections and returns are kept.
            let diagnostic = matches!(e, OutlierEvent::NotEnforced { .. } | OutlierEvent::Overflow { .. });
            if diagnostic && self.events.len() >= crate::outlier::MAX_EVENTS {
                self.events_dropped += 1;
                continue;
            }
            // The ejection or the return goes first, then the verdicts it moves.
            self.events.push(HealthEvent::Outlier(e.clone()));
            match e {
                OutlierEvent::Ejected { host, reason, at, .. } => {
                    let Some(s) = self.peers.get_mut(&host) else { continue };
                    s.ejected = Some(reason);
                    for i in 0..self.policies.len() {
                        if self.policies[i].on_ejection {
                            self.judge(&host, i, Signal::Ejected { reason }, at);
                        }
                    }
                }
                OutlierEvent::Returned { host, at } => {
                    let Some(s) = self.peers.get_mut(&host) else { continue };
                    if let Some(reason) = s.ejected.take() {
                        for i in 0..self.policies.len() {
                            if self.policies[i].on_ejection {
                                self.judge(&host, i, Signal::Ejected { reason }, at);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Outlier diagnostics dropped because [`MAX_EVENTS`](crate::outlier::MAX_EVENTS)
    /// events were waiting to be taken.
    pub fn events_dropped(&self) -> u64 {
        self.events_dropped
    }

    /// How many peers a destructive policy may have fired at once.
    fn brake_cap(&self) -> usize {
        ((self.brake_fraction * self.peers.len() as f64).floor() as usize).max(self.brake_min)
    }

    fn fired_count(&self, i: usize) -> usize {
        self.fired[i]
    }

    /// Sets a verdict at `at`, keeping the fired counts.
    fn set_verdict(&mut self, peer: &K, i: usize, next: Verdict, at: Instant) {
        let Some(s) = self.peers.get_mut(peer) else { return };
        let was = matches!(s.verdicts[i], Verdict::Fired(_));
        let is = matches!(next, Verdict::Fired(_));
        s.verdicts[i] = next;
        s.since[i] = at;
        match (was, is) {
            (false, true) => self.fired[i] += 1,
            (true, false) => self.fired[i] -= 1,
            _ => {}
        }
    }

    /// Whether policy `i` wants to fire for this peer, and on which signal
    /// (`trigger` first if it is one that asks).
    fn wanted(&self, s: &PeerState, i: usize, trigger: Signal) -> Option<Signal> {
        let phi = s.phi[i].map(|level| Signal::Phi { level });
        let ejected = s.ejected.filter(|_| self.policies[i].on_ejection).map(|reason| Signal::Ejected { reason });
        match trigger {
            Signal::Phi { .. } if phi.is_some() => phi,
            Signal::Ejected { .. } if ejected.is_some() => ejected,
            _ => phi.or(ejected),
        }
    }

    /// Re-judges policy `i` for `peer` after `trigger` moved.
    fn judge(&mut self, peer: &K, i: usize, trigger: Signal, at: Instant) {
        let Some(s) = self.peers.get(peer) else { return };
        let want = self.wanted(s, i, trigger);
        let now_verdict = s.verdicts[i];
        let name = self.policies[i].name.clone();
        let next = match (want, now_verdict) {
            (Some(_), Verdict::Fired(_)) => return,
            (Some(signal), Verdict::Clear | Verdict::Withheld(_)) => {
                if self.policies[i].destructive && self.fired_count(i) >= self.brake_cap() {
                    if matches!(now_verdict, Verdict::Withheld(_)) {
                        return;
                    }
                    self.events.push(HealthEvent::Withheld { peer: peer.clone(), policy: name, signal, at });
                    Verdict::Withheld(signal)
                } else {
                    self.events.push(HealthEvent::Fired { peer: peer.clone(), policy: name, signal, at });
                    Verdict::Fired(signal)
                }
            }
            (None, Verdict::Fired(_)) => {
                self.events.push(HealthEvent::Cleared { peer: peer.clone(), policy: name, signal: trigger, at });
                Verdict::Clear
            }
            (None, Verdict::Withheld(_)) => Verdict::Clear,
            (None, Verdict::Clear) => return,
        };
        self.set_verdict(peer, i, next, at);
    }

    /// Withheld destructive verdicts fire, oldest peers first, as far as the
    /// brake now allows.
    fn release(&mut self, at: Instant) {
        for i in 0..self.policies.len() {
            if !self.policies[i].destructive {
                continue;
            }
            let mut waiting: Vec<(u64, K, Signal)> = self
                .peers
                .iter()
                .filter_map(|(k, s)| match s.verdicts[i] {
                    Verdict::Withheld(signal) => Some((s.seq, k.clone(), signal)),
                    _ => None,
                })
                .collect();
            waiting.sort_by_key(|w| w.0);
            for (_, peer, signal) in waiting {
                if self.fired_count(i) >= self.brake_cap() {
                    break;
                }
                self.events.push(HealthEvent::Fired {
                    peer: peer.clone(),
                    policy: self.policies[i].name.clone(),
                    signal,
                    at,
                });
                self.set_verdict(&peer, i, Verdict::Fired(signal), at);
            }
        }
    }

    /// Everything known of `peer` at `now`.
    pub fn report(&self, peer: &K, now: Instant) -> Option<PeerHealth> {
        let s = self.peers.get(peer)?;
        Some(PeerHealth {
            level: self.registry.level(peer, now),
            phi: self.registry.report(peer, now),
            outlier: self.outliers.report(peer),
            verdicts: self.policies.iter().zip(&s.verdicts).map(|(p, v)| (p.name.clone(), *v)).collect(),
            since: s.since.clone(),
        })
    }

    /// The verdict of the policy named `policy` on `peer`.
    pub fn verdict(&self, peer: &K, policy: &str) -> Option<Verdict> {
        let i = self.policies.iter().position(|p| p.name == policy)?;
        Some(self.peers.get(peer)?.verdicts[i])
    }

    /// The registry policy behind the health policy named `policy`, if it
    /// listens to φ.
    pub fn phi_policy(&self, policy: &str) -> Option<PolicyId> {
        let i = self.policies.iter().position(|p| p.name == policy)?;
        self.phi_ids[i]
    }

    /// `peer`'s φ at `now`; `None` if it is not watched.
    pub fn level(&self, peer: &K, now: Instant) -> Option<f64> {
        self.registry.level(peer, now)
    }

    /// `peer`'s detector, for model-specific inspection (its last heartbeat,
    /// when it will cross a level); `None` if it is not watched.
    pub fn detector(&self, peer: &K) -> Option<&D> {
        self.registry.detector(peer)
    }

    /// Reports that the observer itself stalled for `stalled_for`: no φ
    /// verdict before the registry's quiet period has passed (see
    /// [`PauseGuard`](crate::PauseGuard)).
    pub fn note_local_pause(&mut self, now: Instant, stalled_for: Duration) {
        self.registry.note_local_pause(now, stalled_for);
    }

    /// The end of the quiet period after the observer's last stall
    /// ([`Instant::ZERO`] if there has been none).
    pub fn quiet_until(&self) -> Instant {
        self.registry.quiet_until()
    }
}

/// Why an input was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HealthError {
    /// The registry refused the peer.
    Heartbeat(HeartbeatError),
    /// Outlier detection refused the peer.
    Outlier(OutlierError),
}

impl fmt::Display for HealthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HealthError::Heartbeat(e) => e.fmt(f),
            HealthError::Outlier(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for HealthError {}
