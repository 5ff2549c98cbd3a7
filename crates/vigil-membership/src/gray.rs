//! Shared gray-failure evidence: the outlier verdicts members pass on.
//!
//! A gray failure (a member that heartbeats fine and answers requests with
//! errors, or slowly) is seen first by whoever sends it requests. When this
//! node's outlier detection ejects a member, the verdict ("I eject `b`
//! generation 3 for consecutive 5xx") travels with this node's own alive
//! rumour, as a reserved tag, so every member learns who ejects whom and
//! why within a few gossip rounds, and a member that joins later learns it
//! from the push-pull that admits it. A return takes the tag away.
//!
//! The evidence is bounded: a member shares at most [`MAX_SHARED`]
//! verdicts (the latest), within the tags' own size limit, and what a
//! member shares is its own word only (it cannot speak for others). It
//! feeds the downing provider's picture with a distinct reason, and counts
//! towards downing a member only when [`GraySharing::counts_for_downing`]
//! says so: by default it is shown, not acted on.
//!
//! On the wire a verdict is one tag: the key is [`KEY_PREFIX`] and the
//! subject's name, the value its generation and the reason's name.
//!
//! ```
//! use vigil_membership::gray::{self, GrayReport};
//! use vigil_membership::Tags;
//!
//! let tags = Tags::new([("zone", "a"), ("vigil.ejects/b", "3 consecutive-5xx")])?;
//! let seen: Vec<GrayReport> = gray::reports("a", &tags).collect();
//! assert_eq!(seen, [GrayReport { by: "a".into(), subject: "b".into(), generation: 3, reason: "consecutive-5xx".into() }]);
//! // Anything else under the prefix is ignored, never trusted half-way.
//! let junk = Tags::new([("vigil.ejects/c", "three consecutive-5xx"), ("vigil.ejects/d", "1 melted")])?;
//! assert_eq!(gray::reports("a", &junk).count(), 0);
//! # Ok::<(), vigil_membership::tags::TagsError>(())
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use vigil_detector::outlier::EjectReason;

use crate::tags::Tags;

/// The reserved tag-key prefix of a shared verdict. An application's own
/// tags under it are not passed on.
pub const KEY_PREFIX: &str = "vigil.ejects/";

/// Verdicts one member shares at most (the latest ones).
pub const MAX_SHARED: usize = 8;

/// Whether this node shares its outlier verdicts, and whether shared
/// verdicts may down a member.
///
/// When they may (`counts_for_downing`, with a downing strategy), each
/// member's ejections go in its reachability row, first-hand like the rest
/// of it ([`crate::downing`]); a member finds another unusable — as if
/// unreachable — only once at least `min_ejectors` members, each saying so
/// itself, eject it, and only while fewer than `max_removals` members were
/// removed on such evidence in the last `removal_window`. One client's
/// errors, or one member's word, remove nobody; a fleet-wide gray failure
/// removes one member at a time.
///
/// ```
/// use std::time::Duration;
/// use vigil_membership::gray::GraySharing;
///
/// let d = GraySharing::default();
/// assert!(d.share && !d.counts_for_downing);
/// assert_eq!((d.min_ejectors, d.max_removals, d.removal_window), (2, 1, Duration::from_secs(600)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GraySharing {
    /// Pass this node's ejections on to every member (default: yes; it
    /// costs nothing until the application records request outcomes).
    pub share: bool,
    /// Count a member ejected by enough others as unreachable from them
    /// when a downing strategy decides (default: no — outlier evidence
    /// alone downs nobody).
    pub counts_for_downing: bool,
    /// Distinct members that must eject a member before it counts as
    /// unreachable (default 2; at least 2).
    #[cfg_attr(feature = "serde", serde(default = "default_min_ejectors"))]
    pub min_ejectors: usize,
    /// Members removed on outlier evidence within `removal_window`, at most
    /// (default 1).
    #[cfg_attr(feature = "serde", serde(default = "default_max_removals"))]
    pub max_removals: usize,
    /// The window of `max_removals` (default 10 minutes).
    #[cfg_attr(feature = "serde", serde(default = "default_removal_window"))]
    pub removal_window: std::time::Duration,
}

#[cfg(feature = "serde")]
fn default_min_ejectors() -> usize {
    GraySharing::default().min_ejectors
}
#[cfg(feature = "serde")]
fn default_max_removals() -> usize {
    GraySharing::default().max_removals
}
#[cfg(feature = "serde")]
fn default_removal_window() -> std::time::Duration {
    GraySharing::default().removal_window
}

impl Default for GraySharing {
    fn default() -> GraySharing {
        GraySharing {
            share: true,
            counts_for_downing: false,
            min_ejectors: 2,
            max_removals: 1,
            removal_window: std::time::Duration::from_secs(600),
        }
    }
}

/// One shared verdict: `by` ejects `subject` (in `generation`) for
/// `reason`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GrayReport {
    /// The member whose outlier detection ejected the subject.
    pub by: String,
    /// The member ejected.
    pub subject: String,
    /// The subject's generation the verdict is about.
    pub generation: u64,
    /// The ejection's reason, by name (`consecutive-5xx`, `latency`, ...).
    pub reason: String,
}

/// The verdicts `by` shares in its `tags`; malformed ones are skipped.
pub fn reports<'a>(by: &'a str, tags: &'a Tags) -> impl Iterator<Item = GrayReport> + 'a {
    tags.iter().filter_map(move |(key, value)| {
        let subject = key.strip_prefix(KEY_PREFIX).filter(|s| !s.is_empty() && *s != by)?;
        let (generation, reason) = value.split_once(' ')?;
        if generation.len() > 1 && generation.starts_with('0') {
            return None;
        }
        let generation: u64 = generation.parse().ok()?;
        // Every reason outlier detection can eject for, to read a shared one back.
        let reason = EjectReason::ALL.iter().find(|r| r.name() == reason)?;
        Some(GrayReport {
            by: by.to_owned(),
            subject: subject.to_owned(),
            generation,
            reason: reason.name().to_owned(),
        })
    })
}

/// This node's own verdicts, latest last.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shared {
    /// Subject → (generation, reason, order of ejection).
    verdicts: BTreeMap<Arc<str>, (u64, EjectReason, u64)>,
    next: u64,
}

impl Shared {
    /// Whether this node ever shared a verdict: from then on its rumours
    /// always carry tags (empty ones too), so that a withdrawal is heard.
    fn ever(&self) -> bool {
        self.next > 0
    }

    /// This node ejected `subject`. Whether what it shares changed.
    pub(crate) fn ejected(&mut self, subject: Arc<str>, generation: u64, reason: EjectReason) -> bool {
        self.next += 1;
        let changed = self.verdicts.get(&subject).is_none_or(|&(g, r, _)| (g, r) != (generation, reason));
        self.verdicts.insert(subject, (generation, reason, self.next));
        if self.verdicts.len() > MAX_SHARED {
            // The oldest verdict goes.
            let oldest = self.verdicts.iter().min_by_key(|(_, v)| v.2).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.verdicts.remove(&k);
            }
        }
        changed
    }

    /// `subject` returned, left or died. Whether what it shares changed.
    pub(crate) fn cleared(&mut self, subject: &str) -> bool {
        self.verdicts.remove(subject).is_some()
    }

    /// The application's `tags` (without anything under the reserved
    /// prefix) plus this node's verdicts, latest first, as many as fit in
    /// the tags' size limit.
    pub(crate) fn compose(&self, tags: Option<&Tags>) -> Option<Tags> {
        let own: Vec<(String, String)> = tags
            .map(|t| t.iter().filter(|(k, _)| !k.starts_with(KEY_PREFIX)).map(|(k, v)| (k.into(), v.into())).collect())
            .unwrap_or_default();
        if self.verdicts.is_empty() && !self.ever() {
            return tags.map(|t| if own.len() == t.len() { t.clone() } else { Tags::new(own).unwrap_or_default() });
        }
        let mut latest: Vec<_> = self.verdicts.iter().collect();
        latest.sort_by_key(|(_, v)| std::cmp::Reverse(v.2));
        let mut pairs = own;
        for (subject, (generation, reason, _)) in latest {
            let mut with = pairs.clone();
            with.push((format!("{KEY_PREFIX}{subject}"), format!("{generation} {}", reason.name())));
            // Tags::new refuses more than MAX_TAGS_LEN bytes.
            if Tags::new(with.clone()).is_err() {
                break;
            }
            pairs = with;
        }
        Tags::new(pairs).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_the_latest_verdicts_are_shared_and_the_applications_reserved_keys_are_dropped() {
        let mut s = Shared::default();
        for i in 0..12u64 {
            assert!(s.ejected(Arc::from(format!("m{i}")), 1, EjectReason::Latency));
        }
        // The same verdict again changes nothing.
        assert!(!s.ejected(Arc::from("m11"), 1, EjectReason::Latency));
        let app = Tags::new([("zone", "a"), ("vigil.ejects/x", "1 latency")]).unwrap();
        let tags = s.compose(Some(&app)).unwrap();
        let mut seen: Vec<String> = reports("me", &tags).map(|r| r.subject).collect();
        seen.sort();
        // m4 to m11: the eight latest; the application's forged one is gone.
        let mut latest: Vec<String> = (4..12).map(|i| format!("m{i}")).collect();
        latest.sort();
        assert_eq!(seen, latest);
        assert_eq!(tags.get("zone"), Some("a"));
        assert!(s.cleared("m11"));
        assert!(!s.cleared("m11"));
    }

    #[test]
    fn verdicts_that_do_not_fit_beside_long_application_tags_are_left_out_whole() {
        let mut s = Shared::default();
        let long = "v".repeat(200);
        let app = Tags::new([("a", long.clone()), ("b", long)]).unwrap();
        for i in 0..MAX_SHARED {
            s.ejected(Arc::from(format!("member-with-a-long-name-{i}")), 7, EjectReason::ConsecutiveGatewayFailure);
        }
        let tags = s.compose(Some(&app)).unwrap();
        assert!(tags.encoded_len() <= crate::tags::MAX_TAGS_LEN);
        let n = reports("me", &tags).count();
        assert!((1..MAX_SHARED).contains(&n), "{n} verdicts fit");
        // Every verdict read back whole.
        assert!(reports("me", &tags).all(|r| r.generation == 7 && r.reason == "consecutive-gateway-failure"));
    }

    #[test]
    fn a_member_cannot_report_itself_and_malformed_values_are_skipped() {
        let tags = Tags::new([
            ("vigil.ejects/me", "1 latency"),
            ("vigil.ejects/", "1 latency"),
            ("vigil.ejects/b", "01 latency"),
            ("vigil.ejects/c", "18446744073709551616 latency"),
            ("vigil.ejects/d", "2"),
            ("vigil.ejects/e", "2 latency extra"),
            ("vigil.ejects/f", "2 latency"),
        ])
        .unwrap();
        let seen: Vec<String> = reports("me", &tags).map(|r| r.subject).collect();
        assert_eq!(seen, ["f"]);
    }
}
