//! A few lines of the wire format (`crates/vigil-membership/src/wire.rs`),
//! written out by hand: what a hostile peer sends without the library.

use std::net::SocketAddr;

/// The agent's cluster id when none is given ("vigi").
pub(crate) const CLUSTER: u64 = 0x7669_6769;

pub(crate) fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A member's identity: its name and generation.
pub(crate) fn node(name: &str, generation: u64, out: &mut Vec<u8>) {
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
    varint(generation, out);
}

pub(crate) fn v4(addr: SocketAddr, out: &mut Vec<u8>) {
    let SocketAddr::V4(a) = addr else { panic!("IPv4 only here") };
    out.push(4);
    out.extend_from_slice(&a.ip().octets());
    out.extend_from_slice(&a.port().to_be_bytes());
}

/// A gossip packet (kind 6) "from" `sender`, carrying `rumours` (already
/// encoded, at most 255), in the default cluster.
pub(crate) fn gossip(sender: (&str, u64), rumours: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"VG\x02\x06".to_vec();
    varint(CLUSTER, &mut out);
    node(sender.0, sender.1, &mut out);
    varint(0, &mut out);
    out.push(rumours.len() as u8);
    for r in rumours {
        out.extend_from_slice(r);
    }
    out
}
