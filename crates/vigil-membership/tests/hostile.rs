//! The protocol on a hostile network: what one source that is not the
//! member it claims to be (a stranger) can do, and what it cannot; and the
//! tombstones, reconnections and seeds that let a partition of any length
//! heal.

use std::net::SocketAddr;
use std::time::Duration;

use vigil_detector::Instant;
use vigil_membership::wire::{self, MAX_DATAGRAM, MAX_STREAM};
use vigil_membership::{Config, Event, Message, MessageKind, Node, NodeId, Packet, Status, Transmit, Update};

const CLUSTER: u64 = 77;

fn addr(i: usize) -> SocketAddr {
    format!("10.0.0.{}:7946", i + 1).parse().unwrap()
}

fn id(i: usize) -> NodeId {
    NodeId::new(format!("n{i}"), 1)
}

/// Where the attacker sends from: no member's address.
fn stranger() -> SocketAddr {
    "10.66.6.6:40000".parse().unwrap()
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

fn encode(from: NodeId, message: Message, updates: Vec<Update>) -> Vec<u8> {
    let p = Packet { cluster: CLUSTER, from, incarnation: 0, message, updates };
    wire::encode(&p, MAX_STREAM).unwrap()
}

fn alive(name: &str, a: SocketAddr) -> Update {
    let id = NodeId::new(name, 1);
    Update { id: id.clone(), addr: a, incarnation: 0, status: Status::Alive, from: id, tags: None }
}

fn status(node: &Node, name: &str) -> Option<Status> {
    node.member(name).map(|m| m.status)
}

fn events(node: &mut Node) -> Vec<Event> {
    std::iter::from_fn(|| node.poll_event()).collect()
}

fn transmits(node: &mut Node) -> Vec<Transmit> {
    std::iter::from_fn(|| node.poll_transmit()).collect()
}

/// Runs every node, delivering every transmit at once (nothing to or from
/// the nodes in `cut`), until `until`.
fn run(nodes: &mut [Node], cut: &[usize], from: Instant, until: Instant) -> Instant {
    run_watching(nodes, cut, from, until, &mut |_, _, _| {})
}

/// [`run`], showing `seen` each packet sent: when, by whom, what.
fn run_watching(
    nodes: &mut [Node],
    cut: &[usize],
    from: Instant,
    until: Instant,
    seen: &mut dyn FnMut(Instant, usize, &Transmit),
) -> Instant {
    let by_addr: std::collections::HashMap<SocketAddr, usize> = (0..nodes.len()).map(|i| (addr(i), i)).collect();
    let mut now = from;
    while now < until {
        now = nodes.iter().filter_map(Node::poll_timeout).min().unwrap_or(until).min(until);
        for n in nodes.iter_mut() {
            if n.poll_timeout().is_some_and(|t| t <= now) {
                n.handle_timeout(now);
            }
        }
        loop {
            let mut out = Vec::new();
            for (i, n) in nodes.iter_mut().enumerate() {
                out.extend(transmits(n).into_iter().map(|t| (i, t)));
            }
            if out.is_empty() {
                break;
            }
            for (from, t) in out {
                seen(now, from, &t);
                let Some(&to) = by_addr.get(&t.to) else { continue };
                if cut.contains(&from) != cut.contains(&to) {
                    continue;
                }
                let n = &mut nodes[to];
                let _ = if t.stream {
                    n.handle_stream(now, addr(from), &t.bytes)
                } else {
                    n.handle_datagram(now, addr(from), &t.bytes)
                };
            }
        }
    }
    now
}

#[test]
fn a_spoofed_leave_changes_nothing_from_a_stranger_and_is_refuted_from_anywhere() {
    let mut nodes = cluster(4, Config::lan(CLUSTER));
    let t = Instant::from_secs(2);
    let left = Update { status: Status::Left, ..alive("n0", addr(0)) };
    // From a stranger's address, claiming to be n0: nothing changes.
    let spoof = encode(id(0), Message::Gossip, vec![left.clone()]);
    nodes[1].handle_datagram(t, stranger(), &spoof).unwrap();
    assert_eq!(status(&nodes[1], "n0"), Some(Status::Alive));
    assert_eq!(nodes[1].stats().stranger_rumours_ignored, 1);
    assert!(events(&mut nodes[1]).iter().all(|e| !matches!(e, Event::Left { .. })));
    // From n0's own address (a spoofed source): taken, then refuted, since
    // n0 hears of it (the recently left get gossip too) and never left.
    let mut nodes = cluster(4, Config::lan(CLUSTER));
    nodes[1].handle_datagram(t, addr(0), &spoof).unwrap();
    assert_eq!(status(&nodes[1], "n0"), Some(Status::Left));
    run(&mut nodes, &[], t, t + Duration::from_secs(5));
    for (i, node) in nodes.iter().enumerate().skip(1) {
        let m = node.member("n0").unwrap();
        assert_eq!((m.status, m.incarnation), (Status::Alive, 1), "at n{i}");
    }
    assert_eq!(nodes[0].stats().self_refutations, 1);
    // A real leave stays a leave.
    nodes[2].leave(t + Duration::from_secs(5));
    run(&mut nodes, &[], t + Duration::from_secs(5), t + Duration::from_secs(10));
    assert_eq!(status(&nodes[1], "n2"), Some(Status::Left));
}

#[test]
fn a_strangers_death_verdict_changes_nothing() {
    let mut nodes = cluster(5, Config::lan(CLUSTER));
    let t = Instant::from_secs(2);
    let dead = Update { status: Status::Dead, from: id(4), ..alive("n3", addr(3)) };
    nodes[1].handle_datagram(t, stranger(), &encode(id(4), Message::Gossip, vec![dead])).unwrap();
    assert_eq!(status(&nodes[1], "n3"), Some(Status::Alive));
    run(&mut nodes, &[], t, t + Duration::from_secs(30));
    for node in &nodes[..3] {
        assert_eq!(status(node, "n3"), Some(Status::Alive));
    }
    assert!(nodes.iter().all(|n| n.stats().deaths_declared == 0));
}

#[test]
fn a_flood_of_invented_members_never_enters_the_view() {
    let mut nodes = cluster(6, Config::lan(CLUSTER));
    let t = Instant::from_secs(2);
    let watching: Vec<String> = nodes[0].watching().map(str::to_string).collect();
    // 60,000 invented members, 180 to a datagram, from one source.
    let mut sent = 0;
    for batch in 0..334 {
        let updates: Vec<Update> = (0..180)
            .map(|k| {
                let n = batch * 180 + k;
                alive(&format!("fake-{n}"), SocketAddr::from(([10, 99, (n >> 8) as u8, n as u8], 7946)))
            })
            .collect();
        sent += updates.len();
        let bytes = encode(NodeId::new("evil", 1), Message::Gossip, updates);
        nodes[0].handle_datagram(t, stranger(), &bytes).unwrap();
    }
    assert!(sent >= 60_000);
    let s = nodes[0].stats().clone();
    // The budget: 32 proposals a source per 10 s (the sender itself is one).
    assert_eq!(s.introductions_proposed, 32);
    assert_eq!(s.introductions_refused as usize, sent + 1 - 32);
    assert_eq!(nodes[0].candidates(), 32);
    // Each candidate is pinged, once; nothing else is sent for them.
    let out = transmits(&mut nodes[0]);
    let pings = out.iter().filter(|t| t.kind == MessageKind::Ping).count();
    assert_eq!(pings, 32);
    // Nothing in the view, the ring or the events.
    assert_eq!(nodes[0].members().count(), 5);
    assert_eq!(nodes[0].watching().map(str::to_string).collect::<Vec<_>>(), watching);
    assert!(events(&mut nodes[0]).iter().all(|e| !matches!(e, Event::Up { .. })));
    // Unanswered, the candidates are dropped after two probe timeouts.
    let later = t + Duration::from_millis(1_001);
    nodes[0].handle_timeout(later);
    assert_eq!(nodes[0].candidates(), 0);
    assert_eq!(nodes[0].stats().introductions_expired, 32);
    // The cluster carries on: nobody else ever heard of them.
    run(&mut nodes, &[], later, later + Duration::from_secs(20));
    for n in &nodes {
        assert_eq!(n.members().count(), 5);
        assert_eq!(n.members().filter(|m| m.status == Status::Alive).count(), 5);
    }
}

#[test]
fn a_new_member_a_stranger_introduces_is_admitted_once_it_answers() {
    let t = Instant::from_secs(1);
    let mut a = Node::new(id(0), addr(0), Config::lan(CLUSTER), 0, t).unwrap();
    let mut b = Node::new(id(1), addr(1), Config::lan(CLUSTER), 1, t).unwrap();
    // b, unknown to a, writes to a: a pings it before believing it.
    b.join(t, &[]);
    let hello = encode(id(1), Message::Gossip, vec![]);
    a.handle_datagram(t, addr(1), &hello).unwrap();
    assert_eq!(status(&a, "n1"), None);
    assert_eq!(a.candidates(), 1);
    let ping = transmits(&mut a).into_iter().find(|t| t.kind == MessageKind::Ping).unwrap();
    assert_eq!(ping.to, addr(1));
    b.handle_datagram(t, addr(0), &ping.bytes).unwrap();
    let ack = transmits(&mut b).into_iter().find(|t| t.kind == MessageKind::Ack).unwrap();
    a.handle_datagram(t, addr(1), &ack.bytes).unwrap();
    assert_eq!(status(&a, "n1"), Some(Status::Alive));
    assert!(events(&mut a).contains(&Event::Up { id: id(1), addr: addr(1), tags: vigil_membership::Tags::default() }));
    assert_eq!((a.stats().introductions_admitted, a.candidates()), (1, 0));
    // Answering for someone else does not count: the ack must come from the
    // identity pinged.
    let mut c = Node::new(id(0), addr(0), Config::lan(CLUSTER), 0, t).unwrap();
    c.handle_datagram(t, addr(1), &hello).unwrap();
    let ping = transmits(&mut c).into_iter().find(|t| t.kind == MessageKind::Ping).unwrap();
    let Packet { message: Message::Ping { seq, .. }, .. } = wire::decode(&ping.bytes, MAX_DATAGRAM).unwrap() else {
        unreachable!()
    };
    let forged = encode(NodeId::new("someone-else", 1), Message::Ack { seq }, vec![]);
    c.handle_datagram(t, stranger(), &forged).unwrap();
    assert_eq!(status(&c, "n1"), None);
}

#[test]
fn a_strangers_heartbeats_do_not_keep_a_silent_member_alive() {
    let mut nodes = cluster(5, Config::lan(CLUSTER));
    let t0 = Instant::from_secs(1);
    let now = run(&mut nodes, &[], t0, t0 + Duration::from_secs(20));
    let watched = nodes[0].watching().next().unwrap().to_string();
    let i: usize = watched[1..].parse().unwrap();
    // The watched member falls silent (cut off); a stranger sends
    // heartbeats in its name every half second.
    let mut at = now;
    for _ in 0..40 {
        let hb = encode(id(i), Message::Heartbeat, vec![]);
        nodes[0].handle_datagram(at, stranger(), &hb).unwrap();
        at = run(&mut nodes, &[i], at, at + Duration::from_millis(500));
    }
    // Every forged heartbeat was taken, and weighed as a stranger's.
    assert!(nodes[0].stats().from_strangers >= 40, "{}", nodes[0].stats().from_strangers);
    assert_ne!(status(&nodes[0], &watched), Some(Status::Alive), "{watched} is found out");
    assert!(nodes.iter().enumerate().filter(|(j, _)| *j != i).all(|(_, n)| status(n, &watched) != Some(Status::Alive)));
}

#[test]
fn a_dead_member_is_tried_once_an_interval_until_the_reconnect_timeout_then_reaped() {
    let mut config = Config::lan(CLUSTER);
    config.reconnect_interval = Duration::from_secs(10);
    config.reconnect_timeout = Duration::from_secs(60);
    config.tombstone_timeout = Duration::from_secs(120);
    let mut nodes = cluster(4, config);
    let t = Instant::from_secs(2);
    // n0 learns that n2 died and n3 left.
    let dead = Update { status: Status::Dead, from: id(1), ..alive("n2", addr(2)) };
    let left = Update { status: Status::Left, ..alive("n3", addr(3)) };
    nodes[0].handle_datagram(t, addr(1), &encode(id(1), Message::Gossip, vec![dead, left])).unwrap();
    events(&mut nodes[0]);
    let mut n0 = nodes.remove(0);
    // Alone from now on (n1 falls silent too, and is declared dead in its
    // turn): its attempts to reconnect, and what it reaps.
    let mut tries: Vec<(u64, SocketAddr)> = Vec::new();
    let mut reaped = Vec::new();
    let mut died = None;
    let mut now = t;
    while now < t + Duration::from_secs(200) {
        now = n0.poll_timeout().unwrap().max(now);
        n0.handle_timeout(now);
        let ms = now.saturating_duration_since(t).as_millis() as u64;
        for tx in transmits(&mut n0) {
            let p = wire::decode(&tx.bytes, MAX_STREAM).unwrap();
            if let Message::PushPull { members, .. } = &p.message
                && members.len() == 2
            {
                tries.push((ms, tx.to));
            }
        }
        for e in events(&mut n0) {
            match e {
                Event::Reaped { id, status } => reaped.push((id.name, status, ms / 1000)),
                Event::Dead { id, .. } if id.name == "n1" => died = Some(ms),
                _ => {}
            }
        }
    }
    let died = died.expect("n1 declared dead") / 1000;
    // One attempt every 10 s while anyone is dead (the first is the timer's
    // staggered start, overdue here), to one of the dead: never to n3, which
    // left; to n2 only before its timeout, to n1 only before its own.
    assert!(tries[1].0 < 10_000 && tries[1..].windows(2).all(|w| w[1].0 - w[0].0 == 10_000), "{tries:?}");
    assert!(tries.iter().all(|(_, to)| *to != addr(3)));
    assert!(tries.iter().filter(|(_, to)| *to == addr(2)).all(|(ms, _)| *ms < 60_000), "{tries:?}");
    assert!(tries.iter().filter(|(_, to)| *to == addr(1)).all(|(ms, _)| *ms / 1000 < died + 60), "{tries:?}");
    assert!(tries.iter().all(|(ms, _)| *ms / 1000 < died + 60), "none once every tombstone is reaped");
    // Each reaped within the collection period (5 s) of its timeout.
    let when = |name: &str| reaped.iter().find(|r| r.0 == name).map(|r| (r.1, r.2)).unwrap();
    assert_eq!(reaped.len(), 3, "{reaped:?}");
    let (status, at) = when("n2");
    assert!(status == Status::Dead && (60..=65).contains(&at), "{reaped:?}");
    let (status, at) = when("n1");
    assert!(status == Status::Dead && (died + 60..=died + 65).contains(&at), "{reaped:?} (died {died})");
    let (status, at) = when("n3");
    assert!(status == Status::Left && (120..=125).contains(&at), "{reaped:?}");
    assert_eq!(n0.members().count(), 0);
    assert_eq!(n0.stats().reaped, 3);
}

#[test]
fn a_death_or_leave_of_a_member_never_known_is_not_kept() {
    let mut nodes = cluster(3, Config::lan(CLUSTER));
    let t = Instant::from_secs(2);
    let ghost = Update { status: Status::Dead, from: id(1), ..alive("ghost", "10.0.0.50:7946".parse().unwrap()) };
    let gone = Update { status: Status::Left, ..alive("gone", "10.0.0.51:7946".parse().unwrap()) };
    nodes[0].handle_datagram(t, addr(1), &encode(id(1), Message::Gossip, vec![ghost, gone])).unwrap();
    assert_eq!(nodes[0].members().count(), 2);
    let e = events(&mut nodes[0]);
    assert!(e.iter().all(|e| !matches!(e, Event::Dead { .. } | Event::Left { .. } | Event::Up { .. })), "{e:?}");
}

#[test]
fn a_member_that_ends_up_alone_asks_its_seeds_again_for_as_long_as_it_runs() {
    let mut nodes = cluster(3, Config::lan(CLUSTER));
    let t = Instant::from_secs(2);
    nodes[0].join(t, &[addr(1), addr(2)]);
    let now = run(&mut nodes, &[], t, t + Duration::from_secs(5));
    assert!(!nodes[0].take_seed_refresh());
    let retries = nodes[0].stats().join_retries;
    // Cut off: it declares both dead, is alone, and goes back to its seeds
    // (both), again and again, backing off up to 30 s, and asks the runtime
    // to resolve them again each time.
    let mut n0 = nodes.remove(0);
    let mut asked = Vec::new();
    let mut refreshes = 0;
    let mut at = now;
    while at < now + Duration::from_secs(600) {
        at = n0.poll_timeout().unwrap().max(at);
        n0.handle_timeout(at);
        refreshes += usize::from(n0.take_seed_refresh());
        for tx in transmits(&mut n0) {
            // A seed is asked with the whole view (itself and both dead); a
            // reconnection to the dead is a short push-pull of two.
            let p = wire::decode(&tx.bytes, MAX_STREAM).unwrap();
            if let Message::PushPull { members, .. } = &p.message
                && members.len() == 3
            {
                asked.push((at.saturating_duration_since(now).as_secs(), tx.to));
            }
        }
    }
    assert_eq!(n0.members().filter(|m| m.status == Status::Alive).count(), 0);
    let seed_rounds: Vec<u64> = asked.iter().filter(|(_, to)| *to == addr(1)).map(|(s, _)| *s).collect();
    // Every round asks both seeds.
    assert_eq!(asked.iter().filter(|(_, to)| *to == addr(2)).count(), seed_rounds.len());
    assert!(seed_rounds.len() >= 20, "{seed_rounds:?}");
    let gaps: Vec<u64> = seed_rounds.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|g| *g <= 31), "{gaps:?}");
    assert!(gaps.iter().rev().take(10).all(|g| *g >= 29), "backed off to 30 s: {gaps:?}");
    assert_eq!(n0.stats().join_retries - retries, seed_rounds.len() as u64);
    assert_eq!(refreshes, seed_rounds.len());
    // New addresses for the seeds (their names resolved again) are asked at
    // once while alone.
    n0.set_seeds(at, &[addr(1), "10.0.0.77:7946".parse().unwrap()]);
    let asked_now: Vec<SocketAddr> =
        transmits(&mut n0).into_iter().filter(|t| t.kind == MessageKind::PushPull).map(|t| t.to).collect();
    assert_eq!(asked_now, ["10.0.0.77:7946".parse::<SocketAddr>().unwrap()]);
}

#[test]
fn a_remote_views_death_verdict_names_its_sender_as_the_accuser() {
    let mut nodes = cluster(3, Config::lan(CLUSTER));
    let t = Instant::from_secs(2);
    let dead = Update { status: Status::Dead, from: id(2), ..alive("n2", addr(2)) };
    let view = encode(id(1), Message::PushPull { reply: false, members: vec![dead] }, vec![]);
    nodes[0].handle_stream(t, addr(1), &view).unwrap();
    assert_eq!(status(&nodes[0], "n2"), Some(Status::Suspect));
    let e = events(&mut nodes[0]);
    assert!(
        e.iter().any(|e| matches!(e, Event::Suspected { id, by, .. } if id.name == "n2" && by.name == "n1")),
        "{e:?}"
    );
}

#[test]
fn a_member_behind_a_nat_is_heard_once_it_answers_from_its_other_address() {
    let mut nodes = cluster(3, Config::lan(CLUSTER));
    let t = Instant::from_secs(2);
    // n1's packets reach n0 from another port (a NAT rewrote it).
    let nat: SocketAddr = "10.0.0.2:40111".parse().unwrap();
    let hb = encode(id(1), Message::Heartbeat, vec![]);
    nodes[0].handle_datagram(t, nat, &hb).unwrap();
    assert_eq!(nodes[0].stats().from_strangers, 1);
    // n0 pings n1 at its own address; n1 answers, and the answer comes back
    // through the NAT again.
    let ping = transmits(&mut nodes[0]).into_iter().find(|t| t.kind == MessageKind::Ping).expect("a check");
    assert_eq!(ping.to, addr(1));
    nodes[1].handle_datagram(t, addr(0), &ping.bytes).unwrap();
    let ack = transmits(&mut nodes[1]).into_iter().find(|t| t.kind == MessageKind::Ack).unwrap();
    nodes[0].handle_datagram(t, nat, &ack.bytes).unwrap();
    assert_eq!(nodes[0].stats().sources_learned, 1);
    // From now on n1's packets from there are n1's.
    let before = nodes[0].stats().from_strangers;
    nodes[0].handle_datagram(t + Duration::from_millis(10), nat, &hb).unwrap();
    assert_eq!(nodes[0].stats().from_strangers, before);
    // Someone else claiming to be n1 from a third address gets a check too,
    // but n1's own answer comes from its NAT address, not the claimant's:
    // nothing is learned.
    nodes[0].handle_datagram(t, stranger(), &hb).unwrap();
    let ping = transmits(&mut nodes[0]).into_iter().find(|t| t.kind == MessageKind::Ping).expect("a check");
    nodes[1].handle_datagram(t, addr(0), &ping.bytes).unwrap();
    let ack = transmits(&mut nodes[1]).into_iter().find(|t| t.kind == MessageKind::Ack).unwrap();
    nodes[0].handle_datagram(t, nat, &ack.bytes).unwrap();
    assert_eq!(nodes[0].stats().sources_learned, 1);
    let before = nodes[0].stats().from_strangers;
    nodes[0].handle_datagram(t, stranger(), &hb).unwrap();
    assert_eq!(nodes[0].stats().from_strangers, before + 1);
}

/// Six members that decide who survives a partition with `keep-majority`,
/// after 12 s of calm.
fn downing_cluster() -> Vec<Node> {
    let mut config = Config::lan(CLUSTER);
    config.downing = vigil_membership::downing::Downing::new("keep-majority".parse().unwrap())
        .with_stable_after(Duration::from_secs(12));
    cluster(6, config)
}

#[test]
fn a_forged_death_never_downs_a_member_of_a_healthy_cluster() {
    let mut nodes = downing_cluster();
    let t = Instant::from_secs(2);
    let dead = Update { status: Status::Dead, from: id(1), ..alive("n0", addr(0)) };
    // From a stranger's address, and even from a member's own (a forged
    // source): n0 finds nobody unreachable, so it refutes.
    for source in [stranger(), addr(1)] {
        nodes[0].handle_datagram(t, source, &encode(id(1), Message::Gossip, vec![dead.clone()])).unwrap();
    }
    run(&mut nodes, &[], t, t + Duration::from_secs(40));
    assert_eq!(nodes[0].stats().self_downs, 0);
    assert!(nodes[0].stats().self_refutations >= 1);
    assert!(!events(&mut nodes[0]).iter().any(|e| matches!(e, Event::Downed { .. })));
    for node in &nodes[1..] {
        assert_eq!(status(node, "n0"), Some(Status::Alive));
        assert_eq!(node.stats().downing_decisions, 0, "nothing was ever unreachable");
    }
}

#[test]
fn the_minority_downs_itself_and_hears_only_the_majority_until_it_is_back() {
    let mut nodes = downing_cluster();
    let t = Instant::from_secs(2);
    let t = run(&mut nodes, &[], t, t + Duration::from_secs(5));
    // n4 and n5 are cut off for 90 s.
    let t = run(&mut nodes, &[4, 5], t, t + Duration::from_secs(90));
    for (i, n) in nodes.iter().enumerate() {
        let downed = n.stats().self_downs;
        assert_eq!(downed, u64::from(i >= 4), "n{i} downed itself {downed} times");
    }
    for i in [4, 5] {
        let view = nodes[i].snapshot(t);
        assert_eq!(view.id.generation, 2, "n{i} took a new generation");
        assert!(view.members.is_empty(), "n{i} forgot the members it was downed with");
        let seeds: Vec<SocketAddr> = (0..4).map(addr).collect();
        assert_eq!(view.seeds, seeds, "n{i} rejoins through the side that survived");
        // A stranger, or its old side-mate, is not heard meanwhile.
        let hello = encode(
            NodeId::new("n9", 1),
            Message::PushPull { reply: true, members: vec![alive("n9", stranger())] },
            vec![],
        );
        let ignored = nodes[i].stats().ignored_while_downed;
        nodes[i].handle_stream(t, stranger(), &hello).unwrap();
        let mate = if i == 4 { 5 } else { 4 };
        nodes[i].handle_stream(t, addr(mate), &hello).unwrap();
        assert!(nodes[i].member("n9").is_none());
        assert_eq!(nodes[i].stats().ignored_while_downed, ignored + 2);
    }
    for n in &nodes[..4] {
        assert_eq!(status(n, "n4"), Some(Status::Dead));
        assert_eq!(status(n, "n5"), Some(Status::Dead));
    }
    // Healed: one cluster again, n4 and n5 at their new generation.
    let t = run(&mut nodes, &[], t, t + Duration::from_secs(60));
    for (i, n) in nodes.iter().enumerate() {
        for j in (0..6).filter(|&j| j != i) {
            let m = n.member(&format!("n{j}")).unwrap_or_else(|| panic!("n{i} knows n{j}"));
            assert_eq!(m.status, Status::Alive, "n{i} sees n{j}");
            assert_eq!(m.id.generation, if j >= 4 { 2 } else { 1 }, "n{i} sees n{j}");
        }
    }
    let _ = t;
}

#[test]
fn strangers_bring_the_next_push_pull_forward_no_more_than_once_per_interval() {
    // 40 members: the push-pull period is scaled to 60 s.
    let config = Config::lan(CLUSTER);
    let (window, interval) = (config.introduction_window, config.push_pull_interval);
    assert_eq!((window, interval), (Duration::from_secs(10), Duration::from_secs(30)));
    let mut nodes = cluster(40, config);
    let start = Instant::from_secs(2);
    // The push-pulls node 0 starts itself: each begins with the digest of
    // its view (its answers to others' digests start nothing).
    let started: std::cell::RefCell<Vec<Instant>> = std::cell::RefCell::new(Vec::new());
    let mut watch = |at: Instant, from: usize, t: &Transmit| {
        if from == 0 && t.kind == MessageKind::Digest {
            started.borrow_mut().push(at);
        }
    };
    // Ten quiet minutes: the scaled period, 60 s apart.
    let mut t = run_watching(&mut nodes, &[], start, start + Duration::from_secs(600), &mut watch);
    let quiet = started.take();
    assert!((9..=11).contains(&quiet.len()), "{} push-pulls in 600 s, quiet", quiet.len());
    for pair in quiet.windows(2) {
        let gap = pair[1].saturating_duration_since(pair[0]);
        assert_eq!(gap, Duration::from_secs(60), "quiet push-pulls follow the scaled period");
    }
    // Then a stranger writes every second for ten minutes, each time as
    // another sender proposing ten more members.
    let flood_from = t;
    for k in 0..600u32 {
        let updates: Vec<Update> = (0..10)
            .map(|j| {
                let n = k * 10 + j;
                alive(&format!("made-up-{n}"), SocketAddr::from(([10, 98, (n >> 8) as u8, n as u8], 7946)))
            })
            .collect();
        let bytes = encode(NodeId::new(format!("evil-{k}"), 1), Message::Gossip, updates);
        nodes[0].handle_datagram(t, stranger(), &bytes).unwrap();
        t = run_watching(&mut nodes, &[], t, t + Duration::from_secs(1), &mut watch);
    }
    let started = started.take();
    // The first comes `introduction_window` after the first stranger (the
    // next scheduled one was further off), and then one per interval: not
    // one per stranger, not one per window.
    let first = started[0].saturating_duration_since(flood_from);
    assert!(first <= window, "the first catch-up came {first:?} after the flood began");
    for pair in started.windows(2) {
        let gap = pair[1].saturating_duration_since(pair[0]);
        assert!(gap >= interval, "push-pulls {gap:?} apart under a flood of strangers");
    }
    assert!((19..=21).contains(&started.len()), "{} push-pulls in 600 s of strangers", started.len());
    assert!(nodes[0].stats().push_pulls_brought_forward >= 19);
    // Nobody made up entered the view.
    assert!(nodes[0].members().all(|m| !m.id.name.starts_with("made-up-") && !m.id.name.starts_with("evil-")));
}

/// A member's first-hand word that it holds `victim` dead (in generation
/// `generation`), as a decision it carried out would be told.
fn told_dead(teller: usize, victim: usize, generation: u64) -> Vec<u8> {
    let victim_id = NodeId::new(format!("n{victim}"), generation);
    let dead = Update {
        id: victim_id,
        addr: addr(victim),
        incarnation: 0,
        status: Status::Dead,
        from: id(teller),
        tags: None,
    };
    encode(id(teller), Message::Gossip, vec![dead])
}

fn downed_itself(node: &mut Node) -> Vec<String> {
    events(node)
        .into_iter()
        .filter_map(|e| match e {
            Event::Downed { id, reason, .. } if id.name == node.id().name => Some(reason),
            _ => None,
        })
        .collect()
}

#[test]
fn one_members_word_that_a_reachable_member_is_dead_is_not_enough_two_members_words_are() {
    // One member holding the key may say anything: its word alone downs
    // nobody. Two members that each carried out a decision the rest of
    // their side did not take: the member is dead there, and would stay so
    // for ever were it to go on in its generation.
    let mut nodes = downing_cluster();
    let t = run(&mut nodes, &[], Instant::from_secs(2), Instant::from_secs(7));
    let _ = events(&mut nodes[0]);
    nodes[0].handle_datagram(t, addr(1), &told_dead(1, 0, 1)).unwrap();
    assert!(downed_itself(&mut nodes[0]).is_empty(), "n0 downed itself on n1's word alone");
    assert_eq!(nodes[0].id().generation, 1);
    // Told again by the same member: still one member's word.
    let t = t + Duration::from_secs(3);
    nodes[0].handle_datagram(t, addr(1), &told_dead(1, 0, 1)).unwrap();
    assert!(downed_itself(&mut nodes[0]).is_empty(), "n0 counted one teller twice");
    nodes[0].handle_datagram(t, addr(2), &told_dead(2, 0, 1)).unwrap();
    let reasons = downed_itself(&mut nodes[0]);
    assert_eq!(reasons.len(), 1, "two members' own words down it, once: {reasons:?}");
    assert!(reasons[0].contains("n1, n2") && reasons[0].contains("more than one member"), "{}", reasons[0]);
    assert_eq!(nodes[0].id().generation, 2, "it took a new generation");
}

#[test]
fn a_member_that_stalled_takes_one_members_word_once() {
    // Paused past a decision: its own stall explains the verdict, so one
    // teller is enough, and only about the generation that stalled.
    let mut nodes = downing_cluster();
    let t = run(&mut nodes, &[], Instant::from_secs(2), Instant::from_secs(7));
    let _ = events(&mut nodes[0]);
    // n0 runs nothing for 30 s (stable_after is 12 s: a stall of 6 s or
    // more counts), then hears n1.
    let t = t + Duration::from_secs(30);
    nodes[0].handle_datagram(t, addr(1), &told_dead(1, 0, 1)).unwrap();
    let reasons = downed_itself(&mut nodes[0]);
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].contains("stalled"), "{}", reasons[0]);
    assert_eq!(nodes[0].id().generation, 2);
    // The same member says the new generation is dead too: one member's
    // word again, and the stall is spent.
    let t = t + Duration::from_secs(1);
    nodes[0].handle_datagram(t, addr(1), &told_dead(1, 0, 2)).unwrap();
    assert!(downed_itself(&mut nodes[0]).is_empty(), "the stall downed the next generation too");
    assert_eq!(nodes[0].id().generation, 2);
}

#[test]
fn a_newer_process_is_not_buried_on_another_members_word() {
    // n1 restarts (generation 2) and n2 says, first-hand, that n1#2 is
    // dead before n0 ever heard n1#2 itself: n0 keeps what it knows.
    let mut nodes = downing_cluster();
    let t = run(&mut nodes, &[], Instant::from_secs(2), Instant::from_secs(7));
    let before = nodes[0].stats().stale_updates;
    nodes[0].handle_datagram(t, addr(2), &told_dead(2, 1, 2)).unwrap();
    let m = nodes[0].member("n1").expect("n0 knows n1");
    assert_eq!((m.id.generation, m.status), (1, Status::Alive));
    assert_eq!(nodes[0].stats().stale_updates, before + 1);
    assert_eq!(nodes[0].stats().checks_started, 0, "nothing to check: the old process says nothing of the new one");
}

#[test]
fn a_decision_whose_side_is_lost_before_its_margin_ends_is_dropped() {
    // n4 and n5 are cut off: the four decide to down them. Before the
    // margin ends, n0 is cut off from everyone (n4 and n5 come back to the
    // three): alone, n0 is no side that survives, so it downs nobody.
    let mut nodes = downing_cluster();
    let mut t = run(&mut nodes, &[], Instant::from_secs(2), Instant::from_secs(7));
    let limit = t + Duration::from_secs(60);
    while nodes[0].stats().downing_decisions == 0 {
        assert!(t < limit, "n0 decides within 60 s of the cut");
        t = run(&mut nodes, &[4, 5], t, t + Duration::from_millis(100));
    }
    assert_eq!(nodes[0].stats().members_downed, 0, "the margin has not ended yet");
    let t = run(&mut nodes, &[0], t, t + Duration::from_secs(60));
    let n0 = &nodes[0];
    assert_eq!(n0.stats().members_downed, 0, "n0 downed members while alone");
    assert!(n0.stats().decisions_abandoned >= 1, "n0 dropped the decision: {:?}", n0.stats());
    assert_eq!(n0.stats().self_downs, 1, "alone, n0 downs itself once that holds still");
    for i in [4, 5] {
        assert_ne!(status(n0, &format!("n{i}")), Some(Status::Dead), "n0 holds n{i} dead");
    }
    let _ = t;
}
