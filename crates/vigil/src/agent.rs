//! `vigil agent`: one member of a cluster as a process.
//!
//! Settings come from flags and, optionally, a TOML file with the same
//! names (`--config FILE`); a flag overrides the file. Events go to stdout
//! as JSON lines, one per event; logs go to stderr. SIGTERM and SIGINT
//! make the member leave (announced) and the process exit 0 within 3 s.
//! A bad setting exits 2, naming it.

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde::Deserialize;
use tokio::sync::mpsc;
use vigil_membership::keyring::Keyring;
use vigil_membership::seal::Mode;
use vigil_membership::{Config, Event, Tags};
use vigil_net::{Cluster, DEFAULT_CLUSTER};

use crate::UsageError;
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
    /// Members to join through: `IP:PORT[,IP:PORT...]` (repeatable).
    #[arg(long, value_name = "IP:PORT[,...]")]
    join: Vec<String>,
    /// Keys: one 32-byte key per line, 64 hex digits or base64; the first is
    /// the primary. With keys, every packet is sealed.
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// With keys: `sealed` (default), or `staged` (sealed out, plaintext
    /// still in: the step that turns encryption on in a running cluster),
    /// or `plaintext` (plaintext out; sealed in too).
    #[arg(long, value_enum)]
    seal_mode: Option<SealModeArg>,
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
    /// default 1400): lower it when the seal (39 bytes) and the headers must
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
    /// address only).
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
    /// A TOML file with the same settings (`name`, `bind`, `advertise`,
    /// `join`, `key_file`, `seal_mode`, `preset`, `cluster`, `data_dir`,
    /// `datagram_budget`, `log_level`, `http`, `http_token_file`, `http_hosts`,
    /// `record_arrivals`, `event_history`, `watch`, a `[tags]` table and a
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

/// Reads a key file: one key per line, 64 hex digits or base64.
fn keys(path: &Path, what: &str) -> Result<Keyring> {
    let text = read_text(path, "key file", 64 * 1024, "")?;
    let mut ring: Option<Keyring> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key = parse_key(line).ok_or_else(|| {
            UsageError(format!("{what}: line {}: not a 32-byte key (64 hex digits, or 44 characters of base64)", i + 1))
        })?;
        match &mut ring {
            None => ring = Some(Keyring::new(key)),
            Some(r) => {
                r.install(key).map_err(|e| UsageError(format!("{what}: line {}: {e}", i + 1)))?;
            }
        }
    }
    ring.ok_or_else(|| UsageError(format!("{what}: no key in {}", path.display())).into())
}

pub(crate) fn parse_key(text: &str) -> Option<[u8; 32]> {
    let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        (0..32).map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()).collect::<Option<Vec<u8>>>()?
    } else {
        base64(text)?
    };
    bytes.try_into().ok()
}

/// Standard base64 (with or without padding).
fn base64(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let digits: Vec<u8> = text.trim_end_matches('=').bytes().collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= value(c)? << (18 - 6 * i);
        }
        let n = match chunk.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => return None,
        };
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
    }
    Some(out)
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

/// The graded policies: the file's `[policies]`, then each `--policy
/// NAME=THRESHOLD` over them.
fn policies(
    flags: &[String],
    file: &std::collections::BTreeMap<String, f64>,
    path: Option<&Path>,
) -> Result<Vec<vigil_detector::Policy>> {
    let mut all = file.clone();
    for p in flags {
        let (name, threshold) = p
            .split_once('=')
            .and_then(|(n, t)| Some((n.trim(), t.trim().parse::<f64>().ok()?)))
            .ok_or_else(|| UsageError(format!("--policy {}: expected NAME=THRESHOLD", vigil_lab::millis::quoted(p))))?;
        all.insert(name.to_owned(), threshold);
    }
    if all.len() > 16 {
        let from = if flags.is_empty() { origin(false, "policies", path) } else { "--policy".to_owned() };
        return Err(UsageError(format!("{from}: {} policies, at most 16", all.len())).into());
    }
    Ok(all.into_iter().map(|(name, threshold)| vigil_detector::Policy::new(name, threshold)).collect())
}

/// The log line of an event: verdicts and warnings about this member itself.
fn log_event(e: &Event) {
    match e {
        Event::Suspected { id, by, level } => match level {
            Some(phi) => tracing::info!("{id} suspected by {} (φ {phi:.2})", by.name),
            None => tracing::info!("{id} suspected by {}", by.name),
        },
        Event::Dead { id, by } => tracing::info!("{id} declared dead by {}", by.name),
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

/// Runs `vigil agent` until SIGTERM or SIGINT.
pub(crate) fn run(a: &AgentArgs, out: &mut dyn Write) -> Result<()> {
    let file_path = a.config.as_deref();
    let file: FileSettings = match file_path {
        Some(p) => {
            let text = read_text(p, "config file", 1024 * 1024, "")?;
            toml::from_str(&text).map_err(|e| UsageError(format!("{}: {e}", p.display())))?
        }
        None => FileSettings::default(),
    };
    let pick = |flag: &Option<String>, file: &Option<String>, name: &str| -> Option<(String, String)> {
        match (flag, file) {
            (Some(v), _) => Some((v.clone(), origin(true, name, file_path))),
            (None, Some(v)) => Some((v.clone(), origin(false, name, file_path))),
            _ => None,
        }
    };
    let (name, name_from) =
        pick(&a.name, &file.name, "name").ok_or_else(|| UsageError("--name: every member needs a name".into()))?;
    let bind = match pick(&a.bind, &file.bind, "bind") {
        Some((v, from)) => address(&from, &v)?,
        None => SocketAddr::from(([0, 0, 0, 0], 7946)),
    };
    let advertise = pick(&a.advertise, &file.advertise, "advertise").map(|(v, from)| address(&from, &v)).transpose()?;
    let (join_texts, join_from) = if a.join.is_empty() {
        (file.join.clone(), origin(false, "join", file_path))
    } else {
        (a.join.clone(), origin(true, "join", file_path))
    };
    let expects_peers = !join_texts.is_empty();
    let mut seeds = Vec::new();
    for t in join_texts.iter().flat_map(|t| t.split(',')).map(str::trim).filter(|t| !t.is_empty()) {
        seeds.push(address(&join_from, t)?);
    }
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
    let keyring = key_file.map(|(p, from)| keys(&p, &from)).transpose()?;
    let mode = match (a.seal_mode.or(file.seal_mode), &keyring) {
        (Some(SealModeArg::Plaintext), _) => Mode::Plaintext,
        (Some(SealModeArg::Staged), _) => Mode::Staged,
        (Some(SealModeArg::Sealed), _) | (None, Some(_)) => Mode::Sealed,
        (None, None) => Mode::Plaintext,
    };
    if mode != Mode::Plaintext && keyring.is_none() {
        return Err(UsageError("--seal-mode: sealing needs keys (--key-file)".into()).into());
    }
    let data_dir = a.data_dir.clone().or(file.data_dir.clone());
    let tags = tags(&a.tags, &file.tags, file_path)?;
    let mut config = config;
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
            Some((p, flag)) => Some(token(&p, &origin(flag, "http_token_file", file_path))?),
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
    let level = a.log_level.or(file.log_level).unwrap_or(LogLevel::Info);
    // Logs go to stderr, plain text; stdout is for events.
    let _ = tracing_subscriber::fmt().with_max_level(level.filter()).with_writer(std::io::stderr).try_init();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(async move {
        // The API's address is checked before the member starts.
        let http_listener = http_listener(&http).await?;
        let mut builder = Cluster::builder(&name).bind(bind).seeds(seeds).config(config).tags(tags);
        if let Some(addr) = advertise {
            builder = builder.advertise(addr);
        }
        if let Some(ring) = keyring {
            builder = builder.keys(ring, mode);
        }
        if let Some(dir) = &data_dir {
            builder = builder.data_dir(dir);
        }
        let member = builder.start().await.map_err(|e| {
            let text = e.to_string();
            // A bad name is the user's setting; other failures name theirs.
            if text.contains("name") { UsageError(format!("{name_from}: {text}")) } else { UsageError(text) }
        })?;
        tracing::info!(
            "started {} (generation {}) on {}, advertising {}{}",
            member.id().name,
            member.id().generation,
            member.local_addr(),
            member.advertise_addr(),
            if mode == Mode::Plaintext { ", plaintext" } else { ", sealed" }
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
                sealed: mode == Mode::Sealed,
                expects_peers,
                fleet: None,
                hosts: http_hosts,
            };
            tracing::info!("HTTP API on http://{addr} (dashboard at /, metrics at /metrics)");
            http::start(listener, api);
        }
        let mut events = member.events();
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        loop {
            tokio::select! {
                e = events.next() => {
                    let Some(e) = e else { break };
                    // Members to watch for the application, as they come.
                    if let Event::Up { id, .. } = &e.event
                        && watch.contains(&*id.name)
                    {
                        member.watch(&id.name).await;
                    }
                    let tags = match &e.event {
                        Event::Up { id, .. } => member.member(&id.name).await.filter(|v| v.id == *id).map(|v| v.tags),
                        _ => None,
                    };
                    log_event(&e.event);
                    if let Some(line) = recorder.record(&member.id().name, &e, tags.as_ref()) {
                        writeln!(out, "{line}")?;
                        out.flush()?;
                    }
                }
                _ = term.recv() => break,
                _ = tokio::signal::ctrl_c() => break,
                Some(()) = leave_rx.recv() => {
                    tracing::info!("asked to leave through the API");
                    break;
                }
            }
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

/// Reads the bearer token: the file's first line, 16 to 4096 printable
/// characters.
fn token(path: &Path, what: &str) -> Result<String> {
    let text = read_text(path, "token file", 64 * 1024, "")?;
    let t = text.lines().next().unwrap_or("").trim();
    if t.len() < 16 || t.len() > 4096 || !t.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(UsageError(format!(
            "{what}: the token in {} must be 16 to 4096 printable characters on the first line",
            path.display()
        ))
        .into());
    }
    Ok(t.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_hex_and_base64_are_the_same_key() {
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        let b64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        let want: [u8; 32] = std::array::from_fn(|i| i as u8);
        assert_eq!(parse_key(hex), Some(want));
        assert_eq!(parse_key(b64), Some(want));
        assert_eq!(parse_key(b64.trim_end_matches('=')), Some(want));
        for bad in ["00", "zz", &hex[..62], "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=AA", "not base64!"] {
            assert_eq!(parse_key(bad), None, "{bad}");
        }
    }
}
