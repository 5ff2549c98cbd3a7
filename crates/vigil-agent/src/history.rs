//! The event history behind `GET /v1/events`: every event gets the next id,
//! the newest ones are kept for clients that resume, and live ones are
//! passed on to whoever follows.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::broadcast;

/// One event as served: its id (1, 2, ...) and its JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its id: 1, 2, ... in the order events were recorded.
    pub id: u64,
    /// The record as a JSON line.
    pub json: Arc<str>,
}

/// What a client resuming after an id gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    /// Events after the id that are still kept, oldest first.
    pub entries: Vec<Entry>,
    /// Events after the id that are no longer kept (the client missed them).
    pub missed: u64,
}

#[derive(Debug)]
struct Ring {
    entries: VecDeque<Entry>,
    next_id: u64,
}

/// A bounded history of events, shared by the recorder and the HTTP
/// handlers.
#[derive(Debug)]
pub struct History {
    ring: Mutex<Ring>,
    capacity: usize,
    live: broadcast::Sender<Entry>,
}

impl History {
    /// A history keeping the newest `capacity` events (at least 1).
    pub fn new(capacity: usize) -> History {
        let capacity = capacity.max(1);
        let (live, _) = broadcast::channel(1024);
        History { ring: Mutex::new(Ring { entries: VecDeque::new(), next_id: 1 }), capacity, live }
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records an event and passes it to followers; returns its id.
    pub fn push(&self, json: String) -> u64 {
        let entry = {
            let mut ring = self.ring();
            let entry = Entry { id: ring.next_id, json: json.into() };
            ring.next_id += 1;
            if ring.entries.len() == self.capacity {
                ring.entries.pop_front();
            }
            ring.entries.push_back(entry.clone());
            entry
        };
        // Nobody following is not an error.
        let _ = self.live.send(entry.clone());
        entry.id
    }

    /// Follows new events. Subscribe before [`History::after`], then skip
    /// ids already seen: nothing falls between the two.
    pub fn subscribe(&self) -> broadcast::Receiver<Entry> {
        self.live.subscribe()
    }

    /// The events after `id` (all kept ones for 0), and how many of those
    /// are gone.
    pub fn after(&self, id: u64) -> Resume {
        let ring = self.ring();
        let entries: Vec<Entry> = ring.entries.iter().filter(|e| e.id > id).cloned().collect();
        let first_kept = ring.entries.front().map_or(ring.next_id, |e| e.id);
        // Ids id+1 .. first_kept-1 were dropped (none if the client asked
        // for nothing older than what is kept).
        let missed = first_kept.saturating_sub(id.saturating_add(1)).min(ring.next_id.saturating_sub(1));
        Resume { entries, missed }
    }

    /// The id of the newest event (0 before the first).
    pub fn last_id(&self) -> u64 {
        self.ring().next_id - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_resumes_after_its_last_id_and_learns_what_it_missed() {
        let h = History::new(3);
        assert_eq!(h.after(0), Resume { entries: vec![], missed: 0 });
        for i in 1..=5 {
            assert_eq!(h.push(format!("{{\"n\":{i}}}")), i);
        }
        // Kept: 3, 4, 5.
        let ids = |r: &Resume| r.entries.iter().map(|e| e.id).collect::<Vec<_>>();
        let r = h.after(4);
        assert_eq!((ids(&r), r.missed), (vec![5], 0));
        let r = h.after(1);
        assert_eq!((ids(&r), r.missed), (vec![3, 4, 5], 1), "event 2 is gone");
        let r = h.after(0);
        assert_eq!((ids(&r), r.missed), (vec![3, 4, 5], 2), "events 1 and 2 are gone");
        let r = h.after(5);
        assert_eq!((ids(&r), r.missed), (vec![], 0));
        // An id from the future (another agent's, or a restarted one's).
        let r = h.after(99);
        assert_eq!((ids(&r), r.missed), (vec![], 0));
        assert_eq!(h.last_id(), 5);
    }

    #[test]
    fn followers_get_what_is_pushed_after_they_subscribe() {
        let h = History::new(10);
        h.push("{}".into());
        let mut rx = h.subscribe();
        h.push("{\"b\":1}".into());
        let e = rx.try_recv().unwrap();
        assert_eq!((e.id, &*e.json), (2, "{\"b\":1}"));
        assert!(rx.try_recv().is_err());
    }
}
