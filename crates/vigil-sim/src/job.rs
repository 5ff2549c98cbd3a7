//! The jobs of the simulation loop: what happens at a virtual time. The
//! components return the jobs they need done, and the loop runs each when
//! its time comes.

use vigil_detector::Instant;

/// Something to do at a virtual time.
#[derive(Debug, Clone)]
pub(crate) enum Job {
    /// A message reaches a machine.
    Deliver {
        /// The receiving machine.
        to: usize,
        /// The sending machine.
        from: usize,
        /// What is on the wire.
        bytes: Vec<u8>,
        /// A stream message rather than a datagram.
        stream: bool,
    },
    /// A slow machine handles a message that reached it earlier.
    Process {
        /// The receiving machine.
        to: usize,
        /// The sending machine.
        from: usize,
        /// What is on the wire.
        bytes: Vec<u8>,
        /// A stream message rather than a datagram.
        stream: bool,
    },
    /// A machine's timer fires, if its timer generation still matches
    /// (a later timer supersedes it).
    Wake {
        /// The machine.
        machine: usize,
        /// The timer generation it was set with.
        generation: u64,
    },
    /// Scenario entry `k` starts.
    FaultStart(usize),
    /// Scenario entry `k` ends.
    FaultEnd(usize),
    /// A step of a key rotation or rollout at a machine.
    Key(usize, KeyStep),
    /// An attacker's copy of a datagram, sent again.
    Replayed {
        /// The receiving machine.
        to: usize,
        /// The machine that sent the original.
        from: usize,
        /// The captured bytes.
        bytes: Vec<u8>,
    },
    /// Scenario entry `k` (a forgery) sends its next datagrams.
    Forge(usize, u64),
    /// The impostor of scenario entry `k` goes down (it left a moment ago).
    ImpostorGone(usize),
    /// Scenario entry `k` (errors) reports a failed request.
    Errors(usize),
    /// Check whether the cluster converged.
    Check,
    /// Check whether the cluster converged after partition `k` ended, until
    /// the deadline.
    HealCheck(usize, Instant),
    /// Take a snapshot of the totals.
    Snapshot,
}

/// A step of a key rotation or of a rollout of sealing at one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyStep {
    /// Install key number `k` of the cluster's keys.
    Install(usize),
    /// Seal with key `k`.
    Use(usize),
    /// Remove key `k`.
    Remove(usize),
    /// Take the cluster's first key (a plaintext node then opens sealed
    /// packets).
    TakeKey,
    /// Go staged.
    Stage,
    /// Go sealed.
    Seal,
}
