//! Views in pages on real sockets: a view larger than
//! [`Config::view_page`] travels as several push-pulls, one connection
//! after another, and a peer that stalls one page is not sent the rest.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::until_all;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use vigil_membership::wire::{self, MAX_STREAM};
use vigil_membership::{Config, Event, MemberView, Message, NodeId, Packet, Status, Tags, Update};
use vigil_net::frame::Header;
use vigil_net::{Cluster, NetConfig};

/// Pages of 1 KiB: each member below is about 150 bytes on the wire.
const PAGE: usize = 1024;

fn config() -> Config {
    let mut c = Config::lan(0);
    c.view_page = PAGE;
    c
}

async fn member(i: usize, seeds: &[SocketAddr]) -> Cluster {
    let tags = Tags::new([("role", format!("{:0>100}", i)), ("zone", "eu-west-1a".to_owned())]).unwrap();
    let mut net = NetConfig::default();
    net.io_timeout = Duration::from_secs(1);
    net.header_timeout = Duration::from_millis(500);
    Cluster::builder(&format!("member-{i}"))
        .bind("127.0.0.1:0".parse().unwrap())
        .seeds(seeds.iter().copied())
        .config(config())
        .tags(tags)
        .net(net)
        .start()
        .await
        .unwrap()
}

/// `n` members joined through the first, once every one has the others
/// alive with their tags (under a second on an idle machine; 10 s was seen
/// with a build running beside it).
async fn agreed(n: usize) -> Vec<Cluster> {
    let first = member(0, &[]).await;
    let seed = [first.local_addr()];
    let mut all = vec![first];
    for i in 1..n {
        all.push(member(i, &seed).await);
    }
    assert!(until_all(&all, Duration::from_secs(60), |v| whole(v, n)).await, "{n} members, every tag, every view");
    all
}

fn whole(views: &[MemberView], n: usize) -> bool {
    let tagged = |v: &MemberView| v.tags.get("role").is_some_and(|r| r.len() == 100);
    views.len() == n - 1 && views.iter().all(|v| v.status == Status::Alive && tagged(v))
}

/// 24 members of about 145 bytes on the wire: a view of 3,500 bytes, four
/// pages of 1 KiB. Once they agree, a 25th joins through the seed, whose
/// answer comes in pages, and has every member and every tag from them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_of_many_pages_reaches_a_joiner_whole() {
    let mut all = agreed(24).await;
    let before = all[0].stats().await.unwrap().node.views_paged;
    all.push(member(24, &[all[0].local_addr()]).await);
    let joiner = all.last().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !whole(&joiner.members().await.unwrap(), 25) {
        assert!(tokio::time::Instant::now() < deadline, "the joiner has every member and tag within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let paged = all[0].stats().await.unwrap().node.views_paged - before;
    assert!(paged >= 1, "the seed answered the join in pages: {paged}");
    let mut total = 0;
    for m in &all {
        let s = m.stats().await.unwrap();
        total += s.node.views_paged;
        assert_eq!(s.net.frames_over_budget + s.net.frames_undecompressed, 0, "{}: {:?}", m.id().name, s.net);
    }
    println!("{total} views sent in pages");
}

/// A stranger asks the seed for its view (a short push-pull, as a joiner
/// sends) and gives a listener of its own as its address: the seed
/// answers the first page on the asking connection and sends the rest to
/// that listener, one connection after another. A listener that reads
/// each page and closes gets them all; one that never reads nor closes
/// gets the second page only, and the seed goes on undisturbed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_stalls_a_page_is_not_sent_the_rest() {
    let all = agreed(18).await;
    let seed = [all[0].local_addr()];
    let mut events = all[0].events();
    // 18 members of about 145 bytes, 2,600 bytes: 3 pages at least, so 2
    // beside the first.
    let expected_later_pages = 2;

    for stall in [false, true] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let at = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        let server = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let (mut c, _) = listener.accept().await.unwrap();
                // Only the seed's push-pulls count (it may also ping this
                // address, or send it a digest, on streams of their own).
                if read_frame(&mut c).await.is_some_and(|p| matches!(p.message, Message::PushPull { .. })) {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
                if stall {
                    // Read, but never answered nor closed.
                    held.push(c);
                }
            }
        });
        let name = if stall { "stalling" } else { "reading" };
        let me = NodeId::new(name, 1);
        let own =
            Update { id: me.clone(), addr: at, incarnation: 0, status: Status::Alive, from: me.clone(), tags: None };
        let ask = Message::PushPull { reply: true, members: vec![own] };
        let body =
            wire::encode(&Packet { cluster: 0, from: me, incarnation: 0, message: ask, updates: vec![] }, MAX_STREAM)
                .unwrap();
        let header = Header { body_len: body.len(), from: at }.encode().unwrap();
        let mut c = TcpStream::connect(seed[0]).await.unwrap();
        c.write_all(&vigil_net::frame::frame(&header, &body).unwrap()).await.unwrap();
        // The first page comes back on this connection, full, asking for
        // this view in return (a short push-pull is a joiner's).
        let Some(Message::PushPull { reply, members }) = read_frame(&mut c).await.map(|p| p.message) else {
            panic!("no push-pull came back on the asking connection")
        };
        let bytes: usize = members.iter().map(wire::update_len).sum();
        assert!(reply && bytes <= PAGE && bytes > PAGE - wire::MAX_UPDATE_LEN, "a full first page: {bytes} bytes");

        tokio::time::sleep(Duration::from_secs(4)).await;
        let got = accepted.load(Ordering::SeqCst);
        println!("{name}: {got} later pages");
        if stall {
            assert_eq!(got, 1, "the page left open is the last sent");
        } else {
            assert!(got >= expected_later_pages, "every later page, one connection each: {got}");
        }
        server.abort();
    }
    // The seed went on: every member still sees the others alive.
    let ours = |v: &[MemberView]| {
        let ours: Vec<MemberView> = v.iter().filter(|m| m.id.name.starts_with("member-")).cloned().collect();
        common::alive(&ours) == 17
    };
    assert!(until_all(&all, Duration::from_secs(5), ours).await, "every member alive in every view");
    let suspected =
        |e: &Event| matches!(e, Event::Suspected { id, .. } | Event::Dead { id, .. } if id.name.starts_with("member-"));
    assert_eq!(common::event(&mut events, Duration::from_millis(100), suspected).await, None, "at the seed");
}

/// One plaintext frame from `c`: its header, its body, decompressed and
/// decoded.
async fn read_frame(c: &mut TcpStream) -> Option<Packet> {
    let within = Duration::from_secs(2);
    let read = async {
        let mut len = [0u8; 2];
        c.read_exact(&mut len).await.ok()?;
        let mut header = vec![0u8; usize::from(u16::from_be_bytes(len))];
        c.read_exact(&mut header).await.ok()?;
        let header = Header::decode(&header)?;
        let mut body = vec![0u8; header.body_len];
        c.read_exact(&mut body).await.ok()?;
        let plain = vigil_net::compress::decompress(&body, MAX_STREAM).ok()?;
        wire::decode(&plain, MAX_STREAM).ok()
    };
    tokio::time::timeout(within, read).await.ok().flatten()
}

/// A frame the peer takes without answering (a digest that matches, a page
/// that asks for nothing) is closed at once, which the sender takes as
/// delivered: the next page goes, and no frame is counted as dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_taken_without_an_answer_is_delivered_not_dropped() {
    let mut config = config();
    config.push_pull_interval = Duration::from_millis(500);
    let start = |seeds: Vec<SocketAddr>, i: usize| {
        let config = config.clone();
        async move {
            Cluster::builder(&format!("quiet-{i}"))
                .bind("127.0.0.1:0".parse().unwrap())
                .seeds(seeds)
                .config(config)
                .start()
                .await
                .unwrap()
        }
    };
    let first = start(vec![], 0).await;
    let seed = vec![first.local_addr()];
    let all = vec![first, start(seed.clone(), 1).await, start(seed, 2).await];
    assert!(until_all(&all, Duration::from_secs(10), |v| common::alive(v) == 2).await, "3 members");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (mut matched, mut dropped) = (0, 0);
    for m in &all {
        let s = m.stats().await.unwrap();
        matched += s.node.digests_matched;
        dropped += s.net.frames_dropped;
    }
    // A push-pull every 500 ms at each of 3 members for 4 s, nearly all
    // matching once the views agree.
    assert!(matched >= 10, "digests matched: {matched}");
    assert_eq!(dropped, 0, "a digest answered by a close is no dropped frame");
}
