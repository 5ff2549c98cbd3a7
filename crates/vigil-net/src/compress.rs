//! Compressed stream messages: a push-pull's view, LZ4-compressed before it
//! is sealed, and decompressed after it is opened, within a size checked
//! before anything is allocated.
//!
//! A stream message's body is the protocol's packet (it starts with the
//! wire format's `"VG"` and its version), or, compressed:
//!
//! | field | bytes | |
//! |---|---|---|
//! | magic | 3 | `"VG"` and 0, a wire version no packet has ([`MAGIC`]): a seal in plaintext takes it as it takes a packet, and a member of a build before compression refuses it as a packet of an unknown version |
//! | length | 4 | the packet's length, u32 big-endian, at most the receiver's limit |
//! | block | the rest | the packet as one LZ4 block |
//!
//! A message is compressed only when it is at least [`MIN_LEN`] bytes and
//! the block makes it shorter; a stream ping or a short push-pull travels
//! as it is. The compression comes before the seal, so what travels is
//! still authenticated and encrypted; its length says how well the view
//! compressed, as it says how long it is uncompressed.
//!
//! # Examples
//!
//! ```
//! use vigil_net::compress::{compress, decompress};
//!
//! let packet: Vec<u8> = b"VG".iter().chain(b"member-0042 127.0.0.1 alive ".repeat(40).iter()).copied().collect();
//! let sent = compress(&packet);
//! assert!(sent.len() < packet.len() / 4, "{} bytes", sent.len());
//! assert_eq!(decompress(&sent, 1 << 20)?, packet);
//! // A short message is sent as it is.
//! assert_eq!(compress(b"VG short"), &b"VG short"[..]);
//! # Ok::<(), vigil_net::compress::CompressError>(())
//! ```

use std::borrow::Cow;
use std::fmt;

/// The first bytes of a compressed message.
pub const MAGIC: [u8; 3] = *b"VG\0";

/// The shortest message compressed: below, a block saves too little to pay
/// for its seven bytes of framing.
pub const MIN_LEN: usize = 256;

/// The most an LZ4 block can expand: each byte of a match's length
/// extension stands for at most 255 bytes of output. A message that claims
/// more than this many times its block is refused before anything is
/// allocated for it.
const MAX_RATIO: usize = 255;

/// Why a compressed message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompressError {
    /// Shorter than its own framing.
    Truncated,
    /// It says it decompresses to more than the receiver takes.
    TooLarge {
        /// What it says.
        len: usize,
        /// The receiver's limit.
        max: usize,
    },
    /// The block is not LZ4, does not decompress to the length it says, or
    /// is too short to decompress to it at all.
    Corrupt,
}

impl fmt::Display for CompressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompressError::Truncated => f.write_str("compressed message cut short"),
            CompressError::TooLarge { len, max } => {
                write!(f, "compressed message of {len} bytes uncompressed, over the limit of {max}")
            }
            CompressError::Corrupt => f.write_str("compressed message does not decompress to its stated length"),
        }
    }
}

impl std::error::Error for CompressError {}

/// `packet` as it is sent: compressed if it is at least [`MIN_LEN`] bytes
/// and that makes it shorter, else unchanged.
pub fn compress(packet: &[u8]) -> Cow<'_, [u8]> {
    let Ok(len) = u32::try_from(packet.len()) else { return Cow::Borrowed(packet) };
    if packet.len() < MIN_LEN {
        return Cow::Borrowed(packet);
    }
    let mut out = vec![0u8; 7 + lz4_flex::block::get_maximum_output_size(packet.len())];
    out[..3].copy_from_slice(&MAGIC);
    out[3..7].copy_from_slice(&len.to_be_bytes());
    match lz4_flex::block::compress_into(packet, &mut out[7..]) {
        Ok(n) if 7 + n < packet.len() => {
            out.truncate(7 + n);
            Cow::Owned(out)
        }
        _ => Cow::Borrowed(packet),
    }
}

/// The packet a received body holds: decompressed if it is compressed (its
/// stated length checked against `max` before anything is allocated), else
/// the body itself.
///
/// # Errors
///
/// A [`CompressError`]: cut short, too large, or not a block of the stated
/// length.
///
/// # Examples
///
/// ```
/// use vigil_net::compress::{CompressError, decompress};
///
/// // 4 GiB claimed: refused before a byte is allocated.
/// let bomb = b"VG\0\xff\xff\xff\xff\x00";
/// assert_eq!(decompress(bomb, 1 << 20), Err(CompressError::TooLarge { len: u32::MAX as usize, max: 1 << 20 }));
/// assert_eq!(decompress(b"VG\0\x00\x00\x00\x09junk", 100), Err(CompressError::Corrupt));
/// assert_eq!(decompress(b"VG plain", 100)?, &b"VG plain"[..]);
/// # Ok::<(), CompressError>(())
/// ```
pub fn decompress(body: &[u8], max: usize) -> Result<Cow<'_, [u8]>, CompressError> {
    let Some(rest) = body.strip_prefix(&MAGIC) else { return Ok(Cow::Borrowed(body)) };
    let (len, block) = rest.split_first_chunk::<4>().ok_or(CompressError::Truncated)?;
    let len = u32::from_be_bytes(*len) as usize;
    if len > max {
        return Err(CompressError::TooLarge { len, max });
    }
    // A short block claiming a large view is refused before the view's
    // bytes are allocated and zeroed (megabytes per frame, otherwise).
    if len > block.len().saturating_mul(MAX_RATIO).saturating_add(16) {
        return Err(CompressError::Corrupt);
    }
    let mut out = vec![0u8; len];
    match lz4_flex::block::decompress_into(block, &mut out) {
        Ok(n) if n == len => Ok(Cow::Owned(out)),
        _ => Err(CompressError::Corrupt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_what_does_not_decompress_to_its_length() {
        let packet: Vec<u8> = (0..4000u32).map(|i| (i % 97) as u8).collect();
        let sent = compress(&packet);
        assert!(sent.starts_with(&MAGIC) && sent.len() < packet.len() / 2);
        assert_eq!(decompress(&sent, packet.len()).unwrap(), packet);
        assert_eq!(
            decompress(&sent, packet.len() - 1),
            Err(CompressError::TooLarge { len: packet.len(), max: packet.len() - 1 })
        );
        // Every truncation past the magic is refused; none panics.
        for n in 3..sent.len() {
            assert!(decompress(&sent[..n], packet.len()).is_err(), "cut at {n}");
        }
        // A length that lies either way.
        let mut lie = sent.to_vec();
        lie[3..7].copy_from_slice(&(packet.len() as u32 + 1).to_be_bytes());
        assert_eq!(decompress(&lie, 1 << 20), Err(CompressError::Corrupt));
        lie[3..7].copy_from_slice(&(packet.len() as u32 - 1).to_be_bytes());
        assert_eq!(decompress(&lie, 1 << 20), Err(CompressError::Corrupt));
        // A short block that claims a view within the limit, but more than
        // any block of its length can hold.
        assert_eq!(decompress(b"VG\0\x01\x00\x00\x00tiny", 64 << 20), Err(CompressError::Corrupt));
        // The most compressible input there is still comes back whole.
        let zeros = vec![0u8; 1 << 20];
        assert_eq!(decompress(&compress(&zeros), zeros.len()).unwrap(), zeros);
        // Noise that does not compress is sent as it is.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..1000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert_eq!(compress(&noise), &noise[..]);
    }
}
