//! Tags: a member's small key/value metadata (a role, a zone, a version),
//! carried with its alive rumours and updated live.
//!
//! A member's tags belong to an incarnation: changing them
//! ([`Node::set_tags`](crate::Node::set_tags)) takes a new incarnation and
//! announces it, so the newest tags win everywhere, as the member's other
//! state does. The encoding is bounded ([`MAX_TAGS_LEN`] bytes, as
//! memberlist bounds its meta), and a cluster that sets no tags pays nothing
//! for them on the wire.
//!
//! ```
//! use vigil_membership::tags::Tags;
//!
//! let tags = Tags::new([("zone", "eu-west-1a"), ("role", "queue")])?;
//! assert_eq!(tags.get("role"), Some("queue"));
//! assert_eq!(tags.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["role", "zone"]);
//! assert!(Tags::new([("k", "v".repeat(600))]).is_err());
//! # Ok::<(), vigil_membership::tags::TagsError>(())
//! ```

use std::fmt;
use std::sync::Arc;

/// The longest encoding of a member's tags, in bytes: each pair takes its
/// key and value plus two length bytes.
pub const MAX_TAGS_LEN: usize = 512;

/// The longest key or value, in bytes (its length is one byte on the wire).
pub const MAX_TAG_PART_LEN: usize = 255;

/// A member's tags: at most [`MAX_TAGS_LEN`] bytes of key/value pairs, keys
/// unique and sorted. Cheap to clone (shared).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(
    feature = "serde",
    serde(
        into = "std::collections::BTreeMap<String, String>",
        try_from = "std::collections::BTreeMap<String, String>"
    )
)]
pub struct Tags {
    pairs: Option<Arc<[(String, String)]>>,
}

/// Tags that cannot be carried.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TagsError {
    /// A key is empty.
    EmptyKey,
    /// A key or a value is longer than [`MAX_TAG_PART_LEN`] bytes.
    PartTooLong {
        /// The key (cut to 40 bytes).
        key: String,
        /// The length of the key or value, in bytes.
        len: usize,
    },
    /// The same key twice.
    Duplicate {
        /// The key.
        key: String,
    },
    /// The encoding is longer than [`MAX_TAGS_LEN`] bytes.
    TooLong {
        /// Its length, in bytes.
        len: usize,
    },
}

impl fmt::Display for TagsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TagsError::EmptyKey => write!(f, "a tag key is empty"),
            TagsError::PartTooLong { key, len } => {
                write!(f, "tag {key:?}: {len} bytes, more than the maximum of {MAX_TAG_PART_LEN} for a key or value")
            }
            TagsError::Duplicate { key } => write!(f, "tag {key:?} is given twice"),
            TagsError::TooLong { len } => {
                write!(
                    f,
                    "tags take {len} bytes, more than the maximum of {MAX_TAGS_LEN} (each pair costs its key and value plus 2)"
                )
            }
        }
    }
}

impl std::error::Error for TagsError {}

fn cut(key: &str) -> String {
    let mut end = key.len().min(40);
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    key.get(..end).unwrap_or_default().to_owned()
}

impl Tags {
    /// Tags from key/value pairs, in any order.
    ///
    /// # Errors
    ///
    /// [`TagsError`] for an empty key, a key or value longer than
    /// [`MAX_TAG_PART_LEN`], a key given twice, or an encoding longer than
    /// [`MAX_TAGS_LEN`].
    pub fn new<K: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Result<Tags, TagsError> {
        let mut pairs: Vec<(String, String)> = pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        let mut len = 0usize;
        for (k, v) in &pairs {
            if k.is_empty() {
                return Err(TagsError::EmptyKey);
            }
            for part in [k, v] {
                if part.len() > MAX_TAG_PART_LEN {
                    return Err(TagsError::PartTooLong { key: cut(k), len: part.len() });
                }
            }
            len = len.saturating_add(2 + k.len() + v.len());
        }
        if len > MAX_TAGS_LEN {
            return Err(TagsError::TooLong { len });
        }
        pairs.sort();
        if let Some(w) = pairs.windows(2).find(|w| w.first().map(|p| &p.0) == w.get(1).map(|p| &p.0)) {
            return Err(TagsError::Duplicate { key: cut(&w.first().map(|p| p.0.clone()).unwrap_or_default()) });
        }
        Ok(Tags::from_sorted(pairs))
    }

    /// From pairs already checked and sorted with unique keys.
    pub(crate) fn from_sorted(pairs: Vec<(String, String)>) -> Tags {
        if pairs.is_empty() { Tags::default() } else { Tags { pairs: Some(pairs.into()) } }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let pairs = self.pairs.as_deref()?;
        let i = pairs.binary_search_by(|(k, _)| k.as_str().cmp(key)).ok()?;
        pairs.get(i).map(|(_, v)| v.as_str())
    }

    /// The pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.as_deref().unwrap_or_default().iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.pairs.as_deref().map_or(0, <[_]>::len)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_none()
    }

    /// The length of the encoding, in bytes (at most [`MAX_TAGS_LEN`]).
    pub fn encoded_len(&self) -> usize {
        self.iter().map(|(k, v)| 2 + k.len() + v.len()).sum()
    }
}

/// Tags as a map of key to value (how serde writes them).
impl From<Tags> for std::collections::BTreeMap<String, String> {
    fn from(t: Tags) -> Self {
        t.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
    }
}

/// Tags from a map, checked as [`Tags::new`] checks them (how serde reads
/// them).
impl TryFrom<std::collections::BTreeMap<String, String>> for Tags {
    type Error = TagsError;

    fn try_from(map: std::collections::BTreeMap<String, String>) -> Result<Tags, TagsError> {
        Tags::new(map)
    }
}

impl fmt::Debug for Tags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl fmt::Display for Tags {
    /// `key=value,key=value`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { "" } else { "," })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_checked_and_named() {
        assert_eq!(Tags::new([("", "x")]), Err(TagsError::EmptyKey));
        assert_eq!(Tags::new([("a", "1"), ("a", "2")]), Err(TagsError::Duplicate { key: "a".into() }));
        assert_eq!(Tags::new([("k", "v".repeat(256))]), Err(TagsError::PartTooLong { key: "k".into(), len: 256 }));
        // Two pairs of 2 + 1 + 253 bytes fit exactly; one byte more does not.
        let big = |k: &str, n: usize| (k.to_owned(), "v".repeat(n));
        assert!(Tags::new([big("a", 253), big("b", 253)]).is_ok_and(|t| t.encoded_len() == MAX_TAGS_LEN));
        assert_eq!(Tags::new([big("a", 253), big("b", 254)]), Err(TagsError::TooLong { len: 513 }));
        // An error never echoes a huge key whole.
        let long_key = "é".repeat(200);
        match Tags::new([(long_key, "v")]) {
            Err(TagsError::PartTooLong { key, len: 400 }) => assert!(key.len() <= 40),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sorted_shared_and_printable() {
        let t = Tags::new([("zone", "b"), ("role", "db")]).unwrap();
        assert_eq!(t.to_string(), "role=db,zone=b");
        assert_eq!(t.get("zone"), Some("b"));
        assert_eq!(t.get("nope"), None);
        assert_eq!(t.len(), 2);
        assert!(Tags::new(Vec::<(String, String)>::new()).unwrap().is_empty());
        assert_eq!(Tags::default().encoded_len(), 0);
    }
}
