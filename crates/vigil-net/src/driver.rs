//! The driver: one task owning the node and its seal, turning packets,
//! timers and commands into calls on the sans-IO core, and its output into
//! packets and events.
//!
//! Stream messages get tasks of their own: one per outbound frame (connect,
//! write, then read the answer if one comes, each under a timeout), and one
//! per inbound connection (read one frame, hand it to the driver, write back
//! the answer the node gives, at most `max_connections` at once). An answer
//! (a push-pull's reply) so travels on the connection that asked for it, as
//! memberlist's does: one connection per exchange, not two. Results come
//! back to the driver over channels; only the driver touches the node.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{Semaphore, broadcast, mpsc, oneshot};
use vigil_detector::Instant;
use vigil_detector::outlier::Outcome;
use vigil_membership::keyring::{KeyId, KeyInfo, KeyringError};
use vigil_membership::seal::{self, OVERHEAD, Seal};
use vigil_membership::wire::{MAX_DATAGRAM_ACCEPTED, MAX_STREAM};
use vigil_membership::{Arrivals, MemberView, Node, Tags};

use crate::clock::Clock;
use crate::cluster::{ClusterEvent, ClusterStats, NetConfig};
use crate::frame::{MAX_FRAME, MAX_PREFIX, split_address, with_address};
use crate::snapshot::Snapshot;

/// What the handle asks of the driver.
#[derive(Debug)]
pub(crate) enum Command {
    Members(oneshot::Sender<Vec<MemberView>>),
    Member(String, oneshot::Sender<Option<MemberView>>),
    Level(String, oneshot::Sender<Option<f64>>),
    TimeToSuspect(String, oneshot::Sender<Option<Duration>>),
    Watch(String),
    Unwatch(String),
    SetTags(Tags),
    Stats(oneshot::Sender<ClusterStats>),
    Snapshot(oneshot::Sender<Snapshot>),
    Arrivals(String, Option<Instant>, oneshot::Sender<Option<(Arrivals, Instant)>>),
    Keys(oneshot::Sender<Vec<KeyInfo>>),
    InstallKey([u8; 32], oneshot::Sender<Result<KeyId, KeyringError>>),
    UseKey(KeyId, oneshot::Sender<Result<(), KeyringError>>),
    RemoveKey(KeyId, oneshot::Sender<Result<(), KeyringError>>),
    Leave(Duration),
    Shutdown,
    Pause(Duration),
    Block(Vec<SocketAddr>),
    Outcomes(Vec<(String, Outcome, Option<Duration>)>, Option<oneshot::Sender<Vec<bool>>>),
}

/// The runtime's own counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct NetStats {
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// Datagrams received (before opening).
    pub datagrams_received: u64,
    /// Bytes of datagrams sent, as on the wire (sealed).
    pub datagram_bytes_sent: u64,
    /// Stream frames sent.
    pub frames_sent: u64,
    /// Stream frames received.
    pub frames_received: u64,
    /// Sends that failed (datagrams and frames).
    pub send_errors: u64,
    /// Inbound connections closed because `max_connections` were open.
    pub connections_refused: u64,
    /// Inbound frames dropped: too long, too slow, or cut short.
    pub frames_dropped: u64,
    /// Opened frames whose address prefix was malformed.
    pub frames_malformed: u64,
    /// Packets dropped by an injected fault ([`Cluster::block`](crate::Cluster::block)).
    pub dropped_by_fault: u64,
}

/// An inbound frame, and where to write the answer to it, if any.
type Inbound = (Vec<u8>, oneshot::Sender<Vec<u8>>);

/// Counters the listener tasks update.
#[derive(Debug, Default)]
struct Shared {
    connections_refused: AtomicU64,
    frames_dropped: AtomicU64,
}

pub(crate) struct Driver {
    node: Node,
    seal: Seal,
    clock: Clock,
    udp: Arc<UdpSocket>,
    tcp: Option<TcpListener>,
    advertise: SocketAddr,
    net: NetConfig,
    cmd: mpsc::Receiver<Command>,
    events: broadcast::Sender<ClusterEvent>,
    stats: NetStats,
    shared: Arc<Shared>,
    /// Connections waiting for the node's answer, by the sender's address.
    answers: std::collections::HashMap<SocketAddr, oneshot::Sender<Vec<u8>>>,
    /// Addresses cut off by an injected fault.
    blocked: std::collections::HashSet<SocketAddr>,
}

/// Datagrams read at most per wake, so timers and commands are never
/// starved by a flood.
const BURST: usize = 64;

impl Driver {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        node: Node,
        seal: Seal,
        clock: Clock,
        udp: UdpSocket,
        tcp: TcpListener,
        advertise: SocketAddr,
        net: NetConfig,
        cmd: mpsc::Receiver<Command>,
        events: broadcast::Sender<ClusterEvent>,
    ) -> Driver {
        Driver {
            node,
            seal,
            clock,
            udp: Arc::new(udp),
            tcp: Some(tcp),
            advertise,
            net,
            cmd,
            events,
            stats: NetStats::default(),
            shared: Arc::new(Shared::default()),
            answers: std::collections::HashMap::new(),
            blocked: std::collections::HashSet::new(),
        }
    }

    pub(crate) async fn run(mut self) {
        let (frames_tx, mut frames_rx) = mpsc::channel::<Inbound>(256);
        let (errors_tx, mut errors_rx) = mpsc::channel::<SocketAddr>(256);
        let listener = self.tcp.take().map(|tcp| {
            let shared = self.shared.clone();
            let net = self.net.clone();
            tokio::spawn(listen(tcp, frames_tx.clone(), shared, net))
        });
        let mut buf = vec![0u8; MAX_DATAGRAM_ACCEPTED + OVERHEAD + 1];
        let mut leaving: Option<tokio::time::Instant> = None;
        self.flush(&errors_tx, &frames_tx).await;
        loop {
            let deadline = match (self.node.poll_timeout(), leaving) {
                (_, Some(until)) => until,
                (Some(t), None) => self.clock.to_runtime(t),
                (None, None) => tokio::time::Instant::now() + Duration::from_secs(3600),
            };
            tokio::select! {
                r = self.udp.recv_from(&mut buf) => {
                    if let Ok((n, from)) = r {
                        self.datagram(&buf[..n], from);
                        // Drain what else is waiting, up to a burst.
                        for _ in 1..BURST {
                            match self.udp.try_recv_from(&mut buf) {
                                Ok((n, from)) => self.datagram(&buf[..n], from),
                                Err(_) => break,
                            }
                        }
                    }
                }
                Some((frame, answer)) = frames_rx.recv() => self.frame(&frame, answer),
                Some(to) = errors_rx.recv() => {
                    tracing::debug!(%to, "stream send failed: counted as a failed probe");
                    self.stats.send_errors += 1;
                    self.node.handle_send_error(self.clock.now(), to);
                }
                _ = tokio::time::sleep_until(deadline) => {
                    if leaving.is_some() {
                        break;
                    }
                    self.node.handle_timeout(self.clock.now());
                }
                cmd = self.cmd.recv() => match cmd {
                    None | Some(Command::Shutdown) => break,
                    Some(Command::Leave(wait)) => {
                        self.node.leave(self.clock.now());
                        leaving = Some(tokio::time::Instant::now() + wait);
                    }
                    // As if the process were stopped: nothing is handled,
                    // and packets wait in the socket's buffer.
                    Some(Command::Pause(d)) => tokio::time::sleep(d).await,
                    Some(cmd) => self.command(cmd),
                },
            }
            self.flush(&errors_tx, &frames_tx).await;
        }
        if let Some(l) = listener {
            l.abort();
        }
    }

    fn datagram(&mut self, bytes: &[u8], from: SocketAddr) {
        if self.blocked.contains(&from) {
            self.stats.dropped_by_fault += 1;
            return;
        }
        self.stats.datagrams_received += 1;
        // A packet that does not open is counted by the seal, and never
        // reaches the protocol.
        match self.seal.open(bytes, MAX_DATAGRAM_ACCEPTED) {
            Ok(plain) => {
                if let Err(e) = self.node.handle_datagram(self.clock.now(), from, &plain) {
                    tracing::debug!(%from, "datagram dropped: {e}");
                }
            }
            Err(e) => tracing::debug!(%from, "datagram refused: {e}"),
        }
    }

    /// A frame arrived; the node's answer to its sender, if it gives one
    /// in this turn, goes back through `answer`.
    fn frame(&mut self, frame: &[u8], answer: oneshot::Sender<Vec<u8>>) {
        self.stats.frames_received += 1;
        let now = self.clock.now();
        let from = if frame.starts_with(&seal::MAGIC) {
            // Sealed: the address is inside, authenticated with the packet.
            let Ok(plain) = self.seal.open(frame, MAX_STREAM + MAX_PREFIX) else { return };
            match split_address(&plain) {
                Some((from, packet)) => {
                    if self.cut_off(from) {
                        return;
                    }
                    let _ = self.node.handle_stream(now, from, packet);
                    from
                }
                None => {
                    self.stats.frames_malformed += 1;
                    return;
                }
            }
        } else {
            // Plaintext: the address, then a plaintext packet, which the
            // seal judges (refused and counted in sealed mode).
            let Some((from, packet)) = split_address(frame) else {
                self.stats.frames_malformed += 1;
                return;
            };
            if self.cut_off(from) {
                return;
            }
            let Ok(plain) = self.seal.open(packet, MAX_STREAM) else { return };
            let _ = self.node.handle_stream(now, from, &plain);
            from
        };
        self.answers.insert(from, answer);
    }

    /// Whether an injected fault drops what `from` sent (frames are judged
    /// once their sender is known).
    fn cut_off(&mut self, from: SocketAddr) -> bool {
        let cut = self.blocked.contains(&from);
        if cut {
            self.stats.dropped_by_fault += 1;
        }
        cut
    }

    fn command(&mut self, cmd: Command) {
        let now = self.clock.now();
        match cmd {
            Command::Members(tx) => {
                let _ = tx.send(self.node.members().collect());
            }
            Command::Member(name, tx) => {
                let _ = tx.send(self.node.member(&name));
            }
            Command::Level(name, tx) => {
                let _ = tx.send(self.node.level(&name, now));
            }
            Command::TimeToSuspect(name, tx) => {
                let at = self.node.reaches_suspect_level_at(&name);
                let _ = tx.send(at.map(|t| t.saturating_duration_since(now)));
            }
            Command::Watch(name) => self.node.watch(now, &name),
            Command::Unwatch(name) => self.node.unwatch(now, &name),
            Command::SetTags(tags) => self.node.set_tags(now, tags),
            Command::Stats(tx) => {
                let _ = tx.send(self.cluster_stats());
            }
            Command::Snapshot(tx) => {
                let (probes, relays) = self.node.probes_in_flight();
                let _ = tx.send(Snapshot {
                    now,
                    unix_ms: unix_ms(),
                    uptime: now.saturating_duration_since(Instant::ZERO),
                    id: self.node.id().clone(),
                    incarnation: self.node.incarnation(),
                    awareness: self.node.awareness(),
                    max_awareness: self.node.config().max_awareness,
                    tags: self.node.tags(),
                    members: self.node.members().collect(),
                    outliers: self
                        .node
                        .members()
                        .filter_map(|m| self.node.outlier_report(&m.id.name).map(|r| (m.id.name.to_string(), r)))
                        .collect(),
                    watched: self.node.watching().filter_map(|n| self.node.watch_report(n, now)).collect(),
                    suspicions: self.node.suspicions(),
                    queued_broadcasts: self.node.queued_broadcasts(),
                    probes_in_flight: probes,
                    relays_in_flight: relays,
                    recorded_arrivals: self.node.config().recorded_arrivals,
                    stats: self.cluster_stats(),
                });
            }
            Command::Arrivals(name, after, tx) => {
                let _ = tx.send(self.node.arrivals(&name, after).map(|a| (a, now)));
            }
            Command::Keys(tx) => {
                let _ = tx.send(self.seal.keyring().map(|k| k.list()).unwrap_or_default());
            }
            Command::InstallKey(key, tx) => {
                let r = match self.seal.keyring_mut() {
                    Some(k) => k.install(key),
                    None => Err(KeyringError::Unknown(KeyId(0))),
                };
                let _ = tx.send(r);
            }
            Command::UseKey(id, tx) => {
                let r = self.seal.keyring_mut().map_or(Err(KeyringError::Unknown(id)), |k| k.use_key(id));
                let _ = tx.send(r);
            }
            Command::RemoveKey(id, tx) => {
                let r = self.seal.keyring_mut().map_or(Err(KeyringError::Unknown(id)), |k| k.remove(id));
                let _ = tx.send(r);
            }
            Command::Block(peers) => self.blocked = peers.into_iter().collect(),
            Command::Outcomes(outcomes, tx) => {
                let taken: Vec<bool> = outcomes
                    .into_iter()
                    .map(|(name, o, latency)| self.node.record_outcome(now, &name, o, latency))
                    .collect();
                if let Some(tx) = tx {
                    let _ = tx.send(taken);
                }
            }
            Command::Leave(_) | Command::Shutdown | Command::Pause(_) => {}
        }
    }

    fn cluster_stats(&self) -> ClusterStats {
        let mut net = self.stats;
        net.connections_refused = self.shared.connections_refused.load(Ordering::Relaxed);
        net.frames_dropped = self.shared.frames_dropped.load(Ordering::Relaxed);
        ClusterStats { node: self.node.stats().clone(), seal: self.seal.stats(), net }
    }

    /// Sends what the node queued and publishes its events.
    async fn flush(&mut self, errors: &mpsc::Sender<SocketAddr>, inbound: &mpsc::Sender<Inbound>) {
        while let Some(t) = self.node.poll_transmit() {
            if self.blocked.contains(&t.to) {
                // Cut off: a datagram is lost, a stream cannot connect.
                self.stats.dropped_by_fault += 1;
                if t.stream {
                    self.node.handle_send_error(self.clock.now(), t.to);
                }
                continue;
            }
            if t.stream {
                // Sealed or not, the sender's address travels with the packet.
                let sealed = self.seal.seal(&with_address(self.advertise, &t.bytes));
                self.stats.frames_sent += 1;
                // An answer goes back on the connection that asked; if that
                // connection is gone, on a new one.
                let sealed = match self.answers.remove(&t.to) {
                    Some(answer) => answer.send(sealed).err(),
                    None => Some(sealed),
                };
                if let Some(sealed) = sealed {
                    let task = send_frame(t.to, sealed, self.net.clone(), errors.clone(), inbound.clone());
                    tokio::spawn(task);
                }
            } else {
                let sealed = self.seal.seal(&t.bytes);
                match self.udp.send_to(&sealed, t.to).await {
                    Ok(_) => {
                        self.stats.datagrams_sent += 1;
                        self.stats.datagram_bytes_sent += sealed.len() as u64;
                    }
                    Err(_) => {
                        tracing::debug!(to = %t.to, "datagram send failed: counted as a failed probe");
                        self.stats.send_errors += 1;
                        self.node.handle_send_error(self.clock.now(), t.to);
                    }
                }
            }
        }
        // Connections the node did not answer are closed.
        self.answers.clear();
        while let Some(e) = self.node.poll_event() {
            // Nobody listening is not an error.
            let _ = self.events.send(ClusterEvent { unix_ms: unix_ms(), event: e });
        }
    }
}

/// Sends one frame on a connection of its own, then reads the answer if
/// the peer writes one back before closing; a failed send is reported.
async fn send_frame(
    to: SocketAddr,
    frame: Vec<u8>,
    net: NetConfig,
    errors: mpsc::Sender<SocketAddr>,
    inbound: mpsc::Sender<Inbound>,
) {
    let sent = async {
        let mut conn = tokio::time::timeout(net.connect_timeout, TcpStream::connect(to)).await.ok()?.ok()?;
        let framed = with_length(&frame)?;
        // One write: the length and the body in one segment where they fit.
        let write = conn.write_all(&framed);
        tokio::time::timeout(net.io_timeout, write).await.ok()?.ok()?;
        Some(conn)
    };
    let Some(conn) = sent.await else {
        let _ = errors.send(to).await;
        return;
    };
    // The answer, if any: the peer closes without one otherwise.
    if let Ok(Some(answer)) = tokio::time::timeout(net.io_timeout, read_frame(conn)).await {
        // An answer to an answer is not expected: nowhere to write it.
        let (nowhere, _) = oneshot::channel();
        let _ = inbound.send((answer, nowhere)).await;
    }
}

/// Accepts stream connections, at most `max_connections` at once, and
/// reads one frame from each.
async fn listen(tcp: TcpListener, frames: mpsc::Sender<Inbound>, shared: Arc<Shared>, net: NetConfig) {
    let slots = Arc::new(Semaphore::new(net.max_connections));
    loop {
        let Ok((conn, _)) = tcp.accept().await else { continue };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            shared.connections_refused.fetch_add(1, Ordering::Relaxed);
            drop(conn);
            continue;
        };
        let frames = frames.clone();
        let shared = shared.clone();
        let timeout = net.io_timeout;
        tokio::spawn(async move {
            let _permit = permit;
            let mut conn = conn;
            match tokio::time::timeout(timeout, read_frame(&mut conn)).await {
                Ok(Some(frame)) => {
                    let (tx, rx) = oneshot::channel();
                    if frames.send((frame, tx)).await.is_err() {
                        return;
                    }
                    // The node's answer, written back on this connection.
                    if let Ok(Ok(answer)) = tokio::time::timeout(timeout, rx).await
                        && let Some(framed) = with_length(&answer)
                    {
                        let write = async {
                            conn.write_all(&framed).await?;
                            conn.shutdown().await
                        };
                        let _ = tokio::time::timeout(timeout, write).await;
                    }
                }
                _ => {
                    shared.frames_dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
}

/// A frame's bytes on the wire: its length, then its body.
fn with_length(body: &[u8]) -> Option<Vec<u8>> {
    let len = u32::try_from(body.len()).ok()?;
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(body);
    Some(out)
}

/// One frame: the length, checked against the limit before anything is
/// allocated, then the body. The buffer grows with the bytes that actually
/// arrive, so a peer that announces a large frame and sends little holds
/// little memory (until the I/O timeout closes it).
async fn read_frame<R: tokio::io::AsyncRead + Unpin>(mut conn: R) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    conn.read_exact(&mut len).await.ok()?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return None;
    }
    let mut body = Vec::with_capacity(len.min(64 * 1024));
    (&mut conn).take(len as u64).read_to_end(&mut body).await.ok()?;
    (body.len() == len).then_some(body)
}

/// Milliseconds since the Unix epoch, on this host's clock.
fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
