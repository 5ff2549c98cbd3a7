//! Reachability rows, while a downing strategy decides: the row this node
//! tells the others (the members it finds unreachable itself, those that
//! flapped lately, those its outlier detection ejected), and the rows the
//! others told it themselves.
//!
//! A row is first-hand or it is nothing: the node takes a member's row
//! only from that member (`node/downing.rs` checks the packet), so a
//! stranger cannot put a record in anyone's picture, and a member holding
//! the key speaks for itself alone. This module keeps the rows, their
//! versions and pages, and who is owed this node's current row; what the
//! rows mean is [`crate::downing`]'s.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use vigil_detector::Instant;

use crate::message::{MAX_MEMBERS, Mark, NodeId, RowEntry};

/// Quick repeats of a changed row after its first sending.
const REPEATS: u8 = 1;

/// One member of a row: its name, the generation the row is about, and the
/// mark.
pub(crate) type Entry = (Arc<str>, u64, Mark);

/// A row another member told this node.
#[derive(Debug, Clone)]
struct Row {
    generation: u64,
    version: u64,
    entries: Vec<Entry>,
    /// A newer version arriving in pages.
    partial: Option<Partial>,
}

/// A row's pages as they arrive.
#[derive(Debug, Clone)]
struct Partial {
    generation: u64,
    version: u64,
    pages: u16,
    got: BTreeMap<u16, Vec<Entry>>,
    entries: usize,
}

/// What this node tells, and what it was told. See the module
/// documentation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rows {
    /// This node's row as last published: unreachable and flapped
    /// members.
    own: BTreeMap<Arc<str>, (u64, Mark)>,
    /// The members this node's outlier detection ejects, as last
    /// published (a fact of its own, beside whether they are reachable).
    ejects: BTreeMap<Arc<str>, u64>,
    /// When each flapped entry of the own row stops being one.
    flap_ends: BTreeMap<Arc<str>, Instant>,
    version: u64,
    /// Members owed this node's current row.
    owed: BTreeSet<Arc<str>>,
    /// When the row is next sent to everyone (again).
    send_at: Option<Instant>,
    /// Quick repeats still due after a change (a member that missed the
    /// first hears one of them).
    repeats_left: u8,
    theirs: HashMap<Arc<str>, Row>,
    /// Grows with every change of any row: part of the picture's version.
    changes: u64,
}

/// What a new own row changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OwnChange {
    /// The published row changed.
    pub(crate) changed: bool,
    /// A member left the unreachable part of it (it answered again): a
    /// flap, for the stability gate.
    pub(crate) flapped: bool,
}

impl Rows {
    /// Takes this node's row as it is now (`current`: the unreachable
    /// members, with their generations; `ejects`: those its outlier
    /// detection ejects), and keeps the members that left its unreachable
    /// part as flapped for `memory`; `live` says which members still count.
    /// Whether the published row changed.
    pub(crate) fn set_own(
        &mut self,
        now: Instant,
        current: BTreeMap<Arc<str>, u64>,
        ejects: BTreeMap<Arc<str>, u64>,
        memory: Duration,
        live: impl Fn(&str, u64) -> bool,
    ) -> OwnChange {
        let current: BTreeMap<Arc<str>, (u64, Mark)> =
            current.into_iter().map(|(n, g)| (n, (g, Mark::Unreachable))).collect();
        let mut change = OwnChange::default();
        for (name, (generation, mark)) in &self.own {
            let still = current.get(name).is_some_and(|(g, m)| g == generation && *m == Mark::Unreachable);
            if *mark == Mark::Unreachable && !still && live(name, *generation) {
                change.flapped = true;
                self.flap_ends.insert(name.clone(), now.saturating_add(memory));
            }
        }
        self.flap_ends.retain(|_, end| *end > now);
        let mut next = current;
        for name in self.flap_ends.keys() {
            let generation = self.own.get(name).map(|(g, _)| *g);
            if let Some(g) = generation
                && !next.contains_key(name)
                && live(name, g)
            {
                next.insert(name.clone(), (g, Mark::Flapped));
            }
        }
        // A member that flapped and is unreachable again is simply so.
        self.flap_ends.retain(|name, _| next.get(name).is_some_and(|(_, m)| *m == Mark::Flapped));
        if next != self.own || ejects != self.ejects {
            // A member that left the row because it is no longer live (it
            // was declared dead, or left) goes without a word: every member
            // drops it from its picture anyway.
            let gone_only = ejects == self.ejects
                && next.iter().all(|(n, v)| self.own.get(n) == Some(v))
                && self.own.iter().all(|(n, (g, _))| next.contains_key(n) || !live(n, *g));
            self.own = next;
            self.ejects = ejects;
            self.version += 1;
            self.changes += 1;
            if !gone_only {
                change.changed = true;
                self.repeats_left = REPEATS;
            }
        }
        change
    }

    /// Whether `name` left the unreachable part of this node's row (it
    /// answered again) within `within` before `now`, given how long a
    /// flap is remembered (`memory`).
    pub(crate) fn flapped_within(&self, name: &str, now: Instant, within: Duration, memory: Duration) -> bool {
        self.flap_ends.get(name).is_some_and(|end| end.saturating_sub(memory).saturating_add(within) >= now)
    }

    /// This node's row as published: every unreachable and flapped member,
    /// in name order, then every member it ejects.
    pub(crate) fn own(&self) -> impl Iterator<Item = (&Arc<str>, u64, Mark)> {
        self.own.iter().map(|(n, (g, m))| (n, *g, *m)).chain(self.ejects.iter().map(|(n, g)| (n, *g, Mark::Ejected)))
    }

    /// This node's row in pages of at most `per_page` entries (at least
    /// one page, empty for an empty row), with its version.
    pub(crate) fn pages(&self, per_page: usize) -> (u64, Vec<Vec<RowEntry>>) {
        let all: Vec<RowEntry> =
            self.own().map(|(n, g, mark)| RowEntry { id: NodeId::new(n.to_string(), g), mark }).collect();
        let pages =
            if all.is_empty() { vec![Vec::new()] } else { all.chunks(per_page.max(1)).map(<[_]>::to_vec).collect() };
        (self.version, pages)
    }

    /// `names` are owed this node's current row.
    pub(crate) fn owe(&mut self, names: impl IntoIterator<Item = Arc<str>>) {
        self.owed.extend(names);
    }

    /// Up to `n` members owed the row, taken off the list.
    pub(crate) fn take_owed(&mut self, n: usize) -> Vec<Arc<str>> {
        let taken: Vec<Arc<str>> = self.owed.iter().take(n).cloned().collect();
        for name in &taken {
            self.owed.remove(name);
        }
        taken
    }

    /// Whether some member is still owed the row.
    pub(crate) fn any_owed(&self) -> bool {
        !self.owed.is_empty()
    }

    /// Whether everyone is to be sent the row now. A change is sent
    /// `batch` after it (so that the changes of one moment go out once),
    /// once more `gap` later, then every `slow` while the row says
    /// anything.
    pub(crate) fn send_due(
        &mut self,
        now: Instant,
        changed: bool,
        batch: Duration,
        gap: Duration,
        slow: Duration,
    ) -> bool {
        if changed {
            let soon = now.saturating_add(batch);
            if self.send_at.is_none_or(|at| at > soon) {
                self.send_at = Some(soon);
            }
        }
        match self.send_at {
            Some(at) if at <= now => {
                let says = !self.own.is_empty() || !self.ejects.is_empty();
                self.send_at = if self.repeats_left > 0 {
                    self.repeats_left -= 1;
                    Some(now.saturating_add(gap))
                } else {
                    says.then(|| now.saturating_add(slow))
                };
                true
            }
            _ => false,
        }
    }

    /// When the row is next sent to everyone, if it will be.
    pub(crate) fn send_at(&self) -> Option<Instant> {
        self.send_at
    }

    /// A page of `observer`'s row (at `generation`), as it sent it; names
    /// are already the table's (unknown ones dropped by the caller).
    /// Whether the row as this node holds it changed.
    pub(crate) fn receive(
        &mut self,
        observer: Arc<str>,
        generation: u64,
        version: u64,
        (page, pages): (u16, u16),
        entries: Vec<Entry>,
    ) -> bool {
        let row =
            self.theirs.entry(observer).or_insert(Row { generation, version: 0, entries: Vec::new(), partial: None });
        if generation < row.generation || (generation == row.generation && version < row.version) {
            return false;
        }
        let newer_generation = generation > row.generation;
        if !newer_generation && version == row.version && row.partial.is_none() && !row.entries.is_empty() {
            // A refresh of the row it has.
            return false;
        }
        let complete = if pages <= 1 {
            Some(entries)
        } else {
            let partial = match row.partial.take() {
                Some(p) if p.generation == generation && p.version == version => p,
                _ => Partial { generation, version, pages, got: BTreeMap::new(), entries: 0 },
            };
            let mut partial = partial;
            if partial.pages != pages {
                return false;
            }
            if !partial.got.contains_key(&page) {
                partial.entries += entries.len();
                partial.got.insert(page, entries);
            }
            if partial.entries > MAX_MEMBERS {
                // More than a membership: not a row.
                return false;
            }
            if partial.got.len() == usize::from(pages) {
                Some(partial.got.into_values().flatten().collect())
            } else {
                row.partial = Some(partial);
                None
            }
        };
        let Some(mut entries) = complete else { return false };
        entries.sort_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));
        entries.dedup_by(|a, b| a.0 == b.0 && a.2 == b.2);
        let changed = newer_generation || entries != row.entries || version != row.version;
        let differs = newer_generation || entries != row.entries;
        row.generation = generation;
        row.version = version;
        row.entries = entries;
        if differs {
            self.changes += 1;
        }
        changed && differs
    }

    /// `observer`'s row, if it told one, with the generation it told it in.
    pub(crate) fn row(&self, observer: &str) -> Option<(u64, &[Entry])> {
        self.theirs.get(observer).map(|r| (r.generation, r.entries.as_slice()))
    }

    /// Whether an observer other than `except` holds `name` in
    /// `generation` in its row, unreachable or flapped.
    pub(crate) fn held_by_another(&self, name: &str, generation: u64, except: &str) -> bool {
        self.theirs
            .iter()
            .filter(|(observer, _)| ***observer != *except)
            .any(|(_, row)| row.entries.iter().any(|(n, g, m)| **n == *name && *g == generation && *m != Mark::Ejected))
    }

    /// Forgets the rows of members `keep` says no longer count.
    pub(crate) fn prune(&mut self, keep: impl Fn(&str, u64) -> bool) {
        let before = self.theirs.len();
        self.theirs.retain(|name, row| keep(name, row.generation));
        if self.theirs.len() != before {
            self.changes += 1;
        }
    }

    /// Grows with every change of any row.
    pub(crate) fn changes(&self) -> u64 {
        self.changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(name: &str, mark: Mark) -> Entry {
        (Arc::from(name), 1, mark)
    }

    #[test]
    fn a_member_that_answers_again_stays_in_the_row_as_flapped_for_a_while() {
        let mut r = Rows::default();
        let t = Instant::from_secs(10);
        let memory = Duration::from_secs(60);
        let now_unreachable: BTreeMap<Arc<str>, u64> = [(Arc::from("b"), 1)].into();
        let none = BTreeMap::new;
        let c = r.set_own(t, now_unreachable.clone(), none(), memory, |_, _| true);
        assert!(c.changed && !c.flapped);
        let c = r.set_own(t + Duration::from_secs(5), none(), none(), memory, |_, _| true);
        assert!(c.changed && c.flapped);
        assert_eq!(r.own().map(|(n, _, m)| (n.to_string(), m)).collect::<Vec<_>>(), [("b".to_owned(), Mark::Flapped)]);
        // Unreachable again: no longer a flap, simply unreachable.
        r.set_own(t + Duration::from_secs(6), now_unreachable, none(), memory, |_, _| true);
        assert_eq!(r.own().map(|(_, _, m)| m).collect::<Vec<_>>(), [Mark::Unreachable]);
        // Ejected too: a fact of its own, beside reachability.
        r.set_own(t + Duration::from_secs(7), none(), [(Arc::from("b"), 1)].into(), memory, |_, _| true);
        let marks: Vec<Mark> = r.own().map(|(_, _, m)| m).collect();
        assert_eq!(marks, [Mark::Flapped, Mark::Ejected]);
        // The memory runs out.
        let c = r.set_own(t + Duration::from_secs(70), none(), none(), memory, |_, _| true);
        assert!(c.changed && r.own().next().is_none());
    }

    #[test]
    fn rows_in_pages_are_taken_whole_and_stale_versions_are_not() {
        let mut r = Rows::default();
        let a: Arc<str> = Arc::from("a");
        assert!(!r.receive(a.clone(), 1, 2, (0, 2), vec![e("b", Mark::Unreachable)]), "half a row is no row");
        assert!(r.row("a").unwrap().1.is_empty());
        assert!(r.receive(a.clone(), 1, 2, (1, 2), vec![e("c", Mark::Unreachable)]));
        assert_eq!(r.row("a").unwrap().1.len(), 2);
        // An older version changes nothing; a refresh of the same neither.
        assert!(!r.receive(a.clone(), 1, 1, (0, 1), vec![]));
        assert!(!r.receive(a.clone(), 1, 2, (0, 2), vec![e("b", Mark::Unreachable)]));
        assert_eq!(r.row("a").unwrap().1.len(), 2);
        // A newer generation replaces it whatever its version.
        assert!(r.receive(a.clone(), 2, 0, (0, 1), vec![]));
        assert_eq!(r.row("a"), Some((2, &[][..])));
        assert!(!r.receive(a, 1, 9, (0, 1), vec![e("b", Mark::Unreachable)]), "an older generation's row");
    }

    #[test]
    fn a_change_is_sent_after_a_moment_repeated_twice_then_slowly_while_it_says_anything() {
        let mut r = Rows::default();
        let t = Instant::from_secs(1);
        let (batch, gap, slow) = (Duration::from_secs(1), Duration::from_secs(2), Duration::from_secs(20));
        let s = Duration::from_secs;
        assert!(!r.send_due(t, false, batch, gap, slow), "an empty row that never said anything");
        let c = r.set_own(t, [(Arc::from("b"), 1)].into(), BTreeMap::new(), s(60), |_, _| true);
        assert!(!r.send_due(t, c.changed, batch, gap, slow), "a moment later");
        // A member that is no longer live leaves the row without a word:
        // every member drops it from its picture anyway.
        let quiet = r.set_own(t, [(Arc::from("b"), 1)].into(), BTreeMap::new(), s(60), |_, _| true);
        assert!(!quiet.changed);
        // Another change within the moment goes out with the first.
        let c =
            r.set_own(t + s(0), [(Arc::from("b"), 1), (Arc::from("c"), 1)].into(), BTreeMap::new(), s(60), |_, _| true);
        assert!(!r.send_due(t, c.changed, batch, gap, slow));
        let times: Vec<u64> = (0..60).filter(|k| r.send_due(t + s(*k), false, batch, gap, slow)).collect();
        assert_eq!(times, [1, 3, 23, 43], "after the moment, a repeat, then every 20 s");
        r.owe([Arc::from("x"), Arc::from("y"), Arc::from("z")]);
        assert_eq!(r.take_owed(2).len(), 2);
        assert!(r.any_owed());
        assert_eq!(r.take_owed(2).len(), 1);
        let (version, pages) = r.pages(60);
        assert_eq!((version, pages.len(), pages[0].len()), (2, 1, 2));
    }
}
