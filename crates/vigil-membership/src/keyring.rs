//! The keyring: the cluster's keys, one of them primary.
//!
//! The primary key seals what this node sends; every key in the ring opens
//! what it receives. Rotation on a live cluster is three steps, each taken on
//! every node before the next begins: install the new key (every node can
//! now open it), use it (nodes seal with it; the others still open it), and
//! remove the old one (no node seals with it any more).
//!
//! A key is named by its id: four bytes the AEAD itself derives from the key
//! (a key check value), so a receiver knows which key to try without trying
//! them all, and an operator can see which key opened what without the key
//! being shown.

use std::fmt;

use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

/// Bytes of a key.
pub const KEY_LEN: usize = 32;

/// The most keys a ring holds (rotation needs two; a few more cover an
/// operator's mistakes).
pub const MAX_KEYS: usize = 16;

/// A key's id: derived from the key, shown instead of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct KeyId(pub u32);

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", self.0)
    }
}

/// A key's id as written (8 hex digits, as listed) that is not one.
///
/// ```
/// use vigil_membership::keyring::KeyId;
///
/// assert_eq!("0a0b0c0d".parse::<KeyId>(), Ok(KeyId(0x0a0b_0c0d)));
/// assert!("0a0b".parse::<KeyId>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadKeyId;

impl fmt::Display for BadKeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a key id (8 hex digits, as listed)")
    }
}

impl std::error::Error for BadKeyId {}

impl std::str::FromStr for KeyId {
    type Err = BadKeyId;

    fn from_str(text: &str) -> Result<KeyId, BadKeyId> {
        if text.len() != 8 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(BadKeyId);
        }
        u32::from_str_radix(text, 16).map(KeyId).map_err(|_| BadKeyId)
    }
}

/// A key as an operator handles it: 64 hex digits or standard base64 (44
/// characters, padded or not) when read, base64 when written. Its `Debug`
/// never shows it.
///
/// ```
/// use vigil_membership::keyring::Key;
///
/// let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
/// let key: Key = hex.parse()?;
/// assert_eq!(key.to_string(), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
/// assert_eq!(key.to_string().parse::<Key>()?, key);
/// assert_eq!(key.to_hex(), hex);
/// assert_eq!(format!("{key:?}"), "Key(..)");
/// assert!("not a key".parse::<Key>().is_err());
/// # Ok::<(), vigil_membership::keyring::BadKey>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key(pub [u8; KEY_LEN]);

/// Text that is not a 32-byte key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadKey;

impl fmt::Display for BadKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a 32-byte key (64 hex digits, or 44 characters of base64)")
    }
}

impl std::error::Error for BadKey {}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// The key as 64 hex digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl std::str::FromStr for Key {
    type Err = BadKey;

    fn from_str(text: &str) -> Result<Key, BadKey> {
        let text = text.trim();
        let bytes = if text.len() == 2 * KEY_LEN && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..KEY_LEN).map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()).collect::<Option<Vec<u8>>>()
        } else {
            base64::decode(text)
        };
        bytes.and_then(|b| b.try_into().ok()).map(Key).ok_or(BadKey)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&base64::encode(&self.0))
    }
}

/// Standard base64 (RFC 4648), for keys.
mod base64 {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    /// Decodes, padded or not; `None` for anything that is not base64.
    pub(super) fn decode(text: &str) -> Option<Vec<u8>> {
        let value = |c: u8| ALPHABET.iter().position(|&a| a == c).map(|v| v as u32);
        let digits: Vec<u8> = text.trim_end_matches('=').bytes().collect();
        let mut out = Vec::with_capacity(digits.len() * 3 / 4);
        for chunk in digits.chunks(4) {
            let mut acc = 0u32;
            for (i, &c) in chunk.iter().enumerate() {
                acc |= value(c)? << (18 - 6 * i);
            }
            let n = match chunk.len() {
                4 => 3,
                3 => 2,
                2 => 1,
                _ => return None,
            };
            out.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
        }
        Some(out)
    }

    /// Encodes, padded.
    pub(super) fn encode(bytes: &[u8]) -> String {
        let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let mut acc = 0u32;
            for (i, &b) in chunk.iter().enumerate() {
                acc |= u32::from(b) << (16 - 8 * i);
            }
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(char::from(ALPHABET[(acc >> (18 - 6 * i) & 63) as usize]));
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn every_length_reads_back_and_junk_is_refused() {
            for n in 0..8 {
                let bytes: Vec<u8> = (0..n).map(|i| (i * 37) as u8).collect();
                assert_eq!(decode(&encode(&bytes)), Some(bytes));
            }
            let b64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
            assert_eq!(decode(b64.trim_end_matches('=')), decode(b64));
            for bad in ["not base64!", "A", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=AA"] {
                assert!(decode(bad).is_none_or(|b| b.len() != 32), "{bad}");
            }
        }
    }
}

/// One key of the ring, with what it has done.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) id: KeyId,
    /// Seals and opens envelope version 2.
    pub(crate) cipher: XChaCha20Poly1305,
    /// Seals and opens envelope version 3, under a key derived from this
    /// one ([`AES_KEY_NONCE`]), so that no key is used raw by two ciphers.
    pub(crate) aes: ring::aead::LessSafeKey,
    /// Packets sealed with it.
    pub(crate) sealed: u64,
    /// Packets it opened.
    pub(crate) opened: u64,
}

impl fmt::Debug for Entry {
    // Never the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("id", &self.id)
            .field("sealed", &self.sealed)
            .field("opened", &self.opened)
            .finish()
    }
}

/// A keyring operation that could not be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyringError {
    /// The ring already holds [`MAX_KEYS`] keys.
    Full,
    /// No key with this id is in the ring.
    Unknown(KeyId),
    /// The primary key cannot be removed (use another one first).
    RemovingPrimary(KeyId),
    /// Two different keys derive the same id (about one chance in four
    /// billion): generate another key.
    IdCollision(KeyId),
}

impl fmt::Display for KeyringError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyringError::Full => write!(f, "the keyring already holds {MAX_KEYS} keys"),
            KeyringError::Unknown(id) => write!(f, "no key {id} in the keyring"),
            KeyringError::RemovingPrimary(id) => {
                write!(f, "key {id} is the primary key; use another key before removing it")
            }
            KeyringError::IdCollision(id) => {
                write!(f, "a different key already has id {id}; generate another key")
            }
        }
    }
}

impl std::error::Error for KeyringError {}

/// A ring's keys (by id, never the key), for an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct KeyInfo {
    /// The key's id.
    pub id: KeyId,
    /// Whether it seals what this node sends.
    pub primary: bool,
    /// Packets sealed with it.
    pub sealed: u64,
    /// Packets it opened.
    pub opened: u64,
}

/// The keys. See the module documentation.
///
/// ```
/// use vigil_membership::keyring::Keyring;
///
/// let mut ring = Keyring::new([1; 32]);
/// let old = ring.primary();
/// let new = ring.install([2; 32])?;
/// ring.use_key(new)?;
/// ring.remove(old)?;
/// assert_eq!(ring.list().len(), 1);
/// assert_eq!(ring.primary(), new);
/// assert!(ring.remove(new).is_err(), "the primary key stays");
/// # Ok::<(), vigil_membership::keyring::KeyringError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Keyring {
    pub(crate) keys: Vec<Entry>,
    pub(crate) primary: usize,
}

/// The nonce from which a key's id is derived: its last eight bytes are
/// never zero, and every packet nonce's are, so no packet ever uses it.
const ID_NONCE: [u8; 24] = *b"vigil key id, not a pkt.";

/// The nonce whose XChaCha20 key stream under a key is the AES-256 key of
/// envelope version 3: a pseudorandom function of the key, and, like
/// [`ID_NONCE`], never a packet's nonce.
const AES_KEY_NONCE: [u8; 24] = *b"vigil aes key, not pkt.!";

fn entry(key: &[u8; KEY_LEN]) -> Entry {
    let cipher = XChaCha20Poly1305::new(&(*key).into());
    let nonce = XNonce::from(ID_NONCE);
    let tag = cipher.encrypt_inout_detached(&nonce, b"vigil key id", (&mut [][..]).into());
    let id = tag.map_or(0, |t| u32::from_be_bytes([t[0], t[1], t[2], t[3]]));
    let mut aes_key = [0u8; KEY_LEN];
    // Encrypting zeros yields the key stream; the tag is not needed. It
    // fails only for messages beyond 256 GiB.
    let _ = cipher.encrypt_inout_detached(&XNonce::from(AES_KEY_NONCE), b"", (&mut aes_key[..]).into());
    // A 32-byte key is always a valid AES-256 key.
    let aes = ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &aes_key).expect("a 32-byte AES-256 key");
    let aes = ring::aead::LessSafeKey::new(aes);
    Entry { id: KeyId(id), cipher, aes, sealed: 0, opened: 0 }
}

/// The id `key` has in any keyring.
pub fn key_id(key: &[u8; KEY_LEN]) -> KeyId {
    entry(key).id
}

impl Keyring {
    /// A ring of one key, the primary.
    pub fn new(primary: [u8; KEY_LEN]) -> Keyring {
        Keyring { keys: vec![entry(&primary)], primary: 0 }
    }

    /// Adds a key that opens packets (installing a key twice is not an
    /// error). Returns its id.
    ///
    /// # Errors
    ///
    /// [`KeyringError::Full`], or [`KeyringError::IdCollision`].
    pub fn install(&mut self, key: [u8; KEY_LEN]) -> Result<KeyId, KeyringError> {
        let e = entry(&key);
        if let Some(have) = self.keys.iter().find(|k| k.id == e.id) {
            // The same key, or another with the same id: the ciphers tell.
            return if same_key(&have.cipher, &e.cipher) { Ok(e.id) } else { Err(KeyringError::IdCollision(e.id)) };
        }
        if self.keys.len() >= MAX_KEYS {
            return Err(KeyringError::Full);
        }
        let id = e.id;
        self.keys.push(e);
        Ok(id)
    }

    /// Makes the installed key `id` the primary: what this node sends is
    /// sealed with it from now on.
    ///
    /// # Errors
    ///
    /// [`KeyringError::Unknown`].
    pub fn use_key(&mut self, id: KeyId) -> Result<(), KeyringError> {
        self.primary = self.position(id)?;
        Ok(())
    }

    /// Removes key `id`: packets sealed with it are no longer opened.
    ///
    /// # Errors
    ///
    /// [`KeyringError::Unknown`], or [`KeyringError::RemovingPrimary`].
    pub fn remove(&mut self, id: KeyId) -> Result<(), KeyringError> {
        let i = self.position(id)?;
        if i == self.primary {
            return Err(KeyringError::RemovingPrimary(id));
        }
        self.keys.remove(i);
        if i < self.primary {
            self.primary -= 1;
        }
        Ok(())
    }

    /// The primary key's id.
    pub fn primary(&self) -> KeyId {
        self.keys[self.primary].id
    }

    /// Every key, by id, with what it has sealed and opened.
    pub fn list(&self) -> Vec<KeyInfo> {
        self.keys
            .iter()
            .enumerate()
            .map(|(i, k)| KeyInfo { id: k.id, primary: i == self.primary, sealed: k.sealed, opened: k.opened })
            .collect()
    }

    fn position(&self, id: KeyId) -> Result<usize, KeyringError> {
        self.keys.iter().position(|k| k.id == id).ok_or(KeyringError::Unknown(id))
    }

    pub(crate) fn find(&mut self, id: KeyId) -> Option<&mut Entry> {
        self.keys.iter_mut().find(|k| k.id == id)
    }
}

/// Whether two ciphers hold the same key: they seal a probe alike.
fn same_key(a: &XChaCha20Poly1305, b: &XChaCha20Poly1305) -> bool {
    let nonce = XNonce::from(*b"vigil same-key probe....");
    let mut x = *b"probe";
    let mut y = *b"probe";
    let ta = a.encrypt_inout_detached(&nonce, b"", (&mut x[..]).into());
    let tb = b.encrypt_inout_detached(&nonce, b"", (&mut y[..]).into());
    matches!((ta, tb), (Ok(ta), Ok(tb)) if ta == tb && x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_distinct_and_never_the_key() {
        let a = key_id(&[1; 32]);
        assert_eq!(a, key_id(&[1; 32]), "a key always has the same id");
        assert_ne!(a, key_id(&[2; 32]));
        let ring = Keyring::new([1; 32]);
        let shown = format!("{ring:?}");
        assert!(!shown.contains("cipher") && shown.contains(&format!("{}", a.0)), "{shown}");
        assert_eq!(a.to_string().len(), 8);
    }

    #[test]
    fn install_use_remove_and_their_refusals() {
        let mut ring = Keyring::new([1; 32]);
        let first = ring.primary();
        assert_eq!(ring.install([1; 32]), Ok(first), "installing a key twice is not an error");
        assert_eq!(ring.list().len(), 1);
        let mut ids = vec![first];
        for k in 2..=MAX_KEYS as u8 {
            ids.push(ring.install([k; 32]).unwrap());
        }
        assert_eq!(ring.install([99; 32]), Err(KeyringError::Full));
        // Using the last key and removing keys before it keeps it primary.
        let last = *ids.last().unwrap();
        ring.use_key(last).unwrap();
        ring.remove(first).unwrap();
        ring.remove(ids[3]).unwrap();
        assert_eq!(ring.primary(), last);
        assert_eq!(ring.remove(last), Err(KeyringError::RemovingPrimary(last)));
        assert_eq!(ring.remove(first), Err(KeyringError::Unknown(first)));
        assert_eq!(ring.use_key(first), Err(KeyringError::Unknown(first)));
        assert_eq!(ring.list().iter().filter(|k| k.primary).count(), 1);
    }
}
