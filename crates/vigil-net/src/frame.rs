//! Stream frames: how a stream message (push-pull) travels over TCP.
//!
//! One connection carries one frame: a 4-byte big-endian length, then that
//! many bytes, sealed like a datagram. Inside the seal, the sender's
//! advertised address comes first (a connection's source port is
//! ephemeral, and the answer goes to the sender's listener), then the
//! packet:
//!
//! | field | bytes |
//! |---|---|
//! | address family | 1 (4 or 6) |
//! | address | 4 or 16 |
//! | port | 2 |
//! | packet | the rest |
//!
//! The length is checked against the largest frame before a byte of the
//! body is read or allocated.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use vigil_membership::seal::OVERHEAD;
use vigil_membership::wire::MAX_STREAM;

/// The longest address prefix.
pub const MAX_PREFIX: usize = 1 + 16 + 2;

/// The largest frame body accepted: the largest stream message, its
/// address prefix and the seal.
pub const MAX_FRAME: usize = MAX_STREAM + MAX_PREFIX + OVERHEAD;

/// `addr` then `packet`: the plaintext a frame seals.
pub fn with_address(addr: SocketAddr, packet: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAX_PREFIX + packet.len());
    match addr.ip() {
        IpAddr::V4(ip) => {
            out.push(4);
            out.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            out.push(6);
            out.extend_from_slice(&ip.octets());
        }
    }
    out.extend_from_slice(&addr.port().to_be_bytes());
    out.extend_from_slice(packet);
    out
}

/// The sender's address and the packet, from an opened frame; `None` if the
/// prefix is malformed.
pub fn split_address(plain: &[u8]) -> Option<(SocketAddr, &[u8])> {
    let (&family, rest) = plain.split_first()?;
    let (ip, rest): (IpAddr, &[u8]) = match family {
        4 => {
            let (a, rest) = rest.split_first_chunk::<4>()?;
            (IpAddr::V4(Ipv4Addr::from(*a)), rest)
        }
        6 => {
            let (a, rest) = rest.split_first_chunk::<16>()?;
            (IpAddr::V6(Ipv6Addr::from(*a)), rest)
        }
        _ => return None,
    };
    let (port, packet) = rest.split_first_chunk::<2>()?;
    Some((SocketAddr::new(ip, u16::from_be_bytes(*port)), packet))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip_and_bad_prefixes_are_refused() {
        for addr in ["127.0.0.1:7946", "[::1]:7946", "[2001:db8::7]:1"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let framed = with_address(addr, b"VG\x02packet");
            assert_eq!(split_address(&framed), Some((addr, &b"VG\x02packet"[..])));
        }
        for bad in [&b""[..], &b"\x05\x01\x02"[..], &b"\x04\x7f\x00"[..], &b"\x06\x00"[..]] {
            assert_eq!(split_address(bad), None, "{bad:?}");
        }
    }
}
