//! Compressed push-pull on real sockets: views travel compressed, a member
//! that does not compress still takes part, and a frame that claims to
//! decompress to gigabytes, or does not decompress, is refused and counted
//! before anything is allocated for it.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::until_all;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::{Instant, sleep};
use vigil_membership::{Event, MemberView, Status, Tags};
use vigil_net::frame::Header;
use vigil_net::{Cluster, NetConfig};

/// Member `i`, with tags enough that a view of a few members is past the
/// compression threshold, joined through `seeds`.
async fn member(i: usize, seeds: &[SocketAddr], compress: bool) -> Cluster {
    let tags = Tags::new([
        ("service", "billing".to_owned()),
        ("zone", "eu-west-1a".to_owned()),
        ("version", format!("2026.12.{i}")),
    ])
    .unwrap();
    let mut net = NetConfig::default();
    net.compress_streams = compress;
    Cluster::builder(&format!("member-{i}"))
        .bind("127.0.0.1:0".parse().unwrap())
        .seeds(seeds.iter().copied())
        .tags(tags)
        .net(net)
        .start()
        .await
        .unwrap()
}

/// Every other member alive, with the tags it was started with.
fn whole(views: &[MemberView], n: usize) -> bool {
    let tagged = |v: &MemberView| {
        let i = v.id.name.strip_prefix("member-").unwrap();
        v.tags.get("version") == Some(&format!("2026.12.{i}")[..]) && v.tags.get("zone") == Some("eu-west-1a")
    };
    views.len() == n - 1 && views.iter().all(|v| v.status == Status::Alive && tagged(v))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_travel_compressed_and_a_member_that_does_not_compress_still_joins() {
    let first = member(0, &[], true).await;
    let seed = [first.local_addr()];
    let mut all = vec![first];
    for i in 1..5 {
        all.push(member(i, &seed, true).await);
    }
    assert!(until_all(&all, Duration::from_secs(10), |v| common::alive(v) == 4).await, "5 members, one view");
    assert!(whole(&all[4].members().await.unwrap(), 5), "the last to join has every member's tags");
    // A join is a push-pull: the seed answers with its whole view. Now that
    // it holds five tagged members, past the 256-byte threshold (a short
    // view is sent bare), the answer is compressed. (The answers to the
    // first joins may have held the seed alone: a joiner is only proposed
    // until it answers a ping, so how many the seed knew then is a race.)
    let before = all[0].stats().await.unwrap().net;
    // One that sends bare views (a member being upgraded, say) joins and
    // is seen whole, from the seed's compressed answer.
    all.push(member(5, &seed, false).await);
    assert!(until_all(&all, Duration::from_secs(10), |v| common::alive(v) == 5).await, "6 members, one view");
    assert!(whole(&all[5].members().await.unwrap(), 6), "from a compressed answer, every tag");
    let after = all[0].stats().await.unwrap().net;
    let compressed = after.frames_compressed - before.frames_compressed;
    let saved = after.frame_bytes_saved - before.frame_bytes_saved;
    assert!(compressed >= 1, "the seed's answer to the last join is compressed: {compressed}");
    assert!(saved > 0);
    let stats: Vec<_> = futures_stats(&all).await;
    assert_eq!(stats.iter().map(|s| s.frames_undecompressed).sum::<u64>(), 0);
    assert_eq!(stats[5].frames_compressed, 0, "the member that does not compress sent nothing compressed");
    println!("{compressed} views compressed by the seed, {saved} bytes saved");
}

async fn futures_stats(all: &[Cluster]) -> Vec<vigil_net::NetStats> {
    let mut out = Vec::new();
    for m in all {
        out.push(m.stats().await.unwrap().net);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decompression_bomb_and_a_corrupt_block_are_refused_and_counted() {
    let a = member(0, &[], true).await;
    let b = member(1, &[a.local_addr()], true).await;
    let all = [a, b];
    assert!(until_all(&all, Duration::from_secs(10), |v| common::alive(v) == 1).await);
    let mut watch = all[0].events();
    let target = all[0].local_addr();
    let before = all[0].stats().await.unwrap().net;
    let bodies: [&[u8]; 3] = [
        b"VG\0\xff\xff\xff\xffsays 4 GiB",     // over the stream limit: never allocated
        b"VG\0\x00\x00\x10\x00not lz4 at all", // 4 KiB stated, junk
        b"VG\0\x00\x00",                       // cut short
    ];
    for body in bodies {
        let header = Header { body_len: body.len(), from: all[1].local_addr() }.encode().unwrap();
        let framed = [&u16::try_from(header.len()).unwrap().to_be_bytes()[..], &header, body].concat();
        let mut conn = TcpStream::connect(target).await.unwrap();
        conn.write_all(&framed).await.unwrap();
        let _ = conn.shutdown().await;
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let after = loop {
        let s = all[0].stats().await.unwrap().net;
        if s.frames_undecompressed - before.frames_undecompressed >= 3 || Instant::now() > deadline {
            sleep(Duration::from_millis(200)).await;
            break all[0].stats().await.unwrap().net;
        }
        sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(after.frames_undecompressed - before.frames_undecompressed, 3);
    assert_eq!(after.frames_received - before.frames_received, 3, "each was read, then refused");
    assert!(until_all(&all, Duration::from_secs(3), |v| common::alive(v) == 1).await, "still one healthy cluster");
    let suspected =
        common::event(&mut watch, Duration::from_millis(10), |e| matches!(e, Event::Suspected { .. })).await;
    assert!(suspected.is_none(), "{suspected:?}");
}
