//! The loop's queue of jobs in virtual-time order.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use vigil_detector::Instant;

use crate::job::Job;

/// Jobs by time; jobs at the same time run in the order they were pushed,
/// so that a run does not depend on how the heap breaks ties.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    heap: BinaryHeap<Reverse<Entry>>,
    pushed: u64,
}

/// A job at a time, and its place in the order of pushes.
#[derive(Debug)]
struct Entry {
    at: Instant,
    order: u64,
    job: Job,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.order).cmp(&(other.at, other.order))
    }
}

impl Queue {
    /// Schedules `job` at `at`.
    pub(crate) fn push(&mut self, at: Instant, job: Job) {
        self.pushed += 1;
        self.heap.push(Reverse(Entry { at, order: self.pushed, job }));
    }

    /// Schedules jobs in the order given.
    pub(crate) fn extend(&mut self, jobs: impl IntoIterator<Item = (Instant, Job)>) {
        for (at, job) in jobs {
            self.push(at, job);
        }
    }

    /// The earliest job, taken off the queue.
    pub(crate) fn pop(&mut self) -> Option<(Instant, Job)> {
        self.heap.pop().map(|Reverse(e)| (e.at, e.job))
    }

    /// The earliest job, taken off the queue if it is due by `until`.
    pub(crate) fn pop_due(&mut self, until: Instant) -> Option<(Instant, Job)> {
        if self.heap.peek().is_some_and(|Reverse(e)| e.at <= until) { self.pop() } else { None }
    }
}
