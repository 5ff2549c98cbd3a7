//! `vigil sim`: the membership protocol on a simulated cluster.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant as WallClock};

use crate::json;

mod swarm;
use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use vigil_lab::millis::quoted;
use vigil_lab::report::svg::{Chart, Scale, Series, Style};
use vigil_lab::report::table::{Table, format_table};
use vigil_sim::{Action, Fault, Operation, Protocol, Report, Scenario, Sealing, Sim, Timed, frontier};

use crate::error::{CheckFailed, UsageError};
use crate::input::{MAX_SCENARIO_BYTES, read_text, shown};
use crate::limits::{check_memory, fixed, memory_budget, number};
use crate::output::OutputDir;

/// Arguments of `vigil sim`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub(crate) struct SimArgs {
    #[command(subcommand)]
    command: SimCommand,
}

#[derive(Debug, Subcommand)]
enum SimCommand {
    /// Run one scenario (a TOML file, or flags) and print its metrics.
    Run(Box<RunArgs>),
    /// Run a crash at growing cluster sizes: message load, detection and
    /// dissemination time against N, as a table and a plot.
    Scale(ScaleArgs),
    /// Sweep both protocols' main knobs: detection against messages and
    /// bytes per member-second and false suspicions under loss, and for
    /// each classic setting the fastest φ setting on its budget.
    Frontier(FrontierArgs),
    /// Swarm-test downing: many random fault schedules (crashes,
    /// partitions, pauses, flapping links, loss, forged accusations and
    /// moves, an unusable lease, a second process of a member's name) over
    /// every strategy, each from a seed, held to the safety checkers; a
    /// violation prints its seed, and `--replay SEED` runs it again.
    Swarm(swarm::SwarmArgs),
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
struct FrontierArgs {
    /// Cluster size.
    #[arg(long, default_value_t = 100, value_name = "N")]
    nodes: usize,
    /// Seed of the first run (each run's seed is derived from it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Crash runs per setting.
    #[arg(long, default_value_t = 3, value_name = "RUNS")]
    crash_runs: usize,
    /// Virtual seconds of 10 % loss per setting.
    #[arg(long, default_value_t = 600.0, value_name = "SECS")]
    loss_secs: f64,
    /// Worker threads (default: the machine's cores).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Directory for the plot.
    #[arg(long, default_value = "vigil-report", value_name = "DIR")]
    out: PathBuf,
    /// The most memory the sweep may take, in GB (default: 80 % of this
    /// machine's memory). Each thread holds one cluster; the sweep is
    /// refused before it starts if their estimate is larger.
    #[arg(long, value_name = "GB")]
    max_memory_gb: Option<f64>,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SealingArg {
    /// No encryption.
    Plaintext,
    /// Sealed out; sealed or plaintext in.
    Staged,
    /// Sealed out and in.
    Sealed,
}

impl From<SealingArg> for Sealing {
    fn from(s: SealingArg) -> Sealing {
        match s {
            SealingArg::Plaintext => Sealing::Plaintext,
            SealingArg::Staged => Sealing::Staged,
            SealingArg::Sealed => Sealing::Sealed,
        }
    }
}

/// `SECS+SPREAD`: a start and a length, in seconds.
fn span(flag: &str, text: &str) -> Result<(Duration, Duration)> {
    let (at, len) = text
        .split_once('+')
        .ok_or_else(|| UsageError(format!("{flag}: expected SECS+SECONDS, got {}", quoted(text))))?;
    Ok((secs(flag, at)?, secs(flag, len)?))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProtocolArg {
    /// φ-monitored SWIM on memberlist's message budget (`Config::lan`).
    Phi,
    /// φ-monitored SWIM, about twice as fast for about twice the messages
    /// (`Config::lan_fast`).
    PhiFast,
    /// Classic SWIM with memberlist's LAN constants.
    Classic,
}

impl From<ProtocolArg> for Protocol {
    fn from(p: ProtocolArg) -> Protocol {
        match p {
            ProtocolArg::Phi => Protocol::Phi,
            ProtocolArg::PhiFast => Protocol::PhiFast,
            ProtocolArg::Classic => Protocol::Classic,
        }
    }
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
struct RunArgs {
    /// A scenario TOML file (`-` for stdin); flags below override its
    /// fields.
    scenario: Option<PathBuf>,
    /// Cluster size (default 100).
    #[arg(long, value_name = "N")]
    nodes: Option<usize>,
    /// Virtual seconds to simulate (default 60).
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Seed of every random choice (printed; default 1).
    #[arg(long)]
    seed: Option<u64>,
    /// The protocol: φ-monitored SWIM, or classic SWIM with memberlist's
    /// LAN constants.
    #[arg(long, value_enum)]
    protocol: Option<ProtocolArg>,
    /// Loss probability on every link, throughout.
    #[arg(long, value_name = "P")]
    loss: Option<f64>,
    /// Stream messages skip opening their connections: a stream gets
    /// through as its data alone would (optimistic under loss). By
    /// default a SYN and its SYN-ACK must get through first, two tries a
    /// second apart, as TCP's do.
    #[arg(long)]
    no_connections: bool,
    /// Every crash must be detected by every survivor within this many
    /// seconds, or the checker reports a violation (default 30).
    #[arg(long, value_name = "SECS")]
    detection_bound: Option<f64>,
    /// Every partition must converge within this many seconds of its end
    /// (every live node sees every other alive), or the checker reports a
    /// violation (default 60).
    #[arg(long, value_name = "SECS")]
    heal_bound: Option<f64>,
    /// Crash a node: `NODE@SECS` (repeatable).
    #[arg(long, value_name = "NODE@SECS", allow_hyphen_values = true)]
    crash: Vec<String>,
    /// Restart a crashed node with a new generation: `NODE@SECS`.
    #[arg(long, value_name = "NODE@SECS", allow_hyphen_values = true)]
    restart: Vec<String>,
    /// Pause a node: `NODE@SECS+DURATION`.
    #[arg(long, value_name = "NODE@SECS+DUR", allow_hyphen_values = true)]
    pause: Vec<String>,
    /// Who survives a partition: auto (each side declares the other dead),
    /// keep-majority, static-quorum:size=N, keep-oldest[:down-if-alone],
    /// keep-referee:address=IP:PORT, lease-majority (a lease every node
    /// reaches) or down-all.
    #[arg(long, value_name = "STRATEGY")]
    downing: Option<String>,
    /// Seconds of calm before the downing strategy decides (default 20).
    #[arg(long, value_name = "SECS")]
    stable_after: Option<f64>,
    /// Split the cluster at node SPLIT: `SPLIT@SECS+DURATION`.
    #[arg(long, value_name = "SPLIT@SECS+DUR", allow_hyphen_values = true)]
    partition: Vec<String>,
    /// Drop datagrams from A to B: `A>B@SECS+DURATION`.
    #[arg(long, value_name = "A>B@SECS+DUR", allow_hyphen_values = true)]
    block: Vec<String>,
    /// Degrade the whole network: every link's latency becomes BASE_MS plus
    /// an exponential jitter of mean JITTER_MS, from SECS for DURATION:
    /// `BASE_MS,JITTER_MS@SECS+DURATION`.
    #[arg(long, value_name = "BASE,JITTER@SECS+DUR", allow_hyphen_values = true)]
    degrade: Vec<String>,
    /// Seal every packet (AES-256-GCM, replay window): plaintext,
    /// staged or sealed (default plaintext).
    #[arg(long, value_enum)]
    sealing: Option<SealingArg>,
    /// A rolling key rotation: install, use, remove the old key, each step
    /// spread over SPREAD seconds from SECS: `SECS+SPREAD`.
    #[arg(long, value_name = "SECS+SPREAD", allow_hyphen_values = true)]
    rotate_key: Vec<String>,
    /// Turn encryption on in the running cluster: take the key, go staged,
    /// go sealed, each step spread over SPREAD seconds: `SECS+SPREAD`.
    #[arg(long, value_name = "SECS+SPREAD", allow_hyphen_values = true)]
    enable_sealing: Vec<String>,
    /// An attacker captures every datagram for DURATION seconds from SECS
    /// and sends each again DURATION later: `SECS+DURATION`.
    #[arg(long, value_name = "SECS+DUR", allow_hyphen_values = true)]
    replay: Vec<String>,
    /// The most memory the run may take, in GB (default: 80 % of this
    /// machine's memory). The run is refused before it starts if its
    /// estimate is larger.
    #[arg(long, value_name = "GB")]
    max_memory_gb: Option<f64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
struct ScaleArgs {
    /// Cluster sizes.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000")]
    sizes: Vec<usize>,
    /// Virtual seconds per run (a crash happens at 30 s).
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    duration: f64,
    /// The protocol.
    #[arg(long, value_enum, default_value = "phi")]
    protocol: ProtocolArg,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Directory for the plot.
    #[arg(long, default_value = "vigil-report", value_name = "DIR")]
    out: PathBuf,
    /// The most memory one run may take, in GB (default: 80 % of this
    /// machine's memory). Sizes whose estimate is larger are refused before
    /// anything runs.
    #[arg(long, value_name = "GB")]
    max_memory_gb: Option<f64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &SimArgs, out: &mut dyn Write) -> Result<()> {
    match &args.command {
        SimCommand::Run(a) => run_cmd(a, out),
        SimCommand::Scale(a) => scale_cmd(a, out),
        SimCommand::Frontier(a) => frontier_cmd(a, out),
        SimCommand::Swarm(a) => swarm::swarm_cmd(a, out),
    }
}

fn secs(flag: &str, text: &str) -> Result<Duration> {
    let v: f64 =
        text.trim().parse().map_err(|_| UsageError(format!("{flag}: {} is not a number of seconds", quoted(text))))?;
    let max = vigil_sim::MAX_DURATION.as_secs_f64();
    if !(v.is_finite() && (0.0..=max).contains(&v)) {
        return Err(UsageError(format!("{flag}: {} is outside 0 to {max} s (30 days)", quoted(text))).into());
    }
    Ok(Duration::from_secs_f64(v))
}

fn index(flag: &str, text: &str) -> Result<usize> {
    text.trim().parse().map_err(|_| UsageError(format!("{flag}: {} is not a node index", quoted(text))).into())
}

/// `X@T` or `X@T+D`.
fn at_for(flag: &str, text: &str, with_duration: bool) -> Result<(String, Duration, Duration)> {
    let (what, when) =
        text.split_once('@').ok_or_else(|| UsageError(format!("{flag}: expected NODE@SECS, got {}", quoted(text))))?;
    let (start, dur) = match (when.split_once('+'), with_duration) {
        (Some((s, d)), true) => (secs(flag, s)?, secs(flag, d)?),
        (None, false) => (secs(flag, when)?, Duration::ZERO),
        (_, true) => return Err(UsageError(format!("{flag}: expected ...@SECS+DURATION, got {}", quoted(text))).into()),
        (Some(_), false) => return Err(UsageError(format!("{flag}: expected NODE@SECS, got {}", quoted(text))).into()),
    };
    Ok((what.to_string(), start, dur))
}

fn scenario(a: &RunArgs) -> Result<Scenario> {
    let mut s = match &a.scenario {
        Some(path) => {
            let text = read_text(path, "scenario", MAX_SCENARIO_BYTES, "")?;
            Scenario::from_toml(&text).map_err(|e| UsageError(format!("{}: {e}", shown(path))))?
        }
        None => Scenario::new("flags", 100),
    };
    // What set each field, for errors: the flag as typed, else the file.
    let from_file = s.faults.len();
    let mut fault_flags: Vec<String> = Vec::new();
    if let Some(n) = a.nodes {
        s.nodes = n;
    }
    if let Some(d) = a.duration {
        s.duration = secs("--duration", &number(d))?;
    }
    if let Some(seed) = a.seed {
        s.seed = seed;
    }
    if let Some(p) = a.protocol {
        s.protocol = p.into();
    }
    if let Some(l) = a.loss {
        s.network.loss = l;
    }
    if a.no_connections {
        s.network.connections = false;
    }
    if let Some(b) = a.detection_bound {
        s.detection_bound = secs("--detection-bound", &number(b))?;
    }
    if let Some(b) = a.heal_bound {
        s.heal_bound = secs("--heal-bound", &number(b))?;
    }
    if let Some(d) = &a.downing {
        d.parse::<vigil_membership::downing::Strategy>().map_err(|e| UsageError(format!("--downing: {e}")))?;
        let mut downing = s.downing.clone().unwrap_or_else(|| vigil_sim::Downing::new(d));
        downing.strategy = d.clone();
        s.downing = Some(downing);
    }
    if let Some(v) = a.stable_after {
        let Some(downing) = s.downing.as_mut() else {
            return Err(UsageError(
                "--stable-after needs a downing strategy (--downing, or [downing] in the scenario)".into(),
            )
            .into());
        };
        downing.stable_after = Some(secs("--stable-after", &number(v))?);
    }
    for c in &a.crash {
        let (n, at, _) = at_for("--crash", c, false)?;
        s.faults.push(Timed::new(at, Fault::Crash { node: index("--crash", &n)? }));
        fault_flags.push(format!("--crash {c}"));
    }
    for c in &a.restart {
        let (n, at, _) = at_for("--restart", c, false)?;
        s.faults.push(Timed::new(at, Fault::Restart { node: index("--restart", &n)? }));
        fault_flags.push(format!("--restart {c}"));
    }
    for c in &a.pause {
        let (n, at, duration) = at_for("--pause", c, true)?;
        s.faults.push(Timed::new(at, Fault::Pause { node: index("--pause", &n)? }).lasting(duration));
        fault_flags.push(format!("--pause {c}"));
    }
    for c in &a.partition {
        let (n, at, duration) = at_for("--partition", c, true)?;
        s.faults.push(Timed::new(at, Fault::Partition { split: index("--partition", &n)? }).lasting(duration));
        s.check_liveness = false;
        fault_flags.push(format!("--partition {c}"));
    }
    for c in &a.block {
        let (pair, at, duration) = at_for("--block", c, true)?;
        let (from, to) =
            pair.split_once('>').ok_or_else(|| UsageError(format!("--block: expected A>B@SECS+DUR, got '{c}'")))?;
        let block = Fault::Block { from: index("--block", from)?, to: index("--block", to)? };
        s.faults.push(Timed::new(at, block).lasting(duration));
        fault_flags.push(format!("--block {c}"));
    }
    for c in &a.degrade {
        let (pair, at, duration) = at_for("--degrade", c, true)?;
        let bad = || UsageError(format!("--degrade: expected BASE_MS,JITTER_MS@SECS+DURATION, got '{c}'"));
        let (base, jitter) = pair.split_once(',').ok_or_else(bad)?;
        let ms = |v: &str| -> Result<f64> {
            v.trim()
                .parse::<f64>()
                .map_err(|_| UsageError(format!("--degrade: {} is not a number of milliseconds", quoted(v))).into())
        };
        s.faults.push(Timed::new(at, Fault::Degrade { base_ms: ms(base)?, jitter_ms: ms(jitter)? }).lasting(duration));
        fault_flags.push(format!("--degrade {c}"));
    }
    if let Some(m) = a.sealing {
        s.sealing = m.into();
    }
    for c in &a.rotate_key {
        let (at, spread) = span("--rotate-key", c)?;
        s.faults.push(Timed::new(at, Operation::RotateKey).lasting(spread.saturating_mul(Operation::STEPS)));
        fault_flags.push(format!("--rotate-key {c}"));
    }
    for c in &a.enable_sealing {
        let (at, spread) = span("--enable-sealing", c)?;
        s.faults.push(Timed::new(at, Operation::EnableSealing).lasting(spread.saturating_mul(Operation::STEPS)));
        fault_flags.push(format!("--enable-sealing {c}"));
    }
    for c in &a.replay {
        let (at, duration) = span("--replay", c)?;
        s.faults.push(Timed::new(at, Fault::Replay).lasting(duration));
        fault_flags.push(format!("--replay {c}"));
    }
    s.validate().map_err(|e| UsageError(name_the_input(&e, a, from_file, &fault_flags)))?;
    Ok(s)
}

/// A scenario error told in the user's terms: the flag and value they typed
/// for a field a flag set, the file for one the file set.
fn name_the_input(e: &vigil_sim::ScenarioError, a: &RunArgs, from_file: usize, fault_flags: &[String]) -> String {
    let field = e.field.as_str();
    if let Some(rest) = field.strip_prefix("faults[") {
        let (i, tail) = rest.split_once(']').unwrap_or((rest, ""));
        if let Some(flag) =
            i.parse::<usize>().ok().and_then(|i| i.checked_sub(from_file)).and_then(|i| fault_flags.get(i))
        {
            let part = tail.trim_start_matches('.');
            return if part.is_empty() || e.reason.starts_with(part) {
                format!("{flag}: {}", e.reason)
            } else {
                format!("{flag}: {part} {}", e.reason)
            };
        }
    }
    let flag = match field {
        "nodes" => a.nodes.map(|n| format!("--nodes {n}")),
        "duration" => a.duration.map(|d| format!("--duration {}", number(d))),
        "network.loss" => a.loss.map(|l| format!("--loss {}", number(l))),
        "detection_bound" => a.detection_bound.map(|b| format!("--detection-bound {}", number(b))),
        "heal_bound" => a.heal_bound.map(|b| format!("--heal-bound {}", number(b))),
        _ => None,
    };
    // A file's fault checked against a flag's size or length: say which flag
    // moved the bound.
    let moved: Vec<String> =
        [a.duration.map(|d| format!("--duration {}", number(d))), a.nodes.map(|n| format!("--nodes {n}"))]
            .into_iter()
            .flatten()
            .collect();
    let note = if field.starts_with("faults[") && !moved.is_empty() {
        format!(" (with {} from the command line)", moved.join(" and "))
    } else {
        String::new()
    };
    match (flag, &a.scenario) {
        (Some(flag), _) => format!("{flag}: {}", e.reason),
        (None, Some(path)) => format!("{}: {e}{note}", shown(path)),
        (None, None) => e.to_string(),
    }
}

fn simulate(s: &Scenario, label: &str) -> Result<Report> {
    let sim = Sim::new(s).map_err(|e| UsageError(e.to_string()))?;
    let pb = ProgressBar::new(100);
    pb.set_style(
        ProgressStyle::with_template("{msg:>14} [{bar:30}] {pos}% {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(label.to_string());
    let report = sim.run(&mut |f| pb.set_position((f * 100.0) as u64));
    pb.finish_and_clear();
    Ok(report)
}

fn ms(v: f64) -> String {
    fixed(v, 0)
}

/// Refuses a scenario whose memory estimate exceeds the budget.
fn check_sim_memory(s: &Scenario, budget: u64, size_flag: &str) -> Result<()> {
    let what = format!(
        "{size_flag}: {} nodes (each node holds every member: memory grows as the square of the cluster size)",
        s.nodes
    );
    check_memory(s.estimated_memory_bytes().into(), budget, &what, "use fewer nodes")
}

/// Simulated node-seconds per wall second, roughly, on one core of this
/// kind of machine (100 nodes: 3·10⁵ node-seconds in 0.7 s; 1,000 nodes:
/// 3·10⁵ in 2.0 s, release build). For a warning, not a limit.
const NODE_SECONDS_PER_SECOND: f64 = 150_000.0;

/// Says up front when a run will take minutes: its length is the user's
/// choice, but not a surprise.
fn warn_if_long(s: &Scenario) {
    let node_seconds = s.nodes as f64 * s.duration.as_secs_f64();
    let wall = node_seconds / NODE_SECONDS_PER_SECOND;
    if wall > 60.0 {
        say!(
            "note: {} node-seconds to simulate; expect about {:.0} minutes (a shorter --duration or fewer --nodes is \
             faster)",
            number(node_seconds.round()),
            (wall / 60.0).ceil()
        );
    }
}

fn run_cmd(a: &RunArgs, out: &mut dyn Write) -> Result<()> {
    let s = scenario(a)?;
    check_sim_memory(&s, memory_budget(a.max_memory_gb)?, "--nodes")?;
    warn_if_long(&s);
    say!(
        "simulating {} ({} nodes, {:?}, {} s virtual), seed {} (replay with --seed {})",
        s.name,
        s.nodes,
        s.protocol,
        s.duration.as_secs_f64(),
        s.seed,
        s.seed
    );
    let started = WallClock::now();
    let r = simulate(&s, "simulating")?;
    say!("done in {:.2} s", started.elapsed().as_secs_f64());
    // A fault that found nothing to act on is said, not silently dropped.
    for &k in &r.ineffective_faults {
        if let Some(f) = s.faults.get(k) {
            let (what, why) = match &f.action {
                Action::Fault(Fault::Restart { node }) => (format!("restart of node {node}"), "it was up"),
                Action::Fault(Fault::Crash { node } | Fault::Pause { node }) => {
                    (format!("{} of node {node}", f.kind()), "it was already down")
                }
                _ => (f.kind().to_owned(), "there was nothing to act on"),
            };
            say!("note: faults[{k}] ({what} at {} s) changed nothing: {why}", number(f.at.as_secs_f64()));
        }
    }
    let printed = print_run(&s, &r, a.json, out);
    if !r.violations.is_empty() {
        // A reader that closed standard output early does not hide a failed
        // check: the status is still 1.
        if let Err(e) = printed
            && !crate::error::closed_stdout(&e)
        {
            return Err(e);
        }
        let shown: Vec<String> = r
            .violations
            .first
            .iter()
            .map(|v| format!("{} ms: {}: {}", fixed(v.at_ms, 0), v.checker, v.detail))
            .collect();
        let more = r.violations.total - shown.len() as u64;
        let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
        return Err(
            CheckFailed(format!("{} checker violation(s): {}{more}", r.violations.total, shown.join("; "))).into()
        );
    }
    printed
}

/// Prints `sim run`'s report, as a table or JSON.
fn print_run(s: &Scenario, r: &Report, json: bool, out: &mut dyn Write) -> Result<()> {
    if json {
        json::print(out, "sim run", &json::SimRun { scenario: s, report: r.into() })?;
    } else {
        let mut rows = vec![
            vec![
                "false suspicions".into(),
                format!("{} ({} per member-hour)", r.false_suspicions, fixed(r.false_suspicions_per_member_hour, 2)),
            ],
            vec![
                "false deaths".into(),
                format!(
                    "{} ({} per member-hour; {} outside the liveness envelope)",
                    r.false_deaths,
                    fixed(r.false_deaths_per_member_hour, 2),
                    r.false_deaths_outside_envelope
                ),
            ],
            vec!["accusations (suspicions started)".into(), r.totals.accusations.to_string()],
            vec!["suspicions refuted".into(), r.refuted.to_string()],
            vec!["path problems".into(), r.path_problems.to_string()],
            vec!["probes".into(), r.totals.probes.to_string()],
            vec!["messages per member-second".into(), fixed(r.messages_per_member_second, 2)],
            vec!["bytes per member-second".into(), fixed(r.bytes_per_member_second, 0)],
            vec![
                "steady load (before any fault)".into(),
                format!(
                    "{} messages, {} bytes per member-second",
                    fixed(r.steady.messages_per_member_second, 2),
                    fixed(r.steady.bytes_per_member_second, 0)
                ),
            ],
            vec!["views disagreeing at the end".into(), r.final_disagreements.to_string()],
        ];
        if let Some(c) = r.converged_ms {
            rows.push(vec!["converged at".into(), format!("{} ms", fixed(c, 0))]);
        }
        let sealing = &r.sealing;
        if sealing.sealed > 0 || sealing.replays_injected > 0 || !sealing.rejected.is_empty() {
            let refused: Vec<String> = sealing.rejected.iter().map(|(why, n)| format!("{n} {why}")).collect();
            rows.push(vec![
                "sealing".into(),
                format!(
                    "{} sealed, {} opened, {} plaintext accepted; refused: {}",
                    sealing.sealed,
                    sealing.opened,
                    sealing.plaintext_accepted,
                    if refused.is_empty() { "none".to_owned() } else { refused.join(", ") }
                ),
            ]);
        }
        if sealing.replays_injected > 0 {
            rows.push(vec!["replays injected by the attacker".into(), sealing.replays_injected.to_string()]);
        }
        for w in &r.fault_windows {
            for (when, st) in [("during", &w.during), ("after", &w.after)] {
                rows.push(vec![
                    format!("{} (fault {}), {when}", w.kind, w.fault),
                    format!(
                        "{}–{} ms: {} false suspicions, {} false deaths, {} probes, {} msgs and {} B per member-second",
                        fixed(st.from_ms, 0),
                        fixed(st.to_ms, 0),
                        st.totals.false_suspicions,
                        st.totals.false_deaths,
                        st.totals.probes,
                        fixed(st.messages_per_member_second, 2),
                        fixed(st.bytes_per_member_second, 0)
                    ),
                ]);
            }
        }
        for h in &r.heals {
            let sides = match h.surviving_sides {
                0 => "no side survived".to_owned(),
                1 => "one side survived".to_owned(),
                n => format!("{n} sides carried on as the cluster"),
            };
            rows.push(vec![
                format!("partition (fault {}) healed at {:.0} ms", h.fault, h.healed_at_ms),
                format!(
                    "{sides} ({} + {} members downed themselves); {}",
                    h.self_downed[0],
                    h.self_downed[1],
                    match h.converged_after_ms {
                        Some(after) => format!("one view again {after:.0} ms later"),
                        None => "not one view again within the heal bound (or the run)".to_owned(),
                    }
                ),
            ]);
        }
        if r.downed_deaths > 0 {
            rows.push(vec!["deaths by a downing decision".into(), r.downed_deaths.to_string()]);
        }
        for c in &r.crashes {
            let extra = match (c.extra_messages_per_member, c.extra_bytes_per_member) {
                (Some(m), Some(b)) => {
                    format!("; {} extra datagrams and {} extra bytes per member in 30 s", fixed(m, 1), fixed(b, 0))
                }
                _ => String::new(),
            };
            rows.push(vec![
                format!("crash of node {} at {} ms", c.node, fixed(c.at_ms, 0)),
                format!(
                    "{} of {} survivors; first {} ms, median {} ms, last {} ms{extra}",
                    c.detected_by,
                    c.survivors,
                    ms(c.first_ms),
                    ms(c.median_ms),
                    ms(c.max_ms)
                ),
            ]);
        }
        let t = Table {
            id: String::new(),
            title: format!("{}: {} nodes, seed {}", s.name, s.nodes, s.seed),
            header: vec!["metric".into(), "value".into()],
            rows,
        };
        write!(out, "{}", format_table(&t))?;
    }
    Ok(())
}

fn scale_cmd(a: &ScaleArgs, out: &mut dyn Write) -> Result<()> {
    if let Some(n) = a.sizes.iter().find(|&&n| !(10..=100_000).contains(&n)) {
        return Err(UsageError(format!("--sizes: {n} is outside 10 to 100000 (each size must be)")).into());
    }
    let max_secs = vigil_sim::MAX_DURATION.as_secs_f64();
    if !(a.duration.is_finite() && (60.0..=max_secs).contains(&a.duration)) {
        return Err(UsageError(format!(
            "--duration: {} is outside 60 s (the crash is at 30 s) to {max_secs} s (30 days)",
            number(a.duration)
        ))
        .into());
    }
    // Every size is built and checked before the first one runs.
    let budget = memory_budget(a.max_memory_gb)?;
    let mut scenarios = Vec::new();
    for &n in &a.sizes {
        let mut s = Scenario::new(&format!("scale-{n}"), n);
        s.seed = a.seed;
        s.duration = Duration::from_secs_f64(a.duration);
        s.protocol = a.protocol.into();
        s.faults.push(Timed::new(Duration::from_secs(30), Fault::Crash { node: n / 2 }));
        s.validate().map_err(|e| UsageError(format!("--sizes {n}: {e}")))?;
        check_sim_memory(&s, budget, "--sizes")?;
        scenarios.push(s);
    }
    let dir = OutputDir::prepare(&a.out, "--out")?;
    let mut rows = Vec::new();
    let mut results = Vec::new();
    for s in scenarios {
        let n = s.nodes;
        say!("N = {n}: seed {} (replay with --seed {})", a.seed, a.seed);
        let started = WallClock::now();
        let r = simulate(&s, &format!("N = {n}"))?;
        let wall = started.elapsed().as_secs_f64();
        let c = r.crashes.first().cloned();
        rows.push(vec![
            n.to_string(),
            fixed(r.messages_per_member_second, 2),
            fixed(r.bytes_per_member_second, 0),
            c.as_ref().map_or("—".into(), |c| ms(c.first_ms)),
            c.as_ref().map_or("—".into(), |c| ms(c.median_ms)),
            c.as_ref().map_or("—".into(), |c| ms(c.max_ms)),
            c.as_ref().map_or("—".into(), |c| ms(c.max_ms - c.first_ms)),
            r.false_deaths.to_string(),
            fixed(wall, 1),
        ]);
        results.push((n, r, wall));
    }
    let pts =
        |f: &dyn Fn(&Report) -> f64| -> Vec<(f64, f64)> { results.iter().map(|(n, r, _)| (*n as f64, f(r))).collect() };
    let first = |r: &Report| r.crashes.first().map_or(f64::NAN, |c| c.first_ms / 1e3);
    let last = |r: &Report| r.crashes.first().map_or(f64::NAN, |c| c.max_ms / 1e3);
    let spread = |r: &Report| r.crashes.first().map_or(f64::NAN, |c| (c.max_ms - c.first_ms) / 1e3);
    let msgs = |r: &Report| r.messages_per_member_second;
    let chart = Chart::new(
        "Detection, dissemination and load against cluster size",
        "members (log)",
        "seconds; messages per member-second",
    )
    .with_x_scale(Scale::Log10)
    .with_series(Series::new("first detection (s)", pts(&first)).with_style(Style::LinePoints))
    .with_series(Series::new("every survivor knows (s)", pts(&last)).with_style(Style::LinePoints))
    .with_series(Series::new("dissemination: last − first (s)", pts(&spread)).with_style(Style::LinePoints))
    .with_series(Series::new("messages per member-second", pts(&msgs)).with_style(Style::LinePoints).with_dashed(true));
    let file = dir.write("sim-scale.svg", chart.to_svg().as_bytes())?;
    say!("plot: {}", file.display());
    if a.json {
        let runs = results
            .iter()
            .map(|(n, r, wall)| json::ScaleRun { nodes: *n, wall_secs: *wall, report: r.into() })
            .collect();
        return json::print(out, "sim scale", &json::SimScale { seed: a.seed, runs, plot: file.display().to_string() });
    }
    let header = [
        "N",
        "msgs/member/s",
        "bytes/member/s",
        "first detection (ms)",
        "median (ms)",
        "all survivors (ms)",
        "dissemination (ms)",
        "false deaths",
        "wall (s)",
    ];
    let t = Table {
        id: String::new(),
        title: format!("a crash at 30 s, {} s virtual per run, seed {}", a.duration, a.seed),
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
    };
    write!(out, "{}", format_table(&t))?;
    Ok(())
}

fn frontier_cmd(a: &FrontierArgs, out: &mut dyn Write) -> Result<()> {
    if !(10..=1_000).contains(&a.nodes) {
        return Err(UsageError(format!("--nodes: {} is outside 10 to 1000", a.nodes)).into());
    }
    if !(1..=20).contains(&a.crash_runs) {
        return Err(UsageError(format!("--crash-runs: {} is outside 1 to 20", a.crash_runs)).into());
    }
    if !(a.loss_secs.is_finite() && (10.0..=3_600.0).contains(&a.loss_secs)) {
        return Err(UsageError(format!("--loss-secs: {} is outside 10 to 3600", number(a.loss_secs))).into());
    }
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if !(1..=256).contains(&threads) {
        return Err(UsageError(format!("--threads: {threads} is outside 1 to 256")).into());
    }
    let mut spec = frontier::FrontierSpec::new(a.nodes);
    spec.seed = a.seed;
    spec.crash_runs = a.crash_runs;
    spec.loss_duration = Duration::from_secs_f64(a.loss_secs);
    spec.threads = threads;
    // Every thread holds one cluster at a time.
    let at_once = threads.min(spec.runs()) as u64;
    let per_run = Scenario::new("frontier", a.nodes).estimated_memory_bytes();
    check_memory(
        u128::from(per_run) * u128::from(at_once),
        memory_budget(a.max_memory_gb)?,
        &format!("{at_once} clusters of {} nodes at once (one per thread)", a.nodes),
        "use fewer --threads or --nodes",
    )?;
    let dir = OutputDir::prepare(&a.out, "--out")?;
    say!(
        "sweeping {} settings ({} runs, {threads} threads) at N = {}, seed {} (replay with --seed {})",
        spec.settings.len(),
        spec.runs(),
        a.nodes,
        a.seed,
        a.seed
    );
    let started = WallClock::now();
    let pb = ProgressBar::new(spec.runs() as u64);
    pb.set_style(
        ProgressStyle::with_template("{msg:>14} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message("simulating");
    let f = frontier::run(&spec, &|done, _| pb.set_position(done as u64)).map_err(|e| UsageError(e.to_string()))?;
    pb.finish_and_clear();
    say!("done in {:.1} s", started.elapsed().as_secs_f64());
    let file = dir.write("sim-frontier.svg", frontier_chart(&f).to_svg().as_bytes())?;
    say!("plot: {}", file.display());
    if a.json {
        return json::print(
            out,
            "sim frontier",
            &json::SimFrontier { frontier: (&f).into(), plot: file.display().to_string() },
        );
    }
    let secs = |ms: f64| fixed(ms / 1e3, 2);
    let rows = f
        .points
        .iter()
        .map(|p| {
            vec![
                p.label.clone(),
                fixed(p.messages_per_member_second, 2),
                fixed(p.bytes_per_member_second, 0),
                format!("{}{}", secs(p.detection_median_ms), if p.detected_by_all { "" } else { " (not all)" }),
                secs(p.detection_max_ms),
                p.loss_false_suspicions.to_string(),
                p.loss_accusations.to_string(),
                p.loss_false_deaths.to_string(),
            ]
        })
        .collect();
    let header = [
        "setting",
        "msgs/member/s",
        "bytes/member/s",
        "detection median (s)",
        "slowest (s)",
        "false suspicions at loss",
        "accusations",
        "false deaths",
    ];
    let t = Table {
        id: String::new(),
        title: format!(
            "every setting: N = {}, {} crash runs each, {:.0} % loss for {} s, seed {}",
            f.nodes,
            spec.crash_runs,
            spec.loss * 100.0,
            a.loss_secs,
            f.seed
        ),
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
    };
    write!(out, "{}", format_table(&t))?;
    let rows = f
        .answers
        .iter()
        .map(|&(c, answer)| {
            let classic = &f.points[c];
            let cost = |p: &vigil_sim::frontier::Point| {
                format!(
                    "{} msgs, {} B, {} false susp., {} s",
                    fixed(p.messages_per_member_second, 2),
                    fixed(p.bytes_per_member_second, 0),
                    p.loss_false_suspicions,
                    secs(p.detection_median_ms)
                )
            };
            match answer {
                Some(i) => vec![classic.label.clone(), cost(classic), f.points[i].label.clone(), cost(&f.points[i])],
                None => vec![classic.label.clone(), cost(classic), "none".into(), String::new()],
            }
        })
        .collect();
    let t = Table {
        id: String::new(),
        title: "for each classic setting, the fastest φ setting with no more messages, bytes and false suspicions and at most half the detection time".into(),
        header: ["classic setting", "classic", "φ setting", "φ"].iter().map(|h| h.to_string()).collect(),
        rows,
    };
    write!(out, "\n{}", format_table(&t))?;
    let answered = f.answers.iter().filter(|(_, a)| a.is_some()).count();
    writeln!(out, "\n{answered} of {} classic settings have such a φ setting.", f.answers.len())?;
    Ok(())
}

fn frontier_chart(f: &frontier::Frontier) -> Chart {
    let pts = |phi: bool| -> Vec<(f64, f64)> {
        f.points
            .iter()
            .filter(|p| p.setting.is_phi() == phi && p.detected_by_all)
            .map(|p| (p.messages_per_member_second, p.detection_median_ms / 1e3))
            .collect()
    };
    let pareto = |phi: bool| -> Vec<(f64, f64)> {
        f.pareto(phi).iter().map(|p| (p.messages_per_member_second, p.detection_median_ms / 1e3)).collect()
    };
    Chart::new(
        format!("Crash detection against steady messages, N = {}", f.nodes),
        "messages per member-second (log)",
        "crash → dead, median over survivors (s, log)",
    )
    .with_x_scale(Scale::Log10)
    .with_y_scale(Scale::Log10)
    .with_series(Series::new("φ settings", pts(true)).with_style(Style::Points))
    .with_series(Series::new("classic SWIM settings", pts(false)).with_style(Style::Points))
    .with_series(Series::new("φ frontier", pareto(true)).with_style(Style::Step))
    .with_series(Series::new("classic frontier", pareto(false)).with_style(Style::Step).with_dashed(true))
    .with_series(
        Series::new(MEMBERLIST_LABEL, [(MEMBERLIST_MESSAGES, MEMBERLIST_DETECTION_S)]).with_style(Style::Points),
    )
}

/// memberlist 0.2.2 (`DefaultLANConfig`) measured on loopback at N = 100,
/// 16 crashes: 2.00 UDP messages plus 0.011 push-pull exchanges (two
/// messages each) per member-second, crash → dead median 10.0 s. A point of
/// reference beside the simulated settings, not a simulated one.
const MEMBERLIST_LABEL: &str = "memberlist (measured)";
const MEMBERLIST_MESSAGES: f64 = 2.022;
const MEMBERLIST_DETECTION_S: f64 = 10.0;
