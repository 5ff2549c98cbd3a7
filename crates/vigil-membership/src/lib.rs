//! A sans-IO membership protocol: φ-monitored SWIM.
//!
//! Each member is watched by a few observers chosen from a ring over the
//! membership; they feed a φ detector ([`vigil_detector::Akka`]) with the
//! member's heartbeats. When φ crosses the suspect level, the observer probes
//! the member directly and through others before accusing it; any answer
//! means the path, not the member, is the problem. Suspicions are gossiped
//! and sent to the suspect, who refutes with a higher incarnation; the
//! suspicion timeout starts long and shrinks with independent confirmations
//! (Lifeguard). A classic SWIM mode ([`Mode::Classic`]) runs memberlist's
//! round-robin probing with its LAN constants, for comparison.
//!
//! The crate does no I/O and reads no clock: see [`Node`] for the driving
//! loop. [`wire`] is the packet format.
//!
//! ```
//! use std::net::SocketAddr;
//! use vigil_detector::Instant;
//! use vigil_membership::{Config, Node, NodeId};
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
//!     while let Some(t) = nb.poll_transmit() { na.handle_datagram(now, b, &t.bytes).ok(); }
//!     while let Some(t) = na.poll_transmit() { nb.handle_datagram(now, a, &t.bytes).ok(); }
//!     now = na.poll_timeout().unwrap().min(nb.poll_timeout().unwrap());
//!     na.handle_timeout(now);
//!     nb.handle_timeout(now);
//! }
//! assert!(na.status_of("b").is_some());
//! assert!(nb.status_of("a").is_some());
//! # Ok::<(), vigil_membership::ConfigError>(())
//! ```

#![forbid(unsafe_code)]

pub mod config;
pub mod message;
pub mod node;
pub mod wire;

pub use config::{Config, ConfigError, Mode};
pub use message::{Message, NodeId, Packet, Status, Update};
pub use node::{Event, Node, Rejected, Stats, Transmit};
