//! Who survives a partition: the decision to down members, apart from
//! finding them unreachable.
//!
//! Under a partition both sides find the other unreachable, and neither is
//! wrong from where it stands. Declaring the other side dead, as the
//! protocol's automatic verdict does ([`Strategy::Auto`]), leaves two
//! clusters that each believe they own every leader, lease and shard. The
//! strategies here (those of Akka's Split Brain Resolver) decide instead,
//! from what one member knows, which members keep acting as the cluster; a
//! runtime calls [`decide`] once that knowledge has held still for long
//! enough ([`crate::stability::Stability`]).
//!
//! # What a member decides from
//!
//! Each member keeps a *row*: the members it finds unreachable itself (its
//! probes, direct and through others, went unanswered, and the suspicion
//! ran out without a refutation). It sends its row to every member it can
//! reach, and takes another member's row from that member only, in a
//! datagram from the member's own address (sealed with the cluster's key
//! when the cluster seals): a record is first-hand or it is nothing. Its
//! [`Picture`] is its own row and the rows of the members it can reach.
//!
//! # The rule
//!
//! A member's *core* is the members it can reach whose row is its own
//! (itself included): the members that, as far as it knows, see the
//! cluster exactly as it does. It decides:
//!
//! 1. its row is not empty, and the strategy keeps its core against the
//!    rest of the membership ([`keeps`]): it *survives*, and downs the
//!    members of its row ([`Decision::DownUnreachable`]); with
//!    `lease-majority`, it asks the lease for its core first;
//! 2. otherwise, if it is *threatened*, it downs itself
//!    ([`Decision::DownReachable`]): the strategy would keep the members
//!    it cannot reach (a side it cannot see), or a member it reaches finds
//!    it unreachable and the members that could share that member's row
//!    (those it reaches with the same row, and those it cannot reach that
//!    are not in the row) would be kept;
//! 3. otherwise it *waits* ([`Decision::Nothing`]): it downs nobody, and
//!    decides again when its picture changes.
//!
//! A member whose row is empty downs nobody; it downs itself only if
//! threatened.
//!
//! # What downing promises
//!
//! **(a) No split brain.** Whatever rows the members hold, when each
//! decides from its own picture, no member that survives downs another
//! member that survives. Two cores the strategy keeps share a member (two
//! majorities of one membership meet; so do two static quorums of a
//! cluster no larger than `2 × size − 1`, two sides holding the oldest,
//! two holding the referee; the lease grants one holder at a time, named
//! after the core's members by [`lease_holder`], so two different cores
//! never share one), and a member in two cores has one row, so the two
//! cores are one, with one row: neither holds the other's members in its
//! row. A member one survivor downs is threatened by it: either it
//! reaches a member of that core (whose row names it, and whose possible
//! sharers are kept), or it reaches none of them (then they are among the
//! members it cannot reach, which would be kept). A member refused the
//! lease survives only if the holder names a member it reaches whose row
//! does not hold it (and that did not tell it, first-hand, that it holds
//! it dead: a row leaves out the members its sender holds dead). This is
//! checked for every picture of clusters of 2 to
//! 5 members, every set of crashed members, every strategy and tie: a
//! test (`src/downing/exhaustive.rs`) of 1,074,206 configurations,
//! 11,816,260 cases and 58,786,608 decisions.
//!
//! The lease stays with the side that took it for as long as that side
//! acts as the cluster: each of its members renews it every
//! [`LEASE_RENEW_EVERY`] (30 s; the runtimes grant it for 120 s), so the
//! side it downed, re-formed on its own while the partition lasts, is
//! refused it however long that is. When that side splits again, each part
//! asks for its own core and names the holder it replaces
//! ([`LeaseRequest`]): the first part to ask takes the lease over, in one
//! compare-and-set, and the others are refused (without it, the old grant
//! would refuse every part, and a part that finds its own name first in
//! the holder would think itself spared; so a member refused by the
//! holder its own side took the lease for is spared only if that holder
//! names a member outside its core, which it reaches and whose row does
//! not hold it: the rest of its side holds the lease and counts it in, as
//! when it alone finds unreachable a member that left while it missed the
//! word). A member refused for a holder named after a member of its
//! own core (its side holds the lease, taken by that member's earlier
//! decision) downs, after the margin, those of the members it decided
//! about that this member, or another of its core, told it, first-hand,
//! it holds dead or gone (a newer process of the name in its place): the
//! side downs a member as one (without it, a member that alone still held
//! an impostor's process of a name kept it, and the name's own newer
//! process out, for as long as its side held the lease). So that such
//! word is not missed, a member told another's row, in which that member
//! cannot reach members it holds dead or gone, tells that member so,
//! first-hand, a few a probe interval. A member whose renewal finds
//! another side holding the lease (its side stopped renewing for longer
//! than the term: all paused, or the lease could not be asked) downs
//! itself unless that side counts it in. A member threatened under
//! `lease-majority` (a side that finds it unreachable could take the
//! lease) asks the lease for its own side before it downs itself, unless
//! it stalled lately: the side that threatens it needs the lease to down
//! anyone, and a member cut off alone, accusing the rest on and off, would
//! otherwise down healthy members one by one.
//!
//! Under `keep-majority`, `lease-majority` and `keep-oldest` with
//! down-if-alone (the oldest of two stays, of three it goes when alone), a
//! member this node's decision downed counts for two windows (`stable_after` and the margin,
//! twice) as unreachable from every member, unless this node knows a live
//! process of its name: it may have downed itself and rejoined a member
//! of the other side in the first moments of a new partition, before that
//! member found anyone unreachable, and a side that counted it out would
//! be a majority of a membership that is not the cluster's. The cost: a
//! 2 + 2 partition of five within two windows of a crash downs both sides
//! (the tie would have kept one); the tolerance below is counted on the
//! membership before the crash, and this keeps to it.
//!
//! Over time, a decision waits for the picture to hold still for
//! `stable_after`, and is carried out `down_removal_margin` later on the
//! members still unreachable (after a calm decision; after one that counted
//! flaps, also on those that flapped lately and that another member's row
//! holds too: a member that comes back in between was not on the other
//! side of anything, and one link flapping, seen from one member only, is
//! as likely that member's). It is carried out only if the members this
//! member still reaches, those it downs aside, are still a side the
//! strategy keeps; if not (it lost members of its side since: another
//! partition), it is dropped and decided again once the picture holds
//! still. A member takes a death that carries out a decision it took
//! itself, in the generation it decided, whatever incarnation the death
//! names, while it still finds the member unreachable itself or once two
//! members told it, first-hand, that they hold it dead: the members of a
//! side down a member as one (one member's word for a member this member
//! reaches again is checked with that member, as any verdict is). A member that
//! others downed while it could not decide (paused, cut off on and off)
//! learns it from the members that hold it dead, each telling it
//! first-hand, and downs itself once those members (with those it cannot
//! reach) could be a side the strategy keeps (under `lease-majority`, a
//! majority: the lease would keep any side, and one member's word would
//! down anyone), or two members have told it
//! (one of them at least is not a member holding the key that lies: a
//! correct member carried out a decision, and the member would otherwise
//! stay dead there and alive elsewhere), or one has and it stalled itself
//! lately, long enough to be decided about (its own absence explains the
//! verdict; a stall is its own to see; once per generation). A member that
//! stalled long (its timers ran at least half of `stable_after` late)
//! downs nobody on a decision taken before its detectors have looked
//! again, as long as it stalled: the members it has not heard since still
//! look reachable to it (one taken before the stall is carried out: its
//! picture was fresh). A newer process of a member a decision downed is
//! taken only while the member taking it reaches everyone (and has looked
//! again after a long stall): counted by a survivor cut off since from the
//! rest of its side, members downed together would make that survivor's
//! side out-count the side that downed them, which does not know them. A
//! member back after downing itself downs nobody until it has heard of
//! every member it knew then or seen the cluster whole for `stable_after`
//! (on a membership with holes the oldest may look alone). A
//! member that
//! hears nobody finds everyone unreachable and downs itself once that
//! picture held still, even where nothing it sees threatens it (it cannot
//! know what the others decided). A newer process of a member's name at
//! another address is taken only once a decision downed the old one (a
//! side that cannot reach a member must not count a second process of its
//! name in its place); an old process that did not answer, superseded by a
//! newer one the others speak of, counts as unreachable from every member
//! (they no longer hold it, and their silence is not reaching it), so that
//! it is decided about at all; a member this member cannot reach that
//! other members say, each first-hand, they hold dead counts as
//! unreachable from each of them (that side downed it and forgot it;
//! counted as their silence, this member's core would be itself alone);
//! and a newer process nobody here heard alive
//! is never taken dead on another member's word. A decision that one member of a side
//! carried out and the rest did not (their pictures differed, or they
//! reached the member again before their margins ended) leaves the member
//! dead there and alive everywhere else, told by one member only, which
//! is too little to down itself: the member that downed it withdraws its
//! verdict ([`Event::Withdrawn`](crate::Event::Withdrawn), then `Up`) if
//! nobody said it holds the member dead too and, two windows later
//! (`stable_after` and the margin, twice), the member still answers at its
//! address as the process downed. The simulator checks all of this over
//! random fault schedules (`vigil sim swarm`), which also find where it
//! falls short (the top-level README lists what it found and fixed): of
//! 50,000 schedules, none ends with two sides that each downed the other
//! or with a correct member downed or declared dead, and 2 with members
//! that do not see each other once faults stop (both the two-member
//! outage below).
//!
//! What no rule here can give: a side that downed itself in favour of a
//! side that then crashed (or downed itself in turn) cannot tell it from
//! a side still cut off. Under `keep-majority`, `keep-oldest` and
//! `keep-referee` it waits for it: re-formed on its own, counting members
//! downed since, it could out-count a side that did survive (the swarm
//! found it doing so when this was tried), and a split brain is worse
//! than an outage. A restart of one of its members (which joins through
//! its seeds) brings them back. Of two members (a cluster that small, or
//! one that partitions and crashes left so), each is alone when the other
//! goes, and only a lease tells a crash from a cut: one crash of the two
//! is an outage under `keep-majority` (of the member with the lowest
//! address, which the tie keeps) and `keep-oldest` (of the oldest, which
//! stays of two rather than being downed for being alone: downed so, the
//! other's crash would be the outage, and the side that keeps the oldest
//! would not be the one holding it). Two strategies re-form by themselves, as
//! the lease's arbitration and a fixed count make it safe:
//! `lease-majority`, whose lease says which side won, and
//! `static-quorum`, whose quorum is counted on no membership (a side
//! re-formed acts again only if it holds a quorum, and two sides of a
//! cluster no larger than `2 × size − 1` cannot both hold one). Each
//! waits `stable_after` and the margin first (doubled for each re-form in
//! a row, up to 120 s), then calls every member it knew (the members it
//! held dead too: one may have restarted, and found only another), and a
//! call from another downed side brings the next re-form forward.
//!
//! A member back after downing itself that stalled long lately counts
//! the cluster as seen whole only once its detectors have looked again:
//! packets the stall held up (sent before a new partition, perhaps) make
//! members look reachable whatever became of them, and a member knowing
//! only the one it rejoined through could judge it the oldest, alone (the
//! swarm found a split brain so).
//!
//! **(b) No collateral.** With `f` crashed members within the strategy's
//! tolerance (below) and any number of forged accusations, no correct
//! member is downed or declared dead: a stranger's records never enter a
//! picture, every correct member's row is the crashed members, its core
//! is every correct member, and the strategy keeps it. A member holding
//! the cluster's key controls its own row and nothing else: by disagreeing
//! it leaves its own place in the cores (it counts as one member fewer,
//! not as one more), so `f` crashed members and `i` such members down no
//! correct member while `f + i` is within the tolerance. Except where one
//! member's word decides by design: the oldest under `keep-oldest`, the
//! referee under `keep-referee`, and whoever can take the lease under
//! `lease-majority`. Two members holding the key can tell a member, each
//! first-hand, that they hold it dead: it downs itself (and rejoins in a
//! new generation), as it would for two correct members that downed it;
//! one can do so, once, to a member that has just stalled long enough to
//! be decided about. A member takes the death of a member its own
//! decision spared (it answered again) on two members' word, never one's,
//! so a member holding the key cannot get it declared dead in the moments
//! after a decision.
//!
//! **(c) No outage from a crash.** Within the tolerance, the correct
//! members survive crashes: detection, then `stable_after`, then the
//! removal margin before the crashed are declared dead. After a partition
//! heals, the members that downed themselves rejoin through those that
//! survived, at new generations, and call every member they knew
//! (members downed together may have rejoined through one another: the
//! two groups become one); those still cut off then are called again, one
//! each reconnect interval (`reconnect_interval`, 10 s on a LAN), until a
//! live member holds their address or `reconnect_timeout` passes, so two
//! groups that each came back through their own (every side downed
//! itself) meet within a reconnect interval of the heal. Members whose surviving side is gone as well
//! re-form under `lease-majority` and `static-quorum` (above), and wait
//! for a restart under the others. The tolerance, for `n` members of
//! which `f` crashed:
//!
//! | strategy | the correct members survive while |
//! |---|---|
//! | `keep-majority` | `f < n / 2`, or `f = n / 2` and the lowest address is a correct member's |
//! | `static-quorum:size=q` | `n − f ≥ q` (and `n ≤ 2q − 1`) |
//! | `keep-oldest` (down-if-alone, the default) | the oldest is correct, or it alone crashed of three or more members (of two, the oldest stays) |
//! | `keep-oldest:down-if-alone=off` | the oldest is correct |
//! | `keep-referee` | the referee is correct and `n − f` reaches `down-all-if-less-than` |
//! | `lease-majority` | the lease can be asked (a side that cannot ask it downs itself, and asks again when it rejoins); a side whose lease holder crashed waits for the lease's term to run out, 120 s after the holder's last renewal, and asks again within 120 s after that |
//! | `down-all` | never: any unreachable member stops the cluster, by design |
//!
//! **(d) Strangers.** Nothing a stranger sends changes a member's address,
//! status or reachability record unless the member itself confirms it: a
//! stranger's word about a known member changes nothing (this member may
//! probe the member and then act on its own evidence), rows are taken
//! first-hand, and a member's address changes only when it answers at the
//! new address as itself.
//!
//! What plaintext cannot give: without a key anyone who can reach a member
//! can join as a member of its own name, and then holds the powers of a
//! member holding the key above. A stranger cannot speak for a member it is
//! not (packets are judged by the address they come from; a forged source
//! address is outside what vigil defends against).
//!
//! ```
//! use vigil_membership::downing::{Decision, Picture, Strategy, decide};
//!
//! // Five members; d and e are cut off from a, b and c, and each side's
//! // members find the other side unreachable.
//! let majority = Strategy::KeepMajority { tag: None };
//! let picture = Picture::new("a", ["a", "b", "c", "d", "e"])
//!     .row("a", ["d", "e"])
//!     .row("b", ["d", "e"])
//!     .row("c", ["d", "e"]);
//! let verdict = decide(&majority, &picture);
//! assert_eq!(verdict.decision, Decision::DownUnreachable);
//! assert_eq!(verdict.down, ["d", "e"]);
//!
//! // The same partition from e's side: it is the minority, and downs itself.
//! let picture = Picture::new("e", ["a", "b", "c", "d", "e"]).row("e", ["a", "b", "c"]).row("d", ["a", "b", "c"]);
//! assert_eq!(decide(&majority, &picture).decision, Decision::DownReachable);
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use crate::tags::Tags;

/// A member as the strategies weigh it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its name.
    pub name: String,
    /// Where it is reached (a tie under `keep-majority` keeps the side
    /// holding the lowest address).
    pub addr: SocketAddr,
    /// Its age: the generation it joined with (lower is older).
    pub age: u64,
    /// Its tags (a strategy may count only members with a tag).
    pub tags: Tags,
}

/// What one member knows when it decides: itself, the members (itself
/// included), and the rows it holds: its own, and those of the members it
/// can reach, each as that member sent it (observer finds subject
/// unreachable). A runtime builds it from first-hand rows only; records of
/// members this one cannot reach (found in its own row) are left out when
/// it decides.
///
/// ```
/// use vigil_membership::downing::Picture;
///
/// let p = Picture::new("a", ["a", "b", "c"]).unreachable("a", "c");
/// assert_eq!(p.unreachable_members().collect::<Vec<_>>(), ["c"]);
/// assert_eq!(p.row_of("a").collect::<Vec<_>>(), ["c"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    /// The member deciding.
    pub me: String,
    /// Every member, by name, the deciding one included.
    pub members: BTreeMap<String, Candidate>,
    /// Observer → subject: the observer finds the subject unreachable.
    pub records: BTreeSet<(String, String)>,
}

impl Picture {
    /// A picture of members named `names` (addresses 127.0.0.1 and ports
    /// from 7946 in the order given, ages in the same order, no tags), as
    /// tests and examples build them; a runtime fills
    /// [`Picture::members`] itself.
    pub fn new<'a>(me: &str, names: impl IntoIterator<Item = &'a str>) -> Picture {
        let members = names
            .into_iter()
            .enumerate()
            .map(|(i, n)| {
                let addr = SocketAddr::from(([127, 0, 0, 1], 7946 + i as u16));
                (n.to_owned(), Candidate { name: n.to_owned(), addr, age: i as u64 + 1, tags: Tags::default() })
            })
            .collect();
        Picture { me: me.to_owned(), members, records: BTreeSet::new() }
    }

    /// The same picture with the record "`observer` finds `subject`
    /// unreachable".
    pub fn unreachable(mut self, observer: &str, subject: &str) -> Picture {
        self.records.insert((observer.to_owned(), subject.to_owned()));
        self
    }

    /// The same picture with a record from `observer` for each of
    /// `subjects`.
    pub fn row<'a>(self, observer: &str, subjects: impl IntoIterator<Item = &'a str>) -> Picture {
        subjects.into_iter().fold(self, |p, s| p.unreachable(observer, s))
    }

    /// Members some member finds unreachable.
    pub fn unreachable_members(&self) -> impl Iterator<Item = &str> {
        let subjects: BTreeSet<&str> = self.known_records().map(|(_, s)| s).collect();
        subjects.into_iter()
    }

    /// The members `observer` finds unreachable, in order.
    pub fn row_of<'a>(&'a self, observer: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.known_records().filter(move |(o, _)| *o == observer).map(|(_, s)| s)
    }

    /// The records whose observer and subject are both members here (and
    /// differ).
    fn known_records(&self) -> impl Iterator<Item = (&str, &str)> {
        self.records
            .iter()
            .filter(|(o, s)| o != s && self.members.contains_key(o) && self.members.contains_key(s))
            .map(|(o, s)| (o.as_str(), s.as_str()))
    }
}

/// Count only members with this tag (`KEY=VALUE`): a strategy can weigh
/// the members that matter (the data nodes, say) and decide for all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagFilter {
    /// The tag's key.
    pub key: String,
    /// The value it must have.
    pub value: String,
}

impl TagFilter {
    fn admits(&self, c: &Candidate) -> bool {
        c.tags.get(&self.key) == Some(self.value.as_str())
    }
}

/// How a member decides who survives a partition.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Strategy {
    /// No decision: every unreachable member is declared dead on its own
    /// (the protocol's automatic verdict). Both sides of a partition carry
    /// on: unsafe for anything exclusive (a leader, a lease, a shard).
    Auto,
    /// The side with more members survives; on a tie, the side holding the
    /// lowest address. Counted over members with `tag`, when given.
    KeepMajority {
        /// Count only these members (all, if none on either side has it).
        tag: Option<TagFilter>,
    },
    /// The side with at least `size` members survives; with fewer, a side
    /// downs itself if a quorum may be on the other side, and waits when
    /// no side can hold one. Never let the cluster grow past `2 × size −
    /// 1` members: then both sides of a partition can hold a quorum, and
    /// every member that finds another unreachable downs itself instead.
    StaticQuorum {
        /// The quorum.
        size: usize,
        /// Count only these members.
        tag: Option<TagFilter>,
    },
    /// The side holding the oldest member survives; with `down_if_alone`
    /// (the default in the text form), an oldest member cut off alone from
    /// two or more others goes and the others survive, so that its crash
    /// is not an outage (of two members, the oldest stays: either could be
    /// the one that crashed).
    KeepOldest {
        /// Down the oldest rather than everyone else when it is alone.
        down_if_alone: bool,
        /// Only members with this tag can be the oldest.
        tag: Option<TagFilter>,
    },
    /// The side holding the referee (a member's address) survives, if it
    /// has at least `down_all_if_less_than` members; a smaller side holding
    /// it does not survive (nobody downs anybody then: every side waits).
    KeepReferee {
        /// The referee's address.
        referee: SocketAddr,
        /// A side holding the referee with fewer members than this does
        /// not survive.
        down_all_if_less_than: usize,
    },
    /// The side that takes an external lease survives (a Kubernetes Lease,
    /// an etcd key, a file lock): a majority asks for it at once, a
    /// minority after `acquire_delay_for_minority`, so the majority wins
    /// when both can reach the lease.
    LeaseMajority {
        /// How long a minority waits before asking.
        acquire_delay_for_minority: Duration,
        /// Count only these members for the majority.
        tag: Option<TagFilter>,
    },
    /// Nobody survives: any member that finds another unreachable downs
    /// itself, so a partition or a crash stops the cluster.
    DownAll,
}

/// What a member decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Decision {
    /// Nothing to do: nobody is unreachable from this member, or it waits
    /// (its core is not kept, and nothing threatens it).
    Nothing,
    /// This member's side survives: the members of its row are downed.
    DownUnreachable,
    /// This member downs itself: its side loses, or a side that could be
    /// kept finds it unreachable.
    DownReachable,
    /// Nobody survives: this member downs itself, as every member that
    /// finds another unreachable does.
    DownAll,
    /// The lease decides: this side survives if it takes the lease (asked
    /// after the delay); otherwise this member downs itself if threatened,
    /// and waits if not.
    AskLease {
        /// When to ask, from the decision.
        after: Duration,
    },
    /// The protocol's own verdicts decide ([`Strategy::Auto`]).
    Auto,
}

/// The decision, the members it downs, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What was decided.
    pub decision: Decision,
    /// The members to down, by name: the members of this member's row when
    /// its side survives (for [`Decision::AskLease`], those downed if the
    /// lease is taken); this member (and the rest of its core, which
    /// decides alike) when it downs itself; everyone for
    /// [`Decision::DownAll`].
    pub down: Vec<String>,
    /// This member's core: the members it reaches whose row is its own.
    pub core: Vec<String>,
    /// Whether this member is threatened (see the module documentation):
    /// with [`Decision::AskLease`], whether it downs itself if the lease is
    /// refused.
    pub threatened: bool,
    /// Why, for a person.
    pub reason: String,
}

impl Verdict {
    /// Whether the deciding member is downed.
    pub fn downs_me(&self, picture: &Picture) -> bool {
        self.down.contains(&picture.me)
    }
}

/// A set of member indices (the members in name order).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn with(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn insert(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }
    fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
    fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(k, w)| (0..64).filter(move |b| w & (1 << b) != 0).map(move |b| k * 64 + b))
    }
    /// The members of `n` not in this set.
    fn complement(&self, n: usize) -> Bits {
        let mut c = Bits::with(n);
        for i in 0..n {
            if !self.contains(i) {
                c.insert(i);
            }
        }
        c
    }
}

/// What the rule gives, over member indices.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ruling {
    decision: Decision,
    /// The members downed (see [`Verdict::down`]).
    down: Bits,
    core: Bits,
    /// What threatens this member, if anything.
    threat: Option<Threat>,
}

/// What threatens a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Threat {
    /// The members it cannot reach could be a side the strategy keeps.
    Hidden,
    /// This member (index) finds it unreachable, and could share its row
    /// with a side the strategy keeps.
    Claimed(usize),
    /// It reaches no other member, and is no side the strategy keeps: cut
    /// off, or the last one standing; either way, no cluster.
    Alone,
}

/// The strategy's view of a membership: the members in name order.
struct Weigh<'a> {
    strategy: &'a Strategy,
    members: &'a [&'a Candidate],
}

impl Weigh<'_> {
    fn n(&self) -> usize {
        self.members.len()
    }

    fn counted(&self, side: &Bits, tag: &Option<TagFilter>) -> usize {
        match tag {
            Some(t) => side.iter().filter(|&i| self.members.get(i).is_some_and(|c| t.admits(c))).count(),
            None => side.len(),
        }
    }

    /// Whether a static quorum can be held by two sides at once: the
    /// cluster grew past `2 × size − 1` (counted members).
    fn overgrown(&self) -> bool {
        match self.strategy {
            Strategy::StaticQuorum { size, tag } => {
                let all = Bits::with(self.n()).complement(self.n());
                self.counted(&all, tag) > (2 * size).saturating_sub(1)
            }
            _ => false,
        }
    }

    /// Which side a majority keeps: `side` against the rest.
    fn majority(&self, side: &Bits, tag: &Option<TagFilter>) -> Side {
        let rest = side.complement(self.n());
        let tagged = |s: &Bits| -> Vec<usize> {
            match tag {
                Some(t) => s.iter().filter(|&i| self.members.get(i).is_some_and(|c| t.admits(c))).collect(),
                None => s.iter().collect(),
            }
        };
        let (mut m, mut t) = (tagged(side), tagged(&rest));
        if m.is_empty() && t.is_empty() {
            (m, t) = (side.iter().collect(), rest.iter().collect());
        }
        if m.len() != t.len() {
            return if m.len() > t.len() { Side::Mine } else { Side::Theirs };
        }
        // A tie: the side holding the lowest address.
        let lowest = |s: &[usize]| s.iter().filter_map(|&i| self.members.get(i)).map(|c| c.addr).min();
        match (lowest(&m), lowest(&t)) {
            (Some(a), Some(b)) if a < b => Side::Mine,
            (Some(_), None) => Side::Mine,
            _ => Side::Theirs,
        }
    }

    /// The oldest member (lowest age, then address), among those with the
    /// tag if any has it.
    fn oldest(&self, tag: &Option<TagFilter>) -> Option<usize> {
        let by = |i: &usize| self.members.get(*i).map(|c| (c.age, c.addr));
        let all = 0..self.n();
        let tagged =
            all.clone().filter(|&i| tag.as_ref().is_none_or(|t| self.members.get(i).is_some_and(|c| t.admits(c))));
        tagged.min_by_key(by).or_else(|| all.min_by_key(by))
    }

    /// Whether the strategy keeps `side` against the rest of the
    /// membership: whether a core that is `side` survives.
    fn kept(&self, side: &Bits) -> bool {
        if side.is_empty() {
            return false;
        }
        let n = self.n();
        match self.strategy {
            Strategy::Auto | Strategy::DownAll => false,
            Strategy::KeepMajority { tag } => self.majority(side, tag) == Side::Mine,
            Strategy::StaticQuorum { size, tag } => !self.overgrown() && self.counted(side, tag) >= *size,
            Strategy::KeepOldest { down_if_alone, tag } => {
                let Some(oldest) = self.oldest(tag) else { return false };
                // Of two members, each is alone: downing the oldest would
                // trade one outage for the other, and the oldest stays.
                let alone_counts = *down_if_alone && n > 2;
                if side.contains(oldest) {
                    !(alone_counts && side.len() == 1)
                } else {
                    alone_counts && n - side.len() == 1
                }
            }
            Strategy::KeepReferee { referee, down_all_if_less_than } => {
                side.iter().any(|i| self.members.get(i).is_some_and(|c| c.addr == *referee))
                    && side.len() >= *down_all_if_less_than
            }
            // Any side may take the lease.
            Strategy::LeaseMajority { .. } => true,
        }
    }
}

/// Which side a majority keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Mine,
    Theirs,
}

/// The rule of the module documentation, over member indices: `rows[x]`
/// is member `x`'s row as `me` holds it (its own, and those of the members
/// it reaches; the rows of members it cannot reach are not looked at).
fn rule(strategy: &Strategy, members: &[&Candidate], me: usize, rows: &[Bits]) -> Ruling {
    let n = members.len();
    let w = Weigh { strategy, members };
    let empty = Bits::with(n);
    let row = |x: usize| rows.get(x).unwrap_or(&empty);
    let mine = row(me);
    let reached = |x: usize| x != me && !mine.contains(x);
    // The core: the members reached whose row is this member's own.
    let mut core = Bits::with(n);
    core.insert(me);
    for x in (0..n).filter(|&x| reached(x)) {
        if row(x) == mine {
            core.insert(x);
        }
    }
    let ruling = |decision, down, threat| Ruling { decision, down, core: core.clone(), threat };
    if matches!(strategy, Strategy::Auto) {
        return ruling(Decision::Auto, Bits::with(n), None);
    }
    // What threatens this member: a side it cannot see, or a side that
    // finds it unreachable.
    let threatened = || {
        if w.kept(mine) {
            Some(Threat::Hidden)
        } else {
            (0..n).filter(|&c| reached(c) && row(c).contains(me)).find_map(|c| {
                let theirs = row(c);
                let mut could = Bits::with(n);
                for x in 0..n {
                    let shares = if reached(x) || x == me { x != me && row(x) == theirs } else { !theirs.contains(x) };
                    if shares {
                        could.insert(x);
                    }
                }
                w.kept(&could).then_some(Threat::Claimed(c))
            })
        }
    };
    let needs_threat = mine.is_empty()
        || !w.kept(&core)
        || matches!(strategy, Strategy::LeaseMajority { .. } | Strategy::DownAll | Strategy::StaticQuorum { .. });
    let threat = if needs_threat { threatened() } else { None };
    let me_alone = {
        let mut b = Bits::with(n);
        b.insert(me);
        b
    };
    if mine.is_empty() {
        return match threat {
            Some(t) => ruling(Decision::DownReachable, me_alone, Some(t)),
            None => ruling(Decision::Nothing, Bits::with(n), None),
        };
    }
    let everyone = empty.complement(n);
    match strategy {
        Strategy::DownAll => return ruling(Decision::DownAll, everyone, threat),
        Strategy::StaticQuorum { .. } if w.overgrown() => return ruling(Decision::DownAll, everyone, threat),
        Strategy::LeaseMajority { acquire_delay_for_minority, tag } => {
            let after = match w.majority(&core, tag) {
                Side::Mine => Duration::ZERO,
                Side::Theirs => *acquire_delay_for_minority,
            };
            return ruling(Decision::AskLease { after }, mine.clone(), threat);
        }
        _ => {}
    }
    if w.kept(&core) {
        return ruling(Decision::DownUnreachable, mine.clone(), None);
    }
    match threat {
        // Its side loses: the core decides alike.
        Some(Threat::Hidden) => ruling(Decision::DownReachable, core.clone(), threat),
        Some(Threat::Claimed(_) | Threat::Alone) => ruling(Decision::DownReachable, me_alone, threat),
        // Nothing threatens it, but it reaches nobody: it cannot know what
        // the others decided, and no side that survives it would hear it
        // again otherwise (it stays out of their cluster, acting alone).
        None if mine.len() + 1 == n => ruling(Decision::DownReachable, me_alone, Some(Threat::Alone)),
        None => ruling(Decision::Nothing, Bits::with(n), None),
    }
}

/// Decides, for the member `picture.me`, who survives: see the module
/// documentation. A `me` that is not among the members decides nothing.
pub fn decide(strategy: &Strategy, picture: &Picture) -> Verdict {
    let members: Vec<&Candidate> = picture.members.values().collect();
    let index: BTreeMap<&str, usize> = members.iter().enumerate().map(|(i, c)| (c.name.as_str(), i)).collect();
    let Some(&me) = index.get(picture.me.as_str()) else {
        let reason = format!("{} is not among the members", picture.me);
        return Verdict { decision: Decision::Nothing, down: Vec::new(), core: Vec::new(), threatened: false, reason };
    };
    let n = members.len();
    let mut rows = vec![Bits::with(n); n];
    for (o, s) in picture.known_records() {
        if let (Some(&o), Some(&s)) = (index.get(o), index.get(s)) {
            rows[o].insert(s);
        }
    }
    let r = rule(strategy, &members, me, &rows);
    let names = |b: &Bits| b.iter().filter_map(|i| members.get(i)).map(|c| c.name.clone()).collect::<Vec<_>>();
    let reason = explain(strategy, &members, me, &rows, &r);
    Verdict { decision: r.decision, down: names(&r.down), core: names(&r.core), threatened: r.threat.is_some(), reason }
}

/// Whether `strategy` keeps the members `side` (by name) against the rest
/// of `picture`'s members: whether a core that is exactly `side` survives
/// (see the module documentation). Names that are not members are
/// ignored.
///
/// ```
/// use vigil_membership::downing::{Picture, Strategy, keeps};
///
/// let p = Picture::new("e", ["a", "b", "c", "d", "e"]);
/// let majority = Strategy::KeepMajority { tag: None };
/// assert!(keeps(&majority, &p, &["a", "b", "c"]));
/// assert!(!keeps(&majority, &p, &["a"]));
/// ```
pub fn keeps(strategy: &Strategy, picture: &Picture, side: &[&str]) -> bool {
    let members: Vec<&Candidate> = picture.members.values().collect();
    let mut bits = Bits::with(members.len());
    for (i, c) in members.iter().enumerate() {
        if side.contains(&c.name.as_str()) {
            bits.insert(i);
        }
    }
    Weigh { strategy, members: &members }.kept(&bits)
}

/// The name a side asks the lease for: `side-`, a digest of its members'
/// names, and the first of them in order, so that two different sides
/// never share one (were a member's name the side's name, a side that a
/// stale picture made could be granted the lease another side holds),
/// every member of a side asks for the same one, and a member refused the
/// lease can tell one member of the side that holds it
/// ([`lease_holder_member`]).
///
/// ```
/// use vigil_membership::downing::{lease_holder, lease_holder_member};
///
/// assert_eq!(lease_holder(&["a", "b"]), lease_holder(&["b", "a"]));
/// assert_ne!(lease_holder(&["a", "b"]), lease_holder(&["a"]));
/// assert!(lease_holder(&["a"]).starts_with("side-"));
/// assert_eq!(lease_holder_member(&lease_holder(&["b-2", "a-1"])), Some("a-1"));
/// ```
pub fn lease_holder(side: &[&str]) -> String {
    let mut names: Vec<&str> = side.to_vec();
    names.sort_unstable();
    names.dedup();
    let mut bytes = Vec::new();
    for n in &names {
        bytes.extend_from_slice(n.as_bytes());
        bytes.push(0);
    }
    let first = names.first().copied().unwrap_or_default();
    format!("side-{:016x}-{first}", vigil_detector::fnv::fnv1a(&bytes))
}

/// The member a holder made by [`lease_holder`] names (the first of its
/// side's members in order); `None` for a holder made otherwise.
pub fn lease_holder_member(holder: &str) -> Option<&str> {
    let rest = holder.strip_prefix("side-")?;
    let (digest, name) = (rest.get(..16)?, rest.get(16..)?.strip_prefix('-')?);
    (digest.bytes().all(|b| b.is_ascii_hexdigit()) && !name.is_empty()).then_some(name)
}

/// Why a ruling was given, for a person.
fn explain(strategy: &Strategy, members: &[&Candidate], me: usize, rows: &[Bits], r: &Ruling) -> String {
    let name = |i: usize| members.get(i).map_or("?", |c| c.name.as_str());
    let list = |b: &Bits| b.iter().map(name).collect::<Vec<_>>().join(", ");
    let n = members.len();
    let mine = rows.get(me).cloned().unwrap_or_else(|| Bits::with(n));
    let w = Weigh { strategy, members };
    let core = format!("{} member(s) here see the cluster alike ({})", r.core.len(), list(&r.core));
    let side = || -> String {
        match strategy {
            Strategy::KeepMajority { tag } | Strategy::LeaseMajority { tag, .. } => {
                let theirs = r.core.complement(n);
                let (a, b) = (w.counted(&r.core, tag), w.counted(&theirs, tag));
                if a == b && (a > 0 || tag.is_none()) {
                    format!("{a} against {b}, a tie kept by the lowest address")
                } else {
                    format!("{a} against {b}")
                }
            }
            Strategy::StaticQuorum { size, tag } => {
                format!("{} counted here, a quorum of {size}", w.counted(&r.core, tag))
            }
            Strategy::KeepOldest { tag, down_if_alone } => {
                let oldest = w.oldest(tag).map_or("nobody", name);
                let alone = match (*down_if_alone, n > 2) {
                    (true, true) => ", down-if-alone",
                    (true, false) => ", of two members it stays",
                    (false, _) => "",
                };
                if w.oldest(tag).is_some_and(|o| r.core.contains(o)) {
                    format!("the oldest, {oldest}, is here{alone}")
                } else {
                    format!("the oldest, {oldest}, is not here{alone}")
                }
            }
            Strategy::KeepReferee { referee, down_all_if_less_than } => {
                format!("the referee {referee}, at least {down_all_if_less_than} member(s) with it")
            }
            Strategy::DownAll | Strategy::Auto => String::new(),
        }
    };
    let threat = |t: Option<Threat>| match t {
        Some(Threat::Hidden) => format!("the members it cannot reach ({}) could be a side that survives", list(&mine)),
        Some(Threat::Claimed(c)) => {
            format!(
                "{} finds it unreachable, and those that could see the cluster as {} does would survive",
                name(c),
                name(c)
            )
        }
        Some(Threat::Alone) => "it reaches no other member".into(),
        None => String::new(),
    };
    match r.decision {
        Decision::Auto => "the protocol's own verdicts decide".into(),
        Decision::Nothing if mine.is_empty() => "nobody is unreachable from here".into(),
        Decision::Nothing => format!(
            "{core}, not a side that survives ({}); nothing threatens it: it waits for the picture to change",
            side()
        ),
        Decision::DownUnreachable => format!("{core}: it survives ({}); {} unreachable", side(), list(&mine)),
        Decision::DownReachable if mine.is_empty() => {
            format!("nobody is unreachable from here, but {}", threat(r.threat))
        }
        Decision::DownReachable => format!("{core}, not a side that survives ({}); {}", side(), threat(r.threat)),
        Decision::DownAll if matches!(strategy, Strategy::DownAll) => "down-all: a member is unreachable".into(),
        Decision::DownAll => {
            let all = Bits::with(n).complement(n);
            let counted = match strategy {
                Strategy::StaticQuorum { tag, .. } => w.counted(&all, tag),
                _ => n,
            };
            format!("{counted} members counted, more than 2 × size − 1: both sides could hold a quorum")
        }
        Decision::AskLease { .. } => format!("{core}; the lease decides ({})", side()),
    }
}

/// A strategy that could not be read.
///
/// ```
/// let e = "keep-middle".parse::<vigil_membership::downing::Strategy>().unwrap_err();
/// assert!(e.to_string().starts_with("'keep-middle' is not a downing strategy"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadStrategy {
    /// What was given.
    pub text: String,
    /// What is wrong.
    pub why: String,
}

impl fmt::Display for BadStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: String = self.text.chars().take(60).flat_map(char::escape_debug).collect();
        write!(f, "'{shown}' {}", self.why)
    }
}

impl std::error::Error for BadStrategy {}

/// `auto`, `down-all`, `keep-majority[:tag=KEY=VALUE]`,
/// `static-quorum:size=N[,tag=KEY=VALUE]`,
/// `keep-oldest[:down-if-alone=on|off][,tag=KEY=VALUE]` (on by default),
/// `keep-referee:address=IP:PORT[,down-all-if-less-than=N]`,
/// `lease-majority[:acquire-delay-for-minority=DURATION][,tag=KEY=VALUE]`
/// (a duration with its unit: `2s`, `500ms`).
///
/// ```
/// use vigil_membership::downing::Strategy;
///
/// for text in ["auto", "keep-majority", "static-quorum:size=3", "keep-oldest:tag=role=db", "keep-oldest:down-if-alone=off",
///              "keep-referee:address=10.0.0.1:7946,down-all-if-less-than=2", "lease-majority:acquire-delay-for-minority=3s"] {
///     let s: Strategy = text.parse()?;
///     assert_eq!(s.to_string(), text);
/// }
/// assert!("static-quorum".parse::<Strategy>().is_err(), "a quorum needs its size");
/// # Ok::<(), vigil_membership::downing::BadStrategy>(())
/// ```
impl FromStr for Strategy {
    type Err = BadStrategy;

    fn from_str(text: &str) -> Result<Strategy, BadStrategy> {
        let bad = |why: String| BadStrategy { text: text.to_owned(), why };
        let (name, rest) = text.trim().split_once(':').unwrap_or((text.trim(), ""));
        let mut settings: BTreeMap<&str, &str> = BTreeMap::new();
        let mut flags: BTreeSet<&str> = BTreeSet::new();
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item.split_once('=') {
                Some((k, v)) => {
                    if settings.insert(k.trim(), v.trim()).is_some() {
                        return Err(bad(format!("gives {k} twice")));
                    }
                }
                None => {
                    flags.insert(item);
                }
            }
        }
        let allowed: &[&str] = match name {
            "auto" | "down-all" => &[],
            "keep-majority" => &["tag"],
            "static-quorum" => &["size", "tag"],
            "keep-oldest" => &["down-if-alone", "tag"],
            "keep-referee" => &["address", "down-all-if-less-than"],
            "lease-majority" => &["acquire-delay-for-minority", "tag"],
            _ => {
                return Err(bad(
                    "is not a downing strategy (auto, keep-majority, static-quorum, keep-oldest, keep-referee, \
                     lease-majority, down-all)"
                        .into(),
                ));
            }
        };
        for k in settings.keys().chain(flags.iter()) {
            if !allowed.contains(k) {
                let takes = if allowed.is_empty() { "nothing".to_owned() } else { allowed.join(", ") };
                return Err(bad(format!("is not a setting of {name} ({k}; it takes {takes})")));
            }
        }
        let tag = match settings.get("tag") {
            Some(t) => {
                let (key, value) =
                    t.split_once('=').ok_or_else(|| bad(format!("has tag={t}: expected tag=KEY=VALUE")))?;
                Some(TagFilter { key: key.to_owned(), value: value.to_owned() })
            }
            None => None,
        };
        let number = |k: &str| -> Result<Option<usize>, BadStrategy> {
            settings
                .get(k)
                .map(|v| {
                    v.parse::<usize>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| bad(format!("has {k}={v}: expected a whole number from 1")))
                })
                .transpose()
        };
        Ok(match name {
            "auto" => Strategy::Auto,
            "down-all" => Strategy::DownAll,
            "keep-majority" => Strategy::KeepMajority { tag },
            "static-quorum" => {
                let size = number("size")?.ok_or_else(|| bad("needs its size (static-quorum:size=N)".into()))?;
                Strategy::StaticQuorum { size, tag }
            }
            "keep-oldest" => {
                let down_if_alone = match settings.get("down-if-alone") {
                    None => true,
                    Some(&("on" | "true")) => true,
                    Some(&("off" | "false")) => false,
                    Some(v) => return Err(bad(format!("has down-if-alone={v}: expected on or off"))),
                };
                Strategy::KeepOldest { down_if_alone, tag }
            }
            "keep-referee" => {
                let address = settings
                    .get("address")
                    .ok_or_else(|| bad("needs the referee's address (keep-referee:address=IP:PORT)".into()))?;
                let referee = address.parse().map_err(|_| bad(format!("has address={address}: expected IP:PORT")))?;
                Strategy::KeepReferee { referee, down_all_if_less_than: number("down-all-if-less-than")?.unwrap_or(1) }
            }
            _ => {
                let delay = match settings.get("acquire-delay-for-minority") {
                    Some(d) => duration(d).ok_or_else(|| {
                        bad(format!(
                            "has acquire-delay-for-minority={d}: expected a duration with its unit (2s, 500ms)"
                        ))
                    })?,
                    None => Duration::from_secs(2),
                };
                Strategy::LeaseMajority { acquire_delay_for_minority: delay, tag }
            }
        })
    }
}

/// `500ms`, `2s`, `1.5s`, `1min`: whole milliseconds.
fn duration(text: &str) -> Option<Duration> {
    let split = text.trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
    let (num, unit) = text.split_at(split);
    let v: f64 = num.parse().ok()?;
    let ms = v * match unit {
        "ms" => 1.0,
        "s" => 1e3,
        "min" => 60e3,
        _ => return None,
    };
    (ms.is_finite() && (0.0..=86_400_000.0).contains(&ms)).then(|| Duration::from_millis(ms.round() as u64))
}

/// The text form, as [`FromStr`] reads it.
impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tag = |t: &Option<TagFilter>| t.as_ref().map(|t| format!("tag={}={}", t.key, t.value));
        let with = |f: &mut fmt::Formatter<'_>, name: &str, parts: Vec<Option<String>>| {
            let parts: Vec<String> = parts.into_iter().flatten().collect();
            if parts.is_empty() { f.write_str(name) } else { write!(f, "{name}:{}", parts.join(",")) }
        };
        match self {
            Strategy::Auto => f.write_str("auto"),
            Strategy::DownAll => f.write_str("down-all"),
            Strategy::KeepMajority { tag: t } => with(f, "keep-majority", vec![tag(t)]),
            Strategy::StaticQuorum { size, tag: t } => {
                with(f, "static-quorum", vec![Some(format!("size={size}")), tag(t)])
            }
            Strategy::KeepOldest { down_if_alone, tag: t } => {
                with(f, "keep-oldest", vec![(!down_if_alone).then(|| "down-if-alone=off".to_owned()), tag(t)])
            }
            Strategy::KeepReferee { referee, down_all_if_less_than } => with(
                f,
                "keep-referee",
                vec![
                    Some(format!("address={referee}")),
                    (*down_all_if_less_than != 1).then(|| format!("down-all-if-less-than={down_all_if_less_than}")),
                ],
            ),
            Strategy::LeaseMajority { acquire_delay_for_minority: d, tag: t } => {
                let delay =
                    if d.subsec_millis() == 0 { format!("{}s", d.as_secs()) } else { format!("{}ms", d.as_millis()) };
                with(
                    f,
                    "lease-majority",
                    vec![(*d != Duration::from_secs(2)).then(|| format!("acquire-delay-for-minority={delay}")), tag(t)],
                )
            }
        }
    }
}

/// The downing provider's settings ([`Config::downing`](crate::Config::downing)).
///
/// With [`Strategy::Auto`] (the default) the protocol declares a member
/// dead when its suspicion runs out, as SWIM does, and nothing here
/// applies. With any other strategy a suspicion that runs out only makes
/// the member *unreachable* ([`Event::Unreachable`](crate::Event::Unreachable));
/// once the picture has held still for `stable_after`, the strategy
/// decides who is downed. The losing side downs itself at once; the
/// winning side declares the others dead `down_removal_margin` later, so
/// that the losers have stopped before anyone takes over what they held.
///
/// ```
/// use std::time::Duration;
/// use vigil_membership::downing::{Downing, Strategy};
///
/// let d = Downing::new(Strategy::KeepMajority { tag: None }).with_stable_after(Duration::from_secs(8));
/// assert_eq!(d.decide_when_unstable, Some(Duration::from_secs(6)));
/// assert_eq!(d.down_removal_margin, Duration::from_secs(8));
/// assert_eq!(Downing::default().strategy, Strategy::Auto);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Downing {
    /// Who survives a partition.
    pub strategy: Strategy,
    /// How long the picture (members, suspicions, unreachable members)
    /// must hold still before a decision (Akka: 20 s). Keep it above
    /// [`Config::suspicion_max`](crate::Config::suspicion_max), so that a
    /// suspected member has had its chance to refute.
    pub stable_after: Duration,
    /// When members flap (found unreachable, then reachable again) and no
    /// stable moment comes within `stable_after +` this after the first
    /// flap, decide anyway, with every member that flapped counted
    /// unreachable: one flaky member is removed (its side, alone, downs
    /// itself) rather than waiting for ever. Akka downs everyone at this
    /// point (`down-all-when-unstable`); the default margin is Akka's, ¾
    /// of `stable_after`, at least 4 s. `None`: wait for calm for ever.
    pub decide_when_unstable: Option<Duration>,
    /// How long the winning side waits, after its decision, before it
    /// declares the losing side dead.
    pub down_removal_margin: Duration,
}

/// Akka's `stable-after`.
const STABLE_AFTER: Duration = Duration::from_secs(20);

impl Downing {
    /// `strategy` with Akka's timing: stable after 20 s, everyone downed
    /// after 15 s more of instability, a removal margin of 20 s.
    pub fn new(strategy: Strategy) -> Downing {
        Downing { strategy, ..Downing::default() }.with_stable_after(STABLE_AFTER)
    }

    /// The same settings with `stable_after`, and the margins that follow
    /// from it: [`Stability::default_margin`](crate::stability::Stability::default_margin)
    /// and a removal margin of `stable_after`.
    pub fn with_stable_after(self, stable_after: Duration) -> Downing {
        Downing {
            stable_after,
            decide_when_unstable: Some(crate::stability::Stability::default_margin(stable_after)),
            down_removal_margin: stable_after,
            ..self
        }
    }

    /// Whether a strategy decides (anything but [`Strategy::Auto`]).
    pub fn decides(&self) -> bool {
        !matches!(self.strategy, Strategy::Auto)
    }
}

impl Default for Downing {
    fn default() -> Downing {
        Downing {
            strategy: Strategy::Auto,
            stable_after: STABLE_AFTER,
            decide_when_unstable: Some(crate::stability::Stability::default_margin(STABLE_AFTER)),
            down_removal_margin: STABLE_AFTER,
        }
    }
}

/// A decision taken and not yet carried out: the winning side's removal
/// margin, or the wait before asking the lease.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Pending {
    /// What was decided.
    pub decision: Decision,
    /// The members it downs, by name: each only if this member still finds
    /// it unreachable when the margin ends (one that answered since was
    /// not on the other side of anything), in the generation it had then.
    pub down: Vec<String>,
    /// The generation of each member of `down`, when decided: a newer
    /// process of the name is not what was decided about.
    #[cfg_attr(feature = "serde", serde(default))]
    pub generations: Vec<u64>,
    /// Why, for a person.
    pub reason: String,
    /// When it is carried out (the removal margin's end), or the lease
    /// asked.
    pub at: vigil_detector::Instant,
    /// Whether the lease was asked and the answer is awaited.
    pub lease_asked: bool,
    /// For [`Decision::AskLease`]: the holder this side asks the lease
    /// for, the same for every member of the side (the name of its member
    /// with the lowest address), so that the lease grants a side and not
    /// one member of it.
    pub lease_holder: Option<String>,
    /// For [`Decision::AskLease`]: whether this member downs itself if
    /// the lease is refused (see [`Verdict::threatened`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub threatened: bool,
    /// Whether the picture did not hold still and members that flapped
    /// were counted unreachable: then a member that flapped lately is
    /// downed even if it answers when the margin ends (it flaps); after a
    /// calm decision, only one still unreachable is.
    #[cfg_attr(feature = "serde", serde(default))]
    pub unstable: bool,
}

/// How often a member whose side took the lease renews it, for as long as
/// it acts as the cluster in the generation that took it. A lease's time
/// to live must be several times this (the runtimes hold it 120 s): a side
/// that stopped renewing (crashed, paused, downed) loses it after that
/// time, and a side that renews keeps it however long a partition lasts,
/// so the side it downed cannot take it once the time to live runs out
/// and down the side that acts as the cluster.
pub const LEASE_RENEW_EVERY: Duration = Duration::from_secs(30);

/// What a member asks its lease for ([`Node::take_lease_request`](crate::Node::take_lease_request)):
/// the lease goes to `holder` if nobody holds it, its time ran out,
/// `holder` holds it already, or `replacing` holds it. The last is a
/// compare-and-set in one step: a side that took the lease and splits
/// again hands it to the first of its parts to ask, and the other parts,
/// asking to replace a holder that is gone, are refused.
///
/// ```
/// use vigil_membership::downing::LeaseRequest;
///
/// let r = LeaseRequest { holder: "side-b".into(), replacing: Some("side-a".into()), renewal: false };
/// let may_take = |current: Option<&str>| current.is_none_or(|c| c == r.holder || Some(c) == r.replacing.as_deref());
/// assert!(may_take(Some("side-a")), "taken over from the side it was part of");
/// assert!(!may_take(Some("side-c")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRequest {
    /// The holder asked for: a side's name ([`lease_holder`]).
    pub holder: String,
    /// The holder this member's side took the lease for earlier and still
    /// renews, if any and if it is not `holder`.
    pub replacing: Option<String>,
    /// Whether it renews the lease this member's side holds
    /// ([`LEASE_RENEW_EVERY`]) rather than asks for it for a decision.
    pub renewal: bool,
}

/// The lease's answer to a request ([`Node::lease_answer`](crate::Node::lease_answer)).
///
/// A lease that could not be asked is not a lease that went to the other
/// side: the side downs itself all the same (it cannot know the other side
/// did not take it), but says why.
///
/// ```
/// use vigil_membership::downing::LeaseAnswer;
///
/// let a = LeaseAnswer::Unusable("/var/lib/vigil/lease: read-only file system".into());
/// assert!(!a.granted());
/// assert!(LeaseAnswer::Granted.granted());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseAnswer {
    /// This side holds the lease: it survives.
    Granted,
    /// Another side holds it: the holder's name, when the lease says.
    Refused {
        /// The holder that has the lease (the name of its side's member
        /// with the lowest address), if known.
        holder: Option<String>,
    },
    /// The lease could not be asked (unreachable, unreadable, unwritable):
    /// what went wrong.
    Unusable(String),
}

impl LeaseAnswer {
    /// Whether this side holds the lease.
    pub fn granted(&self) -> bool {
        matches!(self, LeaseAnswer::Granted)
    }
}

/// What one member's downing provider knows and intends, as
/// [`NodeView::downing`](crate::NodeView::downing) shows it.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Outlook {
    /// The strategy, in its text form.
    pub strategy: String,
    /// Observer → subject: the observer finds the subject unreachable (its
    /// suspicion ran out without a refutation), by name.
    pub records: Vec<(String, String)>,
    /// When a decision may be taken: `None` while nothing is unreachable,
    /// or with [`Strategy::Auto`].
    pub decide_at: Option<vigil_detector::Instant>,
    /// A decision taken and not yet carried out.
    pub pending: Option<Pending>,
}

/// The decision's name: `nothing`, `down-unreachable`, `down-reachable`,
/// `down-all`, `ask-lease`, `auto`.
impl Decision {
    /// The name of every kind of decision, as [`Display`](fmt::Display)
    /// writes it (for metrics whose label sets exist before the first
    /// decision).
    pub const NAMES: [&'static str; 6] =
        ["nothing", "down-unreachable", "down-reachable", "down-all", "ask-lease", "auto"];
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Decision::Nothing => "nothing",
            Decision::DownUnreachable => "down-unreachable",
            Decision::DownReachable => "down-reachable",
            Decision::DownAll => "down-all",
            Decision::AskLease { .. } => "ask-lease",
            Decision::Auto => "auto",
        })
    }
}

#[cfg(test)]
mod exhaustive;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_what_display_writes() {
        let all = [
            Decision::Nothing,
            Decision::DownUnreachable,
            Decision::DownReachable,
            Decision::DownAll,
            Decision::AskLease { after: Duration::ZERO },
            Decision::Auto,
        ];
        let written: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(written, Decision::NAMES);
    }

    /// A clean partition of `names` into `left` and the rest, from the side
    /// of `me`: every member of its side finds every member of the other
    /// unreachable.
    fn split(me: &str, names: &[&'static str], left: &[&str]) -> Picture {
        let mut p = Picture::new(me, names.iter().copied());
        let my_side_left = left.contains(&me);
        for a in names {
            for b in names {
                let (a_left, b_left) = (left.contains(a), left.contains(b));
                if a_left == my_side_left && b_left != my_side_left {
                    p = p.unreachable(a, b);
                }
            }
        }
        p
    }

    const FIVE: [&str; 5] = ["a", "b", "c", "d", "e"];
    const SIX: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

    fn survives(s: &Strategy, p: &Picture) -> bool {
        let v = decide(s, p);
        // In a clean partition a member's core is its whole side.
        let side: Vec<&str> =
            p.members.keys().map(String::as_str).filter(|n| !p.row_of(&p.me).any(|s| s == *n)).collect();
        assert_eq!(v.core, side, "{s}: {}", p.me);
        matches!(v.decision, Decision::DownUnreachable)
    }

    #[test]
    fn at_most_one_side_of_any_clean_split_survives() {
        let referee = Picture::new("a", SIX).members["c"].addr;
        let strategies = [
            Strategy::KeepMajority { tag: None },
            Strategy::StaticQuorum { size: 3, tag: None },
            Strategy::StaticQuorum { size: 4, tag: None },
            Strategy::KeepOldest { down_if_alone: false, tag: None },
            Strategy::KeepOldest { down_if_alone: true, tag: None },
            Strategy::KeepReferee { referee, down_all_if_less_than: 2 },
            Strategy::DownAll,
        ];
        // Every split of six members into two non-empty sides.
        for mask in 1u32..(1 << 6) - 1 {
            let left: Vec<&str> =
                SIX.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, n)| *n).collect();
            let right: Vec<&str> = SIX.iter().copied().filter(|n| !left.contains(n)).collect();
            for s in &strategies {
                let from_left = survives(s, &split(left[0], &SIX, &left));
                let from_right = survives(s, &split(right[0], &SIX, &left));
                assert!(!(from_left && from_right), "{s}: both sides of {left:?} | {right:?} survive");
                // Every member of a side decides alike.
                for m in &left {
                    assert_eq!(survives(s, &split(m, &SIX, &left)), from_left, "{s}: {m} of {left:?}");
                }
            }
        }
    }

    #[test]
    fn a_majority_survives_and_a_tie_keeps_the_lowest_address() {
        let s = Strategy::KeepMajority { tag: None };
        assert!(survives(&s, &split("a", &FIVE, &["a", "b", "c"])));
        assert!(!survives(&s, &split("d", &FIVE, &["a", "b", "c"])));
        // 3 + 3: a holds the lowest address (127.0.0.1:7946).
        assert!(survives(&s, &split("a", &SIX, &["a", "e", "f"])));
        assert!(!survives(&s, &split("b", &SIX, &["a", "e", "f"])));
        let v = decide(&s, &split("b", &SIX, &["a", "e", "f"]));
        assert_eq!((v.decision, v.down.clone()), (Decision::DownReachable, vec!["b".into(), "c".into(), "d".into()]));
        assert!(v.reason.contains("a tie"), "{}", v.reason);
        assert!(v.downs_me(&split("b", &SIX, &["a", "e", "f"])));
    }

    #[test]
    fn a_tag_counts_only_the_members_that_matter() {
        let mut p = split("d", &FIVE, &["a", "b", "c"]);
        for n in ["d", "e"] {
            p.members.get_mut(n).unwrap().tags = Tags::new([("role", "db")]).unwrap();
        }
        let db = Some(TagFilter { key: "role".into(), value: "db".into() });
        assert!(survives(&Strategy::KeepMajority { tag: db.clone() }, &p), "both data members are on d's side");
        assert!(!survives(&Strategy::KeepMajority { tag: None }, &p));
        let nobody = Some(TagFilter { key: "role".into(), value: "none".into() });
        assert!(!survives(&Strategy::KeepMajority { tag: nobody }, &p), "no member has it: all count");
    }

    #[test]
    fn a_member_that_reaches_nobody_and_is_not_kept_downs_itself() {
        // A quorum of 2, and "a" knows one other member, "b", which it
        // cannot reach (the third was downed and forgotten): nothing it sees
        // threatens it ("b" alone is no quorum either), but it is no side
        // that survives, and it reaches nobody: it cannot know what the
        // others decide, so it downs itself.
        let s = Strategy::StaticQuorum { size: 2, tag: None };
        let alone = Picture::new("a", ["a", "b"]).unreachable("a", "b");
        let v = decide(&s, &alone);
        assert_eq!((v.decision, v.down.as_slice()), (Decision::DownReachable, &["a".to_owned()][..]), "{}", v.reason);
        assert!(v.reason.contains("reaches no other member"), "{}", v.reason);
        // Reaching one other member, it waits, as before: the two may be
        // the cluster's last members.
        let one = Picture::new("a", ["a", "b", "c"]).unreachable("a", "c").unreachable("b", "c");
        assert_eq!(decide(&s, &one).decision, Decision::DownUnreachable, "a and b are a quorum of 2");
        let s = Strategy::StaticQuorum { size: 3, tag: None };
        let pair = Picture::new("a", ["a", "b", "c", "d"])
            .unreachable("a", "c")
            .unreachable("a", "d")
            .unreachable("b", "c")
            .unreachable("b", "d");
        let v = decide(&s, &pair);
        assert_eq!(v.decision, Decision::Nothing, "a and b, and c and d, are no quorum of 3: {}", v.reason);
    }

    #[test]
    fn a_static_quorum_refuses_a_cluster_grown_past_twice_its_size() {
        let s = Strategy::StaticQuorum { size: 2, tag: None };
        let v = decide(&s, &split("a", &FIVE, &["a", "b", "c"]));
        assert_eq!(v.decision, Decision::DownAll, "5 members, more than 2 × 2 − 1: {}", v.reason);
        assert_eq!(v.down.len(), 5);
        let s = Strategy::StaticQuorum { size: 3, tag: None };
        assert!(survives(&s, &split("a", &FIVE, &["a", "b", "c"])));
        assert!(!survives(&s, &split("e", &FIVE, &["a", "b", "c"])));
    }

    #[test]
    fn the_oldest_keeps_its_side_unless_it_is_alone_and_told_to_go() {
        let keep = Strategy::KeepOldest { down_if_alone: false, tag: None };
        let go = Strategy::KeepOldest { down_if_alone: true, tag: None };
        // a is the oldest (age 1), cut off alone.
        assert!(survives(&keep, &split("a", &FIVE, &["a"])));
        assert!(!survives(&keep, &split("b", &FIVE, &["a"])));
        assert!(!survives(&go, &split("a", &FIVE, &["a"])));
        assert!(survives(&go, &split("b", &FIVE, &["a"])));
        // Not alone: its side survives either way.
        assert!(survives(&go, &split("a", &FIVE, &["a", "b"])));
        // Of two members, the oldest stays either way: downing it would
        // make the crash of the other an outage, as keeping it makes its
        // own crash one.
        let two = ["a", "b"];
        assert!(survives(&go, &split("a", &two, &["a"])));
        assert!(!survives(&go, &split("b", &two, &["a"])));
    }

    #[test]
    fn the_referees_side_survives_if_it_is_large_enough() {
        let p = split("a", &FIVE, &["a", "b"]);
        let referee = p.members["b"].addr;
        assert!(survives(&Strategy::KeepReferee { referee, down_all_if_less_than: 2 }, &p));
        // Too small a side with the referee does not survive, and the other
        // side does not hold the referee: both wait.
        let v = decide(&Strategy::KeepReferee { referee, down_all_if_less_than: 3 }, &p);
        assert_eq!(v.decision, Decision::Nothing, "{}", v.reason);
        let v = decide(&Strategy::KeepReferee { referee, down_all_if_less_than: 3 }, &split("c", &FIVE, &["a", "b"]));
        assert_eq!(v.decision, Decision::Nothing, "{}", v.reason);
        assert!(!survives(
            &Strategy::KeepReferee { referee, down_all_if_less_than: 1 },
            &split("c", &FIVE, &["a", "b"])
        ));
    }

    #[test]
    fn the_lease_decides_and_a_minority_asks_later() {
        let s = Strategy::LeaseMajority { acquire_delay_for_minority: Duration::from_secs(2), tag: None };
        let v = decide(&s, &split("a", &FIVE, &["a", "b", "c"]));
        assert_eq!(
            (v.decision, v.down.clone()),
            (Decision::AskLease { after: Duration::ZERO }, vec!["d".into(), "e".into()])
        );
        let v = decide(&s, &split("d", &FIVE, &["a", "b", "c"]));
        assert_eq!(v.decision, Decision::AskLease { after: Duration::from_secs(2) });
    }

    #[test]
    fn one_bad_link_downs_nobody_and_the_two_wait() {
        let majority = Strategy::KeepMajority { tag: None };
        // c finds d unreachable and d finds c unreachable (the link between
        // them failed, through the others too): each is alone in its core,
        // and nothing threatens it; the others find nobody unreachable.
        for me in FIVE {
            let p = Picture::new(me, FIVE).unreachable("c", "d").unreachable("d", "c");
            let v = decide(&majority, &p);
            assert_eq!((v.decision, v.down.len()), (Decision::Nothing, 0), "{me}: {}", v.reason);
        }
        // Only c finds d unreachable: nobody is downed either (d is
        // reached by the others, who see the cluster alike).
        for me in FIVE {
            let v = decide(&majority, &Picture::new(me, FIVE).unreachable("c", "d"));
            assert_eq!(v.decision, Decision::Nothing, "{me}: {}", v.reason);
        }
        // Records naming members that are not known are ignored.
        let p = Picture::new("a", FIVE).unreachable("z", "a");
        assert_eq!(decide(&majority, &p).decision, Decision::Nothing);
    }

    #[test]
    fn a_crash_downs_the_crashed_and_a_disagreeing_member_counts_as_one_fewer() {
        let majority = Strategy::KeepMajority { tag: None };
        // e crashed: every row is {e}; every member's core is the four.
        let crashed =
            |me: &str| FIVE.iter().filter(|n| **n != "e").fold(Picture::new(me, FIVE), |p, o| p.row(o, ["e"]));
        for me in ["a", "b", "c", "d"] {
            let v = decide(&majority, &crashed(me));
            assert_eq!((v.decision, v.down.clone()), (Decision::DownUnreachable, vec!["e".to_owned()]), "{me}");
            assert_eq!(v.core, ["a", "b", "c", "d"]);
        }
        // d holds the key and claims to find a and b unreachable too: its
        // row is its own; the three others still see the cluster alike,
        // a majority, and down only e. d is left out of their core.
        let lying = |me: &str| {
            let mut p = crashed(me);
            p.records.retain(|(o, _)| o != "d");
            p.row("d", ["a", "b", "e"])
        };
        for me in ["a", "b", "c"] {
            let v = decide(&majority, &lying(me));
            assert_eq!((v.decision, v.down.clone()), (Decision::DownUnreachable, vec!["e".to_owned()]), "{me}");
            assert_eq!(v.core, ["a", "b", "c"]);
        }
    }

    #[test]
    fn auto_and_down_all_say_so() {
        let p = split("a", &FIVE, &["a", "b", "c"]);
        assert_eq!(decide(&Strategy::Auto, &p).decision, Decision::Auto);
        assert!(decide(&Strategy::Auto, &p).down.is_empty());
        let v = decide(&Strategy::DownAll, &p);
        assert_eq!((v.decision, v.down.len()), (Decision::DownAll, 5));
    }

    #[test]
    fn strategies_read_as_written_and_errors_name_what_is_wrong() {
        for (text, says) in [
            ("keep-middle", "is not a downing strategy"),
            ("static-quorum", "needs its size"),
            ("static-quorum:size=0", "size=0: expected a whole number from 1"),
            ("keep-majority:size=3", "is not a setting of keep-majority (size; it takes tag)"),
            ("keep-majority:tag=role", "expected tag=KEY=VALUE"),
            ("keep-referee", "needs the referee's address"),
            ("keep-referee:address=nowhere", "address=nowhere: expected IP:PORT"),
            ("lease-majority:acquire-delay-for-minority=2", "expected a duration with its unit"),
            ("keep-majority:tag=a=b,tag=c=d", "gives tag twice"),
            ("keep-oldest:down-if-alone=maybe", "down-if-alone=maybe: expected on or off"),
            ("down-all:x", "it takes nothing"),
        ] {
            let e = text.parse::<Strategy>().unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
        // keep-oldest downs an oldest member cut off alone unless told not to.
        let oldest: Strategy = "keep-oldest".parse().unwrap();
        assert_eq!(oldest, Strategy::KeepOldest { down_if_alone: true, tag: None });
        let off: Strategy = "keep-oldest:down-if-alone=off".parse().unwrap();
        assert_eq!(off.to_string().parse::<Strategy>().unwrap(), off);
        assert_eq!("keep-oldest:down-if-alone".parse::<Strategy>().unwrap(), oldest);
        let s: Strategy = "lease-majority:acquire-delay-for-minority=500ms,tag=role=db".parse().unwrap();
        assert_eq!(s.to_string(), "lease-majority:acquire-delay-for-minority=500ms,tag=role=db");
        assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s);
    }
}
