//! Members proposed by strangers, checked before they are admitted.
//!
//! A packet's sender is a *stranger* when the packet's source address is
//! not the known address of the member it claims to come from: a member
//! this node has never heard of, a sender that forged its name, or a member
//! seen from a second address. In plaintext anyone can claim anything, so a
//! stranger's word does not put a member in this node's view, where it
//! would take a place on the ring (and so the watch of real members) and be
//! passed on to everyone. Each member a stranger proposes, itself included,
//! becomes a *candidate*: the node pings it, and admits it only when it
//! answers as the identity proposed. A candidate that does not answer is
//! dropped.
//!
//! What one source can cost is bounded twice over: each source address may
//! propose at most `introductions_per_source` members per
//! `introduction_window` (a token bucket per IP address, for at most
//! [`MAX_SOURCES`] sources), and at most [`MAX_CANDIDATES`] candidates wait
//! at once. Members vouched for by a known member at its own address, and
//! the views seeds send back, are admitted at once and cost nothing here.
//!
//! A known member whose packets come from another address (behind a NAT,
//! or from a second interface) is a stranger there too, until it proves the
//! address is its own: it is pinged at its known address, and if the answer
//! comes back from the new one, that address speaks for it from then on.
//! The same budget applies, and at most [`MAX_CANDIDATES`] such checks wait.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use vigil_detector::Instant;

use crate::message::Update;

/// Candidates waiting for their answer at most.
pub(crate) const MAX_CANDIDATES: usize = 1_024;

/// Sources whose budgets are kept at most; beyond, the one first seen
/// longest ago is forgotten.
pub(crate) const MAX_SOURCES: usize = 4_096;

/// One source's budget: a token bucket.
#[derive(Debug, Clone)]
struct Budget {
    tokens: f64,
    at: Instant,
}

/// A member proposed by a stranger, and the ping that checks it.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// What was proposed (an alive rumour).
    pub(crate) update: Update,
    /// The sequence number of the ping that checks it.
    pub(crate) seq: u32,
}

/// Why a proposal was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The source spent its budget.
    Budget,
    /// Too many candidates wait already.
    Full,
}

/// The candidates and the budgets. See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct Introductions {
    per_window: u32,
    window: Duration,
    budgets: HashMap<IpAddr, Budget>,
    /// Sources in the order they were first seen, to forget the oldest.
    order: VecDeque<IpAddr>,
    candidates: HashMap<Arc<str>, Candidate>,
    /// Known members heard from another address: the ping that checks it,
    /// and the address.
    sources: HashMap<Arc<str>, (u32, std::net::SocketAddr)>,
}

impl Introductions {
    pub(crate) fn new(per_window: u32, window: Duration) -> Introductions {
        Introductions {
            per_window,
            window,
            budgets: HashMap::new(),
            order: VecDeque::new(),
            candidates: HashMap::new(),
            sources: HashMap::new(),
        }
    }

    /// Whether a check of another address of `name` is under way.
    pub(crate) fn is_checking(&self, name: &str) -> bool {
        self.sources.contains_key(name)
    }

    /// Takes a check that `name`'s packets come from `source` (a ping,
    /// `seq`, sent to its known address), if the source's budget and the
    /// room allow.
    pub(crate) fn check_source(
        &mut self,
        now: Instant,
        name: Arc<str>,
        source: std::net::SocketAddr,
        seq: impl FnOnce() -> u32,
    ) -> Result<u32, Refusal> {
        if self.sources.len() >= MAX_CANDIDATES {
            return Err(Refusal::Full);
        }
        self.admit_proposal(now, source.ip())?;
        let seq = seq();
        self.sources.insert(name, (seq, source));
        Ok(seq)
    }

    /// The address `name` claimed, if ping `seq` is the check and the answer
    /// came from it; the check ends either way when `seq` is its ping.
    pub(crate) fn source_answered(
        &mut self,
        name: &str,
        seq: u32,
        from: std::net::SocketAddr,
    ) -> Option<std::net::SocketAddr> {
        let (s, source) = *self.sources.get(name)?;
        if s != seq {
            return None;
        }
        self.sources.remove(name);
        (source == from).then_some(source)
    }

    /// Ends the check of `name`'s other address (its ping went unanswered).
    pub(crate) fn source_failed(&mut self, name: &str) -> bool {
        self.sources.remove(name).is_some()
    }

    /// Whether `name` is a candidate already.
    pub(crate) fn is_candidate(&self, name: &str) -> bool {
        self.candidates.contains_key(name)
    }

    /// Candidates waiting.
    pub(crate) fn len(&self) -> usize {
        self.candidates.len()
    }

    /// Takes one proposal from `source` at `now` if its budget and the room
    /// allow; the caller then pings the candidate and [`insert`](Self::insert)s it.
    pub(crate) fn admit_proposal(&mut self, now: Instant, source: IpAddr) -> Result<(), Refusal> {
        if self.candidates.len() >= MAX_CANDIDATES {
            return Err(Refusal::Full);
        }
        let (per_window, window) = (f64::from(self.per_window), self.window);
        if !self.budgets.contains_key(&source) {
            if self.budgets.len() >= MAX_SOURCES
                && let Some(old) = self.order.pop_front()
            {
                self.budgets.remove(&old);
            }
            self.order.push_back(source);
            self.budgets.insert(source, Budget { tokens: per_window, at: now });
        }
        let Some(b) = self.budgets.get_mut(&source) else { return Err(Refusal::Budget) };
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed / window.as_secs_f64() * per_window).min(per_window);
        b.at = now;
        if b.tokens < 1.0 {
            return Err(Refusal::Budget);
        }
        b.tokens -= 1.0;
        Ok(())
    }

    /// Records a candidate whose ping went out as `seq`.
    pub(crate) fn insert(&mut self, name: Arc<str>, candidate: Candidate) {
        self.candidates.insert(name, candidate);
    }

    /// The candidate `name`, if its ping `seq` is the one that answered.
    pub(crate) fn answered(&mut self, name: &str, seq: u32) -> Option<Candidate> {
        if self.candidates.get(name).is_some_and(|c| c.seq == seq) { self.candidates.remove(name) } else { None }
    }

    /// Forgets the candidate `name` (it did not answer, or it was admitted
    /// by other means). Returns whether it was one.
    pub(crate) fn remove(&mut self, name: &str) -> bool {
        self.candidates.remove(name).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_spends_its_budget_and_it_refills_over_the_window() {
        let mut i = Introductions::new(4, Duration::from_secs(10));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let t = Instant::from_secs(1);
        for _ in 0..4 {
            assert_eq!(i.admit_proposal(t, a), Ok(()));
        }
        assert_eq!(i.admit_proposal(t, a), Err(Refusal::Budget));
        // Another source has its own budget.
        assert_eq!(i.admit_proposal(t, b), Ok(()));
        // A quarter of the window refills one.
        assert_eq!(i.admit_proposal(Instant::from_millis(3_500), a), Ok(()));
        assert_eq!(i.admit_proposal(Instant::from_millis(3_500), a), Err(Refusal::Budget));
        // A long silence refills the whole budget, not more.
        let later = Instant::from_secs(1_000);
        for _ in 0..4 {
            assert_eq!(i.admit_proposal(later, a), Ok(()));
        }
        assert_eq!(i.admit_proposal(later, a), Err(Refusal::Budget));
    }

    #[test]
    fn sources_and_candidates_are_bounded() {
        let mut i = Introductions::new(1, Duration::from_secs(10));
        let t = Instant::from_secs(1);
        for k in 0..(MAX_SOURCES as u32 + 10) {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + k));
            assert_eq!(i.admit_proposal(t, ip), Ok(()));
        }
        assert_eq!(i.budgets.len(), MAX_SOURCES);
        let update = |n: usize| Update {
            id: crate::message::NodeId::new(format!("c{n}"), 1),
            addr: "10.0.0.1:7946".parse().unwrap(),
            incarnation: 0,
            status: crate::message::Status::Alive,
            from: crate::message::NodeId::new(format!("c{n}"), 1),
            tags: None,
        };
        for n in 0..MAX_CANDIDATES {
            i.insert(Arc::from(format!("c{n}")), Candidate { update: update(n), seq: n as u32 });
        }
        let fresh: IpAddr = "192.168.0.1".parse().unwrap();
        assert_eq!(i.admit_proposal(t, fresh), Err(Refusal::Full));
        // Only the ping that was sent admits a candidate.
        assert!(i.answered("c3", 4).is_none());
        assert!(i.answered("c3", 3).is_some());
        assert!(!i.is_candidate("c3"));
        assert!(i.remove("c4") && !i.remove("c4"));
    }
}
