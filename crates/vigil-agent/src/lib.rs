//! The vigil agent as a library: what `vigil agent` and `vigil cluster` run,
//! for a service that wants the same behind its own `main`.
//!
//! - [`settings`]: flags and a TOML file become one validated
//!   [`AgentConfig`](settings::AgentConfig); errors name the flag or the
//!   file's key. [`defaults`] holds every default and limit.
//! - [`record`]: the typed event contract, one JSON object per event,
//!   converted from the runtime's events by one exhaustive match; standard
//!   output, `/v1/events`, the history, `vigil cluster` and the `vigil
//!   events` client all use it.
//! - [`pipeline`]: what happens to each event once, for the agent and for
//!   every member of `vigil cluster`: the application's watch list, the log,
//!   the history and the metrics.
//! - [`api`]: the HTTP API (typed bodies, errors as one enum, the OpenAPI
//!   document generated from the types), OpenMetrics and the dashboard.
//! - [`log_stream`]: the agent's log for whoever follows it
//!   (`/v1/monitor`), at a level of their own.
//! - [`build`]: this build's version, revision and date; [`process`]: the
//!   agent's own CPU, memory and descriptors, from `/proc`.
//! - [`service_manager`]: `READY=1`, `STOPPING=1` and the watchdog for
//!   systemd's `Type=notify`.
//! - [`agent`]: one member as a process, until SIGTERM; [`fleet`]: the
//!   members of `vigil cluster`, and the faults injected into them.
//!
//! ```no_run
//! use vigil_agent::settings::Flags;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let flags = Flags { name: Some("a".into()), bind: Some("127.0.0.1:7946".into()), ..Flags::default() };
//! let config = flags.resolve()?;
//! vigil_agent::agent::run(config).await?;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod agent;
pub mod api;
pub mod build;
pub mod defaults;
pub mod event_lines;
pub mod fleet;
pub mod history;
pub mod input;
pub mod log_stream;
pub mod metrics;
pub mod pipeline;
pub mod process;
pub mod record;
pub mod recorder;
pub mod secrets;
pub mod service_manager;
pub mod settings;
