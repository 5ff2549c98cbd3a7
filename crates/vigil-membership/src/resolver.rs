//! The downing provider's state in a node: the stability gate, the
//! decision taken and not yet carried out, and the lease asked for.
//!
//! The node tells it when the picture may have changed (a version that
//! grows with the suspicions and the membership) and asks it what is due;
//! what a decision does to the members is the node's (`node/downing.rs`).

use vigil_detector::Instant;

use crate::downing::{Downing, Pending};
use crate::stability::{Gate, Stability};

/// Accusations kept between decisions, at most.
const MAX_SEEN: usize = 65_536;

/// See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct Resolver {
    gate: Stability,
    /// The picture's version last seen (suspicions' and membership's).
    seen: u64,
    pending: Option<Pending>,
    /// The lease is due to be asked: taken by the runtime.
    lease_wanted: bool,
    /// Accusations (accuser, accused) seen lately, this node's own
    /// included, with when each was last seen: what an unstable decision
    /// counts as records.
    accusations: std::collections::BTreeMap<(String, String), Instant>,
    /// How long an accusation is remembered: twice the instability an
    /// unstable decision waits out, so that a member that flaps is seen
    /// accused in at least one of its bad spells, whenever the decision
    /// falls, and not only as the accuser of the members it cannot hear.
    memory: std::time::Duration,
    /// When a member's packet last reached this node.
    heard_at: Option<Instant>,
}

/// What is due at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Due {
    /// Nothing.
    Nothing,
    /// The picture held still: decide.
    Decide,
    /// It flapped and never held still: decide with the members that
    /// flapped counted unreachable.
    Unstable,
    /// Carry out the pending decision (its margin is over).
    CarryOut(Pending),
    /// Ask the lease.
    AskLease,
}

impl Resolver {
    pub(crate) fn new(settings: &Downing) -> Resolver {
        Resolver {
            gate: Stability::new(settings.stable_after, settings.decide_when_unstable),
            seen: 0,
            pending: None,
            lease_wanted: false,
            accusations: std::collections::BTreeMap::new(),
            heard_at: None,
            memory: settings
                .stable_after
                .saturating_add(settings.decide_when_unstable.unwrap_or_default())
                .saturating_mul(2),
        }
    }

    /// Whether the picture at `version` is not the one last observed.
    pub(crate) fn is_new(&self, version: u64) -> bool {
        version != self.seen
    }

    /// The picture is at `version`; if that is new, it changed at `now`.
    pub(crate) fn observe(&mut self, now: Instant, version: u64, anything_unreachable: bool) {
        if self.is_new(version) {
            self.seen = version;
            self.gate.changed(now, anything_unreachable);
        }
    }

    /// A member found unreachable became reachable again at `now`.
    pub(crate) fn flapped(&mut self, now: Instant) {
        self.gate.flapped(now);
    }

    /// A known member's packet reached this node at `now`.
    pub(crate) fn heard(&mut self, now: Instant) {
        self.heard_at = Some(now);
    }

    /// Whether nothing from a member reached this node in the `quiet`
    /// before `now`: a node that hears nobody is the likelier culprit, and
    /// its picture is stale (the refutations it missed), so it does not
    /// judge others.
    pub(crate) fn deaf(&self, now: Instant, quiet: std::time::Duration) -> bool {
        self.heard_at.is_none_or(|at| at.saturating_add(quiet) < now)
    }

    /// A decision was due but this node may not take it now: the gate
    /// waits for another calm from `now`.
    pub(crate) fn postpone(&mut self, now: Instant) {
        self.gate.changed(now, true);
    }

    /// `accuser` accused `accused` at `now` (of this node's knowledge).
    pub(crate) fn saw(&mut self, accuser: &str, accused: &str, now: Instant) {
        if accuser == accused {
            return;
        }
        if self.accusations.len() >= MAX_SEEN {
            self.forget_before(now);
        }
        let key = (accuser.to_owned(), accused.to_owned());
        if let Some(at) = self.accusations.get_mut(&key) {
            *at = now;
        } else if self.accusations.len() < MAX_SEEN {
            self.accusations.insert(key, now);
        }
    }

    /// The accusations seen in the memory's span before `now` (older ones
    /// are forgotten). A decision does not clear them: a member that
    /// flapped before it still did.
    pub(crate) fn seen(&mut self, now: Instant) -> std::collections::BTreeSet<(String, String)> {
        self.forget_before(now);
        self.accusations.keys().cloned().collect()
    }

    fn forget_before(&mut self, now: Instant) {
        let memory = self.memory;
        self.accusations.retain(|_, at| at.saturating_add(memory) >= now);
    }

    /// What is due by `now`, taken out of the state (a pending decision is
    /// handed over once; the gate rests after a decision until the next
    /// change).
    pub(crate) fn due(&mut self, now: Instant) -> Due {
        if let Some(p) = self.pending.as_mut().filter(|p| p.at <= now && !p.lease_asked) {
            if matches!(p.decision, crate::downing::Decision::AskLease { .. }) {
                p.lease_asked = true;
                self.lease_wanted = true;
                return Due::AskLease;
            }
            return self.pending.take().map_or(Due::Nothing, Due::CarryOut);
        }
        match self.gate.poll(now) {
            Gate::Decide => {
                self.gate.decided();
                Due::Decide
            }
            Gate::Unstable => {
                self.gate.decided();
                Due::Unstable
            }
            Gate::Idle | Gate::Wait { .. } => Due::Nothing,
        }
    }

    /// When something is next due.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let pending = self.pending.as_ref().filter(|p| !p.lease_asked).map(|p| p.at);
        [self.gate.deadline(), pending].into_iter().flatten().min()
    }

    /// When a decision may be taken, while something is unreachable.
    pub(crate) fn decide_at(&self) -> Option<Instant> {
        self.gate.deadline()
    }

    pub(crate) fn pending(&self) -> Option<&Pending> {
        self.pending.as_ref()
    }

    pub(crate) fn set_pending(&mut self, pending: Option<Pending>) {
        self.pending = pending;
    }

    /// Takes the pending lease request, once.
    pub(crate) fn take_lease_request(&mut self) -> bool {
        std::mem::take(&mut self.lease_wanted)
    }

    /// The lease's answer: the pending decision it was asked for, if any.
    pub(crate) fn lease_answered(&mut self) -> Option<Pending> {
        self.lease_wanted = false;
        self.pending.take_if(|p| p.lease_asked)
    }
}
