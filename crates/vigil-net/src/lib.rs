//! The vigil membership protocol on the network.
//!
//! A tokio runtime around one [`vigil_membership::Node`]: UDP for
//! heartbeats, probes and gossip; TCP for push-pull state (one length-framed
//! message per connection, with connect and I/O timeouts and a cap on
//! inbound connections); every packet sealed by the node's
//! [`Seal`](vigil_membership::seal::Seal) when a keyring is given; one timer,
//! from the node's `poll_timeout`; a send that fails counts as a failed probe
//! of its target.
//!
//! ```no_run
//! use vigil_net::Cluster;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let cluster = Cluster::builder("node-a")
//!     .bind("127.0.0.1:7946".parse()?)
//!     .seeds(["127.0.0.1:7947".parse()?])
//!     .start()
//!     .await?;
//! let mut events = cluster.events();
//! while let Some(e) = events.next().await {
//!     println!("{:?}", e.event);
//! }
//! cluster.leave().await;
//! # Ok(())
//! # }
//! ```
//!
//! - [`Cluster`] and [`Builder`]: start a member and ask it about the
//!   cluster (members, φ of watched members, events, keys, stats). Every
//!   type their signatures name is re-exported here ([`Event`], [`Config`],
//!   [`MemberView`], [`Tags`], [`Keyring`], [`SealMode`], [`Outcome`], ...),
//!   so this crate is the only dependency an embedder needs.
//! - [`clock`]: the mapping between tokio's clock and protocol time.
//! - [`frame`]: how a stream message travels over TCP.
//! - [`generation`]: generations that only grow across restarts.

#![forbid(unsafe_code)]

pub mod clock;
mod cluster;
mod driver;
mod error;
pub mod frame;
pub mod generation;
mod intercept;
mod slots;
mod types;

pub use cluster::{Builder, Cluster, DEFAULT_CLUSTER, Events};
pub use error::{KeyError, StartError, Stopped};
pub use intercept::{Faults, Intercept};
pub use types::{ClusterEvent, ClusterStats, NetConfig, NetStats, Recorded, RequestOutcome, Snapshot};
// The types this crate's own API takes and returns, so that an embedder
// needs no other dependency to use it.
pub use vigil_detector::Instant;
pub use vigil_detector::outlier::{HostReport, Outcome};
pub use vigil_membership::keyring::{Key, KeyId, KeyInfo, Keyring, KeyringError};
pub use vigil_membership::seal::{SealError, SealMode, SealStats};
pub use vigil_membership::{
    Arrivals, Config, ConfigError, Event, HealthPolicy, MemberView, NodeId, NodeView, PolicyOutlook, PolicyState,
    Signal, Stats, Status, Tags, TagsError, Verdict, WatchReport,
};
