//! Key operations asked of every member at once, on real sockets: a
//! rotation of a running sealed cluster (install, use, remove) without a
//! false suspicion, a member that cannot obey or does not answer named as
//! such, and a request that was not sealed never obeyed.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use vigil_net::control::{Control, KeyOp};
use vigil_net::frame::{Header, frame};
use vigil_net::{Cluster, Event, KeyId, Keyring, SealMode, Status};

const OLD: [u8; 32] = [1; 32];
const NEW: [u8; 32] = [2; 32];

async fn sealed(name: &str, seed: Option<std::net::SocketAddr>, mode: SealMode) -> Cluster {
    let mut b = Cluster::builder(name).bind("127.0.0.1:0".parse().unwrap()).keys(Keyring::new(OLD), mode);
    if let Some(s) = seed {
        b = b.seeds([s]);
    }
    b.start().await.unwrap()
}

async fn all_alive(members: &[&Cluster], n: usize) {
    for m in members {
        for _ in 0..500 {
            let alive = m.members().await.unwrap().iter().filter(|v| v.status == Status::Alive).count();
            if alive == n - 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn key_id(key: [u8; 32]) -> KeyId {
    Keyring::new(key).list()[0].id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_sealed_cluster_rotates_its_key_member_by_member_without_a_false_suspicion() {
    let a = sealed("a", None, SealMode::Sealed).await;
    let b = sealed("b", Some(a.local_addr()), SealMode::Sealed).await;
    let c = sealed("c", Some(a.local_addr()), SealMode::Sealed).await;
    let d = sealed("d", Some(a.local_addr()), SealMode::Sealed).await;
    all_alive(&[&a, &b, &c, &d], 4).await;
    let mut events = b.events();

    let (old, new) = (key_id(OLD), key_id(NEW));
    let installed = a.keys_everywhere(KeyOp::Install(NEW)).await.unwrap();
    let names: Vec<&str> = installed.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
    for m in &installed {
        let keys = m.result.as_ref().unwrap_or_else(|e| panic!("{}: {e}", m.name));
        assert_eq!(keys, &vec![(old, true), (new, false)], "{}", m.name);
    }
    // Asked of c this time: any member can lead a rotation.
    let used = c.keys_everywhere(KeyOp::Use(new)).await.unwrap();
    assert!(used.iter().all(|m| m.result.as_ref().is_ok_and(|k| k.contains(&(new, true)))), "{used:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let removed = d.keys_everywhere(KeyOp::Remove(old)).await.unwrap();
    assert!(removed.iter().all(|m| m.result.as_ref().is_ok_and(|k| k == &vec![(new, true)])), "{removed:?}");
    // The cluster kept talking throughout, on the new key alone now.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for m in [&a, &b, &c, &d] {
        assert_eq!(m.keys().await.unwrap().len(), 1);
        let alive = m.members().await.unwrap().iter().filter(|v| v.status == Status::Alive).count();
        assert_eq!(alive, 3, "{} sees everyone alive", m.id().name);
    }
    let mut suspicions = 0;
    while let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(10), events.next()).await {
        suspicions += usize::from(matches!(e.event, Event::Suspected { .. } | Event::Dead { .. }));
    }
    assert_eq!(suspicions, 0, "no member was suspected during the rotation");

    // A key some member lacks: it says so, the others obey.
    b.install_key([3; 32]).await.unwrap();
    let third = key_id([3; 32]);
    let partial = b.keys_everywhere(KeyOp::Remove(third)).await.unwrap();
    for m in &partial {
        match m.name.as_str() {
            "b" => assert!(m.result.is_ok(), "{m:?}"),
            _ => assert!(m.result.as_ref().is_err_and(|e| e.contains("no key")), "{m:?}"),
        }
    }

    // A member that stopped: named, with why, within the wait.
    d.shutdown().await;
    let started = std::time::Instant::now();
    let listed = a.keys_everywhere(KeyOp::List).await.unwrap();
    let of_d = listed.iter().find(|m| m.name == "d").expect("d is still believed alive");
    assert!(of_d.result.is_err(), "{of_d:?}");
    assert!(started.elapsed() < Duration::from_secs(12), "{:?}", started.elapsed());
    assert!(listed.iter().filter(|m| m.name != "d").all(|m| m.result.is_ok()), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_operation_that_was_not_sealed_is_never_obeyed() {
    // Staged: this member still takes plaintext frames, the mode in which
    // a forged request could reach it.
    let a = sealed("a", None, SealMode::Staged).await;
    let body = Control::Request { id: 1, op: KeyOp::Install([9; 32]) }.encode();
    let header = Header { body_len: body.len(), from: "127.0.0.1:1".parse().unwrap() }.encode().unwrap();
    let bytes = frame(&header, &body).unwrap();
    let mut conn = tokio::net::TcpStream::connect(a.local_addr()).await.unwrap();
    conn.write_all(&bytes).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut answer)).await;
    assert!(answer.is_empty(), "a plaintext request got an answer");
    assert_eq!(a.keys().await.unwrap().len(), 1, "the forged key was not installed");

    // Without keys at all, the operation says so rather than pretending.
    let plain = Cluster::builder("p").bind("127.0.0.1:0".parse().unwrap()).start().await.unwrap();
    let r = plain.keys_everywhere(KeyOp::List).await.unwrap();
    assert_eq!(r.len(), 1);
    assert!(r[0].result.as_ref().is_err_and(|e| e.contains("no keyring")), "{r:?}");
}
