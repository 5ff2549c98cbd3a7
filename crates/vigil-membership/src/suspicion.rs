//! Suspicions: members accused of having failed, each with its timer.
//!
//! A suspicion starts long and shrinks as independent observers confirm it
//! (Lifeguard, with memberlist's formula): from `max` with no confirmation to
//! `min` once `k` have arrived. When it runs out, the member is declared
//! dead, unless it refuted first.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use vigil_detector::Instant;

/// The timeout of a suspicion: from `max` towards `min` with `k` expected
/// confirmations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bounds {
    pub(crate) min: Duration,
    pub(crate) max: Duration,
    pub(crate) k: u32,
}

impl Bounds {
    /// The timeout after `confirmations` independent confirmations:
    /// `max − log(c + 1) / log(k + 1) × (max − min)`, never below `min`; with
    /// `k = 0`, `min` at once (memberlist's rule).
    pub(crate) fn timeout(&self, confirmations: usize) -> Duration {
        if self.k == 0 {
            return self.min;
        }
        let c = confirmations as f64;
        let frac = ((c + 1.0).ln() / (f64::from(self.k) + 1.0).ln()).min(1.0);
        let span = self.max.saturating_sub(self.min).as_secs_f64();
        let left = self.max.as_secs_f64() - frac * span;
        Duration::try_from_secs_f64(left).unwrap_or(self.max).max(self.min)
    }
}

/// One suspicion.
#[derive(Debug, Clone)]
pub(crate) struct Suspicion {
    started: Instant,
    /// Distinct accusers, the first one first.
    accusers: Vec<Arc<str>>,
    bounds: Bounds,
    deadline: Instant,
    /// Ran out without a refutation while a downing strategy decides: the
    /// member is unreachable from its accusers.
    ripe: bool,
}

impl Suspicion {
    /// The accuser who started it.
    pub(crate) fn first_accuser(&self) -> Option<&Arc<str>> {
        self.accusers.first()
    }

    /// Confirmations so far (accusers other than the first).
    pub(crate) fn confirmations(&self) -> usize {
        self.accusers.len().saturating_sub(1)
    }

    /// Whether it ran out without a refutation (see [`Suspicions::ripen`]).
    pub(crate) fn is_ripe(&self) -> bool {
        self.ripe
    }

    pub(crate) fn accused_by(&self, name: &str) -> bool {
        self.accusers.iter().any(|a| **a == *name)
    }

    fn deadline(&self) -> Instant {
        self.started.saturating_add(self.bounds.timeout(self.confirmations()))
    }
}

/// Every open suspicion, by member, with their deadlines in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Suspicions {
    by_name: HashMap<Arc<str>, Suspicion>,
    deadlines: BTreeSet<(Instant, Arc<str>)>,
    /// Suspicions that ran out (see [`Suspicions::ripen`]).
    ripe: usize,
    /// Grows with every change: a suspicion opened, confirmed, ripened or
    /// ended.
    version: u64,
}

/// What a confirmation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Confirmed {
    /// A new accuser: the timeout shrank. Carries the confirmations so far.
    New(usize),
    /// An accuser already counted, or no such suspicion.
    Known,
}

impl Suspicions {
    /// Opens (or restarts) a suspicion of `name` by `accuser`.
    pub(crate) fn start(&mut self, name: Arc<str>, accuser: Arc<str>, now: Instant, bounds: Bounds) {
        self.remove(&name);
        self.version += 1;
        let mut s = Suspicion { started: now, accusers: vec![accuser], bounds, deadline: now, ripe: false };
        s.deadline = s.deadline();
        self.deadlines.insert((s.deadline, name.clone()));
        self.by_name.insert(name, s);
    }

    /// Another accuser of `name`.
    pub(crate) fn confirm(&mut self, name: &str, accuser: Arc<str>) -> Confirmed {
        let Some((key, s)) = self.by_name.get_key_value(name) else { return Confirmed::Known };
        if s.accused_by(&accuser) {
            return Confirmed::Known;
        }
        let key = key.clone();
        let Some(s) = self.by_name.get_mut(name) else { return Confirmed::Known };
        self.deadlines.remove(&(s.deadline, key.clone()));
        s.accusers.push(accuser);
        s.deadline = s.deadline();
        self.version += 1;
        self.deadlines.insert((s.deadline, key));
        Confirmed::New(s.confirmations())
    }

    /// Gives `name`'s suspicion other bounds (this node went from hearing
    /// of it to confirming it).
    pub(crate) fn set_bounds(&mut self, name: &str, bounds: Bounds) {
        let Some((key, s)) = self.by_name.get_key_value(name) else { return };
        let key = key.clone();
        let old = s.deadline;
        let Some(s) = self.by_name.get_mut(name) else { return };
        s.bounds = bounds;
        s.deadline = s.deadline();
        self.deadlines.remove(&(old, key.clone()));
        self.deadlines.insert((s.deadline, key));
    }

    /// Starts `name`'s clock again at `now` with `bounds`, keeping its
    /// accusers.
    pub(crate) fn restart(&mut self, name: &str, now: Instant, bounds: Bounds) {
        let Some((key, s)) = self.by_name.get_key_value(name) else { return };
        let key = key.clone();
        let old = s.deadline;
        let Some(s) = self.by_name.get_mut(name) else { return };
        s.started = now;
        s.bounds = bounds;
        s.deadline = s.deadline();
        self.deadlines.remove(&(old, key.clone()));
        self.deadlines.insert((s.deadline, key));
    }

    /// Marks `name`'s suspicion as run out without a refutation (a
    /// downing strategy decides what follows), and starts its clock again
    /// so that it is looked at once more if nothing decides. Whether it
    /// was not ripe before.
    pub(crate) fn ripen(&mut self, name: &str, now: Instant, bounds: Bounds) -> bool {
        let Some(s) = self.by_name.get_mut(name) else { return false };
        let newly = !s.ripe;
        if newly {
            s.ripe = true;
            self.ripe += 1;
            self.version += 1;
        }
        self.restart(name, now, bounds);
        newly
    }

    pub(crate) fn remove(&mut self, name: &str) -> Option<Suspicion> {
        let (key, s) = self.by_name.remove_entry(name)?;
        self.deadlines.remove(&(s.deadline, key));
        self.version += 1;
        if s.ripe {
            self.ripe -= 1;
        }
        Some(s)
    }

    /// The suspicions that ran out, by member.
    pub(crate) fn ripe(&self) -> impl Iterator<Item = (&Arc<str>, &Suspicion)> {
        self.by_name.iter().filter(|(_, s)| s.ripe)
    }

    /// Grows with every change (see the field).
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Suspicion> {
        self.by_name.get(name)
    }

    /// The members whose suspicion ran out by `now`, earliest first.
    pub(crate) fn due(&self, now: Instant) -> Vec<Arc<str>> {
        self.deadlines.iter().take_while(|(at, _)| *at <= now).map(|(_, name)| name.clone()).collect()
    }

    /// The earliest deadline.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(at, _)| *at)
    }

    pub(crate) fn len(&self) -> usize {
        self.by_name.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_follows_memberlist_and_shrinks_with_confirmations() {
        // memberlist at n = 100: min 8 s, max 48 s, k = 2; one confirmation
        // gives 48 − ln 2 / ln 3 × 40 = 22.76 s, two give the minimum.
        let b = Bounds { min: Duration::from_secs(8), max: Duration::from_secs(48), k: 2 };
        assert_eq!(b.timeout(0), Duration::from_secs(48));
        assert!((b.timeout(1).as_secs_f64() - 22.763).abs() < 1e-3);
        assert_eq!(b.timeout(2), Duration::from_secs(8));
        assert_eq!(b.timeout(9), Duration::from_secs(8));
        assert_eq!(Bounds { k: 0, ..b }.timeout(0), Duration::from_secs(8));
    }

    #[test]
    fn deadlines_move_with_confirmations_and_come_out_in_order() {
        let b = Bounds { min: Duration::from_secs(2), max: Duration::from_secs(10), k: 1 };
        let mut s = Suspicions::default();
        let t0 = Instant::from_secs(100);
        s.start("a".into(), "x".into(), t0, b);
        s.start("b".into(), "x".into(), t0 + Duration::from_secs(1), b);
        assert_eq!(s.next_deadline(), Some(Instant::from_secs(110)));
        assert_eq!(s.confirm("b", "y".into()), Confirmed::New(1));
        assert_eq!(s.confirm("b", "y".into()), Confirmed::Known);
        assert_eq!(s.confirm("b", "x".into()), Confirmed::Known);
        assert_eq!(s.next_deadline(), Some(Instant::from_secs(103)));
        let due: Vec<String> = s.due(Instant::from_secs(110)).iter().map(|n| n.to_string()).collect();
        assert_eq!(due, ["b", "a"]);
        s.remove("b");
        assert_eq!(s.due(Instant::from_secs(109)), Vec::<Arc<str>>::new());
        assert_eq!(s.len(), 1);
    }
}
