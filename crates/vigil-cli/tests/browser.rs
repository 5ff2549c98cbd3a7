//! The dashboard in a real browser: headless Chromium (Debian's
//! `chromium`, installed by `.ci/run`), driven over the DevTools protocol,
//! against five `vigil agent` processes. The page must load, show every
//! member, and show a member going dead after it is killed; a screenshot is
//! kept in `target/test-artifacts/`.
//!
//! Without Chromium on the PATH the tests say so and pass, unless
//! `VIGIL_BROWSER=1` (set by `.ci/run`) demands them.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::{Message, WebSocket, stream::MaybeTlsStream};

const VIGIL: &str = env!("CARGO_BIN_EXE_vigil");

/// A process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The browser, or `None` (with the reason printed) when it is missing and
/// not demanded.
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|name| {
        std::env::var_os("PATH")?.to_str()?.split(':').map(|d| PathBuf::from(d).join(name)).find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(std::env::var("VIGIL_BROWSER").is_err(), "VIGIL_BROWSER is set but chromium is not installed");
        eprintln!("skipped: chromium is not installed (.ci/run installs it and sets VIGIL_BROWSER=1)");
    }
    found
}

/// A page in headless Chromium, driven over the DevTools protocol.
struct Browser {
    _proc: Proc,
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    _profile: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Browser {
    fn start(exe: &std::path::Path) -> Browser {
        Browser::start_with(exe, &[])
    }

    /// With more command-line switches.
    fn start_with(exe: &std::path::Path, extra: &[&str]) -> Browser {
        let profile = TempDir(std::env::temp_dir().join(format!(
            "vigil-browser-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        )));
        std::fs::create_dir_all(&profile.0).unwrap();
        let mut child = Command::new(exe)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-quic",
                "--remote-debugging-port=0",
                "--window-size=1400,900",
            ])
            .args(extra)
            .arg(format!("--user-data-dir={}", profile.0.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID"
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let port = loop {
            line.clear();
            assert!(err.read_line(&mut line).unwrap() > 0, "chromium exited before it listened");
            if let Some(rest) = line.split("ws://127.0.0.1:").nth(1) {
                break rest.split('/').next().unwrap().to_owned();
            }
        };
        std::thread::spawn(move || for _ in err.lines() {});
        let proc = Proc(child);
        // The page target's socket.
        let list: Value = {
            let mut r = ureq::get(format!("http://127.0.0.1:{port}/json/list")).call().unwrap();
            serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
        };
        let page = list.as_array().unwrap().iter().find(|t| t["type"] == "page").expect("a page target");
        let (ws, _) = tungstenite::connect(page["webSocketDebuggerUrl"].as_str().unwrap()).unwrap();
        Browser { _proc: proc, ws, next_id: 1, _profile: profile }
    }

    /// Sends a command and waits for its answer (events in between are
    /// skipped).
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.ws.send(Message::text(json!({"id": id, "method": method, "params": params}).to_string())).unwrap();
        loop {
            let m = self.ws.read().unwrap();
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    /// Evaluates `expr` in the page; its value (JSON-serialisable).
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call("Runtime.evaluate", json!({"expression": expr, "returnByValue": true}));
        r["result"]["value"].clone()
    }

    /// Evaluates `expr` until `ok` holds, for at most `bound`.
    fn until(&mut self, expr: &str, bound: Duration, ok: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + bound;
        loop {
            let v = self.eval(expr);
            if ok(&v) || Instant::now() > deadline {
                return v;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// A PNG of the page.
    fn screenshot(&mut self, path: &std::path::Path) {
        let r = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64(r["data"].as_str().unwrap());
        assert_eq!(&png[1..4], b"PNG");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}

fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    } as u32;
    let digits: Vec<u8> = text.bytes().filter(|&b| b != b'=').collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let acc = chunk.iter().enumerate().fold(0u32, |a, (i, &c)| a | value(c) << (18 - 6 * i));
        out.extend_from_slice(&acc.to_be_bytes()[1..chunk.len()]);
    }
    out
}

/// Where test artifacts go: `target/test-artifacts/`.
fn artifact(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts").join(name)
}

/// Starts `vigil agent`; returns it with its gossip address and, if it
/// serves one, its API's URL.
fn agent(name: &str, join: Option<&str>, http: bool) -> (Proc, String, Option<String>) {
    agent_with(name, join, http, &[])
}

/// As [`agent`], with more flags.
fn agent_with(name: &str, join: Option<&str>, http: bool, extra: &[&str]) -> (Proc, String, Option<String>) {
    let mut cmd = Command::new(VIGIL);
    cmd.args(["agent", "--name", name, "--bind", "127.0.0.1:0", "--http", if http { "127.0.0.1:0" } else { "off" }]);
    if let Some(j) = join {
        cmd.args(["--join", j]);
    }
    cmd.args(extra);
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let (mut addr, mut url) = (None, None);
    let mut line = String::new();
    while addr.is_none() || (http && url.is_none()) {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "{name} exited early");
        if line.contains(" started ") {
            addr = line.split(" on ").nth(1).and_then(|s| s.split(',').next()).map(str::to_owned);
        }
        if let Some(rest) = line.split("HTTP API on ").nth(1) {
            url = rest.split_whitespace().next().map(str::to_owned);
        }
    }
    std::thread::spawn(move || for _ in err.lines() {});
    (Proc(child), addr.unwrap(), url)
}

const ROWS: &str =
    "JSON.stringify([...document.querySelectorAll('#members tr')].map(tr => [tr.dataset.member, tr.dataset.status]))";

fn rows(v: &Value) -> Vec<(String, String)> {
    serde_json::from_str::<Vec<(String, String)>>(v.as_str().unwrap_or("[]")).unwrap_or_default()
}

/// Five agents; the dashboard of the first shows all of them, then shows
/// the killed one dead. Bounds: 20 s for the page to show the joined
/// cluster, 30 s for the death (the LAN preset takes about 5 s).
#[test]
fn the_dashboard_shows_every_member_and_a_death() {
    let Some(exe) = chromium() else { return };
    let (p0, seed, url) = agent("d0", None, true);
    let url = url.unwrap();
    let mut procs = vec![p0];
    for i in 1..5 {
        procs.push(agent(&format!("d{i}"), Some(&seed), false).0);
    }
    let mut b = Browser::start(&exe);
    b.call("Page.enable", json!({}));
    b.call("Page.navigate", json!({"url": format!("{url}/")}));
    let all_alive = |v: &Value| {
        let r = rows(v);
        r.len() == 5 && r.iter().all(|(_, s)| s == "alive")
    };
    let v = b.until(ROWS, Duration::from_secs(20), all_alive);
    assert!(all_alive(&v), "the page shows d0..d4 alive: {v}");
    let names: Vec<String> = rows(&v).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["d0", "d1", "d2", "d3", "d4"]);
    // The φ charts: one per watched member, each with its threshold line,
    // drawn once a few samples are in.
    let charts = b.until(
        "JSON.stringify([...document.querySelectorAll('#charts svg')].map(s => [s.dataset.member, s.querySelectorAll('.threshold').length, !!s.querySelector('.phi-line')]))",
        Duration::from_secs(10),
        |v| v.as_str().is_some_and(|s| s.matches("true").count() == 2 && !s.contains("false")),
    );
    let charts: Vec<(String, usize, bool)> = serde_json::from_str(charts.as_str().unwrap()).unwrap();
    assert_eq!(charts.len(), 2, "d0 watches its two ring predecessors: {charts:?}");
    assert!(charts.iter().all(|(_, thresholds, line)| *thresholds == 1 && *line), "{charts:?}");
    let ready = b.eval("document.getElementById('ready').textContent");
    assert_eq!(ready, "ready");
    b.screenshot(&artifact("dashboard.png"));

    // Kill d3; the page shows it dead, from the event stream.
    drop(procs.remove(3));
    let dead = |v: &Value| rows(v).iter().any(|(n, s)| n == "d3" && s == "dead");
    let v = b.until(ROWS, Duration::from_secs(30), dead);
    assert!(dead(&v), "d3 shows dead: {v}");
    let events = b.eval(
        "JSON.stringify([...document.querySelectorAll('#events li')].map(li => [li.dataset.event, li.dataset.member]))",
    );
    let events: Vec<(String, String)> = serde_json::from_str(events.as_str().unwrap()).unwrap();
    assert!(events.contains(&("dead".into(), "d3".into())), "the timeline has d3's death: {events:?}");
    assert_eq!(events.iter().filter(|(e, _)| e == "up").count(), 4, "and the four joins: {events:?}");
    let dead_count = b.eval("document.getElementById('count-dead').textContent");
    assert_eq!(dead_count, "1 dead");
    b.screenshot(&artifact("dashboard-dead.png"));
}

/// Three agents deciding with `keep-majority` (5 s of calm, 5 s of
/// margin); one is killed. The first's dashboard shows the strategy, the
/// dead one unreachable with its accusers, then which side survived: its
/// own, downing the dead one. Bound: 45 s (detection, calm and margin
/// take about 15 s).
#[test]
fn the_dashboard_shows_who_survives() {
    let Some(exe) = chromium() else { return };
    let flags = ["--downing", "keep-majority", "--stable-after", "5s"];
    let (p0, seed, url) = agent_with("s0", None, true, &flags);
    let url = url.unwrap();
    let mut procs = vec![p0];
    for i in 1..3 {
        procs.push(agent_with(&format!("s{i}"), Some(&seed), false, &flags).0);
    }
    let mut b = Browser::start(&exe);
    b.call("Page.enable", json!({}));
    b.call("Page.navigate", json!({"url": format!("{url}/")}));
    let v = b.until("document.getElementById('downing-strategy')?.textContent", Duration::from_secs(20), |v| {
        v.as_str() == Some("keep-majority")
    });
    assert_eq!(v, "keep-majority", "the panel names the strategy");
    let three = b.until(ROWS, Duration::from_secs(20), |v| rows(v).len() == 3);
    assert_eq!(rows(&three).len(), 3, "{three}");
    assert_eq!(b.eval("document.getElementById('downing-none')?.textContent"), "nobody unreachable");
    drop(procs.remove(2));
    let unreachable = b.until(
        "JSON.stringify([...document.querySelectorAll('#reachability tbody tr')].map(tr => [...tr.children].map(td => td.textContent)))",
        Duration::from_secs(20),
        |v| v.as_str().is_some_and(|s| s.contains("\"s2\"")),
    );
    assert!(unreachable.as_str().unwrap().contains("\"s2\""), "the table shows s2 unreachable: {unreachable}");
    let verdict = b.until("document.getElementById('downing-verdict').textContent", Duration::from_secs(30), |v| {
        v.as_str().is_some_and(|s| s.starts_with("this side survived"))
    });
    assert!(verdict.as_str().unwrap().starts_with("this side survived; downing s2"), "{verdict}");
    let dead = |v: &Value| rows(v).iter().any(|(n, s)| n == "s2" && s == "dead");
    let v = b.until(ROWS, Duration::from_secs(20), dead);
    assert!(dead(&v), "s2 shows dead after the margin: {v}");
    assert_eq!(b.eval("document.getElementById('self-downs').textContent"), "0");
    b.screenshot(&artifact("dashboard-downing.png"));
}

/// Three agents sharing their outlier verdicts (`--gray-evidence share`):
/// five 503s from g1, posted to g2's API, eject g1 there, and g0's
/// dashboard, which recorded nothing about g1, shows it ejected by g2 with
/// the reason, and still alive. Bound: 20 s (a few gossip rounds, and the
/// page's refresh).
#[test]
fn the_dashboard_shows_who_ejected_a_member_elsewhere() {
    let Some(exe) = chromium() else { return };
    use std::os::unix::fs::PermissionsExt;
    const TOKEN: &str = "a-token-of-at-least-sixteen-characters";
    let token = std::env::temp_dir().join(format!("vigil-browser-{}-token", std::process::id()));
    std::fs::write(&token, TOKEN).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let flags = ["--gray-evidence", "share", "--http-token-file", token.to_str().unwrap()];
    let (p0, seed, url) = agent_with("g0", None, true, &flags);
    let url = url.unwrap();
    let p1 = agent_with("g1", Some(&seed), false, &flags).0;
    let (p2, _, url2) = agent_with("g2", Some(&seed), true, &flags);
    let _procs = [p0, p1, p2];
    let mut b = Browser::start(&exe);
    b.call("Page.enable", json!({}));
    b.call("Page.navigate", json!({"url": format!("{url}/")}));
    let three = b.until(ROWS, Duration::from_secs(20), |v| rows(v).len() == 3);
    assert_eq!(rows(&three).len(), 3, "{three}");
    let outcomes: Vec<Value> = (0..5).map(|_| json!({"member": "g1", "outcome": 503})).collect();
    let client: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut r = client
        .post(&format!("{}/v1/outcomes", url2.unwrap()))
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .header("Content-Type", "application/json")
        .send(json!({ "outcomes": outcomes }).to_string())
        .unwrap();
    let body = r.body_mut().read_to_string().unwrap();
    assert_eq!(r.status().as_u16(), 200, "{body}");
    let pill = "JSON.stringify([...document.querySelectorAll('#members tr[data-member=g1] .pill.shared')].map(p => [p.textContent, p.title]))";
    let v = b.until(pill, Duration::from_secs(20), |v| v.as_str().is_some_and(|s| s.contains("ejected by 1")));
    let pills: Vec<(String, String)> = serde_json::from_str(v.as_str().unwrap()).unwrap();
    assert_eq!(pills.len(), 1, "{pills:?}");
    assert_eq!(pills[0].0, "ejected by 1");
    assert!(pills[0].1.starts_with("ejected by g2 (consecutive-5xx)"), "the tooltip names who and why: {pills:?}");
    let g1 = rows(&b.eval(ROWS)).into_iter().find(|(n, _)| n == "g1");
    assert_eq!(g1, Some(("g1".into(), "alive".into())), "evidence, not a verdict");
    // The verdict travels as g2's tag, shown as the pill and not as a tag.
    let tags = b.eval("document.querySelector('#members tr[data-member=g2] .tags').textContent");
    assert_eq!(tags, "", "g2's tags cell holds no shared verdict");
    b.screenshot(&artifact("dashboard-ejected-by.png"));
    let _ = std::fs::remove_file(&token);
}

/// `vigil cluster`'s page injects a fault from its own origin (a POST with
/// `Origin`, as a browser sends it); a page of another origin cannot
/// (neither a "simple" request nor one asked first), and a page under a
/// name rebound to this host's address (DNS rebinding, simulated with the
/// browser's own resolver rules) gets nothing, not even the dashboard.
#[test]
fn the_dashboard_changes_things_from_its_own_origin_and_no_other_page_can() {
    let Some(exe) = chromium() else { return };
    let mut child = Command::new(VIGIL)
        .args(["cluster", "--nodes", "3", "--http", "127.0.0.1:0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("dashboard: ") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0);
    }
    std::thread::spawn(move || for _ in out.lines() {});
    let _cluster = (Proc(child), stdin);
    let url = line.split_whitespace().nth(1).unwrap().trim_end_matches('/').to_owned();
    let port = url.rsplit(':').next().unwrap().to_owned();
    // Another origin: the lab, served by another process.
    let mut lab = Command::new(VIGIL)
        .args(["lab", "serve", "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(lab.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let _lab = Proc(lab);
    let lab_url = first.split_whitespace().find(|w| w.starts_with("http://")).unwrap().to_owned();
    let running = |name: &str| -> bool {
        let mut r = ureq::get(format!("{url}/v1/fleet")).call().unwrap();
        let v: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
        v["members"].as_array().unwrap().iter().any(|m| m["name"] == name && m["running"] == true)
    };

    let mut b = Browser::start_with(&exe, &["--host-resolver-rules=MAP rebound.example 127.0.0.1"]);
    b.call("Page.enable", json!({}));
    b.call("Page.navigate", json!({"url": format!("{url}/")}));
    let v = b.until(ROWS, Duration::from_secs(20), |v| rows(v).len() == 3);
    assert_eq!(rows(&v).len(), 3, "the page shows n1..n3: {v}");
    // Its own fault button: a same-origin POST, answered.
    b.eval("document.querySelector('#members tr[data-member=\"n2\"] button[data-fault=\"pause\"]').click()");
    let note = b.until("document.getElementById('note').textContent", Duration::from_secs(10), |v| {
        v.as_str().is_some_and(|s| !s.is_empty())
    });
    assert_eq!(note, "n2 paused for 5.0 s", "the page's own POST is served");

    // Another origin's page: a simple request (no preflight) and a JSON
    // one (preflighted) to crash n3; neither gets through.
    b.call("Page.navigate", json!({"url": lab_url}));
    b.until("Number(document.body.dataset.runs || 0)", Duration::from_secs(10), |v| v.as_u64() >= Some(1));
    let tried = b.call(
        "Runtime.evaluate",
        json!({
            "expression": format!(
                "(async () => {{
                    const u = '{url}/v1/fleet/n3/crash';
                    const simple = await fetch(u, {{method: 'POST', mode: 'no-cors', headers: {{'Content-Type': 'text/plain'}}, body: 'x'}}).then(r => r.type, e => 'failed');
                    const json = await fetch(u, {{method: 'POST', headers: {{'Content-Type': 'application/json'}}, body: '{{}}'}}).then(r => String(r.status), e => 'failed');
                    const read = await fetch('{url}/v1/members').then(r => 'read', e => 'failed');
                    return [simple, json, read].join(' ');
                }})()"
            ),
            "awaitPromise": true,
            "returnByValue": true,
        }),
    );
    assert_eq!(tried["result"]["value"], "opaque failed failed", "{tried}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(running("n3"), "n3 still runs: no other page can crash it");

    // A rebound name: the dashboard is refused (421), so the page has
    // nothing to run and nothing to read.
    b.call("Page.navigate", json!({"url": format!("http://rebound.example:{port}/")}));
    let text = b.until("document.body ? document.body.innerText : ''", Duration::from_secs(10), |v| {
        v.as_str().is_some_and(|s| s.contains("not a name of this API"))
    });
    assert!(text.as_str().unwrap().contains("'rebound.example:"), "the refusal names the Host: {text}");
    assert_eq!(b.eval("document.querySelectorAll('#members tr').length"), 0);
}

/// `vigil lab serve`'s page: moving a control recomputes the chart and the
/// table through the engine, and an audit case can be picked.
#[test]
fn the_lab_recomputes_when_a_control_moves() {
    let Some(exe) = chromium() else { return };
    let mut child = Command::new(VIGIL)
        .args(["lab", "serve", "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let _lab = Proc(child);
    let url = first.split_whitespace().find(|w| w.starts_with("http://")).expect("the lab says where it is").to_owned();
    let mut b = Browser::start(&exe);
    b.call("Page.navigate", json!({"url": url}));
    let runs = "Number(document.body.dataset.runs || 0)";
    let v = b.until(runs, Duration::from_secs(10), |v| v.as_u64() >= Some(1));
    assert!(v.as_u64() >= Some(1), "the page computed the default case");
    let table = "JSON.stringify([...document.querySelectorAll('#table tbody tr')].map(tr => [tr.dataset.detector, tr.querySelector('.false').textContent, tr.querySelector('.detect').textContent]))";
    let chart = "JSON.stringify({line: document.querySelector('#chart .threshold').getAttribute('y1'), phi: document.querySelector('#chart path.phi').getAttribute('d').length, bands: [...document.querySelectorAll('#chart .false-band')].reduce((a, r) => a + Number(r.getAttribute('width')), 0)})";
    let checks = "document.querySelectorAll('#checks li.pass').length";
    let before = (b.eval(table), b.eval(chart));
    assert_eq!(b.eval(checks), 7, "the seed's seven checks pass on the default case");
    b.screenshot(&artifact("lab.png"));

    // Lower φ's threshold from 4 to 1: no fewer false suspicions, longer
    // ones, an earlier detection, the threshold line lower on the chart.
    let move_to = |b: &mut Browser, name: &str, value: &str| {
        let n = b.eval(runs).as_u64().unwrap();
        b.eval(&format!(
            "(() => {{ const r = document.querySelector('input[name={name}]'); r.value = '{value}'; r.dispatchEvent(new Event('input')); }})()"
        ));
        let v = b.until(runs, Duration::from_secs(10), |v| v.as_u64() > Some(n));
        assert!(v.as_u64() > Some(n), "moving {name} recomputed");
    };
    move_to(&mut b, "phi_threshold", "1");
    let after = (b.eval(table), b.eval(chart));
    let rows = |v: &Value| serde_json::from_str::<Vec<(String, String, String)>>(v.as_str().unwrap()).unwrap();
    let (t0, t1) = (rows(&before.0), rows(&after.0));
    assert_eq!(t0[1], t1[1], "the fixed timeout's row does not depend on φ's threshold");
    let false_phi = |t: &[(String, String, String)]| t[0].1.parse::<usize>().unwrap();
    let detect_phi = |t: &[(String, String, String)]| t[0].2.trim_end_matches(" ms").parse::<f64>().unwrap();
    assert!(false_phi(&t1) >= false_phi(&t0), "threshold 1 suspects falsely at least as often: {t0:?} → {t1:?}");
    assert!(detect_phi(&t1) < detect_phi(&t0), "and detects sooner: {t0:?} → {t1:?}");
    let c = |v: &Value| serde_json::from_str::<Value>(v.as_str().unwrap()).unwrap();
    let (c0, c1) = (c(&before.1), c(&after.1));
    assert_ne!(c0["line"], c1["line"], "the threshold line moved");
    assert!(c1["bands"].as_f64() > c0["bands"].as_f64(), "false suspicions cover more of the chart: {c0} → {c1}");

    // Another seed: another trace, another φ curve.
    let phi_before = c1["phi"].clone();
    move_to(&mut b, "seed", "5");
    let c2 = c(&b.eval(chart));
    assert_ne!(c2["phi"], phi_before, "a new seed draws a new φ curve");

    // The audit cases: picking the very noisy path sets its controls.
    let n = b.eval(runs).as_u64().unwrap();
    b.eval(
        "(() => { const s = document.getElementById('case'); s.value = '3'; s.dispatchEvent(new Event('change')); })()",
    );
    b.until(runs, Duration::from_secs(10), |v| v.as_u64() > Some(n));
    assert_eq!(b.eval("document.querySelector('input[name=heartbeat]').value"), "1500");
    assert_eq!(b.eval(checks), 7, "the seed's checks pass on the very noisy path");
}

/// Regenerates the README's screenshots, `docs/dashboard.png` and
/// `docs/lab.png`, from `vigil cluster` after two minutes with two pauses
/// and a crash:
/// `cargo test -p vigil-cli --test browser -- --ignored --nocapture readme_screenshots`
#[test]
#[ignore = "regenerates the README's screenshots (two minutes)"]
fn readme_screenshots() {
    let Some(exe) = chromium() else { return };
    let mut child = Command::new(VIGIL)
        .args(["cluster", "--nodes", "5", "--http", "127.0.0.1:0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("dashboard: ") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0);
    }
    std::thread::spawn(move || for _ in out.lines() {});
    let _demo = (Proc(child), stdin);
    let url = line.split_whitespace().nth(1).unwrap().trim_end_matches('/').to_owned();
    let post = |path: &str| {
        let _ = ureq::post(format!("{url}{path}")).header("Content-Type", "application/json").send("{}");
    };
    std::thread::sleep(Duration::from_secs(40));
    post("/v1/fleet/n2/pause?seconds=2");
    std::thread::sleep(Duration::from_secs(25));
    post("/v1/fleet/n4/pause?seconds=2.5");
    std::thread::sleep(Duration::from_secs(25));
    post("/v1/fleet/n5/pause?seconds=2.5");
    std::thread::sleep(Duration::from_secs(15));
    post("/v1/fleet/n3/crash");
    std::thread::sleep(Duration::from_secs(12));
    let mut b = Browser::start(&exe);
    b.call("Page.navigate", json!({"url": format!("{url}/")}));
    b.until(ROWS, Duration::from_secs(10), |v| rows(v).len() == 5);
    std::thread::sleep(Duration::from_secs(2));
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    b.screenshot(&docs.join("dashboard.png"));
    b.call("Page.navigate", json!({"url": format!("{url}/lab")}));
    b.until("Number(document.body.dataset.runs || 0)", Duration::from_secs(10), |v| v.as_u64() >= Some(1));
    b.screenshot(&docs.join("lab.png"));
}
