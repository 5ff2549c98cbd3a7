//! What several test binaries share. Each binary uses part of it.
#![allow(dead_code, reason = "each test binary uses a different part of the support code")]

pub(crate) mod local;
pub(crate) mod metrics;
pub(crate) mod netns;
pub(crate) mod wait;
pub(crate) mod wire;
