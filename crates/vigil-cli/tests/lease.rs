//! The lease `lease-majority` decides with, turned against the agent: a
//! link to a device, a directory that does not exist, a read-only file
//! system, a directory removed while the agent runs. `vigil agent`
//! processes, judged by their exit status, their log and their metrics.
//!
//! Bounds are generous for a loaded two-core machine and stated where used.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

mod support;
use support::metrics;

const VIGIL: &str = env!("CARGO_BIN_EXE_vigil");

/// How long a check of the lease may take to come round: every 15 s
/// (`vigil_net::lease::CHECK_EVERY`), and 10 s for a loaded machine.
const CHECK_BOUND: Duration = Duration::from_secs(25);

/// A fresh directory of this test's own (tests run at once).
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lease").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The flags of a lone agent on loopback that decides with `lease`.
fn flags(lease: &Path) -> Vec<String> {
    ["agent", "--name", "a", "--bind", "127.0.0.1:0", "--downing", "lease-majority", "--lease-file"]
        .into_iter()
        .map(str::to_owned)
        .chain([lease.to_str().unwrap().to_owned()])
        .collect()
}

/// `vigil agent` with `lease` run to its end, under `sh` with an address
/// space of at most 1 GiB (`ulimit -v`): an agent that read a device
/// without bound would be stopped by the limit, not exit 2. Its output
/// and how long it ran; an agent still running after 20 s is killed, and
/// the test fails.
fn refused(lease: &Path) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
        .arg(VIGIL)
        .args(flags(lease))
        .args(["--http", "off"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("{}: the agent still ran after 20 s: {}", lease.display(), stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = started.elapsed();
    (child.wait_with_output().unwrap(), took)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The agent refused to start with exit 2 and one line naming the flag,
/// the path as given and `problem`, within 5 s.
fn assert_refused(lease: &Path, problem: &str) {
    let (out, took) = refused(lease);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}: {err}", lease.display());
    assert_eq!(err, format!("vigil: --lease-file: {}: {problem}\n", lease.display()));
    assert!(out.stdout.is_empty(), "nothing on stdout: {:?}", String::from_utf8_lossy(&out.stdout));
    assert!(took < Duration::from_secs(5), "{}: exited after {took:?}", lease.display());
    println!("{}: exit 2 in {:.0} ms: {}", lease.display(), took.as_secs_f64() * 1000.0, err.trim_end());
}

#[test]
fn a_lease_that_is_a_device_stops_the_agent_at_once() {
    let dir = scratch("device");
    for device in ["/dev/full", "/dev/zero"] {
        let link = dir.join(&device[5..]);
        std::os::unix::fs::symlink(device, &link).unwrap();
        assert_refused(&link, "not a regular file (a character device)");
        assert_eq!(std::fs::read_link(&link).unwrap(), Path::new(device), "the link is left as it was");
    }
}

#[test]
fn a_lease_that_is_not_a_file_or_has_no_directory_stops_the_agent() {
    let dir = scratch("shapes");
    let gone = dir.join("gone");
    assert_refused(&gone.join("lease"), &format!("no such directory ({})", gone.display()));
    assert!(!gone.exists(), "nothing is created");
    assert_refused(&dir, "not a regular file (a directory)");
    let fifo = dir.join("fifo");
    match Command::new("mkfifo").arg(&fifo).status() {
        Ok(s) if s.success() => assert_refused(&fifo, "not a regular file (a named pipe)"),
        other => println!("SKIPPED the named pipe: mkfifo did not make one ({other:?})"),
    }
    let junk = dir.join("junk");
    std::fs::write(&junk, "#!/bin/sh\n").unwrap();
    assert_refused(&junk, "'#!/bin/sh' is not a line of a lease (holder=NAME, until_ms=UNIX_MS)");
    assert_eq!(std::fs::read_to_string(&junk).unwrap(), "#!/bin/sh\n", "left as it was");
    // Given in the settings file, the file's key is named.
    let toml = dir.join("agent.toml");
    std::fs::write(&toml, format!("lease_file = {:?}\n", gone.join("lease").to_str().unwrap())).unwrap();
    let out = Command::new(VIGIL)
        .args(["agent", "--config", toml.to_str().unwrap(), "--name", "a", "--bind", "127.0.0.1:0"])
        .args(["--http", "off", "--downing", "lease-majority"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "vigil: {}: lease_file: {}: no such directory ({})\n",
            toml.display(),
            gone.join("lease").display(),
            gone.display()
        )
    );
}

#[test]
fn a_lease_on_a_read_only_file_system_stops_the_agent() {
    // A read-only bind mount of the directory, in a mount namespace of the
    // agent's own: root in CI, where permissions would not stop it.
    let dir = scratch("read-only");
    let lease = dir.join("lease");
    let script = "mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro \"$1\" && shift && exec \"$@\"";
    let probe = Command::new("unshare")
        .args(["--mount", "sh", "-c", script, "sh"])
        .arg(&dir)
        .args(["touch"])
        .arg(&lease)
        .output();
    match probe {
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("Read-only file system") => {}
        other => {
            println!("SKIPPED: no read-only bind mount could be made here (unshare --mount, as root): {other:?}");
            return;
        }
    }
    let out = Command::new("unshare")
        .args(["--mount", "sh", "-c", script, "sh"])
        .arg(&dir)
        .arg(VIGIL)
        .args(flags(&lease))
        .args(["--http", "off"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out), format!("vigil: --lease-file: {}: read-only file system\n", lease.display()));
    assert!(!lease.exists(), "nothing was written");
    println!("on a read-only bind mount: {}", stderr(&out).trim_end());
}

/// A running agent and what it logs, line by line.
struct Agent {
    child: Child,
    url: String,
    log: Receiver<String>,
}

impl Agent {
    fn start(lease: &Path) -> Agent {
        let mut child = Command::new(VIGIL)
            .args(flags(lease))
            .args(["--http", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("vigil agent starts");
        let (tx, log) = channel();
        let err = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut agent = Agent { child, url: String::new(), log };
        let line = agent.next_line("HTTP API on ", Duration::from_secs(10)).expect("the agent says where its API is");
        agent.url = line.split("HTTP API on ").nth(1).and_then(|s| s.split_whitespace().next()).unwrap().to_owned();
        agent
    }

    /// The next line of the log holding `text`, within `bound`; the lines
    /// before it are dropped.
    fn next_line(&self, text: &str, bound: Duration) -> Option<String> {
        let deadline = Instant::now() + bound;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.log.recv_timeout(left) {
                Ok(line) if line.contains(text) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        None
    }

    /// The lines logged so far, not yet read.
    fn lines(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }

    fn metric(&self, name: &str) -> f64 {
        metrics::sum(&self.url, name, "")
    }

    /// Waits until `name` reaches `at_least`, within `bound`.
    fn metric_reaches(&self, name: &str, at_least: f64, bound: Duration) -> f64 {
        let deadline = Instant::now() + bound;
        loop {
            let v = self.metric(name);
            if v >= at_least || Instant::now() > deadline {
                return v;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Resident memory, in bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_lease_that_fails_while_the_agent_runs_is_said_once_then_its_recovery() {
    let dir = scratch("running");
    let leases = dir.join("leases");
    std::fs::create_dir_all(&leases).unwrap();
    let lease = leases.join("lease");
    let agent = Agent::start(&lease);
    // Checked as the member starts, off its loop.
    assert_eq!(agent.metric_reaches("vigil_lease_checks_total", 1.0, Duration::from_secs(10)), 1.0);
    assert_eq!(agent.metric("vigil_lease_usable"), 1.0, "usable");
    assert_eq!(agent.metric("vigil_lease_checks_failed_total"), 0.0);
    assert_eq!(std::fs::read_to_string(&lease).unwrap(), "", "created empty; nobody holds it");

    // The directory removed: one warning, however many checks fail.
    std::fs::remove_dir_all(&leases).unwrap();
    let removed = Instant::now();
    let warned = agent.next_line(" WARN ", CHECK_BOUND).expect("a warning within a check's period");
    println!("warned {:.1} s after the directory was removed: {warned}", removed.elapsed().as_secs_f64());
    let said = format!(
        "lease {}: no such directory ({}): lease-majority cannot keep this side at its next decision; every side \
         that needs the lease will down itself. Make the lease",
        lease.display(),
        leases.display()
    );
    assert!(warned.contains(&said), "{warned}");
    assert_eq!(agent.metric("vigil_lease_usable"), 0.0);
    let failed = agent.metric_reaches("vigil_lease_checks_failed_total", 2.0, CHECK_BOUND);
    assert!(failed >= 2.0, "a second check failed: {failed}");
    let more: Vec<String> = agent.lines().into_iter().filter(|l| l.contains(" WARN ")).collect();
    assert!(more.is_empty(), "one warning for {failed} failed checks, then {more:?}");

    // Put back: one line says so.
    std::fs::create_dir_all(&leases).unwrap();
    let back = Instant::now();
    let recovered = agent.next_line("can be asked again", CHECK_BOUND).expect("the recovery within a check's period");
    println!("recovered {:.1} s after the directory came back: {recovered}", back.elapsed().as_secs_f64());
    assert!(recovered.contains(" INFO "), "{recovered}");
    assert!(recovered.contains(&format!("(it was: lease {}: no such directory", lease.display())), "{recovered}");
    assert_eq!(agent.metric("vigil_lease_usable"), 1.0);

    // Turned into a link to /dev/zero: said, and never read.
    let rss = agent.rss();
    std::fs::remove_file(&lease).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &lease).unwrap();
    let warned = agent.next_line(" WARN ", CHECK_BOUND).expect("a warning within a check's period");
    assert!(
        warned.contains(&format!("lease {}: not a regular file (a character device)", lease.display())),
        "{warned}"
    );
    assert_eq!(agent.metric("vigil_lease_usable"), 0.0);
    let after = agent.rss();
    println!("resident memory {:.1} MB before the link, {:.1} MB after", rss as f64 / 1e6, after as f64 / 1e6);
    assert!(after < rss + 16 * 1024 * 1024, "{rss} bytes before, {after} after");
}

#[test]
fn without_lease_majority_the_lease_is_neither_checked_nor_served() {
    let dir = scratch("other-strategy");
    let link = dir.join("full");
    std::os::unix::fs::symlink("/dev/full", &link).unwrap();
    let mut child = Command::new(VIGIL)
        .args(["agent", "--name", "a", "--bind", "127.0.0.1:0", "--http", "127.0.0.1:0", "--downing", "keep-majority"])
        .arg("--lease-file")
        .arg(&link)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "the agent started");
        if let Some(rest) = line.split("HTTP API on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    assert!(metrics::series(&url, "vigil_lease_usable").is_empty());
    assert!(metrics::series(&url, "vigil_lease_checks_total").is_empty());
    let _ = child.kill();
    let _ = child.wait();
}
