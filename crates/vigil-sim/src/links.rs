//! The modelled network: latency per directed link, loss, blocks,
//! partitions and degradations, as they stand at the current virtual time,
//! and how lately it was disturbed.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use vigil_detector::Instant;

use crate::clock::START;
use crate::scenario::Network;

/// A uniform number in [0, 1) fixed for the directed link `a → b` and the
/// seed (SplitMix64 of the three).
fn link_uniform(seed: u64, a: usize, b: usize) -> f64 {
    let z = seed ^ (a as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (b as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    let z = vigil_detector::fnv::mix(z);
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Attempts to deliver a stream message over a lossy link.
pub(crate) const STREAM_ATTEMPTS: u32 = 5;

/// Attempts to open a connection: the first SYN and one retransmission a
/// second later (the runtime gives up connecting after 2 s).
pub(crate) const CONNECT_ATTEMPTS: u32 = 2;

/// How a message travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Carrier {
    /// A datagram: lost or not, once.
    Datagram,
    /// A stream message on a connection of its own, opened first.
    Connect,
    /// A stream message answering one that just arrived, on the connection
    /// it came on (already open).
    Answer,
}

/// The network's state: the links between machines and the faults in
/// force on them.
#[derive(Debug, Clone)]
pub(crate) struct Links {
    seed: u64,
    base: Network,
    /// Directed links blocked, with how many faults block each.
    blocked: BTreeMap<(usize, usize), u32>,
    /// Active partitions, by split point.
    partitions: Vec<usize>,
    /// Extra loss probabilities of active loss faults.
    extra_loss: Vec<f64>,
    /// Machines that lose packets: (machine, probability, way), active.
    lossy: Vec<(usize, f64, crate::fault::Way)>,
    /// Active degradations (base, jitter in ms); the latest one applies.
    degrades: Vec<(f64, f64)>,
    /// Outside the liveness envelope for everyone until then (after a
    /// network-wide fault ended).
    disturbed_until: Instant,
}

impl Links {
    pub(crate) fn new(seed: u64, base: Network) -> Links {
        Links {
            seed,
            base,
            blocked: BTreeMap::new(),
            partitions: Vec::new(),
            extra_loss: Vec::new(),
            lossy: Vec::new(),
            degrades: Vec::new(),
            disturbed_until: START,
        }
    }

    /// Whether datagrams from `a` reach `b` right now (partitions and
    /// blocks).
    pub(crate) fn connected(&self, a: usize, b: usize) -> bool {
        if self.blocked.get(&(a, b)).is_some_and(|c| *c > 0) {
            return false;
        }
        self.partitions.iter().all(|&split| (a < split) == (b < split))
    }

    /// The probability that a datagram is lost, all causes together.
    pub(crate) fn loss(&self) -> f64 {
        let mut keep = 1.0 - self.base.loss;
        for p in &self.extra_loss {
            keep *= 1.0 - p;
        }
        1.0 - keep
    }

    /// Whether the network is degraded, partitioned, or loses more than
    /// `max_loss`.
    fn disturbed(&self, max_loss: f64) -> bool {
        !self.degrades.is_empty() || !self.partitions.is_empty() || self.loss() > max_loss
    }

    /// Whether, at `now`, the network leaves machine `i` inside the
    /// liveness envelope: no block touches it, the network is neither
    /// partitioned, degraded nor losing more than `max_loss`, and was none
    /// of that lately.
    pub(crate) fn calm_for(&self, i: usize, now: Instant, max_loss: f64) -> bool {
        now >= self.disturbed_until && !self.disturbed(max_loss) && !self.blocks(i)
    }

    /// Keeps everyone outside the liveness envelope until `until`: a
    /// suspicion raised during a network fault may end after it.
    pub(crate) fn disturbed_until(&mut self, until: Instant) {
        self.disturbed_until = until;
    }

    /// Whether a partition is in force.
    pub(crate) fn partitioned(&self) -> bool {
        !self.partitions.is_empty()
    }

    /// Whether any block or lossy fault touches node `i`.
    fn blocks(&self, i: usize) -> bool {
        self.blocked.iter().any(|(&(a, b), c)| *c > 0 && (a == i || b == i)) || self.lossy.iter().any(|l| l.0 == i)
    }

    /// The loss on the way from `a` to `b`: the network's, and the lossy
    /// machines' at either end.
    fn loss_between(&self, a: usize, b: usize) -> f64 {
        let mut keep = 1.0 - self.loss();
        for &(i, p, way) in &self.lossy {
            if (i == a && way.outbound()) || (i == b && way.inbound()) {
                keep *= 1.0 - p;
            }
        }
        1.0 - keep
    }

    pub(crate) fn make_lossy(&mut self, node: usize, p: f64, way: crate::fault::Way) {
        self.lossy.push((node, p, way));
    }

    pub(crate) fn end_lossy(&mut self, node: usize, p: f64, way: crate::fault::Way) {
        if let Some(pos) = self.lossy.iter().position(|&l| l == (node, p, way)) {
            self.lossy.remove(pos);
        }
    }

    /// What happens to a message from `a` to `b` sent now: `None` if it is
    /// lost, else its latency. A datagram is lost with the network's loss
    /// probability. With [`Network::connections`], a stream message on a
    /// new connection first needs the
    /// connection: its SYN (`a → b`) and SYN-ACK (`b → a`) both through,
    /// at most [`CONNECT_ATTEMPTS`] times, a second apart, as TCP's first
    /// retransmission of a SYN waits; it then takes a round trip more than
    /// a datagram, and a connection whose answers cannot come back (a
    /// block the other way) never opens. Its data, or an answer on an open
    /// connection, is retransmitted TCP-like: each of up to
    /// [`STREAM_ATTEMPTS`] attempts is lost with the loss probability, and
    /// each lost one adds a retransmission timeout that doubles from
    /// 200 ms; it is lost only if every attempt is. Nothing crosses a
    /// partition or a block.
    pub(crate) fn send(&self, a: usize, b: usize, carrier: Carrier, rng: &mut ChaCha8Rng) -> Option<Duration> {
        if !self.connected(a, b) {
            return None;
        }
        let loss = self.loss_between(a, b);
        let mut retransmission = 0.0;
        let mut legs = 1.0;
        if carrier == Carrier::Connect && self.base.connections {
            if !self.connected(b, a) {
                return None;
            }
            let back = self.loss_between(b, a);
            let (mut rto, mut attempt) = (1000.0, 1);
            // No draw on a lossless network: its runs stay as they were.
            while (loss > 0.0 || back > 0.0) && (rng.random::<f64>() < loss || rng.random::<f64>() < back) {
                if attempt == CONNECT_ATTEMPTS {
                    return None;
                }
                retransmission += rto;
                rto *= 2.0;
                attempt += 1;
            }
            legs = 3.0;
        }
        if carrier != Carrier::Datagram {
            let mut rto = 200.0;
            let mut attempt = 1;
            while loss > 0.0 && rng.random::<f64>() < loss {
                if attempt == STREAM_ATTEMPTS {
                    return None;
                }
                retransmission += rto;
                rto *= 2.0;
                attempt += 1;
            }
        } else if loss > 0.0 && rng.random::<f64>() < loss {
            return None;
        }
        let exp = |mean: f64, rng: &mut ChaCha8Rng| {
            if mean > 0.0 { -mean * (1.0 - rng.random::<f64>()).ln() } else { 0.0 }
        };
        let ms = match self.degrades.last() {
            Some(&(base, jitter)) => base + exp(jitter, rng),
            None => {
                let factor = 1.0 + self.base.link_spread * (2.0 * link_uniform(self.seed, a, b) - 1.0);
                (self.base.base_ms + exp(self.base.jitter_ms, rng)) * factor
            }
        };
        // Validation bounds latencies by a day; the tail of the exponential
        // is bounded by the draw's precision (about 37 means).
        Some(Duration::try_from_secs_f64((legs * ms + retransmission) / 1e3).unwrap_or(Duration::from_secs(86_400)))
    }

    pub(crate) fn block(&mut self, from: usize, to: usize) {
        *self.blocked.entry((from, to)).or_default() += 1;
    }

    pub(crate) fn unblock(&mut self, from: usize, to: usize) {
        if let Some(c) = self.blocked.get_mut(&(from, to)) {
            *c = c.saturating_sub(1);
        }
    }

    pub(crate) fn partition(&mut self, split: usize) {
        self.partitions.push(split);
    }

    pub(crate) fn heal(&mut self, split: usize) {
        if let Some(pos) = self.partitions.iter().position(|&s| s == split) {
            self.partitions.remove(pos);
        }
    }

    pub(crate) fn add_loss(&mut self, p: f64) {
        self.extra_loss.push(p);
    }

    pub(crate) fn remove_loss(&mut self, p: f64) {
        if let Some(pos) = self.extra_loss.iter().position(|&x| x == p) {
            self.extra_loss.remove(pos);
        }
    }

    pub(crate) fn degrade(&mut self, base_ms: f64, jitter_ms: f64) {
        self.degrades.push((base_ms, jitter_ms));
    }

    pub(crate) fn restore(&mut self, base_ms: f64, jitter_ms: f64) {
        if let Some(pos) = self.degrades.iter().position(|&d| d == (base_ms, jitter_ms)) {
            self.degrades.remove(pos);
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn a_degraded_network_has_the_stated_mean_latency() {
        let mut links = Links::new(1, Network::default());
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        links.degrade(300.0, 150.0);
        let n = 20_000;
        let mean: f64 =
            (0..n).map(|_| links.send(0, 1, Carrier::Datagram, &mut rng).unwrap().as_secs_f64() * 1e3).sum::<f64>()
                / n as f64;
        // Exp(150) has σ 150 ms; the mean of 20,000 has σ 1.06 ms: 5 σ.
        assert!((mean - 450.0).abs() < 5.3, "{mean}");
        links.restore(300.0, 150.0);
        assert!(links.send(0, 1, Carrier::Datagram, &mut rng).unwrap() < Duration::from_millis(50));
    }

    #[test]
    fn streams_are_retransmitted_and_lost_only_when_every_attempt_is() {
        let mut links = Links::new(1, Network::default());
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        links.add_loss(1.0);
        assert!((0..100).all(|_| links.send(0, 1, Carrier::Answer, &mut rng).is_none()));
        links.remove_loss(1.0);
        links.add_loss(0.5);
        let n = 20_000;
        let delivered = (0..n).filter_map(|_| links.send(0, 1, Carrier::Answer, &mut rng)).collect::<Vec<_>>();
        // Lost with probability 0.5⁵ = 1/32: 625 of 20,000, σ 24.6.
        let lost = n - delivered.len();
        assert!((lost as f64 - 625.0).abs() < 5.0 * 24.6, "{lost}");
        // Half arrive at the first attempt, a quarter 200 ms later.
        let late = delivered.iter().filter(|d| **d >= Duration::from_millis(200)).count();
        assert!((late as f64 / delivered.len() as f64 - 0.4839).abs() < 0.02, "{late}");
    }

    #[test]
    fn a_new_connection_needs_its_syn_and_syn_ack_through() {
        let mut links = Links::new(1, Network { connections: true, ..Network::default() });
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        links.add_loss(0.5);
        let n = 20_000;
        let delivered = (0..n).filter_map(|_| links.send(0, 1, Carrier::Connect, &mut rng)).collect::<Vec<_>>();
        // Each try opens with 0.5 × 0.5; two tries: 0.4375; then the data
        // is lost with 1/32: 0.4238 of 20,000 arrive, 8,477, σ 69.9.
        assert!((delivered.len() as f64 - 8_477.0).abs() < 5.0 * 69.9, "{}", delivered.len());
        // A second late at least: opened at the second try (0.1875 of all
        // sent, then delivered with 31/32), or at the first (0.25) with the
        // data through at its fourth or fifth attempt (200 + 400 + 800 ms
        // waited; 0.09375): 0.2051 of 0.4238, 0.4839 of those delivered.
        let late = delivered.iter().filter(|d| **d >= Duration::from_secs(1)).count();
        assert!((late as f64 / delivered.len() as f64 - 0.4839).abs() < 0.02, "{late}");
        links.remove_loss(0.5);
        // An answer cannot come back: the connection never opens, though
        // an answer on an open one still goes.
        links.block(1, 0);
        assert!(links.send(0, 1, Carrier::Connect, &mut rng).is_none());
        assert!(links.send(0, 1, Carrier::Answer, &mut rng).is_some());
        // Lossless: a round trip longer than an answer, nothing drawn for it.
        links.unblock(1, 0);
        let (mut r1, mut r2) = (ChaCha8Rng::seed_from_u64(3), ChaCha8Rng::seed_from_u64(3));
        let connect = links.send(0, 1, Carrier::Connect, &mut r1).unwrap();
        let answer = links.send(0, 1, Carrier::Answer, &mut r2).unwrap();
        assert_eq!(connect, answer * 3);
    }

    #[test]
    fn blocks_and_partitions_stop_datagrams_and_streams() {
        let mut links = Links::new(1, Network::default());
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        links.block(0, 1);
        assert!(links.send(0, 1, Carrier::Answer, &mut rng).is_none());
        assert!(links.send(1, 0, Carrier::Datagram, &mut rng).is_some());
        links.unblock(0, 1);
        links.partition(2);
        assert!(links.send(1, 2, Carrier::Answer, &mut rng).is_none());
        assert!(links.send(0, 1, Carrier::Answer, &mut rng).is_some());
        assert!(links.disturbed(0.1));
        links.heal(2);
        links.add_loss(0.2);
        assert!((links.loss() - 0.2).abs() < 1e-12 && links.disturbed(0.1) && !links.disturbed(0.2));
    }
}
