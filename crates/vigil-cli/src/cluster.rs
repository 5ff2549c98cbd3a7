//! `vigil cluster`: a small cluster in one process on loopback, with the
//! dashboard and the API of its first member, and faults a newcomer can
//! inject from the page or from the terminal. The members, the faults, the
//! API and the event pipeline are `vigil-agent`'s; this module reads the
//! terminal and prints.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use tokio::sync::mpsc;
use vigil_agent::api::{ApiState, serve};
use vigil_agent::fleet::{Fault, Fleet};
use vigil_agent::pipeline::Pipeline;
use vigil_agent::recorder::Recorder;
use vigil_agent::settings::Preset;
use vigil_lab::text::escaped;
use vigil_net::DEFAULT_CLUSTER;

use crate::error::UsageError;

/// Arguments of `vigil cluster`.
#[derive(Debug, Args)]
pub(crate) struct ClusterArgs {
    /// Members (2 to 64), named n1, n2, ...; n1 serves the dashboard.
    #[arg(long, default_value_t = 5)]
    nodes: usize,
    /// Where the dashboard and the API listen.
    #[arg(long, value_name = "IP:PORT", default_value_t = vigil_agent::defaults::HTTP)]
    http: SocketAddr,
    /// The protocol's preset: lan or lan-fast.
    #[arg(long, default_value = "lan", value_parser = ["lan", "lan-fast"])]
    preset: String,
    /// Print events as JSON lines instead of sentences.
    #[arg(long)]
    json: bool,
}

const HELP: &str =
    "commands: crash NAME | restart NAME | pause NAME [SECONDS] | partition NAME | heal NAME | members | quit";

/// Runs `vigil cluster` until `quit`, SIGTERM or SIGINT.
pub(crate) fn run(a: &ClusterArgs, out: &mut dyn Write) -> Result<()> {
    if !(2..=64).contains(&a.nodes) {
        return Err(UsageError(format!("--nodes: {} is out of range (2 to 64)", a.nodes)).into());
    }
    let preset = if a.preset == "lan-fast" { Preset::LanFast } else { Preset::Lan };
    let mut config = preset.config(DEFAULT_CLUSTER);
    config.recorded_arrivals = vigil_agent::defaults::RECORDED_ARRIVALS;
    let _ = tracing_subscriber::fmt().with_max_level(tracing::Level::WARN).with_writer(std::io::stderr).try_init();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(a.http)
            .await
            .map_err(|e| UsageError(format!("--http: cannot listen on {}: {e}", a.http)))?;
        // n1's events, from its very first.
        let fleet = Arc::new(Fleet::start(a.nodes, config).await.context("starting the members")?);
        let observer = fleet.observer().context("the fleet has a first member")?;
        let recorder = Recorder::new(vigil_agent::defaults::EVENT_HISTORY);
        let (leave_tx, mut leave_rx) = mpsc::channel(1);
        let state = ApiState::new(observer.clone(), recorder.clone())
            .leave(leave_tx)
            .sealed(false, true)
            .fleet(fleet.clone())
            .detector(vigil_agent::agent::detector_spec(&preset.config(0), None), preset.config(0).suspect_level);
        let http_local = serve(listener, state).context("the HTTP listener")?;
        writeln!(
            out,
            "vigil cluster: {} members on 127.0.0.1 (n1 at {}), seen from n1\ndashboard: http://{http_local}/   API: http://{http_local}/v1/members\n{HELP}",
            a.nodes,
            observer.local_addr()
        )?;
        out.flush()?;
        let (lines_tx, mut lines) = mpsc::channel::<String>(16);
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines().map_while(Result::ok) {
                if lines_tx.blocking_send(line).is_err() {
                    break;
                }
            }
        });
        let mut events = observer.events();
        let mut pipeline = Pipeline::new(observer.clone(), recorder, BTreeSet::new());
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        loop {
            tokio::select! {
                e = events.next() => {
                    let Some(e) = e else { break };
                    for (record, line) in pipeline.take(&e, events.missed()).await {
                        if a.json {
                            writeln!(out, "{}", crate::json::terminal_safe(&line))?;
                        } else {
                            writeln!(out, "{}", escaped(&record.to_string()))?;
                        }
                    }
                    out.flush()?;
                }
                Some(line) = lines.recv() => {
                    let reply = command(&fleet, &line).await;
                    if reply == "quit" {
                        break;
                    }
                    writeln!(out, "{}", escaped(&reply))?;
                    out.flush()?;
                }
                Some(()) = leave_rx.recv() => break,
                _ = term.recv() => break,
                _ = tokio::signal::ctrl_c() => break,
            }
        }
        fleet.shutdown().await;
        Ok(())
    })
}

/// Runs one line typed at the terminal; returns what to print (`quit` to
/// stop).
async fn command(fleet: &Fleet, line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    let fault = match words.as_slice() {
        [] => return String::new(),
        ["quit" | "exit"] => return "quit".into(),
        ["help"] => return HELP.into(),
        ["members"] => {
            return fleet
                .list()
                .members
                .iter()
                .map(|m| {
                    format!(
                        "{:<4} {:<22} {}{}",
                        m.name,
                        m.address.as_deref().unwrap_or("-"),
                        if m.running { "running" } else { "crashed" },
                        if m.partitioned { ", partitioned" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
        }
        ["pause", name, seconds] => {
            match seconds.parse::<f64>().map_err(|_| ()).and_then(|s| Fault::pause(s).map_err(|_| ())) {
                Ok(f) => (name, f),
                Err(()) => {
                    return format!(
                        "pause: {} is not a number of seconds (more than 0, at most {})",
                        vigil_lab::millis::quoted(seconds),
                        vigil_agent::defaults::MAX_PAUSE.as_secs()
                    );
                }
            }
        }
        [fault @ ("crash" | "restart" | "pause" | "partition" | "heal"), name] => match fault.parse::<Fault>() {
            Ok(f) => (name, f),
            Err(e) => return format!("{e}; {HELP}"),
        },
        _ => return format!("{}: not a command; {HELP}", vigil_lab::millis::quoted(line.trim())),
    };
    match fleet.inject(fault.0, fault.1).await {
        Ok(done) => done,
        Err(e) => e.to_string(),
    }
}
