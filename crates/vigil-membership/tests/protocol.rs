//! The protocol's rules, checked on a few nodes driven by hand, and
//! untrusted input fed to a node.

use std::net::SocketAddr;
use std::time::Duration;

use proptest::prelude::*;
use vigil_detector::Instant;
use vigil_membership::wire::{self, MAX_DATAGRAM, MAX_STREAM};
use vigil_membership::{Config, Event, Message, Mode, Node, NodeId, Packet, Rejected, Status, Update};

const CLUSTER: u64 = 77;

fn addr(i: usize) -> SocketAddr {
    format!("10.0.0.{}:7946", i + 1).parse().unwrap()
}

fn id(i: usize) -> NodeId {
    NodeId::new(format!("n{i}"), 1)
}

fn cluster(n: usize, config: Config) -> Vec<Node> {
    let t0 = Instant::from_secs(1);
    let all: Vec<(NodeId, SocketAddr)> = (0..n).map(|i| (id(i), addr(i))).collect();
    (0..n)
        .map(|i| {
            let mut node = Node::new(id(i), addr(i), config.clone(), i as u64, t0).unwrap();
            node.bootstrap(t0, &all);
            node
        })
        .collect()
}

fn packet(from: usize, message: Message, updates: Vec<Update>) -> Vec<u8> {
    let p = Packet { cluster: CLUSTER, from: id(from), incarnation: 0, message, updates };
    wire::encode(&p, MAX_STREAM).unwrap()
}

fn events(node: &mut Node) -> Vec<Event> {
    std::iter::from_fn(|| node.poll_event()).collect()
}

#[test]
fn an_accused_node_refutes_with_a_higher_incarnation() {
    let mut nodes = cluster(3, Config::lan(CLUSTER));
    let now = Instant::from_secs(2);
    let accusation = Update { id: id(0), addr: addr(0), incarnation: 0, status: Status::Suspect, from: id(1) };
    nodes[0].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![accusation])).unwrap();
    assert_eq!(nodes[0].incarnation(), 1);
    assert!(events(&mut nodes[0]).contains(&Event::SelfRefuted { incarnation: 1 }));
    assert_eq!(nodes[0].stats().self_refutations, 1);
    // Node 2 suspected node 0, then hears the refutation.
    let s = Update { id: id(0), addr: addr(0), incarnation: 0, status: Status::Suspect, from: id(1) };
    nodes[2].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![s])).unwrap();
    assert_eq!(nodes[2].status_of("n0").unwrap().2, Status::Suspect);
    let alive = Update { id: id(0), addr: addr(0), incarnation: 1, status: Status::Alive, from: id(0) };
    nodes[2].handle_datagram(now, addr(0), &packet(0, Message::Gossip, vec![alive])).unwrap();
    assert_eq!(nodes[2].status_of("n0").unwrap(), (id(0), 1, Status::Alive));
    assert!(events(&mut nodes[2]).iter().any(|e| matches!(e, Event::Refuted { incarnation: 1, .. })));
}

#[test]
fn a_new_generation_supersedes_every_rumour_about_the_old_one() {
    let mut nodes = cluster(3, Config::lan(CLUSTER));
    let now = Instant::from_secs(2);
    let dead = Update { id: id(2), addr: addr(2), incarnation: 5, status: Status::Dead, from: id(1) };
    nodes[0].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![dead.clone()])).unwrap();
    assert_eq!(nodes[0].status_of("n2").unwrap().2, Status::Dead);
    // The restarted process, generation 2, incarnation 0.
    let reborn = NodeId::new("n2", 2);
    let p =
        Packet { cluster: CLUSTER, from: reborn.clone(), incarnation: 0, message: Message::Gossip, updates: vec![] };
    nodes[0].handle_datagram(now, addr(2), &wire::encode(&p, MAX_DATAGRAM).unwrap()).unwrap();
    assert_eq!(nodes[0].status_of("n2").unwrap(), (reborn.clone(), 0, Status::Alive));
    // A late accusation about generation 1 loses.
    nodes[0].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![dead])).unwrap();
    assert_eq!(nodes[0].status_of("n2").unwrap(), (reborn, 0, Status::Alive));
    assert!(nodes[0].stats().stale_updates >= 1);
}

#[test]
fn a_leave_is_announced_and_distinct_from_death() {
    let mut nodes = cluster(3, Config::lan(CLUSTER));
    let now = Instant::from_secs(2);
    nodes[1].leave(now);
    let out: Vec<_> = std::iter::from_fn(|| nodes[1].poll_transmit()).collect();
    assert!(!out.is_empty());
    for t in out {
        let to = (0..3).find(|&i| addr(i) == t.to).unwrap();
        nodes[to].handle_datagram(now, addr(1), &t.bytes).unwrap();
        assert_eq!(nodes[to].status_of("n1").unwrap().2, Status::Left);
        assert!(events(&mut nodes[to]).contains(&Event::Left { id: id(1) }));
    }
    assert_eq!(nodes[1].poll_timeout(), None, "a node that left does nothing more");
}

#[test]
fn suspicion_timeouts_follow_lifeguard_and_memberlist() {
    // Classic mode at n = 100 with memberlist's LAN constants: min = 4 ×
    // log10(100) × 1 s = 8 s, max = 6 × min = 48 s, k = 2 confirmations
    // expected; the timer starts at 48 s, and one confirmation brings it to
    // max − ln 2 / ln 3 × (max − min) = 22.76 s.
    let mut nodes = cluster(100, Config::classic_lan(CLUSTER));
    let t = Instant::from_secs(2);
    let accuse =
        |from: usize| Update { id: id(5), addr: addr(5), incarnation: 0, status: Status::Suspect, from: id(from) };
    nodes[0].handle_datagram(t, addr(1), &packet(1, Message::Gossip, vec![accuse(1)])).unwrap();
    let fires_at = |node: &mut Node| {
        // Step until node 5 is declared dead.
        for _ in 0..100_000 {
            let now = node.poll_timeout().unwrap();
            node.handle_timeout(now);
            while node.poll_transmit().is_some() {}
            if node.status_of("n5").unwrap().2 == Status::Dead {
                return now;
            }
        }
        panic!("never declared dead");
    };
    let mut a = nodes.remove(0);
    let mut b = a.clone();
    let dead_at = fires_at(&mut a);
    assert!((dead_at.saturating_duration_since(t).as_secs_f64() - 48.0).abs() < 1e-3, "{dead_at:?}");
    b.handle_datagram(t, addr(2), &packet(2, Message::Gossip, vec![accuse(2)])).unwrap();
    let dead_at = fires_at(&mut b);
    let expected = 48.0 - (2f64.ln() / 3f64.ln()) * 40.0;
    assert!((dead_at.saturating_duration_since(t).as_secs_f64() - expected).abs() < 1e-3, "{dead_at:?} vs {expected}");
}

#[test]
fn the_lan_presets_validate_and_bad_configs_are_named() {
    Config::lan(1).validate().unwrap();
    Config::wan(1).validate().unwrap();
    assert_eq!(Config::classic_lan(1).mode, Mode::Classic);
    let mut c = Config::lan(1);
    c.observers = 0;
    assert_eq!(c.validate().unwrap_err().field, "observers");
    let mut c = Config::lan(1);
    c.suspicion_max = Duration::from_millis(1);
    assert!(c.validate().unwrap_err().to_string().contains("suspicion_max"));
    // Durations are bounded so that scaling them (by local health, by the
    // cluster size) cannot overflow.
    let mut c = Config::lan(1);
    c.probe_timeout = Duration::from_secs(u64::MAX / 4);
    assert_eq!(c.validate().unwrap_err().field, "probe_timeout");
}

#[test]
fn junk_and_foreign_packets_are_rejected_and_counted() {
    let mut nodes = cluster(2, Config::lan(CLUSTER));
    let now = Instant::from_secs(2);
    assert!(matches!(nodes[0].handle_datagram(now, addr(1), b"hello"), Err(Rejected::Malformed(_))));
    let foreign = Packet { cluster: 9, from: id(1), incarnation: 0, message: Message::Gossip, updates: vec![] };
    let bytes = wire::encode(&foreign, MAX_DATAGRAM).unwrap();
    assert_eq!(nodes[0].handle_datagram(now, addr(1), &bytes), Err(Rejected::WrongCluster { cluster: 9 }));
    let from_me = packet(0, Message::Gossip, vec![]);
    assert_eq!(nodes[0].handle_datagram(now, addr(1), &from_me), Err(Rejected::FromSelf));
    let s = nodes[0].stats();
    assert_eq!((s.rejected_malformed, s.rejected_cluster, s.rejected_self), (1, 1, 1));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn accusations_with_any_incarnation_are_survived(inc in any::<u64>()) {
        let mut nodes = cluster(2, Config::lan(CLUSTER));
        let now = Instant::from_secs(2);
        let accusation = Update { id: id(0), addr: addr(0), incarnation: inc, status: Status::Dead, from: id(1) };
        nodes[0].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![accusation])).unwrap();
        prop_assert!(nodes[0].incarnation() >= inc.min(u64::MAX - 1));
    }

    #[test]
    fn time_going_backwards_is_survived(steps in prop::collection::vec((0u64..20_000, any::<bool>()), 1..60)) {
        // Times jump back and forth (a clock stepped by the runtime); the
        // node neither panics nor sends anything invalid.
        let mut nodes = cluster(4, Config::lan(CLUSTER));
        let hb = packet(1, Message::Heartbeat, vec![]);
        for (ms, datagram) in steps {
            let now = Instant::from_millis(ms);
            if datagram {
                nodes[0].handle_datagram(now, addr(1), &hb).unwrap();
            } else {
                nodes[0].handle_timeout(now);
            }
            let _ = nodes[0].poll_timeout();
            while let Some(t) = nodes[0].poll_transmit() {
                let max = if t.stream { MAX_STREAM } else { MAX_DATAGRAM };
                prop_assert!(wire::decode(&t.bytes, max).is_ok());
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_outputs_stay_valid(data in prop::collection::vec(any::<u8>(), 0..600), kind in 1u8..9) {
        let mut nodes = cluster(6, Config::lan(CLUSTER));
        let node = &mut nodes[0];
        let t0 = Instant::from_secs(2);
        let _ = node.handle_datagram(t0, addr(1), &data);
        let mut framed = b"VG\x01".to_vec();
        framed.push(kind);
        framed.extend_from_slice(&CLUSTER.to_be_bytes());
        framed.extend_from_slice(&data);
        let _ = node.handle_datagram(t0, addr(1), &framed);
        let mut now = t0;
        for _ in 0..10 {
            now = node.poll_timeout().unwrap().max(now).saturating_add(Duration::from_millis(1));
            node.handle_timeout(now);
            while let Some(t) = node.poll_transmit() {
                let max = if t.stream { MAX_STREAM } else { MAX_DATAGRAM };
                prop_assert!(t.bytes.len() <= max);
                prop_assert!(wire::decode(&t.bytes, max).is_ok());
            }
        }
    }
}
