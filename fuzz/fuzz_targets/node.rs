//! Drives one node of a small cluster with a sequence of calls read from the
//! fuzzer's bytes: datagrams and stream messages (raw, and behind a valid
//! header so the body decoder and the protocol's state rules are reached),
//! timeouts with time moving forwards and backwards, joins, leaves,
//! bootstraps, watches and request outcomes, in either mode, with or without
//! the application's graded policies (on φ, on ejection, destructive), with
//! datagrams or streams only.
//!
//! Checks: no panic; what the node sends always decodes, fits its transport
//! and says its kind; push-pulls and digests go on streams, and so does
//! everything in stream-only mode; otherwise the only datagram kinds on a
//! stream are a stream ping and its ack, which carry no rumours; the node's
//! epoch (generation, incarnation) never goes down; a node that left has no
//! timer.

#![no_main]

use std::net::SocketAddr;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use vigil_detector::Instant;
use vigil_detector::outlier::Outcome;
use vigil_membership::wire::{self, MAX_DATAGRAM, MAX_STREAM};
use vigil_membership::{Config, MessageKind, Node, NodeId};

const CLUSTER: u64 = 0xF022;

fn addr(i: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, i], 7946))
}

/// A cursor over the fuzzer's bytes.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn bytes(&mut self) -> &[u8] {
        let n = usize::from(self.byte().unwrap_or(0)).min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let first = input.byte().unwrap_or(0);
    let mut config = if first & 1 == 1 { Config::classic_lan(CLUSTER) } else { Config::lan(CLUSTER) };
    if first & 2 == 2 {
        let policies = ["route=2,ejection", "drain=ejection", "evict=8,dwell=1s,destructive"];
        config.policies = policies.iter().map(|p| p.parse().expect("valid")).collect();
    }
    config.stream_only = first & 4 == 4;
    let stream_only = config.stream_only;
    let t0 = Instant::from_secs(10);
    let mut node = Node::new(NodeId::new("a", 1), addr(1), config, 7, t0).unwrap();
    let others: Vec<(NodeId, SocketAddr)> = (2..8).map(|i| (NodeId::new(format!("n{i}"), 1), addr(i))).collect();
    node.bootstrap(t0, &others);
    let mut now = t0;
    let mut epoch = (node.id().generation, node.incarnation());
    let mut left = false;
    while let Some(op) = input.byte() {
        let from = addr(2 + op % 6);
        match op >> 4 {
            0 | 1 => {
                let _ = node.handle_datagram(now, from, input.bytes());
            }
            2 => {
                let _ = node.handle_stream(now, from, input.bytes());
            }
            3..=5 => {
                // Behind a valid header: magic, version, a kind, the cluster.
                let mut framed = vec![b'V', b'G', wire::VERSION, input.byte().unwrap_or(1) % 8 + 1];
                let mut c = CLUSTER;
                while c >= 0x80 {
                    framed.push((c as u8 & 0x7F) | 0x80);
                    c >>= 7;
                }
                framed.push(c as u8);
                framed.extend_from_slice(input.bytes());
                let _ = if op >> 4 == 5 {
                    node.handle_stream(now, from, &framed)
                } else {
                    node.handle_datagram(now, from, &framed)
                };
            }
            6..=9 => {
                let ms = u64::from(input.byte().unwrap_or(0)) * 50;
                now = now.saturating_add(Duration::from_millis(ms));
                node.handle_timeout(now);
            }
            10 => {
                // Time goes backwards.
                let ms = u64::from(input.byte().unwrap_or(0)) * 20;
                now = now.saturating_sub(Duration::from_millis(ms));
                node.handle_timeout(now);
            }
            11 => {
                if let Some(t) = node.poll_timeout() {
                    now = t.max(now);
                    node.handle_timeout(now);
                }
            }
            12 => node.join(now, &[addr(2), addr(3)]),
            13 => {
                node.leave(now);
                left = true;
            }
            14 => {
                let more = [(NodeId::new(format!("m{}", op & 15), 1), addr(100 + (op & 15)))];
                node.bootstrap(now, &more);
            }
            _ => {
                let name = format!("n{}", 2 + op % 6);
                match op & 3 {
                    0 => node.watch(now, &name),
                    1 => node.unwatch(now, &name),
                    // An outcome of a request to the member: a status (any
                    // number), or a local-origin failure, with a latency.
                    2 => {
                        let b = input.byte().unwrap_or(0);
                        let outcome = match b % 4 {
                            0 => Outcome::Response(u16::from(b) * 4),
                            1 => Outcome::Timeout,
                            2 => Outcome::ConnectFailed,
                            _ => Outcome::Response(503),
                        };
                        let latency = (b > 200).then(|| Duration::from_millis(u64::from(b) << 4));
                        let _ = node.record_outcome(now, &name, outcome, latency);
                    }
                    // Tags from the input: a key, then a value of its bytes
                    // (lossily UTF-8), whatever fits the limits.
                    _ => {
                        let key = format!("k{}", input.byte().unwrap_or(0) % 4);
                        let value = String::from_utf8_lossy(input.bytes()).chars().take(200).collect::<String>();
                        if let Ok(tags) = vigil_membership::Tags::new([(key, value)]) {
                            node.set_tags(now, tags);
                        }
                    }
                }
            }
        }
        let current = (node.id().generation, node.incarnation());
        assert!(current >= epoch, "epoch went from {epoch:?} to {current:?}");
        epoch = current;
        assert!(!(left && node.poll_timeout().is_some()), "a node that left has no timer");
        while let Some(t) = node.poll_transmit() {
            let max = if t.stream { MAX_STREAM } else { MAX_DATAGRAM };
            assert!(t.bytes.len() <= max);
            let p = wire::decode(&t.bytes, max).expect("the node sends only valid packets");
            assert_eq!(p.message.kind(), t.kind);
            if t.kind.is_stream() || stream_only {
                assert!(t.stream, "{} sent as a datagram", t.kind);
            } else if t.stream {
                assert!(matches!(t.kind, MessageKind::Ping | MessageKind::Ack), "{} sent on a stream", t.kind);
                assert!(p.updates.is_empty(), "a stream {} carries {} rumours", t.kind, p.updates.len());
            }
        }
        while node.poll_event().is_some() {}
    }
});
