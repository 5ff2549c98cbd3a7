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
use crate::config::{Config, ConfigError, PROBE};
use crate::members::MemberTable;
use crate::message::MAX_MEMBERS;
use crate::outcomes::RequestOutcomes;
use crate::watch_report::{PolicyOutlook, WatchReport};

/// One watched member.
#[derive(Debug, Clone)]
struct Watch {
    generation: u64,
    /// Watched because the ring says so.
    on_ring: bool,
    /// Watched because the application asked.
    by_app: bool,
    /// On the ring only because members closer to this node are passed
    /// over (suspected, while a downing strategy decides): it does not
    /// heartbeat this node by itself, so this node subscribes.
    borrowed: bool,
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
    /// Retunes one of the application's policies (never the protocol's own
    /// probe policy, the suspect level).
    pub(crate) fn retune(&mut self, policy: HealthPolicy, now: Instant) -> Result<(), ConfigError> {
        if policy.name == PROBE {
            return Err(ConfigError::Detector(vigil_detector::ConfigError::Inconsistent {
                reason: format!(
                    "'{PROBE}' is the protocol's suspect level, set by the detector's threshold at the start"
                ),
            }));
        }
        self.health.retune(policy, now).map_err(ConfigError::Detector)
    }

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

    /// Watches the `K` ring predecessors of `me`, passing over those `skip`
    /// names (members this node suspects, while a downing strategy
    /// decides: the next ones take their place, borrowed, so that every
    /// member keeps observers on this node's side of a partition), if the
    /// ring's `version` changed since the last call. Returns whether a
    /// member newly needs a subscription (to be sent at once): one newly
    /// borrowed, or an application watch that fell off the ring. New ones
    /// start their first-heartbeat clock at `now`,
    /// former ones are dropped (unless the application watches them), and a
    /// member with a new generation starts afresh.
    pub(crate) fn sync(
        &mut self,
        members: &MemberTable,
        me: &str,
        now: Instant,
        version: u64,
        skip: impl Fn(&str) -> bool,
    ) -> bool {
        if self.ring_version == Some(version) {
            return false;
        }
        self.ring_version = Some(version);
        let passed_over = std::cell::Cell::new(false);
        let ring: Vec<Arc<str>> = members.predecessors(me, self.observers, |n| {
            let s = skip(n);
            passed_over.set(passed_over.get() || s);
            s
        });
        // The members that heartbeat this node by themselves: the same
        // ones unless some were passed over.
        let natural: Vec<Arc<str>> =
            if passed_over.get() { members.predecessors(me, self.observers, |_| false) } else { ring.clone() };
        let mut former: Vec<Arc<str>> =
            self.watched.iter().filter(|(_, w)| w.on_ring).map(|(n, _)| n.clone()).collect();
        // In name order: what follows (a dropped watch) must not depend
        // on the map's order, or a seeded run would not replay.
        former.sort();
        // An application watch that falls off the ring stays, and is fed
        // only once it is subscribed to.
        let mut fell_off = false;
        for name in former {
            if !ring.contains(&name) {
                fell_off |= self.watched.get(&name).is_some_and(|w| w.by_app);
                self.set_on_ring(&name, false, now);
            }
        }
        let mut newly_borrowed = false;
        for name in ring {
            let generation = members.get(&name).map_or(0, |m| m.generation);
            let borrowed = !natural.contains(&name);
            self.add(name.clone(), generation, now, true);
            if let Some(w) = self.watched.get_mut(&name) {
                newly_borrowed |= borrowed && !w.borrowed;
                w.borrowed = borrowed;
            }
        }
        // Application watches follow generations too.
        let mut stale: Vec<(Arc<str>, u64)> = self
            .watched
            .iter()
            .filter_map(|(n, w)| {
                members.get(n).filter(|m| m.generation != w.generation).map(|m| (n.clone(), m.generation))
            })
            .collect();
        stale.sort();
        for (name, generation) in stale {
            self.add(name, generation, now, false);
        }
        newly_borrowed || fell_off
    }

    /// Members watched for the application only (not on the ring), or
    /// borrowed onto it: they heartbeat this node only if it subscribes.
    /// In name order (subscriptions are sent in it).
    pub(crate) fn app_only(&self) -> Vec<Arc<str>> {
        let mut names: Vec<Arc<str>> = self
            .watched
            .iter()
            .filter(|(_, w)| (w.by_app && !w.on_ring) || (w.on_ring && w.borrowed))
            .map(|(n, _)| n.clone())
            .collect();
        names.sort();
        names
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
                    borrowed: false,
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
        let model = self.health.detector(key)?.model();
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

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use vigil_detector::outlier::Outcome;

    use super::*;
    use crate::message::{NodeId, Status};

    const ME: &str = "me";

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    fn addr(i: usize) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, i as u8 + 1], 7946))
    }

    /// A table of `n` live members `m0`.. of generation 1 (this node, `me`,
    /// is not in its own table).
    fn table(n: usize) -> MemberTable {
        let mut t = MemberTable::new();
        for i in 0..n {
            assert!(t.insert(&NodeId::new(format!("m{i}"), 1), addr(i), 0, Status::Alive, ms(0)));
        }
        t
    }

    fn monitor(config: &Config) -> Monitor {
        Monitor::new(config).unwrap()
    }

    fn watched(m: &Monitor) -> Vec<String> {
        let mut v: Vec<String> = m.watched().map(|n| n.to_string()).collect();
        v.sort();
        v
    }

    fn sorted(names: Vec<Arc<str>>) -> Vec<String> {
        let mut v: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        v.sort();
        v
    }

    /// Heartbeats from `name` every 1.05 s (the LAN preset's period) from
    /// `from` to `to` (ms), polled after each: what the node does.
    fn beat(m: &mut Monitor, name: &str, from: u64, to: u64) -> Vec<Silent> {
        let mut silent = Vec::new();
        let mut t = from;
        while t < to {
            m.heartbeat(name, 1, ms(t));
            silent.extend(m.poll(ms(t), 1));
            t += 1050;
        }
        silent
    }

    /// Polls every 10 ms from `from` to `to`; the first silent member and
    /// when it was due.
    fn first_silent(m: &mut Monitor, from: u64, to: u64, multiplier: u32) -> Option<(u64, Silent)> {
        (from..=to).step_by(10).find_map(|t| m.poll(ms(t), multiplier).into_iter().next().map(|s| (t, s)))
    }

    #[test]
    fn the_watch_list_follows_the_ring() {
        let config = Config::lan(1);
        let mut m = monitor(&config);
        let mut t = table(6);
        m.sync(&t, ME, ms(0), t.ring_version(), |_| false);
        let ring = sorted(t.predecessors(ME, 2, |_| false));
        assert_eq!(watched(&m), ring);
        assert!(ring.iter().all(|n| m.on_ring(n)));
        // The application also watches a member off the ring.
        let off = (0..6).map(|i| format!("m{i}")).find(|n| !ring.contains(n)).unwrap();
        m.watch(t.get(&off).unwrap().name.clone(), 1, ms(0));
        assert_eq!(m.app_only().len(), 1);
        // One of the ring's dies: its successor on the ring takes its place,
        // and the application's watch stays.
        let gone = ring[0].clone();
        t.set(&gone, 0, Status::Dead, addr(0), ms(10));
        m.sync(&t, ME, ms(10), t.ring_version(), |_| false);
        let now_ring = sorted(t.predecessors(ME, 2, |_| false));
        assert!(!now_ring.contains(&gone));
        let mut expected = now_ring.clone();
        if !expected.contains(&off) {
            expected.push(off.clone());
        }
        expected.sort();
        assert_eq!(watched(&m), expected);
        assert!(m.level(&gone, ms(10)).is_none(), "its detector is dropped");
        // Unwatching the application's member leaves the ring's alone.
        m.unwatch(&off, ms(20));
        assert_eq!(watched(&m), now_ring);
        // Classic mode watches nobody on its own.
        let mut classic = monitor(&Config::classic_lan(1));
        classic.sync(&t, ME, ms(0), t.ring_version(), |_| false);
        assert!(watched(&classic).is_empty());
    }

    #[test]
    fn a_new_generation_restarts_the_detector() {
        let config = Config::lan(1);
        let mut m = monitor(&config);
        let mut t = table(3);
        m.sync(&t, ME, ms(0), t.ring_version(), |_| false);
        let name = t.predecessors(ME, 1, |_| false)[0].to_string();
        beat(&mut m, &name, 0, 10_000);
        let before = m.report(&name, ms(10_000)).unwrap();
        assert!(before.heard && before.heartbeats > 5);
        assert_eq!(before.generation, 1);
        // The member restarts: generation 2, in the same place on the ring.
        t.remove(&name);
        assert!(t.insert(&NodeId::new(name.as_str(), 2), addr(0), 0, Status::Alive, ms(10_000)));
        m.sync(&t, ME, ms(10_000), t.ring_version(), |_| false);
        let after = m.report(&name, ms(10_000)).unwrap();
        assert_eq!((after.generation, after.heard, after.mean), (2, false, None));
        // The old process's heartbeats are not the new one's.
        assert!(!m.heartbeat(&name, 1, ms(10_100)));
        assert!(m.heartbeat(&name, 2, ms(10_100)));
        assert!(m.report(&name, ms(10_100)).unwrap().heard);
    }

    #[test]
    fn a_silent_member_is_due_for_a_probe_at_the_suspect_level() {
        let config = Config::lan(1);
        let mut m = monitor(&config);
        let t = table(3);
        m.sync(&t, ME, ms(0), t.ring_version(), |_| false);
        let ring: Vec<String> = sorted(t.predecessors(ME, 2, |_| false));
        let (heard, never) = (&ring[0], &ring[1]);
        // One member heartbeats for 2.9 s; the other is never heard from.
        assert!(beat(&mut m, heard, 0, 2_900).is_empty());
        // The one never heard from is due at the first-heartbeat timeout.
        let (at, silent) = first_silent(&mut m, 2_900, 3_500, 1).unwrap();
        assert_eq!((at, &*silent.name, silent.level), (3_000, never.as_str(), None));
        // The other, once its level reaches 8: not a moment before.
        let crossing = m.crossing(heard).unwrap();
        let (at, silent) = first_silent(&mut m, 3_010, 10_000, 1).unwrap();
        assert_eq!(&*silent.name, heard.as_str());
        assert!(ms(at) >= crossing && ms(at) < crossing + Duration::from_millis(10), "{at} vs {crossing:?}");
        assert!(silent.level.unwrap() >= config.suspect_level);
        // Once due, it is not due again until it is looked at again.
        assert!(m.poll(ms(at + 500), 1).is_empty());
        m.recheck(heard, ms(at + 1_000));
        assert_eq!(m.poll(ms(at + 1_000), 1).len(), 1);
        // A heartbeat ends the silence: nothing is due after it.
        m.heartbeat(heard, 1, ms(at + 1_100));
        m.recheck(heard, ms(at + 1_200));
        assert!(m.poll(ms(at + 1_200), 1).iter().all(|s| &*s.name != heard.as_str()));
    }

    #[test]
    fn local_health_raises_the_bar_for_a_probe() {
        let config = Config::lan(1);
        let mut m = monitor(&config);
        let t = table(1);
        m.sync(&t, ME, ms(0), t.ring_version(), |_| false);
        let name = "m0";
        beat(&mut m, name, 0, 20_000);
        let last = m.last_heartbeat(name).unwrap();
        // With awareness 1 (multiplier 2), the member is due at level 16.
        let at_8 = m.crossing(name).unwrap();
        let at_16 = m.health.detector(&Arc::from(name)).unwrap().crossing(16.0).unwrap();
        assert!(at_16 > at_8);
        let from = (last.as_nanos() / 1_000_000) + 10;
        let (at, silent) = first_silent(&mut m, from, 60_000, 2).unwrap();
        assert!(ms(at) >= at_16 && ms(at) < at_16 + Duration::from_millis(10), "{at} vs {at_16:?}");
        assert!(silent.level.unwrap() >= 16.0);
    }

    #[test]
    fn after_this_nodes_own_stall_no_silence_is_acted_on_for_a_while() {
        let config = Config::lan(1);
        let mut m = monitor(&config);
        let t = table(1);
        m.sync(&t, ME, ms(0), t.ring_version(), |_| false);
        beat(&mut m, "m0", 0, 10_000);
        let crossing = m.crossing("m0").unwrap();
        // This node stalled for 4 s just before the member's level crossed:
        // nothing is acted on before as long again has passed.
        let stalled_at = crossing - Duration::from_millis(100);
        m.note_stall(stalled_at, Duration::from_secs(4));
        assert_eq!(m.quiet_until(), stalled_at + Duration::from_secs(4));
        let from = crossing.as_nanos() / 1_000_000;
        let (at, _) = first_silent(&mut m, from, 30_000, 1).unwrap();
        assert!(ms(at) >= m.quiet_until(), "probed at {at} ms, quiet until {:?}", m.quiet_until());
    }

    fn policies(m: &mut Monitor) -> Vec<(String, Change, Signal)> {
        m.take_notices()
            .into_iter()
            .filter_map(|n| match n {
                Notice::Policy { policy, change, signal, .. } => Some((policy, change, signal)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn application_policies_fire_after_their_dwell_for_application_watches_only() {
        let mut config = Config::lan(1);
        config.policies = vec!["slow=2,dwell=1s".parse().unwrap()];
        let mut m = monitor(&config);
        let t = table(2);
        m.sync(&t, ME, ms(0), t.ring_version(), |_| false);
        // Both members are on the ring; the application watches m0 too.
        m.watch(t.get("m0").unwrap().name.clone(), 1, ms(0));
        for s in 0..10u64 {
            for name in ["m0", "m1"] {
                m.heartbeat(name, 1, ms(s * 1050));
            }
            m.poll(ms(s * 1050), 1);
        }
        assert!(policies(&mut m).is_empty(), "no verdict while they heartbeat");
        let crossing = m.health.detector(&Arc::from("m0")).unwrap().crossing(2.0).unwrap();
        let at = |t: Instant| t.as_nanos() / 1_000_000;
        // Silent, but not for the dwell yet (polled as often as a runtime
        // would: a late poll is this node's own stall).
        for t in (9_460..at(crossing) + 990).step_by(10) {
            m.poll(ms(t), 1);
        }
        m.poll(crossing + Duration::from_millis(990), 1);
        let dwelling = policies(&mut m);
        assert!(dwelling.is_empty(), "dwelling: {dwelling:?}");
        m.poll(crossing + Duration::from_millis(1_000), 1);
        let fired = policies(&mut m);
        assert!(
            matches!(&fired[..], [(p, Change::Fired, Signal::Phi { level: Some(l) })] if p == "slow" && *l >= 2.0),
            "{fired:?} at {}",
            at(crossing)
        );
        // m1, silent as long, has fired too, but only on the ring: no notice.
        let m1 = m.report("m1", crossing + Duration::from_secs(1)).unwrap();
        assert!(matches!(m1.policies[1].state, PolicyState::Suspected { .. }));
        // Its standing in the report: fired, nothing left to wait.
        let report = m.report("m0", crossing + Duration::from_secs(1)).unwrap();
        let slow = &report.policies[1];
        assert_eq!((slow.name.as_str(), slow.threshold), ("slow", Some(2.0)));
        assert!(matches!(slow.state, PolicyState::Suspected { .. }));
        assert_eq!(slow.time_to_threshold, Some(Duration::ZERO));
        // A heartbeat recovers it, with the level just after.
        m.heartbeat("m0", 1, crossing + Duration::from_secs(2));
        m.poll(crossing + Duration::from_secs(2), 1);
        let recovered = policies(&mut m);
        assert!(matches!(&recovered[..], [(_, Change::Cleared, Signal::Phi { level: Some(l) })] if *l < 2.0));
    }

    #[test]
    fn an_ejection_fires_the_policies_that_listen_to_it() {
        let mut config = Config::lan(1);
        config.policies = vec!["route=2,ejection".parse().unwrap(), "drain=ejection".parse().unwrap()];
        let mut m = monitor(&config);
        let t = table(6);
        m.sync(&t, ME, ms(0), t.ring_version(), |_| false);
        let live: Vec<Arc<str>> = t.iter().map(|m| m.name.clone()).collect();
        m.watch(t.get("m0").unwrap().name.clone(), 1, ms(0));
        m.heartbeat("m0", 1, ms(0));
        // Nothing is spent before the first outcome.
        assert!(live.iter().all(|n| m.outlier_report(n).is_none()));
        let name = t.get("m0").unwrap().name.clone();
        for _ in 0..5 {
            let live = live.clone();
            assert!(m.record_outcome(ms(100), name.clone(), Outcome::Response(500), None, || live));
        }
        // Then every live member is followed, traffic or not.
        assert!(live.iter().all(|n| m.outlier_report(n).is_some()));
        let notices = m.take_notices();
        let reason = EjectReason::Consecutive5xx;
        assert!(matches!(&notices[0], Notice::Ejected { name, reason: r, .. } if &**name == "m0" && *r == reason));
        let fired: Vec<(&str, Change, Signal)> = notices[1..]
            .iter()
            .filter_map(|n| match n {
                Notice::Policy { policy, change, signal, .. } => Some((policy.as_str(), *change, *signal)),
                _ => None,
            })
            .collect();
        let ejected = Signal::Ejected { reason };
        assert_eq!(fired, [("route", Change::Fired, ejected), ("drain", Change::Fired, ejected)]);
        // The ejection-only policy has no threshold; both say they fired.
        let report = m.report("m0", ms(200)).unwrap();
        let (route, drain) = (&report.policies[1], &report.policies[2]);
        assert_eq!((route.threshold, drain.threshold, drain.time_to_threshold), (Some(2.0), None, None));
        assert!(matches!(route.state, PolicyState::Suspected { .. }) && route.time_to_threshold.is_some());
        assert_eq!(drain.state, PolicyState::Suspected { since: ms(100) });
        assert_eq!(drain.verdict, HealthVerdict::Fired(ejected));
        // A member the application does not watch is ejected without a verdict.
        let other = t.get("m3").unwrap().name.clone();
        for _ in 0..5 {
            let live = live.clone();
            m.record_outcome(ms(300), other.clone(), Outcome::Response(500), None, || live);
        }
        let notices = m.take_notices();
        assert!(notices.iter().all(|n| !matches!(n, Notice::Policy { .. })), "{notices:?}");
        // A member that dies is forgotten by outlier detection, and one that
        // restarts starts afresh: its ejection ends without a return.
        m.member_gone("m3", ms(400));
        assert!(m.outlier_report("m3").is_none());
        m.member_up(name.clone(), ms(400));
        assert!(m.outlier_report("m0").unwrap().ejected.is_none());
        assert!(m.take_notices().is_empty());
        assert_eq!(m.report("m0", ms(400)).unwrap().policies[2].verdict, HealthVerdict::Clear);
    }

    #[test]
    fn a_destructive_policy_is_withheld_beyond_the_brakes_share() {
        let mut config = Config::lan(1);
        config.policies = vec!["evict=2,destructive".parse().unwrap()];
        let mut m = monitor(&config);
        let t = table(10);
        m.sync(&t, ME, ms(0), t.ring_version(), |_| false);
        for i in 0..10 {
            m.watch(t.get(&format!("m{i}")).unwrap().name.clone(), 1, ms(0));
        }
        for s in 0..10u64 {
            for i in 0..10 {
                m.heartbeat(&format!("m{i}"), 1, ms(s * 1050));
            }
            m.poll(ms(s * 1050), 1);
        }
        // Four go silent at once: 30 % of ten may be evicted, the fourth
        // waits.
        for s in 10..20u64 {
            for i in 4..10 {
                m.heartbeat(&format!("m{i}"), 1, ms(s * 1050));
            }
            m.poll(ms(s * 1050), 1);
        }
        let evict = policies(&mut m);
        let count = |c: Change| evict.iter().filter(|(_, change, _)| *change == c).count();
        assert_eq!((count(Change::Fired), count(Change::Withheld)), (3, 1), "{evict:?}");
        let withheld = (0..4).filter_map(|i| m.report(&format!("m{i}"), ms(21_000))).filter(|r| {
            matches!(r.policies[1].state, PolicyState::Withheld { .. })
                && matches!(r.policies[1].verdict, HealthVerdict::Withheld(_))
        });
        assert_eq!(withheld.count(), 1);
    }
}
