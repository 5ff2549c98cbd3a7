//! The lease a `lease-majority` strategy asks for: one object every node
//! reaches whatever the partition (as a Kubernetes Lease on the API server
//! outside the cluster's network), held by a side's name for a while.

use std::time::Duration;

use vigil_detector::Instant;
use vigil_membership::downing::LeaseAnswer;

/// How long a grant holds: a side that took the lease keeps it this long.
pub(crate) const TTL: Duration = Duration::from_secs(120);

/// See the module documentation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lease {
    /// The holder and until when.
    holder: Option<(String, Instant)>,
    /// Faults that make it impossible to ask, in force.
    down: u32,
}

impl Lease {
    /// Asks the lease for `holder` at `now`: granted if nobody holds it,
    /// its grant ran out, or `holder` already holds it (renewed); refused
    /// with the holder's name otherwise.
    pub(crate) fn acquire(&mut self, holder: &str, now: Instant) -> LeaseAnswer {
        if self.down > 0 {
            return LeaseAnswer::Unusable("the lease cannot be reached".into());
        }
        if let Some((h, until)) = &self.holder
            && h != holder
            && *until > now
        {
            return LeaseAnswer::Refused { holder: Some(h.clone()) };
        }
        self.holder = Some((holder.to_owned(), now.saturating_add(TTL)));
        LeaseAnswer::Granted
    }
}

impl Lease {
    /// A fault makes the lease impossible to ask (until [`Lease::up`]).
    pub(crate) fn down(&mut self) {
        self.down += 1;
    }

    /// A fault that made it impossible to ask ended.
    pub(crate) fn up(&mut self) {
        self.down = self.down.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_until_its_grant_runs_out() {
        let mut l = Lease::default();
        let t = Instant::from_secs(10);
        assert!(l.acquire("n0", t).granted());
        assert!(l.acquire("n0", t).granted(), "the holder asks again: renewed");
        assert_eq!(l.acquire("n3", t + Duration::from_secs(5)), LeaseAnswer::Refused { holder: Some("n0".into()) });
        assert!(l.acquire("n3", t + TTL).granted(), "the grant ran out");
        assert!(!l.acquire("n0", t + TTL).granted());
        l.down();
        assert!(matches!(l.acquire("n3", t + TTL), LeaseAnswer::Unusable(_)), "down: nobody gets it");
        l.up();
        assert!(l.acquire("n3", t + TTL).granted());
    }
}
