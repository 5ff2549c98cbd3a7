//! The vigil lab: which failure detector, with which threshold, on my
//! network?
//!
//! The lab replays recorded heartbeat traces and seeded scenarios through
//! every detector of [`vigil_detector`] and measures Chen, Toueg and
//! Aguilera's quality-of-service metrics exactly, from each detector's
//! trust/suspect timeline (see [`qos`]).
//!
//! - [`event`]: the trace grammar (CSV or JSON lines, one event a line),
//!   shared with `vigil replay`.
//! - [`trace`]: the trace model: one sender's heartbeats, its crash, the end.
//! - [`scenario`]: seeded generators, built-in scenarios, TOML scenarios.
//! - [`dist`]: delay distributions.
//! - [`engine`]: a trace and a detector in, an exact timeline out.
//! - [`qos`]: detection time, mistake rate and duration, query accuracy.
//! - [`spec`]: detector specs such as `akka:threshold=8,min-std-ms=100`.
//! - [`sweep`]: parameter grids and Pareto frontiers; [`recommend`]: the
//!   recommendation rule.
//! - [`chen`] and [`nfds`]: Chen et al.'s NFD-S, its closed-form QoS, the
//!   configuration procedures, and a simulation that checks them.
//! - [`report`]: presentation only (tables, charts, HTML reports); no
//!   analysis module imports it.
//! - [`text`]: text from users and the network, made safe to print.

#![forbid(unsafe_code)]
// A library prints nothing on standard error: what it has to say is in its
// results and errors, and the command prints them.
#![deny(clippy::print_stderr)]

pub mod chen;
pub mod dist;
pub mod engine;
pub mod event;
pub mod fleet;
pub mod fleet_trace;
pub mod interactive;
pub mod millis;
pub mod nfds;
pub mod qos;
pub mod recommend;
pub mod report;
pub mod scenario;
pub mod spec;
pub mod sweep;
pub mod text;
pub mod trace;
