//! Spreading what this node knows: the broadcast queue's retransmissions,
//! gossip rounds, push-pull anti-entropy, reconnecting to the dead and
//! reaping old tombstones.

use super::*;

impl Node {
    pub(super) fn gossip(&mut self, now: Instant) {
        if self.broadcasts.is_empty() {
            return;
        }
        let retention = self.config.dead_retention;
        // While a downing strategy decides, a member found unreachable is
        // not gossiped to (it is probed, and told of its suspicion, each
        // time its suspicion runs out): the rumours go to those that can
        // hear them, so that a side's members come to the same picture.
        let (suspicions, decides) = (&self.suspicions, self.decides());
        // The recently dead and left hear the news too: a member declared
        // dead, or said to have left, by mistake (or by a forger) learns it
        // and refutes.
        let targets = self.members.pick(&mut self.rng, self.config.gossip_nodes, |m| match m.status {
            Status::Suspect if decides => suspicions.get(&m.name).is_none_or(|s| !s.is_ripe()),
            Status::Alive | Status::Suspect => true,
            Status::Dead | Status::Left => now.saturating_duration_since(m.since) < retention,
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

    pub(super) fn push_pull(&mut self, now: Instant) {
        self.pulled_at = Some(now);
        let target = self.members.pick(&mut self.rng, 1, |m| m.status == Status::Alive).pop();
        if let Some(addr) = target.and_then(|name| self.members.get(&name).map(|m| m.addr)) {
            if self.config.push_pull_digest {
                self.stats.digests_sent += 1;
                let view = digest::of(&self.view());
                self.send(addr, Message::Digest { view });
            } else {
                self.send_view(addr, true);
            }
        }
    }

    /// Sends this node's view to `to` in pages of at most
    /// [`Config::view_page`] bytes of members, this node first; `ask`
    /// asks for the receiver's view in return, on the first page only (a
    /// page is merged as it comes, whatever came before it, so the
    /// receiver answers once, having seen this node).
    pub(super) fn send_view(&mut self, to: SocketAddr, ask: bool) {
        let budget = self.config.view_page;
        let mut page: Vec<Update> = Vec::new();
        let (mut bytes, mut pages) = (0, 0u32);
        for u in self.view() {
            let len = wire::update_len(&u);
            if !page.is_empty() && bytes + len > budget {
                let members = std::mem::take(&mut page);
                self.send(to, Message::PushPull { reply: ask && pages == 0, members });
                (bytes, pages) = (0, pages + 1);
            }
            bytes += len;
            page.push(u);
        }
        self.send(to, Message::PushPull { reply: ask && pages == 0, members: page });
        if pages > 0 {
            self.stats.views_paged += 1;
        }
    }

    /// A member sent the digest of its view: if this node's view has
    /// another, the two exchange views (this node sends its own and asks
    /// for the sender's), as a push-pull would have; if not, there is
    /// nothing to exchange. Anyone may ask, as anyone may push-pull: a
    /// stream's sender is who it connected from, and the answer goes to
    /// the address its packet gives.
    pub(super) fn compare_digest(&mut self, from: SocketAddr, theirs: u64) {
        if digest::of(&self.view()) == theirs {
            self.stats.digests_matched += 1;
        } else {
            self.stats.digests_differed += 1;
            self.send_view(from, true);
        }
    }

    /// Tries to reconnect to one member believed dead, chosen at random
    /// among those dead for less than `reconnect_timeout`, with a short
    /// push-pull: this node, and the death it believes. If the member is in
    /// fact alive (a healed partition, an isolated node), it refutes and
    /// answers with its full view and a request for ours, so both sides
    /// merge. One attempt per interval, whatever the number of the dead.
    pub(super) fn reconnect(&mut self, now: Instant) {
        self.call_past(now);
        let timeout = self.config.reconnect_timeout;
        let tried = |m: &&Member| m.status == Status::Dead && now.saturating_duration_since(m.since) < timeout;
        // Counted, then walked to the one drawn: no list of the dead is kept.
        let dead = self.members.tombstones().filter(tried).count();
        if dead == 0 {
            return;
        }
        let pick = self.rng.random_range(0..dead);
        let Some(m) = self.members.tombstones().filter(tried).nth(pick) else { return };
        let (addr, tomb) = (m.addr, m.update(self.me.clone()));
        self.stats.reconnects += 1;
        let members = vec![self.self_update(self.status), tomb];
        self.send(addr, Message::PushPull { reply: true, members });
    }

    /// Reaps the tombstones of members dead for `reconnect_timeout`, of
    /// members that left `tombstone_timeout` ago, and the oldest beyond
    /// `max_tombstones`, each with [`Event::Reaped`].
    pub(super) fn collect_tombstones(&mut self, now: Instant) {
        let (dead_for, left_for) = (self.config.reconnect_timeout, self.config.tombstone_timeout);
        let excess = self.members.tombstone_count().saturating_sub(self.config.max_tombstones);
        // Tombstones are in the order they were made: once the excess is
        // gone, the walk stops at the first one younger than both timeouts.
        let mut reaped: Vec<(Arc<str>, NodeId, Status)> = Vec::new();
        for (i, m) in self.members.tombstones().enumerate() {
            let age = now.saturating_duration_since(m.since);
            let expired = match m.status {
                Status::Dead => age >= dead_for,
                _ => age >= left_for,
            };
            if i < excess || expired {
                reaped.push((m.name.clone(), m.id(), m.status));
            } else if i >= excess && age < dead_for.min(left_for) {
                // Every later tombstone is younger still.
                break;
            }
        }
        for (name, id, status) in reaped {
            self.forget(&name);
            self.stats.reaped += 1;
            self.emit(Event::Reaped { id, status });
        }
        // The rows of members no longer live count for nothing.
        let members = &self.members;
        self.rows
            .prune(|name, generation| members.get(name).is_some_and(|m| m.is_live() && m.generation == generation));
    }

    /// This node just learned that its view lacks members: a packet came
    /// from a stranger (a sender it does not know at that address), or a
    /// push-pull brought members it did not know. Others may be missing
    /// whose rumours went past before this node was known to the members
    /// spreading them, or that a stranger proposed beyond its budget; a
    /// push-pull with a known member brings them all. So the next one is
    /// brought forward to `introduction_window` after the news (the burst
    /// that caused it has then passed), and never sooner than
    /// `push_pull_interval` after the last one: no more often than a
    /// cluster of 32 exchanges views anyway, however many strangers a
    /// hostile peer makes up. The scaled period resumes once a push-pull
    /// brings nothing new. The common case is a cluster starting at once,
    /// every member joining through one seed: without it, the last
    /// members to complete their views at N = 1,000 wait for the scaled
    /// period, 180 s.
    pub(super) fn catch_up_soon(&mut self, now: Instant) {
        // Later news finds the timer as early as it may be already.
        let mut soon = now.saturating_add(self.config.introduction_window);
        if let Some(last) = self.pulled_at {
            soon = soon.max(last.saturating_add(self.config.push_pull_interval));
        }
        if self.timers.get(Timer::PushPull).is_some_and(|at| at > soon) {
            self.timers.set(Timer::PushPull, Some(soon));
            self.stats.push_pulls_brought_forward += 1;
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
