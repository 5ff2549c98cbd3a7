//! A running sealed cluster of agents of an earlier build, upgraded to this
//! build member by member as the README's upgrade steps say, each agent a
//! real process on 127.0.0.1:
//!
//! 1. Four agents of the build before envelope 3, stream pings, compressed
//!    views, the view digest and views in pages (`scripts/compat/old-agent.sh`'s
//!    default commit) form one sealed view.
//! 2. Each in turn is stopped and started again as this build, on the same
//!    address, with `--seal-cipher xchacha20-poly1305 --stream-compression
//!    off --push-pull full`: what the earlier build reads.
//! 3. Each in turn is restarted with this build's defaults (envelope 3, LZ4,
//!    digests).
//!
//! Throughout, nobody is suspected or declared dead, no agent of either
//! build refuses a packet, and at the end no agent opens envelope 2 any more
//! (`sealed_opened_total{envelope="2"}` stops growing).
//!
//! Needs the earlier build: `scripts/compat/old-agent.sh` builds it and
//! prints its path; the test runs when `VIGIL_OLD_AGENT` names it (`.ci/run`
//! sets it) and otherwise says it was skipped. About a minute.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod support;
use support::netns::{Agent, until_one_view};

const N: usize = 4;
const KEY: &str = "5e1f0c6a4b3d2e1f00112233445566778899aabbccddeeff0123456789abcdef";
/// What the earlier build reads: its cipher, bare views, whole views.
const COMPATIBLE: &[&str] =
    &["--seal-cipher", "xchacha20-poly1305", "--stream-compression", "off", "--push-pull", "full"];

/// One member's name and addresses, the same across its restarts.
struct Slot {
    name: String,
    gossip: String,
    http: String,
}

/// `n` ports free for both UDP and TCP on 127.0.0.1 now, below the
/// kernel's ephemeral range (from 32768), so that no agent's outgoing
/// connection takes one while its member restarts.
fn free_ports(n: usize) -> Vec<u16> {
    let mut port = 20_000 + (std::process::id() % 1_000) as u16 * 10;
    let mut found = Vec::new();
    while found.len() < n {
        port += 1;
        assert!(port < 32_768, "no {n} free ports below 32768");
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port));
        if tcp.is_ok() && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            found.push(port);
        }
    }
    found
}

fn start(bin: &Path, slot: &Slot, slots: &[Slot], key_file: &Path, extra: &[&str]) -> Agent {
    let mut cmd = Command::new(bin);
    cmd.args(["agent", "--name", &slot.name, "--bind", &slot.gossip, "--http", &slot.http]);
    cmd.arg("--key-file").arg(key_file);
    // Views of four such members are over the 256 bytes from which views
    // are compressed.
    cmd.args(["--tag", &format!("note={}", "upgrade ".repeat(20))]);
    for other in slots.iter().filter(|o| o.name != slot.name) {
        cmd.args(["--join", &other.gossip]);
    }
    cmd.args(extra);
    Agent::run(cmd, &slot.name)
}

/// What reading a packet or frame could not get past, by reason: every
/// refusal but a peer closing a connection before a frame was whole (as
/// each restart does) and the connection limits.
fn refused(slot: &Slot) -> Vec<(String, f64)> {
    let benign = ["frame-dropped", "connection-refused", "connection-evicted"];
    let all = support::metrics::series(&format!("http://{}", slot.http), "vigil_rejected_packets_total");
    assert!(!all.is_empty(), "{} serves no vigil_rejected_packets_total", slot.name);
    all.into_iter()
        .filter(|(labels, n)| *n > 0.0 && !benign.iter().any(|b| labels.contains(&format!("\"{b}\""))))
        .collect()
}

fn opened(slot: &Slot, envelope: &str) -> f64 {
    let label = format!("{{envelope=\"{envelope}\"}}");
    let all = support::metrics::series(&format!("http://{}", slot.http), "vigil_sealed_opened_total");
    all.iter()
        .find(|(l, _)| *l == label)
        .map(|(_, n)| *n)
        .unwrap_or_else(|| panic!("{}: no {label} in {all:?}", slot.name))
}

fn one_view(agents: &[Agent], what: &str) {
    let t = until_one_view(&agents.iter().collect::<Vec<_>>(), Duration::from_secs(30));
    assert!(t.is_some(), "no single view within 30 s {what}");
}

/// Stops member `i` and starts it again from `bin` with `extra`, then waits
/// for one view and lets traffic flow for two seconds.
fn restart(agents: &mut [Agent], retired: &mut Vec<Agent>, slots: &[Slot], i: usize, step: (&Path, &Path, &[&str])) {
    let (bin, key_file, extra) = step;
    agents[i].stop();
    let fresh = start(bin, &slots[i], slots, key_file, extra);
    retired.push(std::mem::replace(&mut agents[i], fresh));
    one_view(agents, &format!("after {} restarted as {}", slots[i].name, bin.display()));
    std::thread::sleep(Duration::from_secs(2));
}

#[test]
fn a_sealed_cluster_of_the_earlier_build_is_upgraded_member_by_member_without_a_false_suspicion() {
    let Some(old) = std::env::var_os("VIGIL_OLD_AGENT").map(PathBuf::from) else {
        println!(
            "SKIPPED upgrade: set VIGIL_OLD_AGENT to the earlier build (VIGIL_OLD_AGENT=$(scripts/compat/old-agent.sh))"
        );
        return;
    };
    assert!(old.is_file(), "VIGIL_OLD_AGENT={} is not a file", old.display());
    let new = PathBuf::from(env!("CARGO_BIN_EXE_vigil"));
    let dir = std::env::temp_dir().join(format!("vigil-upgrade-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key_file = dir.join("keys");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    std::fs::set_permissions(&key_file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let ports = free_ports(2 * N);
    let slots: Vec<Slot> = (0..N)
        .map(|i| Slot {
            name: format!("u{i}"),
            gossip: format!("127.0.0.1:{}", ports[2 * i]),
            http: format!("127.0.0.1:{}", ports[2 * i + 1]),
        })
        .collect();
    let begin = Instant::now();

    // 1. The earlier build, alone.
    let mut agents: Vec<Agent> = Vec::new();
    for slot in &slots {
        agents.push(start(&old, slot, &slots[..1], &key_file, &[]));
        std::thread::sleep(Duration::from_millis(200));
    }
    one_view(&agents, "of the earlier build");
    std::thread::sleep(Duration::from_secs(2));
    let mut retired = Vec::new();

    // 2. This build, speaking what the earlier one reads.
    for i in 0..N {
        for slot in slots.iter().skip(i) {
            let r = refused(slot);
            assert!(r.is_empty(), "{} (the earlier build) refused with {i} of {N} upgraded: {r:?}", slot.name);
        }
        restart(&mut agents, &mut retired, &slots, i, (&new, &key_file, COMPATIBLE));
    }
    for slot in &slots {
        let r = refused(slot);
        assert!(r.is_empty(), "{} refused: {r:?}", slot.name);
        assert!(opened(slot, "2") > 0.0, "{} opens envelope 2 while every member sends it", slot.name);
        assert_eq!(opened(slot, "3"), 0.0, "{} opened envelope 3 before any member sent it", slot.name);
    }

    // 3. This build's defaults.
    for i in 0..N {
        restart(&mut agents, &mut retired, &slots, i, (&new, &key_file, &[]));
    }
    let before: Vec<(f64, f64)> = slots.iter().map(|s| (opened(s, "2"), opened(s, "3"))).collect();
    std::thread::sleep(Duration::from_secs(4));
    for (slot, (v2, v3)) in slots.iter().zip(before) {
        let r = refused(slot);
        assert!(r.is_empty(), "{} refused: {r:?}", slot.name);
        assert_eq!(opened(slot, "2"), v2, "{} opened envelope 2 after every member moved to 3", slot.name);
        assert!(opened(slot, "3") > v3, "{} kept opening envelope 3", slot.name);
    }

    // Nobody suspected or dead, in any agent of either build.
    let everyone: Vec<&Agent> = retired.iter().chain(&agents).collect();
    for a in &everyone {
        for kind in ["suspected", "dead"] {
            let seen = a.since(begin, kind);
            assert!(seen.is_empty(), "{} saw {kind} during the upgrade: {seen:?}", a.name);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
