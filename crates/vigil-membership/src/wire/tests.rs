use super::*;
use proptest::prelude::*;

fn v4(a: [u8; 4], port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(a), port))
}

fn v6(a: [u8; 16], port: u16) -> SocketAddr {
    SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(a), port, 0, 0))
}

/// A suspicion of `name` (generation 11) by another process of the same name
/// (generation 12), so its `from` is written out.
fn update(name: &str, addr: SocketAddr) -> Update {
    Update {
        id: NodeId::new(name, 11),
        addr,
        incarnation: 5,
        status: Status::Suspect,
        from: NodeId::new(name, 12),
        tags: None,
    }
}

/// An alive rumour from the member itself: its `from` is left out.
fn alive(name: &str, addr: SocketAddr) -> Update {
    let id = NodeId::new(name, 11);
    Update { id: id.clone(), addr, incarnation: 5, status: Status::Alive, from: id, tags: None }
}

fn packet(message: Message, updates: Vec<Update>) -> Packet {
    Packet { cluster: 0xC1, from: NodeId::new("a", 1), incarnation: 2, message, updates }
}

fn ping(name_len: usize, updates: Vec<Update>) -> Packet {
    Packet {
        cluster: 1,
        from: NodeId::new("f".repeat(name_len), 1),
        incarnation: 1,
        message: Message::Ping { seq: 1, target: NodeId::new("t".repeat(name_len), 1) },
        updates,
    }
}

// ---- strategies ----

/// 1 to 64 bytes of UTF-8, mostly ASCII with multi-byte characters mixed
/// in, and sometimes exactly the longest allowed name; never a control
/// character (names must have none).
fn name() -> impl Strategy<Value = String> {
    let printable = any::<char>().prop_filter("no control characters", |c| !c.is_control());
    let mixed = prop::collection::vec(prop_oneof![3 => prop::char::range('a', 'z'), 1 => printable], 1..=24).prop_map(
        |chars| {
            let mut name = String::new();
            for c in chars {
                if name.len() + c.len_utf8() > MAX_NAME_LEN {
                    break;
                }
                name.push(c);
            }
            name
        },
    );
    let ascii = prop::collection::vec(prop::char::range('!', '~'), 1..=MAX_NAME_LEN)
        .prop_map(|chars| chars.into_iter().collect::<String>());
    prop_oneof![4 => mixed, 1 => ascii, 1 => Just("ü".repeat(MAX_NAME_LEN / 2))]
}

/// Numbers of every varint length: small ones are the common case.
fn number() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..200, any::<u64>(), (0u32..64).prop_map(|b| 1u64 << b), Just(u64::MAX)]
}

fn node_id() -> impl Strategy<Value = NodeId> {
    (name(), number()).prop_map(|(name, generation)| NodeId { name, generation })
}

/// IPv4 and IPv6 addresses; IPv6 with zero flowinfo and scope id, the
/// only ones that round-trip.
fn addr() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<u16>()).prop_map(|(a, p)| v4(a, p)),
        (any::<[u8; 16]>(), any::<u16>()).prop_map(|(a, p)| v6(a, p)),
    ]
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![Just(Status::Alive), Just(Status::Suspect), Just(Status::Dead), Just(Status::Left)]
}

/// Tags or none: short and long keys and values, empty tags too.
fn any_tags() -> impl Strategy<Value = Option<Tags>> {
    prop::option::of(prop::collection::btree_map("[a-zé]{1,12}", "[ -~é]{0,40}", 0..6))
        .prop_map(|pairs| pairs.map(|p| Tags::new(p).expect("within the limits")))
}

/// Updates from the member itself and from others, in equal measure, with
/// and without tags.
fn any_update() -> impl Strategy<Value = Update> {
    (node_id(), addr(), number(), status(), prop::option::of(node_id()), any_tags()).prop_map(
        |(id, addr, incarnation, status, from, tags)| {
            let from = from.unwrap_or_else(|| id.clone());
            Update { id, addr, incarnation, status, from, tags }
        },
    )
}

fn seq() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..300, any::<u32>()]
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        Just(Message::Heartbeat),
        (seq(), node_id()).prop_map(|(seq, target)| Message::Ping { seq, target }),
        (seq(), node_id(), addr(), any::<bool>()).prop_map(|(seq, target, target_addr, nack)| Message::PingReq {
            seq,
            target,
            target_addr,
            nack
        }),
        seq().prop_map(|seq| Message::Ack { seq }),
        seq().prop_map(|seq| Message::Nack { seq }),
        Just(Message::Gossip),
        any::<u32>().prop_map(|lease_ms| Message::Subscribe { lease_ms }),
        any::<u64>().prop_map(|view| Message::Digest { view }),
        (number(), 1u16..4, prop::collection::vec((node_id(), 0usize..3), 0..24)).prop_flat_map(
            |(version, pages, entries)| {
                (0..pages).prop_map(move |page| Message::Reachability {
                    version,
                    page,
                    pages,
                    entries: entries
                        .iter()
                        .map(|(id, m)| RowEntry {
                            id: id.clone(),
                            mark: [Mark::Unreachable, Mark::Flapped, Mark::Ejected][*m],
                        })
                        .collect(),
                })
            }
        ),
        (any::<bool>(), prop::collection::vec(any_update(), 0..24))
            .prop_map(|(reply, members)| Message::PushPull { reply, members }),
    ]
}

fn any_packet() -> impl Strategy<Value = Packet> {
    (number(), node_id(), number(), message(), prop::collection::vec(any_update(), 0..12)).prop_map(
        |(cluster, from, incarnation, message, updates)| Packet { cluster, from, incarnation, message, updates },
    )
}

// ---- properties ----

proptest! {
    #[test]
    fn every_packet_round_trips_and_its_length_is_predicted(p in any_packet()) {
        let bytes = encode(&p, MAX_STREAM).unwrap();
        prop_assert_eq!(encoded_len(&p), bytes.len());
        prop_assert_eq!(decode(&bytes, MAX_STREAM).unwrap(), p.clone());
        prop_assert_eq!(peek_kind(&bytes).unwrap(), p.message.kind());
        // The same bytes, appended after what the buffer already holds.
        let mut out = b"prefix".to_vec();
        encode_into(&p, bytes.len(), &mut out).unwrap();
        prop_assert_eq!(&out[..6], b"prefix");
        prop_assert_eq!(&out[6..], &bytes[..]);
    }

    #[test]
    fn each_update_adds_exactly_its_update_len(p in any_packet(), extra in any_update()) {
        let mut more = p.clone();
        more.updates.push(extra.clone());
        prop_assert_eq!(encoded_len(&more), encoded_len(&p) + update_len(&extra));
        prop_assert_eq!(encode(&more, MAX_STREAM).unwrap().len(), encoded_len(&p) + update_len(&extra));
        prop_assert!(update_len(&extra) <= MAX_UPDATE_LEN);
    }

    #[test]
    fn varint_lengths_are_exact(v in number()) {
        let mut out = Vec::new();
        write_varint(v, &mut out);
        prop_assert_eq!(out.len(), varint_len(v));
        let mut r = Reader { rest: &out };
        prop_assert_eq!(r.varint("v").unwrap(), v);
        prop_assert!(r.rest.is_empty());
    }

    #[test]
    fn every_truncation_of_a_valid_encoding_is_rejected(p in any_packet()) {
        let bytes = encode(&p, MAX_STREAM).unwrap();
        for cut in 0..bytes.len() {
            let result = decode(&bytes[..cut], MAX_STREAM);
            prop_assert!(matches!(result, Err(WireError::Truncated { .. })), "cut at {}: {:?}", cut, result);
        }
    }

    #[test]
    fn trailing_bytes_are_rejected(p in any_packet(), extra in prop::collection::vec(any::<u8>(), 1..16)) {
        let mut bytes = encode(&p, MAX_STREAM).unwrap();
        bytes.extend_from_slice(&extra);
        prop_assert_eq!(decode(&bytes, MAX_STREAM), Err(WireError::TrailingBytes { n: extra.len() }));
    }

    /// Corrupted packets never panic, and whatever still decodes is the
    /// unique encoding of what it decodes to.
    #[test]
    fn byte_flips_never_panic_and_what_decodes_is_canonical(
        p in any_packet(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1..=255u8), 1..6),
    ) {
        let mut bytes = encode(&p, MAX_STREAM).unwrap();
        for (at, mask) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= mask;
        }
        if let Ok(q) = decode(&bytes, MAX_STREAM) {
            prop_assert_eq!(encode(&q, MAX_STREAM).unwrap(), bytes);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        kind in 0..9u8,
        tail in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        // Raw, and behind a valid prefix so that decoding gets further in.
        let _ = decode(&tail, MAX_STREAM);
        let mut bytes = vec![b'V', b'G', VERSION, kind];
        bytes.extend_from_slice(&tail);
        if let Ok(q) = decode(&bytes, MAX_STREAM) {
            prop_assert_eq!(encode(&q, MAX_STREAM).unwrap(), bytes);
        }
    }
}

// ---- the format itself ----

/// Pins the layout: if this changes, so must [`VERSION`].
#[test]
fn a_ping_req_with_one_update_has_this_exact_encoding() {
    let p = Packet {
        cluster: 0x0102_0304_0506_0708,
        from: NodeId::new("ab", 9),
        incarnation: 3,
        message: Message::PingReq {
            seq: 0x0A0B_0C0D,
            target: NodeId::new("é", 4),
            target_addr: v6([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 7946),
            nack: true,
        },
        updates: vec![
            Update {
                id: NodeId::new("c", 5),
                addr: v4([10, 0, 0, 7], 0x1F4A),
                incarnation: 6,
                status: Status::Dead,
                from: NodeId::new("ab", 9),
                tags: None,
            },
            Update {
                id: NodeId::new("d", 300),
                addr: v4([10, 0, 0, 8], 7946),
                incarnation: 0,
                status: Status::Alive,
                from: NodeId::new("d", 300),
                tags: None,
            },
        ],
    };
    #[rustfmt::skip]
    let expected: Vec<u8> = [
        &b"VG"[..], &[2, 3],                                       // magic, version 2, kind 3 (ping-req)
        &[0x88, 0x8e, 0x98, 0xa8, 0xc0, 0xe0, 0x80, 0x81, 0x01],  // cluster, varint
        &[2], b"ab", &[9],                                        // from: name, generation
        &[3],                                                     // incarnation
        &[0x8d, 0x98, 0xac, 0x50],                                // seq, varint
        &[2, 0xC3, 0xA9, 4],                                      // target "é", generation 4
        &[6, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x1F, 0x0A], // [2001:db8::1]:7946
        &[1],                                                     // nack
        &[2],                                                     // two updates
        &[1], b"c", &[5],                                         // id
        &[4, 10, 0, 0, 7, 0x1F, 0x4A],                            // 10.0.0.7:8010
        &[6],                                                     // incarnation
        &[3 | 16],                                                // dead, a source follows
        &[2], b"ab", &[9],                                        // from
        &[1], b"d", &[0xAC, 0x02],                                // id "d", generation 300
        &[4, 10, 0, 0, 8, 0x1F, 0x0A],                            // 10.0.0.8:7946
        &[0],                                                     // incarnation
        &[1],                                                     // alive, from the member itself
    ]
    .concat();
    assert_eq!(encode(&p, MAX_DATAGRAM).unwrap(), expected);
    assert_eq!(decode(&expected, MAX_DATAGRAM).unwrap(), p);
}

/// The steady traffic is heartbeats: a member named "n42" of a cluster with
/// id 0x5eed sends 14 bytes.
#[test]
fn a_heartbeat_is_fourteen_bytes() {
    let hb = Packet {
        cluster: 0x5eed,
        from: NodeId::new("n42", 1),
        incarnation: 0,
        message: Message::Heartbeat,
        updates: Vec::new(),
    };
    let bytes = encode(&hb, MAX_DATAGRAM).unwrap();
    assert_eq!(bytes, [b'V', b'G', 2, 1, 237, 189, 1, 3, b'n', b'4', b'2', 1, 0, 0]);
    assert_eq!(bytes.len(), 14);
    // A generation that is a start time in milliseconds takes 6 bytes.
    let hb = Packet { from: NodeId::new("n42", 1_764_600_000_000), ..hb };
    assert_eq!(encoded_len(&hb), 19);
}

#[test]
fn every_message_kind_round_trips_at_the_extremes() {
    let long = NodeId::new("x".repeat(MAX_NAME_LEN), u64::MAX);
    let max_v6 = v6([0xFF; 16], u16::MAX);
    let members = vec![update("m", v4([0; 4], 0)), update(&"y".repeat(MAX_NAME_LEN), max_v6)];
    for message in [
        Message::Heartbeat,
        Message::Ping { seq: u32::MAX, target: long.clone() },
        Message::PingReq { seq: 0, target: long.clone(), target_addr: max_v6, nack: false },
        Message::Ack { seq: 0 },
        Message::Nack { seq: u32::MAX },
        Message::Gossip,
        Message::Subscribe { lease_ms: u32::MAX },
        Message::Subscribe { lease_ms: 0 },
        Message::PushPull { reply: true, members: Vec::new() },
        Message::PushPull { reply: false, members },
        Message::Digest { view: 0 },
        Message::Digest { view: u64::MAX },
        Message::Reachability { version: 0, page: 0, pages: 1, entries: Vec::new() },
        Message::Reachability {
            version: u64::MAX,
            page: u16::MAX - 1,
            pages: u16::MAX,
            entries: vec![
                RowEntry { id: long.clone(), mark: Mark::Flapped },
                RowEntry { id: long.clone(), mark: Mark::Ejected },
            ],
        },
    ] {
        let p = Packet { cluster: u64::MAX, from: long.clone(), incarnation: u64::MAX, message, updates: Vec::new() };
        let bytes = encode(&p, MAX_STREAM).unwrap();
        assert_eq!(bytes.len(), encoded_len(&p));
        assert_eq!(decode(&bytes, MAX_STREAM).unwrap(), p);
    }
}

/// The longest tags: two pairs of a one-byte key and a 253-byte value.
fn longest_tags() -> Tags {
    let tags = Tags::new([("a", "v".repeat(253)), ("b", "w".repeat(253))]).unwrap();
    assert_eq!(tags.encoded_len(), MAX_TAGS_LEN);
    tags
}

#[test]
fn update_len_spans_12_to_694_bytes() {
    let id = NodeId::new("a", 0);
    let least = Update {
        id: id.clone(),
        addr: v4([1, 2, 3, 4], 5),
        incarnation: 0,
        status: Status::Alive,
        from: id,
        tags: None,
    };
    assert_eq!(update_len(&least), MIN_UPDATE_LEN);
    assert_eq!(MIN_UPDATE_LEN, 12);
    let most = Update {
        id: NodeId::new("a".repeat(MAX_NAME_LEN), u64::MAX),
        addr: v6([1; 16], 5),
        incarnation: u64::MAX,
        status: Status::Suspect,
        from: NodeId::new("b".repeat(MAX_NAME_LEN), u64::MAX),
        tags: Some(Tags::new([("k", "v".repeat(255)), ("l", "w".repeat(251))]).unwrap()),
    };
    assert_eq!(update_len(&most), MAX_UPDATE_LEN);
    assert_eq!(MAX_UPDATE_LEN, 694);
    let bytes = encode(&ping(1, vec![most]), MAX_STREAM).unwrap();
    assert_eq!(bytes.len() - encoded_len(&ping(1, Vec::new())), 694);
}

/// One limit: a view of [`MAX_MEMBERS`] members, each as long as an update
/// can be, fits in a stream message, so a node's view always encodes.
#[test]
fn the_largest_view_fits_in_a_stream_message() {
    let most = |i: usize| Update {
        id: NodeId::new(format!("{i:0>64}"), u64::MAX),
        addr: v6([1; 16], 5),
        incarnation: u64::MAX,
        status: Status::Suspect,
        from: NodeId::new("b".repeat(MAX_NAME_LEN), u64::MAX),
        tags: Some(longest_tags()),
    };
    let members: Vec<Update> = (0..MAX_MEMBERS).map(most).collect();
    let p = Packet {
        cluster: u64::MAX,
        from: NodeId::new("x".repeat(MAX_NAME_LEN), u64::MAX),
        incarnation: u64::MAX,
        message: Message::PushPull { reply: true, members },
        updates: Vec::new(),
    };
    let len = encoded_len(&p);
    assert!(len <= MAX_STREAM, "{len} bytes against {MAX_STREAM}");
    assert_eq!(encode(&p, MAX_STREAM).unwrap().len(), len);
}

#[test]
fn ipv6_flowinfo_and_scope_id_are_not_carried() {
    let ip = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    let scoped = SocketAddr::V6(SocketAddrV6::new(ip, 7946, 0x12345, 3));
    let p = packet(Message::Heartbeat, vec![update("n", scoped)]);
    let decoded = decode(&encode(&p, MAX_DATAGRAM).unwrap(), MAX_DATAGRAM).unwrap();
    assert_eq!(decoded.updates[0].addr, SocketAddr::V6(SocketAddrV6::new(ip, 7946, 0, 0)));
}

// ---- capacity ----

/// How many updates about members with 20-byte names (and a 20-byte
/// sender and target, generation 1, small incarnations) fit in one datagram:
///
/// - a node id with a 20-byte name is 1 + 20 + 1 = 22 bytes;
/// - an alive update (from the member itself) is 22 + 7 + 1 + 1 = 31 bytes
///   with IPv4, 43 with IPv6; a suspicion by another member adds its id:
///   53 bytes;
/// - a ping without updates is 4 + 1 + 22 + 1 + (1 + 22) + 1 = 52 bytes;
/// - so (1400 − 52) / 31 = 43 alive IPv4 updates fit (1385 bytes; 44 take
///   1416), 31 IPv6 ones (1385 bytes) or 25 IPv4 suspicions (1377 bytes);
/// - a heartbeat (29 bytes without updates) carries 44 alive IPv4 updates
///   (1393 bytes).
#[test]
fn forty_three_alive_updates_with_20_byte_names_fit_in_a_ping_datagram() {
    let name = "n".repeat(20);
    let up4 = Update { id: NodeId::new(&name, 1), incarnation: 3, ..alive(&name, v4([10, 1, 2, 3], 7946)) };
    let up4 = Update { from: up4.id.clone(), ..up4 };
    let up6 = Update { addr: v6([0x20; 16], 7946), ..up4.clone() };
    let suspicion = Update { status: Status::Suspect, from: NodeId::new("a".repeat(20), 1), ..up4.clone() };
    assert_eq!((update_len(&up4), update_len(&up6), update_len(&suspicion)), (31, 43, 53));
    let empty = ping(20, Vec::new());
    assert_eq!(encoded_len(&empty), 52);

    let fits = |template: &Packet, up: &Update| {
        let mut p = template.clone();
        while encoded_len(&p) + update_len(up) <= MAX_DATAGRAM {
            p.updates.push(up.clone());
        }
        p
    };
    let full4 = fits(&empty, &up4);
    assert_eq!((full4.updates.len(), encoded_len(&full4)), (43, 1385));
    assert_eq!(encode(&full4, MAX_DATAGRAM).unwrap().len(), 1385);
    let full6 = fits(&empty, &up6);
    assert_eq!((full6.updates.len(), encoded_len(&full6)), (31, 1385));
    let full_s = fits(&empty, &suspicion);
    assert_eq!((full_s.updates.len(), encoded_len(&full_s)), (25, 1377));
    let heartbeat = Packet { message: Message::Heartbeat, ..empty };
    assert_eq!(encoded_len(&heartbeat), 29);
    let full_hb = fits(&heartbeat, &up4);
    assert_eq!((full_hb.updates.len(), encoded_len(&full_hb)), (44, 1393));

    let mut over = full4;
    over.updates.push(up4);
    assert_eq!(encode(&over, MAX_DATAGRAM), Err(WireError::TooLarge { len: 1416, max: MAX_DATAGRAM }));
}

// ---- every error ----

/// Garbage that would fail on its magic is refused for its size first:
/// nothing is read from an oversized buffer.
#[test]
fn an_oversized_datagram_is_rejected_before_reading() {
    let junk = vec![0xFF; MAX_DATAGRAM + 1];
    assert_eq!(decode(&junk, MAX_DATAGRAM), Err(WireError::TooLarge { len: 1401, max: 1400 }));
    assert_eq!(decode(&junk[..MAX_DATAGRAM], MAX_DATAGRAM), Err(WireError::BadMagic));
    // And a valid packet is refused under a limit smaller than itself.
    let bytes = encode(&packet(Message::Ack { seq: 1 }, Vec::new()), MAX_DATAGRAM).unwrap();
    let len = bytes.len();
    assert_eq!(decode(&bytes, len - 1), Err(WireError::TooLarge { len, max: len - 1 }));
}

#[test]
fn encoding_past_the_limit_is_refused_and_leaves_the_buffer_alone() {
    let p = packet(Message::Heartbeat, vec![update("n", v4([1, 1, 1, 1], 1))]);
    let len = encoded_len(&p);
    let mut out = vec![9, 9];
    assert_eq!(encode_into(&p, len - 1, &mut out), Err(WireError::TooLarge { len, max: len - 1 }));
    assert_eq!(out, [9, 9]);
    encode_into(&p, len, &mut out).unwrap();
    assert_eq!(out.len(), 2 + len);
}

/// An ack from "a" (cluster 0xC1, two varint bytes): magic, version, kind,
/// cluster (2), sender (3), incarnation, seq, update count.
fn valid_ack() -> Vec<u8> {
    let bytes = encode(&packet(Message::Ack { seq: 1 }, Vec::new()), MAX_DATAGRAM).unwrap();
    assert_eq!(bytes.len(), 12);
    bytes
}

/// The offset of the sender's name length in [`valid_ack`].
const SENDER_AT: usize = 6;

#[test]
fn bad_magic_is_rejected() {
    let mut bytes = valid_ack();
    bytes[1] = b'X';
    assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::BadMagic));
    assert_eq!(peek_kind(&bytes), Err(WireError::BadMagic));
    assert_eq!(decode(b"vg", MAX_DATAGRAM), Err(WireError::BadMagic));
    assert_eq!(decode(b"V", MAX_DATAGRAM), Err(WireError::Truncated { what: "magic" }));
}

#[test]
fn another_version_is_rejected_before_the_rest_is_read() {
    assert_eq!(decode(b"VG\x01", MAX_DATAGRAM), Err(WireError::UnsupportedVersion(1)));
    assert_eq!(decode(b"VG\x00junk", MAX_DATAGRAM), Err(WireError::UnsupportedVersion(0)));
    assert_eq!(peek_kind(b"VG\x03"), Err(WireError::UnsupportedVersion(3)));
}

#[test]
fn unknown_message_kinds_are_rejected() {
    for kind in [0, 11, 255] {
        let mut bytes = valid_ack();
        bytes[3] = kind;
        assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::UnknownMessage(kind)));
        assert_eq!(peek_kind(&bytes), Err(WireError::UnknownMessage(kind)));
    }
    assert_eq!(decode(&[0; 64], MAX_DATAGRAM), Err(WireError::BadMagic));
}

#[test]
fn a_row_page_outside_its_pages_or_an_unknown_mark_is_rejected() {
    let row = |page, pages| Packet {
        cluster: 1,
        from: NodeId::new("a", 1),
        incarnation: 0,
        message: Message::Reachability {
            version: 3,
            page,
            pages,
            entries: vec![RowEntry { id: NodeId::new("b", 1), mark: Mark::Unreachable }],
        },
        updates: Vec::new(),
    };
    for (page, pages) in [(0, 0), (1, 1), (5, 2)] {
        assert_eq!(encode(&row(page, pages), MAX_DATAGRAM), Err(WireError::BadPage { page, pages }));
    }
    let mut bytes = encode(&row(0, 1), MAX_DATAGRAM).unwrap();
    // The page count is after the version: 0 pages.
    let at = bytes.len() - 1 /* update count */ - 1 /* mark */ - 3 /* b#1 */ - 2 /* entry count */ - 2;
    bytes[at..at + 2].copy_from_slice(&0u16.to_be_bytes());
    assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::BadPage { page: 0, pages: 0 }));
    let mut bytes = encode(&row(0, 1), MAX_DATAGRAM).unwrap();
    let mark = bytes.len() - 2;
    bytes[mark] = 4;
    assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::UnknownMark(4)));
    // A count that the rest cannot hold is refused before anything is kept.
    let mut bytes = encode(&row(0, 1), MAX_DATAGRAM).unwrap();
    let count = bytes.len() - 1 - 1 - 3 - 2;
    bytes[count..count + 2].copy_from_slice(&u16::MAX.to_be_bytes());
    assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::Truncated { what: "row entries" }));
}

/// A heartbeat from "a" with one suspicion of "n" (IPv4) by another "n":
/// the bytes, and where the update starts.
fn heartbeat_with_update() -> (Vec<u8>, usize) {
    let bytes = encode(&packet(Message::Heartbeat, vec![update("n", v4([1, 2, 3, 4], 5))]), MAX_DATAGRAM).unwrap();
    // prefix 4, cluster 2, from 3, incarnation 1, count 1
    (bytes, 11)
}

#[test]
fn unknown_statuses_are_rejected() {
    let (bytes, start) = heartbeat_with_update();
    let at = start + 3 + 7 + 1;
    assert_eq!(bytes[at], STATUS_SUSPECT | FROM_FOLLOWS);
    for status in [0, 5, 16, 21, 32, 48, 64 | STATUS_ALIVE, 200] {
        let mut bad = bytes.clone();
        bad[at] = status;
        assert_eq!(decode(&bad, MAX_DATAGRAM), Err(WireError::UnknownStatus(status)));
    }
}

#[test]
fn a_source_written_out_although_it_is_the_member_is_rejected() {
    let (mut bytes, start) = heartbeat_with_update();
    // The update's source is "n" generation 12; make it generation 11, the
    // member itself.
    let last = bytes.len() - 1;
    assert_eq!(bytes[last], 12);
    bytes[last] = 11;
    assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::RedundantSource));
    // Without the flag and the source, the same update is valid.
    let at = start + 3 + 7 + 1;
    bytes[at] = STATUS_SUSPECT;
    bytes.truncate(last - 2);
    let p = decode(&bytes, MAX_DATAGRAM).unwrap();
    assert_eq!(p.updates[0].from, p.updates[0].id);
}

#[test]
fn varints_longer_than_their_shortest_form_or_their_field_are_rejected() {
    let bad = |bytes: &[u8]| {
        let mut r = Reader { rest: bytes };
        r.varint("incarnation")
    };
    let err = Err(WireError::BadVarint { what: "incarnation" });
    assert_eq!(bad(&[0x80, 0x00]), err, "1 byte of zero written as 2");
    assert_eq!(bad(&[0x85, 0x80, 0x00]), err, "5 written as 3 bytes");
    assert_eq!(bad(&[0xFF; 10]), err, "a tenth byte with more than the top bit");
    assert_eq!(bad(&[0x80; 11]), err, "eleven bytes");
    assert_eq!(bad(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]), Ok(u64::MAX));
    assert_eq!(bad(&[0x80, 0x80]), Err(WireError::Truncated { what: "incarnation" }));
    // A sequence number must fit in 32 bits.
    let mut r = Reader { rest: &[0x80, 0x80, 0x80, 0x80, 0x10] };
    assert_eq!(r.varint_u32("sequence number"), Err(WireError::BadVarint { what: "sequence number" }));
    let mut r = Reader { rest: &[0xFF, 0xFF, 0xFF, 0xFF, 0x0F] };
    assert_eq!(r.varint_u32("sequence number"), Ok(u32::MAX));
    // In a packet: the ack's incarnation (2) written in two bytes.
    let mut bytes = valid_ack();
    bytes[SENDER_AT + 3] = 0x82;
    bytes.insert(SENDER_AT + 4, 0x00);
    assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::BadVarint { what: "incarnation" }));
}

#[test]
fn unknown_address_families_are_rejected() {
    let (bytes, start) = heartbeat_with_update();
    let at = start + 3;
    assert_eq!(bytes[at], FAMILY_V4);
    for family in [0, 5, 41] {
        let mut bad = bytes.clone();
        bad[at] = family;
        assert_eq!(decode(&bad, MAX_DATAGRAM), Err(WireError::UnknownAddressFamily(family)));
    }
}

#[test]
fn booleans_other_than_zero_and_one_are_rejected() {
    let req = packet(
        Message::PingReq { seq: 1, target: NodeId::new("t", 1), target_addr: v4([1; 4], 1), nack: true },
        Vec::new(),
    );
    let mut bytes = encode(&req, MAX_DATAGRAM).unwrap();
    let at = bytes.len() - 2; // nack, then the update count
    assert_eq!(bytes[at], 1);
    bytes[at] = 2;
    assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::BadBool(2)));

    let pp = packet(Message::PushPull { reply: false, members: Vec::new() }, Vec::new());
    let mut bytes = encode(&pp, MAX_STREAM).unwrap();
    let at = bytes.len() - 4; // reply, member count (2), update count
    assert_eq!(bytes[at], 0);
    bytes[at] = 0xFF;
    assert_eq!(decode(&bytes, MAX_STREAM), Err(WireError::BadBool(0xFF)));
}

#[test]
fn bad_names_are_rejected_when_decoding() {
    let bytes = valid_ack();
    let at = SENDER_AT; // the sender's name length; its name "a" follows
    let mut empty = bytes.clone();
    empty[at] = 0;
    assert_eq!(decode(&empty, MAX_DATAGRAM), Err(WireError::BadName { reason: BadNameReason::Empty }));

    let mut long = bytes.clone();
    long[at] = 65;
    let too_long = WireError::BadName { reason: BadNameReason::TooLong { len: 65 } };
    assert_eq!(decode(&long, MAX_DATAGRAM), Err(too_long));
    long[at] = 255;
    let too_long = WireError::BadName { reason: BadNameReason::TooLong { len: 255 } };
    assert_eq!(decode(&long, MAX_DATAGRAM), Err(too_long));

    let mut not_utf8 = bytes.clone();
    not_utf8[at + 1] = 0xC3; // a lone lead byte
    let invalid = WireError::BadName { reason: BadNameReason::InvalidUtf8 { valid_up_to: 0 } };
    assert_eq!(decode(&not_utf8, MAX_DATAGRAM), Err(invalid));

    // Terminal escapes, newlines, DEL and C1 controls: never a name.
    for c in ['\x1b', '\n', '\x7f', '\u{9b}'] {
        let p = Packet { from: NodeId::new(format!("ab{c}"), 1), ..packet(Message::Heartbeat, Vec::new()) };
        assert_eq!(
            encode(&p, MAX_DATAGRAM),
            Err(WireError::BadName { reason: BadNameReason::ControlCharacter { at: 2 } })
        );
        let mut bytes = valid_ack();
        bytes[at + 1] = 0x1b;
        assert_eq!(
            decode(&bytes, MAX_DATAGRAM),
            Err(WireError::BadName { reason: BadNameReason::ControlCharacter { at: 0 } })
        );
    }
}

#[test]
fn bad_names_are_refused_when_encoding() {
    let empty = Packet { from: NodeId::new("", 1), ..packet(Message::Heartbeat, Vec::new()) };
    assert_eq!(encode(&empty, MAX_DATAGRAM), Err(WireError::BadName { reason: BadNameReason::Empty }));

    let at_limit = ping(MAX_NAME_LEN, Vec::new());
    assert!(encode(&at_limit, MAX_DATAGRAM).is_ok());
    let mut long = at_limit;
    long.message = Message::Ping { seq: 1, target: NodeId::new("é".repeat(33), 1) };
    let too_long = WireError::BadName { reason: BadNameReason::TooLong { len: 66 } };
    assert_eq!(encode(&long, MAX_DATAGRAM), Err(too_long));

    let mut out = vec![1];
    let in_update = packet(Message::Heartbeat, vec![update(&"u".repeat(300), v4([1; 4], 1))]);
    let too_long = WireError::BadName { reason: BadNameReason::TooLong { len: 300 } };
    assert_eq!(encode_into(&in_update, MAX_STREAM, &mut out), Err(too_long));
    assert_eq!(out, [1]);
}

#[test]
fn too_many_updates_are_refused() {
    let up = update("n", v4([1; 4], 1));
    let p = packet(Message::Heartbeat, vec![up.clone(); MAX_UPDATES]);
    assert_eq!(decode(&encode(&p, MAX_STREAM).unwrap(), MAX_STREAM).unwrap(), p);
    let p = packet(Message::Heartbeat, vec![up; MAX_UPDATES + 1]);
    assert_eq!(encode(&p, MAX_STREAM), Err(WireError::TooManyUpdates { n: 256 }));
}

#[test]
fn too_many_members_are_refused() {
    let members = vec![update("n", v4([1; 4], 1)); MAX_MEMBERS];
    let p = packet(Message::PushPull { reply: true, members }, Vec::new());
    assert_eq!(decode(&encode(&p, MAX_STREAM).unwrap(), MAX_STREAM).unwrap(), p);

    let members = vec![update("n", v4([1; 4], 1)); MAX_MEMBERS + 1];
    let p = packet(Message::PushPull { reply: true, members }, Vec::new());
    assert_eq!(encode(&p, usize::MAX), Err(WireError::TooManyMembers { n: 65_536 }));
}

/// A count the remaining bytes cannot back is refused before allocating.
#[test]
fn counts_larger_than_the_input_are_rejected_up_front() {
    let pp = packet(Message::PushPull { reply: true, members: Vec::new() }, Vec::new());
    let mut bytes = encode(&pp, MAX_STREAM).unwrap();
    let at = bytes.len() - 3;
    bytes[at..at + 2].copy_from_slice(&u16::MAX.to_be_bytes());
    assert_eq!(decode(&bytes, MAX_STREAM), Err(WireError::Truncated { what: "members" }));

    let mut bytes = valid_ack();
    *bytes.last_mut().unwrap() = 1; // one update, no bytes for it
    bytes.extend_from_slice(&[0; MIN_UPDATE_LEN - 1]);
    assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::Truncated { what: "updates" }));
}

#[test]
fn trailing_bytes_are_counted() {
    let mut bytes = valid_ack();
    bytes.extend_from_slice(&[0, 0, 0]);
    assert_eq!(decode(&bytes, MAX_DATAGRAM), Err(WireError::TrailingBytes { n: 3 }));
}

#[test]
fn messages_are_lowercase_without_a_trailing_period_and_name_the_value() {
    let cases: [(WireError, &str); 16] = [
        (WireError::Truncated { what: "incarnation" }, "truncated packet while reading the incarnation"),
        (WireError::TooLarge { len: 1401, max: 1400 }, "packet of 1401 bytes exceeds the limit of 1400 bytes"),
        (WireError::BadMagic, "bad magic: not a vigil packet (expected \"VG\")"),
        (WireError::UnsupportedVersion(1), "unsupported wire version 1 (this build speaks version 2)"),
        (WireError::UnknownMessage(9), "unknown message kind 9"),
        (WireError::UnknownStatus(7), "unknown member status 7"),
        (WireError::UnknownAddressFamily(5), "unknown address family 5 (expected 4 or 6)"),
        (WireError::BadName { reason: BadNameReason::Empty }, "bad member name: empty"),
        (
            WireError::BadName { reason: BadNameReason::TooLong { len: 65 } },
            "bad member name: 65 bytes long, more than the maximum of 64",
        ),
        (
            WireError::BadName { reason: BadNameReason::InvalidUtf8 { valid_up_to: 3 } },
            "bad member name: not valid utf-8 after the first 3 bytes",
        ),
        (WireError::BadBool(2), "invalid boolean byte 2 (expected 0 or 1)"),
        (
            WireError::BadVarint { what: "incarnation" },
            "the incarnation is not a varint in its shortest form within its field's range",
        ),
        (WireError::RedundantSource, "an update's source is written out although it is the member"),
        (WireError::TooManyUpdates { n: 256 }, "256 piggybacked updates exceed the maximum of 255"),
        (WireError::TooManyMembers { n: 65_536 }, "65536 push-pull members exceed the maximum of 65535"),
        (WireError::TrailingBytes { n: 3 }, "3 trailing bytes after the packet"),
    ];
    for (err, text) in cases {
        let shown = err.to_string();
        assert_eq!(shown, text);
        assert!(!shown.ends_with('.'));
        assert!(shown.starts_with(|c: char| !c.is_uppercase()));
    }
    assert_eq!(WireError::Bug("x").to_string(), "bug in the wire codec: x");
}

#[test]
fn errors_are_send_sync_and_static() {
    fn check<E: std::error::Error + Send + Sync + 'static>() {}
    check::<WireError>();
}

/// Tags are checked as strictly as the rest: each malformed form is refused
/// by name, and the well-formed one decodes to what was sent.
#[test]
fn malformed_tags_are_refused() {
    let id = NodeId::new("a", 1);
    let with = |tags: Option<Tags>| Update {
        id: id.clone(),
        addr: v4([1, 2, 3, 4], 5),
        incarnation: 0,
        status: Status::Alive,
        from: id.clone(),
        tags,
    };
    let good = ping(1, vec![with(Some(Tags::new([("k", "v"), ("l", "")]).unwrap()))]);
    let bytes = encode(&good, MAX_DATAGRAM).unwrap();
    assert_eq!(decode(&bytes, MAX_DATAGRAM).unwrap(), good);
    // The tags are the last 8 bytes: length 7, "k" "v", "l" "".
    let tail = bytes.len() - 8;
    assert_eq!(&bytes[tail..], &[7, 1, b'k', 1, b'v', 1, b'l', 0]);
    let with_tail = |t: &[u8]| [&bytes[..tail], t].concat();
    let cases: [(&[u8], &str); 5] = [
        (&[5, 1, b'l', 0, 1, b'k'], "a pair cut short"),
        (&[6, 1, b'l', 0, 1, b'k', 0], "keys not strictly ascending"),
        (&[6, 1, b'k', 0, 1, b'k', 0], "keys not strictly ascending"),
        (&[3, 0, 1, b'v'], "an empty key"),
        (&[3, 1, 0xff, 0], "not utf-8"),
    ];
    for (t, reason) in cases {
        assert_eq!(decode(&with_tail(t), MAX_DATAGRAM), Err(WireError::BadTags { reason }), "{t:?}");
    }
    // A length over the limit is refused before the bytes are looked at.
    let mut long = bytes[..tail].to_vec();
    write_varint(513, &mut long);
    long.extend(std::iter::repeat_n(1, 513));
    assert_eq!(decode(&long, MAX_STREAM), Err(WireError::BadTags { reason: "longer than the maximum" }));
    // A length beyond the input is a truncation.
    assert_eq!(decode(&with_tail(&[9, 1, b'k']), MAX_DATAGRAM), Err(WireError::Truncated { what: "tags" }));
    // No tags and empty tags are different statements, both exact.
    for tags in [None, Some(Tags::default())] {
        let p = ping(1, vec![with(tags)]);
        assert_eq!(decode(&encode(&p, MAX_DATAGRAM).unwrap(), MAX_DATAGRAM).unwrap(), p);
    }
}
