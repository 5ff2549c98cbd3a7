//! The typed event contract: what an agent says happened, one JSON object
//! per event, on standard output, in `/v1/events` (server-sent events and
//! the history behind them), in `vigil cluster` and in the `vigil events`
//! client, which reads it back into the same type.
//!
//! One conversion from the runtime's event ([`EventRecord::from_event`])
//! matches every [`Event`] variant by name, without a catch-all: a new event
//! in the protocol does not compile here until it is given a record, so it
//! can never vanish silently from the lines, the stream and the history.
//!
//! Every object carries `ts_ms` (milliseconds since the Unix epoch, when
//! this agent learned it), `node` (the agent's member) and `event` (the
//! kind); the other fields are the kind's. Levels that are not finite (φ
//! beyond what a float holds) are `null`, as JSON has no infinity.
//!
//! ```
//! use vigil_agent::record::{EventRecord, What};
//! use vigil_net::{ClusterEvent, Event, NodeId};
//!
//! let e = ClusterEvent { unix_ms: 1_000, event: Event::Left { id: NodeId::new("b", 7) } };
//! let r = EventRecord::from_event("a", &e);
//! let line = serde_json::to_string(&r)?;
//! assert_eq!(line, r#"{"ts_ms":1000,"node":"a","event":"left","member":"b","generation":7}"#);
//! // A client reads the line back into the same record.
//! assert_eq!(serde_json::from_str::<EventRecord>(&line)?, r);
//! assert!(matches!(r.what, What::Left { .. }));
//! assert_eq!(r.to_string(), "b left");
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use vigil_net::{ClusterEvent, Event, Signal, Status, Tags};

/// The version of the event records' format: raised when a field changes
/// meaning or goes away, not when one is added. Served in `/v1/self` and
/// the API's description.
///
/// Version 2: the `missed` event of `/v1/events` carries `count` and `sink`
/// like the standard output's (it was `{"missed": N}`); `policy` events
/// say which signal moved them (`signal`, `reason`) and whether the brake
/// withholds them (`withheld`), and their `phi` is `null` when ejection
/// moved them.
pub const FORMAT_VERSION: u32 = 2;

/// One event as the agent passes it on. See the module documentation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventRecord {
    /// When this agent learned it, milliseconds since the Unix epoch.
    pub ts_ms: u64,
    /// The agent's member.
    pub node: String,
    /// What happened.
    #[serde(flatten)]
    pub what: What,
}

/// What happened, by kind (`event`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum What {
    /// A member joined, or came back with a new generation or after death.
    Up {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
        /// Where it is reached.
        addr: String,
        /// Its tags as far as this member knows them.
        tags: BTreeMap<String, String>,
    },
    /// A member is suspected.
    Suspected {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
        /// The accuser.
        by: String,
        /// The level that started it, when this member is the accuser;
        /// `null` otherwise.
        phi: Option<f64>,
    },
    /// A suspected member refuted the suspicion.
    Refuted {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
        /// Its new incarnation.
        incarnation: u64,
        /// How long this member held it suspected, milliseconds.
        suspected_ms: f64,
    },
    /// A member was declared dead.
    Dead {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
        /// Who declared it.
        by: String,
        /// How long this member held it suspected before, milliseconds;
        /// `null` when the verdict came first.
        suspected_ms: Option<f64>,
        /// How long since this member last had a heartbeat from it,
        /// milliseconds, when it watched it: the detection time as this
        /// member saw it.
        silent_ms: Option<f64>,
    },
    /// A member left voluntarily.
    Left {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
    },
    /// A tombstone was forgotten: a member dead for the reconnect timeout,
    /// or one that left the tombstone timeout ago.
    Reaped {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
        /// What it was.
        was: Gone,
    },
    /// A silent member answered a probe, or only an indirect probe got an
    /// answer: the path, not the member, is the problem.
    PathProblem {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
        /// Its level when probing started.
        phi: Option<f64>,
        /// Whether only an indirect probe got an answer.
        indirect: bool,
    },
    /// A member's tags changed.
    Tags {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
        /// Its tags now.
        tags: BTreeMap<String, String>,
    },
    /// A graded policy fired for a watched member, or the member recovered
    /// for it.
    Policy {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
        /// The policy's name.
        policy: String,
        /// Whether it fired (`true`) or the member recovered (`false`).
        fired: bool,
        /// Whether the brake withholds it (a destructive policy, with too
        /// many members fired at once): do not act yet.
        withheld: bool,
        /// Which signal moved it.
        signal: PolicySignal,
        /// Why outlier detection ejected the member, when that moved it.
        reason: Option<String>,
        /// The member's level, when φ moved it; `null` for a member never
        /// heard from.
        phi: Option<f64>,
    },
    /// Outlier detection ejected a member, from the outcomes of requests to
    /// it: stop sending it requests until it returns.
    Ejected {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
        /// Why (`consecutive-5xx`, `success-rate`, ...).
        reason: String,
    },
    /// An ejected member is back in service.
    Returned {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
    },
    /// Another member's outlier detection ejected a member and shared its
    /// verdict: evidence of a gray failure, not this agent's verdict.
    OutlierShared {
        /// The member ejected.
        member: String,
        /// Its generation.
        generation: u64,
        /// The member that ejected it.
        by: String,
        /// Why (`consecutive-5xx`, `latency`, ...).
        reason: String,
    },
    /// A member withdrew a verdict it had shared.
    OutlierWithdrawn {
        /// The member it was about.
        member: String,
        /// Its generation.
        generation: u64,
        /// The member that withdrew it.
        by: String,
    },
    /// This member was accused and refuted it.
    SelfRefuted {
        /// This member.
        member: String,
        /// Its new incarnation.
        incarnation: u64,
    },
    /// This member's incarnations ran out, and it took a new generation.
    Renewed {
        /// This member.
        member: String,
        /// The new generation.
        generation: u64,
    },
    /// This member noticed that it stalled (its timers ran late).
    LocalStall {
        /// This member.
        member: String,
        /// How late, milliseconds.
        late_ms: f64,
    },
    /// While a downing strategy decides: this member finds a member
    /// unreachable itself (its probes failed, and the suspicion ran out
    /// without a refutation). It is not dead.
    Unreachable {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
        /// The member that finds it unreachable (this one).
        by: String,
    },
    /// A member this member found unreachable answers again.
    Reachable {
        /// Who.
        member: String,
        /// Its generation.
        generation: u64,
        /// Its new incarnation.
        incarnation: u64,
    },
    /// The downing strategy decided who survives, once the picture held
    /// still.
    Decided {
        /// This member.
        member: String,
        /// Whether members flapped for too long and the decision counted
        /// them unreachable.
        unstable: bool,
        /// The strategy, in its text form.
        strategy: String,
        /// `nothing`, `down-unreachable` (this side survives),
        /// `down-reachable` (this side is downed), `down-all` or
        /// `ask-lease`.
        decision: String,
        /// The members it downs.
        down: Vec<String>,
        /// Why.
        reason: String,
    },
    /// A member was downed by a decision. When `member` is this agent's
    /// own, **this member is downed**: stop acting as a member (leaders,
    /// leases, shards) at once; it has taken a new generation and rejoins
    /// through the surviving side.
    Downed {
        /// Who.
        member: String,
        /// The generation that was downed.
        generation: u64,
        /// Who decided.
        by: String,
        /// The strategy, in its text form.
        strategy: String,
        /// Why.
        reason: String,
    },
    /// This member took back a member its own decision downed: nobody
    /// followed the verdict (no other member held it dead), and it
    /// answered as the process downed two windows later. `up` follows.
    Withdrawn {
        /// Who.
        member: String,
        /// The generation downed, and taken back.
        generation: u64,
        /// Why.
        reason: String,
    },
    /// Two processes claim one name. `refused` false: another process
    /// (`claimant_addr`) tried to take the name of `member`, which still
    /// answers at `holder_addr`, and was refused. `refused` true: **this
    /// agent is the one refused** — its name is held by the process at
    /// `holder_addr` — and it stops (exit status 2): give it another name.
    NameConflict {
        /// The name.
        member: String,
        /// The generation the cluster keeps.
        generation: u64,
        /// Where the process the cluster keeps answers.
        holder_addr: String,
        /// The refused process's generation.
        claimant_generation: u64,
        /// Where the refused process is.
        claimant_addr: String,
        /// Whether this agent is the one refused.
        refused: bool,
    },
    /// Events that were not passed on.
    Missed {
        /// How many.
        count: u64,
        /// Where they went missing.
        sink: Sink,
    },
}

/// Which signal moved a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicySignal {
    /// φ from heartbeats reached the threshold, or came back under it.
    Phi,
    /// Outlier detection ejected the member, or returned it to service.
    Ejection,
}

/// What a reaped member was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Gone {
    /// Dead.
    Dead,
    /// Left.
    Left,
}

/// Where events went missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sink {
    /// Standard output's reader did not keep up.
    Stdout,
    /// The agent itself read the member's events too late.
    Stream,
    /// A client of `/v1/events` asked for events the history no longer
    /// keeps, or fell behind the live stream.
    History,
}

impl Sink {
    /// The name, as in the JSON and the metrics' `sink` label.
    pub fn name(self) -> &'static str {
        match self {
            Sink::Stdout => "stdout",
            Sink::Stream => "stream",
            Sink::History => "history",
        }
    }
}

/// Milliseconds, as a float with microsecond resolution.
fn ms(d: Duration) -> f64 {
    d.as_micros() as f64 / 1e3
}

/// A level for JSON: finite, or `None`.
fn finite(level: Option<f64>) -> Option<f64> {
    level.filter(|l| l.is_finite())
}

fn tag_map(tags: &Tags) -> BTreeMap<String, String> {
    tags.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
}

impl EventRecord {
    /// The record of `e`, an event of the member named `node`.
    pub fn from_event(node: &str, e: &ClusterEvent) -> EventRecord {
        EventRecord { ts_ms: e.unix_ms, node: node.to_owned(), what: What::from(&e.event, node) }
    }

    /// The record saying `count` events went missing at `sink`.
    pub fn missed(node: &str, ts_ms: u64, count: u64, sink: Sink) -> EventRecord {
        EventRecord { ts_ms, node: node.to_owned(), what: What::Missed { count, sink } }
    }

    /// The member the event is about (this agent's own for its own
    /// events); `None` for `missed`.
    pub fn member(&self) -> Option<&str> {
        self.what.member()
    }

    /// The kind, as in the JSON's `event`.
    pub fn kind(&self) -> &'static str {
        self.what.kind()
    }

    /// The record as one line of JSON.
    pub fn to_line(&self) -> String {
        // A record holds strings, numbers and maps of strings only: it
        // always serializes.
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

impl What {
    /// The record of `e`, an event of the member named `node`. Every event
    /// by name: a new one does not compile until it has a record.
    fn from(e: &Event, node: &str) -> What {
        let id = |i: &vigil_net::NodeId| (i.name.clone(), i.generation);
        match e {
            Event::Up { id: i, addr, tags } => {
                let (member, generation) = id(i);
                What::Up { member, generation, addr: addr.to_string(), tags: tag_map(tags) }
            }
            Event::Suspected { id: i, by, level } => {
                let (member, generation) = id(i);
                What::Suspected { member, generation, by: by.name.clone(), phi: finite(*level) }
            }
            Event::Refuted { id: i, incarnation, suspected_for } => {
                let (member, generation) = id(i);
                What::Refuted { member, generation, incarnation: *incarnation, suspected_ms: ms(*suspected_for) }
            }
            Event::Dead { id: i, by, suspected_for, silent_for } => {
                let (member, generation) = id(i);
                What::Dead {
                    member,
                    generation,
                    by: by.name.clone(),
                    suspected_ms: suspected_for.map(ms),
                    silent_ms: silent_for.map(ms),
                }
            }
            Event::Left { id: i } => {
                let (member, generation) = id(i);
                What::Left { member, generation }
            }
            Event::Reaped { id: i, status } => {
                let (member, generation) = id(i);
                let was = if *status == Status::Left { Gone::Left } else { Gone::Dead };
                What::Reaped { member, generation, was }
            }
            Event::PathProblem { id: i, level, indirect } => {
                let (member, generation) = id(i);
                What::PathProblem { member, generation, phi: finite(*level), indirect: *indirect }
            }
            Event::TagsUpdated { id: i, tags } => {
                let (member, generation) = id(i);
                What::Tags { member, generation, tags: tag_map(tags) }
            }
            Event::Policy { id: i, policy, fired, level, signal, withheld } => {
                let (member, generation) = id(i);
                let (signal, reason) = match signal {
                    Signal::Phi { .. } => (PolicySignal::Phi, None),
                    Signal::Ejected { reason } => (PolicySignal::Ejection, Some(reason.name().to_owned())),
                };
                What::Policy {
                    member,
                    generation,
                    policy: policy.clone(),
                    fired: *fired,
                    withheld: *withheld,
                    signal,
                    reason,
                    phi: finite(*level),
                }
            }
            Event::Ejected { id: i, reason, .. } => {
                let (member, generation) = id(i);
                What::Ejected { member, generation, reason: reason.name().to_owned() }
            }
            Event::Returned { id: i } => {
                let (member, generation) = id(i);
                What::Returned { member, generation }
            }
            Event::OutlierShared { id: i, by, reason } => {
                let (member, generation) = id(i);
                What::OutlierShared { member, generation, by: by.name.clone(), reason: reason.clone() }
            }
            Event::OutlierWithdrawn { id: i, by } => {
                let (member, generation) = id(i);
                What::OutlierWithdrawn { member, generation, by: by.name.clone() }
            }
            Event::SelfRefuted { incarnation } => {
                What::SelfRefuted { member: node.to_owned(), incarnation: *incarnation }
            }
            Event::Renewed { id: i } => {
                let (member, generation) = id(i);
                What::Renewed { member, generation }
            }
            Event::LocalStall { late } => What::LocalStall { member: node.to_owned(), late_ms: ms(*late) },
            Event::Unreachable { id: i, by } => {
                let (member, generation) = id(i);
                What::Unreachable { member, generation, by: by.name.clone() }
            }
            Event::Reachable { id: i, incarnation } => {
                let (member, generation) = id(i);
                What::Reachable { member, generation, incarnation: *incarnation }
            }
            Event::Decided { unstable, strategy, decision, down, reason } => What::Decided {
                member: node.to_owned(),
                unstable: *unstable,
                strategy: strategy.clone(),
                decision: decision.to_string(),
                down: down.clone(),
                reason: reason.clone(),
            },
            Event::NameConflict { holder, holder_addr, claimant, claimant_addr, refused } => What::NameConflict {
                member: holder.name.clone(),
                generation: holder.generation,
                holder_addr: holder_addr.to_string(),
                claimant_generation: claimant.generation,
                claimant_addr: claimant_addr.to_string(),
                refused: *refused,
            },
            Event::Withdrawn { id: i, reason } => {
                let (member, generation) = id(i);
                What::Withdrawn { member, generation, reason: reason.clone() }
            }
            Event::Downed { id: i, by, strategy, reason } => {
                let (member, generation) = id(i);
                What::Downed {
                    member,
                    generation,
                    by: by.name.clone(),
                    strategy: strategy.clone(),
                    reason: reason.clone(),
                }
            }
        }
    }

    /// The member the event is about; `None` for `missed`.
    pub fn member(&self) -> Option<&str> {
        match self {
            What::Up { member, .. }
            | What::Suspected { member, .. }
            | What::Refuted { member, .. }
            | What::Dead { member, .. }
            | What::Left { member, .. }
            | What::Reaped { member, .. }
            | What::PathProblem { member, .. }
            | What::Tags { member, .. }
            | What::Policy { member, .. }
            | What::Ejected { member, .. }
            | What::Returned { member, .. }
            | What::OutlierShared { member, .. }
            | What::OutlierWithdrawn { member, .. }
            | What::SelfRefuted { member, .. }
            | What::Renewed { member, .. }
            | What::LocalStall { member, .. }
            | What::Unreachable { member, .. }
            | What::Reachable { member, .. }
            | What::Decided { member, .. }
            | What::NameConflict { member, .. }
            | What::Downed { member, .. }
            | What::Withdrawn { member, .. } => Some(member),
            What::Missed { .. } => None,
        }
    }

    /// The kind, as in the JSON's `event`.
    pub fn kind(&self) -> &'static str {
        match self {
            What::Up { .. } => "up",
            What::Suspected { .. } => "suspected",
            What::Refuted { .. } => "refuted",
            What::Dead { .. } => "dead",
            What::Left { .. } => "left",
            What::Reaped { .. } => "reaped",
            What::PathProblem { .. } => "path_problem",
            What::Tags { .. } => "tags",
            What::Policy { .. } => "policy",
            What::Ejected { .. } => "ejected",
            What::Returned { .. } => "returned",
            What::OutlierShared { .. } => "outlier_shared",
            What::OutlierWithdrawn { .. } => "outlier_withdrawn",
            What::SelfRefuted { .. } => "self_refuted",
            What::Renewed { .. } => "renewed",
            What::LocalStall { .. } => "local_stall",
            What::Unreachable { .. } => "unreachable",
            What::Reachable { .. } => "reachable",
            What::Decided { .. } => "decided",
            What::Downed { .. } => "downed",
            What::Withdrawn { .. } => "withdrawn",
            What::NameConflict { .. } => "name_conflict",
            What::Missed { .. } => "missed",
        }
    }
}

/// One sentence for a person, from the agent's point of view (`vigil
/// cluster` and `vigil events` print it). Names are printed as given; a
/// terminal printer escapes them.
impl fmt::Display for EventRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phi = |l: &Option<f64>| l.map(|l| format!(" (φ {l:.2})")).unwrap_or_default();
        let node = &self.node;
        match &self.what {
            What::Up { member, addr, .. } => write!(f, "{node} sees {member} up at {addr}"),
            What::Suspected { member, by, phi: l, .. } => write!(f, "{member} is suspected by {by}{}", phi(l)),
            What::Refuted { member, incarnation, suspected_ms, .. } => write!(
                f,
                "{member} refuted the suspicion (incarnation {incarnation}, suspected for {suspected_ms:.0} ms)"
            ),
            What::Dead { member, by, silent_ms, .. } => {
                write!(f, "{member} is declared dead by {by}")?;
                match silent_ms {
                    Some(s) => write!(f, " ({s:.0} ms after its last heartbeat here)"),
                    None => Ok(()),
                }
            }
            What::Left { member, .. } => write!(f, "{member} left"),
            What::Reaped { member, was, .. } => {
                let was = if *was == Gone::Left { "left" } else { "dead" };
                write!(f, "{member} is forgotten ({was} long enough)")
            }
            What::PathProblem { member, indirect, phi: l, .. } => {
                let how = if *indirect { "only an indirect probe answered" } else { "silent, but it answered a probe" };
                write!(f, "{member}: a path problem ({how}){}", phi(l))
            }
            What::Tags { member, tags, .. } => {
                let pairs: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "{member} has new tags: {}", pairs.join(", "))
            }
            What::Policy { member, policy, fired, withheld, signal, reason, phi: l, .. } => {
                let what = match (fired, withheld) {
                    (true, false) => "fired",
                    (true, true) => "would fire, withheld by the brake",
                    (false, _) => "recovered",
                };
                match (signal, reason) {
                    (PolicySignal::Ejection, Some(r)) => write!(f, "{member}: policy {policy} {what} (ejected: {r})"),
                    (PolicySignal::Ejection, None) => write!(f, "{member}: policy {policy} {what} (returned)"),
                    (PolicySignal::Phi, _) => write!(f, "{member}: policy {policy} {what}{}", phi(l)),
                }
            }
            What::Ejected { member, reason, .. } => write!(f, "{member} is ejected ({reason})"),
            What::Returned { member, .. } => write!(f, "{member} is back in service"),
            What::OutlierShared { member, by, reason, .. } => write!(f, "{member} is ejected by {by} ({reason})"),
            What::OutlierWithdrawn { member, by, .. } => write!(f, "{member} is no longer ejected by {by}"),
            What::SelfRefuted { member, incarnation } => {
                write!(f, "{member} itself was accused and refuted it (incarnation {incarnation})")
            }
            What::Renewed { member, generation } => write!(f, "{member} took a new generation ({generation})"),
            What::LocalStall { member, late_ms } => write!(f, "{member} itself stalled ({late_ms:.0} ms late)"),
            What::Unreachable { member, by, .. } => write!(f, "{member} is unreachable from {by}"),
            What::Reachable { member, incarnation, .. } => {
                write!(f, "{member} is reachable again (incarnation {incarnation})")
            }
            What::Decided { member, strategy, decision, down, reason, .. } => {
                let what = match decision.as_str() {
                    "down-unreachable" => "its side survives",
                    "down-reachable" => "its side is downed",
                    "down-all" => "everyone is downed",
                    "ask-lease" => "the lease decides",
                    _ => "nothing to down",
                };
                write!(f, "{member} decided ({strategy}): {what}")?;
                if !down.is_empty() {
                    write!(f, ", downing {}", down.join(", "))?;
                }
                write!(f, ": {reason}")
            }
            What::Downed { member, by, strategy, reason, .. } if member == node => {
                write!(f, "{member} itself is downed by {by} ({strategy}: {reason}): it must stop acting as a member")
            }
            What::Downed { member, by, strategy, reason, .. } => {
                write!(f, "{member} is downed by {by} ({strategy}: {reason})")
            }
            What::Withdrawn { member, reason, .. } => write!(f, "{member} is taken back: {reason}"),
            What::NameConflict { member, holder_addr, claimant_addr, refused: true, .. } => write!(
                f,
                "{node} stops: its name {member} is held by the process at {holder_addr}, which answers (this one is at \
                 {claimant_addr}); give this member another --name"
            ),
            What::NameConflict { member, holder_addr, claimant_addr, .. } => write!(
                f,
                "a process at {claimant_addr} claims the name {member}, held by the process at {holder_addr}, which \
                 answers: refused"
            ),
            What::Missed { count, sink } => write!(f, "{count} events missed ({})", sink.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_net::NodeId;

    fn record(event: Event) -> EventRecord {
        EventRecord::from_event("a", &ClusterEvent { unix_ms: 1000, event })
    }

    #[test]
    fn records_carry_their_fields_and_read_back() {
        let id = NodeId::new("b", 7);
        let by = NodeId::new("c", 1);
        let r = record(Event::Suspected { id: id.clone(), by: by.clone(), level: Some(8.5) });
        let v: serde_json::Value = serde_json::from_str(&r.to_line()).unwrap();
        assert_eq!(v["event"], "suspected");
        assert_eq!((v["member"].as_str(), v["by"].as_str(), v["phi"].as_f64()), (Some("b"), Some("c"), Some(8.5)));
        assert_eq!((v["node"].as_str(), v["ts_ms"].as_u64()), (Some("a"), Some(1000)));
        // An infinite level is not valid JSON: it becomes null.
        let r = record(Event::Suspected { id: id.clone(), by, level: Some(f64::INFINITY) });
        let v: serde_json::Value = serde_json::from_str(&r.to_line()).unwrap();
        assert!(v["phi"].is_null());
        let zone = Tags::new([("zone", "a")]).unwrap();
        let addr = "10.0.0.1:7946".parse().unwrap();
        let r = record(Event::Up { id: id.clone(), addr, tags: zone });
        let v: serde_json::Value = serde_json::from_str(&r.to_line()).unwrap();
        assert_eq!((v["event"].as_str(), v["tags"]["zone"].as_str()), (Some("up"), Some("a")));
        assert_eq!(r.to_string(), "a sees b up at 10.0.0.1:7946");
        let r = record(Event::Dead {
            id,
            by: NodeId::new("c", 1),
            suspected_for: None,
            silent_for: Some(Duration::from_micros(4_250_500)),
        });
        let v: serde_json::Value = serde_json::from_str(&r.to_line()).unwrap();
        assert_eq!((v["silent_ms"].as_f64(), v["suspected_ms"].is_null()), (Some(4250.5), true));
        assert_eq!(serde_json::from_value::<EventRecord>(v).unwrap(), r);
        let r = record(Event::LocalStall { late: Duration::from_millis(1500) });
        assert_eq!(r.member(), Some("a"), "the agent's own events name it");
        let m = EventRecord::missed("a", 5, 12, Sink::Stdout);
        assert_eq!(m.to_line(), r#"{"ts_ms":5,"node":"a","event":"missed","count":12,"sink":"stdout"}"#);
        assert_eq!(m.member(), None);
    }

    #[test]
    fn an_unknown_kind_is_refused_when_read_back() {
        let line = r#"{"ts_ms":1,"node":"a","event":"exploded","member":"b"}"#;
        assert!(serde_json::from_str::<EventRecord>(line).is_err());
    }
}
