//! `vigil agent` under a service manager, played here the way systemd
//! plays it for `Type=notify`: a datagram socket named by `NOTIFY_SOCKET`,
//! `WATCHDOG_USEC` for the watchdog. The agent says `READY=1` only once it
//! has joined (at once when it has no seeds), pings the watchdog while it
//! runs, and says `STOPPING=1` when it leaves; a socket that is gone or
//! never read changes nothing else.

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The manager's side: every datagram received, with when.
struct Manager {
    path: PathBuf,
    got: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Manager {
    fn listen(dir: &std::path::Path, name: &str) -> Manager {
        let path = dir.join(name);
        let socket = UnixDatagram::bind(&path).unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = socket.recv(&mut buf) {
                sink.lock().unwrap().push((Instant::now(), String::from_utf8_lossy(&buf[..n]).into_owned()));
            }
        });
        Manager { path, got }
    }

    fn messages(&self) -> Vec<(Instant, String)> {
        self.got.lock().unwrap().clone()
    }

    /// The first message holding `line` as one of its lines, waited for up
    /// to `bound`.
    fn wait_for(&self, line: &str, bound: Duration) -> Option<(Instant, String)> {
        let start = Instant::now();
        while start.elapsed() < bound {
            if let Some(m) = self.messages().into_iter().find(|(_, m)| m.lines().any(|l| l == line)) {
                return Some(m);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

/// An agent with the given environment; its event lines collected.
struct Agent {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Agent {
    fn start(name: &str, bind: &str, join: Option<&str>, env: &[(&str, &str)]) -> Agent {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
        cmd.args(["agent", "--name", name, "--bind", bind, "--http", "off"]);
        if let Some(j) = join {
            cmd.args(["--join", j]);
        }
        cmd.env_remove("NOTIFY_SOCKET").env_remove("WATCHDOG_USEC").env_remove("WATCHDOG_PID");
        cmd.envs(env.iter().copied());
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("vigil agent starts");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                sink.lock().unwrap().push(l);
            }
        });
        Agent { child, lines }
    }

    fn saw_up_of(&self, member: &str) -> bool {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("\"event\":\"up\"") && l.contains(&format!("\"member\":\"{member}\"")))
    }

    /// SIGTERM; how long until it exited, at most `bound`.
    fn terminate(&mut self, bound: Duration) -> Option<Duration> {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let start = Instant::now();
        while start.elapsed() < bound {
            if self.child.try_wait().unwrap().is_some() {
                return Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tempdir(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vigil-sm-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A loopback port free for UDP and TCP just now.
fn free_port() -> u16 {
    loop {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = udp.local_addr().unwrap().port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

#[test]
fn ready_only_once_joined_watchdog_while_running_stopping_on_leave() {
    let dir = tempdir("ready");
    let manager = Manager::listen(&dir, "notify");
    let port = free_port();
    let seed = format!("127.0.0.1:{port}");
    // b's seed is not up yet.
    let started = Instant::now();
    let mut b = Agent::start(
        "b",
        "127.0.0.1:0",
        Some(&seed),
        &[("NOTIFY_SOCKET", manager.path.to_str().unwrap()), ("WATCHDOG_USEC", "400000")],
    );
    let joining = manager.wait_for("STATUS=joining through 1 seeds", Duration::from_secs(5));
    assert!(joining.is_some(), "no joining status: {:?}", manager.messages());
    std::thread::sleep(Duration::from_secs(3));
    let before = manager.messages();
    assert!(!before.iter().any(|(_, m)| m.contains("READY=1")), "ready before joining: {before:?}");
    // Every 200 ms (half of 400 ms): about 15 in 3 s; at least 8 allows a
    // loaded machine's late ticks.
    let pings = before.iter().filter(|(_, m)| m == "WATCHDOG=1").count();
    assert!(pings >= 8, "{pings} watchdog pings in 3 s");

    let a = Agent::start("a", &seed, None, &[]);
    let (at, ready) = manager.wait_for("READY=1", Duration::from_secs(20)).expect("b is ready once it joined a");
    assert!(ready.contains("STATUS=joined: met a"), "{ready}");
    println!("b ready {:.1?} after it started, once a came up", at.duration_since(started));
    // READY=1 goes out when the up event arrives; its line is written by
    // a separate task and read here by another thread, so it may trail the
    // datagram by a moment.
    let seen = Instant::now();
    while !b.saw_up_of("a") {
        assert!(seen.elapsed() < Duration::from_secs(2), "b said READY=1 but printed no up of a within 2 s");
        std::thread::sleep(Duration::from_millis(20));
    }

    let leaving = Instant::now();
    let took = b.terminate(Duration::from_secs(5)).expect("b exits within 5 s of SIGTERM");
    let (stop_at, _) = manager.wait_for("STOPPING=1", Duration::from_secs(1)).expect("STOPPING=1 was sent");
    assert!(stop_at >= leaving);
    std::thread::sleep(Duration::from_millis(300));
    let after_stop = manager.messages().into_iter().filter(|(t, m)| *t > stop_at && m == "WATCHDOG=1").count();
    assert_eq!(after_stop, 0, "watchdog pings after STOPPING=1");
    println!("b left in {took:.1?}");
    drop(a);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_first_member_is_ready_at_once() {
    let dir = tempdir("first");
    let manager = Manager::listen(&dir, "notify");
    let _a = Agent::start("first", "127.0.0.1:0", None, &[("NOTIFY_SOCKET", manager.path.to_str().unwrap())]);
    let (_, m) = manager.wait_for("READY=1", Duration::from_secs(5)).expect("ready without seeds");
    assert!(m.contains("no seeds"), "{m}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!manager.messages().iter().any(|(_, m)| m.contains("WATCHDOG")), "pings without WATCHDOG_USEC");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_socket_gone_or_never_read_changes_nothing_else() {
    let dir = tempdir("hostile");
    // A socket that is bound and never read: its queue fills.
    let deaf = dir.join("deaf");
    let _held = UnixDatagram::bind(&deaf).unwrap();
    let port = free_port();
    let seed = format!("127.0.0.1:{port}");
    let a = Agent::start("a", &seed, None, &[("NOTIFY_SOCKET", deaf.to_str().unwrap()), ("WATCHDOG_USEC", "1")]);
    let gone = dir.join("no-such-dir/notify");
    let mut b = Agent::start("b", "127.0.0.1:0", Some(&seed), &[("NOTIFY_SOCKET", gone.to_str().unwrap())]);
    let mut c = Agent::start("c", "127.0.0.1:0", Some(&seed), &[("NOTIFY_SOCKET", "not-absolute")]);
    let start = Instant::now();
    while !(b.saw_up_of("a") && c.saw_up_of("a") && a.saw_up_of("b") && a.saw_up_of("c")) {
        assert!(start.elapsed() < Duration::from_secs(15), "the members did not meet within 15 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    for agent in [&mut b, &mut c] {
        assert!(agent.terminate(Duration::from_secs(5)).is_some(), "an agent did not exit within 5 s of SIGTERM");
    }
    let mut a = a;
    assert!(a.terminate(Duration::from_secs(5)).is_some(), "the agent whose manager never reads did not exit");
    let _ = std::fs::remove_dir_all(&dir);
}
