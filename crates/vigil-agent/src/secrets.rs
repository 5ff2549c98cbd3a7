//! Secrets on disk: key files and token files.
//!
//! A key file holds one 32-byte key per line (64 hex digits, or base64),
//! the first the primary; `#` comments and blank lines are skipped. A token
//! file holds the API's bearer token on its first line. Either is refused
//! if anyone but its owner may read or write it (as ssh refuses a private
//! key), with the command that fixes it.
//!
//! ```
//! use vigil_agent::secrets::{SecretError, key_file};
//!
//! let dir = std::env::temp_dir().join(format!("vigil-secrets-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("keys");
//! std::fs::write(&path, "# the cluster's key\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n")?;
//! # #[cfg(unix)] {
//! use std::os::unix::fs::PermissionsExt;
//! std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
//! assert!(matches!(key_file(&path), Err(SecretError::OpenToOthers { mode: 0o644, .. })));
//! std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
//! # }
//! assert_eq!(key_file(&path)?.list().len(), 1);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use vigil_membership::keyring::{BadKey, Key, Keyring, KeyringError};

use crate::defaults::{MAX_SECRET_BYTES, TOKEN_LEN};
use crate::input::{InputError, read_text};

/// A secret file that cannot be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum SecretError {
    /// It could not be read.
    Input(InputError),
    /// Its group or others may read or write it.
    OpenToOthers {
        /// The file.
        path: PathBuf,
        /// What it is (`key file`, `token file`).
        kind: &'static str,
        /// Its permission bits.
        mode: u32,
    },
    /// A line of a key file is not a key.
    NotAKey {
        /// The line, from 1.
        line: usize,
        /// Why.
        why: BadKey,
    },
    /// The keyring refused a key (two keys of one id, too many keys).
    Keyring {
        /// The line, from 1.
        line: usize,
        /// Why.
        why: KeyringError,
    },
    /// A key file without a key.
    NoKey(PathBuf),
    /// A token that is not 16 to 4096 printable characters.
    BadToken(PathBuf),
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretError::Input(e) => e.fmt(f),
            SecretError::OpenToOthers { path, kind, mode } => write!(
                f,
                "{} is open to others (mode {mode:04o}); a {kind} must be readable by its owner only: chmod 600 {}",
                path.display(),
                path.display()
            ),
            SecretError::NotAKey { line, why } => write!(f, "line {line}: {why}"),
            SecretError::Keyring { line, why } => write!(f, "line {line}: {why}"),
            SecretError::NoKey(path) => write!(f, "no key in {}", path.display()),
            SecretError::BadToken(path) => write!(
                f,
                "the token in {} must be {} to {} printable characters on the first line",
                path.display(),
                TOKEN_LEN.start(),
                TOKEN_LEN.end()
            ),
        }
    }
}

impl std::error::Error for SecretError {}

/// Reads a secret file whole, refusing one that its group or others may
/// read or write. `kind` names it (`key file`).
///
/// # Errors
///
/// [`SecretError::OpenToOthers`], or [`SecretError::Input`] when it cannot
/// be read.
pub fn read_secret(path: &Path, kind: &'static str) -> Result<String, SecretError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(path).map_err(|source| {
            SecretError::Input(InputError::Io { what: kind.to_owned(), name: path.display().to_string(), source })
        })?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(SecretError::OpenToOthers { path: path.to_owned(), kind, mode });
        }
    }
    read_text(path, kind, MAX_SECRET_BYTES).map_err(SecretError::Input)
}

/// The first key line of a secret's text: not blank, not a `#` comment.
pub fn first_key_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Reads a key file into a keyring, its first key the primary.
///
/// # Errors
///
/// A [`SecretError`]: unreadable or open to others, a line that is not a
/// key, a key the keyring refuses, or no key at all.
pub fn key_file(path: &Path) -> Result<Keyring, SecretError> {
    let text = read_secret(path, "key file")?;
    let mut ring: Option<Keyring> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key: Key = line.parse().map_err(|why| SecretError::NotAKey { line: i + 1, why })?;
        match &mut ring {
            None => ring = Some(Keyring::new(key.0)),
            Some(r) => {
                r.install(key.0).map_err(|why| SecretError::Keyring { line: i + 1, why })?;
            }
        }
    }
    ring.ok_or_else(|| SecretError::NoKey(path.to_owned()))
}

/// Reads the bearer token: the file's first line, 16 to 4096 printable
/// characters.
///
/// # Errors
///
/// A [`SecretError`]: unreadable or open to others, or not a token.
pub fn token_file(path: &Path) -> Result<String, SecretError> {
    let text = read_secret(path, "token file")?;
    let t = text.lines().next().unwrap_or("").trim();
    if !TOKEN_LEN.contains(&t.len()) || !t.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(SecretError::BadToken(path.to_owned()));
    }
    Ok(t.to_owned())
}
