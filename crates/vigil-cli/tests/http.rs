//! The agent's HTTP API, metrics and traces, as an operator meets them:
//! `vigil agent` processes on loopback, asked with a real HTTP client
//! (ureq), their metrics read by a real OpenMetrics parser, their traces
//! fed to `vigil lab`, and the CLI clients run as processes.
//!
//! Bounds are generous for a loaded two-core machine and stated where used.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use openmetrics_parser::{MetricNumber, OpenMetricsValue};
use serde_json::{Value, json};

mod support;
use support::local::Agent;
use support::wait::client;

const VIGIL: &str = env!("CARGO_BIN_EXE_vigil");
const KEY_A: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const KEY_B: &str = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100";
const TOKEN: &str = "a-token-of-at-least-sixteen-characters";

/// GET: status and JSON body.
fn get(url: &str) -> (u16, Value) {
    let mut r = client().get(url).call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let text = r.body_mut().read_to_string().unwrap();
    (r.status().as_u16(), serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url}: not JSON ({e}): {text}")))
}

/// A request with an optional bearer token: status and JSON body.
fn call(method: &str, url: &str, token: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let c = client();
    let auth = token.map(|t| format!("Bearer {t}"));
    let r = match method {
        "GET" => {
            let mut q = c.get(url);
            if let Some(a) = &auth {
                q = q.header("Authorization", a);
            }
            q.call()
        }
        "DELETE" => {
            let mut q = c.delete(url);
            if let Some(a) = &auth {
                q = q.header("Authorization", a);
            }
            q.call()
        }
        _ => {
            let mut q = c.post(url).header("Content-Type", "application/json");
            if let Some(a) = &auth {
                q = q.header("Authorization", a);
            }
            q.send(body.unwrap_or(json!({})).to_string())
        }
    };
    let mut r = r.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let text = r.body_mut().read_to_string().unwrap();
    (
        r.status().as_u16(),
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {url}: not JSON ({e}): {text}")),
    )
}

/// Polls `url` until `ok` holds, for at most `bound`.
fn until(url: &str, bound: Duration, ok: impl Fn(u16, &Value) -> bool) -> (u16, Value) {
    let deadline = Instant::now() + bound;
    loop {
        let (s, v) = get(url);
        if ok(s, &v) || Instant::now() > deadline {
            return (s, v);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A secret file (a key or a token): readable by its owner only, as the
/// agent requires.
fn temp_file(tag: &str, text: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = std::env::temp_dir().join(format!("vigil-http-{}-{tag}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// `n` agents joined through the first, all ready and converged (bound 20 s: a join and
/// two heartbeats from each watched member take about 3 s idle).
fn cluster(n: usize, extra: &[&str]) -> Vec<Agent> {
    let first = Agent::start("a0", None, extra);
    let seed = first.addr.clone();
    let mut all = vec![first];
    for i in 1..n {
        all.push(Agent::start(&format!("a{i}"), Some(&seed), extra));
    }
    for a in &all {
        let (s, v) = until(&format!("{}/v1/self", a.url), Duration::from_secs(20), |_, v| {
            v["members"]["alive"] == n - 1 && v["ready"] == true && v["converged"] == true
        });
        assert_eq!(s, 200);
        assert_eq!(
            (v["members"]["alive"].as_u64(), v["ready"].as_bool(), v["converged"].as_bool()),
            (Some(n as u64 - 1), Some(true), Some(true)),
            "{}: {v}",
            a.name
        );
    }
    all
}

/// The schema's required properties are all present in `v`.
fn conforms(doc: &Value, schema: &str, v: &Value) {
    let s = &doc["components"]["schemas"][schema];
    for field in s["required"].as_array().unwrap_or_else(|| panic!("schema {schema} has required fields")) {
        let f = field.as_str().unwrap();
        assert!(v.get(f).is_some(), "{schema}: {f} is missing from {v}");
    }
}

/// Reads server-sent events from `url` (with `Last-Event-ID` if given)
/// until `count` data events arrived; returns `(id, json)` pairs.
fn sse(url: &str, last_id: Option<&str>, count: usize, bound: Duration) -> Vec<(u64, Value)> {
    let c: ureq::Agent =
        ureq::Agent::config_builder().timeout_global(Some(bound)).http_status_as_error(false).build().into();
    let mut req = c.get(url);
    if let Some(id) = last_id {
        req = req.header("Last-Event-ID", id);
    }
    let r = req.call().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers().get("content-type").and_then(|v| v.to_str().ok()), Some("text/event-stream"));
    let mut reader = BufReader::new(r.into_body().into_reader());
    let mut out = Vec::new();
    let (mut id, mut data) = (None, String::new());
    let mut line = String::new();
    while out.len() < count {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let l = line.trim_end();
        if let Some(v) = l.strip_prefix("id: ") {
            id = v.parse::<u64>().ok();
        } else if let Some(v) = l.strip_prefix("data: ") {
            data = v.to_owned();
        } else if l.is_empty() && !data.is_empty() {
            out.push((id.take().expect("every event has an id"), serde_json::from_str(&data).unwrap()));
            data.clear();
        }
    }
    out
}

#[test]
fn the_api_answers_as_documented_and_guards_changes_with_the_token() {
    let keys = temp_file("keys", &format!("{KEY_A}\n"));
    let token = temp_file("token", &format!("{TOKEN}\n"));
    let extra = ["--key-file", keys.to_str().unwrap(), "--http-token-file", token.to_str().unwrap()];
    let all = cluster(3, &extra);
    let a0 = &all[0].url.clone();
    let (status, doc) = get(&format!("{a0}/v1/openapi.json"));
    assert_eq!((status, doc["openapi"].as_str()), (200, Some("3.1.0")));

    // Members: both others, alive, watched with φ and the probe policy.
    let (status, v) = get(&format!("{a0}/v1/members"));
    assert_eq!(status, 200);
    conforms(&doc, "Members", &v);
    let members = v["members"].as_array().unwrap();
    assert_eq!(members.iter().map(|m| m["name"].as_str().unwrap()).collect::<Vec<_>>(), ["a1", "a2"]);
    for m in members {
        conforms(&doc, "Member", m);
        assert_eq!(m["status"], "alive");
        let w = &m["watched"];
        conforms(&doc, "Watched", w);
        // With three members and two observers each, everyone watches
        // everyone.
        assert_eq!((w["model"].as_str(), w["heard"].as_bool()), (Some("akka"), Some(true)), "{m}");
        let phi = w["phi"].as_f64().unwrap();
        assert!((0.0..8.0).contains(&phi), "a healthy member's φ is below the suspect level: {phi}");
        // Heartbeats every 1.05 s; the mean over a few is within 20 %.
        let mean = w["mean_interval_ms"].as_f64().unwrap();
        assert!((840.0..1260.0).contains(&mean), "mean interval {mean} ms");
        let probe = &w["policies"][0];
        conforms(&doc, "PolicyView", probe);
        assert_eq!(
            (probe["name"].as_str(), probe["threshold"].as_f64(), probe["state"].as_str()),
            (Some("probe"), Some(8.0), Some("trusted"))
        );
        assert!(probe["time_to_threshold_ms"].as_f64().unwrap() > 0.0);
    }
    let (status, one) = get(&format!("{a0}/v1/members/a2"));
    assert_eq!((status, one["name"].as_str(), one["address"].as_str()), (200, Some("a2"), Some(all[2].addr.as_str())));
    let (status, e) = get(&format!("{a0}/v1/members/nobody"));
    assert_eq!(status, 404);
    assert!(e["error"].as_str().unwrap().contains("nobody"), "the error names what was asked: {e}");
    let (status, me) = get(&format!("{a0}/v1/self"));
    assert_eq!(status, 200);
    conforms(&doc, "SelfView", &me);
    assert_eq!(
        (me["name"].as_str(), me["sealed"].as_bool(), me["ready"].as_bool()),
        (Some("a0"), Some(true), Some(true))
    );
    assert_eq!(get(&format!("{a0}/v1/health/live")), (200, json!({"status": "live"})));
    assert_eq!(get(&format!("{a0}/v1/health/ready")), (200, json!({"status": "ready"})));

    // Every documented read answers (the fleet only in `vigil cluster`);
    // an undocumented path is a JSON 404.
    for (path, item) in doc["paths"].as_object().unwrap() {
        // Pages, and the streams that do not end (tested on their own).
        let pages = ["/", "/lab", "/metrics", "/v1/events", "/v1/monitor"];
        if item.get("get").is_none() || path.contains('{') || pages.contains(&path.as_str()) {
            continue;
        }
        let auth = item["get"].get("security").map(|_| TOKEN);
        let (s, _) = call("GET", &format!("{a0}{path}"), auth, None);
        let want = if path == "/v1/fleet" { 404 } else { 200 };
        assert_eq!(s, want, "GET {path}");
    }
    for page in ["/", "/lab"] {
        let r = client().get(format!("{a0}{page}")).call().unwrap();
        assert_eq!(r.status().as_u16(), 200, "GET {page}");
        let kind = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
        assert!(kind.starts_with("text/html"), "GET {page}: {kind}");
    }
    let (s, e) = get(&format!("{a0}/v1/nothing-here"));
    assert_eq!(s, 404);
    assert!(e["error"].as_str().unwrap().contains("/v1/nothing-here"));
    hostile_requests(a0);

    // The keyring: refused without the token or with a wrong one.
    let keys_url = format!("{a0}/v1/keys");
    assert_eq!(call("GET", &keys_url, None, None).0, 401);
    assert_eq!(call("GET", &keys_url, Some("wrong-token-wrong-token"), None).0, 403);
    let (s, list) = call("GET", &keys_url, Some(TOKEN), None);
    assert_eq!(s, 200);
    conforms(&doc, "Keys", &list);
    let old = list["keys"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(list["keys"].as_array().unwrap().len(), 1);
    // Rotation on every member: install, use, remove the old key.
    let mut new = String::new();
    for a in &all {
        let (s, v) = call("POST", &format!("{}/v1/keys", a.url), Some(TOKEN), Some(json!({"key": KEY_B})));
        assert_eq!(s, 201, "{v}");
        new = v["id"].as_str().unwrap().to_owned();
    }
    let (s, v) = call("POST", &format!("{a0}/v1/keys"), Some(TOKEN), Some(json!({"key": "not a key"})));
    assert_eq!(s, 400, "{v}");
    assert_eq!(call("POST", &format!("{a0}/v1/keys/zz/use"), Some(TOKEN), None).0, 400);
    assert_eq!(call("POST", &format!("{a0}/v1/keys/0badc0de/use"), Some(TOKEN), None).0, 404);
    for a in &all {
        assert_eq!(call("POST", &format!("{}/v1/keys/{new}/use", a.url), Some(TOKEN), None).0, 200);
    }
    let (s, v) = call("DELETE", &format!("{a0}/v1/keys/{new}"), Some(TOKEN), None);
    assert_eq!(s, 409, "the primary key cannot be removed: {v}");
    std::thread::sleep(Duration::from_secs(2));
    for a in &all {
        assert_eq!(call("DELETE", &format!("{}/v1/keys/{old}", a.url), Some(TOKEN), None).0, 200);
    }
    // Still one healthy cluster on the new key (bound 5 s).
    let (_, me) = until(&format!("{a0}/v1/self"), Duration::from_secs(5), |_, v| v["members"]["alive"] == 2);
    assert_eq!(me["members"]["alive"], 2);
    let (_, list) = call("GET", &keys_url, Some(TOKEN), None);
    assert_eq!(list["keys"][0]["id"].as_str(), Some(new.as_str()));
    assert!(list["keys"][0]["opened"].as_u64().unwrap() > 0, "the new key opens what arrives: {list}");

    // The CLI clients, as processes.
    let cli = |args: &[&str]| {
        let host = all[0].url.trim_start_matches("http://").to_owned();
        let o = Command::new(VIGIL).args(args).args(["--http", &host]).env("VIGIL_HTTP_TOKEN", TOKEN).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, out, err) = cli(&["members"]);
    assert_eq!(code, Some(0), "{err}");
    for name in ["a0 (self)", "a1", "a2"] {
        assert!(out.lines().any(|l| l.starts_with(name) && l.contains("alive")), "{name} in\n{out}");
    }
    let (code, out, _) = cli(&["members", "--json"]);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["members"].as_array().unwrap().len(), 2);
    let (code, out, err) = cli(&["keys", "list"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(&new) && out.contains("yes"), "{out}");
    let (code, out, _) = cli(&["events", "--count", "2", "--json"]);
    assert_eq!(code, Some(0));
    let ups: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(ups.iter().map(|v| v["event"].as_str().unwrap()).collect::<Vec<_>>(), ["up", "up"]);

    // Request outcomes from a sidecar: five 503s from a1 eject it at once
    // (its heartbeats are fine); every entry is checked first.
    let outcomes_url = format!("{a0}/v1/outcomes");
    let batch = |n: usize, outcome: Value| json!({"outcomes": (0..n).map(|_| json!({"member": "a1", "outcome": outcome, "latency_ms": 3.5})).collect::<Vec<_>>()});
    assert_eq!(call("POST", &outcomes_url, None, Some(batch(5, json!(503)))).0, 401, "behind the token");
    let (s, e) = call(
        "POST",
        &outcomes_url,
        Some(TOKEN),
        Some(json!({"outcomes": [{"member": "a1", "outcome": 200}, {"member": "a1", "outcome": "999"}]})),
    );
    assert_eq!(s, 400, "{e}");
    assert!(e["error"].as_str().unwrap().starts_with("outcomes[1].outcome: '999'"), "{e}");
    let (s, v) = call(
        "POST",
        &outcomes_url,
        Some(TOKEN),
        Some(json!({"outcomes": [{"member": "nobody", "outcome": "timeout"}]})),
    );
    assert_eq!((s, v["accepted"].as_u64(), v["unknown_members"][0].as_str()), (200, Some(0), Some("'nobody'")));
    let (s, v) = call("POST", &outcomes_url, Some(TOKEN), Some(batch(5, json!(503))));
    assert_eq!((s, v["accepted"].as_u64()), (200, Some(5)));
    let (_, one) = get(&format!("{a0}/v1/members/a1"));
    conforms(&doc, "Outlier", &one["outlier"]);
    assert_eq!(
        (one["outlier"]["ejected"].as_bool(), one["outlier"]["reason"].as_str()),
        (Some(true), Some("consecutive-5xx")),
        "{one}"
    );
    assert_eq!(one["status"], "alive", "ejected, not dead: its heartbeats are fine");
    let returns = one["outlier"]["returns_in_ms"].as_f64().unwrap();
    assert!((0.0..=30_000.0).contains(&returns), "the base ejection time is 30 s: {returns}");
    // The verdict is shared: a2, which sent a1 nothing, shows who ejected
    // it and why within a few gossip rounds (bound 10 s on a loaded
    // machine; 200 ms rounds), and a1 stays alive there.
    let a2 = &all[2].url;
    let (_, seen) = until(&format!("{a2}/v1/members/a1"), Duration::from_secs(10), |_, v| {
        v["ejected_by"].as_array().is_some_and(|a| !a.is_empty())
    });
    assert_eq!(seen["ejected_by"], json!([{"by": "a0", "reason": "consecutive-5xx"}]), "{seen}");
    assert_eq!(seen["status"], "alive", "evidence, not a verdict: {seen}");

    // Leaving through the API: announced, and the process exits 0 (bound
    // 5 s: the agent's own bound is 3 s).
    let mut all = all;
    let mut leaver = all.pop().unwrap();
    assert_eq!(call("POST", &format!("{}/v1/leave", leaver.url), None, None).0, 401);
    assert_eq!(call("POST", &format!("{}/v1/leave", leaver.url), Some(TOKEN), None).0, 202);
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = leaver.child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.is_some_and(|s| s.success()), "the agent exits 0 after leaving: {status:?}");
    let (_, one) = until(&format!("{a0}/v1/members/a2"), Duration::from_secs(5), |_, v| v["status"] == "left");
    assert_eq!(one["status"], "left");
    let _ = std::fs::remove_file(keys);
    let _ = std::fs::remove_file(token);
}

/// Requests no client should send: each gets a JSON error that names the
/// problem, bounded in size, and the agent goes on answering.
fn hostile_requests(a0: &str) {
    let raw = |method: &str, path: &str, body: Vec<u8>| -> (u16, Value) {
        let c = client();
        let url = format!("{a0}{path}");
        let r = match method {
            "POST" => c
                .post(&url)
                .header("Authorization", format!("Bearer {TOKEN}"))
                .header("Content-Type", "application/json")
                .send(&body[..]),
            "PUT" => c.put(&url).send(&body[..]),
            _ => c.get(&url).call(),
        };
        let mut r = r.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = r.status().as_u16();
        let text = r.body_mut().read_to_string().unwrap();
        let v = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{method} {path} → {status}: not JSON ({e}): {text}"));
        (status, v)
    };
    // A body over the 16 KiB limit: refused with a JSON 413. Sent by hand,
    // just over the limit, so that the whole body is on its way before the
    // early answer closes the connection (a client writing megabytes would
    // race that answer and see a broken pipe).
    {
        use std::io::{Read, Write};
        let host = a0.trim_start_matches("http://");
        let mut conn = std::net::TcpStream::connect(host).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let body = vec![b'{'; 17 * 1024];
        let head = format!(
            "POST /v1/keys HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        conn.write_all(head.as_bytes()).unwrap();
        let _ = conn.write_all(&body);
        let mut answer = Vec::new();
        let _ = conn.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or("");
        let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {answer}"));
        assert!(v["error"].is_string(), "{v}");
    }
    let cases: Vec<(&str, String, Vec<u8>, u16, &str)> = vec![
        ("POST", "/v1/keys".into(), b"{\"key\": 5}".to_vec(), 400, "expected"),
        ("POST", "/v1/keys".into(), b"\xff\xfe".to_vec(), 400, "expected"),
        ("POST", "/v1/keys/00000000/use".into(), vec![], 404, "00000000"),
        ("PUT", "/v1/members".into(), vec![], 405, ""),
        ("GET", format!("/v1/members/{}", "x".repeat(10_000)), vec![], 404, "10000 bytes"),
        ("GET", "/v1/events?after=99999999999999999999999".into(), vec![], 400, "not an event id"),
        ("GET", "/v1/traces/a1?format=exe".into(), vec![], 400, "exe"),
        ("GET", "/v1/lab/run?heartbeat=-1".into(), vec![], 400, "heartbeat"),
        ("GET", "/v1/lab/run?seed=1e99".into(), vec![], 400, "seed"),
        ("GET", "/v1/lab/run?phi_threshold=NaN".into(), vec![], 400, "phi_threshold"),
    ];
    for (method, path, body, want, names) in cases {
        let (status, v) = raw(method, &path, body);
        let shown = &path[..path.len().min(60)];
        assert_eq!(status, want, "{method} {shown}: {v}");
        let message = v["error"].as_str().unwrap_or_else(|| panic!("{method} {shown}: {v}"));
        assert!(message.contains(names), "{method} {shown}: {message:?} names {names:?}");
        assert!(message.len() < 600, "{method} {shown}: the message is bounded ({} bytes)", message.len());
    }
    assert_eq!(get(&format!("{a0}/v1/health/live")).0, 200, "still answering");
}

/// Without a token, changes are allowed only on a loopback address: an
/// agent listening on every interface refuses them.
#[test]
fn without_a_token_changes_need_a_loopback_address() {
    let mut cmd = Command::new(VIGIL);
    cmd.args(["agent", "--name", "w", "--bind", "127.0.0.1:0", "--http", "0.0.0.0:0"]);
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut port = None;
    let mut line = String::new();
    while port.is_none() {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0);
        port = line
            .split("HTTP API on http://0.0.0.0:")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .map(str::to_owned);
    }
    let url = format!("http://127.0.0.1:{}", port.unwrap());
    let (s, e) = call("POST", &format!("{url}/v1/leave"), None, None);
    assert_eq!(s, 403);
    assert!(e["error"].as_str().unwrap().contains("--http-token-file"), "{e}");
    assert_eq!(get(&format!("{url}/v1/health/live")).0, 200, "reads stay open");
    let _ = child.kill();
    let _ = child.wait();
}

fn counter(v: &OpenMetricsValue) -> f64 {
    match v {
        OpenMetricsValue::Counter(c) => c.value.as_f64(),
        OpenMetricsValue::Gauge(g) => g.as_f64(),
        other => panic!("not a counter or gauge: {other:?}"),
    }
}

/// The metrics, parsed; the value of `family{label=value}` (or the only
/// sample when `label` is empty).
struct Metrics(openmetrics_parser::MetricsExposition<openmetrics_parser::OpenMetricsType, OpenMetricsValue>);

impl Metrics {
    fn fetch(url: &str) -> Metrics {
        let mut r = client().get(format!("{url}/metrics")).call().unwrap();
        assert_eq!(
            r.headers().get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
        );
        let text = r.body_mut().read_to_string().unwrap();
        Metrics(
            openmetrics_parser::openmetrics::parse_openmetrics(&text)
                .unwrap_or_else(|e| panic!("not OpenMetrics ({e:?}):\n{text}")),
        )
    }

    fn samples(&self, family: &str) -> Vec<(Vec<(String, String)>, OpenMetricsValue)> {
        let f = self.0.families.get(family).unwrap_or_else(|| {
            let mut names: Vec<&String> = self.0.families.keys().collect();
            names.sort();
            panic!("no family {family}; there are {names:?}")
        });
        f.iter_samples()
            .map(|s| {
                let labels = s.get_labelset().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                (labels, s.value.clone())
            })
            .collect()
    }

    fn value(&self, family: &str, label: &str, value: &str) -> Option<f64> {
        self.samples(family)
            .into_iter()
            .find(|(ls, _)| label.is_empty() || ls.iter().any(|(k, v)| k == label && v == value))
            .map(|(_, v)| counter(&v))
    }

    fn histogram(&self, family: &str, label: &str, value: &str) -> Option<(u64, f64)> {
        self.samples(family)
            .into_iter()
            .find(|(ls, _)| label.is_empty() || ls.iter().any(|(k, v)| k == label && v == value))
            .map(|(_, v)| match v {
                OpenMetricsValue::Histogram(h) => {
                    (h.count.unwrap_or(0), h.sum.map_or(0.0, |s: MetricNumber| s.as_f64()))
                }
                other => panic!("{family} is not a histogram: {other:?}"),
            })
    }
}

/// The label values of `family`'s samples for `label`.
fn label_values(m: &Metrics, family: &str, label: &str) -> HashSet<String> {
    m.samples(family)
        .into_iter()
        .flat_map(|(ls, _)| ls.into_iter().filter(|(k, _)| k == label).map(|(_, v)| v))
        .collect()
}

#[test]
fn a_fresh_agent_serves_every_family_at_zero_with_its_build_and_process() {
    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let all = cluster(1, &[]);
    let m = Metrics::fetch(&all[0].url);
    // Every family has samples before anything happened (an increase() alert
    // sees the first increment only if the series was there before it), but
    // those per watched member: a lone agent watches nobody.
    let per_member = ["vigil_phi", "vigil_phi_max", "vigil_phi_observed", "vigil_heartbeat_interval_seconds"];
    let mut empty: Vec<&String> =
        m.0.families.keys().filter(|f| !per_member.contains(&f.as_str()) && m.samples(f).is_empty()).collect();
    empty.sort();
    assert!(empty.is_empty(), "families without a sample: {empty:?}");
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<HashSet<String>>();
    let reasons = set(&[
        "consecutive-5xx",
        "consecutive-gateway-failure",
        "consecutive-local-origin-failure",
        "success-rate",
        "local-origin-success-rate",
        "failure-percentage",
        "local-origin-failure-percentage",
        "latency",
    ]);
    assert_eq!(label_values(&m, "vigil_ejections", "reason"), reasons);
    assert_eq!(label_values(&m, "vigil_outliers_shared", "reason"), reasons);
    assert_eq!(
        label_values(&m, "vigil_downing_decisions", "decision"),
        set(&["nothing", "down-unreachable", "down-reachable", "down-all", "ask-lease", "auto"])
    );
    assert_eq!(label_values(&m, "vigil_downed", "side"), set(&["self", "other"]));
    assert_eq!(label_values(&m, "vigil_events_dropped", "sink"), set(&["stdout", "stream", "history"]));
    assert_eq!(label_values(&m, "vigil_queue_depth", "queue"), set(&["broadcasts", "suspicions", "probes", "relays"]));
    let rejected = label_values(&m, "vigil_rejected_packets", "reason");
    for r in ["malformed", "forged", "replayed", "stale", "frame-over-budget", "connection-evicted"] {
        assert!(rejected.contains(r), "{r} missing from {rejected:?}");
    }
    assert_eq!(m.value("vigil_rejected_packets", "reason", "forged"), Some(0.0));
    assert_eq!(m.value("vigil_ejections", "reason", "latency"), Some(0.0));
    assert_eq!(m.histogram("vigil_phi_at_verdict", "verdict", "suspected"), Some((0, 0.0)));
    // A lone agent with no seeds is ready.
    assert_eq!(m.value("vigil_ready", "", ""), Some(1.0));
    // Build information: this package's version, a revision, a date.
    let (build, value) = m.samples("vigil_build_info").pop().expect("vigil_build_info");
    assert_eq!(counter(&value), 1.0);
    let label = |k: &str| build.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
    assert_eq!(label("version"), env!("CARGO_PKG_VERSION"));
    assert!(label("revision") == "unknown" || label("revision").len() >= 12, "{build:?}");
    assert_eq!(label("build_date").len(), 10, "{build:?}");
    // The process, from /proc: a debug agent holds a few MB resident (not
    // a GB), has its threads and descriptors, started within this test,
    // and has used less CPU than two cores could since.
    if std::path::Path::new("/proc/self/stat").exists() {
        let rss = m.value("process_resident_memory_bytes", "", "").unwrap();
        assert!((1e6..1e9).contains(&rss), "{rss} bytes resident");
        assert!(m.value("process_virtual_memory_bytes", "", "").unwrap() >= rss);
        assert!(m.value("process_threads", "", "").unwrap() >= 1.0);
        assert!(m.value("process_open_fds", "", "").unwrap() >= 3.0);
        assert!(m.value("process_max_fds", "", "").unwrap() >= m.value("process_open_fds", "", "").unwrap());
        let start = m.value("process_start_time_seconds", "", "").unwrap();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        // Boot time is whole seconds and start time in ticks: 1 s of slack.
        assert!(start >= started - 1.0 && start <= now + 1.0, "started {start}, test {started}..{now}");
        let cpu = m.value("process_cpu_seconds", "", "").unwrap();
        assert!((0.0..=2.0 * (now - started) + 0.01).contains(&cpu), "{cpu} s of CPU in {} s", now - started);
    } else {
        println!("SKIPPED the process metrics' values: no /proc/self here");
    }
}

#[test]
fn metrics_events_and_traces_follow_a_crash() {
    let all = cluster(3, &["--policy", "route=2", "--watch", "a1"]);
    let a0 = all[0].url.clone();
    // A few more heartbeats for the distributions.
    std::thread::sleep(Duration::from_secs(4));
    // The graded policy is judged beside monitoring's own, with its time to
    // threshold: sooner than the probe's.
    let (_, a1) = get(&format!("{a0}/v1/members/a1"));
    let policies = a1["watched"]["policies"].as_array().unwrap();
    let names: Vec<&str> = policies.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["probe", "route"]);
    let to = |i: usize| policies[i]["time_to_threshold_ms"].as_f64().unwrap();
    assert!(to(1) < to(0), "route (φ 2) is reached before probe (φ 8): {a1}");
    assert_eq!(a1["watched"]["by_app"], true, "a1 is watched for the application");
    // Stop a1 for 2.5 s: route fires (φ 2 is about 1.4 s of silence), then
    // recovers; no death.
    let stop = |sig: &str, pid: u32| Command::new("kill").args([sig, &pid.to_string()]).status().unwrap();
    let policy_events = {
        let url = format!("{a0}/v1/events?after=now");
        std::thread::spawn(move || sse(&url, None, 2, Duration::from_secs(15)))
    };
    std::thread::sleep(Duration::from_millis(300));
    stop("-STOP", all[1].child.id());
    std::thread::sleep(Duration::from_millis(2500));
    stop("-CONT", all[1].child.id());
    let seen: Vec<Value> =
        policy_events.join().unwrap().into_iter().map(|(_, v)| v).filter(|v| v["event"] == "policy").collect();
    assert!(!seen.is_empty(), "route fired for a1");
    assert_eq!(
        (seen[0]["member"].as_str(), seen[0]["policy"].as_str(), seen[0]["fired"].as_bool()),
        (Some("a1"), Some("route"), Some(true))
    );
    assert!(seen[0]["phi"].as_f64().unwrap() >= 2.0);
    // The stop may have been suspected; wait for the refutation (bound 10 s).
    let (_, me) = until(&format!("{a0}/v1/self"), Duration::from_secs(10), |_, v| v["members"]["alive"] == 2);
    assert_eq!(me["members"]["alive"], 2, "a1 is back: {me}");
    let m = Metrics::fetch(&a0);
    assert_eq!(m.value("vigil_members", "status", "alive"), Some(2.0));
    assert_eq!(m.value("vigil_members", "status", "dead"), Some(0.0));
    let phis: HashSet<String> =
        m.samples("vigil_phi").into_iter().flat_map(|(ls, _)| ls.into_iter().map(|(_, v)| v)).collect();
    assert_eq!(phis, HashSet::from(["a1".to_owned(), "a2".to_owned()]));
    // Heartbeats every 1.05 s: the sampled intervals average within 20 %,
    // but for the one that spans a1's stop once the sampler (once a second)
    // has taken it: 2.5 s of stop, and at most 1.5 s more for the interval
    // it fell in and the scheduling of a loaded machine.
    let (n, sum) = m.histogram("vigil_heartbeat_interval_seconds", "member", "a1").unwrap();
    assert!(n >= 3, "{n} intervals sampled");
    let regular = (0.84..1.26).contains(&(sum / n as f64));
    // With the stop's interval, the mean of the others lies between these.
    let (low, high) = ((sum - 4.0) / (n as f64 - 1.0), (sum - 2.5) / (n as f64 - 1.0));
    let spans_the_stop = low < 1.26 && high >= 0.84;
    assert!(regular || spans_the_stop, "{n} intervals, {sum} s in all");
    let (n, _) = m.histogram("vigil_phi_observed", "member", "a1").unwrap();
    assert!(n >= 3, "φ sampled once a second: {n}");
    assert!(m.value("vigil_messages", "kind", "heartbeat").unwrap() > 0.0);
    // Heartbeats: sent and counted by kind and direction, in bytes too.
    let hb_bytes: f64 = m
        .samples("vigil_protocol_bytes")
        .into_iter()
        .filter(|(ls, _)| {
            ls.contains(&("kind".into(), "heartbeat".into())) && ls.contains(&("direction".into(), "sent".into()))
        })
        .map(|(_, v)| counter(&v))
        .sum();
    let hb_sent: f64 = m
        .samples("vigil_messages")
        .into_iter()
        .filter(|(ls, _)| {
            ls.contains(&("kind".into(), "heartbeat".into())) && ls.contains(&("direction".into(), "sent".into()))
        })
        .map(|(_, v)| counter(&v))
        .sum();
    assert!(hb_sent >= 6.0, "a0 heartbeats two observers every 1.05 s: {hb_sent} sent");
    // A heartbeat is tens of bytes; with piggybacked rumours, under 1,400.
    assert!((20.0 * hb_sent..1400.0 * hb_sent).contains(&hb_bytes), "{hb_bytes} bytes in {hb_sent} heartbeats");
    assert_eq!(m.value("vigil_rejected_packets", "reason", "forged"), Some(0.0));
    // Local health: a0's probes of the stopped a1 may have failed, which
    // raises it; within its bound.
    let awareness = m.value("vigil_awareness", "", "").unwrap();
    assert!((0.0..=m.value("vigil_awareness_max", "", "").unwrap()).contains(&awareness));
    assert_eq!(m.value("vigil_deaths", "", ""), Some(0.0));
    let (n, _) = m.histogram("vigil_phi_at_verdict", "verdict", "policy:route").unwrap();
    assert!(n >= 1, "φ at route's verdict recorded");

    // Outcomes from the application eject a1 (loopback, no token needed):
    // counted by reason, and shown as ejected now.
    let five: Vec<Value> = (0..5).map(|_| json!({"member": "a1", "outcome": "connect-failed"})).collect();
    let (s, v) = call("POST", &format!("{a0}/v1/outcomes"), None, Some(json!({"outcomes": five})));
    assert_eq!((s, v["accepted"].as_u64()), (200, Some(5)));
    let m = Metrics::fetch(&a0);
    assert_eq!(
        m.value("vigil_ejections", "reason", "consecutive-5xx"),
        Some(1.0),
        "connect failures count as 5xx unless split"
    );
    assert_eq!(m.value("vigil_members_ejected", "", ""), Some(1.0));

    // The event stream: ids from 1, and a resume after the first id gives
    // the rest.
    let events = format!("{a0}/v1/events");
    let first = sse(&events, None, 2, Duration::from_secs(5));
    assert_eq!(first.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [1, 2]);
    assert!(first.iter().all(|(_, v)| v["event"] == "up"));
    let resumed = sse(&events, Some("1"), 1, Duration::from_secs(5));
    assert_eq!(resumed[0], first[1], "resuming after id 1 starts at id 2");
    let (s, e) = call("GET", &format!("{events}?after=x"), None, None);
    assert_eq!(s, 400, "{e}");

    // Kill a2: the follower sees it suspected and dead (bound 20 s; the
    // LAN preset takes about 5), with growing ids.
    let follower = {
        let url = events.clone();
        std::thread::spawn(move || sse(&format!("{url}?after=now"), None, 2, Duration::from_secs(20)))
    };
    std::thread::sleep(Duration::from_millis(300));
    let mut all = all;
    let mut victim = all.pop().unwrap();
    let _ = victim.child.kill();
    let _ = victim.child.wait();
    // While a2 is suspected, a0 stays ready (one slow member must not take
    // every replica out of service at once); asked for a converged view, it
    // is not, and says why. The suspicion lasts about 2 s: polled every
    // 50 ms (each poll a few ms on loopback).
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut during = None;
    while during.is_none() && Instant::now() < deadline {
        let (_, me) = get(&format!("{a0}/v1/self"));
        if me["members"]["suspect"] == 1 {
            let plain = get(&format!("{a0}/v1/health/ready"));
            let strict = get(&format!("{a0}/v1/health/ready?converged=true"));
            during = Some((me, plain, strict));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (me, plain, strict) = during.expect("a0 suspected the killed a2 within 15 s");
    assert_eq!((me["ready"].as_bool(), me["converged"].as_bool()), (Some(true), Some(false)), "{me}");
    assert_eq!(me["not_converged"], json!(["not converged: a2 is suspected"]));
    assert_eq!(plain.0, 200, "{plain:?}");
    // The suspicion may have ended between the two requests.
    if strict.0 == 503 {
        assert_eq!(strict.1, json!({"status": "not ready", "reasons": ["not converged: a2 is suspected"]}));
    }
    let seen = follower.join().unwrap();
    let kinds: Vec<(&str, &str)> =
        seen.iter().map(|(_, v)| (v["event"].as_str().unwrap(), v["member"].as_str().unwrap())).collect();
    assert_eq!(kinds, [("suspected", "a2"), ("dead", "a2")]);
    assert!(seen[0].0 > 2 && seen[1].0 == seen[0].0 + 1);
    let (_, v) = until(&format!("{a0}/v1/health/ready"), Duration::from_secs(2), |s, _| s == 200);
    assert_eq!(v["status"], "ready", "a dead member does not keep the others from being ready");

    let m = Metrics::fetch(&a0);
    assert_eq!(m.value("vigil_members", "status", "dead"), Some(1.0));
    assert_eq!(m.value("vigil_deaths", "", ""), Some(1.0));
    assert_eq!(m.value("vigil_suspicions_confirmed", "", ""), Some(1.0));
    // The headline: refuted over settled suspicions (the 2.5 s stop of a1
    // may have been suspected and refuted).
    let refuted = m.value("vigil_refutations", "", "").unwrap();
    let ratio = m.value("vigil_suspicion_false_positive_ratio", "", "").unwrap();
    assert!((ratio - refuted / (refuted + 1.0)).abs() < 1e-12, "{ratio} with {refuted} refuted and 1 confirmed");
    // a0 watched a2: from its last heartbeat to the verdict, at most 20 s.
    let (n, sum) = m.histogram("vigil_detection_latency_seconds", "", "").unwrap();
    assert_eq!(n, 1);
    assert!((1.0..20.0).contains(&sum), "detection latency {sum} s");

    // a1's recorded arrivals, downloaded, through the lab.
    let mut r = client().get(format!("{a0}/v1/traces/a1")).call().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let trace = r.body_mut().read_to_string().unwrap();
    let beats = trace.lines().filter(|l| l.contains(",hb")).count();
    assert!(beats >= 8, "{beats} heartbeats recorded:\n{trace}");
    let path = temp_file("trace.csv", &trace);
    let o = Command::new(VIGIL).args(["lab", "replay", "--json", path.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let replay: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(replay.to_string().contains("akka"), "every model replays the trace");
    let o = Command::new(VIGIL)
        .args(["lab", "recommend", "--max-mistakes-per-hour", "1", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("recommendation for"), "{text}");
    // The loop closes: the recommendation, as printed, is what a new agent
    // runs, and the agent says so.
    let spec = text.lines().nth(1).map(str::trim).expect("the recommended spec on the second line").to_owned();
    let o = Command::new(VIGIL)
        .args(["lab", "recommend", "--json", "--max-mistakes-per-hour", "1", path.to_str().unwrap()])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["recommendation"]["spec"].as_str(), Some(spec.as_str()), "the JSON says the same");
    let parsed: vigil_detector::spec::DetectorSpec = spec.parse().expect("the recommendation is a spec");
    let threshold = parsed.threshold();
    let tuned = Agent::start("tuned", Some(&all[0].addr), &["--detector", &spec]);
    let (_, me) = until(&format!("{}/v1/self", tuned.url), Duration::from_secs(10), |_, v| {
        v["members"]["alive"].as_u64().is_some_and(|n| n >= 1)
    });
    assert_eq!((me["detector"].as_str(), me["suspect_level"].as_f64()), (Some(spec.as_str()), Some(threshold)), "{me}");
    let model = parsed.model().name();
    let (_, v) = until(&format!("{}/v1/members/a0", tuned.url), Duration::from_secs(10), |_, v| {
        v["watched"]["heartbeats"].as_u64().is_some_and(|n| n >= 2)
    });
    let w = &v["watched"];
    assert_eq!((w["model"].as_str(), w["policies"][0]["threshold"].as_f64()), (Some(model), Some(threshold)), "{v}");
    println!("record, recommend, run: {spec} runs in the agent that was given it");
    drop(tuned);
    let (s, e) = call("GET", &format!("{a0}/v1/traces/a2"), None, None);
    assert_eq!(s, 404, "a dead member is no longer watched: {e}");
    let _ = std::fs::remove_file(path);
}

/// `vigil ARGS` as an operator types it: exit code, stdout, stderr.
fn vigil_cli(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(VIGIL).args(args).env_remove("VIGIL_HTTP_TOKEN").output().expect("vigil runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn operators_join_change_tags_and_leave_a_running_cluster_through_the_cli() {
    let token = temp_file("ops-token", TOKEN);
    let token = token.to_str().unwrap();
    let guarded = ["--http-token-file", token];
    let mut with_policy = guarded.to_vec();
    with_policy.extend(["--policy", "route=2,dwell=500ms", "--watch", "o1"]);
    let a = Agent::start("o0", None, &with_policy);
    let b = Agent::start("o1", Some(&a.addr), &guarded);
    // c runs alone: nobody told it of the others.
    let c = Agent::start("o2", None, &guarded);
    let http = |x: &Agent| x.url.trim_start_matches("http://").to_owned();
    until(&format!("{}/v1/members/o1", a.url), Duration::from_secs(10), |s, v| s == 200 && v["status"] == "alive");

    // Without the token, nothing happens.
    let (code, _, err) = vigil_cli(&["join", "--http", &http(&c), &a.addr]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("401") || err.contains("token"), "{err}");

    // c joins through a at runtime: one seed, one member, named.
    let (code, out, err) = vigil_cli(&["join", "--http", &http(&c), "--token-file", token, &a.addr]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), format!("{}: joined o0", a.addr), "{out}");
    let (s, v) =
        until(&format!("{}/v1/members/o2", b.url), Duration::from_secs(10), |s, v| s == 200 && v["status"] == "alive");
    assert_eq!((s, v["status"].as_str()), (200, Some("alive")), "b hears of c through a: {v}");

    // Seeds that give no member are each said, and the command fails.
    let (code, out, err) =
        vigil_cli(&["join", "--http", &http(&c), "--token-file", token, "127.0.0.1:1", "nowhere.invalid:7946"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("127.0.0.1:1: no member answered within 5 s"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("nowhere.invalid:7946: ")), "{out}");
    assert!(err.contains("2 of 2 seeds gave no member"), "{err}");
    // A seed that cannot be one is refused before anything is asked.
    let (code, _, err) = vigil_cli(&["join", "--http", &http(&c), "--token-file", token, "bad seed:7946"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("'bad seed:7946' is not a seed"), "{err}");
    let many: Vec<Value> = (0..65).map(|i| json!(format!("127.0.0.1:{}", 1000 + i))).collect();
    let (s, v) = call("POST", &format!("{}/v1/join", c.url), Some(TOKEN), Some(json!({ "seeds": many })));
    assert_eq!(s, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("65 given, 1 to 64"), "{v}");

    // Tags: set, seen by the others, deleted; the agent's prefix and an
    // oversized value refused with nothing changed.
    let (code, out, err) =
        vigil_cli(&["tags", "--http", &http(&a), "--token-file", token, "--set", "zone=eu-1", "--set", "role=db"]);
    assert_eq!((code, out.as_str()), (0, "role=db\nzone=eu-1\n"), "{err}");
    let (_, v) =
        until(&format!("{}/v1/members/o0", b.url), Duration::from_secs(10), |_, v| v["tags"]["zone"] == "eu-1");
    assert_eq!(v["tags"], json!({"zone": "eu-1", "role": "db"}), "b sees a's tags");
    let (code, out, _) = vigil_cli(&["tags", "--http", &http(&a), "--token-file", token, "--delete", "role"]);
    assert_eq!((code, out.as_str()), (0, "zone=eu-1\n"));
    let (_, v) = until(&format!("{}/v1/members/o0", c.url), Duration::from_secs(10), |_, v| {
        v["tags"].get("role").is_none() && v["tags"]["zone"] == "eu-1"
    });
    assert_eq!(v["tags"], json!({"zone": "eu-1"}), "c sees the delete");
    let (code, _, err) = vigil_cli(&["tags", "--http", &http(&a), "--token-file", token, "--set", "vigil.ejects/x=1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the agent's own"), "{err}");
    let long = format!("big={}", "x".repeat(600));
    let (code, _, err) = vigil_cli(&["tags", "--http", &http(&a), "--token-file", token, "--set", &long]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("600 bytes") && err.contains("255"), "{err}");
    let v200 = "y".repeat(200);
    let (t1, t2, t3) = (format!("t1={v200}"), format!("t2={v200}"), format!("t3={v200}"));
    let args = ["tags", "--http", &http(&a), "--token-file", token, "--set", &t1, "--set", &t2, "--set", &t3];
    let (code, _, err) = vigil_cli(&args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("512"), "{err}");
    let (code, out, _) = vigil_cli(&["tags", "--http", &http(&a)]);
    assert_eq!((code, out.as_str()), (0, "zone=eu-1\n"), "reading needs no token; nothing changed");

    // A graded policy retuned without a restart; what needs one refused.
    let threshold = |v: &Value| {
        v["watched"]["policies"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == "route"))
            .map(|p| p["threshold"].clone())
    };
    let (_, v) = get(&format!("{}/v1/members/o1", a.url));
    assert_eq!(threshold(&v), Some(json!(2.0)), "{v}");
    let (code, out, err) = vigil_cli(&["tune", "--http", &http(&a), "--token-file", token, "route=6,dwell=1s"]);
    assert_eq!((code, out.trim()), (0, "retuned route=6,dwell=1s"), "{err}");
    let (_, v) = get(&format!("{}/v1/members/o1", a.url));
    assert_eq!(threshold(&v), Some(json!(6.0)), "{v}");
    for (spec, status, why) in [
        ("nope=3", "409", "no policy named 'nope'"),
        ("route=3,ejection", "409", "need a restart"),
        ("probe=3", "409", "suspect level"),
        ("route=-1", "400", "route=-1"),
    ] {
        let (code, _, err) = vigil_cli(&["tune", "--http", &http(&a), "--token-file", token, spec]);
        assert_eq!(code, 2, "{spec}: {err}");
        assert!(err.contains(status) && err.contains(why), "{spec}: {err}");
    }
    let (_, v) = get(&format!("{}/v1/members/o1", a.url));
    assert_eq!(threshold(&v), Some(json!(6.0)), "nothing changed: {v}");

    // Both operations are in the API's description.
    let (_, doc) = get(&format!("{}/v1/openapi.json", a.url));
    assert!(doc["paths"]["/v1/join"]["post"].is_object() && doc["paths"]["/v1/self/tags"]["patch"].is_object());

    // A crashed member, forced out: left everywhere. An alive one cannot
    // be, nor an unknown one.
    let mut d = Agent::start("o3", Some(&a.addr), &guarded);
    until(&format!("{}/v1/members/o3", c.url), Duration::from_secs(10), |s, v| s == 200 && v["status"] == "alive");
    let _ = d.child.kill();
    let _ = d.child.wait();
    let (_, v) = until(&format!("{}/v1/members/o3", a.url), Duration::from_secs(20), |_, v| v["status"] == "dead");
    assert_eq!(v["status"], "dead", "{v}");
    let (code, _, err) = vigil_cli(&["force-leave", "--http", &http(&a), "--token-file", token, "o1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("409") && err.contains("\"o1\" is alive"), "{err}");
    let (code, _, err) = vigil_cli(&["force-leave", "--http", &http(&a), "--token-file", token, "nobody"]);
    assert!(code == 2 && err.contains("404"), "{err}");
    let (code, out, err) = vigil_cli(&["force-leave", "--http", &http(&a), "--token-file", token, "o3"]);
    assert_eq!((code, out.as_str()), (0, "o3: left\n"), "{err}");
    let (_, v) = until(&format!("{}/v1/members/o3", c.url), Duration::from_secs(10), |_, v| v["status"] == "left");
    assert_eq!(v["status"], "left", "c hears o3 was forced out: {v}");
    let (code, out, _) = vigil_cli(&["force-leave", "--http", &http(&a), "--token-file", token, "--prune", "o3"]);
    assert_eq!((code, out.as_str()), (0, "o3: pruned\n"));
    let (s, _) = get(&format!("{}/v1/members/o3", a.url));
    assert_eq!(s, 404, "pruned: a forgot o3");

    // b leaves when told: it stops, and the others see it left.
    let mut b = b;
    let (code, out, err) = vigil_cli(&["leave", "--http", &http(&b), "--token-file", token]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("leaving"), "{out}");
    let started = Instant::now();
    while b.child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(5), "b did not stop within 5 s of vigil leave");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, v) = until(&format!("{}/v1/members/o1", a.url), Duration::from_secs(10), |_, v| v["status"] == "left");
    assert_eq!(v["status"], "left", "a sees b left: {v}");
    drop(c);
}

#[test]
fn one_command_rotates_the_key_of_every_member_and_names_those_that_did_not_answer() {
    let keys = temp_file("rot-keys", &format!("{KEY_A}\n"));
    let new_key = temp_file("rot-new", &format!("{KEY_B}\n"));
    let token = temp_file("rot-token", TOKEN);
    let token = token.to_str().unwrap();
    let extra = ["--key-file", keys.to_str().unwrap(), "--http-token-file", token];
    let all = cluster(3, &extra);
    let http = all[1].url.trim_start_matches("http://").to_owned();
    let keys_cli = |args: &[&str]| {
        let mut full = vec!["keys", "--http", &http, "--token-file", token];
        full.extend_from_slice(args);
        vigil_cli(&full)
    };
    let (_, list) = call("GET", &format!("{}/v1/keys", all[0].url), Some(TOKEN), None);
    let old = list["keys"][0]["id"].as_str().unwrap().to_owned();

    // Install everywhere: each member answers with both keys, the old one
    // sealing.
    let (code, out, err) = keys_cli(&["install", "--key-file", new_key.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let first = out.lines().next().and_then(|l| l.split_once(": ")).map(|(_, keys)| keys).unwrap_or_default();
    let new = first.split_whitespace().find(|k| !k.starts_with(&old)).expect("the new key's id").to_owned();
    for a in &all {
        assert!(out.contains(&format!("{}: ", a.name)), "{} answered: {out}", a.name);
    }
    assert_eq!(out.matches(&format!("{old}*")).count(), 3, "{out}");
    let (code, out, _) = keys_cli(&["list", "--everywhere"]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("key {new}: held by 3 of 3 members, seals on 0")), "{out}");
    // Use, then remove the old one: every member on the new key alone.
    let (code, out, err) = keys_cli(&["use", &new]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.matches(&format!("{new}*")).count(), 3, "{out}");
    let (code, out, err) = keys_cli(&["remove", &old]);
    assert_eq!(code, 0, "{out}{err}");
    for a in &all {
        let (_, list) = call("GET", &format!("{}/v1/keys", a.url), Some(TOKEN), None);
        assert_eq!(list["keys"].as_array().unwrap().len(), 1, "{}: {list}", a.name);
        assert_eq!(list["keys"][0]["id"].as_str(), Some(new.as_str()));
    }
    // Still one cluster on the new key: heartbeats sealed and opened with
    // it, nobody suspected.
    std::thread::sleep(Duration::from_secs(2));
    for a in &all {
        let (_, v) = get(&format!("{}/v1/self", a.url));
        assert_eq!((v["members"]["alive"].as_u64(), v["members"]["suspect"].as_u64()), (Some(2), Some(0)), "{v}");
        let (_, list) = call("GET", &format!("{}/v1/keys", a.url), Some(TOKEN), None);
        assert!(list["keys"][0]["opened"].as_u64().unwrap() > 0, "{}: the new key opens what arrives: {list}", a.name);
    }

    // A member that is stopped holds the connection open and says nothing:
    // named as silent (not as a version that does not know the request).
    let signal = |sig: &str, a: &Agent| Command::new("kill").args([sig, &a.child.id().to_string()]).status().unwrap();
    signal("-STOP", &all[2]);
    let (code, out, err) = keys_cli(&["list", "--everywhere"]);
    signal("-CONT", &all[2]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains(&format!("{}: no answer in time (stopped or overloaded?)", all[2].name)), "{out}");

    // A member that cannot obey (the primary cannot be removed) and one
    // that is gone: each named with why, and the command fails.
    let mut all = all;
    let gone = all.pop().unwrap();
    let gone_name = gone.name.clone();
    drop(gone);
    let (code, out, err) = keys_cli(&["remove", &new]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.lines().filter(|l| l.contains("primary")).count() >= 2, "{out}");
    assert!(out.lines().any(|l| l.starts_with(&format!("{gone_name}: "))), "{out}");
    assert!(err.contains("3 of 3 members refused or did not answer"), "{err}");
}

/// `vigil monitor` as an operator runs it: the agent logs `info` to its
/// stderr, the follower asks for `debug` and gets the refused datagrams'
/// lines; without the token it is refused and says so.
#[test]
fn vigil_monitor_follows_the_log_at_its_own_level() {
    let token = temp_file("monitor-token", &format!("{TOKEN}\n"));
    let a = Agent::start("m0", None, &["--http-token-file", token.to_str().unwrap()]);
    let http = a.url.trim_start_matches("http://").to_owned();
    let refused =
        Command::new(VIGIL).args(["monitor", "--http", &http]).env_remove("VIGIL_HTTP_TOKEN").output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("401") && err.contains("bearer token"), "{err}");
    let mut monitor = Command::new(VIGIL)
        .args(["monitor", "--http", &http, "--level", "debug"])
        .env("VIGIL_HTTP_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(monitor.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in lines.lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    // Until the follower is there, lines are not kept for it: send until
    // one arrives (bound 10 s).
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let line = loop {
        udp.send_to(&[0xff, 0xfe, 0xfd], &a.addr).unwrap();
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
            break l;
        }
        assert!(Instant::now() < deadline, "no log line within 10 s");
    };
    let _ = monitor.kill();
    let _ = monitor.wait();
    // `HH:MM:SS.mmm  DEBUG vigil_net::driver: datagram refused: ... from=127.0.0.1:PORT`
    let port = udp.local_addr().unwrap().port();
    assert!(line.contains("DEBUG vigil_net::driver: datagram refused"), "{line}");
    assert!(line.ends_with(&format!("from=127.0.0.1:{port}")), "{line}");
    assert_eq!(line.as_bytes()[2], b':', "{line}");
}

/// A member restarted without seeds but with the members it knew in
/// `--data-dir` is joining, not a first member: while none of them answers
/// it is not ready (a probe keeps it out of service), and says why.
#[test]
fn a_restarted_member_whose_known_members_are_gone_is_not_ready() {
    let dir = std::env::temp_dir().join(format!("vigil-http-{}-known", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = ["--data-dir", dir.to_str().unwrap()];
    let a0 = Agent::start("a0", None, &[]);
    let a1 = Agent::start("a1", Some(&a0.addr), &data);
    // The members known are written about a second after a member meets
    // anyone (bound 10 s).
    let file = dir.join("members");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&file).is_ok_and(|t| t.contains(&a0.addr)) {
        assert!(Instant::now() < deadline, "{} never listed a0", file.display());
        std::thread::sleep(Duration::from_millis(100));
    }
    drop((a1, a0));
    let again = Agent::start("a1", None, &data);
    let (status, body) = get(&format!("{}/v1/health/ready", again.url));
    assert_eq!(
        (status, body),
        (503, json!({"status": "not ready", "reasons": ["not joined: no live member known yet"]}))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `vigil leave` is for good: the members known are forgotten, so a
/// restart does not rejoin them; SIGTERM (what a restart sends) keeps them.
#[test]
fn vigil_leave_forgets_the_members_known_and_sigterm_keeps_them() {
    let base = std::env::temp_dir().join(format!("vigil-http-{}-leave", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let a0 = Agent::start("a0", None, &[]);
    let member_file = |name: &str| base.join(name).join("members");
    let start = |name: &str| {
        let dir = base.join(name);
        Agent::start(name, Some(&a0.addr), &["--data-dir", dir.to_str().unwrap()])
    };
    let (mut by_api, mut by_signal) = (start("a1"), start("a2"));
    let deadline = Instant::now() + Duration::from_secs(10);
    for name in ["a1", "a2"] {
        while !std::fs::read_to_string(member_file(name)).is_ok_and(|t| t.contains(&a0.addr)) {
            assert!(Instant::now() < deadline, "{name} never listed a0");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let http = by_api.url.trim_start_matches("http://").to_owned();
    let out = Command::new(VIGIL).args(["leave", "--http", &http]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("for good"));
    assert!(by_api.child.wait().unwrap().success());
    assert!(!member_file("a1").exists(), "vigil leave forgets the members known");
    Command::new("kill").args(["-TERM", &by_signal.child.id().to_string()]).status().unwrap();
    assert!(by_signal.child.wait().unwrap().success());
    let kept = std::fs::read_to_string(member_file("a2")).unwrap();
    assert!(kept.contains(&a0.addr), "SIGTERM keeps them for the restart: {kept}");
    let _ = std::fs::remove_dir_all(&base);
}
