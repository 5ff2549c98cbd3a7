//! Lifeguard's local health: how much this node doubts itself.
//!
//! A node whose own timers fire late, whose indirect probes get no nacks
//! back, or that has to refute accusations about itself is more likely to be
//! the problem than the members it is about to accuse. Its awareness score
//! rises with each such sign and falls with each probe that is answered;
//! while it is high, the node probes more patiently and needs more silence
//! before it acts.

use std::time::Duration;

/// The awareness score, from 0 (healthy) to a configured maximum.
#[derive(Debug, Clone)]
pub(crate) struct LocalHealth {
    score: u32,
    max: u32,
}

impl LocalHealth {
    pub(crate) fn new(max: u32) -> LocalHealth {
        LocalHealth { score: 0, max }
    }

    /// The score: 0 is healthy.
    pub(crate) fn score(&self) -> u32 {
        self.score
    }

    /// A sign of trouble here: raise the score, up to the maximum.
    pub(crate) fn raise(&mut self, by: u32) {
        self.score = self.score.saturating_add(by).min(self.max);
    }

    /// A sign of health (a probe was answered).
    pub(crate) fn lower(&mut self) {
        self.score = self.score.saturating_sub(1);
    }

    /// `1 + score`: how much longer to wait, how much more silence to need.
    pub(crate) fn multiplier(&self) -> u32 {
        1 + self.score
    }

    /// A duration stretched by the multiplier.
    pub(crate) fn scale(&self, d: Duration) -> Duration {
        d.saturating_mul(self.multiplier())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_score_is_bounded_both_ways_and_scales_waits() {
        let mut h = LocalHealth::new(7);
        h.lower();
        assert_eq!(h.score(), 0);
        h.raise(3);
        assert_eq!(h.scale(Duration::from_millis(500)), Duration::from_secs(2));
        h.raise(u32::MAX);
        assert_eq!(h.score(), 7);
        assert_eq!(h.multiplier(), 8);
    }
}
