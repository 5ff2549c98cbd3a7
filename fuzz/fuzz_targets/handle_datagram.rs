//! Feeds arbitrary bytes to a node of a small cluster, twice: as they are,
//! and behind a valid header (magic, version, a message kind taken from the
//! first byte, the right cluster id) so the body decoder and the protocol's
//! state rules are reached. Then lets time pass and drains every output.
//!
//! Checks: no panic, and what the node sends always decodes and fits its
//! limits.

#![no_main]

use std::net::SocketAddr;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use vigil_detector::Instant;
use vigil_membership::wire::{self, MAX_DATAGRAM, MAX_STREAM};
use vigil_membership::{Config, Node, NodeId};

const CLUSTER: u64 = 0xF022;

fuzz_target!(|data: &[u8]| {
    let addr: SocketAddr = "10.0.0.1:7946".parse().unwrap();
    let peer: SocketAddr = "10.0.0.2:7946".parse().unwrap();
    let t0 = Instant::from_secs(10);
    let mut node = Node::new(NodeId::new("a", 1), addr, Config::lan(CLUSTER), 7, t0).unwrap();
    let others: Vec<(NodeId, SocketAddr)> =
        (2..8).map(|i| (NodeId::new(format!("n{i}"), 1), format!("10.0.0.{i}:7946").parse().unwrap())).collect();
    node.bootstrap(t0, &others);
    let _ = node.handle_datagram(t0, peer, data);
    let mut framed = b"VG\x01".to_vec();
    framed.push(data.first().map_or(1, |b| b % 8 + 1));
    framed.extend_from_slice(&CLUSTER.to_be_bytes());
    framed.extend_from_slice(data.get(1..).unwrap_or_default());
    let _ = node.handle_datagram(t0, peer, &framed);
    let mut now = t0;
    for _ in 0..20 {
        now = node.poll_timeout().map_or(now, |t| t.max(now)).saturating_add(Duration::from_millis(1));
        node.handle_timeout(now);
        while let Some(t) = node.poll_transmit() {
            let max = if t.stream { MAX_STREAM } else { MAX_DATAGRAM };
            assert!(t.bytes.len() <= max);
            wire::decode(&t.bytes, max).expect("the node sends only valid packets");
        }
        while node.poll_event().is_some() {}
    }
});
