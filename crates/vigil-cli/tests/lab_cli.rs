//! `vigil lab`, tested through the real binary: every command, its JSON, its
//! errors, and agreement with the library it wraps.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use vigil_lab::engine::evaluate;
use vigil_lab::scenario::builtin;
use vigil_lab::spec::DetectorSpec;

fn vigil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vigil")).args(args).output().expect("the vigil binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("stderr is UTF-8")
}

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "status {:?}, stderr: {}", o.status, stderr(o));
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

/// A fresh scratch directory under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("lab-cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const PHI: &str = "normal:window=100,min-std-ms=1,threshold=8";

#[test]
fn run_matches_the_library_and_is_reproducible_from_its_seed() {
    let args = [
        "lab",
        "run",
        "regime-change",
        "--traces",
        "30",
        "--seed",
        "7",
        "--json",
        "--detector",
        PHI,
        "--detector",
        "fixed:timeout-ms=250",
    ];
    let a = vigil(&args);
    let doc = json(&a);
    assert_eq!(doc["traces"], 30);
    assert_eq!(doc["seed"], 7);
    assert!(stderr(&a).contains("seed 7"), "the seed is printed: {}", stderr(&a));
    // Same seed, same bytes.
    assert_eq!(vigil(&args).stdout, a.stdout);
    // The library, called directly, gives the same numbers.
    let traces = builtin("regime-change").unwrap().generate(7, 30);
    let specs: Vec<DetectorSpec> = [PHI, "fixed:timeout-ms=250"].iter().map(|s| s.parse().unwrap()).collect();
    let qos = evaluate(&traces, &specs, 1, &|| {}).unwrap();
    for (i, q) in qos.iter().enumerate() {
        let r = &doc["results"][i];
        assert_eq!(r["detector"], specs[i].to_string());
        assert_eq!(r["qos"]["mistakes"], q.mistakes);
        assert_eq!(r["qos"]["sampled_mistakes"], q.sampled_mistakes);
        assert!((r["qos"]["detection_ms"]["mean"].as_f64().unwrap() - q.detection_ms.mean).abs() < 1e-9);
    }
    // φ convicts at the regime change in most traces.
    assert!(qos[0].traces_with_mistake >= 20);
    // A different seed gives different traces.
    let other = vigil(&["lab", "run", "regime-change", "--traces", "30", "--seed", "8", "--json", "--detector", PHI]);
    assert_ne!(json(&other)["results"][0]["qos"], doc["results"][0]["qos"]);
}

#[test]
fn run_prints_a_table_with_every_default_detector() {
    let o = vigil(&["lab", "run", "calm", "--traces", "5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for name in ["normal:", "akka", "exponential", "fixed:", "chen:", "bertier", "2w:", "empirical"] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    assert!(text.contains("T_D mean (ms)"));
}

#[test]
fn bad_input_is_named_and_exits_with_status_2() {
    let o = vigil(&["lab", "run", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no built-in scenario 'nope'") && stderr(&o).contains("regime-change"),
        "{}",
        stderr(&o)
    );
    let o = vigil(&["lab", "run", "calm", "--detector", "akka:window=0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("detector 'akka:window=0'"), "{}", stderr(&o));
    let dir = scratch("bad");
    let trace = dir.join("bad.csv");
    std::fs::write(&trace, "0,hb\n100,hb\n90,hb\n").unwrap();
    let o = vigil(&["lab", "replay", trace.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 3, field time_ms"), "{}", stderr(&o));
    let toml = dir.join("bad.toml");
    std::fs::write(
        &toml,
        "name = 'x'\nperiod_ms = 100\n[[phases]]\nbeats = 10\ndelay = { kind = 'normal', mean_ms = 5 }\n",
    )
    .unwrap();
    let o = vigil(&["lab", "run", toml.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("sd_ms"), "{}", stderr(&o));
    let o = vigil(&["lab", "run", "calm", "--traces", "100000000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("need about 1000.0 GB of memory"), "{}", stderr(&o));
    // A negative number is taken as the value it is, and refused as such.
    let o = vigil(&["lab", "recommend", "calm", "--max-mistakes-per-hour", "-1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--max-mistakes-per-hour must be 0 or more, got -1"), "{}", stderr(&o));
}

#[test]
fn custom_scenarios_come_from_toml() {
    let dir = scratch("toml");
    let path = dir.join("wan.toml");
    std::fs::write(
        &path,
        "name = 'wan'\nperiod_ms = 1000\ntraces = 4\n[loss]\nkind = 'bernoulli'\np = 0.05\n[[phases]]\nbeats = 60\n\
         delay = { kind = 'shifted-gamma', shift_ms = 40, shape = 2, scale_ms = 10 }\n",
    )
    .unwrap();
    let doc = json(&vigil(&["lab", "run", path.to_str().unwrap(), "--json", "--detector", "fixed:timeout-ms=2500"]));
    assert_eq!(doc["scenario"], "wan");
    assert_eq!(doc["traces"], 4);
    assert_eq!(doc["results"][0]["qos"]["crashed"], 4);
}

#[test]
fn replay_measures_a_recorded_trace_exactly() {
    let dir = scratch("replay");
    let path = dir.join("t.csv");
    // Every 100 ms; beat 5 is lost; crash at 900 ms after beat 9 was sent.
    let mut text = String::from("time_ms,event,sent_ms,seq\n");
    for i in (0..10u64).filter(|&i| i != 5) {
        text.push_str(&format!("{},hb,{},{i}\n", i * 100 + 7, i * 100));
    }
    text.push_str("900,crash\n");
    std::fs::write(&path, text).unwrap();
    let doc = json(&vigil(&["lab", "replay", path.to_str().unwrap(), "--json", "--detector", "fixed:timeout-ms=150"]));
    let q = &doc["results"][0]["qos"];
    // The 200 ms gap exceeds 150 ms for 50 ms; the crash is detected 150 ms
    // after the last arrival (907 ms), and the next heartbeat was due at
    // 1000 ms.
    assert_eq!(q["mistakes"], 1);
    assert_eq!(q["mistake_beats"][0][0], 6);
    assert!((q["mistake_duration_ms"]["mean"].as_f64().unwrap() - 50.0).abs() < 1e-9);
    assert!((q["detection_ms"]["mean"].as_f64().unwrap() - 157.0).abs() < 1e-9);
    assert!((q["detection_from_due_ms"]["mean"].as_f64().unwrap() - 57.0).abs() < 1e-9);
    // Without a crash, the time to suspect stands in for detection.
    let path2 = dir.join("nocrash.jsonl");
    let lines: String = (0..20).map(|i| format!("{{\"t\": {}}}\n", i * 100)).collect();
    std::fs::write(&path2, lines).unwrap();
    let doc = json(&vigil(&["lab", "replay", path2.to_str().unwrap(), "--json", "--detector", "fixed:timeout-ms=250"]));
    assert_eq!(doc["results"][0]["time_to_suspect_ms"]["mean"], 250.0);
    assert_eq!(doc["results"][0]["qos"]["crashed"], 0);
}

#[test]
fn sweep_writes_a_frontier_and_a_plot() {
    let dir = scratch("sweep");
    let o = vigil(&[
        "lab",
        "sweep",
        "regime-change",
        "--traces",
        "20",
        "--json",
        "--out",
        dir.to_str().unwrap(),
        "--family",
        "fixed@timeout-ms=150,250,400",
        "--family",
        "floor=normal:window=100,threshold=8@min-std-ms=1,30,50",
    ]);
    let doc = json(&o);
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    let front: Vec<usize> = doc["frontier"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
    assert!(!front.is_empty());
    // Along the frontier, detection time rises and the mistake rate falls.
    for w in front.windows(2) {
        assert!(points[w[0]]["detection_ms"].as_f64() < points[w[1]]["detection_ms"].as_f64());
        assert!(points[w[0]]["mistakes_per_hour"].as_f64() > points[w[1]]["mistakes_per_hour"].as_f64());
    }
    let svg = std::fs::read_to_string(dir.join("sweep-regime-change.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("fixed") && svg.trim_end().ends_with("</svg>"));
}

#[test]
fn recommend_picks_the_fastest_setting_within_the_bound() {
    let doc = json(&vigil(&[
        "lab",
        "recommend",
        "regime-change",
        "--traces",
        "20",
        "--max-mistakes-per-hour",
        "200",
        "--json",
    ]));
    let best = &doc["recommendation"];
    let rate = best["mistakes_per_hour"].as_f64().unwrap();
    assert!(rate <= 200.0, "{rate}");
    // No family's best within the bound is faster.
    for p in doc["best_per_family"].as_array().unwrap() {
        assert!(p["detection_ms"].as_f64().unwrap() >= best["detection_ms"].as_f64().unwrap());
    }
    let o = vigil(&["lab", "recommend", "regime-change", "--traces", "5", "--max-mistakes-per-hour", "200"]);
    assert!(stdout(&o).contains("recommendation for regime-change"), "{}", stdout(&o));
    // No setting within the bound: the command ran and its check failed
    // (status 1, not a usage error).
    let args = [
        "lab",
        "recommend",
        "bursty",
        "--traces",
        "3",
        "--max-mistakes-per-hour",
        "0",
        "--family",
        "fixed@timeout-ms=1,2",
    ];
    let o = vigil(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no setting makes at most 0 mistakes per hour on bursty"), "{}", stderr(&o));
}

#[test]
fn configure_reproduces_chens_example_and_checks_it_by_simulation() {
    let doc = json(&vigil(&[
        "lab",
        "configure",
        "--max-detection",
        "30s",
        "--min-recurrence",
        "30d",
        "--max-mistake-duration",
        "60s",
        "--loss",
        "0.01",
        "--delay",
        "exp:mean=20",
        "--simulate",
        "20000",
        "--json",
    ]));
    // Chen et al.: η ≈ 9.97 s, δ ≈ 20.03 s (reproduced as 9.9763 / 20.0237).
    assert!((doc["eta_ms"].as_f64().unwrap() - 9976.3).abs() < 1.0, "{}", doc["eta_ms"]);
    assert!((doc["delta_ms"].as_f64().unwrap() - 20023.7).abs() < 1.0, "{}", doc["delta_ms"]);
    assert!(doc["simulated"]["alive_hours"].as_f64().unwrap() > 50.0);
    let o = vigil(&[
        "lab",
        "configure",
        "--max-detection",
        "30s",
        "--min-recurrence",
        "30d",
        "--max-mistake-duration",
        "60s",
        "--delay-mean-ms",
        "20",
        "--delay-var-ms2",
        "400",
        "--simulate",
        "0",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Cantelli"), "{}", stdout(&o));
    // Every heartbeat takes 50 ms: a 30 ms detection bound is unachievable.
    let o = vigil(&[
        "lab",
        "configure",
        "--max-detection",
        "30ms",
        "--min-recurrence",
        "30d",
        "--max-mistake-duration",
        "1s",
        "--delay",
        "constant:ms=50",
    ]);
    // The requirements cannot be met: the command ran and its check failed.
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("cannot be met"), "{}", stderr(&o));
    let o = vigil(&[
        "lab",
        "configure",
        "--max-detection",
        "5 parsecs",
        "--min-recurrence",
        "30d",
        "--max-mistake-duration",
        "1s",
        "--delay",
        "exp:mean=20",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--max-detection"), "{}", stderr(&o));
}

#[test]
fn demo_writes_a_self_contained_report() {
    let dir = scratch("demo");
    let o = vigil(&["lab", "demo", "--traces", "12", "--seed", "5", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("Seed 001: the regime change") && text.contains("Which family wins where"), "{text}");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("φ around the regime change"));
    // Self-contained: no scripts, no external resources.
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href=\"http"));
    for f in ["phi-regime-change.svg", "ramp.svg", "frontier-regime-change.svg", "frontier-noisy.svg"] {
        let svg = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(svg.starts_with("<svg"), "{f}");
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("demo.json")).unwrap()).unwrap();
    assert_eq!(doc["seed"], 5);
    assert_eq!(doc["traces"], 12);
}

#[test]
fn policies_demonstration_runs() {
    let o = vigil(&["policies", "--traces", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("vigil policies (seed"), "{}", stdout(&o));
}

#[test]
fn inputs_that_once_panicked_get_errors_naming_what_to_change() {
    let dir = scratch("hostile");
    // A trace whose median gap is 0: the default grids scale to the period.
    let trace = dir.join("dup.csv");
    std::fs::write(&trace, "0,hb\n0,hb\n1000,hb\n1000,hb\n2000,hb\n2000,hb\n").unwrap();
    for command in ["sweep", "recommend"] {
        let mut args = vec!["lab", command, trace.to_str().unwrap()];
        if command == "recommend" {
            args.extend(["--max-mistakes-per-hour", "10"]);
        }
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(2), "{command}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("0 ms is not one they can use") && stderr(&o).contains("--family"),
            "{}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    // Scenario durations out of range, named with their field.
    for (line, field) in [
        ("jitter = { kind = \"uniform\", ms = 1e308 }", "jitter must be 0 to 1e9 ms, got 1e308"),
        ("sender_pauses = { chance = 1, min_ms = 0, max_ms = 1e308 }", "sender_pauses.max_ms"),
        ("receiver_stalls = { chance = 0.5, min_ms = -1, max_ms = 2 }", "receiver_stalls.min_ms"),
    ] {
        let path = dir.join("h.toml");
        std::fs::write(
            &path,
            format!("name = \"h\"\nperiod_ms = 1000\n{line}\n[[phases]]\nbeats = 50\ndelay = {{ kind = \"constant\", ms = 10 }}\n"),
        )
        .unwrap();
        let o = vigil(&["lab", "run", path.to_str().unwrap(), "--traces", "2"]);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        assert!(stderr(&o).contains(field), "{line}: {}", stderr(&o));
    }
}

#[test]
fn an_output_location_that_cannot_be_written_is_refused_before_any_work() {
    let dir = scratch("unwritable");
    let file = dir.join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let under = file.join("out");
    let under = under.to_str().unwrap();
    for args in [
        vec!["lab", "demo", "--traces", "3", "--out", under],
        vec!["lab", "sweep", "calm", "--traces", "2", "--out", under],
        vec!["lab", "run", "calm", "--traces", "2", "--save-traces", under],
        vec!["sim", "scale", "--sizes", "10", "--out", under],
        vec!["sim", "frontier", "--nodes", "10", "--out", under],
    ] {
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(under), "{args:?}: {e}");
        assert!(!e.contains("sweeping") && !e.contains("N = 10:") && !e.contains("traces, seed"), "nothing ran: {e}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory", "nothing already there is lost");
    // A full standard output is named as such, with status 2.
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("Linux has /dev/full");
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(["lab", "run", "calm", "--traces", "2"])
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("vigil: standard output: No space left on device"), "{}", stderr(&o));
}

#[test]
fn counts_warmups_and_sizes_are_checked_before_anything_is_generated() {
    let cases: [(&[&str], &str); 8] = [
        (&["lab", "run", "calm", "--traces", "0"], "--traces: 0; at least 1 trace is needed"),
        (&["lab", "demo", "--traces", "0"], "--traces: 0; at least 1 trace per scenario"),
        (&["lab", "run", "calm", "--traces", "5000000"], "(500000000 heartbeats) need about 50.0 GB of memory"),
        // Beyond what any budget allows: no advice to raise it.
        (&["lab", "demo", "--traces", "1000000000000"], "GB allowed; use fewer --traces\n"),
        (
            &["lab", "run", "calm", "--traces", "2", "--warmup", "100000"],
            "--warmup 100000: scenario calm sends only 100",
        ),
        (&["lab", "sweep", "calm", "--traces", "2", "--max-memory-gb", "-3"], "--max-memory-gb: -3 is not a size"),
        // Sizes in the unit that shows them, and counts that do not stop
        // at 2^64.
        (&["lab", "run", "calm", "--max-memory-gb", "1e-6"], "need about 2.0 MB of memory, more than the 1 kB allowed"),
        (
            &["lab", "run", "calm", "--traces", "18446744073709551615"],
            "(1844674407370955161500 heartbeats) need about 184467440737000 GB",
        ),
    ];
    for (args, message) in cases {
        let o = vigil(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(message), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("traces, seed"), "nothing was generated: {}", stderr(&o));
    }
    // Traces too short to measure, or to warm up on.
    let dir = scratch("short");
    let header_only = dir.join("header.csv");
    std::fs::write(&header_only, "time_ms,event\n").unwrap();
    let o = vigil(&["lab", "replay", header_only.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("a trace with 0 heartbeat(s); at least 2 are needed"), "{}", stderr(&o));
    let two = dir.join("two.csv");
    std::fs::write(&two, "0,hb\n1000,hb\n").unwrap();
    let o = vigil(&["lab", "replay", two.to_str().unwrap(), "--warmup", "5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--warmup 5:") && stderr(&o).contains("only 2 heartbeats"), "{}", stderr(&o));
    // Rates are per hour alive: a trace with no time alive has none.
    let same = dir.join("same.csv");
    std::fs::write(&same, "0,hb\n0,hb\n0,hb\n").unwrap();
    let early = dir.join("early.csv");
    std::fs::write(&early, "1000,hb\n2000,hb\n0,crash\n").unwrap();
    for (path, message) in [
        (&same, "every heartbeat and the end are at 0 ms: no time to measure rates over"),
        (&early, "the crash at 0 ms is not after the first heartbeat (at 1000 ms)"),
    ] {
        let o = vigil(&["lab", "replay", path.to_str().unwrap(), "--detector", "fixed:timeout-ms=1000"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(message), "{}", stderr(&o));
    }
    // Gaps longer than a window sample holds are said, not silently clamped.
    let long = dir.join("long.csv");
    std::fs::write(&long, "0,hb\n7200000,hb\n9000000,hb\n10000000,hb\n").unwrap();
    let o = vigil(&["lab", "replay", long.to_str().unwrap(), "--detector", "normal"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 gap(s) between heartbeats are longer than 4294967 ms"), "{}", stderr(&o));
    // --traces is for scenarios; on a recorded trace it is an error, not
    // silently ignored.
    let o = vigil(&["lab", "sweep", two.to_str().unwrap(), "--traces", "0", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--traces 0: ") && stderr(&o).contains("is a recorded trace"), "{}", stderr(&o));
    // A trace handed to a command that takes a scenario, and a path that
    // does not exist, are named as what they are.
    let o = vigil(&["lab", "run", two.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("a trace, where this command takes a scenario"), "{}", stderr(&o));
    let o = vigil(&["lab", "run", "no/such/scenario"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no/such/scenario: no such file (and not a built-in scenario)"), "{}", stderr(&o));
}

#[test]
fn every_command_that_reads_a_trace_reads_stdin_for_a_dash() {
    let trace = "0,hb\n1000,hb\n2000,hb\n3000,hb\n4000,hb\n5000,hb\n";
    let dir = scratch("stdin");
    for args in [
        vec!["lab", "replay", "-"],
        vec!["lab", "sweep", "-", "--family", "fixed@timeout-ms=1500,2500", "--out", dir.to_str().unwrap()],
        vec!["lab", "recommend", "-", "--max-mistakes-per-hour", "100", "--family", "fixed@timeout-ms=1500,2500"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_vigil"))
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(trace.as_bytes()).unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).contains("stdin") || stdout(&o).contains("fixed"), "{args:?}: {}", stdout(&o));
    }
    // Bytes that are not text are named, with where they start.
    let mut child = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(["lab", "replay", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"0,hb\n\xff\xfe\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("stdin:2: not UTF-8 text (byte 1 of the line)"), "{}", stderr(&o));
    // Scenarios too: `-` reads one from stdin, in `lab run` and `sim run`.
    let lab = "name = \"piped\"\nperiod_ms = 100\n[[phases]]\nbeats = 50\ndelay = { kind = \"constant\", ms = 1 }\n";
    let sim = "name = \"piped\"\nnodes = 5\nduration = 20\n";
    for (args, text, want) in [
        (vec!["lab", "run", "-", "--traces", "2", "--detector", "fixed"], lab, "piped: 2 traces"),
        (vec!["sim", "run", "-"], sim, "piped: 5 nodes"),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_vigil"))
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).contains(want), "{args:?}: {}", stdout(&o));
    }
    // A scenario file that is not text is named with its line, as a trace is.
    let dir = scratch("not-text");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, b"name = \"x\"\n\xff\xfe = 1\n").unwrap();
    for command in ["lab", "sim"] {
        let o = vigil(&[command, "run", bad.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("bad.toml:2: not UTF-8 text (byte 1 of the line)"), "{}", stderr(&o));
    }
}

/// A full disk halfway through a report leaves nothing behind: the report,
/// its figures and its data are written as one set. Needs a small tmpfs
/// (root, as CI runs); elsewhere it says so and checks nothing.
#[test]
fn a_full_disk_leaves_no_half_report() {
    let mount_point = scratch("full-disk");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=300k", "tmpfs", mount_point.to_str().unwrap()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("a_full_disk_leaves_no_half_report: cannot mount a tmpfs here (not root?); not checked");
        return;
    }
    let out = mount_point.join("demo");
    // The demo's report at 3 traces is about 400 kB: the disk fills midway.
    let o = vigil(&["lab", "demo", "--traces", "3", "--out", out.to_str().unwrap()]);
    let listing: Vec<String> = std::fs::read_dir(&out)
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let _ = Command::new("umount").arg(&mount_point).status();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("No space left on device"), "{}", stderr(&o));
    assert!(listing.is_empty(), "nothing of the report is left: {listing:?}");
}

/// Scripts read the JSON documents: each carries its format version and the
/// command that printed it, and the field names stay as they are.
#[test]
fn json_documents_carry_their_format_and_keep_their_fields() {
    let o = vigil(&["lab", "run", "calm", "--traces", "2", "--detector", "akka", "--json"]);
    let doc = json(&o);
    assert_eq!(doc["format_version"], 1);
    assert_eq!(doc["command"], "lab run");
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&doc), ["command", "format_version", "results", "scenario", "seed", "traces"]);
    let qos = &doc["results"][0]["qos"];
    assert_eq!(
        keys(qos),
        [
            "alive_hours",
            "crashed",
            "detection_from_due_ms",
            "detection_ms",
            "good_period_ms",
            "mean_recurrence_ms",
            "mistake_beats",
            "mistake_duration_ms",
            "mistake_rate_per_hour",
            "mistakes",
            "query_accuracy",
            "recurrence_ms",
            "sampled_mistakes",
            "traces",
            "traces_with_mistake",
            "undetected"
        ]
    );
    assert_eq!(keys(&qos["detection_ms"]), ["count", "max", "mean", "p50", "p99"]);
    // No mistakes: the recurrence time is infinite, printed as null.
    assert_eq!(qos["mistakes"], 0);
    assert!(qos["mean_recurrence_ms"].is_null());
    let dir = scratch("json");
    let trace = dir.join("t.csv");
    std::fs::write(&trace, "0,hb\n1000,hb\n2000,hb\n3000,hb\n").unwrap();
    let doc = json(&vigil(&["lab", "replay", trace.to_str().unwrap(), "--detector", "akka", "--json"]));
    assert_eq!((doc["format_version"].as_u64(), doc["command"].as_str()), (Some(1), Some("lab replay")));
    assert_eq!(keys(&doc["results"][0]), ["detector", "qos", "time_to_suspect_ms"]);
}

/// A value that starts with `-` is the value it is, for every option:
/// vigil's own check names it, rather than the parser taking it for a flag.
#[test]
fn values_starting_with_a_hyphen_reach_the_checks_that_name_them() {
    let req = ["--min-recurrence", "30d", "--max-mistake-duration", "60s", "--delay", "exp:mean=1"];
    for (args, message) in [
        (vec!["lab", "configure", "--max-detection", "-5s"], "--max-detection: '-5s' is outside (0, 1 year]"),
        (
            vec!["lab", "configure", "--max-detection", "30s", "--loss", "-1e-300"],
            "--loss must be a probability in [0, 1), got -1e-300",
        ),
        (
            vec!["lab", "recommend", "calm", "--max-mistakes-per-hour", "-inf"],
            "--max-mistakes-per-hour must be 0 or more, got -inf",
        ),
        (vec!["sim", "run", "--crash", "-3@5"], "--crash: '-3' is not a node index"),
    ] {
        let mut full = args.clone();
        if args[1] == "configure" {
            full.extend(req);
        }
        let o = vigil(&full);
        assert_eq!(o.status.code(), Some(2), "{full:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(message), "{full:?}: {}", stderr(&o));
    }
}

/// `--report DIR` on every lab command that judges detectors: a
/// self-contained page (no scripts, nothing fetched) with its tables and
/// figures inline, and the figures beside it.
#[test]
fn every_lab_command_writes_a_report_when_asked() {
    let dir = scratch("reports");
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../vigil-lab/samples/regime-change.csv");
    let fam = "fixed@timeout-ms=150,250,400";
    let plot = dir.join("plots");
    let cases: [(Vec<&str>, &str, &[&str]); 4] = [
        (
            vec!["lab", "run", "calm", "--traces", "3", "--detector", "akka", "--detector", "fixed"],
            "vigil lab run: calm",
            &["levels.svg"],
        ),
        (
            vec!["lab", "sweep", "calm", "--traces", "3", "--family", fam, "--out", plot.to_str().unwrap()],
            "vigil lab sweep: calm",
            &["frontier.svg"],
        ),
        (vec!["lab", "replay", sample, "--detector", "akka"], "vigil lab replay:", &["levels.svg"]),
        (
            vec!["lab", "recommend", "calm", "--traces", "3", "--family", fam, "--max-mistakes-per-hour", "1000"],
            "vigil lab recommend: calm",
            &["frontier.svg"],
        ),
    ];
    for (i, (mut args, title, figures)) in cases.into_iter().enumerate() {
        let out = dir.join(format!("r{i}"));
        args.extend(["--report", out.to_str().unwrap()]);
        let o = vigil(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let page = std::fs::read_to_string(out.join("index.html")).expect("the report page is written");
        assert!(page.starts_with("<!DOCTYPE html>"), "{args:?}");
        assert!(page.contains(&format!("<h1>{title}")), "{args:?}: the title");
        assert!(!page.contains("<script") && !page.contains("href=\"http"), "{args:?}: self-contained");
        for tag in ["table", "svg", "figure"] {
            let open = page.matches(&format!("<{tag}")).count();
            assert!(open >= 1, "{args:?}: a {tag}");
            assert_eq!(open, page.matches(&format!("</{tag}>")).count(), "{args:?}: {tag} balanced");
        }
        for f in figures {
            let svg = std::fs::read_to_string(out.join(f)).unwrap_or_else(|e| panic!("{args:?}: {f}: {e}"));
            assert!(svg.trim_end().ends_with("</svg>") && svg.contains("<svg"), "{args:?}: {f} is an SVG document");
        }
        assert!(stderr(&o).contains(&format!("report: {}", out.join("index.html").display())), "{}", stderr(&o));
    }
    // The run's page holds its QoS table with each detector, and the
    // recommendation page names the setting.
    let run = std::fs::read_to_string(dir.join("r0/index.html")).unwrap();
    assert!(run.contains("<td>akka</td>") && run.contains("<td>fixed</td>"), "the QoS table");
    let rec = std::fs::read_to_string(dir.join("r3/index.html")).unwrap();
    assert!(rec.contains("recommendation for calm with at most 1000 mistakes per hour"), "the recommendation");
    // A report location that cannot be written is refused before any work.
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let o = vigil(&["lab", "run", "calm", "--report", file.join("r").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--report") && !stderr(&o).contains("traces, seed"), "{}", stderr(&o));
}

/// `vigil lab fleet`: the composition catches the gray failure φ misses and
/// the low-traffic crash outlier detection misses, without the false
/// removals of outlier detection tuned to catch that crash; a recorded
/// trace replays; the report has the table and a figure per scenario.
#[test]
fn fleet_shows_what_each_signal_misses_and_the_composition_catches() {
    let o = vigil(&["lab", "fleet", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 30, "5 scenarios × 6 setups");
    let get = |scenario: &str, setup: &str| {
        results
            .iter()
            .find(|r| r["scenario"] == scenario && r["setup"] == setup)
            .unwrap_or_else(|| panic!("{scenario}/{setup}"))
    };
    let stop = |scenario: &str, setup: &str| get(scenario, setup)["stopped_routing_after_ms"].as_f64();
    let reached = |scenario: &str, setup: &str| get(scenario, setup)["requests_to_bad_host"].as_u64().unwrap();
    // Gray failure: heartbeats are fine, so φ at any threshold never stops
    // routing to h3; the composition does within the first interval tick.
    assert_eq!((stop("gray", "phi"), stop("gray", "phi-tight")), (None, None));
    assert!(stop("gray", "composed").is_some_and(|ms| ms <= 10_000.0));
    assert!(reached("gray", "composed") * 10 < reached("gray", "phi"));
    // Low-traffic crash: outlier detection alone never does (three requests
    // in four minutes); the composition does on φ, within 10 s.
    assert_eq!(stop("low-traffic-crash", "outliers"), None);
    assert!(stop("low-traffic-crash", "composed").is_some_and(|ms| ms < 10_000.0));
    // Outlier detection tuned to catch that crash removes healthy hosts;
    // the composition removes none outside the brownout.
    let false_removals = |setup: &str| -> u64 {
        results
            .iter()
            .filter(|r| r["setup"] == setup && r["scenario"] != "brownout")
            .map(|r| r["false_removals"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(false_removals("composed"), 0);
    assert!(false_removals("outliers-eager") > 0);
    // Brownout: no more removed at once than the cap (1 of 10).
    for setup in ["outliers", "outliers-eager", "composed"] {
        assert!(get("brownout", setup)["max_removed_at_once"].as_u64().unwrap() <= 1, "{setup}");
    }

    // A recorded trace of the gray failure, replayed open-loop.
    let dir = std::env::temp_dir().join(format!("vigil-fleet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("gray.csv");
    let report = dir.join("report");
    let o = vigil(&[
        "lab",
        "fleet",
        "gray",
        "--setup",
        "phi",
        "--setup",
        "composed",
        "--write-trace",
        trace.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("requests that reached the bad host"));
    assert!(report.join("fleet-gray.svg").exists());
    let o = vigil(&["lab", "fleet", trace.to_str().unwrap(), "--setup", "phi", "--setup", "composed", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    let (phi, composed) = (&v["results"][0], &v["results"][1]);
    assert_eq!(phi["spared"].as_u64(), Some(0), "φ spares nothing from a gray failure");
    let total = composed["spared"].as_u64().unwrap() + composed["requests_to_bad_host"].as_u64().unwrap();
    assert_eq!(
        total,
        phi["requests_to_bad_host"].as_u64().unwrap(),
        "every request to h3 after the fault is counted once"
    );
    assert!(composed["spared"].as_u64().unwrap() > 10 * composed["requests_to_bad_host"].as_u64().unwrap());

    // Bad input is named.
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "0,h0,hb\n5,h0,req,999\n").unwrap();
    for (args, says) in [
        (vec!["lab", "fleet", "--setup", "magic"], "--setup: 'magic' is not a setup"),
        (vec!["lab", "fleet", "earthquake"], "'earthquake': neither a fleet scenario"),
        (vec!["lab", "fleet", bad.to_str().unwrap()], "line 2, field outcome: '999' is not an outcome"),
        (
            vec!["lab", "fleet", "gray", "crash", "--write-trace", "/tmp/x.csv"],
            "--write-trace: give exactly one built-in scenario",
        ),
        (
            vec!["lab", "fleet", trace.to_str().unwrap(), "--setup", "p2c"],
            "--setup p2c: a tower stack routes its own requests",
        ),
    ] {
        let o = vigil(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The real tower stacks run under the same closed loop, from the command:
/// on a low-traffic crash, only the one that hears heartbeats spares every
/// request.
#[test]
fn fleet_runs_the_tower_stacks_beside_the_built_in_setups() {
    let o = vigil(&["lab", "fleet", "low-traffic-crash", "--setup", "composed", "--setup", "tower", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    let results = v["results"].as_array().unwrap();
    let setups: Vec<&str> = results.iter().map(|r| r["setup"].as_str().unwrap()).collect();
    assert_eq!(setups, ["composed", "p2c", "p2c-accrual", "consecutive-eject", "vigil-tower"]);
    let to_bad =
        |setup: &str| results.iter().find(|r| r["setup"] == setup).unwrap()["requests_to_bad_host"].as_u64().unwrap();
    assert_eq!(to_bad("vigil-tower"), 0);
    assert_eq!(to_bad("composed"), 0);
    // One request every 5 s: a counter of failures in a row needs several.
    for stack in ["p2c", "p2c-accrual", "consecutive-eject"] {
        assert!(to_bad(stack) >= 5, "{stack}: {}", to_bad(stack));
    }
    let o = vigil(&["lab", "fleet", "crash", "--setup", "envoy"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("tower stacks: p2c, p2c-accrual, consecutive-eject, vigil-tower"), "{}", stderr(&o));
}
