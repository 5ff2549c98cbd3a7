//! The lease a `lease-majority` strategy asks for: one object every node
//! reaches whatever the partition (as a Kubernetes Lease on the API server
//! outside the cluster's network), held by a side's name for a while.

use std::time::Duration;

use vigil_detector::Instant;
use vigil_membership::downing::{LeaseAnswer, LeaseRequest};

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
    /// Asks the lease at `now` for the request's holder: granted if nobody
    /// holds it, its grant ran out, the holder already holds it (renewed)
    /// or the holder the request replaces does (taken over, in one step);
    /// refused with the holder's name otherwise.
    pub(crate) fn acquire(&mut self, request: &LeaseRequest, now: Instant) -> LeaseAnswer {
        if self.down > 0 {
            return LeaseAnswer::Unusable("the lease cannot be reached".into());
        }
        if let Some((h, until)) = &self.holder
            && *h != request.holder
            && request.replacing.as_ref() != Some(h)
            && *until > now
        {
            return LeaseAnswer::Refused { holder: Some(h.clone()) };
        }
        self.holder = Some((request.holder.clone(), now.saturating_add(TTL)));
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

    fn ask(holder: &str) -> LeaseRequest {
        LeaseRequest { holder: holder.into(), replacing: None, renewal: false }
    }

    #[test]
    fn one_holder_at_a_time_until_its_grant_runs_out() {
        let mut l = Lease::default();
        let t = Instant::from_secs(10);
        assert!(l.acquire(&ask("n0"), t).granted());
        assert!(l.acquire(&ask("n0"), t).granted(), "the holder asks again: renewed");
        assert_eq!(
            l.acquire(&ask("n3"), t + Duration::from_secs(5)),
            LeaseAnswer::Refused { holder: Some("n0".into()) }
        );
        assert!(l.acquire(&ask("n3"), t + TTL).granted(), "the grant ran out");
        assert!(!l.acquire(&ask("n0"), t + TTL).granted());
        l.down();
        assert!(matches!(l.acquire(&ask("n3"), t + TTL), LeaseAnswer::Unusable(_)), "down: nobody gets it");
        l.up();
        assert!(l.acquire(&ask("n3"), t + TTL).granted());
    }

    #[test]
    fn a_holder_is_replaced_by_the_first_part_of_its_side_to_ask() {
        let mut l = Lease::default();
        let t = Instant::from_secs(10);
        assert!(l.acquire(&ask("ab"), t).granted());
        let part = |h: &str| LeaseRequest { holder: h.into(), replacing: Some("ab".into()), renewal: false };
        assert!(l.acquire(&part("a"), t + Duration::from_secs(1)).granted(), "taken over from its side");
        assert_eq!(
            l.acquire(&part("b"), t + Duration::from_secs(2)),
            LeaseAnswer::Refused { holder: Some("a".into()) },
            "the other part replaces a holder that is gone"
        );
        assert!(l.acquire(&ask("a"), t + Duration::from_secs(3)).granted(), "renewed by its new holder");
    }
}
