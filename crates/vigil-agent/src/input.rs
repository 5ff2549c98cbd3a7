//! Files and pipes read whole: a path, or standard input for `-`, bounded
//! before it is held, and checked to be text, with the line and byte of the
//! first that is not. A byte order mark at the start is not part of the
//! text.
//!
//! ```
//! use vigil_agent::input::{InputError, read_text};
//!
//! let dir = std::env::temp_dir().join(format!("vigil-input-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("a.toml");
//! std::fs::write(&path, "\u{feff}name = \"a\"\n")?;
//! assert_eq!(read_text(&path, "config file", 1024)?, "name = \"a\"\n");
//! std::fs::write(&path, b"ok\n\xff")?;
//! assert!(matches!(read_text(&path, "config file", 1024), Err(InputError::NotText { line: 2, byte: 1, .. })));
//! assert!(matches!(read_text(&path, "config file", 2), Err(InputError::TooLarge { .. })));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::Path;

/// A file that could not be read as text. Nothing was kept of it.
#[derive(Debug)]
#[non_exhaustive]
pub enum InputError {
    /// It could not be opened or read.
    Io {
        /// What it is (`config file`).
        what: String,
        /// How it is named (its path, or `stdin`).
        name: String,
        /// Why.
        source: io::Error,
    },
    /// It is larger than the most read for its kind.
    TooLarge {
        /// What it is.
        what: String,
        /// How it is named.
        name: String,
        /// The most read, in bytes.
        max: u64,
    },
    /// It is not UTF-8 text: the first bad byte is at this line and byte of
    /// the line (both from 1).
    NotText {
        /// How it is named.
        name: String,
        /// The line.
        line: usize,
        /// The byte of the line.
        byte: usize,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Io { what, name, source } => write!(f, "reading {what} {name}: {source}"),
            InputError::TooLarge { what, name, max } => {
                write!(f, "{name}: larger than {}, the most read for a {what}", binary_size(*max))
            }
            InputError::NotText { name, line, byte } => {
                write!(f, "{name}:{line}: not UTF-8 text (byte {byte} of the line)")
            }
        }
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// How a file is named in messages: its path, or `stdin` for `-`.
pub fn shown(path: &Path) -> String {
    if path.as_os_str() == "-" { "stdin".into() } else { path.display().to_string() }
}

/// A limit in bytes, in the largest binary unit that shows it: whole when
/// it is a multiple of the unit, else to a tenth.
///
/// ```
/// use vigil_agent::input::binary_size;
///
/// assert_eq!(binary_size(64 * 1024), "64 KiB");
/// assert_eq!(binary_size(1536 * 1024), "1.5 MiB");
/// assert_eq!(binary_size(1000), "1000 bytes");
/// ```
pub fn binary_size(b: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if b >= size {
            return if b.is_multiple_of(size) {
                format!("{} {unit}", b / size)
            } else {
                format!("{:.1} {unit}", b as f64 / size as f64)
            };
        }
    }
    format!("{b} bytes")
}

/// Reads `path` (or standard input for `-`) whole as UTF-8 text; `what`
/// names it in errors (`"config file"`). A file larger than `max` bytes is
/// refused before it is held.
///
/// # Errors
///
/// An [`InputError`] naming the file: unreadable, too large, or not text.
pub fn read_text(path: &Path, what: &str, max: u64) -> Result<String, InputError> {
    let name = shown(path);
    let io_error = |source| InputError::Io { what: what.to_owned(), name: name.clone(), source };
    let reader: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        Box::new(fs::File::open(path).map_err(io_error)?)
    };
    let mut bytes = Vec::new();
    reader.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(io_error)?;
    if bytes.len() as u64 > max {
        return Err(InputError::TooLarge { what: what.to_owned(), name, max });
    }
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        let start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        InputError::NotText { name, line, byte: at - start + 1 }
    })
}
