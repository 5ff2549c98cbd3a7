//! The node's rules, one input at a time, with the components' state in
//! view: refuting, weighing a stranger's word, heartbeats that count,
//! outcomes and the judge's verdicts as events.

use vigil_detector::health::Signal;
use vigil_detector::outlier::{EjectReason, Outcome};

use super::*;
use crate::downing::{Decision, LeaseAnswer};
use crate::message::{Mark, RowEntry};

const CLUSTER: u64 = 5;

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, i as u8 + 1], 7946))
}

fn id(i: usize) -> NodeId {
    NodeId::new(format!("n{i}"), 1)
}

/// Node `n0`, which knows `n1` .. `n{n-1}` alive, at 1 s.
fn node(n: usize, config: Config) -> Node {
    let mut node = Node::new(id(0), addr(0), config, 0, ms(1000)).unwrap();
    let others: Vec<(NodeId, SocketAddr)> = (1..n).map(|i| (id(i), addr(i))).collect();
    node.bootstrap(ms(1000), &others);
    node
}

/// `n0` of `n` members on the LAN preset, deciding with `strategy` after
/// `stable_after` seconds of calm.
fn deciding(n: usize, strategy: &str, stable_after: u64) -> Node {
    let mut config = Config::lan(CLUSTER);
    config.downing =
        crate::downing::Downing::new(strategy.parse().unwrap()).with_stable_after(Duration::from_secs(stable_after));
    node(n, config)
}

/// A datagram from `from` (a member's name and generation) with `updates`.
fn datagram(from: NodeId, message: Message, updates: Vec<Update>) -> Vec<u8> {
    let p = Packet { cluster: CLUSTER, from, incarnation: 0, message, updates };
    wire::encode(&p, wire::MAX_DATAGRAM).unwrap()
}

fn rumour(about: usize, status: Status, from: NodeId) -> Update {
    Update { id: id(about), addr: addr(about), incarnation: 0, status, from, tags: None }
}

/// Runs `node` alone (what it sends is lost) up to `until`, so that inputs
/// at `until` do not find it stalled.
fn run_to(node: &mut Node, until: Instant) {
    while let Some(t) = node.poll_timeout().filter(|t| *t <= until) {
        node.handle_timeout(t);
        while node.poll_transmit().is_some() {}
    }
}

fn events(node: &mut Node) -> Vec<Event> {
    std::iter::from_fn(|| node.poll_event()).collect()
}

#[test]
fn an_accused_member_refutes_and_tells_its_accuser_once() {
    let mut n = node(3, Config::lan(CLUSTER));
    run_to(&mut n, ms(2000));
    let score = n.health.score();
    let accusation = rumour(0, Status::Suspect, id(1));
    n.handle_datagram(ms(2000), addr(1), &datagram(id(1), Message::Gossip, vec![accusation.clone()])).unwrap();
    assert_eq!(n.incarnation(), 1);
    assert!(events(&mut n).contains(&Event::SelfRefuted { incarnation: 1 }));
    assert!(n.refuted_to.contains("n1"));
    assert_eq!(n.health.score(), score + 1, "having to refute raises this node's own bar");
    // The accuser is told directly, with this node's alive rumour first.
    let told: Vec<Transmit> = std::iter::from_fn(|| n.poll_transmit()).filter(|t| t.to == addr(1)).collect();
    assert_eq!(told.len(), 1);
    let p = wire::decode(&told[0].bytes, wire::MAX_STREAM).unwrap();
    assert_eq!((p.updates[0].status, p.updates[0].incarnation), (Status::Alive, 1));
    // The same accusation again: already refuted, nobody is told twice.
    n.handle_datagram(ms(2100), addr(1), &datagram(id(1), Message::Gossip, vec![accusation])).unwrap();
    assert_eq!(n.incarnation(), 1);
    assert!(std::iter::from_fn(|| n.poll_transmit()).all(|t| t.to != addr(1) || t.kind != MessageKind::Gossip));
}

#[test]
fn a_strangers_verdict_changes_nothing_and_a_members_is_taken() {
    let mut n = node(4, Config::lan(CLUSTER));
    // A packet in an unknown member's name, from an unknown address, says
    // n2 is dead, n3 is suspected and n0 (this node) left: nothing changes.
    let stranger = NodeId::new("x", 1);
    let said = vec![
        rumour(2, Status::Dead, stranger.clone()),
        rumour(3, Status::Suspect, stranger.clone()),
        rumour(0, Status::Left, id(0)),
    ];
    n.handle_datagram(ms(2000), addr(9), &datagram(stranger, Message::Gossip, said)).unwrap();
    assert_eq!(n.member("n2").unwrap().status, Status::Alive);
    assert_eq!(n.member("n3").unwrap().status, Status::Alive);
    assert_eq!((n.incarnation(), n.status()), (0, Status::Alive));
    assert_eq!(n.stats().stranger_rumours_ignored, 3);
    assert_eq!(n.stats().from_strangers, 1);
    assert!(n.suspicions.get("n2").is_none() && n.suspicions.get("n3").is_none());
    // A known member, at its own address, is believed: n3 is dead.
    let dead = rumour(3, Status::Dead, id(1));
    n.handle_datagram(ms(2000), addr(1), &datagram(id(1), Message::Gossip, vec![dead])).unwrap();
    assert_eq!(n.member("n3").unwrap().status, Status::Dead);
    assert!(events(&mut n).iter().any(|e| matches!(e, Event::Dead { id, .. } if id.name == "n3")));
    // The same member's word from another address is a stranger's.
    let dead = rumour(1, Status::Dead, id(2));
    n.handle_datagram(ms(2000), addr(8), &datagram(id(2), Message::Gossip, vec![dead])).unwrap();
    assert_eq!(n.member("n1").unwrap().status, Status::Alive);
}

#[test]
fn an_address_moves_only_when_the_member_answers_there_as_itself() {
    let mut n = node(3, Config::lan(CLUSTER));
    run_to(&mut n, ms(2000));
    let elsewhere: SocketAddr = "10.9.9.9:7946".parse().unwrap();
    // n1's own word, relayed by n2 (a member, at its own address): n1 is
    // at another address, at a higher incarnation.
    let moved = Update { addr: elsewhere, incarnation: 5, ..rumour(1, Status::Alive, id(1)) };
    n.handle_datagram(ms(2000), addr(2), &datagram(id(2), Message::Gossip, vec![moved.clone()])).unwrap();
    assert_eq!(n.member("n1").unwrap().addr, addr(1), "not moved on anyone's word");
    assert_eq!(n.member("n1").unwrap().incarnation, 5, "the rest of the rumour is taken");
    // It is asked there, as itself.
    let ping = std::iter::from_fn(|| n.poll_transmit()).find(|t| t.to == elsewhere).expect("a ping at the new address");
    let p = wire::decode(&ping.bytes, wire::MAX_DATAGRAM).unwrap();
    let Message::Ping { seq, target } = p.message else { panic!("{:?}", p.message) };
    assert_eq!(target, id(1));
    // Someone else answers from there: nothing moves.
    let ack = datagram(id(2), Message::Ack { seq }, vec![]);
    n.handle_datagram(ms(2100), elsewhere, &ack).unwrap();
    assert_eq!(n.member("n1").unwrap().addr, addr(1));
    // Asked again, n1 itself answers from there: it moved.
    let moved = Update { incarnation: 6, ..moved };
    n.handle_datagram(ms(3000), addr(2), &datagram(id(2), Message::Gossip, vec![moved])).unwrap();
    let ping = std::iter::from_fn(|| n.poll_transmit()).find(|t| t.to == elsewhere).expect("asked again");
    let Message::Ping { seq, .. } = wire::decode(&ping.bytes, wire::MAX_DATAGRAM).unwrap().message else { panic!() };
    n.handle_datagram(ms(3100), elsewhere, &datagram(id(1), Message::Ack { seq }, vec![])).unwrap();
    assert_eq!(n.member("n1").unwrap().addr, elsewhere);
    assert_eq!(n.stats().addresses_moved, 1);
}

#[test]
fn only_a_members_own_heartbeat_feeds_monitoring() {
    let mut n = node(2, Config::lan(CLUSTER));
    assert_eq!(n.watching().collect::<Vec<_>>(), ["n1"]);
    // In n1's name, from elsewhere: nobody's heartbeat.
    n.handle_datagram(ms(1500), addr(7), &datagram(id(1), Message::Heartbeat, vec![])).unwrap();
    assert!(!n.watch_report("n1", ms(1500)).unwrap().heard);
    // An older generation's: not this one's.
    n.handle_datagram(ms(1600), addr(1), &datagram(NodeId::new("n1", 0), Message::Heartbeat, vec![])).unwrap();
    assert!(!n.watch_report("n1", ms(1600)).unwrap().heard);
    n.handle_datagram(ms(1700), addr(1), &datagram(id(1), Message::Heartbeat, vec![])).unwrap();
    let r = n.watch_report("n1", ms(1700)).unwrap();
    assert!(r.heard && r.heartbeats == 1);
    assert_eq!(n.monitor.last_heartbeat("n1"), Some(ms(1700)));
}

#[test]
fn outcomes_are_recorded_for_live_members_only() {
    let mut n = node(4, Config::lan(CLUSTER));
    let dead = rumour(3, Status::Dead, id(1));
    n.handle_datagram(ms(2000), addr(1), &datagram(id(1), Message::Gossip, vec![dead])).unwrap();
    assert!(!n.record_outcome(ms(2000), "n3", Outcome::Response(200), None), "dead");
    assert!(!n.record_outcome(ms(2000), "nobody", Outcome::Response(200), None), "unknown");
    assert!(!n.record_outcome(ms(2000), "n0", Outcome::Response(200), None), "itself");
    assert!(n.outlier_report("n1").is_none(), "nothing spent yet");
    assert!(n.record_outcome(ms(2000), "n1", Outcome::Response(200), None));
    // Every live member is followed from the first outcome; the dead are not.
    assert!(n.outlier_report("n2").is_some());
    assert!(n.outlier_report("n3").is_none());
    // A member that leaves is forgotten.
    let left = Update { incarnation: 1, ..rumour(2, Status::Left, id(2)) };
    n.handle_datagram(ms(2100), addr(2), &datagram(id(2), Message::Gossip, vec![left])).unwrap();
    assert!(n.outlier_report("n2").is_none());
    assert!(!n.record_outcome(ms(2100), "n2", Outcome::Response(200), None));
}

#[test]
fn an_ejection_is_an_event_and_moves_the_policies_of_an_application_watch() {
    let mut config = Config::lan(CLUSTER);
    config.policies = vec!["route=2,ejection".parse().unwrap()];
    let mut n = node(5, config);
    n.watch(ms(1000), "n1");
    run_to(&mut n, ms(1500));
    events(&mut n);
    for _ in 0..5 {
        assert!(n.record_outcome(ms(1500), "n1", Outcome::Response(503), None));
    }
    let got = events(&mut n);
    let reason = EjectReason::Consecutive5xx;
    assert!(matches!(&got[0], Event::Ejected { id, reason: r, .. } if id.name == "n1" && *r == reason), "{got:?}");
    let signal = Signal::Ejected { reason };
    let policy = Event::Policy { id: id(1), policy: "route".into(), fired: true, level: None, signal, withheld: false };
    assert_eq!(got[1..], [policy]);
    assert_eq!(got[1].to_string(), "n1#1: policy route fired: ejected (consecutive-5xx)");
    // n2 is not watched by the application: ejected, no verdict.
    run_to(&mut n, ms(1600));
    for _ in 0..5 {
        n.record_outcome(ms(1600), "n2", Outcome::Response(503), None);
    }
    assert!(events(&mut n).iter().all(|e| !matches!(e, Event::Policy { .. })));
    // n1 restarts: it comes back as a new process, ejection and verdicts
    // ended without an event of their own.
    run_to(&mut n, ms(1700));
    events(&mut n);
    let reborn = NodeId::new("n1", 2);
    n.handle_datagram(ms(1700), addr(1), &datagram(reborn.clone(), Message::Gossip, vec![])).unwrap();
    // The old process is asked first; it does not answer (it is gone), and
    // the new one is taken.
    assert!(events(&mut n).is_empty(), "not yet: the old process may still run");
    run_to(&mut n, ms(3000));
    let got: Vec<Event> = events(&mut n).into_iter().filter(|e| matches!(e, Event::Up { .. })).collect();
    assert!(matches!(&got[..], [Event::Up { id, .. }] if *id == reborn), "{got:?}");
    assert!(n.outlier_report("n1").unwrap().ejected.is_none());
}

#[test]
fn the_judges_deadline_is_the_nodes_timer() {
    let mut n = node(3, Config::lan(CLUSTER));
    // Before any outcome, monitoring's next decision is the first-heartbeat
    // timeout of the members watched.
    let first = n.timers.get(Timer::Monitor).unwrap();
    assert_eq!(first, ms(1000) + n.config.first_heartbeat_timeout);
    // Outcomes start outlier detection's interval ticks on the same timer.
    n.record_outcome(ms(1100), "n1", Outcome::Response(200), None);
    let tick = ms(1100) + n.config.outliers.interval;
    assert_eq!(n.timers.get(Timer::Monitor), Some(first.min(tick)));
    assert_eq!(n.poll_timeout(), n.timers.earliest());
}

#[test]
fn another_process_of_this_name_is_answered_as_this_one_and_the_conflict_said_once() {
    let mut n = node(3, Config::lan(CLUSTER));
    run_to(&mut n, ms(2000));
    while n.poll_transmit().is_some() {}
    events(&mut n);
    let rival = NodeId::new("n0", 5);
    let there = SocketAddr::from(([10, 9, 9, 9], 7946));
    let ping = |seq| datagram(rival.clone(), Message::Ping { seq, target: id(0) }, vec![]);
    n.handle_datagram(ms(2000), there, &ping(7)).unwrap();
    // The ping is answered, as this process, where it came from.
    let sent: Vec<Transmit> = std::iter::from_fn(|| n.poll_transmit()).filter(|t| t.to == there).collect();
    assert_eq!(sent.len(), 1);
    let p = wire::decode(&sent[0].bytes, wire::MAX_STREAM).unwrap();
    assert_eq!((p.from, p.message), (id(0), Message::Ack { seq: 7 }));
    // Said once, and counted.
    let said: Vec<Event> = events(&mut n).into_iter().filter(|e| matches!(e, Event::NameConflict { .. })).collect();
    assert_eq!(
        said,
        [Event::NameConflict {
            holder: id(0),
            holder_addr: addr(0),
            claimant: rival.clone(),
            claimant_addr: there,
            refused: false
        }]
    );
    assert_eq!(n.stats().name_conflicts, 1);
    // Asked again a moment later: answered, not said again.
    n.handle_datagram(ms(2500), there, &ping(8)).unwrap();
    assert_eq!(std::iter::from_fn(|| n.poll_transmit()).filter(|t| t.to == there).count(), 1);
    assert!(!events(&mut n).iter().any(|e| matches!(e, Event::NameConflict { .. })));
    assert_eq!(n.stats().name_conflicts, 1);
    // Anything else in this node's name, or a ping of another process of
    // it, is an echo or a forgery.
    let other = datagram(rival.clone(), Message::Ping { seq: 9, target: NodeId::new("n0", 2) }, vec![]);
    assert_eq!(n.handle_datagram(ms(2600), there, &other), Err(Rejected::FromSelf));
    assert_eq!(n.handle_datagram(ms(2600), there, &datagram(rival, Message::Gossip, vec![])), Err(Rejected::FromSelf));
}

/// Runs `node` up to `until` with `n1` .. `n{n-1}` well: each sends a
/// heartbeat every 200 ms and answers every ping; what is sent to `mute`
/// is lost. Returns what was sent to it.
fn run_among(node: &mut Node, n: usize, mute: usize, from: Instant, until: Instant) -> Vec<Transmit> {
    let mut to_mute = Vec::new();
    let mut now = from;
    while now < until {
        now = now.saturating_add(Duration::from_millis(200)).min(until);
        run_to(node, now);
        for i in (1..n).filter(|&i| i != mute) {
            node.handle_datagram(now, addr(i), &datagram(id(i), Message::Heartbeat, vec![])).unwrap();
        }
        for t in std::iter::from_fn(|| node.poll_transmit()).collect::<Vec<_>>() {
            let Some(i) = (1..n).find(|&i| addr(i) == t.to) else { continue };
            if i == mute {
                to_mute.push(t);
                continue;
            }
            let p = wire::decode(&t.bytes, wire::MAX_STREAM).unwrap();
            if let Message::Ping { seq, .. } = p.message {
                node.handle_datagram(now, addr(i), &datagram(id(i), Message::Ack { seq }, vec![])).unwrap();
            }
        }
    }
    to_mute
}

/// `n0` of four with `keep-majority` (12 s of calm), whose own decision
/// downed `n3` at 3 s, alone: nobody else said it holds it dead.
fn downed_n3_alone() -> (Node, Instant) {
    let mut n = deciding(4, "keep-majority", 12);
    let _ = run_among(&mut n, 4, 0, ms(1000), ms(3000));
    let downed = ms(3000);
    n.resolver.downed("n3", 1, downed);
    n.apply(downed, Update { status: Status::Dead, ..rumour(3, Status::Alive, id(0)) }, None);
    (n, downed)
}

#[test]
fn a_verdict_nobody_followed_is_withdrawn_when_the_member_answers_as_itself() {
    // n0's decision downed n3 (its margin ended while n0, alone, still
    // could not reach it); the rest of the side spared it. n3 speaks on:
    // it heard the verdict from n0 alone, and reaches the others.
    let (mut n, downed) = downed_n3_alone();
    assert_eq!(n.member("n3").unwrap().status, Status::Dead);
    let _ = events(&mut n);
    let from_n3 = |incarnation| {
        let p = Packet { cluster: CLUSTER, from: id(3), incarnation, message: Message::Gossip, updates: vec![] };
        wire::encode(&p, wire::MAX_DATAGRAM).unwrap()
    };
    // Within two windows (12 s and the 12 s margin, twice: 48 s): n3 is
    // told, not asked.
    let t = ms(40_000);
    let _ = run_among(&mut n, 4, 3, downed, t);
    n.handle_datagram(t, addr(3), &from_n3(1)).unwrap();
    let sent: Vec<Transmit> = std::iter::from_fn(|| n.poll_transmit()).collect();
    assert!(sent.iter().all(|t| t.kind != MessageKind::Ping), "n3 was asked before two windows passed");
    assert_eq!(n.stats().checks_started, 0);
    // Past them: n3 is asked at its address. An answer from elsewhere is
    // not its own; its answer from there is, and the verdict is withdrawn.
    let t = ms(52_000);
    let _ = run_among(&mut n, 4, 3, t - Duration::from_secs(10), t);
    n.handle_datagram(t, addr(3), &from_n3(1)).unwrap();
    let sent: Vec<Transmit> = std::iter::from_fn(|| n.poll_transmit()).collect();
    let ping = sent.iter().find(|t| t.kind == MessageKind::Ping).expect("n3 asked at its address");
    let Message::Ping { seq, target } = wire::decode(&ping.bytes, wire::MAX_STREAM).unwrap().message else {
        unreachable!()
    };
    assert_eq!(target, id(3));
    let ack = datagram(id(3), Message::Ack { seq }, vec![]);
    n.handle_datagram(t + Duration::from_millis(100), SocketAddr::from(([10, 6, 6, 6], 7946)), &ack).unwrap();
    assert_eq!(n.member("n3").unwrap().status, Status::Dead, "a stranger's answer withdrew the verdict");
    // That check is spent; n3 speaks again, is asked again, and answers.
    let t = t + Duration::from_secs(1);
    n.handle_datagram(t, addr(3), &from_n3(1)).unwrap();
    let sent: Vec<Transmit> = std::iter::from_fn(|| n.poll_transmit()).collect();
    let ping = sent.iter().find(|t| t.kind == MessageKind::Ping).expect("n3 asked again");
    let Message::Ping { seq, .. } = wire::decode(&ping.bytes, wire::MAX_STREAM).unwrap().message else {
        unreachable!()
    };
    let ack = datagram(id(3), Message::Ack { seq }, vec![]);
    n.handle_datagram(t + Duration::from_millis(100), addr(3), &ack).unwrap();
    assert_eq!(n.stats().downs_withdrawn, 1);
    let m = n.member("n3").unwrap();
    assert_eq!((m.status, m.id.generation), (Status::Alive, 1), "the same process, alive again");
    assert!(events(&mut n).iter().any(|e| matches!(e, Event::Up { id, .. } if *id == self::id(3))));
}

#[test]
fn a_verdict_another_member_followed_is_kept() {
    // As above, but n1 says it holds n3 dead too: n3 should hear two
    // members, and down itself; n0 keeps its verdict, and never asks.
    let (mut n, _) = downed_n3_alone();
    let followed = rumour(3, Status::Dead, id(1));
    n.handle_datagram(ms(4000), addr(1), &datagram(id(1), Message::Gossip, vec![followed])).unwrap();
    let t = ms(60_000);
    let _ = run_among(&mut n, 4, 3, ms(4000), t);
    let p = Packet { cluster: CLUSTER, from: id(3), incarnation: 1, message: Message::Gossip, updates: vec![] };
    n.handle_datagram(t, addr(3), &wire::encode(&p, wire::MAX_DATAGRAM).unwrap()).unwrap();
    let sent: Vec<Transmit> = std::iter::from_fn(|| n.poll_transmit()).collect();
    assert!(sent.iter().all(|t| t.kind != MessageKind::Ping), "n3 was asked though n1 followed");
    assert_eq!(n.member("n3").unwrap().status, Status::Dead);
    assert_eq!(n.stats().downs_withdrawn, 0);
}

#[test]
fn one_members_word_does_not_down_a_member_this_nodes_decision_spared_and_two_members_do() {
    // n0's decision to down n3 was carried out at 3 s, and spared it (it
    // answered before the margin ended); n0 remembers the decision for a
    // while, and reaches n3 all along.
    let mut n = deciding(4, "keep-majority", 12);
    let _ = run_among(&mut n, 4, 0, ms(1000), ms(3000));
    let decided = crate::downing::Pending {
        decision: crate::downing::Decision::DownUnreachable,
        down: vec!["n3".into()],
        generations: vec![1],
        reason: "a test".into(),
        at: ms(3000),
        lease_asked: false,
        lease_holder: None,
        threatened: false,
        unstable: false,
    };
    n.resolver.carried_out(&decided, ms(60_000));
    assert!(n.resolver.decided_down("n3", 1, ms(4000)), "the decision is remembered");
    // n1 alone says it holds n3 dead: one member's word, which a member
    // holding the key could give, so n3 is asked, answers, and stays.
    let dead = |from: usize| datagram(id(from), Message::Gossip, vec![rumour(3, Status::Dead, id(from))]);
    let _ = run_among(&mut n, 4, 0, ms(3000), ms(4000));
    n.handle_datagram(ms(4000), addr(1), &dead(1)).unwrap();
    assert_eq!(n.stats().checks_started, 1, "n3 is asked about n1's word");
    let sent: Vec<Transmit> = std::iter::from_fn(|| n.poll_transmit()).collect();
    let ping = sent.iter().find(|t| t.kind == MessageKind::Ping && t.to == addr(3)).expect("n3 asked");
    let Message::Ping { seq, .. } = wire::decode(&ping.bytes, wire::MAX_STREAM).unwrap().message else {
        unreachable!()
    };
    n.handle_datagram(ms(4010), addr(3), &datagram(id(3), Message::Ack { seq }, vec![])).unwrap();
    let _ = run_among(&mut n, 4, 0, ms(4010), ms(8000));
    assert_eq!(n.stats().checks_refuted, 1, "n3 answered");
    assert_eq!(n.member("n3").unwrap().status, Status::Alive, "one member's word downed a member n0 reaches");
    // n2 says so too: two members carried the decision out, n0 follows
    // (n3, told by both, downs itself), so that the side downs it as one.
    n.handle_datagram(ms(8000), addr(2), &dead(2)).unwrap();
    assert_eq!(n.member("n3").unwrap().status, Status::Dead, "two members' word is the side's");
}

#[test]
fn a_newer_process_of_a_member_a_decision_downed_waits_while_this_member_cannot_reach_others() {
    // n3 was downed by a decision; n1 then falls silent. n3 comes back as a
    // new process: counted now, it would make this side look larger than
    // a side n1 may be on, which downed n3 too and does not know the new
    // process. It is taken once n1 answers again.
    let (mut n, downed) = downed_n3_alone();
    let t = ms(12_000);
    let _ = run_among(&mut n, 3, 1, downed, t);
    let unreachable: Vec<String> = n
        .rows
        .own()
        .filter(|(_, _, m)| *m == crate::message::Mark::Unreachable)
        .map(|(name, _, _)| name.to_string())
        .collect();
    assert_eq!(unreachable, ["n1"], "n1 is unreachable from n0 by 12 s");
    let newer = NodeId::new("n3", 2);
    let back = || {
        datagram(
            NodeId::new("n3", 2),
            Message::Gossip,
            vec![Update {
                id: NodeId::new("n3", 2),
                addr: addr(3),
                incarnation: 0,
                status: Status::Alive,
                from: NodeId::new("n3", 2),
                tags: None,
            }],
        )
    };
    n.handle_datagram(t, addr(3), &back()).unwrap();
    assert_eq!(n.member("n3").map(|m| (m.id.generation, m.status)), Some((1, Status::Dead)));
    assert!(n.stats().rejoins_deferred >= 1);
    // n1 answers again (refuting, at a higher incarnation): the newer
    // process is taken.
    let refute = Update { incarnation: 5, ..rumour(1, Status::Alive, id(1)) };
    let p = Packet { cluster: CLUSTER, from: id(1), incarnation: 5, message: Message::Gossip, updates: vec![refute] };
    n.handle_datagram(t, addr(1), &wire::encode(&p, wire::MAX_DATAGRAM).unwrap()).unwrap();
    let t2 = ms(16_000);
    let _ = run_among(&mut n, 3, usize::MAX, t, t2);
    assert!(n.rows.own().all(|(_, _, m)| m != crate::message::Mark::Unreachable), "n1 reachable again by 16 s");
    n.handle_datagram(t2, addr(3), &back()).unwrap();
    assert_eq!(n.member("n3").map(|m| (m.id.clone(), m.status)), Some((newer, Status::Alive)));
}

/// Runs `n0` among `n` members of which `mute` is silent, a second at a
/// time from `from`, answering every renewal of the lease with `renewal`,
/// until it asks the lease for a decision (returned with when) or `until`.
fn until_lease_asked(
    node: &mut Node,
    n: usize,
    mute: usize,
    from: Instant,
    until: Instant,
    renewal: LeaseAnswer,
) -> Option<(crate::downing::LeaseRequest, Instant)> {
    let mut now = from;
    while now < until {
        let next = now.saturating_add(Duration::from_secs(1)).min(until);
        let _ = run_among(node, n, mute, now, next);
        now = next;
        match node.take_lease_request() {
            Some(r) if r.renewal => node.lease_answer(now, renewal.clone()),
            Some(r) => return Some((r, now)),
            None => {}
        }
    }
    None
}

#[test]
fn the_side_that_took_the_lease_renews_it_hands_it_over_and_downs_itself_when_another_side_took_it() {
    use crate::downing::{LEASE_RENEW_EVERY, LeaseRequest, lease_holder};
    let mut n = deciding(3, "lease-majority", 5);
    // n2 is silent: n0 and n1 (which says so in its row) ask the lease for
    // their side.
    let _ = run_among(&mut n, 3, 2, ms(1000), ms(8000));
    let entries = vec![RowEntry { id: id(2), mark: Mark::Unreachable }];
    let row = Message::Reachability { version: 1, page: 0, pages: 1, entries };
    n.handle_datagram(ms(8000), addr(1), &datagram(id(1), row, vec![])).unwrap();
    let (asked, granted) =
        until_lease_asked(&mut n, 3, 2, ms(8000), ms(40_000), LeaseAnswer::Granted).expect("asked within 40 s");
    let ours = lease_holder(&["n0", "n1"]);
    assert_eq!(asked, LeaseRequest { holder: ours.clone(), replacing: None, renewal: false });
    n.lease_answer(granted, LeaseAnswer::Granted);
    // Renewed every 30 s from the grant, not before, one request at a time.
    let due = granted + LEASE_RENEW_EVERY;
    let _ = run_among(&mut n, 3, 2, granted, due - Duration::from_millis(200));
    assert_eq!(n.take_lease_request(), None, "renewed before 30 s");
    let _ = run_among(&mut n, 3, 2, due - Duration::from_millis(200), due);
    let renewal = n.take_lease_request().expect("renewed at 30 s");
    assert_eq!(renewal, LeaseRequest { holder: ours.clone(), replacing: None, renewal: true });
    assert_eq!(n.take_lease_request(), None, "a second request before the answer");
    n.lease_answer(due, LeaseAnswer::Granted);
    assert_eq!(n.stats().lease_renewals, 1);
    assert_eq!(n.member("n2").map(|m| m.status), Some(Status::Dead), "n2 downed by the side holding the lease");
    // n1 falls silent too: n0 alone asks for its own side, replacing the
    // holder its side took the lease for, so that the first part of that
    // side to ask takes it over.
    let (asked, at) =
        until_lease_asked(&mut n, 2, 1, due, due + Duration::from_secs(60), LeaseAnswer::Granted).expect("asked again");
    assert_eq!(asked, LeaseRequest { holder: lease_holder(&["n0"]), replacing: Some(ours.clone()), renewal: false });
    n.lease_answer(at, LeaseAnswer::Granted);
    // n0 holds the lease for itself now; another side takes it (n0's
    // renewals stopped for longer than the lease's time to live): at its
    // next renewal n0 learns it and downs itself.
    let due = at + LEASE_RENEW_EVERY;
    let _ = run_among(&mut n, 2, 1, at, due);
    let renewal = n.take_lease_request().expect("renewed");
    assert_eq!(renewal, LeaseRequest { holder: lease_holder(&["n0"]), replacing: None, renewal: true });
    let _ = events(&mut n);
    n.lease_answer(due, LeaseAnswer::Refused { holder: Some(lease_holder(&["n1"])) });
    let downed = events(&mut n).into_iter().any(|e| matches!(e, Event::Downed { ref id, .. } if id.name == "n0"));
    assert!(downed, "n0 went on as the cluster without the lease");
    assert_eq!((n.stats().self_downs, n.stats().lease_renewals_failed), (1, 1));
    assert_eq!(n.take_lease_request(), None, "a new generation renews nothing");
}

/// `n0` of five with `keep-majority` (12 s of calm), whose decision downed
/// `n4` at `downed_at`; from `cut_at`, `n2` and `n3` are silent and `n1`
/// says in its row that it cannot reach them either. What `n0` decides.
fn two_against_two_after_a_downing(downed_at: Instant, cut_at: Instant) -> Vec<Event> {
    let mut n = deciding(5, "keep-majority", 12);
    let _ = run_among(&mut n, 4, usize::MAX, ms(1000), downed_at);
    n.resolver.downed("n4", 1, downed_at);
    n.apply(downed_at, Update { status: Status::Dead, ..rumour(4, Status::Alive, id(0)) }, None);
    let _ = run_among(&mut n, 4, usize::MAX, downed_at, cut_at);
    let _ = events(&mut n);
    let told = cut_at + Duration::from_secs(8);
    let _ = run_among(&mut n, 2, usize::MAX, cut_at, told);
    let entries =
        vec![RowEntry { id: id(2), mark: Mark::Unreachable }, RowEntry { id: id(3), mark: Mark::Unreachable }];
    let row = Message::Reachability { version: 1, page: 0, pages: 1, entries };
    n.handle_datagram(told, addr(1), &datagram(id(1), row, vec![])).unwrap();
    let _ = run_among(&mut n, 2, usize::MAX, told, told + Duration::from_secs(20));
    events(&mut n)
}

#[test]
fn a_member_downed_lately_counts_against_this_side_for_two_windows() {
    let decided = |events: &[Event]| {
        events.iter().find_map(|e| match e {
            Event::Decided { decision, .. } => Some(*decision),
            _ => None,
        })
    };
    // n4 downed at 3 s, the cut at 10 s: n4 may be back, as a newer
    // process, on the other side (it downed itself and rejoined there),
    // so n0 and n1 are two against three, and n0 downs itself.
    let soon = two_against_two_after_a_downing(ms(3000), ms(10_000));
    assert_eq!(decided(&soon), Some(Decision::DownReachable), "{soon:?}");
    assert!(soon.iter().any(|e| matches!(e, Event::Downed { id, .. } if id.name == "n0")));
    // The cut two windows (of 12 s and the margin) later: n4 no longer
    // counts; two against two, the side with the lowest address (n0's)
    // survives and downs n2 and n3.
    let late = two_against_two_after_a_downing(ms(3000), ms(120_000));
    assert_eq!(decided(&late), Some(Decision::DownUnreachable), "{late:?}");
    assert!(late.iter().all(|e| !matches!(e, Event::Downed { id, .. } if id.name == "n0")));
}

#[test]
fn under_lease_majority_one_members_word_downs_nobody_and_two_members_do() {
    // n0 of five with `lease-majority` reaches everyone. n1 (a member
    // holding the key that lies) tells it, again and again, that it holds
    // it dead: the lease would keep n1's side whatever it is, but one
    // member's word is weighed as a majority's would be, and n1 alone is
    // not one. A second member's word is enough (two members' own
    // decisions: at least one of them correct).
    let mut n = deciding(5, "lease-majority", 5);
    let _ = run_among(&mut n, 5, usize::MAX, ms(1000), ms(4000));
    let _ = events(&mut n);
    let told = |n: &mut Node, by: usize, t: Instant| {
        let death = rumour(0, Status::Dead, id(by));
        n.handle_datagram(t, addr(by), &datagram(id(by), Message::Gossip, vec![death])).unwrap();
    };
    for k in 0..10 {
        let t = ms(4000 + 1000 * k);
        let _ = run_among(&mut n, 5, usize::MAX, t, t + Duration::from_millis(1000));
        told(&mut n, 1, t + Duration::from_millis(1000));
    }
    let seen = events(&mut n);
    assert_eq!(n.stats().self_downs, 0, "one member's word downed n0: {seen:?}");
    assert_eq!(n.id().generation, 1);
    told(&mut n, 2, ms(14_100));
    assert_eq!(n.stats().self_downs, 1, "two members' word");
    let downed = events(&mut n).into_iter().find_map(|e| match e {
        Event::Downed { id, reason, .. } if id.name == "n0" => Some(reason),
        _ => None,
    });
    assert_eq!(downed.as_deref(), Some("declared dead by n1, n2 (more than one member's own decision)"));
}

#[test]
fn a_member_the_others_hold_dead_counts_unreachable_from_them_too() {
    // n0 of four with `keep-majority`: n1 says it holds n3 dead (n1's
    // side downed it while n0 was away, and forgot it: it sends no row
    // about it), and n3 does not answer n0 either. n0 alone holds n3 in
    // its row; counted as n1 and n2's silence, n0's core would be itself,
    // and it would wait for ever. The others' word that n3 is dead counts
    // as their finding it unreachable: n0's core is n0, n1 and n2, a
    // majority, and it downs n3 by its own decision.
    let mut n = deciding(4, "keep-majority", 5);
    let _ = run_among(&mut n, 4, usize::MAX, ms(1000), ms(4000));
    let death = rumour(3, Status::Dead, id(1));
    n.handle_datagram(ms(4000), addr(1), &datagram(id(1), Message::Gossip, vec![death])).unwrap();
    let _ = run_among(&mut n, 4, 3, ms(4000), ms(40_000));
    let seen = events(&mut n);
    let decided = seen.iter().find_map(|e| match e {
        Event::Decided { decision, down, .. } => Some((*decision, down.clone())),
        _ => None,
    });
    assert_eq!(decided, Some((Decision::DownUnreachable, vec!["n3".to_owned()])), "{seen:?}");
    let dead_by_n0 = seen.iter().any(|e| matches!(e, Event::Dead { id, by, .. } if id.name == "n3" && by.name == "n0"));
    assert!(dead_by_n0, "{seen:?}");
}

/// `n0` of four with `lease-majority` (5 s of calm): n3 is silent, and n1
/// and n2 say, first-hand, they hold it dead (their side downed it with
/// the lease, and forgot it). n0 asks the lease for its core (n0, n1, n2)
/// and is refused with `answer`. What it emitted over the next 20 s.
fn refused_after_the_others_downed_n3(answer: LeaseAnswer) -> Vec<Event> {
    let mut n = deciding(4, "lease-majority", 5);
    let _ = run_among(&mut n, 4, usize::MAX, ms(1000), ms(4000));
    for teller in [1, 2] {
        let death = rumour(3, Status::Dead, id(teller));
        n.handle_datagram(ms(4000), addr(teller), &datagram(id(teller), Message::Gossip, vec![death])).unwrap();
    }
    lease_refused(&mut n, (ms(4000), ms(60_000)), &["n0", "n1", "n2"], answer)
}

/// `n0` (of four, `n3` silent) from `from` until it asks the lease (by
/// `until`), for `core`; then `answer`. What it emitted over the next 20 s.
fn lease_refused(n: &mut Node, (from, until): (Instant, Instant), core: &[&str], answer: LeaseAnswer) -> Vec<Event> {
    let (asked, at) = until_lease_asked(n, 4, 3, from, until, LeaseAnswer::Granted).expect("asked in time");
    assert_eq!(asked.holder, crate::downing::lease_holder(core));
    let _ = events(n);
    n.lease_answer(at, answer);
    let _ = run_among(n, 4, 3, at, at + Duration::from_secs(20));
    events(n)
}

#[test]
fn refused_the_lease_its_own_core_holds_a_member_follows_the_holders_deaths() {
    use crate::downing::lease_holder;
    // The lease is held for n1's side (n1 and n2, named after n1), which
    // is n0's core: n0 downs n3, as n1 and n2 did, and not itself.
    let seen = refused_after_the_others_downed_n3(LeaseAnswer::Refused { holder: Some(lease_holder(&["n1", "n2"])) });
    let downed: Vec<(String, String)> = seen
        .iter()
        .filter_map(|e| match e {
            Event::Downed { id, by, reason, .. } => Some((id.name.clone(), format!("{} {reason}", by.name))),
            _ => None,
        })
        .collect();
    assert_eq!(downed.len(), 1, "{seen:?}");
    assert_eq!(downed[0].0, "n3");
    assert!(downed[0].1.starts_with("n0 n1's side, which holds the lease, holds them dead"), "{:?}", downed[0]);
    // Held for a side n0 does not know (n3's, perhaps): n0 follows no
    // death, and downs itself (that side may down it).
    let seen = refused_after_the_others_downed_n3(LeaseAnswer::Refused { holder: Some(lease_holder(&["n3"])) });
    let downed: Vec<&str> = seen
        .iter()
        .filter_map(|e| match e {
            Event::Downed { id, .. } => Some(id.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(downed, ["n0"], "{seen:?}");
}

#[test]
fn refused_the_lease_its_own_core_holds_a_member_follows_what_the_core_passes_on() {
    use crate::downing::lease_holder;
    // The lease is held for n1's side (n1 and n2, named after n1), n0's
    // core, and n1's word that it holds n3 dead was missed: n1 only says,
    // in its row, that it cannot reach n3. n2 passes on, first-hand, a
    // newer process of n3's name at another address (it holds the old one
    // gone: its side downed it). n0 downs the old n3 after the margin, as
    // its core did.
    let newer = Update {
        id: NodeId::new("n3", 2),
        addr: SocketAddr::from(([10, 0, 0, 9], 7946)),
        incarnation: 0,
        status: Status::Alive,
        from: NodeId::new("n3", 2),
        tags: None,
    };
    let holder = || LeaseAnswer::Refused { holder: Some(lease_holder(&["n1", "n2"])) };
    let downed = |seen: &[Event]| -> Vec<(String, u64, String)> {
        seen.iter()
            .filter_map(|e| match e {
                Event::Downed { id, by, reason, .. } => {
                    Some((id.name.clone(), id.generation, format!("{} {reason}", by.name)))
                }
                _ => None,
            })
            .collect()
    };
    let seen = core_passes_on(Some((2, newer.clone())), holder());
    let d = downed(&seen);
    assert_eq!(d.len(), 1, "{seen:?}");
    assert_eq!((d[0].0.as_str(), d[0].1), ("n3", 1), "{d:?}");
    assert!(d[0].2.starts_with("n0 n1's side, which holds the lease, holds them dead"), "{d:?}");
    // Nobody of its core passed anything on: n0 follows no death (its
    // core holds the lease, so it does not down itself either).
    let seen = core_passes_on(None, holder());
    assert!(downed(&seen).is_empty(), "{seen:?}");
}

/// `n0` of four with `lease-majority` (5 s of calm): n1 says in its row
/// that it cannot reach n3 and accuses it; once n0 finds n3 unreachable
/// too, `told` (a teller and what it passes on) is heard. n0 asks the
/// lease for its core and is refused with `answer`. What it emitted over
/// the next 20 s.
fn core_passes_on(told: Option<(usize, Update)>, answer: LeaseAnswer) -> Vec<Event> {
    let mut n = deciding(4, "lease-majority", 5);
    let _ = run_among(&mut n, 4, usize::MAX, ms(1000), ms(4000));
    let entries = vec![RowEntry { id: id(3), mark: crate::message::Mark::Unreachable }];
    let row = Message::Reachability { version: 1, page: 0, pages: 1, entries };
    n.handle_datagram(ms(4000), addr(1), &datagram(id(1), row, vec![])).unwrap();
    let accused = rumour(3, Status::Suspect, id(1));
    n.handle_datagram(ms(4000), addr(1), &datagram(id(1), Message::Gossip, vec![accused])).unwrap();
    let mut now = ms(4000);
    while n.stats().found_unreachable == 0 {
        assert!(now < ms(30_000), "n0 never found n3 unreachable: {:?}", events(&mut n));
        let _ = run_among(&mut n, 4, 3, now, now.saturating_add(Duration::from_millis(200)));
        now = now.saturating_add(Duration::from_millis(200));
    }
    if let Some((teller, u)) = &told {
        n.handle_datagram(now, addr(*teller), &datagram(id(*teller), Message::Gossip, vec![u.clone()])).unwrap();
    }
    // Its core: n0 and n1, whose row is its own, and n2 if it passed
    // something on (it holds n3 gone: it finds it unreachable, as a row
    // would say).
    let core: &[&str] = if told.is_some() { &["n0", "n1", "n2"] } else { &["n0", "n1"] };
    lease_refused(&mut n, (now, ms(90_000)), core, answer)
}

#[test]
fn a_member_whose_row_holds_one_this_node_holds_dead_or_gone_is_told_first_hand() {
    // n0 downed n3. n1's row says it cannot reach n3 (in the generation
    // n0 downed): n0 tells n1, first-hand, that it holds n3 dead, once a
    // probe interval however often the row comes.
    let (mut n, downed) = downed_n3_alone();
    let row = |version| {
        let entries = vec![RowEntry { id: id(3), mark: Mark::Unreachable }];
        datagram(id(1), Message::Reachability { version, page: 0, pages: 1, entries }, vec![])
    };
    let told = |n: &mut Node| -> Vec<Update> {
        std::iter::from_fn(|| n.poll_transmit())
            .filter(|t| t.to == addr(1))
            .filter_map(|t| wire::decode(&t.bytes, wire::MAX_STREAM).ok())
            .filter(|p| matches!(p.message, Message::Gossip))
            .flat_map(|p| p.updates)
            .filter(|u| u.id.name == "n3")
            .collect()
    };
    let t = downed + Duration::from_millis(100);
    while n.poll_transmit().is_some() {}
    n.handle_datagram(t, addr(1), &row(1)).unwrap();
    // (The death may also ride along as a rumour still being spread.)
    let sent = told(&mut n);
    assert!(!sent.is_empty());
    assert!(sent.iter().all(|u| (u.id.generation, u.status, u.from.name.as_str()) == (1, Status::Dead, "n0")));
    assert_eq!(n.stats().held_told, 1);
    // Again within a probe interval (1 s on the LAN preset): not told again.
    n.handle_datagram(t + Duration::from_millis(300), addr(1), &row(2)).unwrap();
    assert_eq!(n.stats().held_told, 1);
    // A row about a member n0 reaches says nothing to tell.
    let entries = vec![RowEntry { id: id(2), mark: Mark::Unreachable }];
    let about_n2 = datagram(id(1), Message::Reachability { version: 3, page: 0, pages: 1, entries }, vec![]);
    n.handle_datagram(t + Duration::from_millis(1500), addr(1), &about_n2).unwrap();
    assert_eq!(n.stats().held_told, 1);
    // A newer process of n3 at the same address (a restart) replaces the
    // dead one here: n1, whose row still holds the old one, is told of
    // the newer, from itself.
    let t = t + Duration::from_secs(3);
    let newer = Update {
        id: NodeId::new("n3", 2),
        addr: addr(3),
        incarnation: 0,
        status: Status::Alive,
        from: NodeId::new("n3", 2),
        tags: None,
    };
    n.handle_datagram(t, addr(3), &datagram(NodeId::new("n3", 2), Message::Gossip, vec![newer])).unwrap();
    assert_eq!(n.member("n3").map(|m| (m.id.generation, m.status)), Some((2, Status::Alive)));
    while n.poll_transmit().is_some() {}
    n.handle_datagram(t, addr(1), &row(4)).unwrap();
    assert_eq!(n.stats().held_told, 2);
    let sent = told(&mut n);
    assert!(sent.iter().any(|u| (u.id.generation, u.status) == (2, Status::Alive)), "{sent:?}");
}

#[test]
fn refused_the_lease_for_a_member_that_holds_it_dead_a_member_downs_itself() {
    use crate::downing::lease_holder;
    // n0 of four with `lease-majority` reaches everyone; n1's row says it
    // cannot reach n0, so n0 asks the lease for its own side. Meanwhile
    // n1's side took the lease and downed n0: n1's row no longer holds n0
    // (it holds it dead, and says so to n0 first-hand). Refused for n1's
    // side, n0 downs itself: that side downed it, though its row says
    // nothing of n0 (the swarm found a member that stayed so, 44903).
    let mut n = deciding(4, "lease-majority", 5);
    let _ = run_among(&mut n, 4, usize::MAX, ms(1000), ms(4000));
    let row = |version, entries| datagram(id(1), Message::Reachability { version, page: 0, pages: 1, entries }, vec![]);
    n.handle_datagram(ms(4000), addr(1), &row(1, vec![RowEntry { id: id(0), mark: Mark::Unreachable }])).unwrap();
    let (asked, at) = until_lease_asked(&mut n, 4, usize::MAX, ms(4000), ms(60_000), LeaseAnswer::Granted)
        .expect("threatened, n0 asks the lease within 60 s");
    assert_ne!(asked.holder, lease_holder(&["n1"]));
    n.handle_datagram(at, addr(1), &row(2, vec![])).unwrap();
    let death = rumour(0, Status::Dead, id(1));
    n.handle_datagram(at, addr(1), &datagram(id(1), Message::Gossip, vec![death])).unwrap();
    assert_eq!(n.stats().self_downs, 0, "one member's word alone downs nobody");
    let _ = events(&mut n);
    n.lease_answer(at, LeaseAnswer::Refused { holder: Some(lease_holder(&["n1"])) });
    let seen = events(&mut n);
    let downed = seen.iter().find_map(|e| match e {
        Event::Downed { id, reason, .. } if id.name == "n0" => Some(reason.clone()),
        _ => None,
    });
    assert!(downed.as_deref().is_some_and(|r| r.starts_with("the lease went to the other side")), "{seen:?}");
}
