//! `vigil agent` as real processes on loopback: started as a user would,
//! killed, stopped and terminated with signals, judged by what each prints.
//!
//! Bounds are generous for a loaded two-core machine and stated where used.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

struct Agent {
    name: String,
    child: Child,
    addr: String,
    events: Receiver<Value>,
}

impl Agent {
    fn start(name: &str, join: Option<&str>, extra: &[&str]) -> Agent {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
        cmd.args(["agent", "--name", name, "--bind", "127.0.0.1:0", "--http", "off"]).args(extra);
        if let Some(j) = join {
            cmd.args(["--join", j]);
        }
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("vigil agent starts");
        // A line on stderr says where it listens.
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        while !first.contains(" started ") {
            first.clear();
            if err.read_line(&mut first).unwrap() == 0 {
                panic!("{name}: stderr ended before it said where it listens");
            }
        }
        let addr = first
            .split(" on ")
            .nth(1)
            .and_then(|s| s.split(',').next())
            .unwrap_or_else(|| panic!("{name}: unexpected first line {first:?}"))
            .to_owned();
        std::thread::spawn(move || for _ in err.lines() {});
        let (tx, events) = channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Agent { name: name.to_owned(), child, addr, events }
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill").args([sig, &self.child.id().to_string()]).status().is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} {}", self.name);
    }

    /// The first event of `kind` about `member` within `bound`; what else it
    /// saw meanwhile is returned too.
    fn wait_for(&self, kind: &str, member: &str, bound: Duration) -> (Option<Value>, Vec<Value>) {
        let deadline = Instant::now() + bound;
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.events.recv_timeout(left) {
                Ok(v) if v["event"] == kind && v["member"] == member => return (Some(v), seen),
                Ok(v) => seen.push(v),
                Err(_) => break,
            }
        }
        (None, seen)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `n` agents, all joined through the first, each having seen the others up.
fn cluster(n: usize, extra: &[&str]) -> Vec<Agent> {
    let first = Agent::start("a0", None, extra);
    let seed = first.addr.clone();
    let mut all = vec![first];
    for i in 1..n {
        all.push(Agent::start(&format!("a{i}"), Some(&seed), extra));
    }
    for a in &all {
        let mut missing: Vec<&str> = all.iter().map(|b| b.name.as_str()).filter(|b| *b != a.name).collect();
        let deadline = Instant::now() + Duration::from_secs(15);
        while !missing.is_empty() {
            let left = deadline.checked_duration_since(Instant::now()).unwrap_or_default();
            match a.events.recv_timeout(left) {
                Ok(v) if v["event"] == "up" => missing.retain(|m| v["member"] != *m),
                Ok(_) => {}
                Err(_) => panic!("{} never saw {missing:?} up", a.name),
            }
        }
    }
    all
}

#[test]
fn kill_9_is_seen_dead_by_every_other_agent() {
    let mut all = cluster(5, &[]);
    let victim = all.pop().unwrap();
    let name = victim.name.clone();
    let started = Instant::now();
    victim.signal("-KILL");
    for a in &all {
        // LAN preset: about 4 s on an idle machine; 20 s for a loaded one.
        let (dead, _) = a.wait_for("dead", &name, Duration::from_secs(20));
        let dead = dead.unwrap_or_else(|| panic!("{} never printed dead for {name}", a.name));
        assert_eq!(dead["node"], a.name.as_str());
        assert!(dead["ts_ms"].as_u64().is_some() && dead["by"].as_str().is_some(), "{dead}");
    }
    println!("kill -9 → dead at every agent: {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn a_3_s_stop_is_noticed_refuted_and_never_dead() {
    let all = cluster(5, &[]);
    let victim = &all[4];
    let name = victim.name.as_str();
    victim.signal("-STOP");
    std::thread::sleep(Duration::from_secs(3));
    victim.signal("-CONT");
    // What every other agent prints about it in the next 8 s (the
    // refutation comes within a second or two of the resumption).
    std::thread::sleep(Duration::from_secs(8));
    let mut about: Vec<(String, String)> = Vec::new();
    for a in &all[..4] {
        while let Ok(v) = a.events.try_recv() {
            if v["member"] == name {
                about.push((a.name.clone(), v["event"].as_str().unwrap_or("").to_owned()));
            }
        }
    }
    let has = |kind: &str| about.iter().any(|(_, e)| e == kind);
    assert!(!has("dead"), "declared dead: {about:?}");
    // The stop is noticed either way: the observers' probe went out while
    // it was stopped and failed (suspected, then refuted once it runs
    // again), or the probe was answered as it resumed (a path problem, no
    // accusation). Which one depends on where in the heartbeat cycle the
    // stop fell.
    let suspected_and_refuted = has("suspected") && has("refuted");
    assert!(suspected_and_refuted || has("path_problem"), "the stop went unnoticed or unrefuted: {about:?}");
    if has("suspected") {
        assert!(has("refuted"), "a suspicion was never refuted: {about:?}");
    }
    println!("a 3 s stop, as the others saw it: {about:?}");
}

#[test]
fn sigterm_leaves_and_exits_0_within_3_s() {
    let mut all = cluster(3, &[]);
    let mut leaver = all.pop().unwrap();
    let name = leaver.name.clone();
    let started = Instant::now();
    leaver.signal("-TERM");
    let status = loop {
        if let Some(s) = leaver.child.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(3), "still running 3 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    for a in &all {
        let (left, seen) = a.wait_for("left", &name, Duration::from_secs(5));
        assert!(left.is_some(), "{} saw no leave: {seen:?}", a.name);
    }
}

/// Tags given with `--tag` reach another agent: with the member's `up`, or
/// in a `tags` event just after it.
#[test]
fn tags_arrive_with_up() {
    let first = Agent::start("t0", None, &["--tag", "zone=a", "--tag", "role=queue"]);
    let other = Agent::start("t1", Some(&first.addr.clone()), &[]);
    let (up, seen) = other.wait_for("up", "t0", Duration::from_secs(10));
    let up = up.unwrap_or_else(|| panic!("t1 never saw t0 up: {seen:?}"));
    // The first contact may come before the tags (a packet from t0 says
    // nothing of them): then a "tags" event follows.
    let tags = if up["tags"]["zone"].is_null() {
        let (t, seen) = other.wait_for("tags", "t0", Duration::from_secs(5));
        t.unwrap_or_else(|| panic!("no tags event after a tagless up: {seen:?}"))["tags"].clone()
    } else {
        up["tags"].clone()
    };
    assert_eq!((tags["zone"].as_str(), tags["role"].as_str()), (Some("a"), Some("queue")), "{tags}");
}

#[test]
fn bad_settings_exit_2_naming_the_setting() {
    let dir = std::env::temp_dir().join(format!("vigil-agent-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let secret = |p: &std::path::Path, text: &str| {
        std::fs::write(p, text).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
    };
    let keys = dir.join("keys");
    secret(&keys, "not a key\n");
    let config = dir.join("agent.toml");
    std::fs::write(&config, "name = \"x\"\nbind = \"nowhere\"\n").unwrap();
    let long = format!("k={}", "v".repeat(300));
    let tagged = dir.join("tagged.toml");
    std::fs::write(&tagged, format!("name = \"x\"\n[tags]\nk = \"{}\"\n", "v".repeat(300))).unwrap();
    let short_token = dir.join("token");
    secret(&short_token, "abc\n");
    let open_keys = dir.join("open-keys");
    std::fs::write(&open_keys, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n").unwrap();
    std::fs::set_permissions(&open_keys, std::fs::Permissions::from_mode(0o644)).unwrap();
    let frozen = dir.join("frozen");
    std::fs::create_dir_all(&frozen).unwrap();
    std::fs::write(frozen.join("generation"), format!("{}\n", u64::MAX)).unwrap();
    let fresh = dir.join("fresh-data");
    let cases: [(Vec<&str>, &str); 26] = [
        (
            vec!["agent", "--name", "x", "--reconnect-timeout", "30"],
            "--reconnect-timeout: '30' is not a duration: it has no unit; write 30ms",
        ),
        (
            vec!["agent", "--name", "x", "--reconnect-interval", "2d"],
            "reconnect_interval is 172800s, expected more than zero and at most a day",
        ),
        (vec!["agent", "--name", "x"], "0.0.0.0:7946: other hosts can reach this member"),
        (vec!["agent", "--name", "x", "--bind", "10.1.2.3:7946"], "say --plaintext to run so"),
        (
            vec!["agent", "--name", "x", "--bind", "127.0.0.1:0", "--advertise", "0.0.0.0:0"],
            "--advertise: '0.0.0.0:0' is not an address other members can reach",
        ),
        (
            vec!["agent", "--name", "x", "--join", ""],
            "--join: '' is not a list of addresses: it holds an empty address",
        ),
        (vec!["agent", "--name", "x", "--join", "10.0.0.1:7946,,10.0.0.2:7946"], "holds an empty address"),
        (
            vec!["agent", "--name", "x", "--join", "seed.example"],
            "expected IP:PORT, HOST:PORT, dns+HOST:PORT or dnssrv+NAME",
        ),
        (vec!["agent", "--name", "x", "--join", "seed.example:0"], "the port must be 1 to 65535"),
        (vec!["agent", "--name", "a\x1b[2Jb"], "has a control character at byte 1; a name is printable text"),
        (
            vec!["agent", "--name", "x", "--bind", "127.0.0.1:0", "--key-file", open_keys.to_str().unwrap()],
            "is open to others (mode 0644); a key file must be readable by its owner only: chmod 600",
        ),
        (
            vec![
                "agent",
                "--name",
                "x",
                "--bind",
                "127.0.0.1:0",
                "--http",
                "off",
                "--data-dir",
                frozen.to_str().unwrap(),
            ],
            "leaves no room to restart higher",
        ),
        (
            vec![
                "agent",
                "--name",
                "",
                "--bind",
                "127.0.0.1:0",
                "--http",
                "off",
                "--data-dir",
                fresh.to_str().unwrap(),
            ],
            "--name: invalid membership configuration: name is 0 bytes long",
        ),
        (vec!["agent", "--name", "x", "--bind", "1.2.3"], "--bind: '1.2.3' is not an address"),
        (vec!["agent", "--name", "x", "--key-file", keys.to_str().unwrap()], "--key-file: line 1: not a 32-byte key"),
        (vec!["agent", "--config", config.to_str().unwrap()], "agent.toml: bind: 'nowhere' is not an address"),
        (vec!["agent", "--name", "x", "--seal-mode", "sealed"], "--seal-mode: sealing needs keys"),
        (vec!["agent", "--name", "x", "--tag", "zone"], "--tag: 'zone' is not a tag (KEY=VALUE)"),
        (vec!["agent", "--name", "x", "--tag", &long], "--tag: tag \"k\": 300 bytes"),
        (vec!["agent", "--config", tagged.to_str().unwrap()], "tagged.toml: tags: tag \"k\": 300 bytes"),
        (vec!["agent", "--name", "x", "--datagram-budget", "100"], "datagram_budget is 100, expected 1024 to 65000"),
        (vec!["agent", "--name", "x", "--http", "localhost"], "--http: 'localhost' is not an address"),
        (
            vec!["agent", "--name", "x", "--bind", "127.0.0.1:0", "--http", "8.8.8.8:80"],
            "--http: cannot listen on 8.8.8.8:80",
        ),
        (
            vec!["agent", "--name", "x", "--http-token-file", short_token.to_str().unwrap()],
            "must be 16 to 4096 printable",
        ),
        (
            vec!["agent", "--name", "x", "--record-arrivals", "2000000"],
            "--record-arrivals: invalid membership configuration: recorded_arrivals is 2000000, expected 0 to 1000000",
        ),
        (vec!["agent", "--name", "x", "--event-history", "0"], "--event-history: 0 is out of range (1 to 100000)"),
    ];
    let mut failures = Vec::new();
    for (args, says) in cases {
        let o = Command::new(env!("CARGO_BIN_EXE_vigil")).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(2) || !err.contains(says) {
            failures.push(format!("{args:?}: status {:?}, wanted {says:?}: {err}", o.status.code()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The start that failed on its name left no data directory behind; the
    // frozen generation was not touched.
    assert!(!fresh.exists());
    assert_eq!(std::fs::read_to_string(frozen.join("generation")).unwrap(), format!("{}\n", u64::MAX));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The first line of `child`'s standard error holding `text`, within 10 s
/// (and every line before it).
fn stderr_until(child: &mut Child, text: &str) -> Vec<String> {
    let err = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = channel();
    let wanted = text.to_owned();
    std::thread::spawn(move || {
        for line in err.lines().map_while(Result::ok) {
            let done = line.contains(&wanted);
            if tx.send(line).is_err() || done {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(10)) {
        let done = line.contains(text);
        lines.push(line);
        if done {
            return lines;
        }
    }
    panic!("no line with {text:?} on stderr within 10 s: {lines:?}");
}

#[test]
fn without_a_name_the_agent_is_named_after_the_host() {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
    cmd.args(["agent", "--bind", "127.0.0.1:0", "--http", "off"]).env_remove("HOSTNAME");
    if ["(none)", "localhost", "localhost.localdomain"].contains(&host.as_str()) || host.len() > 64 {
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with(&format!("vigil: --name: not given, and the host's name '{host}'")), "{err}");
        println!("SKIPPED the naming: this host's name {host:?} cannot be a member's (it was refused, as it must be)");
        return;
    }
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let lines = stderr_until(&mut child, " started ");
    let _ = child.kill();
    let _ = child.wait();
    let said = format!(
        "no --name given: the member is named {host} after this host (/proc/sys/kernel/hostname); every member's \
         name must be unique in the cluster"
    );
    assert!(lines.iter().any(|l| l.contains(" INFO ") && l.ends_with(&said)), "{lines:?}");
    assert!(lines.last().unwrap().contains(&format!(" started {host} (generation ")), "{lines:?}");
    println!("named after the host: {}", lines.last().unwrap());
}

#[test]
fn a_host_name_many_hosts_have_is_refused_and_hostname_taken_instead() {
    // The host renamed in a namespace of the agent's own (root in CI).
    let renamed = |name: &str| {
        let mut cmd = Command::new("unshare");
        cmd.args(["--uts", "sh", "-c", "hostname \"$1\" && shift && exec \"$@\"", "sh", name]);
        cmd.env_remove("HOSTNAME");
        cmd
    };
    match renamed("localhost").arg("true").status() {
        Ok(s) if s.success() => {}
        other => {
            println!("SKIPPED: the host cannot be renamed here (unshare --uts, as root): {other:?}");
            return;
        }
    }
    let o = renamed("localhost")
        .args([env!("CARGO_BIN_EXE_vigil"), "agent", "--bind", "127.0.0.1:0", "--http", "off"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "vigil: --name: not given, and the host's name 'localhost' cannot be a member's name (many hosts have it): \
         give --name\n"
    );
    // $HOSTNAME when the kernel's name will not do.
    let mut child = renamed("localhost")
        .env("HOSTNAME", "web-2")
        .args([env!("CARGO_BIN_EXE_vigil"), "agent", "--bind", "127.0.0.1:0", "--http", "off"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = stderr_until(&mut child, " started ");
    let _ = child.kill();
    let _ = child.wait();
    assert!(lines.iter().any(|l| l.contains("the member is named web-2 after this host ($HOSTNAME)")), "{lines:?}");
    assert!(lines.last().unwrap().contains(" started web-2 (generation "), "{lines:?}");
}
