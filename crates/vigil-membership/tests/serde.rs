//! With the `serde` feature, what a node reports reads back as it was
//! written: events, member views, watch reports and the node's whole view.

#![cfg(feature = "serde")]

use std::time::Duration;

use vigil_detector::Instant;
use vigil_detector::outlier::{EjectReason, Outcome};
use vigil_membership::{Config, Event, Node, NodeId, NodeView, Signal, Status, Tags};

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(v: &T) -> String {
    let text = serde_json::to_string(v).unwrap();
    let back: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(&back, v, "{text}");
    text
}

#[test]
fn events_read_back_as_they_were_written() {
    let id = NodeId::new("b", 7);
    let events = [
        Event::Up { id: id.clone(), addr: "10.0.0.2:7946".parse().unwrap(), tags: Tags::new([("zone", "a")]).unwrap() },
        Event::Dead {
            id: id.clone(),
            by: NodeId::new("c", 1),
            suspected_for: Some(Duration::from_millis(2500)),
            silent_for: None,
        },
        Event::Policy {
            id: id.clone(),
            policy: "route".into(),
            fired: true,
            level: None,
            signal: Signal::Ejected { reason: EjectReason::Consecutive5xx },
            withheld: false,
        },
        Event::Reaped { id: id.clone(), status: Status::Left },
        Event::LocalStall { late: Duration::from_millis(1500) },
    ];
    let texts: Vec<String> = events.iter().map(round_trip).collect();
    assert!(texts[0].starts_with(r#"{"event":"up","id":{"name":"b","generation":7}"#), "{}", texts[0]);
    assert!(texts[0].contains(r#""tags":{"zone":"a"}"#), "{}", texts[0]);
    assert!(texts[2].contains(r#""reason":"consecutive-5xx""#), "{}", texts[2]);
    // Tags are checked as they are read: more than 512 bytes is refused.
    let big = format!(
        r#"{{"event":"tags_updated","id":{{"name":"b","generation":1}},"tags":{{"k":"{}"}}}}"#,
        "v".repeat(600)
    );
    assert!(serde_json::from_str::<Event>(&big).is_err());
    assert_eq!(round_trip(&Outcome::Response(503)), r#""503""#);
}

#[test]
fn a_nodes_view_reads_back_as_it_was_taken() {
    let t0 = Instant::ZERO;
    let mut node = Node::new(NodeId::new("a", 1), "10.0.0.1:7946".parse().unwrap(), Config::lan(7), 1, t0).unwrap();
    node.bootstrap(t0, &[(NodeId::new("b", 1), "10.0.0.2:7946".parse().unwrap())]);
    assert!(node.record_outcome(Instant::from_millis(10), "b", Outcome::Response(200), Some(Duration::from_millis(3))));
    let view: NodeView = node.snapshot(Instant::from_millis(500));
    let text = round_trip(&view);
    assert!(text.contains(r#""model":"akka""#), "{text}");
    assert_eq!(view.watched[0].model, vigil_detector::Model::Akka);
}
