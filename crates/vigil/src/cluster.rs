//! `vigil cluster`: a small cluster in one process on loopback, with the
//! dashboard and the API of its first member, and faults a newcomer can
//! inject from the page or from the terminal.

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use tokio::sync::mpsc;
use vigil_membership::{Config, Event};
use vigil_net::{Builder, Cluster, DEFAULT_CLUSTER, Faults};

use crate::UsageError;
use crate::agent::DEFAULT_HTTP;
use crate::http::fleet::{Fleet, MAX_PAUSE};
use crate::http::recorder::Recorder;
use crate::http::{self, Api};

/// Arguments of `vigil cluster`.
#[derive(Debug, Args)]
pub(crate) struct ClusterArgs {
    /// Members (2 to 64), named n1, n2, ...; n1 serves the dashboard.
    #[arg(long, default_value_t = 5)]
    nodes: usize,
    /// Where the dashboard and the API listen.
    #[arg(long, value_name = "IP:PORT", default_value = DEFAULT_HTTP)]
    http: String,
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
    let http_addr: SocketAddr = a.http.parse().map_err(|_| {
        UsageError(format!("--http: {} is not an address (IP:PORT)", vigil_lab::millis::quoted(&a.http)))
    })?;
    let mut config =
        if a.preset == "lan-fast" { Config::lan_fast(DEFAULT_CLUSTER) } else { Config::lan(DEFAULT_CLUSTER) };
    config.recorded_arrivals = 10_000;
    let _ = tracing_subscriber::fmt().with_max_level(tracing::Level::WARN).with_writer(std::io::stderr).try_init();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(http_addr)
            .await
            .map_err(|e| UsageError(format!("--http: cannot listen on {http_addr}: {e}")))?;
        let http_local = listener.local_addr().context("the HTTP listener's address")?;
        let loopback: SocketAddr = "127.0.0.1:0".parse().expect("an address");
        let mut members: Vec<(Builder, Arc<Faults>, Arc<Cluster>)> = Vec::new();
        let mut seed = None;
        for i in 1..=a.nodes {
            let faults = Arc::new(Faults::default());
            let mut b =
                Cluster::builder(&format!("n{i}")).bind(loopback).config(config.clone()).intercept(faults.clone());
            if let Some(s) = seed {
                b = b.seeds([s]);
            }
            let c = b.clone().start().await.with_context(|| format!("starting n{i}"))?;
            seed.get_or_insert(c.local_addr());
            // A restart takes a fresh port, joining through n1.
            members.push((b.bind(loopback).seeds(seed), faults, Arc::new(c)));
        }
        let observer = members[0].2.clone();
        let fleet = Arc::new(Fleet::new(members));
        let recorder = Recorder::new(1_000);
        let (leave_tx, mut leave_rx) = mpsc::channel(1);
        let api = Api {
            cluster: observer.clone(),
            recorder: recorder.clone(),
            token: None,
            loopback: http::is_loopback(http_local),
            leave: leave_tx,
            sealed: false,
            expects_peers: true,
            fleet: Some(fleet.clone()),
            hosts: Vec::new(),
        };
        http::start(listener, api);
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
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        loop {
            tokio::select! {
                e = events.next() => {
                    let Some(e) = e else { break };
                    if let Some(v) = recorder.record(&observer.id().name, &e) {
                        if a.json {
                            writeln!(out, "{v}")?;
                        } else {
                            writeln!(out, "{}", sentence(&e.event))?;
                        }
                        out.flush()?;
                    }
                }
                Some(line) = lines.recv() => {
                    let reply = command(&fleet, &line).await;
                    if reply == "quit" {
                        break;
                    }
                    writeln!(out, "{reply}")?;
                    out.flush()?;
                }
                Some(()) = leave_rx.recv() => break,
                _ = term.recv() => break,
                _ = tokio::signal::ctrl_c() => break,
            }
        }
        fleet.shutdown().await;
        observer.shutdown().await;
        Ok(())
    })
}

/// Runs one line typed at the terminal; returns what to print (`quit` to
/// stop).
async fn command(fleet: &Fleet, line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        [] => String::new(),
        ["quit" | "exit"] => "quit".into(),
        ["help"] => HELP.into(),
        ["members"] => {
            let v = fleet.list();
            v["members"]
                .as_array()
                .map(|ms| {
                    ms.iter()
                        .map(|m| {
                            format!(
                                "{:<4} {:<22} {}{}",
                                m["name"].as_str().unwrap_or(""),
                                m["address"].as_str().unwrap_or("-"),
                                if m["running"] == true { "running" } else { "crashed" },
                                if m["partitioned"] == true { ", partitioned" } else { "" }
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default()
        }
        [fault @ ("crash" | "restart" | "partition" | "heal"), name]
        | [fault @ "pause", name]
        | [fault @ "pause", name, _] => {
            let seconds = match words.get(2) {
                Some(s) => match s.parse::<f64>() {
                    Ok(x) if x > 0.0 && x <= MAX_PAUSE.as_secs_f64() => x,
                    _ => {
                        return format!(
                            "pause: {} is not a number of seconds (more than 0, at most 60)",
                            vigil_lab::millis::quoted(s)
                        );
                    }
                },
                None => 5.0,
            };
            match fleet.inject(name, fault, Duration::from_secs_f64(seconds)).await {
                Ok(done) => done,
                Err(e) => e.message().to_owned(),
            }
        }
        _ => format!("{}: not a command; {HELP}", vigil_lab::millis::quoted(line.trim())),
    }
}

/// An event as a sentence for the terminal.
fn sentence(e: &Event) -> String {
    let phi = |l: &Option<f64>| l.map(|l| format!(" (φ {l:.2})")).unwrap_or_default();
    match e {
        Event::Up { id, addr, .. } => format!("n1 sees {} up at {addr}", id.name),
        Event::Suspected { id, by, level } => format!("{} is suspected by {}{}", id.name, by.name, phi(level)),
        Event::Refuted { id, incarnation, .. } => {
            format!("{} refuted the suspicion (incarnation {incarnation})", id.name)
        }
        Event::Dead { id, by, .. } => format!("{} is declared dead by {}", id.name, by.name),
        Event::Left { id } => format!("{} left", id.name),
        Event::PathProblem { id, .. } => format!("{}: a path problem (silent, but it answered a probe)", id.name),
        Event::LocalStall { late } => format!("n1 itself stalled ({} ms late)", late.as_millis()),
        other => format!("{other:?}"),
    }
}
