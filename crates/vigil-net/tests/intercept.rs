//! The intercept between a member and its sockets, on real sockets: a
//! one-way cut written as a test would write it. A file of its own, so that
//! its members do not add to the load of the loopback tests' clusters (the
//! tests of one file run at once).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use vigil_membership::Event;
use vigil_net::{Cluster, Intercept, Way};

mod common;
use common::{alive, event, until_all};

const LOCAL: &str = "127.0.0.1:0";

async fn start(name: &str, seeds: &[SocketAddr]) -> Cluster {
    let b = Cluster::builder(name).bind(LOCAL.parse().unwrap()).seeds(seeds.iter().copied());
    b.start().await.unwrap_or_else(|e| panic!("{name} starts: {e}"))
}

/// A member deaf to one peer (an intercept that drops what comes from it,
/// and nothing it sends): the peer's heartbeats stop reaching it, it
/// probes, and the peer answers through the others. A path problem, not a
/// death (bound 20 s for the first path problem; the LAN preset probes
/// after about 4 s of silence).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_deaf_to_one_peer_reports_a_path_problem_not_a_death() {
    #[derive(Debug)]
    struct Deaf(std::sync::Mutex<Option<SocketAddr>>);

    impl Intercept for Deaf {
        fn passes(&self, peer: SocketAddr, way: Way) -> bool {
            !(way == Way::In && *self.0.lock().unwrap() == Some(peer))
        }

        fn stopped_until(&self) -> Option<tokio::time::Instant> {
            None
        }
    }

    let deaf = Arc::new(Deaf(std::sync::Mutex::new(None)));
    let first = start("d0", &[]).await;
    let seed = first.local_addr();
    let second = start("d1", &[seed]).await;
    let b = Cluster::builder("d2").bind(LOCAL.parse().unwrap()).seeds([seed]).intercept(deaf.clone());
    let mut events = b.events();
    let third = b.start().await.unwrap();
    let all = [first, second, third];
    assert!(until_all(&all, Duration::from_secs(10), |v| alive(v) == 2).await, "3 members converge");
    *deaf.0.lock().unwrap() = Some(all[0].local_addr());
    let problem =
        event(&mut events, Duration::from_secs(20), |e| matches!(e, Event::PathProblem { id, .. } if id.name == "d0"))
            .await;
    assert!(problem.is_some(), "d2 reports a path problem with d0");
    let dead = event(&mut events, Duration::from_secs(3), |e| matches!(e, Event::Dead { .. })).await;
    assert!(dead.is_none(), "nobody is declared dead: {dead:?}");
    assert!(until_all(&all, Duration::from_secs(1), |v| alive(v) == 2).await, "every view still whole");
    assert!(all[2].stats().await.unwrap().net.intercepted > 0, "the intercept dropped d0's packets");
}
