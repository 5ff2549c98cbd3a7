//! Stream frames: how a stream message (push-pull) travels over TCP.
//!
//! A connection carries one frame each way: the request, and the answer if
//! the receiver gives one. A frame is a small header, then the body:
//!
//! | field | bytes | |
//! |---|---|---|
//! | header length | 2 | u16, big-endian, 1 to [`MAX_HEADER`] |
//! | header | that many | the frame header below, sealed like a datagram (bare in plaintext) |
//! | body | the header's body length | the packet, sealed like a datagram (bare in plaintext) |
//!
//! The frame header says how long the body is and who sends it (a
//! connection's source port is ephemeral, and an answer to a new request
//! goes to the sender's listener):
//!
//! | field | bytes | |
//! |---|---|---|
//! | magic | 2 | `"VF"` ([`MAGIC`]) |
//! | version | 1 | [`VERSION`] |
//! | body length | 4 | u32, big-endian, at most [`MAX_BODY`] |
//! | address family | 1 | 4 or 6 |
//! | address | 4 or 16 | the sender's advertised address |
//! | port | 2 | big-endian |
//!
//! A receiver reads the header length and the header (at most
//! [`MAX_HEADER`] bytes, within a short timeout), opens it (a sealed one
//! must authenticate), and only then reads the body, of the length the
//! header gave, against a byte budget shared by every connection: before
//! authentication, nothing larger than a header is held.
//!
//! # Examples
//!
//! A plaintext frame, as a member in plaintext sends it:
//!
//! ```
//! use vigil_net::frame::{Header, frame};
//!
//! let body = b"a push-pull message";
//! let header = Header { body_len: body.len(), from: "127.0.0.1:7946".parse().unwrap() };
//! let header = header.encode().unwrap();
//! let bytes = frame(&header, body).unwrap();
//! let len = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
//! let read = Header::decode(&bytes[2..2 + len]).unwrap();
//! assert_eq!(&bytes[2 + len..], body);
//! assert_eq!(read.body_len, body.len());
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use vigil_membership::seal::OVERHEAD;
use vigil_membership::wire::MAX_STREAM;

/// The first bytes of a frame header.
///
/// # Examples
///
/// ```
/// use vigil_net::frame::{Header, MAGIC};
///
/// let bytes = Header { body_len: 0, from: "127.0.0.1:7946".parse().unwrap() }.encode().unwrap();
/// assert!(bytes.starts_with(&MAGIC));
/// ```
pub const MAGIC: [u8; 2] = *b"VF";
/// The frame header's version: a header of another version is refused.
///
/// # Examples
///
/// ```
/// use vigil_net::frame::{Header, VERSION};
///
/// let mut bytes = Header { body_len: 0, from: "127.0.0.1:7946".parse().unwrap() }.encode().unwrap();
/// assert_eq!(bytes[2], VERSION);
/// bytes[2] = VERSION + 1;
/// assert_eq!(Header::decode(&bytes), None);
/// ```
pub const VERSION: u8 = 1;

/// The longest frame header, bare: one with an IPv6 address.
///
/// # Examples
///
/// ```
/// use vigil_net::frame::{Header, MAX_PLAIN_HEADER};
///
/// let v6 = Header { body_len: 1, from: "[2001:db8::7]:7946".parse().unwrap() };
/// assert_eq!(v6.encode().unwrap().len(), MAX_PLAIN_HEADER);
/// ```
pub const MAX_PLAIN_HEADER: usize = 2 + 1 + 4 + 1 + 16 + 2;

/// The longest frame header on the wire: a sealed one. A receiver reads no
/// more than this before it has authenticated the sender.
///
/// # Examples
///
/// ```
/// use vigil_net::frame::{MAX_HEADER, MAX_PLAIN_HEADER, frame};
///
/// assert!(MAX_HEADER > MAX_PLAIN_HEADER);
/// assert_eq!(frame(&[0; MAX_HEADER + 1], b""), None, "too long to be a header");
/// ```
pub const MAX_HEADER: usize = MAX_PLAIN_HEADER + OVERHEAD;

/// The longest body: the largest stream message, sealed.
///
/// # Examples
///
/// ```
/// use vigil_net::frame::{Header, MAX_BODY};
///
/// let from = "127.0.0.1:7946".parse().unwrap();
/// assert!(Header { body_len: MAX_BODY, from }.encode().is_some());
/// assert_eq!(Header { body_len: MAX_BODY + 1, from }.encode(), None);
/// ```
pub const MAX_BODY: usize = MAX_STREAM + OVERHEAD;

/// What a frame header says.
///
/// # Examples
///
/// ```
/// use vigil_net::frame::Header;
///
/// let h = Header { body_len: 1234, from: "[::1]:7946".parse().unwrap() };
/// assert_eq!(Header::decode(&h.encode().unwrap()), Some(h));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The body's length, in bytes.
    pub body_len: usize,
    /// The sender's advertised address.
    pub from: SocketAddr,
}

impl Header {
    /// The header's bytes (before any seal). `None` if the body is longer
    /// than [`MAX_BODY`].
    ///
    /// # Examples
    ///
    /// ```
    /// use vigil_net::frame::Header;
    ///
    /// let bytes = Header { body_len: 5, from: "127.0.0.1:7946".parse().unwrap() }.encode().unwrap();
    /// assert_eq!(bytes, b"VF\x01\x00\x00\x00\x05\x04\x7f\x00\x00\x01\x1f\x0a");
    /// ```
    pub fn encode(&self) -> Option<Vec<u8>> {
        if self.body_len > MAX_BODY {
            return None;
        }
        let mut out = Vec::with_capacity(MAX_PLAIN_HEADER);
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&u32::try_from(self.body_len).ok()?.to_be_bytes());
        match self.from.ip() {
            IpAddr::V4(ip) => {
                out.push(4);
                out.extend_from_slice(&ip.octets());
            }
            IpAddr::V6(ip) => {
                out.push(6);
                out.extend_from_slice(&ip.octets());
            }
        }
        out.extend_from_slice(&self.from.port().to_be_bytes());
        Some(out)
    }

    /// A header from its bytes (opened, if it was sealed); `None` if they
    /// are not exactly a header, or announce a body longer than
    /// [`MAX_BODY`].
    ///
    /// # Examples
    ///
    /// ```
    /// use vigil_net::frame::Header;
    ///
    /// let h = Header::decode(b"VF\x01\x00\x00\x00\x05\x04\x7f\x00\x00\x01\x1f\x0a").unwrap();
    /// assert_eq!((h.body_len, h.from), (5, "127.0.0.1:7946".parse().unwrap()));
    /// assert_eq!(Header::decode(b"VF\x01"), None, "cut short");
    /// ```
    pub fn decode(bytes: &[u8]) -> Option<Header> {
        let rest = bytes.strip_prefix(&MAGIC)?;
        let (&version, rest) = rest.split_first()?;
        if version != VERSION {
            return None;
        }
        let (len, rest) = rest.split_first_chunk::<4>()?;
        let body_len = u32::from_be_bytes(*len) as usize;
        if body_len > MAX_BODY {
            return None;
        }
        let (&family, rest) = rest.split_first()?;
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
        let (port, rest) = rest.split_first_chunk::<2>()?;
        rest.is_empty().then(|| Header { body_len, from: SocketAddr::new(ip, u16::from_be_bytes(*port)) })
    }
}

/// A frame's bytes on the wire, from its header and body as they travel
/// (sealed or bare); `None` if the header is empty or longer than
/// [`MAX_HEADER`].
///
/// # Examples
///
/// ```
/// use vigil_net::frame::frame;
///
/// assert_eq!(frame(b"hh", b"body").unwrap(), b"\x00\x02hhbody");
/// assert_eq!(frame(b"", b"body"), None);
/// ```
pub fn frame(header: &[u8], body: &[u8]) -> Option<Vec<u8>> {
    if header.is_empty() || header.len() > MAX_HEADER {
        return None;
    }
    let mut out = Vec::with_capacity(2 + header.len() + body.len());
    out.extend_from_slice(&u16::try_from(header.len()).ok()?.to_be_bytes());
    out.extend_from_slice(header);
    out.extend_from_slice(body);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_everything_else_is_refused() {
        for addr in ["127.0.0.1:7946", "[::1]:7946", "[2001:db8::7]:1"] {
            let h = Header { body_len: 1234, from: addr.parse().unwrap() };
            let bytes = h.encode().unwrap();
            assert!(bytes.len() <= MAX_PLAIN_HEADER);
            assert_eq!(Header::decode(&bytes), Some(h));
            // Every truncation, and a byte more, is refused.
            for n in 0..bytes.len() {
                assert_eq!(Header::decode(&bytes[..n]), None);
            }
            assert_eq!(Header::decode(&[&bytes[..], b"x"].concat()), None);
        }
        let big = Header { body_len: MAX_BODY + 1, from: "127.0.0.1:1".parse().unwrap() };
        assert_eq!(big.encode(), None);
        let mut bytes = Header { body_len: MAX_BODY, ..big }.encode().unwrap();
        bytes[3..7].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(Header::decode(&bytes), None, "a body past the limit");
        for bad in [&b""[..], b"VG\x01", b"VF\x02\0\0\0\x01\x04\x7f\0\0\x01\0\x01", b"VF\x01\0\0\0\x01\x05"] {
            assert_eq!(Header::decode(bad), None, "{bad:?}");
        }
        assert_eq!(frame(&[], b"body"), None);
        assert_eq!(frame(&[0; MAX_HEADER + 1], b""), None);
        assert_eq!(frame(b"hh", b"body").unwrap(), b"\x00\x02hhbody");
    }
}
