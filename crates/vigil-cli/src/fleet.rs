//! `vigil lab fleet`: φ alone, outlier detection alone and the two composed,
//! on fleets whose hosts fail in ways heartbeats see or do not see (built-in
//! scenarios, simulated closed-loop), or on a recorded fleet trace
//! (replayed open-loop).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use vigil_lab::fleet::{FleetResult, FleetScenario, SCENARIOS, SETUPS, Setup, record, replay, run};
use vigil_lab::fleet_trace::FleetTrace;
use vigil_lab::millis::quoted;
use vigil_lab::report::document::Document;
use vigil_lab::report::svg::{Chart, Series, Style};
use vigil_lab::report::table::{Table, format_table};
use vigil_tower::fleet::STACKS;

use crate::error::UsageError;
use crate::input::{read_text, shown};
use crate::limits::fixed;
use crate::output::{OutputDir, write_whole};

/// Arguments of `vigil lab fleet`.
#[derive(Debug, Args)]
pub(crate) struct FleetArgs {
    /// Built-in fleet scenarios (crash, gray, slow, low-traffic-crash,
    /// brownout), `all` (the default), or a fleet trace file (CSV or JSON
    /// lines of `hb`, `req` and `bad` events).
    sources: Vec<String>,
    /// Setups to compare: none, phi, phi-tight, outliers, outliers-eager,
    /// composed (repeatable; default all of these); or a real tower stack
    /// run under the same closed loop: p2c, p2c-accrual, consecutive-eject,
    /// vigil-tower, or `tower` for the four (built-in scenarios only).
    #[arg(long = "setup", value_name = "NAME")]
    setups: Vec<String>,
    /// Seed of every random choice (printed on stderr; replay a run with it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Also write a self-contained HTML report (tables and figures) into
    /// this directory.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// With one built-in scenario: also write the trace a client would have
    /// recorded of it (no detection: every request where it went) to FILE,
    /// as CSV, for `vigil lab fleet FILE`.
    #[arg(long, value_name = "FILE")]
    write_trace: Option<PathBuf>,
}

/// The largest fleet trace read, in bytes.
const MAX_FLEET_TRACE: u64 = 512 * 1024 * 1024;

enum Source {
    Scenario(FleetScenario),
    Trace(String, FleetTrace),
}

/// A setup to run: one of vigil's judges, or a real tower stack.
enum Choice {
    Judge(Box<Setup>),
    Tower(String),
}

#[derive(Serialize)]
struct FleetJson<'a> {
    seed: u64,
    results: &'a [FleetResult],
}

/// "stopped routing to it after X", or "never stopped routing to it".
fn stop(x: Option<f64>) -> String {
    match x {
        Some(_) => format!("stopped routing to it after {}", ms(x)),
        None => "never stopped routing to it".to_owned(),
    }
}

fn ms(x: Option<f64>) -> String {
    x.map_or_else(
        || "never".to_owned(),
        |v| if v >= 10_000.0 { format!("{} s", fixed(v / 1e3, 1)) } else { format!("{} ms", fixed(v, 0)) },
    )
}

/// Runs `vigil lab fleet`.
pub(crate) fn run_cmd(a: &FleetArgs, out: &mut dyn Write) -> Result<()> {
    let report_dir = a.report.as_deref().map(|d| OutputDir::prepare(d, "--report")).transpose()?;
    let setups: Vec<Choice> = if a.setups.is_empty() {
        SETUPS.iter().map(|s| Choice::Judge(Box::new(Setup::builtin(s).expect("built in")))).collect()
    } else {
        let mut chosen = Vec::new();
        for s in &a.setups {
            if let Some(setup) = Setup::builtin(s) {
                chosen.push(Choice::Judge(Box::new(setup)));
            } else if STACKS.contains(&s.as_str()) {
                chosen.push(Choice::Tower(s.clone()));
            } else if s == "tower" {
                chosen.extend(STACKS.iter().map(|t| Choice::Tower((*t).to_owned())));
            } else {
                return Err(UsageError(format!(
                    "--setup: {} is not a setup ({}; tower stacks: {}, or tower for all four)",
                    quoted(s),
                    SETUPS.join(", "),
                    STACKS.join(", ")
                ))
                .into());
            }
        }
        chosen
    };
    let names: Vec<String> = if a.sources.is_empty() { vec!["all".into()] } else { a.sources.clone() };
    let mut sources = Vec::new();
    for n in &names {
        if n == "all" {
            sources.extend(SCENARIOS.iter().map(|s| Source::Scenario(FleetScenario::builtin(s).expect("built in"))));
        } else if let Some(s) = FleetScenario::builtin(n) {
            sources.push(Source::Scenario(s));
        } else if Path::new(n).exists() || n == "-" {
            let text = read_text(Path::new(n), "fleet trace", MAX_FLEET_TRACE, "")?;
            let trace = FleetTrace::parse(&text).map_err(|e| UsageError(format!("{}: {e}", shown(Path::new(n)))))?;
            if trace.events.is_empty() {
                return Err(UsageError(format!("{}: no events", shown(Path::new(n)))).into());
            }
            sources.push(Source::Trace(shown(Path::new(n)), trace));
        } else {
            return Err(UsageError(format!(
                "{}: neither a fleet scenario ({}, all) nor a file",
                quoted(n),
                SCENARIOS.join(", ")
            ))
            .into());
        }
    }
    if let Some(path) = &a.write_trace {
        let [Source::Scenario(s)] = &sources[..] else {
            return Err(UsageError("--write-trace: give exactly one built-in scenario".into()).into());
        };
        let trace = record(s, a.seed).map_err(|e| UsageError(format!("{}: {e}", s.name)))?;
        write_whole(path, trace.to_csv().as_bytes())?;
        say!("trace: {}", path.display());
    }
    say!("seed {}", a.seed);
    if let (Some(Source::Trace(name, _)), Some(Choice::Tower(t))) =
        (sources.iter().find(|s| matches!(s, Source::Trace(..))), setups.iter().find(|c| matches!(c, Choice::Tower(_))))
    {
        return Err(UsageError(format!(
            "--setup {t}: a tower stack routes its own requests, in the closed loop of a built-in scenario; {name} is a recorded trace, whose requests went where they went"
        ))
        .into());
    }
    let mut results = Vec::new();
    for source in &sources {
        for setup in &setups {
            let r = match (source, setup) {
                (Source::Scenario(s), Choice::Judge(setup)) => {
                    run(s, setup, a.seed).map_err(|e| UsageError(format!("setup {}: {e}", setup.name)))?
                }
                (Source::Trace(name, t), Choice::Judge(setup)) => {
                    replay(t, name, setup).map_err(|e| UsageError(format!("setup {}: {e}", setup.name)))?
                }
                (Source::Scenario(s), Choice::Tower(stack)) => {
                    vigil_tower::fleet::run(s, stack, a.seed).map_err(|e| UsageError(format!("setup {stack}: {e}")))?
                }
                (Source::Trace(..), Choice::Tower(_)) => unreachable!("refused above"),
            };
            results.push(r);
        }
    }
    let replayed = sources.iter().any(|s| matches!(s, Source::Trace(..)));
    let table = results_table(&results, replayed);
    if let Some(dir) = &report_dir {
        let doc = report(&sources, &results, &table, a.seed);
        let page = crate::report::write(dir, &doc)?;
        say!("report: {}", page.display());
    }
    if a.json {
        return crate::json::print(out, "lab fleet", &FleetJson { seed: a.seed, results: &results });
    }
    write!(out, "{}", format_table(&table))?;
    for line in findings(&results) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The results as a table; the `spared` column only when a trace was
/// replayed (a closed-loop run spares nothing: the requests went elsewhere).
fn results_table(results: &[FleetResult], replayed: bool) -> Table {
    let rows = results
        .iter()
        .map(|r| {
            let mut row = vec![
                r.scenario.clone(),
                r.setup.clone(),
                ms(r.stopped_routing_after_ms),
                format!("{} ({} bad)", r.requests_to_bad_host, r.bad_requests),
            ];
            if replayed {
                row.push(r.spared.to_string());
            }
            row.extend([r.false_removals.to_string(), r.max_removed_at_once.to_string(), r.requests.to_string()]);
            row
        })
        .collect();
    let mut header = vec!["scenario", "setup", "stopped routing after", "requests to the bad host"];
    if replayed {
        header.push("spared (replay)");
    }
    header.extend(["false removals", "most removed at once", "requests"]);
    Table {
        id: "fleet".into(),
        title: "Each setup on each fleet: how soon it stopped routing to the bad host, what reached it, what it removed wrongly"
            .into(),
        header: header.into_iter().map(str::to_owned).collect(),
        rows,
    }
}

/// What the results show, computed from them (nothing here is asserted
/// ahead of the numbers).
fn findings(results: &[FleetResult]) -> Vec<String> {
    let get = |scenario: &str, setup: &str| results.iter().find(|r| r.scenario == scenario && r.setup == setup);
    let mut out = Vec::new();
    for (scenario, alone) in [
        ("gray", "phi"),
        ("gray", "phi-tight"),
        ("low-traffic-crash", "outliers"),
        ("low-traffic-crash", "outliers-eager"),
    ] {
        if let (Some(a), Some(c)) = (get(scenario, alone), get(scenario, "composed")) {
            out.push(format!(
                "{scenario}: {alone} alone {} ({} requests reached the bad host); composed {} ({}).",
                stop(a.stopped_routing_after_ms),
                a.requests_to_bad_host,
                stop(c.stopped_routing_after_ms),
                c.requests_to_bad_host
            ));
        }
    }
    let false_of = |setup: &str| -> u64 {
        results.iter().filter(|r| r.setup == setup && r.scenario != "brownout").map(|r| r.false_removals).sum()
    };
    let present: Vec<&str> =
        SETUPS.iter().copied().filter(|s| *s != "none" && results.iter().any(|r| r.setup == *s)).collect();
    if !present.is_empty() {
        let parts: Vec<String> = present.iter().map(|s| format!("{s} {}", false_of(s))).collect();
        out.push(format!("false removals of healthy hosts (all scenarios but the brownout): {}.", parts.join(", ")));
    }
    let brownout: Vec<String> = results
        .iter()
        .filter(|r| r.scenario == "brownout" && r.setup != "none")
        .map(|r| format!("{} {}", r.setup, r.max_removed_at_once))
        .collect();
    if !brownout.is_empty() {
        out.push(format!(
            "brownout, most hosts removed at once (outlier detection's cap: 1 of 10): {}.",
            brownout.join(", ")
        ));
    }
    out
}

fn report(sources: &[Source], results: &[FleetResult], table: &Table, seed: u64) -> Document {
    let mut doc = Document::new("vigil lab fleet: φ, outlier detection, and the two composed");
    doc.text(format!(
        "Ten hosts heartbeat every second and answer a client's requests; one of them goes bad at 60 s (or all of them, in \
         the brownout). Each setup decides which hosts the client stops sending requests to: φ ≥ 2 from heartbeats, \
         outlier detection from request outcomes (Envoy's semantics, vigil's preset), or the two composed (φ ≥ 2 or \
         ejected). Healthy hosts fail 0.5 % of requests. Seed {seed}."
    ));
    for line in findings(results) {
        doc.text(line);
    }
    doc.heading("Results");
    doc.table(
        &table.id,
        &table.title,
        &table.header.iter().map(String::as_str).collect::<Vec<_>>(),
        table.rows.clone(),
    );
    doc.heading("Requests that reached the bad host");
    for source in sources {
        let (name, fault_at) = match source {
            Source::Scenario(s) if s.fault != vigil_lab::fleet::Fault::Brownout => {
                (s.name.clone(), Some(s.fault_at_ms))
            }
            Source::Scenario(_) => continue,
            Source::Trace(name, _) => (name.clone(), None),
        };
        let mut chart =
            Chart::new(format!("{name}: requests that reached the bad host"), "time (s)", "requests, cumulative");
        let mine: Vec<&FleetResult> = results.iter().filter(|r| r.scenario == name).collect();
        for (i, r) in mine.iter().enumerate() {
            let points = r.to_bad_host_over_time.iter().map(|&(t, n)| (t / 1e3, n as f64));
            // Every other line dashed, so that lines that coincide still show.
            chart =
                chart.with_series(Series::new(r.setup.clone(), points).with_style(Style::Step).with_dashed(i % 2 == 1));
        }
        // Setups whose lines coincide, said in the caption.
        let mut groups: Vec<Vec<&str>> = Vec::new();
        for r in &mine {
            match groups
                .iter_mut()
                .find(|g| mine.iter().any(|o| o.setup == g[0] && o.to_bad_host_over_time == r.to_bad_host_over_time))
            {
                Some(g) => g.push(&r.setup),
                None => groups.push(vec![&r.setup]),
            }
        }
        let same: Vec<String> = groups.iter().filter(|g| g.len() > 1).map(|g| g.join(" = ")).collect();
        let coincide =
            if same.is_empty() { String::new() } else { format!(" Lines that coincide: {}.", same.join("; ")) };
        if let Some(at) = fault_at {
            chart = chart.with_vline(at / 1e3, "fault");
        }
        let file = format!(
            "fleet-{}.svg",
            name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect::<String>()
        );
        doc.figure(
            &file,
            &format!(
                "{name}: cumulative requests that reached the bad host after the fault, per setup; a flat line is a host no longer routed to.{coincide}"
            ),
            chart.to_svg(),
        );
    }
    doc
}
