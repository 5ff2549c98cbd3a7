//! Hostile input, as classes, against every command.
//!
//! Each case is a command line (and what it reads on stdin) a careless or
//! hostile user might type, with the exit status it must give and what its
//! message must say. Every case is also held to what holds for all of them:
//! no panic, no line of stderr longer than a screen can show, and, for a
//! refusal, nothing on stdout.
//!
//! The classes: panics; limits checked before the work starts; quadratic
//! inputs; silent nonsense; errors that say what the user typed; pipes and
//! paths. (Half-written output has its own tests in `lab_cli.rs`, with a
//! full disk.)

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn vigil(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the vigil binary runs");
    // vigil may refuse before reading its input: a closed pipe is fine.
    let _ = child.stdin.take().expect("stdin is piped").write_all(stdin);
    child.wait_with_output().expect("vigil exits")
}

fn scratch() -> PathBuf {
    scratch_named("hostile")
}

/// A fresh directory of this test's own (tests run at once).
fn scratch_named(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// What is at `path` (not following a link): "file", "dir", "link",
/// "fifo", "char device", or "nothing".
fn file_type(path: &std::path::Path) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Err(_) => "nothing",
        Ok(m) if m.file_type().is_symlink() => "link",
        Ok(m) if m.file_type().is_fifo() => "fifo",
        Ok(m) if m.file_type().is_char_device() => "char device",
        Ok(m) if m.is_dir() => "dir",
        Ok(m) if m.is_file() => "file",
        Ok(_) => "other",
    }
}

/// A named pipe at `path`, and a reader of it (`cat`, into a file beside
/// it) that has opened it or waits to.
fn fifo_with_reader(path: &std::path::Path) -> (std::process::Child, PathBuf) {
    let made = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
    let read = path.with_extension("read");
    let into = std::fs::File::create(&read).unwrap();
    (Command::new("cat").arg(path).stdout(into).spawn().expect("cat runs"), read)
}

/// What the reader of a pipe read, once it has read to the end; `None` if
/// it still waits 20 s later (nothing opened the pipe: it was replaced), in
/// which case it is stopped.
fn read_by((mut reader, read): (std::process::Child, PathBuf)) -> Option<String> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while reader.try_wait().expect("cat").is_none() {
        if std::time::Instant::now() > until {
            let _ = reader.kill();
            let _ = reader.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::read_to_string(read).ok()
}

/// A lab scenario file with these extra lines and one phase.
fn lab_toml(extra: &str, beats: u64, delay: &str) -> String {
    format!("name = \"h\"\nperiod_ms = 100\n{extra}\n[[phases]]\nbeats = {beats}\ndelay = {delay}\n")
}

struct Case {
    class: &'static str,
    args: Vec<String>,
    stdin: Vec<u8>,
    status: i32,
    says: &'static str,
}

fn case(class: &'static str, args: &[&str], status: i32, says: &'static str) -> Case {
    Case { class, args: args.iter().map(|a| a.to_string()).collect(), stdin: Vec::new(), status, says }
}

fn piped(class: &'static str, args: &[&str], stdin: &[u8], status: i32, says: &'static str) -> Case {
    Case { stdin: stdin.to_vec(), ..case(class, args, status, says) }
}

#[test]
fn every_class_against_every_command() {
    let dir = scratch();
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let dup = file("dup.csv", "0,hb\n0,hb\n1000,hb\n1000,hb\n2000,hb\n2000,hb\n");
    let header = file("header.csv", "time_ms,event\n");
    let end_before_crash = file("end.csv", "0,hb\n100,hb\n200,crash\n150,end\n");
    let sent_late = file("sent.csv", "0,hb\n100,hb,150\n");
    let two = file("two.csv", "0,hb\n1000,hb\n");
    let hb_outcome = file("hb-outcome.csv", "0,a,hb\n1000,a,hb,503\n2000,a,req,200\n");
    let fleet_bom = file("fleet-bom.csv", "\u{feff}time_ms,host,event,outcome\n0,a,hb\n5,a,req,200\n1000,a,hb\n");
    let fleet_quoted = file("fleet-quoted.csv", "0,a,hb\n5,\"a,b\",req,200\n");
    let beats_bom = file("beats-bom.csv", "\u{feff}0,hb\n1000,hb\n2000,hb\n");
    let beats_quoted = file("beats-quoted.csv", "0,hb\n\"1000\",hb\n");
    let big_key = file("big.key", &"0".repeat(100 * 1024));
    // A secret: readable by its owner only, or refused for that first.
    std::fs::set_permissions(&big_key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let huge_jitter = file(
        "jitter.toml",
        &lab_toml("jitter = { kind = \"uniform\", ms = 1e308 }", 50, "{ kind = \"constant\", ms = 1 }"),
    );
    let long_span = file(
        "span.toml",
        &lab_toml("", 20_000, "{ kind = \"constant\", ms = 1 }").replace("period_ms = 100", "period_ms = 1e9"),
    );
    let absurd_delay = file("delay.toml", &lab_toml("", 50, "{ kind = \"normal\", mean_ms = 1e13, sd_ms = 1 }"));
    let stalls = file(
        "stalls.toml",
        &lab_toml(
            "receiver_stalls = { chance = 1, min_ms = 0, max_ms = 1 }",
            50_000,
            "{ kind = \"constant\", ms = 1 }",
        ),
    );
    let sim_base = file("base.toml", "name = \"b\"\nnodes = 5\nduration = 30\n[network]\nbase_ms = 1e300\n");
    let not_text = dir.join("bin.csv");
    std::fs::write(&not_text, b"0,hb\n\xff\xfe\n").unwrap();
    let not_text = not_text.to_str().unwrap().to_owned();
    let big = "9".repeat(100_000);
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let s = |v: &str| v.to_owned();
    let mut cases = vec![
        // Panics, once: now refusals that name what to change.
        case("panic", &["lab", "sweep", &dup, "--out", out], 2, "0 ms is not one they can use"),
        case("panic", &["lab", "recommend", &dup, "--max-mistakes-per-hour", "1"], 2, "--family"),
        case("panic", &["lab", "run", &huge_jitter], 2, "jitter must be 0 to 1e9 ms"),
        case("panic", &["sim", "run", &sim_base], 2, "network.base_ms: 1e300 is outside"),
        case("panic", &["sim", "scale", "--sizes", "10", "--duration", "1e20", "--out", out], 2, "--duration"),
        case("panic", &["replay", "--model", "normal", "--window", "0", "-"], 2, "--window 0: must hold at least one"),
        // Limits, checked before the work starts.
        case("limit", &["lab", "run", "calm", "--traces", "5000000"], 2, "need about 50.0 GB of memory"),
        case("limit", &["lab", "demo", "--traces", "1000000000000", "--out", out], 2, "use fewer --traces"),
        case("limit", &["sim", "run", "--nodes", "100000"], 2, "use fewer nodes"),
        case(
            "limit",
            &["sim", "frontier", "--nodes", "1000", "--threads", "256", "--out", out],
            2,
            "use fewer --threads",
        ),
        case("limit", &["replay", "--model", "empirical", "--window", "16000000", "-"], 2, "at most 65536 samples"),
        case(
            "limit",
            &[
                "lab",
                "configure",
                "--max-detection",
                "30s",
                "--min-recurrence",
                "30d",
                "--max-mistake-duration",
                "60s",
                "--delay",
                "exp:mean=20",
                "--simulate",
                "1e12",
            ],
            2,
            "--simulate",
        ),
        case("limit", &["lab", "run", &long_span], 2, "a trace may span at most 1e12 ms"),
        case("limit", &["lab", "run", &absurd_delay], 2, "would exceed 1e9 ms (11.6 days)"),
        // Quadratic once: a stall at every heartbeat is linear now.
        case("quadratic", &["lab", "run", &stalls, "--traces", "1", "--detector", "fixed"], 0, ""),
        // Silent nonsense: refused, or said.
        case("nonsense", &["lab", "replay", &header], 2, "at least 2 are needed"),
        case("nonsense", &["lab", "replay", &end_before_crash], 2, "end 150 ms is before the crash"),
        case("nonsense", &["lab", "replay", &sent_late], 2, "sent at 150 ms, after it arrived at 100 ms"),
        case("nonsense", &["lab", "replay", &two, "--warmup", "5"], 2, "--warmup 5"),
        case("nonsense", &["lab", "run", "calm", "--traces", "0"], 2, "--traces: 0"),
        case("nonsense", &["lab", "sweep", &two, "--traces", "3", "--out", out], 2, "is a recorded trace"),
        case("nonsense", &["sim", "run", "--duration", "0"], 2, "--duration 0"),
        case("nonsense", &["lab", "fleet", &hb_outcome], 2, "line 2, field outcome: 'hb' takes no outcome (got '503')"),
        case(
            "nonsense",
            &[
                "lab",
                "configure",
                "--max-detection",
                "30",
                "--min-recurrence",
                "30d",
                "--max-mistake-duration",
                "60s",
                "--delay",
                "exp:mean=20",
            ],
            2,
            "--max-detection: '30' has no unit; write 30ms, 30s, 30min, 30h or 30d",
        ),
        case("nonsense", &["sim", "run", "--nodes", "10", "--crash", "12@5"], 2, "node 12 is out of range (0 to 9)"),
        // A byte order mark is skipped; quoted fields are refused as such.
        case("nonsense", &["lab", "fleet", &fleet_bom, "--setup", "none"], 0, ""),
        case("nonsense", &["lab", "replay", &beats_bom, "--detector", "fixed"], 0, ""),
        case("nonsense", &["lab", "fleet", &fleet_quoted], 2, "line 2, field host: quoted fields are not supported"),
        case(
            "nonsense",
            &["lab", "replay", &beats_quoted],
            2,
            "line 2, field time_ms: quoted fields are not supported",
        ),
        case(
            "nonsense",
            &["replay", "--model", "fixed", &beats_quoted],
            2,
            ":2: time_ms: quoted fields are not supported",
        ),
        // Limits print in a unit that shows them.
        case(
            "limit",
            &["keys", "install", "--key-file", &big_key],
            2,
            "larger than 64 KiB, the most read for a key file",
        ),
        case("limit", &["members", "--token-file", &big_key], 2, "larger than 64 KiB, the most read for a token file"),
        // Errors say what the user typed.
        case(
            "typed",
            &["replay", "--model", "normal", "--min-std-ms", "0", "-"],
            2,
            "--min-std-ms 0: must be greater than zero",
        ),
        case(
            "typed",
            &["replay", "--model", "akka", "--threshold", "-inf", "-"],
            2,
            "--threshold: must be a finite number greater than zero (got '-inf')",
        ),
        case(
            "typed",
            &[
                "lab",
                "configure",
                "--max-detection",
                "30s",
                "--min-recurrence",
                "1e301d",
                "--max-mistake-duration",
                "60s",
                "--delay",
                "exp:mean=20",
            ],
            2,
            "--min-recurrence: '1e301d' is outside (0, 1 year]",
        ),
        case(
            "typed",
            &[
                "lab",
                "configure",
                "--max-detection",
                "30s",
                "--min-recurrence",
                "30d",
                "--max-mistake-duration",
                "60s",
                "--delay",
                "exp:mean=-1",
            ],
            2,
            "delay parameter `mean=-1`",
        ),
        case(
            "typed",
            &[
                "lab",
                "configure",
                "--max-detection",
                "30s",
                "--min-recurrence",
                "30d",
                "--max-mistake-duration",
                "60s",
                "--delay-mean-ms",
                "NaN",
                "--delay-var-ms2",
                "1",
            ],
            2,
            "--delay-mean-ms: NaN",
        ),
        case("typed", &["lab", "recommend", "calm", "--max-mistakes-per-hour", "-1e300"], 2, "got -1e300"),
        case("typed", &["sim", "run", "--block", "3>3@5+10"], 2, "--block 3>3@5+10: to is the same node as from"),
        case(
            "typed",
            &["lab", "run", "calm", "--detector", "akka:window=0"],
            2,
            "window=0: must hold at least one sample",
        ),
        // Enormous values are echoed bounded.
        Case { args: vec![s("lab"), s("run"), big.clone()], ..case("typed", &[], 2, "bytes in all") },
        Case {
            args: vec![s("replay"), s("--model"), s("akka"), s("--window"), big.clone(), s("-")],
            ..case("typed", &[], 2, "(100000 bytes)")
        },
        Case { args: vec![s("sim"), s("run"), s("--crash"), format!("3@{big}")], ..case("typed", &[], 2, "--crash") },
        // Pipes and paths, one behaviour everywhere.
        piped("pipe", &["replay", "--model", "fixed", "-"], b"0,hb\n100,q\n", 0, ""),
        piped("pipe", &["lab", "replay", "-"], b"0,hb\n\xff\n", 2, "stdin:2: not UTF-8 text (byte 1 of the line)"),
        case("path", &["replay", "--model", "fixed", &not_text], 2, ":2: not UTF-8 text (byte 1 of the line)"),
        case("path", &["lab", "replay", &not_text], 2, ":2: not UTF-8 text (byte 1 of the line)"),
        case("path", &["lab", "run", "/no/such/scenario.toml"], 2, "/no/such/scenario.toml"),
        case("path", &["sim", "run", "/no/such/scenario.toml"], 2, "/no/such/scenario.toml"),
        case("path", &["replay", "--model", "akka", "/no/such/trace.csv"], 2, "/no/such/trace.csv"),
        case("path", &["lab", "run", &two], 2, "a trace, where this command takes a scenario"),
        // A run that completes and fails what it checks: status 1.
        case(
            "check",
            &[
                "lab",
                "recommend",
                "calm",
                "--traces",
                "2",
                "--family",
                "fixed@timeout-ms=101,102",
                "--max-mistakes-per-hour",
                "0",
            ],
            1,
            "no setting makes at most 0 mistakes per hour",
        ),
        case(
            "check",
            &[
                "lab",
                "configure",
                "--max-detection",
                "1ms",
                "--min-recurrence",
                "365d",
                "--max-mistake-duration",
                "1ms",
                "--delay",
                "constant:ms=5",
            ],
            1,
            "QoS requirements cannot be met",
        ),
    ];
    // Policies take any seed and a bounded count.
    cases.push(case("limit", &["policies", "--traces", "0"], 2, "--traces"));
    let mut failures = Vec::new();
    for c in &cases {
        let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
        let o = vigil(&args, &c.stdin);
        let err = String::from_utf8_lossy(&o.stderr);
        let shown: Vec<String> =
            args.iter().map(|a| if a.len() > 60 { format!("<{} bytes>", a.len()) } else { a.to_string() }).collect();
        let mut wrong = Vec::new();
        if o.status.code() != Some(c.status) {
            wrong.push(format!("status {:?}, want {}", o.status.code(), c.status));
        }
        if err.contains("panicked") {
            wrong.push("panicked".into());
        }
        if !err.contains(c.says) {
            wrong.push(format!("stderr does not say {:?}", c.says));
        }
        if let Some(line) = err.lines().find(|l| l.chars().count() > 400) {
            wrong.push(format!("a stderr line of {} characters", line.chars().count()));
        }
        // `vigil replay` streams: rows before a bad line are its contract.
        if c.status == 2 && args[0] != "replay" && !o.stdout.is_empty() {
            wrong.push("a refusal printed on stdout".into());
        }
        if !wrong.is_empty() {
            let head: String = err.chars().take(300).collect();
            failures.push(format!("[{}] vigil {}: {}\n    stderr: {head}", c.class, shown.join(" "), wrong.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert!(!std::path::Path::new(out).exists(), "no refused command left its output directory behind");
}

/// Paths that are not regular files: a pipe or a character device is
/// written into, never replaced; a link is followed, and one that names
/// nothing is refused; a regular file is still replaced whole. The same
/// for every command that writes a file: one file (`--write-trace`, the
/// plots), or a set (`--report`, `--save-traces`, the demo's report).
#[test]
fn output_paths_that_are_not_regular_files_are_written_into_or_refused() {
    let dir = scratch_named("hostile-paths");
    let p = |name: &str| dir.join(name);
    let s = |path: &PathBuf| path.to_str().unwrap().to_owned();

    // A pipe: the trace goes into it, and it stays a pipe.
    let fifo = p("trace.fifo");
    let reader = fifo_with_reader(&fifo);
    let o = vigil(&["lab", "fleet", "crash", "--setup", "none", "--write-trace", &s(&fifo)], b"");
    let read = read_by(reader);
    assert_eq!(file_type(&fifo), "fifo", "the pipe is not replaced: {}", stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(read.as_deref().is_some_and(|t| t.starts_with("time_ms,host,event")), "the reader got the trace");

    // A link that names nothing: refused, named, left as it is.
    let dangling = p("dangling.csv");
    std::os::unix::fs::symlink(p("nowhere/trace.csv"), &dangling).unwrap();
    let o = vigil(&["lab", "fleet", "crash", "--setup", "none", "--write-trace", &s(&dangling)], b"");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("{}: a symbolic link to", s(&dangling))), "{}", stderr(&o));
    assert!(stderr(&o).contains("which does not exist"), "{}", stderr(&o));
    assert_eq!(file_type(&dangling), "link");
    assert_eq!(file_type(&p("nowhere")), "nothing");

    // A link to a regular file: the file is replaced whole, the link stays.
    let real = p("real.csv");
    std::fs::write(&real, "old").unwrap();
    let link = p("link.csv");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = vigil(&["lab", "fleet", "crash", "--setup", "none", "--write-trace", &s(&link)], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(file_type(&link), "link");
    assert!(std::fs::read_to_string(&real).unwrap().starts_with("time_ms,host,event"));

    // A link to a full device: the device's error, naming the path, status
    // 2; the link stays.
    let full = p("full.csv");
    std::os::unix::fs::symlink("/dev/full", &full).unwrap();
    let o = vigil(&["lab", "fleet", "crash", "--setup", "none", "--write-trace", &s(&full)], b"");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains(&format!("writing {} (a link to /dev/full): No space left on device", s(&full))), "{e}");
    assert_eq!(file_type(&full), "link");

    // A plot (one file in a directory): into a pipe.
    let plots = p("plots");
    std::fs::create_dir(&plots).unwrap();
    let reader = fifo_with_reader(&plots.join("sim-scale.svg"));
    let o = vigil(&["sim", "scale", "--sizes", "10", "--duration", "60", "--out", &s(&plots)], b"");
    let read = read_by(reader);
    assert_eq!(file_type(&plots.join("sim-scale.svg")), "fifo", "{}", stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(read.as_deref().is_some_and(|t| t.contains("<svg")), "the reader got the plot");

    // A set (saved traces): one of them a pipe, the others regular files.
    let saved = p("saved");
    std::fs::create_dir(&saved).unwrap();
    let reader = fifo_with_reader(&saved.join("calm-0001.csv"));
    let o = vigil(&["lab", "run", "calm", "--traces", "2", "--detector", "fixed", "--save-traces", &s(&saved)], b"");
    let read = read_by(reader);
    assert_eq!(file_type(&saved.join("calm-0001.csv")), "fifo", "{}", stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(read.as_deref().is_some_and(|t| t.contains(",hb")), "the reader got the trace");
    assert_eq!(file_type(&saved.join("calm-0000.csv")), "file");

    // A set with a link that names nothing: refused before any file of it
    // is placed.
    for (args, name) in [
        (vec!["lab", "demo", "--traces", "2", "--out"], "demo.json"),
        (vec!["lab", "run", "calm", "--traces", "2", "--detector", "fixed", "--report"], "levels.svg"),
    ] {
        let out = p(&format!("set-{name}"));
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(p("nowhere/x"), out.join(name)).unwrap();
        let mut args = args.clone();
        let out_s = s(&out);
        args.push(&out_s);
        let o = vigil(&args, b"");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("which does not exist"), "{args:?}: {}", stderr(&o));
        let left: Vec<String> =
            std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(left, [name], "{args:?}: nothing of the set is placed");
        assert_eq!(file_type(&out.join(name)), "link");
    }

    // A character device named directly: written into, still a device.
    let o = vigil(&["lab", "fleet", "crash", "--setup", "none", "--write-trace", "/dev/null"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(file_type(std::path::Path::new("/dev/null")), "char device");
    let o = vigil(&["lab", "fleet", "crash", "--setup", "none", "--write-trace", "/dev/full"], b"");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("writing /dev/full: No space left on device"), "{}", stderr(&o));
    assert_eq!(file_type(std::path::Path::new("/dev/full")), "char device");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Which end of vigil's output has nobody reading it.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Closed {
    Stdout,
    Stderr,
}

/// vigil with standard output or standard error a pipe whose read end is
/// closed before vigil starts: every write to it fails (a broken pipe).
fn with_closed(closed: Closed, args: &[&str]) -> Output {
    let (read, write) = std::io::pipe().expect("a pipe");
    drop(read);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
    cmd.args(args).stdin(Stdio::null());
    match closed {
        Closed::Stdout => cmd.stdout(write).stderr(Stdio::piped()),
        Closed::Stderr => cmd.stdout(Stdio::piped()).stderr(write),
    };
    cmd.output().expect("vigil runs")
}

/// A closed standard error loses the notes and nothing else: no panic, the
/// same output and status. A closed standard output is a reader that has
/// taken what it wanted: status 0, no message; but never hiding a failed
/// check (status 1).
#[test]
fn closed_pipes_never_panic_and_keep_the_status() {
    let dir = scratch_named("hostile-pipes");
    let trace = dir.join("backwards.csv");
    // A heartbeat that goes back, one at the same time as the one before
    // and a long gap: every note `vigil replay` prints.
    std::fs::write(&trace, "0,hb\n100,hb\n50,hb\n100,hb\n5000000,hb\n5000001,q\n").unwrap();
    let trace = trace.to_str().unwrap();
    let out = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let (demo, sweep, scale) = (out("demo"), out("sweep"), out("scale"));
    let configure = [
        "lab",
        "configure",
        "--max-detection",
        "30s",
        "--min-recurrence",
        "30d",
        "--max-mistake-duration",
        "60s",
        "--delay",
        "exp:mean=20",
        "--simulate",
        "1000",
    ];
    // A checker violation, with more output than a buffer holds (a pause
    // reported during and after, sixty times).
    let pauses: Vec<String> = (1..=60).map(|i| format!("{}@{}+0.1", i % 9 + 4, i % 15 + 1)).collect();
    let mut violation = vec!["sim", "run", "--nodes", "20", "--duration", "20", "--crash", "3@5"];
    violation.extend(["--detection-bound", "0.5"]);
    for p in &pauses {
        violation.extend(["--pause", p.as_str()]);
    }
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["replay", "--model", "normal", trace], 0, "time_ms,phi,available"),
        (vec!["lab", "run", "calm", "--traces", "2", "--detector", "fixed"], 0, "calm: 2 traces"),
        (vec!["lab", "fleet", "crash", "--setup", "phi"], 0, "stopped routing after"),
        (
            vec!["lab", "sweep", "calm", "--traces", "2", "--family", "fixed@timeout-ms=150,250", "--out", &sweep],
            0,
            "*",
        ),
        (vec!["lab", "demo", "--traces", "2", "--out", &demo], 0, "report: "),
        (configure.to_vec(), 0, "heartbeat interval"),
        (vec!["sim", "run", "--nodes", "10", "--duration", "5"], 0, "false suspicions"),
        (vec!["sim", "scale", "--sizes", "10", "--duration", "60", "--out", &scale], 0, "msgs/member/s"),
        (vec!["policies", "--traces", "2"], 0, "Graded policies"),
        (violation.clone(), 1, "crash of node 3"),
        (vec!["lab", "run", "/no/such/scenario.toml"], 2, ""),
    ];
    let mut failures = Vec::new();
    for (args, status, says) in &cases {
        // Standard error closed: the same status, the whole output.
        let o = with_closed(Closed::Stderr, args);
        let stdout = String::from_utf8_lossy(&o.stdout);
        if o.status.code() != Some(*status) || !stdout.contains(says) {
            failures.push(format!("{args:?}, stderr closed: status {:?}, stdout {:?}", o.status.code(), &stdout));
        }
        // Standard output closed: 0, or the failed check's 1, or the
        // refusal's 2; never a panic, never a message about the pipe.
        let o = with_closed(Closed::Stdout, args);
        let err = stderr(&o);
        if o.status.code() != Some(*status) || err.contains("panicked") || err.contains("standard output") {
            failures.push(format!("{args:?}, stdout closed: status {:?}, stderr {err}", o.status.code()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // A full standard error (`2>/dev/full`): the same.
    for (args, status) in [(&["lab", "run", "calm", "--traces", "2"][..], 0), (&["lab", "run", "/no/such.toml"], 2)] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("Linux has /dev/full");
        let o = Command::new(env!("CARGO_BIN_EXE_vigil")).args(args).stderr(full).output().unwrap();
        assert_eq!(o.status.code(), Some(status), "{args:?}");
    }
    // Closed by the shell (`2>&-`): the same.
    let o = Command::new("sh")
        .args(["-c", &format!("exec {} replay --model normal {trace} 2>&-", env!("CARGO_BIN_EXE_vigil"))])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("5000001,"));
    // A pipe named as the file to write, whose reader leaves early: an
    // error like any other (only standard output's reader may stop vigil
    // quietly).
    let fifo = dir.join("trace.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut head = Command::new("head").args(["-c", "100"]).arg(&fifo).stdout(Stdio::null()).spawn().unwrap();
    let o = vigil(&["lab", "fleet", "crash", "--setup", "none", "--write-trace", fifo.to_str().unwrap()], b"");
    let _ = head.wait();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("writing {}: Broken pipe", fifo.display())), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The parallel pool's size from the environment: a value rayon would
/// ignore without a word, or could not build, is refused before anything
/// runs, named with its value.
#[test]
fn the_thread_count_from_the_environment_is_checked_before_anything_runs() {
    let run = |value: &str, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_vigil"))
            .args(args)
            .env("RAYON_NUM_THREADS", value)
            .env_remove("RAYON_RS_NUM_CPUS")
            .stdin(Stdio::null())
            .output()
            .expect("vigil runs")
    };
    let lab = ["lab", "run", "calm", "--traces", "2", "--detector", "fixed"];
    for value in ["garbage", "-1", "4x", " 4", "1e3", "100000000", "18446744073709551616"] {
        for args in [&lab[..], &["policies", "--traces", "2"]] {
            let o = run(value, args);
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "RAYON_NUM_THREADS={value:?} {args:?}: {e}");
            assert!(e.contains(&format!("RAYON_NUM_THREADS: '{value}' is not a number of threads")), "{e}");
            assert!(o.stdout.is_empty(), "nothing ran");
        }
    }
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(lab)
        .env("RAYON_RS_NUM_CPUS", "-3")
        .env_remove("RAYON_NUM_THREADS")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("RAYON_RS_NUM_CPUS: '-3'"), "{}", stderr(&o));
    // What rayon reads as meant: a count, or 0 and empty for one per core.
    for value in ["2", "0", ""] {
        let o = run(value, &lab);
        assert_eq!(o.status.code(), Some(0), "RAYON_NUM_THREADS={value:?}: {}", stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("calm: 2 traces"));
    }
}

/// A fleet trace that marks two hosts bad is scored for both: their
/// removals are not false ones, the requests that reached them count.
#[test]
fn a_fleet_trace_with_two_bad_hosts_is_scored_for_both() {
    let dir = scratch_named("hostile-fleet");
    let mut text = String::from("time_ms,host,event,outcome,latency_ms\n");
    for s in 0..120u32 {
        for (k, h) in ["a", "b", "c", "d"].iter().enumerate() {
            let t = s * 1000 + k as u32 * 10;
            if s == 60 && k < 2 {
                text.push_str(&format!("{t},{h},bad\n"));
            }
            if s < 60 || k >= 2 {
                text.push_str(&format!("{t},{h},hb\n"));
            }
            let outcome = if s >= 60 && k < 2 { "connect-failed" } else { "200" };
            text.push_str(&format!("{},{h},req,{outcome}\n", t + 5));
        }
    }
    let trace = dir.join("two-bad.csv");
    std::fs::write(&trace, text).unwrap();
    let o = vigil(&["lab", "fleet", trace.to_str().unwrap(), "--setup", "phi", "--setup", "none", "--json"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let (phi, none) = (&v["results"][0], &v["results"][1]);
    assert_eq!(phi["false_removals"], 0, "{phi}");
    assert!(phi["stopped_routing_after_ms"].as_f64().is_some_and(|ms| ms > 0.0 && ms < 10_000.0), "{phi}");
    let sent = phi["requests_to_bad_host"].as_u64().unwrap() + phi["spared"].as_u64().unwrap();
    assert_eq!(sent, 120, "every request to a or b after 60 s, sent or spared: {phi}");
    assert_eq!(none["requests_to_bad_host"], 120, "{none}");
    assert!(none["stopped_routing_after_ms"].is_null(), "{none}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether `text` holds a character a terminal would act on (C0 but the
/// line break, DEL, C1, or one that reorders text).
fn acts_on_terminal(text: &str) -> bool {
    text.chars().any(|c| {
        (c < ' ' && c != '\n')
            || ('\u{7f}'..='\u{9f}').contains(&c)
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    })
}

/// A stand-in for an agent's HTTP API: each request gets the body given
/// for its path (`{}` for any other), then the connection closes.
fn fake_agent(routes: Vec<(&'static str, &'static str, String)>) -> String {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && matches!(s.read(&mut byte), Ok(1)) {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head);
            let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
            let (kind, body) = routes
                .iter()
                .find(|(p, ..)| *p == path)
                .map_or(("application/json", "{}"), |(_, kind, body)| (*kind, body.as_str()));
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

/// The members an agent would answer: one, named `name`, watched with φ
/// and its intervals' mean and σ as given.
fn members_json(name: &str, (phi, mean, std_dev): (f64, f64, f64)) -> String {
    use vigil_agent::api::body::{Member, Members, StatusName, Watched};
    let member = Member {
        name: name.to_owned(),
        generation: 1,
        incarnation: 2,
        status: StatusName::Alive,
        address: format!("10.0.0.1:7946{name}"),
        status_for_ms: 10.0,
        tags: [("role".to_owned(), name.to_owned())].into(),
        watched: Some(Watched {
            model: "akka".into(),
            heard: true,
            phi: Some(phi),
            phi_capped: false,
            heartbeats: 9,
            mean_interval_ms: Some(mean),
            std_dev_ms: Some(std_dev),
            silent_ms: Some(5.0),
            on_ring: true,
            by_app: false,
            policies: Vec::new(),
        }),
        outlier: None,
        unreachable_by: Vec::new(),
        ejected_by: Vec::new(),
    };
    serde_json::to_string(&Members { node: "me".into(), unix_ms: 1, members: vec![member], downing: None }).unwrap()
}

/// This member as an agent would answer, named `name`, with a tag.
fn self_json(name: &str, tag: &str) -> String {
    use vigil_agent::api::body::{Counts, Queues, SelfView};
    serde_json::to_string(&SelfView {
        name: name.to_owned(),
        generation: 1,
        incarnation: 0,
        address: "10.0.0.1:7946".into(),
        tags: [("role".to_owned(), tag.to_owned())].into(),
        sealed: false,
        uptime_ms: 1.0,
        awareness: 0,
        max_awareness: 8,
        members: Counts { alive: 1, suspect: 0, dead: 0, left: 0 },
        watching: Vec::new(),
        queues: Queues { broadcasts: 0, suspicions: 0, probes: 0, relays: 0 },
        recorded_arrivals: 0,
        ready: true,
        not_ready: Vec::new(),
        converged: true,
        not_converged: Vec::new(),
        version: "0".into(),
        event_format: 2,
        detector: "akka".into(),
        suspect_level: 8.0,
        fleet: false,
        downing: None,
        self_downs: 0,
    })
    .unwrap()
}

/// Names from the user or the network (a scenario's, a file's, a trace's
/// host, an agent's members) that hold escape sequences or text-reordering
/// characters are shown as escapes, on stdout and stderr, in tables, notes,
/// errors and JSON: the terminal is never cleared nor retitled.
#[test]
fn names_that_hold_terminal_escapes_are_shown_never_acted_on() {
    let dir = scratch_named("hostile-escapes");
    let hostile = "x\u{1b}[2J\u{1b}]0;pwned\u{7}\u{9b}31m\u{202e}\u{7f}";
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let toml_name = "x\\u001b[2J\\u001b]0;pwned\\u0007\\u009b31m\\u202e\\u007f";
    let lab = file(
        "lab.toml",
        &lab_toml("", 50, "{ kind = \"constant\", ms = 1 }").replace("\"h\"", &format!("\"{toml_name}\"")),
    );
    let sim = file("sim.toml", &format!("name = \"{toml_name}\"\nnodes = 5\nduration = 10\n"));
    let host = file("hosts.csv", &format!("0,{hostile},hb\n"));
    let trace = file(&format!("t{hostile}.csv"), "0,hb\n1000,hb\n2000,hb\n3000,hb\n");
    let mut failures = Vec::new();
    let mut check = |args: Vec<&str>, status: i32, json: bool| {
        let o = vigil(&args, b"");
        let (out, err) = (String::from_utf8_lossy(&o.stdout), stderr(&o));
        let shown = args.iter().map(|a| format!("{:?}", a)).collect::<Vec<_>>().join(" ");
        if o.status.code() != Some(status) {
            failures.push(format!("{shown}: status {:?}: {err}", o.status.code()));
        }
        if acts_on_terminal(&out) || acts_on_terminal(&err) {
            failures.push(format!("{shown}: raw control characters in\n{out:?}\n{err:?}"));
        }
        let escaped_shown = out.contains("\\u{1b}[2J") || err.contains("\\u{1b}[2J");
        if !(escaped_shown || json && out.contains("\\u001b[2J")) {
            failures.push(format!("{shown}: the name is not shown escaped\n{out}\n{err}"));
        }
        // JSON: the same value, its C1 control written as a JSON escape.
        if json && (serde_json::from_str::<serde_json::Value>(&out).is_err() || !out.contains("\\u009b")) {
            failures.push(format!("{shown}: not JSON, or C1 not escaped as JSON: {out}"));
        }
    };
    check(vec!["lab", "run", &lab, "--traces", "2", "--detector", "fixed"], 0, false);
    check(vec!["lab", "run", &lab, "--traces", "2", "--detector", "fixed", "--json"], 0, true);
    check(vec!["sim", "run", &sim], 0, false);
    check(vec!["sim", "run", &sim, "--json"], 0, true);
    check(vec!["lab", "replay", &trace, "--detector", "fixed"], 0, false);
    check(vec!["lab", "fleet", &host], 2, false);
    check(vec!["lab", "run", hostile], 2, false);
    check(vec!["replay", "--model", "normal", "--window", hostile, "-"], 2, false);
    check(vec!["lab", "run", "calm", "--traces", hostile], 2, false);
    check(vec!["lab", "fleet", "--setup", hostile], 2, false);
    // An agent's members, events and keys.
    let agent = fake_agent(vec![
        ("/v1/members", "application/json", members_json(hostile, (1.5, 1000.0, 20.0))),
        ("/v1/self", "application/json", self_json(&format!("me{hostile}"), hostile)),
        (
            "/v1/events",
            "text/event-stream",
            format!(
                "id: 1\ndata: {}\n\n",
                serde_json::json!({"event": "up", "member": hostile, "generation": 1, "addr": "10.0.0.1:7946",
                    "tags": {"role": hostile}, "ts_ms": 1000, "node": "me"})
            ),
        ),
        (
            "/v1/keys",
            "application/json",
            serde_json::json!({"keys": [{"id": hostile, "primary": true, "sealed": 1, "opened": 2}]}).to_string(),
        ),
    ]);
    check(vec!["members", "--http", &agent], 0, false);
    check(vec!["members", "--http", &agent, "--json"], 0, true);
    check(vec!["events", "--http", &agent, "--count", "1"], 0, false);
    check(vec!["events", "--http", &agent, "--count", "1", "--json"], 0, true);
    check(vec!["keys", "list", "--http", &agent], 0, false);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Huge and tiny numbers print in exponent form in tables as in errors: a
/// φ of 1e308 from an agent is not 309 digits, a rate of 3.6e-7 per hour
/// is not `0.0`.
#[test]
fn huge_and_tiny_numbers_print_in_exponent_form_in_tables() {
    let dir = scratch_named("hostile-numbers");
    let agent = fake_agent(vec![
        ("/v1/members", "application/json", members_json("far", (1e308, 1e300, 1e-300))),
        ("/v1/self", "application/json", self_json("me", "")),
    ]);
    let o = vigil(&["members", "--http", &agent], b"");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let far = out.lines().find(|l| l.starts_with("far")).expect("the member's row");
    assert!(far.contains("1.000e308") && far.contains("1.000e300±1.000e-300 ms"), "{far}");
    assert!(far.len() < 120, "{far}");
    // One mistake in 2.8 million hours: 3.6e-7 per hour, and a query
    // accuracy of 2.25e-9 (the trace is all one mistake).
    let mut text: String = (0..=20).map(|i| format!("{},hb\n", i * 1000)).collect();
    text.push_str("10000000000000,hb\n10000000001000,hb\n");
    let trace = dir.join("rare.csv");
    std::fs::write(&trace, text).unwrap();
    let trace = trace.to_str().unwrap();
    for args in [
        vec!["lab", "replay", trace, "--detector", "fixed:timeout-ms=1500"],
        vec!["lab", "recommend", trace, "--max-mistakes-per-hour", "1", "--family", "fixed@timeout-ms=1500,2500"],
    ] {
        let o = vigil(&args, b"");
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(out.contains("3.600e-7"), "{args:?}: the rate is not 0.0:\n{out}");
        assert!(out.contains("2.250e-9"), "{args:?}: P_A is not 0.000000:\n{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
