//! Anti-replay: which sealed packets of one sender have been seen.
//!
//! Every sealed packet carries its sender's session (random per process
//! start, so per generation) and a counter that the sender increments for
//! each packet. A receiver keeps, per session, the highest counter seen and
//! a bitmap of the [`WINDOW`] counters below it, as WireGuard and DTLS do:
//! a counter seen before, or too old to tell, is rejected. Packets may
//! arrive out of order within the window. The window only moves after a
//! packet authenticated, so a forger cannot push it forward.

use std::collections::{HashMap, VecDeque};

/// Counters below the highest seen that are still told apart.
pub const WINDOW: u64 = 1024;

const WORDS: usize = (WINDOW / 64) as usize;

/// One session's window.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Window {
    /// The highest counter seen.
    top: u64,
    /// Bit `i` of the ring marks counter `c` seen, for `top - WINDOW < c <=
    /// top`, at position `c % WINDOW`.
    seen: [u64; WORDS],
}

/// What a window says of a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not seen before: accept (and remember).
    Fresh,
    /// Seen before: a replay.
    Replayed,
    /// Older than the window can tell.
    TooOld,
}

impl Window {
    fn new(counter: u64) -> Window {
        let mut w = Window { top: counter, seen: [0; WORDS] };
        w.mark(counter);
        w
    }

    fn bit(counter: u64) -> (usize, u64) {
        let i = counter % WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    fn mark(&mut self, counter: u64) {
        let (w, b) = Window::bit(counter);
        self.seen[w] |= b;
    }

    fn check(&self, counter: u64) -> Verdict {
        if counter > self.top {
            return Verdict::Fresh;
        }
        if self.top - counter >= WINDOW {
            return Verdict::TooOld;
        }
        let (w, b) = Window::bit(counter);
        if self.seen[w] & b != 0 { Verdict::Replayed } else { Verdict::Fresh }
    }

    /// Records `counter`, which [`check`](Self::check) found fresh.
    fn accept(&mut self, counter: u64) {
        if counter > self.top {
            let ahead = counter - self.top;
            if ahead >= WINDOW {
                self.seen = [0; WORDS];
            } else {
                // Clear the positions the window slides over.
                for c in self.top + 1..counter {
                    let (w, b) = Window::bit(c);
                    self.seen[w] &= !b;
                }
            }
            self.top = counter;
        }
        self.mark(counter);
    }
}

/// The windows of every session heard from, bounded: beyond `capacity`
/// sessions the oldest heard from first is forgotten (a member that
/// restarted long ago).
#[derive(Debug, Clone)]
pub struct ReplayGuard {
    windows: HashMap<u64, Window>,
    order: VecDeque<u64>,
    capacity: usize,
}

impl ReplayGuard {
    /// A guard remembering at most `capacity` sessions (at least one).
    pub fn new(capacity: usize) -> ReplayGuard {
        ReplayGuard { windows: HashMap::new(), order: VecDeque::new(), capacity: capacity.max(1) }
    }

    /// What the guard says of `counter` from `session`, without recording
    /// it (call [`accept`](Self::accept) once the packet authenticated).
    pub fn check(&self, session: u64, counter: u64) -> Verdict {
        self.windows.get(&session).map_or(Verdict::Fresh, |w| w.check(counter))
    }

    /// Records an authenticated, fresh `counter` of `session`.
    pub fn accept(&mut self, session: u64, counter: u64) {
        if let Some(w) = self.windows.get_mut(&session) {
            w.accept(counter);
            return;
        }
        if self.windows.len() >= self.capacity
            && let Some(old) = self.order.pop_front()
        {
            self.windows.remove(&old);
        }
        self.windows.insert(session, Window::new(counter));
        self.order.push_back(session);
    }

    /// Sessions remembered.
    pub fn sessions(&self) -> usize {
        self.windows.len()
    }

    /// Heap bytes held (about 140 per session).
    pub fn heap_bytes(&self) -> usize {
        self.windows.capacity() * (size_of::<(u64, Window)>() + 1) + self.order.capacity() * size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(g: &mut ReplayGuard, s: u64, c: u64) -> Verdict {
        let v = g.check(s, c);
        if v == Verdict::Fresh {
            g.accept(s, c);
        }
        v
    }

    #[test]
    fn fresh_replayed_and_too_old_against_a_naive_set() {
        // A pseudo-random order of counters, with repeats: the window agrees
        // with a set of everything seen wherever it can tell.
        let mut g = ReplayGuard::new(4);
        let mut seen = std::collections::BTreeSet::new();
        let mut top = 0u64;
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let c = 1 + (x >> 33) % 5_000;
            let v = take(&mut g, 9, c);
            let want = if seen.contains(&c) {
                Verdict::Replayed
            } else if top >= WINDOW && c <= top - WINDOW {
                Verdict::TooOld
            } else {
                Verdict::Fresh
            };
            // Too old may also be a replay the window forgot: both refuse.
            if want == Verdict::Replayed && v == Verdict::TooOld {
                continue;
            }
            assert_eq!(v, want, "counter {c}, top {top}");
            if v == Verdict::Fresh {
                seen.insert(c);
                top = top.max(c);
            }
        }
    }

    #[test]
    fn out_of_order_within_the_window_is_fine_and_sessions_are_apart() {
        let mut g = ReplayGuard::new(2);
        for c in [5, 3, 4, 1, 2, 1000, 6] {
            assert_eq!(take(&mut g, 1, c), Verdict::Fresh, "{c}");
        }
        assert_eq!(take(&mut g, 1, 4), Verdict::Replayed);
        assert_eq!(take(&mut g, 1, 2000), Verdict::Fresh);
        assert_eq!(take(&mut g, 1, 900), Verdict::TooOld);
        // Another session's counters are its own.
        assert_eq!(take(&mut g, 2, 4), Verdict::Fresh);
        // A third session evicts the first heard from.
        assert_eq!(take(&mut g, 3, 1), Verdict::Fresh);
        assert_eq!(g.sessions(), 2);
        assert_eq!(g.check(2, 4), Verdict::Replayed);
    }

    #[test]
    fn a_jump_past_the_window_forgets_what_it_passed() {
        let mut g = ReplayGuard::new(1);
        assert_eq!(take(&mut g, 1, 10), Verdict::Fresh);
        assert_eq!(take(&mut g, 1, 10 + 3 * WINDOW), Verdict::Fresh);
        assert_eq!(take(&mut g, 1, 11 + 2 * WINDOW), Verdict::Fresh);
        assert_eq!(take(&mut g, 1, 11 + 2 * WINDOW), Verdict::Replayed);
        assert_eq!(take(&mut g, 1, 10), Verdict::TooOld);
    }
}
