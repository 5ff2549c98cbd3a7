//! The JSON shapes of the API and of the agent's event lines: members,
//! this member, watched members' detectors, events.

use std::time::Duration;

use serde_json::{Value, json};
use vigil_detector::outlier::HostReport;
use vigil_membership::{Event, MemberView, PolicyState, Status, Tags, WatchReport};
use vigil_net::Snapshot;

/// A status as the API names it.
pub(crate) fn status_name(s: Status) -> &'static str {
    match s {
        Status::Alive => "alive",
        Status::Suspect => "suspect",
        Status::Dead => "dead",
        Status::Left => "left",
    }
}

/// Milliseconds, as a float with microsecond resolution.
fn ms(d: Duration) -> f64 {
    d.as_micros() as f64 / 1e3
}

/// Tags as a JSON object.
pub(crate) fn tags_json(tags: &Tags) -> Value {
    tags.iter().map(|(k, v)| (k.to_owned(), json!(v))).collect::<serde_json::Map<_, _>>().into()
}

/// A number for JSON: finite, or `null` (φ can be infinite, and JSON has no
/// infinity).
fn finite(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

/// What this member's detector knows about a member it watches.
pub(crate) fn watch_json(w: &WatchReport) -> Value {
    let policies: Vec<Value> = w
        .policies
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "threshold": p.threshold,
                "state": match p.state {
                    PolicyState::Trusted => "trusted",
                    PolicyState::Crossed { .. } => "crossed",
                    PolicyState::Suspected { .. } => "fired",
                    PolicyState::Withheld { .. } => "withheld",
                },
                "time_to_threshold_ms": p.time_to_threshold.map(ms),
            })
        })
        .collect();
    json!({
        "model": w.model,
        "heard": w.heard,
        "phi": if w.heard { finite(w.level) } else { Value::Null },
        "phi_capped": w.heard && !w.level.is_finite(),
        "heartbeats": w.heartbeats,
        "mean_interval_ms": w.mean.map(ms),
        "std_dev_ms": w.std_dev.map(ms),
        "silent_ms": w.silent_for.map(ms),
        "on_ring": w.on_ring,
        "by_app": w.by_app,
        "policies": policies,
    })
}

/// Outlier detection's view of a member.
fn outlier_json(s: &Snapshot, r: &HostReport) -> Value {
    json!({
        "ejected": r.ejected.is_some(),
        "reason": r.ejected.map(|(reason, _)| reason.name()),
        "returns_in_ms": r.ejected.map(|(_, until)| ms(until.saturating_duration_since(s.node.now))),
        "ejections": r.ejections,
        "multiplier": r.multiplier,
        "consecutive_errors": r.consecutive.0,
        "success_rate": r.success_rate.map(|(rate, _)| rate),
        "requests": r.success_rate.map_or(0, |(_, n)| n),
        "latency_ms": r.latency_ms.map(|(l, _)| l),
    })
}

/// One member as the snapshot's member sees it.
pub(crate) fn member_json(s: &Snapshot, m: &MemberView) -> Value {
    let outlier = s.node.outliers.get(&*m.id.name);
    member_json_with(s, m, outlier)
}

/// One member, with outlier detection's report on it already found.
fn member_json_with(s: &Snapshot, m: &MemberView, outlier: Option<&HostReport>) -> Value {
    let watched = s.node.watched.iter().find(|w| w.name == *m.id.name && w.generation == m.id.generation);
    let outlier = outlier.map(|r| outlier_json(s, r));
    json!({
        "name": &*m.id.name,
        "generation": m.id.generation,
        "incarnation": m.incarnation,
        "status": status_name(m.status),
        "address": m.addr.to_string(),
        "status_for_ms": ms(s.node.now.saturating_duration_since(m.since)),
        "tags": tags_json(&m.tags),
        "watched": watched.map(watch_json),
        "outlier": outlier,
    })
}

/// Every member, by name.
pub(crate) fn members_json(s: &Snapshot) -> Value {
    let mut members: Vec<&MemberView> = s.node.members.iter().collect();
    members.sort_by(|a, b| a.id.name.cmp(&b.id.name));
    // One lookup table, not a search per member.
    json!({
        "node": &*s.node.id.name,
        "unix_ms": s.unix_ms,
        "members": members.iter().map(|m| member_json_with(s, m, s.node.outliers.get(&*m.id.name))).collect::<Vec<_>>(),
    })
}

/// Why the member is not ready, if it is not: it has not joined (it was
/// given members to join through and knows no live one), or it has not
/// converged (a member is suspected, or a watched one not yet heard).
pub(crate) fn not_ready(s: &Snapshot, expects_peers: bool) -> Vec<String> {
    let mut why = Vec::new();
    if expects_peers && !s.node.members.iter().any(|m| m.status == Status::Alive) {
        why.push("not joined: no live member known yet".to_owned());
    }
    for m in s.node.members.iter().filter(|m| m.status == Status::Suspect) {
        why.push(format!("not converged: {} is suspected", m.id.name));
    }
    for w in s.node.watched.iter().filter(|w| !w.heard) {
        why.push(format!("not converged: no heartbeat from {} yet", w.name));
    }
    why
}

/// This member.
pub(crate) fn self_json(s: &Snapshot, sealed: bool, address: &str, expects_peers: bool) -> Value {
    let mut by_status = serde_json::Map::new();
    for st in [Status::Alive, Status::Suspect, Status::Dead, Status::Left] {
        by_status.insert(status_name(st).into(), json!(s.node.members.iter().filter(|m| m.status == st).count()));
    }
    let why = not_ready(s, expects_peers);
    json!({
        "name": &*s.node.id.name,
        "generation": s.node.id.generation,
        "incarnation": s.node.incarnation,
        "address": address,
        "tags": tags_json(&s.node.tags),
        "sealed": sealed,
        "uptime_ms": ms(s.uptime),
        "awareness": s.node.awareness,
        "max_awareness": s.node.max_awareness,
        "members": by_status,
        "watching": s.node.watched.iter().map(|w| w.name.clone()).collect::<Vec<_>>(),
        "queues": {
            "broadcasts": s.node.queued_broadcasts,
            "suspicions": s.node.suspicions,
            "probes": s.node.probes_in_flight,
            "relays": s.node.relays_in_flight,
        },
        "recorded_arrivals": s.node.recorded_arrivals,
        "ready": why.is_empty(),
        "not_ready": why,
        "version": env!("CARGO_PKG_VERSION"),
    })
}

/// An event as a JSON object; `None` for events of no interest outside.
pub(crate) fn event_json(node: &str, unix_ms: u64, e: &Event) -> Option<Value> {
    let ms = |d: &std::time::Duration| d.as_secs_f64() * 1e3;
    let v = match e {
        Event::Up { id, addr, tags } => json!({
            "event": "up",
            "member": id.name,
            "generation": id.generation,
            "addr": addr.to_string(),
            "tags": tags_json(tags),
        }),
        Event::TagsUpdated { id, tags } => {
            json!({"event": "tags", "member": id.name, "generation": id.generation, "tags": tags_json(tags)})
        }
        Event::Policy { id, policy, fired, level, signal, withheld } => json!({
            "event": "policy",
            "member": id.name,
            "generation": id.generation,
            "policy": policy,
            "fired": fired,
            "withheld": withheld,
            "signal": if matches!(signal, vigil_membership::Signal::Phi { .. }) { "phi" } else { "ejection" },
            "reason": match signal {
                vigil_membership::Signal::Ejected { reason } => Some(reason.name()),
                _ => None,
            },
            "phi": level.map(finite),
        }),
        Event::Suspected { id, by, level } => json!({
            "event": "suspected",
            "member": id.name,
            "generation": id.generation,
            "by": by.name,
            "phi": level.map(finite),
        }),
        Event::Refuted { id, incarnation, suspected_for } => json!({
            "event": "refuted",
            "member": id.name,
            "generation": id.generation,
            "incarnation": incarnation,
            "suspected_ms": ms(suspected_for),
        }),
        Event::Dead { id, by, suspected_for, silent_for } => json!({
            "event": "dead",
            "member": id.name,
            "generation": id.generation,
            "by": by.name,
            "suspected_ms": suspected_for.as_ref().map(ms),
            "silent_ms": silent_for.as_ref().map(ms),
        }),
        Event::Left { id } => json!({"event": "left", "member": id.name, "generation": id.generation}),
        Event::PathProblem { id, level, indirect } => json!({
            "event": "path_problem",
            "member": id.name,
            "generation": id.generation,
            "phi": level.map(finite),
            "indirect": indirect,
        }),
        Event::SelfRefuted { incarnation } => {
            json!({"event": "self_refuted", "member": node, "incarnation": incarnation})
        }
        Event::Renewed { id } => json!({"event": "renewed", "member": id.name, "generation": id.generation}),
        Event::LocalStall { late } => {
            json!({"event": "local_stall", "member": node, "late_ms": late.as_secs_f64() * 1e3})
        }
        Event::Ejected { id, reason, .. } => {
            json!({"event": "ejected", "member": id.name, "generation": id.generation, "reason": reason.name()})
        }
        Event::Returned { id } => json!({"event": "returned", "member": id.name, "generation": id.generation}),
        Event::Reaped { id, status } => json!({
            "event": "reaped",
            "member": id.name,
            "generation": id.generation,
            "was": if *status == vigil_membership::Status::Left { "left" } else { "dead" },
        }),
        _ => return None,
    };
    let mut v = v;
    let obj = v.as_object_mut()?;
    obj.insert("ts_ms".into(), json!(unix_ms));
    obj.insert("node".into(), json!(node));
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_become_json_objects_with_their_fields() {
        let id = vigil_membership::NodeId::new("b", 7);
        let by = vigil_membership::NodeId::new("c", 1);
        let v = event_json("a", 1000, &Event::Suspected { id: id.clone(), by, level: Some(8.5) }).unwrap();
        assert_eq!(v["event"], "suspected");
        assert_eq!((v["member"].as_str(), v["by"].as_str(), v["phi"].as_f64()), (Some("b"), Some("c"), Some(8.5)));
        assert_eq!((v["node"].as_str(), v["ts_ms"].as_u64()), (Some("a"), Some(1000)));
        let v = event_json("a", 1, &Event::Left { id: id.clone() }).unwrap();
        assert_eq!((v["event"].as_str(), v["generation"].as_u64()), (Some("left"), Some(7)));
        let zone = Tags::new([("zone", "a")]).unwrap();
        let v = event_json("a", 1, &Event::TagsUpdated { id: id.clone(), tags: zone.clone() }).unwrap();
        assert_eq!((v["event"].as_str(), v["tags"]["zone"].as_str()), (Some("tags"), Some("a")));
        let addr = "10.0.0.1:7946".parse().unwrap();
        let v = event_json("a", 1, &Event::Up { id: id.clone(), addr, tags: zone.clone() }).unwrap();
        assert_eq!((v["event"].as_str(), v["tags"]["zone"].as_str()), (Some("up"), Some("a")));
        // An infinite level is not valid JSON: it becomes null.
        let by = vigil_membership::NodeId::new("c", 1);
        let v = event_json("a", 1, &Event::Suspected { id, by, level: Some(f64::INFINITY) }).unwrap();
        assert!(v["phi"].is_null());
        assert!(serde_json::to_string(&v).is_ok());
    }
}
