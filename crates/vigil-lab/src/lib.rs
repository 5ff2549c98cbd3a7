//! The vigil lab: which failure detector, with which threshold, on my
//! network?
//!
//! The lab replays recorded heartbeat traces and seeded scenarios through
//! every detector of [`vigil_detector`] and measures Chen, Toueg and
//! Aguilera's quality-of-service metrics exactly, from each detector's
//! trust/suspect timeline (see [`qos`]).
//!
//! - [`trace`]: the trace model and its CSV and JSON-lines formats.
//! - [`engine`]: a trace and a detector in, an exact timeline out.
//! - [`qos`]: detection time, mistake rate and duration, query accuracy.
//! - [`spec`]: detector specs such as `akka:threshold=8,min-std-ms=100`.

#![forbid(unsafe_code)]

pub mod engine;
pub mod millis;
pub mod qos;
pub mod spec;
pub mod trace;
