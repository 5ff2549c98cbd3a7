//! Files and pipes the command reads whole (see [`vigil_agent::input`]):
//! bounded before they are held, and checked to be text. A file that is too
//! large or not text is the user's input, and named as such.

use std::path::Path;

use anyhow::Result;
use vigil_agent::input::InputError;

use crate::error::UsageError;

pub(crate) use vigil_agent::input::shown;

/// The largest scenario file read, in bytes.
pub(crate) const MAX_SCENARIO_BYTES: u64 = 16 * 1024 * 1024;

/// Reads `path` (or stdin for `-`) whole as UTF-8 text. `what` names it for
/// errors (`"trace"`); a file larger than `max` bytes is refused with `hint`
/// before it is held.
pub(crate) fn read_text(path: &Path, what: &str, max: u64, hint: &str) -> Result<String> {
    vigil_agent::input::read_text(path, what, max).map_err(|e| match e {
        InputError::Io { .. } => anyhow::Error::from(e),
        InputError::TooLarge { .. } => UsageError(format!("{e}{hint}")).into(),
        other => UsageError(other.to_string()).into(),
    })
}
