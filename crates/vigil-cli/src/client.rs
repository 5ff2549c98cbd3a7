//! `vigil members`, `vigil events`, `vigil monitor`, `vigil keys`, `vigil
//! join`, `vigil leave` and `vigil tags`: thin clients of a running agent's
//! HTTP API.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;
use serde::de::DeserializeOwned;
use vigil_agent::api::body::{
    ClusterKeyOp, ClusterKeys, ErrorBody, ForceLeave, ForcedOut, JoinRequest, Joined, KeyInstalled, KeyRemoved,
    KeyUsed, Keys, Leaving, Members, NewKey, PolicyTune, SelfView, StatusName, TagChange, TagsNow,
};
use vigil_agent::record::{EventRecord, What};
use vigil_lab::text::escaped;

use crate::error::UsageError;
use crate::json::terminal_safe;
use crate::limits::fixed;

/// Where the agent is, and the token for changes.
#[derive(Debug, Args)]
pub(crate) struct Target {
    /// The agent's HTTP API (default: $VIGIL_HTTP_ADDR, else 127.0.0.1:8470,
    /// the agent's default).
    #[arg(long, value_name = "IP:PORT", global = true)]
    http: Option<String>,
    /// A file holding the bearer token (default: the token itself in
    /// $VIGIL_HTTP_TOKEN).
    #[arg(long, value_name = "FILE", global = true)]
    token_file: Option<PathBuf>,
}

/// The largest answer read (a members list of 65,535 members with tags
/// fits).
const MAX_ANSWER: u64 = 256 * 1024 * 1024;
/// The longest one server-sent line taken.
const MAX_EVENT_LINE: usize = 1024 * 1024;

struct Client {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl Client {
    fn new(t: &Target, streaming: bool) -> Result<Client> {
        let addr = match &t.http {
            Some(a) => a.clone(),
            None => std::env::var("VIGIL_HTTP_ADDR").unwrap_or_else(|_| vigil_agent::defaults::HTTP.to_string()),
        };
        let what = if t.http.is_some() { "--http" } else { "$VIGIL_HTTP_ADDR" };
        addr.parse::<std::net::SocketAddr>().map_err(|_| {
            UsageError(format!("{what}: {} is not an address (IP:PORT)", vigil_lab::millis::quoted(&addr)))
        })?;
        let token = match &t.token_file {
            Some(p) => Some(vigil_agent::secrets::token_file(p).map_err(|e| UsageError(format!("--token-file: {e}")))?),
            None => std::env::var("VIGIL_HTTP_TOKEN").ok().map(|t| t.trim().to_owned()),
        };
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(5)))
            .timeout_global(if streaming { None } else { Some(Duration::from_secs(30)) });
        Ok(Client { base: format!("http://{addr}"), token, agent: config.build().into() })
    }

    fn unreachable(&self, e: ureq::Error) -> anyhow::Error {
        anyhow::anyhow!(
            "cannot reach the agent at {} ({e}): is it running, with its API on? (--http IP:PORT)",
            self.base
        )
    }

    /// The answer, read as `T`, or the API's error as an error.
    fn answer<T: DeserializeOwned>(&self, mut r: ureq::http::Response<ureq::Body>) -> Result<T> {
        let status = r.status();
        let text =
            r.body_mut().with_config().limit(MAX_ANSWER).read_to_string().context("reading the agent's answer")?;
        if !status.is_success() {
            let message = serde_json::from_str::<ErrorBody>(&text)
                .map(|e| e.error)
                .unwrap_or_else(|_| vigil_lab::millis::quoted(&text));
            return Err(UsageError(format!("the agent refused ({status}): {message}")).into());
        }
        serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "the agent at {} answered {status} with something that is not what this version of vigil reads: {e}",
                self.base
            )
        })
    }

    fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        let r = self.agent.get(format!("{}{path}", self.base)).call().map_err(|e| self.unreachable(e))?;
        self.answer(r)
    }

    fn send<T: DeserializeOwned>(&self, method: &str, path: &str, body: Option<&impl Serialize>) -> Result<T> {
        let url = format!("{}{path}", self.base);
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let r = if method == "DELETE" {
            let mut req = self.agent.delete(&url);
            if let Some(a) = &auth {
                req = req.header("Authorization", a);
            }
            req.call()
        } else {
            let req = if method == "PATCH" { self.agent.patch(&url) } else { self.agent.post(&url) };
            let mut req = req.header("Content-Type", "application/json");
            if let Some(a) = &auth {
                req = req.header("Authorization", a);
            }
            let body = match body {
                Some(b) => serde_json::to_string(b).context("a request body")?,
                None => "{}".to_owned(),
            };
            req.send(body)
        };
        self.answer(r.map_err(|e| self.unreachable(e))?)
    }

    fn get_authorized<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        let mut req = self.agent.get(format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        self.answer(req.call().map_err(|e| self.unreachable(e))?)
    }
}

/// A typed answer as JSON, safe to print.
fn print_json(out: &mut dyn Write, v: &impl Serialize) -> Result<()> {
    writeln!(out, "{}", terminal_safe(&serde_json::to_string(v)?))?;
    Ok(())
}

// ---- members ----

/// Arguments of `vigil members`.
#[derive(Debug, Args)]
pub(crate) struct MembersArgs {
    #[command(flatten)]
    target: Target,
    /// Only members with this status (alive, suspect, dead, left).
    #[arg(long, value_parser = ["alive", "suspect", "dead", "left"])]
    status: Option<String>,
    /// Print the API's JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `vigil members`.
pub(crate) fn members(a: &MembersArgs, out: &mut dyn Write) -> Result<()> {
    let c = Client::new(&a.target, false)?;
    let mut v: Members = c.get("/v1/members")?;
    let me: SelfView = c.get("/v1/self")?;
    if let Some(status) = &a.status {
        v.members.retain(|m| m.status.name() == status.as_str());
    }
    if a.json {
        return print_json(out, &v);
    }
    let tags = |t: &std::collections::BTreeMap<String, String>| {
        t.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
    };
    let mut rows = vec![["NAME", "ADDRESS", "STATUS", "GENERATION", "INC", "φ", "INTERVAL", "TAGS"].map(str::to_owned)];
    if a.status.as_deref().is_none_or(|s| s == "alive") {
        rows.push([
            format!("{} (self)", me.name),
            me.address.clone(),
            StatusName::Alive.name().into(),
            me.generation.to_string(),
            me.incarnation.to_string(),
            "-".into(),
            "-".into(),
            tags(&me.tags),
        ]);
    }
    for m in &v.members {
        let w = m.watched.as_ref();
        let phi = match w {
            Some(w) if w.phi_capped => "inf".to_owned(),
            Some(w) => w.phi.map_or_else(|| "unheard".into(), |p| fixed(p, 2)),
            None => "-".into(),
        };
        let interval = match w.map(|w| (w.mean_interval_ms, w.std_dev_ms)) {
            Some((Some(m), Some(s))) => format!("{}±{} ms", fixed(m, 0), fixed(s, 0)),
            _ => "-".into(),
        };
        rows.push([
            m.name.clone(),
            m.address.clone(),
            m.status.name().into(),
            m.generation.to_string(),
            m.incarnation.to_string(),
            phi,
            interval,
            tags(&m.tags),
        ]);
    }
    // Every cell is the agent's text: shown, never acted on by the terminal.
    let rows: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| escaped(c).into_owned()).collect()).collect();
    let widths: Vec<usize> = (0..8).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    for r in rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        writeln!(out, "{}", line.join("  ").trim_end())?;
    }
    Ok(())
}

// ---- events ----

/// Arguments of `vigil events`.
#[derive(Debug, Args)]
pub(crate) struct EventsArgs {
    #[command(flatten)]
    target: Target,
    /// Start after this event id, or `now` for new events only (default:
    /// every event the agent still keeps).
    #[arg(long, value_name = "ID|now")]
    after: Option<String>,
    /// Stop after this many events (default: follow until interrupted).
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Print the events' JSON, one per line.
    #[arg(long)]
    json: bool,
}

/// Runs `vigil events`: follows the stream, resuming after the last id
/// seen if the connection drops.
pub(crate) fn events(a: &EventsArgs, out: &mut dyn Write) -> Result<()> {
    let c = Client::new(&a.target, true)?;
    if let Some(after) = &a.after
        && after != "now"
        && after.parse::<u64>().is_err()
    {
        return Err(UsageError(format!(
            "--after: {} is not an event id (a whole number, or `now`)",
            vigil_lab::millis::quoted(after)
        ))
        .into());
    }
    let mut last: Option<String> = a.after.clone();
    let mut seen = 0u64;
    let mut failures = 0u32;
    loop {
        let mut req = c.agent.get(format!("{}/v1/events", c.base)).header("Accept", "text/event-stream");
        if let Some(id) = &last {
            req = req.header("Last-Event-ID", id);
        }
        let r = match req.call() {
            Ok(r) => r,
            // The first connection must work; a dropped one is retried.
            Err(e) if seen == 0 && failures == 0 => return Err(c.unreachable(e)),
            Err(e) => {
                failures += 1;
                if failures > 30 {
                    return Err(c.unreachable(e));
                }
                say!(
                    "vigil: the stream from {} dropped ({e}); resuming after {}",
                    c.base,
                    last.as_deref().unwrap_or("the start")
                );
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
        };
        if !r.status().is_success() {
            return c.answer::<serde_json::Value>(r).map(|_| ());
        }
        // Whether this connection brought an event not seen before: one that
        // keeps ending without any is retried a bounded number of times.
        let mut progressed = false;
        let mut reader = BufReader::new(r.into_body().into_reader());
        while let Some(sse) = next_sse(&mut reader, &c.base)? {
            match serde_json::from_str::<EventRecord>(&sse.data) {
                Ok(EventRecord { what: What::Missed { count, .. }, .. }) if sse.kind == "missed" => {
                    say!("vigil: {count} events were no longer kept by the agent");
                }
                Ok(record) => {
                    print_event(out, &record, a.json)?;
                    seen += 1;
                    if a.count.is_some_and(|n| seen >= n) {
                        return Ok(());
                    }
                }
                Err(e) => say!(
                    "vigil: an event from the agent is not a record this version reads ({e}); skipped: {}",
                    vigil_lab::millis::quoted(&sse.data)
                ),
            }
            // Taken or skipped, it is not asked for again.
            if let Some(i) = sse.id {
                progressed |= last.as_ref() != Some(&i);
                last = Some(i);
            }
        }
        if progressed {
            failures = 0;
            continue;
        }
        failures += 1;
        if failures > 30 {
            return Err(anyhow::anyhow!("the stream from {} ended 30 times in a row without a new event", c.base));
        }
        say!("vigil: the stream from {} ended; resuming after {}", c.base, last.as_deref().unwrap_or("the start"));
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// One server-sent event: its id, its kind (`event:`) and its data.
#[derive(Debug, Default)]
struct ServerSent {
    id: Option<String>,
    kind: String,
    data: String,
}

/// The next server-sent event with data from `reader` (blocks until it
/// comes), or `None` at the end of the stream; a line longer than
/// [`MAX_EVENT_LINE`] is an error, never read whole.
fn next_sse(reader: &mut impl BufRead, base: &str) -> Result<Option<ServerSent>> {
    let mut sse = ServerSent::default();
    let mut line = String::new();
    loop {
        line.clear();
        let n = std::io::Read::take(&mut *reader, MAX_EVENT_LINE as u64).read_line(&mut line).unwrap_or(0);
        if n == 0 {
            return Ok(None);
        }
        if !line.ends_with('\n') && n >= MAX_EVENT_LINE {
            return Err(anyhow::anyhow!(
                "the agent at {base} sent an event line longer than {}",
                crate::limits::binary_size(MAX_EVENT_LINE as u64)
            ));
        }
        let l = line.trim_end_matches(['\n', '\r']);
        if l.is_empty() {
            // The end of one event; one without data (a keep-alive) is none.
            if !sse.data.is_empty() {
                return Ok(Some(sse));
            }
            sse = ServerSent::default();
        } else if let Some(v) = l.strip_prefix("data:") {
            if !sse.data.is_empty() {
                sse.data.push('\n');
            }
            sse.data.push_str(v.strip_prefix(' ').unwrap_or(v));
        } else if let Some(v) = l.strip_prefix("id:") {
            sse.id = Some(v.trim().to_owned());
        } else if let Some(v) = l.strip_prefix("event:") {
            sse.kind = v.trim().to_owned();
        }
    }
}

// ---- monitor ----

/// Arguments of `vigil monitor`.
#[derive(Debug, Args)]
pub(crate) struct MonitorArgs {
    #[command(flatten)]
    target: Target,
    /// The most verbose level shown: error, warn, info, debug or trace,
    /// whatever the agent's own --log-level.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    level: vigil_agent::log_stream::Level,
    /// Print the lines' JSON, one per line.
    #[arg(long)]
    json: bool,
}

/// Runs `vigil monitor`: the agent's log from now on, until interrupted or
/// the agent stops.
pub(crate) fn monitor(a: &MonitorArgs, out: &mut dyn Write) -> Result<()> {
    let c = Client::new(&a.target, true)?;
    let mut req = c.agent.get(format!("{}/v1/monitor?level={}", c.base, a.level)).header("Accept", "text/event-stream");
    if let Some(t) = &c.token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let r = req.call().map_err(|e| c.unreachable(e))?;
    if !r.status().is_success() {
        return c.answer::<serde_json::Value>(r).map(|_| ());
    }
    let mut reader = BufReader::new(r.into_body().into_reader());
    while let Some(sse) = next_sse(&mut reader, &c.base)? {
        if sse.kind == "missed" {
            let n = serde_json::from_str::<serde_json::Value>(&sse.data).ok().and_then(|v| v["missed"].as_u64());
            say!("vigil: {} log lines lost: this reader was too slow", n.map_or("some".to_owned(), |n| n.to_string()));
            continue;
        }
        match serde_json::from_str::<vigil_agent::log_stream::LogLine>(&sse.data) {
            Ok(line) if a.json => print_json(out, &line)?,
            Ok(line) => {
                let fields: String = line.fields.iter().map(|(k, v)| format!(" {k}={v}")).collect();
                let text = format!("{:>5} {}: {}{fields}", line.level.to_uppercase(), line.target, line.message);
                writeln!(out, "{}  {}", clock(line.ts_ms), escaped(&text))?;
            }
            Err(e) => say!("vigil: a log line this version does not read ({e}); skipped"),
        }
        out.flush()?;
    }
    Err(anyhow::anyhow!("the agent at {} closed its log stream (it stopped?)", c.base))
}

/// One event: its JSON (the same record, safe to print), or its time and
/// sentence.
fn print_event(out: &mut dyn Write, record: &EventRecord, json: bool) -> Result<()> {
    if json {
        print_json(out, record)?;
    } else {
        writeln!(out, "{}  {}", clock(record.ts_ms), escaped(&record.to_string()))?;
    }
    out.flush()?;
    Ok(())
}

/// `HH:MM:SS.mmm` (UTC) of a Unix time in milliseconds.
fn clock(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}.{:03}", (s / 3600) % 24, (s / 60) % 60, s % 60, ms % 1000)
}

// ---- keys ----

/// Arguments of `vigil keys`.
#[derive(Debug, Args)]
pub(crate) struct KeysArgs {
    #[command(subcommand)]
    action: KeysAction,
    #[command(flatten)]
    target: Target,
    /// Print the API's JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum KeysAction {
    /// The keys by id, with what each sealed and opened on this agent; with
    /// `--everywhere`, which members hold each key and where it seals.
    List {
        /// Ask every member.
        #[arg(long)]
        everywhere: bool,
    },
    /// Install a key on every member (it opens packets from now on; with
    /// `--local`, on this agent only): from a file's first key line, so it
    /// never appears in the process list.
    Install {
        /// The file holding the key (64 hex digits or base64).
        #[arg(long, value_name = "FILE")]
        key_file: PathBuf,
        /// This agent only.
        #[arg(long)]
        local: bool,
    },
    /// Seal with this key from now on, on every member (with `--local`,
    /// this agent only). Install it everywhere first.
    Use {
        /// The key's id, as listed.
        id: String,
        /// This agent only.
        #[arg(long)]
        local: bool,
    },
    /// Remove a key (not the primary one) from every member (with
    /// `--local`, from this agent only).
    Remove {
        /// The key's id, as listed.
        id: String,
        /// This agent only.
        #[arg(long)]
        local: bool,
    },
}

/// Runs `vigil keys`. An operation on every member prints each member's
/// answer and fails (exit 1) when a member refused or did not answer.
pub(crate) fn keys(a: &KeysArgs, out: &mut dyn Write) -> Result<()> {
    let c = Client::new(&a.target, false)?;
    let everywhere = |op: &str, key: Option<String>, id: Option<String>| -> Result<ClusterKeys> {
        c.send("POST", "/v1/cluster/keys", Some(&ClusterKeyOp { op: op.to_owned(), key, id }))
    };
    let done = match &a.action {
        KeysAction::List { everywhere: true } => {
            let r = everywhere("list", None, None)?;
            return cluster_keys(a, out, &r, "list");
        }
        KeysAction::List { everywhere: false } => {
            let keys: Keys = c.get_authorized("/v1/keys")?;
            if a.json {
                return print_json(out, &keys);
            }
            if keys.keys.is_empty() {
                writeln!(out, "this agent has no keys: its packets are plaintext (start it with --key-file)")?;
                return Ok(());
            }
            writeln!(out, "{:<10} {:<8} {:>10} {:>10}", "ID", "PRIMARY", "SEALED", "OPENED")?;
            for k in &keys.keys {
                let primary = if k.primary { "yes" } else { "" };
                writeln!(out, "{:<10} {:<8} {:>10} {:>10}", escaped(&k.id), primary, k.sealed, k.opened)?;
            }
            return Ok(());
        }
        KeysAction::Install { key_file, local } => {
            let text = vigil_agent::secrets::read_secret(key_file, "key file")
                .map_err(|e| UsageError(format!("--key-file: {e}")))?;
            let key = vigil_agent::secrets::first_key_line(&text)
                .ok_or_else(|| UsageError(format!("--key-file: no key in {}", key_file.display())))?;
            if !local {
                let r = everywhere("install", Some(key.to_owned()), None)?;
                return cluster_keys(a, out, &r, "install");
            }
            let r: KeyInstalled = c.send("POST", "/v1/keys", Some(&NewKey { key: key.to_owned() }))?;
            if a.json {
                return print_json(out, &r);
            }
            format!("installed key {}", r.id)
        }
        KeysAction::Use { id, local } => {
            let id = path_segment(id)?;
            if !local {
                let r = everywhere("use", None, Some(id.to_owned()))?;
                return cluster_keys(a, out, &r, "use");
            }
            let r: KeyUsed = c.send("POST", &format!("/v1/keys/{id}/use"), None::<&()>)?;
            if a.json {
                return print_json(out, &r);
            }
            format!("key {} now seals", r.primary)
        }
        KeysAction::Remove { id, local } => {
            let id = path_segment(id)?;
            if !local {
                let r = everywhere("remove", None, Some(id.to_owned()))?;
                return cluster_keys(a, out, &r, "remove");
            }
            let r: KeyRemoved = c.send("DELETE", &format!("/v1/keys/{id}"), None::<&()>)?;
            if a.json {
                return print_json(out, &r);
            }
            format!("removed key {}", r.removed)
        }
    };
    writeln!(out, "{}", escaped(&done))?;
    Ok(())
}

/// Every member's answer to a key operation: a line each (its keys, the
/// primary marked `*`), then, for a list, how many members hold each key.
fn cluster_keys(a: &KeysArgs, out: &mut dyn Write, r: &ClusterKeys, op: &str) -> Result<()> {
    if a.json {
        print_json(out, r)?;
    } else {
        for m in &r.members {
            match (&m.keys, &m.error) {
                (Some(keys), _) => {
                    let keys: Vec<String> =
                        keys.iter().map(|k| format!("{}{}", k.id, if k.primary { "*" } else { "" })).collect();
                    writeln!(out, "{}: {}", escaped(&m.name), escaped(&keys.join(" ")))?;
                }
                (None, why) => writeln!(out, "{}: {}", escaped(&m.name), escaped(why.as_deref().unwrap_or("failed")))?,
            }
        }
        if op == "list" {
            let mut held: std::collections::BTreeMap<&str, (usize, usize)> = std::collections::BTreeMap::new();
            for k in r.members.iter().filter_map(|m| m.keys.as_ref()).flatten() {
                let e = held.entry(k.id.as_str()).or_default();
                e.0 += 1;
                e.1 += usize::from(k.primary);
            }
            for (id, (n, primary)) in held {
                writeln!(out, "key {}: held by {n} of {} members, seals on {primary}", escaped(id), r.members.len())?;
            }
        }
    }
    if r.failed > 0 {
        return Err(crate::error::CheckFailed(format!(
            "{op}: {} of {} members refused or did not answer",
            r.failed,
            r.members.len()
        ))
        .into());
    }
    Ok(())
}

/// A key id as typed: 8 hex digits (checked here, so that nothing else
/// reaches the URL).
fn path_segment(id: &str) -> Result<&str> {
    if id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(id)
    } else {
        Err(UsageError(format!(
            "{}: not a key id (8 hex digits, as `vigil keys list` shows)",
            vigil_lab::millis::quoted(id)
        ))
        .into())
    }
}

// ---- join, leave, tags ----

/// Arguments of `vigil join`.
#[derive(Debug, Args)]
pub(crate) struct JoinArgs {
    #[command(flatten)]
    target: Target,
    /// Seeds, as `--join` takes them: `IP:PORT`, `HOST:PORT`,
    /// `dns+HOST:PORT`, `dnssrv+NAME`.
    #[arg(required = true, value_name = "SEED")]
    seeds: Vec<String>,
    /// Print the API's JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `vigil join`: exit 0 when every seed gave a member, 1 when some
/// did not (each said, with why).
pub(crate) fn join(a: &JoinArgs, out: &mut dyn Write) -> Result<()> {
    let c = Client::new(&a.target, false)?;
    let r: Joined = c.send("POST", "/v1/join", Some(&JoinRequest { seeds: a.seeds.clone() }))?;
    if a.json {
        print_json(out, &r)?;
    } else {
        for s in &r.seeds {
            match &s.error {
                None => writeln!(out, "{}: joined {}", escaped(&s.seed), escaped(&s.members.join(", ")))?,
                Some(why) => writeln!(out, "{}: {}", escaped(&s.seed), escaped(why))?,
            }
        }
    }
    if r.joined < r.seeds.len() {
        return Err(crate::error::CheckFailed(format!(
            "{} of {} seeds gave no member",
            r.seeds.len() - r.joined,
            r.seeds.len()
        ))
        .into());
    }
    Ok(())
}

/// Arguments of `vigil leave`.
#[derive(Debug, Args)]
pub(crate) struct LeaveArgs {
    #[command(flatten)]
    target: Target,
}

/// Runs `vigil leave`: the agent announces its leave and stops, for good
/// (it forgets the members it knew, so a restart does not rejoin them).
pub(crate) fn leave(a: &LeaveArgs, out: &mut dyn Write) -> Result<()> {
    let c = Client::new(&a.target, false)?;
    let r: Leaving = c.send("POST", "/v1/leave", None::<&()>)?;
    writeln!(
        out,
        "{}: the agent announces its leave and stops, for good (a restart rejoins through its seeds only)",
        escaped(&r.status)
    )?;
    Ok(())
}

/// Arguments of `vigil force-leave`.
#[derive(Debug, Args)]
pub(crate) struct ForceLeaveArgs {
    #[command(flatten)]
    target: Target,
    /// The member believed dead.
    member: String,
    /// Forget it on this agent at once too.
    #[arg(long)]
    prune: bool,
}

/// Runs `vigil force-leave`.
pub(crate) fn force_leave(a: &ForceLeaveArgs, out: &mut dyn Write) -> Result<()> {
    let c = Client::new(&a.target, false)?;
    let r: ForcedOut =
        c.send("POST", "/v1/force-leave", Some(&ForceLeave { member: a.member.clone(), prune: a.prune }))?;
    writeln!(out, "{}: {}", escaped(&r.member), escaped(&r.status))?;
    Ok(())
}

/// Arguments of `vigil tune`.
#[derive(Debug, Args)]
pub(crate) struct TuneArgs {
    #[command(flatten)]
    target: Target,
    /// The policy's new settings, in `--policy`'s grammar:
    /// `NAME=THRESHOLD[,dwell=D][,rearm=L][,recovery=N]` (with `ejection`
    /// and `destructive` as the agent runs it).
    #[arg(value_name = "POLICY")]
    policy: String,
}

/// Runs `vigil tune`.
pub(crate) fn tune(a: &TuneArgs, out: &mut dyn Write) -> Result<()> {
    let c = Client::new(&a.target, false)?;
    let r: PolicyTune = c.send("POST", "/v1/policies", Some(&PolicyTune { policy: a.policy.clone() }))?;
    writeln!(out, "retuned {}", escaped(&r.policy))?;
    Ok(())
}

/// Arguments of `vigil tags`.
#[derive(Debug, Args)]
pub(crate) struct TagsArgs {
    #[command(flatten)]
    target: Target,
    /// A tag to set, `KEY=VALUE` (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// A tag to delete (repeatable).
    #[arg(long, value_name = "KEY")]
    delete: Vec<String>,
    /// Print the API's JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `vigil tags`: without `--set` or `--delete`, the agent's tags;
/// with them, the change, announced to the cluster, and the tags after it.
pub(crate) fn tags(a: &TagsArgs, out: &mut dyn Write) -> Result<()> {
    let c = Client::new(&a.target, false)?;
    let now: TagsNow = if a.set.is_empty() && a.delete.is_empty() {
        let me: SelfView = c.get("/v1/self")?;
        TagsNow { tags: me.tags }
    } else {
        let mut change = TagChange { delete: a.delete.clone(), ..TagChange::default() };
        for t in &a.set {
            let (k, v) = t.split_once('=').ok_or_else(|| {
                UsageError(format!("--set: {} is not a tag (KEY=VALUE)", vigil_lab::millis::quoted(t)))
            })?;
            change.set.insert(k.to_owned(), v.to_owned());
        }
        c.send("PATCH", "/v1/self/tags", Some(&change))?
    };
    if a.json {
        return print_json(out, &now);
    }
    for (k, v) in &now.tags {
        writeln!(out, "{}={}", escaped(k), escaped(v))?;
    }
    Ok(())
}
