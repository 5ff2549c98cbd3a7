//! `vigil agent`: one member of a cluster as a process (see
//! [`vigil_agent::agent`]). The flags are `vigil_agent::settings::Flags`;
//! this module checks them, sets up the log and the runtime, and runs.

use anyhow::{Context, Result};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use vigil_agent::settings::{Flags, LogFormat};

use crate::error::UsageError;

/// Runs `vigil agent` until SIGTERM or SIGINT (or until standard output is
/// closed for good). A bad setting, or one the member refuses as it starts,
/// is the user's input (exit 2, naming it).
pub(crate) fn run(flags: &Flags) -> Result<()> {
    let config = flags.resolve().map_err(|e| UsageError(e.to_string()))?;
    // Logs go to stderr, as text or JSON lines (stdout is for events), and
    // to whoever follows them through the API at their own level.
    let level = tracing_subscriber::filter::LevelFilter::from_level(config.log_level.level());
    let output = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let output = match config.log_format {
        LogFormat::Text => output.with_filter(level).boxed(),
        LogFormat::Json => output.json().flatten_event(true).with_filter(level).boxed(),
    };
    let _ = tracing_subscriber::registry().with(output).with(vigil_agent::log_stream::layer()).try_init();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(vigil_agent::agent::run(config)).map_err(|e| match e {
        vigil_agent::agent::AgentError::Io { .. } => anyhow::Error::from(e),
        other => UsageError(other.to_string()).into(),
    })
}
