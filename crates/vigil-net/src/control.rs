//! Key operations asked of every member at once (the way Serf rotates keys
//! with internal queries): a request and its answer, each the body of one
//! stream frame, sealed like every frame.
//!
//! A member takes a request only from a frame whose header and body were
//! both sealed by a key it holds (never in plaintext, never on the
//! strength of a sender's address), and answers on the same connection.
//! A member that does not know these messages (an older version) refuses
//! the body as a malformed protocol message and closes the connection: the
//! asker reports it as not answering.
//!
//! | field | bytes | |
//! |---|---|---|
//! | magic | 2 | `"VC"` ([`MAGIC`]; a protocol message starts `"VG"`) |
//! | version | 1 | [`VERSION`] |
//! | kind | 1 | 1 request, 2 answer |
//! | request id | 8 | u64, big-endian: the answer repeats it |
//! | request | 1 + | op: 1 list, 2 install + 32-byte key, 3 use + key id (u32), 4 remove + key id |
//! | answer | 1 + | 0 done + key count (u8) + that many (key id u32, primary u8); or 1 refused + length (u8) + that much UTF-8 |
//!
//! ```
//! use vigil_net::control::{Control, KeyOp};
//!
//! let ask = Control::Request { id: 7, op: KeyOp::Install([9; 32]) };
//! let bytes = ask.encode();
//! assert!(bytes.starts_with(b"VC"));
//! assert_eq!(Control::decode(&bytes), Some(ask));
//! assert_eq!(Control::decode(&bytes[..bytes.len() - 1]), None, "cut short");
//! ```

use vigil_membership::keyring::KeyId;

/// The first bytes of a control message.
pub const MAGIC: [u8; 2] = *b"VC";

/// The control messages' version.
pub const VERSION: u8 = 1;

/// Keys listed in an answer, at most (a keyring holds fewer).
pub const MAX_KEYS: usize = 64;

/// The longest refusal text carried.
pub const MAX_REASON: usize = 200;

/// A key operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyOp {
    /// The keys.
    List,
    /// Install this key (it opens packets from now on).
    Install([u8; 32]),
    /// Seal with this key from now on.
    Use(KeyId),
    /// Remove this key (never the primary).
    Remove(KeyId),
}

/// What a member answers: its keys after the operation (id, primary), or
/// why it refused.
pub type KeyAnswer = Result<Vec<(KeyId, bool)>, String>;

/// A control message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// An operation asked of a member.
    Request {
        /// Matches the answer to the request.
        id: u64,
        /// What to do.
        op: KeyOp,
    },
    /// A member's answer.
    Answer {
        /// The request's id.
        id: u64,
        /// Its keys after the operation, or why it refused.
        result: KeyAnswer,
    },
}

impl Control {
    /// Whether `plain` (an opened frame body) is a control message rather
    /// than a protocol message.
    pub fn is_control(plain: &[u8]) -> bool {
        plain.starts_with(&MAGIC)
    }

    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        match self {
            Control::Request { id, op } => {
                out.push(1);
                out.extend_from_slice(&id.to_be_bytes());
                match op {
                    KeyOp::List => out.push(1),
                    KeyOp::Install(key) => {
                        out.push(2);
                        out.extend_from_slice(key);
                    }
                    KeyOp::Use(k) => {
                        out.push(3);
                        out.extend_from_slice(&k.0.to_be_bytes());
                    }
                    KeyOp::Remove(k) => {
                        out.push(4);
                        out.extend_from_slice(&k.0.to_be_bytes());
                    }
                }
            }
            Control::Answer { id, result } => {
                out.push(2);
                out.extend_from_slice(&id.to_be_bytes());
                match result {
                    Ok(keys) => {
                        out.push(0);
                        let keys = &keys[..keys.len().min(MAX_KEYS)];
                        out.push(u8::try_from(keys.len()).unwrap_or(0));
                        for (k, primary) in keys {
                            out.extend_from_slice(&k.0.to_be_bytes());
                            out.push(u8::from(*primary));
                        }
                    }
                    Err(why) => {
                        out.push(1);
                        let mut end = why.len().min(MAX_REASON);
                        while !why.is_char_boundary(end) {
                            end -= 1;
                        }
                        out.push(u8::try_from(end).unwrap_or(0));
                        out.extend_from_slice(&why.as_bytes()[..end]);
                    }
                }
            }
        }
        out
    }

    /// A message from its bytes; `None` unless they are exactly one.
    pub fn decode(bytes: &[u8]) -> Option<Control> {
        let rest = bytes.strip_prefix(&MAGIC)?;
        let (&version, rest) = rest.split_first()?;
        if version != VERSION {
            return None;
        }
        let (&kind, rest) = rest.split_first()?;
        let (id, rest) = rest.split_first_chunk::<8>()?;
        let id = u64::from_be_bytes(*id);
        let (&tag, rest) = rest.split_first()?;
        let key_id = |rest: &[u8]| -> Option<KeyId> {
            let b: [u8; 4] = rest.try_into().ok()?;
            Some(KeyId(u32::from_be_bytes(b)))
        };
        let message = match (kind, tag) {
            (1, 1) if rest.is_empty() => Control::Request { id, op: KeyOp::List },
            (1, 2) => Control::Request { id, op: KeyOp::Install(rest.try_into().ok()?) },
            (1, 3) => Control::Request { id, op: KeyOp::Use(key_id(rest)?) },
            (1, 4) => Control::Request { id, op: KeyOp::Remove(key_id(rest)?) },
            (2, 0) => {
                let (&n, mut rest) = rest.split_first()?;
                if usize::from(n) > MAX_KEYS || rest.len() != usize::from(n) * 5 {
                    return None;
                }
                let mut keys = Vec::with_capacity(usize::from(n));
                while let Some((entry, more)) = rest.split_first_chunk::<5>() {
                    let primary = match entry[4] {
                        0 => false,
                        1 => true,
                        _ => return None,
                    };
                    keys.push((KeyId(u32::from_be_bytes([entry[0], entry[1], entry[2], entry[3]])), primary));
                    rest = more;
                }
                Control::Answer { id, result: Ok(keys) }
            }
            (2, 1) => {
                let (&n, rest) = rest.split_first()?;
                if usize::from(n) > MAX_REASON || rest.len() != usize::from(n) {
                    return None;
                }
                Control::Answer { id, result: Err(std::str::from_utf8(rest).ok()?.to_owned()) }
            }
            _ => return None,
        };
        Some(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_reads_back_and_nothing_else_does() {
        let all = [
            Control::Request { id: 1, op: KeyOp::List },
            Control::Request { id: u64::MAX, op: KeyOp::Install([0xab; 32]) },
            Control::Request { id: 3, op: KeyOp::Use(KeyId(0xdead_beef)) },
            Control::Request { id: 4, op: KeyOp::Remove(KeyId(1)) },
            Control::Answer { id: 5, result: Ok(vec![(KeyId(1), true), (KeyId(2), false)]) },
            Control::Answer { id: 6, result: Ok(vec![]) },
            Control::Answer { id: 7, result: Err("key 00000001 seals: use another first".into()) },
        ];
        for m in &all {
            let bytes = m.encode();
            assert_eq!(Control::decode(&bytes).as_ref(), Some(m));
            assert!(Control::is_control(&bytes));
            // Every cut, and one byte more, is refused.
            for cut in 0..bytes.len() {
                assert_eq!(Control::decode(&bytes[..cut]), None, "{m:?} cut at {cut}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert_eq!(Control::decode(&longer), None, "{m:?} with a byte more");
        }
        // A protocol message is not one.
        assert!(!Control::is_control(b"VG\x02\x01"));
    }

    #[test]
    fn odd_answers_are_refused_and_long_reasons_cut_on_a_character() {
        let ok = Control::Answer { id: 1, result: Ok(vec![(KeyId(1), true)]) }.encode();
        let mut bad_flag = ok.clone();
        *bad_flag.last_mut().unwrap() = 2;
        assert_eq!(Control::decode(&bad_flag), None, "a primary flag of 2");
        let mut too_many = ok[..13].to_vec();
        too_many.push(u8::try_from(MAX_KEYS + 1).unwrap());
        too_many.extend(std::iter::repeat_n(0, (MAX_KEYS + 1) * 5));
        assert_eq!(Control::decode(&too_many), None);
        let mut not_utf8 = Control::Answer { id: 1, result: Err("ab".into()) }.encode();
        *not_utf8.last_mut().unwrap() = 0xff;
        assert_eq!(Control::decode(&not_utf8), None);
        let long = "é".repeat(150);
        let m = Control::Answer { id: 1, result: Err(long) }.encode();
        match Control::decode(&m) {
            Some(Control::Answer { result: Err(why), .. }) => assert_eq!(why, "é".repeat(100)),
            other => panic!("{other:?}"),
        }
        let mut other_version = Control::Request { id: 1, op: KeyOp::List }.encode();
        other_version[2] = 2;
        assert_eq!(Control::decode(&other_version), None);
    }
}
