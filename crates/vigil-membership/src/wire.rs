//! The wire format: a [`Packet`] as bytes, and back.
//!
//! This is vigil's own versioned binary format, built to be small: the
//! steady traffic of the protocol is heartbeats, so a heartbeat from a member
//! with a short name is about 15 bytes. Integers that are usually small
//! (cluster id, generation, incarnation, sequence numbers) are unsigned
//! LEB128 varints; the size of an encoding is still computed exactly without
//! encoding anything ([`encoded_len`], [`update_len`]), so a sender can put as
//! many piggybacked updates in a datagram as fit under its budget
//! ([`MAX_DATAGRAM`] by default).
//!
//! # Packet
//!
//! | field | bytes | encoding |
//! |---|---|---|
//! | magic | 2 | `"VG"` ([`MAGIC`]) |
//! | version | 1 | [`VERSION`] |
//! | message kind | 1 | see [Messages](#messages) |
//! | cluster id | 1 to 10 | varint |
//! | from | 3 to 75 | node id |
//! | incarnation | 1 to 10 | varint |
//! | message body | 0 or more | see [Messages](#messages) |
//! | update count | 1 | u8, at most [`MAX_UPDATES`] |
//! | updates | 12 to 694 each | that many updates, back to back |
//!
//! # Messages
//!
//! | kind | message | body |
//! |---|---|---|
//! | 1 | [`Message::Heartbeat`] | empty |
//! | 2 | [`Message::Ping`] | seq (varint, u32) · target (node id) |
//! | 3 | [`Message::PingReq`] | seq (varint, u32) · target (node id) · target address · nack (bool) |
//! | 4 | [`Message::Ack`] | seq (varint, u32) |
//! | 5 | [`Message::Nack`] | seq (varint, u32) |
//! | 6 | [`Message::Gossip`] | empty (the updates are the point) |
//! | 7 | [`Message::PushPull`] | reply (bool) · member count (u16, at most [`MAX_MEMBERS`]) · members (updates) |
//! | 8 | [`Message::Subscribe`] | lease in ms (varint, u32) |
//! | 9 | [`Message::Digest`] | view digest (u64, big-endian) |
//! | 10 | [`Message::Reachability`] | version (varint) · page (u16) · pages (u16, at least 1, above page) · entry count (u16) · entries |
//!
//! A push-pull carries its members in its body and may still carry
//! piggybacked updates after it, like every other message.
//!
//! # Fields
//!
//! | field | bytes | encoding |
//! |---|---|---|
//! | varint | 1 to 10 | unsigned LEB128, 7 bits a byte, low bits first; the shortest form only |
//! | node id | 1 + n + 1 to 10 | name length n (u8, 1 to [`MAX_NAME_LEN`]) · name (n bytes of UTF-8) · generation (varint) |
//! | address | 7 or 19 | family (4 or 6) · IP address (4 or 16 bytes) · port (u16, big-endian) |
//! | update | 12 to 694 | id (node id) · address · incarnation (varint) · status · from (node id, only if the status byte says so) · tags (only if the status byte says so) |
//! | status | 1 | 1 alive, 2 suspect, 3 dead, 4 left; plus 16 when a `from` different from the id follows, plus 32 when tags follow |
//! | tags | 1 + n | length n (varint, at most [`MAX_TAGS_LEN`]) · pairs of key and value, each a length (u8) and UTF-8; keys non-empty and strictly ascending |
//! | bool | 1 | 0 false, 1 true |
//! | row entry | 4 to 76 | member (node id) · mark (1 unreachable, 2 flapped, 3 ejected) |
//!
//! An update's `from` is the member itself for most rumours (alive, left),
//! so it is left out then: the status byte's bit 16 says whether it follows,
//! and it must be set exactly when `from` differs from `id`.
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
//! families, booleans other than 0 and 1, varints longer than their shortest
//! form or larger than their field, a `from` written out although it equals
//! the id, empty names, names longer than [`MAX_NAME_LEN`], names that are
//! not UTF-8 or hold a control character, truncated input and trailing
//! bytes. Every packet therefore has
//! exactly one encoding: if `decode(bytes, max)` returns `Ok(p)`, then
//! `encode(&p, max)` returns `bytes` again.
//!
//! Decoding never panics. Input longer than the caller's `max` is rejected
//! before a single byte is read, and a member or update count is checked
//! against the bytes that remain (at 12 bytes per update at least) before
//! anything is allocated for it, so memory stays proportional to the input.
//!
//! # Versions
//!
//! The version byte is checked right after the magic and before anything else,
//! since a later version may change everything that follows it. Any change to
//! this layout takes a new [`VERSION`]; a receiver rejects versions other than
//! its own with [`WireError::UnsupportedVersion`]. Version 1 used fixed-width
//! integers and always wrote an update's `from`; version 2 is this one.
//!
//! A new message kind is not a new layout: it is added within a version,
//! and a build that does not know it rejects that packet alone
//! ([`WireError::UnknownMessage`]) and goes on understanding the rest. Kind 9
//! ([`Message::Digest`]) was added so; a sender that must reach builds
//! before it turns [`Config::push_pull_digest`](crate::Config::push_pull_digest)
//! off until they are gone. Kind 10 ([`Message::Reachability`]) was added
//! so too; it is sent only while a downing strategy decides, which every
//! member of a cluster must run alike anyway.
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
//!     message: Message::Heartbeat,
//!     updates: Vec::new(),
//! };
//! let bytes = wire::encode(&packet, MAX_DATAGRAM)?;
//! assert_eq!(bytes.len(), 15);
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

use crate::message::{MAX_MEMBERS, MAX_NAME_LEN, Mark, Message, MessageKind, NodeId, Packet, RowEntry, Status, Update};
use crate::tags::{MAX_TAGS_LEN, Tags};

/// The first two bytes of every packet.
pub const MAGIC: [u8; 2] = *b"VG";

/// The version of the layout this module reads and writes.
pub const VERSION: u8 = 2;

/// The default datagram budget, in bytes
/// ([`Config::datagram_budget`](crate::Config::datagram_budget)): with
/// vigil's seal (43 bytes) and IPv4/UDP headers (28) a datagram stays under
/// a 1,500-byte MTU.
pub const MAX_DATAGRAM: usize = 1400;

/// The most piggybacked updates in one packet (the count is one byte).
pub const MAX_UPDATES: usize = 255;

/// The longest encoding of one update: two 64-byte names with the largest
/// generations, an IPv6 address, the largest incarnation and the longest
/// tags.
pub const MAX_UPDATE_LEN: usize = 2 * MAX_NODE_LEN + 19 + MAX_VARINT_LEN + 1 + TAGS_LEN_LEN + MAX_TAGS_LEN;

/// The largest stream message ([`Message::PushPull`]), in bytes: enough for a
/// view of [`MAX_MEMBERS`] members of the longest kind (tags included), so a
/// node's own view always fits.
pub const MAX_STREAM: usize = 46 * 1024 * 1024;

/// The largest datagram a node accepts, in bytes, whatever its own
/// [`Config::datagram_budget`](crate::Config::datagram_budget): members with
/// different budgets still understand each other.
pub const MAX_DATAGRAM_ACCEPTED: usize = 65_000;

/// The longest varint (a u64 needs ten 7-bit groups).
const MAX_VARINT_LEN: usize = 10;
/// The varint length of the longest tags.
const TAGS_LEN_LEN: usize = 2;
/// The longest node id.
const MAX_NODE_LEN: usize = 1 + MAX_NAME_LEN + MAX_VARINT_LEN;
/// Magic, version and message kind.
const PREFIX_LEN: usize = 2 + 1 + 1;
/// The shortest node id: a one-byte name and a one-byte generation.
const MIN_NODE_LEN: usize = 3;
/// The shortest address: IPv4.
const MIN_ADDR_LEN: usize = 1 + 4 + 2;
/// The shortest update, used to bound counts by the remaining input.
const MIN_UPDATE_LEN: usize = MIN_NODE_LEN + MIN_ADDR_LEN + 1 + 1;

fn kind_byte(kind: MessageKind) -> u8 {
    match kind {
        MessageKind::Heartbeat => 1,
        MessageKind::Ping => 2,
        MessageKind::PingReq => 3,
        MessageKind::Ack => 4,
        MessageKind::Nack => 5,
        MessageKind::Gossip => 6,
        MessageKind::PushPull => 7,
        MessageKind::Subscribe => 8,
        MessageKind::Digest => 9,
        MessageKind::Reachability => 10,
    }
}

fn kind_of_byte(byte: u8) -> Option<MessageKind> {
    MessageKind::ALL.into_iter().find(|kind| kind_byte(*kind) == byte)
}

const STATUS_ALIVE: u8 = 1;
const STATUS_SUSPECT: u8 = 2;
const STATUS_DEAD: u8 = 3;
const STATUS_LEFT: u8 = 4;
/// Set in the status byte when the update's `from` follows.
const FROM_FOLLOWS: u8 = 16;
/// Set in the status byte when the update's tags follow (after `from`).
const TAGS_FOLLOW: u8 = 32;

fn mark_byte(mark: Mark) -> u8 {
    match mark {
        Mark::Unreachable => 1,
        Mark::Flapped => 2,
        Mark::Ejected => 3,
    }
}

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
    /// A varint longer than its shortest form, or larger than its field.
    BadVarint {
        /// The field being read.
        what: &'static str,
    },
    /// An update whose `from` is written out although it equals the id (the
    /// shorter form is the only valid one).
    RedundantSource,
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
    /// Tags that break their format: longer than [`MAX_TAGS_LEN`], a key or
    /// value cut short, not UTF-8, keys empty or not strictly ascending.
    BadTags {
        /// What is wrong with them.
        reason: &'static str,
    },
    /// A reachability row's page that is not among its pages (or no page
    /// at all).
    BadPage {
        /// The page.
        page: u16,
        /// The pages the row takes.
        pages: u16,
    },
    /// A reachability row's mark byte that no mark has.
    UnknownMark(u8),
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
            WireError::BadVarint { what } => {
                write!(f, "the {what} is not a varint in its shortest form within its field's range")
            }
            WireError::RedundantSource => write!(f, "an update's source is written out although it is the member"),
            WireError::TooManyUpdates { n } => {
                write!(f, "{n} piggybacked updates exceed the maximum of {MAX_UPDATES}")
            }
            WireError::TooManyMembers { n } => write!(f, "{n} push-pull members exceed the maximum of {MAX_MEMBERS}"),
            WireError::BadTags { reason } => write!(f, "bad tags: {reason}"),
            WireError::BadPage { page, pages } => write!(f, "reachability page {page} of {pages} pages"),
            WireError::UnknownMark(mark) => write!(f, "unknown reachability mark {mark}"),
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
    /// The name holds a control character (a terminal escape, a newline),
    /// which would reach every log and terminal that prints it.
    ControlCharacter {
        /// Where, in bytes from the start of the name.
        at: usize,
    },
}

/// The first control character in `name`, by its byte offset: member names
/// must have none.
pub fn control_character(name: &str) -> Option<usize> {
    name.char_indices().find(|(_, c)| c.is_control()).map(|(i, _)| i)
}

impl fmt::Display for BadNameReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadNameReason::Empty => write!(f, "empty"),
            BadNameReason::TooLong { len } => write!(f, "{len} bytes long, more than the maximum of {MAX_NAME_LEN}"),
            BadNameReason::InvalidUtf8 { valid_up_to } => {
                write!(f, "not valid utf-8 after the first {valid_up_to} bytes")
            }
            BadNameReason::ControlCharacter { at } => write!(f, "a control character at byte {at}"),
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
    PREFIX_LEN
        + varint_len(packet.cluster)
        + node_len(&packet.from)
        + varint_len(packet.incarnation)
        + body_len(&packet.message)
        + 1
        + updates
}

/// The number of bytes one update adds to a packet's encoding (exact), as a
/// piggybacked update or as a push-pull member.
///
/// Between 12 bytes (a one-byte name, small numbers, IPv4, from the member
/// itself) and [`MAX_UPDATE_LEN`] (694, tags included).
pub fn update_len(update: &Update) -> usize {
    let from = if update.from == update.id { 0 } else { node_len(&update.from) };
    let tags = update.tags.as_ref().map_or(0, |t| {
        let len = t.encoded_len();
        varint_len(u64::try_from(len).unwrap_or(u64::MAX)) + len
    });
    node_len(&update.id) + addr_len(&update.addr) + varint_len(update.incarnation) + 1 + from + tags
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
    let kind = r.prefix()?;
    let cluster = r.varint("cluster id")?;
    let from = r.node("sender")?;
    let incarnation = r.varint("incarnation")?;
    let message = r.body(kind)?;
    let count = usize::from(r.u8("update count")?);
    let updates = r.updates(count, "updates")?;
    if !r.rest.is_empty() {
        return Err(WireError::TrailingBytes { n: r.rest.len() });
    }
    Ok(Packet { cluster, from, incarnation, message, updates })
}

/// Reads only a packet's message kind, after checking its magic and version:
/// enough to tell a datagram from a stream message before decoding the rest.
///
/// # Errors
///
/// [`WireError::Truncated`], [`WireError::BadMagic`],
/// [`WireError::UnsupportedVersion`] or [`WireError::UnknownMessage`].
pub fn peek_kind(bytes: &[u8]) -> Result<MessageKind, WireError> {
    Reader { rest: bytes }.prefix()
}

/// The number of bytes of `v` as a varint.
fn varint_len(v: u64) -> usize {
    let bits = 64 - v.leading_zeros();
    // 7 bits a byte, and at least one byte.
    usize::try_from(bits.div_ceil(7).max(1)).unwrap_or(MAX_VARINT_LEN)
}

fn node_len(id: &NodeId) -> usize {
    1 + id.name.len() + varint_len(id.generation)
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
        Message::Ping { seq, target } => varint_len(u64::from(*seq)) + node_len(target),
        Message::PingReq { seq, target, target_addr, nack: _ } => {
            varint_len(u64::from(*seq)) + node_len(target) + addr_len(target_addr) + 1
        }
        Message::Ack { seq } | Message::Nack { seq } => varint_len(u64::from(*seq)),
        Message::Subscribe { lease_ms } => varint_len(u64::from(*lease_ms)),
        Message::PushPull { reply: _, members } => 1 + 2 + members.iter().map(update_len).sum::<usize>(),
        Message::Digest { view: _ } => 8,
        Message::Reachability { version, page: _, pages: _, entries } => {
            varint_len(*version) + 2 + 2 + 2 + entries.iter().map(|e| node_len(&e.id) + 1).sum::<usize>()
        }
    }
}

fn write_varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let low = u8::try_from(v & 0x7F).unwrap_or(0);
        v >>= 7;
        if v == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

fn write_packet(packet: &Packet, out: &mut Vec<u8>) -> Result<(), WireError> {
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(kind_byte(packet.message.kind()));
    write_varint(packet.cluster, out);
    write_node(&packet.from, out)?;
    write_varint(packet.incarnation, out);
    match &packet.message {
        Message::Heartbeat | Message::Gossip => {}
        Message::Ping { seq, target } => {
            write_varint(u64::from(*seq), out);
            write_node(target, out)?;
        }
        Message::PingReq { seq, target, target_addr, nack } => {
            write_varint(u64::from(*seq), out);
            write_node(target, out)?;
            write_addr(target_addr, out);
            out.push(u8::from(*nack));
        }
        Message::Ack { seq } | Message::Nack { seq } => write_varint(u64::from(*seq), out),
        Message::Subscribe { lease_ms } => write_varint(u64::from(*lease_ms), out),
        Message::PushPull { reply, members } => {
            out.push(u8::from(*reply));
            let n = u16::try_from(members.len()).map_err(|_| WireError::TooManyMembers { n: members.len() })?;
            out.extend_from_slice(&n.to_be_bytes());
            for member in members {
                write_update(member, out)?;
            }
        }
        Message::Digest { view } => out.extend_from_slice(&view.to_be_bytes()),
        Message::Reachability { version, page, pages, entries } => {
            if *pages == 0 || page >= pages {
                return Err(WireError::BadPage { page: *page, pages: *pages });
            }
            write_varint(*version, out);
            out.extend_from_slice(&page.to_be_bytes());
            out.extend_from_slice(&pages.to_be_bytes());
            let n = u16::try_from(entries.len()).map_err(|_| WireError::TooManyMembers { n: entries.len() })?;
            out.extend_from_slice(&n.to_be_bytes());
            for e in entries {
                write_node(&e.id, out)?;
                out.push(mark_byte(e.mark));
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
    if let Some(at) = control_character(&id.name) {
        return Err(WireError::BadName { reason: BadNameReason::ControlCharacter { at } });
    }
    out.push(u8::try_from(len).map_err(|_| too_long)?);
    out.extend_from_slice(id.name.as_bytes());
    write_varint(id.generation, out);
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
    write_rumour(update, update.from != update.id, out)
}

/// `update`'s bytes with its `from` left out, as if the member itself said
/// it: what a view's digest hashes (`digest.rs`), so that the digest covers
/// exactly what a view carries about each member, but its accuser.
pub(crate) fn write_entry(update: &Update, out: &mut Vec<u8>) -> Result<(), WireError> {
    write_rumour(update, false, out)
}

fn write_rumour(update: &Update, with_from: bool, out: &mut Vec<u8>) -> Result<(), WireError> {
    write_node(&update.id, out)?;
    write_addr(&update.addr, out);
    write_varint(update.incarnation, out);
    let status = match update.status {
        Status::Alive => STATUS_ALIVE,
        Status::Suspect => STATUS_SUSPECT,
        Status::Dead => STATUS_DEAD,
        Status::Left => STATUS_LEFT,
    };
    let tags = if update.tags.is_some() { TAGS_FOLLOW } else { 0 };
    if !with_from {
        out.push(status | tags);
    } else {
        out.push(status | tags | FROM_FOLLOWS);
        write_node(&update.from, out)?;
    }
    if let Some(tags) = &update.tags {
        write_tags(tags, out)?;
    }
    Ok(())
}

fn write_tags(tags: &Tags, out: &mut Vec<u8>) -> Result<(), WireError> {
    let len = tags.encoded_len();
    if len > MAX_TAGS_LEN {
        return Err(WireError::BadTags { reason: "longer than the maximum" });
    }
    write_varint(u64::try_from(len).map_err(|_| WireError::BadTags { reason: "longer than the maximum" })?, out);
    for (k, v) in tags.iter() {
        for part in [k, v] {
            out.push(u8::try_from(part.len()).map_err(|_| WireError::BadTags { reason: "a key or value too long" })?);
            out.extend_from_slice(part.as_bytes());
        }
    }
    Ok(())
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

    /// Magic, version and message kind. The version is checked before
    /// anything else (a later version may change all that follows), and the
    /// kind before the rest of the header, so that an unknown kind is
    /// reported as such even in a short packet.
    fn prefix(&mut self) -> Result<MessageKind, WireError> {
        if self.array::<2>("magic")? != MAGIC {
            return Err(WireError::BadMagic);
        }
        let version = self.u8("version")?;
        if version != VERSION {
            return Err(WireError::UnsupportedVersion(version));
        }
        let kind = self.u8("message kind")?;
        kind_of_byte(kind).ok_or(WireError::UnknownMessage(kind))
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        let [byte] = self.array::<1>(what)?;
        Ok(byte)
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        self.array(what).map(u16::from_be_bytes)
    }

    /// A varint in its shortest form that fits in a u64.
    fn varint(&mut self, what: &'static str) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        for i in 0..MAX_VARINT_LEN {
            let byte = self.u8(what)?;
            let low = u64::from(byte & 0x7F);
            let shift = 7 * u32::try_from(i).map_err(|_| WireError::BadVarint { what })?;
            // The tenth byte holds the top bit only.
            if i == MAX_VARINT_LEN - 1 && low > 1 {
                return Err(WireError::BadVarint { what });
            }
            value |= low << shift;
            if byte & 0x80 == 0 {
                // A final zero byte after others is a longer form of a
                // shorter varint.
                if i > 0 && byte == 0 {
                    return Err(WireError::BadVarint { what });
                }
                return Ok(value);
            }
        }
        Err(WireError::BadVarint { what })
    }

    fn varint_u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        u32::try_from(self.varint(what)?).map_err(|_| WireError::BadVarint { what })
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
        if let Some(at) = control_character(name) {
            return Err(WireError::BadName { reason: BadNameReason::ControlCharacter { at } });
        }
        let generation = self.varint(what)?;
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

    /// The status byte: the status, whether a `from` follows, and whether
    /// tags do.
    fn status(&mut self) -> Result<(Status, bool, bool), WireError> {
        let byte = self.u8("status")?;
        let status = match byte & !(FROM_FOLLOWS | TAGS_FOLLOW) {
            STATUS_ALIVE => Status::Alive,
            STATUS_SUSPECT => Status::Suspect,
            STATUS_DEAD => Status::Dead,
            STATUS_LEFT => Status::Left,
            _ => return Err(WireError::UnknownStatus(byte)),
        };
        Ok((status, byte & FROM_FOLLOWS != 0, byte & TAGS_FOLLOW != 0))
    }

    /// Tags: a varint length, then pairs of (length, key) and (length,
    /// value), keys non-empty and strictly ascending.
    fn tags(&mut self) -> Result<Tags, WireError> {
        let len = self.varint("tags length")?;
        if len > u64::try_from(MAX_TAGS_LEN).unwrap_or(u64::MAX) {
            return Err(WireError::BadTags { reason: "longer than the maximum" });
        }
        let bytes = self.take(usize::try_from(len).unwrap_or(usize::MAX), "tags")?;
        let mut r = Reader { rest: bytes };
        let mut pairs: Vec<(String, String)> = Vec::new();
        let bad = |reason| WireError::BadTags { reason };
        while !r.rest.is_empty() {
            let mut part = || -> Result<String, WireError> {
                let n = usize::from(r.u8("tag length").map_err(|_| bad("a pair cut short"))?);
                let raw = r.take(n, "tag").map_err(|_| bad("a pair cut short"))?;
                std::str::from_utf8(raw).map(str::to_owned).map_err(|_| bad("not utf-8"))
            };
            let key = part()?;
            let value = part()?;
            if key.is_empty() {
                return Err(bad("an empty key"));
            }
            if pairs.last().is_some_and(|(last, _)| *last >= key) {
                return Err(bad("keys not strictly ascending"));
            }
            pairs.push((key, value));
        }
        Ok(Tags::from_sorted(pairs))
    }

    fn update(&mut self) -> Result<Update, WireError> {
        let id = self.node("update id")?;
        let addr = self.addr()?;
        let incarnation = self.varint("update incarnation")?;
        let (status, from_follows, tags_follow) = self.status()?;
        let from = if from_follows {
            let from = self.node("update source")?;
            if from == id {
                return Err(WireError::RedundantSource);
            }
            from
        } else {
            id.clone()
        };
        let tags = if tags_follow { Some(self.tags()?) } else { None };
        Ok(Update { id, addr, incarnation, status, from, tags })
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

    fn body(&mut self, kind: MessageKind) -> Result<Message, WireError> {
        Ok(match kind {
            MessageKind::Heartbeat => Message::Heartbeat,
            MessageKind::Ping => {
                let seq = self.varint_u32("sequence number")?;
                let target = self.node("target")?;
                Message::Ping { seq, target }
            }
            MessageKind::PingReq => {
                let seq = self.varint_u32("sequence number")?;
                let target = self.node("target")?;
                let target_addr = self.addr()?;
                let nack = self.bool("nack flag")?;
                Message::PingReq { seq, target, target_addr, nack }
            }
            MessageKind::Ack => Message::Ack { seq: self.varint_u32("sequence number")? },
            MessageKind::Nack => Message::Nack { seq: self.varint_u32("sequence number")? },
            MessageKind::Gossip => Message::Gossip,
            MessageKind::Subscribe => Message::Subscribe { lease_ms: self.varint_u32("lease")? },
            MessageKind::PushPull => {
                let reply = self.bool("reply flag")?;
                let count = usize::from(self.u16("member count")?);
                let members = self.updates(count, "members")?;
                Message::PushPull { reply, members }
            }
            MessageKind::Digest => Message::Digest { view: self.array("view digest").map(u64::from_be_bytes)? },
            MessageKind::Reachability => {
                let version = self.varint("row version")?;
                let page = self.u16("row page")?;
                let pages = self.u16("row pages")?;
                if pages == 0 || page >= pages {
                    return Err(WireError::BadPage { page, pages });
                }
                let count = usize::from(self.u16("row entry count")?);
                if count.checked_mul(MIN_NODE_LEN + 1).is_none_or(|least| least > self.rest.len()) {
                    return Err(WireError::Truncated { what: "row entries" });
                }
                let mut entries = Vec::with_capacity(count);
                for _ in 0..count {
                    let id = self.node("row member")?;
                    let mark = match self.u8("row mark")? {
                        1 => Mark::Unreachable,
                        2 => Mark::Flapped,
                        3 => Mark::Ejected,
                        other => return Err(WireError::UnknownMark(other)),
                    };
                    entries.push(RowEntry { id, mark });
                }
                Message::Reachability { version, page, pages, entries }
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::as_conversions)]
mod tests;
