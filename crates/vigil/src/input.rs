//! Files and pipes the command reads whole: a path, or standard input for
//! `-`, bounded before it is held, and checked to be text, with the line and
//! byte of the first that is not. A byte order mark at the start is not
//! part of the text.

use std::fs;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};

use crate::UsageError;

/// The largest scenario file read, in bytes.
pub(crate) const MAX_SCENARIO_BYTES: u64 = 16 * 1024 * 1024;

/// How a file is named in messages: its path, or `stdin` for `-`.
pub(crate) fn shown(path: &Path) -> String {
    if path.as_os_str() == "-" { "stdin".into() } else { path.display().to_string() }
}

/// Reads `path` (or stdin for `-`) whole as UTF-8 text. `what` names it for
/// errors (`"trace"`); a file larger than `max` bytes is refused with `hint`
/// before it is held.
pub(crate) fn read_text(path: &Path, what: &str, max: u64, hint: &str) -> Result<String> {
    let name = shown(path);
    let reader: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(fs::File::open(path).with_context(|| format!("reading {what} {name}"))?)
    };
    let mut bytes = Vec::new();
    reader.take(max + 1).read_to_end(&mut bytes).with_context(|| format!("reading {what} {name}"))?;
    if bytes.len() as u64 > max {
        return Err(UsageError(format!(
            "{name}: larger than {}, the most read for a {what}{hint}",
            crate::limits::binary_size(max)
        ))
        .into());
    }
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        let start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        UsageError(format!("{name}:{line}: not UTF-8 text (byte {} of the line)", at - start + 1)).into()
    })
}
