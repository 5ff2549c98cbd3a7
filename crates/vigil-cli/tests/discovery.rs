//! Seeds found through DNS, on real sockets: `vigil agent` processes in
//! network namespaces ask a real name server (Debian's dnsmasq, started
//! here) whose records change during the test, with a resolv.conf like a
//! Kubernetes pod's (`ip netns exec` mounts `/etc/netns/NS/resolv.conf`).
//!
//! - Three members start as a StatefulSet's pods would, all with the same
//!   `--join dnssrv+_vigil._udp.vigil...` (one of them with the relative
//!   name, through the search list), and form one cluster.
//! - A member whose seed name points nowhere keeps asking; once the record
//!   moves to a member's address, it finds the cluster.
//! - With the SRV records gone, a member killed with SIGKILL and restarted
//!   at a new address (a pod rescheduled, where the others cannot find it)
//!   rejoins from the members it kept in `--data-dir`, while a new member
//!   with the same flags and an empty data directory stays alone.
//!
//! Needs root, `ip` and `dnsmasq` (`.ci/run` installs dnsmasq-base); runs
//! only with `VIGIL_NETNS=1`, where a missing tool is a failure.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::netns::{Agent, Net, enabled, sh, until_one_view};

const SUBNET: &str = "10.78.0";
/// The name server's address, on the bridge.
const DNS: &str = "10.78.0.254";
const DOMAIN: &str = "default.svc.cluster.local";
const SRV: &str = "_vigil._udp.vigil.default.svc.cluster.local.";

/// dnsmasq serving `hosts` (an addn-hosts file, re-read on SIGHUP) and
/// the given SRV records, answering for cluster.local only.
struct NameServer {
    child: Child,
}

impl NameServer {
    fn start(sw: &str, hosts: &std::path::Path, srv: &[String]) -> NameServer {
        let log_path = hosts.with_file_name("dnsmasq.log");
        let log = std::fs::File::create(&log_path).unwrap();
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", sw, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--pid-file="]);
        cmd.args(["--no-resolv", "--no-hosts", "--bind-interfaces", "--port=53", "--local=/cluster.local/"]);
        cmd.arg(format!("--listen-address={DNS}")).arg(format!("--addn-hosts={}", hosts.display()));
        cmd.args(["--log-facility=-", "--log-queries"]);
        for record in srv {
            cmd.arg(format!("--srv-host={record}"));
        }
        let mut child = cmd.stdout(Stdio::null()).stderr(log).spawn().expect("dnsmasq starts");
        // Up once it answers.
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            let probe = Command::new("ip")
                .args(["netns", "exec", sw, "bash", "-c", &format!("exec 3<>/dev/tcp/{DNS}/53")])
                .stderr(Stdio::null())
                .status();
            if probe.is_ok_and(|s| s.success()) {
                return NameServer { child };
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        panic!("dnsmasq did not start listening on {DNS}:53 within 10 s:\n{log}");
    }

    /// Re-reads the hosts file.
    fn reload(&self) {
        sh(&["kill", "-HUP", &self.child.id().to_string()]);
    }
}

impl Drop for NameServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The SRV records of the headless Service: each pod's name, port 7946.
fn srv_records(pods: usize) -> Vec<String> {
    (0..pods).map(|i| format!("{},a{i}.vigil.{DOMAIN},7946,0,10", SRV.trim_end_matches('.'))).collect()
}

fn write_hosts(path: &std::path::Path, lines: &[(String, String)]) {
    let text: String = lines.iter().map(|(ip, name)| format!("{ip} {name}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// Saw any member come up since `t`.
fn met_anyone(a: &Agent, t: Instant) -> bool {
    !a.since(t, "up").is_empty()
}

#[test]
fn members_join_through_dns_names_whose_records_change_and_rejoin_from_what_they_kept() {
    if !enabled("members_join_through_dns_names_whose_records_change_and_rejoin_from_what_they_kept") {
        return;
    }
    for tool in ["ip", "dnsmasq"] {
        let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).stdout(Stdio::null()).status();
        assert!(
            found.is_ok_and(|s| s.success()),
            "{tool} is needed (VIGIL_NETNS=1): apt-get install dnsmasq-base iproute2"
        );
    }
    let net = Net::new("dns", 5, SUBNET);
    sh(&["ip", "-n", &net.sw, "addr", "add", &format!("{DNS}/24"), "dev", "br0"]);
    // The readiness probe connects from the switch's own namespace.
    sh(&["ip", "-n", &net.sw, "link", "set", "lo", "up"]);
    // Every host asks the name server, with a pod's search list.
    for h in &net.hosts {
        let dir = format!("/etc/netns/{h}");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            format!("{dir}/resolv.conf"),
            format!("nameserver {DNS}\nsearch {DOMAIN} svc.cluster.local cluster.local\noptions ndots:5 timeout:1\n"),
        )
        .unwrap();
    }
    let work = std::env::temp_dir().join(format!("vigil-discovery-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let hosts = work.join("hosts");
    let mut records: Vec<(String, String)> = (0..3)
        .flat_map(|i| [(net.ip(i), format!("a{i}.vigil.{DOMAIN}")), (net.ip(i), format!("vigil.{DOMAIN}"))])
        .collect();
    // The seed name points at nobody yet.
    records.push((format!("{SUBNET}.99"), format!("seed.{DOMAIN}")));
    write_hosts(&hosts, &records);
    let dns = NameServer::start(&net.sw, &hosts, &srv_records(3));

    let data = |i: usize| work.join(format!("data-a{i}")).display().to_string();
    let pod_at = |i: usize, ip: &str, join: &str| -> Vec<String> {
        ["--bind", &format!("{ip}:7946"), "--plaintext", "--http", "off", "--join", join, "--data-dir", &data(i)]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    };
    let pod = |i: usize, join: &str| pod_at(i, &net.ip(i), join);
    let absolute = format!("dnssrv+{SRV}");
    let mut a0 = Agent::spawn(&net.hosts[0], "a0", &pod(0, &absolute));
    let a1 = Agent::spawn(&net.hosts[1], "a1", &pod(1, &absolute));
    // Relative: found through the search list, as in a pod.
    let mut a2 = Agent::spawn(&net.hosts[2], "a2", &pod(2, "dnssrv+_vigil._udp.vigil"));
    let took =
        until_one_view(&[&a0, &a1, &a2], Duration::from_secs(20)).expect("three members join through SRV within 20 s");
    println!("three members joined through the SRV name in {took:.1?}");

    // A member whose seed name points nowhere: it keeps asking.
    let t3 = Instant::now();
    let a3 = Agent::spawn(&net.hosts[3], "a3", &pod(3, &format!("dns+seed.{DOMAIN}:7946")));
    std::thread::sleep(Duration::from_secs(5));
    assert!(!met_anyone(&a3, t3), "a3 met someone through a name that points nowhere");
    let last = records.len() - 1;
    records[last].0 = net.ip(1);
    write_hosts(&hosts, &records);
    dns.reload();
    let moved = Instant::now();
    let found = until_one_view(&[&a0, &a1, &a2, &a3], Duration::from_secs(45))
        .expect("a3 finds the cluster within 45 s of its seed's record moving (retries back off to 30 s)");
    println!(
        "a3 found the cluster {found:.1?} after its seed's record moved ({:.1?} after it started)",
        moved.duration_since(t3) + found
    );

    // The members a2 knows are kept (written at most every 10 s).
    let kept = std::path::Path::new(&data(2)).join("members");
    let waited = Instant::now();
    loop {
        let text = std::fs::read_to_string(&kept).unwrap_or_default();
        if [0, 1, 3].iter().all(|&i| text.contains(&format!("{}:7946", net.ip(i)))) {
            break;
        }
        assert!(waited.elapsed() < Duration::from_secs(15), "{} does not list a0, a1 and a3: {text}", kept.display());
        std::thread::sleep(Duration::from_millis(500));
    }

    // No seed answers any more: the SRV records and the pods' names gone.
    drop(dns);
    records.retain(|(_, name)| !name.contains("vigil."));
    write_hosts(&hosts, &records);
    let _dns = NameServer::start(&net.sw, &hosts, &[]);
    let lookup = Command::new("ip")
        .args(["netns", "exec", &net.hosts[4], "getent", "hosts", &format!("a0.vigil.{DOMAIN}")])
        .output()
        .unwrap();
    assert!(!lookup.status.success(), "the pods' names still resolve: {}", String::from_utf8_lossy(&lookup.stdout));

    // a2 crashes and comes back with its data directory at a new address
    // (a pod rescheduled): the others cannot find it where it was, and no
    // name answers.
    let _ = a2.child.kill();
    let _ = a2.child.wait();
    let moved_ip = format!("{SUBNET}.13");
    sh(&["ip", "-n", &net.hosts[2], "addr", "add", &format!("{moved_ip}/24"), "dev", "eth0"]);
    let back = Instant::now();
    let a2 = Agent::spawn(&net.hosts[2], "a2", &pod_at(2, &moved_ip, "dnssrv+_vigil._udp.vigil"));
    // A new member with the same flags and nothing kept: nobody to ask.
    let a4 = Agent::spawn(&net.hosts[4], "a4", &pod(4, "dnssrv+_vigil._udp.vigil"));
    let rejoined = until_one_view(&[&a0, &a1, &a2, &a3], Duration::from_secs(30))
        .expect("the restarted a2 rejoins from its data directory within 30 s, with no seed answering");
    println!("a2 rejoined from its data directory in {rejoined:.1?}, no seed answering");
    let ups = a0.since(back, "up");
    assert!(
        ups.iter().any(|e| e["member"] == "a2" && e["addr"] == format!("{moved_ip}:7946")),
        "a0 saw a2 come back up at its new address: {ups:?}"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(!met_anyone(&a4, back), "a4, with no data directory, met someone: the name server still gave seeds");
    assert!(!a0.view().contains_key("a4"), "a4 is unknown to the cluster");
    a0.stop();
    let _ = std::fs::remove_dir_all(&work);
}
