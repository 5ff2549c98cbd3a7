//! The runtime's hot path without the sockets: a sealed datagram in, through
//! the protocol, and the sealed answer out, on one core.
//!
//! Run: `cargo bench -p vigil-membership --bench datagram`.
//!
//! The member knows 50 others (a 50-member cluster). Cases:
//!
//! - `ping-ack`: a sealed ping opens (envelope 3, AES-256-GCM, and the
//!   replay window), decodes, is answered; the ack is encoded and sealed
//!   into a kept buffer, as the runtime does: in → core → out;
//! - `heartbeat`: a sealed heartbeat opens and feeds the member's detector
//!   (nothing goes out);
//! - `open` and `seal`: the envelope alone, for a 40-byte packet (the
//!   `seal` bench sets it beside the ciphers it was chosen from).
//!
//! Inputs are sealed by a sender in setup (outside the measured time), each
//! with the next counter, so none is refused as a replay.

#![allow(missing_docs)]

use std::hint::black_box;
use std::net::SocketAddr;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use vigil_detector::Instant;
use vigil_membership::keyring::Keyring;
use vigil_membership::seal::{Seal, SealMode};
use vigil_membership::wire::{self, MAX_DATAGRAM, MAX_DATAGRAM_ACCEPTED};
use vigil_membership::{Config, Message, Node, NodeId, Packet};

const CLUSTER: u64 = 7;
const KEY: [u8; 32] = [0x5c; 32];

fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, (i / 250) as u8, (i % 250) as u8 + 1], 7946))
}

fn id(i: usize) -> NodeId {
    NodeId::new(format!("member-{i:02}"), 1)
}

/// Member 0, knowing members 1 to 50, its timers run for a minute.
fn member() -> (Node, Instant) {
    let t0 = Instant::from_secs(1);
    let all: Vec<(NodeId, SocketAddr)> = (0..=50).map(|i| (id(i), addr(i))).collect();
    let mut node = Node::new(id(0), addr(0), Config::lan(CLUSTER), 1, t0).unwrap();
    node.bootstrap(t0, &all);
    let mut now = t0;
    while now < Instant::from_secs(60) {
        now = node.poll_timeout().unwrap();
        node.handle_timeout(now);
        while node.poll_transmit().is_some() {}
        while node.poll_event().is_some() {}
    }
    (node, now)
}

fn seal(session: u64) -> Seal {
    Seal::new(CLUSTER, SealMode::Sealed, Some(Keyring::new(KEY)), session).unwrap()
}

fn bench(c: &mut Criterion) {
    let (mut node, now) = member();
    let mut receiver = seal(1);
    let mut sender = seal(2);
    let packet = |message: Message| {
        wire::encode(
            &Packet { cluster: CLUSTER, from: id(3), incarnation: 0, message, updates: Vec::new() },
            MAX_DATAGRAM,
        )
        .unwrap()
    };
    let ping = packet(Message::Ping { seq: 7, target: id(0) });
    let heartbeat = packet(Message::Heartbeat);
    let mut g = c.benchmark_group("datagram");
    g.throughput(Throughput::Elements(1));
    let mut buf = Vec::with_capacity(MAX_DATAGRAM + vigil_membership::seal::OVERHEAD);
    g.bench_function("ping-ack", |b| {
        b.iter_batched(
            || sender.seal(&ping),
            |sealed| {
                let plain = receiver.open(&sealed, MAX_DATAGRAM_ACCEPTED).unwrap();
                node.handle_datagram(now, addr(3), &plain).unwrap();
                let mut out = 0;
                while let Some(t) = node.poll_transmit() {
                    receiver.seal_into(&t.bytes, &mut buf);
                    out += buf.len();
                }
                black_box(out)
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("heartbeat", |b| {
        b.iter_batched(
            || sender.seal(&heartbeat),
            |sealed| {
                let plain = receiver.open(&sealed, MAX_DATAGRAM_ACCEPTED).unwrap();
                node.handle_datagram(now, addr(3), &plain).unwrap();
                while node.poll_event().is_some() {}
            },
            BatchSize::SmallInput,
        )
    });
    let bytes = [0x42u8; 40];
    g.bench_function("seal", |b| {
        b.iter(|| {
            sender.seal_into(black_box(&bytes), &mut buf);
            black_box(buf.len())
        })
    });
    g.bench_function("open", |b| {
        b.iter_batched(
            || sender.seal(&bytes),
            |sealed| black_box(receiver.open(&sealed, MAX_DATAGRAM_ACCEPTED).unwrap().len()),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
