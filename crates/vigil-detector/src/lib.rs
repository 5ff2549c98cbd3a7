//! Accrual failure detectors, a per-peer registry and graded policies.
//!
//! A heartbeat is evidence, not a verdict. A detector turns the arrival
//! history of one peer's heartbeats into a **suspicion level**; each consumer
//! compares that level with a threshold of its own, because a router, a
//! leader election and a re-replicator pay very different prices for a wrong
//! guess.
//!
//! This crate is pure: no I/O, no async, no threads, and no clock. Every
//! operation that depends on time takes an [`Instant`] (nanoseconds since an
//! origin of your choosing), so the same code runs in production, in trace
//! replay and in simulation, deterministically.
//!
//! # Models
//!
//! Every model implements [`Detector`]: record a heartbeat, report the level
//! at `now`, report the **instant the level will reach a threshold** if
//! nothing arrives (exact on the nanosecond grid), and expose statistics.
//! Heartbeats and level queries are O(1) (the empirical model excepted).
//!
//! | model | type | level | threshold 8 (or 1) means |
//! |---|---|---|---|
//! | `normal` | [`Normal`] | `-log10 P(later)`, normal fit, exact tail | μ + 5.61 σ |
//! | `akka` | [`Akka`] | same, Akka's logistic approximation | μ + 5.23 σ |
//! | `exponential` | [`Exponential`] | `Δ / (mean · ln 10)` (Cassandra) | 18.42 × mean |
//! | `empirical` | [`Empirical`] | `-log10 P(later)` from the window's samples | (3: past every sample of 1,000) |
//! | `fixed` | [`Fixed`] | `Δ / timeout` | (1: the timeout) |
//! | `deadline` | [`Deadline`] | `Δ / (interval + pause)` (Akka) | (1: the deadline) |
//! | `chen` | [`Chen`] | `1 + (t - τ) / η`, τ = EA + α | (1: the freshness point) |
//! | `bertier` | [`Bertier`] | as `chen`, α = β·delay + φ·var | (1: the freshness point) |
//! | `2w` | [`TwoWindow`] | as `chen`, EA = max of two windows | (1: the freshness point) |
//!
//! Here μ is the window mean plus the acceptable pause, σ the floored
//! standard deviation, Δ the silence, EA the expected arrival of the next
//! heartbeat and η the heartbeat interval.
//!
//! **Thresholds do not carry over between models.** φ = 8 in the exact normal
//! model is reached at 5.61 σ past the mean; in Akka's logistic approximation
//! at 5.23 σ (the approximation's tail is steeper); in the exponential model at
//! 18.42 mean intervals. chitchat compares `Δ / mean` with its threshold
//! directly, so its 8 is 3.474 here. The crate README has a longer table and
//! advice on when to use which.
//!
//! # Registry and policies
//!
//! A [`Registry`] keeps a detector per peer and interprets the levels through
//! named [`Policy`]s (threshold, dwell time, re-arm level for hysteresis,
//! destructive or not), with a [`Brake`] that doubts mass failures, a
//! [`PauseGuard`] against the observer's own stalls, and a first-heartbeat
//! rule for peers never heard from. It computes when the next decision is
//! due, so a runtime arms one timer:
//!
//! ```
//! use std::time::Duration;
//! use vigil_detector::{
//!     Event, Instant, Model, ModelConfig, Policy, Registry, RegistryConfig,
//! };
//!
//! let policies = vec![
//!     Policy::new("route", 1.0),                                    // cheap: act early
//!     Policy::new("elect", 8.0).dwell(Duration::from_secs(1)),      // costly: wait
//!     Policy::new("evict", 12.0).dwell(Duration::from_secs(10)).destructive(true),
//! ];
//! let model = ModelConfig::default_for(Model::Akka);
//! let mut registry = Registry::with_model(&model, RegistryConfig::new(policies))?;
//!
//! // A runtime's loop, here driven by a script of arrivals (peer, ms): wait
//! // for the next input or for the one timer, whichever comes first.
//! let arrivals = (0..30u64).flat_map(|i| [("a", i * 1_000), ("b", i * 1_000 + 7)])
//!     .filter(|&(peer, t)| !(peer == "b" && t > 12_000)); // b goes silent after 12 s
//! let mut log = Vec::new();
//! for (peer, ms) in arrivals {
//!     let now = Instant::from_millis(ms);
//!     // The timer fired before this input: poll with the current time.
//!     if registry.next_deadline().is_some_and(|deadline| deadline <= now) {
//!         log.extend(registry.poll(now));
//!     }
//!     registry.heartbeat(peer, now).expect("admitted");
//! }
//! let end = Instant::from_secs(30);
//! log.extend(registry.poll(end));
//!
//! // Levels: a is fresh; b has been silent for 18 s.
//! assert!(registry.level(&"a", end).unwrap() < 1.0);
//! assert!(registry.level(&"b", end).unwrap() > 12.0);
//! // Events: each consumer acted at its own point, in time order.
//! let fired: Vec<_> = log.iter().filter_map(|e| match e {
//!     Event::Suspected { peer, policy, at, .. } => Some((*peer, registry.policy(*policy).name.as_str(), *at)),
//!     _ => None,
//! }).collect();
//! let names: Vec<_> = fired.iter().map(|&(peer, name, _)| (peer, name)).collect();
//! assert_eq!(names, [("b", "route"), ("b", "elect"), ("b", "evict")]);
//! assert!(fired.windows(2).all(|w| w[0].2 < w[1].2));
//! # Ok::<(), vigil_detector::ConfigError>(())
//! ```
//!
//! # Passive signal and composition
//!
//! [`outlier::Outliers`] judges hosts by the outcomes of real requests, as
//! Envoy does; [`health::Health`] composes it with φ under graded
//! [`health::HealthPolicy`]s, with a brake on destructive verdicts. The
//! lab's fleet simulation measures this judge, and the membership protocol
//! runs it.
//!
//! # Text forms
//!
//! Every tool reads the same grammars, defined here with their typed
//! errors: a detector and its threshold ([`spec::DetectorSpec`],
//! `normal:window=1000,min-std-ms=100,threshold=8`), a graded policy
//! ([`health::HealthPolicy`], `route=2,dwell=500ms,ejection`) and a request's
//! outcome ([`outlier::Outcome`], `503`, `timeout`). Each prints as it
//! parses.
//!
//! ```
//! use vigil_detector::health::HealthPolicy;
//! use vigil_detector::outlier::Outcome;
//! use vigil_detector::spec::DetectorSpec;
//!
//! let spec: DetectorSpec = "exponential:threshold=4".parse()?;
//! let policy: HealthPolicy = "remove=8,dwell=30s,destructive".parse()?;
//! let outcome: Outcome = "connect-failed".parse()?;
//! assert_eq!(spec.to_string(), "exponential:threshold=4");
//! assert_eq!(policy.to_string(), "remove=8,dwell=30s,destructive");
//! assert_eq!(outcome, Outcome::ConnectFailed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Robustness
//!
//! Statistics live in a bounded ring of whole-microsecond samples with exact
//! integer running sums, so they never drift, and the variance is exactly
//! non-negative. A heartbeat earlier than the last one is ignored and counted.
//! Levels are finite, non-negative and never NaN for every input. Sample
//! [`Admission`] rules (interval cap, duplicate filter, skip or reset after a
//! suspicion) and [`Bootstrap`] policies are configurable. Configurations are
//! validated into [`ConfigError`]s.
//!
//! # Memory
//!
//! A window of `n` samples costs `4n` bytes (the empirical model `8n`); see
//! the crate README for measured per-peer figures in a registry.

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

mod any;
mod detector;
mod error;
pub mod fnv;
pub mod health;
mod math;
pub mod millis;
mod models;
pub mod outlier;
mod registry;
pub mod spec;
pub mod text;
mod time;
mod window;

pub use any::{AnyDetector, Model, ModelConfig, UnknownModel};
pub use detector::Detector;
pub use error::ConfigError;
pub use math::erfc;
pub use models::chen::{Bertier, BertierConfig, Chen, ChenConfig, TwoWindow, TwoWindowConfig};
pub use models::empirical::{Empirical, EmpiricalConfig, MAX_EMPIRICAL_WINDOW};
pub use models::exponential::{Exponential, ExponentialConfig, Prior};
pub use models::normal::{Akka, AkkaConfig, Normal, NormalConfig};
pub use models::timeout::{Deadline, DeadlineConfig, Fixed, FixedConfig};
pub use registry::{
    Brake, Cause, Event, HeartbeatError, PauseGuard, PeerReport, Policy, PolicyId, PolicyReport, PolicyState, Registry,
    RegistryConfig, RegistryCounters, UnknownPeers,
};
pub use time::Instant;
pub use window::{Admission, Bootstrap, HeartbeatOutcome, MAX_SAMPLE, MAX_WINDOW, MaxInterval, SkipReason, Stats};

/// The README's examples are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
