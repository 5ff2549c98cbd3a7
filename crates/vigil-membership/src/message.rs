//! What members say to each other: the protocol's messages as data.
//!
//! [`crate::wire`] turns a [`Packet`] into bytes and back; this module only
//! defines what a packet means.

use std::net::SocketAddr;

/// A member's identity: a stable name plus the generation of the process
/// that carries it. A restarted process takes a new (higher) generation, and
/// a higher generation supersedes everything said about an older one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    /// Stable name, 1 to [`MAX_NAME_LEN`] bytes of UTF-8.
    pub name: String,
    /// Process generation (for example the start time in milliseconds).
    pub generation: u64,
}

/// The longest member name, in bytes.
pub const MAX_NAME_LEN: usize = 64;

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
}

/// The body of a packet.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
    /// Anti-entropy: the sender's full membership view. `reply` asks the
    /// receiver to answer with its own. Carried as a stream message (may
    /// exceed a datagram).
    PushPull {
        /// Whether an answer is wanted.
        reply: bool,
        /// Every member the sender knows, itself included.
        members: Vec<Update>,
    },
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
