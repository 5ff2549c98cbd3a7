//! What members say to each other: the protocol's messages as data.
//!
//! [`crate::wire`] turns a [`Packet`] into bytes and back; this module only
//! defines what a packet means.

use std::net::SocketAddr;

use crate::tags::Tags;

/// A member's identity: a stable name plus the generation of the process
/// that carries it. A restarted process takes a new (higher) generation, and
/// a higher generation supersedes everything said about an older one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NodeId {
    /// Stable name, 1 to [`MAX_NAME_LEN`] bytes of UTF-8.
    pub name: String,
    /// Process generation (for example the start time in milliseconds).
    pub generation: u64,
}

/// The longest member name, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// The most members a view can hold, this node included: the one limit on
/// membership. A node keeps at most `MAX_MEMBERS - 1` other members
/// (tombstones included) and ignores rumours of more, and a push-pull of a
/// full view always fits in a stream message
/// ([`MAX_STREAM`](crate::wire::MAX_STREAM)).
pub const MAX_MEMBERS: usize = 65_535;

impl NodeId {
    /// A node id.
    pub fn new(name: impl Into<String>, generation: u64) -> NodeId {
        NodeId { name: name.into(), generation }
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", self.name, self.generation)
    }
}

/// What the cluster believes about a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Status {
    /// Alive.
    Alive,
    /// Suspected of having failed; it may refute.
    Suspect,
    /// Declared dead.
    Dead,
    /// Left voluntarily.
    Left,
}

/// A rumour about one member, disseminated by piggybacking and in push-pull
/// exchanges.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Update {
    /// The member the rumour is about.
    pub id: NodeId,
    /// Where it can be reached.
    pub addr: SocketAddr,
    /// Its incarnation, as the rumour's source knew it.
    pub incarnation: u64,
    /// What the rumour says.
    pub status: Status,
    /// Who said it: the accuser of a suspicion, the declarer of a death (the
    /// member itself for alive and left).
    pub from: NodeId,
    /// The member's tags at this incarnation, when the rumour carries them
    /// (`None`: it says nothing about tags). A member that never set tags
    /// sends none, so tags cost nothing until they are used.
    pub tags: Option<Tags>,
}

/// The body of a packet.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Message {
    /// "I am alive": sent by a member to each of its observers every
    /// heartbeat interval; the observer feeds its φ detector with it.
    Heartbeat,
    /// A direct probe of `target`; answered with [`Message::Ack`] by the
    /// target if it is that exact identity.
    Ping {
        /// Sequence number, echoed in the answer.
        seq: u32,
        /// Who the sender believes it is probing.
        target: NodeId,
    },
    /// Please probe `target` for me, and relay the answer (an indirect
    /// probe).
    PingReq {
        /// The requester's sequence number, echoed in the relayed answer.
        seq: u32,
        /// The member to probe.
        target: NodeId,
        /// Its address.
        target_addr: SocketAddr,
        /// Whether to answer [`Message::Nack`] if the target does not answer
        /// in time.
        nack: bool,
    },
    /// The answer to a ping (direct, or relayed for a ping-req).
    Ack {
        /// The probe's sequence number.
        seq: u32,
    },
    /// "I asked, and the target did not answer in time" (from an
    /// intermediary of a ping-req).
    Nack {
        /// The probe's sequence number.
        seq: u32,
    },
    /// Nothing but the piggybacked rumours (a gossip round).
    Gossip,
    /// "Send me your heartbeats too, for `lease_ms`": an application watch
    /// of a member that does not heartbeat this node by the ring. Renewed
    /// before the lease ends; a lease of 0 cancels.
    Subscribe {
        /// How long the subscription lasts, in ms (capped by the receiver).
        lease_ms: u32,
    },
    /// Anti-entropy: the sender's full membership view. `reply` asks the
    /// receiver to answer with its own. Carried as a stream message (may
    /// exceed a datagram).
    PushPull {
        /// Whether an answer is wanted.
        reply: bool,
        /// Every member the sender knows, itself included.
        members: Vec<Update>,
    },
    /// Anti-entropy, first step: the digest of the sender's view
    /// ([`Config::push_pull_digest`](crate::Config::push_pull_digest)). A
    /// receiver whose own view has another digest answers with a
    /// [`Message::PushPull`] asking for the sender's view; one with the
    /// same digest does nothing. Carried as a stream message, as push-pulls
    /// are, so that it gets through loss.
    Digest {
        /// The digest of every member the sender knows, itself included.
        view: u64,
    },
    /// The sender's reachability row, while a downing strategy decides:
    /// the members it finds unreachable itself (see
    /// [`crate::downing`]). Taken only from the member itself, as a
    /// datagram from its own address. A row too long for one datagram
    /// goes in pages, all of one `version`.
    Reachability {
        /// Grows with every change of the sender's row (within its
        /// generation).
        version: u64,
        /// This page, from 0.
        page: u16,
        /// How many pages the row takes (at least 1).
        pages: u16,
        /// The members on this page, and what the sender says of each.
        entries: Vec<RowEntry>,
    },
}

/// One member of a reachability row ([`Message::Reachability`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RowEntry {
    /// The member, in the generation the row is about.
    pub id: NodeId,
    /// What the row's sender says of it.
    pub mark: Mark,
}

/// What a reachability row says of a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mark {
    /// The sender finds it unreachable now.
    Unreachable,
    /// The sender found it unreachable lately, and it came back: it flaps.
    /// Counted as unreachable only by a decision taken because the picture
    /// would not hold still.
    Flapped,
    /// The sender's outlier detection ejected it (gray evidence): counted
    /// towards its downing only when enough members say so
    /// ([`GraySharing`](crate::gray::GraySharing)).
    Ejected,
}

impl Message {
    /// The message's kind.
    pub fn kind(&self) -> MessageKind {
        match self {
            Message::Heartbeat => MessageKind::Heartbeat,
            Message::Ping { .. } => MessageKind::Ping,
            Message::PingReq { .. } => MessageKind::PingReq,
            Message::Ack { .. } => MessageKind::Ack,
            Message::Nack { .. } => MessageKind::Nack,
            Message::Gossip => MessageKind::Gossip,
            Message::PushPull { .. } => MessageKind::PushPull,
            Message::Subscribe { .. } => MessageKind::Subscribe,
            Message::Digest { .. } => MessageKind::Digest,
            Message::Reachability { .. } => MessageKind::Reachability,
        }
    }
}

/// The kinds of [`Message`], for counters keyed by kind
/// ([`crate::KindCounts`]) and for the wire's kind byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum MessageKind {
    /// [`Message::Heartbeat`].
    Heartbeat,
    /// [`Message::Ping`].
    Ping,
    /// [`Message::PingReq`].
    PingReq,
    /// [`Message::Ack`].
    Ack,
    /// [`Message::Nack`].
    Nack,
    /// [`Message::Gossip`].
    Gossip,
    /// [`Message::PushPull`].
    PushPull,
    /// [`Message::Subscribe`].
    Subscribe,
    /// [`Message::Digest`].
    Digest,
    /// [`Message::Reachability`].
    Reachability,
}

impl MessageKind {
    /// Every kind, in wire order.
    pub const ALL: [MessageKind; 10] = [
        MessageKind::Heartbeat,
        MessageKind::Ping,
        MessageKind::PingReq,
        MessageKind::Ack,
        MessageKind::Nack,
        MessageKind::Gossip,
        MessageKind::PushPull,
        MessageKind::Subscribe,
        MessageKind::Digest,
        MessageKind::Reachability,
    ];

    /// The number of kinds.
    pub const COUNT: usize = MessageKind::ALL.len();

    /// A short name: `heartbeat`, `ping`, `ping-req`, `ack`, `nack`,
    /// `gossip`, `push-pull`, `subscribe`, `digest`, `reachability`.
    pub fn name(self) -> &'static str {
        match self {
            MessageKind::Heartbeat => "heartbeat",
            MessageKind::Ping => "ping",
            MessageKind::PingReq => "ping-req",
            MessageKind::Ack => "ack",
            MessageKind::Nack => "nack",
            MessageKind::Gossip => "gossip",
            MessageKind::PushPull => "push-pull",
            MessageKind::Subscribe => "subscribe",
            MessageKind::Digest => "digest",
            MessageKind::Reachability => "reachability",
        }
    }

    /// The position of this kind in [`MessageKind::ALL`].
    pub fn index(self) -> usize {
        match self {
            MessageKind::Heartbeat => 0,
            MessageKind::Ping => 1,
            MessageKind::PingReq => 2,
            MessageKind::Ack => 3,
            MessageKind::Nack => 4,
            MessageKind::Gossip => 5,
            MessageKind::PushPull => 6,
            MessageKind::Subscribe => 7,
            MessageKind::Digest => 8,
            MessageKind::Reachability => 9,
        }
    }

    /// Whether messages of this kind travel only as stream messages
    /// (reliable, possibly larger than a datagram). Other kinds go as
    /// datagrams, but for a stream ping and its ack, and for every message
    /// in stream-only mode ([`Transmit::stream`](crate::Transmit::stream)).
    pub fn is_stream(self) -> bool {
        matches!(self, MessageKind::PushPull | MessageKind::Digest)
    }
}

impl std::fmt::Display for MessageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One unit on the wire: the cluster, the sender, a message, and piggybacked
/// rumours.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Packet {
    /// Cluster id: packets of another cluster are rejected.
    pub cluster: u64,
    /// The sender's identity.
    pub from: NodeId,
    /// The sender's incarnation.
    pub incarnation: u64,
    /// The message.
    pub message: Message,
    /// Piggybacked rumours.
    pub updates: Vec<Update>,
}
