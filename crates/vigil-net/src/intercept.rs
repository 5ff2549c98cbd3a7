//! What stands between a member and its sockets, for tests and
//! demonstrations: a member cut off from some peers, or stopped for a while
//! as if its process were.
//!
//! The runtime knows nothing of faults. It asks an [`Intercept`], if one was
//! given ([`Builder::intercept`](crate::Builder::intercept)), two questions:
//! whether a packet to or from a peer passes (each way asked apart), and
//! whether the member must stand still. [`Faults`] is the ready answer
//! `vigil cluster` and the tests use; a test harness may write its own (a
//! lossy link, a one-way cut).

use std::collections::HashSet;
use std::fmt::Debug;
use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Asked by the runtime for every packet and before every input. Without
/// one, every packet passes and the member never stands still.
///
/// # Examples
///
/// A lossy link: one packet in `n` is lost, either way, to or from any
/// peer.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::net::SocketAddr;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use vigil_net::{Cluster, Intercept, Way};
///
/// /// Drops every `n`th packet.
/// #[derive(Debug)]
/// struct Lossy {
///     n: u64,
///     seen: AtomicU64,
/// }
///
/// impl Intercept for Lossy {
///     fn passes(&self, _peer: SocketAddr, _way: Way) -> bool {
///         self.seen.fetch_add(1, Ordering::Relaxed) % self.n != self.n - 1
///     }
///
///     fn stopped_until(&self) -> Option<tokio::time::Instant> {
///         None
///     }
/// }
///
/// let lossy = Arc::new(Lossy { n: 10, seen: AtomicU64::new(0) });
/// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).intercept(lossy).start().await?;
/// # drop(a);
/// # Ok(())
/// # }
/// ```
pub trait Intercept: Send + Sync + Debug + 'static {
    /// Whether a packet from `peer` ([`Way::In`]) or to it ([`Way::Out`])
    /// passes: checked for every datagram, every outbound stream connection
    /// (one that does not pass fails as an unreachable member's would) and
    /// every inbound frame once its sender is known. A packet that does not
    /// pass is dropped and counted in
    /// [`NetStats::intercepted`](crate::NetStats::intercepted).
    ///
    /// # Examples
    ///
    /// A one-way cut: this member hears nothing from `peer`, and still
    /// reaches it.
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use vigil_net::{Intercept, Way};
    ///
    /// #[derive(Debug)]
    /// struct Deaf(SocketAddr);
    ///
    /// impl Intercept for Deaf {
    ///     fn passes(&self, peer: SocketAddr, way: Way) -> bool {
    ///         !(peer == self.0 && way == Way::In)
    ///     }
    ///
    ///     fn stopped_until(&self) -> Option<tokio::time::Instant> {
    ///         None
    ///     }
    /// }
    ///
    /// let peer = "127.0.0.1:7946".parse().unwrap();
    /// let deaf = Deaf(peer);
    /// assert!(!deaf.passes(peer, Way::In));
    /// assert!(deaf.passes(peer, Way::Out));
    /// ```
    fn passes(&self, peer: SocketAddr, way: Way) -> bool;

    /// Until when the member must stand still, if it must: it handles
    /// nothing until then (packets wait in the socket's buffer, and its
    /// timers run late), as if its process were stopped. Asked often: it
    /// should be cheap.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use vigil_net::{Faults, Intercept};
    ///
    /// let faults = Faults::default();
    /// assert_eq!(faults.stopped_until(), None);
    /// faults.pause(Duration::from_millis(50));
    /// assert!(faults.stopped_until().is_some());
    /// tokio::time::sleep(Duration::from_millis(60)).await;
    /// assert_eq!(faults.stopped_until(), None, "the pause is over");
    /// # }
    /// ```
    fn stopped_until(&self) -> Option<Instant>;
}

/// Which way a packet goes, for [`Intercept::passes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// From the peer to this member.
    In,
    /// From this member to the peer.
    Out,
}

/// Faults to inject into one member: cut it off from some peers, or stop it
/// for a while. Share it (`Arc<Faults>`) between the member's builder and
/// whoever injects.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use vigil_net::{Cluster, Faults};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
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
    /// next call; an empty list heals. A member cut off from another finds
    /// it dead, as the other finds it, unless the cut heals first.
    ///
    /// # Examples
    ///
    /// ```
    /// use vigil_net::Faults;
    ///
    /// let faults = Faults::default();
    /// faults.block(["127.0.0.1:7947".parse().unwrap(), "127.0.0.1:7948".parse().unwrap()]);
    /// assert_eq!(faults.blocked().len(), 2);
    /// faults.block([]);
    /// assert!(faults.blocked().is_empty());
    /// ```
    pub fn block(&self, peers: impl IntoIterator<Item = SocketAddr>) {
        *self.blocked.lock().unwrap_or_else(PoisonError::into_inner) = peers.into_iter().collect();
    }

    /// The member handles nothing for `d` from now, as a process stopped
    /// with SIGSTOP, or a long garbage collection: a pause of a second or
    /// two is survived, a long one is a death. A new pause replaces the one
    /// under way.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, Faults};
    ///
    /// let faults = Arc::new(Faults::default());
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).intercept(faults.clone()).start().await?;
    /// faults.pause(Duration::from_millis(100));
    /// // The handle waits for the member to answer, after the pause.
    /// let started = tokio::time::Instant::now();
    /// a.stats().await?;
    /// assert!(started.elapsed() >= Duration::from_millis(50));
    /// # Ok(())
    /// # }
    /// ```
    pub fn pause(&self, d: Duration) {
        *self.paused_until.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now() + d);
    }

    /// The addresses cut off now, in no particular order.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use vigil_net::Faults;
    ///
    /// let faults = Faults::default();
    /// let peer: SocketAddr = "127.0.0.1:7947".parse().unwrap();
    /// faults.block([peer]);
    /// assert_eq!(faults.blocked(), [peer]);
    /// ```
    pub fn blocked(&self) -> Vec<SocketAddr> {
        self.blocked.lock().unwrap_or_else(PoisonError::into_inner).iter().copied().collect()
    }
}

impl Intercept for Faults {
    fn passes(&self, peer: SocketAddr, _way: Way) -> bool {
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
        assert!(f.passes(peer, Way::In) && f.passes(peer, Way::Out));
        assert_eq!(f.stopped_until(), None);
        f.block([peer]);
        assert!(!f.passes(peer, Way::In) && !f.passes(peer, Way::Out));
        assert!(f.passes("127.0.0.1:10".parse().unwrap(), Way::In), "only the addresses given");
        f.pause(Duration::from_secs(2));
        let until = f.stopped_until().expect("paused");
        assert_eq!(until - Instant::now(), Duration::from_secs(2));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(f.stopped_until(), None, "the pause is over");
        assert!(!f.passes(peer, Way::Out), "the block is not");
        f.block([]);
        assert!(f.passes(peer, Way::In) && f.passes(peer, Way::Out));
    }
}
