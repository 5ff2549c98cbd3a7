//! A cluster of nodes driven by hand on one virtual clock, the way a
//! runtime drives one: each node is woken at its own timeout, and what it
//! sends is handed to the node at the address it is sent to, by its
//! transport, until nobody has anything left to send. Nodes can be crashed
//! (they neither run nor receive) and packets dropped by a rule.
//!
//! Node `i` is named `n{i}`, generation 1, at `10.0.0.{i + 1}:7946`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use vigil_detector::Instant;
use vigil_membership::wire::{self, MAX_STREAM};
use vigil_membership::{Config, Event, Message, Node, NodeId, Packet, Rejected, Status, Transmit, Update};

/// The cluster id of every node the harness makes.
pub(crate) const CLUSTER: u64 = 77;

/// When the harness's nodes start.
pub(crate) const START: Instant = Instant::from_secs(1);

/// Node `i`'s address.
pub(crate) fn addr(i: usize) -> SocketAddr {
    format!("10.0.0.{}:7946", i + 1).parse().unwrap()
}

/// Node `i`'s identity.
pub(crate) fn id(i: usize) -> NodeId {
    NodeId::new(format!("n{i}"), 1)
}

/// A packet from node `from`, encoded.
pub(crate) fn packet(from: usize, message: Message, updates: Vec<Update>) -> Vec<u8> {
    let p = Packet { cluster: CLUSTER, from: id(from), incarnation: 0, message, updates };
    wire::encode(&p, MAX_STREAM).unwrap()
}

/// What `node` believes of `name`'s status.
pub(crate) fn status(node: &Node, name: &str) -> Status {
    node.member(name).unwrap().status
}

/// The events `node` has queued.
pub(crate) fn events(node: &mut Node) -> Vec<Event> {
    std::iter::from_fn(|| node.poll_event()).collect()
}

/// Decides whether a packet from node `from` to node `to` is lost.
type DropRule = Box<dyn FnMut(usize, usize, &Transmit) -> bool>;

/// The nodes, their clock and the network between them.
pub(crate) struct Cluster {
    /// The nodes; node `i` is at [`addr`]`(i)`.
    pub(crate) nodes: Vec<Node>,
    now: Instant,
    down: BTreeSet<usize>,
    drop: Option<DropRule>,
    /// Packets handed to a node.
    pub(crate) delivered: u64,
    /// Packets lost to the drop rule or to a crashed node.
    pub(crate) dropped: u64,
    /// The largest datagram sent, in bytes.
    pub(crate) largest_datagram: usize,
}

impl Cluster {
    /// `n` nodes with `config` (seeded with their index), each bootstrapped
    /// with all the others at [`START`].
    pub(crate) fn new(n: usize, config: Config) -> Cluster {
        let all: Vec<(NodeId, SocketAddr)> = (0..n).map(|i| (id(i), addr(i))).collect();
        let nodes = (0..n)
            .map(|i| {
                let mut node = Node::new(id(i), addr(i), config.clone(), i as u64, START).unwrap();
                node.bootstrap(START, &all);
                node
            })
            .collect();
        Cluster::of(nodes, START)
    }

    /// These nodes, node `i` at [`addr`]`(i)`, on a clock at `now`.
    pub(crate) fn of(nodes: Vec<Node>, now: Instant) -> Cluster {
        Cluster { nodes, now, down: BTreeSet::new(), drop: None, delivered: 0, dropped: 0, largest_datagram: 0 }
    }

    /// The clock.
    pub(crate) fn now(&self) -> Instant {
        self.now
    }

    /// Moves the clock to `now` (never back) without running anything: for
    /// inputs a test gives by hand.
    pub(crate) fn set_clock(&mut self, now: Instant) {
        self.now = self.now.max(now);
    }

    /// Adds a node at the next address.
    pub(crate) fn push(&mut self, node: Node) {
        self.nodes.push(node);
    }

    /// Node `i` stops: it neither runs nor receives until [`Cluster::revive`].
    pub(crate) fn crash(&mut self, i: usize) {
        self.down.insert(i);
    }

    /// Node `i` runs again, as it was (a pause rather than a restart).
    pub(crate) fn revive(&mut self, i: usize) {
        self.down.remove(&i);
    }

    /// Packets for which `rule(from, to, transmit)` holds are lost, from now
    /// on (replacing any rule before).
    pub(crate) fn drop_when(&mut self, rule: impl FnMut(usize, usize, &Transmit) -> bool + 'static) {
        self.drop = Some(Box::new(rule));
    }

    /// Every packet arrives again.
    pub(crate) fn heal(&mut self) {
        self.drop = None;
    }

    /// The events node `i` has queued.
    pub(crate) fn events(&mut self, i: usize) -> Vec<Event> {
        events(&mut self.nodes[i])
    }

    /// Drops every event queued so far.
    pub(crate) fn clear_events(&mut self) {
        for n in &mut self.nodes {
            events(n);
        }
    }

    /// Hands `t`, sent by node `from`, to node `to` by its transport, now.
    ///
    /// # Errors
    ///
    /// What the receiving node says of it.
    pub(crate) fn deliver(&mut self, to: usize, from: usize, t: &Transmit) -> Result<(), Rejected> {
        let (now, node) = (self.now, &mut self.nodes[to]);
        if t.stream {
            node.handle_stream(now, addr(from), &t.bytes)
        } else {
            node.handle_datagram(now, addr(from), &t.bytes)
        }
    }

    /// One round: the clock moves to the earliest timeout of a running node
    /// (at most `until`), the nodes due handle it, and what they send is
    /// delivered until nobody sends anything more. Returns the clock.
    pub(crate) fn step(&mut self, until: Instant) -> Instant {
        let up = |i: &usize| !self.down.contains(i);
        let next = (0..self.nodes.len()).filter(up).filter_map(|i| self.nodes[i].poll_timeout()).min();
        self.now = next.unwrap_or(until).min(until).max(self.now);
        for i in 0..self.nodes.len() {
            if !self.down.contains(&i) && self.nodes[i].poll_timeout().is_some_and(|t| t <= self.now) {
                self.nodes[i].handle_timeout(self.now);
            }
        }
        self.deliver_all();
        self.now
    }

    /// Every running node handles a timeout at `at` (whether or not one is
    /// due), then what they send is delivered: the clock of a runtime that
    /// wakes on a fixed grid.
    pub(crate) fn tick(&mut self, at: Instant) {
        self.now = at.max(self.now);
        for i in 0..self.nodes.len() {
            if !self.down.contains(&i) {
                self.nodes[i].handle_timeout(self.now);
            }
        }
        self.deliver_all();
    }

    /// Steps until the clock reaches `until`. Returns the clock.
    pub(crate) fn run_until(&mut self, until: Instant) -> Instant {
        while self.now < until {
            self.step(until);
        }
        self.now
    }

    /// Steps for `d` of virtual time. Returns the clock.
    pub(crate) fn run_for(&mut self, d: Duration) -> Instant {
        self.run_until(self.now + d)
    }

    /// Delivers what the nodes send, at the present time, until nobody
    /// sends anything more. A crashed node's packets are lost, as are those
    /// to a crashed node, to an address no node has, or that the drop rule
    /// picks.
    pub(crate) fn deliver_all(&mut self) {
        loop {
            let mut out = Vec::new();
            for (i, n) in self.nodes.iter_mut().enumerate() {
                while let Some(t) = n.poll_transmit() {
                    if !t.stream {
                        self.largest_datagram = self.largest_datagram.max(t.bytes.len());
                    }
                    out.push((i, t));
                }
            }
            if out.is_empty() {
                return;
            }
            for (from, t) in out {
                let to = (0..self.nodes.len()).find(|&j| addr(j) == t.to);
                let lost = match to {
                    None => true,
                    Some(to) => {
                        self.down.contains(&from)
                            || self.down.contains(&to)
                            || self.drop.as_mut().is_some_and(|rule| rule(from, to, &t))
                    }
                };
                match to {
                    Some(to) if !lost => {
                        self.delivered += 1;
                        let _ = self.deliver(to, from, &t);
                    }
                    _ => self.dropped += 1,
                }
            }
        }
    }
}
