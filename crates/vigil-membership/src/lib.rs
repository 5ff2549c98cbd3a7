//! A sans-IO membership protocol: φ-monitored SWIM.
//!
//! Each member is watched by a few observers chosen from a ring over the
//! membership; they feed a detector (any `vigil_detector` model; Akka's φ by
//! default) with the member's heartbeats. When its level crosses the suspect
//! level, the observer probes the member directly and through others before
//! accusing it; any answer means the path, not the member, is the problem.
//! Suspicions are gossiped and sent to the suspect, who refutes with a higher
//! incarnation; the suspicion timeout starts long and shrinks with
//! independent confirmations (Lifeguard). A classic SWIM mode
//! ([`Mode::Classic`]) runs memberlist's round-robin probing with its LAN
//! constants, for comparison.
//!
//! The crate does no I/O and reads no clock: see [`Node`] for the driving
//! loop. [`wire`] is the packet format.
//!
//! ```
//! use std::net::SocketAddr;
//! use vigil_detector::Instant;
//! use vigil_membership::{Config, Node, NodeId, Status};
//!
//! let a: SocketAddr = "10.0.0.1:7946".parse().unwrap();
//! let b: SocketAddr = "10.0.0.2:7946".parse().unwrap();
//! let t0 = Instant::from_millis(0);
//! let mut na = Node::new(NodeId::new("a", 1), a, Config::lan(7), 1, t0)?;
//! let mut nb = Node::new(NodeId::new("b", 1), b, Config::lan(7), 2, t0)?;
//! nb.join(t0, &[a]);
//! // Deliver everything instantly until both are quiet.
//! let mut now = t0;
//! for _ in 0..20 {
//!     while let Some(t) = nb.poll_transmit() {
//!         if t.stream { na.handle_stream(now, b, &t.bytes).ok(); } else { na.handle_datagram(now, b, &t.bytes).ok(); }
//!     }
//!     while let Some(t) = na.poll_transmit() {
//!         if t.stream { nb.handle_stream(now, a, &t.bytes).ok(); } else { nb.handle_datagram(now, a, &t.bytes).ok(); }
//!     }
//!     now = na.poll_timeout().unwrap().min(nb.poll_timeout().unwrap());
//!     na.handle_timeout(now);
//!     nb.handle_timeout(now);
//! }
//! assert_eq!(na.member("b").unwrap().status, Status::Alive);
//! assert_eq!(nb.member("a").unwrap().status, Status::Alive);
//! # Ok::<(), vigil_membership::ConfigError>(())
//! ```
//!
//! Inside, each part of the state has one owner: the member table with its
//! derived indexes, the suspicions, the broadcast queue, probes and relays,
//! monitoring, local health and the timer table; [`Node`] takes the inputs,
//! hands out the outputs and applies the protocol's rules across them.

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

mod arrivals;
mod broadcast;
mod checks;
pub mod config;
mod digest;
pub mod downing;
mod event;
pub mod gray;
mod health;
mod introductions;
pub mod keyring;
mod members;
pub mod message;
mod monitor;
mod node;
mod node_view;
mod outcomes;
mod probe;
mod reachability;
mod rejected;
pub mod replay;
mod resolver;
pub mod seal;
pub mod stability;
mod stats;
mod subscription;
mod suspicion;
pub mod tags;
mod timer;
mod transmit;
mod view;
mod watch_report;
pub mod wire;

pub use arrivals::Arrivals;
pub use config::{Config, ConfigError, HealthPolicy, Mode};
pub use event::{Event, Signal};
pub use message::{MAX_MEMBERS, Mark, Message, MessageKind, NodeId, Packet, RowEntry, Status, Update};
pub use node::{ForceLeaveError, Node};
pub use node_view::NodeView;
pub use rejected::Rejected;
pub use stats::{KindCounts, Stats};
pub use tags::{Tags, TagsError};
pub use transmit::Transmit;
pub use view::MemberView;
pub use watch_report::{PolicyOutlook, PolicyState, Verdict, WatchReport};
