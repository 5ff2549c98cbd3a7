//! A view's digest: one number two members compare before they exchange
//! whole views.
//!
//! A periodic push-pull sends the sender's whole view, and in a steady
//! cluster the receiver's view is the same, so nearly every byte of it is
//! wasted. With [`Config::push_pull_digest`](crate::Config::push_pull_digest)
//! the periodic exchange starts with [`Message::Digest`](crate::Message::Digest)
//! instead: the receiver compares it with its own, and only when they
//! differ answers with its view (asking for the sender's), the exchange a
//! push-pull would have made.
//!
//! The digest covers what anti-entropy passes on about each member: name,
//! generation, address, incarnation, status and tags, as the wire encodes
//! them (canonical, so two different entries never share bytes). It
//! leaves out who raised a suspicion (members may have heard of one from
//! different accusers) and anything local (when a status changed). Each
//! entry is hashed on its own (FNV-1a, then mixed so that sums of nearby
//! values do not cancel) and the hashes are added, so the order of the
//! view does not matter and no sorting is needed.
//!
//! It is not a cryptographic hash: two different views could share a
//! digest, which costs one skipped exchange, no more. Members that can
//! forge packets can do more harm by lying in a full view.

use vigil_detector::fnv::{fnv1a, mix};

use crate::message::Update;
use crate::wire;

/// The digest of `view`, in any order.
pub(crate) fn of(view: &[Update]) -> u64 {
    let mut bytes = Vec::new();
    view.iter().fold(0u64, |sum, u| {
        bytes.clear();
        // A member of a view was decoded, or is this node, so it encodes;
        // if it did not, the bytes written so far stand for it (the digest
        // stays a function of the view).
        let _ = wire::write_entry(u, &mut bytes);
        sum.wrapping_add(mix(fnv1a(&bytes)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{NodeId, Status};
    use crate::tags::Tags;

    fn member(name: &str, incarnation: u64) -> Update {
        let id = NodeId::new(name, 1);
        Update {
            id: id.clone(),
            addr: "10.0.0.1:7946".parse().unwrap(),
            incarnation,
            status: Status::Alive,
            from: id,
            tags: None,
        }
    }

    #[test]
    fn order_does_not_matter_and_the_accuser_is_left_out() {
        let (a, b, c) = (member("a", 1), member("b", 4), member("c", 2));
        let d = of(&[a.clone(), b.clone(), c.clone()]);
        assert_eq!(d, of(&[c.clone(), a.clone(), b.clone()]));
        let mut suspected = b.clone();
        suspected.status = Status::Suspect;
        let mut by_other = suspected.clone();
        by_other.from = NodeId::new("z", 9);
        assert_eq!(of(&[a.clone(), suspected.clone()]), of(&[by_other, a.clone()]));
        assert_ne!(of(&[a.clone(), suspected]), of(&[a, b]));
    }

    #[test]
    fn every_carried_field_changes_it() {
        let base = member("node-1", 3);
        let d = of(std::slice::from_ref(&base));
        let changes: [fn(&mut Update); 7] = [
            |u| u.id.name.push('x'),
            |u| u.id.generation += 1,
            |u| u.addr.set_port(7947),
            |u| u.addr = "[::1]:7946".parse().unwrap(),
            |u| u.incarnation += 1,
            |u| u.status = Status::Dead,
            |u| u.tags = Some(Tags::new([("role", "db")]).unwrap()),
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut u = base.clone();
            change(&mut u);
            assert_ne!(of(&[u]), d, "change {i} left the digest alone");
        }
        let tagged = |v: &str| Update { tags: Some(Tags::new([("role", v)]).unwrap()), ..base.clone() };
        assert_ne!(of(&[tagged("db")]), of(&[tagged("web")]));
        // A member missing from one view, or one too many.
        assert_ne!(of(&[base.clone(), member("b", 1)]), d);
        assert_eq!(of(&[]), 0);
    }
}
