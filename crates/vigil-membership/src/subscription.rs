//! Heartbeat subscriptions: an application may watch any member, but in φ
//! mode a member heartbeats only its ring observers. A watcher off the ring
//! asks the member for its heartbeats with a lease ([`Message::Subscribe`]),
//! renews it while it watches, and cancels it when it stops; the member
//! keeps the subscribers it has granted, bounded, until their leases end.
//!
//! [`Message::Subscribe`]: crate::Message::Subscribe

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use vigil_detector::Instant;

/// The lease a watcher asks for.
pub(crate) const LEASE: Duration = Duration::from_secs(30);

/// How often a watcher renews its subscriptions (well inside the lease, so
/// a lost renewal or two do not end it).
pub(crate) const RENEW: Duration = Duration::from_secs(10);

/// The longest lease granted, whatever is asked.
pub(crate) const MAX_LEASE: Duration = Duration::from_secs(60);

/// The most subscribers a member serves (each costs a heartbeat per
/// interval).
pub(crate) const MAX_SUBSCRIBERS: usize = 256;

/// The members this one heartbeats beyond its ring, with their leases.
#[derive(Debug, Clone, Default)]
pub(crate) struct Subscribers {
    until: BTreeMap<Arc<str>, Instant>,
}

impl Subscribers {
    /// Grants (or renews, or with a lease of 0 cancels) `name`'s
    /// subscription. Returns whether it is held now.
    pub(crate) fn request(&mut self, name: Arc<str>, lease_ms: u32, now: Instant) -> bool {
        if lease_ms == 0 {
            self.until.remove(&name);
            return false;
        }
        self.prune(now);
        if !self.until.contains_key(&name) && self.until.len() >= MAX_SUBSCRIBERS {
            return false;
        }
        let lease = Duration::from_millis(u64::from(lease_ms)).min(MAX_LEASE);
        self.until.insert(name, now.saturating_add(lease));
        true
    }

    /// Drops the subscriptions whose lease ended.
    pub(crate) fn prune(&mut self, now: Instant) {
        self.until.retain(|_, until| *until > now);
    }

    /// The subscribers whose lease runs at `now`.
    pub(crate) fn current(&self, now: Instant) -> impl Iterator<Item = &Arc<str>> {
        self.until.iter().filter(move |(_, until)| **until > now).map(|(n, _)| n)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.until.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_are_granted_capped_renewed_cancelled_and_bounded() {
        let mut s = Subscribers::default();
        let t0 = Instant::from_secs(100);
        assert!(s.request(Arc::from("a"), u32::MAX, t0), "granted, capped at the longest lease");
        assert_eq!(s.current(t0 + MAX_LEASE - Duration::from_millis(1)).count(), 1);
        assert_eq!(s.current(t0 + MAX_LEASE).count(), 0, "ended at the cap");
        assert!(s.request(Arc::from("a"), 1_000, t0 + Duration::from_secs(59)), "renewed");
        assert_eq!(s.current(t0 + Duration::from_secs(59) + Duration::from_millis(999)).count(), 1);
        assert!(!s.request(Arc::from("a"), 0, t0), "cancelled");
        assert_eq!(s.len(), 0);
        for i in 0..MAX_SUBSCRIBERS {
            assert!(s.request(Arc::from(format!("m{i}")), 30_000, t0));
        }
        assert!(!s.request(Arc::from("one too many"), 30_000, t0), "bounded");
        assert!(s.request(Arc::from("m0"), 30_000, t0), "a renewal of a holder still goes through");
        // Once leases end, there is room again.
        assert!(s.request(Arc::from("later"), 30_000, t0 + Duration::from_secs(31)));
        assert_eq!(s.len(), 1);
    }
}
