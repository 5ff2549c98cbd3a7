//! The simulated machines: the node each runs while it is up, and what the
//! faults do to it (crashes and restarts, pauses, slow processing), with
//! the seal it puts on the wire and the timer it is woken by.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use vigil_detector::Instant;
use vigil_membership::seal::Seal;
use vigil_membership::wire::{MAX_DATAGRAM, MAX_STREAM};
use vigil_membership::{Config, ConfigError, Event, Node, NodeId, Status};

use crate::clock::{START, unix_secs};
use crate::job::Job;
use crate::sealer::Sealer;

/// The seed machine `i` joins through, as a cluster of agents is started.
fn seed_of(i: usize) -> usize {
    usize::from(i == 0)
}

/// Machine `i`'s address: 10.x.y.z, port 7946.
fn addr_of(i: usize) -> SocketAddr {
    let i = i as u32;
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, (i >> 16) as u8, (i >> 8) as u8, i as u8), 7946))
}

/// One simulated machine: the node it runs (if up) and what the faults do
/// to it.
struct Machine {
    node: Option<Node>,
    name: String,
    generation: u64,
    addr: SocketAddr,
    /// Generations of this machine that crashed.
    crashed: Vec<u64>,
    /// Down since, for each time it went down: (crash, restart).
    downs: Vec<(Instant, Option<Instant>)>,
    paused_until: Option<Instant>,
    /// Messages that arrived during a pause: (from, bytes, stream).
    inbox: Vec<(usize, Vec<u8>, bool)>,
    slow: Duration,
    /// Outside the liveness envelope until then (after a fault of its own).
    disturbed_until: Instant,
    /// The generation of the latest timer set; older ones are stale.
    timer_gen: u64,
    /// When the latest timer fires, while it is pending.
    scheduled: Option<Instant>,
    /// (generation, incarnation) last seen.
    epoch: (u64, u64),
    /// The node's probe and accusation counters last seen.
    seen: (u64, u64),
    /// What it sends is sealed with this, and what it receives opened.
    seal: Seal,
    /// A second process of another machine's name ([`crate::Fault::Impostor`]):
    /// not a member of the cluster the checkers look at.
    impostor: bool,
}

impl Machine {
    /// Whether the machine was up throughout `[from, to]`.
    fn up_throughout(&self, from: Instant, to: Instant) -> bool {
        self.downs.iter().all(|&(down, up)| down > to || up.is_some_and(|u| u <= from))
    }
}

/// Every machine of the cluster, by index (node `n{i}` runs on machine
/// `i`).
pub(crate) struct Machines {
    all: Vec<Machine>,
    by_addr: HashMap<SocketAddr, usize>,
}

/// What became of a message that reached a machine.
#[derive(Debug)]
pub(crate) enum Arrival {
    /// The machine is down, or the message did not open: it is gone.
    Dropped,
    /// The machine is paused: the message waits in its socket buffer.
    Held,
    /// The machine is slow: it handles the message with this job.
    Late(Instant, Job),
    /// The node handled it: what it queued is to be sent.
    Handled,
}

/// What a node queued since it was last drained.
pub(crate) struct Outbox {
    /// Messages to send, sealed, in the order queued.
    pub(crate) sent: Vec<Sent>,
    /// Membership events, in the order reported.
    pub(crate) events: Vec<Event>,
    /// Probes started since the last drain.
    pub(crate) probes: u64,
    /// Accusations (suspicions started) since the last drain.
    pub(crate) accusations: u64,
    /// (generation, incarnation) at the last drain and now.
    pub(crate) epochs: ((u64, u64), (u64, u64)),
    /// What the node asks the lease, if it does now.
    pub(crate) lease: Option<vigil_membership::downing::LeaseRequest>,
}

/// A message on its way out of a machine.
pub(crate) struct Sent {
    /// The receiving machine, if the address is one.
    pub(crate) to: Option<usize>,
    /// What goes on the wire.
    pub(crate) bytes: Vec<u8>,
    /// A stream message rather than a datagram.
    pub(crate) stream: bool,
    /// The message's kind, as the protocol names it.
    pub(crate) kind: &'static str,
}

impl Machines {
    /// `n` machines, each running a node with `config` that knows every
    /// other, with seeds drawn from `rng` and seals from `sealer`.
    pub(crate) fn new(
        n: usize,
        config: &Config,
        rng: &mut ChaCha8Rng,
        sealer: &mut Sealer,
        join: bool,
    ) -> Result<Machines, ConfigError> {
        // One copy of each name, shared by every node's table.
        let shared: Vec<(Arc<str>, u64, SocketAddr)> =
            (0..n).map(|i| (Arc::from(format!("n{i}")), 1, addr_of(i))).collect();
        let mut all = Vec::with_capacity(n);
        for (i, (name, generation, addr)) in shared.iter().enumerate() {
            let seed = rng.random::<u64>();
            let id = NodeId::new(name.to_string(), *generation);
            let mut node = Node::new(id, *addr, config.clone(), seed, START)?;
            if join {
                // A bootstrap: everyone but n0 joins through n0 at once.
                if i > 0 {
                    node.join(START, &[addr_of(0)]);
                }
            } else {
                node.bootstrap_shared(START, &shared);
                // As a cluster of agents is started: every member joins
                // through a seed (n0; n0 through n1), which it goes back to
                // whenever it knows no live member.
                node.set_seeds(START, &[addr_of(seed_of(i))]);
            }
            all.push(Machine {
                node: Some(node),
                name: name.to_string(),
                generation: *generation,
                addr: *addr,
                crashed: Vec::new(),
                downs: Vec::new(),
                paused_until: None,
                inbox: Vec::new(),
                slow: Duration::ZERO,
                disturbed_until: START,
                timer_gen: 0,
                scheduled: None,
                epoch: (*generation, 0),
                seen: (0, 0),
                seal: sealer.seal_for_start(None, unix_secs(START)),
                impostor: false,
            });
        }
        let by_addr = all.iter().enumerate().map(|(i, m)| (m.addr, i)).collect();
        Ok(Machines { all, by_addr })
    }

    /// How many machines there are.
    pub(crate) fn len(&self) -> usize {
        self.all.len()
    }

    /// The node machine `i` runs, if it is up.
    pub(crate) fn node(&self, i: usize) -> Option<&Node> {
        self.all.get(i).and_then(|m| m.node.as_ref())
    }

    /// Machine `i`'s application saw a request to `victim` fail (503), at
    /// `now`: reported to its node, if it runs and is not paused. Returns
    /// whether it was.
    pub(crate) fn record_failure(&mut self, i: usize, victim: &str, now: Instant) -> bool {
        if self.paused(i) {
            return false;
        }
        let Some(node) = self.all.get_mut(i).and_then(|m| m.node.as_mut()) else { return false };
        node.record_outcome(now, victim, vigil_detector::outlier::Outcome::Response(503), None)
    }

    /// Machine `i`'s node name.
    pub(crate) fn name(&self, i: usize) -> &str {
        &self.all[i].name
    }

    /// The generation machine `i` runs, or ran last.
    pub(crate) fn generation(&self, i: usize) -> u64 {
        self.all[i].generation
    }

    /// Machine `i`'s address.
    pub(crate) fn addr(&self, i: usize) -> SocketAddr {
        self.all[i].addr
    }

    /// Whether machine `i` is an impostor's (not one of the cluster's).
    pub(crate) fn is_impostor(&self, i: usize) -> bool {
        self.all[i].impostor
    }

    /// The generation machine `i` runs now, if it is up and its node alive.
    pub(crate) fn running_generation(&self, i: usize) -> Option<u64> {
        self.all[i].node.as_ref().filter(|n| n.status() == Status::Alive).map(|n| n.id().generation)
    }

    /// The generation machine `i` acts as a member in now: up, alive, and
    /// not downed and waiting to rejoin.
    pub(crate) fn acting_generation(&self, i: usize) -> Option<u64> {
        self.all[i]
            .node
            .as_ref()
            .filter(|n| n.status() == Status::Alive && !n.is_rejoining())
            .map(|n| n.id().generation)
    }

    /// Whether machine `i` is paused now.
    pub(crate) fn paused(&self, i: usize) -> bool {
        self.all[i].paused_until.is_some()
    }

    /// What an adversary can learn of the running members (impostors
    /// aside): identity, address, incarnation.
    pub(crate) fn known(&self) -> Vec<crate::adversary::Known> {
        self.all
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.impostor)
            .filter_map(|(i, m)| {
                let node = m.node.as_ref()?;
                Some(crate::adversary::Known {
                    index: i,
                    id: node.id().clone(),
                    addr: m.addr,
                    incarnation: node.incarnation(),
                })
            })
            .collect()
    }

    /// Starts an impostor of machine `k`'s name at an address of its own,
    /// a newer generation, joining through `k`'s seed: the machine it runs
    /// on.
    pub(crate) fn spawn_impostor(
        &mut self,
        k: usize,
        now: Instant,
        config: &Config,
        rng: &mut ChaCha8Rng,
        sealer: &mut Sealer,
    ) -> Option<usize> {
        let i = self.all.len();
        let victim = self.all.get(k)?;
        let name = victim.name.clone();
        let generation = victim.generation.saturating_add(1_000_000);
        let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 254, (k >> 8) as u8, k as u8), 7946));
        let seed = rng.random::<u64>();
        let mut node = Node::new(NodeId::new(name.clone(), generation), addr, config.clone(), seed, now).ok()?;
        node.join(now, &[addr_of(seed_of(k))]);
        let seal = sealer.seal_for_start(Some(&victim.seal), unix_secs(now));
        self.all.push(Machine {
            node: Some(node),
            name,
            generation,
            addr,
            crashed: Vec::new(),
            downs: Vec::new(),
            paused_until: None,
            inbox: Vec::new(),
            slow: Duration::ZERO,
            disturbed_until: now,
            timer_gen: 0,
            scheduled: None,
            epoch: (generation, 0),
            seen: (0, 0),
            seal,
            impostor: true,
        });
        self.by_addr.insert(addr, i);
        Some(i)
    }

    /// The impostor on machine `i` stops: it leaves (if it still runs),
    /// and its machine goes down once it has sent that.
    pub(crate) fn stop_impostor(&mut self, i: usize, now: Instant) {
        if let Some(node) = self.all.get_mut(i).and_then(|m| m.node.as_mut()) {
            node.leave(now);
        }
    }

    /// Takes the impostor on machine `i` down for good.
    pub(crate) fn drop_impostor(&mut self, i: usize) {
        if let Some(m) = self.all.get_mut(i).filter(|m| m.impostor) {
            m.node = None;
        }
    }

    /// The machine whose node is named `name`.
    pub(crate) fn index_of(&self, name: &str) -> Option<usize> {
        name.strip_prefix('n').and_then(|s| s.parse().ok()).filter(|&i: &usize| i < self.all.len())
    }

    /// Whether generation `generation` of machine `i` crashed (a death
    /// declared of it is then true).
    pub(crate) fn crashed(&self, i: usize, generation: u64) -> bool {
        self.all[i].crashed.contains(&generation)
    }

    /// Whether, at `now`, machine `i` is inside the liveness envelope as
    /// far as its own faults go: it runs, is neither paused nor slow, and
    /// was neither lately.
    pub(crate) fn calm(&self, i: usize, now: Instant) -> bool {
        let m = &self.all[i];
        m.node.is_some() && m.paused_until.is_none() && m.slow.is_zero() && now >= m.disturbed_until
    }

    /// Whether machine `i` was up throughout `[from, to]`.
    pub(crate) fn up_throughout(&self, i: usize, from: Instant, to: Instant) -> bool {
        self.all[i].up_throughout(from, to)
    }

    /// How many machines were up at `t` (impostors aside).
    pub(crate) fn running_at(&self, t: Instant) -> usize {
        self.all.iter().filter(|m| !m.impostor && m.up_throughout(t, t)).count()
    }

    /// The cluster's machines that run a node now (impostors aside), with
    /// whether it is alive (not left, not downed with nobody to rejoin).
    pub(crate) fn running(&self) -> impl Iterator<Item = (usize, bool)> + '_ {
        self.all
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.impostor)
            .filter_map(|(i, m)| m.node.as_ref().map(|n| (i, n.status() == Status::Alive)))
    }

    /// Every address machine `i`'s node holds some member at.
    pub(crate) fn addresses_held(&self, i: usize) -> Vec<(String, SocketAddr)> {
        self.all[i].node.as_ref().map(|n| n.members().map(|m| (m.id.name, m.addr)).collect()).unwrap_or_default()
    }

    /// Whether machine `i`, gone down at `down`, was up again by `by`.
    pub(crate) fn restarted(&self, i: usize, down: Instant, by: Instant) -> bool {
        self.all[i].downs.iter().any(|&(d, up)| d == down && up.is_some_and(|u| u <= by))
    }

    /// Whether machine `i` takes messages now: it is up and not paused.
    pub(crate) fn listening(&self, i: usize) -> bool {
        let m = &self.all[i];
        m.node.is_some() && m.paused_until.is_none()
    }

    /// Machine `i`'s seal, which key steps change whether it is up or down.
    pub(crate) fn seal_mut(&mut self, i: usize) -> &mut Seal {
        &mut self.all[i].seal
    }

    /// Every machine's seal.
    pub(crate) fn seals(&self) -> impl Iterator<Item = &Seal> {
        self.all.iter().map(|m| &m.seal)
    }

    /// The timer machine `i`'s node asks for, if it is not already set:
    /// its time (late by the machine's slowness) and the job that fires
    /// it. Setting it makes every earlier timer of the machine stale.
    pub(crate) fn next_wake(&mut self, i: usize, now: Instant) -> Option<(Instant, Job)> {
        let m = &mut self.all[i];
        let t = m.node.as_ref()?.poll_timeout()?;
        let at = t.max(now).saturating_add(m.slow);
        if m.scheduled == Some(at) {
            return None;
        }
        m.scheduled = Some(at);
        m.timer_gen += 1;
        Some((at, Job::Wake { machine: i, generation: m.timer_gen }))
    }

    /// Whether a timer of machine `i` set with `generation` is to fire: it
    /// is the latest, and the machine is not paused (it is woken when the
    /// pause ends).
    pub(crate) fn timer_due(&mut self, i: usize, generation: u64) -> bool {
        let m = &mut self.all[i];
        if generation != m.timer_gen || m.paused_until.is_some() {
            return false;
        }
        m.scheduled = None;
        true
    }

    /// Runs machine `i`'s node's timers; false if it is down.
    pub(crate) fn tick(&mut self, i: usize, now: Instant) -> bool {
        let Some(node) = self.all[i].node.as_mut() else { return false };
        node.handle_timeout(now);
        true
    }

    /// A message from `from` reaches machine `to` off the wire.
    pub(crate) fn arrive(&mut self, to: usize, from: usize, bytes: Vec<u8>, stream: bool, now: Instant) -> Arrival {
        let m = &mut self.all[to];
        if m.node.is_none() {
            return Arrival::Dropped;
        }
        if m.paused_until.is_some() {
            m.inbox.push((from, bytes, stream));
            return Arrival::Held;
        }
        if !m.slow.is_zero() {
            // A starved machine handles the message late.
            return Arrival::Late(now.saturating_add(m.slow), Job::Process { to, from, bytes, stream });
        }
        self.handle(to, from, &bytes, stream, now)
    }

    /// A slow machine gets round to a message that reached it earlier.
    pub(crate) fn process(&mut self, to: usize, from: usize, bytes: Vec<u8>, stream: bool, now: Instant) -> Arrival {
        let m = &mut self.all[to];
        if m.paused_until.is_some() {
            m.inbox.push((from, bytes, stream));
            return Arrival::Held;
        }
        self.handle(to, from, &bytes, stream, now)
    }

    /// Machine `to`'s node handles a message from `from`, if it is up and
    /// the message opens: a packet that does not (forged, replayed, of
    /// another key) is counted by the seal and never reaches the protocol.
    pub(crate) fn handle(&mut self, to: usize, from: usize, bytes: &[u8], stream: bool, now: Instant) -> Arrival {
        let from_addr = self.all[from].addr;
        self.handle_from(to, from_addr, bytes, stream, now)
    }

    /// As [`Machines::handle`], from an address that may be no machine's
    /// (a stranger's). A paused machine does not take it (a stranger's
    /// datagrams are not worth keeping for it).
    pub(crate) fn handle_from(
        &mut self,
        to: usize,
        from_addr: SocketAddr,
        bytes: &[u8],
        stream: bool,
        now: Instant,
    ) -> Arrival {
        let m = &mut self.all[to];
        if m.paused_until.is_some() {
            return Arrival::Dropped;
        }
        let Some(node) = m.node.as_mut() else { return Arrival::Dropped };
        let max = if stream { MAX_STREAM } else { MAX_DATAGRAM };
        m.seal.tick(unix_secs(now));
        let Ok(plain) = m.seal.open(bytes, max) else { return Arrival::Dropped };
        let _ = if stream {
            node.handle_stream(now, from_addr, &plain)
        } else {
            node.handle_datagram(now, from_addr, &plain)
        };
        Arrival::Handled
    }

    /// Takes what machine `i`'s node queued: its messages, sealed at `now`,
    /// its events, and how its counters and epoch moved. `None` if it is
    /// down.
    pub(crate) fn drain(&mut self, i: usize, now: Instant) -> Option<Outbox> {
        let m = &mut self.all[i];
        let node = m.node.as_mut()?;
        let mut queued = Vec::new();
        while let Some(t) = node.poll_transmit() {
            queued.push(t);
        }
        let mut events = Vec::new();
        while let Some(e) = node.poll_event() {
            events.push(e);
        }
        let lease = node.take_lease_request();
        let stats = node.stats();
        let seen = (stats.probes, stats.suspicions_started);
        let epoch = (node.id().generation, node.incarnation());
        let (probes, accusations) = (seen.0.saturating_sub(m.seen.0), seen.1.saturating_sub(m.seen.1));
        m.seen = seen;
        let mut sent = Vec::with_capacity(queued.len());
        for t in queued {
            // What goes on the wire: sealed, when the cluster seals.
            m.seal.tick(unix_secs(now));
            let bytes = m.seal.seal(&t.bytes);
            sent.push(Sent { to: self.by_addr.get(&t.to).copied(), bytes, stream: t.stream, kind: t.kind.name() });
        }
        let before = std::mem::replace(&mut m.epoch, epoch);
        m.generation = epoch.0;
        Some(Outbox { sent, events, probes, accusations, epochs: (before, epoch), lease })
    }

    /// The lease's answer reaches machine `i`'s node at `now`.
    pub(crate) fn lease_answer(&mut self, i: usize, now: Instant, answer: vigil_membership::downing::LeaseAnswer) {
        if let Some(node) = self.all[i].node.as_mut() {
            node.lease_answer(now, answer);
        }
    }

    /// Machine `i` crashes at `now`: its node is gone, and what waited in
    /// its socket buffer with it. The generation that crashed, or `None` if
    /// it was already down.
    pub(crate) fn crash(&mut self, i: usize, now: Instant) -> Option<u64> {
        let m = &mut self.all[i];
        m.node.take()?;
        m.inbox.clear();
        m.paused_until = None;
        m.crashed.push(m.generation);
        m.downs.push((now, None));
        Some(m.generation)
    }

    /// Machine `i` starts again at `now` under the same name with the next
    /// generation, and joins through its seed: a new process (a seed from
    /// `rng`, a new session from `sealer`) with the same configuration and
    /// keys. False if it was up.
    pub(crate) fn restart(
        &mut self,
        i: usize,
        now: Instant,
        config: &Config,
        rng: &mut ChaCha8Rng,
        sealer: &mut Sealer,
    ) -> bool {
        let m = &mut self.all[i];
        if m.node.is_some() {
            return false;
        }
        let generation = m.generation + 1;
        let id = NodeId::new(m.name.clone(), generation);
        let seed = rng.random::<u64>();
        // The configuration was validated when the simulator was built.
        let Ok(mut fresh) = Node::new(id, m.addr, config.clone(), seed, now) else { return false };
        // Restarted, it is given two seeds, as an operator's restart would
        // (its seed and the next machine): one seed that crashed for good
        // would keep it out for ever, whatever the others do.
        let n = self.all.len();
        let next = (seed_of(i) + 1 + usize::from((seed_of(i) + 1) % n == i)) % n;
        let mut seeds: Vec<SocketAddr> = [seed_of(i), next].into_iter().filter(|&s| s != i).map(addr_of).collect();
        seeds.dedup();
        let m = &mut self.all[i];
        fresh.join(now, &seeds);
        m.node = Some(fresh);
        m.generation = generation;
        m.epoch = (generation, 0);
        m.seen = (0, 0);
        m.seal = sealer.seal_for_start(Some(&m.seal), unix_secs(now));
        if let Some(last) = m.downs.last_mut() {
            last.1 = Some(now);
        }
        true
    }

    /// Machine `i` stops processing until `until`; false if it is down.
    pub(crate) fn pause(&mut self, i: usize, until: Option<Instant>) -> bool {
        let m = &mut self.all[i];
        if m.node.is_none() {
            return false;
        }
        m.paused_until = until;
        true
    }

    /// Machine `i`'s pause ends: it is outside the envelope until `calm`,
    /// and what waited in its socket buffer is handed back, in order.
    pub(crate) fn resume(&mut self, i: usize, calm: Instant) -> Vec<(usize, Vec<u8>, bool)> {
        let m = &mut self.all[i];
        m.paused_until = None;
        m.disturbed_until = calm;
        std::mem::take(&mut m.inbox)
    }

    /// Machine `i` handles every message and timer `delay` late.
    pub(crate) fn slow(&mut self, i: usize, delay: Duration) {
        self.all[i].slow = delay;
    }

    /// Machine `i` is prompt again, and outside the envelope until `calm`.
    pub(crate) fn unslow(&mut self, i: usize, calm: Instant) {
        self.all[i].slow = Duration::ZERO;
        self.all[i].disturbed_until = calm;
    }

    /// A fault that touched machine `i` ended: it is outside the envelope
    /// until `calm` (or later, if another fault said so).
    pub(crate) fn disturbed_until(&mut self, i: usize, calm: Instant) {
        let m = &mut self.all[i];
        m.disturbed_until = m.disturbed_until.max(calm);
    }

    /// Pairs of live machines (observer, member) where the observer does
    /// not see the member alive with its current generation, counted up to
    /// `enough`.
    pub(crate) fn disagreements(&self, enough: u64) -> u64 {
        self.disagreements_without(enough, &std::collections::BTreeSet::new())
    }

    /// As [`Machines::disagreements`], leaving the machines `skip` out on
    /// both ends (members that forge: not correct).
    pub(crate) fn disagreements_without(&self, enough: u64, skip: &std::collections::BTreeSet<usize>) -> u64 {
        let mut count = 0;
        // A node that left, or was downed with nobody to rejoin, is out; an
        // impostor is not one of the cluster.
        let live = |m: &Machine| !m.impostor && m.node.as_ref().is_some_and(|n| n.status() == Status::Alive);
        for (i, a) in self.all.iter().enumerate() {
            let Some(node) = a.node.as_ref().filter(|_| live(a) && !skip.contains(&i)) else { continue };
            for (j, b) in self.all.iter().enumerate() {
                if i == j || !live(b) || skip.contains(&j) {
                    continue;
                }
                let sees =
                    node.member(&b.name).is_some_and(|m| m.id.generation == b.generation && m.status == Status::Alive);
                count += u64::from(!sees);
                if count >= enough {
                    return count;
                }
            }
        }
        count
    }

    /// The first `limit` pairs (observer, member) of live machines, `skip`
    /// left out, where the observer does not see the member alive with its
    /// current generation: what it holds instead.
    pub(crate) fn disagreeing_pairs(&self, limit: usize, skip: &std::collections::BTreeSet<usize>) -> Vec<String> {
        let live = |m: &Machine| !m.impostor && m.node.as_ref().is_some_and(|n| n.status() == Status::Alive);
        let mut out = Vec::new();
        for (i, a) in self.all.iter().enumerate() {
            let Some(node) = a.node.as_ref().filter(|_| live(a) && !skip.contains(&i)) else { continue };
            for (j, b) in self.all.iter().enumerate() {
                if i == j || !live(b) || skip.contains(&j) {
                    continue;
                }
                let held = node.member(&b.name);
                if held.as_ref().is_some_and(|m| m.id.generation == b.generation && m.status == Status::Alive) {
                    continue;
                }
                let what =
                    held.map_or("nothing".to_owned(), |m| format!("{}#{} {:?}", m.id.name, m.id.generation, m.status));
                out.push(format!("{}#{} holds {what} for {}#{}", a.name, a.generation, b.name, b.generation));
                if out.len() >= limit {
                    return out;
                }
            }
        }
        out
    }

    /// Whether every live machine sees every other live machine alive.
    pub(crate) fn converged(&self) -> bool {
        self.disagreements(1) == 0
    }
}
