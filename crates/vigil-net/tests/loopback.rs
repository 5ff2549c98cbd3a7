//! Members on real sockets, in one process, on 127.0.0.1.
//!
//! Bounds are generous for a loaded two-core machine and stated where used;
//! the LAN preset detects a crash in about 4 s on an idle one.

use std::net::SocketAddr;
use std::time::Duration;

use std::sync::Arc;
use tokio::net::UdpSocket;
use tokio::time::{Instant, sleep};
use vigil_membership::keyring::Keyring;

use vigil_membership::seal::{OpenError, SealMode};
use vigil_membership::{Event, Status};
use vigil_net::{Cluster, Events, Faults};

mod common;
use common::{alive, event, until_all};

const LOCAL: &str = "127.0.0.1:0";

/// How long members joined through one seed are given to see each other
/// alive. A joiner learns of the members that join after it from their
/// alive rumours, each passed on a few times to members picked at random
/// (see `tags_propagate_and_update_live`); the epidemic can miss one, which
/// then learns them at its first push-pull (each member starts one every
/// 30 s on the LAN preset). Usually within a second or two; once in CI, 10
/// members took longer than 10 s. So: the push-pull interval and 5 s.
const CONVERGE: Duration = Duration::from_secs(35);

async fn start(name: &str, seeds: &[SocketAddr], keys: Option<(Keyring, SealMode)>) -> Cluster {
    start_with(name, seeds, keys, None).await
}

async fn start_with(
    name: &str,
    seeds: &[SocketAddr],
    keys: Option<(Keyring, SealMode)>,
    faults: Option<Arc<Faults>>,
) -> Cluster {
    let mut b = Cluster::builder(name).bind(LOCAL.parse().unwrap()).seeds(seeds.iter().copied());
    if let Some((ring, mode)) = keys {
        b = b.keys(ring, mode);
    }
    if let Some(f) = faults {
        b = b.intercept(f);
    }
    b.start().await.unwrap_or_else(|e| panic!("{name} starts: {e}"))
}

/// `n` members joined through the first.
async fn cluster(n: usize, keys: Option<[u8; 32]>) -> Vec<Cluster> {
    let faults = (0..n).map(|_| None).collect();
    cluster_with(keys, faults).await
}

/// Members joined through the first, one per entry of `faults`, each with
/// its intercept if given.
async fn cluster_with(keys: Option<[u8; 32]>, faults: Vec<Option<Arc<Faults>>>) -> Vec<Cluster> {
    let ring = |k: [u8; 32]| (Keyring::new(k), SealMode::Sealed);
    let mut all: Vec<Cluster> = Vec::new();
    for (i, f) in faults.into_iter().enumerate() {
        let seeds: Vec<SocketAddr> = all.first().map(Cluster::local_addr).into_iter().collect();
        all.push(start_with(&format!("m{i}"), &seeds, keys.map(ring), f).await);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_join_detect_a_crash_and_see_a_leave() {
    let mut all = cluster(10, None).await;
    // Everyone sees everyone (joins through one seed, then gossip and
    // push-pull; see `CONVERGE`).
    let started = Instant::now();
    assert!(until_all(&all, CONVERGE, |v| alive(v) == 9).await, "10 members converge within {CONVERGE:?}");
    println!("10 members converged in {:.1} s", started.elapsed().as_secs_f64());
    // A member stops without leaving: every other declares it dead. The
    // LAN preset takes about 4 s; 20 s covers a loaded machine.
    let mut watchers: Vec<Events> = all.iter().take(9).map(Cluster::events).collect();
    let crashed = all.pop().unwrap();
    let crashed_name = crashed.id().name.clone();
    crashed.shutdown().await;
    let started = Instant::now();
    for (i, w) in watchers.iter_mut().enumerate() {
        let dead =
            event(w, Duration::from_secs(20), |e| matches!(e, Event::Dead { id, .. } if id.name == crashed_name)).await;
        assert!(dead.is_some(), "m{i} declares {crashed_name} dead");
    }
    println!("crash → dead at every member: {:.1} s", started.elapsed().as_secs_f64());
    // A leave is seen as such within a second: judged by when each member
    // reported it (the event's own time), not by when `leave` returned
    // (it waits up to 500 ms for the announcement to go out).
    let mut watchers: Vec<Events> = all.iter().take(8).map(Cluster::events).collect();
    let leaver = all.pop().unwrap();
    let leaver_name = leaver.id().name.clone();
    let unix_ms = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let asked = unix_ms();
    leaver.leave().await;
    let mut slowest = 0;
    for (i, w) in watchers.iter_mut().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(2);
        let seen = loop {
            let left = deadline.checked_duration_since(Instant::now()).unwrap_or_default();
            match tokio::time::timeout(left, w.next()).await {
                Ok(Some(e)) if matches!(&e.event, Event::Left { id } if id.name == leaver_name) => {
                    break Some(e.unix_ms);
                }
                Ok(Some(_)) => {}
                _ => break None,
            }
        };
        let at = seen.unwrap_or_else(|| panic!("m{i} never saw {leaver_name} leave"));
        slowest = slowest.max(at.saturating_sub(asked));
    }
    println!("leave → left at every member: {slowest} ms");
    assert!(slowest < 1000, "the leave took {slowest} ms to reach every member");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_cluster_refuses_bad_packets_and_rotates_its_key_without_a_suspicion() {
    let all = cluster(5, Some([7; 32])).await;
    assert!(until_all(&all, CONVERGE, |v| alive(v) == 4).await, "5 sealed members converge");
    let mut watch: Vec<Events> = all.iter().map(Cluster::events).collect();
    // Hostile datagrams at m0: garbage, plaintext, a packet of another key,
    // a truncated envelope, and a replay of a genuine one.
    let target = all[0].local_addr();
    let attacker = UdpSocket::bind(LOCAL).await.unwrap();
    let mut other =
        vigil_membership::seal::Seal::new(vigil_net::DEFAULT_CLUSTER, SealMode::Sealed, Some(Keyring::new([9; 32])), 1)
            .unwrap();
    let mut genuine =
        vigil_membership::seal::Seal::new(vigil_net::DEFAULT_CLUSTER, SealMode::Sealed, Some(Keyring::new([7; 32])), 2)
            .unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    genuine.tick(now);
    other.tick(now);
    let replayed = genuine.seal(b"VG\x02not a real packet");
    // Sealed with the right key an hour ago (a capture from before m0
    // started): stale.
    genuine.tick(now - 3_600);
    let captured = genuine.seal(b"VG\x02an old capture");
    let bad: Vec<Vec<u8>> = vec![
        b"garbage".to_vec(),
        b"VG\x02plaintext".to_vec(),
        other.seal(b"VG\x02other key"),
        b"VS\x01short".to_vec(),
        replayed.clone(),
        replayed,
        captured,
    ];
    for p in &bad {
        attacker.send_to(p, target).await.unwrap();
    }
    sleep(Duration::from_millis(300)).await;
    let stats = all[0].stats().await.unwrap();
    let r = stats.seal.rejected;
    for (reason, want) in [
        (OpenError::NotVigil, 1),
        (OpenError::Plaintext, 1),
        (OpenError::UnknownKey(vigil_membership::keyring::key_id(&[9; 32])), 1),
        (OpenError::Truncated, 1),
        (OpenError::Replayed, 1),
        (OpenError::Stale, 1),
    ] {
        assert_eq!(r[reason.index()], want, "{reason}: {r:?}");
    }
    // The genuine-looking packet opened once, then failed to decode as a
    // vigil packet: dropped by the protocol, counted there.
    assert!(stats.node.rejected_malformed >= 1);
    // A rotation, step by step on every member.
    let new = [8u8; 32];
    let mut ids = Vec::new();
    for m in &all {
        ids.push(m.install_key(new).await.unwrap());
    }
    for m in &all {
        m.use_key(ids[0]).await.unwrap();
    }
    sleep(Duration::from_secs(2)).await;
    let old = vigil_membership::keyring::key_id(&[7; 32]);
    for m in &all {
        m.remove_key(old).await.unwrap();
    }
    sleep(Duration::from_secs(3)).await;
    for m in &all {
        let keys = m.keys().await.unwrap();
        assert_eq!(keys.len(), 1);
        assert!(keys[0].primary && keys[0].opened > 0, "the new key opens what arrives: {keys:?}");
    }
    assert!(until_all(&all, Duration::from_secs(5), |v| alive(v) == 4).await, "still one healthy cluster");
    for (i, w) in watch.iter_mut().enumerate() {
        let suspected = event(w, Duration::from_millis(10), |e| matches!(e, Event::Suspected { .. })).await;
        assert!(suspected.is_none(), "m{i} suspected someone during the attack or the rotation: {suspected:?}");
    }
}

/// Tags given at start reach every member with the join; tags set later
/// replace them live and are reported as an event. Bounds: 5 s, where an
/// idle machine takes well under one (gossip every 200 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_propagate_and_update_live() {
    use vigil_membership::Tags;
    let zone = Tags::new([("zone", "a"), ("role", "queue")]).unwrap();
    let first = Cluster::builder("t0").bind(LOCAL.parse().unwrap()).tags(zone.clone()).start().await.unwrap();
    let seed = first.local_addr();
    let mut all = vec![first];
    for i in 1..8 {
        all.push(start(&format!("t{i}"), &[seed], None).await);
    }
    let has = |views: &[vigil_membership::MemberView], name: &str, tags: &Tags| {
        views.iter().any(|v| v.id.name == name && v.tags == *tags)
    };
    assert!(
        until_all(&all[1..], Duration::from_secs(5), |v| has(v, "t0", &zone)).await,
        "every member sees t0's tags within 5 s"
    );
    let mut watchers: Vec<Events> = all.iter().skip(1).map(Cluster::events).collect();
    let moved = Tags::new([("zone", "b")]).unwrap();
    all[0].set_tags(moved.clone()).await.unwrap();
    // The change travels as an alive rumour, each member passing it on
    // `retransmit_mult × ⌈log10(n + 1)⌉` = 4 times to members picked at
    // random: it usually reaches all seven within a second, but the
    // epidemic can miss one (6 runs in 40 here, two at a time), and that
    // member learns it at the first push-pull it takes part in (each
    // member starts one every 30 s on the LAN preset, with a random
    // partner; 4.6 to 10.1 s in those runs). So the bound is the
    // push-pull interval with 5 s to spare.
    let asked = Instant::now();
    assert!(
        until_all(&all[1..], Duration::from_secs(35), |v| has(v, "t0", &moved)).await,
        "the change within 35 s (one push-pull interval and 5 s)"
    );
    println!("tag change at every member: {:.1} s", asked.elapsed().as_secs_f64());
    for (i, w) in watchers.iter_mut().enumerate() {
        let e =
            event(w, Duration::from_secs(1), |e| matches!(e, Event::TagsUpdated { id, .. } if id.name == "t0")).await;
        assert!(matches!(e, Some(Event::TagsUpdated { tags, .. }) if tags == moved), "t{} reported the change", i + 1);
    }
    for m in all {
        m.shutdown().await;
    }
}

/// Stream frames and datagrams that break the rules, at a sealed member: a
/// header length beyond the longest header, an empty header, a frame cut
/// short, a junk header, a plaintext header, a header sealed with another
/// key, and a datagram larger than any member accepts. Each is refused and
/// counted by its reason, no body is read for any, and the cluster notices
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_frames_and_oversized_datagrams_are_refused_and_counted() {
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpStream;
    use vigil_net::frame::{Header, MAX_HEADER};
    let all = cluster(3, Some([7; 32])).await;
    assert!(until_all(&all, Duration::from_secs(10), |v| alive(v) == 2).await, "3 sealed members converge");
    let mut watch: Vec<Events> = all.iter().map(Cluster::events).collect();
    let target = all[0].local_addr();
    let before = all[0].stats().await.unwrap();
    let mut other =
        vigil_membership::seal::Seal::new(vigil_net::DEFAULT_CLUSTER, SealMode::Sealed, Some(Keyring::new([9; 32])), 1)
            .unwrap();
    other.tick(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs());
    let framed =
        |header: &[u8], body: &[u8]| [&u16::try_from(header.len()).unwrap().to_be_bytes()[..], header, body].concat();
    let header = Header { body_len: 40_000_000, from: "127.0.0.1:8000".parse().unwrap() }.encode().unwrap();
    let sends: Vec<Vec<u8>> = vec![
        u16::try_from(MAX_HEADER + 1).unwrap().to_be_bytes().to_vec(), // longer than any header
        0u16.to_be_bytes().to_vec(),                                   // an empty header
        [&60u16.to_be_bytes()[..], b"cut short"].concat(),             // ends early
        framed(b"junk that is no header at all", b"body"),
        framed(&header, b"a plaintext header at a sealed member"),
        framed(&other.seal(&header), b"another key"),
    ];
    for bytes in &sends {
        let mut conn = TcpStream::connect(target).await.unwrap();
        // The member may close first (the first cases): not an error here.
        let _ = conn.write_all(bytes).await;
        let _ = conn.shutdown().await;
    }
    let udp = UdpSocket::bind(LOCAL).await.unwrap();
    let mut huge = b"VS".to_vec();
    huge.resize(65_100, 0x55);
    udp.send_to(&huge, target).await.unwrap();
    // Until all of it is counted (bound 5 s: each connection is judged by a
    // task of its own, later on a loaded machine).
    let deadline = Instant::now() + Duration::from_secs(5);
    let after = loop {
        let s = all[0].stats().await.unwrap();
        let judged =
            s.net.frames_dropped - before.net.frames_dropped + s.net.frames_malformed - before.net.frames_malformed;
        if judged >= 6 || Instant::now() > deadline {
            // A little longer, so that a seventh, wrongly counted, would show.
            sleep(Duration::from_millis(200)).await;
            break all[0].stats().await.unwrap();
        }
        sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(after.net.frames_dropped - before.net.frames_dropped, 3, "too long, empty and cut short");
    assert_eq!(after.net.frames_malformed - before.net.frames_malformed, 3, "junk, plaintext, another key");
    assert_eq!(after.net.frames_received, before.net.frames_received, "no body was read");
    let got = |s: &vigil_net::ClusterStats, e: OpenError| s.seal.rejected[e.index()];
    let other_key = OpenError::UnknownKey(vigil_membership::keyring::key_id(&[9; 32]));
    for reason in [other_key, OpenError::Oversized] {
        assert_eq!(got(&after, reason) - got(&before, reason), 1, "{reason}");
    }
    assert!(until_all(&all, Duration::from_secs(3), |v| alive(v) == 2).await, "still one healthy cluster");
    for (i, w) in watch.iter_mut().enumerate() {
        let suspected = event(w, Duration::from_millis(10), |e| matches!(e, Event::Suspected { .. })).await;
        assert!(suspected.is_none(), "m{i} suspected someone: {suspected:?}");
    }
}

/// A partition far longer than tombstones once lasted (two minutes): m4 cut
/// off from the other four for 300 s, each side declaring the other dead
/// and trying to reconnect to one of its dead every 10 s; once healed, one
/// view within 60 s. The simulator runs the same fault
/// (`crates/vigil-sim/tests/partitions.rs`,
/// `one_member_of_five_cut_off_for_300_s_comes_back`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_300_s_partition_heals_into_one_view_within_60_s() {
    let faults: Vec<Arc<Faults>> = (0..5).map(|_| Arc::new(Faults::default())).collect();
    let all = cluster_with(None, faults.iter().cloned().map(Some).collect()).await;
    assert!(until_all(&all, CONVERGE, |v| alive(v) == 4).await, "5 members converge");
    let mut watch: Vec<Events> = all.iter().map(Cluster::events).collect();
    let m4 = all[4].local_addr();
    let others: Vec<SocketAddr> = all[..4].iter().map(Cluster::local_addr).collect();
    faults[4].block(others);
    for f in &faults[..4] {
        f.block([m4]);
    }
    let cut = Instant::now();
    assert!(
        until_all(&all[..4], Duration::from_secs(30), |v| v
            .iter()
            .any(|m| m.id.name == "m4" && m.status == Status::Dead))
        .await,
        "the four declare m4 dead"
    );
    assert!(until_all(&all[4..], Duration::from_secs(60), |v| alive(v) == 0).await, "m4 declares the four dead");
    sleep(Duration::from_secs(300).saturating_sub(cut.elapsed())).await;
    for f in &faults {
        f.block([]);
    }
    let healed = Instant::now();
    assert!(until_all(&all, Duration::from_secs(60), |v| alive(v) == 4).await, "one view within 60 s of the heal");
    println!("300 s partition of m4: one view {:.1} s after the heal", healed.elapsed().as_secs_f64());
    for (i, w) in watch.iter_mut().enumerate() {
        let reaped = event(w, Duration::from_millis(10), |e| matches!(e, Event::Reaped { .. })).await;
        assert!(reaped.is_none(), "m{i} reaped a member it should have kept: {reaped:?}");
    }
}

/// Events can be taken before the start (the members met while joining are
/// in them), and every stream ends when the member stops, whether or not
/// its handle is still held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_streams_start_before_the_member_and_end_with_it() {
    let first = start("e0", &[], None).await;
    let builder = Cluster::builder("e1").bind(LOCAL.parse().unwrap()).seeds([first.local_addr()]);
    let mut early = builder.events();
    let member = builder.start().await.unwrap();
    let up = event(&mut early, Duration::from_secs(5), |e| matches!(e, Event::Up { id, .. } if id.name == "e0")).await;
    assert!(up.is_some(), "the member met while joining is in a stream taken before the start");
    let mut late = member.events();
    member.leave().await;
    for (what, stream) in [("early", &mut early), ("late", &mut late)] {
        let ended =
            tokio::time::timeout(Duration::from_secs(2), async { while stream.next().await.is_some() {} }).await;
        assert!(ended.is_ok(), "the {what} stream ends when the member leaves, its handle still held");
    }
    assert!(member.events().next().await.is_none(), "a stream taken after the stop ends at once");
    first.shutdown().await;
}
