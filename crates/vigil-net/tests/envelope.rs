//! The seal's cipher changed on a running cluster, on real sockets: every
//! member sends envelope version 2 (XChaCha20-Poly1305, as builds before
//! version 3 do), then each moves to version 3 (AES-256-GCM) in turn, with
//! probes and gossip flowing throughout. Nobody is suspected, no packet is
//! refused, and at the end every member opens only version 3.

use std::time::Duration;

use vigil_net::{Cluster, Envelope, Event, Keyring, NetConfig, SealMode, Status};

async fn member(name: &str, seed: Option<std::net::SocketAddr>) -> Cluster {
    let mut net = NetConfig::default();
    net.envelope = Envelope::XChaCha20Poly1305;
    let mut b = Cluster::builder(name)
        .bind("127.0.0.1:0".parse().unwrap())
        .keys(Keyring::new([9; 32]), SealMode::Sealed)
        .net(net);
    if let Some(s) = seed {
        b = b.seeds([s]);
    }
    b.start().await.unwrap()
}

async fn everyone_alive(members: &[Cluster]) {
    for m in members {
        for _ in 0..500 {
            let alive = m.members().await.unwrap().iter().filter(|v| v.status == Status::Alive).count();
            if alive == members.len() - 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_sealed_cluster_moves_to_envelope_3_member_by_member_without_a_false_suspicion() {
    let first = member("m0", None).await;
    let seed = first.local_addr();
    let mut members = vec![first];
    for i in 1..5 {
        members.push(member(&format!("m{i}"), Some(seed)).await);
    }
    everyone_alive(&members).await;
    let mut events: Vec<_> = members.iter().map(|m| m.events()).collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before: Vec<_> = seal_stats(&members).await;
    for (m, s) in members.iter().zip(&before) {
        assert!(s.opened > 0 && s.opened_v2 == s.opened, "{} opened version 2 only: {s:?}", m.id().name);
    }

    // One member at a time, a second and a half apart: for a while, each
    // member hears both versions.
    for m in &members {
        assert_eq!(m.set_envelope(Envelope::Aes256Gcm).await.unwrap(), Envelope::XChaCha20Poly1305);
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    let switched = seal_stats(&members).await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let after = seal_stats(&members).await;
    for ((m, s), at_switch) in members.iter().zip(after).zip(switched) {
        let name = &m.id().name;
        assert_eq!(s.rejected.iter().sum::<u64>(), 0, "{name} refused packets: {s:?}");
        assert!(s.opened > at_switch.opened, "{name} kept opening: {s:?}");
        assert_eq!(s.opened_v2, at_switch.opened_v2, "{name} opened only version 3 once all had moved: {s:?}");
        let alive = m.members().await.unwrap().iter().filter(|v| v.status == Status::Alive).count();
        assert_eq!(alive, members.len() - 1, "{name} sees everyone alive");
    }
    for (m, events) in members.iter().zip(&mut events) {
        while let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(10), events.next()).await {
            assert!(
                !matches!(e.event, Event::Suspected { .. } | Event::Dead { .. }),
                "{} saw {:?} while the envelope changed",
                m.id().name,
                e.event
            );
        }
    }
}

async fn seal_stats(members: &[Cluster]) -> Vec<vigil_net::SealStats> {
    let mut out = Vec::new();
    for m in members {
        out.push(m.stats().await.unwrap().seal);
    }
    out
}
