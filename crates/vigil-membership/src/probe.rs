//! Probes this node runs, indirect probes it relays for others, and classic
//! SWIM's probe order.
//!
//! A probe pings its target directly and, after the direct wait (or at once,
//! when φ already says the member is silent), asks a few other members to
//! ping it too (`PingReq`). Any ack settles it; so does, in φ mode, a
//! heartbeat that arrives while it is out. A probe that runs out with no
//! answer is a failed probe: an accusation. Relays are the other side of
//! `PingReq`: this node pings the target under its own sequence number and
//! passes the ack back, or a nack if the target does not answer in time.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use vigil_detector::Instant;

use crate::members::MemberTable;
use crate::message::NodeId;

/// Where a probe stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Waiting for a direct ack; indirect requests at the deadline.
    Direct,
    /// Indirect requests sent; the probe fails at the deadline.
    Indirect,
}

/// Why a probe was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Classic SWIM's round: probe the next member.
    Classic,
    /// Monitoring found a watched member silent.
    Silent,
    /// A suspicion this node only heard of ran out with no verdict: check
    /// the suspect before declaring it dead.
    Verify,
    /// A stranger proposed a member: check that it answers before it is
    /// admitted (a direct ping only).
    Introduce,
    /// A known member's packets came from another address: check that it
    /// answers from there a ping sent to its known address.
    Source,
    /// A rumour is checked with the member it is about before it is taken
    /// (`checks.rs`).
    Check,
}

/// A probe of one member.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    pub(crate) target: NodeId,
    pub(crate) addr: SocketAddr,
    pub(crate) purpose: Purpose,
    /// The detector level that set it off; `None` for a classic probe, and
    /// for a member never heard from.
    pub(crate) level: Option<f64>,
    pub(crate) stage: Stage,
    pub(crate) started: Instant,
    pub(crate) expected_nacks: u32,
    pub(crate) nacks: u32,
}

/// An indirect probe relayed for another member.
#[derive(Debug, Clone)]
pub(crate) struct Relay {
    pub(crate) requester: SocketAddr,
    /// The requester's sequence number.
    pub(crate) seq: u32,
    pub(crate) nack: bool,
}

/// What an ack answered.
#[derive(Debug)]
pub(crate) enum Answered {
    Probe(Probe),
    Relay(Relay),
}

/// Probes and relays in flight, keyed by sequence number, with their
/// deadlines in order.
#[derive(Debug, Clone)]
pub(crate) struct Probes {
    probes: BTreeMap<u32, (Instant, Probe)>,
    relays: BTreeMap<u32, (Instant, Relay)>,
    deadlines: BTreeSet<(Instant, u32)>,
    seq: u32,
    max_relays: usize,
}

impl Probes {
    /// At most `max_relays` relays in flight: more requests are a flood, not
    /// a cluster.
    pub(crate) fn new(max_relays: usize) -> Probes {
        Probes { probes: BTreeMap::new(), relays: BTreeMap::new(), deadlines: BTreeSet::new(), seq: 0, max_relays }
    }

    /// A sequence number not in use.
    pub(crate) fn next_seq(&mut self) -> u32 {
        loop {
            self.seq = self.seq.wrapping_add(1);
            if !self.probes.contains_key(&self.seq) && !self.relays.contains_key(&self.seq) {
                return self.seq;
            }
        }
    }

    /// Puts a probe in flight (or back in flight, for its next stage).
    pub(crate) fn insert(&mut self, seq: u32, probe: Probe, deadline: Instant) {
        self.cancel(seq);
        self.deadlines.insert((deadline, seq));
        self.probes.insert(seq, (deadline, probe));
    }

    /// Relays a ping for another member, unless too many are in flight.
    pub(crate) fn relay(&mut self, seq: u32, relay: Relay, deadline: Instant) -> bool {
        if self.relays.len() >= self.max_relays {
            return false;
        }
        self.cancel(seq);
        self.deadlines.insert((deadline, seq));
        self.relays.insert(seq, (deadline, relay));
        true
    }

    fn cancel(&mut self, seq: u32) {
        if let Some((at, _)) = self.probes.remove(&seq) {
            self.deadlines.remove(&(at, seq));
        }
        if let Some((at, _)) = self.relays.remove(&seq) {
            self.deadlines.remove(&(at, seq));
        }
    }

    /// The probe or relay an ack with `seq` answers, taken out of flight.
    pub(crate) fn answer(&mut self, seq: u32) -> Option<Answered> {
        if let Some((at, relay)) = self.relays.remove(&seq) {
            self.deadlines.remove(&(at, seq));
            return Some(Answered::Relay(relay));
        }
        let (at, probe) = self.probes.remove(&seq)?;
        self.deadlines.remove(&(at, seq));
        Some(Answered::Probe(probe))
    }

    /// A nack for probe `seq`.
    pub(crate) fn nack(&mut self, seq: u32) {
        if let Some((_, p)) = self.probes.get_mut(&seq) {
            p.nacks = p.nacks.saturating_add(1);
        }
    }

    /// Everything whose deadline has come by `now`, taken out of flight, in
    /// deadline order.
    pub(crate) fn due(&mut self, now: Instant) -> Vec<(u32, Answered)> {
        let mut out = Vec::new();
        while let Some(&(at, seq)) = self.deadlines.first() {
            if at > now {
                break;
            }
            self.deadlines.pop_first();
            if let Some((_, p)) = self.probes.remove(&seq) {
                out.push((seq, Answered::Probe(p)));
            } else if let Some((_, r)) = self.relays.remove(&seq) {
                out.push((seq, Answered::Relay(r)));
            }
        }
        out
    }

    /// Makes every direct probe sent to `addr` due at `now` (its ping could
    /// not be sent: waiting for the timeout would only delay the indirect
    /// probes). Returns how many.
    pub(crate) fn fail_direct_to(&mut self, addr: SocketAddr, now: Instant) -> usize {
        let hit: Vec<u32> = self
            .probes
            .iter()
            .filter(|(_, (at, p))| p.addr == addr && p.stage == Stage::Direct && *at > now)
            .map(|(s, _)| *s)
            .collect();
        for &seq in &hit {
            if let Some((at, p)) = self.probes.remove(&seq) {
                self.deadlines.remove(&(at, seq));
                self.deadlines.insert((now, seq));
                self.probes.insert(seq, (now, p));
            }
        }
        hit.len()
    }

    /// Whether a probe of `name` is in flight.
    pub(crate) fn probing(&self, name: &str) -> bool {
        self.probes.values().any(|(_, p)| p.target.name == name)
    }

    /// Whether the probe `seq` is in flight as a check of `target` (that
    /// process exactly).
    pub(crate) fn is_check_of(&self, seq: u32, target: &NodeId) -> bool {
        self.probes.get(&seq).is_some_and(|(_, p)| p.purpose == Purpose::Check && p.target == *target)
    }

    /// Whether the probe `seq` is in flight.
    pub(crate) fn has(&self, seq: u32) -> bool {
        self.probes.contains_key(&seq)
    }

    /// Drops the probes of `id` (it died or left: there is nothing to find
    /// out).
    pub(crate) fn forget(&mut self, id: &NodeId) {
        let gone: Vec<u32> = self.probes.iter().filter(|(_, (_, p))| p.target == *id).map(|(s, _)| *s).collect();
        for seq in gone {
            self.cancel(seq);
        }
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(at, _)| *at)
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.probes.len()
    }

    pub(crate) fn relays_in_flight(&self) -> usize {
        self.relays.len()
    }
}

/// Classic SWIM's probe order: every live member once per round, in an order
/// shuffled afresh for each round (memberlist's), or a random member each
/// time (SWIM's analysis).
#[derive(Debug, Clone, Default)]
pub(crate) struct ProbeOrder {
    order: Vec<Arc<str>>,
}

impl ProbeOrder {
    pub(crate) fn next(&mut self, members: &MemberTable, rng: &mut ChaCha8Rng, random: bool) -> Option<Arc<str>> {
        if random {
            return members.random_live(rng).map(|m| m.name.clone());
        }
        loop {
            if self.order.is_empty() {
                let mut names: Vec<Arc<str>> = members.iter().filter(|m| m.is_live()).map(|m| m.name.clone()).collect();
                if names.is_empty() {
                    return None;
                }
                // Fisher–Yates with the node's seeded generator.
                for i in (1..names.len()).rev() {
                    let j = rng.random_range(0..=i);
                    names.swap(i, j);
                }
                self.order = names;
            }
            let name = self.order.pop()?;
            if members.get(&name).is_some_and(|m| m.is_live()) {
                return Some(name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(name: &str) -> Probe {
        Probe {
            target: NodeId::new(name, 1),
            addr: SocketAddr::from(([10, 0, 0, 1], 7946)),
            purpose: Purpose::Classic,
            level: None,
            stage: Stage::Direct,
            started: Instant::ZERO,
            expected_nacks: 0,
            nacks: 0,
        }
    }

    #[test]
    fn answers_and_deadlines_take_probes_and_relays_out_of_flight() {
        let mut p = Probes::new(1);
        let (a, b, c) = (p.next_seq(), p.next_seq(), p.next_seq());
        p.insert(a, probe("x"), Instant::from_secs(3));
        p.insert(b, probe("y"), Instant::from_secs(1));
        let relay = Relay { requester: SocketAddr::from(([10, 0, 0, 2], 1)), seq: 9, nack: true };
        assert!(p.relay(c, relay.clone(), Instant::from_secs(2)));
        assert!(!p.relay(p.seq.wrapping_add(1), relay, Instant::from_secs(2)), "one relay at most");
        assert_eq!(p.next_deadline(), Some(Instant::from_secs(1)));
        assert!(p.probing("x") && p.probing("y"));
        assert!(matches!(p.answer(a), Some(Answered::Probe(q)) if q.target.name == "x"));
        assert!(p.answer(a).is_none());
        let due = p.due(Instant::from_secs(2));
        assert!(matches!(due[..], [(s1, Answered::Probe(_)), (s2, Answered::Relay(_))] if s1 == b && s2 == c));
        assert_eq!((p.in_flight(), p.relays_in_flight(), p.next_deadline()), (0, 0, None));
    }

    #[test]
    fn sequence_numbers_in_use_are_skipped_when_they_wrap() {
        let mut p = Probes::new(10);
        p.seq = u32::MAX - 1;
        let s = p.next_seq();
        p.insert(s, probe("x"), Instant::from_secs(1));
        p.seq = s - 1;
        assert_ne!(p.next_seq(), s);
    }
}
