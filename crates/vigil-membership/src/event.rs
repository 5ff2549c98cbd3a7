//! What the node reports to the application.

use std::net::SocketAddr;
use std::time::Duration;

pub use vigil_detector::health::Signal;

use crate::message::{NodeId, Status};
use crate::tags::Tags;

/// Something the node observed. Drain with
/// [`Node::poll_event`](crate::Node::poll_event).
///
/// Not `#[non_exhaustive]`, on purpose: a consumer that renders every event
/// (the agent's records) matches each by name, so a new event does not
/// compile there until it is rendered. A new variant comes with a new minor
/// version.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "event", rename_all = "snake_case"))]
pub enum Event {
    /// A member joined, or came back with a new generation or after death.
    Up {
        /// Who.
        id: NodeId,
        /// Where.
        addr: SocketAddr,
        /// Its tags as far as this node knows them (empty until a rumour
        /// carried some; [`Event::TagsUpdated`] tells of those that come
        /// later).
        tags: Tags,
    },
    /// A member is suspected.
    Suspected {
        /// Who.
        id: NodeId,
        /// The accuser.
        by: NodeId,
        /// The detector level that started it, when this node is the
        /// accuser in φ mode (in the detector model's units: φ for the φ
        /// models); `None` otherwise, and for a member never heard from.
        level: Option<f64>,
    },
    /// A suspected member refuted the suspicion.
    Refuted {
        /// Who.
        id: NodeId,
        /// Its new incarnation.
        incarnation: u64,
        /// How long this node held it suspected.
        suspected_for: Duration,
    },
    /// A member was declared dead.
    Dead {
        /// Who.
        id: NodeId,
        /// Who declared it.
        by: NodeId,
        /// How long this node held it suspected before; `None` if it did not
        /// (the verdict came first).
        suspected_for: Option<Duration>,
        /// How long since this node last had a heartbeat from it, when it
        /// watched it and had one: the detection time as this node saw it.
        silent_for: Option<Duration>,
    },
    /// A member left voluntarily.
    Left {
        /// Who.
        id: NodeId,
    },
    /// A tombstone was forgotten: a member dead for
    /// [`Config::reconnect_timeout`](crate::Config::reconnect_timeout) (this
    /// node stops trying to reconnect to it), a member that left
    /// [`Config::tombstone_timeout`](crate::Config::tombstone_timeout) ago,
    /// or the oldest tombstone beyond
    /// [`Config::max_tombstones`](crate::Config::max_tombstones). If it comes
    /// back, it is a new member ([`Event::Up`]).
    Reaped {
        /// Who.
        id: NodeId,
        /// What it was when reaped: [`Status::Dead`] or [`Status::Left`].
        status: Status,
    },
    /// Monitoring said a member was silent, but it answered a probe (or a
    /// heartbeat arrived while the probe was out): its heartbeats are not
    /// getting through, it is not dead. Also a probe of any mode that only
    /// an indirect probe answered: the direct path is broken.
    PathProblem {
        /// The member.
        id: NodeId,
        /// Its level when probing started; `None` if it was never heard
        /// from.
        level: Option<f64>,
        /// Whether only an indirect probe got an answer.
        indirect: bool,
    },
    /// A member's tags changed (a rumour at a newer incarnation carried
    /// others), or arrived for a member first known without them.
    TagsUpdated {
        /// Who.
        id: NodeId,
        /// Its tags now.
        tags: Tags,
    },
    /// This node was accused and refuted it.
    SelfRefuted {
        /// Its new incarnation.
        incarnation: u64,
    },
    /// This node took a new generation (as a restart would): its
    /// incarnation could not grow any more, or it was downed
    /// ([`Event::Downed`]). A runtime that persists the generation should
    /// persist this one.
    Renewed {
        /// The new identity.
        id: NodeId,
    },
    /// A graded policy of the application ([`Config::policies`](crate::Config::policies))
    /// fired for a member the application watches, the brake withheld it
    /// (a destructive policy, while too many members are judged so at
    /// once), or the member recovered for it. A member that comes back as a
    /// new process ([`Event::Up`]) starts afresh: its verdicts end without
    /// an event.
    Policy {
        /// The member.
        id: NodeId,
        /// The policy's name.
        policy: String,
        /// Whether it fired (`true`), or recovered or was withheld
        /// (`false`).
        fired: bool,
        /// The member's level when φ moved the policy: when it crossed, or
        /// just after the heartbeat that recovered it; `None` for a member
        /// never heard from, and when an ejection moved it.
        level: Option<f64>,
        /// Which signal moved it: φ (with the level), or outlier detection's
        /// ejection of the member or its return (with the ejection's reason).
        signal: Signal,
        /// Whether the brake withheld a destructive verdict (`fired` is then
        /// `false`; the verdict fires later if the brake lets it, and is
        /// dropped without an event if the member recovers first).
        withheld: bool,
    },
    /// Outlier detection ejected a member, from the outcomes of the
    /// application's requests to it ([`Node::record_outcome`](crate::Node::record_outcome)):
    /// stop sending it requests until it returns. Its death, its leaving or
    /// its coming up again as a new process ends the ejection too, without
    /// a [`Event::Returned`].
    Ejected {
        /// Who.
        id: NodeId,
        /// Why.
        reason: vigil_detector::outlier::EjectReason,
        /// The earliest return (at the first interval tick after).
        until: vigil_detector::Instant,
    },
    /// An ejected member is back in service.
    Returned {
        /// Who.
        id: NodeId,
    },
    /// Another member's outlier detection ejected a member, and said so
    /// ([`crate::gray`]): a gray failure seen by one client, made visible
    /// to all. Evidence, not a verdict of this node's: it downs nobody
    /// unless [`GraySharing::counts_for_downing`](crate::gray::GraySharing::counts_for_downing).
    OutlierShared {
        /// The member ejected, in the generation the verdict is about.
        id: NodeId,
        /// The member that ejected it.
        by: NodeId,
        /// The ejection's reason, by name (`consecutive-5xx`, ...).
        reason: String,
    },
    /// A member withdrew a verdict it had shared (the subject returned,
    /// or is gone).
    OutlierWithdrawn {
        /// The member it was about.
        id: NodeId,
        /// The member that withdrew it.
        by: NodeId,
    },
    /// This node noticed that it had stalled (its timers ran late): it
    /// raised its awareness and makes no accusation for a while.
    LocalStall {
        /// How late it was.
        late: Duration,
    },
    /// Two processes claim one name. On a member that knows the name: a
    /// newer process (`claimant`) at another address was refused, because
    /// the one it knows (`holder`) answers. On the claimant itself
    /// (`refused`): the name is held by `holder`, which answers where the
    /// others say; this node stops (its status is `left`) and must not
    /// carry on under that name: give it another (`--name`).
    NameConflict {
        /// The process the others keep under the name.
        holder: NodeId,
        /// Where it answers.
        holder_addr: SocketAddr,
        /// The process refused.
        claimant: NodeId,
        /// Where it is.
        claimant_addr: SocketAddr,
        /// Whether this node is the one refused.
        refused: bool,
    },
    /// A downing strategy decides ([`Config::downing`](crate::Config::downing)):
    /// a member's suspicion ran out here without a refutation. It is not
    /// dead: it is unreachable from its accusers, until it refutes
    /// ([`Event::Reachable`]) or a decision downs it or this node.
    Unreachable {
        /// Who.
        id: NodeId,
        /// Its first accuser.
        by: NodeId,
    },
    /// An unreachable member refuted its suspicion.
    Reachable {
        /// Who.
        id: NodeId,
        /// Its new incarnation.
        incarnation: u64,
    },
    /// The downing strategy decided, once the picture held still (or
    /// flapped for too long: `unstable`).
    Decided {
        /// Whether the picture flapped for too long and the decision was
        /// taken with the members that flapped counted unreachable (see
        /// [`Downing::decide_when_unstable`](crate::downing::Downing::decide_when_unstable)).
        unstable: bool,
        /// The strategy, in its text form.
        strategy: String,
        /// What it decided.
        decision: crate::downing::Decision,
        /// The members it downs, by name.
        down: Vec<String>,
        /// Why.
        reason: String,
    },
    /// A member was downed by a decision. When `id` is this node's own
    /// (former) identity, **this node is downed**: the application must
    /// stop acting as a member (give up leadership, leases, shards) at
    /// once. The node has taken a new generation ([`Event::Renewed`]
    /// follows), so fencing tokens of the old epoch are stale, and it
    /// rejoins through the surviving side when it can reach it (or, when
    /// everyone was downed, stays out until restarted). For another member,
    /// [`Event::Dead`] follows.
    Downed {
        /// Who, in the generation that was downed.
        id: NodeId,
        /// Who decided (this node, or the member whose verdict reached it).
        by: NodeId,
        /// The strategy, in its text form.
        strategy: String,
        /// Why.
        reason: String,
    },
    /// A decision of this node's downed `id`, and nobody followed it: no
    /// other member said it holds `id` dead, and two windows later
    /// (`stable_after` and the removal margin, twice) `id` answered at its
    /// address as the process downed (it heard the verdict from this node
    /// alone and reaches the rest of its side, so it never downed itself).
    /// The verdict is taken back; [`Event::Up`] follows.
    Withdrawn {
        /// The member taken back, in the generation downed.
        id: NodeId,
        /// Why.
        reason: String,
    },
}

/// One line for a person: what happened, to whom.
///
/// ```
/// use vigil_detector::outlier::EjectReason;
/// use vigil_membership::{Event, NodeId, Signal};
///
/// let e = Event::Dead { id: NodeId::new("b", 7), by: NodeId::new("c", 1), suspected_for: None, silent_for: None };
/// assert_eq!(e.to_string(), "b#7 declared dead by c");
/// let policy = |fired, withheld, signal| Event::Policy {
///     id: NodeId::new("b", 7),
///     policy: "route".into(),
///     fired,
///     level: match signal {
///         Signal::Phi { level } => level,
///         Signal::Ejected { .. } => None,
///     },
///     signal,
///     withheld,
/// };
/// let phi = Signal::Phi { level: Some(2.5) };
/// let ejection = Signal::Ejected { reason: EjectReason::Consecutive5xx };
/// assert_eq!(policy(true, false, phi).to_string(), "b#7: policy route fired (level 2.50)");
/// assert_eq!(policy(false, false, phi).to_string(), "b#7: policy route recovered (level 2.50)");
/// assert_eq!(policy(false, true, phi).to_string(), "b#7: policy route withheld by the brake (level 2.50)");
/// assert_eq!(policy(true, false, ejection).to_string(), "b#7: policy route fired: ejected (consecutive-5xx)");
/// assert_eq!(
///     policy(false, false, ejection).to_string(),
///     "b#7: policy route recovered: returned from ejection (consecutive-5xx)"
/// );
/// ```
impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let level = |l: &Option<f64>| l.map_or(String::new(), |l| format!(" (level {l:.2})"));
        match self {
            Event::Up { id, addr, .. } => write!(f, "{id} up at {addr}"),
            Event::Suspected { id, by, level: l } => write!(f, "{id} suspected by {}{}", by.name, level(l)),
            Event::Refuted { id, incarnation, suspected_for } => write!(
                f,
                "{id} refuted the suspicion after {} ms (incarnation {incarnation})",
                suspected_for.as_millis()
            ),
            Event::Dead { id, by, .. } => write!(f, "{id} declared dead by {}", by.name),
            Event::Left { id } => write!(f, "{id} left"),
            Event::Reaped { id, status } => {
                let was = if *status == Status::Left { "left" } else { "dead" };
                write!(f, "{id} reaped ({was})")
            }
            Event::PathProblem { id, level: l, indirect } => {
                let how =
                    if *indirect { "only an indirect probe answered" } else { "heartbeats lost, a probe answered" };
                write!(f, "{id}: path problem, {how}{}", level(l))
            }
            Event::TagsUpdated { id, tags } => {
                let pairs: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "{id} has new tags: {}", pairs.join(", "))
            }
            Event::SelfRefuted { incarnation } => {
                write!(f, "this member refuted an accusation (incarnation {incarnation})")
            }
            Event::Renewed { id } => write!(f, "this member took a new generation: {id}"),
            Event::OutlierShared { id, by, reason } => write!(f, "{id} ejected by {} ({reason})", by.name),
            Event::OutlierWithdrawn { id, by } => write!(f, "{id} no longer ejected by {}", by.name),
            Event::Policy { id, policy, fired, level: l, signal, withheld } => {
                let what = match (fired, withheld) {
                    (true, _) => "fired",
                    (false, true) => "withheld by the brake",
                    (false, false) => "recovered",
                };
                match signal {
                    Signal::Phi { .. } => write!(f, "{id}: policy {policy} {what}{}", level(l)),
                    Signal::Ejected { reason } if !fired && !withheld => {
                        write!(f, "{id}: policy {policy} {what}: returned from ejection ({})", reason.name())
                    }
                    Signal::Ejected { reason } => {
                        write!(f, "{id}: policy {policy} {what}: ejected ({})", reason.name())
                    }
                }
            }
            Event::Ejected { id, reason, .. } => write!(f, "{id} ejected ({})", reason.name()),
            Event::Returned { id } => write!(f, "{id} returned to service"),
            Event::LocalStall { late } => write!(f, "this member stalled: its timers ran {} ms late", late.as_millis()),
            Event::NameConflict { holder, holder_addr, claimant, claimant_addr, refused: true } => write!(
                f,
                "this member ({claimant} at {claimant_addr}) stops: its name is held by {holder} at {holder_addr}, which answers"
            ),
            Event::NameConflict { holder, holder_addr, claimant, claimant_addr, refused: false } => write!(
                f,
                "{claimant} at {claimant_addr} refused: the name is held by {holder} at {holder_addr}, which answers"
            ),
            Event::Unreachable { id, by } => write!(f, "{id} unreachable from {}", by.name),
            Event::Reachable { id, incarnation } => write!(f, "{id} reachable again (incarnation {incarnation})"),
            Event::Decided { strategy, decision, down, reason, .. } => {
                let whom = if down.is_empty() { String::new() } else { format!(", downing {}", down.join(", ")) };
                write!(f, "{strategy} decided {decision}{whom}: {reason}")
            }
            Event::Downed { id, by, strategy, reason } => {
                write!(f, "{id} downed by {} ({strategy}: {reason})", by.name)
            }
            Event::Withdrawn { id, reason } => write!(f, "{id} taken back: {reason}"),
        }
    }
}
