//! What a node believes about one member, as the application sees it.

use std::net::SocketAddr;

use vigil_detector::Instant;

use crate::message::{NodeId, Status};
use crate::tags::Tags;

/// One member as this node sees it.
///
/// `(id.generation, incarnation)` only grows for a given name: a restarted
/// process takes a higher generation, and a member refutes an accusation
/// with a higher incarnation. A consumer can hand it to a resource as a
/// fencing token, so that a member declared dead cannot go on acting on
/// authority it was given before.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct MemberView {
    /// Name and generation.
    pub id: NodeId,
    /// Where it is reached.
    pub addr: SocketAddr,
    /// Its incarnation within the generation.
    pub incarnation: u64,
    /// What this node believes.
    pub status: Status,
    /// When this node last saw its status change.
    pub since: Instant,
    /// Its tags, as far as this node has heard (empty until a rumour
    /// carries them).
    pub tags: Tags,
}

impl MemberView {
    /// `(generation, incarnation)`: the member's epoch, which only grows.
    pub fn epoch(&self) -> (u64, u64) {
        (self.id.generation, self.incarnation)
    }
}
