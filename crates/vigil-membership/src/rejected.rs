//! Why the node dropped a datagram or stream message.

use std::fmt;

use crate::message::MessageKind;
use crate::wire::WireError;

/// Why input was dropped. The node's state is unchanged, and the rejection
/// is counted in [`Stats`](crate::Stats); a runtime only needs to log it, if
/// that.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejected {
    /// Not a valid packet (or longer than the limit for its transport:
    /// checked before anything is decoded).
    Malformed(WireError),
    /// A packet of another cluster.
    WrongCluster {
        /// Its cluster id.
        cluster: u64,
    },
    /// A packet claiming to come from this node's own name.
    FromSelf,
    /// A message on the wrong transport: a push-pull in a datagram (any
    /// message may come on a stream).
    WrongTransport {
        /// The message's kind.
        kind: MessageKind,
    },
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejected::Malformed(e) => write!(f, "malformed packet: {e}"),
            Rejected::WrongCluster { cluster } => write!(f, "packet of cluster {cluster:#x}"),
            Rejected::FromSelf => f.write_str("packet claims to come from this node"),
            Rejected::WrongTransport { kind } if kind.is_stream() => {
                write!(f, "a {kind} message must come as a stream message, not a datagram")
            }
            Rejected::WrongTransport { kind } => {
                write!(f, "a {kind} message must come as a datagram, not a stream message")
            }
        }
    }
}

/// The message already includes the wire error's, so it is not also given
/// as a source (a chain would print it twice).
impl std::error::Error for Rejected {}
