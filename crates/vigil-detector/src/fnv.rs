//! FNV-1a (64-bit): the workspace's one stable hash.
//!
//! Stable across runs, platforms and compiler versions, unlike the standard
//! library's hasher, which is what a position on a ring, a run's record
//! hash or an identifier in a written file needs. Not for hash tables
//! exposed to untrusted keys (it is not keyed).

/// The FNV-1a offset basis.
const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// The FNV-1a prime.
const PRIME: u64 = 0x0100_0000_01b3;

/// A running FNV-1a hash.
///
/// ```
/// use vigil_detector::fnv::{Fnv1a, fnv1a};
///
/// let mut h = Fnv1a::new();
/// h.write(b"node-");
/// h.write(b"7");
/// assert_eq!(h.finish(), fnv1a(b"node-7"));
/// assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
/// assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(OFFSET)
    }
}

impl Fnv1a {
    /// A hash of nothing yet.
    pub fn new() -> Fnv1a {
        Fnv1a::default()
    }

    /// Feeds `bytes`.
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(PRIME);
        }
    }

    /// The hash of everything fed so far.
    #[inline]
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// The FNV-1a hash of `bytes`.
#[inline]
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a::new();
    h.write(bytes);
    h.finish()
}

/// SplitMix64's finalizer: a bijection of 64-bit values in which every
/// input bit reaches every output bit. For deriving well-spread numbers
/// from seeds and indexes, and for hashes that are added together.
///
/// ```
/// use vigil_detector::fnv::mix;
///
/// assert_eq!(mix(0), 0);
/// assert_ne!(mix(1), mix(2));
/// ```
#[inline]
pub fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
