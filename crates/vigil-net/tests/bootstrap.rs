//! Forty members started at once on real sockets, in a test binary of
//! its own: its forty members would otherwise share the two cores with the
//! timing bounds of `loopback.rs`.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;
use vigil_net::Cluster;

#[allow(dead_code, reason = "the shared helpers this test does not use")]
mod common;
use common::{alive, until_all};

/// Forty members start at once, each knowing only m0, each at its own
/// address (127.0.1.x, as the simulator gives each machine its own); each
/// source may introduce 2 members per 10 s and rumours are passed on half
/// as often as the LAN preset's, so views complete by push-pulls brought
/// forward by the news of strangers. The simulator's twin is vigil-sim's
/// test of the same name (`tests/rapid.rs`): its seeds 1 to 6 complete
/// after 10 to 39 s, and three runs here after 31.5, 39.5 and 40.1 s
/// (a catch-up 10 s after the first news, a second 30 s after it). The
/// bound allows a third, 30 s later still.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_members_started_at_once_with_a_small_budget_for_strangers_complete_their_views() {
    let n = 40;
    let mut config = vigil_membership::Config::lan(0x5eed);
    config.introductions_per_source = 2;
    config.retransmit_mult = 2;
    let at = |i: usize| -> SocketAddr { format!("127.0.1.{}:0", i + 1).parse().unwrap() };
    let build = |i: usize, seeds: Vec<SocketAddr>| {
        Cluster::builder(&format!("m{i}")).bind(at(i)).seeds(seeds).config(config.clone()).start()
    };
    let first = build(0, Vec::new()).await.expect("m0 starts");
    let seed = first.local_addr();
    let started = Instant::now();
    let mut joining = tokio::task::JoinSet::new();
    for i in 1..n {
        let b = build(i, vec![seed]);
        joining.spawn(async move { (i, b.await) });
    }
    let mut all: Vec<Option<Cluster>> = (0..n).map(|_| None).collect();
    all[0] = Some(first);
    while let Some(joined) = joining.join_next().await {
        let (i, c) = joined.expect("the start task ends");
        all[i] = Some(c.unwrap_or_else(|e| panic!("m{i} starts: {e}")));
    }
    let all: Vec<Cluster> = all.into_iter().map(|c| c.expect("every member started")).collect();
    // Three catch-ups (10 + 30 + 30 s), and 5 s for a loaded machine.
    let complete = until_all(&all, Duration::from_secs(75), |v| alive(v) == n - 1).await;
    let took = started.elapsed().as_secs_f64();
    let (mut refused, mut forward) = (0, 0);
    for c in &all {
        let s = c.stats().await.expect("running").node;
        refused += s.introductions_refused;
        forward += s.push_pulls_brought_forward;
    }
    println!(
        "every view complete after {took:.1} s; {refused} introductions refused, {forward} push-pulls brought forward"
    );
    assert!(complete, "not every view complete within 75 s");
    assert!(refused > 0, "the small budget refused nothing: the test tests nothing");
    assert!(forward > 0);
    for c in &all {
        c.shutdown().await;
    }
}
