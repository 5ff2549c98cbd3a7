//! The values the handle and the driver exchange: the runtime's settings,
//! its counters, events with their wall-clock time, and the snapshot. Values
//! only: both sides depend on this module, and it depends on neither.

use std::time::Duration;

use vigil_detector::Instant;
use vigil_detector::outlier::Outcome;
use vigil_membership::seal::SealStats;
use vigil_membership::{Arrivals, Event, NodeView, Stats};

/// Settings of the network runtime itself (the protocol's are a
/// [`Config`](vigil_membership::Config)), given to
/// [`Builder::net`](crate::Builder::net). Start from the default and change
/// what you need: the struct may gain fields.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use vigil_net::NetConfig;
///
/// let mut net = NetConfig::default();
/// net.leave_wait = Duration::from_secs(1);
/// assert_eq!(net.max_connections, 64);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NetConfig {
    /// Inbound stream connections handled at once; beyond, the oldest that
    /// has not sent its frame's header yet is closed to make room (or, if
    /// none, the new one). Default 64.
    pub max_connections: usize,
    /// Connecting to a member for a stream message. Default 2 s.
    pub connect_timeout: Duration,
    /// Writing or reading a stream frame's body. Default 5 s.
    pub io_timeout: Duration,
    /// Reading a stream frame's header, from the connection's start: a
    /// peer says who it is at once. Default 2 s.
    pub header_timeout: Duration,
    /// Bytes of frame bodies in flight at once, over every connection (a
    /// body is read only once its header opened, and only if its length
    /// fits in what is left). At least 64 KiB; default 64 MiB, more than
    /// the largest push-pull a member may send (a page of a view is 60 KiB
    /// by default, but a build before pages sends a view of 65,535
    /// members, up to 46 MiB, in one).
    pub frame_budget: usize,
    /// The seal's freshness window
    /// ([`Seal::with_freshness`](vigil_membership::seal::Seal::with_freshness)):
    /// packets sealed before this member started, or more than this away
    /// from its clock, are refused, so captured packets cannot be replayed
    /// to a member that restarted. `None` turns it off. Default 60 s.
    pub freshness: Option<Duration>,
    /// The envelope sealed packets are sent in
    /// ([`Envelope`](vigil_membership::seal::Envelope)): version 3,
    /// AES-256-GCM, by default. Members open both versions; a cluster whose
    /// members run a build older than version 3 sends version 2 until
    /// every member runs this one, then moves each member to version 3
    /// ([`Cluster::set_envelope`](crate::Cluster::set_envelope), or this,
    /// at its next start).
    pub envelope: vigil_membership::seal::Envelope,
    /// Compress stream messages of 256 bytes or more (push-pull views) with
    /// LZ4 before they are sealed ([`compress`](crate::compress)). Every
    /// member decompresses; members of a build before compression do not,
    /// so a cluster that still runs one turns this off until every member
    /// runs this build. Default on.
    pub compress_streams: bool,
    /// The UDP socket's receive and send buffers, bytes (default: the
    /// system's).
    pub socket_buffers: Option<(usize, usize)>,
    /// How long [`Cluster::leave`](crate::Cluster::leave) waits for the
    /// announcement to go out. Default 500 ms.
    pub leave_wait: Duration,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            max_connections: 64,
            connect_timeout: Duration::from_secs(2),
            io_timeout: Duration::from_secs(5),
            header_timeout: Duration::from_secs(2),
            frame_budget: 64 * 1024 * 1024,
            freshness: Some(Duration::from_secs(60)),
            envelope: vigil_membership::seal::Envelope::default(),
            compress_streams: true,
            socket_buffers: None,
            leave_wait: Duration::from_millis(500),
        }
    }
}

/// The runtime's own counters, in [`ClusterStats::net`] and
/// [`Snapshot::net`]: what went over the sockets, and what was refused or
/// dropped there before the protocol saw it.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let a = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
/// let net = a.stats().await?.net;
/// println!("{} datagrams sent, {} frames dropped", net.datagrams_sent, net.frames_dropped);
/// assert_eq!(net.connections_refused, 0);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct NetStats {
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// Datagrams received (before opening).
    pub datagrams_received: u64,
    /// Bytes of datagrams sent, as on the wire (sealed).
    pub datagram_bytes_sent: u64,
    /// Stream frames sent.
    pub frames_sent: u64,
    /// Stream frames received.
    pub frames_received: u64,
    /// Stream messages sent compressed ([`NetConfig::compress_streams`]).
    pub frames_compressed: u64,
    /// Bytes compression saved the frames sent.
    pub frame_bytes_saved: u64,
    /// Stream messages received compressed that did not decompress (cut
    /// short, over the stream limit, or corrupt): dropped.
    pub frames_undecompressed: u64,
    /// Sends that failed (datagrams and frames).
    pub send_errors: u64,
    /// Inbound connections closed because `max_connections` were open.
    pub connections_refused: u64,
    /// Inbound connections closed to make room for a new one, because they
    /// had not sent their frame's header yet.
    pub connections_evicted: u64,
    /// Inbound frames dropped: too slow, cut short, or a header longer than
    /// [`MAX_HEADER`](crate::frame::MAX_HEADER).
    pub frames_dropped: u64,
    /// Frame headers that did not open (forged, of another key, malformed,
    /// or plaintext to a member that only takes sealed frames): their
    /// bodies were never read.
    pub frames_malformed: u64,
    /// Frames whose body did not fit in the byte budget
    /// ([`NetConfig::frame_budget`]) left for frames in flight: never read.
    pub frames_over_budget: u64,
    /// Seed names that could not be resolved (at the start, or when the
    /// member, alone, resolved them again).
    pub seed_resolution_failures: u64,
    /// Packets dropped because an [`Intercept`](crate::Intercept) did not
    /// let them pass.
    pub intercepted: u64,
}

/// Something that happened, with when (milliseconds since the Unix epoch,
/// on this host's clock): what [`Events::next`](crate::Events::next) gives.
/// Its [`Display`](std::fmt::Display) is one line for a person.
///
/// # Examples
///
/// ```
/// use vigil_net::{ClusterEvent, Event, NodeId};
///
/// let e = ClusterEvent { unix_ms: 1_700_000_000_000, event: Event::Left { id: NodeId::new("b", 3) } };
/// assert_eq!(e.event.to_string(), "b#3 left");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ClusterEvent {
    /// When this member learned it.
    pub unix_ms: u64,
    /// What.
    pub event: Event,
}

/// What a member has done: the protocol's counters, the seal's, and the
/// runtime's ([`Cluster::stats`](crate::Cluster::stats)).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use vigil_net::{Cluster, Keyring, SealMode};
///
/// let ring = Keyring::new([1; 32]);
/// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).keys(ring, SealMode::Sealed).start().await?;
/// let stats = a.stats().await?;
/// println!("{} datagrams sent, {} opened by the seal", stats.net.datagrams_sent, stats.seal.opened);
/// println!("{} suspicions started", stats.node.suspicions_started);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct ClusterStats {
    /// The protocol's.
    pub node: Stats,
    /// The seal's.
    pub seal: SealStats,
    /// The runtime's.
    pub net: NetStats,
}

/// Everything a running member knows, taken at one instant
/// ([`Cluster::snapshot`](crate::Cluster::snapshot)): an HTTP API, a metrics
/// exporter or a dashboard reads it without seeing the cluster change
/// halfway through.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use vigil_net::Cluster;
///
/// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
/// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
/// while a.member("b").await?.is_none() {
///     tokio::time::sleep(Duration::from_millis(10)).await;
/// }
/// let s = a.snapshot().await?;
/// for m in &s.node.members {
///     println!("{} is {:?}", m.id, m.status);
/// }
/// println!("up for {:?}, {} frames received", s.uptime, s.net.frames_received);
/// # drop(b);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Snapshot {
    /// When it was taken, milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// How long the member has run.
    pub uptime: Duration,
    /// The protocol's state: members, watched members, outlier detection,
    /// queues and counters.
    pub node: NodeView,
    /// The seal's counters.
    pub seal: SealStats,
    /// The runtime's counters.
    pub net: NetStats,
    /// What the last check of the lease found, while `lease-majority`
    /// decides with a lease ([`Builder::lease`](crate::Builder::lease));
    /// `None` otherwise.
    pub lease: Option<crate::lease::LeaseHealth>,
}

impl Snapshot {
    /// The three sets of counters together, as [`Cluster::stats`](crate::Cluster::stats)
    /// gives them.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let a = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let s = a.snapshot().await?;
    /// assert_eq!(s.stats().net, s.net);
    /// # Ok(())
    /// # }
    /// ```
    pub fn stats(&self) -> ClusterStats {
        ClusterStats { node: self.node.stats.clone(), seal: self.seal, net: self.net }
    }
}

/// The outcome of one of the application's requests, for
/// [`Cluster::record_outcomes`](crate::Cluster::record_outcomes).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use vigil_net::{Outcome, RequestOutcome};
///
/// let o = RequestOutcome {
///     member: "b".into(),
///     outcome: Outcome::Response(503),
///     latency: Some(Duration::from_millis(12)),
/// };
/// assert!(matches!(o.outcome, Outcome::Response(503)));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RequestOutcome {
    /// The member the request went to.
    pub member: String,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took, if measured.
    pub latency: Option<Duration>,
}

/// A watched member's recorded heartbeat arrivals, and the time they were
/// read at on the same clock ([`Cluster::arrivals`](crate::Cluster::arrivals)): a trace of them ends
/// then, so the silence since the last arrival is part of it.
///
/// # Examples
///
/// ```
/// use vigil_net::{Arrivals, Instant, Recorded};
///
/// // What `Cluster::arrivals` returns, and the silence it ends with.
/// let mut arrivals = Arrivals::default();
/// arrivals.times = vec![Instant::from_millis(1000), Instant::from_millis(2050)];
/// let recorded = Recorded { arrivals, now: Instant::from_millis(2500) };
/// let last = recorded.arrivals.times.last().copied().unwrap_or(recorded.arrivals.since);
/// assert_eq!((recorded.now - last).as_millis(), 450);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Recorded {
    /// The arrivals.
    pub arrivals: Arrivals,
    /// When they were read.
    pub now: Instant,
}

/// One member's answer to a key operation asked of every member
/// ([`Cluster::keys_everywhere`](crate::Cluster::keys_everywhere)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberKeys {
    /// The member.
    pub name: String,
    /// Where it was asked.
    pub addr: std::net::SocketAddr,
    /// Its keys after the operation (id, whether it seals), or why there
    /// are none: it refused, or did not answer.
    pub result: crate::control::KeyAnswer,
}
