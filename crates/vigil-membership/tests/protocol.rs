//! The protocol's rules, checked on a few nodes driven by hand (the
//! harness's `Cluster`), and untrusted input fed to a node.

mod harness;

use std::net::SocketAddr;
use std::time::Duration;

use harness::{CLUSTER, Cluster, addr, events, id, packet, status};
use proptest::prelude::*;
use vigil_detector::Instant;
use vigil_membership::wire::{self, MAX_DATAGRAM, MAX_STREAM};
use vigil_membership::{
    Config, Event, ForceLeaveError, Message, MessageKind, Mode, Node, NodeId, Packet, Rejected, Status, Update,
};

#[test]
fn an_accused_node_refutes_with_a_higher_incarnation() {
    let mut c = Cluster::new(3, Config::lan(CLUSTER));
    let now = Instant::from_secs(2);
    let accusation =
        Update { id: id(0), addr: addr(0), incarnation: 0, status: Status::Suspect, from: id(1), tags: None };
    c.nodes[0].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![accusation])).unwrap();
    assert_eq!(c.nodes[0].incarnation(), 1);
    assert!(events(&mut c.nodes[0]).contains(&Event::SelfRefuted { incarnation: 1 }));
    assert_eq!(c.nodes[0].stats().self_refutations, 1);
    // Node 2 suspected node 0, then hears the refutation.
    let s = Update { id: id(0), addr: addr(0), incarnation: 0, status: Status::Suspect, from: id(1), tags: None };
    c.nodes[2].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![s])).unwrap();
    assert_eq!(status(&c.nodes[2], "n0"), Status::Suspect);
    let alive = Update { id: id(0), addr: addr(0), incarnation: 1, status: Status::Alive, from: id(0), tags: None };
    c.nodes[2].handle_datagram(now, addr(0), &packet(0, Message::Gossip, vec![alive])).unwrap();
    let n0 = c.nodes[2].member("n0").unwrap();
    assert_eq!((n0.id, n0.incarnation, n0.status), (id(0), 1, Status::Alive));
    assert!(events(&mut c.nodes[2]).iter().any(|e| matches!(e, Event::Refuted { incarnation: 1, .. })));
}

#[test]
fn a_new_generation_supersedes_every_rumour_about_the_old_one() {
    let mut c = Cluster::new(3, Config::lan(CLUSTER));
    let now = Instant::from_secs(2);
    let dead = Update { id: id(2), addr: addr(2), incarnation: 5, status: Status::Dead, from: id(1), tags: None };
    c.nodes[0].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![dead.clone()])).unwrap();
    assert_eq!(status(&c.nodes[0], "n2"), Status::Dead);
    // The restarted process, generation 2, incarnation 0.
    let reborn = NodeId::new("n2", 2);
    let p =
        Packet { cluster: CLUSTER, from: reborn.clone(), incarnation: 0, message: Message::Gossip, updates: vec![] };
    c.nodes[0].handle_datagram(now, addr(2), &wire::encode(&p, MAX_DATAGRAM).unwrap()).unwrap();
    let n2 = c.nodes[0].member("n2").unwrap();
    assert_eq!((n2.id, n2.incarnation, n2.status), (reborn.clone(), 0, Status::Alive));
    // A late accusation about generation 1 loses.
    c.nodes[0].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![dead])).unwrap();
    let n2 = c.nodes[0].member("n2").unwrap();
    assert_eq!((n2.id, n2.incarnation, n2.status), (reborn, 0, Status::Alive));
    assert!(c.nodes[0].stats().stale_updates >= 1);
}

#[test]
fn a_leave_is_announced_and_distinct_from_death() {
    let mut c = Cluster::new(3, Config::lan(CLUSTER));
    let now = Instant::from_secs(2);
    c.set_clock(now);
    c.nodes[1].leave(now);
    let out: Vec<_> = std::iter::from_fn(|| c.nodes[1].poll_transmit()).collect();
    assert!(!out.is_empty());
    for t in out {
        let to = (0..3).find(|&i| addr(i) == t.to).unwrap();
        c.deliver(to, 1, &t).unwrap();
        assert_eq!(status(&c.nodes[to], "n1"), Status::Left);
        assert!(events(&mut c.nodes[to]).contains(&Event::Left { id: id(1) }));
    }
    assert_eq!(c.nodes[1].poll_timeout(), None, "a node that left does nothing more");
}

#[test]
fn a_dead_member_forced_out_is_left_everywhere_and_one_alive_after_all_refutes() {
    let mut c = Cluster::new(4, Config::lan(CLUSTER));
    c.run_for(Duration::from_secs(3));
    c.crash(3);
    c.run_for(Duration::from_secs(30));
    for i in 0..3 {
        assert_eq!(status(&c.nodes[i], "n3"), Status::Dead, "n{i}");
    }
    // Only a member believed dead can be forced out.
    let now = c.now();
    assert_eq!(c.nodes[0].force_leave(now, "n1", false), Err(ForceLeaveError::NotDead("n1".into(), Status::Alive)));
    assert_eq!(c.nodes[0].force_leave(now, "nobody", false), Err(ForceLeaveError::Unknown("nobody".into())));
    c.clear_events();
    c.nodes[0].force_leave(now, "n3", false).unwrap();
    c.run_for(Duration::from_secs(2));
    for i in 0..3 {
        assert_eq!(status(&c.nodes[i], "n3"), Status::Left, "n{i} heard n3 was forced out");
        assert!(c.events(i).contains(&Event::Left { id: id(3) }), "n{i}");
    }
    // No more reconnect attempts to it: the tombstone is a leave's.
    let reconnects = c.nodes[1].stats().reconnects;
    c.run_for(Duration::from_secs(60));
    assert_eq!(c.nodes[1].stats().reconnects, reconnects, "n1 tried to reconnect to a member that left");
    // Pruned on the node that asks: forgotten at once.
    let now = c.now();
    c.nodes[0].force_leave(now, "n3", true).unwrap();
    assert!(c.nodes[0].member("n3").is_none());
    assert!(c.events(0).iter().any(|e| matches!(e, Event::Reaped { id: i, status: Status::Left } if *i == id(3))));
    // n3 was only paused: forced out, it refutes and is alive again where
    // it is still known.
    c.revive(3);
    c.run_for(Duration::from_secs(20));
    assert_eq!(status(&c.nodes[1], "n3"), Status::Alive, "n3 refuted being forced out");
}

#[test]
fn suspicion_timeouts_follow_lifeguard_and_memberlist() {
    // Classic mode at n = 100 with memberlist's LAN constants: min = 4 ×
    // log10(100) × 1 s = 8 s, max = 6 × min = 48 s, k = 2 confirmations
    // expected; the timer starts at 48 s, and one confirmation brings it to
    // max − ln 2 / ln 3 × (max − min) = 22.76 s.
    let mut c = Cluster::new(100, Config::classic_lan(CLUSTER));
    let t = Instant::from_secs(2);
    let accuse = |from: usize| Update {
        id: id(5),
        addr: addr(5),
        incarnation: 0,
        status: Status::Suspect,
        from: id(from),
        tags: None,
    };
    c.nodes[0].handle_datagram(t, addr(1), &packet(1, Message::Gossip, vec![accuse(1)])).unwrap();
    let fires_at = |node: &mut Node| {
        // Step until node 5 is declared dead.
        for _ in 0..100_000 {
            let now = node.poll_timeout().unwrap();
            node.handle_timeout(now);
            while node.poll_transmit().is_some() {}
            if status(node, "n5") == Status::Dead {
                return now;
            }
        }
        panic!("never declared dead");
    };
    let mut a = c.nodes.remove(0);
    let mut b = a.clone();
    let dead_at = fires_at(&mut a);
    assert!((dead_at.saturating_duration_since(t).as_secs_f64() - 48.0).abs() < 1e-3, "{dead_at:?}");
    b.handle_datagram(t, addr(2), &packet(2, Message::Gossip, vec![accuse(2)])).unwrap();
    let dead_at = fires_at(&mut b);
    let expected = 48.0 - (2f64.ln() / 3f64.ln()) * 40.0;
    assert!((dead_at.saturating_duration_since(t).as_secs_f64() - expected).abs() < 1e-3, "{dead_at:?} vs {expected}");
}

#[test]
fn the_presets_validate_and_bad_configs_are_named() {
    Config::lan(1).validate().unwrap();
    Config::wan(1).validate().unwrap();
    assert_eq!(Config::classic_lan(1).mode, Mode::Classic);
    let mut c = Config::lan(1);
    c.observers = 0;
    assert_eq!(c.validate().unwrap_err().field(), "observers");
    for page in [0, 1023, MAX_STREAM + 1] {
        let mut c = Config::lan(1);
        c.view_page = page;
        let err = c.validate().unwrap_err();
        assert_eq!(err.field(), "view_page");
        assert!(err.to_string().contains(&page.to_string()), "the value is named: {err}");
    }
    assert_eq!(Config::classic_lan(1).view_page, MAX_STREAM, "memberlist sends its state as one message");
    let t0 = Instant::from_secs(1);
    let err = Node::new(id(0), addr(0), c, 1, t0).unwrap_err();
    assert_eq!(err.field(), "observers");
    let long = NodeId::new("x".repeat(65), 1);
    assert_eq!(Node::new(long, addr(0), Config::lan(1), 1, t0).unwrap_err().field(), "name");
}

#[test]
fn junk_and_foreign_packets_are_rejected_and_counted() {
    let mut c = Cluster::new(2, Config::lan(CLUSTER));
    let now = Instant::from_secs(2);
    assert!(matches!(c.nodes[0].handle_datagram(now, addr(1), b"hello"), Err(Rejected::Malformed(_))));
    let foreign = Packet { cluster: 9, from: id(1), incarnation: 0, message: Message::Gossip, updates: vec![] };
    let bytes = wire::encode(&foreign, MAX_DATAGRAM).unwrap();
    assert_eq!(c.nodes[0].handle_datagram(now, addr(1), &bytes), Err(Rejected::WrongCluster { cluster: 9 }));
    let from_me = packet(0, Message::Gossip, vec![]);
    assert_eq!(c.nodes[0].handle_datagram(now, addr(1), &from_me), Err(Rejected::FromSelf));
    let s = c.nodes[0].stats();
    assert_eq!((s.rejected_malformed, s.rejected_cluster, s.rejected_self), (1, 1, 1));
}

#[test]
fn an_accusation_at_the_largest_incarnation_is_refuted_with_a_new_generation() {
    let mut c = Cluster::new(3, Config::lan(CLUSTER));
    let now = Instant::from_secs(2);
    for status in [Status::Suspect, Status::Dead] {
        let accusation = Update { id: id(0), addr: addr(0), incarnation: u64::MAX, status, from: id(1), tags: None };
        c.nodes[2].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![accusation.clone()])).unwrap();
        if status == Status::Suspect {
            c.nodes[0].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![accusation])).unwrap();
        }
    }
    // n0 cannot go above u64::MAX: it takes generation 2, incarnation 0.
    assert_eq!((c.nodes[0].id().generation, c.nodes[0].incarnation()), (2, 0));
    assert!(events(&mut c.nodes[0]).contains(&Event::Renewed { id: NodeId::new("n0", 2) }));
    assert_eq!(c.nodes[0].stats().generation_renewals, 1);
    // n2 believed generation 1 dead; the new generation beats that.
    assert_eq!(status(&c.nodes[2], "n0"), Status::Dead);
    let out: Vec<_> = std::iter::from_fn(|| c.nodes[0].poll_transmit()).collect();
    let refutation = out.iter().find(|t| t.to == addr(1)).expect("the accuser is told directly");
    c.set_clock(now);
    c.deliver(2, 0, refutation).unwrap();
    let n0 = c.nodes[2].member("n0").unwrap();
    assert_eq!((n0.id.generation, n0.status), (2, Status::Alive));
    assert!(n0.epoch() > (1, u64::MAX));
    // And leaving afterwards cannot overflow either.
    c.nodes[0].leave(now);
    assert_eq!(c.nodes[0].poll_timeout(), None);
}

#[test]
fn input_is_size_checked_before_decoding_and_transports_are_not_mixed() {
    let mut c = Cluster::new(2, Config::lan(CLUSTER));
    let now = Instant::from_secs(2);
    // Datagrams are accepted up to the protocol's limit, whatever this
    // node's own budget, and refused by size beyond it.
    let limit = wire::MAX_DATAGRAM_ACCEPTED;
    let huge = vec![0u8; limit + 1];
    assert_eq!(
        c.nodes[0].handle_datagram(now, addr(1), &huge),
        Err(Rejected::Malformed(wire::WireError::TooLarge { len: limit + 1, max: limit }))
    );
    assert_eq!(
        c.nodes[0].handle_datagram(now, addr(1), &vec![0u8; MAX_DATAGRAM + 1]),
        Err(Rejected::Malformed(wire::WireError::BadMagic))
    );
    let pp = packet(1, Message::PushPull { reply: false, members: vec![] }, vec![]);
    assert_eq!(
        c.nodes[0].handle_datagram(now, addr(1), &pp),
        Err(Rejected::WrongTransport { kind: MessageKind::PushPull })
    );
    let digest = packet(1, Message::Digest { view: 1 }, vec![]);
    assert_eq!(
        c.nodes[0].handle_datagram(now, addr(1), &digest),
        Err(Rejected::WrongTransport { kind: MessageKind::Digest })
    );
    // Any message may come on a stream: a stream ping, a stream-only member.
    let hb = packet(1, Message::Heartbeat, vec![]);
    c.nodes[0].handle_stream(now, addr(1), &hb).unwrap();
    c.nodes[0].handle_stream(now, addr(1), &pp).unwrap();
    let s = c.nodes[0].stats();
    assert_eq!((s.rejected_malformed, s.rejected_transport), (2, 2));
    assert_eq!((s.received[MessageKind::PushPull], s.received.total()), (1, 2));
}

/// Suspicions raised anywhere in the cluster (taken from the queues).
fn suspicions(c: &mut Cluster) -> usize {
    (0..c.nodes.len()).flat_map(|i| c.events(i)).filter(|e| matches!(e, Event::Suspected { .. })).count()
}

#[test]
fn a_member_whose_datagrams_are_all_lost_is_answered_on_a_stream_and_not_accused() {
    // Every datagram to or from n4 is lost; streams get through (their
    // retransmissions beat the loss). With stream pings, the probes of n4
    // (classic rounds; φ mode's probes of a silent member) are answered on
    // a stream and nobody is accused; without, n4 is.
    for config in [Config::classic_lan(CLUSTER), Config::lan(CLUSTER)] {
        for stream_ping in [true, false] {
            let mode = config.mode;
            let mut config = config.clone();
            config.stream_ping = stream_ping;
            let mut c = Cluster::new(5, config);
            c.run_for(Duration::from_secs(5));
            c.clear_events();
            c.drop_when(|from, to, t| !t.stream && (from == 4 || to == 4));
            c.run_for(Duration::from_secs(30));
            let raised = suspicions(&mut c);
            let answered: u64 = c.nodes.iter().map(|n| n.stats().stream_acks).sum();
            let pings: u64 = c.nodes.iter().map(|n| n.stats().stream_pings).sum();
            if stream_ping {
                assert_eq!(raised, 0, "{mode:?}: nobody is accused");
                // Classic: each of the five probes n4 or is probed by it
                // about once per 5 s round, 30 s: dozens; φ mode: n4's two
                // observers, and n4 of its two watched, every probe interval
                // or more (the recheck grows).
                assert!(answered >= 8 && pings >= answered, "{mode:?}: {answered} answered of {pings}");
            } else {
                assert!(raised > 0, "{mode:?}: without stream pings n4 is accused");
                assert_eq!((answered, pings), (0, 0));
            }
        }
    }
}

#[test]
fn a_stream_only_cluster_runs_without_datagrams_and_finds_a_crash() {
    let mut config = Config::lan(CLUSTER);
    config.stream_only = true;
    let mut c = Cluster::new(5, config);
    c.drop_when(|_, _, t| !t.stream);
    c.run_for(Duration::from_secs(20));
    assert_eq!(suspicions(&mut c), 0, "heartbeats and gossip on streams keep everyone alive");
    let hb: u64 = c.nodes.iter().map(|n| n.stats().sent[MessageKind::Heartbeat]).sum();
    // Two observers each, every 1.05 s, for 20 s.
    assert!(hb >= 5 * 2 * 17, "{hb} heartbeats sent");
    assert_eq!(c.dropped, 0, "nothing was sent as a datagram");
    let crashed_at = c.now();
    c.crash(3);
    let mut dead_at = None;
    while c.now() < crashed_at + Duration::from_secs(30) && dead_at.is_none() {
        c.run_for(Duration::from_millis(100));
        if (0..5).filter(|&i| i != 3).all(|i| status(&c.nodes[i], "n3") == Status::Dead) {
            dead_at = Some(c.now());
        }
    }
    let took = dead_at.expect("n3 declared dead everywhere") - crashed_at;
    // As with datagrams: φ's silence (about 2 s), a probe (0.5 s), the
    // suspicion (at most 10 s).
    assert!(took < Duration::from_secs(13), "dead everywhere after {took:?}");
}

#[test]
fn time_going_backwards_is_counted_and_never_undoes_time() {
    let mut c = Cluster::new(3, Config::lan(CLUSTER));
    let node = &mut c.nodes[0];
    node.handle_timeout(Instant::from_secs(5));
    let wake = node.poll_timeout().unwrap();
    node.handle_timeout(Instant::from_secs(3));
    assert_eq!(node.stats().time_backwards, 1);
    assert!(node.poll_timeout().unwrap() >= wake.min(Instant::from_secs(5)));
}

#[test]
fn a_watched_member_never_heard_from_is_probed_after_the_first_heartbeat_timeout() {
    let config = Config::lan(CLUSTER);
    let timeout = config.first_heartbeat_timeout;
    let mut c = Cluster::new(4, config);
    let node = &mut c.nodes[0];
    let watched: Vec<String> = node.watching().map(str::to_string).collect();
    assert_eq!(watched.len(), 2, "two ring observers");
    let t0 = Instant::from_secs(1);
    // Nothing is ever heard; let time pass, sending nothing anywhere.
    let mut pinged = Vec::new();
    let mut now = t0;
    while now < t0 + timeout + Duration::from_secs(1) {
        now = node.poll_timeout().unwrap();
        node.handle_timeout(now);
        while let Some(t) = node.poll_transmit() {
            let p = wire::decode(&t.bytes, MAX_STREAM).unwrap();
            if let Message::Ping { target, .. } = p.message {
                pinged.push((now, target.name));
            }
        }
    }
    for name in &watched {
        let (at, _) = pinged.iter().find(|(_, n)| n == name).unwrap_or_else(|| panic!("{name} never probed"));
        assert_eq!(*at, t0 + timeout, "probed exactly at the first-heartbeat timeout");
    }
}

#[test]
fn a_watch_off_the_ring_subscribes_to_the_members_heartbeats() {
    let mut c = Cluster::new(8, Config::lan(CLUSTER));
    let t0 = Instant::from_secs(1);
    let ring: Vec<String> = c.nodes[0].watching().map(str::to_string).collect();
    let off = (1..8).map(|i| format!("n{i}")).find(|n| !ring.contains(n)).expect("a member off n0's ring");
    let now = c.run_until(t0 + Duration::from_secs(5));
    c.nodes[0].watch(now, &off);
    let now = c.run_until(now + Duration::from_secs(20));
    // Its heartbeats arrive, so its level stays low; the subscription lives
    // across renewals (its lease is 30 s, renewed every 10 s).
    let level = c.nodes[0].level(&off, now).expect("watched");
    assert!(level < 1.0, "the watched member's level is {level}: no heartbeats?");
    let j: usize = off[1..].parse().unwrap();
    let sent_before = c.nodes[j].stats().sent[vigil_membership::MessageKind::Heartbeat];
    let now = c.run_until(now + Duration::from_secs(40));
    assert!(c.nodes[0].level(&off, now).unwrap() < 1.0, "still fed after the first lease would have ended");
    let sent = c.nodes[j].stats().sent[vigil_membership::MessageKind::Heartbeat] - sent_before;
    // Two ring observers and the subscriber, one heartbeat each a second
    // (the LAN preset's interval is 1.05 s).
    assert!((100..=120).contains(&sent), "{sent} heartbeats in 40 s");
    // Unwatching cancels: the member heartbeats its two observers only.
    c.nodes[0].unwatch(now, &off);
    let now = c.run_until(now + Duration::from_secs(1));
    let before = c.nodes[j].stats().sent[vigil_membership::MessageKind::Heartbeat];
    c.run_until(now + Duration::from_secs(21));
    let sent = c.nodes[j].stats().sent[vigil_membership::MessageKind::Heartbeat] - before;
    assert!((38..=42).contains(&sent), "{sent} heartbeats in 21 s after the unwatch");
}

/// A watch that starts on the ring and falls off it as members join: the
/// member stops heartbeating this node for the ring, so this node must ask
/// for its heartbeats at once, or its φ climbs on a live member.
#[test]
fn a_watch_the_ring_moves_away_from_is_subscribed_to() {
    let config = Config::lan(CLUSTER);
    let mut c = Cluster::new(3, config.clone());
    let now = c.run_until(Instant::from_secs(3));
    for name in ["n1", "n2"] {
        c.nodes[0].watch(now, name);
        assert!(c.nodes[0].watch_report(name, now).unwrap().on_ring, "{name}: three members, two observers each");
    }
    // Six newcomers join through n0; the ring moves.
    for i in 3..9 {
        let mut node = Node::new(NodeId::new(format!("late{i}"), 1), addr(i), config.clone(), i as u64, now).unwrap();
        node.join(now, &[addr(0)]);
        c.push(node);
    }
    let now = c.run_until(now + Duration::from_secs(5));
    let off: Vec<&str> =
        ["n1", "n2"].into_iter().filter(|n| !c.nodes[0].watch_report(n, now).unwrap().on_ring).collect();
    assert!(!off.is_empty(), "with nine members, n0 observes n1 or n2 no longer");
    // Thirty seconds on, each is still fed: its level stays low.
    for _ in 0..30 {
        let now = c.run_until(c.now() + Duration::from_secs(1));
        for name in ["n1", "n2"] {
            let report = c.nodes[0].watch_report(name, now).unwrap();
            assert!(
                report.level < 1.0,
                "{name} (off the ring: {}): level {} at {now:?}",
                off.contains(&name),
                report.level
            );
        }
    }
}

#[test]
fn graded_policies_on_a_watched_member_fire_in_order_and_recover() {
    // Seed 004's task queue: stop assigning at φ 2, reassign at 5, remove
    // at 8 after 2 s there.
    let mut config = Config::lan(CLUSTER);
    config.policies =
        vec!["stop-assigning=2".parse().unwrap(), "reassign=5".parse().unwrap(), "remove=8,dwell=2s".parse().unwrap()];
    let mut c = Cluster::new(8, config);
    let t0 = Instant::from_secs(1);
    let ring: Vec<String> = c.nodes[0].watching().map(str::to_string).collect();
    let off = (1..8).map(|i| format!("n{i}")).find(|n| !ring.contains(n)).unwrap();
    let j: usize = off[1..].parse().unwrap();
    let now = c.run_until(t0 + Duration::from_secs(5));
    c.nodes[0].watch(now, &off);
    let now = c.run_until(now + Duration::from_secs(30));
    let quiet: Vec<Event> = events(&mut c.nodes[0]).into_iter().filter(|e| matches!(e, Event::Policy { .. })).collect();
    assert!(quiet.is_empty(), "no verdict while it heartbeats: {quiet:?}");
    // It stops: the three policies fire, in order of their thresholds.
    let stopped = now;
    c.crash(j);
    let now = c.run_until(now + Duration::from_secs(10));
    c.revive(j);
    let fired: Vec<(String, Option<f64>)> = events(&mut c.nodes[0])
        .into_iter()
        .filter_map(|e| match e {
            Event::Policy { id, policy, fired: true, level, .. } if id.name == off => Some((policy, level)),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = fired.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(names, ["stop-assigning", "reassign", "remove"], "{fired:?}");
    assert!(fired[0].1.is_some_and(|l| l >= 2.0) && fired[1].1.is_some_and(|l| l >= 5.0));
    // Only application watches report: no other node (the ring's observers
    // of n{j} among them) says anything of policies.
    for (i, n) in c.nodes.iter_mut().enumerate().skip(1) {
        let policies: Vec<Event> = events(n).into_iter().filter(|e| matches!(e, Event::Policy { .. })).collect();
        assert!(policies.is_empty(), "n{i}: {policies:?}");
    }
    assert!(now >= stopped + Duration::from_secs(10));
    // It comes back: each policy reports the recovery.
    c.run_until(now + Duration::from_secs(5));
    let recovered: Vec<String> = events(&mut c.nodes[0])
        .into_iter()
        .filter_map(|e| match e {
            Event::Policy { id, policy, fired: false, .. } if id.name == off => Some(policy),
            _ => None,
        })
        .collect();
    assert_eq!(recovered.len(), 3, "{recovered:?}");
}

#[test]
fn a_ping_that_cannot_be_sent_fails_its_probe_at_once() {
    // Classic SWIM pings first and asks for indirect probes only after the
    // probe timeout; when the runtime reports the ping could not be sent,
    // the indirect probes go out at once. (In φ mode they go out with the
    // ping already.)
    let config = Config::classic_lan(CLUSTER);
    let mut c = Cluster::new(6, config);
    let node = &mut c.nodes[0];
    let t0 = Instant::from_secs(1);
    let mut now = t0;
    let mut ping = None;
    while ping.is_none() && now < t0 + Duration::from_secs(5) {
        now = node.poll_timeout().unwrap();
        node.handle_timeout(now);
        while let Some(t) = node.poll_transmit() {
            if let Message::Ping { .. } = wire::decode(&t.bytes, MAX_STREAM).unwrap().message {
                ping = Some(t.to);
            }
        }
    }
    let to = ping.expect("a ping went out");
    let before = node.stats().indirect_probes;
    node.handle_send_error(now, to);
    let asked: Vec<SocketAddr> = std::iter::from_fn(|| node.poll_transmit())
        .filter(|t| matches!(wire::decode(&t.bytes, MAX_STREAM).unwrap().message, Message::PingReq { .. }))
        .map(|t| t.to)
        .collect();
    assert!(!asked.is_empty(), "indirect probes at once");
    assert!(!asked.contains(&to), "not through the member that cannot be reached");
    assert!(node.stats().indirect_probes > before);
    assert_eq!(node.stats().send_errors, 1);
    // A send error to an address no probe is waiting on changes nothing but
    // the count.
    node.handle_send_error(now, addr(5));
    assert_eq!(node.stats().send_errors, 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn accusations_with_any_incarnation_are_survived(inc in any::<u64>()) {
        let mut c = Cluster::new(2, Config::lan(CLUSTER));
        let now = Instant::from_secs(2);
        let accusation = Update { id: id(0), addr: addr(0), incarnation: inc, status: Status::Dead, from: id(1), tags: None };
        c.nodes[0].handle_datagram(now, addr(1), &packet(1, Message::Gossip, vec![accusation])).unwrap();
        prop_assert!(c.nodes[0].incarnation() >= inc.min(u64::MAX - 1));
    }

    #[test]
    fn time_going_backwards_is_survived(steps in prop::collection::vec((0u64..20_000, any::<bool>()), 1..60)) {
        // Times jump back and forth (a clock stepped by the runtime); the
        // node neither panics nor sends anything invalid.
        let mut c = Cluster::new(4, Config::lan(CLUSTER));
        let hb = packet(1, Message::Heartbeat, vec![]);
        for (ms, datagram) in steps {
            let now = Instant::from_millis(ms);
            if datagram {
                c.nodes[0].handle_datagram(now, addr(1), &hb).unwrap();
            } else {
                c.nodes[0].handle_timeout(now);
            }
            let _ = c.nodes[0].poll_timeout();
            while let Some(t) = c.nodes[0].poll_transmit() {
                let max = if t.stream { MAX_STREAM } else { MAX_DATAGRAM };
                prop_assert!(wire::decode(&t.bytes, max).is_ok());
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_outputs_stay_valid(data in prop::collection::vec(any::<u8>(), 0..600), kind in 1u8..9) {
        let mut c = Cluster::new(6, Config::lan(CLUSTER));
        let node = &mut c.nodes[0];
        let t0 = Instant::from_secs(2);
        let _ = node.handle_datagram(t0, addr(1), &data);
        let mut framed = vec![b'V', b'G', wire::VERSION];
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

/// One call a runtime or an application can make.
#[derive(Debug, Clone)]
enum Op {
    /// Arbitrary bytes as a datagram or stream message.
    Raw {
        stream: bool,
        bytes: Vec<u8>,
    },
    /// A well-formed rumour about member `who` from member `from`.
    Rumour {
        who: usize,
        from: usize,
        incarnation: u64,
        status: u8,
    },
    /// A heartbeat from member `from`.
    Heartbeat {
        from: usize,
    },
    /// Time moves by this many milliseconds (negative: backwards).
    Time {
        ms: i64,
    },
    Join,
    Leave,
    Bootstrap {
        extra: usize,
    },
    Watch {
        who: usize,
    },
    Unwatch {
        who: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (any::<bool>(), prop::collection::vec(any::<u8>(), 0..64)).prop_map(|(stream, bytes)| Op::Raw { stream, bytes }),
        4 => (0usize..8, 0usize..8, prop_oneof![0u64..4, Just(u64::MAX), Just(u64::MAX - 1)], 0u8..4)
            .prop_map(|(who, from, incarnation, status)| Op::Rumour { who, from, incarnation, status }),
        3 => (0usize..8).prop_map(|from| Op::Heartbeat { from }),
        6 => (-3_000i64..8_000).prop_map(|ms| Op::Time { ms }),
        1 => Just(Op::Join),
        1 => Just(Op::Leave),
        1 => (0usize..4).prop_map(|extra| Op::Bootstrap { extra }),
        1 => (0usize..8).prop_map(|who| Op::Watch { who }),
        1 => (0usize..8).prop_map(|who| Op::Unwatch { who }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Any sequence of calls, bytes and times (including time going
    /// backwards, and a leave in the middle) is survived: nothing panics,
    /// everything sent decodes and fits its transport, the node's epoch
    /// never goes down, and a node that left stays quiet.
    #[test]
    fn any_sequence_of_calls_is_survived(ops in prop::collection::vec(op(), 1..60), classic in any::<bool>()) {
        let config = if classic { Config::classic_lan(CLUSTER) } else { Config::lan(CLUSTER) };
        let mut c = Cluster::new(6, config);
        let node = &mut c.nodes[0];
        let mut now = Instant::from_secs(2);
        let mut epoch = (node.id().generation, node.incarnation());
        let mut left = false;
        let statuses = [Status::Alive, Status::Suspect, Status::Dead, Status::Left];
        for op in ops {
            match op {
                Op::Raw { stream, bytes } => {
                    let _ = if stream { node.handle_stream(now, addr(1), &bytes) } else { node.handle_datagram(now, addr(1), &bytes) };
                }
                Op::Rumour { who, from, incarnation, status } => {
                    let u = Update { id: id(who), addr: addr(who), incarnation, status: statuses[status as usize], from: id(from), tags: None };
                    let sender = if from == 0 { 1 } else { from };
                    let _ = node.handle_datagram(now, addr(sender), &packet(sender, Message::Gossip, vec![u]));
                }
                Op::Heartbeat { from } => {
                    let _ = node.handle_datagram(now, addr(from), &packet(from.max(1), Message::Heartbeat, vec![]));
                }
                Op::Time { ms } => {
                    now = if ms < 0 {
                        now.saturating_sub(Duration::from_millis(ms.unsigned_abs()))
                    } else {
                        now.saturating_add(Duration::from_millis(ms as u64))
                    };
                    node.handle_timeout(now);
                }
                Op::Join => node.join(now, &[addr(1), addr(2)]),
                Op::Leave => {
                    node.leave(now);
                    left = true;
                }
                Op::Bootstrap { extra } => {
                    let more: Vec<(NodeId, SocketAddr)> = (6..6 + extra).map(|i| (id(i), addr(i))).collect();
                    node.bootstrap(now, &more);
                }
                Op::Watch { who } => node.watch(now, &format!("n{who}")),
                Op::Unwatch { who } => node.unwatch(now, &format!("n{who}")),
            }
            let current = (node.id().generation, node.incarnation());
            prop_assert!(current >= epoch, "epoch went from {:?} to {:?}", epoch, current);
            epoch = current;
            if let Some(t) = node.poll_timeout() {
                prop_assert!(!left, "a node that left has no timer");
                let _ = t;
            }
            while let Some(t) = node.poll_transmit() {
                let max = if t.stream { MAX_STREAM } else { MAX_DATAGRAM };
                prop_assert!(t.bytes.len() <= max);
                let p = wire::decode(&t.bytes, max).unwrap();
                prop_assert_eq!(p.message.kind(), t.kind);
                // A push-pull always on a stream; a datagram's message on
                // one only as a stream ping or its answer.
                prop_assert!(t.stream || !t.kind.is_stream());
                prop_assert!(!t.stream || t.kind.is_stream() || matches!(t.kind, MessageKind::Ping | MessageKind::Ack));
            }
            while node.poll_event().is_some() {}
        }
    }
}

/// Steps a lone node (nothing it sends arrives) until `until`, collecting
/// the datagrams it sends.
fn run_alone(node: &mut Node, until: Instant) -> Vec<(Instant, Packet)> {
    let mut sent = Vec::new();
    while let Some(now) = node.poll_timeout().filter(|t| *t <= until) {
        node.handle_timeout(now);
        while let Some(t) = node.poll_transmit() {
            sent.push((now, wire::decode(&t.bytes, MAX_STREAM).unwrap()));
        }
    }
    sent
}

#[test]
fn a_member_that_only_heard_of_a_suspicion_checks_the_suspect_before_declaring_it_dead() {
    let config = Config::lan(CLUSTER);
    let backstop = config.suspicion_max;
    let mut c = Cluster::new(6, config);
    let t = Instant::from_secs(2);
    // A suspect that node 0 does not watch itself (it would probe those on
    // its own when they fall silent), accused by another member.
    let watched: Vec<String> = c.nodes[0].watching().map(str::to_string).collect();
    let v = (2..6).find(|i| !watched.contains(&format!("n{i}"))).unwrap();
    let name = format!("n{v}");
    let accusation =
        Update { id: id(v), addr: addr(v), incarnation: 0, status: Status::Suspect, from: id(1), tags: None };
    let mut quiet = c.nodes[0].clone();
    for node in [&mut c.nodes[0], &mut quiet] {
        node.handle_datagram(t, addr(1), &packet(1, Message::Gossip, vec![accusation.clone()])).unwrap();
        assert_eq!(status(node, &name), Status::Suspect);
    }
    // No verdict and no refutation arrive: at the backstop node 0 probes the
    // suspect itself, directly and through others, and only then declares it
    // dead. (Alone, node 0's own probes of its silent members go unanswered
    // and its local health worsens, stretching this probe's timeout up to
    // eightfold: 4 s.)
    let sent = run_alone(&mut c.nodes[0], t + backstop + Duration::from_secs(5));
    let pinged = sent.iter().find(|(_, p)| matches!(&p.message, Message::Ping { target, .. } if target.name == name));
    let (at, _) = pinged.expect("the suspect is probed");
    assert_eq!(*at, t + backstop);
    assert!(sent.iter().any(|(_, p)| matches!(&p.message, Message::PingReq { target, .. } if target.name == name)));
    assert_eq!(status(&c.nodes[0], &name), Status::Dead);
    assert!(
        events(&mut c.nodes[0])
            .iter()
            .any(|e| matches!(e, Event::Dead { id, by, .. } if id.name == name && by.name == "n0"))
    );
    // Had the suspect answered at a higher incarnation (it had refuted, but
    // the refutation missed this node), the answer is the refutation.
    let sent = run_alone(&mut quiet, t + backstop);
    let seq = sent
        .iter()
        .find_map(|(_, p)| match &p.message {
            Message::Ping { seq, target } if target.name == name => Some(*seq),
            _ => None,
        })
        .unwrap();
    let ack = Packet { cluster: CLUSTER, from: id(v), incarnation: 1, message: Message::Ack { seq }, updates: vec![] };
    quiet.handle_datagram(t + backstop, addr(v), &wire::encode(&ack, MAX_DATAGRAM).unwrap()).unwrap();
    let m = quiet.member(&name).unwrap();
    assert_eq!((m.status, m.incarnation), (Status::Alive, 1));
    run_alone(&mut quiet, t + backstop + Duration::from_secs(5));
    assert_eq!(status(&quiet, &name), Status::Alive, "never declared dead");
}

/// Tags set on one member reach every other, replace the old ones live, and
/// are reported once per change; a cluster that sets none sends none.
#[test]
fn tags_propagate_and_update_live() {
    use vigil_membership::Tags;
    let mut c = Cluster::new(6, Config::lan(CLUSTER));
    let t0 = Instant::from_secs(1);
    let mut now = c.run_until(t0 + Duration::from_secs(5));
    for n in c.nodes.iter_mut() {
        assert!(events(n).iter().all(|e| !matches!(e, Event::TagsUpdated { .. })));
    }
    let zone_a = Tags::new([("zone", "a"), ("role", "queue")]).unwrap();
    c.nodes[2].set_tags(now, zone_a.clone());
    assert_eq!(c.nodes[2].tags(), zone_a);
    now = c.run_until(now + Duration::from_secs(5));
    let zone_b = Tags::new([("zone", "b")]).unwrap();
    for (i, n) in c.nodes.iter_mut().enumerate().filter(|(i, _)| *i != 2) {
        let seen: Vec<Tags> = events(n)
            .into_iter()
            .filter_map(|e| match e {
                Event::TagsUpdated { id, tags } if id.name == "n2" => Some(tags),
                _ => None,
            })
            .collect();
        assert_eq!(seen, std::slice::from_ref(&zone_a), "n{i}");
        let view = n.member("n2").unwrap();
        assert_eq!((view.tags.get("zone"), view.status, view.incarnation), (Some("a"), Status::Alive, 1), "n{i}");
    }
    c.nodes[2].set_tags(now, zone_b.clone());
    now = c.run_until(now + Duration::from_secs(5));
    for (i, n) in c.nodes.iter_mut().enumerate().filter(|(i, _)| *i != 2) {
        let view = n.member("n2").unwrap();
        assert_eq!((&view.tags, view.incarnation), (&zone_b, 2), "n{i}");
        let updates = events(n).into_iter().filter(|e| matches!(e, Event::TagsUpdated { .. })).count();
        assert_eq!(updates, 1, "n{i}");
    }
    // Setting the same tags again announces nothing.
    c.nodes[2].set_tags(now, zone_b.clone());
    c.run_until(now + Duration::from_secs(5));
    assert!(c.nodes.iter_mut().all(|n| events(n).iter().all(|e| !matches!(e, Event::TagsUpdated { .. }))));
}

/// A member that joins later learns everyone's tags from the push-pull that
/// admits it; with a small datagram budget, every datagram stays within it
/// while many members announce the longest tags at once.
#[test]
fn tags_reach_a_late_joiner_within_the_datagram_budget() {
    use vigil_membership::Tags;
    let mut config = Config::lan(CLUSTER);
    config.datagram_budget = 1024;
    let n = 20;
    let mut c = Cluster::new(n, config.clone());
    let t0 = Instant::from_secs(1);
    let mut now = c.run_until(t0 + Duration::from_secs(3));
    for (i, node) in c.nodes.iter_mut().enumerate() {
        let tags = Tags::new([("i", i.to_string()), ("pad", "x".repeat(250)), ("q", "y".repeat(245))]).unwrap();
        node.set_tags(now, tags);
    }
    // Every datagram within the budget, while the rumours drain.
    c.largest_datagram = 0;
    let stop = now + Duration::from_secs(20);
    while now < stop {
        now = now + Duration::from_millis(100);
        c.tick(now);
    }
    let largest = c.largest_datagram;
    // Each rumour is about 530 bytes: one fits beside a message, two do not.
    assert!((530..=1024).contains(&largest), "largest datagram {largest} bytes against a budget of 1024");
    for (i, node) in c.nodes.iter().enumerate() {
        for j in (0..n).filter(|&j| j != i) {
            assert_eq!(
                node.member(&format!("n{j}")).unwrap().tags.get("i"),
                Some(j.to_string().as_str()),
                "n{i} on n{j}"
            );
        }
    }
    // A newcomer joins through one member and learns all the tags.
    let mut late = Node::new(NodeId::new("late", 1), addr(n), config, 99, now).unwrap();
    late.join(now, &[addr(0)]);
    c.push(late);
    c.run_until(now + Duration::from_secs(2));
    let late = c.nodes.last().unwrap();
    for j in 0..n {
        assert_eq!(late.member(&format!("n{j}")).unwrap().tags.get("i"), Some(j.to_string().as_str()), "n{j}");
    }
}

/// A newcomer that joins with tags through one member: every member learns
/// the tags within seconds from gossip, long before the next push-pull
/// (30 s). The seed first learns of it from its join's packet; the alive
/// rumour it passes on carries the tags the join announced (before, it
/// went out without them and stood for the member at that incarnation).
#[test]
fn a_tagged_joiner_s_tags_reach_every_member_by_gossip() {
    let n = 6;
    let config = Config::lan(CLUSTER);
    let mut c = Cluster::new(n, config.clone());
    let now = c.run_for(Duration::from_secs(3));
    let mut late = Node::new(NodeId::new("late", 1), addr(n), config, 99, now).unwrap();
    let tags = vigil_membership::Tags::new([("service", "billing")]).unwrap();
    late.set_tags(now, tags.clone());
    late.join(now, &[addr(0)]);
    c.push(late);
    c.run_for(Duration::from_secs(5));
    for (i, node) in c.nodes.iter().enumerate().take(n) {
        let m = node.member("late").unwrap_or_else(|| panic!("n{i} knows the newcomer"));
        assert_eq!(m.tags, tags, "n{i}");
    }
}

/// A join that nobody answers is asked again after 1 s, 2 s, 4 s… (at most
/// 30 s apart) until a member is known; then the retries stop.
#[test]
fn an_unanswered_join_is_retried_with_backoff_until_a_member_answers() {
    let t0 = Instant::from_secs(1);
    let mut joiner = Node::new(id(1), addr(1), Config::lan(CLUSTER), 1, t0).unwrap();
    let mut seed = Node::new(id(0), addr(0), Config::lan(CLUSTER), 0, t0).unwrap();
    joiner.join(t0, &[addr(0)]);
    // The seed is down: every push-pull to it is lost.
    let mut asked = Vec::new();
    let mut now = t0;
    while now < t0 + Duration::from_secs(80) {
        while let Some(t) = joiner.poll_transmit() {
            if t.kind == MessageKind::PushPull && t.to == addr(0) {
                asked.push((now - t0).as_secs());
            }
        }
        now = joiner.poll_timeout().unwrap();
        joiner.handle_timeout(now);
    }
    // At start, then after 1, 2, 4, 8, 16 and 30 s waits (cumulative).
    assert_eq!(asked, [0, 1, 3, 7, 15, 31, 61], "push-pulls to the seed, seconds after the join");
    assert_eq!(joiner.stats().join_retries, 6);
    // The seed comes up; the next retry reaches it and the retries stop.
    // (It has been running all along, alone, knowing nobody.)
    let mut alone = Cluster::of(vec![seed.clone()], t0);
    alone.run_until(now);
    let mut both = Cluster::of(vec![alone.nodes.remove(0), joiner], now);
    let later = both.run_until(now + Duration::from_secs(35));
    assert_eq!(status(&both.nodes[1], "n0"), Status::Alive);
    assert_eq!(status(&both.nodes[0], "n1"), Status::Alive);
    let retries = both.nodes[1].stats().join_retries;
    both.run_until(later + Duration::from_secs(120));
    assert_eq!(both.nodes[1].stats().join_retries, retries, "no retry once a member is known");
    seed = both.nodes.remove(0);
    assert!(seed.member("n1").is_some());
}

/// Events carry what their consumers need, so none calls back or keeps
/// state of its own: an `up` its member's tags, a refutation how long the
/// suspicion lasted, a death how long it was suspected and how long the
/// member had been silent.
#[test]
fn events_carry_what_their_consumers_need() {
    use vigil_membership::Tags;
    let mut c = Cluster::new(6, Config::lan(CLUSTER));
    let t = Instant::from_secs(2);
    // A new member with tags, vouched for by n1.
    let zone = Tags::new([("zone", "b")]).unwrap();
    let newcomer = Update {
        id: NodeId::new("n9", 1),
        addr: addr(9),
        incarnation: 0,
        status: Status::Alive,
        from: NodeId::new("n9", 1),
        tags: Some(zone.clone()),
    };
    c.nodes[0].handle_datagram(t, addr(1), &packet(1, Message::Gossip, vec![newcomer])).unwrap();
    assert!(events(&mut c.nodes[0]).contains(&Event::Up { id: NodeId::new("n9", 1), addr: addr(9), tags: zone }));
    // A suspicion of n2, refuted 700 ms later.
    let suspect = Update { id: id(2), addr: addr(2), incarnation: 0, status: Status::Suspect, from: id(1), tags: None };
    c.nodes[0].handle_datagram(t, addr(1), &packet(1, Message::Gossip, vec![suspect])).unwrap();
    let alive = Update { id: id(2), addr: addr(2), incarnation: 1, status: Status::Alive, from: id(2), tags: None };
    let later = t + Duration::from_millis(700);
    c.nodes[0].handle_datagram(later, addr(1), &packet(1, Message::Gossip, vec![alive])).unwrap();
    let refuted = events(&mut c.nodes[0]).into_iter().find(|e| matches!(e, Event::Refuted { .. }));
    assert_eq!(refuted, Some(Event::Refuted { id: id(2), incarnation: 1, suspected_for: Duration::from_millis(700) }));
    // A crash of a member n0 watches: its death says how long it was
    // suspected, and how long it had been silent (the detection time).
    let mut c = Cluster::new(6, Config::lan(CLUSTER));
    let t0 = Instant::from_secs(1);
    let now = c.run_until(t0 + Duration::from_secs(20));
    let watched = c.nodes[0].watching().next().unwrap().to_string();
    let down: usize = watched[1..].parse().unwrap();
    for n in c.nodes.iter_mut() {
        events(n);
    }
    c.crash(down);
    c.run_until(now + Duration::from_secs(30));
    let dead = events(&mut c.nodes[0]).into_iter().find_map(|e| match e {
        Event::Dead { id, suspected_for, silent_for, .. } if id.name == watched => Some((suspected_for, silent_for)),
        _ => None,
    });
    let (suspected_for, silent_for) = dead.expect("n0 declares the member it watches dead");
    let (suspected_for, silent_for) = (suspected_for.expect("suspected first"), silent_for.expect("it had heard it"));
    // The LAN preset: at least 2.5 s of suspicion, and the silence spans
    // the suspicion and the time before it (φ to 8, a probe).
    assert!(suspected_for >= Duration::from_millis(2_500), "{suspected_for:?}");
    assert!(silent_for > suspected_for && silent_for < Duration::from_secs(20), "{silent_for:?} vs {suspected_for:?}");
}

/// Heartbeats lost on the way to an observer make a silent member, not a
/// dead one: the probe gets through, the node reports a path problem, and
/// nobody accuses the member. Once the path heals, its level falls again.
#[test]
fn heartbeats_lost_on_their_way_are_a_path_problem_not_a_death() {
    let mut c = Cluster::new(6, Config::lan(CLUSTER));
    c.run_for(Duration::from_secs(10));
    let watched = c.nodes[0].watching().next().unwrap().to_string();
    let w: usize = watched[1..].parse().unwrap();
    c.clear_events();
    c.drop_when(move |from, to, t| from == w && to == 0 && t.kind == MessageKind::Heartbeat);
    c.run_for(Duration::from_secs(20));
    assert!(c.dropped > 0);
    let seen = c.events(0);
    assert!(
        seen.iter().any(|e| matches!(e, Event::PathProblem { id, .. } if id.name == watched)),
        "n0 probed its silent member and it answered: {seen:?}"
    );
    for i in 0..6 {
        let events = c.events(i);
        assert!(!events.iter().any(|e| matches!(e, Event::Suspected { id, .. } if id.name == watched)), "n{i}");
        if i != w {
            assert_eq!(status(&c.nodes[i], &watched), Status::Alive, "n{i}");
        }
    }
    c.heal();
    let now = c.run_for(Duration::from_secs(5));
    assert!(c.nodes[0].level(&watched, now).unwrap() < 1.0);
}

/// The application's outcomes reach the same judge as φ: an ejection is
/// an event at every node that sees it, fires the policies that listen to
/// it for a member the application watches, and clears them when the
/// member returns to service.
#[test]
fn an_ejection_fires_and_clears_the_policies_of_an_application_watch() {
    let mut config = Config::lan(CLUSTER);
    config.policies = vec!["route=2,ejection".parse().unwrap(), "drain=ejection".parse().unwrap()];
    let mut c = Cluster::new(5, config);
    c.run_for(Duration::from_secs(5));
    let now = c.now();
    c.nodes[0].watch(now, "n3");
    c.run_for(Duration::from_secs(5));
    c.clear_events();
    let now = c.now();
    for _ in 0..5 {
        assert!(c.nodes[0].record_outcome(now, "n3", vigil_detector::outlier::Outcome::Response(500), None));
    }
    let policy = |e: &Event| match e {
        Event::Policy { id, policy, fired, signal, withheld, level } if id.name == "n3" => {
            assert!(level.is_none() && !withheld);
            Some((policy.clone(), *fired, matches!(signal, vigil_membership::Signal::Ejected { .. })))
        }
        _ => None,
    };
    let seen = c.events(0);
    assert!(matches!(&seen[0], Event::Ejected { id, .. } if id.name == "n3"), "{seen:?}");
    let fired: Vec<_> = seen.iter().filter_map(policy).collect();
    assert_eq!(fired, [("route".to_owned(), true, true), ("drain".to_owned(), true, true)]);
    let report = c.nodes[0].watch_report("n3", now).unwrap();
    assert_eq!(report.policies.iter().map(|p| p.threshold).collect::<Vec<_>>(), [Some(8.0), Some(2.0), None]);
    // The ejection lasts the base 30 s, to the first interval tick after;
    // its heartbeats never stopped, so both policies clear on the return.
    c.run_for(Duration::from_secs(45));
    let seen = c.events(0);
    assert!(seen.iter().any(|e| matches!(e, Event::Returned { id } if id.name == "n3")), "{seen:?}");
    let cleared: Vec<_> = seen.iter().filter_map(policy).collect();
    assert_eq!(cleared, [("route".to_owned(), false, true), ("drain".to_owned(), false, true)]);
    assert_eq!(status(&c.nodes[0], "n3"), Status::Alive, "an ejection is not a verdict on membership");
}

/// A gray failure seen by one member becomes visible to all: its outlier
/// verdict travels with its tags, every member reports it once, it downs
/// nobody by default, and it is withdrawn when the subject returns.
#[test]
fn an_outlier_verdict_is_shared_with_every_member_and_downs_nobody_by_default() {
    use vigil_detector::outlier::Outcome;
    let mut c = Cluster::new(8, Config::lan(CLUSTER));
    let mut now = c.run_until(Instant::from_secs(5));
    c.clear_events();
    // n0's requests to n5 fail with 503s while n5's heartbeats are fine.
    for _ in 0..5 {
        assert!(c.nodes[0].record_outcome(now, "n5", Outcome::Response(503), None));
    }
    let ejected_at = now;
    assert!(c.events(0).iter().any(|e| matches!(e, Event::Ejected { id, .. } if id.name == "n5")));
    // Gossip carries it to the seven others, n5 included, within a few
    // rounds: 2 s is ten gossip intervals at the LAN preset's 200 ms.
    let mut heard: Vec<Option<Instant>> = vec![None; 8];
    while now < ejected_at + Duration::from_secs(2) {
        now = c.run_until(now + Duration::from_millis(100));
        for (i, h) in heard.iter_mut().enumerate().skip(1) {
            for e in c.events(i) {
                if let Event::OutlierShared { id: subject, by, reason } = e {
                    assert_eq!((subject.name.as_str(), subject.generation, by.name.as_str()), ("n5", 1, "n0"));
                    assert_eq!(reason, "consecutive-5xx");
                    assert!(h.is_none(), "n{i} reported it twice");
                    *h = Some(now);
                }
            }
        }
    }
    for (i, h) in heard.iter().enumerate().skip(1) {
        assert!(h.is_some(), "n{i} never heard of the verdict");
    }
    for (i, n) in c.nodes.iter().enumerate() {
        let gray = n.snapshot(now).gray;
        assert_eq!(gray.len(), 1, "n{i}: {gray:?}");
        assert_eq!((gray[0].by.as_str(), gray[0].subject.as_str()), ("n0", "n5"), "n{i}");
        // Evidence only: n5 is alive everywhere.
        if i != 5 {
            assert_eq!(status(n, "n5"), Status::Alive, "n{i}");
        }
    }
    // Left alone, outlier detection lets n5 back after its ejection time
    // (30 s at the first ejection): the verdict is withdrawn everywhere.
    now = c.run_until(now + Duration::from_secs(45));
    for (i, n) in c.nodes.iter_mut().enumerate() {
        let evs = events(n);
        if i != 0 {
            assert!(
                evs.iter()
                    .any(|e| matches!(e, Event::OutlierWithdrawn { id, by } if id.name == "n5" && by.name == "n0")),
                "n{i}: {evs:?}"
            );
        }
        assert!(n.snapshot(now).gray.is_empty(), "n{i}");
    }
}

/// With a downing strategy and a policy that lets outlier evidence count,
/// a member two others eject is downed, and only it.
#[test]
fn shared_verdicts_down_a_member_only_when_a_policy_says_so() {
    use vigil_detector::outlier::Outcome;
    use vigil_membership::downing::Downing;
    let mut config = Config::lan(CLUSTER);
    config.downing = Downing::new("keep-majority".parse().unwrap()).with_stable_after(Duration::from_secs(5));
    config.gray.counts_for_downing = true;
    let mut c = Cluster::new(6, config);
    let mut now = c.run_until(Instant::from_secs(5));
    c.clear_events();
    let start = now;
    // n0 and n1 see n4 fail, and keep seeing it (their outlier detection
    // would otherwise return it after 30 s).
    while now < start + Duration::from_secs(40) {
        for i in [0, 1] {
            c.nodes[i].record_outcome(now, "n4", Outcome::Response(503), None);
        }
        now = c.run_until(now + Duration::from_millis(500));
    }
    let downed: Vec<(usize, String)> = (0..6)
        .flat_map(|i| {
            c.events(i).into_iter().filter_map(move |e| match e {
                Event::Downed { id, .. } => Some((i, id.name)),
                _ => None,
            })
        })
        .collect();
    assert!(downed.iter().any(|(i, n)| *i == 4 && n == "n4"), "n4 downs itself: {downed:?}");
    assert!(downed.iter().all(|(_, n)| n == "n4"), "nobody else: {downed:?}");
}

/// Anti-entropy by digest: in a steady cluster each periodic exchange is one
/// small stream message that matches the receiver's view; a difference that
/// gossip did not spread is found by a digest and repaired by the exchange
/// it starts, as soon as whole views would have repaired it.
#[test]
fn a_digest_stands_for_a_matching_view_and_starts_an_exchange_when_views_differ() {
    use vigil_membership::Tags;
    let n = 8;
    let mut spread = Vec::new();
    for digest in [true, false] {
        let mut config = Config::lan(CLUSTER);
        config.push_pull_digest = digest;
        let mut c = Cluster::new(n, config);
        c.run_for(Duration::from_secs(10));
        let stream_bytes = |c: &Cluster| -> u64 {
            c.nodes
                .iter()
                .map(|n| {
                    n.stats().bytes_sent_by_kind[MessageKind::PushPull]
                        + n.stats().bytes_sent_by_kind[MessageKind::Digest]
                })
                .sum()
        };
        let before = stream_bytes(&c);
        // 120 s: four periods of 30 s, so about 32 periodic exchanges.
        c.run_for(Duration::from_secs(120));
        let steady = stream_bytes(&c) - before;
        let sent: u64 = c.nodes.iter().map(|n| n.stats().digests_sent).sum();
        let matched: u64 = c.nodes.iter().map(|n| n.stats().digests_matched).sum();
        let differed: u64 = c.nodes.iter().map(|n| n.stats().digests_differed).sum();
        println!(
            "digest {digest}: {steady} stream bytes in 120 s; digests {sent} sent, {matched} matched, {differed} differed"
        );
        if digest {
            // Staggered 30 s timers: each node's first exchange came within
            // its first 30 s, so 4 or 5 per node by now.
            assert!(sent >= 4 * n as u64, "{sent} digests");
            assert_eq!((matched, differed), (sent, 0), "steady views are equal");
            // A digest packet is about 18 bytes; a view of 8 about 120.
            assert!(steady <= 30 * sent, "{steady} bytes for {sent} digests");
        } else {
            assert_eq!(sent, 0);
            // About 32 exchanges, each two views.
            assert!(steady >= 32 * 2 * 100, "{steady} bytes of whole views");
        }
        // n0's new tags reach nobody by gossip: every datagram n0 sends
        // with a rumour is lost, until the rumour's retransmissions run out.
        let now = c.now();
        c.drop_when(|from, _, t| {
            from == 0
                && !t.stream
                && wire::decode(&t.bytes, wire::MAX_DATAGRAM_ACCEPTED).is_ok_and(|p| !p.updates.is_empty())
        });
        let tags = Tags::new([("role", "db")]).unwrap();
        c.nodes[0].set_tags(now, tags.clone());
        let mut all_at = None;
        while c.now() < now + Duration::from_secs(120) && all_at.is_none() {
            c.run_for(Duration::from_millis(500));
            if (1..n).all(|i| c.nodes[i].member("n0").is_some_and(|m| m.tags == tags)) {
                all_at = Some(c.now());
            }
        }
        let took = all_at.expect("the tags reached everyone by anti-entropy") - now;
        println!("digest {digest}: tags everywhere after {took:?}");
        // One push-pull period (30 s) for n0's next exchange, or another's
        // with n0, then a gossip round or two.
        assert!(took <= Duration::from_secs(40), "{took:?}");
        if digest {
            let differed: u64 = c.nodes.iter().map(|n| n.stats().digests_differed).sum();
            assert!(differed >= 1, "the difference was found by a digest");
        }
        assert_eq!(suspicions(&mut c), 0, "lost rumours are no accusation");
        spread.push(took);
    }
    // A digest round costs one more message, not another period.
    assert!(spread[0] <= spread[1] + Duration::from_secs(5), "{spread:?}");
}

/// A view larger than [`Config::view_page`] goes out as several
/// push-pulls, each full but for the last and none over the page; only the
/// first asks for an answer. The receiver merges each as it comes, in any
/// order, and answers once.
#[test]
fn a_view_larger_than_a_page_goes_out_in_pages_merged_as_they_come_and_answered_once() {
    let mut config = Config::lan(CLUSTER);
    config.view_page = 1024;
    let now = Instant::from_secs(1);
    let at = |i: u32| SocketAddr::from(([10, 1, (i >> 8) as u8, i as u8], 7946));
    // The seed knows 300 members (about 21 bytes each on the wire).
    let mut seed = Node::new(NodeId::new("seed", 1), at(0), config.clone(), 1, now).unwrap();
    let known: Vec<(NodeId, SocketAddr)> = (1..=300).map(|i| (NodeId::new(format!("member-{i}"), 1), at(i))).collect();
    seed.bootstrap(now, &known);
    let mut joiner = Node::new(NodeId::new("joiner", 1), at(999), config, 2, now).unwrap();
    joiner.join(now, &[at(0)]);
    let asked: Vec<_> = std::iter::from_fn(|| joiner.poll_transmit()).collect();
    assert_eq!(asked.len(), 1, "a one-member view is one page");
    seed.handle_stream(now, at(999), &asked[0].bytes).unwrap();

    let pages: Vec<_> = std::iter::from_fn(|| seed.poll_transmit())
        .filter(|t| t.kind == MessageKind::PushPull && t.to == at(999))
        .collect();
    let decoded: Vec<(bool, Vec<Update>)> = pages
        .iter()
        .map(|t| match wire::decode(&t.bytes, MAX_STREAM).unwrap().message {
            Message::PushPull { reply, members } => (reply, members),
            other => panic!("not a push-pull: {other:?}"),
        })
        .collect();
    let sizes: Vec<usize> = decoded.iter().map(|(_, m)| m.iter().map(wire::update_len).sum()).collect();
    // The seed and its 300 members (the joiner, a stranger, is only
    // proposed so far), of 19 to 23 bytes each: about 6,500 bytes, 7 pages.
    assert_eq!(decoded.iter().map(|(_, m)| m.len()).sum::<usize>(), 301, "every member once");
    assert_eq!(pages.len(), 7, "page sizes {sizes:?}");
    assert!(sizes.iter().all(|&s| s <= 1024), "no page over the budget: {sizes:?}");
    assert!(sizes[..6].iter().all(|&s| s > 1024 - wire::MAX_UPDATE_LEN), "pages are filled: {sizes:?}");
    let asks: Vec<bool> = decoded.iter().map(|(r, _)| *r).collect();
    assert_eq!(asks, [true, false, false, false, false, false, false], "the joiner's view is asked for once");
    assert_eq!(decoded[0].1[0].id.name, "seed", "the sender first, so the first page introduces it");
    assert_eq!(seed.stats().views_paged, 1);

    // Delivered last page first: each merges as it comes (its sender, the
    // seed, is known from the first one delivered).
    let mut seen = std::collections::BTreeSet::from(["seed".to_owned()]);
    for (k, t) in pages.iter().enumerate().rev() {
        joiner.handle_stream(now, at(0), &t.bytes).unwrap();
        seen.extend(decoded[k].1.iter().map(|u| u.id.name.clone()));
        assert_eq!(joiner.members().count(), seen.len(), "after page {k}, what the pages so far hold");
    }
    assert_eq!(joiner.members().count(), 301, "the seed and its 300 members");
    let answers: Vec<_> = std::iter::from_fn(|| joiner.poll_transmit())
        .filter(|t| t.kind == MessageKind::PushPull && t.to == at(0))
        .map(|t| match wire::decode(&t.bytes, MAX_STREAM).unwrap().message {
            Message::PushPull { reply, members } => (reply, members.len()),
            other => panic!("not a push-pull: {other:?}"),
        })
        .collect();
    assert_eq!(answers.len(), 7, "one answer, in pages: {answers:?}");
    assert!(answers.iter().all(|(reply, _)| !reply), "the answer asks for nothing");
    assert_eq!(answers.iter().map(|(_, n)| n).sum::<usize>(), 302, "the joiner's view: itself and 301");
}
