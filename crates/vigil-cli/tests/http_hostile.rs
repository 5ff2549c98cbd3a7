//! The API against hostile clients, as real `vigil agent` and `vigil
//! cluster` processes on loopback meet them over real sockets:
//!
//! - web pages: a foreign `Origin`, a foreign `Host` (DNS rebinding) and a
//!   "simple" `text/plain` request are refused by every endpoint that
//!   changes anything, and a foreign Host by every read;
//! - idle and slow clients: hundreds of sockets that never finish a
//!   request (slowloris: partial headers, a byte a second) and that never
//!   send anything, held while the health endpoint must answer within 2 s
//!   and the cluster must detect a `kill -9`.
//!
//! Bounds are generous for a loaded two-core machine and stated where used.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

const VIGIL: &str = env!("CARGO_BIN_EXE_vigil");
const KEY_A: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const KEY_B: &str = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100";
const TOKEN: &str = "a-token-of-at-least-sixteen-characters";

struct Agent {
    child: Child,
    /// The gossip address.
    addr: String,
    /// The API's address.
    http: SocketAddr,
    /// What it logged (stderr), line by line.
    log: Arc<Mutex<Vec<String>>>,
}

impl Agent {
    fn start(name: &str, join: Option<&str>, extra: &[&str]) -> Agent {
        let mut cmd = Command::new(VIGIL);
        cmd.args(["agent", "--name", name, "--bind", "127.0.0.1:0"]);
        if !extra.contains(&"--http") {
            cmd.args(["--http", "127.0.0.1:0"]);
        }
        cmd.args(extra);
        if let Some(j) = join {
            cmd.args(["--join", j]);
        }
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("vigil agent starts");
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (mut addr, mut http) = (None, None);
        let mut line = String::new();
        while addr.is_none() || http.is_none() {
            line.clear();
            assert!(err.read_line(&mut line).unwrap() > 0, "{name}: stderr ended before it said where it listens");
            log.lock().unwrap().push(line.clone());
            if line.contains(" started ") {
                addr = line.split(" on ").nth(1).and_then(|s| s.split(',').next()).map(str::to_owned);
            }
            if let Some(rest) = line.split("HTTP API on http://").nth(1) {
                http = rest.split_whitespace().next().map(|a| a.parse::<SocketAddr>().unwrap());
            }
        }
        {
            let log = log.clone();
            std::thread::spawn(move || {
                for l in err.lines().map_while(Result::ok) {
                    log.lock().unwrap().push(l);
                }
            });
        }
        let mut http = http.unwrap();
        if http.ip().is_unspecified() {
            http.set_ip([127, 0, 0, 1].into());
        }
        Agent { child, addr: addr.unwrap(), http, log }
    }

    fn url(&self) -> String {
        format!("http://{}", self.http)
    }

    /// Whether a logged line holds `text`, waiting up to `bound` for it.
    fn logged(&self, text: &str, bound: Duration) -> bool {
        let deadline = Instant::now() + bound;
        loop {
            if self.log.lock().unwrap().iter().any(|l| l.contains(text)) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A secret file (a key or a token): readable by its owner only, as the
/// agent requires.
fn temp_file(tag: &str, text: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = std::env::temp_dir().join(format!("vigil-http-hostile-{}-{tag}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// One request by hand, exactly as given (`headers` are whole lines), on
/// its own connection: status, headers and body.
fn raw(addr: SocketAddr, method: &str, path: &str, headers: &[&str], body: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    if !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (status, head.to_owned(), body.to_owned())
}

/// The JSON error of an answer.
fn error(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    v["error"].as_str().unwrap_or_else(|| panic!("no error in {v}")).to_owned()
}

fn get_json(url: &str) -> (u16, Value) {
    let c: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut r = c.get(url).call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let text = r.body_mut().read_to_string().unwrap();
    (r.status().as_u16(), serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url}: not JSON ({e}): {text}")))
}

/// Every change a web page might try, against one agent or cluster:
/// method, path, JSON body.
type Change = (&'static str, String, &'static str);

/// Each change is refused three ways: with a foreign Origin (403), a
/// foreign Host (421), and as a `text/plain` "simple" request (415); the
/// errors are JSON and name what was refused.
fn refused_three_ways(addr: SocketAddr, changes: &[Change]) {
    let host = format!("Host: {addr}");
    let json = "Content-Type: application/json";
    for (method, path, body) in changes {
        let what = format!("{method} {path}");
        let (s, _, b) = raw(addr, method, path, &[&host, json, "Origin: http://evil.example"], body);
        assert_eq!(s, 403, "{what} with a foreign Origin: {b}");
        assert!(error(&b).contains("'http://evil.example'"), "{what}: {b}");
        let (s, _, b) = raw(addr, method, path, &["Host: evil.example", json], body);
        assert_eq!(s, 421, "{what} with a foreign Host: {b}");
        assert!(error(&b).contains("'evil.example'"), "{what}: {b}");
        // A cross-origin simple request, as a form or `fetch(no-cors)`
        // sends it; and the same with no Content-Type at all.
        let (s, _, b) =
            raw(addr, method, path, &[&host, "Content-Type: text/plain"], if body.is_empty() { "x" } else { body });
        assert_eq!(s, 415, "{what} as text/plain: {b}");
        assert!(error(&b).contains("application/json"), "{what}: {b}");
        if *method == "POST" {
            let (s, _, b) = raw(addr, method, path, &[&host], body);
            assert_eq!(s, 415, "{what} without a Content-Type: {b}");
        }
    }
}

#[test]
fn no_web_page_can_change_an_agent() {
    // Loopback, no token: the case where changes are allowed to local
    // clients, so only the checks of the request stand in the way.
    let keys = temp_file("keys", &format!("{KEY_A}\n"));
    let a = Agent::start("w0", None, &["--key-file", keys.to_str().unwrap(), "--http-host", "vigil.test"]);
    let addr = a.http;
    let (_, list) = get_json(&format!("{}/v1/keys", a.url()));
    let key = list["keys"][0]["id"].as_str().unwrap().to_owned();
    let install = Box::leak(format!("{{\"key\": \"{KEY_B}\"}}").into_boxed_str());
    let install_everywhere = Box::leak(format!("{{\"op\": \"install\", \"key\": \"{KEY_B}\"}}").into_boxed_str());
    let changes: Vec<Change> = vec![
        ("POST", "/v1/keys".into(), install),
        ("POST", format!("/v1/keys/{key}/use"), ""),
        ("DELETE", format!("/v1/keys/{key}"), "{}"),
        ("POST", "/v1/outcomes".into(), r#"{"outcomes": [{"member": "x", "outcome": 503}]}"#),
        ("POST", "/v1/leave".into(), "{}"),
        ("POST", "/v1/join".into(), r#"{"seeds": ["127.0.0.1:1"]}"#),
        ("PATCH", "/v1/self/tags".into(), r#"{"set": {"owned": "yes"}}"#),
        ("POST", "/v1/force-leave".into(), r#"{"member": "w1"}"#),
        ("POST", "/v1/cluster/keys".into(), install_everywhere),
        ("POST", "/v1/policies".into(), r#"{"policy": "route=1"}"#),
    ];
    refused_three_ways(addr, &changes);
    // Nothing changed: one key, and the agent is still there.
    let (s, list) = get_json(&format!("{}/v1/keys", a.url()));
    assert_eq!((s, list["keys"].as_array().map(Vec::len)), (200, Some(1)), "{list}");
    let (s, me) = get_json(&format!("{}/v1/self", a.url()));
    assert_eq!((s, me["name"].as_str()), (200, Some("w0")));
    assert_eq!(me["tags"], serde_json::json!({}), "no tag was set by a page");

    // Reads: a foreign Host (a rebound name) reads nothing, the error
    // names it, escaped and bounded; so does a foreign Origin.
    for path in ["/", "/v1/members", "/v1/self", "/v1/events", "/metrics", "/v1/traces", "/v1/health/live"] {
        let (s, _, b) = raw(addr, "GET", path, &["Host: rebound.example:1234"], "");
        assert_eq!(s, 421, "GET {path} with a foreign Host: {b}");
        assert!(error(&b).contains("'rebound.example:1234'") && error(&b).contains("--http-host"), "{b}");
        let (s, _, b) = raw(addr, "GET", path, &[&format!("Host: {addr}"), "Origin: http://rebound.example"], "");
        assert_eq!(s, 403, "GET {path} from a foreign page: {b}");
    }
    let long = format!("Host: {}\u{e9}'", "x".repeat(5000));
    let (s, _, b) = raw(addr, "GET", "/v1/self", &[&long], "");
    let e = error(&b);
    assert_eq!(s, 421, "{b}");
    assert!(e.len() < 300 && e.contains("(5003 bytes)"), "bounded: {e}");
    let (s, _, b) = raw(addr, "GET", "/v1/self", &["Host: a\u{e9}'b"], "");
    assert_eq!(s, 421);
    assert!(error(&b).contains("'a\\xc3\\xa9\\'b'"), "escaped: {b}");
    let (s, _, b) = raw(addr, "GET", "/v1/self", &[], "");
    assert_eq!(s, 421, "no Host at all: {b}");
    let (s, _, b) = raw(addr, "GET", "http://evil.example/v1/self", &[&format!("Host: {addr}")], "");
    assert_eq!(s, 421, "a target in absolute form names its host too: {b}");

    // The API's own names: its address, localhost on its port, and the
    // name given with --http-host (on any port).
    let port = addr.port();
    for host in [
        addr.to_string(),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        "vigil.test".into(),
        "vigil.test:8443".into(),
    ] {
        let (s, _, b) = raw(addr, "GET", "/v1/health/live", &[&format!("Host: {host}")], "");
        assert_eq!(s, 200, "Host: {host}: {b}");
    }
    // The dashboard from its own origin (as a browser asks for it, with
    // or without Origin), and a change from its own page.
    for origin in [None, Some(format!("Origin: http://{addr}")), Some(format!("Origin: http://localhost:{port}"))] {
        let host = match &origin {
            Some(o) if o.contains("localhost") => format!("Host: localhost:{port}"),
            _ => format!("Host: {addr}"),
        };
        let mut headers = vec![host.as_str()];
        headers.extend(origin.as_deref());
        let (s, head, b) = raw(addr, "GET", "/", &headers, "");
        assert_eq!(s, 200, "{headers:?}: {head}");
        assert!(head.to_ascii_lowercase().contains("content-type: text/html") && b.contains("<html"), "{head}");
    }
    let own = format!("Origin: http://{addr}");
    let (s, _, b) = raw(
        addr,
        "POST",
        "/v1/outcomes",
        &[&format!("Host: {addr}"), &own, "Content-Type: application/json; charset=utf-8"],
        r#"{"outcomes": []}"#,
    );
    assert_eq!(s, 200, "the API's own page may change things: {b}");

    // Numbers: a huge value is echoed in exponent form, not as 309 digits.
    let host = format!("Host: {addr}");
    let (s, _, b) = raw(
        addr,
        "POST",
        "/v1/outcomes",
        &[&host, "Content-Type: application/json"],
        r#"{"outcomes": [{"member": "x", "outcome": 503, "latency_ms": 1e308}]}"#,
    );
    assert_eq!(s, 400);
    assert!(error(&b).contains(": 1e308 is not a latency") && b.len() < 200, "{b}");
    let (s, _, b) = raw(addr, "GET", "/v1/lab/run?heartbeat=1e308", &[&host], "");
    assert_eq!(s, 400);
    assert_eq!(error(&b), "heartbeat: 1e308 is out of range (50 to 10000)");
    let _ = std::fs::remove_file(keys);
}

/// A bad `--http-host` or `http_hosts` is a usage error naming it; a good
/// one from the settings file is taken.
#[test]
fn host_names_are_checked_where_they_are_given() {
    let o = Command::new(VIGIL)
        .args(["agent", "--name", "x", "--bind", "127.0.0.1:0", "--http", "127.0.0.1:0", "--http-host", "evil example"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--http-host: 'evil example' is not a host name"), "{err}");
    let bad = temp_file(
        "bad.toml",
        "name = \"x\"\nbind = \"127.0.0.1:0\"\nhttp = \"127.0.0.1:0\"\nhttp_hosts = [\"a:99999\"]\n",
    );
    let o = Command::new(VIGIL).args(["agent", "--config", bad.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("http_hosts: 'a:99999' is not a host name"), "{err}");
    let good = temp_file("good.toml", "http_hosts = [\"vigil.internal:9000\"]\n");
    let a = Agent::start("y", None, &["--config", good.to_str().unwrap()]);
    let (s, _, b) = raw(a.http, "GET", "/v1/health/live", &["Host: vigil.internal:9000"], "");
    assert_eq!(s, 200, "{b}");
    let (s, _, _) = raw(a.http, "GET", "/v1/health/live", &["Host: vigil.internal:9001"], "");
    assert_eq!(s, 421, "a name given with a port is taken on that port only");
    let _ = std::fs::remove_file(bad);
    let _ = std::fs::remove_file(good);
}

/// `vigil cluster`'s fault endpoints are changes like the others.
#[test]
fn no_web_page_can_inject_a_fault_into_vigil_cluster() {
    let mut child = Command::new(VIGIL)
        .args(["cluster", "--nodes", "3", "--http", "127.0.0.1:0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("dashboard: ") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "vigil cluster says where its page is");
    }
    std::thread::spawn(move || for _ in out.lines() {});
    struct Kill(Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _cluster = Kill(child);
    let url = line.split_whitespace().nth(1).unwrap().trim_end_matches('/').to_owned();
    let addr: SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let changes: Vec<Change> = ["crash", "restart", "pause", "partition", "heal"]
        .iter()
        .map(|f| ("POST", format!("/v1/fleet/n2/{f}"), ""))
        .chain([("POST", "/v1/leave".to_owned(), "")])
        .collect();
    refused_three_ways(addr, &changes);
    let (_, fleet) = get_json(&format!("{url}/v1/fleet"));
    let members = fleet["members"].as_array().unwrap();
    assert!(members.iter().all(|m| m["running"] == true && m["partitioned"] == false), "nothing injected: {fleet}");
    // And as its own page asks: served.
    let (s, _, b) = raw(
        addr,
        "POST",
        "/v1/fleet/n2/pause?seconds=1",
        &[&format!("Host: {addr}"), &format!("Origin: {url}"), "Content-Type: application/json"],
        "",
    );
    assert_eq!(s, 200, "{b}");
    let (s, _, b) = raw(
        addr,
        "POST",
        "/v1/fleet/n2/pause?seconds=1e308",
        &[&format!("Host: {addr}"), "Content-Type: application/json"],
        "",
    );
    assert_eq!(s, 400);
    assert_eq!(error(&b), "seconds: 1e308 is not a pause (more than 0, at most 60)");
}

/// `Authorization: bearer TOKEN` in any case, with one or more spaces.
#[test]
fn the_bearer_scheme_is_taken_in_any_case() {
    let token = temp_file("token", &format!("{TOKEN}\n"));
    let keys = temp_file("keys2", &format!("{KEY_A}\n"));
    let a =
        Agent::start("t0", None, &["--http-token-file", token.to_str().unwrap(), "--key-file", keys.to_str().unwrap()]);
    let host = format!("Host: {}", a.http);
    for (auth, want) in [
        (format!("Authorization: Bearer {TOKEN}"), 200),
        (format!("Authorization: bearer {TOKEN}"), 200),
        (format!("Authorization: BEARER {TOKEN}"), 200),
        (format!("Authorization: bEaReR    {TOKEN}"), 200),
        (format!("Authorization: Bearer {TOKEN}x"), 403),
        ("Authorization: Basic dXNlcjpwYXNz".to_owned(), 401),
        (format!("Authorization: Bearer{TOKEN}"), 401),
        ("X-Nothing: 1".to_owned(), 401),
    ] {
        let (s, _, b) = raw(a.http, "GET", "/v1/keys", &[&host, &auth], "");
        assert_eq!(s, want, "{auth}: {b}");
    }
    let (s, _, b) = raw(
        a.http,
        "POST",
        "/v1/leave",
        &[&host, &format!("authorization: bearer {TOKEN}"), "Content-Type: application/json"],
        "",
    );
    assert_eq!(s, 202, "{b}");
    let _ = std::fs::remove_file(token);
    let _ = std::fs::remove_file(keys);
}

/// Listening on every interface without a token is said in the log; with
/// a token, or on loopback, it is not.
#[test]
fn an_api_reachable_from_elsewhere_without_a_token_is_warned_about() {
    let open = Agent::start("o0", None, &["--http", "0.0.0.0:0"]);
    assert!(open.logged("has no token", Duration::from_secs(5)), "{:?}", open.log.lock().unwrap());
    let line = open.log.lock().unwrap().iter().find(|l| l.contains("has no token")).cloned().unwrap();
    assert!(line.contains("WARN") && line.contains("--http-token-file"), "{line}");
    // Reached by another of this host's addresses than the one it was
    // asked at: any IP on its port names it.
    let (s, _, b) = raw(open.http, "GET", "/v1/health/live", &[&format!("Host: 10.1.2.3:{}", open.http.port())], "");
    assert_eq!(s, 200, "{b}");
    let token = temp_file("token2", &format!("{TOKEN}\n"));
    let closed = Agent::start("o1", None, &["--http", "0.0.0.0:0", "--http-token-file", token.to_str().unwrap()]);
    let local = Agent::start("o2", None, &[]);
    // Both have logged their start by now; give a warning time to come.
    std::thread::sleep(Duration::from_millis(500));
    assert!(!closed.logged("has no token", Duration::ZERO));
    assert!(!local.logged("has no token", Duration::ZERO));
    let _ = std::fs::remove_file(token);
}

// ---- idle and slow clients ----

/// Sockets held open against an address: `slow` that send a partial
/// request and then a header byte a second (slowloris), `idle` that send
/// nothing; each one the server closes is opened again at once, so they
/// stay held.
struct Siege {
    stop: Arc<AtomicBool>,
    /// How many were closed by the server and opened again.
    reopened: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl Siege {
    fn start(addr: SocketAddr, slow: usize, idle: usize) -> Siege {
        let stop = Arc::new(AtomicBool::new(false));
        let reopened = Arc::new(AtomicUsize::new(0));
        let open = move |slow: bool| -> Option<TcpStream> {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
            if slow {
                s.write_all(format!("GET /v1/members HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes()).ok()?;
            }
            s.set_nonblocking(true).ok()?;
            Some(s)
        };
        let mut held: Vec<(bool, Option<TcpStream>)> =
            (0..slow).map(|_| (true, open(true))).chain((0..idle).map(|_| (false, open(false)))).collect();
        let thread = {
            let (stop, reopened) = (stop.clone(), reopened.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let round = Instant::now();
                    for (slow, sock) in &mut held {
                        let alive = sock.as_mut().is_some_and(|s| {
                            let mut buf = [0u8; 256];
                            let open = match s.read(&mut buf) {
                                Ok(0) => false,
                                Ok(_) => false, // an answer (a timeout's 408): it is closing
                                Err(e) => e.kind() == ErrorKind::WouldBlock,
                            };
                            open && (!*slow || s.write(b"a").is_ok_and(|n| n == 1))
                        });
                        if !alive {
                            *sock = open(*slow);
                            reopened.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    if let Some(left) = Duration::from_secs(1).checked_sub(round.elapsed()) {
                        std::thread::sleep(left);
                    }
                }
            })
        };
        Siege { stop, reopened, thread: Some(thread) }
    }
}

impl Drop for Siege {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `GET /v1/health/live` on a new connection: how long the whole answer
/// took, and its status (0 if none came).
fn health(addr: SocketAddr) -> (Duration, u16) {
    let t = Instant::now();
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else { return (t.elapsed(), 0) };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let head = format!("GET /v1/health/live HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(head.as_bytes()).is_err() {
        return (t.elapsed(), 0);
    }
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let whole = text.ends_with("{\"status\":\"live\"}");
    (t.elapsed(), if whole { status } else { 0 })
}

/// Follows `/v1/events?after=now` on `addr`; every event, as it comes.
fn follow(addr: SocketAddr) -> Receiver<Value> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(
        format!("GET /v1/events?after=now HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(s).lines().map_while(Result::ok) {
            if let Some(data) = line.strip_prefix("data: ")
                && let Ok(v) = serde_json::from_str::<Value>(data)
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    rx
}

/// A request's headers must come within the header timeout (5 s): a
/// slowloris socket and a silent one are closed after it, and so is a
/// kept-alive connection left idle. Bound: closed between 4 and 9 s.
#[test]
fn unfinished_and_idle_connections_are_closed_after_the_header_timeout() {
    let a = Agent::start("h0", None, &[]);
    let addr = a.http;
    let closes = |mut s: TcpStream, drip: bool| -> Duration {
        let t = Instant::now();
        s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        loop {
            let mut buf = [0u8; 1024];
            match s.read(&mut buf) {
                Ok(0) => return t.elapsed(),
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => return t.elapsed(),
            }
            if drip && s.write_all(b"a").is_err() {
                return t.elapsed();
            }
            assert!(t.elapsed() < Duration::from_secs(20), "never closed");
        }
    };
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.write_all(format!("GET /v1/self HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes()).unwrap();
    let idle = TcpStream::connect(addr).unwrap();
    let mut kept = TcpStream::connect(addr).unwrap();
    kept.write_all(format!("GET /v1/health/live HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes()).unwrap();
    let mut first = [0u8; 512];
    kept.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = kept.read(&mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"), "the first answer comes");
    let (slow, idle, kept) = std::thread::scope(|s| {
        let slow = s.spawn(|| closes(slow, true));
        let idle = s.spawn(|| closes(idle, false));
        let kept = s.spawn(|| closes(kept, false));
        (slow.join().unwrap(), idle.join().unwrap(), kept.join().unwrap())
    });
    println!("closed after: slowloris {slow:.1?}, silent {idle:.1?}, idle after an answer {kept:.1?}");
    for (what, t) in [("slowloris", slow), ("silent", idle), ("kept alive", kept)] {
        assert!((Duration::from_secs(4)..Duration::from_secs(9)).contains(&t), "{what}: closed after {t:?}");
    }
}

/// 300 slowloris sockets and 100 silent ones held against an agent for
/// about 20 s: its health endpoint answers every time within 2 s, a
/// follower of its event stream keeps its stream, and the cluster detects
/// a `kill -9` of another member meanwhile, as its `/v1/members` shows
/// (bound 20 s; the LAN preset takes about 5 s idle).
#[test]
fn no_idle_or_slow_client_takes_the_api_down() {
    let a0 = Agent::start("s0", None, &[]);
    let seed = a0.addr.clone();
    let a1 = Agent::start("s1", Some(&seed), &[]);
    let mut a2 = Agent::start("s2", Some(&seed), &[]);
    let members = format!("{}/v1/members", a0.url());
    let alive = |v: &Value| {
        v["members"].as_array().is_some_and(|ms| ms.len() == 2 && ms.iter().all(|m| m["status"] == "alive"))
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !alive(&get_json(&members).1) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(alive(&get_json(&members).1), "s0 sees s1 and s2 alive");
    let events = follow(a0.http);
    let addr = a0.http;

    let siege = Siege::start(addr, 300, 100);
    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    let mut probe = |latencies: &mut Vec<Duration>| {
        let (t, status) = health(addr);
        if status != 200 {
            failures.push(format!("{status} after {t:?}"));
        }
        latencies.push(t);
    };
    // 6 s under siege (longer than the header timeout, so every socket has
    // been closed and opened again at least once), then the kill.
    while started.elapsed() < Duration::from_secs(6) {
        probe(&mut latencies);
        std::thread::sleep(Duration::from_millis(250));
    }
    let _ = a2.child.kill();
    let killed = Instant::now();
    let _ = a2.child.wait();
    let mut detected = None;
    let mut last_seen = Value::Null;
    while killed.elapsed() < Duration::from_secs(20) {
        probe(&mut latencies);
        let (s, v) = get_json(&members);
        assert_eq!(s, 200, "{v}");
        if v["members"].as_array().unwrap().iter().any(|m| m["name"] == "s2" && m["status"] == "dead") {
            detected = Some(killed.elapsed());
            break;
        }
        last_seen = v;
        std::thread::sleep(Duration::from_millis(250));
    }
    // A few seconds more under siege after the verdict.
    let after = Instant::now();
    while after.elapsed() < Duration::from_secs(3) {
        probe(&mut latencies);
        std::thread::sleep(Duration::from_millis(250));
    }
    let held_for = started.elapsed();
    let reopened = siege.reopened.load(Ordering::Relaxed);
    drop(siege);

    latencies.sort();
    let (median, max) = (latencies[latencies.len() / 2], latencies[latencies.len() - 1]);
    println!(
        "under 300 slowloris + 100 silent sockets for {held_for:.0?} ({reopened} closed by the agent and opened again): \
         /v1/health/live answered {} times, median {median:.1?}, max {max:.1?}; kill -9 of s2 shown dead after {}",
        latencies.len(),
        detected.map_or("never".to_owned(), |d| format!("{d:.1?}"))
    );
    assert!(failures.is_empty(), "every health request answered 200: {failures:?}");
    assert!(max < Duration::from_secs(2), "health within 2 s under siege: max {max:?}");
    let detected = detected.unwrap_or_else(|| panic!("s2 shown dead within 20 s: {last_seen}"));
    assert!(detected < Duration::from_secs(20));
    assert!(reopened >= 400, "the siege was held: the agent closed {reopened} of its sockets");
    // The follower, connected before the siege and quiet for more than the
    // header timeout, still got the verdicts.
    let seen: Vec<(String, String)> = events
        .try_iter()
        .map(|v| (v["event"].as_str().unwrap_or("").to_owned(), v["member"].as_str().unwrap_or("").to_owned()))
        .collect();
    assert!(seen.contains(&("dead".into(), "s2".into())), "the event stream kept going: {seen:?}");
    drop(a1);
}

/// When every connection an address may have is busy (64 followers of the
/// event stream from one address), a newcomer from it is still answered
/// on a reserve connection: the health endpoints, and 503 for the rest.
#[test]
fn with_every_connection_busy_health_still_answers() {
    let a = Agent::start("r0", None, &[]);
    let addr = a.http;
    let followers: Vec<TcpStream> = (0..64)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(format!("GET /v1/events HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes()).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut head = [0u8; 256];
            let n = s.read(&mut head).unwrap();
            assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"), "a follower is answered");
            s
        })
        .collect();
    let (t, status) = health(addr);
    assert_eq!(status, 200, "health answered beside 64 busy connections (after {t:?})");
    let (s, head, b) = raw(addr, "GET", "/v1/members", &[&format!("Host: {addr}")], "");
    assert_eq!(s, 503, "{head}");
    assert!(error(&b).contains("/v1/health/live"), "{b}");
    assert!(head.to_ascii_lowercase().contains("retry-after: 1"), "{head}");
    drop(followers);
    // Room again once they are gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (s, _, _) = raw(addr, "GET", "/v1/members", &[&format!("Host: {addr}")], "");
        if s == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the followers' connections are released");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The readiness probe's one parameter: a boolean, anything else refused
/// naming it, and the probe itself unchanged by an unknown parameter.
#[test]
fn the_readiness_probe_refuses_what_is_not_a_boolean() {
    let a = Agent::start("r0", None, &[]);
    let host = format!("Host: {}", a.http);
    for (query, status) in [("", 200), ("?converged=true", 200), ("?converged=false", 200), ("?other=1", 200)] {
        let (s, _, b) = raw(a.http, "GET", &format!("/v1/health/ready{query}"), &[&host], "");
        assert_eq!(s, status, "{query}: {b}");
    }
    for query in ["?converged=maybe", "?converged=", "?converged=1e999", &format!("?converged={}", "t".repeat(5000))] {
        let (s, _, b) = raw(a.http, "GET", &format!("/v1/health/ready{query}"), &[&host], "");
        assert_eq!(s, 400, "{query}: {b}");
        assert!(error(&b).contains("converged"), "{query}: the error names the parameter: {b}");
    }
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `/v1/monitor` followers that never read, at `trace`, while a flood of
/// foreign datagrams makes the agent log a line for each: the agent keeps
/// answering at once, its memory does not follow the flood (the stream
/// keeps 1,024 lines for its followers), and a follower that does read
/// still gets its lines. Without the
/// token, and with a level that is not one, the stream is refused.
#[test]
fn log_followers_that_never_read_cost_the_agent_nothing_that_grows() {
    let token = temp_file("monitor-token", &format!("{TOKEN}\n"));
    let a = Agent::start("m0", None, &["--http-token-file", token.to_str().unwrap()]);
    let host = format!("Host: {}", a.http);
    let auth = format!("Authorization: Bearer {TOKEN}");
    let (s, _, b) = raw(a.http, "GET", "/v1/monitor", &[&host], "");
    assert_eq!(s, 401, "{b}");
    let (s, _, b) = raw(a.http, "GET", "/v1/monitor?level=verbose", &[&host, &auth], "");
    assert_eq!(
        (s, error(&b).as_str()),
        (400, "level: \"verbose\" is not a log level (error, warn, info, debug or trace)")
    );
    // Eight followers that send their request and never read a byte.
    let stuck: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut c = TcpStream::connect(a.http).unwrap();
            write!(c, "GET /v1/monitor?level=trace HTTP/1.1\r\n{host}\r\n{auth}\r\n\r\n").unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_kib(a.child.id());
    // 100,000 datagrams that are not vigil's: a debug line each.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let started = Instant::now();
    for i in 0..100_000u32 {
        let _ = udp.send_to(&[0xff, 0xfe, (i >> 8) as u8, i as u8, 1, 2, 3, 4], &a.addr);
    }
    let flood = started.elapsed();
    // Liveness answers while the followers are stuck.
    let asked = Instant::now();
    let (s, _, _) = raw(a.http, "GET", "/v1/health/live", &[&host], "");
    assert_eq!(s, 200);
    assert!(asked.elapsed() < Duration::from_secs(2), "live took {:?}", asked.elapsed());
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kib(a.child.id());
    // A line is a few hundred bytes: 100,000 kept would be tens of MB. The
    // stream keeps 1,024, each stuck connection at most its socket buffers.
    assert!(after < before + 16 * 1024, "{before} KiB before the flood ({flood:?}), {after} KiB after");
    // A follower that reads gets its lines, at its level.
    let mut reader = TcpStream::connect(a.http).unwrap();
    write!(reader, "GET /v1/monitor?level=debug HTTP/1.1\r\n{host}\r\n{auth}\r\n\r\n").unwrap();
    reader.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    for i in 0..3u8 {
        udp.send_to(&[0xff, 0xfe, i], &a.addr).unwrap();
    }
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("datagram refused") {
        let n = reader.read(&mut buf).expect("the follower that reads gets lines");
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("200 OK") && seen.contains("text/event-stream"), "{seen}");
    assert!(seen.contains("\"level\":\"debug\"") && seen.contains("\"target\":\"vigil_net::driver\""), "{seen}");
    // The agent's own log stayed at its level (info): no debug line there.
    assert!(!a.log.lock().unwrap().iter().any(|l| l.contains("datagram refused")));
    drop(stuck);
}
