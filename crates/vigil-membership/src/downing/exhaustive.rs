//! The decision rule checked on every picture of every cluster of up to
//! five members: not a sample.
//!
//! A *configuration* is a cluster of `n` members, some crashed (they decide
//! nothing, and every live member finds them unreachable), and a row for
//! every live member: any set of the others that includes the crashed. Each
//! live member decides from its own picture: its row, and the rows of the
//! members it reaches (rows are first-hand, so it holds exactly those;
//! records forged by strangers never reach a picture, and `decide` ignores
//! records naming anyone who is not a member). For every configuration and
//! every strategy (each tie-break, age order, tag and referee setting
//! below), the decisions are held to:
//!
//! - **no split brain**: no member that survives downs another member that
//!   survives; with `lease-majority`, whichever holder the lease is granted
//!   to (or none);
//! - **no collateral**: when the only faults are crashes within the
//!   strategy's tolerance, every live member survives and downs exactly the
//!   crashed; and so do all but one, whatever that one's row says (a member
//!   holding the key lying about what it finds), while the others without
//!   it are within the tolerance — except under `lease-majority` (whoever
//!   takes the lease decides) and where that one member decides by design
//!   (the oldest, the referee);
//! - **never a fully connected member**: a member that every live member
//!   reaches and that reaches every live member is downed by nobody,
//!   itself included, while the live members are within the tolerance
//!   (`lease-majority` and `down-all` aside: there, whoever loses the lease,
//!   or any unreachable member, stops it by design);
//! - **clean partitions are decided**: when two sides each find the other
//!   unreachable, the side the strategy keeps survives and downs the other,
//!   and the other downs itself; under `lease-majority` the two sides ask
//!   for different holders.

use super::*;

/// One strategy to check, by name, with the members it weighs (ages and
/// tags vary with the strategy).
struct Variant {
    name: String,
    strategy: Strategy,
    members: Vec<Candidate>,
}

/// `n` members `a`, `b`, ...: addresses in order (the first is the
/// lowest), ages in order (the first is the oldest) unless `reversed`.
fn members(n: usize, reversed: bool, tagged: &[usize]) -> Vec<Candidate> {
    (0..n)
        .map(|i| {
            let name = ((b'a' + i as u8) as char).to_string();
            let addr = SocketAddr::from(([127, 0, 0, 1], 7946 + i as u16));
            let age = if reversed { (n - i) as u64 } else { i as u64 + 1 };
            let tags = if tagged.contains(&i) { Tags::new([("role", "db")]).unwrap() } else { Tags::default() };
            Candidate { name, addr, age, tags }
        })
        .collect()
}

fn variants(n: usize) -> Vec<Variant> {
    let plain = members(n, false, &[]);
    let referee = plain[n.min(2) - 1].addr;
    let db = Some(TagFilter { key: "role".into(), value: "db".into() });
    let mut v = vec![
        Variant {
            name: "keep-majority".into(),
            strategy: Strategy::KeepMajority { tag: None },
            members: plain.clone(),
        },
        Variant {
            name: "keep-majority:tag=role=db (the last two tagged)".into(),
            strategy: Strategy::KeepMajority { tag: db.clone() },
            members: members(n, false, &[n.saturating_sub(2), n - 1]),
        },
        Variant {
            name: format!("static-quorum:size={}", n / 2 + 1),
            strategy: Strategy::StaticQuorum { size: n / 2 + 1, tag: None },
            members: plain.clone(),
        },
        Variant {
            name: "keep-oldest".into(),
            strategy: Strategy::KeepOldest { down_if_alone: true, tag: None },
            members: plain.clone(),
        },
        Variant {
            name: "keep-oldest (the oldest holds the highest address)".into(),
            strategy: Strategy::KeepOldest { down_if_alone: true, tag: None },
            members: members(n, true, &[]),
        },
        Variant {
            name: "keep-oldest:down-if-alone=off".into(),
            strategy: Strategy::KeepOldest { down_if_alone: false, tag: None },
            members: plain.clone(),
        },
        Variant {
            name: "keep-referee (b)".into(),
            strategy: Strategy::KeepReferee { referee, down_all_if_less_than: 1 },
            members: plain.clone(),
        },
        Variant {
            name: "keep-referee (b), down-all-if-less-than=2".into(),
            strategy: Strategy::KeepReferee { referee, down_all_if_less_than: 2 },
            members: plain.clone(),
        },
        Variant {
            name: "lease-majority".into(),
            strategy: Strategy::LeaseMajority { acquire_delay_for_minority: Duration::from_secs(2), tag: None },
            members: plain.clone(),
        },
        Variant { name: "down-all".into(), strategy: Strategy::DownAll, members: plain.clone() },
    ];
    // A quorum the cluster outgrew: every member that finds another
    // unreachable downs itself.
    if n >= 3 {
        let size = (n - 1) / 2;
        v.push(Variant {
            name: format!("static-quorum:size={size} (outgrown)"),
            strategy: Strategy::StaticQuorum { size, tag: None },
            members: plain,
        });
    }
    v
}

fn bits(n: usize, mask: u32) -> Bits {
    let mut b = Bits::with(n);
    for i in (0..n).filter(|i| mask & (1 << i) != 0) {
        b.insert(i);
    }
    b
}

fn mask(b: &Bits) -> u32 {
    b.iter().fold(0, |m, i| m | (1 << i))
}

/// What each live member decided in one configuration.
struct Decided {
    /// Per member: `None` if crashed.
    rulings: Vec<Option<Ruling>>,
}

/// The lease's holder for a core: the core itself (its name is a digest
/// of its members, so distinct cores never share one).
fn holder(core: &Bits) -> Option<u32> {
    Some(mask(core))
}

/// Whether the decisions leave a member that survives downing another that
/// survives, for the lease granted to `winner` (a holder) or to nobody. A
/// member refused the lease survives if nothing threatens it, or if the
/// lease names a holder it reaches whose row does not hold it.
fn split_brain(d: &Decided, rows: &[u32], winner: Option<u32>) -> Option<(usize, usize)> {
    // Spared: the member the holder names (the first of the winning core,
    // in order) is x, or x reaches it and its row (the core's) does not
    // hold x.
    let spared = |x: usize| {
        winner.filter(|w| *w != 0).is_some_and(|w| {
            let c = w.trailing_zeros() as usize;
            c == x || (rows[x] & (1 << c) == 0 && rows[c] & (1 << x) == 0)
        })
    };
    let survives = |(x, r): &(usize, &Ruling)| match r.decision {
        Decision::Nothing | Decision::DownUnreachable => true,
        Decision::AskLease { .. } => holder(&r.core) == winner || r.threat.is_none() || spared(*x),
        _ => false,
    };
    let downs = |r: &Ruling| match r.decision {
        Decision::DownUnreachable => Some(mask(&r.down)),
        Decision::AskLease { .. } if holder(&r.core) == winner => Some(mask(&r.down)),
        _ => None,
    };
    let live: Vec<(usize, &Ruling)> =
        d.rulings.iter().enumerate().filter_map(|(i, r)| r.as_ref().map(|r| (i, r))).filter(|p| survives(p)).collect();
    for (a, ra) in &live {
        let Some(down) = downs(ra) else { continue };
        if let Some((b, _)) = live.iter().find(|(b, _)| down & (1 << b) != 0) {
            return Some((*a, *b));
        }
    }
    None
}

/// The counts a run of the check reports.
#[derive(Debug, Default)]
struct Counted {
    configurations: u64,
    cases: u64,
    decisions: u64,
    crash_only: u64,
    one_disagreeing: u64,
    fully_connected: u64,
    clean_partitions: u64,
}

fn describe(n: usize, crashed: u32, rows: &[u32]) -> String {
    let name = |i: usize| ((b'a' + i as u8) as char).to_string();
    let set = |m: u32| (0..n).filter(|i| m & (1 << i) != 0).map(name).collect::<Vec<_>>().join("");
    let rows: Vec<String> =
        (0..n).filter(|i| crashed & (1 << i) == 0).map(|i| format!("{}:{{{}}}", name(i), set(rows[i]))).collect();
    format!("crashed {{{}}}, rows {}", set(crashed), rows.join(" "))
}

/// Checks every configuration of `n` members against every variant.
fn check(n: usize, counted: &mut Counted) {
    let all = (1u32 << n) - 1;
    let variants = variants(n);
    let member_refs: Vec<Vec<&Candidate>> = variants.iter().map(|v| v.members.iter().collect()).collect();
    let mut rows_bits: Vec<Bits> = vec![Bits::with(n); n];
    for crashed in 0..all {
        let live: Vec<usize> = (0..n).filter(|i| crashed & (1 << i) == 0).collect();
        // Each live member's row: the crashed, plus any of the other live
        // members. Enumerated as one counter over every live row's free
        // part.
        let free: Vec<u32> = live.iter().map(|&x| all & !crashed & !(1 << x)).collect();
        let free_bits: Vec<Vec<usize>> = free.iter().map(|f| (0..n).filter(|i| f & (1 << i) != 0).collect()).collect();
        let total_bits: usize = free_bits.iter().map(Vec::len).sum();
        let live_mask = all & !crashed;
        for choice in 0u64..(1 << total_bits) {
            let mut rows = vec![0u32; n];
            let mut at = 0;
            for (k, &x) in live.iter().enumerate() {
                let mut row = crashed;
                for &i in &free_bits[k] {
                    if choice & (1 << at) != 0 {
                        row |= 1 << i;
                    }
                    at += 1;
                }
                rows[x] = row;
            }
            for (x, b) in rows_bits.iter_mut().enumerate() {
                *b = bits(n, rows[x]);
            }
            counted.configurations += 1;
            let crash_only = live.iter().all(|&x| rows[x] == crashed);
            let disagreeing: Vec<usize> = live.iter().copied().filter(|&x| rows[x] != crashed).collect();
            let fully: Vec<usize> = live
                .iter()
                .copied()
                .filter(|&v| rows[v] == crashed && live.iter().all(|&x| rows[x] & (1 << v) == 0))
                .collect();
            // Two sides, each finding exactly the other unreachable.
            let side_a = rows[live[0]];
            let clean = crashed == 0
                && side_a != 0
                && live.iter().all(|&x| {
                    let other = if side_a & (1 << x) != 0 { all & !side_a } else { side_a };
                    rows[x] == other
                });
            counted.crash_only += u64::from(crash_only);
            counted.one_disagreeing += u64::from(disagreeing.len() == 1);
            counted.fully_connected += u64::from(!fully.is_empty());
            counted.clean_partitions += u64::from(clean);
            for (v, variant) in variants.iter().enumerate() {
                counted.cases += 1;
                let refs = &member_refs[v];
                let rulings: Vec<Option<Ruling>> = (0..n)
                    .map(|x| (crashed & (1 << x) == 0).then(|| rule(&variant.strategy, refs, x, &rows_bits)))
                    .collect();
                counted.decisions += live.len() as u64;
                let d = Decided { rulings };
                let w = Weigh { strategy: &variant.strategy, members: refs };
                let what = || format!("{} members, {}: {}", n, variant.name, describe(n, crashed, &rows));
                // No split brain, whoever takes the lease.
                let holders: BTreeSet<Option<u32>> = d
                    .rulings
                    .iter()
                    .flatten()
                    .filter(|r| matches!(r.decision, Decision::AskLease { .. }))
                    .map(|r| holder(&r.core))
                    .chain([None])
                    .collect();
                for winner in holders {
                    if let Some((a, b)) = split_brain(&d, &rows, winner) {
                        panic!(
                            "split brain: {} survives and downs {}, which survives ({}; lease to {winner:?})",
                            a,
                            b,
                            what()
                        );
                    }
                }
                let lease = matches!(variant.strategy, Strategy::LeaseMajority { .. });
                let by_design = matches!(variant.strategy, Strategy::DownAll) || w.overgrown();
                // No collateral: crashes only, within the tolerance.
                if crash_only && w.kept(&bits(n, live_mask)) && !by_design {
                    for &x in &live {
                        let r = d.rulings[x].as_ref().unwrap();
                        let expected = match (crashed, lease) {
                            (0, _) => Decision::Nothing,
                            (_, true) => r.decision,
                            (_, false) => Decision::DownUnreachable,
                        };
                        assert_eq!(r.decision, expected, "{}: member {x}", what());
                        assert_eq!(
                            mask(&r.down),
                            if crashed == 0 { 0 } else { crashed },
                            "{}: member {x} downs",
                            what()
                        );
                        assert!(r.threat.is_none() || lease, "{}: member {x} threatened", what());
                    }
                    // Under a lease they all ask for one holder.
                    let asked: BTreeSet<Option<u32>> =
                        live.iter().filter_map(|&x| d.rulings[x].as_ref()).map(|r| holder(&r.core)).collect();
                    assert!(!lease || crashed == 0 || asked.len() == 1, "{}: holders {asked:?}", what());
                }
                // One member's row disagrees (it lies): the others, within
                // the tolerance without it, survive and down the crashed.
                if let [liar] = disagreeing[..] {
                    let honest = live_mask & !(1 << liar);
                    let decisive = match &variant.strategy {
                        Strategy::KeepOldest { tag, .. } => w.oldest(tag) == Some(liar),
                        Strategy::KeepReferee { referee, .. } => refs[liar].addr == *referee,
                        _ => false,
                    };
                    if w.kept(&bits(n, honest)) && !by_design && !lease && !decisive {
                        for &x in live.iter().filter(|&&x| x != liar) {
                            let r = d.rulings[x].as_ref().unwrap();
                            let expected = if crashed == 0 { Decision::Nothing } else { Decision::DownUnreachable };
                            assert_eq!(r.decision, expected, "{}: honest member {x}", what());
                            assert_eq!(mask(&r.down), crashed, "{}: honest member {x} downs", what());
                        }
                    }
                }
                // A fully connected member is downed by nobody.
                if w.kept(&bits(n, live_mask)) && !by_design && !lease {
                    for &v in &fully {
                        let r = d.rulings[v].as_ref().unwrap();
                        assert!(
                            matches!(r.decision, Decision::Nothing | Decision::DownUnreachable),
                            "{}: fully connected member {v} decided {}",
                            what(),
                            r.decision
                        );
                        for (x, other) in d.rulings.iter().enumerate() {
                            if let Some(o) = other.as_ref().filter(|o| o.decision == Decision::DownUnreachable) {
                                assert!(!o.down.contains(v), "{}: {x} downs the fully connected {v}", what());
                            }
                        }
                    }
                }
                // A clean partition is decided.
                if clean && !by_design {
                    let a = bits(n, all & !side_a);
                    let b = bits(n, side_a);
                    for (side, other) in [(&a, side_a), (&b, all & !side_a)] {
                        let kept = w.kept(side);
                        for x in side.iter() {
                            let r = d.rulings[x].as_ref().unwrap();
                            if lease {
                                assert!(matches!(r.decision, Decision::AskLease { .. }), "{}: {x}", what());
                                assert_eq!(mask(&r.down), other, "{}: {x}", what());
                            } else if kept {
                                assert_eq!(r.decision, Decision::DownUnreachable, "{}: {x} of the kept side", what());
                                assert_eq!(mask(&r.down), other, "{}: {x}", what());
                            } else if w.kept(&bits(n, other)) {
                                assert_eq!(r.decision, Decision::DownReachable, "{}: {x} of the other side", what());
                            }
                        }
                    }
                    if lease {
                        let ha = holder(&d.rulings[a.iter().next().unwrap()].as_ref().unwrap().core);
                        let hb = holder(&d.rulings[b.iter().next().unwrap()].as_ref().unwrap().core);
                        assert_ne!(ha, hb, "{}: both sides ask for one holder", what());
                    }
                }
            }
        }
    }
}

#[test]
fn no_picture_of_up_to_five_members_leaves_two_surviving_sides_or_downs_a_correct_member() {
    let mut total = Counted::default();
    for n in 2..=5 {
        let mut counted = Counted::default();
        check(n, &mut counted);
        println!(
            "{n} members: {} configurations × {} strategies = {} cases, {} decisions; of them {} crash-only, {} with one \
             member disagreeing, {} with a fully connected member, {} clean partitions",
            counted.configurations,
            variants(n).len(),
            counted.cases,
            counted.decisions,
            counted.crash_only,
            counted.one_disagreeing,
            counted.fully_connected,
            counted.clean_partitions
        );
        total.configurations += counted.configurations;
        total.cases += counted.cases;
        total.decisions += counted.decisions;
    }
    println!("in all: {} configurations, {} cases, {} decisions", total.configurations, total.cases, total.decisions);
    // Every configuration: for n members, the crashed sets (all but
    // everyone) and, for each, every row of every live member over the
    // other live members.
    let expected: u64 = (2..=5u32)
        .map(|n| {
            (0..n)
                .map(|c| {
                    let live = u64::from(n - c);
                    let ways: u64 = (1..=n as u64).product::<u64>()
                        / ((1..=u64::from(c)).product::<u64>() * (1..=live).product::<u64>());
                    ways * (1u64 << (live * (live - 1)))
                })
                .sum::<u64>()
        })
        .sum();
    assert_eq!(total.configurations, expected);
}
