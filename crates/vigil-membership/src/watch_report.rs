//! What monitoring knows about one watched member.

use std::time::Duration;

pub use vigil_detector::PolicyState;
pub use vigil_detector::health::Verdict;

/// One watched member as this node's monitoring sees it at a given time:
/// its detector's level and statistics, and, per policy (monitoring's own
/// `probe`, then the application's [`Config::policies`](crate::Config::policies)),
/// where it stands and how long silence would take to reach it.
///
/// ```
/// use vigil_detector::Instant;
/// use vigil_membership::{Config, Node, NodeId};
///
/// let mut node = Node::new(NodeId::new("a", 1), "10.0.0.1:7946".parse()?, Config::lan(7), 1, Instant::ZERO)?;
/// node.bootstrap(Instant::ZERO, &[(NodeId::new("b", 1), "10.0.0.2:7946".parse()?)]);
/// // With two members, each watches the other.
/// let report = node.watch_report("b", Instant::from_millis(500)).expect("b is watched");
/// assert_eq!(report.model, vigil_detector::Model::Akka);
/// assert!(!report.heard);
/// assert_eq!(report.policies[0].name, "probe");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct WatchReport {
    /// The member's name.
    pub name: String,
    /// Its generation (a new one restarts the detector).
    pub generation: u64,
    /// Watched because the ring says so (φ mode's observers).
    pub on_ring: bool,
    /// Watched because the application asked.
    pub by_app: bool,
    /// The detector's model.
    pub model: vigil_detector::Model,
    /// Whether any heartbeat has arrived (before the first, the
    /// first-heartbeat timeout applies instead of the level).
    pub heard: bool,
    /// The level (φ for the φ models) at the time asked.
    pub level: f64,
    /// Heartbeats taken.
    pub heartbeats: u64,
    /// Mean interval between heartbeats, over the detector's window.
    pub mean: Option<Duration>,
    /// Standard deviation of the intervals.
    pub std_dev: Option<Duration>,
    /// Time since the last heartbeat.
    pub silent_for: Option<Duration>,
    /// One entry per policy.
    pub policies: Vec<PolicyOutlook>,
}

/// Where one policy stands for a watched member.
///
/// For a policy that listens to φ, the threshold and the time to it are
/// φ's; a policy that listens to ejection only has neither (`threshold` is
/// `None`), and its state follows its verdict.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct PolicyOutlook {
    /// The policy's name.
    pub name: String,
    /// Its φ threshold; `None` for a policy that listens to ejection only.
    pub threshold: Option<f64>,
    /// Below, crossed (dwelling), fired, or withheld by the brake: fired or
    /// withheld as its verdict is, on whichever signal; otherwise where φ
    /// stands against the threshold.
    pub state: PolicyState,
    /// How long until the level reaches the threshold if nothing arrives:
    /// zero if it has, `None` if it never would, the policy is not trusting
    /// the member's φ now, or it has no threshold.
    pub time_to_threshold: Option<Duration>,
    /// The policy's verdict, and the signal it fired (or would have fired)
    /// on.
    pub verdict: Verdict,
}
