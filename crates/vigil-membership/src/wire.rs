//! The wire format: a [`Packet`] as bytes, and back.
//!
//! This is vigil's own versioned binary format. Every integer is big-endian
//! and fixed-width (there are no varints), so the size of an encoding depends
//! only on the lengths of the names in it, the address families and the
//! number of updates. [`encoded_len`] and [`update_len`] compute it exactly
//! without encoding anything, so a sender can put as many piggybacked updates
//! in a datagram as fit under [`MAX_DATAGRAM`].
//!
//! # Packet
//!
//! | field | bytes | encoding |
//! |---|---|---|
//! | magic | 2 | `"VG"` ([`MAGIC`]) |
//! | version | 1 | [`VERSION`] |
//! | message kind | 1 | see [Messages](#messages) |
//! | cluster id | 8 | u64 |
//! | from | 10 to 73 | node id |
//! | incarnation | 8 | u64 (fixed width, not a varint) |
//! | message body | 0 or more | see [Messages](#messages) |
//! | update count | 1 | u8, at most [`MAX_UPDATES`] |
//! | updates | 36 to 174 each | that many updates, back to back |
//!
//! # Messages
//!
//! | kind | message | body |
//! |---|---|---|
//! | 1 | [`Message::Heartbeat`] | empty |
//! | 2 | [`Message::Ping`] | seq (u32) · target (node id) |
//! | 3 | [`Message::PingReq`] | seq (u32) · target (node id) · target address · nack (bool) |
//! | 4 | [`Message::Ack`] | seq (u32) |
//! | 5 | [`Message::Nack`] | seq (u32) |
//! | 6 | [`Message::Gossip`] | empty (the updates are the point) |
//! | 7 | [`Message::PushPull`] | reply (bool) · member count (u16, at most [`MAX_MEMBERS`]) · members (updates) |
//!
//! A push-pull carries its members in its body and may still carry
//! piggybacked updates after it, like every other message.
//!
//! # Fields
//!
//! | field | bytes | encoding |
//! |---|---|---|
//! | node id | 1 + n + 8 | name length n (u8, 1 to [`MAX_NAME_LEN`]) · name (n bytes of UTF-8) · generation (u64) |
//! | address | 7 or 19 | family (4 or 6) · IP address (4 or 16 bytes) · port (u16) |
//! | update | 36 to 174 | id (node id) · address · incarnation (u64) · status · from (node id) |
//! | status | 1 | 1 alive, 2 suspect, 3 dead, 4 left |
//! | bool | 1 | 0 false, 1 true |
//!
//! Kind and status 0 are never valid, so a buffer of zeros is rejected early.
//!
//! **IPv6 flow label and scope id are not carried**: an IPv6 address decodes
//! with `flowinfo` and `scope_id` 0, so a round trip is exact for IPv6
//! addresses where both are zero (a scope id only means something on the host
//! that chose it anyway). IPv4-mapped IPv6 addresses stay IPv6.
//!
//! # Strictness
//!
//! [`decode`] accepts exactly the bytes [`encode`] produces and nothing else:
//! it rejects a wrong magic or version, unknown kinds, statuses and address
//! families, booleans other than 0 and 1, empty names, names longer than
//! [`MAX_NAME_LEN`], names that are not UTF-8, truncated input and trailing
//! bytes. Every packet therefore has exactly one encoding: if
//! `decode(bytes, max)` returns `Ok(p)`, then `encode(&p, max)` returns
//! `bytes` again.
//!
//! Decoding never panics. Input longer than the caller's `max` is rejected
//! before a single byte is read, and a member or update count is checked
//! against the bytes that remain (at 36 bytes per update at least) before
//! anything is allocated for it, so memory stays proportional to the input.
//!
//! # Versions
//!
//! The version byte is checked right after the magic and before anything else,
//! since a later version may change everything that follows it. Any change to
//! this layout takes a new [`VERSION`]; a receiver rejects versions other than
//! its own with [`WireError::UnsupportedVersion`].
//!
//! # Example
//!
//! ```
//! use vigil_membership::message::{Message, NodeId, Packet};
//! use vigil_membership::wire::{self, MAX_DATAGRAM};
//!
//! let packet = Packet {
//!     cluster: 7,
//!     from: NodeId::new("node-a", 1),
//!     incarnation: 3,
//!     message: Message::Ack { seq: 42 },
//!     updates: Vec::new(),
//! };
//! let bytes = wire::encode(&packet, MAX_DATAGRAM)?;
//! assert_eq!(bytes.len(), wire::encoded_len(&packet));
//! assert_eq!(wire::decode(&bytes, MAX_DATAGRAM)?, packet);
//! # Ok::<(), wire::WireError>(())
//! ```

// Bytes from the network must never cause a panic: no unwrap, no indexing,
// no `as` casts (which could silently truncate) in this module.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::as_conversions
)]

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crate::message::{MAX_NAME_LEN, Message, NodeId, Packet, Status, Update};

/// The first two bytes of every packet.
pub const MAGIC: [u8; 2] = *b"VG";

/// The version of the layout this module reads and writes.
pub const VERSION: u8 = 1;

/// The largest datagram, in bytes: pass it as `max` for every message except
/// push-pull so that datagrams never exceed it.
pub const MAX_DATAGRAM: usize = 1400;

/// The largest stream message ([`Message::PushPull`]), in bytes.
pub const MAX_STREAM: usize = 4 * 1024 * 1024;

/// The most piggybacked updates in one packet (the count is one byte).
pub const MAX_UPDATES: usize = 255;

/// The most members in one [`Message::PushPull`] (the count is two bytes).
pub const MAX_MEMBERS: usize = 65_535;

/// Magic, version, message kind and cluster id.
const PREFIX_LEN: usize = 2 + 1 + 1 + 8;
/// Name length and generation, around the name itself.
const NODE_OVERHEAD: usize = 1 + 8;
/// The shortest node id: a one-byte name.
const MIN_NODE_LEN: usize = NODE_OVERHEAD + 1;
/// The shortest address: IPv4.
const MIN_ADDR_LEN: usize = 1 + 4 + 2;
/// The shortest update, used to bound counts by the remaining input.
const MIN_UPDATE_LEN: usize = MIN_NODE_LEN + MIN_ADDR_LEN + 8 + 1 + MIN_NODE_LEN;

/// The message kind byte. Adding a [`Message`] variant breaks the exhaustive
/// matches below, so it cannot be forgotten here.
#[derive(Clone, Copy)]
enum Kind {
    Heartbeat,
    Ping,
    PingReq,
    Ack,
    Nack,
    Gossip,
    PushPull,
}

impl Kind {
    const ALL: [Kind; 7] =
        [Kind::Heartbeat, Kind::Ping, Kind::PingReq, Kind::Ack, Kind::Nack, Kind::Gossip, Kind::PushPull];

    fn of(message: &Message) -> Kind {
        match message {
            Message::Heartbeat => Kind::Heartbeat,
            Message::Ping { .. } => Kind::Ping,
            Message::PingReq { .. } => Kind::PingReq,
            Message::Ack { .. } => Kind::Ack,
            Message::Nack { .. } => Kind::Nack,
            Message::Gossip => Kind::Gossip,
            Message::PushPull { .. } => Kind::PushPull,
        }
    }

    fn byte(self) -> u8 {
        match self {
            Kind::Heartbeat => 1,
            Kind::Ping => 2,
            Kind::PingReq => 3,
            Kind::Ack => 4,
            Kind::Nack => 5,
            Kind::Gossip => 6,
            Kind::PushPull => 7,
        }
    }

    fn from_byte(byte: u8) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.byte() == byte)
    }
}

const STATUS_ALIVE: u8 = 1;
const STATUS_SUSPECT: u8 = 2;
const STATUS_DEAD: u8 = 3;
const STATUS_LEFT: u8 = 4;

const FAMILY_V4: u8 = 4;
const FAMILY_V6: u8 = 6;

/// A packet could not be encoded or decoded.
///
/// From [`decode`], every variant means the input is junk or comes from a
/// peer that speaks another format or version: nothing was produced and the
/// caller should drop the input and count it, not treat it as fatal. From
/// [`encode`] and [`encode_into`], the caller is at fault (a packet too large
/// for `max`, a bad name, too many updates or members) and the output buffer
/// is left as it was. Only [`WireError::Bug`] is a defect of this module.
///
/// Messages are lowercase, have no trailing period and name the offending
/// value, so a caller can prefix context (`"from 10.0.0.7:7946: {err}"`).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The input ended in the middle of a field, or a count claims more
    /// entries than the remaining bytes can hold.
    Truncated {
        /// The field being read, for example `"incarnation"`.
        what: &'static str,
    },
    /// The input or the encoding is longer than the limit.
    TooLarge {
        /// The length, in bytes.
        len: usize,
        /// The limit the caller passed, in bytes.
        max: usize,
    },
    /// The input does not start with [`MAGIC`]: it is not a vigil packet.
    BadMagic,
    /// The input is a vigil packet of another [`VERSION`].
    UnsupportedVersion(u8),
    /// A message kind byte that no message has.
    UnknownMessage(u8),
    /// A status byte that no status has.
    UnknownStatus(u8),
    /// An address family byte other than 4 and 6.
    UnknownAddressFamily(u8),
    /// A member name that is empty, too long or not UTF-8.
    BadName {
        /// What is wrong with it.
        reason: BadNameReason,
    },
    /// A boolean byte other than 0 and 1.
    BadBool(u8),
    /// More piggybacked updates than [`MAX_UPDATES`] (encoding only; the
    /// count byte cannot say more).
    TooManyUpdates {
        /// The number of updates.
        n: usize,
    },
    /// More push-pull members than [`MAX_MEMBERS`] (encoding only; the count
    /// cannot say more).
    TooManyMembers {
        /// The number of members.
        n: usize,
    },
    /// Bytes left over after a complete packet.
    TrailingBytes {
        /// How many.
        n: usize,
    },
    /// The encoder wrote a different number of bytes than [`encoded_len`]
    /// computed. A defect of this module; please report it. Nothing was
    /// appended to the output.
    Bug(&'static str),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated { what } => write!(f, "truncated packet while reading the {what}"),
            WireError::TooLarge { len, max } => write!(f, "packet of {len} bytes exceeds the limit of {max} bytes"),
            WireError::BadMagic => write!(f, "bad magic: not a vigil packet (expected \"VG\")"),
            WireError::UnsupportedVersion(version) => {
                write!(f, "unsupported wire version {version} (this build speaks version {VERSION})")
            }
            WireError::UnknownMessage(kind) => write!(f, "unknown message kind {kind}"),
            WireError::UnknownStatus(status) => write!(f, "unknown member status {status}"),
            WireError::UnknownAddressFamily(family) => write!(f, "unknown address family {family} (expected 4 or 6)"),
            WireError::BadName { reason } => write!(f, "bad member name: {reason}"),
            WireError::BadBool(byte) => write!(f, "invalid boolean byte {byte} (expected 0 or 1)"),
            WireError::TooManyUpdates { n } => {
                write!(f, "{n} piggybacked updates exceed the maximum of {MAX_UPDATES}")
            }
            WireError::TooManyMembers { n } => write!(f, "{n} push-pull members exceed the maximum of {MAX_MEMBERS}"),
            WireError::TrailingBytes { n } => write!(f, "{n} trailing bytes after the packet"),
            WireError::Bug(what) => write!(f, "bug in the wire codec: {what}"),
        }
    }
}

impl std::error::Error for WireError {}

/// Why a member name was rejected (see [`WireError::BadName`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadNameReason {
    /// The name is empty.
    Empty,
    /// The name is longer than [`MAX_NAME_LEN`] bytes.
    TooLong {
        /// Its length, in bytes.
        len: usize,
    },
    /// The name is not valid UTF-8 (decoding only).
    InvalidUtf8 {
        /// The length of its longest valid UTF-8 prefix, in bytes.
        valid_up_to: usize,
    },
}

impl fmt::Display for BadNameReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadNameReason::Empty => write!(f, "empty"),
            BadNameReason::TooLong { len } => write!(f, "{len} bytes long, more than the maximum of {MAX_NAME_LEN}"),
            BadNameReason::InvalidUtf8 { valid_up_to } => {
                write!(f, "not valid utf-8 after the first {valid_up_to} bytes")
            }
        }
    }
}

/// Encodes a packet into a new buffer.
///
/// Pass [`MAX_DATAGRAM`] as `max` for datagrams and [`MAX_STREAM`] for
/// push-pull stream messages.
///
/// # Errors
///
/// - [`WireError::TooLarge`] if the encoding would be longer than `max`
///   bytes (checked before anything is written; see [`encoded_len`]);
/// - [`WireError::BadName`] if a name is empty or longer than
///   [`MAX_NAME_LEN`] bytes;
/// - [`WireError::TooManyUpdates`] or [`WireError::TooManyMembers`] past
///   [`MAX_UPDATES`] updates or [`MAX_MEMBERS`] push-pull members.
pub fn encode(packet: &Packet, max: usize) -> Result<Vec<u8>, WireError> {
    let mut out = Vec::new();
    encode_into(packet, max, &mut out)?;
    Ok(out)
}

/// Encodes a packet at the end of `out`, with the same rules as [`encode`].
///
/// Only the packet's own length counts against `max`, not what `out` already
/// holds.
///
/// # Errors
///
/// As [`encode`]. On error `out` is left exactly as it was.
pub fn encode_into(packet: &Packet, max: usize, out: &mut Vec<u8>) -> Result<(), WireError> {
    let len = encoded_len(packet);
    if len > max {
        return Err(WireError::TooLarge { len, max });
    }
    let start = out.len();
    out.reserve(len);
    let written = write_packet(packet, out).map(|()| out.len().saturating_sub(start));
    match written {
        Ok(written) if written == len => Ok(()),
        Ok(_) => {
            out.truncate(start);
            Err(WireError::Bug("encoded_len disagrees with the encoder"))
        }
        Err(err) => {
            out.truncate(start);
            Err(err)
        }
    }
}

/// The length of a packet's encoding, in bytes, computed without encoding.
///
/// Exact for every packet that [`encode`] accepts. For one it rejects (a bad
/// name, too many updates) it is the length the layout would take.
pub fn encoded_len(packet: &Packet) -> usize {
    let updates: usize = packet.updates.iter().map(update_len).sum();
    PREFIX_LEN + node_len(&packet.from) + 8 + body_len(&packet.message) + 1 + updates
}

/// The number of bytes one update adds to a packet's encoding (exact), as a
/// piggybacked update or as a push-pull member.
///
/// Between 36 bytes (two one-byte names, IPv4) and 174 (two 64-byte names,
/// IPv6).
pub fn update_len(update: &Update) -> usize {
    node_len(&update.id) + addr_len(&update.addr) + 8 + 1 + node_len(&update.from)
}

/// Decodes a packet from a whole buffer.
///
/// The buffer must hold exactly one packet: leftover bytes are an error. A
/// buffer longer than `max` is rejected before any of it is read. Never
/// panics, whatever the input.
///
/// # Errors
///
/// [`WireError::TooLarge`] if `bytes` is longer than `max`, and any other
/// [`WireError`] variant but [`WireError::TooManyUpdates`],
/// [`WireError::TooManyMembers`] and [`WireError::Bug`] for malformed input.
pub fn decode(bytes: &[u8], max: usize) -> Result<Packet, WireError> {
    if bytes.len() > max {
        return Err(WireError::TooLarge { len: bytes.len(), max });
    }
    let mut r = Reader { rest: bytes };
    if r.array::<2>("magic")? != MAGIC {
        return Err(WireError::BadMagic);
    }
    let version = r.u8("version")?;
    if version != VERSION {
        return Err(WireError::UnsupportedVersion(version));
    }
    let kind = r.u8("message kind")?;
    // Checked before the rest of the header so that an unknown kind is
    // reported as such even in a short packet.
    let kind = Kind::from_byte(kind).ok_or(WireError::UnknownMessage(kind))?;
    let cluster = r.u64("cluster id")?;
    let from = r.node("sender")?;
    let incarnation = r.u64("incarnation")?;
    let message = r.body(kind)?;
    let count = usize::from(r.u8("update count")?);
    let updates = r.updates(count, "updates")?;
    if !r.rest.is_empty() {
        return Err(WireError::TrailingBytes { n: r.rest.len() });
    }
    Ok(Packet { cluster, from, incarnation, message, updates })
}

fn node_len(id: &NodeId) -> usize {
    NODE_OVERHEAD + id.name.len()
}

fn addr_len(addr: &SocketAddr) -> usize {
    match addr {
        SocketAddr::V4(_) => MIN_ADDR_LEN,
        SocketAddr::V6(_) => 1 + 16 + 2,
    }
}

fn body_len(message: &Message) -> usize {
    match message {
        Message::Heartbeat | Message::Gossip => 0,
        Message::Ping { seq: _, target } => 4 + node_len(target),
        Message::PingReq { seq: _, target, target_addr, nack: _ } => 4 + node_len(target) + addr_len(target_addr) + 1,
        Message::Ack { seq: _ } | Message::Nack { seq: _ } => 4,
        Message::PushPull { reply: _, members } => 1 + 2 + members.iter().map(update_len).sum::<usize>(),
    }
}

fn write_packet(packet: &Packet, out: &mut Vec<u8>) -> Result<(), WireError> {
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(Kind::of(&packet.message).byte());
    out.extend_from_slice(&packet.cluster.to_be_bytes());
    write_node(&packet.from, out)?;
    out.extend_from_slice(&packet.incarnation.to_be_bytes());
    match &packet.message {
        Message::Heartbeat | Message::Gossip => {}
        Message::Ping { seq, target } => {
            out.extend_from_slice(&seq.to_be_bytes());
            write_node(target, out)?;
        }
        Message::PingReq { seq, target, target_addr, nack } => {
            out.extend_from_slice(&seq.to_be_bytes());
            write_node(target, out)?;
            write_addr(target_addr, out);
            out.push(u8::from(*nack));
        }
        Message::Ack { seq } | Message::Nack { seq } => out.extend_from_slice(&seq.to_be_bytes()),
        Message::PushPull { reply, members } => {
            out.push(u8::from(*reply));
            let n = u16::try_from(members.len()).map_err(|_| WireError::TooManyMembers { n: members.len() })?;
            out.extend_from_slice(&n.to_be_bytes());
            for member in members {
                write_update(member, out)?;
            }
        }
    }
    let n = u8::try_from(packet.updates.len()).map_err(|_| WireError::TooManyUpdates { n: packet.updates.len() })?;
    out.push(n);
    for update in &packet.updates {
        write_update(update, out)?;
    }
    Ok(())
}

fn write_node(id: &NodeId, out: &mut Vec<u8>) -> Result<(), WireError> {
    let len = id.name.len();
    if len == 0 {
        return Err(WireError::BadName { reason: BadNameReason::Empty });
    }
    let too_long = WireError::BadName { reason: BadNameReason::TooLong { len } };
    if len > MAX_NAME_LEN {
        return Err(too_long);
    }
    out.push(u8::try_from(len).map_err(|_| too_long)?);
    out.extend_from_slice(id.name.as_bytes());
    out.extend_from_slice(&id.generation.to_be_bytes());
    Ok(())
}

fn write_addr(addr: &SocketAddr, out: &mut Vec<u8>) {
    match addr {
        SocketAddr::V4(v4) => {
            out.push(FAMILY_V4);
            out.extend_from_slice(&v4.ip().octets());
        }
        // flowinfo and scope_id are deliberately not carried (module docs).
        SocketAddr::V6(v6) => {
            out.push(FAMILY_V6);
            out.extend_from_slice(&v6.ip().octets());
        }
    }
    out.extend_from_slice(&addr.port().to_be_bytes());
}

fn write_update(update: &Update, out: &mut Vec<u8>) -> Result<(), WireError> {
    write_node(&update.id, out)?;
    write_addr(&update.addr, out);
    out.extend_from_slice(&update.incarnation.to_be_bytes());
    out.push(match update.status {
        Status::Alive => STATUS_ALIVE,
        Status::Suspect => STATUS_SUSPECT,
        Status::Dead => STATUS_DEAD,
        Status::Left => STATUS_LEFT,
    });
    write_node(&update.from, out)
}

/// A cursor over untrusted input: every read is bounds-checked and reports
/// the field it was reading.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        let (head, tail) = self.rest.split_at_checked(n).ok_or(WireError::Truncated { what })?;
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], WireError> {
        let (head, tail) = self.rest.split_first_chunk::<N>().ok_or(WireError::Truncated { what })?;
        self.rest = tail;
        Ok(*head)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        let [byte] = self.array::<1>(what)?;
        Ok(byte)
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        self.array(what).map(u16::from_be_bytes)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        self.array(what).map(u32::from_be_bytes)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, WireError> {
        self.array(what).map(u64::from_be_bytes)
    }

    fn bool(&mut self, what: &'static str) -> Result<bool, WireError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(WireError::BadBool(other)),
        }
    }

    /// A node id; `what` names it in truncation errors ("sender", "target").
    fn node(&mut self, what: &'static str) -> Result<NodeId, WireError> {
        let len = usize::from(self.u8(what)?);
        if len == 0 {
            return Err(WireError::BadName { reason: BadNameReason::Empty });
        }
        if len > MAX_NAME_LEN {
            return Err(WireError::BadName { reason: BadNameReason::TooLong { len } });
        }
        let bytes = self.take(len, what)?;
        let name = std::str::from_utf8(bytes)
            .map_err(|e| WireError::BadName { reason: BadNameReason::InvalidUtf8 { valid_up_to: e.valid_up_to() } })?;
        let generation = self.u64(what)?;
        Ok(NodeId { name: name.to_owned(), generation })
    }

    fn addr(&mut self) -> Result<SocketAddr, WireError> {
        let ip = match self.u8("address family")? {
            FAMILY_V4 => std::net::IpAddr::V4(Ipv4Addr::from(self.array::<4>("ipv4 address")?)),
            FAMILY_V6 => std::net::IpAddr::V6(Ipv6Addr::from(self.array::<16>("ipv6 address")?)),
            other => return Err(WireError::UnknownAddressFamily(other)),
        };
        let port = self.u16("port")?;
        Ok(match ip {
            std::net::IpAddr::V4(ip) => SocketAddr::V4(SocketAddrV4::new(ip, port)),
            std::net::IpAddr::V6(ip) => SocketAddr::V6(SocketAddrV6::new(ip, port, 0, 0)),
        })
    }

    fn status(&mut self) -> Result<Status, WireError> {
        match self.u8("status")? {
            STATUS_ALIVE => Ok(Status::Alive),
            STATUS_SUSPECT => Ok(Status::Suspect),
            STATUS_DEAD => Ok(Status::Dead),
            STATUS_LEFT => Ok(Status::Left),
            other => Err(WireError::UnknownStatus(other)),
        }
    }

    fn update(&mut self) -> Result<Update, WireError> {
        let id = self.node("update id")?;
        let addr = self.addr()?;
        let incarnation = self.u64("update incarnation")?;
        let status = self.status()?;
        let from = self.node("update source")?;
        Ok(Update { id, addr, incarnation, status, from })
    }

    /// `count` updates, after checking that the remaining input could hold
    /// them, so an untrusted count cannot make us allocate more than the
    /// input justifies.
    fn updates(&mut self, count: usize, what: &'static str) -> Result<Vec<Update>, WireError> {
        if count.checked_mul(MIN_UPDATE_LEN).is_none_or(|least| least > self.rest.len()) {
            return Err(WireError::Truncated { what });
        }
        let mut updates = Vec::with_capacity(count);
        for _ in 0..count {
            updates.push(self.update()?);
        }
        Ok(updates)
    }

    fn body(&mut self, kind: Kind) -> Result<Message, WireError> {
        Ok(match kind {
            Kind::Heartbeat => Message::Heartbeat,
            Kind::Ping => {
                let seq = self.u32("sequence number")?;
                let target = self.node("target")?;
                Message::Ping { seq, target }
            }
            Kind::PingReq => {
                let seq = self.u32("sequence number")?;
                let target = self.node("target")?;
                let target_addr = self.addr()?;
                let nack = self.bool("nack flag")?;
                Message::PingReq { seq, target, target_addr, nack }
            }
            Kind::Ack => Message::Ack { seq: self.u32("sequence number")? },
            Kind::Nack => Message::Nack { seq: self.u32("sequence number")? },
            Kind::Gossip => Message::Gossip,
            Kind::PushPull => {
                let reply = self.bool("reply flag")?;
                let count = usize::from(self.u16("member count")?);
                let members = self.updates(count, "members")?;
                Message::PushPull { reply, members }
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::as_conversions)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v4(a: [u8; 4], port: u16) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(a), port))
    }

    fn v6(a: [u8; 16], port: u16) -> SocketAddr {
        SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(a), port, 0, 0))
    }

    fn update(name: &str, addr: SocketAddr) -> Update {
        Update { id: NodeId::new(name, 11), addr, incarnation: 5, status: Status::Suspect, from: NodeId::new(name, 12) }
    }

    fn packet(message: Message, updates: Vec<Update>) -> Packet {
        Packet { cluster: 0xC1, from: NodeId::new("a", 1), incarnation: 2, message, updates }
    }

    fn ping(name_len: usize, updates: Vec<Update>) -> Packet {
        Packet {
            cluster: 1,
            from: NodeId::new("f".repeat(name_len), 1),
            incarnation: 1,
            message: Message::Ping { seq: 1, target: NodeId::new("t".repeat(name_len), 1) },
            updates,
        }
    }

    // ---- strategies ----

    /// 1 to 64 bytes of UTF-8, mostly ASCII with multi-byte characters mixed
    /// in, and sometimes exactly the longest allowed name.
    fn name() -> impl Strategy<Value = String> {
        let mixed = prop::collection::vec(prop_oneof![3 => prop::char::range('a', 'z'), 1 => any::<char>()], 1..=24)
            .prop_map(|chars| {
                let mut name = String::new();
                for c in chars {
                    if name.len() + c.len_utf8() > MAX_NAME_LEN {
                        break;
                    }
                    name.push(c);
                }
                name
            });
        let ascii = prop::collection::vec(prop::char::range('!', '~'), 1..=MAX_NAME_LEN)
            .prop_map(|chars| chars.into_iter().collect::<String>());
        prop_oneof![4 => mixed, 1 => ascii, 1 => Just("ü".repeat(MAX_NAME_LEN / 2))]
    }

    fn node_id() -> impl Strategy<Value = NodeId> {
        (name(), any::<u64>()).prop_map(|(name, generation)| NodeId { name, generation })
    }

    /// IPv4 and IPv6 addresses; IPv6 with zero flowinfo and scope id, the
    /// only ones that round-trip.
    fn addr() -> impl Strategy<Value = SocketAddr> {
        prop_oneof![
            (any::<[u8; 4]>(), any::<u16>()).prop_map(|(a, p)| v4(a, p)),
            (any::<[u8; 16]>(), any::<u16>()).prop_map(|(a, p)| v6(a, p)),
        ]
    }

    fn status() -> impl Strategy<Value = Status> {
        prop_oneof![Just(Status::Alive), Just(Status::Suspect), Just(Status::Dead), Just(Status::Left)]
    }

    fn any_update() -> impl Strategy<Value = Update> {
        (node_id(), addr(), any::<u64>(), status(), node_id())
            .prop_map(|(id, addr, incarnation, status, from)| Update { id, addr, incarnation, status, from })
    }

    fn message() -> impl Strategy<Value = Message> {
        prop_oneof![
            Just(Message::Heartbeat),
            (any::<u32>(), node_id()).prop_map(|(seq, target)| Message::Ping { seq, target }),
            (any::<u32>(), node_id(), addr(), any::<bool>())
                .prop_map(|(seq, target, target_addr, nack)| Message::PingReq { seq, target, target_addr, nack }),
            any::<u32>().prop_map(|seq| Message::Ack { seq }),
            any::<u32>().prop_map(|seq| Message::Nack { seq }),
            Just(Message::Gossip),
            (any::<bool>(), prop::collection::vec(any_update(), 0..24))
                .prop_map(|(reply, members)| Message::PushPull { reply, members }),
        ]
    }

    fn any_packet() -> impl Strategy<Value = Packet> {
        (any::<u64>(), node_id(), any::<u64>(), message(), prop::collection::vec(any_update(), 0..12)).prop_map(
            |(cluster, from, incarnation, message, updates)| Packet { cluster, from, incarnation, message, updates },
        )
    }

    // ---- properties ----

    proptest! {
        #[test]
        fn every_packet_round_trips_and_its_length_is_predicted(p in any_packet()) {
            let bytes = encode(&p, MAX_STREAM).unwrap();
            prop_assert_eq!(encoded_len(&p), bytes.len());
            prop_assert_eq!(decode(&bytes, MAX_STREAM).unwrap(), p.clone());
            // The same bytes, appended after what the buffer already holds.
            let mut out = b"prefix".to_vec();
            encode_into(&p, bytes.len(), &mut out).unwrap();
            prop_assert_eq!(&out[..6], b"prefix");
            prop_assert_eq!(&out[6..], &bytes[..]);
        }

        #[test]
        fn each_update_adds_exactly_its_update_len(p in any_packet(), extra in any_update()) {
            let mut more = p.clone();
            more.updates.push(extra.clone());
            prop_assert_eq!(encoded_len(&more), encoded_len(&p) + update_len(&extra));
            prop_assert_eq!(encode(&more, MAX_STREAM).unwrap().len(), encoded_len(&p) + update_len(&extra));
        }

        #[test]
        fn every_truncation_of_a_valid_encoding_is_rejected(p in any_packet()) {
            let bytes = encode(&p, MAX_STREAM).unwrap();
            for cut in 0..bytes.len() {
                let result = decode(&bytes[..cut], MAX_STREAM);
                prop_assert!(matches!(result, Err(WireError::Truncated { .. })), "cut at {}: {:?}", cut, result);
            }
        }

        #[test]
        fn trailing_bytes_are_rejected(p in any_packet(), extra in prop::collection::vec(any::<u8>(), 1..16)) {
            let mut bytes = encode(&p, MAX_STREAM).unwrap();
            bytes.extend_from_slice(&extra);
            prop_assert_eq!(decode(&bytes, MAX_STREAM), Err(WireError::TrailingBytes { n: extra.len() }));
        }

        /// Corrupted packets never panic, and whatever still decodes is the
        /// unique encoding of what it decodes to.
        #[test]
        fn byte_flips_never_panic_and_what_decodes_is_canonical(
            p in any_packet(),
            flips in prop::collection::vec((any::<prop::sample::Index>(), 1..=255u8), 1..6),
        ) {
            let mut bytes = encode(&p, MAX_STREAM).unwrap();
            for (at, mask) in flips {
                let i = at.index(bytes.len());
                bytes[i] ^= mask;
            }
            if let Ok(q) = decode(&bytes, MAX_STREAM) {
                prop_assert_eq!(encode(&q, MAX_STREAM).unwrap(), bytes);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            kind in 0..9u8,
            tail in prop::collection::vec(any::<u8>(), 0..300),
        ) {
            // Raw, and behind a valid prefix so that decoding gets further in.
            let _ = decode(&tail, MAX_STREAM);
            let mut bytes = vec![b'V', b'G', VERSION, kind];
            bytes.extend_from_slice(&tail);
            if let Ok(q) = decode(&bytes, MAX_STREAM) {
                prop_assert_eq!(encode(&q, MAX_STREAM).unwrap(), bytes);
            }
        }
    }

    // ---- the format itself ----

    /// Pins the layout: if this changes, so must [`VERSION`].
    #[test]
    fn a_ping_req_with_one_update_has_this_exact_encoding() {
        let p = Packet {
            cluster: 0x0102_0304_0506_0708,
            from: NodeId::new("ab", 9),
            incarnation: 3,
            message: Message::PingReq {
                seq: 0x0A0B_0C0D,
                target: NodeId::new("é", 4),
                target_addr: v6([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 7946),
                nack: true,
            },
            updates: vec![Update {
                id: NodeId::new("c", 5),
                addr: v4([10, 0, 0, 7], 0x1F4A),
                incarnation: 6,
                status: Status::Dead,
                from: NodeId::new("ab", 9),
            }],
        };
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            &b"VG"[..], &[1, 3],                  // magic, version, kind 3 (ping-req)
            &[1, 2, 3, 4, 5, 6, 7, 8],            // cluster
            &[2], b"ab", &[0, 0, 0, 0, 0, 0, 0, 9], // from
            &[0, 0, 0, 0, 0, 0, 0, 3],            // incarnation
            &[0x0A, 0x0B, 0x0C, 0x0D],            // seq
            &[2, 0xC3, 0xA9], &[0, 0, 0, 0, 0, 0, 0, 4], // target "é"
            &[6, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x1F, 0x0A], // [2001:db8::1]:7946
            &[1],                                 // nack
            &[1],                                 // one update
            &[1], b"c", &[0, 0, 0, 0, 0, 0, 0, 5], // id
            &[4, 10, 0, 0, 7, 0x1F, 0x4A],        // 10.0.0.7:8010
            &[0, 0, 0, 0, 0, 0, 0, 6],            // incarnation
            &[3],                                 // dead
            &[2], b"ab", &[0, 0, 0, 0, 0, 0, 0, 9], // from
        ]
        .concat();
        assert_eq!(encode(&p, MAX_DATAGRAM).unwrap(), expected);
        assert_eq!(decode(&expected, MAX_DATAGRAM).unwrap(), p);
    }

    #[test]
    fn every_message_kind_round_trips_at_the_extremes() {
        let long = NodeId::new("x".repeat(MAX_NAME_LEN), u64::MAX);
        let max_v6 = v6([0xFF; 16], u16::MAX);
        let members = vec![update("m", v4([0; 4], 0)), update(&"y".repeat(MAX_NAME_LEN), max_v6)];
        for message in [
            Message::Heartbeat,
            Message::Ping { seq: u32::MAX, target: long.clone() },
            Message::PingReq { seq: 0, target: long.clone(), target_addr: max_v6, nack: false },
            Message::Ack { seq: 0 },
            Message::Nack { seq: u32::MAX },
            Message::Gossip,
            Message::PushPull { reply: true, members: Vec::new() },
            Message::PushPull { reply: false, members },
        ] {
            let p =
                Packet { cluster: u64::MAX, from: long.clone(), incarnation: u64::MAX, message, updates: Vec::new() };
            let bytes = encode(&p, MAX_STREAM).unwrap();
            assert_eq!(bytes.len(), encoded_len(&p));
            assert_eq!(decode(&bytes, MAX_STREAM).unwrap(), p);
        }
    }

    #[test]
    fn update_len_spans_36_to_174_bytes() {
        assert_eq!(update_len(&update("a", v4([1, 2, 3, 4], 5))), MIN_UPDATE_LEN);
        assert_eq!(MIN_UPDATE_LEN, 36);
        assert_eq!(update_len(&update(&"a".repeat(MAX_NAME_LEN), v6([1; 16], 5))), 174);
    }

    #[test]
    fn ipv6_flowinfo_and_scope_id_are_not_carried() {
        let ip = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
        let scoped = SocketAddr::V6(SocketAddrV6::new(ip, 7946, 0x12345, 3));
        let p = packet(Message::Heartbeat, vec![update("n", scoped)]);
        let decoded = decode(&encode(&p, MAX_DATAGRAM).unwrap(), MAX_DATAGRAM).unwrap();
        assert_eq!(decoded.updates[0].addr, SocketAddr::V6(SocketAddrV6::new(ip, 7946, 0, 0)));
    }

    // ---- capacity ----

    /// How many updates about members with 20-byte names (and a 20-byte
    /// sender and target) fit in one datagram:
    ///
    /// - a node id with a 20-byte name is 1 + 20 + 8 = 29 bytes;
    /// - an update is 29 + 7 + 8 + 1 + 29 = 74 bytes with IPv4, 86 with IPv6;
    /// - a ping without updates is 12 + 29 + 8 + (4 + 29) + 1 = 83 bytes;
    /// - so (1400 - 83) / 74 = 17 IPv4 updates fit (1341 bytes; 18 take
    ///   1415), or 15 IPv6 ones (1373 bytes);
    /// - a heartbeat (50 bytes without updates) carries 18 IPv4 updates
    ///   (1382 bytes).
    #[test]
    fn seventeen_updates_with_20_byte_names_fit_in_a_ping_datagram() {
        let up4 = update(&"n".repeat(20), v4([10, 1, 2, 3], 7946));
        let up6 = update(&"n".repeat(20), v6([0x20; 16], 7946));
        assert_eq!((update_len(&up4), update_len(&up6)), (74, 86));
        let empty = ping(20, Vec::new());
        assert_eq!(encoded_len(&empty), 83);

        let fits = |template: &Packet, up: &Update| {
            let mut p = template.clone();
            while encoded_len(&p) + update_len(up) <= MAX_DATAGRAM {
                p.updates.push(up.clone());
            }
            p
        };
        let full4 = fits(&empty, &up4);
        assert_eq!((full4.updates.len(), encoded_len(&full4)), (17, 1341));
        assert_eq!(encode(&full4, MAX_DATAGRAM).unwrap().len(), 1341);
        let full6 = fits(&empty, &up6);
        assert_eq!((full6.updates.len(), encoded_len(&full6)), (15, 1373));
        let heartbeat = Packet { message: Message::Heartbeat, ..empty };
        let full_hb = fits(&heartbeat, &up4);
        assert_eq!((full_hb.updates.len(), encoded_len(&full_hb)), (18, 1382));

        let mut over = full4;
        over.updates.push(up4);
        assert_eq!(encode(&over, MAX_DATAGRAM), Err(WireError::TooLarge { len: 1415, max: MAX_DATAGRAM }));
    }

    // ---- every error ----

    /// Garbage that would fail on its magic is refused for its size first:
    /// nothing is read from an oversized buffer.
    #[test]
    fn an_oversized_datagram_is_rejected_before_reading() {
        let junk = vec![0xFF; MAX_DATAGRAM + 1];
        assert_eq!(decode(&junk, MAX_DATAGRAM), Err(WireError::TooLarge { len: 1401, max: 1400 }));
        assert_eq!(decode(&junk[..MAX_DATAGRAM], MAX_DATAGRAM), Err(WireError::BadMagic));
        // And a valid packet is refused under a limit smaller than itself.
        let bytes = encode(&packet(Message::Ack { seq: 1 }, Vec::new()), MAX_DATAGRAM).unwrap();
        let len = bytes.len();
        assert_eq!(decode(&bytes, len - 1), Err(WireError::TooLarge { len, max: len - 1 }));
    }

    #[test]
    fn encoding_past_the_limit_is_refused_and_leaves_the_buffer_alone() {
        let p = packet(Message::Heartbeat, vec![update("n", v4([1, 1, 1, 1], 1))]);
        let len = encoded_len(&p);
        let mut out = vec![9, 9];
        assert_eq!(encode_into(&p, len - 1, &mut out), Err(WireError::TooLarge { len, max: len - 1 }));
        assert_eq!(out, [9, 9]);
        encode_into(&p, len, &mut out).unwrap();
        assert_eq!(out.len(), 2 + len);
    }

    fn valid_ack() -> Vec<u8> {
        encode(&packet(Message::Ack { seq: 1 }, Vec::new()), MAX_DATAGRAM).unwrap()
    }

    #[test]
    fn bad_magic_is_rejected() {
        let mut bytes = valid_ack();
        bytes[1] = b'X';
        assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::BadMagic));
        assert_eq!(decode(b"vg", MAX_DATAGRAM), Err(WireError::BadMagic));
        assert_eq!(decode(b"V", MAX_DATAGRAM), Err(WireError::Truncated { what: "magic" }));
    }

    #[test]
    fn another_version_is_rejected_before_the_rest_is_read() {
        assert_eq!(decode(b"VG\x02", MAX_DATAGRAM), Err(WireError::UnsupportedVersion(2)));
        assert_eq!(decode(b"VG\x00junk", MAX_DATAGRAM), Err(WireError::UnsupportedVersion(0)));
    }

    #[test]
    fn unknown_message_kinds_are_rejected() {
        for kind in [0, 8, 255] {
            let mut bytes = valid_ack();
            bytes[3] = kind;
            assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::UnknownMessage(kind)));
        }
        assert_eq!(decode(&[0; 64], MAX_DATAGRAM), Err(WireError::BadMagic));
    }

    /// A heartbeat from "a" with one update about "n" (IPv4): the offsets of
    /// the update's fields.
    fn heartbeat_with_update() -> (Vec<u8>, usize) {
        let bytes = encode(&packet(Message::Heartbeat, vec![update("n", v4([1, 2, 3, 4], 5))]), MAX_DATAGRAM).unwrap();
        // prefix 12, from 10, incarnation 8, count 1
        (bytes, 31)
    }

    #[test]
    fn unknown_statuses_are_rejected() {
        let (bytes, start) = heartbeat_with_update();
        let at = start + 10 + 7 + 8;
        assert_eq!(bytes[at], STATUS_SUSPECT);
        for status in [0, 5, 200] {
            let mut bad = bytes.clone();
            bad[at] = status;
            assert_eq!(decode(&bad, MAX_DATAGRAM), Err(WireError::UnknownStatus(status)));
        }
    }

    #[test]
    fn unknown_address_families_are_rejected() {
        let (bytes, start) = heartbeat_with_update();
        let at = start + 10;
        assert_eq!(bytes[at], FAMILY_V4);
        for family in [0, 5, 41] {
            let mut bad = bytes.clone();
            bad[at] = family;
            assert_eq!(decode(&bad, MAX_DATAGRAM), Err(WireError::UnknownAddressFamily(family)));
        }
    }

    #[test]
    fn booleans_other_than_zero_and_one_are_rejected() {
        let req = packet(
            Message::PingReq { seq: 1, target: NodeId::new("t", 1), target_addr: v4([1; 4], 1), nack: true },
            Vec::new(),
        );
        let mut bytes = encode(&req, MAX_DATAGRAM).unwrap();
        let at = bytes.len() - 2; // nack, then the update count
        assert_eq!(bytes[at], 1);
        bytes[at] = 2;
        assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::BadBool(2)));

        let pp = packet(Message::PushPull { reply: false, members: Vec::new() }, Vec::new());
        let mut bytes = encode(&pp, MAX_STREAM).unwrap();
        let at = bytes.len() - 4; // reply, member count (2), update count
        assert_eq!(bytes[at], 0);
        bytes[at] = 0xFF;
        assert_eq!(decode(&bytes, MAX_STREAM), Err(WireError::BadBool(0xFF)));
    }

    #[test]
    fn bad_names_are_rejected_when_decoding() {
        let bytes = valid_ack();
        let at = 12; // the sender's name length; its name "a" follows
        let mut empty = bytes.clone();
        empty[at] = 0;
        assert_eq!(decode(&empty, MAX_DATAGRAM), Err(WireError::BadName { reason: BadNameReason::Empty }));

        let mut long = bytes.clone();
        long[at] = 65;
        let too_long = WireError::BadName { reason: BadNameReason::TooLong { len: 65 } };
        assert_eq!(decode(&long, MAX_DATAGRAM), Err(too_long));
        long[at] = 255;
        let too_long = WireError::BadName { reason: BadNameReason::TooLong { len: 255 } };
        assert_eq!(decode(&long, MAX_DATAGRAM), Err(too_long));

        let mut not_utf8 = bytes.clone();
        not_utf8[at + 1] = 0xC3; // a lone lead byte
        let invalid = WireError::BadName { reason: BadNameReason::InvalidUtf8 { valid_up_to: 0 } };
        assert_eq!(decode(&not_utf8, MAX_DATAGRAM), Err(invalid));
    }

    #[test]
    fn bad_names_are_refused_when_encoding() {
        let empty = Packet { from: NodeId::new("", 1), ..packet(Message::Heartbeat, Vec::new()) };
        assert_eq!(encode(&empty, MAX_DATAGRAM), Err(WireError::BadName { reason: BadNameReason::Empty }));

        let at_limit = ping(MAX_NAME_LEN, Vec::new());
        assert!(encode(&at_limit, MAX_DATAGRAM).is_ok());
        let mut long = at_limit;
        long.message = Message::Ping { seq: 1, target: NodeId::new("é".repeat(33), 1) };
        let too_long = WireError::BadName { reason: BadNameReason::TooLong { len: 66 } };
        assert_eq!(encode(&long, MAX_DATAGRAM), Err(too_long));

        let mut out = vec![1];
        let in_update = packet(Message::Heartbeat, vec![update(&"u".repeat(300), v4([1; 4], 1))]);
        let too_long = WireError::BadName { reason: BadNameReason::TooLong { len: 300 } };
        assert_eq!(encode_into(&in_update, MAX_STREAM, &mut out), Err(too_long));
        assert_eq!(out, [1]);
    }

    #[test]
    fn too_many_updates_are_refused() {
        let up = update("n", v4([1; 4], 1));
        let p = packet(Message::Heartbeat, vec![up.clone(); MAX_UPDATES]);
        assert_eq!(decode(&encode(&p, MAX_STREAM).unwrap(), MAX_STREAM).unwrap(), p);
        let p = packet(Message::Heartbeat, vec![up; MAX_UPDATES + 1]);
        assert_eq!(encode(&p, MAX_STREAM), Err(WireError::TooManyUpdates { n: 256 }));
    }

    #[test]
    fn too_many_members_are_refused() {
        let members = vec![update("n", v4([1; 4], 1)); MAX_MEMBERS];
        let p = packet(Message::PushPull { reply: true, members }, Vec::new());
        assert_eq!(decode(&encode(&p, MAX_STREAM).unwrap(), MAX_STREAM).unwrap(), p);

        let members = vec![update("n", v4([1; 4], 1)); MAX_MEMBERS + 1];
        let p = packet(Message::PushPull { reply: true, members }, Vec::new());
        assert_eq!(encode(&p, usize::MAX), Err(WireError::TooManyMembers { n: 65_536 }));
    }

    /// A count the remaining bytes cannot back is refused before allocating.
    #[test]
    fn counts_larger_than_the_input_are_rejected_up_front() {
        let pp = packet(Message::PushPull { reply: true, members: Vec::new() }, Vec::new());
        let mut bytes = encode(&pp, MAX_STREAM).unwrap();
        let at = bytes.len() - 3;
        bytes[at..at + 2].copy_from_slice(&u16::MAX.to_be_bytes());
        assert_eq!(decode(&bytes, MAX_STREAM), Err(WireError::Truncated { what: "members" }));

        let mut bytes = valid_ack();
        *bytes.last_mut().unwrap() = 1; // one update, no bytes for it
        bytes.extend_from_slice(&[0; MIN_UPDATE_LEN - 1]);
        assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::Truncated { what: "updates" }));
    }

    #[test]
    fn trailing_bytes_are_counted() {
        let mut bytes = valid_ack();
        bytes.extend_from_slice(&[0, 0, 0]);
        assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::TrailingBytes { n: 3 }));
    }

    #[test]
    fn messages_are_lowercase_without_a_trailing_period_and_name_the_value() {
        let cases: [(WireError, &str); 14] = [
            (WireError::Truncated { what: "incarnation" }, "truncated packet while reading the incarnation"),
            (WireError::TooLarge { len: 1401, max: 1400 }, "packet of 1401 bytes exceeds the limit of 1400 bytes"),
            (WireError::BadMagic, "bad magic: not a vigil packet (expected \"VG\")"),
            (WireError::UnsupportedVersion(2), "unsupported wire version 2 (this build speaks version 1)"),
            (WireError::UnknownMessage(9), "unknown message kind 9"),
            (WireError::UnknownStatus(7), "unknown member status 7"),
            (WireError::UnknownAddressFamily(5), "unknown address family 5 (expected 4 or 6)"),
            (WireError::BadName { reason: BadNameReason::Empty }, "bad member name: empty"),
            (
                WireError::BadName { reason: BadNameReason::TooLong { len: 65 } },
                "bad member name: 65 bytes long, more than the maximum of 64",
            ),
            (
                WireError::BadName { reason: BadNameReason::InvalidUtf8 { valid_up_to: 3 } },
                "bad member name: not valid utf-8 after the first 3 bytes",
            ),
            (WireError::BadBool(2), "invalid boolean byte 2 (expected 0 or 1)"),
            (WireError::TooManyUpdates { n: 256 }, "256 piggybacked updates exceed the maximum of 255"),
            (WireError::TooManyMembers { n: 65_536 }, "65536 push-pull members exceed the maximum of 65535"),
            (WireError::TrailingBytes { n: 3 }, "3 trailing bytes after the packet"),
        ];
        for (err, text) in cases {
            let shown = err.to_string();
            assert_eq!(shown, text);
            assert!(!shown.ends_with('.'));
            assert!(shown.starts_with(|c: char| !c.is_uppercase()));
        }
        assert_eq!(WireError::Bug("x").to_string(), "bug in the wire codec: x");
    }

    #[test]
    fn errors_are_send_sync_and_static() {
        fn check<E: std::error::Error + Send + Sync + 'static>() {}
        check::<WireError>();
    }
}
