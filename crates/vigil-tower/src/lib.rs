//! φ and outlier detection where requests are routed: a [`tower`] layer
//! and balancer for hyper and tonic clients.
//!
//! Each endpoint's service goes behind a [`HealthLayer`]. The layer
//! classifies every response ([`classify`]: HTTP `5xx`, gRPC `UNAVAILABLE`
//! and `DEADLINE_EXCEEDED`, connect failures and timeouts), measures its
//! latency, and records both into a [`Source`]: a [`LocalHealth`] of this
//! process's own, or the embedded vigil member's view (`ClusterHealth`, feature `cluster`),
//! where φ is judged from the endpoints' own heartbeats. The source's
//! routing policy (say `route=2,ejection`: out when ejected by outlier
//! detection, or when φ reaches 2) gates the endpoint's `poll_ready`:
//! a balancer skips an endpoint out of rotation without dropping it, and
//! finds it ready again when it returns. So a silent crash of an endpoint
//! that gets few requests is caught by φ before the next request to it
//! fails, and a gray failure whose heartbeats are fine by its outcomes.
//!
//! - [`balance`]: power of two choices over a [`tower::discover::Discover`]
//!   of layered endpoints, compared by a load ([`Cost`]) that blends
//!   PeakEWMA with φ, behind a [`Guard`] that applies the rule for too few
//!   endpoints in rotation ([`AllOut`]: Envoy's panic threshold, or fail
//!   fast).
//! - `MemberDiscover` (feature `cluster`, on by default): the endpoints
//!   of a service from vigil membership, by tag (`service=billing`).
//! - `grpc::channel` (feature `tonic`): a balanced channel for tonic's
//!   generated clients, wired to the two above.
//! - `fleet` (feature `lab`): this crate's stack and tower's own under the
//!   fleet lab's closed loop, on virtual time.
//!
//! # Examples
//!
//! A balancer over three endpoints; one answers 503s, is ejected after
//! five, and the others take every request after that:
//!
//! ```
//! use std::convert::Infallible;
//! use tower::{Layer, Service, ServiceExt, discover::ServiceList};
//! use vigil_tower::{AllOut, HealthLayer, LocalHealth, OutlierConfig, balance};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), vigil_tower::BoxError> {
//! let health = LocalHealth::outliers(OutlierConfig::vigil())?;
//! let layer = HealthLayer::new(health.clone());
//! let endpoint = |code: u16| {
//!     tower::service_fn(move |_: ()| async move {
//!         Ok::<_, Infallible>(http::Response::builder().status(code).body(()).unwrap())
//!     })
//! };
//! let endpoints = [("a", 200), ("b", 503), ("c", 200)].map(|(name, code)| layer.endpoint(name).layer(endpoint(code)));
//! let mut balancer = balance(ServiceList::new(endpoints), health.clone(), AllOut::default());
//! let mut failed = 0;
//! for _ in 0..100 {
//!     let res = balancer.ready().await?.call(()).await?;
//!     failed += usize::from(res.status() == 503);
//! }
//! assert!(failed <= 5, "the five 503s that ejected b, and none after");
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod classify;
#[cfg(feature = "cluster")]
mod cluster;
#[cfg(feature = "cluster")]
pub mod discover;
#[cfg(feature = "lab")]
pub mod fleet;
#[cfg(feature = "tonic")]
pub mod grpc;
mod guard;
mod layer;
mod local;
pub mod source;

#[cfg(feature = "cluster")]
pub use cluster::{ClusterHealth, QUEUE};
#[cfg(feature = "cluster")]
pub use discover::{MemberDiscover, Selector, SelectorError};
pub use guard::{Guard, GuardFuture, NoEndpoint, balance, balance_seeded};
pub use layer::{AllOut, Cost, EndpointLayer, HealthLayer, HealthService, ResponseFuture};
pub use local::LocalHealth;
pub use source::{Census, RouteChange, Source, Standing};
pub use vigil_detector::outlier::{Outcome, OutlierConfig};

/// The error type of the layer and the balancer: any error, boxed.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
