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
//! - Three pods of the StatefulSet in `deploy/kubernetes` run with the
//!   container args the manifest gives (its variables and mounted files
//!   filled in), join through the headless Service's SRV name, pass the
//!   kubelet's liveness and readiness probes on the pod IP, and refuse a
//!   change without the token.
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
        NameServer::start_at(sw, DNS, hosts, srv)
    }

    /// dnsmasq listening on `dns` (an address on the switch's bridge).
    fn start_at(sw: &str, dns: &str, hosts: &std::path::Path, srv: &[String]) -> NameServer {
        let log_path = hosts.with_file_name("dnsmasq.log");
        let log = std::fs::File::create(&log_path).unwrap();
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", sw, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--pid-file="]);
        cmd.args(["--no-resolv", "--no-hosts", "--bind-interfaces", "--port=53", "--local=/cluster.local/"]);
        cmd.arg(format!("--listen-address={dns}")).arg(format!("--addn-hosts={}", hosts.display()));
        cmd.args(["--log-facility=-", "--log-queries"]);
        for record in srv {
            cmd.arg(format!("--srv-host={record}"));
        }
        let mut child = cmd.stdout(Stdio::null()).stderr(log).spawn().expect("dnsmasq starts");
        // Up once it answers.
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            let probe = Command::new("ip")
                .args(["netns", "exec", sw, "bash", "-c", &format!("exec 3<>/dev/tcp/{dns}/53")])
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
        panic!("dnsmasq did not start listening on {dns}:53 within 10 s:\n{log}");
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
    // The others take the new process only once the old one, probed where
    // it was, does not answer (a live holder would keep its name).
    let new_addr = format!("{moved_ip}:7946");
    let up_at_new = |a: &Agent| a.since(back, "up").iter().any(|e| e["member"] == "a2" && e["addr"] == new_addr);
    let taken = loop {
        if [&a0, &a1, &a3].iter().all(|a| up_at_new(a)) {
            break back.elapsed();
        }
        assert!(
            back.elapsed() < Duration::from_secs(15),
            "a0, a1 and a3 see a2 up at its new address within 15 s (one probe of the old one): a0 saw {:?}",
            a0.since(back, "up")
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    println!("the others took a2 at its new address {taken:.1?} after it restarted");
    std::thread::sleep(Duration::from_secs(3));
    assert!(!met_anyone(&a4, back), "a4, with no data directory, met someone: the name server still gave seeds");
    assert!(!a0.view().contains_key("a4"), "a4 is unknown to the cluster");
    a0.stop();
    let _ = std::fs::remove_dir_all(&work);
}

/// The `vigil` container's args in the StatefulSet manifest, as written.
fn statefulset_args() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/kubernetes/statefulset/statefulset.yaml");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    let container = lines.iter().position(|l| l.trim() == "- name: vigil").expect("the vigil container");
    let start = container + lines[container..].iter().position(|l| l.trim() == "args:").expect("its args");
    let indent = lines[start].len() - lines[start].trim_start().len();
    let mut args = Vec::new();
    for l in &lines[start + 1..] {
        let t = l.trim_start();
        if t.starts_with('#') {
            continue;
        }
        if l.len() - t.len() <= indent || !t.starts_with("- ") {
            break;
        }
        args.push(t[2..].trim().trim_matches('"').to_owned());
    }
    assert!(args.len() >= 5, "args read from the manifest: {args:?}");
    args
}

/// The status code of `GET path` from inside host `ns` to `ip:port`, with
/// the Host header a kubelet's probe sends.
fn probe(ns: &str, ip: &str, port: u16, path: &str) -> Option<u16> {
    let script = format!(
        "exec 3<>/dev/tcp/{ip}/{port} && printf 'GET {path} HTTP/1.1\\r\\nHost: {ip}:{port}\\r\\nUser-Agent: \
         kube-probe/1.31\\r\\nConnection: close\\r\\n\\r\\n' >&3 && head -c 12 <&3"
    );
    let o = Command::new("ip").args(["netns", "exec", ns, "bash", "-c", &script]).output().ok()?;
    String::from_utf8_lossy(&o.stdout).split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn statefulset_pods_run_as_the_manifest_says_join_through_the_headless_service_and_pass_their_probes() {
    if !enabled("statefulset_pods_run_as_the_manifest_says_join_through_the_headless_service_and_pass_their_probes") {
        return;
    }
    let args = statefulset_args();
    let net = Net::new("pod", 3, "10.79.0");
    let dns_ip = "10.79.0.254";
    sh(&["ip", "-n", &net.sw, "addr", "add", &format!("{dns_ip}/24"), "dev", "br0"]);
    sh(&["ip", "-n", &net.sw, "link", "set", "lo", "up"]);
    for h in &net.hosts {
        let dir = format!("/etc/netns/{h}");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            format!("{dir}/resolv.conf"),
            format!("nameserver {dns_ip}\nsearch {DOMAIN} svc.cluster.local cluster.local\noptions ndots:5\n"),
        )
        .unwrap();
    }
    let work = std::env::temp_dir().join(format!("vigil-pods-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    // The headless Service: each pod's name, and its SRV record.
    let hosts = work.join("hosts");
    let records: Vec<(String, String)> = (0..3).map(|i| (net.ip(i), format!("vigil-{i}.vigil.{DOMAIN}"))).collect();
    write_hosts(&hosts, &records);
    let srv: Vec<String> =
        (0..3).map(|i| format!("{},vigil-{i}.vigil.{DOMAIN},7946,0,10", SRV.trim_end_matches('.'))).collect();
    let _dns = NameServer::start_at(&net.sw, dns_ip, &hosts, &srv);
    // The Secrets, as the init container leaves them: 0400.
    let secret = |name: &str, text: &str| {
        use std::os::unix::fs::PermissionsExt;
        let p = work.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o400)).unwrap();
        p.display().to_string()
    };
    let keys = secret("keys", &format!("{}\n", "3c".repeat(32)));
    let token = secret("token", "a-token-of-at-least-sixteen-characters\n");
    let mut pods = Vec::new();
    for i in 0..3 {
        let data = work.join(format!("data-{i}")).display().to_string();
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                a.replace("$(POD_NAME)", &format!("vigil-{i}"))
                    .replace("$(POD_IP)", &net.ip(i))
                    .replace("$(POD_NAMESPACE)", "default")
                    .replace("/var/lib/vigil", &data)
                    .replace("/run/vigil/keys", &keys)
                    .replace("/run/vigil/token", &token)
            })
            .collect();
        assert!(!args.iter().any(|a| a.contains("$(")), "an unsubstituted variable: {args:?}");
        // The harness names the agent itself (its events are read by name).
        let name = format!("vigil-{i}");
        assert!(args.contains(&format!("--name={name}")), "{args:?}");
        let rest: Vec<String> = args.into_iter().filter(|a| !a.starts_with("--name=")).collect();
        pods.push(Agent::spawn(&net.hosts[i], &name, &rest));
    }
    let took = until_one_view(&pods.iter().collect::<Vec<_>>(), Duration::from_secs(30))
        .expect("the pods join through the headless Service's SRV name within 30 s");
    println!("three pods joined through the headless Service in {took:.1?}");
    // The kubelet's probes, to the pod IP on the http port.
    for i in 0..3 {
        let ns = &net.hosts[i];
        assert_eq!(probe(ns, &net.ip(i), 8470, "/v1/health/live"), Some(200), "vigil-{i} live");
        let start = Instant::now();
        while probe(ns, &net.ip(i), 8470, "/v1/health/ready") != Some(200) {
            assert!(start.elapsed() < Duration::from_secs(20), "vigil-{i} not ready within 20 s");
            std::thread::sleep(Duration::from_millis(250));
        }
    }
    // Another pod may read, not change: the token guards leaving.
    let leave = format!(
        "exec 3<>/dev/tcp/{ip}/8470 && printf 'POST /v1/leave HTTP/1.1\\r\\nHost: {ip}:8470\\r\\nContent-Type: \
         application/json\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\n{{}}' >&3 && head -c 12 <&3",
        ip = net.ip(0)
    );
    let o = Command::new("ip").args(["netns", "exec", &net.hosts[1], "bash", "-c", &leave]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains(" 401"), "{}", String::from_utf8_lossy(&o.stdout));
    drop(pods);
    let _ = std::fs::remove_dir_all(&work);
}
