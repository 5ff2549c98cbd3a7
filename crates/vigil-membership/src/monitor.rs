//! Monitoring: whom this node watches, their detectors, and when a silent
//! one is due for a probe; and the application's graded policies over them.
//!
//! In φ mode each member heartbeats the `K` members after it on the ring, so
//! each node watches the `K` members before it; the application may watch
//! more. Every watched member has a detector in one `vigil_detector`
//! [`Health`], the judge the lab measures: its first policy is the
//! protocol's own, `probe`, at the suspect level (φ only, not destructive),
//! and the application's policies follow ([`Config::policies`]). Outlier
//! detection in the same `Health` follows every live member once the
//! application records outcomes (`outcomes.rs`). The registry inside
//! supplies the three things monitoring needs:
//!
//! - the exact instant the level will cross, so the node arms one timer
//!   instead of polling;
//! - the first-heartbeat rule: a member watched but never heard from goes
//!   silent after the first-heartbeat timeout, so a member that crashed
//!   before saying anything is still found out;
//! - the local-pause guard: after this node itself stalled, no silence is
//!   acted on until it has measured afresh.
//!
//! What `probe` calls firing is only "silent" here: it leads to a probe,
//! and only a failed probe leads to an accusation. Lifeguard's local health
//! raises the bar: with awareness `a`, a member is probed only once its
//! level reaches `(1 + a) ×` the suspect level. The application's policies
//! are reported ([`Notice`]) for the members it watches.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use vigil_detector::health::{Health, HealthConfig, HealthEvent, HealthPolicy, Signal, Verdict as HealthVerdict};
use vigil_detector::outlier::{EjectReason, HostReport, Outcome, OutlierEvent};
use vigil_detector::{AnyDetector, Detector, Instant, PauseGuard, PolicyState, RegistryConfig, UnknownPeers};

use crate::arrivals::{ArrivalLog, Arrivals};
use crate::config::{Config, ConfigError};
use crate::members::MemberTable;
use crate::message::MAX_MEMBERS;
use crate::outcomes::RequestOutcomes;
use crate::watch_report::{PolicyOutlook, WatchReport};

/// The protocol's own policy: its firing makes a watched member silent.
pub(crate) const PROBE: &str = "probe";

/// One watched member.
#[derive(Debug, Clone)]
struct Watch {
    generation: u64,
    /// Watched because the ring says so.
    on_ring: bool,
    /// Watched because the application asked.
    by_app: bool,
    /// `probe` fired: the member is silent.
    silent: bool,
    /// Silent without ever having been heard.
    never_heard: bool,
    /// No probe before this instant (after an answered probe).
    quiet_until: Instant,
    /// Probes answered in a row during this silence.
    answered: u32,
    /// When this member is next looked at, if it is queued.
    check_at: Option<Instant>,
    /// Its heartbeat arrivals (bounded; empty unless recording is on).
    arrivals: ArrivalLog,
}

/// A watched member due for a probe.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Silent {
    pub(crate) name: Arc<str>,
    /// Its level; `None` if it was never heard from.
    pub(crate) level: Option<f64>,
}

/// How an application policy's verdict about a watched member changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Fired,
    Withheld,
    Cleared,
}

/// What the judge has to tell the application, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Notice {
    /// An application policy moved for a member the application watches.
    Policy { name: Arc<str>, generation: u64, policy: String, change: Change, signal: Signal },
    /// Outlier detection ejected a live member.
    Ejected { name: Arc<str>, reason: EjectReason, until: Instant },
    /// An ejected member is back in service.
    Returned { name: Arc<str> },
}

/// Monitoring state. See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct Monitor {
    /// Verdicts, ejections and returns, waiting to become events.
    notices: Vec<Notice>,
    health: Health<Arc<str>, AnyDetector>,
    /// Whether outlier detection follows the membership yet.
    outcomes: RequestOutcomes,
    watched: HashMap<Arc<str>, Watch>,
    checks: BTreeSet<(Instant, Arc<str>)>,
    suspect_level: f64,
    observers: usize,
    ring_version: Option<u64>,
    recorded_arrivals: usize,
}

impl Monitor {
    pub(crate) fn new(config: &Config) -> Result<Monitor, ConfigError> {
        // The application's graded policies judge the same detectors; only
        // members it watches report them.
        let mut policies = vec![HealthPolicy::new(PROBE).phi(config.suspect_level)];
        policies.extend(config.policies.iter().cloned());
        let registry = RegistryConfig {
            unknown_peers: UnknownPeers::Reject,
            max_peers: MAX_MEMBERS,
            first_heartbeat_timeout: Some(config.first_heartbeat_timeout),
            // The registry's brake doubts mass φ crossings; here a crossing
            // of `probe` only starts a probe, the protocol's verdicts come
            // from failed probes and suspicion timeouts, and the
            // application's destructive policies are braked by `Health`.
            brake: None,
            pause_guard: Some(PauseGuard {
                max_lateness: config.local_stall.max(Duration::from_millis(1)),
                quiet: config.probe_timeout,
            }),
            ..RegistryConfig::new(Vec::new())
        };
        let health_config = HealthConfig { registry, ..HealthConfig::new(policies, config.outliers.clone()) };
        let prototype = config.detector.build().map_err(ConfigError::Detector)?;
        let health = Health::with_detector(prototype, health_config).map_err(ConfigError::Detector)?;
        Ok(Monitor {
            notices: Vec::new(),
            health,
            outcomes: RequestOutcomes::default(),
            watched: HashMap::new(),
            checks: BTreeSet::new(),
            suspect_level: config.suspect_level,
            observers: if config.mode == crate::Mode::Phi { config.observers } else { 0 },
            ring_version: None,
            recorded_arrivals: config.recorded_arrivals,
        })
    }

    /// Watches the `K` ring predecessors of `me`, if the ring changed since
    /// the last call: new ones start their first-heartbeat clock at `now`,
    /// former ones are dropped (unless the application watches them), and a
    /// member with a new generation starts afresh.
    pub(crate) fn sync(&mut self, members: &MemberTable, me: &str, now: Instant) {
        if self.ring_version == Some(members.ring_version()) {
            return;
        }
        self.ring_version = Some(members.ring_version());
        let ring: Vec<Arc<str>> = members.predecessors(me, self.observers);
        let former: Vec<Arc<str>> = self.watched.iter().filter(|(_, w)| w.on_ring).map(|(n, _)| n.clone()).collect();
        for name in former {
            if !ring.contains(&name) {
                self.set_on_ring(&name, false, now);
            }
        }
        for name in ring {
            let generation = members.get(&name).map_or(0, |m| m.generation);
            self.add(name, generation, now, true);
        }
        // Application watches follow generations too.
        let stale: Vec<(Arc<str>, u64)> = self
            .watched
            .iter()
            .filter_map(|(n, w)| {
                members.get(n).filter(|m| m.generation != w.generation).map(|m| (n.clone(), m.generation))
            })
            .collect();
        for (name, generation) in stale {
            self.add(name, generation, now, false);
        }
    }

    /// Members watched for the application only (not on the ring): they
    /// heartbeat this node only if it subscribes.
    pub(crate) fn app_only(&self) -> Vec<Arc<str>> {
        self.watched.iter().filter(|(_, w)| w.by_app && !w.on_ring).map(|(n, _)| n.clone()).collect()
    }

    /// Whether `name` is watched because the ring says so.
    pub(crate) fn on_ring(&self, name: &str) -> bool {
        self.watched.get(name).is_some_and(|w| w.on_ring)
    }

    /// Starts watching `name` for the application.
    pub(crate) fn watch(&mut self, name: Arc<str>, generation: u64, now: Instant) {
        self.add(name, generation, now, false);
    }

    /// Stops the application's watch of `name` (the ring's, if any, stays).
    pub(crate) fn unwatch(&mut self, name: &str, now: Instant) {
        let Some(w) = self.watched.get_mut(name) else { return };
        w.by_app = false;
        if !w.on_ring {
            self.drop_watch(name, now);
        }
    }

    fn add(&mut self, name: Arc<str>, generation: u64, now: Instant, on_ring: bool) {
        match self.watched.get_mut(&name) {
            Some(w) if w.generation == generation => {
                if on_ring {
                    w.on_ring = true;
                } else {
                    w.by_app = true;
                }
            }
            Some(w) => {
                // A new process under the same name: forget the old one's
                // history.
                w.generation = generation;
                w.silent = false;
                w.never_heard = false;
                w.on_ring |= on_ring;
                w.by_app |= !on_ring;
                if let Some(at) = w.check_at.take() {
                    self.checks.remove(&(at, name.clone()));
                }
                w.arrivals.restart(now);
                self.health.reset(&name, now);
            }
            None => {
                if self.health.watch(name.clone(), now).is_err() {
                    return;
                }
                let w = Watch {
                    generation,
                    on_ring,
                    by_app: !on_ring,
                    silent: false,
                    never_heard: false,
                    quiet_until: Instant::ZERO,
                    answered: 0,
                    check_at: None,
                    arrivals: ArrivalLog::new(self.recorded_arrivals, now),
                };
                self.watched.insert(name, w);
            }
        }
    }

    fn set_on_ring(&mut self, name: &str, on_ring: bool, now: Instant) {
        let Some(w) = self.watched.get_mut(name) else { return };
        w.on_ring = on_ring;
        if !w.on_ring && !w.by_app {
            self.drop_watch(name, now);
        }
    }

    fn drop_watch(&mut self, name: &str, now: Instant) {
        if let Some((key, w)) = self.watched.remove_entry(name) {
            if let Some(at) = w.check_at {
                self.checks.remove(&(at, key.clone()));
            }
            self.health.unwatch(&key, now);
        }
    }

    /// A heartbeat from `name` of `generation`. Returns whether it was taken.
    pub(crate) fn heartbeat(&mut self, name: &str, generation: u64, now: Instant) -> bool {
        let Some((key, w)) = self.watched.get_key_value(name) else { return false };
        if w.generation != generation {
            return false;
        }
        let key = key.clone();
        let taken = self.health.heartbeat(key, now).is_ok();
        if taken && let Some(w) = self.watched.get_mut(name) {
            w.arrivals.push(now);
        }
        taken
    }

    /// What monitoring knows about `name` at `now`, if it is watched.
    pub(crate) fn report(&self, name: &str, now: Instant) -> Option<WatchReport> {
        let (key, w) = self.watched.get_key_value(name)?;
        let health = self.health.report(key, now)?;
        let r = health.phi?;
        let model = self.health.detector(key)?.model().name();
        let policies = self
            .health
            .policies()
            .iter()
            .zip(health.verdicts)
            .zip(health.since)
            .map(|((policy, (name, verdict)), since)| {
                let phi =
                    policy.phi.as_ref().zip(self.health.phi_policy(&name).and_then(|id| r.policies.get(id.index())));
                let (threshold, phi_state, time_to_threshold) = match phi {
                    Some((p, outlook)) => {
                        let time = match outlook.state {
                            PolicyState::Trusted => {
                                outlook.reaches_threshold_at.filter(|&t| t != Instant::MAX).map(|t| t - now)
                            }
                            _ => Some(Duration::ZERO),
                        };
                        (Some(p.threshold), outlook.state, time)
                    }
                    None => (None, PolicyState::Trusted, None),
                };
                // The verdict is the judge's, on either signal and after the
                // brake; φ's own standing shows while it is clear.
                let state = match (verdict, phi_state) {
                    (HealthVerdict::Fired(_), s @ PolicyState::Suspected { .. }) => s,
                    (HealthVerdict::Fired(_), _) => PolicyState::Suspected { since },
                    (HealthVerdict::Withheld(_), s @ PolicyState::Withheld { .. }) => s,
                    (HealthVerdict::Withheld(_), _) => PolicyState::Withheld { since },
                    (HealthVerdict::Clear, s) => s,
                };
                PolicyOutlook { name, threshold, state, time_to_threshold, verdict }
            })
            .collect();
        Some(WatchReport {
            name: name.to_owned(),
            generation: w.generation,
            on_ring: w.on_ring,
            by_app: w.by_app,
            model,
            heard: r.heard,
            level: r.level,
            heartbeats: r.stats.heartbeats,
            mean: r.stats.mean,
            std_dev: r.stats.std_dev,
            silent_for: r.stats.last_heartbeat.map(|t| now - t),
            policies,
        })
    }

    /// `name`'s recorded arrivals after `after`, if it is watched.
    pub(crate) fn arrivals(&self, name: &str, after: Option<Instant>) -> Option<Arrivals> {
        let w = self.watched.get(name)?;
        Some(w.arrivals.snapshot(w.generation, after))
    }

    /// When `name`'s last heartbeat arrived.
    pub(crate) fn last_heartbeat(&self, name: &str) -> Option<Instant> {
        self.health.detector(&Arc::from(name))?.last_heartbeat()
    }

    /// Takes the decisions due by `now` and returns the silent members due
    /// for a probe. `multiplier` is `1 + awareness`.
    pub(crate) fn poll(&mut self, now: Instant, multiplier: u32) -> Vec<Silent> {
        let events = self.health.poll(now);
        self.absorb(events);
        let quiet = self.health.quiet_until();
        let required = self.suspect_level * f64::from(multiplier);
        let mut out = Vec::new();
        while let Some((at, name)) = self.checks.first().cloned() {
            if at > now {
                break;
            }
            self.checks.pop_first();
            let Some(w) = self.watched.get_mut(&name) else { continue };
            w.check_at = None;
            if !w.silent {
                continue;
            }
            let wait = w.quiet_until.max(quiet);
            if now < wait {
                self.check(&name, wait);
                continue;
            }
            if w.never_heard {
                out.push(Silent { name, level: None });
                continue;
            }
            let level = self.health.level(&name, now).unwrap_or(0.0);
            if level >= required {
                out.push(Silent { name, level: Some(level) });
            } else if let Some(at) = self.health.detector(&name).and_then(|d| d.crossing(required)) {
                // Local health raised the bar: look again when it is reached.
                self.check(&name, at.max(now));
            }
        }
        out
    }

    /// Takes the judge's events: `probe` makes members silent or not; the
    /// application's policies, ejections and returns become notices.
    fn absorb(&mut self, events: Vec<HealthEvent<Arc<str>>>) {
        for event in events {
            match event {
                HealthEvent::Fired { peer, policy, signal, at } if policy == PROBE => {
                    if let Some(w) = self.watched.get_mut(&peer) {
                        w.silent = true;
                        w.never_heard = matches!(signal, Signal::Phi { level: None });
                    }
                    self.check(&peer, at);
                }
                HealthEvent::Cleared { peer, policy, .. } if policy == PROBE => {
                    if let Some(w) = self.watched.get_mut(&peer) {
                        w.silent = false;
                        w.never_heard = false;
                        w.answered = 0;
                        if let Some(at) = w.check_at.take() {
                            self.checks.remove(&(at, peer));
                        }
                    }
                }
                HealthEvent::Fired { peer, policy, signal, .. } => self.verdict(peer, policy, Change::Fired, signal),
                HealthEvent::Withheld { peer, policy, signal, .. } => {
                    self.verdict(peer, policy, Change::Withheld, signal);
                }
                HealthEvent::Cleared { peer, policy, signal, .. } => {
                    self.verdict(peer, policy, Change::Cleared, signal);
                }
                HealthEvent::Outlier(OutlierEvent::Ejected { host, reason, until, .. }) => {
                    self.notices.push(Notice::Ejected { name: host, reason, until });
                }
                HealthEvent::Outlier(OutlierEvent::Returned { host, .. }) => {
                    self.notices.push(Notice::Returned { name: host });
                }
                HealthEvent::Outlier(_) => {}
            }
        }
    }

    /// Records an application policy's verdict, for members the application
    /// watches.
    fn verdict(&mut self, name: Arc<str>, policy: String, change: Change, signal: Signal) {
        let Some(w) = self.watched.get(&name).filter(|w| w.by_app) else { return };
        let generation = w.generation;
        self.notices.push(Notice::Policy { name, generation, policy, change, signal });
    }

    /// The verdicts, ejections and returns since the last call.
    pub(crate) fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Records an outcome of a request to the live member `name` (`live`
    /// lists every live member, for the first call); an ejection it causes
    /// is a notice at once. Returns whether it was taken.
    pub(crate) fn record_outcome(
        &mut self,
        now: Instant,
        name: Arc<str>,
        outcome: Outcome,
        latency: Option<Duration>,
        live: impl FnOnce() -> Vec<Arc<str>>,
    ) -> bool {
        let taken = self.outcomes.record(&mut self.health, now, name, outcome, latency, live);
        let events = self.health.take_events();
        self.absorb(events);
        taken
    }

    /// A member is up (new, a new process, or back from the dead): outlier
    /// detection starts it afresh.
    pub(crate) fn member_up(&mut self, name: Arc<str>, now: Instant) {
        self.outcomes.member_up(&mut self.health, name, now);
    }

    /// A member died or left: outlier detection forgets it.
    pub(crate) fn member_gone(&mut self, name: &str, now: Instant) {
        self.outcomes.member_gone(&mut self.health, name, now);
    }

    /// What outlier detection knows of `name` (once outcomes are recorded).
    pub(crate) fn outlier_report(&self, name: &str) -> Option<HostReport> {
        self.health.outliers().report(&Arc::from(name))
    }

    /// Looks at `name` again at `at` if it is still silent then (after a
    /// probe that was answered, or one this node chose not to start).
    pub(crate) fn recheck(&mut self, name: &str, at: Instant) {
        if let Some(w) = self.watched.get_mut(name) {
            w.quiet_until = w.quiet_until.max(at);
        }
        self.check(name, at);
    }

    /// A silent `name` answered a probe: its heartbeats are not getting
    /// through. Looked at again after `base`, doubled for each answer in a
    /// row during the same silence (up to 64 times), so a lasting path
    /// problem costs little.
    pub(crate) fn answered(&mut self, name: &str, now: Instant, base: Duration) {
        let Some(w) = self.watched.get_mut(name) else { return };
        let wait = base.saturating_mul(1 << w.answered.min(6));
        w.answered = w.answered.saturating_add(1);
        self.recheck(name, now.saturating_add(wait));
    }

    /// Queues a look at `name` at `at`, unless one is queued earlier.
    fn check(&mut self, name: &str, at: Instant) {
        let Some((key, w)) = self.watched.get_key_value(name) else { return };
        if w.check_at.is_some_and(|c| c <= at) {
            return;
        }
        let key = key.clone();
        if let Some(w) = self.watched.get_mut(name)
            && let Some(old) = w.check_at.replace(at)
        {
            self.checks.remove(&(old, key.clone()));
        }
        self.checks.insert((at, key));
    }

    /// This node stalled for `late`: no silence is acted on for as long
    /// again (at least a probe timeout).
    pub(crate) fn note_stall(&mut self, now: Instant, late: Duration) {
        self.health.note_local_pause(now, late);
    }

    /// The end of the quiet period after this node's last stall.
    pub(crate) fn quiet_until(&self) -> Instant {
        self.health.quiet_until()
    }

    /// When [`Monitor::poll`] next has something to do: a decision of
    /// either signal, or a look at a silent member.
    pub(crate) fn next_deadline(&mut self) -> Option<Instant> {
        let check = self.checks.first().map(|(at, _)| *at);
        match (self.health.next_deadline(), check) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The members watched.
    pub(crate) fn watched(&self) -> impl Iterator<Item = &Arc<str>> {
        self.watched.keys()
    }

    /// `name`'s level at `now`, if it is watched.
    pub(crate) fn level(&self, name: &str, now: Instant) -> Option<f64> {
        self.health.level(&Arc::from(name), now)
    }

    /// When `name`'s level will reach the suspect level if nothing arrives.
    pub(crate) fn crossing(&self, name: &str) -> Option<Instant> {
        self.health.detector(&Arc::from(name))?.crossing(self.suspect_level)
    }
}
