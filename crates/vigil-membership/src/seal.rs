//! Sealing: every datagram and stream message encrypted and authenticated,
//! and replays refused. Sans-IO, like the rest of the protocol: a runtime
//! seals what a [`Node`](crate::Node) transmits and opens what it receives;
//! the simulator does the same at scale.
//!
//! # The envelope
//!
//! | field | bytes | |
//! |---|---|---|
//! | magic | 2 | `"VS"` ([`MAGIC`]; a plaintext packet starts with `"VG"`) |
//! | version | 1 | [`VERSION`] |
//! | key id | 4 | the [`KeyId`] of the key that sealed it |
//! | session | 8 | the sender's session: random, drawn when its seal is made (so once per process start, hence per generation) |
//! | counter | 8 | the sender's packet counter in the session, from 1 |
//! | time | 4 | when it was sealed, in seconds since the Unix epoch on the sender's clock (0 if the sender was never told the time) |
//! | ciphertext | n | the plaintext packet, encrypted |
//! | tag | 16 | |
//!
//! The version names the cipher ([`Envelope`]): 3, AES-256-GCM, the
//! default; 2, XChaCha20-Poly1305, what earlier builds send. Every build
//! opens both. Version 3 runs at the processor's AES and carry-less
//! multiplication instructions, found at run time, so it costs what the
//! cipher costs for every user of this crate (the crate's README has the
//! candidates measured side by side).
//!
//! The nonce is the session and the counter: for version 3, the session
//! and the counter's low 32 bits (the counter never passes 2³² − 1: the
//! session moves on first, to a value derived from the last); for version
//! 2, the session, the counter and eight zero bytes. Unique per key as long
//! as sessions are, which 64 random bits make all but certain. Version 3
//! uses a key derived from the ring's key, so no key is used raw by two
//! ciphers. The associated data is the cluster id and the header, so a
//! packet of another cluster, or one whose header was altered, does not
//! open. [`OVERHEAD`] is 43 bytes either way.
//!
//! # Freshness
//!
//! The replay windows live in memory: a receiver that restarted has
//! forgotten what it saw, and would open a captured packet again. A seal
//! given a freshness window ([`Seal::with_freshness`]) closes that: it
//! refuses every packet sealed before the second it started, and any packet
//! more than the window away from its own time ([`OpenError::Stale`]). The
//! members' clocks must then be within the window of each other's (NTP
//! keeps them within milliseconds); a sender whose clock is behind the
//! receiver's by `d` seconds is refused for the first `d` seconds after the
//! receiver starts, and heard from then on. The runtime tells the seal the
//! time ([`Seal::tick`]), as this crate reads no clock.
//!
//! # Modes
//!
//! [`SealMode::Plaintext`] sends plaintext and accepts plaintext (and, once it
//! holds a key, sealed packets); [`SealMode::Staged`] sends sealed and still
//! accepts plaintext; [`SealMode::Sealed`] sends and accepts sealed packets
//! only. Encryption is turned on in a running cluster in three rolling
//! steps, each on every node before the next begins: give every node the
//! key (it now opens sealed packets), go staged (everyone already opens
//! what it sends), go sealed (no one sends plaintext any more). No step
//! ever sends a packet its receiver cannot open.
//!
//! The cipher changes the same way ([`Seal::set_envelope`]): every node
//! first runs a build that opens version 3 while still sending version 2,
//! then each moves to version 3 in turn.
//!
//! ```
//! use vigil_membership::keyring::Keyring;
//! use vigil_membership::seal::{SealMode, OpenError, Seal};
//!
//! let key = [7; 32];
//! let mut a = Seal::new(0xC1, SealMode::Sealed, Some(Keyring::new(key)), 1)?;
//! let mut b = Seal::new(0xC1, SealMode::Sealed, Some(Keyring::new(key)), 2)?;
//! let packet = a.seal(b"VG\x02 a plaintext packet");
//! assert_eq!(&*b.open(&packet, 1400)?, b"VG\x02 a plaintext packet");
//! // The same packet again is a replay.
//! assert_eq!(b.open(&packet, 1400).unwrap_err(), OpenError::Replayed);
//! // Plaintext is refused in sealed mode.
//! assert_eq!(b.open(b"VG\x02 plain", 1400).unwrap_err(), OpenError::Plaintext);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::fmt;

use chacha20poly1305::aead::AeadInOut;
use chacha20poly1305::{Tag, XNonce};

use crate::keyring::{KeyId, Keyring};
use crate::replay::{ReplayGuard, Verdict};
use crate::wire;

/// The first bytes of a sealed packet.
pub const MAGIC: [u8; 2] = *b"VS";
/// The envelope's version this build sends by default ([`Envelope::Aes256Gcm`]).
pub const VERSION: u8 = 3;
/// Bytes before the ciphertext.
pub const HEADER_LEN: usize = 2 + 1 + 4 + 8 + 8 + 4;
/// Bytes of the authentication tag.
pub const TAG_LEN: usize = 16;
/// What sealing adds to a packet.
pub const OVERHEAD: usize = HEADER_LEN + TAG_LEN;

/// Sessions whose replay windows a seal keeps (a cluster's members and some
/// restarts).
const SESSIONS: usize = 2 * crate::message::MAX_MEMBERS;

/// The cipher a seal sends with, named by the envelope's version. Both
/// are opened whatever a seal sends.
///
/// ```
/// use vigil_membership::seal::Envelope;
///
/// assert_eq!(Envelope::default(), Envelope::Aes256Gcm);
/// assert_eq!(Envelope::Aes256Gcm.version(), 3);
/// assert_eq!("2".parse::<Envelope>(), Ok(Envelope::XChaCha20Poly1305));
/// assert_eq!(Envelope::XChaCha20Poly1305.to_string(), "2 (xchacha20-poly1305)");
/// assert!("4".parse::<Envelope>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Envelope {
    /// Version 2: XChaCha20-Poly1305, what builds before version 3 send
    /// and open. Send it while a cluster still runs such builds.
    XChaCha20Poly1305,
    /// Version 3: AES-256-GCM.
    #[default]
    Aes256Gcm,
}

impl Envelope {
    /// The version byte.
    pub fn version(self) -> u8 {
        match self {
            Envelope::XChaCha20Poly1305 => 2,
            Envelope::Aes256Gcm => 3,
        }
    }

    /// The envelope of version `v`, if this build has it.
    pub fn from_version(v: u8) -> Option<Envelope> {
        match v {
            2 => Some(Envelope::XChaCha20Poly1305),
            3 => Some(Envelope::Aes256Gcm),
            _ => None,
        }
    }

    /// The cipher's name.
    pub fn cipher(self) -> &'static str {
        match self {
            Envelope::XChaCha20Poly1305 => "xchacha20-poly1305",
            Envelope::Aes256Gcm => "aes-256-gcm",
        }
    }
}

impl fmt::Display for Envelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.version(), self.cipher())
    }
}

/// Text that names no envelope: the versions are 2 and 3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadEnvelope(pub String);

impl fmt::Display for BadEnvelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' is not an envelope version: 3 (aes-256-gcm) or 2 (xchacha20-poly1305)", self.0.escape_debug())
    }
}

impl std::error::Error for BadEnvelope {}

impl std::str::FromStr for Envelope {
    type Err = BadEnvelope;

    /// `3` or `aes-256-gcm`; `2` or `xchacha20-poly1305`.
    fn from_str(text: &str) -> Result<Envelope, BadEnvelope> {
        match text.trim() {
            "3" | "aes-256-gcm" => Ok(Envelope::Aes256Gcm),
            "2" | "xchacha20-poly1305" => Ok(Envelope::XChaCha20Poly1305),
            _ => Err(BadEnvelope(text.to_owned())),
        }
    }
}

/// What is sent and what is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SealMode {
    /// Plaintext out; plaintext in, and sealed in once a key is installed.
    Plaintext,
    /// Sealed out; sealed or plaintext in: turning encryption on.
    Staged,
    /// Sealed out, sealed in.
    Sealed,
}

/// A seal that cannot be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SealError {
    /// [`SealMode::Staged`] and [`SealMode::Sealed`] need a keyring.
    NoKeyring,
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SealError::NoKeyring => f.write_str("staged and sealed modes need a keyring (at least one key)"),
        }
    }
}

impl std::error::Error for SealError {}

/// Why a received packet was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpenError {
    /// Neither a plaintext nor a sealed vigil packet.
    NotVigil,
    /// Shorter than the envelope.
    Truncated,
    /// Longer than the receiver accepts.
    Oversized,
    /// An envelope version this build does not read.
    Version(u8),
    /// Sealed with a key this node does not hold.
    UnknownKey(KeyId),
    /// Did not authenticate: altered, forged, or of another cluster.
    Forged,
    /// A packet already received.
    Replayed,
    /// Older than the replay window can tell from a replay.
    TooOld,
    /// Plaintext, in [`SealMode::Sealed`].
    Plaintext,
    /// Sealed, but this node has no keyring ([`SealMode::Plaintext`]).
    NoKeyring,
    /// Sealed before this node started, or too far from its time (outside
    /// the freshness window): a replay after a restart, or a sender whose
    /// clock is off by more than the window.
    Stale,
}

impl OpenError {
    /// Every reason, in [`SealStats::rejected`]'s order.
    pub const REASONS: [&'static str; 11] = [
        "not-vigil",
        "truncated",
        "oversized",
        "version",
        "unknown-key",
        "forged",
        "replayed",
        "too-old",
        "plaintext",
        "no-keyring",
        "stale",
    ];

    /// The index of this reason in [`OpenError::REASONS`].
    pub fn index(self) -> usize {
        match self {
            OpenError::NotVigil => 0,
            OpenError::Truncated => 1,
            OpenError::Oversized => 2,
            OpenError::Version(_) => 3,
            OpenError::UnknownKey(_) => 4,
            OpenError::Forged => 5,
            OpenError::Replayed => 6,
            OpenError::TooOld => 7,
            OpenError::Plaintext => 8,
            OpenError::NoKeyring => 9,
            OpenError::Stale => 10,
        }
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::NotVigil => f.write_str("not a vigil packet"),
            OpenError::Truncated => write!(f, "shorter than the {OVERHEAD}-byte envelope"),
            OpenError::Oversized => f.write_str("longer than this node accepts"),
            OpenError::Version(v) => write!(f, "envelope version {v} (this build reads 2 and 3)"),
            OpenError::UnknownKey(id) => write!(f, "sealed with key {id}, which this node does not hold"),
            OpenError::Forged => f.write_str("did not authenticate (altered, forged, or of another cluster)"),
            OpenError::Replayed => f.write_str("a replay of a packet already received"),
            OpenError::TooOld => f.write_str("older than the replay window"),
            OpenError::Plaintext => f.write_str("plaintext, and this node accepts sealed packets only"),
            OpenError::NoKeyring => f.write_str("sealed, and this node has no key"),
            OpenError::Stale => f.write_str("sealed before this node started, or outside the freshness window"),
        }
    }
}

impl std::error::Error for OpenError {}

/// What a seal has done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SealStats {
    /// Packets sealed.
    pub sealed: u64,
    /// Sealed packets opened.
    pub opened: u64,
    /// Of them, in envelope version 2: while this grows, some member
    /// still sends it (see [`Envelope`]).
    pub opened_v2: u64,
    /// Plaintext packets sent (plaintext mode).
    pub plaintext_sent: u64,
    /// Plaintext packets accepted (plaintext and staged modes).
    pub plaintext_accepted: u64,
    /// Packets refused, by reason ([`OpenError::REASONS`]).
    pub rejected: [u64; 11],
}

/// One node's sealing state: its mode, keyring, session and counter, and
/// the replay windows of everyone it hears from. See the module
/// documentation.
#[derive(Debug, Clone)]
pub struct Seal {
    mode: SealMode,
    cluster: u64,
    keyring: Option<Keyring>,
    session: u64,
    counter: u64,
    envelope: Envelope,
    guard: ReplayGuard,
    stats: SealStats,
    /// The time, in seconds since the Unix epoch, as last told.
    now: u64,
    /// The freshness window, and when this seal started.
    freshness: Option<(u64, u64)>,
}

impl Seal {
    /// A seal for `cluster` in `mode`. `session` must be random (the caller
    /// draws it: this crate reads no clock and no entropy source) and fresh
    /// for every process start.
    ///
    /// # Errors
    ///
    /// [`SealError::NoKeyring`] for a sealing mode without a keyring.
    pub fn new(cluster: u64, mode: SealMode, keyring: Option<Keyring>, session: u64) -> Result<Seal, SealError> {
        if mode != SealMode::Plaintext && keyring.is_none() {
            return Err(SealError::NoKeyring);
        }
        Ok(Seal {
            mode,
            cluster,
            keyring,
            session,
            counter: 0,
            envelope: Envelope::default(),
            guard: ReplayGuard::new(SESSIONS),
            stats: SealStats::default(),
            now: 0,
            freshness: None,
        })
    }

    /// Refuses packets sealed before `started` (seconds since the Unix
    /// epoch), or more than `window` away from the time this seal was last
    /// told ([`Seal::tick`]): see [Freshness](self#freshness). `started` is
    /// also the time until told otherwise.
    ///
    /// ```
    /// use std::time::Duration;
    /// use vigil_membership::keyring::Keyring;
    /// use vigil_membership::seal::{SealMode, OpenError, Seal};
    ///
    /// let key = Some(Keyring::new([7; 32]));
    /// let mut a = Seal::new(1, SealMode::Sealed, key.clone(), 1)?;
    /// a.tick(1_000);
    /// let old = a.seal(b"VG\x02 sealed at 1000");
    /// // The receiver restarted at 1100 with a 60 s window: a capture from
    /// // before its start is refused, a packet sealed since opens.
    /// let mut b = Seal::new(1, SealMode::Sealed, key, 2)?.with_freshness(Duration::from_secs(60), 1_100);
    /// assert_eq!(b.open(&old, 1400).unwrap_err(), OpenError::Stale);
    /// a.tick(1_101);
    /// assert!(b.open(&a.seal(b"VG\x02 sealed at 1101"), 1400).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_freshness(mut self, window: std::time::Duration, started: u64) -> Seal {
        self.freshness = Some((window.as_secs(), started));
        self.now = self.now.max(started);
        self
    }

    /// Tells the seal the time, in seconds since the Unix epoch: what it
    /// seals is stamped with it, and what it opens is judged by it.
    pub fn tick(&mut self, now: u64) {
        self.now = now;
    }

    /// A seal that passes plaintext through (no encryption).
    pub fn plaintext(cluster: u64) -> Seal {
        Seal {
            mode: SealMode::Plaintext,
            cluster,
            keyring: None,
            session: 0,
            counter: 0,
            envelope: Envelope::default(),
            guard: ReplayGuard::new(1),
            stats: SealStats::default(),
            now: 0,
            freshness: None,
        }
    }

    /// The mode.
    pub fn mode(&self) -> SealMode {
        self.mode
    }

    /// Seals with `envelope` from the next packet on (opening takes both,
    /// whatever this says). See [Modes](self#modes) for the rollout.
    pub fn set_envelope(&mut self, envelope: Envelope) {
        self.envelope = envelope;
    }

    /// [`Seal::set_envelope`], for a seal being made.
    pub fn with_envelope(mut self, envelope: Envelope) -> Seal {
        self.envelope = envelope;
        self
    }

    /// The envelope this seal sends.
    pub fn envelope(&self) -> Envelope {
        self.envelope
    }

    /// Starts a new session (a process restart, or the first sealed packet
    /// of a node that sent plaintext): counters from 1 again under a fresh
    /// random `session`, and the replay windows forgotten, as a new process
    /// would. The mode, keyring and statistics stay.
    pub fn restart(&mut self, session: u64) {
        self.session = session;
        self.counter = 0;
        self.guard = ReplayGuard::new(SESSIONS);
    }

    /// Changes the mode (staged rollout: plaintext → staged on every node,
    /// then staged → sealed on every node).
    ///
    /// # Errors
    ///
    /// [`SealError::NoKeyring`] for a sealing mode without a keyring.
    pub fn set_mode(&mut self, mode: SealMode) -> Result<(), SealError> {
        if mode != SealMode::Plaintext && self.keyring.is_none() {
            return Err(SealError::NoKeyring);
        }
        self.mode = mode;
        Ok(())
    }

    /// The keyring, to install, use and remove keys.
    pub fn keyring(&self) -> Option<&Keyring> {
        self.keyring.as_ref()
    }

    /// The keyring, to install, use and remove keys; a plaintext seal gets
    /// one on the first key.
    pub fn keyring_mut(&mut self) -> Option<&mut Keyring> {
        self.keyring.as_mut()
    }

    /// Gives a plaintext seal its first key (then [`Seal::set_mode`]).
    pub fn set_keyring(&mut self, keyring: Keyring) {
        self.keyring = Some(keyring);
    }

    /// What the seal has done.
    pub fn stats(&self) -> SealStats {
        self.stats
    }

    /// The packet to send for `plaintext`: sealed with the primary key, or
    /// the plaintext itself in [`SealMode::Plaintext`].
    pub fn seal(&mut self, plaintext: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(plaintext.len() + OVERHEAD);
        self.seal_into(plaintext, &mut out);
        out
    }

    /// [`Seal::seal`] into `out` (cleared first), which allocates nothing
    /// once `out` holds `plaintext.len() + OVERHEAD` bytes: a sender that
    /// keeps its buffer seals without allocating.
    ///
    /// ```
    /// use vigil_membership::keyring::Keyring;
    /// use vigil_membership::seal::{OVERHEAD, Seal, SealMode};
    ///
    /// let mut a = Seal::new(1, SealMode::Sealed, Some(Keyring::new([7; 32])), 1)?;
    /// let mut buf = Vec::with_capacity(1400 + OVERHEAD);
    /// a.seal_into(b"VG\x02 a ping", &mut buf);
    /// assert_eq!(buf.len(), b"VG\x02 a ping".len() + OVERHEAD);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seal_into(&mut self, plaintext: &[u8], out: &mut Vec<u8>) {
        out.clear();
        let keyring = match (&mut self.keyring, self.mode) {
            (Some(k), SealMode::Staged | SealMode::Sealed) => k,
            _ => {
                self.stats.plaintext_sent += 1;
                out.extend_from_slice(plaintext);
                return;
            }
        };
        if self.envelope == Envelope::Aes256Gcm && self.counter >= V3_COUNTERS {
            // Version 3's nonce holds 32 bits of the counter: a new session
            // before it would repeat.
            self.session = next_session(self.session);
            self.counter = 0;
        }
        self.counter += 1;
        let entry = &mut keyring.keys[keyring.primary];
        out.reserve(plaintext.len() + OVERHEAD);
        out.extend_from_slice(&MAGIC);
        out.push(self.envelope.version());
        out.extend_from_slice(&entry.id.0.to_be_bytes());
        out.extend_from_slice(&self.session.to_be_bytes());
        out.extend_from_slice(&self.counter.to_be_bytes());
        out.extend_from_slice(&u32::try_from(self.now).unwrap_or(u32::MAX).to_be_bytes());
        let aad = associated_data(self.cluster, &out[..HEADER_LEN]);
        out.extend_from_slice(plaintext);
        let body = &mut out[HEADER_LEN..];
        // Both ciphers refuse only messages beyond 64 GiB.
        let mut tag = [0u8; TAG_LEN];
        let sealed = match self.envelope {
            Envelope::Aes256Gcm => {
                let nonce = gcm_nonce(self.session, self.counter);
                let t = entry.aes.seal_in_place_separate_tag(nonce, ring::aead::Aad::from(&aad), body);
                t.map(|t| tag.copy_from_slice(t.as_ref())).is_ok()
            }
            Envelope::XChaCha20Poly1305 => {
                let nonce = xnonce(self.session, self.counter);
                let t = entry.cipher.encrypt_inout_detached(&nonce, &aad, body.into());
                t.map(|t| tag.copy_from_slice(&t)).is_ok()
            }
        };
        if !sealed {
            out.clear();
            return;
        }
        out.extend_from_slice(&tag);
        entry.sealed += 1;
        self.stats.sealed += 1;
    }

    /// The plaintext packet inside `packet`, if it opens: authentic, of
    /// this cluster, not a replay, and no longer than `max` plaintext
    /// bytes. Refusals are counted by reason.
    ///
    /// # Errors
    ///
    /// An [`OpenError`] saying why.
    pub fn open<'a>(&mut self, packet: &'a [u8], max: usize) -> Result<Cow<'a, [u8]>, OpenError> {
        let r = self.try_open(packet, max);
        match &r {
            Ok(Cow::Borrowed(_)) => self.stats.plaintext_accepted += 1,
            Ok(Cow::Owned(_)) => {
                self.stats.opened += 1;
                self.stats.opened_v2 += u64::from(packet[2] == Envelope::XChaCha20Poly1305.version());
            }
            Err(e) => self.stats.rejected[e.index()] += 1,
        }
        r
    }

    fn try_open<'a>(&mut self, packet: &'a [u8], max: usize) -> Result<Cow<'a, [u8]>, OpenError> {
        if packet.starts_with(&wire::MAGIC) {
            if packet.len() > max {
                return Err(OpenError::Oversized);
            }
            return match self.mode {
                SealMode::Sealed => Err(OpenError::Plaintext),
                SealMode::Plaintext | SealMode::Staged => Ok(Cow::Borrowed(packet)),
            };
        }
        if !packet.starts_with(&MAGIC) {
            return Err(OpenError::NotVigil);
        }
        let Some(keyring) = self.keyring.as_mut() else { return Err(OpenError::NoKeyring) };
        if packet.len() < OVERHEAD {
            return Err(OpenError::Truncated);
        }
        if packet.len() - OVERHEAD > max {
            return Err(OpenError::Oversized);
        }
        let Some(envelope) = Envelope::from_version(packet[2]) else {
            return Err(OpenError::Version(packet[2]));
        };
        let u32_at = |i: usize| u32::from_be_bytes([packet[i], packet[i + 1], packet[i + 2], packet[i + 3]]);
        let u64_at = |i: usize| (u64::from(u32_at(i)) << 32) | u64::from(u32_at(i + 4));
        let id = KeyId(u32_at(3));
        let (session, counter, sealed_at) = (u64_at(7), u64_at(15), u64::from(u32_at(23)));
        let entry = keyring.find(id).ok_or(OpenError::UnknownKey(id))?;
        if envelope == Envelope::Aes256Gcm && counter > V3_COUNTERS {
            // Never sealed so: its nonce would repeat a lower counter's.
            return Err(OpenError::Forged);
        }
        if let Some((window, started)) = self.freshness {
            let before_start = sealed_at < started;
            let off = sealed_at.abs_diff(self.now) > window;
            if before_start || off {
                return Err(OpenError::Stale);
            }
        }
        // The window is consulted before the (costlier) decryption and moved
        // only after it: a forger cannot advance it.
        match self.guard.check(session, counter) {
            Verdict::Fresh => {}
            Verdict::Replayed => return Err(OpenError::Replayed),
            Verdict::TooOld => return Err(OpenError::TooOld),
        }
        let aad = associated_data(self.cluster, &packet[..HEADER_LEN]);
        let (body, tag) = packet[HEADER_LEN..].split_at(packet.len() - OVERHEAD);
        let mut plain = body.to_vec();
        let opened = match envelope {
            Envelope::Aes256Gcm => {
                let tag = ring::aead::Tag::try_from(tag).map_err(|_| OpenError::Truncated)?;
                let aad = ring::aead::Aad::from(&aad);
                entry.aes.open_in_place_separate_tag(gcm_nonce(session, counter), aad, tag, &mut plain, 0..).is_ok()
            }
            Envelope::XChaCha20Poly1305 => {
                let tag = Tag::try_from(tag).map_err(|_| OpenError::Truncated)?;
                let nonce = xnonce(session, counter);
                entry.cipher.decrypt_inout_detached(&nonce, &aad, (&mut plain[..]).into(), &tag).is_ok()
            }
        };
        if !opened {
            return Err(OpenError::Forged);
        }
        entry.opened += 1;
        self.guard.accept(session, counter);
        Ok(Cow::Owned(plain))
    }

    /// Heap bytes held (the replay windows, mostly).
    pub fn heap_bytes(&self) -> usize {
        self.guard.heap_bytes()
    }
}

/// The counters a version-3 session seals (its nonce holds 32 bits).
const V3_COUNTERS: u64 = u32::MAX as u64;

/// The session after `session`, when version 3's counters run out: a
/// bijective mix, so as unlikely as a fresh draw to meet another node's.
fn next_session(session: u64) -> u64 {
    let mut z = session.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Version 2's nonce: the session, the counter, eight zero bytes.
fn xnonce(session: u64, counter: u64) -> XNonce {
    let mut n = [0u8; 24];
    n[..8].copy_from_slice(&session.to_be_bytes());
    n[8..16].copy_from_slice(&counter.to_be_bytes());
    XNonce::from(n)
}

/// Version 3's nonce: the session and the counter's low 32 bits, unique
/// per key as the module documentation says.
fn gcm_nonce(session: u64, counter: u64) -> ring::aead::Nonce {
    let mut n = [0u8; 12];
    n[..8].copy_from_slice(&session.to_be_bytes());
    n[8..].copy_from_slice(&(counter as u32).to_be_bytes());
    ring::aead::Nonce::assume_unique_for_key(n)
}

/// The cluster id and the header, on the stack.
fn associated_data(cluster: u64, header: &[u8]) -> [u8; 8 + HEADER_LEN] {
    let mut aad = [0u8; 8 + HEADER_LEN];
    aad[..8].copy_from_slice(&cluster.to_be_bytes());
    aad[8..].copy_from_slice(&header[..HEADER_LEN]);
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &[u8] = b"VG\x02 a heartbeat";

    fn pair(mode: SealMode) -> (Seal, Seal) {
        let a = Seal::new(1, mode, Some(Keyring::new([3; 32])), 11).unwrap();
        let b = Seal::new(1, mode, Some(Keyring::new([3; 32])), 22).unwrap();
        (a, b)
    }

    #[test]
    fn sealed_packets_round_trip_and_hide_their_contents() {
        let (mut a, mut b) = pair(SealMode::Sealed);
        for i in 0..100 {
            let msg = format!("VG\x02 message {i}");
            let p = a.seal(msg.as_bytes());
            assert_eq!(p.len(), msg.len() + OVERHEAD);
            assert!(!p.windows(7).any(|w| w == b"message"), "the plaintext does not show");
            assert_eq!(&*b.open(&p, 1400).unwrap(), msg.as_bytes());
        }
        assert_eq!((a.stats().sealed, b.stats().opened), (100, 100));
        assert_eq!(a.keyring().unwrap().list()[0].sealed, 100);
        assert_eq!(b.keyring().unwrap().list()[0].opened, 100);
    }

    #[test]
    fn both_envelopes_open_whatever_a_node_sends() {
        let (mut a, mut b) = pair(SealMode::Sealed);
        assert_eq!(a.envelope(), Envelope::Aes256Gcm, "version 3 by default");
        let v3 = a.seal(PLAIN);
        assert_eq!(v3[2], 3);
        a.set_envelope(Envelope::XChaCha20Poly1305);
        let v2 = a.seal(PLAIN);
        assert_eq!((v2[2], v2.len()), (2, v3.len()), "the same header and overhead");
        assert_eq!(&*b.open(&v3, 1400).unwrap(), PLAIN);
        assert_eq!(&*b.open(&v2, 1400).unwrap(), PLAIN);
        let mut old = b.clone().with_envelope(Envelope::XChaCha20Poly1305);
        a.set_envelope(Envelope::Aes256Gcm);
        assert_eq!(&*old.open(&a.seal(PLAIN), 1400).unwrap(), PLAIN, "a node sending 2 opens 3");
        // A packet relabelled with the other version does not open: the
        // version is in the associated data, and the ciphers differ.
        let mut relabelled = a.seal(PLAIN);
        relabelled[2] = 2;
        assert_eq!(b.open(&relabelled, 1400).unwrap_err(), OpenError::Forged);
        // The ring's key is not version 3's key: sealing with it raw does
        // not make a packet that opens.
        let raw = ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &[3; 32]).unwrap();
        let raw = ring::aead::LessSafeKey::new(raw);
        let mut forged = a.seal(PLAIN);
        let (session, counter) = (u64::from_be_bytes(forged[7..15].try_into().unwrap()), 1_000);
        forged[15..23].copy_from_slice(&u64::to_be_bytes(counter));
        let aad = associated_data(1, &forged[..HEADER_LEN]);
        forged.truncate(HEADER_LEN);
        forged.extend_from_slice(PLAIN);
        let nonce = gcm_nonce(session, counter);
        let tag = raw.seal_in_place_separate_tag(nonce, ring::aead::Aad::from(&aad), &mut forged[HEADER_LEN..]);
        forged.extend_from_slice(tag.unwrap().as_ref());
        assert_eq!(b.open(&forged, 1400).unwrap_err(), OpenError::Forged);
    }

    #[test]
    fn a_version_3_session_moves_on_before_its_counter_wraps() {
        let (mut a, mut b) = pair(SealMode::Sealed);
        a.counter = V3_COUNTERS - 1;
        let last = a.seal(PLAIN);
        let next = a.seal(PLAIN);
        let field = |p: &[u8], at: usize| u64::from_be_bytes(p[at..at + 8].try_into().unwrap());
        assert_eq!((field(&last, 7), field(&last, 15)), (11, V3_COUNTERS));
        assert_eq!((field(&next, 7), field(&next, 15)), (next_session(11), 1), "a new session, from 1");
        assert_ne!(next_session(11), 11);
        assert!(b.open(&last, 1400).is_ok() && b.open(&next, 1400).is_ok());
        // A counter past 32 bits is never sealed: refused before the cipher.
        let mut past = last.clone();
        past[15..23].copy_from_slice(&(V3_COUNTERS + 2).to_be_bytes());
        assert_eq!(b.open(&past, 1400).unwrap_err(), OpenError::Forged);
        // Version 2 keeps its 64-bit counters.
        a.set_envelope(Envelope::XChaCha20Poly1305);
        a.counter = V3_COUNTERS + 5;
        let v2 = a.seal(PLAIN);
        assert_eq!(field(&v2, 15), V3_COUNTERS + 6);
        assert!(b.open(&v2, 1400).is_ok());
    }

    #[test]
    fn sealing_into_a_kept_buffer_does_not_grow_it() {
        let (mut a, mut b) = pair(SealMode::Sealed);
        let mut buf = Vec::with_capacity(PLAIN.len() + OVERHEAD);
        let ptr = buf.as_ptr();
        for _ in 0..10 {
            a.seal_into(PLAIN, &mut buf);
            assert_eq!((buf.as_ptr(), buf.capacity()), (ptr, PLAIN.len() + OVERHEAD), "no reallocation");
            assert_eq!(&*b.open(&buf, 1400).unwrap(), PLAIN);
        }
    }

    #[test]
    fn every_kind_of_bad_packet_is_refused_and_counted() {
        let (mut a, mut b) = pair(SealMode::Sealed);
        let good = a.seal(PLAIN);
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let mut body = good.clone();
        body[HEADER_LEN] ^= 1;
        let mut counter = good.clone();
        counter[HEADER_LEN - 1] ^= 1;
        let mut other_cluster = Seal::new(2, SealMode::Sealed, Some(Keyring::new([3; 32])), 33).unwrap();
        let foreign = other_cluster.seal(PLAIN);
        let mut wrong_key = Seal::new(1, SealMode::Sealed, Some(Keyring::new([4; 32])), 44).unwrap();
        let unknown = wrong_key.seal(PLAIN);
        let mut version = good.clone();
        version[2] = 9;
        let cases: Vec<(Vec<u8>, OpenError)> = vec![
            (b"garbage".to_vec(), OpenError::NotVigil),
            (Vec::new(), OpenError::NotVigil),
            (good[..OVERHEAD - 1].to_vec(), OpenError::Truncated),
            (flipped, OpenError::Forged),
            (body, OpenError::Forged),
            (counter, OpenError::Forged),
            (foreign, OpenError::Forged),
            (unknown, OpenError::UnknownKey(crate::keyring::key_id(&[4; 32]))),
            (version, OpenError::Version(9)),
            (PLAIN.to_vec(), OpenError::Plaintext),
            ([&good[..], &[0u8; 2000]].concat(), OpenError::Oversized),
        ];
        for (p, want) in &cases {
            assert_eq!(b.open(p, 1400).unwrap_err(), *want, "{p:?}");
        }
        // The genuine packet still opens (no forgery moved the window), once.
        assert!(b.open(&good, 1400).is_ok());
        assert_eq!(b.open(&good, 1400).unwrap_err(), OpenError::Replayed);
        let s = b.stats();
        assert_eq!(s.rejected.iter().sum::<u64>(), cases.len() as u64 + 1);
        assert_eq!(s.rejected[OpenError::Forged.index()], 4);
        assert_eq!(s.opened, 1);
    }

    #[test]
    fn staged_mode_accepts_both_and_sends_sealed() {
        let mut plain = Seal::plaintext(1);
        let (mut staged, _) = pair(SealMode::Staged);
        let mut sealed = Seal::new(1, SealMode::Sealed, Some(Keyring::new([3; 32])), 5).unwrap();
        // Plaintext node → staged node: accepted.
        let p = plain.seal(PLAIN);
        assert_eq!(p, PLAIN);
        assert!(staged.open(&p, 1400).is_ok());
        // Staged node → sealed node: accepted; staged → plaintext: refused
        // (no key), which is why every node takes the key before any goes
        // staged; with the key, a plaintext node opens it.
        let s = staged.seal(PLAIN);
        assert!(sealed.open(&s, 1400).is_ok());
        assert_eq!(plain.open(&s, 1400).unwrap_err(), OpenError::NoKeyring);
        plain.set_keyring(Keyring::new([3; 32]));
        assert!(plain.open(&staged.seal(PLAIN), 1400).is_ok());
        assert_eq!(plain.seal(PLAIN), PLAIN, "and still sends plaintext");
        assert!(Seal::new(1, SealMode::Staged, None, 1).is_err());
    }

    #[test]
    fn a_fresh_seal_refuses_what_was_sealed_before_it_started_and_what_is_off_its_clock() {
        let key = Some(Keyring::new([3; 32]));
        let mut a = Seal::new(1, SealMode::Sealed, key.clone(), 11).unwrap();
        let window = std::time::Duration::from_secs(60);
        // Captured at 990 and 999, before the receiver (re)started at 1000.
        a.tick(990);
        let early = a.seal(PLAIN);
        a.tick(999);
        let just_before = a.seal(PLAIN);
        a.tick(1000);
        let at_start = a.seal(PLAIN);
        let mut b = Seal::new(1, SealMode::Sealed, key.clone(), 22).unwrap().with_freshness(window, 1000);
        assert_eq!(b.open(&early, 1400).unwrap_err(), OpenError::Stale);
        assert_eq!(b.open(&just_before, 1400).unwrap_err(), OpenError::Stale);
        assert!(b.open(&at_start, 1400).is_ok());
        // A sender 61 s ahead, or a packet held back 61 s, is off the clock;
        // 60 s is not.
        b.tick(1100);
        a.tick(1161);
        assert_eq!(b.open(&a.seal(PLAIN), 1400).unwrap_err(), OpenError::Stale);
        a.tick(1160);
        assert!(b.open(&a.seal(PLAIN), 1400).is_ok());
        a.tick(1039);
        assert_eq!(b.open(&a.seal(PLAIN), 1400).unwrap_err(), OpenError::Stale);
        assert_eq!(b.stats().rejected[OpenError::Stale.index()], 4);
        // Without a window nothing is judged by time: the old behaviour.
        let mut c = Seal::new(1, SealMode::Sealed, key, 33).unwrap();
        assert!(c.open(&early, 1400).is_ok());
    }

    #[test]
    fn rotation_keeps_every_packet_opening() {
        let (mut a, mut b) = pair(SealMode::Sealed);
        let old = a.keyring().unwrap().primary();
        // Install everywhere, then use on a (b still seals with the old key).
        let new = a.keyring_mut().unwrap().install([9; 32]).unwrap();
        b.keyring_mut().unwrap().install([9; 32]).unwrap();
        a.keyring_mut().unwrap().use_key(new).unwrap();
        assert!(b.open(&a.seal(PLAIN), 1400).is_ok());
        assert!(a.open(&b.seal(PLAIN), 1400).is_ok());
        b.keyring_mut().unwrap().use_key(new).unwrap();
        a.keyring_mut().unwrap().remove(old).unwrap();
        b.keyring_mut().unwrap().remove(old).unwrap();
        assert!(b.open(&a.seal(PLAIN), 1400).is_ok());
        let list = b.keyring().unwrap().list();
        assert_eq!(list.len(), 1);
        assert!(list[0].primary && list[0].id == new);
    }
}
