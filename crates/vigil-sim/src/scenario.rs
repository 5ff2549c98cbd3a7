//! What to simulate: the cluster, the network, the faults, and what the
//! checkers hold the run to. Plain data, from code or TOML, validated before
//! anything runs.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The network between nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Network {
    /// Fixed one-way latency, ms. Default 0.5.
    #[serde(default = "default_base")]
    pub base_ms: f64,
    /// Mean of an exponential extra latency, ms. Default 0.5.
    #[serde(default = "default_jitter")]
    pub jitter_ms: f64,
    /// Probability that a datagram is lost. Stream messages are
    /// retransmitted up to 5 times, each attempt lost with this
    /// probability, and are late by the retransmission timeouts.
    #[serde(default)]
    pub loss: f64,
    /// Links differ: each directed link's latency (base and tail) is scaled
    /// by its own factor, drawn once from the seed, uniform in
    /// `[1 − spread, 1 + spread]`. Default 0.5.
    #[serde(default = "default_spread")]
    pub link_spread: f64,
}

fn default_spread() -> f64 {
    0.5
}
fn default_base() -> f64 {
    0.5
}
fn default_jitter() -> f64 {
    0.5
}

impl Default for Network {
    fn default() -> Self {
        Network { base_ms: default_base(), jitter_ms: default_jitter(), loss: 0.0, link_spread: default_spread() }
    }
}

/// A fault injected at a virtual time (measured from the start).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Fault {
    /// The node stops for good (until a restart). A crash of a node that is
    /// already down does nothing.
    Crash {
        /// Node index.
        node: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
    },
    /// A crashed node starts again under the same name with a new
    /// generation, and joins through node 0 (or 1 if it is node 0). A
    /// restart of a node that is up does nothing.
    Restart {
        /// Node index.
        node: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
    },
    /// The node stops processing for a while (datagrams wait).
    Pause {
        /// Node index.
        node: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
        /// How long.
        #[serde(with = "secs")]
        duration: Duration,
    },
    /// The node handles every datagram and timer `delay` late for a while.
    Slow {
        /// Node index.
        node: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
        /// How long.
        #[serde(with = "secs")]
        duration: Duration,
        /// Processing delay.
        #[serde(with = "secs")]
        delay: Duration,
    },
    /// Datagrams from `from` to `to` are dropped (one direction).
    Block {
        /// Sender.
        from: usize,
        /// Receiver.
        to: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
        /// How long.
        #[serde(with = "secs")]
        duration: Duration,
    },
    /// Nodes below `split` and the others cannot reach each other.
    Partition {
        /// The first node of the second side.
        split: usize,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
        /// How long.
        #[serde(with = "secs")]
        duration: Duration,
    },
    /// Every link loses datagrams with probability `p` for a while.
    Loss {
        /// Loss probability.
        p: f64,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
        /// How long.
        #[serde(with = "secs")]
        duration: Duration,
    },
    /// A rolling key rotation (the cluster must seal): each node installs a
    /// new key at a random time in `[at, at + spread)`, seals with it in
    /// `[at + spread, at + 2·spread)` and removes the old key in
    /// `[at + 2·spread, at + 3·spread)`, as an operator's rollout would.
    RotateKey {
        /// When the first step starts.
        #[serde(with = "secs")]
        at: Duration,
        /// How long each step takes across the cluster.
        #[serde(with = "secs")]
        spread: Duration,
    },
    /// Turning encryption on in a running cluster: each node takes the
    /// cluster key (and so opens sealed packets) at a random time in
    /// `[at, at + spread)`, goes staged (sealed out, anything in) in
    /// `[at + spread, at + 2·spread)`, and sealed in
    /// `[at + 2·spread, at + 3·spread)`.
    EnableSealing {
        /// When the first step starts.
        #[serde(with = "secs")]
        at: Duration,
        /// How long each step takes across the cluster.
        #[serde(with = "secs")]
        spread: Duration,
    },
    /// An attacker on the network captures every datagram delivered in
    /// `[at, at + duration)` and sends each again to its receiver
    /// `duration` after the original.
    Replay {
        /// When capturing starts.
        #[serde(with = "secs")]
        at: Duration,
        /// How long it captures, and how long each copy waits.
        #[serde(with = "secs")]
        duration: Duration,
    },
    /// The whole network degrades for a while: every link's one-way latency
    /// becomes `base_ms` plus an exponential jitter of mean `jitter_ms`
    /// (seed 001's regime change, seed 003's degradation).
    Degrade {
        /// Fixed latency, ms.
        base_ms: f64,
        /// Mean of the exponential extra latency, ms.
        jitter_ms: f64,
        /// When.
        #[serde(with = "secs")]
        at: Duration,
        /// How long.
        #[serde(with = "secs")]
        duration: Duration,
    },
}

impl Fault {
    /// When the fault starts.
    pub fn at(&self) -> Duration {
        match self {
            Fault::Crash { at, .. }
            | Fault::Restart { at, .. }
            | Fault::Pause { at, .. }
            | Fault::Slow { at, .. }
            | Fault::Block { at, .. }
            | Fault::Partition { at, .. }
            | Fault::Loss { at, .. }
            | Fault::RotateKey { at, .. }
            | Fault::EnableSealing { at, .. }
            | Fault::Replay { at, .. }
            | Fault::Degrade { at, .. } => *at,
        }
    }

    /// How long the fault lasts, for the faults that end.
    pub fn duration(&self) -> Option<Duration> {
        match self {
            Fault::Crash { .. } | Fault::Restart { .. } => None,
            Fault::Pause { duration, .. }
            | Fault::Slow { duration, .. }
            | Fault::Block { duration, .. }
            | Fault::Partition { duration, .. }
            | Fault::Loss { duration, .. }
            | Fault::Replay { duration, .. }
            | Fault::Degrade { duration, .. } => Some(*duration),
            Fault::RotateKey { spread, .. } => Some(spread.saturating_mul(3)),
            Fault::EnableSealing { spread, .. } => Some(spread.saturating_mul(3)),
        }
    }

    /// A short name: `crash`, `restart`, `pause`, `slow`, `block`,
    /// `partition`, `loss`, `rotate-key`, `enable-sealing`, `replay`,
    /// `degrade`.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Crash { .. } => "crash",
            Fault::Restart { .. } => "restart",
            Fault::Pause { .. } => "pause",
            Fault::Slow { .. } => "slow",
            Fault::Block { .. } => "block",
            Fault::Partition { .. } => "partition",
            Fault::Loss { .. } => "loss",
            Fault::RotateKey { .. } => "rotate-key",
            Fault::EnableSealing { .. } => "enable-sealing",
            Fault::Replay { .. } => "replay",
            Fault::Degrade { .. } => "degrade",
        }
    }
}

mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v)
            .map_err(|_| serde::de::Error::custom(format!("{} is not a duration in seconds", super::shown(v))))
    }
}

mod opt_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let v = Option::<f64>::deserialize(d)?;
        v.map(|v| {
            Duration::try_from_secs_f64(v)
                .map_err(|_| serde::de::Error::custom(format!("{} is not a duration in seconds", super::shown(v))))
        })
        .transpose()
    }
}

/// Which protocol preset the nodes run (unless the simulator is given a
/// configuration of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Protocol {
    /// φ-monitored SWIM, `Config::lan`: memberlist's message budget.
    #[default]
    Phi,
    /// φ-monitored SWIM, `Config::lan_fast`: about twice as fast for about
    /// twice the messages.
    PhiFast,
    /// Classic SWIM with memberlist's LAN constants.
    Classic,
}

/// Where the liveness checker applies: a node nobody may declare dead.
///
/// A node is inside the envelope while it runs, is not paused or slowed, no
/// partition or block touches it, the network's loss is at most `max_loss`
/// and it is not degraded, and none of that has been otherwise within the
/// last `grace` (a suspicion raised during a fault may still end after it).
/// Outside the envelope a false death is a metric, not a violation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Envelope {
    /// The most datagram loss (all causes together) inside the envelope.
    /// Default 0.1.
    #[serde(default = "default_max_loss")]
    pub max_loss: f64,
    /// How long after a disturbance ends before the envelope holds again.
    /// Default 60 s.
    #[serde(with = "secs", default = "default_grace")]
    pub grace: Duration,
}

fn default_max_loss() -> f64 {
    0.1
}
fn default_grace() -> Duration {
    Duration::from_secs(60)
}

impl Default for Envelope {
    fn default() -> Self {
        Envelope { max_loss: default_max_loss(), grace: default_grace() }
    }
}

/// A simulation: the cluster, the network, the faults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Scenario {
    /// Name.
    pub name: String,
    /// Cluster size.
    pub nodes: usize,
    /// Virtual run time.
    #[serde(with = "secs", default = "default_duration")]
    pub duration: Duration,
    /// Seed of every random choice.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Protocol.
    #[serde(default)]
    pub protocol: Protocol,
    /// Network.
    #[serde(default)]
    pub network: Network,
    /// Faults.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Every crash must be detected by every survivor within this bound.
    #[serde(with = "secs", default = "default_bound")]
    pub detection_bound: Duration,
    /// Every healed partition must converge within this bound: once it
    /// ends, with no other partition in force, every live node sees every
    /// other live node alive (with its current generation) within it.
    /// Default 60 s.
    #[serde(with = "secs", default = "default_heal_bound")]
    pub heal_bound: Duration,
    /// Whether the liveness checker applies.
    #[serde(default = "default_true")]
    pub check_liveness: bool,
    /// Where it applies.
    #[serde(default)]
    pub envelope: Envelope,
    /// From this time on, check every 500 ms whether every live node sees
    /// every other live node alive (with its current generation); the first
    /// time it holds is reported as `converged_ms`.
    #[serde(with = "opt_secs", default)]
    pub converge_after: Option<Duration>,
    /// Whether packets are sealed (vigil-membership's seal): `plaintext`
    /// (the default), `staged` or `sealed`. Sealed packets cost
    /// `seal::OVERHEAD` bytes more, counted in the traffic.
    #[serde(default)]
    pub sealing: Sealing,
}

/// How the simulated nodes seal their packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Sealing {
    /// No encryption.
    #[default]
    Plaintext,
    /// Sealed out, sealed or plaintext in.
    Staged,
    /// Sealed out and in.
    Sealed,
}

fn default_duration() -> Duration {
    Duration::from_secs(60)
}
fn default_seed() -> u64 {
    1
}
fn default_bound() -> Duration {
    Duration::from_secs(30)
}
fn default_heal_bound() -> Duration {
    Duration::from_secs(60)
}
fn default_true() -> bool {
    true
}

/// The largest cluster a scenario may ask for.
pub const MAX_NODES: usize = 100_000;

/// The longest virtual run: 30 days.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);

/// The shortest run: one second, a protocol period of every preset (a
/// shorter run measures nothing and would print a report of zeros).
pub const MIN_DURATION: Duration = Duration::from_secs(1);

/// The longest latency, in ms: a day.
pub const MAX_LATENCY_MS: f64 = 86_400_000.0;

/// A scenario that cannot run. Names the field, as written in TOML
/// (`faults[2].at`, `network.loss`), and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The field.
    pub field: String,
    /// What is wrong, in lowercase, with the value.
    pub reason: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() { write!(f, "{}", self.reason) } else { write!(f, "{}: {}", self.field, self.reason) }
    }
}

impl std::error::Error for ScenarioError {}

/// A number as a reader takes it in: plain when short, in exponent form
/// when it would run to many digits (`1e300`, not 301 of them).
fn shown(v: f64) -> String {
    if v == 0.0 || (v.is_finite() && (1e-4..1e9).contains(&v.abs())) { format!("{v}") } else { format!("{v:e}") }
}

fn err(field: impl Into<String>, reason: impl Into<String>) -> ScenarioError {
    ScenarioError { field: field.into(), reason: reason.into() }
}

impl Scenario {
    /// A fault-free scenario of `nodes` nodes, 60 s, seed 1, φ protocol.
    pub fn new(name: &str, nodes: usize) -> Scenario {
        Scenario {
            name: name.into(),
            nodes,
            duration: default_duration(),
            seed: 1,
            protocol: Protocol::Phi,
            network: Network::default(),
            faults: Vec::new(),
            detection_bound: default_bound(),
            heal_bound: default_heal_bound(),
            check_liveness: true,
            envelope: Envelope::default(),
            converge_after: None,
            sealing: Sealing::Plaintext,
        }
    }

    /// Parses and checks a scenario written in TOML.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] for TOML that is not a scenario (unknown fields
    /// included), or one that [`Scenario::validate`] refuses.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario = toml::from_str(text).map_err(|e| err("", format!("not a valid simulation scenario: {e}")))?;
        s.validate()?;
        Ok(s)
    }

    /// An upper estimate of the memory a run of this scenario needs, in
    /// bytes: every node holds a view of every member (about 135 bytes per
    /// member and node, measured: 152 MB for 1,000 nodes, 13.3 GB for
    /// 10,000), so it grows as the square of the cluster size. Counted here
    /// as 160 bytes per pair, 64 KiB per node and 16 MiB for the rest.
    pub fn estimated_memory_bytes(&self) -> u64 {
        let n = self.nodes as u64;
        16 * 1024 * 1024 + n.saturating_mul(n).saturating_mul(160) + n.saturating_mul(64 * 1024)
    }

    /// Checks sizes, indices, probabilities, latencies and times.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the first field that is out of range.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if !(2..=MAX_NODES).contains(&self.nodes) {
            return Err(err("nodes", format!("{} is outside 2 to {MAX_NODES}", self.nodes)));
        }
        if self.duration < MIN_DURATION || self.duration > MAX_DURATION {
            return Err(err("duration", format!("{} s is outside 1 s to 30 days", shown(self.duration.as_secs_f64()))));
        }
        let p = &self.network;
        for (field, v) in [("network.base_ms", p.base_ms), ("network.jitter_ms", p.jitter_ms)] {
            if !(v.is_finite() && (0.0..=MAX_LATENCY_MS).contains(&v)) {
                return Err(err(field, format!("{} is outside 0 to {MAX_LATENCY_MS} ms (a day)", shown(v))));
            }
        }
        if !(0.0..=1.0).contains(&p.loss) {
            return Err(err("network.loss", format!("{} is outside [0, 1]", shown(p.loss))));
        }
        if !(0.0..1.0).contains(&p.link_spread) {
            return Err(err("network.link_spread", format!("{} is outside [0, 1)", shown(p.link_spread))));
        }
        if !(0.0..=1.0).contains(&self.envelope.max_loss) {
            return Err(err("envelope.max_loss", format!("{} is outside [0, 1]", shown(self.envelope.max_loss))));
        }
        if self.detection_bound.is_zero() || self.detection_bound > MAX_DURATION {
            return Err(err(
                "detection_bound",
                format!("{} s is outside (0, 30 days]", shown(self.detection_bound.as_secs_f64())),
            ));
        }
        if self.heal_bound.is_zero() || self.heal_bound > MAX_DURATION {
            return Err(err(
                "heal_bound",
                format!("{} s is outside (0, 30 days]", shown(self.heal_bound.as_secs_f64())),
            ));
        }
        let n = self.nodes;
        for (i, f) in self.faults.iter().enumerate() {
            let field = |name: &str| format!("faults[{i}].{name}");
            let node = |name: &str, v: usize| {
                if v < n { Ok(()) } else { Err(err(field(name), format!("node {v} is out of range (0 to {})", n - 1))) }
            };
            match f {
                Fault::Crash { node: v, .. }
                | Fault::Restart { node: v, .. }
                | Fault::Pause { node: v, .. }
                | Fault::Slow { node: v, .. } => node("node", *v)?,
                Fault::Block { from, to, .. } => {
                    node("from", *from)?;
                    node("to", *to)?;
                    if from == to {
                        return Err(err(
                            field("to"),
                            "to is the same node as from (a node cannot be blocked from itself)",
                        ));
                    }
                }
                Fault::Partition { split, .. } => {
                    if *split == 0 || *split >= n {
                        return Err(err(field("split"), format!("{split} is outside 1 to {}", n - 1)));
                    }
                }
                Fault::Loss { p, .. } => {
                    if !(0.0..=1.0).contains(p) {
                        return Err(err(field("p"), format!("{} is outside [0, 1]", shown(*p))));
                    }
                }
                Fault::Degrade { base_ms, jitter_ms, .. } => {
                    for (name, v) in [("base_ms", *base_ms), ("jitter_ms", *jitter_ms)] {
                        if !(v.is_finite() && (0.0..=MAX_LATENCY_MS).contains(&v)) {
                            return Err(err(
                                field(name),
                                format!("{} is outside 0 to {MAX_LATENCY_MS} ms (a day)", shown(v)),
                            ));
                        }
                    }
                }
                Fault::RotateKey { .. } => {
                    if self.sealing == Sealing::Plaintext {
                        return Err(err(
                            format!("faults[{i}]"),
                            "a key rotation needs sealing (sealing = \"sealed\" or \"staged\"; --sealing on the command line)",
                        ));
                    }
                }
                Fault::EnableSealing { .. } => {
                    if self.sealing != Sealing::Plaintext {
                        return Err(err(
                            format!("faults[{i}]"),
                            "enabling sealing needs a cluster that starts in plaintext",
                        ));
                    }
                }
                Fault::Replay { .. } => {}
            }
            if f.at() > self.duration {
                return Err(err(
                    field("at"),
                    format!(
                        "{} s is after the end of the run ({} s)",
                        shown(f.at().as_secs_f64()),
                        shown(self.duration.as_secs_f64())
                    ),
                ));
            }
            if let Some(d) = f.duration()
                && (d.is_zero() || d > MAX_DURATION)
            {
                return Err(err(field("duration"), format!("{} s is outside (0, 30 days]", shown(d.as_secs_f64()))));
            }
            if let Fault::Slow { delay, .. } = f
                && (delay.is_zero() || *delay > MAX_DURATION)
            {
                return Err(err(field("delay"), format!("{} s is outside (0, 30 days]", shown(delay.as_secs_f64()))));
            }
        }
        if let Some(c) = self.converge_after
            && c > self.duration
        {
            return Err(err("converge_after", "is after the end of the run"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_estimate_covers_what_runs_measured() {
        // Measured with /usr/bin/time -v: 152 MB at 1,000 nodes (600 s) and
        // 13.3 GB at 10,000 (300 s); the estimate must not be below either.
        assert!(Scenario::new("x", 1_000).estimated_memory_bytes() >= 152_000_000);
        assert!(Scenario::new("x", 10_000).estimated_memory_bytes() >= 13_400_000_000);
        assert!(Scenario::new("x", 10_000).estimated_memory_bytes() <= 20_000_000_000);
        assert_eq!(Scenario::new("x", MAX_NODES).estimated_memory_bytes() / 1_000_000_000, 1_606);
    }

    #[test]
    fn toml_scenarios_parse_and_bad_fields_are_named() {
        let s = Scenario::from_toml(
            "name = 'x'\nnodes = 10\nduration = 30\n[[faults]]\nkind = 'degrade'\nbase_ms = 80\njitter_ms = 40\nat = 5\nduration = 10\n",
        )
        .unwrap();
        assert_eq!(s.faults[0].kind(), "degrade");
        let e = Scenario::from_toml("name = 'x'\nnodes = 10\n[network]\nbase_ms = 1e300\n").unwrap_err();
        assert_eq!(e.field, "network.base_ms");
        let e = Scenario::from_toml(
            "name = 'x'\nnodes = 10\nduration = 30\n[[faults]]\nkind = 'crash'\nnode = 3\nat = 40\n",
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "faults[0].at: 40 s is after the end of the run (30 s)");
        let e =
            Scenario::from_toml("name = 'x'\nnodes = 10\n[[faults]]\nkind = 'crash'\nnode = 12\nat = 4\n").unwrap_err();
        assert_eq!(e.to_string(), "faults[0].node: node 12 is out of range (0 to 9)");
        let e = Scenario::from_toml("name = 'x'\nnodes = 5\nbogus = 1\n").unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        let e = Scenario::from_toml("name = 'x'\nnodes = 5\nduration = 0\n").unwrap_err();
        assert_eq!(e.field, "duration");
    }
}
