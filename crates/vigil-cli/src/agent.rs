//! `vigil agent`: one member of a cluster as a process (see
//! [`vigil_agent::agent`]). The flags are `vigil_agent::settings::Flags`;
//! this module checks them, sets up the log and the runtime, and runs.

use anyhow::{Context, Result};
use vigil_agent::settings::{Flags, LogFormat};

use crate::error::UsageError;

/// Runs `vigil agent` until SIGTERM or SIGINT (or until standard output is
/// closed for good). A bad setting, or one the member refuses as it starts,
/// is the user's input (exit 2, naming it).
pub(crate) fn run(flags: &Flags) -> Result<()> {
    let config = flags.resolve().map_err(|e| UsageError(e.to_string()))?;
    // Logs go to stderr, as text or JSON lines; stdout is for events.
    let log = tracing_subscriber::fmt().with_max_level(config.log_level.level()).with_writer(std::io::stderr);
    let _ = match config.log_format {
        LogFormat::Text => log.try_init(),
        LogFormat::Json => log.json().flatten_event(true).try_init(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(vigil_agent::agent::run(config)).map_err(|e| match e {
        vigil_agent::agent::AgentError::Io { .. } => anyhow::Error::from(e),
        other => UsageError(other.to_string()).into(),
    })
}
