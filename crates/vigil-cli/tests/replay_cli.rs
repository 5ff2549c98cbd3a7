//! The `vigil replay` contract, tested through the real binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use vigil_detector::{
    Akka, AkkaConfig, Bootstrap, Deadline, DeadlineConfig, Detector, Exponential, ExponentialConfig, Instant, Normal,
    NormalConfig, Prior,
};

fn vigil(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the vigil binary runs");
    // vigil may exit before reading its input (a bad flag): a closed pipe
    // here is not a failure of the test.
    let _ = child.stdin.take().expect("stdin is piped").write_all(stdin.as_bytes());
    child.wait_with_output().expect("vigil exits")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("stderr is UTF-8")
}

/// Rows of the output, each as (time_ms, level, available).
fn rows(o: &Output) -> Vec<(String, f64, bool)> {
    let text = stdout(o);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time_ms,phi,available"), "header");
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 3, "row '{l}'");
            (f[0].to_owned(), f[1].parse().expect("phi parses as f64"), f[2].parse().expect("available is a bool"))
        })
        .collect()
}

/// A trace of regular heartbeats every `period` ms from 0 to `last`, then
/// queries at the given times.
fn trace(period: u64, last: u64, queries: &[u64]) -> String {
    let mut s = String::from("# a regular stream\n\n");
    for t in (0..=last).step_by(period as usize) {
        s.push_str(&format!("{t},hb\n"));
    }
    for q in queries {
        s.push_str(&format!("{q},q\n"));
    }
    s
}

#[test]
fn akka_defaults_match_the_library_bit_for_bit() {
    let input = trace(1000, 10_000, &[10_500, 13_000, 14_000, 14_500, 16_000]);
    let out = vigil(&["replay", "--model", "akka", "-"], &input);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut d = Akka::new(AkkaConfig::default()).unwrap();
    for t in (0..=10_000).step_by(1000) {
        d.heartbeat(Instant::from_millis(t));
    }
    let got = rows(&out);
    assert_eq!(got.len(), 5);
    for ((time, level, available), q) in got.iter().zip([10_500u64, 13_000, 14_000, 14_500, 16_000]) {
        assert_eq!(time, &q.to_string());
        let want = d.level(Instant::from_millis(q));
        // The printed form is Rust's shortest round-trip form: exact.
        assert_eq!(*level, want, "at {q}");
        assert_eq!(*available, want < 8.0);
    }
    // Akka's steady state with σ at the 100 ms floor: φ reaches 8 at
    // 4522.6 ms of silence, so 14.5 s (4.5 s) is available and 16 s is not.
    assert!(got[3].2 && !got[4].2);
}

#[test]
fn every_model_runs_and_agrees_with_the_library() {
    let input = trace(100, 5_000, &[5_050, 5_150, 5_300, 6_000, 9_000]);
    /// Builds the library's level function for the same trace.
    type Reference = Box<dyn Fn() -> Box<dyn Fn(Instant) -> f64>>;
    let cases: Vec<(&[&str], Reference)> = vec![
        (
            &["--model", "normal", "--window", "50", "--min-std-ms", "5", "--pause-ms", "10"],
            Box::new(|| {
                let mut d = Normal::new(NormalConfig {
                    window: 50,
                    min_std_dev: Duration::from_millis(5),
                    acceptable_pause: Duration::from_millis(10),
                    ..NormalConfig::default()
                })
                .unwrap();
                for t in (0..=5_000).step_by(100) {
                    d.heartbeat(Instant::from_millis(t));
                }
                Box::new(move |t| d.level(t))
            }),
        ),
        (
            &["--model", "exponential", "--initial-ms", "none", "--prior-mean-ms", "500", "--prior-weight", "2"],
            Box::new(|| {
                let mut c = ExponentialConfig::cassandra();
                c.bootstrap = Bootstrap::None;
                c.prior = Some(Prior { mean: Duration::from_millis(500), weight: 2.0 });
                let mut d = Exponential::new(c).unwrap();
                for t in (0..=5_000).step_by(100) {
                    d.heartbeat(Instant::from_millis(t));
                }
                Box::new(move |t| d.level(t))
            }),
        ),
        (
            &["--model", "deadline", "--timeout-ms", "150", "--interval-ms", "100"],
            Box::new(|| {
                let mut d = Deadline::new(DeadlineConfig {
                    heartbeat_interval: Duration::from_millis(100),
                    acceptable_pause: Duration::from_millis(150),
                })
                .unwrap();
                d.heartbeat(Instant::from_millis(5_000));
                Box::new(move |t| d.level(t))
            }),
        ),
    ];
    for (flags, build) in cases {
        let mut args = vec!["replay"];
        args.extend_from_slice(flags);
        args.push("-");
        let out = vigil(&args, &input);
        assert!(out.status.success(), "{flags:?}: {}", stderr(&out));
        let level = build();
        for (time, got, _) in rows(&out) {
            let t = Instant::from_millis(time.parse().unwrap());
            assert_eq!(got, level(t), "{flags:?} at {time}");
        }
    }
    // The remaining models: run with their defaults and options, and check
    // the level is finite, non-negative and non-decreasing over the queries.
    for flags in [
        &["--model", "fixed", "--timeout-ms", "250"][..],
        &["--model", "chen", "--alpha-ms", "50", "--window", "10", "--interval-ms", "100"],
        &["--model", "bertier", "--beta", "1", "--phi", "4", "--gamma", "0.1"],
        &["--model", "2w", "--n1", "1", "--n2", "100", "--alpha-ms", "50", "--max-interval-ms", "none"],
        &["--model", "empirical", "--window", "100", "--first-estimate-ms", "100"],
        &["--model", "akka", "--threshold", "12", "--first-estimate-ms", "100", "--pause-ms", "0"],
    ] {
        let mut args = vec!["replay"];
        args.extend_from_slice(flags);
        args.push("-");
        let out = vigil(&args, &input);
        assert!(out.status.success(), "{flags:?}: {}", stderr(&out));
        let r = rows(&out);
        assert_eq!(r.len(), 5, "{flags:?}");
        for w in r.windows(2) {
            assert!(w[0].1.is_finite() && w[0].1 >= 0.0 && w[1].1 >= w[0].1, "{flags:?}: {r:?}");
        }
        // Regular 100 ms heartbeats: every model is calm 50 ms after the last
        // one and suspects after 4 s of silence.
        assert!(r[0].2, "{flags:?}: {r:?}");
        assert!(!r[4].2, "{flags:?}: {r:?}");
    }
}

#[test]
fn fixed_timeout_is_available_until_the_timeout() {
    let input = "0,hb\n100,hb\n349.999999,q\n350,q\n";
    let out = vigil(&["replay", "--model", "fixed", "--timeout-ms", "250", "-"], input);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "time_ms,phi,available\n349.999999,0.999999996,true\n350,1,false\n");
}

#[test]
fn queries_before_any_heartbeat_are_level_zero_and_comments_and_crlf_are_ignored() {
    let input = "# comment\r\n\r\n  5 , q \r\n#0,hb\r\n10,hb\r\n10,q\r\n";
    let out = vigil(&["replay", "--model", "normal", "-"], input);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "time_ms,phi,available\n5,0,true\n10,0,true\n");
}

#[test]
fn bad_lines_stop_with_status_2_naming_the_line_and_print_nothing_after() {
    for (bad, what) in [
        ("abc,hb", "time_ms: 'abc' is not a number of milliseconds"),
        ("-5,hb", "negative"),
        ("5,heartbeat", "event: unknown event 'heartbeat' (expected hb, q, crash or end)"),
        ("5", "expected TIME_MS,EVENT[,SENT_MS[,SEQ]]"),
        ("5,hb,extra", "sent_ms: 'extra' is not a number of milliseconds"),
        ("5,q,1", "sent_ms: 'q' takes no send time or sequence"),
        ("1e999,q", "out of range"),
    ] {
        let input = format!("0,hb\n1000,hb\n1500,q\n{bad}\n2000,q\n");
        let out = vigil(&["replay", "--model", "akka", "-"], &input);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = stderr(&out);
        assert!(err.contains("stdin:4:"), "{bad}: {err}");
        assert!(err.contains(what), "{bad}: {err}");
        // The row before the bad line is printed, the one after is not.
        let text = stdout(&out);
        assert!(text.contains("1500,"), "{bad}: {text}");
        assert!(!text.contains("2000,"), "{bad}: {text}");
    }
}

#[test]
fn a_byte_order_mark_is_ignored() {
    let out = vigil(&["replay", "--model", "fixed", "-"], "\u{feff}0,hb\n500,q\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "time_ms,phi,available\n500,0.5,true\n");
}

#[test]
fn invalid_utf8_is_a_named_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(["replay", "--model", "fixed", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"0,hb\n1\xff,q\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("stdin:2: not UTF-8 text (byte"), "{}", stderr(&out));
}

#[test]
fn options_a_model_does_not_use_are_errors() {
    for (model, flag, value) in [
        ("fixed", "--window", "10"),
        ("akka", "--alpha-ms", "5"),
        ("normal", "--initial-ms", "100"),
        ("exponential", "--min-std-ms", "10"),
        ("chen", "--beta", "1"),
        ("deadline", "--window", "5"),
    ] {
        let out = vigil(&["replay", "--model", model, flag, value, "-"], "0,hb\n");
        assert_eq!(out.status.code(), Some(2), "{model} {flag}");
        let err = stderr(&out);
        assert!(err.contains(&format!("{flag} does not apply to the {model} model")), "{err}");
    }
}

#[test]
fn bad_option_values_are_errors() {
    for args in [
        &["--model", "akka", "--threshold", "-1"][..],
        &["--model", "akka", "--threshold", "NaN"],
        &["--model", "normal", "--window", "0"],
        &["--model", "normal", "--min-std-ms", "0"],
        &["--model", "normal", "--min-std-ms", "abc"],
        &["--model", "bertier", "--gamma", "2"],
        &["--model", "exponential", "--prior-weight", "3"],
        &["--model", "nope"],
    ] {
        let mut full = vec!["replay"];
        full.extend_from_slice(args);
        full.push("-");
        let out = vigil(&full, "0,hb\n");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!stderr(&out).is_empty(), "{args:?}");
        assert!(stdout(&out).is_empty(), "{args:?}: nothing is printed for a bad configuration");
    }
}

#[test]
fn configuration_errors_name_the_flag_as_typed() {
    for (args, message) in [
        (&["--model", "normal", "--min-std-ms", "0"][..], "vigil: --min-std-ms 0: must be greater than zero\n"),
        (&["--model", "akka", "--window", "0"], "vigil: --window 0: must hold at least one sample (got 0)\n"),
        (&["--model", "bertier", "--gamma", "2"], "vigil: --gamma 2: must be in (0, 1] (got 2)\n"),
        (&["--model", "deadline", "--interval-ms", "0"], "vigil: --interval-ms 0: must be greater than zero\n"),
        (
            &["--model", "normal", "--min-std-ms", "1e-7"],
            "vigil: --min-std-ms 1e-7: must be greater than zero (it rounds to 0 ns; the smallest is 0.000001 ms)\n",
        ),
        // The empirical model's sorted copy bounds its window (a heartbeat
        // would otherwise move megabytes).
        (
            &["--model", "empirical", "--window", "16000000"],
            "vigil: --window 16000000: must hold at most 65536 samples (got 16000000)\n",
        ),
        (
            &["--model", "exponential", "--initial-ms", "1e10"],
            "vigil: --initial-ms 1e10: must be at most 4294.967295 s, the longest interval a window holds (got \
             10000000 s)\n",
        ),
    ] {
        let mut full = vec!["replay"];
        full.extend_from_slice(args);
        full.push("-");
        let out = vigil(&full, "0,hb\n");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&out), message, "{args:?}");
    }
}

#[test]
fn intervals_longer_than_a_window_sample_are_reported() {
    // Two-hour heartbeats: each interval is recorded as 71.6 minutes, and
    // the note says so (a model without a window says nothing).
    let input = "0,hb\n7200000,hb\n14400000,hb\n18000000,q\n";
    let out = vigil(&["replay", "--model", "normal", "-"], input);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "2 interval(s) longer than 4294967 ms were recorded as 4294967 ms, the longest a window sample holds \
             (line 2, 3)"
        ),
        "{}",
        stderr(&out)
    );
    let out = vigil(&["replay", "--model", "fixed", "-"], input);
    assert!(out.status.success());
    assert_eq!(stderr(&out), "");
    // Heartbeats at the same instant teach a window model 0 ms intervals:
    // said, with the lines (a timeout model learns nothing from them).
    let input = "0,hb\n0,hb\n0,hb\n100,q\n";
    let out = vigil(&["replay", "--model", "chen", "-"], input);
    assert!(
        stderr(&out).contains("2 heartbeat(s) at the same time as the previous one were recorded as 0 ms intervals"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("(line 2, 3)"), "{}", stderr(&out));
    let out = vigil(&["replay", "--model", "fixed", "-"], input);
    assert_eq!(stderr(&out), "");
    // Intervals under the limit: no note.
    let out = vigil(&["replay", "--model", "normal", "-"], "0,hb\n4294967,hb\n5000000,q\n");
    assert_eq!(stderr(&out), "");
}

#[test]
fn backwards_heartbeats_are_ignored_and_reported() {
    let input = "0,hb\n1000,hb\n500,hb\n2000,hb\n2500,q\n";
    let out = vigil(&["replay", "--model", "fixed", "--timeout-ms", "1000", "-"], input);
    assert!(out.status.success());
    // The heartbeat at 500 is ignored (the last one stays at 1000 ms); the
    // query comes 500 ms after the one at 2000 ms.
    assert_eq!(stdout(&out), "time_ms,phi,available\n2500,0.5,true\n");
    assert!(stderr(&out).contains("1 heartbeat(s) earlier than the previous one were ignored (line 3)"));
}

#[test]
fn a_missing_file_is_named() {
    let out = vigil(&["replay", "--model", "akka", "/nonexistent/trace.csv"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot open trace '/nonexistent/trace.csv'"), "{}", stderr(&out));
}

#[test]
fn help_prints_the_defaults() {
    let out = vigil(&["replay", "--help"], "");
    assert!(out.status.success());
    let text = stdout(&out);
    for needle in ["akka         threshold 8, window 1000, min-std-ms 100, pause-ms 3000", "2w           threshold 1"] {
        assert!(text.contains(needle), "{needle}");
    }
}

#[test]
fn a_negative_number_is_refused_as_the_value_it_is() {
    // Not "unexpected argument '-1'" with advice to write `-- -1` (which
    // would not work): the value is read, and its own check names it.
    let o = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .args(["replay", "--model", "akka", "--threshold", "-1", "-"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("threshold") && e.contains("-1") && !e.contains("-- -1"), "{e}");
}

#[test]
fn a_line_without_end_or_a_huge_field_cannot_fill_memory_or_the_terminal() {
    // 10 MB with no newline: refused at the line bound, not read whole.
    let o = vigil(&["replay", "--model", "akka", "-"], &"1".repeat(10_000_000));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("stdin:1: the line is longer than 4096 bytes"), "{}", stderr(&o));
    // A long field is echoed bounded.
    let o = vigil(&["replay", "--model", "akka", "-"], &format!("0,hb\n{},hb\n", "1".repeat(4000)));
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.len() < 300 && e.contains("(4000 bytes)"), "{} bytes: {e}", e.len());
    let o = vigil(&["replay", "--model", "akka", "-"], &format!("0,{}\n", "h".repeat(4000)));
    assert!(stderr(&o).len() < 300 && stderr(&o).contains("unknown event 'hhhh"), "{}", stderr(&o));
}

#[test]
fn a_lab_trace_is_a_replay_trace() {
    // One grammar: a header, send times and sequence numbers, a crash and an
    // end, JSON lines; replay answers the queries and lets the rest pass.
    let lab = "time_ms,event,sent_ms,seq\n0,hb,0,0\n1000,hb,999,1\n{\"t\": 2000, \"sent\": 1999, \"seq\": 2}\n\
               2500,crash\n3000,q\n{\"t\": 4000, \"event\": \"q\"}\n5000,end\n";
    let plain = "0,hb\n1000,hb\n2000,hb\n3000,q\n4000,q\n";
    let a = vigil(&["replay", "--model", "akka", "-"], lab);
    let b = vigil(&["replay", "--model", "akka", "-"], plain);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(stdout(&a), stdout(&b), "send times, sequences, crash and end change nothing");
    assert_eq!(rows(&a).len(), 2);
}
