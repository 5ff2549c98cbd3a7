//! The driver: one task owning the node and its seal, turning packets,
//! timers and commands into calls on the sans-IO core, and its output into
//! packets and events.
//!
//! Stream messages get tasks of their own: one per outbound frame (connect,
//! write, then read the answer if one comes, each under a timeout; the
//! pages of a view to one member share one, a connection each, one after
//! another, stopping at the first that fails), and one
//! per inbound connection (read one frame, hand it to the driver, write back
//! the answer the node gives, at most `max_connections` at once). An answer
//! (a push-pull's reply) so travels on the connection that asked for it, as
//! memberlist's does: one connection per exchange, not two. Results come
//! back to the driver over channels; only the driver touches the node and
//! the seal.
//!
//! A frame is read in two steps ([`crate::frame`]): its small header first,
//! within `header_timeout`, which the driver opens (a sealed one must
//! authenticate); then its body, of the length the header gave, against a
//! byte budget shared by every connection. Connections still waiting for
//! their header are the first to go when the slots run out: whoever holds
//! connections open and says nothing cannot keep a joining member out.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, broadcast, mpsc, oneshot};
use vigil_detector::Instant;
use vigil_membership::keyring::{KeyId, KeyInfo};
use vigil_membership::seal::{self, Envelope, OVERHEAD, Seal, SealMode};
use vigil_membership::wire::{MAX_DATAGRAM_ACCEPTED, MAX_STREAM};
use vigil_membership::{HealthPolicy, MemberView, MessageKind, Node, Tags, WatchReport};

use crate::clock::Clock;
use crate::control::{Control, KeyAnswer, KeyOp};
use crate::error::KeyError;
use crate::frame::{self, Header, MAX_HEADER, MAX_PLAIN_HEADER};
use crate::intercept::{Intercept, Way};
use crate::slots::{Slot, Slots};
use crate::types::{ClusterEvent, ClusterStats, MemberKeys, NetConfig, NetStats, Recorded, RequestOutcome, Snapshot};

/// What the handle asks of the driver.
#[derive(Debug)]
pub(crate) enum Command {
    Members(oneshot::Sender<Vec<MemberView>>),
    Member(String, oneshot::Sender<Option<MemberView>>),
    WatchReport(String, oneshot::Sender<Option<WatchReport>>),
    Watch(String),
    Unwatch(String),
    SetTags(Tags),
    Contact(Vec<SocketAddr>),
    ForceLeave(String, bool, oneshot::Sender<Result<(), vigil_membership::ForceLeaveError>>),
    KeysEverywhere(KeyOp, oneshot::Sender<Vec<MemberKeys>>),
    RetunePolicy(Box<HealthPolicy>, oneshot::Sender<Result<(), vigil_membership::ConfigError>>),
    Stats(oneshot::Sender<ClusterStats>),
    Snapshot(oneshot::Sender<Snapshot>),
    Arrivals(String, Option<Instant>, oneshot::Sender<Option<Recorded>>),
    Keys(oneshot::Sender<Vec<KeyInfo>>),
    SetEnvelope(Envelope, oneshot::Sender<Envelope>),
    InstallKey([u8; 32], oneshot::Sender<Result<KeyId, KeyError>>),
    UseKey(KeyId, oneshot::Sender<Result<(), KeyError>>),
    RemoveKey(KeyId, oneshot::Sender<Result<(), KeyError>>),
    /// Leave within the wait; `true`: for good (the members known are
    /// forgotten, so a restart does not rejoin them).
    Leave(Duration, bool),
    Shutdown,
    Outcomes(Vec<RequestOutcome>, Option<oneshot::Sender<Vec<bool>>>),
}

/// What the connection tasks hand the driver.
#[derive(Debug)]
enum Inbound {
    /// A frame's header to open: the driver answers with what it says and
    /// whether it authenticated, or `None` if it does not open.
    Header(Vec<u8>, oneshot::Sender<Option<Opened>>),
    /// A frame's body from `from`, where to write the answer (for a
    /// request), and its share of the byte budget, released once handled.
    Body { body: Vec<u8>, from: SocketAddr, answer: Option<oneshot::Sender<Vec<u8>>>, _budget: OwnedSemaphorePermit },
}

/// A frame header that opened.
#[derive(Debug, Clone, Copy)]
struct Opened {
    header: Header,
    /// Whether it was sealed (so its sender's address is a key holder's
    /// word, not anyone's).
    authenticated: bool,
}

/// One input to the driver, taken before it is handled (so that an
/// intercept can hold it).
enum Input {
    /// A datagram of this length in the buffer, from there.
    Datagram(usize, SocketAddr),
    Inbound(Inbound),
    SendError(SocketAddr, &'static str),
    Seeds(Vec<SocketAddr>),
    /// The lease's answer.
    Lease(vigil_membership::downing::LeaseAnswer),
    /// A key operation's request could not be sent, or its wait ran out.
    Control(ControlInput),
    Timeout,
    Command(Option<Command>),
}

/// What becomes of a key operation asked of every member.
#[derive(Debug)]
enum ControlInput {
    /// The request to this member could not be sent, or no answer came.
    Failed(u64, SocketAddr, &'static str),
    /// The wait is over: who has not answered did not.
    Deadline(u64),
}

/// A key operation waiting for the members' answers.
struct PendingKeys {
    /// The members asked that have not answered, by address.
    waiting: std::collections::BTreeMap<SocketAddr, String>,
    done: Vec<MemberKeys>,
    reply: oneshot::Sender<Vec<MemberKeys>>,
}

/// How long a key operation waits for the members' answers.
pub(crate) const KEY_OP_WAIT: Duration = Duration::from_secs(5);

/// Counters the connection tasks update.
#[derive(Debug, Default)]
struct Shared {
    connections_refused: AtomicU64,
    connections_evicted: AtomicU64,
    frames_dropped: AtomicU64,
    frames_malformed: AtomicU64,
    frames_over_budget: AtomicU64,
    seed_resolution_failures: AtomicU64,
}

pub(crate) struct Driver {
    node: Node,
    seal: Seal,
    /// Where datagrams are sealed, kept so that sealing allocates nothing.
    sealed: Vec<u8>,
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
    /// What decides which packets pass and when the member stands still,
    /// if anything does (tests and demonstrations).
    intercept: Option<Arc<dyn Intercept>>,
    lease: Option<Arc<dyn crate::lease::Lease>>,
    /// The watch over the lease, while `lease-majority` decides.
    lease_watch: Option<crate::lease::Watch>,
    /// The seeds as given: by address, and by name (resolved again when the
    /// member is alone).
    seed_addrs: Vec<SocketAddr>,
    seed_names: Vec<crate::Seed>,
    /// Where the members known are kept ([`crate::known`]), what was last
    /// written there, and when it may be written again.
    data_dir: Option<std::path::PathBuf>,
    known_written: Vec<SocketAddr>,
    next_known_write: tokio::time::Instant,
    /// Whether a resolution of the seed names is under way, and when one
    /// may start again while no seed resolved.
    resolving: bool,
    next_resolution: tokio::time::Instant,
    /// The byte budget of frame bodies in flight.
    budget: Arc<Semaphore>,
    /// Key operations asked of every member, by request id.
    key_ops: std::collections::HashMap<u64, PendingKeys>,
    next_key_op: u64,
}

/// Datagrams read at most per wake, so timers and commands are never
/// starved by a flood.
const BURST: usize = 64;

/// How often seed names are resolved again while none resolved.
const SEED_RETRY: Duration = Duration::from_secs(5);

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
        seeds: (Vec<SocketAddr>, Vec<crate::Seed>),
        data_dir: Option<std::path::PathBuf>,
        intercept: Option<Arc<dyn Intercept>>,
        lease: Option<Arc<dyn crate::lease::Lease>>,
    ) -> Driver {
        let (seed_addrs, seed_names) = seeds;
        let budget = Arc::new(Semaphore::new(net.frame_budget));
        let leased =
            matches!(node.config().downing.strategy, vigil_membership::downing::Strategy::LeaseMajority { .. });
        let lease_watch = (leased && lease.is_some()).then(crate::lease::Watch::default);
        Driver {
            node,
            seal,
            sealed: Vec::with_capacity(vigil_membership::wire::MAX_DATAGRAM + OVERHEAD),
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
            intercept,
            lease,
            lease_watch,
            seed_addrs,
            seed_names,
            data_dir,
            known_written: Vec::new(),
            next_known_write: tokio::time::Instant::now() + crate::known::CHECK_EVERY,
            key_ops: std::collections::HashMap::new(),
            next_key_op: rand::random(),
            resolving: false,
            next_resolution: tokio::time::Instant::now() + SEED_RETRY,
            budget,
        }
    }

    pub(crate) async fn run(mut self) {
        let (frames_tx, mut frames_rx) = mpsc::channel::<Inbound>(256);
        let (errors_tx, mut errors_rx) = mpsc::channel::<(SocketAddr, &'static str)>(256);
        let (seeds_tx, mut seeds_rx) = mpsc::channel::<Vec<SocketAddr>>(1);
        let (lease_tx, mut lease_rx) = mpsc::channel::<vigil_membership::downing::LeaseAnswer>(1);
        let (control_tx, mut control_rx) = mpsc::channel::<ControlInput>(256);
        let listener = self.tcp.take().map(|tcp| {
            let (shared, net, frames) = (self.shared.clone(), self.net.clone(), frames_tx.clone());
            tokio::spawn(listen(tcp, frames, shared, net, self.budget.clone()))
        });
        // The lease is checked off the loop, so that one that cannot be
        // asked is said before a decision needs it.
        let lease_watch = match (&self.lease_watch, &self.lease) {
            (Some(watch), Some(lease)) => Some(tokio::spawn(watch.clone().run(lease.clone()))),
            _ => None,
        };
        let mut buf = vec![0u8; MAX_DATAGRAM_ACCEPTED + OVERHEAD + 1];
        let mut leaving: Option<tokio::time::Instant> = None;
        let mut forget_known = false;
        self.seal.tick(unix_secs());
        self.flush(&errors_tx, &frames_tx).await;
        loop {
            let deadline = match (self.node.poll_timeout(), leaving) {
                (_, Some(until)) => until,
                (Some(t), None) => self.clock.to_runtime(t),
                (None, None) => tokio::time::Instant::now() + Duration::from_secs(3600),
            };
            let input = tokio::select! {
                r = self.udp.recv_from(&mut buf) => match r {
                    Ok((n, from)) => Input::Datagram(n, from),
                    Err(_) => continue,
                },
                Some(inbound) = frames_rx.recv() => Input::Inbound(inbound),
                Some((to, why)) = errors_rx.recv() => Input::SendError(to, why),
                Some(resolved) = seeds_rx.recv() => Input::Seeds(resolved),
                Some(answer) = lease_rx.recv() => Input::Lease(answer),
                Some(c) = control_rx.recv() => Input::Control(c),
                _ = tokio::time::sleep_until(deadline) => Input::Timeout,
                cmd = self.cmd.recv() => Input::Command(cmd),
            };
            // A member an intercept stops handles nothing meanwhile: what
            // arrived waits, as it would for a stopped process.
            self.stand_still().await;
            match input {
                Input::Datagram(n, from) => {
                    self.seal.tick(unix_secs());
                    self.datagram(&buf[..n], from);
                    // Drain what else is waiting, up to a burst.
                    for _ in 1..BURST {
                        match self.udp.try_recv_from(&mut buf) {
                            Ok((n, from)) => self.datagram(&buf[..n], from),
                            Err(_) => break,
                        }
                    }
                }
                Input::Inbound(inbound) => {
                    self.seal.tick(unix_secs());
                    self.inbound(inbound);
                }
                Input::SendError(to, why) => {
                    self.stats.send_errors += 1;
                    if self.node.seeds().contains(&to) {
                        tracing::warn!(%to, "could not join through this seed: {why}");
                    } else {
                        tracing::debug!(%to, "stream send failed ({why}): counted as a failed probe");
                    }
                    self.node.handle_send_error(self.clock.now(), to);
                }
                Input::Seeds(resolved) => {
                    self.resolving = false;
                    let mut seeds = self.seed_addrs.clone();
                    seeds.extend(resolved);
                    if !seeds.is_empty() {
                        self.node.set_seeds(self.clock.now(), &seeds);
                    }
                }
                Input::Lease(answer) => self.node.lease_answer(self.clock.now(), answer),
                Input::Timeout => {
                    if leaving.is_some() {
                        break;
                    }
                    self.seal.tick(unix_secs());
                    self.node.handle_timeout(self.clock.now());
                }
                Input::Command(None | Some(Command::Shutdown)) => break,
                Input::Command(Some(Command::Leave(wait, for_good))) => {
                    self.node.leave(self.clock.now());
                    leaving = Some(tokio::time::Instant::now() + wait);
                    forget_known = for_good;
                }
                Input::Command(Some(Command::KeysEverywhere(op, tx))) => {
                    self.keys_everywhere(op, tx, &frames_tx, &control_tx);
                }
                Input::Control(c) => self.control_input(c),
                Input::Command(Some(cmd)) => self.command(cmd),
            }
            self.flush(&errors_tx, &frames_tx).await;
            // The downing strategy wants the lease, or renews it: asked off the loop.
            if let Some(request) = self.node.take_lease_request() {
                let (lease, tx) = (self.lease.clone(), lease_tx.clone());
                tokio::spawn(async move {
                    let _ = tx.send(crate::lease::ask(lease, request).await).await;
                });
            }
            // Alone, the node asked its seeds again: resolve their names
            // again too (a name whose records changed). With no seed
            // resolved at all, try every few seconds.
            let refresh = self.node.take_seed_refresh()
                || (self.node.seeds().is_empty() && tokio::time::Instant::now() >= self.next_resolution);
            if refresh && !self.seed_names.is_empty() && !self.resolving {
                self.next_resolution = tokio::time::Instant::now() + SEED_RETRY;
                self.resolving = true;
                let (names, tx, shared) = (self.seed_names.clone(), seeds_tx.clone(), self.shared.clone());
                tokio::spawn(async move {
                    let (addrs, failed) = crate::seed::resolve(&names).await;
                    shared.seed_resolution_failures.fetch_add(failed, Ordering::Relaxed);
                    let _ = tx.send(addrs).await;
                });
            }
            if self.data_dir.is_some() && tokio::time::Instant::now() >= self.next_known_write {
                let wrote = self.keep_known().await;
                let wait = if wrote { crate::known::WRITE_EVERY } else { crate::known::CHECK_EVERY };
                self.next_known_write = tokio::time::Instant::now() + wait;
            }
        }
        if let Some(l) = listener {
            l.abort();
        }
        if let Some(w) = lease_watch {
            w.abort();
        }
        match (&self.data_dir, forget_known) {
            (Some(dir), true) => {
                let dir = dir.clone();
                match tokio::task::spawn_blocking(move || crate::known::forget(&dir)).await {
                    Ok(Ok(())) => tracing::info!("left for good: the members known are forgotten"),
                    Ok(Err(e)) => tracing::warn!("left for good, but the members known are not forgotten: {e}"),
                    Err(e) => tracing::warn!("left for good, but the members known are not forgotten: {e}"),
                }
            }
            _ => {
                self.keep_known().await;
            }
        }
    }

    /// Writes the live members into the data directory when they changed
    /// since the last write, off the loop; whether it wrote. A member alone
    /// writes nothing: the last members it knew are the best guess after a
    /// restart.
    async fn keep_known(&mut self) -> bool {
        let Some(dir) = self.data_dir.clone() else { return false };
        let mut members: Vec<(String, SocketAddr)> = self
            .node
            .members()
            .filter(|m| matches!(m.status, vigil_membership::Status::Alive | vigil_membership::Status::Suspect))
            .map(|m| (m.id.name.to_string(), m.addr))
            .collect();
        members.sort_by_key(|m| m.1);
        members.truncate(crate::known::MAX_MEMBERS);
        let addrs: Vec<SocketAddr> = members.iter().map(|m| m.1).collect();
        if addrs.is_empty() || addrs == self.known_written {
            return false;
        }
        let written = tokio::task::spawn_blocking(move || crate::known::write(&dir, &members)).await;
        match written {
            Ok(Ok(())) => self.known_written = addrs,
            Ok(Err(e)) => tracing::warn!("the members known are not kept: {e}"),
            Err(e) => tracing::warn!("the members known are not kept: {e}"),
        }
        true
    }

    /// Waits while an intercept stops the member.
    async fn stand_still(&self) {
        let Some(intercept) = &self.intercept else { return };
        while let Some(until) = intercept.stopped_until() {
            tokio::time::sleep_until(until).await;
        }
    }

    /// Whether an intercept lets packets to or from `peer` pass; one that
    /// does not is counted.
    fn passes(&mut self, peer: SocketAddr, way: Way) -> bool {
        let passes = self.intercept.as_ref().is_none_or(|i| i.passes(peer, way));
        if !passes {
            self.stats.intercepted += 1;
        }
        passes
    }

    fn datagram(&mut self, bytes: &[u8], from: SocketAddr) {
        if !self.passes(from, Way::In) {
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

    fn inbound(&mut self, inbound: Inbound) {
        match inbound {
            Inbound::Header(bytes, reply) => {
                let _ = reply.send(self.open_header(&bytes));
            }
            Inbound::Body { body, from, answer, _budget } => match (self.body(&body, from), answer) {
                // A key operation's answer goes back at once.
                (Some(reply), Some(answer)) => {
                    let _ = answer.send(reply);
                }
                (None, Some(answer)) => {
                    self.answers.insert(from, answer);
                }
                (_, None) => {}
            },
        }
    }

    /// What a frame's header says, if it opens: a sealed one through the
    /// seal (authenticated, and a replay refused); a bare one only where
    /// plaintext is taken.
    fn open_header(&mut self, bytes: &[u8]) -> Option<Opened> {
        let opened = if bytes.starts_with(&seal::MAGIC) {
            match self.seal.open(bytes, MAX_PLAIN_HEADER) {
                Ok(plain) => Header::decode(&plain).map(|header| Opened { header, authenticated: true }),
                Err(e) => {
                    tracing::debug!("frame header refused: {e}");
                    None
                }
            }
        } else if self.seal.mode() == SealMode::Sealed {
            None
        } else {
            Header::decode(bytes).map(|header| Opened { header, authenticated: false })
        };
        if opened.is_none() {
            self.shared.frames_malformed.fetch_add(1, Ordering::Relaxed);
        }
        opened
    }

    /// A frame's body arrived from `from` (already judged by the connection
    /// task that read it): a protocol message for the node, or a key
    /// operation's request (its answer returned, to write back) or answer.
    fn body(&mut self, body: &[u8], from: SocketAddr) -> Option<Vec<u8>> {
        self.stats.frames_received += 1;
        // Frames are judged once their sender is known.
        if !self.passes(from, Way::In) {
            return None;
        }
        let sealed = body.starts_with(&seal::MAGIC);
        match self.seal.open(body, MAX_STREAM) {
            Ok(plain) if Control::is_control(&plain) => return self.control(&plain, from, sealed),
            Ok(plain) => match crate::compress::decompress(&plain, MAX_STREAM) {
                Ok(packet) => {
                    if let Err(e) = self.node.handle_stream(self.clock.now(), from, &packet) {
                        tracing::debug!(%from, "stream message dropped: {e}");
                    }
                }
                Err(e) => {
                    self.stats.frames_undecompressed += 1;
                    tracing::debug!(%from, "stream message dropped: {e}");
                }
            },
            Err(e) => tracing::debug!(%from, "stream message refused: {e}"),
        }
        None
    }

    /// A control message from `from`. A request is obeyed only when it
    /// came sealed by a key this member holds; its answer is returned.
    fn control(&mut self, plain: &[u8], from: SocketAddr, sealed: bool) -> Option<Vec<u8>> {
        match Control::decode(plain) {
            Some(Control::Request { id, op }) => {
                if !sealed {
                    tracing::warn!(%from, "a key operation in plaintext was refused: only a sealed one is obeyed");
                    self.shared.frames_malformed.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
                let result = self.apply_key_op(&op);
                tracing::info!(%from, ?op, ok = result.is_ok(), "key operation asked by a member");
                self.frame_of(&Control::Answer { id, result }.encode())
            }
            Some(Control::Answer { id, result }) => {
                let pending = self.key_ops.get_mut(&id)?;
                if let Some(name) = pending.waiting.remove(&from) {
                    pending.done.push(MemberKeys { name, addr: from, result });
                }
                self.finish_key_op(id, false);
                None
            }
            None => {
                tracing::debug!(%from, "a malformed control message was dropped");
                self.shared.frames_malformed.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Applies a key operation to this member's keyring: its keys after,
    /// or why not.
    fn apply_key_op(&mut self, op: &KeyOp) -> KeyAnswer {
        let Some(ring) = self.seal.keyring_mut() else {
            return Err(KeyError::NoKeyring.to_string());
        };
        let done = match op {
            KeyOp::List => Ok(()),
            KeyOp::Install(key) => ring.install(*key).map(|_| ()),
            KeyOp::Use(id) => ring.use_key(*id),
            KeyOp::Remove(id) => ring.remove(*id),
        };
        done.map_err(|e| e.to_string())?;
        Ok(ring.list().iter().map(|k| (k.id, k.primary)).collect())
    }

    /// Asks every live member for `op`, and applies it here: each member's
    /// answer, or why there is none, once all answered or
    /// [`KEY_OP_WAIT`] passed.
    fn keys_everywhere(
        &mut self,
        op: KeyOp,
        reply: oneshot::Sender<Vec<MemberKeys>>,
        inbound: &mpsc::Sender<Inbound>,
        control: &mpsc::Sender<ControlInput>,
    ) {
        let id = self.next_key_op;
        self.next_key_op = self.next_key_op.wrapping_add(1);
        let targets: Vec<(String, SocketAddr)> = self
            .node
            .members()
            .filter(|m| matches!(m.status, vigil_membership::Status::Alive | vigil_membership::Status::Suspect))
            .map(|m| (m.id.name.to_string(), m.addr))
            .collect();
        let mut pending = PendingKeys { waiting: std::collections::BTreeMap::new(), done: Vec::new(), reply };
        // Sealed before this member's own keyring changes: a `use` here
        // must not seal the requests with a key the others may lack.
        let request = Control::Request { id, op: op.clone() }.encode();
        for (name, addr) in targets {
            if !self.passes(addr, Way::Out) {
                pending.done.push(MemberKeys { name, addr, result: Err("cannot be reached".into()) });
                continue;
            }
            let Some(framed) = self.frame_of(&request) else { continue };
            self.stats.frames_sent += 1;
            pending.waiting.insert(addr, name);
            let conn = Conn {
                net: self.net.clone(),
                driver: inbound.clone(),
                budget: self.budget.clone(),
                shared: self.shared.clone(),
            };
            tokio::spawn(send_control(id, addr, framed, conn, control.clone()));
        }
        let me = self.node.id().name.to_string();
        let here = self.apply_key_op(&op);
        pending.done.push(MemberKeys { name: me, addr: self.advertise, result: here });
        self.key_ops.insert(id, pending);
        let deadline = control.clone();
        tokio::spawn(async move {
            tokio::time::sleep(KEY_OP_WAIT).await;
            let _ = deadline.send(ControlInput::Deadline(id)).await;
        });
        self.finish_key_op(id, false);
    }

    fn control_input(&mut self, c: ControlInput) {
        match c {
            ControlInput::Failed(id, addr, why) => {
                if let Some(p) = self.key_ops.get_mut(&id)
                    && let Some(name) = p.waiting.remove(&addr)
                {
                    p.done.push(MemberKeys { name, addr, result: Err(why.to_owned()) });
                }
                self.finish_key_op(id, false);
            }
            ControlInput::Deadline(id) => self.finish_key_op(id, true),
        }
    }

    /// Answers a key operation once nobody is waited for, or at its
    /// deadline (those still waited for did not answer).
    fn finish_key_op(&mut self, id: u64, deadline: bool) {
        let Some(p) = self.key_ops.get(&id) else { return };
        if !p.waiting.is_empty() && !deadline {
            return;
        }
        let Some(mut p) = self.key_ops.remove(&id) else { return };
        for (addr, name) in std::mem::take(&mut p.waiting) {
            let why = format!("no answer within {} s", KEY_OP_WAIT.as_secs());
            p.done.push(MemberKeys { name, addr, result: Err(why) });
        }
        p.done.sort_by(|a, b| a.name.cmp(&b.name));
        let _ = p.reply.send(p.done);
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
            Command::WatchReport(name, tx) => {
                let _ = tx.send(self.node.watch_report(&name, now));
            }
            Command::Watch(name) => self.node.watch(now, &name),
            Command::Unwatch(name) => self.node.unwatch(now, &name),
            Command::SetTags(tags) => self.node.set_tags(now, tags),
            Command::Contact(addrs) => self.node.contact(now, &addrs),
            Command::ForceLeave(name, prune, tx) => {
                let _ = tx.send(self.node.force_leave(now, &name, prune));
            }
            Command::RetunePolicy(policy, tx) => {
                let _ = tx.send(self.node.retune_policy(now, *policy));
            }
            // Taken by the loop, which has the channels it needs.
            Command::KeysEverywhere(..) => {}
            Command::Stats(tx) => {
                let _ = tx.send(self.cluster_stats());
            }
            Command::Snapshot(tx) => {
                let _ = tx.send(Snapshot {
                    unix_ms: unix_ms(),
                    uptime: now.saturating_duration_since(Instant::ZERO),
                    node: self.node.snapshot(now),
                    seal: self.seal.stats(),
                    net: self.net_stats(),
                    lease: self.lease_watch.as_ref().map(crate::lease::Watch::health),
                });
            }
            Command::Arrivals(name, after, tx) => {
                let _ = tx.send(self.node.arrivals(&name, after).map(|arrivals| Recorded { arrivals, now }));
            }
            Command::Keys(tx) => {
                let _ = tx.send(self.seal.keyring().map(|k| k.list()).unwrap_or_default());
            }
            Command::SetEnvelope(envelope, tx) => {
                let before = self.seal.envelope();
                self.seal.set_envelope(envelope);
                let _ = tx.send(before);
            }
            Command::InstallKey(key, tx) => {
                let r = self.seal.keyring_mut().ok_or(KeyError::NoKeyring).and_then(|k| Ok(k.install(key)?));
                let _ = tx.send(r);
            }
            Command::UseKey(id, tx) => {
                let r = self.seal.keyring_mut().ok_or(KeyError::NoKeyring).and_then(|k| Ok(k.use_key(id)?));
                let _ = tx.send(r);
            }
            Command::RemoveKey(id, tx) => {
                let r = self.seal.keyring_mut().ok_or(KeyError::NoKeyring).and_then(|k| Ok(k.remove(id)?));
                let _ = tx.send(r);
            }
            Command::Outcomes(outcomes, tx) => {
                let taken: Vec<bool> = outcomes
                    .into_iter()
                    .map(|o| self.node.record_outcome(now, &o.member, o.outcome, o.latency))
                    .collect();
                if let Some(tx) = tx {
                    let _ = tx.send(taken);
                }
            }
            Command::Leave(..) | Command::Shutdown => {}
        }
    }

    fn cluster_stats(&self) -> ClusterStats {
        ClusterStats { node: self.node.stats().clone(), seal: self.seal.stats(), net: self.net_stats() }
    }

    /// The runtime's counters, the connection tasks' included.
    fn net_stats(&self) -> NetStats {
        let mut net = self.stats;
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        net.connections_refused = load(&self.shared.connections_refused);
        net.connections_evicted = load(&self.shared.connections_evicted);
        net.frames_dropped = load(&self.shared.frames_dropped);
        net.frames_malformed = load(&self.shared.frames_malformed);
        net.frames_over_budget = load(&self.shared.frames_over_budget);
        net.seed_resolution_failures = load(&self.shared.seed_resolution_failures);
        net
    }

    /// A stream message as a frame: its header and body, each sealed as a
    /// datagram is (or bare in plaintext).
    fn frame_of(&mut self, packet: &[u8]) -> Option<Vec<u8>> {
        let body = if self.net.compress_streams {
            let sent = crate::compress::compress(packet);
            if sent.len() < packet.len() {
                self.stats.frames_compressed += 1;
                self.stats.frame_bytes_saved += (packet.len() - sent.len()) as u64;
            }
            self.seal.seal(&sent)
        } else {
            self.seal.seal(packet)
        };
        let header = Header { body_len: body.len(), from: self.advertise }.encode()?;
        let header = self.seal.seal(&header);
        frame::frame(&header, &body)
    }

    /// What a connection task needs.
    fn conn(&self, inbound: &mpsc::Sender<Inbound>) -> Conn {
        Conn {
            net: self.net.clone(),
            driver: inbound.clone(),
            budget: self.budget.clone(),
            shared: self.shared.clone(),
        }
    }

    /// Sends what the node queued and publishes its events.
    async fn flush(&mut self, errors: &mpsc::Sender<(SocketAddr, &'static str)>, inbound: &mpsc::Sender<Inbound>) {
        // A view's pages to one member, in order: sent one connection after
        // another, so that a large view never holds more than one of the
        // receiver's connection slots.
        let mut trains: Vec<(SocketAddr, Vec<Vec<u8>>)> = Vec::new();
        while let Some(t) = self.node.poll_transmit() {
            if !self.passes(t.to, Way::Out) {
                // Cut off: a datagram is lost, a stream cannot connect.
                if t.stream {
                    self.node.handle_send_error(self.clock.now(), t.to);
                }
                continue;
            }
            if t.stream {
                let Some(framed) = self.frame_of(&t.bytes) else {
                    self.stats.send_errors += 1;
                    continue;
                };
                self.stats.frames_sent += 1;
                // An answer goes back on the connection that asked; if that
                // connection is gone, on a new one.
                let framed = match self.answers.remove(&t.to) {
                    Some(answer) => answer.send(framed).err(),
                    None => Some(framed),
                };
                if let Some(framed) = framed {
                    if t.kind == MessageKind::PushPull {
                        match trains.iter_mut().find(|(to, _)| *to == t.to) {
                            Some((_, pages)) => pages.push(framed),
                            None => trains.push((t.to, vec![framed])),
                        }
                    } else {
                        tokio::spawn(send_frames(t.to, vec![framed], self.conn(inbound), errors.clone()));
                    }
                }
            } else {
                let mut sealed = std::mem::take(&mut self.sealed);
                self.seal.seal_into(&t.bytes, &mut sealed);
                let sent = self.udp.send_to(&sealed, t.to).await;
                let len = sealed.len();
                self.sealed = sealed;
                match sent {
                    Ok(_) => {
                        self.stats.datagrams_sent += 1;
                        self.stats.datagram_bytes_sent += len as u64;
                    }
                    Err(_) => {
                        tracing::debug!(to = %t.to, "datagram send failed: counted as a failed probe");
                        self.stats.send_errors += 1;
                        self.node.handle_send_error(self.clock.now(), t.to);
                    }
                }
            }
        }
        for (to, pages) in trains {
            tokio::spawn(send_frames(to, pages, self.conn(inbound), errors.clone()));
        }
        // Connections the node did not answer are closed.
        self.answers.clear();
        while let Some(e) = self.node.poll_event() {
            // A member unreachable: a decision is coming, which may need
            // the lease.
            if let (vigil_membership::Event::Unreachable { .. }, Some(watch)) = (&e, &self.lease_watch) {
                watch.poke();
            }
            // Nobody listening is not an error.
            let _ = self.events.send(ClusterEvent { unix_ms: unix_ms(), event: e });
        }
    }
}

/// What a connection task needs: the settings, the way to the driver, the
/// byte budget and the counters.
#[derive(Clone)]
struct Conn {
    net: NetConfig,
    driver: mpsc::Sender<Inbound>,
    budget: Arc<Semaphore>,
    shared: Arc<Shared>,
}

/// Why a frame was not read whole.
#[derive(Debug)]
enum Refused {
    /// The peer closed before a frame began: nothing to read, nothing
    /// lost (an answer the peer had none for).
    Closed,
    /// The peer closed within a frame, was too slow, or sent a header too
    /// long.
    Dropped,
    /// The header did not open.
    Malformed,
    /// The body did not fit in the budget.
    OverBudget,
}

impl Conn {
    fn count(&self, why: Refused) {
        match why {
            Refused::Closed | Refused::Dropped => self.shared.frames_dropped.fetch_add(1, Ordering::Relaxed),
            Refused::OverBudget => self.shared.frames_over_budget.fetch_add(1, Ordering::Relaxed),
            // Counted by the driver, which opened the header.
            Refused::Malformed => 0,
        };
    }

    /// Reads a frame's header within `header_timeout` and has the driver
    /// open it: what it says, and the address to take as its sender's (the
    /// one it gives when it authenticated or comes from that address's
    /// host; else the connection's own `peer` address, a stranger's).
    async fn header<R: AsyncRead + Unpin>(
        &self,
        conn: &mut R,
        peer: SocketAddr,
    ) -> Result<(Header, SocketAddr), Refused> {
        let bytes =
            tokio::time::timeout(self.net.header_timeout, read_header(conn)).await.unwrap_or(Err(Refused::Dropped))?;
        let (tx, rx) = oneshot::channel();
        self.driver.send(Inbound::Header(bytes, tx)).await.map_err(|_| Refused::Dropped)?;
        let opened = rx.await.ok().flatten().ok_or(Refused::Malformed)?;
        let claimed = opened.header.from;
        let from = if opened.authenticated || claimed.ip() == peer.ip() { claimed } else { peer };
        Ok((opened.header, from))
    }

    /// Reads the body a header announced, within its share of the budget,
    /// and hands it to the driver with where to write the answer.
    async fn body<R: AsyncRead + Unpin>(
        &self,
        conn: &mut R,
        header: Header,
        from: SocketAddr,
        answer: Option<oneshot::Sender<Vec<u8>>>,
    ) -> Result<(), Refused> {
        let share = u32::try_from(header.body_len).map_err(|_| Refused::OverBudget)?;
        let budget = self.budget.clone().try_acquire_many_owned(share).map_err(|_| Refused::OverBudget)?;
        let mut body = Vec::with_capacity(header.body_len.min(64 * 1024));
        let mut limited = (&mut *conn).take(header.body_len as u64);
        let read = limited.read_to_end(&mut body);
        match tokio::time::timeout(self.net.io_timeout, read).await {
            Ok(Ok(n)) if n == header.body_len => {}
            _ => return Err(Refused::Dropped),
        }
        let inbound = Inbound::Body { body, from, answer, _budget: budget };
        self.driver.send(inbound).await.map_err(|_| Refused::Dropped)
    }
}

/// Sends frames to `to` in order, each on a connection of its own once the
/// one before is done (the peer answered or closed), and stops at the first
/// that fails: a peer that refuses or stalls one page is not sent the rest.
async fn send_frames(
    to: SocketAddr,
    frames: Vec<Vec<u8>>,
    conn: Conn,
    errors: mpsc::Sender<(SocketAddr, &'static str)>,
) {
    for frame in frames {
        if !send_frame(to, frame, &conn, &errors).await {
            break;
        }
    }
}

/// Sends one frame on a connection of its own, then reads the answer if
/// the peer writes one back before closing; a failed send is reported.
/// Whether the peer took it: the frame was written and the peer answered
/// or closed in time.
async fn send_frame(
    to: SocketAddr,
    frame: Vec<u8>,
    conn: &Conn,
    errors: &mpsc::Sender<(SocketAddr, &'static str)>,
) -> bool {
    let sent = async {
        let mut c = match tokio::time::timeout(conn.net.connect_timeout, TcpStream::connect(to)).await {
            Ok(Ok(c)) => c,
            Ok(Err(_)) => return Err("the connection was refused"),
            Err(_) => return Err("timed out connecting"),
        };
        // One write: the header and the body in one segment where they fit.
        match tokio::time::timeout(conn.net.io_timeout, c.write_all(&frame)).await {
            Ok(Ok(())) => Ok(c),
            _ => Err("could not write the request"),
        }
    };
    let mut c = match sent.await {
        Ok(c) => c,
        Err(why) => {
            let _ = errors.send((to, why)).await;
            return false;
        }
    };
    // The answer, if any: the peer closes without one otherwise. Its
    // sender is whoever listens at `to`.
    let answer = async {
        let (header, from) = conn.header(&mut c, to).await?;
        conn.body(&mut c, header, from, None).await
    };
    match tokio::time::timeout(conn.net.io_timeout + conn.net.header_timeout, answer).await {
        Ok(Ok(())) => true,
        // Taken, with nothing to say (a digest that matched, a page that
        // asks for nothing): no frame was dropped.
        Ok(Err(Refused::Closed)) => true,
        Ok(Err(why)) => {
            conn.count(why);
            false
        }
        Err(_) => false,
    }
}

/// Sends a key operation's request on a connection of its own and reads
/// the answer (handed to the driver as any frame is); a failure is the
/// operation's, never a failed probe.
async fn send_control(id: u64, to: SocketAddr, frame: Vec<u8>, conn: Conn, control: mpsc::Sender<ControlInput>) {
    let exchange = async {
        let mut c = match tokio::time::timeout(conn.net.connect_timeout, TcpStream::connect(to)).await {
            Ok(Ok(c)) => c,
            Ok(Err(_)) => return Err("the connection was refused"),
            Err(_) => return Err("timed out connecting"),
        };
        match tokio::time::timeout(conn.net.io_timeout, c.write_all(&frame)).await {
            Ok(Ok(())) => {}
            _ => return Err("could not write the request"),
        }
        let asked = tokio::time::Instant::now();
        let (header, from) = conn.header(&mut c, to).await.map_err(|_| {
            // A member that is stopped or overloaded holds the connection
            // open; one that does not know the request closes it at once.
            if asked.elapsed() >= conn.net.header_timeout {
                "no answer in time (stopped or overloaded?)"
            } else {
                "closed without an answer (an older version?)"
            }
        })?;
        conn.body(&mut c, header, from, None).await.map_err(|_| "its answer could not be read")
    };
    let wait = conn.net.connect_timeout + conn.net.io_timeout + conn.net.header_timeout;
    let outcome = tokio::time::timeout(wait, exchange).await.unwrap_or(Err("no answer in time"));
    if let Err(why) = outcome {
        let _ = control.send(ControlInput::Failed(id, to, why)).await;
    }
}

/// Accepts stream connections, at most `max_connections` at once: when
/// they run out, the oldest still waiting for its header makes room.
async fn listen(
    tcp: TcpListener,
    driver: mpsc::Sender<Inbound>,
    shared: Arc<Shared>,
    net: NetConfig,
    budget: Arc<Semaphore>,
) {
    let slots = Slots::new(net.max_connections);
    let conn = Conn { net, driver, budget, shared };
    loop {
        let Ok((stream, peer)) = tcp.accept().await else {
            // Out of descriptors, say: wait a little and go on.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Some((slot, evicted)) = slots.admit() else {
            conn.shared.connections_refused.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            continue;
        };
        if evicted {
            conn.shared.connections_evicted.fetch_add(1, Ordering::Relaxed);
        }
        tokio::spawn(serve(stream, peer, slot, conn.clone()));
    }
}

/// One inbound connection: its frame, handed to the driver, and the
/// node's answer written back.
async fn serve(mut stream: TcpStream, peer: SocketAddr, mut slot: Slot, conn: Conn) {
    let evicted = slot.evicted();
    let header = tokio::select! {
        h = conn.header(&mut stream, peer) => h,
        () = evicted => return,
    };
    // Past its header: no longer the first to make room.
    slot.settled();
    let (header, from) = match header {
        Ok(h) => h,
        Err(why) => return conn.count(why),
    };
    let (tx, rx) = oneshot::channel();
    if let Err(why) = conn.body(&mut stream, header, from, Some(tx)).await {
        return conn.count(why);
    }
    // The node's answer, written back on this connection.
    if let Ok(Ok(answer)) = tokio::time::timeout(conn.net.io_timeout, rx).await {
        let write = async {
            stream.write_all(&answer).await?;
            stream.shutdown().await
        };
        let _ = tokio::time::timeout(conn.net.io_timeout, write).await;
    }
}

/// A frame's header: its length (checked against [`MAX_HEADER`] before
/// anything else is read), then that many bytes.
async fn read_header<R: AsyncRead + Unpin>(conn: &mut R) -> Result<Vec<u8>, Refused> {
    let mut len = [0u8; 2];
    // The end before the first byte is a close, not a frame cut short.
    match conn.read(&mut len[..1]).await {
        Ok(0) => return Err(Refused::Closed),
        Ok(_) => {}
        Err(_) => return Err(Refused::Dropped),
    }
    conn.read_exact(&mut len[1..]).await.map_err(|_| Refused::Dropped)?;
    let len = usize::from(u16::from_be_bytes(len));
    if len == 0 || len > MAX_HEADER {
        return Err(Refused::Dropped);
    }
    let mut header = vec![0u8; len];
    conn.read_exact(&mut header).await.map_err(|_| Refused::Dropped)?;
    Ok(header)
}

/// Seconds since the Unix epoch, on this host's clock (for the seal).
pub(crate) fn unix_secs() -> u64 {
    unix_ms() / 1000
}

/// Milliseconds since the Unix epoch, on this host's clock.
fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
