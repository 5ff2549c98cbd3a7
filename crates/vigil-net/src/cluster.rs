//! The embedding API: build a member, start it, and ask it about the
//! cluster.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::{broadcast, mpsc, oneshot};
use vigil_detector::Instant;
use vigil_detector::outlier::Outcome;
use vigil_membership::keyring::{KeyId, KeyInfo, Keyring, KeyringError};
use vigil_membership::seal::{Mode, Seal, SealStats};
use vigil_membership::{Arrivals, Config, Event, MemberView, Node, NodeId, Stats, Tags};

use crate::clock::Clock;
use crate::driver::{Command, Driver, NetStats};
use crate::error::StartError;
use crate::generation::next_generation;
use crate::snapshot::Snapshot;

/// Settings of the network runtime itself (the protocol's are a
/// [`Config`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NetConfig {
    /// Inbound stream connections handled at once; beyond, the oldest that
    /// has not sent its frame's header yet is closed to make room (or, if
    /// none, the new one). Default 64.
    pub max_connections: usize,
    /// Connecting to a member for a stream message. Default 2 s.
    pub connect_timeout: Duration,
    /// Writing or reading a stream frame's body. Default 5 s.
    pub io_timeout: Duration,
    /// Reading a stream frame's header, from the connection's start: a
    /// peer says who it is at once. Default 2 s.
    pub header_timeout: Duration,
    /// Bytes of frame bodies in flight at once, over every connection (a
    /// body is read only once its header opened, and only if its length
    /// fits in what is left). At least 64 KiB; default 64 MiB, more than
    /// the largest push-pull (a full view of 65,535 members, 46 MiB).
    pub frame_budget: usize,
    /// The seal's freshness window ([`Seal::with_freshness`]): packets
    /// sealed before this member started, or more than this away from its
    /// clock, are refused, so captured packets cannot be replayed to a
    /// member that restarted. `None` turns it off. Default 60 s.
    pub freshness: Option<Duration>,
    /// The UDP socket's receive and send buffers, bytes (default: the
    /// system's).
    pub socket_buffers: Option<(usize, usize)>,
    /// How long [`Cluster::leave`] waits for the announcement to go out.
    /// Default 500 ms.
    pub leave_wait: Duration,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            max_connections: 64,
            connect_timeout: Duration::from_secs(2),
            io_timeout: Duration::from_secs(5),
            header_timeout: Duration::from_secs(2),
            frame_budget: 64 * 1024 * 1024,
            freshness: Some(Duration::from_secs(60)),
            socket_buffers: None,
            leave_wait: Duration::from_millis(500),
        }
    }
}

/// How to start a member. See the crate documentation for an example.
///
/// A clone is a new member to start, with the same settings: it has event
/// streams of its own ([`Builder::events`]).
#[derive(Debug)]
pub struct Builder {
    name: String,
    bind: SocketAddr,
    advertise: Option<SocketAddr>,
    seeds: Vec<SocketAddr>,
    seed_names: Vec<String>,
    config: Config,
    keyring: Option<Keyring>,
    mode: Mode,
    data_dir: Option<PathBuf>,
    net: NetConfig,
    tags: Tags,
    /// The member's events, subscribed to before it starts, too.
    events: broadcast::Sender<ClusterEvent>,
}

impl Clone for Builder {
    fn clone(&self) -> Builder {
        Builder {
            name: self.name.clone(),
            bind: self.bind,
            advertise: self.advertise,
            seeds: self.seeds.clone(),
            seed_names: self.seed_names.clone(),
            config: self.config.clone(),
            keyring: self.keyring.clone(),
            mode: self.mode,
            data_dir: self.data_dir.clone(),
            net: self.net.clone(),
            tags: self.tags.clone(),
            events: broadcast::channel(EVENT_QUEUE).0,
        }
    }
}

/// Events kept for a stream that falls behind; beyond, it skips
/// ([`Events::missed`]).
const EVENT_QUEUE: usize = 4096;

/// The cluster id when none is given: `"vigi"`.
pub const DEFAULT_CLUSTER: u64 = 0x7669_6769;

impl Builder {
    /// A member named `name`, binding `0.0.0.0:7946`, on the LAN preset
    /// ([`Config::lan`]), in plaintext.
    pub fn new(name: &str) -> Builder {
        Builder {
            name: name.to_owned(),
            bind: SocketAddr::from(([0, 0, 0, 0], 7946)),
            advertise: None,
            seeds: Vec::new(),
            seed_names: Vec::new(),
            config: Config::lan(DEFAULT_CLUSTER),
            keyring: None,
            mode: Mode::Plaintext,
            data_dir: None,
            net: NetConfig::default(),
            tags: Tags::default(),
            events: broadcast::channel(EVENT_QUEUE).0,
        }
    }

    /// The events of the member this builder starts, from its very first
    /// (the members it meets as it joins): subscribe before
    /// [`Builder::start`] to miss none. The stream ends when the member
    /// stops.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let builder = vigil_net::Cluster::builder("a").bind("127.0.0.1:7946".parse()?);
    /// let mut events = builder.events();
    /// let member = builder.start().await?;
    /// while let Some(e) = events.next().await {
    ///     println!("{}", e.event);
    /// }
    /// # drop(member);
    /// # Ok(())
    /// # }
    /// ```
    pub fn events(&self) -> Events {
        Events { rx: Some(self.events.subscribe()), lagged: 0 }
    }

    /// Where to listen: UDP and TCP on the same port (port 0 picks one).
    pub fn bind(mut self, addr: SocketAddr) -> Builder {
        self.bind = addr;
        self
    }

    /// The address other members reach this one at (default: the bound
    /// address, which must then not be unspecified).
    pub fn advertise(mut self, addr: SocketAddr) -> Builder {
        self.advertise = Some(addr);
        self
    }

    /// Members to join through, by address.
    pub fn seeds(mut self, seeds: impl IntoIterator<Item = SocketAddr>) -> Builder {
        self.seeds = seeds.into_iter().collect();
        self
    }

    /// Members to join through, by name: `host:port` (every address the
    /// name resolves to) or `IP:PORT`. The names are resolved when the
    /// member starts and again each time it knows no live member and goes
    /// back to its seeds, so a name whose records change (a Kubernetes
    /// headless service, a seed moved) keeps working. A name that does not
    /// resolve is logged and tried again then. Given with
    /// [`Builder::seeds`], both are used.
    pub fn seed_names(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Builder {
        self.seed_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// The protocol's configuration (a preset such as [`Config::lan`],
    /// adjusted or not).
    pub fn config(mut self, config: Config) -> Builder {
        self.config = config;
        self
    }

    /// Seal every packet with these keys, in `mode`.
    pub fn keys(mut self, keyring: Keyring, mode: Mode) -> Builder {
        self.keyring = Some(keyring);
        self.mode = mode;
        self
    }

    /// Where the last generation is recorded, so a restart always comes
    /// back with a higher one (see [`crate::generation`]).
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.data_dir = Some(dir.into());
        self
    }

    /// This member's tags when it joins (see [`Cluster::set_tags`]).
    pub fn tags(mut self, tags: Tags) -> Builder {
        self.tags = tags;
        self
    }

    /// The runtime's own settings.
    pub fn net(mut self, net: NetConfig) -> Builder {
        self.net = net;
        self
    }

    /// Binds the sockets, starts the member's tasks on the current tokio
    /// runtime, and joins through the seeds.
    ///
    /// # Errors
    ///
    /// A [`StartError`] naming the setting or the socket at fault.
    pub async fn start(self) -> Result<Cluster, StartError> {
        self.config.validate().map_err(StartError::Config)?;
        if self.net.max_connections == 0 {
            return Err(StartError::Setting("max_connections must be at least 1".into()));
        }
        if self.net.frame_budget < 64 * 1024 {
            return Err(StartError::Setting("frame_budget must be at least 64 KiB".into()));
        }
        if self.net.header_timeout.is_zero() || self.net.io_timeout.is_zero() || self.net.connect_timeout.is_zero() {
            return Err(StartError::Setting("the stream timeouts must be more than zero".into()));
        }
        let started = crate::driver::unix_secs();
        let seal = match (self.keyring, self.mode) {
            (None, Mode::Plaintext) => Seal::plaintext(self.config.cluster),
            (keyring, mode) => {
                let seal = Seal::new(self.config.cluster, mode, keyring, rand::random()).map_err(StartError::Seal)?;
                match self.net.freshness {
                    Some(window) => seal.with_freshness(window, started),
                    None => seal,
                }
            }
        };
        let (udp, tcp) = bind_both(self.bind, self.net.socket_buffers)?;
        let local = udp.local_addr().map_err(|e| StartError::Bind(self.bind, e))?;
        let advertise = match self.advertise {
            Some(a) if a.ip().is_unspecified() || a.port() == 0 => {
                return Err(StartError::Setting(format!(
                    "advertise {a}: other members cannot reach an unspecified address or port 0"
                )));
            }
            Some(a) => a,
            None if local.ip().is_unspecified() => {
                return Err(StartError::Setting(format!(
                    "bound to {local}: give an address to advertise (other members cannot reach an unspecified one)"
                )));
            }
            None => local,
        };
        // The name is checked before anything is written in the data
        // directory; a directory made for this start is removed if it
        // fails after all.
        let clock = Clock::start();
        let now = clock.now();
        Node::new(NodeId::new(self.name.clone(), 1), advertise, self.config.clone(), 0, now)
            .map_err(StartError::Config)?;
        let made = self.data_dir.as_deref().filter(|d| !d.exists());
        let generation = next_generation(self.data_dir.as_deref()).map_err(|e| {
            if let Some(d) = made {
                let _ = std::fs::remove_dir_all(d);
            }
            StartError::Generation(e)
        })?;
        let id = NodeId::new(self.name.clone(), generation);
        let mut node =
            Node::new(id.clone(), advertise, self.config.clone(), rand::random(), now).map_err(StartError::Config)?;
        if !self.tags.is_empty() {
            node.set_tags(now, self.tags.clone());
        }
        let mut seeds = self.seeds.clone();
        if !self.seed_names.is_empty() {
            let (resolved, failed) = crate::driver::resolve(&self.seed_names).await;
            if failed > 0 {
                tracing::warn!(
                    "{failed} of the seeds did not resolve; they are tried again while this member is alone"
                );
            }
            seeds.extend(resolved);
        }
        if !seeds.is_empty() || !self.seed_names.is_empty() {
            node.join(now, &seeds);
        }
        // The builder's channel, so that streams taken before the start see
        // everything; the handle keeps only a weak one, so that every stream
        // ends when the driver does.
        let events = self.events;
        let (cmd_tx, cmd_rx) = mpsc::channel(256);
        let driver = Driver::new(
            node,
            seal,
            clock,
            udp,
            tcp,
            advertise,
            self.net.clone(),
            cmd_rx,
            events.clone(),
            (self.seeds.clone(), self.seed_names.clone()),
        );
        let task = tokio::spawn(driver.run());
        Ok(Cluster {
            cmd: cmd_tx,
            events: events.downgrade(),
            local,
            advertise,
            id,
            task: std::sync::Mutex::new(Some(task)),
            leave_wait: self.net.leave_wait,
        })
    }
}

/// UDP and TCP bound to the same port.
fn bind_both(bind: SocketAddr, buffers: Option<(usize, usize)>) -> Result<(UdpSocket, TcpListener), StartError> {
    // With port 0 the UDP port is picked first; if TCP cannot have the same
    // one, try again.
    let tries = if bind.port() == 0 { 20 } else { 1 };
    let mut last = None;
    for _ in 0..tries {
        let udp = udp_socket(bind, buffers).map_err(|e| StartError::Bind(bind, e))?;
        let port = udp.local_addr().map_err(|e| StartError::Bind(bind, e))?.port();
        let tcp_addr = SocketAddr::new(bind.ip(), port);
        match std::net::TcpListener::bind(tcp_addr).and_then(|l| {
            l.set_nonblocking(true)?;
            TcpListener::from_std(l)
        }) {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(e) => last = Some(StartError::Bind(tcp_addr, e)),
        }
    }
    Err(last.unwrap_or_else(|| StartError::Setting("could not bind".into())))
}

fn udp_socket(bind: SocketAddr, buffers: Option<(usize, usize)>) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(bind), Type::DGRAM, Some(Protocol::UDP))?;
    if let Some((recv, send)) = buffers {
        socket.set_recv_buffer_size(recv)?;
        socket.set_send_buffer_size(send)?;
    }
    socket.bind(&bind.into())?;
    socket.set_nonblocking(true)?;
    UdpSocket::from_std(socket.into())
}

/// Something that happened, with when (milliseconds since the Unix epoch,
/// on this host's clock).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterEvent {
    /// When this member learned it.
    pub unix_ms: u64,
    /// What.
    pub event: Event,
}

/// What a member has done: the protocol's counters, the seal's, and the
/// runtime's.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClusterStats {
    /// The protocol's.
    pub node: Stats,
    /// The seal's.
    pub seal: SealStats,
    /// The runtime's.
    pub net: NetStats,
}

/// The stream of a member's events.
#[derive(Debug)]
pub struct Events {
    /// `None`: taken after the member stopped.
    rx: Option<broadcast::Receiver<ClusterEvent>>,
    lagged: u64,
}

impl Events {
    /// The next event; `None` once the member has stopped (left, shut down
    /// or failed), whether or not the handle is still held. A reader too
    /// slow to keep up skips what it missed (see [`Events::missed`]).
    pub async fn next(&mut self) -> Option<ClusterEvent> {
        let rx = self.rx.as_mut()?;
        loop {
            match rx.recv().await {
                Ok(e) => return Some(e),
                Err(broadcast::error::RecvError::Lagged(n)) => self.lagged += n,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// Events this reader missed by falling behind.
    pub fn missed(&self) -> u64 {
        self.lagged
    }
}

/// A running member. Dropping it stops the member without leaving; call
/// [`Cluster::leave`] to leave.
#[derive(Debug)]
pub struct Cluster {
    cmd: mpsc::Sender<Command>,
    events: broadcast::WeakSender<ClusterEvent>,
    local: SocketAddr,
    advertise: SocketAddr,
    id: NodeId,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    leave_wait: Duration,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(task) = self.take_task() {
            task.abort();
        }
    }
}

impl Cluster {
    /// A builder; see [`Builder`].
    pub fn builder(name: &str) -> Builder {
        Builder::new(name)
    }

    /// The address the sockets are bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The address other members reach this one at.
    pub fn advertise_addr(&self) -> SocketAddr {
        self.advertise
    }

    /// This member's name and generation.
    pub fn id(&self) -> &NodeId {
        &self.id
    }

    /// The events from now on (to see those of the start too, subscribe to
    /// [`Builder::events`] before it); a stream taken after the member
    /// stopped ends at once.
    pub fn events(&self) -> Events {
        Events { rx: self.events.upgrade().map(|s| s.subscribe()), lagged: 0 }
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.cmd.send(make(tx)).await.ok()?;
        rx.await.ok()
    }

    /// Every other member this one knows of, as it sees them (dead and left
    /// ones too, until they are forgotten). Empty once the member has
    /// stopped.
    pub async fn members(&self) -> Vec<MemberView> {
        self.ask(Command::Members).await.unwrap_or_default()
    }

    /// One member as this one sees it, if known.
    pub async fn member(&self, name: &str) -> Option<MemberView> {
        self.ask(|tx| Command::Member(name.to_owned(), tx)).await.flatten()
    }

    /// The φ (suspicion level) of a member this one monitors, now.
    pub async fn level(&self, name: &str) -> Option<f64> {
        self.ask(|tx| Command::Level(name.to_owned(), tx)).await.flatten()
    }

    /// How long until the member's level reaches the suspect level if
    /// nothing arrives (zero if it has).
    pub async fn time_to_suspect(&self, name: &str) -> Option<Duration> {
        self.ask(|tx| Command::TimeToSuspect(name.to_owned(), tx)).await.flatten()
    }

    /// Monitors `name` too (members this one does not observe by default).
    pub async fn watch(&self, name: &str) {
        let _ = self.cmd.send(Command::Watch(name.to_owned())).await;
    }

    /// Stops monitoring `name` for the application.
    pub async fn unwatch(&self, name: &str) {
        let _ = self.cmd.send(Command::Unwatch(name.to_owned())).await;
    }

    /// Replaces this member's tags and announces them: every other member
    /// sees them in its [`MemberView::tags`] and reports
    /// [`Event::TagsUpdated`] (usually within a second or two).
    pub async fn set_tags(&self, tags: Tags) {
        let _ = self.cmd.send(Command::SetTags(tags)).await;
    }

    /// Counters.
    pub async fn stats(&self) -> Option<ClusterStats> {
        self.ask(Command::Stats).await
    }

    /// Everything this member knows, taken at one instant; `None` once it
    /// has stopped.
    pub async fn snapshot(&self) -> Option<Snapshot> {
        self.ask(Command::Snapshot).await
    }

    /// A watched member's recorded heartbeat arrivals after `after` (all
    /// for `None`), with the time asked (on the same clock); `None` if it
    /// is not watched. Recording is on when the configuration's
    /// [`recorded_arrivals`](Config::recorded_arrivals) is set.
    pub async fn arrivals(&self, name: &str, after: Option<Instant>) -> Option<(Arrivals, Instant)> {
        self.ask(|tx| Command::Arrivals(name.to_owned(), after, tx)).await.flatten()
    }

    /// Records the outcome of one of the application's requests to member
    /// `name` (and its latency, if measured) for outlier detection: a member
    /// whose requests fail or crawl is ejected ([`Event::Ejected`]) even if
    /// its heartbeats are fine, and returns after its ejection time
    /// ([`Event::Returned`]). Does not wait; an outcome for a member not
    /// known to be alive is ignored.
    pub async fn record_outcome(&self, name: &str, outcome: Outcome, latency: Option<Duration>) {
        let _ = self.cmd.send(Command::Outcomes(vec![(name.to_owned(), outcome, latency)], None)).await;
    }

    /// Records several outcomes at once, and says, for each, whether it was
    /// taken (its member known to be alive). Empty once the member has
    /// stopped.
    pub async fn record_outcomes(&self, outcomes: Vec<(String, Outcome, Option<Duration>)>) -> Vec<bool> {
        self.ask(|tx| Command::Outcomes(outcomes, Some(tx))).await.unwrap_or_default()
    }

    /// The keys, by id (never the keys), with what each sealed and opened.
    pub async fn keys(&self) -> Vec<KeyInfo> {
        self.ask(Command::Keys).await.unwrap_or_default()
    }

    /// Installs a key (it opens packets from now on).
    ///
    /// # Errors
    ///
    /// The keyring's refusal, or [`KeyringError::Unknown`] with id 0 if the
    /// member has no keyring or has stopped.
    pub async fn install_key(&self, key: [u8; 32]) -> Result<KeyId, KeyringError> {
        self.ask(|tx| Command::InstallKey(key, tx)).await.unwrap_or(Err(KeyringError::Unknown(KeyId(0))))
    }

    /// Seals with key `id` from now on.
    ///
    /// # Errors
    ///
    /// As [`Cluster::install_key`].
    pub async fn use_key(&self, id: KeyId) -> Result<(), KeyringError> {
        self.ask(|tx| Command::UseKey(id, tx)).await.unwrap_or(Err(KeyringError::Unknown(id)))
    }

    /// Removes key `id`.
    ///
    /// # Errors
    ///
    /// As [`Cluster::install_key`].
    pub async fn remove_key(&self, id: KeyId) -> Result<(), KeyringError> {
        self.ask(|tx| Command::RemoveKey(id, tx)).await.unwrap_or(Err(KeyringError::Unknown(id)))
    }

    /// The driver's task, the first time it is asked for.
    fn take_task(&self) -> Option<tokio::task::JoinHandle<()>> {
        self.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }

    /// Leaves: the departure is announced, then, after at most the leave
    /// wait ([`NetConfig::leave_wait`]), the member stops. Only the first
    /// call to `leave` or [`Cluster::shutdown`] has an effect.
    pub async fn leave(&self) {
        let Some(task) = self.take_task() else { return };
        let _ = self.cmd.send(Command::Leave(self.leave_wait)).await;
        // Bounded: the driver stops after the wait whatever happens.
        let _ = tokio::time::timeout(self.leave_wait + Duration::from_secs(1), task).await;
    }

    /// Stops without leaving (the others will find this member dead).
    pub async fn shutdown(&self) {
        let Some(task) = self.take_task() else { return };
        let _ = self.cmd.send(Command::Shutdown).await;
        let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
    }

    /// Fault injection, for demonstrations and tests: the member handles
    /// nothing for `d`, as if its process were stopped (packets wait in the
    /// socket's buffer, timers run late). Returns at once.
    pub async fn pause(&self, d: Duration) {
        let _ = self.cmd.send(Command::Pause(d)).await;
    }

    /// Fault injection, for demonstrations and tests: drops every packet to
    /// or from these addresses (a stream to one fails as an unreachable
    /// member's would) until the next call; an empty list heals. Counted in
    /// [`NetStats::dropped_by_fault`].
    pub async fn block(&self, peers: Vec<SocketAddr>) {
        let _ = self.cmd.send(Command::Block(peers)).await;
    }

    /// Whether the member is still running (it has not left, been shut
    /// down, or failed).
    pub fn is_running(&self) -> bool {
        self.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref().is_some_and(|t| !t.is_finished())
    }
}
