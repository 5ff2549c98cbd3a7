//! The monitoring mixin (`monitoring/`): its rules checked and unit-tested
//! by Prometheus' own `promtool`, then tested on series running agents
//! served.
//!
//! Four `vigil agent` processes on loopback: three in a cluster and one
//! whose only seed answers nobody. A scraper reads `/metrics` of the first
//! and of the lonely one once a second while the test makes things happen
//! to the cluster: three members that flap (stopped until suspected, then
//! resumed), packets that are not vigil's, a `kill -9`. The scrapes become
//! a `promtool test rules` file, their values as served and their times
//! spaced 15 s apart (Prometheus' default scrape interval), and the test
//! says which alerts must fire when: each only after its cause, none in the
//! steady state. The Grafana dashboard's expressions are parsed by promtool
//! and must read only series the agents serve or the rules record.
//!
//! Needs `promtool` (Debian's `prometheus` package). Without it the tests
//! say SKIPPED, unless `VIGIL_PROMTOOL=1` (`.ci/run` sets it after
//! installing the package), where its absence fails them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;
use support::local::Agent;

/// Where the mixin is.
fn mixin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../monitoring")
}

/// Whether promtool runs here; says why not.
fn promtool(test: &str) -> bool {
    let found = Command::new("promtool").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert_ne!(
            std::env::var("VIGIL_PROMTOOL").as_deref(),
            Ok("1"),
            "VIGIL_PROMTOOL=1 but promtool does not run: install Debian's prometheus package"
        );
        println!("SKIPPED {test}: promtool is not installed (Debian's prometheus package; .ci/run installs it)");
    }
    found
}

/// Runs promtool with `args`; its output, or a failure with it.
fn run_promtool(args: &[&str]) -> String {
    let out = Command::new("promtool").args(args).output().expect("promtool runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "promtool {}:\n{text}", args.join(" "));
    text
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

#[test]
fn the_rules_are_valid_and_pass_their_own_unit_tests() {
    if !promtool("the_rules_are_valid_and_pass_their_own_unit_tests") {
        return;
    }
    let m = mixin();
    let checked = run_promtool(&["check", "rules", path(&m.join("rules.yml")), path(&m.join("alerts.yml"))]);
    assert_eq!(checked.matches("SUCCESS: 10 rules found").count(), 2, "{checked}");
    run_promtool(&["test", "rules", path(&m.join("tests.yml"))]);
}

/// One scrape: each sample's series (with `job` and `instance` added) and
/// its value as served.
type Scrape = BTreeMap<String, String>;

/// The samples of an OpenMetrics text, each series given `job="vigil"` and
/// `instance`.
fn samples(text: &str, instance: &str) -> Scrape {
    let mut out = Scrape::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (series, value) = match line.rfind('}') {
            Some(close) => (&line[..=close], line[close + 1..].trim()),
            None => line.split_once(' ').map(|(s, v)| (s, v.trim())).expect("a sample is a name and a value"),
        };
        let ours = format!("job=\"vigil\",instance=\"{instance}\"");
        let series = match series.split_once('{') {
            Some((name, labels)) => format!("{name}{{{ours},{labels}"),
            None => format!("{series}{{{ours}}}"),
        };
        out.insert(series, value.to_owned());
    }
    out
}

fn get(url: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut r = agent.get(url).call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
}

fn json(url: &str) -> Value {
    let (_, text) = get(url);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url}: not JSON ({e}): {text}"))
}

/// Polls `url` until `ok`, at most `bound`; whether it held.
fn until(url: &str, bound: Duration, ok: impl Fn(&Value) -> bool) -> bool {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline {
        if ok(&json(url)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn signal(sig: &str, agent: &Agent) {
    assert!(Command::new("kill").args([sig, &agent.child.id().to_string()]).status().unwrap().success());
}

/// Scrapes of the agents at `urls` (by instance name), once a second, in
/// the background until dropped.
struct Scraper {
    scrapes: Arc<Mutex<Vec<Vec<Scrape>>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Scraper {
    fn start(targets: Vec<(String, String)>) -> Scraper {
        let scrapes = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (s, halt) = (scrapes.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut next = Instant::now();
            while !halt.load(std::sync::atomic::Ordering::Relaxed) {
                let one: Vec<Scrape> = targets
                    .iter()
                    .map(|(instance, url)| {
                        let (status, text) = get(&format!("{url}/metrics"));
                        assert_eq!(status, 200, "{instance}: {text}");
                        samples(&text, instance)
                    })
                    .collect();
                s.lock().unwrap().push(one);
                next += Duration::from_secs(1);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        });
        Scraper { scrapes, stop, thread: Some(thread) }
    }

    /// Scrapes so far.
    fn count(&self) -> usize {
        self.scrapes.lock().unwrap().len()
    }

    /// Waits until there are at least `n` scrapes.
    fn wait_for(&self, n: usize) {
        while self.count() < n {
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn finish(mut self) -> Vec<Vec<Scrape>> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().unwrap().join().expect("the scraper did not panic");
        std::mem::take(&mut *self.scrapes.lock().unwrap())
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The scrape interval the series are given in the test file.
const INTERVAL_S: usize = 15;

fn at(scrape: usize) -> String {
    format!("{}s", scrape * INTERVAL_S)
}

/// The value of `series` (as the scrapes name it) in scrape `i` of target
/// `t`.
fn value(scrapes: &[Vec<Scrape>], i: usize, t: usize, series: &str) -> f64 {
    scrapes[i][t].get(series).unwrap_or_else(|| panic!("no {series} in scrape {i}")).parse().unwrap()
}

/// A check that exactly `firing` (alert labels, each with its alertname)
/// fire at scrape `i`, among the alerts named `names` (all when empty).
fn firing_at(i: usize, names: &[&str], firing: &[Value]) -> Value {
    let selector = match names {
        [] => "ALERTS{alertstate=\"firing\"}".to_owned(),
        _ => format!("ALERTS{{alertstate=\"firing\",alertname=~\"{}\"}}", names.join("|")),
    };
    let exp: Vec<Value> = firing
        .iter()
        .map(|labels| {
            let mut all: BTreeMap<String, String> =
                labels.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())).collect();
            all.insert("alertstate".into(), "firing".into());
            let inner: Vec<String> = all.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
            json!({"labels": format!("ALERTS{{{}}}", inner.join(",")), "value": 1})
        })
        .collect();
    json!({"expr": selector, "eval_time": at(i), "exp_samples": exp})
}

#[test]
fn alerts_fire_on_what_running_agents_serve_and_only_then() {
    if !promtool("alerts_fire_on_what_running_agents_serve_and_only_then") {
        return;
    }
    let a0 = Agent::start("a0", None, &[]);
    let a1 = Agent::start("a1", Some(&a0.addr), &[]);
    let a2 = Agent::start("a2", Some(&a0.addr), &[]);
    // The discard port: nothing answers there, so it never joins.
    let lonely = Agent::start("lonely", Some("127.0.0.1:9"), &[]);
    for a in [&a0, &a1, &a2] {
        let ok = until(&format!("{}/v1/self", a.url), Duration::from_secs(20), |v| {
            v["members"]["alive"] == 2 && v["ready"] == true && v["converged"] == true
        });
        assert!(ok, "{} joined and ready within 20 s", a.name);
    }
    let scraper = Scraper::start(vec![("a0".into(), a0.url.clone()), ("lonely".into(), lonely.url.clone())]);

    // The steady state.
    scraper.wait_for(5);
    let steady = scraper.count() - 1;

    // Three flaps: a1 stopped until a0 suspects it, then resumed; it
    // refutes within a second or two, well inside the 10 s of a flap and
    // before the suspicion could confirm (2 s and more after it begins).
    let member = format!("{}/v1/members/a1", a0.url);
    for n in 1..=3 {
        signal("-STOP", &a1);
        let suspected = until(&member, Duration::from_secs(20), |v| v["status"] == "suspect");
        signal("-CONT", &a1);
        assert!(suspected, "flap {n}: a0 suspected the stopped a1 within 20 s");
        assert!(until(&member, Duration::from_secs(10), |v| v["status"] == "alive"), "flap {n}: a1 refuted");
    }
    let flapped = scraper.count();
    scraper.wait_for(flapped + 2);
    let flapped = scraper.count() - 1;

    // Twenty datagrams that are not vigil's.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for i in 0..20u8 {
        udp.send_to(&[0xff, 0xfe, i, 0, 1, 2, 3, 4, 5, 6, 7, 8], &a0.addr).unwrap();
    }
    let rejected = scraper.count();

    // A crash.
    signal("-KILL", &a2);
    let dead = until(&format!("{}/v1/members/a2", a0.url), Duration::from_secs(20), |v| v["status"] == "dead");
    assert!(dead, "a0 declared the killed a2 dead within 20 s");
    let died = scraper.count();
    // Enough after it for the packets' alert (for: 1m) and the lonely
    // one's (for: 5m, 20 scrapes from its first).
    scraper.wait_for((died + 6).max(rejected + 8).max(24));
    let scrapes = scraper.finish();
    drop((a1, lonely));

    // The raw series say what happened, and when.
    let dead_series = "vigil_members{job=\"vigil\",instance=\"a0\",status=\"dead\"}";
    let first_dead = (0..scrapes.len()).find(|&i| value(&scrapes, i, 0, dead_series) >= 1.0).unwrap();
    assert!(
        first_dead >= rejected && first_dead <= died,
        "a2 dead at scrape {first_dead}, killed after {rejected}, seen at {died}"
    );
    let refutations = "vigil_refutations_total{job=\"vigil\",instance=\"a0\"}";
    let flaps = "vigil_flaps_total{job=\"vigil\",instance=\"a0\"}";
    assert_eq!(value(&scrapes, steady, 0, flaps), 0.0);
    assert!(value(&scrapes, flapped, 0, flaps) >= 3.0, "three flaps counted");
    assert!(value(&scrapes, flapped, 0, refutations) >= 3.0, "three refutations counted");
    let not_vigil = "vigil_rejected_packets_total{job=\"vigil\",instance=\"a0\",reason=\"not-vigil\"}";
    assert_eq!(value(&scrapes, rejected - 1, 0, not_vigil), 0.0);
    assert_eq!(value(&scrapes, scrapes.len() - 1, 0, not_vigil), 20.0);
    let lonely_ready = "vigil_ready{job=\"vigil\",instance=\"lonely\"}";
    assert!((0..scrapes.len()).all(|i| value(&scrapes, i, 1, lonely_ready) == 0.0), "lonely never ready");
    // The first scrape where the rejections show (a scrape taken while the
    // datagrams were sent may or may not count them).
    let first_rejected = (0..scrapes.len()).find(|&i| value(&scrapes, i, 0, not_vigil) > 0.0).unwrap();

    // Every series as promtool reads them: values in scrape order, `_`
    // where a series was absent (a member's φ before it was watched).
    let mut names: BTreeSet<(usize, &String)> = BTreeSet::new();
    for s in &scrapes {
        for (t, target) in s.iter().enumerate() {
            names.extend(target.keys().map(|k| (t, k)));
        }
    }
    let input: Vec<Value> = names
        .iter()
        .map(|&(t, series)| {
            let values: Vec<&str> = scrapes.iter().map(|s| s[t].get(series).map_or("_", |v| v.as_str())).collect();
            json!({"series": series, "values": values.join(" ")})
        })
        .collect();

    let cluster = json!({"job": "vigil"});
    let on_a0 = |alert: &str| json!({"alertname": alert, "job": "vigil", "instance": "a0", "severity": "warning"});
    let mut checks = vec![
        // Nothing fires in the steady state.
        firing_at(steady, &[], &[]),
        // The flaps: three refuted suspicions, each within 10 s.
        firing_at(
            flapped,
            &["VigilMembersFlapping", "VigilSuspicionsRefuted"],
            &[on_a0("VigilMembersFlapping"), on_a0("VigilSuspicionsRefuted")],
        ),
        // A peer stopped in the middle of a frame made a0 drop it: not an
        // alert. The packets that are not vigil's are, once they have
        // lasted the alert's minute.
        firing_at(first_rejected - 1, &["VigilPacketsRejected"], &[]),
        firing_at(first_rejected + 3, &["VigilPacketsRejected"], &[]),
        firing_at(
            first_rejected + 4,
            &["VigilPacketsRejected"],
            &[{
                let mut l = on_a0("VigilPacketsRejected");
                l["reason"] = json!("not-vigil");
                l
            }],
        ),
        // The death, one alert for the cluster.
        firing_at(first_dead - 1, &["VigilMembersDead"], &[]),
        firing_at(
            first_dead,
            &["VigilMembersDead"],
            &[{
                let mut l = cluster.clone();
                l["alertname"] = json!("VigilMembersDead");
                l["severity"] = json!("warning");
                l
            }],
        ),
        // The lonely member: not ready for 5 minutes (20 scrapes) from its
        // first scrape; a0's short dips while it suspected a1 never last.
        firing_at(19, &["VigilNotReady"], &[]),
        firing_at(
            20,
            &["VigilNotReady"],
            &[json!({
                "alertname": "VigilNotReady", "job": "vigil", "instance": "lonely", "severity": "warning"
            })],
        ),
    ];
    // Nothing else ever fires: no awareness, queue, events or downing alert.
    let quiet = ["VigilAwarenessHigh", "VigilQueueGrowing", "VigilEventsDropped", "VigilDownedItself"];
    checks.push(firing_at(scrapes.len() - 1, &quiet, &[]));
    // The recording rules on the same data: the cluster's view (the most
    // any agent sees) and the spread between the agents' views.
    let alive = |i: usize, t: usize| {
        let instance = ["a0", "lonely"][t];
        value(&scrapes, i, t, &format!("vigil_members{{job=\"vigil\",instance=\"{instance}\",status=\"alive\"}}"))
    };
    let last = scrapes.len() - 1;
    for (rule, want) in [
        ("job:vigil_members:max", alive(last, 0).max(alive(last, 1))),
        ("job:vigil_members:spread", (alive(last, 0) - alive(last, 1)).abs()),
    ] {
        checks.push(json!({
            "expr": format!("{rule}{{status=\"alive\"}}"),
            "eval_time": at(last),
            "exp_samples": [{"labels": format!("{rule}{{job=\"vigil\",status=\"alive\"}}"), "value": want}],
        }));
    }
    // The death's alert with its annotations as an operator reads them.
    let annotated = json!({
        "eval_time": at(first_dead),
        "alertname": "VigilMembersDead",
        "exp_alerts": [{
            "exp_labels": {"severity": "warning", "job": "vigil"},
            "exp_annotations": {
                "summary": "1 member(s) of vigil believed dead",
                "description": "At least one agent of vigil believes 1 member(s) dead. `vigil members --status dead` names them; `vigil force-leave NAME` removes one that will not come back.",
            },
        }],
    });
    let m = mixin();
    let test = json!({
        "rule_files": [path(&m.join("rules.yml")), path(&m.join("alerts.yml"))],
        "evaluation_interval": format!("{INTERVAL_S}s"),
        "tests": [{
            "interval": format!("{INTERVAL_S}s"),
            "input_series": input,
            "alert_rule_test": [annotated],
            "promql_expr_test": checks,
        }],
    });
    // JSON is YAML; kept in the target directory for a look after a failure.
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("monitoring-from-agents.yml");
    std::fs::write(&file, serde_json::to_string_pretty(&test).unwrap()).unwrap();
    let out = Command::new("promtool").args(["test", "rules", path(&file)]).output().expect("promtool runs");
    assert!(
        out.status.success(),
        "promtool test rules {} (scrapes: steady to {steady}, flapped by {flapped}, rejected from {first_rejected}, dead from {first_dead}, {} in all):\n{}{}",
        file.display(),
        scrapes.len(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    dashboard_reads_what_exists(&scrapes);
}

/// The dashboard's queries: each parsed by promtool (as a recording rule,
/// its variables given values) and naming only series the agents served
/// or the rules record.
fn dashboard_reads_what_exists(scrapes: &[Vec<Scrape>]) {
    let m = mixin();
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(m.join("dashboard.json")).unwrap()).unwrap();
    let mut exprs = Vec::new();
    collect_exprs(&dashboard, &mut exprs);
    assert!(exprs.len() >= 10, "{} queries in the dashboard", exprs.len());
    let served: BTreeSet<String> = scrapes
        .iter()
        .flatten()
        .flat_map(|s| s.keys())
        .map(|series| series.split('{').next().unwrap().to_owned())
        .collect();
    let rules = std::fs::read_to_string(m.join("rules.yml")).unwrap();
    let recorded: BTreeSet<String> =
        rules.lines().filter_map(|l| l.trim().strip_prefix("- record: ")).map(str::to_owned).collect();
    let mut groups = Vec::new();
    for (i, expr) in exprs.iter().enumerate() {
        let concrete = expr
            .replace("$__rate_interval", "1m")
            .replace("$__interval", "15s")
            .replace("$job", "vigil")
            .replace("$instance", "a0");
        groups.push(json!({"record": format!("dashboard:query_{i}"), "expr": concrete}));
        for name in metric_names(expr) {
            assert!(
                served.contains(&name) || recorded.contains(&name),
                "the dashboard reads {name}, which no agent served and no rule records: {expr}"
            );
        }
    }
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-queries.yml");
    let rules = json!({"groups": [{"name": "dashboard", "rules": groups}]});
    std::fs::write(&file, serde_json::to_string_pretty(&rules).unwrap()).unwrap();
    run_promtool(&["check", "rules", path(&file)]);
}

fn collect_exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                match (k.as_str(), v) {
                    ("expr", Value::String(s)) => out.push(s.clone()),
                    _ => collect_exprs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| collect_exprs(v, out)),
        _ => {}
    }
}

/// The series names a query reads: `vigil_…` and `process_…` (a histogram's
/// `_bucket`, `_sum` and `_count` are served as such), and rule names
/// (`level:metric:operations`).
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = expr.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
    let mut i = 0;
    while i < bytes.len() {
        if word(bytes[i]) && (i == 0 || !word(bytes[i - 1])) {
            let end = (i..bytes.len()).find(|&j| !word(bytes[j])).unwrap_or(bytes.len());
            let token = &expr[i..end];
            let inside_braces = expr[..i].matches('{').count() > expr[..i].matches('}').count();
            if !inside_braces
                && (token.starts_with("vigil_") || token.starts_with("process_") || token.matches(':').count() == 2)
            {
                names.insert(token.to_owned());
            }
            i = end;
        } else {
            i += 1;
        }
    }
    names
}
