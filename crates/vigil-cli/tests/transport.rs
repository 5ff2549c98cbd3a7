//! What the protocol's messages travel on, tried on real sockets: `vigil
//! agent` processes in network namespaces where nftables drops UDP.
//!
//! - Every host drops UDP, both ways: agents started with `--transport
//!   stream` form one view, stay quiet, and find a crash.
//! - One host drops UDP, both ways, for 30 s: with the default transport,
//!   the probes of it are answered by a TCP ping and nobody is accused;
//!   with `--transport udp-only` (no TCP pings, memberlist's
//!   `DisableTcpPings`) it is accused.
//!
//! Needs root, `ip` and `nft`: runs only when `VIGIL_NETNS=1` (`.ci/run`
//! sets it); otherwise it says it was skipped. About two minutes.

use std::time::{Duration, Instant};

mod support;
use support::netns::{Agent, Net, enabled, nft, until_one_view};

const NET: &str = "10.81.0";
const N: usize = 5;

/// Drops every UDP packet into and out of the host.
const NO_UDP: &str = "table inet fault {
   chain in { type filter hook input priority 0; policy accept; meta l4proto udp drop; }
   chain out { type filter hook output priority 0; policy accept; meta l4proto udp drop; }
 }";

/// Agents on every host, each joining through the first, with `extra` flags.
fn start_all(net: &Net, extra: &[&str]) -> Vec<Agent> {
    (0..N)
        .map(|i| {
            let mut args = vec!["--bind".to_owned(), format!("{}:7946", net.ip(i)), "--plaintext".to_owned()];
            if i > 0 {
                args.extend(["--join".to_owned(), format!("{}:7946", net.ip(0))]);
            }
            args.extend(["--http".to_owned(), "off".to_owned()]);
            args.extend(extra.iter().map(|s| (*s).to_owned()));
            let a = Agent::spawn(&net.hosts[i], &format!("a{i}"), &args);
            std::thread::sleep(Duration::from_millis(100));
            a
        })
        .collect()
}

fn one_view(agents: &[Agent], bound: Duration) -> Option<Duration> {
    until_one_view(&agents.iter().collect::<Vec<_>>(), bound)
}

/// Suspicion events of `member` printed by any agent since `t`.
fn suspicions_of(agents: &[Agent], t: Instant, member: &str) -> usize {
    agents.iter().flat_map(|a| a.since(t, "suspected")).filter(|e| e["member"] == member).count()
}

#[test]
fn a_cluster_without_udp_runs_on_streams_and_tcp_pings_answer_for_a_host_without_udp() {
    if !enabled("transport") {
        return;
    }
    let net = Net::new("tr", N, NET);

    // UDP dropped everywhere from the start: streams only.
    for h in &net.hosts {
        nft(h, NO_UDP);
    }
    let mut agents = start_all(&net, &["--transport", "stream"]);
    let took = one_view(&agents, Duration::from_secs(20)).expect("a stream-only cluster converges within 20 s");
    println!("streams only: one view in {:.1} s", took.as_secs_f64());
    let quiet = Instant::now();
    std::thread::sleep(Duration::from_secs(20));
    let raised: usize = agents.iter().map(|a| a.since(quiet, "suspected").len()).sum();
    assert_eq!(raised, 0, "heartbeats on streams keep every member alive");
    let crashed = Instant::now();
    let _ = agents[N - 1].child.kill();
    let _ = agents[N - 1].child.wait();
    let survivors = &agents[..N - 1];
    let mut dead_everywhere = None;
    while crashed.elapsed() < Duration::from_secs(25) {
        if survivors.iter().all(|a| a.since(crashed, "dead").iter().any(|e| e["member"] == "a4")) {
            dead_everywhere = Some(crashed.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = dead_everywhere.expect("the crash is found on streams within 25 s");
    println!("streams only: crash → dead at every survivor in {:.1} s", took.as_secs_f64());
    // As on datagrams: φ's silence and a probe (about 2.5 s), a suspicion
    // of 2.5 to 10 s.
    assert!(took < Duration::from_secs(15), "{took:?}");
    for a in &mut agents[..N - 1] {
        a.stop();
    }
    drop(agents);
    net.heal();

    // One host without UDP, with and without TCP pings.
    let mut seen = Vec::new();
    for transport in ["udp", "udp-only"] {
        let mut agents = start_all(&net, &["--transport", transport]);
        one_view(&agents, Duration::from_secs(20)).expect("the agents converge within 20 s");
        let start = Instant::now();
        nft(&net.hosts[N - 1], NO_UDP);
        std::thread::sleep(Duration::from_secs(30));
        net.heal();
        let raised = suspicions_of(&agents, start, "a4");
        let problems: usize = agents.iter().map(|a| a.since(start, "path_problem").len()).sum();
        println!(
            "a4 without UDP for 30 s, --transport {transport}: {raised} suspicions of a4, {problems} path problems"
        );
        seen.push(raised);
        for a in &mut agents {
            a.stop();
        }
    }
    assert_eq!(seen[0], 0, "TCP pings answer for a4: nobody accuses it");
    assert!(seen[1] > 0, "without TCP pings a4 is accused");
}
