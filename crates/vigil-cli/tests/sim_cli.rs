//! `vigil sim`, through the real binary.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn vigil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vigil")).args(args).output().expect("the vigil binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sim-cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_crash_from_flags_is_reported_as_json_and_reproducible() {
    let args = ["sim", "run", "--nodes", "30", "--duration", "30", "--seed", "4", "--crash", "7@10", "--json"];
    let o = vigil(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("seed 4"), "the seed is printed");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let crash = &doc["report"]["crashes"][0];
    assert_eq!(crash["node"], 7);
    assert_eq!(crash["detected_by"], 29);
    assert!(crash["median_ms"].as_f64().unwrap() < 6_000.0);
    assert_eq!(doc["report"]["violations"]["total"], 0);
    assert_eq!(vigil(&args).stdout, o.stdout, "same seed, same report");
    // The document's format and fields, which scripts read.
    assert_eq!((doc["format_version"].as_u64(), doc["command"].as_str()), (Some(1), Some("sim run")));
    let mut keys: Vec<&String> = doc["report"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "bytes_per_member_second",
            "converged_ms",
            "crashes",
            "downed_deaths",
            "false_deaths",
            "false_deaths_of",
            "false_deaths_outside_envelope",
            "false_deaths_per_member_hour",
            "false_suspicions",
            "false_suspicions_per_member_hour",
            "fault_windows",
            "final_disagreements",
            "heals",
            "ineffective_faults",
            "log_hash",
            "messages_by_kind",
            "messages_per_member_second",
            "nodes",
            "path_problems",
            "refuted",
            "scenario",
            "sealing",
            "seed",
            "steady",
            "totals",
            "violations",
            "virtual_secs"
        ]
    );
}

#[test]
fn scenarios_come_from_toml_and_flags_override_them() {
    let dir = scratch("toml");
    let path = dir.join("pause.toml");
    std::fs::write(
        &path,
        "name = 'pause'\nnodes = 20\nduration = 30\n[network]\nloss = 0.01\n[[faults]]\nkind = 'pause'\nnode = 3\nat = 10\nduration = 3\n",
    )
    .unwrap();
    let o = vigil(&["sim", "run", path.to_str().unwrap(), "--seed", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("pause: 20 nodes, seed 2"), "{text}");
    assert!(text.contains("false deaths") && text.contains("suspicions refuted"), "{text}");
}

#[test]
fn bad_scenarios_are_named() {
    let o = vigil(&["sim", "run", "--nodes", "10", "--crash", "12@5"]);
    assert_eq!(o.status.code(), Some(2));
    // Named as typed: the flag and its value.
    assert!(stderr(&o).contains("--crash 12@5: node 12 is out of range (0 to 9)"), "{}", stderr(&o));
    let o = vigil(&["sim", "run", "--degrade", "80@5+10"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--degrade: expected BASE_MS,JITTER_MS@SECS+DURATION"), "{}", stderr(&o));
    let o = vigil(&["sim", "run", "--degrade", "80,1e300@5+10"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--degrade 80,1e300@5+10: jitter_ms 1e300 is outside"), "{}", stderr(&o));
    // Negative values are read (not taken for flags), and refused by name.
    let o = vigil(&["sim", "run", "--degrade", "-5,-5@10+5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--degrade -5,-5@10+5: base_ms -5 is outside"), "{}", stderr(&o));
    for (args, text) in [
        (&["sim", "run", "--loss", "1.5"][..], "--loss 1.5: 1.5 is outside [0, 1]"),
        (&["sim", "run", "--nodes", "0"][..], "--nodes 0: 0 is outside 2 to 100000"),
        (&["sim", "run", "--crash", "5@1e300"][..], "--crash: '1e300' is outside 0 to 2592000 s (30 days)"),
        // A run too short to measure anything is refused, not reported as
        // zeros.
        (&["sim", "run", "--duration", "1e-9"][..], "--duration 1e-9: 1e-9 s is outside 1 s to 30 days"),
    ] {
        let o = vigil(args);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(text), "{args:?}: {}", stderr(&o));
    }
    let o = vigil(&["sim", "run", "--pause", "3@5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--pause"), "{}", stderr(&o));
    let dir = scratch("bad");
    // A file's fault out of range because a flag moved the bound: the flag
    // is named beside the file.
    let late = dir.join("late.toml");
    std::fs::write(&late, "name = 'late'\nnodes = 10\nduration = 60\n[[faults]]\nkind = 'crash'\nnode = 3\nat = 40\n")
        .unwrap();
    let o = vigil(&["sim", "run", late.to_str().unwrap(), "--duration", "30"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "faults[0].at: 40 s is after the end of the run (30 s) (with --duration 30 from the command line)"
        ),
        "{}",
        stderr(&o)
    );
    // A fault with nothing to act on is said, not dropped silently.
    let o = vigil(&[
        "sim",
        "run",
        "--nodes",
        "10",
        "--duration",
        "60",
        "--crash",
        "3@5",
        "--crash",
        "3@20",
        "--restart",
        "4@10",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("note: faults[1] (crash of node 3 at 20 s) changed nothing: it was already down"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("note: faults[2] (restart of node 4 at 10 s) changed nothing: it was up"),
        "{}",
        stderr(&o)
    );
    let path = dir.join("bad.toml");
    std::fs::write(&path, "name = 'x'\nnodes = 5\nbogus = 1\n").unwrap();
    let o = vigil(&["sim", "run", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bogus"), "{}", stderr(&o));
}

#[test]
fn scale_writes_a_table_and_a_plot() {
    let dir = scratch("scale");
    let o = vigil(&["sim", "scale", "--sizes", "10,30", "--duration", "60", "--json", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        let m = r["report"]["steady"]["messages_per_member_second"].as_f64().unwrap();
        // Heartbeats to 2 observers every 1.05 s and push-pull: under 2 per
        // member-second whatever the size.
        assert!((1.8..2.0).contains(&m), "{m}");
    }
    let svg = std::fs::read_to_string(dir.join("sim-scale.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
}

#[test]
fn a_degradation_is_reported_during_and_after() {
    let args = ["sim", "run", "--nodes", "20", "--duration", "60", "--degrade", "300,150@20+20", "--json"];
    let o = vigil(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let w = &doc["report"]["fault_windows"][0];
    assert_eq!(w["kind"], "degrade");
    assert_eq!((w["during"]["from_ms"].as_f64(), w["during"]["to_ms"].as_f64()), (Some(20_000.0), Some(40_000.0)));
    assert_eq!(w["after"]["to_ms"].as_f64(), Some(60_000.0));
    assert_eq!(doc["report"]["false_deaths"], 0);
    let o = vigil(&["sim", "run", "--nodes", "20", "--duration", "60", "--degrade", "300,150@20+20"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("degrade (fault 0), during") && text.contains("degrade (fault 0), after"), "{text}");
}

#[test]
fn frontier_writes_tables_json_and_a_plot() {
    let dir = scratch("frontier");
    let out = dir.to_str().unwrap();
    let args = ["sim", "frontier", "--nodes", "10", "--crash-runs", "1", "--loss-secs", "10", "--out", out];
    let o = vigil(&[&args[..], &["--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("seed 1"), "the seed is printed");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let points = doc["frontier"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 70, "54 φ settings and 16 classic ones");
    assert_eq!(doc["frontier"]["answers"].as_array().unwrap().len(), 16);
    for p in points {
        assert!(p["messages_per_member_second"].as_f64().unwrap() > 0.0, "{p}");
    }
    let svg = std::fs::read_to_string(dir.join("sim-frontier.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("φ frontier"));
    let o = vigil(&args);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("classic I=1s mult=4") && text.contains("classic settings have such a φ setting"), "{text}");
    let o = vigil(&["sim", "frontier", "--nodes", "5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--nodes: 5 is outside 10 to 1000"), "{}", stderr(&o));
}

#[test]
fn a_mass_failure_is_declared_in_full_within_a_stated_bound() {
    let mut args = vec!["sim", "run", "--nodes", "10", "--duration", "200", "--json"];
    let crashes: Vec<String> = (0..9).map(|n| format!("{n}@5")).collect();
    for c in &crashes {
        args.extend(["--crash", c.as_str()]);
    }
    // The default bound (30 s) is too short for one survivor to find nine
    // deaths: the checker says so, and the run fails its check (status 1,
    // not a usage error).
    let o = vigil(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("every crash detected within the bound"), "{}", stderr(&o));
    args.extend(["--detection-bound", "120"]);
    let o = vigil(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    for c in doc["report"]["crashes"].as_array().unwrap() {
        assert_eq!((c["detected_by"].as_u64(), c["survivors"].as_u64()), (Some(1), Some(1)), "{c}");
        assert!(c["max_ms"].as_f64().unwrap() <= 120_000.0, "{c}");
    }
}

#[test]
fn limits_are_checked_before_anything_runs_with_the_estimate_and_the_flag_to_change() {
    // Memory grows as the square of the cluster size: refused up front.
    let o = vigil(&["sim", "run", "--nodes", "100000"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("--nodes: 100000 nodes") && e.contains("need about 1606.6 GB of memory"), "{e}");
    assert!(e.contains("use fewer nodes, or raise --max-memory-gb"), "{e}");
    let o = vigil(&["sim", "run", "--nodes", "2000", "--max-memory-gb", "0.1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("need about 787.8 MB of memory, more than the 100.0 MB allowed"), "{}", stderr(&o));
    // A scale run checks every size before the first one runs.
    let dir = scratch("limits");
    let o = vigil(&["sim", "scale", "--sizes", "10,100000", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--sizes: 100000 nodes"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("N = 10:"), "nothing ran: {}", stderr(&o));
    assert!(!dir.join("sim-scale.svg").exists());
    // Durations that do not fit are refused, echoed as typed.
    let o = vigil(&["sim", "scale", "--sizes", "10", "--duration", "1e20"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--duration: 1e20 is outside 60 s"), "{}", stderr(&o));
    let o = vigil(&["sim", "run", "--nodes", "10", "--duration", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("duration"), "{}", stderr(&o));
    let o = vigil(&["sim", "run", "--nodes", "20", "--max-memory-gb", "nan"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--max-memory-gb: NaN"), "{}", stderr(&o));
}

#[test]
fn a_sealed_cluster_rotates_its_key_and_refuses_replays() {
    let args = [
        "sim",
        "run",
        "--nodes",
        "30",
        "--duration",
        "120",
        "--sealing",
        "sealed",
        "--rotate-key",
        "20+10",
        "--replay",
        "60+20",
        "--json",
    ];
    let o = vigil(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &doc["report"];
    let s = &r["sealing"];
    assert_eq!(r["false_suspicions"], 0, "the rotation and the replays cost no suspicion");
    let injected = s["replays_injected"].as_u64().unwrap();
    assert!(injected > 500, "{injected} replays");
    assert_eq!(s["rejected"]["replayed"].as_u64(), Some(injected), "every replay refused");
    assert_eq!(s["plaintext_accepted"], 0);
    assert_eq!(s["key_steps_failed"], 0);
    assert_eq!(doc["scenario"]["sealing"], "sealed");
    // A rotation needs a sealing cluster.
    let o = vigil(&["sim", "run", "--rotate-key", "20+10"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--rotate-key 20+10: a key rotation needs sealing"), "{}", stderr(&o));
}

#[test]
fn without_connections_the_stand_in_is_optimistic_under_loss() {
    // Classic SWIM at 20 % loss: by default its TCP ping needs a SYN and a
    // SYN-ACK through, so more probes end in an accusation than with
    // `--no-connections` (26 against 5 with seed 1, measured).
    let accusations = |extra: &[&str]| {
        let mut args = vec!["sim", "run", "--nodes", "20", "--duration", "60", "--loss", "0.2", "--protocol"];
        args.extend(["classic", "--seed", "1", "--json"]);
        args.extend(extra);
        let o = vigil(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        doc["report"]["totals"]["accusations"].as_u64().unwrap()
    };
    let (with, without) = (accusations(&[]), accusations(&["--no-connections"]));
    assert!(with >= 2 * without.max(1), "{without} without connections, {with} with");
}

#[test]
fn swarm_runs_its_schedules_and_says_what_it_found() {
    let o = vigil(&["sim", "swarm", "--schedules", "20", "--seed", "1", "--threads", "2"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.starts_with("swarm: 20 schedules, seeds 1 to 20, on 2 thread(s)\n"), "{out}");
    assert!(out.contains("20 schedules, ") && out.contains(": 0 with a violation"), "{out}");
    // Every strategy run is counted on a line of its own.
    let runs: u64 = out
        .lines()
        .filter_map(|l| l.split_once(" run,").map(|(head, _)| head.split_whitespace().last().unwrap().parse::<u64>()))
        .map(Result::unwrap)
        .sum();
    assert_eq!(runs, 20, "{out}");
}

#[test]
fn a_swarm_seed_replays_as_a_scenario_sim_run_takes() {
    let o = vigil(&["sim", "swarm", "--replay", "7", "--events"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("fault 0 (") && out.contains(" starts\n"), "the events: {out}");
    assert!(out.trim_end().ends_with("no violation"), "{out}");
    // The printed scenario runs again with `sim run`, to the same end.
    let toml: String = out.lines().take_while(|l| !l.starts_with("    ")).map(|l| format!("{l}\n")).collect();
    let file = scratch("swarm-replay").join("seed-7.toml");
    std::fs::write(&file, toml).unwrap();
    let run = vigil(&["sim", "run", file.to_str().unwrap(), "--json"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let doc: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(doc["report"]["violations"]["total"], 0);
    assert_eq!(doc["report"]["seed"], 7);
    // A violation exits 1 and says so; none exits 0.
    for seed in ["3", "442"] {
        let o = vigil(&["sim", "swarm", "--replay", seed]);
        let found = String::from_utf8_lossy(&o.stdout).contains(" violations:");
        assert_eq!(o.status.code(), Some(if found { 1 } else { 0 }), "seed {seed}: {}", stderr(&o));
    }
}

#[test]
fn swarm_flags_are_checked_before_anything_runs() {
    for (args, says) in [
        (vec!["--schedules", "0"], "--schedules: 0 is outside 1 to 10000000"),
        (vec!["--schedules", "10000001"], "--schedules: 10000001 is outside 1 to 10000000"),
        (vec!["--seed", "18446744073709551615", "--schedules", "2"], "--seed: 18446744073709551615 leaves no room"),
        (vec!["--threads", "0"], "--threads: 0 is outside 1 to 256"),
        (vec!["--replay", "x"], "invalid value 'x' for '--replay <SEED>'"),
        (vec!["--events"], "--replay"),
        (vec!["--replay", "3", "--schedules", "4"], "cannot be used with"),
    ] {
        let mut all = vec!["sim", "swarm"];
        all.extend(&args);
        let o = vigil(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}: nothing ran");
    }
}
