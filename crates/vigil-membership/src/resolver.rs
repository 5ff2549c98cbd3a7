//! The downing provider's state in a node: the stability gate, the
//! decision taken and not yet carried out, and the lease asked for.
//!
//! The node tells it when the picture may have changed (a version that
//! grows with the rows and the membership) and asks it what is due;
//! what a decision does to the members is the node's (`node/downing.rs`).

use vigil_detector::Instant;

use crate::downing::{Downing, Pending};
use crate::stability::{Gate, Stability};

/// See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct Resolver {
    gate: Stability,
    /// The picture's version last seen (rows' and membership's).
    seen: u64,
    pending: Option<Pending>,
    /// The lease is due to be asked: taken by the runtime.
    lease_wanted: bool,
    /// The lease this node's side took, while this node renews it.
    held: Option<Held>,
    /// The core the pending decision asks the lease for.
    asking: Vec<String>,
    /// A renewal was asked and its answer is awaited (a decision's request
    /// waits for it, so that answers are not mistaken for each other).
    renewing: bool,
    /// How long a member that came back stays in this node's row as
    /// flapped: twice the instability an unstable decision waits out, so
    /// that a member that flaps is still marked whenever the decision falls.
    memory: std::time::Duration,
    /// The members the last decision carried out downed or spared, in the
    /// generations decided, until when they are remembered.
    recent: Option<(Vec<(String, u64)>, Instant)>,
    /// The members this node's decisions downed, in the generations
    /// downed: when, and whether another member has said since that it
    /// holds the member dead too (see [`Resolver::withdrawable`]).
    verdicts: std::collections::BTreeMap<(String, u64), Verdict>,
}

/// The lease this node's side took: the holder, the side's members, and
/// when it is next renewed.
#[derive(Debug, Clone)]
struct Held {
    holder: String,
    side: Vec<String>,
    renew_at: Instant,
}

/// A member this node downed: when, and whether another member followed.
#[derive(Debug, Clone, Copy)]
struct Verdict {
    at: Instant,
    followed: bool,
}

/// What a lease request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    /// The pending decision.
    Decision,
    /// Renewing the lease this node's side holds.
    Renewal,
}

/// What a lease's answer answers.
#[derive(Debug, Clone)]
pub(crate) enum Answered {
    /// The pending decision, taken out.
    Decision(Pending),
    /// A renewal.
    Renewal,
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
            held: None,
            asking: Vec::new(),
            renewing: false,
            memory: settings
                .stable_after
                .saturating_add(settings.decide_when_unstable.unwrap_or_default())
                .saturating_mul(2),
            recent: None,
            verdicts: std::collections::BTreeMap::new(),
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

    /// A decision due now was not carried out (its side no longer holds):
    /// the gate waits for the picture to hold still again and decides
    /// anew.
    pub(crate) fn reopen(&mut self, now: Instant) {
        self.gate.changed(now, true);
    }

    /// A member found unreachable became reachable again at `now`.
    pub(crate) fn flapped(&mut self, now: Instant) {
        self.gate.flapped(now);
    }

    /// How long a member that came back stays flapped in this node's row.
    pub(crate) fn memory(&self) -> std::time::Duration {
        self.memory
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

    /// When something is next due after `now`. A renewal already due
    /// waits for the runtime to take it (after the input at hand), not for
    /// a timer.
    pub(crate) fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let pending = self.pending.as_ref().filter(|p| !p.lease_asked).map(|p| p.at);
        let renewal = self.held.as_ref().filter(|h| !self.renewing && h.renew_at > now).map(|h| h.renew_at);
        [self.gate.deadline(), pending, renewal].into_iter().flatten().min()
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

    /// The pending decision `p` was carried out: its members are
    /// remembered until `until`.
    pub(crate) fn carried_out(&mut self, p: &Pending, until: Instant) {
        let down = p.down.iter().cloned().zip(p.generations.iter().copied()).collect();
        self.recent = Some((down, until));
    }

    /// Whether this node decided, lately or in the decision still pending,
    /// to down `name` in `generation` (a decision that downs others, not
    /// one that waits for the lease).
    pub(crate) fn decided_down(&self, name: &str, generation: u64, now: Instant) -> bool {
        let pending = self.pending.as_ref().filter(|p| p.decision == crate::downing::Decision::DownUnreachable);
        let in_pending =
            pending.is_some_and(|p| p.down.iter().zip(&p.generations).any(|(n, g)| n == name && *g == generation));
        let in_recent = self
            .recent
            .as_ref()
            .is_some_and(|(down, until)| now < *until && down.iter().any(|(n, g)| n == name && *g == generation));
        in_pending || in_recent
    }

    /// This node's decision downed `name` in `generation` at `now`.
    pub(crate) fn downed(&mut self, name: &str, generation: u64, now: Instant) {
        if self.verdicts.len() >= crate::message::MAX_MEMBERS {
            return;
        }
        self.verdicts.insert((name.to_owned(), generation), Verdict { at: now, followed: false });
    }

    /// Another member said it holds `name` dead in `generation`: a verdict
    /// of this node's about it is followed.
    pub(crate) fn followed(&mut self, name: &str, generation: u64) {
        if let Some(v) = self.verdicts.get_mut(&(name.to_owned(), generation)) {
            v.followed = true;
        }
    }

    /// Whether this node's verdict downing `name` in `generation` is one
    /// nobody followed, older than `window` at `now`: the member it downed
    /// still speaks as that process, so it did not down itself (it heard
    /// the verdict from this node alone, and reaches the rest of the
    /// side), and no other member said it holds it dead.
    pub(crate) fn withdrawable(&self, name: &str, generation: u64, now: Instant, window: std::time::Duration) -> bool {
        self.verdicts
            .get(&(name.to_owned(), generation))
            .is_some_and(|v| !v.followed && now.saturating_duration_since(v.at) >= window)
    }

    /// The members this node's decisions downed within `window` of `now`,
    /// in the generations downed.
    pub(crate) fn downed_lately(&self, now: Instant, window: std::time::Duration) -> Vec<(&str, u64)> {
        self.verdicts
            .iter()
            .filter(|(_, v)| now.saturating_duration_since(v.at) <= window)
            .map(|((n, g), _)| (n.as_str(), *g))
            .collect()
    }

    /// Forgets this node's verdict about `name` (withdrawn, or the member
    /// is gone from the table).
    pub(crate) fn forget_verdict(&mut self, name: &str) {
        self.verdicts.retain(|(n, _), _| n != name);
    }

    /// Takes what the lease is to be asked now, once: the pending
    /// decision's request, or a renewal of the lease this node's side
    /// holds that is due by `now`. One request at a time.
    pub(crate) fn take_lease_request(&mut self, now: Instant) -> Option<Asked> {
        if self.renewing {
            return None;
        }
        if std::mem::take(&mut self.lease_wanted) {
            return Some(Asked::Decision);
        }
        let awaiting = self.pending.as_ref().is_some_and(|p| p.lease_asked);
        if !awaiting && self.held.as_ref().is_some_and(|h| h.renew_at <= now) {
            self.renewing = true;
            return Some(Asked::Renewal);
        }
        None
    }

    /// What a lease's answer answers: a renewal, the pending decision it
    /// was asked for, or nothing (a decision dropped meanwhile).
    pub(crate) fn lease_answered(&mut self) -> Option<Answered> {
        if std::mem::take(&mut self.renewing) {
            return Some(Answered::Renewal);
        }
        self.lease_wanted = false;
        self.pending.take_if(|p| p.lease_asked).map(Answered::Decision)
    }

    /// The lease this node's side holds, while this node renews it.
    pub(crate) fn held_lease(&self) -> Option<&str> {
        self.held.as_ref().map(|h| h.holder.as_str())
    }

    /// The pending decision asks the lease for `core`.
    pub(crate) fn asking_for(&mut self, core: Vec<String>) {
        self.asking = core;
    }

    /// The holder the pending decision's request replaces: the lease this
    /// node's side holds, if the core it asks for is most of that side (or
    /// half of it, holding its first member in order). A smaller part is
    /// refused while the side renews the lease, as a side is that the
    /// lease did not go to: a part cut off alone (a member that cannot
    /// hear) must not take the lease from the rest.
    pub(crate) fn replacing(&self) -> Option<&str> {
        let held = self.held.as_ref()?;
        let kept = self.asking.iter().filter(|n| held.side.contains(n)).count();
        let first = held.side.iter().min();
        let most = kept * 2 > held.side.len()
            || (kept * 2 == held.side.len() && first.is_some_and(|f| self.asking.contains(f)));
        most.then_some(held.holder.as_str())
    }

    /// The pending decision took the lease for `holder` at `now`: renewed
    /// every [`LEASE_RENEW_EVERY`](crate::downing::LEASE_RENEW_EVERY) from
    /// then.
    pub(crate) fn took_lease(&mut self, holder: String, now: Instant) {
        let side = std::mem::take(&mut self.asking);
        self.held = Some(Held { holder, side, renew_at: now.saturating_add(crate::downing::LEASE_RENEW_EVERY) });
    }

    /// A renewal was answered at `now` (renewed, or not asked): the next
    /// is due a renewal's time later.
    pub(crate) fn renew_later(&mut self, now: Instant) {
        if let Some(h) = self.held.as_mut() {
            h.renew_at = now.saturating_add(crate::downing::LEASE_RENEW_EVERY);
        }
    }

    /// This node's side no longer holds the lease.
    pub(crate) fn drop_lease(&mut self) {
        self.held = None;
    }
}
