//! Secrets on disk: key files and token files, and `vigil keygen`.
//!
//! A key file holds one 32-byte key per line (64 hex digits, or base64),
//! the first the primary; a token file holds the API's bearer token on its
//! first line. Either is refused if anyone but its owner may read it (as
//! ssh refuses a private key), with the command that fixes it.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use vigil_membership::keyring::Keyring;

use crate::UsageError;
use crate::input::read_text;

/// The largest secret file read.
const MAX_SECRET_BYTES: u64 = 64 * 1024;

/// Arguments of `vigil keygen`.
#[derive(Debug, Args)]
pub(crate) struct KeygenArgs {
    /// Print the key as 64 hex digits instead of base64.
    #[arg(long)]
    hex: bool,
}

/// `vigil keygen`: a fresh 32-byte key from the operating system's random
/// source, for `--key-file` and `vigil keys install`.
pub(crate) fn keygen(a: &KeygenArgs, out: &mut dyn Write) -> Result<()> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).context("the operating system's random source")?;
    let text = if a.hex { key.iter().map(|b| format!("{b:02x}")).collect() } else { encode_base64(&key) };
    writeln!(out, "{text}")?;
    Ok(())
}

/// Reads a secret file whole, refusing one that its group or others may
/// read or write. `what` names the setting it came from (`--key-file`).
pub(crate) fn read_secret(path: &Path, what: &str, kind: &str) -> Result<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(path).with_context(|| format!("{what}: reading {kind} {}", path.display()))?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(UsageError(format!(
                "{what}: {} is open to others (mode {mode:04o}); a {kind} must be readable by its owner only: chmod 600 {}",
                path.display(),
                path.display()
            ))
            .into());
        }
    }
    read_text(path, kind, MAX_SECRET_BYTES, "").with_context(|| what.to_owned())
}

/// Reads a key file: one key per line, 64 hex digits or base64; `#`
/// comments and blank lines are skipped.
pub(crate) fn key_file(path: &Path, what: &str) -> Result<Keyring> {
    let text = read_secret(path, what, "key file")?;
    let mut ring: Option<Keyring> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key = parse_key(line).ok_or_else(|| {
            UsageError(format!("{what}: line {}: not a 32-byte key (64 hex digits, or 44 characters of base64)", i + 1))
        })?;
        match &mut ring {
            None => ring = Some(Keyring::new(key)),
            Some(r) => {
                r.install(key).map_err(|e| UsageError(format!("{what}: line {}: {e}", i + 1)))?;
            }
        }
    }
    ring.ok_or_else(|| UsageError(format!("{what}: no key in {}", path.display())).into())
}

/// Reads the bearer token: the file's first line, 16 to 4096 printable
/// characters.
pub(crate) fn token_file(path: &Path, what: &str) -> Result<String> {
    let text = read_secret(path, what, "token file")?;
    let t = text.lines().next().unwrap_or("").trim();
    if t.len() < 16 || t.len() > 4096 || !t.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(UsageError(format!(
            "{what}: the token in {} must be 16 to 4096 printable characters on the first line",
            path.display()
        ))
        .into());
    }
    Ok(t.to_owned())
}

/// A 32-byte key from 64 hex digits or base64.
pub(crate) fn parse_key(text: &str) -> Option<[u8; 32]> {
    let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        (0..32).map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()).collect::<Option<Vec<u8>>>()?
    } else {
        base64(text)?
    };
    bytes.try_into().ok()
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 (with or without padding).
fn base64(text: &str) -> Option<Vec<u8>> {
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

/// Standard base64, padded.
fn encode_base64(bytes: &[u8]) -> String {
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
    fn keys_in_hex_and_base64_are_the_same_key() {
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        let b64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        let want: [u8; 32] = std::array::from_fn(|i| i as u8);
        assert_eq!(parse_key(hex), Some(want));
        assert_eq!(parse_key(b64), Some(want));
        assert_eq!(parse_key(b64.trim_end_matches('=')), Some(want));
        assert_eq!(encode_base64(&want), b64);
        for bad in ["00", "zz", &hex[..62], "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=AA", "not base64!"] {
            assert_eq!(parse_key(bad), None, "{bad}");
        }
        // What keygen prints reads back as a key, and every length encodes.
        for n in 0..8 {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37) as u8).collect();
            assert_eq!(base64(&encode_base64(&bytes)), Some(bytes));
        }
    }
}
