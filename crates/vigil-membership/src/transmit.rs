//! What the node asks its runtime to send.

use std::net::SocketAddr;

use crate::message::MessageKind;

/// Something the node wants sent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Transmit {
    /// Destination.
    pub to: SocketAddr,
    /// The encoded packet.
    pub bytes: Vec<u8>,
    /// The message's kind.
    pub kind: MessageKind,
    /// Whether it is a stream message, to be sent reliably and handed to the
    /// receiver's [`Node::handle_stream`](crate::Node::handle_stream): a
    /// push-pull or a digest, a stream ping or its ack
    /// ([`Config::stream_ping`](crate::Config::stream_ping)), or any message
    /// in stream-only mode ([`Config::stream_only`](crate::Config::stream_only));
    /// otherwise a datagram of at most [`MAX_DATAGRAM`](crate::wire::MAX_DATAGRAM)
    /// bytes, for [`Node::handle_datagram`](crate::Node::handle_datagram).
    pub stream: bool,
}
