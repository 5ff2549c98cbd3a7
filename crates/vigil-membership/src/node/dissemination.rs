//! Spreading what this node knows: the broadcast queue's retransmissions,
//! gossip rounds, push-pull anti-entropy, re-announcements to the dead and
//! collecting old tombstones.

use super::*;

impl Node {
    pub(super) fn gossip(&mut self, now: Instant) {
        if self.broadcasts.is_empty() {
            return;
        }
        let retention = self.config.dead_retention;
        let targets = self.members.pick(&mut self.rng, self.config.gossip_nodes, |m| match m.status {
            Status::Alive | Status::Suspect => true,
            Status::Dead => now.saturating_duration_since(m.since) < retention,
            Status::Left => false,
        });
        for name in targets {
            if self.broadcasts.is_empty() {
                break;
            }
            if let Some(addr) = self.members.get(&name).map(|m| m.addr) {
                self.send(addr, Message::Gossip);
            }
        }
    }

    pub(super) fn push_pull(&mut self) {
        let target = self.members.pick(&mut self.rng, 1, |m| m.status == Status::Alive).pop();
        if let Some(addr) = target.and_then(|name| self.members.get(&name).map(|m| m.addr)) {
            let members = self.view();
            self.send(addr, Message::PushPull { reply: true, members });
        }
    }

    /// Re-announces this node to one member believed dead (while its
    /// tombstone lasts), with a short push-pull: this node, and the death it
    /// believes. If the member is in fact alive (a healed partition, an
    /// isolated node), it refutes and answers with its full view and a
    /// request for ours, so both sides merge.
    pub(super) fn reannounce(&mut self, now: Instant) {
        let lifetime = self.config.dead_retention.saturating_mul(4);
        let dead: Vec<Arc<str>> = self
            .members
            .tombstones()
            .filter(|m| m.status == Status::Dead && now.saturating_duration_since(m.since) < lifetime)
            .map(|m| m.name.clone())
            .collect();
        if dead.is_empty() {
            return;
        }
        let name = &dead[self.rng.random_range(0..dead.len())];
        let Some(m) = self.members.get(name) else { return };
        let (addr, tomb) = (m.addr, m.update(self.me.clone()));
        let members = vec![self.self_update(self.status), tomb];
        self.send(addr, Message::PushPull { reply: true, members });
    }

    /// Forgets tombstones older than four times `dead_retention`, and the
    /// oldest beyond `max_tombstones`.
    pub(super) fn collect_tombstones(&mut self, now: Instant) {
        let lifetime = self.config.dead_retention.saturating_mul(4);
        let excess = self.members.tombstone_count().saturating_sub(self.config.max_tombstones);
        let old: Vec<Arc<str>> = self
            .members
            .tombstones()
            .enumerate()
            .take_while(|(i, m)| *i < excess || now.saturating_duration_since(m.since) >= lifetime)
            .map(|(_, m)| m.name.clone())
            .collect();
        for name in old {
            self.forget(&name);
        }
    }

    /// The push-pull period: `push_pull_interval`, scaled up beyond 32
    /// members as memberlist does (`× (⌈log2 n − log2 32⌉ + 1)`).
    pub(super) fn push_pull_period(&self) -> Duration {
        let n = self.cluster_size() as f64;
        let scale = if n <= 32.0 { 1.0 } else { (n.log2() - 32f64.log2()).ceil() + 1.0 };
        self.config.push_pull_interval.mul_f64(scale)
    }

    pub(super) fn retransmits(&self) -> u32 {
        let n = self.cluster_size() as f64;
        self.config.retransmit_mult.saturating_mul((n + 1.0).log10().ceil().max(1.0) as u32)
    }

    pub(super) fn broadcast(&mut self, update: Update) {
        let retransmits = self.retransmits();
        let dropped = self.broadcasts.push(update, retransmits);
        self.stats.broadcast_overflows += dropped as u64;
    }
}
