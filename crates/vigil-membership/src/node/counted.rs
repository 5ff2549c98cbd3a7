//! A map by member name that counts its changes: what the picture is
//! built from, where the count is part of the picture's version (see
//! `Node::picture`), so that a change to it is a change to the picture.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Entries by member name, with a count of the changes made to them.
#[derive(Debug, Clone)]
pub(super) struct Counted<V> {
    entries: BTreeMap<Arc<str>, V>,
    changes: u64,
}

impl<V> Default for Counted<V> {
    fn default() -> Self {
        Counted { entries: BTreeMap::new(), changes: 0 }
    }
}

impl<V> Counted<V> {
    /// How many changes were made (wrapping).
    pub(super) fn changes(&self) -> u64 {
        self.changes
    }

    /// The entry for `name`.
    pub(super) fn get(&self, name: &str) -> Option<&V> {
        self.entries.get(name)
    }

    /// Every entry, by name.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &V)> {
        self.entries.iter()
    }

    /// Sets `name`'s entry to `value`: a change if it differs.
    pub(super) fn insert(&mut self, name: Arc<str>, value: V)
    where
        V: PartialEq,
    {
        if self.entries.get(&name) != Some(&value) {
            self.entries.insert(name, value);
            self.count();
        }
    }

    /// Changes `name`'s entry (made with `new` if there is none) with
    /// `change`, which says whether it changed anything.
    pub(super) fn update(&mut self, name: Arc<str>, new: impl FnOnce() -> V, change: impl FnOnce(&mut V) -> bool) {
        if change(self.entries.entry(name).or_insert_with(new)) {
            self.count();
        }
    }

    /// Removes `name`'s entry: a change if there was one.
    pub(super) fn remove(&mut self, name: &str) {
        if self.entries.remove(name).is_some() {
            self.count();
        }
    }

    fn count(&mut self) {
        self.changes = self.changes.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_changes_an_entry_is_counted() {
        let mut c: Counted<u64> = Counted::default();
        c.insert("a".into(), 1);
        c.insert("a".into(), 1);
        assert_eq!((c.get("a"), c.changes()), (Some(&1), 1), "the same value again is no change");
        c.update("a".into(), || 0, |v| std::mem::replace(v, 2) != 2);
        c.update("a".into(), || 0, |v| std::mem::replace(v, 2) != 2);
        assert_eq!((c.get("a"), c.changes()), (Some(&2), 2));
        c.remove("b");
        assert_eq!(c.changes(), 2, "removing nothing is no change");
        c.remove("a");
        assert_eq!((c.get("a"), c.changes(), c.iter().count()), (None, 3, 0));
    }
}
