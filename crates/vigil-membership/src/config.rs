//! Protocol configuration: plain data, validated once, with LAN and WAN
//! presets.

use std::fmt;
use std::time::Duration;

/// How members are monitored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Each member is watched by `observers` members chosen from a ring,
    /// fed by heartbeats and judged by a φ detector; a crossing triggers
    /// direct and indirect probes before any accusation.
    Phi,
    /// SWIM as memberlist runs it: every probe interval, probe the next
    /// member of a shuffled round-robin list; no φ.
    Classic,
}

/// Protocol settings. Build from a preset and adjust fields:
///
/// ```
/// use std::time::Duration;
/// let mut c = vigil_membership::Config::lan(7);
/// c.observers = 3;
/// c.validate()?;
/// # Ok::<(), vigil_membership::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// Cluster id carried in every packet; packets of other clusters are
    /// rejected.
    pub cluster: u64,
    /// Monitoring strategy.
    pub mode: Mode,
    /// φ mode: heartbeat interval to each observer. LAN 500 ms.
    pub heartbeat_interval: Duration,
    /// φ mode: observers per member (K). LAN 5.
    pub observers: usize,
    /// φ mode: the φ level (Akka's logistic φ) at which an observer starts
    /// probing a silent member. LAN 8.
    pub suspect_phi: f64,
    /// φ mode: the detector's σ floor. LAN 50 ms.
    pub min_std_dev: Duration,
    /// φ mode: samples per detector. LAN 100.
    pub window: usize,
    /// Classic mode: probe interval. LAN 1 s (memberlist).
    pub probe_interval: Duration,
    /// How long a probe waits for an answer (direct, then indirect). LAN
    /// 500 ms (memberlist).
    pub probe_timeout: Duration,
    /// Members asked to probe indirectly. LAN 3 (memberlist).
    pub indirect_checks: usize,
    /// Suspicion timeout before any confirmation: φ mode's maximum. LAN 10 s.
    pub suspicion_max: Duration,
    /// Suspicion timeout once enough independent observers confirm: φ
    /// mode's minimum. LAN 2.5 s (longer than a 3 s pause minus the time φ
    /// takes to notice it).
    pub suspicion_min: Duration,
    /// Classic mode: memberlist's `SuspicionMult` (4) and
    /// `SuspicionMaxTimeoutMult` (6).
    pub suspicion_mult: u32,
    /// See [`Config::suspicion_mult`].
    pub suspicion_max_timeout_mult: u32,
    /// Gossip interval. LAN 200 ms.
    pub gossip_interval: Duration,
    /// Members gossiped to per interval. LAN 3.
    pub gossip_nodes: usize,
    /// Retransmissions of an update: `retransmit_mult × ⌈log10(n + 1)⌉`.
    /// LAN 4.
    pub retransmit_mult: u32,
    /// Push-pull anti-entropy interval (scaled up beyond 32 members as
    /// memberlist does). LAN 30 s.
    pub push_pull_interval: Duration,
    /// How long dead members still receive gossip; tombstones are kept four
    /// times as long. LAN 30 s.
    pub dead_retention: Duration,
    /// How often a node re-announces itself to one member it believes dead
    /// (a push-pull), so a partition heals and an isolated node comes back.
    /// LAN 5 s.
    pub reannounce_interval: Duration,
    /// Classic mode: pick probe targets at random each period instead of
    /// from a shuffled round-robin list (SWIM's original analysis).
    pub random_probe_targets: bool,
    /// Start the periodic timers at random offsets (default), or all at
    /// once (for analyses that assume synchronised rounds).
    pub stagger_timers: bool,
    /// The most tombstones (dead or left members) kept. LAN 10,000.
    pub max_tombstones: usize,
    /// Lifeguard's local health: the highest awareness score (probe timeouts
    /// and the φ bar scale with `1 + score`). LAN 7 (memberlist's 8 − 1).
    pub max_awareness: u32,
    /// A timer that fires this much later than asked means the node itself
    /// stalled: it raises its awareness and makes no accusation for as long
    /// as it was stalled. LAN 200 ms.
    pub local_stall: Duration,
}

impl Config {
    /// LAN defaults (memberlist's LAN constants where they apply).
    pub fn lan(cluster: u64) -> Config {
        Config {
            cluster,
            mode: Mode::Phi,
            heartbeat_interval: Duration::from_millis(500),
            observers: 5,
            suspect_phi: 8.0,
            min_std_dev: Duration::from_millis(50),
            window: 100,
            probe_interval: Duration::from_secs(1),
            probe_timeout: Duration::from_millis(500),
            indirect_checks: 3,
            suspicion_max: Duration::from_secs(10),
            suspicion_min: Duration::from_millis(2500),
            suspicion_mult: 4,
            suspicion_max_timeout_mult: 6,
            gossip_interval: Duration::from_millis(200),
            gossip_nodes: 3,
            retransmit_mult: 4,
            push_pull_interval: Duration::from_secs(30),
            dead_retention: Duration::from_secs(30),
            reannounce_interval: Duration::from_secs(5),
            random_probe_targets: false,
            stagger_timers: true,
            max_tombstones: 10_000,
            max_awareness: 7,
            local_stall: Duration::from_millis(200),
        }
    }

    /// WAN defaults: memberlist's WAN overrides (probe 5 s / 3 s, gossip
    /// 500 ms to 4, push-pull 60 s, suspicion multiplier 6) and a slower φ
    /// (2 s heartbeats, 200 ms σ floor, suspicion 8–40 s).
    pub fn wan(cluster: u64) -> Config {
        Config {
            heartbeat_interval: Duration::from_secs(2),
            min_std_dev: Duration::from_millis(200),
            probe_interval: Duration::from_secs(5),
            probe_timeout: Duration::from_secs(3),
            suspicion_max: Duration::from_secs(40),
            suspicion_min: Duration::from_secs(8),
            suspicion_mult: 6,
            gossip_interval: Duration::from_millis(500),
            gossip_nodes: 4,
            push_pull_interval: Duration::from_secs(60),
            dead_retention: Duration::from_secs(60),
            ..Config::lan(cluster)
        }
    }

    /// SWIM as memberlist runs it on a LAN: classic mode with memberlist's
    /// LAN constants.
    pub fn classic_lan(cluster: u64) -> Config {
        Config { mode: Mode::Classic, ..Config::lan(cluster) }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = |name: &'static str, d: Duration| {
            if d.is_zero() { Err(ConfigError { field: name, reason: "must be more than zero".into() }) } else { Ok(()) }
        };
        positive("heartbeat_interval", self.heartbeat_interval)?;
        positive("probe_interval", self.probe_interval)?;
        positive("probe_timeout", self.probe_timeout)?;
        positive("suspicion_min", self.suspicion_min)?;
        positive("gossip_interval", self.gossip_interval)?;
        positive("push_pull_interval", self.push_pull_interval)?;
        positive("reannounce_interval", self.reannounce_interval)?;
        let day = Duration::from_secs(86_400);
        for (name, d) in [
            ("heartbeat_interval", self.heartbeat_interval),
            ("probe_interval", self.probe_interval),
            ("probe_timeout", self.probe_timeout),
            ("suspicion_max", self.suspicion_max),
            ("gossip_interval", self.gossip_interval),
            ("push_pull_interval", self.push_pull_interval),
            ("dead_retention", self.dead_retention),
            ("reannounce_interval", self.reannounce_interval),
            ("local_stall", self.local_stall),
            ("min_std_dev", self.min_std_dev),
        ] {
            if d > day {
                return Err(ConfigError { field: name, reason: format!("must be at most a day, got {d:?}") });
            }
        }
        if self.suspicion_max_timeout_mult > 100 || self.suspicion_mult > 100 || self.retransmit_mult > 100 {
            return Err(ConfigError { field: "suspicion_mult", reason: "multipliers must be at most 100".into() });
        }
        positive("min_std_dev", self.min_std_dev)?;
        if self.suspicion_max < self.suspicion_min {
            return Err(ConfigError { field: "suspicion_max", reason: "must be at least suspicion_min".into() });
        }
        if self.observers == 0 || self.observers > 64 {
            return Err(ConfigError { field: "observers", reason: format!("must be 1 to 64, got {}", self.observers) });
        }
        if !(self.suspect_phi.is_finite() && self.suspect_phi > 0.0) {
            return Err(ConfigError {
                field: "suspect_phi",
                reason: format!("must be a positive number, got {}", self.suspect_phi),
            });
        }
        if self.window < 2 || self.window > 10_000 {
            return Err(ConfigError { field: "window", reason: format!("must be 2 to 10000, got {}", self.window) });
        }
        if self.indirect_checks > 16 || self.gossip_nodes == 0 || self.gossip_nodes > 16 {
            return Err(ConfigError {
                field: "gossip_nodes",
                reason: "indirect_checks ≤ 16 and gossip_nodes 1 to 16".into(),
            });
        }
        if self.retransmit_mult == 0 || self.suspicion_mult < 1 || self.suspicion_max_timeout_mult < 1 {
            return Err(ConfigError { field: "retransmit_mult", reason: "multipliers must be at least 1".into() });
        }
        if self.max_awareness > 64 {
            return Err(ConfigError { field: "max_awareness", reason: "must be at most 64".into() });
        }
        Ok(())
    }
}

/// A configuration field that is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The field.
    pub field: &'static str,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid membership configuration: {}: {}", self.field, self.reason)
    }
}

impl std::error::Error for ConfigError {}
