//! The node's counters, as data.

use std::ops::{Index, IndexMut};

use crate::message::MessageKind;

/// A count per message kind.
///
/// ```
/// use vigil_membership::{KindCounts, MessageKind};
///
/// let mut sent = KindCounts::default();
/// sent[MessageKind::Heartbeat] += 2;
/// sent[MessageKind::Ack] += 1;
/// assert_eq!(sent.total(), 3);
/// assert_eq!(sent.iter().find(|(k, _)| *k == MessageKind::Heartbeat), Some((MessageKind::Heartbeat, 2)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct KindCounts([u64; MessageKind::COUNT]);

impl KindCounts {
    /// The sum over kinds.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Each kind with its count, in [`MessageKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (MessageKind, u64)> + '_ {
        MessageKind::ALL.into_iter().map(|k| (k, self[k]))
    }
}

impl Index<MessageKind> for KindCounts {
    type Output = u64;
    fn index(&self, kind: MessageKind) -> &u64 {
        &self.0[kind.index()]
    }
}

impl IndexMut<MessageKind> for KindCounts {
    fn index_mut(&mut self, kind: MessageKind) -> &mut u64 {
        &mut self.0[kind.index()]
    }
}

/// Counters of one node. Every input that was dropped, and everything the
/// node could not do, is counted here: nothing is lost silently.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Stats {
    /// Messages sent, by kind.
    pub sent: KindCounts,
    /// Messages received and accepted, by kind.
    pub received: KindCounts,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes received (accepted messages).
    pub bytes_received: u64,
    /// Bytes sent, by the kind of message that carried them (piggybacked
    /// rumours count with their carrier).
    pub bytes_sent_by_kind: KindCounts,
    /// Bytes received, by the kind of message that carried them.
    pub bytes_received_by_kind: KindCounts,
    /// Malformed input dropped (including input over the size limit).
    pub rejected_malformed: u64,
    /// Packets of another cluster dropped.
    pub rejected_cluster: u64,
    /// Packets claiming to be from this node dropped.
    pub rejected_self: u64,
    /// Messages on the wrong transport dropped.
    pub rejected_transport: u64,
    /// Probes started (by monitoring or classic rounds).
    pub probes: u64,
    /// Indirect probe requests sent.
    pub indirect_probes: u64,
    /// Stream pings sent beside indirect requests
    /// ([`Config::stream_ping`](crate::Config::stream_ping)).
    pub stream_pings: u64,
    /// Probes answered by an ack that came on a stream: a stream ping's
    /// (or any, in stream-only mode).
    pub stream_acks: u64,
    /// Indirect probe requests this node could not relay (too many in
    /// flight).
    pub relays_refused: u64,
    /// Silent members that answered a probe, or sent a heartbeat while it
    /// was out (path problems).
    pub path_problems: u64,
    /// Suspicions this node started.
    pub suspicions_started: u64,
    /// Deaths this node declared.
    pub deaths_declared: u64,
    /// Suspicions that ran out without a refutation while a downing
    /// strategy decides: members found unreachable.
    pub found_unreachable: u64,
    /// Decisions the downing strategy took.
    pub downing_decisions: u64,
    /// Members this node downed by a decision (after the removal margin).
    pub members_downed: u64,
    /// Members a decision named that this node spared when carrying it
    /// out: they answered again (a calm decision), or only this node found
    /// them flapping (an unstable one).
    pub downs_spared: u64,
    /// Verdicts of this node's that nobody followed, withdrawn: the
    /// member downed, reaching the rest of its side, never downed itself.
    pub downs_withdrawn: u64,
    /// Decisions that would have downed others, put off because this node
    /// had stalled long and its picture was older than what it missed:
    /// the gate waited for it to hold still again. (A decision taken
    /// before the stall is carried out: its picture was fresh, and the
    /// members it downs learn it.)
    pub decisions_deferred_after_stall: u64,
    /// Decisions that would have downed others, put off because this
    /// node, back after downing itself, had heard nothing yet of members
    /// it knew then, and had not seen the cluster whole since.
    pub decisions_deferred_incomplete: u64,
    /// Newer processes of members a decision downed, not taken yet because
    /// this node could not reach every member then, or had not looked
    /// again since a long stall of its own (two windows at most).
    pub rejoins_deferred: u64,
    /// Decisions dropped when they came to be carried out: the side they
    /// were taken for no longer held (this node lost members of it since),
    /// so the strategy decides again once the picture holds still.
    pub decisions_abandoned: u64,
    /// Packets ignored because this node was downed and had not yet
    /// heard from the surviving side (only its members are heard then).
    pub ignored_while_downed: u64,
    /// Times this node downed itself (its side lost, the lease went to
    /// the other side, everyone was downed, or the other side's decision
    /// reached it).
    pub self_downs: u64,
    /// Times this node renewed the lease its side took
    /// (`lease-majority`, every
    /// [`LEASE_RENEW_EVERY`](crate::downing::LEASE_RENEW_EVERY)).
    pub lease_renewals: u64,
    /// Renewals that failed: the lease could not be asked (asked again
    /// later), or another side had taken it.
    pub lease_renewals_failed: u64,
    /// Times this node refuted an accusation about itself.
    pub self_refutations: u64,
    /// Times this node took a new generation because its incarnation could
    /// not grow any more.
    pub generation_renewals: u64,
    /// Suspicions of others this node saw refuted.
    pub refutations_seen: u64,
    /// Late timers (local stalls) noticed.
    pub local_stalls: u64,
    /// Calls with a time earlier than a previous call's (taken as the
    /// latest time seen).
    pub time_backwards: u64,
    /// Rumours dropped because they were stale.
    pub stale_updates: u64,
    /// Rumours about new members ignored because the member table was full.
    pub members_full: u64,
    /// Packets that could not be encoded (and were not sent).
    pub encode_failures: u64,
    /// Packets not queued because the transmit queue was full.
    pub transmit_overflows: u64,
    /// Events not queued because the event queue was full.
    pub event_overflows: u64,
    /// Rumours dropped from a full broadcast queue.
    pub broadcast_overflows: u64,
    /// Packets the runtime could not send ([`Node::handle_send_error`](crate::Node::handle_send_error)).
    pub send_errors: u64,
    /// Seeds asked again because this node knew no live member
    /// ([`Node::join`](crate::Node::join)).
    pub join_retries: u64,
    /// Reconnection attempts to members believed dead
    /// ([`Config::reconnect_interval`](crate::Config::reconnect_interval)).
    pub reconnects: u64,
    /// Calls, back after a downing, to members it knew then and has not
    /// heard alive since (one a reconnect interval, for
    /// [`Config::reconnect_timeout`](crate::Config::reconnect_timeout)).
    pub past_calls: u64,
    /// Tombstones reaped ([`Event::Reaped`](crate::Event::Reaped)).
    pub reaped: u64,
    /// Packets from strangers: their source address is not the known
    /// address of the member they claim to come from.
    pub from_strangers: u64,
    /// Strangers' rumours about members this node knows (or about this
    /// node), which change nothing.
    pub stranger_rumours_ignored: u64,
    /// Rumours checked with the member they are about before being taken
    /// (a death or leave while a strategy decides, a move, a newer process
    /// of a live member's name at another address).
    pub checks_started: u64,
    /// Checked rumours taken: the member did not answer.
    pub checks_confirmed: u64,
    /// Checked rumours dropped: the member answered.
    pub checks_refuted: u64,
    /// Rumours not checked (a check of that member under way, or too many).
    pub checks_refused: u64,
    /// Newer processes of a member's name, at another address, not taken
    /// although the member did not answer: while a strategy decides, they
    /// wait for a decision to down the old one.
    pub newcomers_deferred: u64,
    /// Members found at a new address, having answered there as
    /// themselves.
    pub addresses_moved: u64,
    /// Contested names: a newer process at another address refused while
    /// the member this node knows answers, or this node's own name held by
    /// another process that answers.
    pub name_conflicts: u64,
    /// Reachability rows (pages) sent, while a downing strategy decides.
    pub rows_sent: u64,
    /// Reachability rows (pages) taken from the members that sent them.
    pub rows_received: u64,
    /// Reachability rows refused: not from the member itself at its own
    /// address, or no strategy decides here.
    pub rows_refused: u64,
    /// Times this node told a member it downed (that still speaks) that it
    /// holds it dead.
    pub downed_told: u64,
    /// Members told, first-hand, that this node holds dead or gone members
    /// their rows say they cannot reach (a death, or a newer process).
    pub held_told: u64,
    /// Times this node, downed for want of the lease, re-formed with its
    /// own side because the side that won did not answer.
    pub reforms: u64,
    /// Members strangers proposed that were pinged to be checked.
    pub introductions_proposed: u64,
    /// Proposed members that answered and were admitted.
    pub introductions_admitted: u64,
    /// Proposed members that did not answer in time, and were dropped.
    pub introductions_expired: u64,
    /// Proposals refused: the source had spent its budget
    /// ([`Config::introductions_per_source`](crate::Config::introductions_per_source)),
    /// or too many candidates were waiting.
    pub introductions_refused: u64,
    /// Push-pulls brought forward because proposals were refused, so that
    /// what they named is learned from a known member's view.
    pub push_pulls_brought_forward: u64,
    /// Periodic push-pulls started with a digest of the view
    /// ([`Config::push_pull_digest`](crate::Config::push_pull_digest)).
    pub digests_sent: u64,
    /// Digests received that matched this node's view: nothing exchanged.
    pub digests_matched: u64,
    /// Digests received that did not: this node sent its view and asked
    /// for the sender's.
    pub digests_differed: u64,
    /// Views sent in more than one push-pull ([`Config::view_page`](crate::Config::view_page)).
    pub views_paged: u64,
    /// Members whose packets come from another address than their own
    /// (a NAT), taken once they proved it.
    pub sources_learned: u64,
}
