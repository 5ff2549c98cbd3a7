//! Hosts in network namespaces for the tests that run `vigil agent` as
//! processes on a bridge: the namespaces, nftables faults, and the agents
//! with every event they printed.
//!
//! Needs root, `ip` (iproute2) and `nft` (nftables): the tests using it run
//! only when `VIGIL_NETNS=1` (`.ci/run` sets it, as root, after installing
//! what they need). The bridge lives in a namespace of its own, so nothing
//! changes in the host's; the namespaces (and any `/etc/netns` files made
//! for them) are removed at the end, even on failure.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Whether the namespace tests run here (`VIGIL_NETNS=1`); says why not.
pub(crate) fn enabled(test: &str) -> bool {
    if std::env::var("VIGIL_NETNS").as_deref() == Ok("1") {
        return true;
    }
    println!("SKIPPED {test}: set VIGIL_NETNS=1 (as root, with ip and nft installed) to run it");
    false
}

/// Namespace names start with this, the process id and the test's tag, so
/// runs and tests can coexist.
pub(crate) fn prefix(tag: &str) -> String {
    format!("vg{}{tag}", std::process::id())
}

pub(crate) fn sh(args: &[&str]) {
    let o = Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

pub(crate) fn nft(ns: &str, script: &str) {
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nft runs");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), script.as_bytes()).unwrap();
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "nft in {ns}: {}\n{script}", String::from_utf8_lossy(&o.stderr));
}

/// The namespaces: a switch with a bridge, and one per host, host `i` at
/// `SUBNET.(i+1)/24`.
pub(crate) struct Net {
    pub(crate) sw: String,
    pub(crate) hosts: Vec<String>,
    pub(crate) subnet: &'static str,
}

impl Net {
    pub(crate) fn new(tag: &str, n: usize, subnet: &'static str) -> Net {
        let p = prefix(tag);
        let net = Net { sw: format!("{p}-sw"), hosts: (0..n).map(|i| format!("{p}-a{i}")).collect(), subnet };
        net.remove();
        sh(&["ip", "netns", "add", &net.sw]);
        sh(&["ip", "-n", &net.sw, "link", "add", "br0", "type", "bridge"]);
        sh(&["ip", "-n", &net.sw, "link", "set", "br0", "up"]);
        for (i, h) in net.hosts.iter().enumerate() {
            let v = format!("v{i}");
            sh(&["ip", "netns", "add", h]);
            sh(&["ip", "-n", &net.sw, "link", "add", &v, "type", "veth", "peer", "name", "eth0", "netns", h]);
            sh(&["ip", "-n", &net.sw, "link", "set", &v, "master", "br0", "up"]);
            sh(&["ip", "-n", h, "link", "set", "lo", "up"]);
            sh(&["ip", "-n", h, "addr", "add", &format!("{}/24", net.ip(i)), "dev", "eth0"]);
            sh(&["ip", "-n", h, "link", "set", "eth0", "up"]);
        }
        net
    }

    /// Host `i`'s address.
    pub(crate) fn ip(&self, i: usize) -> String {
        format!("{}.{}", self.subnet, i + 1)
    }

    /// Removes every fault.
    pub(crate) fn heal(&self) {
        for h in &self.hosts {
            let _ = Command::new("ip").args(["netns", "exec", h, "nft", "flush", "ruleset"]).status();
        }
    }

    fn remove(&self) {
        for ns in self.hosts.iter().chain([&self.sw]) {
            let _ = Command::new("ip").args(["netns", "del", ns]).stderr(Stdio::null()).status();
            // `ip netns exec` mounts /etc/netns/NAME/* over /etc.
            let _ = std::fs::remove_dir_all(format!("/etc/netns/{ns}"));
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.remove();
    }
}

/// One agent, and every event it printed with when it arrived.
pub(crate) struct Agent {
    pub(crate) name: String,
    pub(crate) child: Child,
    pub(crate) events: Arc<Mutex<Vec<(Instant, Value)>>>,
}

impl Agent {
    /// `vigil agent --name NAME ARGS...` in namespace `ns`.
    pub(crate) fn spawn(ns: &str, name: &str, args: &[String]) -> Agent {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns, env!("CARGO_BIN_EXE_vigil"), "agent", "--name", name]);
        cmd.args(args);
        Agent::run(cmd, name)
    }

    /// Runs `cmd`, an agent named `name`, keeping the events it prints.
    pub(crate) fn run(mut cmd: Command, name: &str) -> Agent {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("vigil agent starts");
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                sink.lock().unwrap().push((Instant::now(), v));
            }
        });
        Agent { name: name.to_owned(), child, events }
    }

    /// Events since `t` of `kind`.
    pub(crate) fn since(&self, t: Instant, kind: &str) -> Vec<Value> {
        let all = self.events.lock().unwrap();
        all.iter().filter(|(at, v)| *at >= t && v["event"] == kind).map(|(_, v)| v.clone()).collect()
    }

    /// What this agent believes of each member now, from its events (a
    /// new generation of its own, after a downing, starts from nothing:
    /// it forgot every member).
    pub(crate) fn view(&self) -> HashMap<String, String> {
        let mut view = HashMap::new();
        for (_, v) in self.events.lock().unwrap().iter() {
            if v["event"] == "renewed" && v["member"] == self.name.as_str() {
                view.clear();
                continue;
            }
            let state = match v["event"].as_str() {
                Some("up" | "refuted" | "reachable") => "alive",
                Some("suspected") => "suspect",
                Some("dead") => "dead",
                Some("left") => "left",
                _ => continue,
            };
            if let Some(m) = v["member"].as_str().filter(|m| *m != self.name) {
                view.insert(m.to_owned(), state.to_owned());
            }
        }
        view
    }

    /// SIGTERM, and the exit awaited (the agent leaves first).
    pub(crate) fn stop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until every agent believes every other alive, or `bound` passes.
pub(crate) fn until_one_view(agents: &[&Agent], bound: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < bound {
        let whole = agents.iter().all(|a| {
            let v = a.view();
            agents.iter().filter(|b| b.name != a.name).all(|b| v.get(&b.name).is_some_and(|s| s == "alive"))
        });
        if whole {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}
