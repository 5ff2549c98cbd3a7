//! One member of a cluster as a process: what `vigil agent` runs.
//!
//! Events go to standard output as JSON lines, one [record](crate::record)
//! per event, through a bounded queue that a stuck reader cannot block the
//! member with ([`crate::event_lines`]); logs go to standard error. SIGTERM
//! and SIGINT make the member leave (announced) and [`run`] return within
//! 3 s, whatever standard output does; SIGHUP reads the configuration file
//! again (the tags; other settings need a restart, and the log says which
//! changed). A standard output closed for good makes the member leave too.
//! Under systemd (`Type=notify`), it says when it is ready, when it stops,
//! and pings the watchdog ([`crate::service_manager`]).

use std::fmt;
use std::sync::Arc;

use tokio::sync::mpsc;
use vigil_net::{Cluster, SealMode, StartError};

use crate::api::{self, ApiState};
use crate::defaults;
use crate::event_lines::EventLines;
use crate::pipeline::Pipeline;
use crate::record::Sink;
use crate::recorder::Recorder;
use crate::service_manager::{Notifier, READY_AT_LATEST};
use crate::settings::{AgentConfig, FileSettings, Http, Origin, SettingsError, StreamCompression};

/// Why the agent could not run. Nothing is left running.
#[derive(Debug)]
#[non_exhaustive]
pub enum AgentError {
    /// A setting given at the start (the member's name, its data
    /// directory) was refused as the member started.
    Setting(SettingsError),
    /// The member could not start.
    Start(StartError),
    /// The generation could not be read or recorded in the data directory.
    DataDir {
        /// Where the directory was given.
        origin: Origin,
        /// The directory.
        dir: std::path::PathBuf,
        /// Why (naming the file).
        source: std::io::Error,
    },
    /// The API cannot listen on the address the user gave.
    Http {
        /// Where the address was given.
        origin: Origin,
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Another process holds this member's name and answers where the
    /// cluster says: this one stopped.
    NameHeld {
        /// Where the name was given.
        origin: Origin,
        /// The name.
        name: String,
        /// Where the process that holds it answers.
        holder: std::net::SocketAddr,
    },
    /// The process's own plumbing failed (the runtime, standard output,
    /// the signal handlers).
    Io {
        /// What failed.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Setting(e) => e.fmt(f),
            AgentError::Start(e) => e.fmt(f),
            AgentError::DataDir { origin, dir, source } => write!(f, "{origin} {}: {source}", dir.display()),
            AgentError::Http { origin, addr, source } => write!(f, "{origin}: cannot listen on {addr}: {source}"),
            AgentError::NameHeld { origin, name, holder } => write!(
                f,
                "{origin} {name}: the name is held by the member at {holder}, which answers; this member stopped: \
                 give it a name of its own"
            ),
            AgentError::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for AgentError {}

/// The detector the protocol runs, as text, for `/v1/self`: the spec as
/// given, or the preset's model's name.
pub fn detector_spec(config: &vigil_net::Config, given: Option<&vigil_detector::spec::DetectorSpec>) -> String {
    given.map_or_else(|| config.detector.model().name().to_owned(), ToString::to_string)
}

/// The API's listener: `None` when it is off, or when the default port is
/// taken (said in the log); an address the user gave must work.
async fn http_listener(http: &Http) -> Result<Option<tokio::net::TcpListener>, AgentError> {
    let (addr, origin) = match http {
        Http::Off => return Ok(None),
        Http::Default => (defaults::HTTP, None),
        Http::At(addr, origin) => (*addr, Some(origin)),
    };
    match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => Ok(Some(l)),
        Err(source) => match origin {
            Some(origin) => Err(AgentError::Http { origin: origin.clone(), addr, source }),
            None => {
                tracing::warn!("no HTTP API: cannot listen on {addr} ({source}); give --http IP:PORT, or --http off");
                Ok(None)
            }
        },
    }
}

/// The member, started: a start refused for the name or the data
/// directory names the setting that gave it.
async fn start(config: &AgentConfig) -> Result<(Cluster, vigil_net::Events), AgentError> {
    let mut builder = Cluster::builder(&config.name)
        .bind(config.bind)
        .seed_names(config.seeds.clone())
        .config(config.protocol.clone())
        .tags(config.tags.clone());
    if let Some(addr) = config.advertise {
        builder = builder.advertise(addr);
    }
    let mut net = vigil_net::NetConfig::default();
    net.compress_streams = config.stream_compression == StreamCompression::Lz4;
    if let Some(ring) = &config.keyring {
        builder = builder.keys(ring.clone(), config.seal_mode);
        net.envelope = config.envelope;
    }
    builder = builder.net(net);
    if let Some((dir, _)) = &config.data_dir {
        builder = builder.data_dir(dir);
    }
    if let Some((path, _)) = &config.lease_file {
        builder = builder.lease(std::sync::Arc::new(vigil_net::lease::FileLease::new(path)));
    }
    // Subscribed before the start: the members met while joining are in
    // the stream too.
    let events = builder.events();
    let member = builder.start().await.map_err(|e| match e {
        StartError::Config(c) if c.field() == "name" => {
            AgentError::Setting(SettingsError::new(config.name_origin.clone(), crate::settings::Problem::Protocol(c)))
        }
        StartError::Generation(source) => {
            let (dir, origin) =
                config.data_dir.clone().unwrap_or_else(|| (std::path::PathBuf::new(), Origin::Flag("--data-dir")));
            AgentError::DataDir { origin, dir, source }
        }
        other => AgentError::Start(other),
    })?;
    Ok((member, events))
}

/// With `lease-majority`, the lease must be one this member can ask
/// before it starts ([`Lease::check`](vigil_net::lease::Lease::check)): a
/// lease found unusable only when a partition needs it downs every side
/// that asks it.
async fn check_lease(config: &AgentConfig) -> Result<(), AgentError> {
    let Some((path, origin)) = &config.lease_file else { return Ok(()) };
    if !matches!(config.protocol.downing.strategy, vigil_net::downing::Strategy::LeaseMajority { .. }) {
        return Ok(());
    }
    let lease = vigil_net::lease::FileLease::new(path);
    match tokio::task::spawn_blocking(move || vigil_net::lease::Lease::check(&lease)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(AgentError::Setting(SettingsError::new(origin.clone(), crate::settings::Problem::Lease(e)))),
        Err(e) => Err(AgentError::Io { what: "checking the lease", source: std::io::Error::other(e) }),
    }
}

/// SIGHUP: the configuration file again. The tags are applied (a change is
/// announced to every member); other settings need a restart, and the log
/// says which changed.
async fn reload(config: &AgentConfig, member: &Cluster) {
    let Some((path, started)) = &config.file else {
        tracing::info!("SIGHUP: no configuration file to reload (start with --config FILE)");
        return;
    };
    let file = match FileSettings::read(path) {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!("SIGHUP: {e}; nothing changed");
            return;
        }
    };
    match config.tags_with(&file, path) {
        Ok(t) => {
            let now = member.snapshot().await.map(|s| s.node.tags).unwrap_or_default();
            if t != now {
                tracing::info!("SIGHUP: new tags from {}, announced", path.display());
                let _ = member.set_tags(t).await;
            }
        }
        Err(e) => tracing::warn!("SIGHUP: {e}; the tags did not change"),
    }
    let restart = file.changed_but_tags(started);
    if !restart.is_empty() {
        tracing::warn!("SIGHUP: {} changed in {}: a restart applies them", restart.join(", "), path.display());
    }
}

/// Runs one member until SIGTERM or SIGINT, a leave asked through the API,
/// or standard output closed for good; then leaves.
///
/// # Errors
///
/// An [`AgentError`]: a setting refused at the start, a member that
/// cannot start, an API address that cannot be listened on.
pub async fn run(config: AgentConfig) -> Result<(), AgentError> {
    let io = |what: &'static str| move |source| AgentError::Io { what, source };
    if config.reachable() && config.seal_mode == SealMode::Plaintext {
        tracing::warn!(
            "plaintext on {}: nothing is encrypted or authenticated; anyone who can reach this port can read the \
             membership, join, and send rumours (refuted, and bounded per source). Give every member --key-file to \
             seal the cluster",
            config.bind
        );
    }
    if let Origin::Host(from) = &config.name_origin {
        tracing::info!(
            "no --name given: the member is named {} after this host ({from}); every member's name must be unique \
             in the cluster",
            config.name
        );
    }
    // The lease and the API's address are checked before the member
    // starts.
    check_lease(&config).await?;
    let http = http_listener(&config.http).await?;
    let (member, mut events) = start(&config).await?;
    tracing::info!(
        "started {} (generation {}) on {}, advertising {}{}",
        member.id().name,
        member.id().generation,
        member.local_addr(),
        member.advertise_addr(),
        if config.seal_mode == SealMode::Plaintext { ", plaintext" } else { ", sealed" }
    );
    let member = Arc::new(member);
    let notifier = Arc::new(Notifier::from_env());
    // Ready at once with nobody to join (no seeds, no member known before a
    // restart); otherwise once a member is met, or alone after a while
    // (still asking the seeds).
    let mut ready = false;
    if !member.joins() {
        notifier.ready("running; no seeds given, waiting for members to join through this one");
        ready = true;
    } else {
        match config.seeds.len() {
            0 => notifier.status("rejoining the members known before the restart"),
            n => notifier.status(&format!("joining through {n} seeds")),
        }
    }
    let ready_at_latest = tokio::time::sleep(READY_AT_LATEST);
    tokio::pin!(ready_at_latest);
    let watchdog = notifier.watchdog_interval().map(|every| {
        let (member, notifier) = (member.clone(), notifier.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                // Only a member that still answers is alive to the manager.
                if let Ok(Ok(_)) = tokio::time::timeout(every, member.snapshot()).await {
                    notifier.watchdog();
                }
            }
        })
    });
    let recorder = Recorder::new(config.event_history);
    let (leave_tx, mut leave_rx) = mpsc::channel(1);
    let mut for_good = false;
    if let Some(listener) = http {
        let state = ApiState::new(member.clone(), recorder.clone())
            .token(config.token.clone())
            .leave(leave_tx)
            .sealed(config.seal_mode == SealMode::Sealed, member.joins())
            .hosts(config.http_hosts.clone())
            .detector(detector_spec(&config.protocol, config.detector.as_ref()), config.protocol.suspect_level);
        match api::serve(listener, state) {
            Ok(addr) => tracing::info!("HTTP API on http://{addr} (dashboard at /, metrics at /metrics)"),
            Err(e) => tracing::error!("no HTTP API: {e}"),
        }
    }
    let node = member.id().name.clone();
    let (mut lines, mut stdout_closed) = EventLines::start(&node).map_err(io("standard output"))?;
    let mut pipeline = Pipeline::new(member.clone(), recorder.clone(), config.watch.clone());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(io("installing the SIGTERM handler"))?;
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .map_err(io("installing the SIGHUP handler"))?;
    let mut name_held = None;
    loop {
        tokio::select! {
            e = events.next() => {
                let Some(e) = e else { break };
                if !ready && let vigil_net::Event::Up { id, .. } = &e.event {
                    notifier.ready(&format!("joined: met {}", id.name));
                    ready = true;
                }
                for (_, line) in pipeline.take(&e, events.missed()).await {
                    if !lines.send(line) {
                        recorder.metrics().dropped(Sink::Stdout, 1);
                    }
                }
                // Another process holds this member's name: it stops.
                if let vigil_net::Event::NameConflict { holder_addr, refused: true, .. } = &e.event {
                    name_held = Some(*holder_addr);
                    break;
                }
            }
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            _ = hup.recv() => {
                reload(&config, &member).await;
                notifier.status("configuration read again");
            }
            () = &mut ready_at_latest, if !ready => {
                notifier.ready("running alone: no seed answered yet; still asking them");
                ready = true;
            }
            _ = &mut stdout_closed => {
                tracing::info!("standard output was closed");
                break;
            }
            Some(()) = leave_rx.recv() => {
                tracing::info!("asked to leave through the API: for good");
                for_good = true;
                break;
            }
        }
    }
    if lines.dropped() > 0 {
        tracing::warn!("{} event lines were dropped: standard output was not read in time", lines.dropped());
    }
    if let Some(holder) = name_held {
        // Not a leave: the name is not this process's to give up.
        notifier.stopping("the name is held by another member");
        if let Some(w) = watchdog {
            w.abort();
        }
        // The writer's last lines (this one's own name_conflict) go out.
        drop(lines);
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        return Err(AgentError::NameHeld { origin: config.name_origin.clone(), name: node, holder });
    }
    tracing::info!("leaving");
    notifier.stopping("leaving the cluster");
    if let Some(w) = watchdog {
        w.abort();
    }
    // Leaving is announced and bounded; the process ends within 3 s.
    // Asked through the API, for good: a restart does not rejoin the
    // members known (`vigil leave`, as Serf's leave keeps its snapshot
    // from rejoining). A signal is what a restart sends: they are kept.
    let leaving = async { if for_good { member.leave_for_good().await } else { member.leave().await } };
    let _ = tokio::time::timeout(defaults::LEAVE_TIMEOUT, leaving).await;
    Ok(())
}
