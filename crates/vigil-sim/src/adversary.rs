//! The adversary's forgeries ([`Fault::Forge`](crate::Fault::Forge)): the
//! datagrams a stranger or a member holding the key sends, built with the
//! protocol's own codec from what the members are now.
//!
//! A stranger speaks from an address no machine has and in a name no
//! member has; its packets are plaintext (it has no key), so a sealed
//! cluster drops them unopened. A member holding the key speaks from its own
//! address and in its own name (a forged source address is outside what
//! vigil defends against), sealed: its packets open, and they say what it
//! likes — accusations it did not make, others' word, and its own
//! reachability row naming every other member unreachable.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use vigil_membership::message::{Mark, Message, NodeId, Packet, RowEntry, Status, Update};
use vigil_membership::wire;

use crate::fault::{Forger, Forgery};
use crate::preset::CLUSTER;

/// Where the stranger speaks from: an address no machine has.
pub(crate) const STRANGER: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 255, 255, 254), 7946));

/// The address a forged move names: one no machine has.
pub(crate) const FORGED_ADDR: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 255, 255, 253), 7946));

/// What the adversary knows of a running member: its identity, address
/// and incarnation now.
#[derive(Debug, Clone)]
pub(crate) struct Known {
    pub(crate) index: usize,
    pub(crate) id: NodeId,
    pub(crate) addr: SocketAddr,
    pub(crate) incarnation: u64,
}

/// The forged packets of one tick (`tick` counts them, so a forged row is
/// always the newest its sender told), in plaintext: the caller seals a
/// member's. Every one goes to every running member but the sender.
pub(crate) fn forge(by: Forger, forgery: Forgery, members: &[Known], tick: u64) -> Vec<Vec<u8>> {
    let sender = match by {
        Forger::Stranger => (NodeId::new("intruder", 1), 0),
        Forger::Insider { node } => match members.iter().find(|m| m.index == node) {
            Some(m) => (m.id.clone(), m.incarnation),
            None => return Vec::new(),
        },
    };
    let others: Vec<&Known> = members.iter().filter(|m| Some(m.index) != insider(by)).collect();
    let rumour = |about: &Known, status: Status, from: &NodeId| Update {
        id: about.id.clone(),
        addr: about.addr,
        incarnation: about.incarnation,
        status,
        from: from.clone(),
        tags: None,
    };
    let mut updates = Vec::new();
    match forgery {
        Forgery::Accuse => {
            for x in &others {
                for y in &others {
                    if x.index != y.index {
                        updates.push(rumour(x, Status::Suspect, &y.id));
                        updates.push(rumour(x, Status::Dead, &y.id));
                    }
                }
                // A member holding the key also says, first-hand, that it
                // holds every other member dead: each hears it of itself.
                if insider(by).is_some() {
                    updates.push(rumour(x, Status::Dead, &sender.0));
                }
            }
        }
        Forgery::Move { victim } => {
            if let Some(v) = members.iter().find(|m| m.index == victim) {
                let moved = Update {
                    addr: FORGED_ADDR,
                    incarnation: v.incarnation.saturating_add(1_000),
                    ..rumour(v, Status::Alive, &v.id)
                };
                updates.push(moved);
            }
        }
    }
    let mut packets = Vec::new();
    for chunk in updates.chunks(wire::MAX_UPDATES) {
        let p = Packet {
            cluster: CLUSTER,
            from: sender.0.clone(),
            incarnation: sender.1,
            message: Message::Gossip,
            updates: chunk.to_vec(),
        };
        packets.extend(wire::encode(&p, wire::MAX_DATAGRAM_ACCEPTED).ok());
    }
    // A member holding the key also lies in its own row: everyone else is
    // unreachable from it, in the newest version it ever told.
    if forgery == Forgery::Accuse && insider(by).is_some() {
        let entries = others.iter().map(|m| RowEntry { id: m.id.clone(), mark: Mark::Unreachable }).collect();
        let message = Message::Reachability { version: (1 << 40) + tick, page: 0, pages: 1, entries };
        let p = Packet { cluster: CLUSTER, from: sender.0, incarnation: sender.1, message, updates: Vec::new() };
        packets.extend(wire::encode(&p, wire::MAX_DATAGRAM_ACCEPTED).ok());
    }
    packets
}

fn insider(by: Forger) -> Option<usize> {
    match by {
        Forger::Stranger => None,
        Forger::Insider { node } => Some(node),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(i: usize) -> Known {
        Known {
            index: i,
            id: NodeId::new(format!("n{i}"), 1),
            addr: SocketAddr::from(([10, 0, 0, i as u8], 7946)),
            incarnation: 3,
        }
    }

    #[test]
    fn a_strangers_accusations_cover_every_pair_and_an_insiders_add_its_row() {
        let members: Vec<Known> = (0..4).map(known).collect();
        let packets = forge(Forger::Stranger, Forgery::Accuse, &members, 0);
        let p = wire::decode(&packets[0], wire::MAX_DATAGRAM_ACCEPTED).unwrap();
        assert_eq!(p.from.name, "intruder");
        assert_eq!(p.updates.len(), 4 * 3 * 2, "suspect and dead, every ordered pair");
        let packets = forge(Forger::Insider { node: 2 }, Forgery::Accuse, &members, 5);
        let row = wire::decode(packets.last().unwrap(), wire::MAX_DATAGRAM_ACCEPTED).unwrap();
        let Message::Reachability { version, entries, .. } = row.message else { panic!("{:?}", row.message) };
        assert_eq!((row.from.name.as_str(), version, entries.len()), ("n2", (1 << 40) + 5, 3));
        let moved = forge(Forger::Stranger, Forgery::Move { victim: 1 }, &members, 0);
        let p = wire::decode(&moved[0], wire::MAX_DATAGRAM_ACCEPTED).unwrap();
        assert_eq!((p.updates[0].addr, p.updates[0].incarnation), (FORGED_ADDR, 1_003));
    }
}
