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
//! # Examples
//!
//! Two members in one process: `b` joins through `a`, each prints what it
//! sees, and both leave. `examples/three_members.rs` goes on to kill one
//! and watch the others find it dead.
//!
//! ```
//! use vigil_net::{Cluster, Event};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
//! let mut events = a.events();
//! let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
//! while let Some(e) = events.next().await {
//!     println!("{}", e.event); // b#1765432100124 up at 127.0.0.1:41000
//!     if matches!(e.event, Event::Up { .. }) {
//!         break;
//!     }
//! }
//! b.leave().await;
//! a.leave().await;
//! # Ok(())
//! # }
//! ```
//!
//! On a real network, each process runs one member, binds an address the
//! others can reach and gives one or more of them as seeds:
//!
//! ```no_run
//! use vigil_net::Cluster;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let cluster = Cluster::builder("node-a")
//!     .bind("10.0.0.1:7946".parse()?)
//!     .seeds(["10.0.0.2:7946".parse()?])
//!     .start()
//!     .await?;
//! let mut events = cluster.events();
//! while let Some(e) = events.next().await {
//!     println!("{}", e.event);
//! }
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
//! - [`control`]: key operations asked of every member at once.
//! - [`dns`]: the stub resolver behind `dnssrv+` seeds.
//! - [`generation`]: generations that only grow across restarts.
//! - [`known`]: the members known at the last stop, rejoined after a restart.
//! - [`Seed`]: the forms a seed takes (`IP:PORT`, `host:port`, `dns+`, `dnssrv+`).

#![forbid(unsafe_code)]

pub mod clock;
mod cluster;
pub mod compress;
pub mod control;
pub mod dns;
mod driver;
mod error;
pub mod frame;
pub mod generation;
mod intercept;
pub mod known;
pub mod lease;
mod seed;
mod slots;
mod types;

pub use cluster::{Builder, Cluster, DEFAULT_CLUSTER, Events};
pub use error::{KeyError, StartError, Stopped};
pub use intercept::{Faults, Intercept, Way};
pub use seed::{Seed, SeedError};
pub use types::{ClusterEvent, ClusterStats, MemberKeys, NetConfig, NetStats, Recorded, RequestOutcome, Snapshot};
// The types this crate's own API takes and returns, so that an embedder
// needs no other dependency to use it.
pub use vigil_detector::Instant;
pub use vigil_detector::outlier::{HostReport, Outcome};
pub use vigil_membership::downing;
pub use vigil_membership::gray;
pub use vigil_membership::keyring::{Key, KeyId, KeyInfo, Keyring, KeyringError};
pub use vigil_membership::seal::{Envelope, SealError, SealMode, SealStats};
pub use vigil_membership::{
    Arrivals, Config, ConfigError, Event, ForceLeaveError, HealthPolicy, MemberView, NodeId, NodeView, PolicyOutlook,
    PolicyState, Signal, Stats, Status, Tags, TagsError, Verdict, WatchReport,
};
