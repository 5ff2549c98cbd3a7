//! The listener's connection slots: at most a fixed number of inbound
//! connections at once, and when they run out, the oldest connection that
//! has not sent its frame's header yet is closed to make room.
//!
//! A peer with something to say says it at once (its header is in the
//! first segment), so a connection still silent when a new one arrives is
//! the likeliest to be idle, or a slow attacker's: holding many connections
//! open and saying nothing cannot keep a joining member out. A connection
//! past its header ([`Slot::settled`]) keeps its slot until it ends.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

/// The slots. Cheap to clone: the state is shared.
#[derive(Debug, Clone)]
pub(crate) struct Slots {
    max: usize,
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// Slots taken.
    open: usize,
    next: u64,
    /// Connections still waiting for their header, oldest first, with the
    /// way to tell each to close.
    silent: BTreeMap<u64, oneshot::Sender<()>>,
    /// Connections told to close whose slots were already given away.
    evicted: BTreeSet<u64>,
}

/// One connection's slot, released when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    id: u64,
    state: Arc<Mutex<State>>,
    evicted: Option<oneshot::Receiver<()>>,
}

impl Slots {
    pub(crate) fn new(max: usize) -> Slots {
        Slots { max: max.max(1), state: Arc::new(Mutex::new(State::default())) }
    }

    /// A slot for a new connection, and whether a silent one was closed to
    /// make room; `None` if every slot is held by a connection past its
    /// header.
    pub(crate) fn admit(&self) -> Option<(Slot, bool)> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut evicted = false;
        if s.open >= self.max {
            let (old, close) = s.silent.pop_first()?;
            s.evicted.insert(old);
            // The evicted connection's slot is free from now on; its task
            // ends when it sees the signal (or the dropped sender).
            let _ = close.send(());
            s.open -= 1;
            evicted = true;
        }
        s.open += 1;
        s.next += 1;
        let id = s.next;
        let (tx, rx) = oneshot::channel();
        s.silent.insert(id, tx);
        Some((Slot { id, state: self.state.clone(), evicted: Some(rx) }, evicted))
    }

    /// Slots taken.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).open
    }
}

impl Slot {
    /// Resolves when this connection is told to make room (at most once).
    pub(crate) async fn evicted(&mut self) {
        let Some(rx) = self.evicted.take() else { return std::future::pending().await };
        // A dropped sender means evicted too (the entry was taken out).
        let _ = rx.await;
    }

    /// The connection sent its header: it is no longer the first to go
    /// (if it was told to make room just as its header arrived, its slot
    /// stays given away, and the slots are one over for as long as it
    /// lasts).
    pub(crate) fn settled(&mut self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.silent.remove(&self.id);
        self.evicted = None;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.silent.remove(&self.id);
        // An evicted slot was counted out when it was given away.
        if !s.evicted.remove(&self.id) {
            s.open = s.open.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_silent_connection_makes_room_and_settled_ones_keep_theirs() {
        let slots = Slots::new(3);
        let (mut a, _) = slots.admit().unwrap();
        let (b, _) = slots.admit().unwrap();
        let (c, _) = slots.admit().unwrap();
        a.settled();
        // Full: the oldest silent one (b) goes.
        let (d, evicted) = slots.admit().unwrap();
        assert!(evicted);
        assert_eq!(slots.open(), 3);
        drop(b);
        assert_eq!(slots.open(), 3, "an evicted slot is not released twice");
        // c goes next, then d; a, settled, stays.
        let (e, _) = slots.admit().unwrap();
        let (mut f, _) = slots.admit().unwrap();
        drop((c, d));
        assert_eq!(slots.open(), 3);
        f.settled();
        let mut e = e;
        e.settled();
        assert!(slots.admit().is_none(), "every slot past its header");
        drop(a);
        assert_eq!(slots.open(), 2);
        assert!(slots.admit().is_some());
        drop((e, f));
    }
}
