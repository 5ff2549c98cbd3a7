//! One consistent picture of a running member, for an operator's tools.

use std::time::Duration;

use vigil_detector::Instant;
use vigil_detector::outlier::HostReport;
use vigil_membership::{MemberView, NodeId, Tags, WatchReport};

use crate::cluster::ClusterStats;

/// Everything a member knows about itself and the cluster, taken at one
/// instant ([`Cluster::snapshot`](crate::Cluster::snapshot)): an HTTP API,
/// a metrics exporter or a dashboard reads it without seeing the cluster
/// change halfway through.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Snapshot {
    /// When it was taken, on the member's protocol clock (the time base of
    /// [`MemberView::since`]).
    pub now: Instant,
    /// When it was taken, milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// How long the member has run.
    pub uptime: Duration,
    /// This member's name and generation.
    pub id: NodeId,
    /// Its incarnation.
    pub incarnation: u64,
    /// Lifeguard's local health score (0 is healthy).
    pub awareness: u32,
    /// The highest score it can reach.
    pub max_awareness: u32,
    /// Its tags.
    pub tags: Tags,
    /// Every other member it knows, tombstones included.
    pub members: Vec<MemberView>,
    /// The members it watches, with their detectors' state.
    pub watched: Vec<WatchReport>,
    /// Outlier detection's view of each member, once the application has
    /// recorded request outcomes ([`Cluster::record_outcome`](crate::Cluster::record_outcome)).
    pub outliers: Vec<(String, HostReport)>,
    /// Suspicions open.
    pub suspicions: usize,
    /// Rumours waiting to be piggybacked.
    pub queued_broadcasts: usize,
    /// Probes in flight.
    pub probes_in_flight: usize,
    /// Indirect probes relayed for others, in flight.
    pub relays_in_flight: usize,
    /// Heartbeats kept per watched member (0: recording is off).
    pub recorded_arrivals: usize,
    /// The counters.
    pub stats: ClusterStats,
}
