//! Rumours this node checks before it takes them, by asking the member
//! they are about.
//!
//! Some rumours would take something from a member on nobody's evidence
//! but the teller's: a death or a leave while a downing strategy decides
//! (only a decision downs a member, and this node decides for itself: such
//! a rumour only sets it to look, and an unanswered look is its own
//! accusation), a move to another address, a newer process of the
//! member's name at another address while the old one may still run, a
//! member this node downed alone that is still heard of. Each
//! is checked with a probe of the member first, and taken or dropped by
//! the answer: the member itself confirms or refutes it. One check per member at a time,
//! and at most [`MAX_CHECKS`] at once; a rumour that finds a check under
//! way, or no room, is dropped (the teller says it again, or this node's
//! own probes find the truth).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use vigil_detector::Instant;

use crate::message::Update;

/// Checks under way at most.
pub(crate) const MAX_CHECKS: usize = 1_024;

/// What a check is for, and so what its answer means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A death or a leave of a member this node holds live, while a
    /// downing strategy decides: never taken (only a decision downs a
    /// member); if the member does not answer (directly or through
    /// others), this node accuses it itself.
    Verdict,
    /// A member's own word that it is reached at another address: taken
    /// if it answers there as itself.
    Address,
    /// A newer process of a live member's name, at another address: taken
    /// if the member this node knows does not answer; if it does, the name
    /// is contested and the newcomer refused.
    Newcomer,
    /// Another process of this node's own name, at another address: if it
    /// answers as itself, the name is contested.
    Rival,
    /// A member this node downed, on a verdict nobody followed, still
    /// heard of as that process: if it answers at its address as itself,
    /// the verdict is withdrawn.
    Withdraw,
}

/// One check: the ping (or probe) that asks, and the rumour it decides.
#[derive(Debug, Clone)]
pub(crate) struct Check {
    pub(crate) seq: u32,
    pub(crate) kind: Kind,
    pub(crate) rumour: Update,
}

/// The checks under way, by the name of the member asked (this node's own
/// name for a rival).
#[derive(Debug, Clone, Default)]
pub(crate) struct Checks {
    by_name: HashMap<Arc<str>, Check>,
    /// When a newcomer of each name was last refused (its holder
    /// answered). A newcomer refused lately is told again, not asked about
    /// again; the time is that of the answer, never of a later telling, so
    /// that a newcomer that keeps talking is asked about again once the
    /// window has passed (its holder may have gone since).
    refused: HashMap<Arc<str>, Instant>,
}

impl Checks {
    /// Whether a check of `name` is under way.
    pub(crate) fn is_checking(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Forgets the checks whose probe is no longer in flight (`in_flight`
    /// says which are): dropped with their member, they will never be
    /// answered nor fail.
    pub(crate) fn sweep(&mut self, in_flight: impl Fn(u32) -> bool) {
        self.by_name.retain(|_, c| in_flight(c.seq));
    }

    /// Whether there is room for another check.
    pub(crate) fn has_room(&self) -> bool {
        self.by_name.len() < MAX_CHECKS
    }

    /// Records a check of `name` whose probe went out as `check.seq`.
    pub(crate) fn start(&mut self, name: Arc<str>, check: Check) {
        if self.has_room() || self.by_name.contains_key(&name) {
            self.by_name.insert(name, check);
        }
    }

    /// The check of `name` whose probe is `seq`, taken off the list.
    pub(crate) fn take(&mut self, name: &str, seq: u32) -> Option<Check> {
        if self.by_name.get(name).is_some_and(|c| c.seq == seq) { self.by_name.remove(name) } else { None }
    }

    /// Records that a newcomer of `name` was refused at `now` (its holder
    /// answered); refusals older than `window` are forgotten when the list
    /// is full.
    pub(crate) fn refuse(&mut self, name: Arc<str>, now: Instant, window: Duration) {
        if self.refused.len() >= MAX_CHECKS {
            self.refused.retain(|_, at| now.saturating_duration_since(*at) < window);
        }
        if self.refused.len() < MAX_CHECKS || self.refused.contains_key(&name) {
            self.refused.insert(name, now);
        }
    }

    /// Whether a newcomer of `name` was refused less than `window` ago.
    pub(crate) fn refused_lately(&self, name: &str, now: Instant, window: Duration) -> bool {
        self.refused.get(name).is_some_and(|at| now.saturating_duration_since(*at) < window)
    }

    /// Forgets every check and refusal (this node was downed: it starts
    /// afresh).
    pub(crate) fn clear(&mut self) {
        self.by_name.clear();
        self.refused.clear();
    }
}
