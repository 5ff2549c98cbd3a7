//! What stands between a member and its sockets, for tests and
//! demonstrations: a member cut off from some peers, or stopped for a while
//! as if its process were.
//!
//! The runtime knows nothing of faults. It asks an [`Intercept`], if one was
//! given ([`Builder::intercept`](crate::Builder::intercept)), two questions:
//! whether a packet to or from a peer passes, and whether the member must
//! stand still. [`Faults`] is the ready answer `vigil cluster` and the tests
//! use; a test harness may write its own (a lossy link, a one-way cut).

use std::collections::HashSet;
use std::fmt::Debug;
use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Asked by the runtime for every packet and before every input. Without
/// one, every packet passes and the member never stands still.
pub trait Intercept: Send + Sync + Debug + 'static {
    /// Whether packets to and from `peer` pass: checked for every datagram
    /// both ways, every outbound stream connection (one that does not pass
    /// fails as an unreachable member's would) and every inbound frame once
    /// its sender is known. A packet that does not pass is dropped and
    /// counted in [`NetStats::intercepted`](crate::NetStats::intercepted).
    fn passes(&self, peer: SocketAddr) -> bool;

    /// Until when the member must stand still, if it must: it handles
    /// nothing until then (packets wait in the socket's buffer, and its
    /// timers run late), as if its process were stopped.
    fn stopped_until(&self) -> Option<Instant>;
}

/// Faults to inject into one member: cut it off from some peers, or stop it
/// for a while. Share it (`Arc<Faults>`) between the member's builder and
/// whoever injects.
///
/// ```no_run
/// use std::sync::Arc;
/// use std::time::Duration;
/// use vigil_net::{Cluster, Faults};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let faults = Arc::new(Faults::default());
/// let member = Cluster::builder("a").bind("127.0.0.1:0".parse()?).intercept(faults.clone()).start().await?;
/// faults.block(["127.0.0.1:7947".parse()?]); // nothing to or from there
/// faults.pause(Duration::from_secs(5)); // as if the process were stopped
/// faults.block([]); // healed
/// # drop(member);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
pub struct Faults {
    blocked: Mutex<HashSet<SocketAddr>>,
    paused_until: Mutex<Option<Instant>>,
}

impl Faults {
    /// Drops every packet to or from these addresses from now on, until the
    /// next call; an empty list heals.
    pub fn block(&self, peers: impl IntoIterator<Item = SocketAddr>) {
        *self.blocked.lock().unwrap_or_else(PoisonError::into_inner) = peers.into_iter().collect();
    }

    /// The member handles nothing for `d` from now.
    pub fn pause(&self, d: Duration) {
        *self.paused_until.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now() + d);
    }

    /// The addresses cut off now.
    pub fn blocked(&self) -> Vec<SocketAddr> {
        self.blocked.lock().unwrap_or_else(PoisonError::into_inner).iter().copied().collect()
    }
}

impl Intercept for Faults {
    fn passes(&self, peer: SocketAddr) -> bool {
        !self.blocked.lock().unwrap_or_else(PoisonError::into_inner).contains(&peer)
    }

    fn stopped_until(&self) -> Option<Instant> {
        let mut paused = self.paused_until.lock().unwrap_or_else(PoisonError::into_inner);
        // A pause that is over is forgotten.
        if paused.is_some_and(|until| until <= Instant::now()) {
            *paused = None;
        }
        *paused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_pause_ends_and_a_block_lasts_until_healed() {
        let f = Faults::default();
        let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert!(f.passes(peer));
        assert_eq!(f.stopped_until(), None);
        f.block([peer]);
        assert!(!f.passes(peer));
        assert!(f.passes("127.0.0.1:10".parse().unwrap()), "only the addresses given");
        f.pause(Duration::from_secs(2));
        let until = f.stopped_until().expect("paused");
        assert_eq!(until - Instant::now(), Duration::from_secs(2));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(f.stopped_until(), None, "the pause is over");
        assert!(!f.passes(peer), "the block is not");
        f.block([]);
        assert!(f.passes(peer));
    }
}
