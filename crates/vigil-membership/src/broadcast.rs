//! The broadcast queue: rumours waiting to be piggybacked.
//!
//! Every datagram the node sends carries as many queued rumours as fit,
//! least-transmitted first; each rumour goes out a bounded number of times
//! (`retransmit_mult × ⌈log10(n + 1)⌉`), which spreads it to the whole
//! cluster with high probability (infection-style dissemination). A newer
//! rumour about a member replaces the queued ones, except that suspicions
//! from different accusers travel side by side: each is an independent
//! confirmation that shortens the suspicion timeout elsewhere.

use crate::message::{Status, Update};
use crate::wire;

#[derive(Debug, Clone)]
struct Broadcast {
    update: Update,
    /// Transmissions left.
    left: u32,
}

/// The queue. See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct Broadcasts {
    queue: Vec<Broadcast>,
    max: usize,
}

impl Broadcasts {
    /// A queue of at most `max` rumours.
    pub(crate) fn new(max: usize) -> Broadcasts {
        Broadcasts { queue: Vec::new(), max }
    }

    /// Queues `update` for `retransmits` transmissions. Returns how many
    /// rumours were dropped because the queue was full (the most
    /// transmitted ones go first).
    pub(crate) fn push(&mut self, update: Update, retransmits: u32) -> usize {
        self.queue.retain(|b| {
            b.update.id.name != update.id.name
                || (update.status == Status::Suspect
                    && b.update.status == Status::Suspect
                    && b.update.incarnation == update.incarnation
                    && b.update.from.name != update.from.name)
        });
        self.queue.push(Broadcast { update, left: retransmits.max(1) });
        let over = self.queue.len().saturating_sub(self.max);
        if over > 0 {
            self.queue.sort_by_key(|b| std::cmp::Reverse(b.left));
            self.queue.truncate(self.max);
        }
        over
    }

    /// Moves into `out` as many rumours as fit in `room` bytes (and in the
    /// packet's update count), least-transmitted first, and counts a
    /// transmission for each. Returns the bytes they take.
    pub(crate) fn fill(&mut self, room: usize, out: &mut Vec<crate::message::Update>) -> usize {
        if self.queue.is_empty() {
            return 0;
        }
        if self.queue.len() > 1 {
            // Stable: among equals, the older rumour first.
            self.queue.sort_by_key(|b| std::cmp::Reverse(b.left));
        }
        let mut used = 0;
        for b in &mut self.queue {
            if out.len() >= wire::MAX_UPDATES {
                break;
            }
            let len = wire::update_len(&b.update);
            if used + len <= room {
                used += len;
                out.push(b.update.clone());
                b.left = b.left.saturating_sub(1);
            }
        }
        self.queue.retain(|b| b.left > 0);
        used
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    pub(crate) fn clear(&mut self) {
        self.queue.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;
    use crate::message::NodeId;

    fn rumour(name: &str, incarnation: u64, status: Status, from: &str) -> Update {
        Update {
            id: NodeId::new(name, 1),
            addr: SocketAddr::from(([10, 0, 0, 1], 7946)),
            incarnation,
            status,
            from: NodeId::new(from, 1),
            tags: None,
        }
    }

    #[test]
    fn a_newer_rumour_replaces_older_ones_but_confirmations_travel_together() {
        let mut q = Broadcasts::new(100);
        q.push(rumour("a", 0, Status::Suspect, "x"), 3);
        q.push(rumour("a", 0, Status::Suspect, "y"), 3);
        assert_eq!(q.len(), 2);
        q.push(rumour("a", 1, Status::Alive, "a"), 3);
        assert_eq!(q.len(), 1);
        q.push(rumour("b", 0, Status::Dead, "x"), 3);
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn each_rumour_is_sent_its_number_of_times_least_transmitted_first() {
        let mut q = Broadcasts::new(100);
        q.push(rumour("a", 0, Status::Dead, "x"), 2);
        q.push(rumour("b", 0, Status::Dead, "x"), 3);
        let one = wire::update_len(&rumour("a", 0, Status::Dead, "x"));
        let mut out = Vec::new();
        assert_eq!(q.fill(one, &mut out), one);
        assert_eq!(out[0].id.name, "b", "b has more transmissions left");
        let mut total = 1;
        loop {
            let mut out = Vec::new();
            if q.fill(10 * one, &mut out) == 0 {
                break;
            }
            total += out.len();
        }
        assert_eq!(total, 5);
        assert!(q.is_empty());
    }

    #[test]
    fn a_full_queue_drops_the_most_transmitted_and_says_how_many() {
        let mut q = Broadcasts::new(2);
        q.push(rumour("a", 0, Status::Dead, "x"), 1);
        q.push(rumour("b", 0, Status::Dead, "x"), 5);
        assert_eq!(q.push(rumour("c", 0, Status::Dead, "x"), 5), 1);
        let mut out = Vec::new();
        q.fill(usize::MAX, &mut out);
        let names: Vec<&str> = out.iter().map(|u| u.id.name.as_str()).collect();
        assert_eq!(names, ["b", "c"]);
    }
}
