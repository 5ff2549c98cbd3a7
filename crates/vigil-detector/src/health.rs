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

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use crate::any::{AnyDetector, ModelConfig};
use crate::detector::Detector;
use crate::error::ConfigError;
use crate::outlier::{EjectReason, HostReport, Outcome, OutlierConfig, OutlierError, OutlierEvent, Outliers};
use crate::registry::{Event as RegistryEvent, HeartbeatError, Policy, PolicyId, Registry, RegistryConfig};
use crate::time::Instant;

/// A graded policy over both signals.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthPolicy {
    /// Its name, unique.
    pub name: String,
    /// The φ part, if any: a registry policy (threshold, dwell,
    /// hysteresis).
    pub phi: Option<Policy>,
    /// Whether an ejection by outlier detection fires it.
    pub on_ejection: bool,
    /// Whether acting on it is destructive (the brake applies).
    pub destructive: bool,
}

impl HealthPolicy {
    /// A policy that listens to nothing yet.
    pub fn new(name: impl Into<String>) -> HealthPolicy {
        HealthPolicy { name: name.into(), phi: None, on_ejection: false, destructive: false }
    }

    /// Fires when φ reaches `threshold`.
    pub fn phi(self, threshold: f64) -> HealthPolicy {
        let name = self.name.clone();
        self.phi_policy(Policy::new(name, threshold))
    }

    /// Fires when this registry policy fires (its name is replaced by the
    /// health policy's).
    pub fn phi_policy(mut self, mut policy: Policy) -> HealthPolicy {
        policy.name.clone_from(&self.name);
        self.phi = Some(policy);
        self
    }

    /// Fires when the peer is ejected.
    pub fn on_ejection(mut self) -> HealthPolicy {
        self.on_ejection = true;
        self
    }

    /// Marks it destructive.
    pub fn destructive(mut self) -> HealthPolicy {
        self.destructive = true;
        self
    }
}

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
pub enum Signal {
    /// φ reached the policy's threshold (the level, when it was a level;
    /// `None` for a peer never heard from).
    Phi {
        /// The level.
        level: Option<f64>,
    },
    /// Outlier detection ejected the peer.
    Ejected {
        /// Why.
        reason: EjectReason,
    },
}

/// A policy's verdict on a peer.
#[derive(Debug, Clone, Copy, PartialEq)]
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
    /// Outlier detection's own events (ejections, returns, overflows).
    Outlier(OutlierEvent<K>),
}

/// Everything known of one peer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PeerHealth {
    /// φ now (`None` if not registered with the registry).
    pub level: Option<f64>,
    /// Outlier detection's view.
    pub outlier: Option<HostReport>,
    /// Each policy's verdict, in [`HealthConfig::policies`] order.
    pub verdicts: Vec<(String, Verdict)>,
}

#[derive(Debug, Clone)]
struct PeerState {
    /// Per policy: whether its φ part has fired (with the level).
    phi: Vec<Option<Option<f64>>>,
    /// The ejection in force.
    ejected: Option<EjectReason>,
    verdicts: Vec<Verdict>,
    /// Order of arrival, for deterministic brake releases.
    seq: u64,
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
            names.push(&p.name);
        }
        if policies.len() > usize::from(u16::MAX) {
            return Err(ConfigError::Inconsistent { reason: "too many health policies (at most 65535)".into() });
        }
        registry.policies = policies.iter().filter_map(|p| p.phi.clone()).collect();
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

    fn state(&mut self, peer: &K) -> &mut PeerState {
        let n = self.policies.len();
        if !self.peers.contains_key(peer) {
            self.seq += 1;
            let s = PeerState { phi: vec![None; n], ejected: None, verdicts: vec![Verdict::Clear; n], seq: self.seq };
            self.peers.insert(peer.clone(), s);
        }
        self.peers.get_mut(peer).expect("just inserted")
    }

    /// Tracks `peer` with both signals from `now` (its first heartbeat is
    /// expected from then on). Returns whether it is new.
    ///
    /// # Errors
    ///
    /// Either signal is full.
    pub fn insert(&mut self, peer: K, now: Instant) -> Result<bool, HealthError> {
        let new = self.registry.register(peer.clone(), now).map_err(HealthError::Heartbeat)?;
        self.outliers.insert(peer.clone(), now).map_err(HealthError::Outlier)?;
        self.state(&peer);
        Ok(new)
    }

    /// Forgets `peer` (it left).
    pub fn remove(&mut self, peer: &K, now: Instant) {
        self.registry.remove(peer, now);
        self.outliers.remove(peer);
        if let Some(s) = self.peers.remove(peer) {
            for (i, v) in s.verdicts.iter().enumerate() {
                if matches!(v, Verdict::Fired(_)) {
                    self.fired[i] -= 1;
                }
            }
        }
        self.release(now);
    }

    /// A heartbeat from `peer`.
    ///
    /// # Errors
    ///
    /// The registry's refusal (full, or an unknown peer when it admits none).
    pub fn heartbeat(&mut self, peer: K, now: Instant) -> Result<(), HealthError> {
        self.registry.heartbeat(peer.clone(), now).map_err(HealthError::Heartbeat)?;
        self.state(&peer);
        Ok(())
    }

    /// The outcome of a request to `peer`. An ejection it causes is judged
    /// at once.
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
        self.state(&peer);
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
                        crate::registry::Cause::Level(l) => Some(l),
                        _ => None,
                    };
                    // A peer removed since the registry queued this: gone.
                    if let (Some(&i), Some(s)) = (self.by_registry.get(&policy), self.peers.get_mut(&peer)) {
                        s.phi[i] = Some(level);
                        self.judge(&peer, i, Signal::Phi { level }, at);
                    }
                }
                RegistryEvent::Recovered { peer, policy, at, .. } => {
                    if let (Some(&i), Some(s)) = (self.by_registry.get(&policy), self.peers.get_mut(&peer)) {
                        s.phi[i] = None;
                        self.judge(&peer, i, Signal::Phi { level: None }, at);
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

    fn take_outlier_events(&mut self, events: Vec<OutlierEvent<K>>) {
        for e in events {
            match &e {
                OutlierEvent::Ejected { host, reason, at, .. } => {
                    let (host, reason, at) = (host.clone(), *reason, *at);
                    let Some(s) = self.peers.get_mut(&host) else { continue };
                    s.ejected = Some(reason);
                    for i in 0..self.policies.len() {
                        if self.policies[i].on_ejection {
                            self.judge(&host, i, Signal::Ejected { reason }, at);
                        }
                    }
                }
                OutlierEvent::Returned { host, at } => {
                    let (host, at) = (host.clone(), *at);
                    let Some(s) = self.peers.get_mut(&host) else { continue };
                    let reason = s.ejected.take();
                    if let Some(reason) = reason {
                        for i in 0..self.policies.len() {
                            if self.policies[i].on_ejection {
                                self.judge(&host, i, Signal::Ejected { reason }, at);
                            }
                        }
                    }
                }
                _ => {}
            }
            // Outlier detection's diagnostics are bounded, as in the
            // detector; ejections and returns are kept.
            let diagnostic = matches!(e, OutlierEvent::NotEnforced { .. } | OutlierEvent::Overflow { .. });
            if diagnostic && self.events.len() >= crate::outlier::MAX_EVENTS {
                self.events_dropped += 1;
            } else {
                self.events.push(HealthEvent::Outlier(e));
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

    /// Sets a verdict, keeping the fired counts.
    fn set_verdict(&mut self, peer: &K, i: usize, next: Verdict) {
        let Some(s) = self.peers.get_mut(peer) else { return };
        let was = matches!(s.verdicts[i], Verdict::Fired(_));
        let is = matches!(next, Verdict::Fired(_));
        s.verdicts[i] = next;
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
                self.events.push(HealthEvent::Cleared { peer: peer.clone(), policy: name, at });
                Verdict::Clear
            }
            (None, Verdict::Withheld(_)) => Verdict::Clear,
            (None, Verdict::Clear) => return,
        };
        self.set_verdict(peer, i, next);
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
                self.set_verdict(&peer, i, Verdict::Fired(signal));
            }
        }
    }

    /// Everything known of `peer` at `now`.
    pub fn report(&self, peer: &K, now: Instant) -> Option<PeerHealth> {
        let s = self.peers.get(peer)?;
        Some(PeerHealth {
            level: self.registry.level(peer, now),
            outlier: self.outliers.report(peer),
            verdicts: self.policies.iter().zip(&s.verdicts).map(|(p, v)| (p.name.clone(), *v)).collect(),
        })
    }

    /// The verdict of the policy named `policy` on `peer`.
    pub fn verdict(&self, peer: &K, policy: &str) -> Option<Verdict> {
        let i = self.policies.iter().position(|p| p.name == policy)?;
        Some(self.peers.get(peer)?.verdicts[i])
    }

    /// The registry policy behind health policy `i`, if it listens to φ.
    pub fn phi_policy(&self, policy: &str) -> Option<PolicyId> {
        let i = self.policies.iter().position(|p| p.name == policy)?;
        self.phi_ids[i]
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

impl std::fmt::Display for HealthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HealthError::Heartbeat(e) => e.fmt(f),
            HealthError::Outlier(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for HealthError {}
