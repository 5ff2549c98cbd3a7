//! `vigil lab`: scenarios and traces through detectors, with exact QoS.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant as WallClock};

use crate::demo::{DemoOptions, SEED_PHI, run_demo};
use crate::json;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use vigil_detector::MAX_SAMPLE;
use vigil_lab::chen::{ChenError, Network, Requirements, configure, configure_moments};
use vigil_lab::dist::Delay;
use vigil_lab::engine::{evaluate, judge_all};
use vigil_lab::millis::format_millis;
use vigil_lab::millis::quoted;
use vigil_lab::nfds::simulate_nfds;
use vigil_lab::qos::{Qos, Summary};
use vigil_lab::recommend::Recommendation;
use vigil_lab::report::charts::frontier_chart;
use vigil_lab::report::document::Document;
use vigil_lab::report::table::{Table, format_table};
use vigil_lab::scenario::{BUILTIN, Scenario, builtin};
use vigil_lab::spec::DetectorSpec;
use vigil_lab::sweep::{Family, Point, default_families, format_value, frontier, sweep};
use vigil_lab::trace::Trace;

use crate::error::{CheckFailed, UsageError};
use crate::input::{MAX_SCENARIO_BYTES, read_text, shown};
use crate::limits::{check_memory, fixed, memory_budget};
use crate::output::OutputDir;
use crate::report;

/// Arguments of `vigil lab`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub(crate) struct LabArgs {
    #[command(subcommand)]
    command: LabCommand,
}

#[derive(Debug, Subcommand)]
enum LabCommand {
    /// Run a scenario's traces through detectors and print the QoS table.
    Run(RunArgs),
    /// Sweep detector families over parameter grids: the Pareto frontier of
    /// detection time against mistake rate, as a table and a plot.
    Sweep(SweepArgs),
    /// The QoS metrics of detectors on a recorded trace (crash optional).
    Replay(LabReplayArgs),
    /// The fastest detector and setting within a mistake-rate bound.
    Recommend(RecommendArgs),
    /// Chen et al.'s configuration procedure: from QoS requirements and the
    /// network to a heartbeat interval and timeout, checked by simulation.
    Configure(ConfigureArgs),
    /// Seed 001's story end to end, with an HTML report in ./vigil-report/.
    Demo(DemoArgs),
    /// Seed 002's lab in the browser: sliders for the path and both
    /// detectors, recomputed by the engine on every change.
    Serve(ServeArgs),
    /// φ alone, outlier detection alone, and both composed, on fleets whose
    /// hosts crash, fail gray, slow down or brown out (or on a recorded
    /// fleet trace).
    Fleet(crate::fleet::FleetArgs),
}

/// Arguments of `vigil lab serve`.
#[derive(Debug, Args)]
struct ServeArgs {
    /// Where the page listens.
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:8471")]
    http: String,
}

/// Runs `vigil lab serve` until interrupted.
fn serve_cmd(a: &ServeArgs, out: &mut dyn Write) -> Result<()> {
    let addr: std::net::SocketAddr =
        a.http.parse().map_err(|_| UsageError(format!("--http: {} is not an address (IP:PORT)", quoted(&a.http))))?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| UsageError(format!("--http: cannot listen on {addr}: {e}")))?;
        let local = listener.local_addr().context("the listener's address")?;
        writeln!(out, "the lab: http://{local}/lab  (Ctrl-C to stop)")?;
        out.flush()?;
        tokio::select! {
            r = vigil_agent::api::lab::serve(listener) => r.context("serving the lab")?,
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok(())
    })
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
struct Common {
    /// Seed of every random choice (printed on stderr; replay a run with it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Heartbeats that train a detector before judging starts.
    #[arg(long, default_value_t = 1, value_name = "N")]
    warmup: usize,
    /// The most memory the run may take, in GB (default: 80 % of this
    /// machine's memory). A run whose estimate is larger is refused before
    /// anything is generated.
    #[arg(long, value_name = "GB")]
    max_memory_gb: Option<f64>,
    /// Also write a self-contained HTML report (tables and figures) into
    /// this directory, as `vigil lab demo` does.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
}

impl Common {
    /// The report directory, checked before any work starts.
    fn report_dir(&self) -> Result<Option<OutputDir>> {
        self.report.as_deref().map(|dir| OutputDir::prepare(dir, "--report")).transpose()
    }
}

/// Writes a command's report and says where.
fn finish_report(dir: Option<&OutputDir>, doc: &Document) -> Result<()> {
    if let Some(dir) = dir {
        let page = report::write(dir, doc)?;
        say!("report: {}", page.display());
    }
    Ok(())
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
struct RunArgs {
    /// A built-in scenario name, or a scenario TOML file (`-` for stdin).
    scenario: String,
    /// Traces to generate (default: the scenario's).
    #[arg(long, value_name = "N")]
    traces: Option<usize>,
    /// A detector spec, e.g. `akka:threshold=8,min-std-ms=100`; repeat for
    /// more. Default: one of each model.
    #[arg(long = "detector", value_name = "SPEC")]
    detectors: Vec<String>,
    /// Write the generated traces here as CSV (one file per trace).
    #[arg(long, value_name = "DIR")]
    save_traces: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
struct SweepArgs {
    /// A built-in scenario, a scenario TOML file, or a trace (CSV or JSONL).
    source: String,
    /// Traces to generate for a scenario (default: the scenario's).
    #[arg(long, value_name = "N")]
    traces: Option<usize>,
    /// A family: `SPEC@PARAM=V1,V2,...` (e.g. `fixed@timeout-ms=150,250,400`),
    /// optionally named `NAME=SPEC@...`; repeat for more. Default: every
    /// model's main knob.
    #[arg(long = "family", value_name = "FAMILY")]
    families: Vec<String>,
    /// Directory for the plot.
    #[arg(long, default_value = "vigil-report", value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
struct LabReplayArgs {
    /// A trace file (CSV or JSON lines; see the trace format in the docs).
    trace: PathBuf,
    /// A detector spec; repeat for more. Default: one of each model.
    #[arg(long = "detector", value_name = "SPEC")]
    detectors: Vec<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
struct RecommendArgs {
    /// A trace, a built-in scenario, or a scenario TOML file.
    source: String,
    /// The largest acceptable rate of false suspicions, per hour.
    #[arg(long, value_name = "X")]
    max_mistakes_per_hour: f64,
    /// Traces to generate for a scenario (default: the scenario's).
    #[arg(long, value_name = "N")]
    traces: Option<usize>,
    /// Families to choose from (as for `sweep`). Default: every model's main
    /// knob.
    #[arg(long = "family", value_name = "FAMILY")]
    families: Vec<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
struct ConfigureArgs {
    /// Upper bound on detection time T_D^U (e.g. `30s`, `2500ms`).
    #[arg(long, value_name = "DURATION")]
    max_detection: String,
    /// Lower bound on the mean time between mistakes T_MR^L (e.g. `30d`).
    #[arg(long, value_name = "DURATION")]
    min_recurrence: String,
    /// Upper bound on the mean mistake duration T_M^U (e.g. `60s`).
    #[arg(long, value_name = "DURATION")]
    max_mistake_duration: String,
    /// Probability that a heartbeat is lost.
    #[arg(long, default_value_t = 0.0, value_name = "P")]
    loss: f64,
    /// The delay distribution, e.g. `exp:mean=20` (ms); see the docs for the
    /// families. Or give --delay-mean-ms and --delay-var-ms2 for the
    /// distribution-free procedure.
    #[arg(long, value_name = "DIST", conflicts_with_all = ["delay_mean_ms", "delay_var_ms2"])]
    delay: Option<String>,
    /// Mean delay, ms (distribution-free procedure).
    #[arg(long, value_name = "MS", requires = "delay_var_ms2")]
    delay_mean_ms: Option<f64>,
    /// Delay variance, ms² (distribution-free procedure).
    #[arg(long, value_name = "MS2", requires = "delay_mean_ms")]
    delay_var_ms2: Option<f64>,
    /// Heartbeats to simulate for the check (0: no simulation; at most
    /// 50,000,000).
    #[arg(long, default_value_t = 1_000_000, value_name = "N")]
    simulate: u64,
    /// Seed of the simulation.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
struct DemoArgs {
    /// Where to write the report.
    #[arg(long, default_value = "vigil-report", value_name = "DIR")]
    out: PathBuf,
    /// Traces per scenario.
    #[arg(long, default_value_t = 200, value_name = "N")]
    traces: usize,
    /// Seed of every generated trace.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the tables as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The most memory the run may take, in GB (default: 80 % of this
    /// machine's memory).
    #[arg(long, value_name = "GB")]
    max_memory_gb: Option<f64>,
}

pub(crate) fn run(args: &LabArgs, out: &mut dyn Write) -> Result<()> {
    match &args.command {
        LabCommand::Run(a) => run_cmd(a, out),
        LabCommand::Sweep(a) => sweep_cmd(a, out),
        LabCommand::Replay(a) => replay_cmd(a, out),
        LabCommand::Recommend(a) => recommend_cmd(a, out),
        LabCommand::Configure(a) => configure_cmd(a, out),
        LabCommand::Demo(a) => demo_cmd(a, out),
        LabCommand::Serve(a) => serve_cmd(a, out),
        LabCommand::Fleet(a) => crate::fleet::run_cmd(a, out),
    }
}

/// Where heartbeats come from: a scenario to generate, or a recorded trace.
enum Source {
    Scenario(Scenario),
    Trace(String, Trace),
}

/// Whether `name` is written like a trace file (rather than a scenario).
fn looks_like_trace(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "csv" || e == "jsonl" || e == "json")
}

fn load_scenario(name: &str) -> Result<Scenario> {
    let path = Path::new(name);
    if looks_like_trace(path) {
        return Err(UsageError(format!(
            "{name}: a trace, where this command takes a scenario (a built-in name or a TOML file); `lab replay`, \
             `lab sweep` and `lab recommend` read traces"
        ))
        .into());
    }
    if name == "-" || path.extension().is_some_and(|e| e == "toml") || (path.exists() && !BUILTIN.contains(&name)) {
        let text = read_text(path, "scenario", MAX_SCENARIO_BYTES, "")?;
        return Scenario::from_toml(&text).with_context(|| format!("in {}", shown(path)));
    }
    builtin(name).map_err(|e| {
        // A name with a path separator was meant as a file.
        if name.contains('/') {
            UsageError(format!("{name}: no such file (and not a built-in scenario)")).into()
        } else {
            UsageError(e.to_string()).into()
        }
    })
}

/// How a trace is named in output: its path, or `stdin` for `-`.
fn trace_name(path: &Path) -> String {
    shown(path)
}

/// The largest trace the lab reads, in bytes (about 25 million heartbeats):
/// the lab holds a trace in memory to judge it (`vigil replay` streams).
const MAX_TRACE_BYTES: u64 = 512 * 1024 * 1024;

/// Reads a trace from a file, or from stdin for `-`, refusing one larger
/// than [`MAX_TRACE_BYTES`] before holding it.
fn load_trace(path: &Path) -> Result<Trace> {
    let text = read_text(path, "trace", MAX_TRACE_BYTES, "; `vigil replay` streams traces of any length")?;
    Trace::parse(&text).map_err(|e| UsageError(format!("{}: {e}", trace_name(path))).into())
}

fn load_source(name: &str) -> Result<Source> {
    let path = Path::new(name);
    let is_trace =
        name == "-" || looks_like_trace(path) || (path.exists() && path.extension().is_none_or(|e| e != "toml"));
    if is_trace && !BUILTIN.contains(&name) {
        return Ok(Source::Trace(trace_name(path), load_trace(path)?));
    }
    load_scenario(name).map(Source::Scenario)
}

fn bar(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(what.to_string());
    pb
}

/// Memory a generated heartbeat takes through `lab run`: the trace itself
/// and what judging it holds (measured at 44 to 94 bytes; counted as 100).
const BYTES_PER_HEARTBEAT: u64 = 100;

/// Memory a heartbeat takes through a sweep (`sweep`, `recommend`,
/// `demo`), which judges every trace with every family's settings: about
/// 920 bytes measured (1.84 GB for 2 million heartbeats), counted as 1,000.
const BYTES_PER_SWEPT_HEARTBEAT: u64 = 1_000;

/// Generates the traces of a scenario, after checking the count and the
/// memory they need against the budget.
fn generate(s: &Scenario, common: &Common, traces: Option<usize>, bytes_per_heartbeat: u64) -> Result<Vec<Trace>> {
    let n = traces.unwrap_or(s.traces);
    if n == 0 {
        return Err(UsageError("--traces: 0; at least 1 trace is needed".into()).into());
    }
    if common.warmup as u64 >= s.beats() {
        return Err(UsageError(format!(
            "--warmup {}: scenario {} sends only {} heartbeats a trace; the warm-up must leave some to judge",
            common.warmup,
            s.name,
            s.beats()
        ))
        .into());
    }
    let total = n as u128 * u128::from(s.beats());
    let what = format!("{n} traces of {} heartbeats ({total} heartbeats)", s.beats());
    check_memory(
        total * u128::from(bytes_per_heartbeat),
        memory_budget(common.max_memory_gb)?,
        &what,
        "use fewer --traces",
    )?;
    let seed = common.seed;
    say!("scenario {}: {n} traces, seed {seed} (replay with --seed {seed})", s.name);
    Ok(s.generate(seed, n))
}

/// Every trace must have a heartbeat to judge after the warm-up (and two to
/// measure anything at all): otherwise the rates are not numbers.
fn check_traces(name: &str, traces: &[Trace], warmup: usize) -> Result<()> {
    let Some(shortest) = traces.iter().map(|t| t.beats.len()).min() else {
        return Err(UsageError(format!("{name}: no traces")).into());
    };
    if shortest < 2 {
        return Err(UsageError(format!(
            "{name}: a trace with {shortest} heartbeat(s); at least 2 are needed to measure anything"
        ))
        .into());
    }
    // Rates are per hour alive: a trace must be alive for some time after
    // its first heartbeat.
    for t in traces {
        let Some(first) = t.beats.first().map(|b| b.arrival) else { continue };
        let alive_until = t.crash.unwrap_or_else(|| t.observed_until());
        if alive_until <= first {
            let at = format_millis(first);
            return Err(UsageError(match t.crash {
                Some(c) => format!(
                    "{name}: the crash at {} ms is not after the first heartbeat (at {at} ms): no time alive to \
                     measure",
                    format_millis(c)
                ),
                None => format!("{name}: every heartbeat and the end are at {at} ms: no time to measure rates over"),
            })
            .into());
        }
    }
    // Windows hold intervals up to 71.6 minutes; longer ones are recorded as
    // that, which is right for an outage and worth saying.
    let long: usize = traces
        .iter()
        .map(|t| {
            t.beats.windows(2).filter(|w| w[1].arrival.saturating_duration_since(w[0].arrival) > MAX_SAMPLE).count()
        })
        .sum();
    if long > 0 {
        say!(
            "vigil: note: {name}: {long} gap(s) between heartbeats are longer than {} ms; detectors with a window \
             record them as that, the longest a sample holds",
            MAX_SAMPLE.as_millis()
        );
    }
    if warmup >= shortest {
        return Err(UsageError(format!(
            "--warmup {warmup}: {name} has a trace of only {shortest} heartbeats; the warm-up must leave some to judge"
        ))
        .into());
    }
    Ok(())
}

fn fmt_ms(v: f64) -> String {
    fixed(v, 1)
}

fn default_detectors(period_ms: f64) -> Vec<String> {
    let p = format_value(period_ms);
    vec![
        SEED_PHI.to_string(),
        "akka".into(),
        "akka:pause-ms=0".into(),
        "exponential".into(),
        format!("fixed:timeout-ms={}", format_value(2.5 * period_ms)),
        format!("chen:alpha-ms={p}"),
        "bertier".into(),
        format!("2w:alpha-ms={p}"),
        "empirical".into(),
    ]
}

fn parse_specs(texts: &[String], period_ms: f64) -> Result<Vec<DetectorSpec>> {
    if texts.is_empty()
        && !(period_ms.is_finite() && (1.0..=vigil_lab::sweep::MAX_DEFAULT_PERIOD_MS).contains(&period_ms))
    {
        return Err(UsageError(format!(
            "the default detectors are scaled to the heartbeat period, and {} ms is not one they can use (1 ms to 57 \
             min); give the detectors with --detector",
            crate::limits::number(period_ms)
        ))
        .into());
    }
    let texts = if texts.is_empty() { default_detectors(period_ms) } else { texts.to_vec() };
    texts.iter().map(|t| t.parse::<DetectorSpec>().map_err(|e| UsageError(e.to_string()).into())).collect()
}

fn qos_rows(specs: &[DetectorSpec], qos: &[Qos], detection: Option<&[Summary]>) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "detector",
        "episodes",
        "traces with one",
        "at arrivals",
        "λ_M (/h)",
        "T_M mean (ms)",
        "P_A",
        "T_D mean (ms)",
        "T_D p50",
        "T_D p99",
        "T_D max",
        "T_D from due",
        "undetected",
        "mistakes by beat (top 3)",
    ];
    let rows = specs
        .iter()
        .zip(qos)
        .enumerate()
        .map(|(i, (s, q))| {
            let td = detection.map_or(q.detection_ms, |d| d[i]);
            vec![
                s.to_string(),
                q.mistakes.to_string(),
                format!("{}/{}", q.traces_with_mistake, q.traces),
                q.sampled_mistakes.to_string(),
                fixed(q.mistake_rate_per_hour, 1),
                fmt_ms(q.mistake_duration_ms.mean),
                fixed(q.query_accuracy, 6),
                fmt_ms(td.mean),
                fmt_ms(td.p50),
                fmt_ms(td.p99),
                fmt_ms(td.max),
                fmt_ms(q.detection_from_due_ms.mean),
                if detection.is_some() { "—".into() } else { q.undetected.to_string() },
                top_beats(q),
            ]
        })
        .collect();
    (header.iter().map(|h| h.to_string()).collect(), rows)
}

/// The heartbeats at which most mistakes happened: `40×171, 41×9`.
fn top_beats(q: &Qos) -> String {
    let mut beats = q.mistake_beats.clone();
    beats.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let top: Vec<String> = beats.iter().take(3).map(|(b, n)| format!("{b}×{n}")).collect();
    if top.is_empty() { "—".into() } else { top.join(", ") }
}

fn print_table(out: &mut dyn Write, title: &str, header: Vec<String>, rows: Vec<Vec<String>>) -> Result<()> {
    let t = Table { id: String::new(), title: title.to_string(), header, rows };
    write!(out, "{}", format_table(&t))?;
    Ok(())
}

fn run_cmd(a: &RunArgs, out: &mut dyn Write) -> Result<()> {
    let s = load_scenario(&a.scenario)?;
    let specs = parse_specs(&a.detectors, s.period_ms)?;
    let save = a.save_traces.as_deref().map(|dir| OutputDir::prepare(dir, "--save-traces")).transpose()?;
    let report_dir = a.common.report_dir()?;
    let traces = generate(&s, &a.common, a.traces, BYTES_PER_HEARTBEAT)?;
    check_traces(&s.name, &traces, a.common.warmup)?;
    if let Some(dir) = &save {
        // The traces of a run are one set: all of them, or none.
        let name = sanitize(&s.name);
        dir.write_set(traces.iter().enumerate().map(|(i, t)| (format!("{name}-{i:04}.csv"), t.to_csv().into_bytes())))?;
    }
    let pb = bar(traces.len() as u64, "judging");
    let qos = evaluate(&traces, &specs, a.common.warmup, &|| pb.inc(1))?;
    pb.finish_and_clear();
    let title = format!("{}: {} traces, seed {}", s.name, traces.len(), a.common.seed);
    let (header, rows) = qos_rows(&specs, &qos, None);
    if report_dir.is_some() {
        let mut doc = Document::new(&format!("vigil lab run: {}", s.name));
        doc.text(format!(
            "{} {} traces generated with seed {} (replay with `--seed {}`), judged after a warm-up of {} \
             heartbeat(s).",
            s.description,
            traces.len(),
            a.common.seed,
            a.common.seed,
            a.common.warmup
        ));
        doc.heading("Quality of service");
        doc.table("qos", &title, &header.iter().map(String::as_str).collect::<Vec<_>>(), rows.clone());
        doc.heading("Levels");
        report::add_level_figure(&mut doc, &traces[0], &format!("trace 0 of {}", s.name), &specs)?;
        finish_report(report_dir.as_ref(), &doc)?;
    }
    if a.common.json {
        let results = specs
            .iter()
            .zip(&qos)
            .map(|(s, q)| json::DetectorResult { detector: s.to_string(), qos: q.into(), time_to_suspect_ms: None })
            .collect();
        let doc = json::LabRun { scenario: &s.name, seed: a.common.seed, traces: traces.len(), results };
        return json::print(out, "lab run", &doc);
    }
    print_table(out, &title, header, rows)
}

fn families(texts: &[String], period_ms: f64) -> Result<Vec<Family>> {
    if texts.is_empty() {
        return default_families(period_ms).map_err(|e| UsageError(e.to_string()).into());
    }
    texts.iter().map(|t| Family::parse(t).map_err(|e| UsageError(e.to_string()).into())).collect()
}

/// The traces of a source (generated for a scenario), checked against the
/// warm-up.
fn source_traces(source: &Source, common: &Common, traces: Option<usize>) -> Result<(String, Vec<Trace>, f64)> {
    let (name, traces, period) = match source {
        Source::Scenario(s) => (s.name.clone(), generate(s, common, traces, BYTES_PER_SWEPT_HEARTBEAT)?, s.period_ms),
        Source::Trace(name, t) => {
            if let Some(n) = traces {
                return Err(UsageError(format!(
                    "--traces {n}: {name} is a recorded trace; --traces sets how many a scenario generates"
                ))
                .into());
            }
            let heartbeats = t.beats.len() as u64;
            check_memory(
                u128::from(heartbeats) * u128::from(BYTES_PER_SWEPT_HEARTBEAT),
                memory_budget(common.max_memory_gb)?,
                &format!("{name}: {heartbeats} heartbeats swept"),
                "use a shorter trace",
            )?;
            let period = t.period().map_or(1000.0, |p| p.as_secs_f64() * 1e3);
            (name.clone(), vec![t.clone()], period)
        }
    };
    check_traces(&name, &traces, common.warmup)?;
    Ok((name, traces, period))
}

fn run_sweep(traces: &[Trace], fams: &[Family], warmup: usize) -> Result<Vec<Point>> {
    let groups: usize = fams.len();
    let pb = bar(traces.len() as u64, "sweeping");
    pb.set_message(format!("{groups} families"));
    let points = sweep(traces, fams, warmup, &|| pb.inc(1))?;
    pb.finish_and_clear();
    Ok(points)
}

fn sweep_cmd(a: &SweepArgs, out: &mut dyn Write) -> Result<()> {
    let source = load_source(&a.source)?;
    let dir = OutputDir::prepare(&a.out, "--out")?;
    let report_dir = a.common.report_dir()?;
    let (name, traces, period) = source_traces(&source, &a.common, a.traces)?;
    let fams = families(&a.families, period)?;
    let points = run_sweep(&traces, &fams, a.common.warmup)?;
    let front = frontier(&points);
    // The plot.
    let axis = if traces.iter().any(|t| t.crash.is_some()) {
        "mean detection time from the crash (ms)"
    } else {
        "mean time to suspect after a heartbeat (ms)"
    };
    let chart = frontier_chart(&format!("Detection time against mistake rate: {name}"), axis, &points, Some(&front));
    let svg = chart.to_svg();
    let file = dir.write(&format!("sweep-{}.svg", sanitize(&name)), svg.as_bytes())?;
    say!("plot: {}", file.display());
    let (title, header, rows) = sweep_table(&name, &points, &front);
    if report_dir.is_some() {
        let mut doc = Document::new(&format!("vigil lab sweep: {name}"));
        doc.text(format!(
            "{} settings of {} families on {} trace(s) of {name} (seed {}). The frontier holds the settings no \
             other is both faster and more accurate than.",
            points.len(),
            fams.len(),
            traces.len(),
            a.common.seed
        ));
        doc.heading("Frontier");
        doc.figure("frontier.svg", &format!("Detection time against mistake rate, {axis}."), svg);
        doc.heading("Every setting");
        doc.table("points", &title, &header, rows.clone());
        finish_report(report_dir.as_ref(), &doc)?;
    }
    if a.common.json {
        let doc = json::LabSweep {
            source: name.clone(),
            seed: a.common.seed,
            traces: traces.len(),
            points: points.iter().map(Into::into).collect(),
            frontier: front.clone(),
            plot: file.display().to_string(),
        };
        return json::print(out, "lab sweep", &doc);
    }
    print_table(out, &title, header.iter().map(|h| h.to_string()).collect(), rows)
}

/// The table of a sweep's settings: title, header and rows.
fn sweep_table(name: &str, points: &[Point], front: &[usize]) -> (String, [&'static str; 7], Vec<Vec<String>>) {
    let rows = points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            vec![
                if front.contains(&i) { "*".into() } else { String::new() },
                p.family.clone(),
                p.value.clone(),
                fmt_ms(p.detection_ms),
                fixed(p.mistakes_per_hour, 1),
                format!("{}/{}", p.qos.traces_with_mistake, p.qos.traces),
                fixed(p.qos.query_accuracy, 6),
            ]
        })
        .collect();
    let header = ["frontier", "family", "value", "T_D (ms)", "λ_M (/h)", "traces with one", "P_A"];
    (format!("{name}: {} settings, * on the Pareto frontier", points.len()), header, rows)
}

/// A scenario or trace name as a file name: letters, digits and `-`, at
/// most 80 of them (file systems take 255 bytes; the rest of the name and a
/// temporary suffix need room too).
fn sanitize(name: &str) -> String {
    name.chars().take(80).map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

fn replay_cmd(a: &LabReplayArgs, out: &mut dyn Write) -> Result<()> {
    let report_dir = a.common.report_dir()?;
    let trace = load_trace(&a.trace)?;
    let period = trace.period().map_or(1000.0, |p| p.as_secs_f64() * 1e3);
    let specs = parse_specs(&a.detectors, period)?;
    let traces = [trace];
    check_traces(&trace_name(&a.trace).to_string(), &traces, a.common.warmup)?;
    // One pass: the timelines carry the time to suspect after each heartbeat
    // for a trace without a crash.
    let timelines = judge_all(&traces, &specs, a.common.warmup, &|| {})?;
    let qos: Vec<Qos> = timelines.iter().map(Qos::from_timelines).collect();
    let virtual_td: Option<Vec<Summary>> = traces[0]
        .crash
        .is_none()
        .then(|| timelines.iter().map(|t| t[0].time_to_suspect_ms.unwrap_or_else(|| Summary::of(&mut []))).collect());
    let (header, rows) = qos_rows(&specs, &qos, virtual_td.as_deref());
    let title = if virtual_td.is_some() {
        format!("{}: no crash; T_D columns are the time to suspect after each heartbeat", trace_name(&a.trace))
    } else {
        trace_name(&a.trace)
    };
    if report_dir.is_some() {
        let name = trace_name(&a.trace);
        let t = &traces[0];
        let mut doc = Document::new(&format!("vigil lab replay: {name}"));
        doc.text(format!(
            "{} heartbeats{}, judged after a warm-up of {} heartbeat(s).",
            t.beats.len(),
            t.crash.map_or_else(|| ", no crash".to_owned(), |c| format!(", a crash at {} ms", format_millis(c))),
            a.common.warmup
        ));
        doc.heading("Quality of service");
        doc.table("qos", &title, &header.iter().map(String::as_str).collect::<Vec<_>>(), rows.clone());
        doc.heading("Levels");
        report::add_level_figure(&mut doc, t, &name, &specs)?;
        finish_report(report_dir.as_ref(), &doc)?;
    }
    if a.common.json {
        let results = specs
            .iter()
            .zip(&qos)
            .enumerate()
            .map(|(i, (s, q))| json::DetectorResult {
                detector: s.to_string(),
                qos: q.into(),
                time_to_suspect_ms: virtual_td.as_ref().map(|v| (&v[i]).into()),
            })
            .collect();
        return json::print(out, "lab replay", &json::LabReplay { trace: trace_name(&a.trace), results });
    }
    print_table(out, &title, header, rows)
}

fn recommend_cmd(a: &RecommendArgs, out: &mut dyn Write) -> Result<()> {
    let n = crate::limits::number;
    if !(a.max_mistakes_per_hour.is_finite() && a.max_mistakes_per_hour >= 0.0) {
        return Err(UsageError(format!(
            "--max-mistakes-per-hour must be 0 or more, got {}",
            n(a.max_mistakes_per_hour)
        ))
        .into());
    }
    let report_dir = a.common.report_dir()?;
    let source = load_source(&a.source)?;
    let (name, traces, period) = source_traces(&source, &a.common, a.traces)?;
    let fams = families(&a.families, period)?;
    let points = run_sweep(&traces, &fams, a.common.warmup)?;
    let r = Recommendation::choose(&points, &fams, a.max_mistakes_per_hour).map_err(|e| {
        CheckFailed(format!(
            "no setting makes at most {} mistakes per hour on {name}; the fewest is {}",
            n(e.max_mistakes_per_hour),
            e.fewest.map_or("none".into(), |p| format!("{} with {} per hour", p.spec, fixed(p.mistakes_per_hour, 1)))
        ))
    })?;
    let best = &r.best;
    let q = &best.qos;
    let mut lines =
        vec![format!("recommendation for {name} with at most {} mistakes per hour:", n(r.max_mistakes_per_hour))];
    lines.push(format!("  {}", best.spec));
    if q.detection_ms.count > 0 {
        lines.push(format!(
            "  detection: mean {} ms, p99 {} ms from the crash",
            fmt_ms(best.detection_ms),
            fmt_ms(q.detection_ms.p99)
        ));
    } else {
        lines.push(format!(
            "  detection: mean {} ms to suspect after a heartbeat (no crash in the traces)",
            fmt_ms(best.detection_ms)
        ));
    }
    lines.push(format!(
        "  mistakes: {} per hour ({} in {} h observed; {} of {} traces), mean duration {} ms, P_A {}",
        fixed(q.mistake_rate_per_hour, 2),
        q.mistakes,
        fixed(q.alive_hours, 2),
        q.traces_with_mistake,
        q.traces,
        fmt_ms(q.mistake_duration_ms.mean),
        fixed(q.query_accuracy, 6)
    ));
    if let Some(rate) = r.unobserved_rate_bound() {
        lines.push(format!(
            "  note: no mistakes were observed; with {} h observed, a rate up to {} per hour is consistent with \
             that (95%){}",
            fixed(r.observed_hours, 2),
            n((rate * 100.0).round() / 100.0),
            if r.observation_supports_bound() { "" } else { ", above the bound: observe longer to show it is met" }
        ));
    }
    let rows: Vec<Vec<String>> = r
        .best_per_family
        .iter()
        .map(|p| vec![p.family.clone(), p.spec.clone(), fmt_ms(p.detection_ms), fixed(p.mistakes_per_hour, 2)])
        .collect();
    let header = ["family", "setting", "T_D (ms)", "λ_M (/h)"];
    let title = "best setting of each family within the bound";
    if report_dir.is_some() {
        let front = frontier(&points);
        let axis = if traces.iter().any(|t| t.crash.is_some()) {
            "mean detection time from the crash (ms)"
        } else {
            "mean time to suspect after a heartbeat (ms)"
        };
        let chart =
            frontier_chart(&format!("Detection time against mistake rate: {name}"), axis, &points, Some(&front))
                .with_vline(best.detection_ms, "recommended");
        let mut doc = Document::new(&format!("vigil lab recommend: {name}"));
        doc.heading("Recommendation");
        for l in &lines {
            doc.text(l.trim());
        }
        doc.table("best-per-family", title, &header, rows.clone());
        doc.heading("Frontier");
        doc.figure(
            "frontier.svg",
            &format!("Every setting swept, the frontier dashed, the recommendation marked; {axis}."),
            chart.to_svg(),
        );
        finish_report(report_dir.as_ref(), &doc)?;
    }
    if a.common.json {
        let doc = json::LabRecommend {
            source: name.clone(),
            seed: a.common.seed,
            max_mistakes_per_hour: r.max_mistakes_per_hour,
            observed_hours: r.observed_hours.is_finite().then_some(r.observed_hours),
            recommendation: best.into(),
            best_per_family: r.best_per_family.iter().map(Into::into).collect(),
        };
        return json::print(out, "lab recommend", &doc);
    }
    for l in &lines {
        writeln!(out, "{}", vigil_lab::text::escaped(l))?;
    }
    print_table(out, title, header.iter().map(|h| h.to_string()).collect(), rows)
}

/// Parses a duration with a unit: `250ms`, `30s`, `5min`, `2h`, `30d`. A
/// bare number is refused: these flags' names carry no unit (as the flags
/// that take a bare number do: `--timeout-ms`, `--duration SECS`), and a
/// `30` meant as seconds must not be read as 30 ms.
pub(crate) fn human_duration(flag: &str, text: &str) -> Result<f64> {
    let t = text.trim();
    // The unit is the trailing letters; an exponent (`1e4s`) is part of the
    // number.
    let split = t.trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| UsageError(format!("{flag}: {} is not a duration like 250ms, 30s or 30d", quoted(text))))?;
    let scale = match unit.trim() {
        "" => {
            let n = Some(num.trim()).filter(|n| n.len() <= 20).unwrap_or("N");
            return Err(UsageError(format!(
                "{flag}: {} has no unit; write {n}ms, {n}s, {n}min, {n}h or {n}d",
                quoted(text)
            ))
            .into());
        }
        "ms" => 1.0,
        "s" => 1e3,
        "min" | "m" => 60e3,
        "h" => 3.6e6,
        "d" => 86.4e6,
        other => return Err(UsageError(format!("{flag}: unknown unit '{other}' (ms, s, min, h, d)")).into()),
    };
    let ms = v * scale;
    // A year is far beyond any QoS bound this procedure is for, and keeps
    // every derived time representable.
    if !(ms.is_finite() && ms > 0.0 && ms <= 3.156e10) {
        return Err(UsageError(format!("{flag}: {} is outside (0, 1 year]", quoted(text))).into());
    }
    Ok(ms)
}

/// The most heartbeats `configure --simulate` runs: a mistake may be kept
/// for each (about 1.2 GB at this bound if every heartbeat were one).
const MAX_SIMULATED_HEARTBEATS: u64 = 50_000_000;

/// Requirements that cannot be met are a finding (exit status 1); anything
/// else the configurator refuses is the user's input (exit status 2).
/// A configuration error in the words of `lab configure`'s flags.
fn configure_error(e: ChenError) -> anyhow::Error {
    let n = crate::limits::number;
    let message = match &e {
        ChenError::Unachievable { .. } => return CheckFailed(e.to_string()).into(),
        ChenError::Invalid { field, value, expected } => match *field {
            "max_detection_ms" => format!("--max-detection: {} ms must be {expected}", n(*value)),
            "min_recurrence_ms" => format!("--min-recurrence: {} ms must be {expected}", n(*value)),
            "max_mistake_duration_ms" => format!("--max-mistake-duration: {} ms must be {expected}", n(*value)),
            "loss" => format!("--loss: {} must be {expected}", n(*value)),
            "mean_ms" => format!("--delay-mean-ms: {} must be {expected}", n(*value)),
            "variance_ms2" => format!("--delay-var-ms2: {} must be {expected}", n(*value)),
            "heartbeats" => format!("--simulate: {} heartbeats: must be {expected}", n(*value)),
            "eta_ms" | "delta_ms" => format!(
                "the requirements call for {} = {} ms, which must be {expected}: loosen --max-detection or \
                 --max-mistake-duration",
                if *field == "eta_ms" { "a heartbeat interval η" } else { "a freshness shift δ" },
                n(*value)
            ),
            _ => e.to_string(),
        },
        ChenError::Delay(d) => format!("--delay-mean-ms/--delay-var-ms2: no delay distribution has these moments: {d}"),
        _ => e.to_string(),
    };
    UsageError(message).into()
}

fn configure_cmd(a: &ConfigureArgs, out: &mut dyn Write) -> Result<()> {
    let req = Requirements {
        max_detection_ms: human_duration("--max-detection", &a.max_detection)?,
        min_recurrence_ms: human_duration("--min-recurrence", &a.min_recurrence)?,
        max_mistake_duration_ms: human_duration("--max-mistake-duration", &a.max_mistake_duration)?,
    };
    if !(0.0..1.0).contains(&a.loss) {
        return Err(UsageError(format!(
            "--loss must be a probability in [0, 1), got {}",
            crate::limits::number(a.loss)
        ))
        .into());
    }
    let (config, delay) = match (&a.delay, a.delay_mean_ms, a.delay_var_ms2) {
        (Some(d), _, _) => {
            let delay: Delay = d.parse().map_err(|e| UsageError(format!("--delay: {e}")))?;
            let network = Network { loss: a.loss, delay: delay.clone() };
            (configure(&req, &network).map_err(configure_error)?, delay)
        }
        (None, Some(mean), Some(var)) => {
            let c = configure_moments(&req, a.loss, mean, var).map_err(configure_error)?;
            let n = crate::limits::number;
            let delay = Delay::from_moments(mean, var).map_err(|_| {
                UsageError(format!(
                    "--delay-mean-ms {} --delay-var-ms2 {}: the simulation's gamma delay needs shape mean²/variance > 0 \
                     (got {})",
                    n(mean),
                    n(var),
                    n(mean * mean / var)
                ))
            })?;
            (c, delay)
        }
        _ => return Err(UsageError("give --delay DIST, or --delay-mean-ms with --delay-var-ms2".into()).into()),
    };
    let network = Network { loss: a.loss, delay: delay.clone() };
    if a.simulate > MAX_SIMULATED_HEARTBEATS {
        return Err(UsageError(format!(
            "--simulate {}: at most {MAX_SIMULATED_HEARTBEATS} heartbeats (each may leave a mistake to keep in memory)",
            a.simulate
        ))
        .into());
    }
    let sim = if a.simulate > 0 {
        let started = WallClock::now();
        let pb = ProgressBar::new_spinner();
        pb.set_message(format!("simulating {} heartbeats", a.simulate));
        pb.enable_steady_tick(Duration::from_millis(120));
        let timeline = simulate_nfds(config.eta_ms, config.delta_ms, &network, a.simulate, a.seed)
            .map_err(|e| UsageError(e.to_string()))?;
        pb.finish_and_clear();
        say!(
            "simulated {} heartbeats in {:.1} s, seed {} (replay with --seed {})",
            a.simulate,
            started.elapsed().as_secs_f64(),
            a.seed,
            a.seed
        );
        Some(Qos::from_timelines([&timeline]))
    } else {
        None
    };
    if a.json {
        let doc = json::LabConfigure {
            requirements: json::RequirementsOut {
                max_detection_ms: req.max_detection_ms,
                min_recurrence_ms: req.min_recurrence_ms,
                max_mistake_duration_ms: req.max_mistake_duration_ms,
            },
            loss: a.loss,
            delay: &delay,
            eta_ms: config.eta_ms,
            delta_ms: config.delta_ms,
            prediction: (&config.prediction).into(),
            simulated: sim.as_ref().map(Into::into),
            seed: a.seed,
        };
        return json::print(out, "lab configure", &doc);
    }
    let p = &config.prediction;
    writeln!(
        out,
        "Chen et al.'s NFD-S configuration ({})",
        if a.delay.is_some() {
            "known delay distribution"
        } else {
            "distribution-free: Cantelli bound, predictions are guarantees"
        }
    )?;
    writeln!(out, "  network: loss {}, delay {}", crate::limits::number(a.loss), delay.describe())?;
    writeln!(out, "  heartbeat interval η = {} ms", fixed(config.eta_ms, 4))?;
    writeln!(
        out,
        "  freshness shift δ = {} ms (suspect when no heartbeat i has arrived by iη + δ)",
        fixed(config.delta_ms, 4)
    )?;
    // With no mistakes predicted, E(T_MR) is infinite and E(T_M) undefined:
    // said in words, as the simulated column does.
    let no_mistakes = p.p_s == 0.0;
    let rows = vec![
        vec!["T_D upper bound (ms)".into(), fixed(req.max_detection_ms, 1), fixed(p.max_detection_ms, 1), "—".into()],
        vec![
            "E(T_MR) (ms)".into(),
            format!("≥ {}", fixed(req.min_recurrence_ms, 1)),
            if no_mistakes { "∞ (no mistakes)".into() } else { fixed(p.mean_recurrence_ms, 1) },
            sim.as_ref().map_or("—".into(), |q| {
                if q.mistakes == 0 { "no mistakes".into() } else { fixed(q.mean_recurrence_ms, 1) }
            }),
        ],
        vec![
            "E(T_M) (ms)".into(),
            format!("≤ {}", fixed(req.max_mistake_duration_ms, 1)),
            if no_mistakes { "— (no mistakes)".into() } else { fixed(p.mean_mistake_duration_ms, 3) },
            sim.as_ref().map_or("—".into(), |q| fmt_ms(q.mistake_duration_ms.mean)),
        ],
        vec![
            "λ_M (/h)".into(),
            String::new(),
            fixed(p.mistake_rate_per_hour, 6),
            sim.as_ref().map_or("—".into(), |q| {
                format!(
                    "{} ({} mistakes in {} h)",
                    fixed(q.mistake_rate_per_hour, 6),
                    q.mistakes,
                    fixed(q.alive_hours, 1)
                )
            }),
        ],
        vec![
            "P_A".into(),
            String::new(),
            fixed(p.query_accuracy, 9),
            sim.as_ref().map_or("—".into(), |q| fixed(q.query_accuracy, 9)),
        ],
    ];
    print_table(
        out,
        "QoS: required, predicted (analytic), simulated",
        ["metric", "required", "predicted", "simulated"].iter().map(|h| h.to_string()).collect(),
        rows,
    )
}

fn demo_cmd(a: &DemoArgs, out: &mut dyn Write) -> Result<()> {
    if a.traces == 0 {
        return Err(UsageError("--traces: 0; at least 1 trace per scenario is needed".into()).into());
    }
    // The demo keeps the regime-change traces and one other scenario's at a
    // time: count three times the longest scenario's.
    let longest = ["regime-change", "calm", "congested", "noisy", "quiet", "bursty", "very-noisy"]
        .iter()
        .filter_map(|name| builtin(name).ok().map(|s| s.beats()))
        .max()
        .unwrap_or(0);
    let heartbeats = a.traces as u128 * u128::from(longest) * 3;
    check_memory(
        heartbeats * u128::from(BYTES_PER_SWEPT_HEARTBEAT),
        memory_budget(a.max_memory_gb)?,
        &format!("{} traces per scenario", a.traces),
        "use fewer --traces",
    )?;
    let dir = OutputDir::prepare(&a.out, "--out")?;
    say!("vigil lab demo: seed {}, {} traces per scenario (replay with --seed {})", a.seed, a.traces, a.seed);
    let started = WallClock::now();
    let pb = ProgressBar::new_spinner();
    pb.enable_steady_tick(Duration::from_millis(120));
    let demo = run_demo(DemoOptions { seed: a.seed, traces: a.traces }, &|step| pb.set_message(step.to_string()))?;
    pb.finish_and_clear();
    let computed = started.elapsed();
    // The report, its figures and its data are one set: all or none.
    let mut files = vec![("index.html".to_owned(), demo.to_html().into_bytes())];
    files.extend(demo.figures().map(|f| (f.file.clone(), f.svg.clone().into_bytes())));
    let doc = json::to_string("lab demo", &json::LabDemo::from(&demo))?;
    files.push(("demo.json".to_owned(), doc.clone().into_bytes()));
    let index = dir.write_set(files)?.swap_remove(0);
    if a.json {
        writeln!(out, "{doc}")?;
    } else {
        write!(out, "{}", demo.to_text())?;
        writeln!(
            out,
            "\nreport: {} (figures beside it); computed in {} ms",
            vigil_lab::text::escaped(&index.display().to_string()),
            computed.as_millis()
        )?;
    }
    say!("done in {} ms", started.elapsed().as_millis());
    Ok(())
}
