//! `vigil agent`: one member of a cluster as a process.
//!
//! Settings come from flags and, optionally, a TOML file with the same
//! names (`--config FILE`); a flag overrides the file. Events go to stdout
//! as JSON lines, one per event, through a bounded queue that a stuck
//! reader cannot block the member with (`event_lines.rs`); logs go to
//! stderr. SIGTERM and SIGINT make the member leave (announced) and the
//! process exit 0 within 3 s, whatever stdout does; SIGHUP reloads the
//! configuration file (the tags; other settings need a restart, and the
//! log says which changed). A bad setting exits 2, naming it.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde::Deserialize;
use tokio::sync::mpsc;
use vigil_membership::seal::SealMode;
use vigil_membership::{Config, Event, Tags};
use vigil_net::{Cluster, DEFAULT_CLUSTER, StartError};

use crate::UsageError;
use crate::event_lines::{self, EventLines};
use crate::http::recorder::Recorder;
use crate::http::{self, Api};
use crate::input::read_text;

/// Arguments of `vigil agent`.
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// This member's name (1 to 64 bytes).
    #[arg(long)]
    name: Option<String>,
    /// Address to listen on, UDP and TCP (default 0.0.0.0:7946).
    #[arg(long, value_name = "IP:PORT")]
    bind: Option<String>,
    /// Address the others reach this member at (default: the bound one).
    #[arg(long, value_name = "IP:PORT")]
    advertise: Option<String>,
    /// Members to join through: `IP:PORT` or `HOST:PORT` (every address the
    /// name resolves to), comma-separated or repeated. They are asked again,
    /// and names resolved again, whenever this member knows no live member,
    /// for as long as it runs.
    #[arg(long, value_name = "ADDR[,...]")]
    join: Vec<String>,
    /// Keys: one 32-byte key per line, 64 hex digits or base64 (`vigil
    /// keygen` makes one); the first is the primary. With keys, every packet
    /// is sealed. The file must be readable by its owner only (chmod 600).
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// With keys: `sealed` (default), or `staged` (sealed out, plaintext
    /// still in: the step that turns encryption on in a running cluster),
    /// or `plaintext` (plaintext out; sealed in too). Without keys,
    /// `plaintext` is what `--plaintext` says.
    #[arg(long, value_enum)]
    seal_mode: Option<SealModeArg>,
    /// Run without keys on an address other hosts can reach: nothing is
    /// encrypted or authenticated, so anyone who can reach the port can read
    /// the membership, join, and send rumours (refuted, and bounded per
    /// source). Without it, such an agent refuses to start without
    /// `--key-file` (make a key with `vigil keygen`).
    #[arg(long)]
    plaintext: bool,
    /// The protocol's preset: lan (default), lan-fast (about half the
    /// detection time for about twice the messages; a paused member must
    /// resume within about 1.5 s), wan or classic (memberlist's LAN
    /// constants).
    #[arg(long, value_enum)]
    preset: Option<PresetArg>,
    /// Cluster id: members of other clusters are ignored (default 0x76696769).
    #[arg(long)]
    cluster: Option<u64>,
    /// Where the generation is recorded, so a restart always comes back
    /// with a higher one.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// A tag: `KEY=VALUE` (repeatable), carried to every member; all of a
    /// member's tags take at most 512 bytes (each pair its key and value
    /// plus 2).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    tags: Vec<String>,
    /// The largest datagram sent, in bytes before sealing (1024 to 65000;
    /// default 1400): lower it when the seal (43 bytes) and the headers must
    /// fit a smaller path MTU.
    #[arg(long, value_name = "BYTES")]
    datagram_budget: Option<usize>,
    /// How much to log on stderr: error, warn, info (default: starts,
    /// verdicts, stalls, leaving), debug (also refused packets and failed
    /// sends) or trace.
    #[arg(long, value_enum)]
    log_level: Option<LogLevel>,
    /// A graded policy on the members this one watches: `NAME=THRESHOLD`
    /// (repeatable), e.g. `--policy route=2 --policy remove=8`. Each reports
    /// `policy` events for members given with `--watch`, and its time to
    /// threshold for every watched member in the API.
    #[arg(long = "policy", value_name = "NAME=THRESHOLD")]
    policies: Vec<String>,
    /// Watch this member for the application too (repeatable): its policies'
    /// verdicts become `policy` events (its heartbeats are asked for if it
    /// is not one this member watches anyway).
    #[arg(long = "watch", value_name = "NAME")]
    watch: Vec<String>,
    /// The HTTP API, metrics and dashboard: `IP:PORT`, or `off` (default
    /// 127.0.0.1:8470; if that port is taken, the agent runs without it and
    /// says so).
    #[arg(long, value_name = "IP:PORT|off")]
    http: Option<String>,
    /// A file holding the bearer token that keyring operations and leaving
    /// through the API need (without one they are allowed on a loopback
    /// address only). Like a key file, it must be readable by its owner
    /// only (chmod 600).
    #[arg(long, value_name = "FILE")]
    http_token_file: Option<PathBuf>,
    /// Another name the API may be reached by (repeatable): `NAME` on any
    /// port or `NAME:PORT`, e.g. behind a proxy; requests naming another
    /// Host than these and the API's own addresses are refused.
    #[arg(long = "http-host", value_name = "NAME[:PORT]")]
    http_hosts: Vec<String>,
    /// Heartbeat arrivals kept per watched member, served as lab traces at
    /// /v1/traces/NAME (0 to 1000000; default 10000, about 3 hours at the
    /// LAN preset's rate, 80 KB per member).
    #[arg(long, value_name = "N")]
    record_arrivals: Option<usize>,
    /// Events kept for clients of /v1/events that resume (1 to 100000;
    /// default 1000).
    #[arg(long, value_name = "N")]
    event_history: Option<usize>,
    /// How often to try to reconnect to one member believed dead (a
    /// duration with its unit: 10s, 1min; default 10s, 30s on wan).
    #[arg(long, value_name = "DURATION")]
    reconnect_interval: Option<String>,
    /// How long a dead member is tried, then reaped (default 24h).
    #[arg(long, value_name = "DURATION")]
    reconnect_timeout: Option<String>,
    /// How long a member that left is remembered, then reaped (default 24h).
    #[arg(long, value_name = "DURATION")]
    tombstone_timeout: Option<String>,
    /// A TOML file with the same settings (`name`, `bind`, `advertise`,
    /// `join`, `key_file`, `seal_mode`, `preset`, `cluster`, `data_dir`,
    /// `datagram_budget`, `log_level`, `http`, `http_token_file`, `http_hosts`,
    /// `record_arrivals`, `event_history`, `watch`, `reconnect_interval`,
    /// `reconnect_timeout`, `tombstone_timeout`, a `[tags]` table and a
    /// `[policies]` table of name = threshold); flags override it, tag by
    /// tag and policy by policy.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum PresetArg {
    Lan,
    LanFast,
    Wan,
    Classic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    fn filter(self) -> tracing::Level {
        match self {
            LogLevel::Error => tracing::Level::ERROR,
            LogLevel::Warn => tracing::Level::WARN,
            LogLevel::Info => tracing::Level::INFO,
            LogLevel::Debug => tracing::Level::DEBUG,
            LogLevel::Trace => tracing::Level::TRACE,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum SealModeArg {
    Plaintext,
    Staged,
    Sealed,
}

/// The settings file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    name: Option<String>,
    bind: Option<String>,
    advertise: Option<String>,
    #[serde(default)]
    join: Vec<String>,
    key_file: Option<PathBuf>,
    seal_mode: Option<SealModeArg>,
    preset: Option<PresetArg>,
    cluster: Option<u64>,
    data_dir: Option<PathBuf>,
    datagram_budget: Option<usize>,
    log_level: Option<LogLevel>,
    http: Option<String>,
    http_token_file: Option<PathBuf>,
    #[serde(default)]
    http_hosts: Vec<String>,
    record_arrivals: Option<usize>,
    event_history: Option<usize>,
    #[serde(default)]
    watch: Vec<String>,
    #[serde(default)]
    tags: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    policies: std::collections::BTreeMap<String, f64>,
    reconnect_interval: Option<String>,
    reconnect_timeout: Option<String>,
    tombstone_timeout: Option<String>,
}

/// Where a setting came from, for errors.
fn origin(flag: bool, name: &str, file: Option<&Path>) -> String {
    match (flag, file) {
        (true, _) | (false, None) => format!("--{}", name.replace('_', "-")),
        (false, Some(f)) => format!("{}: {name}", f.display()),
    }
}

fn address(what: &str, text: &str) -> Result<SocketAddr> {
    text.to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or_else(|| {
        UsageError(format!("{what}: {} is not an address (IP:PORT)", vigil_lab::millis::quoted(text))).into()
    })
}

/// The tags: the file's `[tags]`, then each `--tag KEY=VALUE` over them.
fn tags(flags: &[String], file: &std::collections::BTreeMap<String, String>, path: Option<&Path>) -> Result<Tags> {
    let mut all = file.clone();
    for t in flags {
        let (k, v) = t
            .split_once('=')
            .ok_or_else(|| UsageError(format!("--tag {}: expected KEY=VALUE", vigil_lab::millis::quoted(t))))?;
        all.insert(k.to_owned(), v.to_owned());
    }
    Tags::new(all).map_err(|e| {
        let from = if flags.is_empty() { origin(false, "tags", path) } else { "--tag".to_owned() };
        UsageError(format!("{from}: {e}")).into()
    })
}

/// The graded policies: the file's `[policies]` (name = threshold), then
/// each `--policy NAME=THRESHOLD[,dwell=..][,rearm=..][,recovery=N][,ejection][,destructive]`
/// or `--policy NAME=ejection` over them.
fn policies(
    flags: &[String],
    file: &std::collections::BTreeMap<String, f64>,
    path: Option<&Path>,
) -> Result<Vec<vigil_detector::health::HealthPolicy>> {
    use vigil_detector::health::HealthPolicy;
    let mut all: std::collections::BTreeMap<String, HealthPolicy> =
        file.iter().map(|(name, &threshold)| (name.clone(), HealthPolicy::new(name.as_str()).phi(threshold))).collect();
    for p in flags {
        let policy: HealthPolicy = p.parse().map_err(|e| UsageError(format!("--policy: {e}")))?;
        all.insert(policy.name.clone(), policy);
    }
    if all.len() > 16 {
        let from = if flags.is_empty() { origin(false, "policies", path) } else { "--policy".to_owned() };
        return Err(UsageError(format!("{from}: {} policies, at most 16", all.len())).into());
    }
    Ok(all.into_values().collect())
}

/// The log line of an event: verdicts and warnings about this member itself.
fn log_event(e: &Event) {
    match e {
        Event::Suspected { id, by, level } => match level {
            Some(phi) => tracing::info!("{id} suspected by {} (φ {phi:.2})", by.name),
            None => tracing::info!("{id} suspected by {}", by.name),
        },
        Event::Dead { id, by, .. } => tracing::info!("{id} declared dead by {}", by.name),
        Event::Left { id } => tracing::info!("{id} left"),
        Event::PathProblem { id, indirect, .. } => {
            tracing::info!(
                "{id}: path problem ({})",
                if *indirect { "only an indirect probe answered" } else { "heartbeats lost, probe answered" }
            )
        }
        Event::SelfRefuted { incarnation } => {
            tracing::warn!("this member was accused and refuted it (incarnation {incarnation})")
        }
        Event::LocalStall { late } => tracing::warn!("this member stalled: timers ran {} ms late", late.as_millis()),
        Event::Renewed { id } => tracing::warn!("incarnations exhausted: now {id}"),
        _ => tracing::debug!("{e:?}"),
    }
}

/// A seed as given to `--join`: `IP:PORT`, or `HOST:PORT` with a port from
/// 1 to 65535 and a name without spaces or control characters.
fn seed(what: &str, text: &str) -> Result<String> {
    let bad = |why: &str| -> anyhow::Error {
        UsageError(format!("{what}: {} is not a member's address ({why})", vigil_lab::millis::quoted(text))).into()
    };
    if let Ok(addr) = text.parse::<SocketAddr>() {
        if addr.ip().is_unspecified() || addr.port() == 0 {
            return Err(bad("an unspecified address or port 0 reaches nobody"));
        }
        return Ok(text.to_owned());
    }
    let (host, port) = text.rsplit_once(':').ok_or_else(|| bad("expected IP:PORT or HOST:PORT"))?;
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) || host.contains(['[', ']', ',']) {
        return Err(bad("expected IP:PORT or HOST:PORT"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(text.to_owned()),
        _ => Err(bad("the port must be 1 to 65535")),
    }
}

/// The settings `vigil agent` starts with, read and checked.
struct Settings {
    file: FileSettings,
    name: String,
    name_from: String,
}

/// Reads the configuration file, if any.
fn file_settings(path: Option<&Path>) -> Result<FileSettings> {
    match path {
        Some(p) => {
            let text = read_text(p, "config file", 1024 * 1024, "")?;
            toml::from_str(&text).map_err(|e| UsageError(format!("{}: {e}", p.display())).into())
        }
        None => Ok(FileSettings::default()),
    }
}

/// SIGHUP: the configuration file again. The tags are applied (a change is
/// announced to every member); other settings need a restart, and the log
/// says which changed.
async fn reload(a: &AgentArgs, started: &FileSettings, member: &Cluster) {
    let Some(path) = a.config.as_deref() else {
        tracing::info!("SIGHUP: no configuration file to reload (start with --config FILE)");
        return;
    };
    let file = match file_settings(Some(path)) {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!("SIGHUP: {e:#}; nothing changed");
            return;
        }
    };
    match tags(&a.tags, &file.tags, Some(path)) {
        Ok(t) if t != member_tags(member).await => {
            tracing::info!("SIGHUP: new tags from {}, announced", path.display());
            let _ = member.set_tags(t).await;
        }
        Ok(_) => {}
        Err(e) => tracing::warn!("SIGHUP: {e:#}; the tags did not change"),
    }
    let mut restart = Vec::new();
    let differ = |x: &dyn std::fmt::Debug, y: &dyn std::fmt::Debug| format!("{x:?}") != format!("{y:?}");
    for (name, now, then) in [
        ("name", &file.name as &dyn std::fmt::Debug, &started.name as &dyn std::fmt::Debug),
        ("bind", &file.bind, &started.bind),
        ("advertise", &file.advertise, &started.advertise),
        ("join", &file.join, &started.join),
        ("key_file", &file.key_file, &started.key_file),
        ("seal_mode", &file.seal_mode, &started.seal_mode),
        ("preset", &file.preset, &started.preset),
        ("cluster", &file.cluster, &started.cluster),
        ("data_dir", &file.data_dir, &started.data_dir),
        ("http", &file.http, &started.http),
        ("policies", &file.policies, &started.policies),
        ("watch", &file.watch, &started.watch),
        ("log_level", &file.log_level, &started.log_level),
        ("reconnect_interval", &file.reconnect_interval, &started.reconnect_interval),
        ("reconnect_timeout", &file.reconnect_timeout, &started.reconnect_timeout),
        ("tombstone_timeout", &file.tombstone_timeout, &started.tombstone_timeout),
    ] {
        if differ(now, then) {
            restart.push(name);
        }
    }
    if !restart.is_empty() {
        tracing::warn!("SIGHUP: {} changed in {}: a restart applies them", restart.join(", "), path.display());
    }
}

async fn member_tags(member: &Cluster) -> Tags {
    member.snapshot().await.map(|s| s.node.tags).unwrap_or_default()
}

/// Runs `vigil agent` until SIGTERM or SIGINT (or until standard output is
/// closed for good).
pub(crate) fn run(a: &AgentArgs) -> Result<()> {
    let file_path = a.config.as_deref();
    let file = file_settings(file_path)?;
    let pick = |flag: &Option<String>, file: &Option<String>, name: &str| -> Option<(String, String)> {
        match (flag, file) {
            (Some(v), _) => Some((v.clone(), origin(true, name, file_path))),
            (None, Some(v)) => Some((v.clone(), origin(false, name, file_path))),
            _ => None,
        }
    };
    let (name, name_from) =
        pick(&a.name, &file.name, "name").ok_or_else(|| UsageError("--name: every member needs a name".into()))?;
    if let Some(at) = vigil_membership::wire::control_character(&name) {
        return Err(UsageError(format!(
            "{name_from}: {} has a control character at byte {at}; a name is printable text",
            vigil_lab::millis::quoted(&name)
        ))
        .into());
    }
    let settings = Settings { file, name, name_from };
    let file = &settings.file;
    let (bind, bind_from) = match pick(&a.bind, &file.bind, "bind") {
        Some((v, from)) => (address(&from, &v)?, from),
        None => (SocketAddr::from(([0, 0, 0, 0], 7946)), "--bind".to_owned()),
    };
    let advertise = match pick(&a.advertise, &file.advertise, "advertise") {
        Some((v, from)) => {
            let addr = address(&from, &v)?;
            if addr.ip().is_unspecified() || addr.port() == 0 {
                return Err(UsageError(format!(
                    "{from}: {} is not an address other members can reach (an unspecified address or port 0)",
                    vigil_lab::millis::quoted(&v)
                ))
                .into());
            }
            Some(addr)
        }
        None => None,
    };
    let (join_texts, join_from) = if a.join.is_empty() {
        (file.join.clone(), origin(false, "join", file_path))
    } else {
        (a.join.clone(), origin(true, "join", file_path))
    };
    let mut seeds = Vec::new();
    for text in &join_texts {
        for t in text.split(',').map(str::trim) {
            if t.is_empty() {
                return Err(UsageError(format!(
                    "{join_from}: {} holds an empty address; give IP:PORT or HOST:PORT, comma-separated",
                    vigil_lab::millis::quoted(text)
                ))
                .into());
            }
            seeds.push(seed(&join_from, t)?);
        }
    }
    let expects_peers = !seeds.is_empty();
    let cluster = a.cluster.or(file.cluster).unwrap_or(DEFAULT_CLUSTER);
    let preset = a.preset.or(file.preset).unwrap_or(PresetArg::Lan);
    let config = match preset {
        PresetArg::Lan => Config::lan(cluster),
        PresetArg::LanFast => Config::lan_fast(cluster),
        PresetArg::Wan => Config::wan(cluster),
        PresetArg::Classic => Config::classic_lan(cluster),
    };
    let key_file = a
        .key_file
        .clone()
        .map(|p| (p, origin(true, "key_file", file_path)))
        .or_else(|| file.key_file.clone().map(|p| (p, origin(false, "key_file", file_path))));
    let keyring = key_file.map(|(p, from)| crate::keys::key_file(&p, &from)).transpose()?;
    let seal_mode = if a.plaintext { Some(SealModeArg::Plaintext) } else { a.seal_mode.or(file.seal_mode) };
    let mode = match (seal_mode, &keyring) {
        (Some(SealModeArg::Plaintext), _) => SealMode::Plaintext,
        (Some(SealModeArg::Staged), _) => SealMode::Staged,
        (Some(SealModeArg::Sealed), _) | (None, Some(_)) => SealMode::Sealed,
        (None, None) => SealMode::Plaintext,
    };
    if mode != SealMode::Plaintext && keyring.is_none() {
        return Err(UsageError("--seal-mode: sealing needs keys (--key-file)".into()).into());
    }
    let data_dir = a
        .data_dir
        .clone()
        .map(|d| (d, origin(true, "data_dir", file_path)))
        .or_else(|| file.data_dir.clone().map(|d| (d, origin(false, "data_dir", file_path))));
    let tags = tags(&a.tags, &file.tags, file_path)?;
    let mut config = config;
    for (name, flag, from_file) in [
        ("reconnect_interval", &a.reconnect_interval, &file.reconnect_interval),
        ("reconnect_timeout", &a.reconnect_timeout, &file.reconnect_timeout),
        ("tombstone_timeout", &a.tombstone_timeout, &file.tombstone_timeout),
    ] {
        let Some((text, from)) = pick(flag, from_file, name) else { continue };
        let ms = crate::lab::human_duration(&from, &text)?;
        let d = Duration::from_secs_f64(ms / 1e3);
        match name {
            "reconnect_interval" => config.reconnect_interval = d,
            "reconnect_timeout" => config.reconnect_timeout = d,
            _ => config.tombstone_timeout = d,
        }
        config.validate().map_err(|e| UsageError(format!("{from}: {e}")))?;
    }
    if let Some(budget) = a.datagram_budget.or(file.datagram_budget) {
        config.datagram_budget = budget;
        config.validate().map_err(|e| {
            UsageError(format!("{}: {e}", origin(a.datagram_budget.is_some(), "datagram_budget", file_path)))
        })?;
    }
    let http = match pick(&a.http, &file.http, "http") {
        Some((v, _)) if v == "off" => Http::Off,
        Some((v, from)) => Http::At(address(&from, &v)?, from),
        None => Http::Default,
    };
    let token =
        match a.http_token_file.clone().map(|p| (p, true)).or_else(|| file.http_token_file.clone().map(|p| (p, false)))
        {
            Some((p, flag)) => Some(crate::keys::token_file(&p, &origin(flag, "http_token_file", file_path))?),
            None => None,
        };
    let http_hosts = if a.http_hosts.is_empty() {
        http::host_names(&file.http_hosts, &origin(false, "http_hosts", file_path))?
    } else {
        http::host_names(&a.http_hosts, "--http-host")?
    };
    let recorded = a.record_arrivals.or(file.record_arrivals).unwrap_or(DEFAULT_RECORDED_ARRIVALS);
    config.recorded_arrivals = recorded;
    config.validate().map_err(|e| {
        UsageError(format!("{}: {e}", origin(a.record_arrivals.is_some(), "record_arrivals", file_path)))
    })?;
    let history = a.event_history.or(file.event_history).unwrap_or(DEFAULT_EVENT_HISTORY);
    if !(1..=MAX_EVENT_HISTORY).contains(&history) {
        return Err(UsageError(format!(
            "{}: {history} is out of range (1 to {MAX_EVENT_HISTORY})",
            origin(a.event_history.is_some(), "event_history", file_path)
        ))
        .into());
    }
    config.policies = policies(&a.policies, &file.policies, file_path)?;
    config.validate().map_err(|e| {
        let from = if a.policies.is_empty() { origin(false, "policies", file_path) } else { "--policy".to_owned() };
        UsageError(format!("{from}: {e}"))
    })?;
    let watch: std::collections::BTreeSet<String> =
        if a.watch.is_empty() { file.watch.iter().cloned().collect() } else { a.watch.iter().cloned().collect() };
    // Secure by default: reachable from other hosts means keys, unless the
    // user says plaintext.
    let reachable = !bind.ip().is_loopback();
    let said_plaintext = seal_mode == Some(SealModeArg::Plaintext);
    if reachable && keyring.is_none() && !said_plaintext {
        return Err(UsageError(format!(
            "{bind_from} {bind}: other hosts can reach this member, and without keys nothing it sends or takes is \
             authenticated; give --key-file (make a key with `vigil keygen`), or say --plaintext to run so"
        ))
        .into());
    }
    let level = a.log_level.or(file.log_level).unwrap_or(LogLevel::Info);
    // Logs go to stderr, plain text; stdout is for events.
    let _ = tracing_subscriber::fmt().with_max_level(level.filter()).with_writer(std::io::stderr).try_init();
    if reachable && mode == SealMode::Plaintext {
        tracing::warn!(
            "plaintext on {bind}: nothing is encrypted or authenticated; anyone who can reach this port can read the \
             membership, join, and send rumours (refuted, and bounded per source). Give every member --key-file to \
             seal the cluster"
        );
    }
    let name = settings.name.clone();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(async move {
        // The API's address is checked before the member starts.
        let http_listener = http_listener(&http).await?;
        let mut builder = Cluster::builder(&name).bind(bind).seed_names(seeds).config(config).tags(tags);
        if let Some(addr) = advertise {
            builder = builder.advertise(addr);
        }
        if let Some(ring) = keyring {
            builder = builder.keys(ring, mode);
        }
        if let Some((dir, _)) = &data_dir {
            builder = builder.data_dir(dir);
        }
        // Subscribed before the start: the members met while joining are
        // in the stream too.
        let mut events = builder.events();
        let member = builder.start().await.map_err(|e| match e {
            StartError::Config(c) if c.field() == "name" => UsageError(format!("{}: {c}", settings.name_from)),
            StartError::Generation(e) => {
                let (dir, from) = data_dir.as_ref().map_or((Path::new(""), "--data-dir"), |(d, f)| (d.as_path(), f.as_str()));
                UsageError(format!("{from} {}: {e}", dir.display()))
            }
            other => UsageError(other.to_string()),
        })?;
        tracing::info!(
            "started {} (generation {}) on {}, advertising {}{}",
            member.id().name,
            member.id().generation,
            member.local_addr(),
            member.advertise_addr(),
            if mode == SealMode::Plaintext { ", plaintext" } else { ", sealed" }
        );
        let member = Arc::new(member);
        let recorder = Recorder::new(history);
        let (leave_tx, mut leave_rx) = mpsc::channel(1);
        if let Some((listener, addr)) = http_listener {
            let api = Api {
                cluster: member.clone(),
                recorder: recorder.clone(),
                token: token.map(Into::into),
                loopback: http::is_loopback(addr),
                leave: leave_tx,
                sealed: mode == SealMode::Sealed,
                expects_peers,
                fleet: None,
                hosts: http_hosts,
            };
            tracing::info!("HTTP API on http://{addr} (dashboard at /, metrics at /metrics)");
            http::start(listener, api);
        }
        let node = member.id().name.clone();
        let (mut lines, mut stdout_closed) = EventLines::start(&node)?;
        let mut missed = 0;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .context("installing the SIGHUP handler")?;
        loop {
            tokio::select! {
                e = events.next() => {
                    let Some(e) = e else { break };
                    // Events this loop fell too far behind to read: said on
                    // stdout, in the history (and so /v1/events) and the
                    // metrics.
                    if events.missed() > missed {
                        let n = events.missed() - missed;
                        missed = events.missed();
                        let line = event_lines::missed_line(&node, n, "stream");
                        recorder.history.push(line.clone());
                        recorder.metrics().dropped("stream", n);
                        tracing::warn!("{n} events were not read in time: they are missing from stdout and the history");
                        lines.send(line);
                    }
                    // Members to watch for the application, as they come.
                    if let Event::Up { id, .. } = &e.event
                        && watch.contains(&*id.name)
                    {
                        let _ = member.watch(&id.name).await;
                    }
                    log_event(&e.event);
                    if let Some(line) = recorder.record(&node, &e)
                        && !lines.send(line.to_string())
                    {
                        recorder.metrics().dropped("stdout", 1);
                    }
                }
                _ = term.recv() => break,
                _ = tokio::signal::ctrl_c() => break,
                _ = hup.recv() => reload(a, &settings.file, &member).await,
                _ = &mut stdout_closed => {
                    tracing::info!("standard output was closed");
                    break;
                }
                Some(()) = leave_rx.recv() => {
                    tracing::info!("asked to leave through the API");
                    break;
                }
            }
        }
        if lines.dropped() > 0 {
            tracing::warn!("{} event lines were dropped: standard output was not read in time", lines.dropped());
        }
        tracing::info!("leaving");
        // Leaving is announced and bounded; the process ends within 3 s.
        let _ = tokio::time::timeout(Duration::from_millis(2500), member.leave()).await;
        Ok(())
    })
}

/// Arrivals recorded per watched member unless told otherwise.
const DEFAULT_RECORDED_ARRIVALS: usize = 10_000;
/// Events kept for resuming clients unless told otherwise.
const DEFAULT_EVENT_HISTORY: usize = 1_000;
/// The most events kept.
const MAX_EVENT_HISTORY: usize = 100_000;
/// Where the API listens unless told otherwise (and where the CLI clients
/// look for it).
pub(crate) const DEFAULT_HTTP: &str = "127.0.0.1:8470";

/// Where the HTTP API goes.
#[derive(Debug)]
enum Http {
    Off,
    Default,
    /// An address, and where the user gave it.
    At(SocketAddr, String),
}

/// The API's listener: `None` when it is off, or when the default port is
/// taken (said in the log); an address the user gave must work.
async fn http_listener(http: &Http) -> Result<Option<(tokio::net::TcpListener, SocketAddr)>> {
    let (addr, from) = match http {
        Http::Off => return Ok(None),
        Http::Default => (DEFAULT_HTTP.parse().expect("a valid address"), None),
        Http::At(addr, from) => (*addr, Some(from)),
    };
    match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => {
            let local = l.local_addr().context("the HTTP listener's address")?;
            Ok(Some((l, local)))
        }
        Err(e) => match from {
            Some(from) => Err(UsageError(format!("{from}: cannot listen on {addr}: {e}")).into()),
            None => {
                tracing::warn!("no HTTP API: cannot listen on {addr} ({e}); give --http IP:PORT, or --http off");
                Ok(None)
            }
        },
    }
}
