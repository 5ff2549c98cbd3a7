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
use vigil_membership::{Config, ConfigError, HealthPolicy, MemberView, Node, NodeId, Tags, WatchReport};

use crate::clock::Clock;
use crate::driver::{Command, Driver};
use crate::error::{KeyError, StartError, Stopped};
use crate::generation::next_generation;
use crate::intercept::Intercept;
use crate::types::{ClusterEvent, ClusterStats, NetConfig, Recorded, RequestOutcome, Snapshot};

/// How to start a member: its name, where it listens, whom it joins
/// through, the protocol's configuration, keys, tags and the runtime's
/// settings; [`Builder::start`] starts it.
///
/// A clone is a new member to start, with the same settings: it has event
/// streams of its own ([`Builder::events`]).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use vigil_net::{Cluster, Config, DEFAULT_CLUSTER, Tags};
///
/// let seed = Cluster::builder("seed").bind("127.0.0.1:0".parse()?).start().await?;
///
/// let mut config = Config::lan(DEFAULT_CLUSTER);
/// config.policies = vec!["route=2,ejection".parse()?];
/// let member = Cluster::builder("billing-7")
///     .bind("127.0.0.1:0".parse()?)
///     .seeds([seed.local_addr()])
///     .config(config)
///     .tags(Tags::new([("zone", "eu-1")])?)
///     .start()
///     .await?;
/// assert_eq!(member.id().name, "billing-7");
/// member.leave().await;
/// # Ok(())
/// # }
/// ```
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
    lease: Option<Arc<dyn crate::lease::Lease>>,
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
            lease: self.lease.clone(),
            events: broadcast::channel(EVENT_QUEUE).0,
        }
    }
}

/// Events kept for a stream that falls behind; beyond, it skips
/// ([`Events::missed`]).
const EVENT_QUEUE: usize = 4096;

/// The cluster id when none is given: `"vigi"`. Members of different
/// clusters (ids) refuse each other's packets, so clusters that share a
/// network stay apart.
///
/// # Examples
///
/// ```
/// use vigil_net::{Config, DEFAULT_CLUSTER};
///
/// assert_eq!(DEFAULT_CLUSTER.to_be_bytes()[4..], *b"vigi");
/// let ours = Config::lan(0x6f75_7273); // another cluster on the same network
/// assert_ne!(ours.cluster, DEFAULT_CLUSTER);
/// ```
pub const DEFAULT_CLUSTER: u64 = 0x7669_6769;

impl Builder {
    /// A member named `name`, binding `0.0.0.0:7946`, on the LAN preset
    /// ([`Config::lan`]), in plaintext. The same as [`Cluster::builder`].
    ///
    /// # Examples
    ///
    /// ```
    /// use vigil_net::Builder;
    ///
    /// // Nothing is bound until it starts.
    /// let builder = Builder::new("a").bind("127.0.0.1:0".parse().unwrap());
    /// # drop(builder);
    /// ```
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
            lease: None,
            events: broadcast::channel(EVENT_QUEUE).0,
        }
    }

    /// The events of the member this builder starts, from its very first
    /// (the members it meets as it joins): subscribe before
    /// [`Builder::start`] to miss none. The stream ends when the member
    /// stops.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, Event};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let builder = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]);
    /// let mut events = builder.events();
    /// let b = builder.start().await?;
    /// // The first event is `a` met on the way in.
    /// while let Some(e) = events.next().await {
    ///     println!("{}", e.event);
    ///     if matches!(&e.event, Event::Up { id, .. } if id.name == "a") {
    ///         break;
    ///     }
    /// }
    /// b.leave().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn events(&self) -> Events {
        Events { rx: Some(self.events.subscribe()), lagged: 0 }
    }

    /// Where to listen: UDP and TCP on the same port (port 0 picks one).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let member = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// assert_ne!(member.local_addr().port(), 0, "the port picked");
    /// # Ok(())
    /// # }
    /// ```
    pub fn bind(mut self, addr: SocketAddr) -> Builder {
        self.bind = addr;
        self
    }

    /// The address other members reach this one at (default: the bound
    /// address, which must then not be unspecified).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, StartError};
    ///
    /// // Bound to every interface, a member must say which address is its own.
    /// let any = Cluster::builder("a").bind("0.0.0.0:0".parse()?);
    /// assert!(matches!(any.clone().start().await, Err(StartError::Unreachable(_))));
    /// // Behind a port mapping, say: others reach it there.
    /// let member = any.advertise("203.0.113.7:7946".parse()?).start().await?;
    /// assert_eq!(member.advertise_addr(), "203.0.113.7:7946".parse()?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn advertise(mut self, addr: SocketAddr) -> Builder {
        self.advertise = Some(addr);
        self
    }

    /// Members to join through, by address. A member given none starts a
    /// cluster of its own, which others may join through it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::Cluster;
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// // Joining takes a round trip.
    /// while b.member("a").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn seeds(mut self, seeds: impl IntoIterator<Item = SocketAddr>) -> Builder {
        self.seeds = seeds.into_iter().collect();
        self
    }

    /// Members to join through, in any of [`Seed`](crate::Seed)'s forms:
    /// `IP:PORT`, `host:port` or `dns+host:port` (every address the name
    /// resolves to), `dnssrv+NAME` (the targets and ports of the name's SRV
    /// records). The names are resolved when the member starts and again
    /// each time it knows no live member and goes back to its seeds, so a
    /// name whose records change (a Kubernetes headless Service, a seed
    /// moved) keeps working. A name that does not resolve is logged and
    /// tried again then; one that cannot be a seed at all fails
    /// [`Builder::start`] with [`StartError::Seed`]. Given with
    /// [`Builder::seeds`], both are used.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::Cluster;
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// // `seed.example:7946` takes the same form; an address needs no lookup.
    /// let seed = format!("127.0.0.1:{}", a.local_addr().port());
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seed_names([seed]).start().await?;
    /// while b.member("a").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn seed_names(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Builder {
        self.seed_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// The protocol's configuration (a preset such as [`Config::lan`],
    /// adjusted or not). [`Builder::start`] checks it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, Config, DEFAULT_CLUSTER};
    ///
    /// let mut config = Config::lan(DEFAULT_CLUSTER);
    /// config.policies = vec!["stop-routing=2,ejection".parse()?, "remove=8,dwell=2s,destructive".parse()?];
    /// config.recorded_arrivals = 1000;
    /// let member = Cluster::builder("a").bind("127.0.0.1:0".parse()?).config(config).start().await?;
    /// # drop(member);
    /// # Ok(())
    /// # }
    /// ```
    pub fn config(mut self, config: Config) -> Builder {
        self.config = config;
        self
    }

    /// Seal packets with these keys, as `mode` says: [`SealMode::Sealed`]
    /// sends and takes sealed packets only; [`SealMode::Staged`] sends
    /// sealed ones and takes plaintext too; [`SealMode::Plaintext`] sends
    /// plaintext and opens sealed ones too. The last two are the steps of
    /// turning sealing on over a live cluster. Members that seal need a key
    /// in common.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, Keyring, SealMode};
    ///
    /// // In production, 32 random bytes shared by every member (`vigil keygen`).
    /// let key = [7u8; 32];
    /// let member = Cluster::builder("a")
    ///     .bind("127.0.0.1:0".parse()?)
    ///     .keys(Keyring::new(key), SealMode::Sealed)
    ///     .start()
    ///     .await?;
    /// assert_eq!(member.keys().await?.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn keys(mut self, keyring: Keyring, mode: SealMode) -> Builder {
        self.keyring = Some(keyring);
        self.mode = mode;
        self
    }

    /// Where the last generation is recorded, so a restart always comes
    /// back with a higher one (see [`crate::generation`]), and the members
    /// known, which a restarted member asks as well as its seeds (see
    /// [`crate::known`]). The directory is created if needed.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::Cluster;
    ///
    /// let dir = std::env::temp_dir().join(format!("vigil-doc-data-dir-{}", std::process::id()));
    /// let builder = Cluster::builder("a").bind("127.0.0.1:0".parse()?).data_dir(&dir);
    /// let first = builder.clone().start().await?;
    /// first.shutdown().await;
    /// let second = builder.start().await?;
    /// assert!(second.id().generation > first.id().generation);
    /// # second.shutdown().await;
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.data_dir = Some(dir.into());
        self
    }

    /// This member's tags when it joins (see [`Cluster::set_tags`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, Tags};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let tags = Tags::new([("zone", "eu-1"), ("role", "db")])?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).tags(tags).start().await?;
    /// // They travel with the join.
    /// while a.member("b").await?.is_none_or(|view| view.tags.get("zone") != Some("eu-1")) {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// # drop(b);
    /// # Ok(())
    /// # }
    /// ```
    pub fn tags(mut self, tags: Tags) -> Builder {
        self.tags = tags;
        self
    }

    /// The runtime's own settings (the protocol's are [`Builder::config`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, NetConfig};
    ///
    /// let mut net = NetConfig::default();
    /// net.leave_wait = Duration::from_millis(200);
    /// let member = Cluster::builder("a").bind("127.0.0.1:0".parse()?).net(net).start().await?;
    /// member.leave().await; // announced, then stopped within about 200 ms
    /// # Ok(())
    /// # }
    /// ```
    pub fn net(mut self, net: NetConfig) -> Builder {
        self.net = net;
        self
    }

    /// Puts `intercept` between the member and its sockets, for tests and
    /// demonstrations: it decides which packets pass and when the member
    /// stands still (see [`Faults`](crate::Faults)). A clone of the builder
    /// shares it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use vigil_net::{Cluster, Faults};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let faults = Arc::new(Faults::default());
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).intercept(faults.clone()).start().await?;
    /// // `b` hears nothing from `a`, and `a` nothing from it, until healed.
    /// faults.block([a.local_addr()]);
    /// # drop(b);
    /// # Ok(())
    /// # }
    /// ```
    pub fn intercept(mut self, intercept: Arc<dyn Intercept>) -> Builder {
        self.intercept = Some(intercept);
        self
    }

    /// The lease a `lease-majority` downing strategy asks for
    /// ([`Config::downing`]): see [`lease`](crate::lease). Without one,
    /// such a member's side never takes it, and downs itself whenever the
    /// strategy asks. With `lease-majority`, the running member checks it
    /// ([`Lease::check`](crate::lease::Lease::check)) every
    /// [`CHECK_EVERY`](crate::lease::CHECK_EVERY) and when a member becomes
    /// unreachable, logs once when it cannot be asked and once when it can
    /// again, and keeps what it found in [`Snapshot::lease`](crate::Snapshot::lease).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use vigil_net::lease::FileLease;
    /// use vigil_net::{Cluster, Config, DEFAULT_CLUSTER};
    ///
    /// let mut config = Config::lan(DEFAULT_CLUSTER);
    /// config.downing = vigil_net::downing::Downing::new("lease-majority".parse()?);
    /// let builder = Cluster::builder("a").config(config).lease(Arc::new(FileLease::new("/var/lib/vigil/lease")));
    /// # drop(builder);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lease(mut self, lease: Arc<dyn crate::lease::Lease>) -> Builder {
        self.lease = Some(lease);
        self
    }

    /// Binds the sockets, starts the member's tasks on the current tokio
    /// runtime, and joins through the seeds. It returns once the member
    /// runs; joining goes on in the background (the seeds' members appear
    /// in [`Cluster::members`] and as [`Event::Up`](crate::Event::Up)
    /// events). Seed names are resolved before it returns.
    ///
    /// # Errors
    ///
    /// A [`StartError`], and nothing is left running:
    ///
    /// - [`StartError::Config`] when the configuration does not validate
    ///   ([`Config::validate`]), or the name is empty, longer than 64 bytes
    ///   or holds a control character;
    /// - [`StartError::Net`] when a [`NetConfig`] setting is out of range
    ///   (no connections, a frame budget under 64 KiB, a zero timeout);
    /// - [`StartError::Bind`] when UDP or TCP cannot be bound to the address
    ///   (taken, or not this host's) or the socket buffers cannot be set;
    /// - [`StartError::Unreachable`] when the address to advertise is
    ///   unspecified (`0.0.0.0`, `::`) or has port 0;
    /// - [`StartError::Generation`] when the data directory cannot be
    ///   created, read or written, or its generation file holds something
    ///   other than a generation ([`next_generation`](crate::generation::next_generation)).
    ///
    /// [`StartError::Seal`] does not happen here: [`Builder::keys`] always
    /// gives the keyring a sealing mode needs.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, StartError};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// // The same port again: taken.
    /// match Cluster::builder("b").bind(a.local_addr()).start().await {
    ///     Err(StartError::Bind(addr, e)) => println!("cannot bind {addr}: {e}"),
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
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
        let named_seeds = self
            .seed_names
            .iter()
            .map(|s| s.parse::<crate::Seed>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(StartError::Seed)?;
        let started = crate::driver::unix_secs();
        let seal = match (self.keyring, self.mode) {
            (None, SealMode::Plaintext) => Seal::plaintext(self.config.cluster),
            (keyring, mode) => {
                let seal = Seal::new(self.config.cluster, mode, keyring, rand::random())
                    .map_err(StartError::Seal)?
                    .with_envelope(self.net.envelope);
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
        // The members known when this one last ran: seeds too.
        let mut seed_addrs = self.seeds.clone();
        if let Some(dir) = &self.data_dir {
            let known = crate::known::read(dir);
            if let Some(problem) = &known.problem {
                tracing::warn!("{problem}: the members known before the restart are not rejoined");
            } else if known.skipped > 0 {
                tracing::warn!("{}: {} lines skipped", dir.join(crate::known::FILE).display(), known.skipped);
            }
            if !known.addrs.is_empty() {
                tracing::info!("{} members known before the restart are asked too", known.addrs.len());
            }
            for a in known.addrs {
                if !seed_addrs.contains(&a) && a != advertise {
                    seed_addrs.push(a);
                }
            }
        }
        let mut seeds = seed_addrs.clone();
        if !named_seeds.is_empty() {
            let (resolved, failed) = crate::seed::resolve(&named_seeds).await;
            if failed > 0 {
                tracing::warn!(
                    "{failed} of the seeds did not resolve; they are tried again while this member is alone"
                );
            }
            seeds.extend(resolved);
        }
        let joins = !seeds.is_empty() || !named_seeds.is_empty();
        if joins {
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
            (seed_addrs, named_seeds),
            self.data_dir.clone(),
            self.intercept,
            self.lease,
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
            joins,
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

/// The stream of a member's events, from [`Cluster::events`] or
/// [`Builder::events`]. Each stream sees every event from when it was taken.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use vigil_net::{Cluster, Event};
///
/// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
/// let mut events = a.events();
/// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
/// while let Some(e) = events.next().await {
///     println!("{} ms: {}", e.unix_ms, e.event);
///     if let Event::Up { id, .. } = &e.event {
///         assert_eq!(id.name, "b");
///         break;
///     }
/// }
/// # drop(b);
/// # Ok(())
/// # }
/// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::Cluster;
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let mut events = a.events();
    /// // Nothing happens to a member alone: bound the wait.
    /// let next = tokio::time::timeout(Duration::from_millis(100), events.next()).await;
    /// assert!(next.is_err(), "no event yet");
    /// a.shutdown().await;
    /// assert!(events.next().await.is_none(), "the stream ends with the member");
    /// # Ok(())
    /// # }
    /// ```
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

    /// Events this reader missed by falling behind (more than 4,096 events
    /// queued for it): an application that keeps state from events should
    /// read [`Cluster::members`] again when this grows.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let a = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let events = a.events();
    /// assert_eq!(events.missed(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn missed(&self) -> u64 {
        self.lagged
    }
}

/// A running member. Dropping it stops the member without leaving; call
/// [`Cluster::leave`] to leave.
///
/// Every method that asks the member something returns [`Stopped`] once it
/// has stopped (it left, was shut down, or failed).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use vigil_net::{Cluster, Status};
///
/// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
/// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
/// while b.members().await?.is_empty() {
///     tokio::time::sleep(Duration::from_millis(10)).await;
/// }
/// for m in b.members().await? {
///     assert_eq!(m.status, Status::Alive);
///     println!("{} at {}, epoch {:?}", m.id, m.addr, m.epoch());
/// }
/// b.leave().await;
/// a.leave().await;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Cluster {
    cmd: mpsc::Sender<Command>,
    events: broadcast::WeakSender<ClusterEvent>,
    local: SocketAddr,
    advertise: SocketAddr,
    id: NodeId,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    leave_wait: Duration,
    joins: bool,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(task) = self.take_task() {
            task.abort();
        }
    }
}

impl Cluster {
    /// A builder for a member named `name`; see [`Builder`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let member = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// assert_eq!(member.id().name, "a");
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(name: &str) -> Builder {
        Builder::new(name)
    }

    /// The address the sockets are bound to, with the port picked when
    /// [`Builder::bind`] gave port 0: the address to give others as a seed.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let a = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let seed = a.local_addr();
    /// assert!(seed.ip().is_loopback() && seed.port() != 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The address other members reach this one at: the one given to
    /// [`Builder::advertise`], or else [`Cluster::local_addr`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let a = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// assert_eq!(a.advertise_addr(), a.local_addr());
    /// # Ok(())
    /// # }
    /// ```
    pub fn advertise_addr(&self) -> SocketAddr {
        self.advertise
    }

    /// Whether this member started with members to join: seeds, or members
    /// it knew before a restart (kept in the data directory). Such a member
    /// is not on its own until it meets one; a member with neither is a
    /// first member, whom others join.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let first = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// assert!(!first.joins());
    /// let second =
    ///     vigil_net::Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([first.local_addr()]).start().await?;
    /// assert!(second.joins());
    /// # Ok(())
    /// # }
    /// ```
    pub fn joins(&self) -> bool {
        self.joins
    }

    /// This member's name and generation (see [`crate::generation`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let a = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// assert_eq!(a.id().name, "a");
    /// println!("{}", a.id()); // a#1765432100123: the name, then the generation
    /// # Ok(())
    /// # }
    /// ```
    pub fn id(&self) -> &NodeId {
        &self.id
    }

    /// The events from now on (to see those of the start too, subscribe to
    /// [`Builder::events`] before it); a stream taken after the member
    /// stopped ends at once.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, Event};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// // A member that leaves before it has joined has no one to tell.
    /// while a.member("b").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// let mut events = a.events();
    /// b.leave().await;
    /// while let Some(e) = events.next().await {
    ///     if let Event::Left { id } = e.event {
    ///         assert_eq!(id.name, "b");
    ///         break;
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
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
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, Status};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// assert!(a.members().await?.is_empty(), "alone");
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// while a.members().await?.is_empty() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// let alive: Vec<String> =
    ///     a.members().await?.into_iter().filter(|m| m.status == Status::Alive).map(|m| m.id.name).collect();
    /// assert_eq!(alive, ["b"]);
    /// # drop(b);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn members(&self) -> Result<Vec<MemberView>, Stopped> {
        self.ask(Command::Members).await
    }

    /// One member as this one sees it; `None` if it does not know it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::Cluster;
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// let view = loop {
    ///     match a.member("b").await? {
    ///         Some(view) => break view,
    ///         None => tokio::time::sleep(Duration::from_millis(10)).await,
    ///     }
    /// };
    /// assert_eq!(view.addr, b.advertise_addr());
    /// assert_eq!(a.member("nobody").await?, None);
    /// # Ok(())
    /// # }
    /// ```
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
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, Config, DEFAULT_CLUSTER};
    ///
    /// let mut config = Config::lan(DEFAULT_CLUSTER);
    /// config.policies = vec!["remove=8,dwell=2s".parse()?];
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).config(config).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// while a.member("b").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// a.watch("b").await?;
    /// let report = a.watch_report("b").await?.expect("watched");
    /// println!("b: {} at level {:.2}", report.model, report.level);
    /// for p in &report.policies {
    ///     // `probe` first, then `remove`; the time is `None` until heartbeats come.
    ///     println!("  {}: {:?}, threshold in {:?}", p.name, p.state, p.time_to_threshold);
    /// }
    /// assert_eq!(report.policies[1].name, "remove");
    /// # drop(b);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn watch_report(&self, name: &str) -> Result<Option<WatchReport>, Stopped> {
        self.ask(|tx| Command::WatchReport(name.to_owned(), tx)).await
    }

    /// Monitors `name` too (members this one does not observe by default):
    /// its policies' verdicts become [`Event::Policy`](crate::Event::Policy)
    /// events. A member this one does not know is not watched: watch it
    /// once it has appeared in [`Cluster::members`]. A member this one
    /// does not observe for the protocol is asked for its heartbeats, with
    /// a lease this one renews, so φ is judged from its own heartbeats.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::Cluster;
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// while a.member("b").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// a.watch("b").await?;
    /// assert!(a.watch_report("b").await?.is_some_and(|r| r.by_app));
    /// # drop(b);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn watch(&self, name: &str) -> Result<(), Stopped> {
        self.tell(Command::Watch(name.to_owned())).await
    }

    /// Stops monitoring `name` for the application: its policies report
    /// nothing more. Monitoring goes on if the member is one this member
    /// observes for the protocol.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::Cluster;
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// while a.member("b").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// a.watch("b").await?;
    /// a.unwatch("b").await?;
    /// // In a cluster of two, `a` observes `b` for the protocol anyway.
    /// assert!(a.watch_report("b").await?.is_some_and(|r| !r.by_app && r.on_ring));
    /// # drop(b);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn unwatch(&self, name: &str) -> Result<(), Stopped> {
        self.tell(Command::Unwatch(name.to_owned())).await
    }

    /// Joins through `seeds` now, on a running member (an operator's
    /// `vigil join`): each is resolved, and every address found is asked
    /// for its view at once and kept as a seed. What each seed resolved to,
    /// or why it did not; whether the addresses answered shows in
    /// [`Cluster::members`] a round trip later.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, Seed};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).start().await?;
    /// let asked = b.join(&[Seed::Addr(a.local_addr())]).await?;
    /// assert_eq!(asked[0].1, Ok(vec![a.local_addr()]));
    /// while b.member("a").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn join(
        &self,
        seeds: &[crate::Seed],
    ) -> Result<Vec<(crate::Seed, Result<Vec<SocketAddr>, String>)>, Stopped> {
        let mut report = Vec::with_capacity(seeds.len());
        let mut addrs = Vec::new();
        for seed in seeds {
            let found = crate::seed::resolve_one(seed).await;
            if let Ok(a) = &found {
                for &x in a {
                    if !addrs.contains(&x) {
                        addrs.push(x);
                    }
                }
            }
            report.push((seed.clone(), found));
        }
        addrs.truncate(crate::seed::MAX_RESOLVED);
        if !addrs.is_empty() {
            self.tell(Command::Contact(addrs)).await?;
        }
        Ok(report)
    }

    /// Forces a member believed dead out of the cluster (Serf's
    /// force-leave): it becomes left here, the news is gossiped, and
    /// nobody tries to reconnect to it any more; with `prune`, this member
    /// forgets it at once. See [`Node::force_leave`](vigil_membership::Node::force_leave).
    ///
    /// # Errors
    ///
    /// The outer [`Stopped`] once the member has stopped; the inner
    /// [`ForceLeaveError`](crate::ForceLeaveError) when the member is
    /// unknown or not dead.
    pub async fn force_leave(&self, name: &str, prune: bool) -> Result<Result<(), crate::ForceLeaveError>, Stopped> {
        self.ask(|tx| Command::ForceLeave(name.to_owned(), prune, tx)).await
    }

    /// Retunes one of the graded policies given in [`Config::policies`]
    /// on the running member (threshold, dwell, rearm, recovery), without a
    /// restart: every watched member is judged again as if the policy had
    /// always been so. Policies are this member's own judgement, not
    /// cluster state: nothing is announced.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, Config, DEFAULT_CLUSTER};
    ///
    /// let mut config = Config::lan(DEFAULT_CLUSTER);
    /// config.policies = vec!["route=2,dwell=500ms".parse()?];
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).config(config).start().await?;
    /// a.retune_policy("route=4,dwell=1s".parse()?).await??;
    /// assert!(a.retune_policy("nope=4".parse()?).await?.is_err());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The outer [`Stopped`] once the member has stopped; the inner
    /// [`ConfigError`] for no such policy, settings that do not validate, or
    /// a change that needs a restart (what the policy listens to, whether it
    /// is destructive).
    pub async fn retune_policy(&self, policy: HealthPolicy) -> Result<Result<(), ConfigError>, Stopped> {
        self.ask(|tx| Command::RetunePolicy(Box::new(policy), tx)).await
    }

    /// Replaces this member's tags and announces them: every other member
    /// sees them in its [`MemberView::tags`] and reports
    /// [`Event::TagsUpdated`](crate::Event::TagsUpdated) (usually within a
    /// second or two).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, Tags};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// b.set_tags(Tags::new([("version", "2.1")])?).await?;
    /// while a.member("b").await?.is_none_or(|m| m.tags.get("version") != Some("2.1")) {
    ///     tokio::time::sleep(Duration::from_millis(20)).await;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn set_tags(&self, tags: Tags) -> Result<(), Stopped> {
        self.tell(Command::SetTags(tags)).await
    }

    /// The counters: the protocol's (messages and bytes by kind, verdicts,
    /// refused input), the seal's, and the runtime's.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let a = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let stats = a.stats().await?;
    /// println!("{} datagrams sent, {} bytes", stats.net.datagrams_sent, stats.node.bytes_sent);
    /// assert_eq!(stats.seal.opened, 0, "plaintext: nothing to open");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn stats(&self) -> Result<ClusterStats, Stopped> {
        self.ask(Command::Stats).await
    }

    /// Everything this member knows, taken at one instant: what an HTTP
    /// API or a dashboard reads.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let a = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let s = a.snapshot().await?;
    /// assert_eq!(s.node.id.name, "a");
    /// assert!(s.node.members.is_empty());
    /// println!("up for {:?}", s.uptime);
    /// # Ok(())
    /// # }
    /// ```
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
    /// [`recorded_arrivals`](Config::recorded_arrivals) is set: the
    /// recording the lab replays to choose a detector and a threshold.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, Config, DEFAULT_CLUSTER};
    ///
    /// let mut config = Config::lan(DEFAULT_CLUSTER);
    /// config.recorded_arrivals = 10_000;
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).config(config).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// while a.member("b").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// a.watch("b").await?;
    /// let recorded = a.arrivals("b", None).await?.expect("watched");
    /// // Heartbeats come about once a second; read again later with
    /// // `Some(last)` for the newer ones only.
    /// println!("{} heartbeats by {:?}", recorded.arrivals.times.len(), recorded.now);
    /// assert!(a.arrivals("nobody", None).await?.is_none());
    /// # drop(b);
    /// # Ok(())
    /// # }
    /// ```
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
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, Event, Outcome};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// while a.member("b").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// let mut events = a.events();
    /// // Five 5xx in a row eject at once.
    /// for _ in 0..5 {
    ///     a.record_outcome("b", Outcome::Response(503), Some(Duration::from_millis(3))).await?;
    /// }
    /// while let Some(e) = events.next().await {
    ///     if let Event::Ejected { id, reason, .. } = e.event {
    ///         println!("{} ejected: {}", id.name, reason.name());
    ///         break;
    ///     }
    /// }
    /// # drop(b);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn record_outcome(&self, name: &str, outcome: Outcome, latency: Option<Duration>) -> Result<(), Stopped> {
        let one = RequestOutcome { member: name.to_owned(), outcome, latency };
        self.tell(Command::Outcomes(vec![one], None)).await
    }

    /// Records several outcomes at once, and says, for each, whether it was
    /// taken (its member known to be alive). Unlike
    /// [`Cluster::record_outcome`], it waits for the member to take them.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, Outcome, RequestOutcome};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// while a.member("b").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// let batch = vec![
    ///     RequestOutcome {
    ///         member: "b".into(),
    ///         outcome: Outcome::Response(200),
    ///         latency: Some(Duration::from_millis(4)),
    ///     },
    ///     RequestOutcome { member: "nobody".into(), outcome: Outcome::Timeout, latency: None },
    /// ];
    /// assert_eq!(a.record_outcomes(batch).await?, [true, false]);
    /// # drop(b);
    /// # Ok(())
    /// # }
    /// ```
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
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, Keyring, SealMode};
    ///
    /// let ring = Keyring::new([1; 32]);
    /// let primary = ring.primary();
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).keys(ring, SealMode::Sealed).start().await?;
    /// let keys = a.keys().await?;
    /// assert_eq!(keys.len(), 1);
    /// assert_eq!(keys[0].id, primary);
    /// assert!(keys[0].primary);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn keys(&self) -> Result<Vec<KeyInfo>, Stopped> {
        self.ask(Command::Keys).await
    }

    /// Seals what this member sends in `envelope` from now on; it opens
    /// both versions whatever it sends. Moving a running cluster from
    /// version 2 to version 3 is this, member by member, once every member
    /// runs a build that opens version 3 (see
    /// [`NetConfig::envelope`](crate::NetConfig::envelope)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, Envelope, Keyring, SealMode};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).keys(Keyring::new([1; 32]), SealMode::Sealed).start().await?;
    /// assert_eq!(a.set_envelope(Envelope::XChaCha20Poly1305).await?, Envelope::Aes256Gcm, "the one before");
    /// assert_eq!(a.set_envelope(Envelope::Aes256Gcm).await?, Envelope::XChaCha20Poly1305);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn set_envelope(&self, envelope: crate::Envelope) -> Result<crate::Envelope, Stopped> {
        self.ask(|tx| Command::SetEnvelope(envelope, tx)).await
    }

    /// Installs a key: it opens packets from now on. Installing a key the
    /// ring holds already changes nothing and returns its id. To rotate,
    /// install the new key on every member, then [`use`](Cluster::use_key)
    /// it on every member, then [`remove`](Cluster::remove_key) the old one.
    ///
    /// # Errors
    ///
    /// - [`KeyError::NoKeyring`] for a member started without keys;
    /// - [`KeyError::Keyring`] with [`KeyringError::Full`](crate::KeyringError::Full)
    ///   when the ring holds 16 keys already, or
    ///   [`KeyringError::IdCollision`](crate::KeyringError::IdCollision) when
    ///   another key has the same id (generate another key);
    /// - [`KeyError::Stopped`] once the member has stopped.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, KeyError, Keyring, SealMode};
    ///
    /// let old = Keyring::new([1; 32]);
    /// let old_id = old.primary();
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).keys(old, SealMode::Sealed).start().await?;
    /// let new_id = a.install_key([2; 32]).await?;
    /// a.use_key(new_id).await?;
    /// a.remove_key(old_id).await?;
    /// assert_eq!(a.keys().await?.len(), 1);
    ///
    /// let plain = Cluster::builder("p").bind("127.0.0.1:0".parse()?).start().await?;
    /// assert_eq!(plain.install_key([2; 32]).await, Err(KeyError::NoKeyring));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn install_key(&self, key: [u8; 32]) -> Result<KeyId, KeyError> {
        self.ask(|tx| Command::InstallKey(key, tx)).await?
    }

    /// Seals with key `id` from now on (it becomes the primary key). Every
    /// member must have installed it first, or they refuse this one's
    /// packets.
    ///
    /// # Errors
    ///
    /// - [`KeyError::Keyring`] with
    ///   [`KeyringError::Unknown`](crate::KeyringError::Unknown) when no
    ///   installed key has this id;
    /// - [`KeyError::NoKeyring`] for a member started without keys;
    /// - [`KeyError::Stopped`] once the member has stopped.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, KeyError, KeyId, Keyring, KeyringError, SealMode};
    ///
    /// let ring = Keyring::new([1; 32]);
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).keys(ring, SealMode::Sealed).start().await?;
    /// let id = a.install_key([2; 32]).await?;
    /// a.use_key(id).await?;
    /// assert!(a.keys().await?.iter().any(|k| k.id == id && k.primary));
    /// let unknown = KeyId(0x0a0b_0c0d);
    /// assert_eq!(a.use_key(unknown).await, Err(KeyError::Keyring(KeyringError::Unknown(unknown))));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn use_key(&self, id: KeyId) -> Result<(), KeyError> {
        self.ask(|tx| Command::UseKey(id, tx)).await?
    }

    /// Removes key `id`: packets sealed with it are refused from now on.
    ///
    /// # Errors
    ///
    /// - [`KeyError::Keyring`] with
    ///   [`KeyringError::Unknown`](crate::KeyringError::Unknown) when no
    ///   installed key has this id, or
    ///   [`KeyringError::RemovingPrimary`](crate::KeyringError::RemovingPrimary)
    ///   for the key this member seals with ([`use`](Cluster::use_key) another
    ///   first);
    /// - [`KeyError::NoKeyring`] for a member started without keys;
    /// - [`KeyError::Stopped`] once the member has stopped.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, KeyError, Keyring, KeyringError, SealMode};
    ///
    /// let ring = Keyring::new([1; 32]);
    /// let primary = ring.primary();
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).keys(ring, SealMode::Sealed).start().await?;
    /// let spare = a.install_key([2; 32]).await?;
    /// a.remove_key(spare).await?;
    /// assert_eq!(a.remove_key(primary).await, Err(KeyError::Keyring(KeyringError::RemovingPrimary(primary))));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn remove_key(&self, id: KeyId) -> Result<(), KeyError> {
        self.ask(|tx| Command::RemoveKey(id, tx)).await?
    }

    /// A key operation on every member at once, the way Serf's keyring
    /// commands work: applied here, and asked of every member alive or
    /// suspected over a sealed stream frame; each answers with its keys
    /// after the operation, or why it refused. Members that do not answer
    /// within 5 s are said so. Rotation: install the new key everywhere,
    /// use it everywhere once every member has it, then remove the old one.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::control::KeyOp;
    /// use vigil_net::{Cluster, Keyring, SealMode};
    ///
    /// let start = |name: &'static str| {
    ///     Cluster::builder(name).bind("127.0.0.1:0".parse().unwrap()).keys(Keyring::new([1; 32]), SealMode::Sealed)
    /// };
    /// let a = start("a").start().await?;
    /// let b = start("b").seeds([a.local_addr()]).start().await?;
    /// while a.member("b").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// let answers = a.keys_everywhere(KeyOp::Install([2; 32])).await?;
    /// assert_eq!(answers.len(), 2);
    /// assert!(answers.iter().all(|m| m.result.as_ref().is_ok_and(|keys| keys.len() == 2)));
    /// assert_eq!(b.keys().await?.len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Stopped`] once the member has stopped.
    pub async fn keys_everywhere(&self, op: crate::control::KeyOp) -> Result<Vec<crate::MemberKeys>, Stopped> {
        self.ask(|tx| Command::KeysEverywhere(op, tx)).await
    }

    /// The driver's task, the first time it is asked for.
    fn take_task(&self) -> Option<tokio::task::JoinHandle<()>> {
        self.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }

    /// Leaves: the departure is announced, then, after at most the leave
    /// wait ([`NetConfig::leave_wait`]), the member stops. Only the first
    /// call to `leave` or [`Cluster::shutdown`] has an effect.
    ///
    /// The others report [`Event::Left`](crate::Event::Left), not a death.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use vigil_net::{Cluster, Event};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// let b = Cluster::builder("b").bind("127.0.0.1:0".parse()?).seeds([a.local_addr()]).start().await?;
    /// while a.member("b").await?.is_none() {
    ///     tokio::time::sleep(Duration::from_millis(10)).await;
    /// }
    /// let mut events = a.events();
    /// b.leave().await;
    /// assert!(!b.is_running());
    /// while let Some(e) = events.next().await {
    ///     if let Event::Left { id } = e.event {
    ///         assert_eq!(id.name, "b");
    ///         break;
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn leave(&self) {
        self.leave_with(false).await;
    }

    /// Leaves as [`Cluster::leave`] does, for good: the members known are
    /// removed from the data directory, so that a restart does not rejoin
    /// them (it joins through its seeds, or starts a cluster). `vigil
    /// leave` is this; a SIGTERM, which a restart follows, is
    /// [`Cluster::leave`].
    pub async fn leave_for_good(&self) {
        self.leave_with(true).await;
    }

    async fn leave_with(&self, for_good: bool) {
        let Some(task) = self.take_task() else { return };
        let _ = self.cmd.send(Command::Leave(self.leave_wait, for_good)).await;
        // Bounded: the driver stops after the wait whatever happens.
        let _ = tokio::time::timeout(self.leave_wait + Duration::from_secs(1), task).await;
    }

    /// Stops without leaving, as a crash would: the others find this member
    /// dead (on the LAN preset, within about 4 to 7 seconds). Only the first
    /// call to `shutdown` or [`Cluster::leave`] has an effect.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vigil_net::{Cluster, Stopped};
    ///
    /// let a = Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// a.shutdown().await;
    /// assert!(!a.is_running());
    /// assert_eq!(a.members().await, Err(Stopped));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn shutdown(&self) {
        let Some(task) = self.take_task() else { return };
        let _ = self.cmd.send(Command::Shutdown).await;
        let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
    }

    /// Whether the member is still running (it has not left, been shut
    /// down, or failed).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let a = vigil_net::Cluster::builder("a").bind("127.0.0.1:0".parse()?).start().await?;
    /// assert!(a.is_running());
    /// a.leave().await;
    /// assert!(!a.is_running());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_running(&self) -> bool {
        self.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref().is_some_and(|t| !t.is_finished())
    }
}
