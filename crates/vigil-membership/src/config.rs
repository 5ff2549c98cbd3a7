//! Protocol configuration: plain data, validated once, with presets.
//!
//! | preset | monitoring | steady load at N = 100 | crash → dead (median) |
//! |---|---|---|---|
//! | [`Config::lan`] | φ, 2 observers, 1.05 s heartbeats | 1.93 messages per member-second, under memberlist's 2 | about 4 s |
//! | [`Config::lan_fast`] | φ, 2 observers, 525 ms heartbeats | 3.83 messages per member-second | about 2.2 s |
//! | [`Config::wan`] | φ, 2 observers, 5 s heartbeats | 0.4 heartbeats per member-second, plus anti-entropy | |
//! | [`Config::classic_lan`] | SWIM as memberlist runs it | 2.02 messages per member-second | about 10 s |
//!
//! The crate README has the measured figures and the commands that produced
//! them.

use std::fmt;
use std::time::Duration;

pub use vigil_detector::health::HealthPolicy;
use vigil_detector::{AkkaConfig, ModelConfig};

/// How members are monitored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Each member is watched by `observers` members chosen from a ring,
    /// fed by heartbeats and judged by a detector
    /// ([`Config::detector`]); a crossing of [`Config::suspect_level`]
    /// triggers direct and indirect probes before any accusation.
    Phi,
    /// SWIM as memberlist runs it: every probe interval, probe the next
    /// member of a shuffled round-robin list; no heartbeats.
    Classic,
}

/// Protocol settings. Build from a preset and adjust fields:
///
/// ```
/// use std::time::Duration;
/// let mut c = vigil_membership::Config::lan(7);
/// c.observers = 3;
/// c.validate()?;
/// // The preset's φ timing for another heartbeat period, scaled together.
/// let c = vigil_membership::Config::lan(7).with_heartbeat_interval(Duration::from_millis(2100));
/// assert_eq!(c.suspicion_min, Duration::from_secs(5));
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
    /// φ mode: heartbeat interval to each observer. LAN 1.05 s.
    pub heartbeat_interval: Duration,
    /// φ mode: observers per member (K). LAN 2.
    pub observers: usize,
    /// φ mode: the detector each observer runs per watched member: any model
    /// of `vigil_detector` (the lab can recommend one for your network). Its
    /// bootstrap estimate, if the model has one, should be the heartbeat
    /// interval. LAN: Akka's φ with a 50 ms σ floor, 100 samples, no
    /// acceptable pause.
    pub detector: ModelConfig,
    /// φ mode: the detector level at which an observer starts probing a
    /// silent member, in the model's own units (φ for the φ models). Scaled
    /// by `1 + awareness` (local health). LAN 8.
    pub suspect_level: f64,
    /// φ mode: a watched member never heard from is probed this long after
    /// it became watched (Akka's `expected-response-after`), so a member
    /// that crashed before its first heartbeat is still found out. LAN 3 s.
    pub first_heartbeat_timeout: Duration,
    /// Classic mode: probe interval; φ mode: how long after a probe that was
    /// answered a still-silent member is probed again. LAN 1 s (memberlist).
    pub probe_interval: Duration,
    /// How long a probe waits for an answer (direct, then indirect), scaled
    /// by `1 + awareness`. LAN 500 ms (memberlist).
    pub probe_timeout: Duration,
    /// Members asked to probe indirectly. LAN 3 (memberlist).
    pub indirect_checks: usize,
    /// When a probe goes indirect, also ping the target over a stream (TCP,
    /// in `vigil-net`) beside the indirect requests: a stream's
    /// retransmissions get through loss that drops the datagrams of all of
    /// them, and its answer settles the probe as a direct ack does. It
    /// costs one connection per probe that went indirect, none in a
    /// healthy cluster. LAN on (memberlist's TCP ping, `DisableTcpPings`
    /// off).
    pub stream_ping: bool,
    /// Send every message as a stream message, none as a datagram: for
    /// networks that block UDP. Every node accepts any message on a
    /// stream, so a cluster can mix both. Each message is a connection of
    /// its own: more packets and CPU than datagrams. Default off.
    pub stream_only: bool,
    /// φ mode: the accusers' suspicion timeout before any confirmation, and
    /// how long a member that only heard of a suspicion waits for their
    /// verdict (or a refutation) before probing the suspect itself. LAN 10 s.
    pub suspicion_max: Duration,
    /// φ mode: suspicion timeout once enough independent observers confirm.
    /// LAN 2.5 s, longer than a 3 s pause minus the time φ and a probe take
    /// to notice it, so a paused member refutes before it is declared dead.
    pub suspicion_min: Duration,
    /// Classic mode: memberlist's `SuspicionMult` (4): the minimum suspicion
    /// timeout is `suspicion_mult × max(1, log10 n) × probe_interval`.
    pub suspicion_mult: u32,
    /// Classic mode: memberlist's `SuspicionMaxTimeoutMult` (6): the maximum
    /// is this many times the minimum.
    pub suspicion_max_timeout_mult: u32,
    /// Confirmations of one suspicion that are passed on (re-gossiped); more
    /// still shorten the local timeout but are not forwarded. LAN 2
    /// (memberlist's default number of expected confirmations).
    pub max_confirmations_gossiped: u32,
    /// Gossip interval. LAN 200 ms.
    pub gossip_interval: Duration,
    /// Members gossiped to per interval. LAN 3.
    pub gossip_nodes: usize,
    /// Retransmissions of an update: `retransmit_mult × ⌈log10(n + 1)⌉`.
    /// LAN 4.
    pub retransmit_mult: u32,
    /// Push-pull anti-entropy interval (scaled up beyond 32 members as
    /// memberlist does). A member that learns its view lacks members (a
    /// stranger wrote to it, or an exchange brought members it did not
    /// know) brings its next push-pull forward to
    /// [`Config::introduction_window`] later, but never sooner than this
    /// interval, unscaled, after its last one
    /// ([`Stats::push_pulls_brought_forward`](crate::Stats::push_pulls_brought_forward)).
    /// LAN 30 s.
    pub push_pull_interval: Duration,
    /// Start each periodic push-pull with the digest of this node's view
    /// ([`Message::Digest`](crate::Message::Digest)): the views themselves
    /// are exchanged only when the receiver's digest differs, so a steady
    /// cluster's anti-entropy costs one small stream message per period.
    /// Push-pulls brought forward to catch up start with a digest too;
    /// joins and reconnection attempts still send whole views. Builds before the digest drop it (their exchanges with this
    /// node then happen only when they start them), so turn it off while
    /// such members run. LAN on; [`Config::classic_lan`] off (memberlist
    /// exchanges whole views).
    pub push_pull_digest: bool,
    /// The most bytes of members one push-pull carries: a larger view goes
    /// out as several push-pulls (pages), each merged on arrival, only the
    /// first asking for the answer, so no view needs one frame of its own
    /// size and a receiver holds one page at a time. A member of a build
    /// before pages takes each page as a push-pull of its own, which is
    /// what it is. At least 1 KiB (a page holds at least one member of the
    /// largest kind); at most [`MAX_STREAM`](crate::wire::MAX_STREAM). LAN
    /// 60 KiB (about 2,000 members without tags), so that a page with its
    /// seal and frame header stays under 64 KiB; [`Config::classic_lan`]
    /// one page always (memberlist sends its state as one message).
    pub view_page: usize,
    /// How long dead members still receive gossip (so a member declared
    /// dead by mistake hears of it and refutes). LAN 30 s.
    pub dead_retention: Duration,
    /// How often a node tries to reconnect to one member it believes dead,
    /// chosen at random: a short push-pull (this node, and the death it
    /// believes), so a partition of any length heals and an isolated node
    /// comes back. One attempt per interval, whatever the number of dead
    /// members. LAN 10 s (Serf's `reconnect_interval`: 30 s).
    pub reconnect_interval: Duration,
    /// How long a dead member is still tried ([`Config::reconnect_interval`])
    /// and kept as a tombstone; then it is reaped ([`Event::Reaped`](crate::Event::Reaped)).
    /// LAN 24 h (Serf's `reconnect_timeout`).
    pub reconnect_timeout: Duration,
    /// How long a member that left is kept as a tombstone (so a late rumour
    /// of it alive cannot bring it back); then it is reaped. LAN 24 h
    /// (Serf's `tombstone_timeout`).
    pub tombstone_timeout: Duration,
    /// New members one source may propose per
    /// [`Config::introduction_window`], where a source is an address that
    /// is not the known address of the member its packets claim to come
    /// from (a stranger): each proposal is checked with a ping before the
    /// member is admitted, and proposals beyond the budget are refused and
    /// counted ([`Stats::introductions_refused`](crate::Stats::introductions_refused)).
    /// Members vouched for by a known member at its own address, and the
    /// answers to this node's own push-pulls, are not limited. LAN 32.
    pub introductions_per_source: u32,
    /// The window of [`Config::introductions_per_source`]: the budget
    /// refills at that many per window. LAN 10 s.
    pub introduction_window: Duration,
    /// Classic mode: pick probe targets at random each period instead of
    /// from a shuffled round-robin list (SWIM's original analysis).
    pub random_probe_targets: bool,
    /// Start the periodic timers at random offsets (default), or all at
    /// once (for analyses that assume synchronised rounds).
    pub stagger_timers: bool,
    /// Graded policies the application sets on the members it watches
    /// ([`Node::watch`](crate::Node::watch)), judged beside monitoring's own
    /// `probe` policy by one [`vigil_detector::health::Health`], with the
    /// same detectors and the same outlier detection ([`Config::outliers`]):
    /// each reports [`Event::Policy`](crate::Event::Policy) when it fires
    /// for a watched member (its level stayed at or above its threshold for
    /// its dwell, or outlier detection ejected the member, as the policy
    /// listens), and again when the member recovers. A destructive policy
    /// fires for at most 30 % of the members judged at once (at least
    /// one); beyond, its verdicts are withheld (the brake). Text form:
    /// `route=2,ejection`, `remove=8,dwell=30s,destructive`, `drain=ejection`
    /// ([`HealthPolicy`]'s `FromStr`). Names must be distinct and not `probe`.
    /// Default: none.
    pub policies: Vec<HealthPolicy>,
    /// The most tombstones (dead or left members) kept. LAN 10,000.
    pub max_tombstones: usize,
    /// Lifeguard's local health: the highest awareness score (probe timeouts
    /// and the suspect level scale with `1 + score`). LAN 7 (memberlist's
    /// 8 − 1).
    pub max_awareness: u32,
    /// A timer handled this much later than it was due means the node itself
    /// stalled: it raises its awareness and makes no accusation for as long
    /// as it was stalled (at least a probe timeout). LAN 200 ms.
    pub local_stall: Duration,
    /// The largest datagram this node sends, in bytes, before any seal: its
    /// messages and piggybacked rumours fit in it. Lower it so that the seal
    /// (43 bytes) and the IP and UDP headers fit under the path MTU (1,400
    /// leaves room for both under 1,500; 1,193 fits IPv6's minimum MTU of
    /// 1,280). Every node accepts datagrams up to
    /// [`MAX_DATAGRAM_ACCEPTED`](crate::wire::MAX_DATAGRAM_ACCEPTED), so
    /// members with different budgets interoperate. 1,024 to 65,000; default
    /// [`MAX_DATAGRAM`](crate::wire::MAX_DATAGRAM) (1,400).
    pub datagram_budget: usize,
    /// Heartbeat arrival times kept per watched member, the newest ones
    /// ([`Node::arrivals`](crate::Node::arrivals)): a recording of the
    /// network that the lab replays to choose a detector and a threshold.
    /// 0 (the default) records nothing; at most 1,000,000 (8 bytes each).
    pub recorded_arrivals: usize,
    /// Outlier detection over the outcomes of the application's requests to
    /// members ([`Node::record_outcome`](crate::Node::record_outcome)): idle
    /// until the first outcome. Default
    /// [`OutlierConfig::vigil`](vigil_detector::outlier::OutlierConfig::vigil).
    pub outliers: vigil_detector::outlier::OutlierConfig,
    /// Who survives a partition: [`Strategy::Auto`](crate::downing::Strategy::Auto)
    /// (the default) declares a member dead when its suspicion runs out,
    /// on each side of a partition, so both sides carry on (unsafe for
    /// anything exclusive); a strategy such as `keep-majority` makes such a
    /// member unreachable instead and decides, once the picture holds
    /// still, which side is downed. See [`Downing`](crate::downing::Downing).
    pub downing: crate::downing::Downing,
    /// Shared gray-failure evidence: whether this node passes its outlier
    /// verdicts on (default: yes) and whether others' verdicts count
    /// towards downing a member (default: no). See [`crate::gray`].
    pub gray: crate::gray::GraySharing,
}

/// A day: the LAN preset's reconnect and tombstone timeouts.
const DAY: Duration = Duration::from_secs(86_400);

/// The longest [`Config::reconnect_timeout`] and [`Config::tombstone_timeout`].
pub const MAX_TOMBSTONE_AGE: Duration = Duration::from_secs(365 * 86_400);

/// The most arrivals [`Config::recorded_arrivals`] may keep per member.
pub const MAX_RECORDED_ARRIVALS: usize = 1_000_000;

/// The LAN preset's heartbeat interval: every φ timing of the preset is
/// proportional to it ([`Config::with_heartbeat_interval`]). Two heartbeats
/// every 1.05 s (1.905 a second) plus anti-entropy (0.022 at N = 100) stay
/// under memberlist's 2 messages per member-second.
const LAN_HEARTBEAT: Duration = Duration::from_millis(1050);

/// Akka's φ as the protocol's detector: σ floor, 100 samples, no acceptable
/// pause (the protocol's suspicion timeout is the pause allowance), bootstrap
/// estimate the heartbeat interval.
fn phi_detector(heartbeat_interval: Duration, min_std_dev: Duration, suspect_level: f64) -> ModelConfig {
    ModelConfig::Akka(AkkaConfig {
        threshold: suspect_level,
        window: 100,
        min_std_dev,
        acceptable_pause: Duration::ZERO,
        first_heartbeat_estimate: heartbeat_interval,
    })
}

/// The name of the protocol's own policy, the first of every watch report:
/// its firing makes a watched member silent and due for a probe. An
/// application policy cannot take the name.
pub const PROBE: &str = "probe";

impl Config {
    /// LAN defaults, on memberlist's message budget: each member heartbeats
    /// its 2 observers every 1.05 s (1.9 messages per member-second, against
    /// memberlist's probe and ack every second), memberlist's constants for
    /// probes, gossip and anti-entropy.
    pub fn lan(cluster: u64) -> Config {
        Config {
            cluster,
            mode: Mode::Phi,
            heartbeat_interval: LAN_HEARTBEAT,
            observers: 2,
            detector: phi_detector(LAN_HEARTBEAT, Duration::from_millis(50), 8.0),
            suspect_level: 8.0,
            first_heartbeat_timeout: Duration::from_secs(3),
            probe_interval: Duration::from_secs(1),
            probe_timeout: Duration::from_millis(500),
            indirect_checks: 3,
            stream_ping: true,
            stream_only: false,
            suspicion_max: Duration::from_secs(10),
            suspicion_min: Duration::from_millis(2500),
            suspicion_mult: 4,
            suspicion_max_timeout_mult: 6,
            max_confirmations_gossiped: 2,
            gossip_interval: Duration::from_millis(200),
            gossip_nodes: 3,
            retransmit_mult: 4,
            push_pull_interval: Duration::from_secs(30),
            push_pull_digest: true,
            view_page: 60 * 1024,
            dead_retention: Duration::from_secs(30),
            reconnect_interval: Duration::from_secs(10),
            reconnect_timeout: DAY,
            tombstone_timeout: DAY,
            introductions_per_source: 32,
            introduction_window: Duration::from_secs(10),
            random_probe_targets: false,
            stagger_timers: true,
            policies: Vec::new(),
            max_tombstones: 10_000,
            max_awareness: 7,
            local_stall: Duration::from_millis(200),
            datagram_budget: crate::wire::MAX_DATAGRAM,
            recorded_arrivals: 0,
            outliers: vigil_detector::outlier::OutlierConfig::vigil(),
            downing: crate::downing::Downing::default(),
            gray: crate::gray::GraySharing::default(),
        }
    }

    /// Faster detection for more traffic: the LAN preset at half its period
    /// (heartbeats every 525 ms, σ floor 25 ms, probe timeout 250 ms,
    /// suspicion 5 s → 1.25 s), about 3.8 messages per member-second (about
    /// twice memberlist's budget) for about half the detection time. The
    /// price beyond messages: a paused member must resume within about
    /// 1.5 s to refute before its accusers declare it dead (3 s for
    /// [`Config::lan`]).
    pub fn lan_fast(cluster: u64) -> Config {
        Config::lan(cluster).with_heartbeat_interval(LAN_HEARTBEAT / 2)
    }

    /// WAN defaults: memberlist's WAN overrides (probe 5 s / 3 s, gossip
    /// 500 ms to 4, push-pull 60 s, suspicion multiplier 6) and a slower φ
    /// (5 s heartbeats to 2 observers, 200 ms σ floor, suspicion 8–40 s).
    pub fn wan(cluster: u64) -> Config {
        let heartbeat_interval = Duration::from_secs(5);
        Config {
            heartbeat_interval,
            detector: phi_detector(heartbeat_interval, Duration::from_millis(200), 8.0),
            first_heartbeat_timeout: Duration::from_secs(15),
            probe_interval: Duration::from_secs(5),
            probe_timeout: Duration::from_secs(3),
            suspicion_max: Duration::from_secs(40),
            suspicion_min: Duration::from_secs(8),
            suspicion_mult: 6,
            gossip_interval: Duration::from_millis(500),
            gossip_nodes: 4,
            push_pull_interval: Duration::from_secs(60),
            dead_retention: Duration::from_secs(60),
            reconnect_interval: Duration::from_secs(30),
            ..Config::lan(cluster)
        }
    }

    /// SWIM as memberlist runs it on a LAN: classic mode with memberlist's
    /// LAN constants.
    pub fn classic_lan(cluster: u64) -> Config {
        Config {
            mode: Mode::Classic,
            push_pull_digest: false,
            view_page: crate::wire::MAX_STREAM,
            ..Config::lan(cluster)
        }
    }

    /// The LAN preset's φ timing for another heartbeat interval: the
    /// heartbeat interval, the detector's σ floor and bootstrap estimate,
    /// the first-heartbeat timeout, the probe timeout and the suspicion
    /// bounds all scale with `interval / 1.05 s`, so the preset's trade-offs
    /// (how many σ of silence before a probe, how long a paused member has
    /// to refute, relative to the period) are kept. The detector becomes
    /// Akka's φ at the current suspect level. Gossip, anti-entropy and
    /// classic mode's settings are unchanged.
    pub fn with_heartbeat_interval(self, interval: Duration) -> Config {
        let f = interval.as_secs_f64() / LAN_HEARTBEAT.as_secs_f64();
        let lan = Config::lan(self.cluster);
        // Whole microseconds, so that round ratios give round durations.
        let scale = |d: Duration| {
            let us = (d.as_micros() as f64 * f).round();
            if (0.0..8.64e10).contains(&us) { Duration::from_micros(us as u64) } else { d }
        };
        Config {
            heartbeat_interval: interval,
            detector: phi_detector(interval, scale(Duration::from_millis(50)), self.suspect_level),
            first_heartbeat_timeout: scale(lan.first_heartbeat_timeout),
            probe_timeout: scale(lan.probe_timeout),
            suspicion_min: scale(lan.suspicion_min),
            suspicion_max: scale(lan.suspicion_max),
            ..self
        }
    }

    /// Checks every field.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first field that is out of its range or
    /// contradicts another, or the detector's own error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let day = Duration::from_secs(86_400);
        for (field, d) in [
            ("heartbeat_interval", self.heartbeat_interval),
            ("first_heartbeat_timeout", self.first_heartbeat_timeout),
            ("probe_interval", self.probe_interval),
            ("probe_timeout", self.probe_timeout),
            ("suspicion_min", self.suspicion_min),
            ("suspicion_max", self.suspicion_max),
            ("gossip_interval", self.gossip_interval),
            ("push_pull_interval", self.push_pull_interval),
            ("reconnect_interval", self.reconnect_interval),
            ("introduction_window", self.introduction_window),
            ("downing.stable_after", self.downing.stable_after),
        ] {
            // Durations are bounded so that scaling them (by local health,
            // by the cluster size) cannot overflow.
            if d.is_zero() || d > day {
                return Err(ConfigError::out_of_range(field, format!("{d:?}"), "more than zero and at most a day"));
            }
        }
        let dg = &self.downing;
        for (field, d) in [
            ("dead_retention", self.dead_retention),
            ("local_stall", self.local_stall),
            ("downing.decide_when_unstable", dg.decide_when_unstable.unwrap_or_default()),
            ("downing.down_removal_margin", dg.down_removal_margin),
        ] {
            if d > day {
                return Err(ConfigError::out_of_range(field, format!("{d:?}"), "at most a day"));
            }
        }
        for (field, d) in [("reconnect_timeout", self.reconnect_timeout), ("tombstone_timeout", self.tombstone_timeout)]
        {
            if d > MAX_TOMBSTONE_AGE {
                return Err(ConfigError::out_of_range(field, format!("{d:?}"), "at most 365 days"));
            }
        }
        if self.suspicion_max < self.suspicion_min {
            return Err(ConfigError::Inconsistent {
                field: "suspicion_max",
                other: "suspicion_min",
                reason: "the maximum suspicion timeout must be at least the minimum",
            });
        }
        for (field, v, lo, hi, allowed) in [
            ("observers", self.observers, 1, 64, "1 to 64"),
            ("indirect_checks", self.indirect_checks, 0, 16, "0 to 16"),
            ("gossip_nodes", self.gossip_nodes, 1, 16, "1 to 16"),
            ("max_tombstones", self.max_tombstones, 0, crate::message::MAX_MEMBERS, "0 to 65535"),
            ("datagram_budget", self.datagram_budget, 1024, crate::wire::MAX_DATAGRAM_ACCEPTED, "1024 to 65000"),
            ("recorded_arrivals", self.recorded_arrivals, 0, MAX_RECORDED_ARRIVALS, "0 to 1000000"),
            ("view_page", self.view_page, 1024, crate::wire::MAX_STREAM, "1024 to 48234496"),
        ] {
            if !(lo..=hi).contains(&v) {
                return Err(ConfigError::out_of_range(field, v.to_string(), allowed));
            }
        }
        for (field, v, lo, hi, allowed) in [
            ("suspicion_mult", self.suspicion_mult, 1, 100, "1 to 100"),
            ("suspicion_max_timeout_mult", self.suspicion_max_timeout_mult, 1, 100, "1 to 100"),
            ("retransmit_mult", self.retransmit_mult, 1, 100, "1 to 100"),
            ("max_confirmations_gossiped", self.max_confirmations_gossiped, 0, 64, "0 to 64"),
            ("max_awareness", self.max_awareness, 0, 64, "0 to 64"),
            ("introductions_per_source", self.introductions_per_source, 0, 65_535, "0 to 65535"),
        ] {
            if !(lo..=hi).contains(&v) {
                return Err(ConfigError::out_of_range(field, v.to_string(), allowed));
            }
        }
        if !(self.suspect_level.is_finite() && self.suspect_level > 0.0) {
            return Err(ConfigError::out_of_range(
                "suspect_level",
                self.suspect_level.to_string(),
                "a positive finite number",
            ));
        }
        self.detector.validate().map_err(ConfigError::Detector)?;
        self.outliers.validate().map_err(ConfigError::Detector)?;
        let mut names: Vec<&str> = vec![PROBE];
        for p in &self.policies {
            p.validate().map_err(ConfigError::Detector)?;
            if names.contains(&p.name.as_str()) {
                return Err(ConfigError::out_of_range(
                    "policies",
                    format!("{:?}", p.name),
                    "distinct names other than \"probe\"",
                ));
            }
            names.push(&p.name);
        }
        Ok(())
    }
}

/// A configuration that is not valid. Nothing was built.
///
/// Messages are lowercase, name the field and the value, and have no
/// trailing period.
///
/// ```
/// let mut c = vigil_membership::Config::lan(1);
/// c.observers = 0;
/// let err = c.validate().unwrap_err();
/// assert_eq!(err.field(), "observers");
/// assert_eq!(err.to_string(), "invalid membership configuration: observers is 0, expected 1 to 64");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A field is outside its range.
    OutOfRange {
        /// The field.
        field: &'static str,
        /// The value, as written.
        value: String,
        /// What is allowed.
        allowed: &'static str,
    },
    /// Two fields contradict each other.
    Inconsistent {
        /// The field reported.
        field: &'static str,
        /// The field it contradicts.
        other: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// The detector's configuration ([`Config::detector`]) is not valid.
    Detector(vigil_detector::ConfigError),
    /// The node's name is empty or longer than
    /// [`MAX_NAME_LEN`](crate::message::MAX_NAME_LEN) bytes.
    Name {
        /// Its length in bytes.
        len: usize,
    },
    /// The node's name holds a control character (a terminal escape, a
    /// newline).
    NameCharacter {
        /// Where, in bytes from the start of the name.
        at: usize,
    },
}

impl ConfigError {
    fn out_of_range(field: &'static str, value: String, allowed: &'static str) -> ConfigError {
        ConfigError::OutOfRange { field, value, allowed }
    }

    /// The field at fault: a [`Config`] field, `"detector"`, or `"name"`.
    pub fn field(&self) -> &'static str {
        match self {
            ConfigError::OutOfRange { field, .. } | ConfigError::Inconsistent { field, .. } => field,
            ConfigError::Detector(_) => "detector",
            ConfigError::Name { .. } | ConfigError::NameCharacter { .. } => "name",
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid membership configuration: ")?;
        match self {
            ConfigError::OutOfRange { field, value, allowed } => write!(f, "{field} is {value}, expected {allowed}"),
            ConfigError::Inconsistent { field, other, reason } => write!(f, "{field} and {other}: {reason}"),
            ConfigError::Detector(e) => write!(f, "detector: {e}"),
            ConfigError::Name { len } => {
                write!(f, "name is {len} bytes long, expected 1 to {}", crate::message::MAX_NAME_LEN)
            }
            ConfigError::NameCharacter { at } => {
                write!(f, "name has a control character at byte {at}, expected printable characters only")
            }
        }
    }
}

/// The message already includes the detector's error, so it is not also
/// given as a source (a chain would print it twice).
impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_validates() {
        for c in [Config::lan(1), Config::lan_fast(1), Config::wan(1), Config::classic_lan(1)] {
            c.validate().unwrap();
        }
        for ms in [100, 250, 500, 2000, 5000] {
            Config::lan(1).with_heartbeat_interval(Duration::from_millis(ms)).validate().unwrap();
        }
    }

    #[test]
    fn scaling_the_heartbeat_interval_scales_the_phi_timing_together() {
        let c = Config::lan(1).with_heartbeat_interval(Duration::from_millis(2100));
        assert_eq!(c.heartbeat_interval, Duration::from_millis(2100));
        assert_eq!(c.probe_timeout, Duration::from_secs(1));
        assert_eq!(c.suspicion_min, Duration::from_secs(5));
        assert_eq!(c.suspicion_max, Duration::from_secs(20));
        assert_eq!(c.first_heartbeat_timeout, Duration::from_secs(6));
        let ModelConfig::Akka(a) = &c.detector else { panic!("{:?}", c.detector) };
        assert_eq!(
            (a.min_std_dev, a.first_heartbeat_estimate),
            (Duration::from_millis(100), Duration::from_millis(2100))
        );
        // Unscaled: dissemination and classic mode.
        assert_eq!(c.gossip_interval, Config::lan(1).gossip_interval);
        assert_eq!(c.probe_interval, Config::lan(1).probe_interval);
    }

    #[test]
    fn errors_name_the_field_and_the_value() {
        let mut c = Config::lan(1);
        c.suspicion_max = Duration::from_millis(1);
        let e = c.validate().unwrap_err();
        assert_eq!(e.field(), "suspicion_max");
        assert_eq!(
            e.to_string(),
            "invalid membership configuration: suspicion_max and suspicion_min: \
             the maximum suspicion timeout must be at least the minimum"
        );
        let mut c = Config::lan(1);
        c.probe_timeout = Duration::from_secs(u64::MAX / 4);
        assert_eq!(c.validate().unwrap_err().field(), "probe_timeout");
        let mut c = Config::lan(1);
        c.suspect_level = f64::NAN;
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "invalid membership configuration: suspect_level is NaN, expected a positive finite number"
        );
        let mut c = Config::lan(1);
        c.detector = ModelConfig::Akka(AkkaConfig { window: 0, ..AkkaConfig::default() });
        let e = c.validate().unwrap_err();
        assert_eq!(e.field(), "detector");
        // The message carries the detector's; a chain does not repeat it.
        assert!(std::error::Error::source(&e).is_none());
        assert_eq!(
            e.to_string(),
            "invalid membership configuration: detector: window must hold at least one sample (got 0)"
        );
        let mut c = Config::lan(1);
        c.gossip_nodes = 0;
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "invalid membership configuration: gossip_nodes is 0, expected 1 to 16"
        );
    }
}
