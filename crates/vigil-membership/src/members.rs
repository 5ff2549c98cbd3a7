//! The member table: what this node believes about every other member, and
//! the indexes derived from it.
//!
//! The table owns its derived indexes and keeps them right itself: every
//! change of a member's status goes through one transition function
//! ([`MemberTable::set`], [`MemberTable::insert`] and
//! [`MemberTable::remove`] all end in `reindex`), which updates
//!
//! - the **live** list (alive and suspected members), for random choices in
//!   constant time;
//! - the **ring** of live members ordered by a hash of their names, from
//!   which each member's observers and watched members are read
//!   ([`MemberTable::successors`], [`MemberTable::predecessors`]); its
//!   version changes whenever its membership does;
//! - the **tombstones** (dead and left members) ordered by the time they
//!   died, for reaping and reconnection attempts.
//!
//! Members live in a slab in insertion order, so iteration is deterministic,
//! with a hash index by name; names are shared (`Arc<str>`), so a simulator
//! of many nodes stores each name once.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use vigil_detector::Instant;

use crate::message::{MAX_MEMBERS, NodeId, Status, Update};
use crate::tags::Tags;

/// What this node knows of one member. Kept small: a node of a large
/// cluster holds one per member.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) name: Arc<str>,
    pub(crate) generation: u64,
    pub(crate) addr: SocketAddr,
    pub(crate) incarnation: u64,
    pub(crate) status: Status,
    /// When the status last changed.
    pub(crate) since: Instant,
    /// Its tags, once a rumour carried them, and the incarnation they were
    /// carried at; boxed, so a member without tags costs one pointer.
    tags: Option<Box<(Tags, u64)>>,
    /// Position in the live list, or `NOT_LIVE`.
    live_at: u32,
}

const NOT_LIVE: u32 = u32::MAX;

impl Member {
    pub(crate) fn id(&self) -> NodeId {
        NodeId { name: self.name.to_string(), generation: self.generation }
    }

    /// Whether this is exactly `id` (name and generation).
    pub(crate) fn is(&self, id: &NodeId) -> bool {
        self.generation == id.generation && *self.name == *id.name
    }

    pub(crate) fn is_live(&self) -> bool {
        matches!(self.status, Status::Alive | Status::Suspect)
    }

    /// Its tags, if a rumour carried them.
    pub(crate) fn tags(&self) -> Option<&Tags> {
        self.tags.as_deref().map(|(tags, _)| tags)
    }

    /// The rumour that states what this node believes, with `from` as its
    /// source; its tags go with it while the member is live.
    pub(crate) fn update(&self, from: NodeId) -> Update {
        let tags = self.tags().cloned().filter(|_| self.is_live());
        Update { id: self.id(), addr: self.addr, incarnation: self.incarnation, status: self.status, from, tags }
    }
}

/// The position of a name on the ring. FNV-1a: stable across runs and
/// platforms.
pub(crate) fn ring_hash(name: &str) -> u64 {
    vigil_detector::fnv::fnv1a(name.as_bytes())
}

/// What the ring is sorted by: the name's hash, then the name (two names
/// with one hash still have an order).
fn ring_key(name: &str) -> (u64, &str) {
    (ring_hash(name), name)
}

/// Whether a member made live goes on the ring at once, or the caller sorts
/// the ring once it has added a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ring {
    PlaceNow,
    SortLater,
}

/// The table. See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct MemberTable {
    slots: Vec<Option<Member>>,
    index: HashMap<Arc<str>, u32>,
    free: Vec<u32>,
    /// Slots of alive and suspected members, in no particular order.
    live: Vec<u32>,
    /// Slots of live members by `(ring_hash(name), name)`.
    ring: Vec<u32>,
    /// Dead and left members by the time they died.
    tombstones: BTreeSet<(Instant, u32)>,
    /// Changes whenever a member joins or leaves the ring.
    ring_version: u64,
    /// Where members' packets come from, for the few for whom that is not
    /// their address (a NAT, a second interface), once they proved it: they
    /// answered, from there, a ping sent to their address.
    sources: HashMap<Arc<str>, SocketAddr>,
}

impl MemberTable {
    pub(crate) fn new() -> MemberTable {
        MemberTable {
            slots: Vec::new(),
            index: HashMap::new(),
            free: Vec::new(),
            live: Vec::new(),
            ring: Vec::new(),
            tombstones: BTreeSet::new(),
            ring_version: 0,
            sources: HashMap::new(),
        }
    }

    /// The most members the table holds: one view, this node included, is
    /// at most [`MAX_MEMBERS`].
    pub(crate) const CAPACITY: usize = MAX_MEMBERS - 1;

    fn slot(&self, slot: u32) -> Option<&Member> {
        self.slots.get(slot as usize)?.as_ref()
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Member> {
        self.slot(*self.index.get(name)?)
    }

    /// The shared copy of `name`: the table's if known, else a new one.
    pub(crate) fn intern(&self, name: &str) -> Arc<str> {
        self.index.get_key_value(name).map_or_else(|| Arc::from(name), |(k, _)| k.clone())
    }

    /// Members known, tombstones included.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len() >= MemberTable::CAPACITY
    }

    /// Every member, in a deterministic order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Member> {
        self.slots.iter().flatten()
    }

    /// The ring's version: it changes whenever a member joins or leaves the
    /// ring.
    pub(crate) fn ring_version(&self) -> u64 {
        self.ring_version
    }

    /// Adds a member that is not in the table (the caller removed any older
    /// generation first). Returns false, changing nothing, if the table is
    /// full.
    pub(crate) fn insert(
        &mut self,
        id: &NodeId,
        addr: SocketAddr,
        incarnation: u64,
        status: Status,
        now: Instant,
    ) -> bool {
        let name = self.intern(&id.name);
        let Some(slot) = self.add(name, id.generation, addr, incarnation, status, now) else { return false };
        self.reindex(slot, None, Ring::PlaceNow);
        true
    }

    /// Adds members known to be alive at incarnation 0, with names already
    /// shared. Members already known, and any beyond the capacity, are
    /// skipped.
    ///
    /// The ring is sorted once at the end rather than kept sorted member by
    /// member: placing each one would shift the ring behind it, quadratic in
    /// the members added (most of the time it took to give each of 10,000
    /// simulated nodes 10,000 members).
    pub(crate) fn insert_shared(&mut self, members: &[(Arc<str>, u64, SocketAddr)], now: Instant) {
        let mut added = false;
        for (name, generation, addr) in members {
            if let Some(slot) = self.add(name.clone(), *generation, *addr, 0, Status::Alive, now) {
                self.reindex(slot, None, Ring::SortLater);
                added = true;
            }
        }
        if added {
            let slots = &self.slots;
            let mut ring = self.live.clone();
            // One hash per member, not one per comparison.
            ring.sort_by_cached_key(|&s| ring_key(slots[s as usize].as_ref().map_or("", |m| &*m.name)));
            self.ring = ring;
            self.ring_version += 1;
        }
    }

    /// Stores a new member in a slot and its name in the index, and gives
    /// the slot; the caller then puts it in the derived indexes
    /// (`reindex`). `None` if the name is known or the table
    /// is full.
    fn add(
        &mut self,
        name: Arc<str>,
        generation: u64,
        addr: SocketAddr,
        incarnation: u64,
        status: Status,
        now: Instant,
    ) -> Option<u32> {
        if self.index.contains_key(&*name) || self.is_full() {
            return None;
        }
        let member = Member {
            name: name.clone(),
            generation,
            addr,
            incarnation,
            status,
            since: now,
            tags: None,
            live_at: NOT_LIVE,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(member);
                slot
            }
            None => {
                self.slots.push(Some(member));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(name, slot);
        Some(slot)
    }

    /// Changes a known member's state: incarnation, status (its `since`
    /// moves to `now` if the status changes) and address. Returns the status
    /// it had, or `None` if the member is unknown.
    pub(crate) fn set(
        &mut self,
        name: &str,
        incarnation: u64,
        status: Status,
        addr: SocketAddr,
        now: Instant,
    ) -> Option<Status> {
        let slot = *self.index.get(name)?;
        let m = self.slots.get_mut(slot as usize)?.as_mut()?;
        let before = (m.status, m.since);
        m.incarnation = incarnation;
        let moved = m.addr != addr;
        m.addr = addr;
        if moved {
            self.sources.remove(name);
        }
        if m.status != status {
            m.status = status;
            m.since = now;
        }
        self.reindex(slot, Some(before), Ring::PlaceNow);
        Some(before.0)
    }

    /// Records that `name`'s packets come from `source` (it proved it).
    pub(crate) fn set_source(&mut self, name: &str, source: SocketAddr) {
        let Some(m) = self.get(name) else { return };
        if m.addr != source {
            let key = m.name.clone();
            self.sources.insert(key, source);
        }
    }

    /// Where `name`'s packets come from, when that is not its address and
    /// it proved it.
    pub(crate) fn source_of(&self, name: &str) -> Option<SocketAddr> {
        self.sources.get(name).copied()
    }

    /// Records the tags a rumour carried about a known member at
    /// `incarnation`, if they are newer than what the table holds (or the
    /// table holds none yet at that incarnation). Returns whether the
    /// member's tags changed. Tags are not indexed: nothing to reindex.
    pub(crate) fn set_tags(&mut self, name: &str, incarnation: u64, tags: &Tags) -> bool {
        let Some(slot) = self.index.get(name) else { return false };
        let Some(m) = self.slots.get_mut(*slot as usize).and_then(Option::as_mut) else { return false };
        // Tags carried at an incarnation older than the member's when the
        // table learned it still say nothing newer than "no tags yet".
        let newer = match m.tags.as_deref() {
            Some((_, at)) => incarnation > *at,
            None => incarnation >= m.incarnation,
        };
        if !newer {
            return false;
        }
        let changed = m.tags().unwrap_or(&Tags::default()) != tags;
        m.tags = Some(Box::new((tags.clone(), incarnation)));
        changed
    }

    /// Forgets a member.
    pub(crate) fn remove(&mut self, name: &str) -> Option<Member> {
        let slot = *self.index.get(name)?;
        let m = self.slot(slot)?;
        let before = (m.status, m.since);
        // Leave every index first, then the slab.
        if m.is_live() {
            self.unlive(slot);
        } else {
            self.tombstones.remove(&(before.1, slot));
        }
        self.index.remove(name);
        self.sources.remove(name);
        self.free.push(slot);
        self.slots.get_mut(slot as usize)?.take()
    }

    /// The one place the derived indexes change: `slot` had `before`
    /// (status, since), or was not in the table; it now holds its current
    /// state.
    fn reindex(&mut self, slot: u32, before: Option<(Status, Instant)>, ring: Ring) {
        let Some(m) = self.slot(slot) else { return };
        let (live, since) = (m.is_live(), m.since);
        let was_live = before.map(|(status, _)| matches!(status, Status::Alive | Status::Suspect));
        if let Some((_, was_since)) = before.filter(|_| was_live == Some(false)) {
            self.tombstones.remove(&(was_since, slot));
        }
        match (was_live, live) {
            (Some(true), true) => {}
            (Some(true), false) => {
                self.unlive(slot);
                self.tombstones.insert((since, slot));
            }
            (_, false) => {
                self.tombstones.insert((since, slot));
            }
            (_, true) => self.make_live(slot, ring),
        }
    }

    /// Puts `slot` on the live list, and on the ring unless the caller
    /// sorts the ring itself afterwards.
    fn make_live(&mut self, slot: u32, ring: Ring) {
        let at = self.live.len() as u32;
        let Some(m) = self.slots.get_mut(slot as usize).and_then(Option::as_mut) else { return };
        m.live_at = at;
        let name = m.name.clone();
        self.live.push(slot);
        if ring == Ring::SortLater {
            return;
        }
        let at = self.ring_position(ring_key(&name));
        self.ring.insert(at, slot);
        self.ring_version += 1;
    }

    /// Takes `slot` off the live list and the ring.
    fn unlive(&mut self, slot: u32) {
        let Some(m) = self.slots.get_mut(slot as usize).and_then(Option::as_mut) else { return };
        let at = std::mem::replace(&mut m.live_at, NOT_LIVE) as usize;
        let name = m.name.clone();
        if at < self.live.len() {
            self.live.swap_remove(at);
            if let Some(&moved) = self.live.get(at)
                && let Some(Some(other)) = self.slots.get_mut(moved as usize)
            {
                other.live_at = at as u32;
            }
        }
        let at = self.ring_position(ring_key(&name));
        if self.ring.get(at) == Some(&slot) {
            self.ring.remove(at);
            self.ring_version += 1;
        }
    }

    /// Where `key` is, or would be inserted, in the ring.
    fn ring_position(&self, key: (u64, &str)) -> usize {
        self.ring.partition_point(|&s| self.slot(s).is_some_and(|m| ring_key(&m.name) < key))
    }

    /// The first `k` live members after `name` on the ring (whom `name`
    /// heartbeats), never `name` itself, passing over those `skip` names.
    pub(crate) fn successors(&self, name: &str, k: usize, skip: impl Fn(&str) -> bool) -> Vec<Arc<str>> {
        self.ring_walk(name, k, true, skip)
    }

    /// The first `k` live members before `name` on the ring (whom `name`
    /// watches), never `name` itself, passing over those `skip` names.
    pub(crate) fn predecessors(&self, name: &str, k: usize, skip: impl Fn(&str) -> bool) -> Vec<Arc<str>> {
        self.ring_walk(name, k, false, skip)
    }

    fn ring_walk(&self, name: &str, k: usize, forward: bool, skip: impl Fn(&str) -> bool) -> Vec<Arc<str>> {
        let n = self.ring.len();
        let start = self.ring_position(ring_key(name));
        // Skip `name` itself if it is on the ring.
        let here = self.ring.get(start).and_then(|&s| self.slot(s)).is_some_and(|m| *m.name == *name);
        let others = n - usize::from(here);
        let mut out = Vec::with_capacity(k.min(others));
        for i in 0..others {
            if out.len() == k {
                break;
            }
            let at = if forward { (start + usize::from(here) + i) % n } else { (start + n - 1 - i) % n };
            if let Some(m) = self.ring.get(at).and_then(|&s| self.slot(s))
                && !skip(&m.name)
            {
                out.push(m.name.clone());
            }
        }
        out
    }

    /// The number of alive and suspected members.
    pub(crate) fn live_count(&self) -> usize {
        self.live.len()
    }

    /// A random live member.
    pub(crate) fn random_live(&self, rng: &mut ChaCha8Rng) -> Option<&Member> {
        if self.live.is_empty() {
            return None;
        }
        let slot = *self.live.get(rng.random_range(0..self.live.len()))?;
        self.slot(slot)
    }

    /// Up to `n` distinct random members satisfying `keep`. Draws from the
    /// live members first (constant time per draw); falls back to scanning
    /// every member when few qualify.
    pub(crate) fn pick(&self, rng: &mut ChaCha8Rng, n: usize, keep: impl Fn(&Member) -> bool) -> Vec<Arc<str>> {
        let mut out: Vec<Arc<str>> = Vec::with_capacity(n);
        if n == 0 {
            return out;
        }
        for _ in 0..(4 * n) {
            if out.len() == n {
                return out;
            }
            let Some(m) = self.random_live(rng) else { break };
            if !out.contains(&m.name) && keep(m) {
                out.push(m.name.clone());
            }
        }
        let mut rest: Vec<Arc<str>> =
            self.iter().filter(|m| keep(m) && !out.contains(&m.name)).map(|m| m.name.clone()).collect();
        while out.len() < n && !rest.is_empty() {
            let j = rng.random_range(0..rest.len());
            out.push(rest.swap_remove(j));
        }
        out
    }

    /// Dead and left members, longest dead first.
    pub(crate) fn tombstones(&self) -> impl Iterator<Item = &Member> {
        self.tombstones.iter().filter_map(|&(_, slot)| self.slot(slot))
    }

    /// The number of tombstones.
    pub(crate) fn tombstone_count(&self) -> usize {
        self.tombstones.len()
    }

    /// Checks every index against the slab (tests and debug builds).
    #[cfg(test)]
    pub(crate) fn check(&self) {
        let live: BTreeSet<u32> = self.live.iter().copied().collect();
        let ring: BTreeSet<u32> = self.ring.iter().copied().collect();
        assert_eq!(live.len(), self.live.len());
        assert_eq!(live, ring);
        for (i, m) in self.slots.iter().enumerate() {
            let Some(m) = m else { continue };
            let slot = i as u32;
            assert_eq!(self.index.get(&m.name), Some(&slot));
            assert_eq!(m.is_live(), live.contains(&slot), "{}", m.name);
            if m.is_live() {
                assert_eq!(self.live[m.live_at as usize], slot);
            } else {
                assert!(self.tombstones.contains(&(m.since, slot)));
            }
        }
        assert_eq!(self.tombstones.len() + self.live.len(), self.index.len());
        let keys: Vec<(u64, &str)> =
            self.ring.iter().map(|&s| self.slot(s).map(|m| ring_key(&m.name)).unwrap()).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "ring out of order");
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn addr(i: u8) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, i], 7946))
    }

    #[test]
    fn random_transitions_keep_every_index_right() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut t = MemberTable::new();
        let statuses = [Status::Alive, Status::Suspect, Status::Dead, Status::Left];
        for step in 0..5_000u64 {
            let name = format!("m{}", rng.random_range(0..40));
            let now = Instant::from_millis(step);
            match rng.random_range(0..4) {
                0 => {
                    t.remove(&name);
                }
                1 if t.get(&name).is_none() => {
                    let status = statuses[rng.random_range(0..4)];
                    assert!(t.insert(&NodeId::new(name, 1), addr(1), 0, status, now));
                }
                _ => {
                    let status = statuses[rng.random_range(0..4)];
                    t.set(&name, step, status, addr(2), now);
                }
            }
            t.check();
        }
    }

    #[test]
    fn the_ring_gives_successors_and_predecessors_without_the_asker() {
        let mut t = MemberTable::new();
        for i in 0..6 {
            t.insert(&NodeId::new(format!("n{i}"), 1), addr(i), 0, Status::Alive, Instant::ZERO);
        }
        // Every member's successors list each member that watches it.
        for i in 0..6 {
            let me = format!("n{i}");
            let succ = t.successors(&me, 2, |_| false);
            let pred = t.predecessors(&me, 2, |_| false);
            assert_eq!((succ.len(), pred.len()), (2, 2));
            assert!(!succ.iter().chain(&pred).any(|n| **n == *me));
            for s in &succ {
                assert!(
                    t.predecessors(s, 2, |_| false).iter().any(|p| **p == *me),
                    "{me} heartbeats {s}, which must watch it"
                );
            }
        }
        // An asker that is not on the ring (this node) sees everyone.
        assert_eq!(t.successors("outsider", 10, |_| false).len(), 6);
        assert_eq!(t.predecessors("outsider", 10, |_| false).len(), 6);
        // Dead members leave the ring and its version moves.
        let v = t.ring_version();
        t.set("n3", 1, Status::Dead, addr(3), Instant::from_secs(1));
        assert_ne!(t.ring_version(), v);
        assert!(!t.successors("n0", 10, |_| false).iter().any(|n| &**n == "n3"));
        assert_eq!(t.tombstones().map(|m| m.name.to_string()).collect::<Vec<_>>(), ["n3"]);
        t.check();
    }

    #[test]
    fn a_batch_is_placed_as_one_member_at_a_time_would_be() {
        // A table that already holds members, one of them dead, then a
        // batch with a member it knows and one given twice.
        let start = |t: &mut MemberTable| {
            for i in 0..5 {
                t.insert(&NodeId::new(format!("old{i}"), 1), addr(1), 0, Status::Alive, Instant::ZERO);
            }
            t.set("old2", 1, Status::Dead, addr(1), Instant::from_secs(1));
        };
        let mut names: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
        names.extend(["old1".to_owned(), "m7".to_owned()]);
        let shared: Vec<(Arc<str>, u64, SocketAddr)> =
            names.iter().map(|n| (Arc::from(n.as_str()), 1, addr(2))).collect();
        let (mut batch, mut single) = (MemberTable::new(), MemberTable::new());
        start(&mut batch);
        start(&mut single);
        let version = batch.ring_version();
        batch.insert_shared(&shared, Instant::from_secs(2));
        for (name, generation, a) in &shared {
            single.insert(&NodeId::new(&**name, *generation), *a, 0, Status::Alive, Instant::from_secs(2));
        }
        batch.check();
        single.check();
        assert_eq!(batch.len(), 5 + 300);
        assert_eq!(batch.live, single.live, "the live list, in the same order");
        assert_eq!(batch.ring, single.ring, "the ring, in the same order");
        let slots =
            |t: &MemberTable| t.slots.iter().map(|m| m.as_ref().map(|m| m.name.to_string())).collect::<Vec<_>>();
        assert_eq!(slots(&batch), slots(&single));
        assert_ne!(batch.ring_version(), version, "the ring changed, and its version says so");
        // Nothing new: the ring and its version stay.
        let version = batch.ring_version();
        batch.insert_shared(&shared, Instant::from_secs(3));
        assert_eq!(batch.ring_version(), version);
        assert_eq!(batch.ring, single.ring);
    }

    #[test]
    fn the_table_refuses_members_beyond_its_capacity() {
        let mut t = MemberTable::new();
        let shared: Vec<(Arc<str>, u64, SocketAddr)> =
            (0..MemberTable::CAPACITY + 5).map(|i| (Arc::from(format!("m{i}")), 1, addr(1))).collect();
        t.insert_shared(&shared, Instant::ZERO);
        assert_eq!(t.len(), MemberTable::CAPACITY);
        assert!(!t.insert(&NodeId::new("one-more", 1), addr(1), 0, Status::Alive, Instant::ZERO));
    }
}
