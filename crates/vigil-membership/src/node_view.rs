//! Everything a node knows, taken at one instant.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use vigil_detector::Instant;
use vigil_detector::outlier::HostReport;

use crate::message::{NodeId, Status};
use crate::stats::Stats;
use crate::tags::Tags;
use crate::view::MemberView;
use crate::watch_report::WatchReport;

/// One node's whole state as an operator's tools read it
/// ([`Node::snapshot`](crate::Node::snapshot)): an HTTP API, a metrics
/// exporter, a dashboard or a simulator's report reads it without seeing
/// the node change halfway through, and without a call per field.
///
/// ```
/// use vigil_detector::Instant;
/// use vigil_membership::{Config, Node, NodeId, Status};
///
/// let mut node = Node::new(NodeId::new("a", 1), "10.0.0.1:7946".parse()?, Config::lan(7), 1, Instant::ZERO)?;
/// node.bootstrap(Instant::ZERO, &[(NodeId::new("b", 1), "10.0.0.2:7946".parse()?)]);
/// let view = node.snapshot(Instant::from_millis(500));
/// assert_eq!(view.id.name, "a");
/// assert_eq!(view.members.len(), 1);
/// assert_eq!(view.members[0].status, Status::Alive);
/// // With two members, each watches the other.
/// assert_eq!(view.watched[0].name, "b");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct NodeView {
    /// When it was taken, on the node's clock (the time base of
    /// [`MemberView::since`]).
    pub now: Instant,
    /// This node's name and generation.
    pub id: NodeId,
    /// The address it advertises.
    pub addr: SocketAddr,
    /// Its incarnation.
    pub incarnation: u64,
    /// [`Status::Alive`], or [`Status::Left`] once it has left.
    pub status: Status,
    /// Its tags.
    pub tags: Tags,
    /// Lifeguard's local health score (0 is healthy).
    pub awareness: u32,
    /// The highest score it can reach.
    pub max_awareness: u32,
    /// Every other member it knows, tombstones included, by name.
    pub members: Vec<MemberView>,
    /// The members it watches, with their detectors' state, by name.
    pub watched: Vec<WatchReport>,
    /// Outlier detection's view of each member, by name, once the
    /// application has recorded request outcomes
    /// ([`Node::record_outcome`](crate::Node::record_outcome)).
    pub outliers: BTreeMap<String, HostReport>,
    /// Suspicions open.
    pub suspicions: usize,
    /// Rumours waiting to be piggybacked.
    pub queued_broadcasts: usize,
    /// Probes in flight.
    pub probes_in_flight: usize,
    /// Indirect probes relayed for others, in flight.
    pub relays_in_flight: usize,
    /// Members proposed by strangers, waiting for their answer.
    pub candidates: usize,
    /// Heartbeats kept per watched member (0: recording is off).
    pub recorded_arrivals: usize,
    /// The seeds it goes back to when it knows no live member.
    pub seeds: Vec<SocketAddr>,
    /// The downing provider's records, gate and pending decision; `None`
    /// with the `auto` strategy.
    pub downing: Option<crate::downing::Outlook>,
    /// The outlier verdicts members share ([`crate::gray`]): who ejects
    /// whom, and why.
    pub gray: Vec<crate::gray::GrayReport>,
    /// The counters.
    pub stats: Stats,
}

impl NodeView {
    /// The member named `name`, if this node knows it.
    ///
    /// ```
    /// # use vigil_detector::Instant;
    /// # use vigil_membership::{Config, Node, NodeId};
    /// let mut node = Node::new(NodeId::new("a", 1), "10.0.0.1:7946".parse()?, Config::lan(7), 1, Instant::ZERO)?;
    /// node.bootstrap(Instant::ZERO, &[(NodeId::new("b", 1), "10.0.0.2:7946".parse()?)]);
    /// let view = node.snapshot(Instant::ZERO);
    /// assert_eq!(view.member("b").map(|m| m.id.generation), Some(1));
    /// assert!(view.member("c").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn member(&self, name: &str) -> Option<&MemberView> {
        self.members.binary_search_by(|m| (*m.id.name).cmp(name)).ok().map(|i| &self.members[i])
    }

    /// What monitoring knows of `name`, if this node watches it.
    pub fn watch(&self, name: &str) -> Option<&WatchReport> {
        self.watched.binary_search_by(|w| w.name.as_str().cmp(name)).ok().map(|i| &self.watched[i])
    }

    /// How many members this node believes have `status`.
    pub fn count(&self, status: Status) -> usize {
        self.members.iter().filter(|m| m.status == status).count()
    }
}
