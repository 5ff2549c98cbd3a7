//! The embedding API: build a member, start it, and ask it about the
//! cluster.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::{broadcast, mpsc, oneshot};
use vigil_detector::Instant;
use vigil_detector::outlier::Outcome;
use vigil_membership::keyring::{KeyId, KeyInfo, Keyring};
use vigil_membership::seal::{Seal, SealMode};
use vigil_membership::{Config, MemberView, Node, NodeId, Tags, WatchReport};

use crate::clock::Clock;
use crate::driver::{Command, Driver};
use crate::error::{KeyError, StartError, Stopped};
use crate::generation::next_generation;
use crate::intercept::Intercept;
use crate::types::{ClusterEvent, ClusterStats, NetConfig, Recorded, RequestOutcome, Snapshot};

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
    mode: SealMode,
    data_dir: Option<PathBuf>,
    net: NetConfig,
    tags: Tags,
    intercept: Option<Arc<dyn Intercept>>,
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
            intercept: self.intercept.clone(),
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
            mode: SealMode::Plaintext,
            data_dir: None,
            net: NetConfig::default(),
            tags: Tags::default(),
            intercept: None,
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
    pub fn keys(mut self, keyring: Keyring, mode: SealMode) -> Builder {
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

    /// Puts `intercept` between the member and its sockets, for tests and
    /// demonstrations: it decides which packets pass and when the member
    /// stands still (see [`Faults`](crate::Faults)). A clone of the builder
    /// shares it.
    pub fn intercept(mut self, intercept: Arc<dyn Intercept>) -> Builder {
        self.intercept = Some(intercept);
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
        let net = &self.net;
        if net.max_connections == 0 {
            return Err(StartError::Net { field: "max_connections", expected: "at least 1" });
        }
        if net.frame_budget < 64 * 1024 {
            return Err(StartError::Net { field: "frame_budget", expected: "at least 64 KiB" });
        }
        for (field, d) in [
            ("header_timeout", net.header_timeout),
            ("io_timeout", net.io_timeout),
            ("connect_timeout", net.connect_timeout),
        ] {
            if d.is_zero() {
                return Err(StartError::Net { field, expected: "more than zero" });
            }
        }
        let started = crate::driver::unix_secs();
        let seal = match (self.keyring, self.mode) {
            (None, SealMode::Plaintext) => Seal::plaintext(self.config.cluster),
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
        let advertise = self.advertise.unwrap_or(local);
        if advertise.ip().is_unspecified() || advertise.port() == 0 {
            return Err(StartError::Unreachable(advertise));
        }
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
            self.intercept,
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
    Err(last.unwrap_or_else(|| StartError::Bind(bind, std::io::ErrorKind::AddrInUse.into())))
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

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, Stopped> {
        let (tx, rx) = oneshot::channel();
        self.cmd.send(make(tx)).await.map_err(|_| Stopped)?;
        rx.await.map_err(|_| Stopped)
    }

    async fn tell(&self, cmd: Command) -> Result<(), Stopped> {
        self.cmd.send(cmd).await.map_err(|_| Stopped)
    }

    /// Every other member this one knows of, as it sees them (dead and left
    /// ones too, until they are forgotten), by name.
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn members(&self) -> Result<Vec<MemberView>, Stopped> {
        self.ask(Command::Members).await
    }

    /// One member as this one sees it; `None` if it does not know it.
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn member(&self, name: &str) -> Result<Option<MemberView>, Stopped> {
        self.ask(|tx| Command::Member(name.to_owned(), tx)).await
    }

    /// What this member's detector knows of a member it watches, now: its
    /// model, level (φ), interval statistics, and each policy's standing
    /// with the time its threshold would take to reach (the first policy,
    /// `probe`, is the protocol's suspect level). `None` if it is not
    /// watched.
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn watch_report(&self, name: &str) -> Result<Option<WatchReport>, Stopped> {
        self.ask(|tx| Command::WatchReport(name.to_owned(), tx)).await
    }

    /// Monitors `name` too (members this one does not observe by default):
    /// its policies' verdicts become [`Event::Policy`](crate::Event::Policy)
    /// events. A member this one does not know is not watched.
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn watch(&self, name: &str) -> Result<(), Stopped> {
        self.tell(Command::Watch(name.to_owned())).await
    }

    /// Stops monitoring `name` for the application.
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn unwatch(&self, name: &str) -> Result<(), Stopped> {
        self.tell(Command::Unwatch(name.to_owned())).await
    }

    /// Replaces this member's tags and announces them: every other member
    /// sees them in its [`MemberView::tags`] and reports
    /// [`Event::TagsUpdated`](crate::Event::TagsUpdated) (usually within a
    /// second or two).
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn set_tags(&self, tags: Tags) -> Result<(), Stopped> {
        self.tell(Command::SetTags(tags)).await
    }

    /// The counters.
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn stats(&self) -> Result<ClusterStats, Stopped> {
        self.ask(Command::Stats).await
    }

    /// Everything this member knows, taken at one instant.
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn snapshot(&self) -> Result<Snapshot, Stopped> {
        self.ask(Command::Snapshot).await
    }

    /// A watched member's recorded heartbeat arrivals after `after` (all
    /// for `None`), with the time asked on the same clock; `None` if it is
    /// not watched. Recording is on when the configuration's
    /// [`recorded_arrivals`](Config::recorded_arrivals) is set.
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn arrivals(&self, name: &str, after: Option<Instant>) -> Result<Option<Recorded>, Stopped> {
        self.ask(|tx| Command::Arrivals(name.to_owned(), after, tx)).await
    }

    /// Records the outcome of one of the application's requests to member
    /// `name` (and its latency, if measured) for outlier detection: a member
    /// whose requests fail or crawl is ejected
    /// ([`Event::Ejected`](crate::Event::Ejected)) even if its heartbeats
    /// are fine, and returns after its ejection time
    /// ([`Event::Returned`](crate::Event::Returned)). Does not wait for the
    /// member to take it; an outcome for a member not known to be alive is
    /// ignored.
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn record_outcome(&self, name: &str, outcome: Outcome, latency: Option<Duration>) -> Result<(), Stopped> {
        let one = RequestOutcome { member: name.to_owned(), outcome, latency };
        self.tell(Command::Outcomes(vec![one], None)).await
    }

    /// Records several outcomes at once, and says, for each, whether it was
    /// taken (its member known to be alive).
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn record_outcomes(&self, outcomes: Vec<RequestOutcome>) -> Result<Vec<bool>, Stopped> {
        self.ask(|tx| Command::Outcomes(outcomes, Some(tx))).await
    }

    /// The keys, by id (never the keys), with what each sealed and opened;
    /// empty for a member without keys.
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn keys(&self) -> Result<Vec<KeyInfo>, Stopped> {
        self.ask(Command::Keys).await
    }

    /// Installs a key (it opens packets from now on).
    ///
    /// # Errors
    ///
    /// [`KeyError::NoKeyring`] for a member started without keys,
    /// [`KeyError::Keyring`] when the keyring refuses (full, or an id
    /// collision), [`KeyError::Stopped`] once the member has stopped.
    pub async fn install_key(&self, key: [u8; 32]) -> Result<KeyId, KeyError> {
        self.ask(|tx| Command::InstallKey(key, tx)).await?
    }

    /// Seals with key `id` from now on.
    ///
    /// # Errors
    ///
    /// As [`Cluster::install_key`]; the keyring refuses an unknown id.
    pub async fn use_key(&self, id: KeyId) -> Result<(), KeyError> {
        self.ask(|tx| Command::UseKey(id, tx)).await?
    }

    /// Removes key `id`.
    ///
    /// # Errors
    ///
    /// As [`Cluster::install_key`]; the keyring refuses an unknown id and
    /// the primary key.
    pub async fn remove_key(&self, id: KeyId) -> Result<(), KeyError> {
        self.ask(|tx| Command::RemoveKey(id, tx)).await?
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

    /// Whether the member is still running (it has not left, been shut
    /// down, or failed).
    pub fn is_running(&self) -> bool {
        self.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref().is_some_and(|t| !t.is_finished())
    }
}
