//! Passive outlier detection: judging hosts by the outcomes of real
//! requests, as Envoy does, with no probes at all.
//!
//! Heartbeats miss gray failures (a host whose heartbeat thread is fine
//! while its requests fail or crawl); request outcomes miss a silent crash
//! when traffic is low. [`Outliers`] is the second signal: fed with each
//! request's [`Outcome`] (and optionally its latency), it ejects a host
//!
//! - **at once**, after consecutive server errors (5xx), consecutive gateway
//!   failures (502, 503, 504) or, when local-origin errors are split,
//!   consecutive local-origin failures (timeouts, failed connections);
//! - **at each interval tick**, from the last interval's statistics: a
//!   success rate far below the other hosts' (`mean − factor × σ`), a failure
//!   percentage over a bound, or (vigil's addition) a latency far above the
//!   median host's.
//!
//! An ejection lasts the base ejection time times the host's multiplier
//! (which grows with each ejection and decays while the host behaves),
//! capped, plus jitter; the host returns at the first tick after. Ejections
//! are capped to a percent of all hosts, and each detector's ejections
//! happen with its enforcement percent's probability. Semantics and
//! defaults follow Envoy's documentation and source (Envoy 1.31 and later):
//! [`OutlierConfig::envoy`]. Where Envoy leaves the order open (several
//! success-rate outliers in one tick, when the cap admits only some), the
//! worst host goes first, ties in the order hosts were first seen, so runs
//! are deterministic for a seed.
//!
//! Pure, like the rest of the crate: time is passed in, and the random
//! draws (enforcement, jitter) come from [`OutlierConfig::seed`].
//!
//! ```
//! use std::time::Duration;
//! use vigil_detector::Instant;
//! use vigil_detector::outlier::{EjectReason, OutlierConfig, OutlierEvent, Outcome, Outliers};
//!
//! let mut od = Outliers::new(OutlierConfig::vigil())?;
//! let t = Instant::from_secs(1);
//! for h in ["a", "b", "c"] {
//!     od.insert(h, t)?;
//! }
//! // Five 503s in a row from "b": ejected at once, for the base 30 s. (A
//! // gateway-failure streak is detected too, but Envoy does not enforce it
//! // by default.)
//! for _ in 0..5 {
//!     od.record("b", Outcome::Response(503), None, t)?;
//! }
//! let events = od.take_events();
//! assert!(matches!(
//!     &events[..],
//!     [
//!         OutlierEvent::NotEnforced { host: "b", reason: EjectReason::ConsecutiveGatewayFailure, .. },
//!         OutlierEvent::Ejected { host: "b", reason: EjectReason::Consecutive5xx, .. },
//!     ]
//! ));
//! assert!(od.is_ejected(&"b"));
//! // It returns at the first interval tick 30 s later.
//! let back = od.poll(Instant::from_secs(41));
//! assert!(back.iter().any(|e| matches!(e, OutlierEvent::Returned { host: "b", .. })));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod config;
mod host;
mod outcome;

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

pub use config::{LatencyConfig, OutlierConfig};
use host::{Bucket, Host};
pub use outcome::{Outcome, UnknownOutcome};

use crate::error::ConfigError;
use crate::time::Instant;

/// Why a host was ejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum EjectReason {
    /// Consecutive server errors.
    #[cfg_attr(feature = "serde", serde(rename = "consecutive-5xx"))]
    Consecutive5xx,
    /// Consecutive 502, 503 or 504.
    ConsecutiveGatewayFailure,
    /// Consecutive local-origin failures (split mode).
    ConsecutiveLocalOriginFailure,
    /// A success rate far below the other hosts'.
    SuccessRate,
    /// Local-origin success rate far below the others' (split mode).
    LocalOriginSuccessRate,
    /// A failure percentage over the threshold.
    FailurePercentage,
    /// Local-origin failure percentage over the threshold (split mode).
    LocalOriginFailurePercentage,
    /// Latency far above the median host's (vigil's).
    Latency,
}

impl EjectReason {
    /// Every reason, in declaration order (for metrics whose label sets
    /// exist before the first ejection).
    pub const ALL: [EjectReason; 8] = [
        EjectReason::Consecutive5xx,
        EjectReason::ConsecutiveGatewayFailure,
        EjectReason::ConsecutiveLocalOriginFailure,
        EjectReason::SuccessRate,
        EjectReason::LocalOriginSuccessRate,
        EjectReason::FailurePercentage,
        EjectReason::LocalOriginFailurePercentage,
        EjectReason::Latency,
    ];

    /// A short name: `consecutive-5xx`, `success-rate`, `latency`, ...
    pub fn name(self) -> &'static str {
        match self {
            EjectReason::Consecutive5xx => "consecutive-5xx",
            EjectReason::ConsecutiveGatewayFailure => "consecutive-gateway-failure",
            EjectReason::ConsecutiveLocalOriginFailure => "consecutive-local-origin-failure",
            EjectReason::SuccessRate => "success-rate",
            EjectReason::LocalOriginSuccessRate => "local-origin-success-rate",
            EjectReason::FailurePercentage => "failure-percentage",
            EjectReason::LocalOriginFailurePercentage => "local-origin-failure-percentage",
            EjectReason::Latency => "latency",
        }
    }
}

/// Something the detector decided.
#[derive(Debug, Clone, PartialEq)]
pub enum OutlierEvent<K> {
    /// The host is ejected until `until` (it returns at the first tick at or
    /// after it).
    Ejected {
        /// The host.
        host: K,
        /// Why.
        reason: EjectReason,
        /// When.
        at: Instant,
        /// The earliest return.
        until: Instant,
        /// Its ejection multiplier now.
        multiplier: u32,
    },
    /// The host is back in service.
    Returned {
        /// The host.
        host: K,
        /// When.
        at: Instant,
    },
    /// The host is an outlier, but not ejected: the enforcement draw said no.
    NotEnforced {
        /// The host.
        host: K,
        /// Why it is an outlier.
        reason: EjectReason,
        /// When.
        at: Instant,
    },
    /// The host is an outlier, but not ejected: too many hosts are.
    Overflow {
        /// The host.
        host: K,
        /// Why it is an outlier.
        reason: EjectReason,
        /// When.
        at: Instant,
    },
}

/// Why an outcome was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutlierError {
    /// [`OutlierConfig::max_hosts`] hosts are tracked already.
    Full {
        /// The limit.
        max_hosts: usize,
    },
}

impl std::fmt::Display for OutlierError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutlierError::Full { max_hosts } => write!(f, "outlier detection already tracks {max_hosts} hosts"),
        }
    }
}

impl std::error::Error for OutlierError {}

/// What the detector knows of one host.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct HostReport {
    /// The ejection in force: why, and the earliest return.
    pub ejected: Option<(EjectReason, Instant)>,
    /// Ejections over the host's life.
    pub ejections: u64,
    /// The ejection multiplier.
    pub multiplier: u32,
    /// Consecutive server errors, gateway failures and local-origin
    /// failures so far.
    pub consecutive: (u32, u32, u32),
    /// The last complete interval: success rate in percent and volume.
    pub success_rate: Option<(f64, u64)>,
    /// The last complete interval: geometric mean latency (ms) and timed
    /// requests.
    pub latency_ms: Option<(f64, u64)>,
}

/// Passive outlier detection over a set of hosts. See the module
/// documentation.
#[derive(Debug, Clone)]
pub struct Outliers<K> {
    config: OutlierConfig,
    hosts: Vec<Host<K>>,
    index: HashMap<K, usize>,
    ejected: usize,
    next_tick: Option<Instant>,
    events: Vec<OutlierEvent<K>>,
    events_dropped: u64,
    /// Insertion order, for ties.
    next_seq: u64,
    rng: u64,
}

/// Events kept until taken; beyond, new ones are counted and dropped (an
/// embedder that never takes them does not grow without bound).
pub const MAX_EVENTS: usize = 65_536;

/// splitmix64: the detector's own small generator, seeded from the config.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    crate::fnv::mix(*state)
}

impl<K: Hash + Eq + Clone> Outliers<K> {
    /// A detector with no hosts.
    ///
    /// # Errors
    ///
    /// The configuration's first invalid setting.
    pub fn new(config: OutlierConfig) -> Result<Outliers<K>, ConfigError> {
        config.validate()?;
        let rng = config.seed;
        Ok(Outliers {
            config,
            hosts: Vec::new(),
            index: HashMap::new(),
            ejected: 0,
            next_tick: None,
            events: Vec::new(),
            events_dropped: 0,
            next_seq: 0,
            rng,
        })
    }

    /// The settings.
    pub fn config(&self) -> &OutlierConfig {
        &self.config
    }

    /// Hosts tracked.
    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// Whether no host is tracked.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Hosts ejected now.
    pub fn ejected_count(&self) -> usize {
        self.ejected
    }

    /// Whether `host` is ejected now.
    pub fn is_ejected(&self, host: &K) -> bool {
        self.index.get(host).is_some_and(|&i| self.hosts[i].ejection.is_some())
    }

    /// What the detector knows of `host`.
    pub fn report(&self, host: &K) -> Option<HostReport> {
        let h = &self.hosts[*self.index.get(host)?];
        Some(HostReport {
            ejected: h.ejection.map(|e| (e.reason, e.until)),
            ejections: h.ejections,
            multiplier: h.multiplier,
            consecutive: (h.consecutive_5xx, h.consecutive_gateway, h.consecutive_local),
            success_rate: h.previous.rate(false),
            latency_ms: h.previous.latency(),
        })
    }

    /// Tracks `host` (a member of the cluster, whether or not it gets
    /// traffic: the ejection cap is a share of all hosts). Returns whether it
    /// is new. The first host starts the interval ticks at `now`.
    ///
    /// # Errors
    ///
    /// [`OutlierError::Full`] at [`OutlierConfig::max_hosts`].
    pub fn insert(&mut self, host: K, now: Instant) -> Result<bool, OutlierError> {
        if self.index.contains_key(&host) {
            return Ok(false);
        }
        if self.hosts.len() >= self.config.max_hosts {
            return Err(OutlierError::Full { max_hosts: self.config.max_hosts });
        }
        self.index.insert(host.clone(), self.hosts.len());
        self.next_seq += 1;
        self.hosts.push(Host::new(host, self.next_seq));
        self.next_tick.get_or_insert(now + self.config.interval);
        Ok(true)
    }

    /// Stops tracking `host` (it left the cluster). Returns whether it was
    /// tracked.
    pub fn remove(&mut self, host: &K) -> bool {
        let Some(i) = self.index.remove(host) else { return false };
        let gone = self.hosts.swap_remove(i);
        if gone.ejection.is_some() {
            self.ejected -= 1;
        }
        if let Some(moved) = self.hosts.get(i) {
            self.index.insert(moved.key.clone(), i);
        }
        true
    }

    /// Records the outcome of one request to `host` at `now`, with its
    /// latency if measured. A host not tracked yet is added. A
    /// consecutive-error ejection happens here, at once; its event is kept
    /// for [`Outliers::take_events`].
    ///
    /// # Errors
    ///
    /// [`OutlierError::Full`] for a new host at the limit.
    pub fn record(
        &mut self,
        host: K,
        outcome: Outcome,
        latency: Option<Duration>,
        now: Instant,
    ) -> Result<(), OutlierError> {
        let i = match self.index.get(&host) {
            Some(&i) => i,
            None => {
                self.insert(host, now)?;
                self.hosts.len() - 1
            }
        };
        let split = self.config.split_local_origin_errors;
        // What this outcome is, as Envoy counts it.
        let status = match (outcome, split) {
            (Outcome::Response(code), _) => Some(code),
            (Outcome::Timeout, false) => Some(504),
            (Outcome::ConnectFailed, false) => Some(503),
            (Outcome::Connected, false) => None,
            (Outcome::Timeout | Outcome::ConnectFailed, true) => {
                let h = &mut self.hosts[i];
                h.current.local_total += 1;
                h.consecutive_local = h.consecutive_local.saturating_add(1);
                if h.consecutive_local == self.config.consecutive_local_origin_failure {
                    self.consecutive(i, EjectReason::ConsecutiveLocalOriginFailure, now);
                }
                None
            }
            (Outcome::Connected, true) => {
                let h = &mut self.hosts[i];
                h.current.local_total += 1;
                h.current.local_success += 1;
                h.consecutive_local = 0;
                None
            }
        };
        if let Some(code) = status {
            let h = &mut self.hosts[i];
            h.current.total += 1;
            if (500..600).contains(&code) {
                let mut gateway_fired = false;
                if matches!(code, 502..=504) {
                    h.consecutive_gateway = h.consecutive_gateway.saturating_add(1);
                    gateway_fired = h.consecutive_gateway == self.config.consecutive_gateway_failure;
                } else {
                    h.consecutive_gateway = 0;
                }
                h.consecutive_5xx = h.consecutive_5xx.saturating_add(1);
                let fired_5xx = h.consecutive_5xx == self.config.consecutive_5xx;
                // Envoy judges the gateway streak first.
                if gateway_fired {
                    self.consecutive(i, EjectReason::ConsecutiveGatewayFailure, now);
                }
                if fired_5xx {
                    self.consecutive(i, EjectReason::Consecutive5xx, now);
                }
            } else {
                h.current.success += 1;
                h.consecutive_5xx = 0;
                h.consecutive_gateway = 0;
            }
        }
        // Latency of answered requests only: a timeout's is the timeout's.
        if let (Some(d), Outcome::Response(_)) = (latency, outcome) {
            let ms = (d.as_secs_f64() * 1e3).max(1e-3);
            let h = &mut self.hosts[i];
            h.current.timed += 1;
            h.current.log_latency += ms.ln();
        }
        Ok(())
    }

    /// A consecutive-error detector fired for host `i`: eject it unless it
    /// is already out, then start that streak again.
    fn consecutive(&mut self, i: usize, reason: EjectReason, now: Instant) {
        if self.hosts[i].ejection.is_some() {
            // Envoy leaves the streak as it is; success or return resets it.
            return;
        }
        self.eject(i, reason, now);
        let h = &mut self.hosts[i];
        match reason {
            EjectReason::Consecutive5xx => h.consecutive_5xx = 0,
            EjectReason::ConsecutiveGatewayFailure => h.consecutive_gateway = 0,
            _ => h.consecutive_local = 0,
        }
    }

    fn enforcing(&self, reason: EjectReason) -> u32 {
        let c = &self.config;
        match reason {
            EjectReason::Consecutive5xx => c.enforcing_consecutive_5xx,
            EjectReason::ConsecutiveGatewayFailure => c.enforcing_consecutive_gateway_failure,
            EjectReason::ConsecutiveLocalOriginFailure => c.enforcing_consecutive_local_origin_failure,
            EjectReason::SuccessRate => c.enforcing_success_rate,
            EjectReason::LocalOriginSuccessRate => c.enforcing_local_origin_success_rate,
            EjectReason::FailurePercentage => c.enforcing_failure_percentage,
            EjectReason::LocalOriginFailurePercentage => c.enforcing_failure_percentage_local_origin,
            EjectReason::Latency => c.latency.map_or(0, |l| l.enforcing),
        }
    }

    /// Whether one more host may be ejected: with it, the ejected hosts are
    /// at most the allowed percent of all hosts (or none is ejected and one
    /// always may be).
    fn may_eject_one_more(&self) -> bool {
        let total = self.hosts.len() as u128;
        let after = self.ejected as u128 + 1;
        after * 100 <= u128::from(self.config.max_ejection_percent.min(100)) * total
            || (self.config.always_eject_one_host && self.ejected == 0)
    }

    /// Host `i` is an outlier for `reason`: the cap, then the enforcement
    /// draw, then the ejection.
    fn eject(&mut self, i: usize, reason: EjectReason, now: Instant) {
        let key = self.hosts[i].key.clone();
        if !self.may_eject_one_more() {
            self.emit(OutlierEvent::Overflow { host: key, reason, at: now });
            return;
        }
        let enforcing = self.enforcing(reason);
        let enforced = enforcing >= 100 || (enforcing > 0 && next_random(&mut self.rng) % 100 < u64::from(enforcing));
        if !enforced {
            self.emit(OutlierEvent::NotEnforced { host: key, reason, at: now });
            return;
        }
        let jitter_ms = u64::try_from(self.config.max_ejection_time_jitter.as_millis()).unwrap_or(u64::MAX);
        let jitter = if jitter_ms == 0 {
            Duration::ZERO
        } else {
            Duration::from_millis(next_random(&mut self.rng) % jitter_ms.saturating_add(1))
        };
        let (base, max) = (self.config.base_ejection_time, self.config.max_ejection_time);
        let h = &mut self.hosts[i];
        h.eject(reason, now, base, max, jitter);
        let e = h.ejection.expect("just ejected");
        self.ejected += 1;
        let multiplier = h.multiplier;
        self.emit(OutlierEvent::Ejected { host: key, reason, at: now, until: e.until, multiplier });
    }

    /// Events dropped because [`MAX_EVENTS`] were waiting to be taken.
    pub fn events_dropped(&self) -> u64 {
        self.events_dropped
    }

    fn emit(&mut self, e: OutlierEvent<K>) {
        // Ejections and returns carry state a consumer follows: never
        // dropped (there is at most one of each per host and tick). Only the
        // diagnostics (overflow, not enforced) are bounded.
        let keeps_state = matches!(e, OutlierEvent::Ejected { .. } | OutlierEvent::Returned { .. });
        if keeps_state || self.events.len() < MAX_EVENTS {
            self.events.push(e);
        } else {
            self.events_dropped += 1;
        }
    }

    /// The events since the last call, oldest first.
    pub fn take_events(&mut self) -> Vec<OutlierEvent<K>> {
        std::mem::take(&mut self.events)
    }

    /// When [`Outliers::poll`] next has work: the next interval tick.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.next_tick
    }

    /// Runs every interval tick due by `now`, each at its own time (hosts
    /// return, statistics are judged, multipliers decay), and returns the
    /// events since the last call (those of [`Outliers::record`] included).
    ///
    /// However far `now` is past the next tick, the work is bounded: the
    /// first due tick judges the last interval in full; the ticks after it
    /// have no requests to judge, so their returns and multiplier decays are
    /// applied at once, each at its tick's time.
    pub fn poll(&mut self, now: Instant) -> Vec<OutlierEvent<K>> {
        let interval = self.config.interval;
        if let Some(t) = self.next_tick.filter(|&t| t <= now) {
            self.tick(t);
            // Ticks after the first: as many as fit by `now`.
            let more = (now - t).as_nanos() / interval.as_nanos();
            let more = u32::try_from(more).unwrap_or(u32::MAX);
            if more > 0 {
                self.skip_quiet_ticks(t, more);
            }
            let last = interval.checked_mul(more).and_then(|d| t.checked_add(d));
            // Past the end of time there are no more ticks.
            self.next_tick = last.and_then(|l| l.checked_add(interval));
        }
        self.take_events()
    }

    /// The `k` ticks after the one at `t1`, none of which has requests to
    /// judge (nothing was recorded since `t1`): hosts whose ejection ends
    /// return at the first of them at or after its end, and multipliers
    /// decay once for each of them that a host spends back for a whole
    /// interval, as `k` calls of [`Outliers::tick`] would do.
    fn skip_quiet_ticks(&mut self, t1: Instant, k: u32) {
        let i_ns = self.config.interval.as_nanos();
        let tick =
            |j: u32| t1.saturating_add(Duration::from_nanos(u64::try_from(u128::from(j) * i_ns).unwrap_or(u64::MAX)));
        // The index of the first of the ticks t1 + j·I (j ≥ 1) at or after `at`.
        let first_at_or_after = |at: Instant| -> u128 {
            let d = at.saturating_duration_since(t1).as_nanos();
            d.div_ceil(i_ns).max(1)
        };
        let mut returns = Vec::new();
        for h in &mut self.hosts {
            h.previous = Bucket::default();
            let mut decays = 0u128;
            match h.ejection {
                Some(e) => {
                    let j = first_at_or_after(e.until);
                    if j <= u128::from(k) {
                        let at = tick(j as u32);
                        h.uneject(at);
                        returns.push((at, h.seq, h.key.clone()));
                        decays = u128::from(k) - j;
                    }
                }
                None => {
                    if let Some(u) = h.last_unejected {
                        let j0 = first_at_or_after(u.saturating_add(self.config.interval));
                        decays = (u128::from(k) + 1).saturating_sub(j0);
                    }
                }
            }
            h.multiplier = h.multiplier.saturating_sub(u32::try_from(decays).unwrap_or(u32::MAX));
        }
        returns.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        for (at, _, host) in returns {
            self.ejected -= 1;
            self.emit(OutlierEvent::Returned { host, at });
        }
    }

    /// One interval tick at `t`, in Envoy's order.
    fn tick(&mut self, t: Instant) {
        // Returns, then the interval's counts become the judged ones.
        for i in 0..self.hosts.len() {
            let h = &mut self.hosts[i];
            if h.ejection.is_some_and(|e| e.until <= t) {
                h.uneject(t);
                self.ejected -= 1;
                let host = h.key.clone();
                self.emit(OutlierEvent::Returned { host, at: t });
            }
            let h = &mut self.hosts[i];
            h.previous = std::mem::take(&mut h.current);
        }
        self.statistics(t, false);
        if self.config.split_local_origin_errors {
            self.statistics(t, true);
        }
        self.latency(t);
        // Multipliers decay for hosts back for at least an interval.
        let interval = self.config.interval;
        for h in &mut self.hosts {
            if h.ejection.is_none() && h.multiplier > 0 && h.last_unejected.is_some_and(|u| t - u >= interval) {
                h.multiplier -= 1;
            }
        }
    }

    /// Success-rate and failure-percentage ejections over the last interval
    /// (of the hosts' own responses, or of local-origin results).
    fn statistics(&mut self, t: Instant, local: bool) {
        let c = &self.config;
        let total = self.hosts.len() as u64;
        if total < u64::from(c.success_rate_minimum_hosts) && total < u64::from(c.failure_percentage_minimum_hosts) {
            return;
        }
        let (sr_volume, fp_volume) =
            (u64::from(c.success_rate_request_volume), u64::from(c.failure_percentage_request_volume));
        let rates: Vec<(usize, f64, u64)> = (0..self.hosts.len())
            .filter(|&i| self.hosts[i].ejection.is_none())
            .filter_map(|i| self.hosts[i].previous.rate(local).map(|(r, v)| (i, r, v)))
            .collect();
        let sr: Vec<(usize, f64)> = rates.iter().filter(|r| r.2 >= sr_volume).map(|r| (r.0, r.1)).collect();
        let fp: Vec<(usize, f64)> = rates.iter().filter(|r| r.2 >= fp_volume).map(|r| (r.0, r.1)).collect();
        if !sr.is_empty() && sr.len() as u64 >= u64::from(c.success_rate_minimum_hosts) {
            let n = sr.len() as f64;
            let mean = sr.iter().map(|r| r.1).sum::<f64>() / n;
            let var = sr.iter().map(|r| (r.1 - mean) * (r.1 - mean)).sum::<f64>() / n;
            let threshold = (mean - c.success_rate_stdev_factor * var.sqrt()).min(mean - c.success_rate_minimum_drop);
            let mut outliers: Vec<(usize, f64)> = sr.into_iter().filter(|r| r.1 < threshold).collect();
            outliers.sort_by(|a, b| a.1.total_cmp(&b.1).then(self.hosts[a.0].seq.cmp(&self.hosts[b.0].seq)));
            let reason = if local { EjectReason::LocalOriginSuccessRate } else { EjectReason::SuccessRate };
            for (i, _) in outliers {
                self.eject(i, reason, t);
            }
        }
        let c = &self.config;
        if !fp.is_empty() && fp.len() as u64 >= u64::from(c.failure_percentage_minimum_hosts) {
            let bound = f64::from(c.failure_percentage_threshold);
            let mut outliers: Vec<(usize, f64)> = fp.into_iter().filter(|r| 100.0 - r.1 >= bound).collect();
            outliers.sort_by(|a, b| a.1.total_cmp(&b.1).then(self.hosts[a.0].seq.cmp(&self.hosts[b.0].seq)));
            let reason = if local { EjectReason::LocalOriginFailurePercentage } else { EjectReason::FailurePercentage };
            for (i, _) in outliers {
                // Not twice in one tick.
                if self.hosts[i].ejection.is_none() {
                    self.eject(i, reason, t);
                }
            }
        }
    }

    /// Latency ejections over the last interval (vigil's).
    fn latency(&mut self, t: Instant) {
        let Some(l) = self.config.latency else { return };
        let mut typical: Vec<(usize, f64)> = (0..self.hosts.len())
            .filter(|&i| self.hosts[i].ejection.is_none())
            .filter_map(|i| {
                self.hosts[i]
                    .previous
                    .latency()
                    .filter(|&(_, n)| n >= u64::from(l.request_volume))
                    .map(|(ms, _)| (i, ms))
            })
            .collect();
        if typical.is_empty() || (typical.len() as u64) < u64::from(l.minimum_hosts) {
            return;
        }
        let mut sorted: Vec<f64> = typical.iter().map(|x| x.1).collect();
        sorted.sort_by(f64::total_cmp);
        let mid = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 { sorted[mid] } else { (sorted[mid - 1] + sorted[mid]) / 2.0 };
        typical.retain(|x| x.1 >= l.factor * median);
        typical.sort_by(|a, b| b.1.total_cmp(&a.1).then(self.hosts[a.0].seq.cmp(&self.hosts[b.0].seq)));
        for (i, _) in typical {
            self.eject(i, EjectReason::Latency, t);
        }
    }
}

impl Bucket {
    #[cfg(test)]
    fn of(total: u64, success: u64) -> Bucket {
        Bucket { total, success, ..Bucket::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_listed_once_with_its_own_name() {
        let names: std::collections::BTreeSet<&str> = EjectReason::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names.len(), EjectReason::ALL.len());
        // A reason added to the enum but not to ALL fails to compile here.
        for r in EjectReason::ALL {
            match r {
                EjectReason::Consecutive5xx
                | EjectReason::ConsecutiveGatewayFailure
                | EjectReason::ConsecutiveLocalOriginFailure
                | EjectReason::SuccessRate
                | EjectReason::LocalOriginSuccessRate
                | EjectReason::FailurePercentage
                | EjectReason::LocalOriginFailurePercentage
                | EjectReason::Latency => {}
            }
        }
    }

    #[test]
    fn a_bucket_gives_rate_and_geometric_mean() {
        assert_eq!(Bucket::of(4, 3).rate(false), Some((75.0, 4)));
        assert_eq!(Bucket::default().rate(false), None);
        let b = Bucket { timed: 2, log_latency: (10f64).ln() + (1000f64).ln(), ..Bucket::default() };
        let (ms, n) = b.latency().unwrap();
        assert!((ms - 100.0).abs() < 1e-9 && n == 2, "{ms}");
    }

    #[test]
    fn the_generator_is_seeded() {
        let (mut a, mut b) = (7u64, 7u64);
        let xs: Vec<u64> = (0..4).map(|_| next_random(&mut a)).collect();
        assert_eq!(xs, (0..4).map(|_| next_random(&mut b)).collect::<Vec<_>>());
        assert_ne!(xs[0], xs[1]);
    }
}
