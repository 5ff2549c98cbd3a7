//! `vigil cluster` as a newcomer runs it: one process, five members on
//! loopback, faults typed at the terminal or sent to the API, detection
//! watched on standard output.
//!
//! Bounds are generous for a loaded two-core machine and stated where used.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

struct Demo {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    url: String,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Demo {
    fn start() -> Demo {
        let mut child = Command::new(env!("CARGO_BIN_EXE_vigil"))
            .args(["cluster", "--nodes", "5", "--http", "127.0.0.1:0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let (tx, lines) = channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut demo = Demo { child, stdin, lines, url: String::new() };
        let line = demo
            .wait_for(|l| l.starts_with("dashboard: "), Duration::from_secs(10))
            .expect("it says where the page is");
        demo.url = line.split_whitespace().nth(1).unwrap().trim_end_matches('/').to_owned();
        demo
    }

    fn say(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The first line matching `want` within `bound`.
    fn wait_for(&self, want: impl Fn(&str) -> bool, bound: Duration) -> Option<String> {
        let deadline = Instant::now() + bound;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(l) if want(&l) => return Some(l),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        None
    }

    /// Every line within `span`.
    fn during(&self, span: Duration) -> Vec<String> {
        let deadline = Instant::now() + span;
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(l) => seen.push(l),
                Err(_) => break,
            }
        }
        seen
    }

    fn post(&self, path: &str) -> (u16, Value) {
        let c: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut r =
            c.post(format!("{}{path}", self.url)).header("Content-Type", "application/json").send("{}").unwrap();
        let text = r.body_mut().read_to_string().unwrap();
        (r.status().as_u16(), serde_json::from_str(&text).unwrap())
    }
}

/// Bounds: 15 s to see every member up; 20 s for a crash or a partition to
/// be declared (the LAN preset takes about 5 s); 30 s for a healed member
/// to be seen again (it re-announces itself every 5 s).
#[test]
fn faults_from_the_terminal_and_the_api_are_detected() {
    let mut d = Demo::start();
    for n in ["n2", "n3", "n4", "n5"] {
        let up = format!("n1 sees {n} up");
        assert!(d.wait_for(|l| l.starts_with(&up), Duration::from_secs(15)).is_some(), "{up}");
    }
    let fleet: Value = {
        let mut r = ureq::get(format!("{}/v1/fleet", d.url)).call().unwrap();
        serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
    };
    assert_eq!(fleet["members"].as_array().unwrap().len(), 5);
    assert_eq!(fleet["members"][0]["observer"], true);

    // A crash typed at the terminal.
    d.say("crash n3");
    assert!(d.wait_for(|l| l.starts_with("n3 crashed"), Duration::from_secs(5)).is_some());
    assert!(
        d.wait_for(|l| l.starts_with("n3 is declared dead"), Duration::from_secs(20)).is_some(),
        "n3's crash detected"
    );

    // A 2 s pause sent to the API: survived (the LAN preset tolerates 3 s).
    let (s, v) = d.post("/v1/fleet/n2/pause?seconds=2");
    assert_eq!((s, v["done"].as_str()), (200, Some("n2 paused for 2.0 s")));
    let after = d.during(Duration::from_secs(8));
    assert!(!after.iter().any(|l| l.starts_with("n2 is declared dead")), "a 2 s pause is not a death: {after:?}");

    // A partition typed at the terminal: n4 is cut off, declared dead, and
    // seen again once healed.
    d.say("partition n4");
    assert!(d.wait_for(|l| l.starts_with("n4 cut off"), Duration::from_secs(5)).is_some());
    assert!(
        d.wait_for(|l| l.starts_with("n4 is declared dead"), Duration::from_secs(20)).is_some(),
        "the partition detected"
    );
    d.say("heal n4");
    assert!(
        d.wait_for(|l| l.starts_with("n1 sees n4 up"), Duration::from_secs(30)).is_some(),
        "n4 back after the heal"
    );

    // A restart comes back with a new generation; the observer takes no
    // faults; unknown commands and members are named.
    d.say("restart n3");
    assert!(d.wait_for(|l| l.starts_with("n3 restarted (generation "), Duration::from_secs(5)).is_some());
    assert!(d.wait_for(|l| l.starts_with("n1 sees n3 up"), Duration::from_secs(15)).is_some());
    d.say("crash n1");
    assert!(d.wait_for(|l| l.starts_with("n1 serves this page"), Duration::from_secs(5)).is_some());
    let (s, v) = d.post("/v1/fleet/n9/crash");
    assert_eq!(s, 404, "{v}");
    let (s, v) = d.post("/v1/fleet/n2/pause?seconds=600");
    assert_eq!(s, 400, "{v}");
    d.say("dance n2");
    assert!(d.wait_for(|l| l.starts_with("'dance n2': not a command"), Duration::from_secs(5)).is_some());
    d.say("what now");
    assert!(d.wait_for(|l| l.starts_with("'what now': not a command"), Duration::from_secs(5)).is_some());

    d.say("quit");
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = d.child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.is_some_and(|s| s.success()), "quit ends it, exit 0: {status:?}");
}
