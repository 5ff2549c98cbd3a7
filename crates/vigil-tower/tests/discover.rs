//! Discovery from membership, with members in this process: what the
//! balancer is told as members come, change their tags and go, and what
//! waits for a balancer that does not read.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_core::Stream;
use tower::discover::Change;
use vigil_net::{Cluster, Tags};
use vigil_tower::MemberDiscover;
use vigil_tower::discover::Member;

async fn member(name: &str, seed: Option<std::net::SocketAddr>, tags: &[(&str, &str)]) -> Arc<Cluster> {
    let tags = Tags::new(tags.iter().copied()).unwrap();
    Arc::new(Cluster::builder(name).bind("127.0.0.1:0".parse().unwrap()).seeds(seed).tags(tags).start().await.unwrap())
}

/// The next change, within 10 s.
async fn next(d: &mut MemberDiscover<Member>) -> Change<Arc<str>, Member> {
    let change =
        tokio::time::timeout(Duration::from_secs(10), std::future::poll_fn(|cx| Pin::new(&mut *d).poll_next(cx)))
            .await
            .expect("a change within 10 s")
            .expect("the stream goes on");
    change.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_are_inserted_changed_and_removed_by_their_tags() {
    let client = member("client", None, &[]).await;
    let mut d = MemberDiscover::new(client.clone(), "service=billing".parse().unwrap(), |m: &Member| m.clone());
    let b = member("b", Some(client.local_addr()), &[("service", "billing"), ("port", "8080")]).await;
    let _other = member("c", Some(client.local_addr()), &[("service", "search"), ("port", "8080")]).await;
    let Change::Insert(name, m) = next(&mut d).await else { panic!("an insertion first") };
    assert_eq!(&*name, "b");
    assert_eq!(m.uri(), "http://127.0.0.1:8080");
    // Its port changes: inserted again, at the new port.
    b.set_tags(Tags::new([("service", "billing"), ("port", "9090")]).unwrap()).await.unwrap();
    let Change::Insert(_, m) = next(&mut d).await else { panic!("a new insertion") };
    assert_eq!(m.addr.port(), 9090);
    // It leaves the service: removed.
    b.set_tags(Tags::new([("service", "search"), ("port", "9090")]).unwrap()).await.unwrap();
    assert!(matches!(next(&mut d).await, Change::Remove(n) if &*n == "b"));
    b.set_tags(Tags::new([("service", "billing"), ("port", "9090")]).unwrap()).await.unwrap();
    assert!(matches!(next(&mut d).await, Change::Insert(..)));
    // It leaves the cluster: removed.
    b.leave().await;
    assert!(matches!(next(&mut d).await, Change::Remove(n) if &*n == "b"));
    assert_eq!(d.waiting(), 0, "search's member was never an endpoint");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_balancer_that_does_not_read_holds_one_change_per_member() {
    let client = member("client", None, &[]).await;
    let d = MemberDiscover::new(client.clone(), "service=billing".parse().unwrap(), |m: &Member| m.clone());
    let b = member("b", Some(client.local_addr()), &[("service", "billing"), ("port", "1")]).await;
    // Tags flipping as fast as the member can gossip them.
    for i in 0..300u32 {
        let service = if i % 2 == 0 { "search" } else { "billing" };
        b.set_tags(Tags::new([("service", service.to_owned()), ("port", (i % 1000 + 1).to_string())]).unwrap())
            .await
            .unwrap();
        if i % 50 == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // The last tags: billing at port 300.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let seen = client.member("b").await.unwrap().and_then(|m| m.tags.get("port").map(str::to_owned));
        if seen.as_deref() == Some("300") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the client saw b's last tags: {seen:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(d.waiting(), 1, "one change waits for b, however many were made");
    let mut d = d;
    let Change::Insert(_, m) = next(&mut d).await else { panic!("b, inserted") };
    assert_eq!(m.addr.port(), 300, "the latest");
    assert_eq!(d.waiting(), 0);
}
