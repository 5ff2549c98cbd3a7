//! Who survives a partition: the decision to down members, apart from
//! finding them unreachable.
//!
//! Under a partition both sides find the other unreachable, and neither is
//! wrong from where it stands. Declaring the other side dead, as the
//! protocol's automatic verdict does ([`Strategy::Auto`]), leaves two
//! clusters that each believe they own every leader, lease and shard. The
//! strategies here decide instead, from what one member knows, which side
//! keeps running: its own (`DownUnreachable`: the others are downed), the
//! other (`DownReachable`: this side downs itself), or neither
//! (`DownAll`). They are those of Akka's Split Brain Resolver, as pure
//! functions over the members, the unreachability records (observer →
//! subject), the members' ages (the generation they joined with) and
//! their tags; a runtime calls [`decide`] once the picture has been stable
//! for long enough ([`crate::stability::Stability`]).
//!
//! Before any strategy, members that are *indirectly connected* (found
//! unreachable by some, and themselves finding others unreachable: a
//! flaky link, not a partition) are downed, and the strategy decides over
//! the fully connected rest, so that one bad link cannot take a side with
//! it.
//!
//! ```
//! use vigil_membership::downing::{Decision, Picture, Strategy, decide};
//!
//! // Five members; d and e are cut off. From a's side: three against two.
//! let picture = Picture::new("a", ["a", "b", "c", "d", "e"])
//!     .unreachable("a", "d")
//!     .unreachable("b", "e");
//! let verdict = decide(&Strategy::KeepMajority { tag: None }, &picture);
//! assert_eq!(verdict.decision, Decision::DownUnreachable);
//! assert_eq!(verdict.down, ["d", "e"]);
//!
//! // The same partition from e's side (its observers found a, b and c
//! // unreachable): it is the minority, and downs itself.
//! let picture = Picture::new("e", ["a", "b", "c", "d", "e"])
//!     .unreachable("e", "a")
//!     .unreachable("d", "b")
//!     .unreachable("e", "c");
//! assert_eq!(decide(&Strategy::KeepMajority { tag: None }, &picture).decision, Decision::DownReachable);
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
/// included), and the unreachability records it has (observer finds
/// subject unreachable).
///
/// ```
/// use vigil_membership::downing::Picture;
///
/// let p = Picture::new("a", ["a", "b", "c"]).unreachable("a", "c");
/// assert_eq!(p.unreachable_members().collect::<Vec<_>>(), ["c"]);
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

    /// Members some member finds unreachable.
    pub fn unreachable_members(&self) -> impl Iterator<Item = &str> {
        let subjects: BTreeSet<&str> = self.known_records().map(|(_, s)| s).collect();
        subjects.into_iter()
    }

    /// The records whose observer and subject are both members here.
    fn known_records(&self) -> impl Iterator<Item = (&str, &str)> {
        self.records
            .iter()
            .filter(|(o, s)| self.members.contains_key(o) && self.members.contains_key(s))
            .map(|(o, s)| (o.as_str(), s.as_str()))
    }

    /// Members that are indirectly connected: found unreachable by some
    /// member, and finding some member unreachable themselves. A clean
    /// partition has none (each side's records go from it to the other);
    /// a flaky link, a one-way cut or a member that flaps does.
    ///
    /// Blame goes first to those found unreachable by the most members:
    /// they are marked, their own records stop counting, and the rest is
    /// looked at again, so that a member cut off from everyone, which
    /// accuses the members it cannot hear, does not take them with it. Two
    /// members that only accuse each other (a bad link between them) are
    /// both indirectly connected.
    ///
    /// ```
    /// use vigil_membership::downing::Picture;
    ///
    /// // e hears nobody: it accuses a and b; c, d and a accuse e.
    /// let p = Picture::new("a", ["a", "b", "c", "d", "e"])
    ///     .unreachable("e", "a")
    ///     .unreachable("e", "b")
    ///     .unreachable("c", "e")
    ///     .unreachable("d", "e")
    ///     .unreachable("a", "e");
    /// assert_eq!(p.indirectly_connected().into_iter().collect::<Vec<_>>(), ["e"]);
    /// ```
    pub fn indirectly_connected(&self) -> BTreeSet<String> {
        self.blame().0
    }

    /// The indirectly connected members, and the records whose word still
    /// counts once blame is assigned.
    ///
    /// A marked member's records stop counting. So do those of a member
    /// that was accused only by marked members: it was caught up in the
    /// same trouble (a member that hears nobody accuses its neighbours,
    /// and they accuse it and each other), so what it reports is no better
    /// evidence than what was reported of it. Without that, a flapping
    /// member whose accusers were all blamed first would keep its word,
    /// and take the healthy members it could not hear down with it.
    fn blame(&self) -> (BTreeSet<String>, BTreeSet<(&str, &str)>) {
        let mut records: BTreeSet<(&str, &str)> = self.known_records().collect();
        let accused: BTreeSet<&str> = records.iter().map(|(_, s)| *s).collect();
        let mut marked = BTreeSet::new();
        loop {
            // Drop the word of members no longer accused by anyone left.
            loop {
                let subjects: BTreeSet<&str> = records.iter().map(|(_, s)| *s).collect();
                let before = records.len();
                records.retain(|(o, _)| !accused.contains(o) || subjects.contains(o));
                if records.len() == before {
                    break;
                }
            }
            let observers: BTreeSet<&str> = records.iter().map(|(o, _)| *o).collect();
            let mut accusers: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, s) in &records {
                *accusers.entry(*s).or_default() += 1;
            }
            let both: Vec<(&str, usize)> = accusers.into_iter().filter(|(s, _)| observers.contains(s)).collect();
            let Some(most) = both.iter().map(|(_, c)| *c).max() else { break };
            let blamed: Vec<&str> = both.iter().filter(|(_, c)| *c == most).map(|(s, _)| *s).collect();
            for s in blamed {
                marked.insert(s.to_owned());
                records.retain(|(o, _)| *o != s);
            }
        }
        (marked, records)
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
    /// downs itself. Never let the cluster grow past `2 × size − 1`
    /// members: then both sides of a partition can hold a quorum, and
    /// everyone is downed instead.
    StaticQuorum {
        /// The quorum.
        size: usize,
        /// Count only these members.
        tag: Option<TagFilter>,
    },
    /// The side holding the oldest member survives; with `down_if_alone`,
    /// an oldest member cut off alone downs itself and the others survive.
    KeepOldest {
        /// Down the oldest rather than everyone else when it is alone.
        down_if_alone: bool,
        /// Only members with this tag can be the oldest.
        tag: Option<TagFilter>,
    },
    /// The side holding the referee (a member's address) survives, if it
    /// has at least `down_all_if_less_than` members; otherwise everyone is
    /// downed.
    KeepReferee {
        /// The referee's address.
        referee: SocketAddr,
        /// Fewer members than this with the referee down everyone.
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
    /// Everyone is downed: a partition stops the cluster.
    DownAll,
}

/// What a member decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Decision {
    /// Nothing to decide: nobody is unreachable (but the indirectly
    /// connected, who are downed).
    Nothing,
    /// This side survives: the unreachable members are downed.
    DownUnreachable,
    /// This side loses: its own members (this one included) are downed.
    DownReachable,
    /// Nobody survives.
    DownAll,
    /// The lease decides: this side survives if it takes the lease (asked
    /// after the delay), and downs itself otherwise.
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
    /// The members to down, by name: the indirectly connected, and the
    /// losing side (for [`Decision::AskLease`], those downed if the lease
    /// is taken: the other side's; if it is not, this side is).
    pub down: Vec<String>,
    /// The indirectly connected members among them.
    pub indirectly_connected: Vec<String>,
    /// Why, for a person.
    pub reason: String,
}

impl Verdict {
    /// Whether the deciding member is downed.
    pub fn downs_me(&self, picture: &Picture) -> bool {
        self.down.contains(&picture.me)
    }
}

/// Decides, for the member `picture.me`, who survives: see the module
/// documentation.
pub fn decide(strategy: &Strategy, picture: &Picture) -> Verdict {
    let (indirect, counted) = picture.blame();
    // The fully connected members, and those of them found unreachable by
    // an observer whose word counts (not an indirectly connected one's).
    let members: Vec<&Candidate> = picture.members.values().filter(|c| !indirect.contains(&c.name)).collect();
    // A subject is unreachable when most of its accusers are observers whose
    // word counts: one clean accuser among many blamed ones is more likely
    // one more of the same trouble (a flapping member that was not itself
    // accused here yet) than the first sign of a partition.
    let mut accusers: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (_, s) in picture.known_records() {
        accusers.entry(s).or_default().1 += 1;
    }
    for (_, s) in &counted {
        accusers.entry(*s).or_default().0 += 1;
    }
    let unreachable: BTreeSet<&str> = accusers
        .into_iter()
        .filter(|(s, (clean, all))| !indirect.contains(*s) && *clean > 0 && 2 * clean > *all)
        .map(|(s, _)| s)
        .collect();
    let (mine, theirs): (Vec<&Candidate>, Vec<&Candidate>) =
        members.iter().copied().partition(|c| !unreachable.contains(c.name.as_str()));
    let names = |side: &[&Candidate]| side.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    let everyone = || members.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    let verdict = |decision: Decision, mut down: Vec<String>, reason: String| {
        down.extend(indirect.iter().cloned());
        down.sort();
        down.dedup();
        Verdict { decision, down, indirectly_connected: indirect.iter().cloned().collect(), reason }
    };
    if matches!(strategy, Strategy::Auto) {
        return verdict(Decision::Auto, Vec::new(), "the protocol's own verdicts decide".into());
    }
    // A member that is itself indirectly connected is downed whatever the
    // strategy says of the rest.
    if theirs.is_empty() {
        let reason = if indirect.is_empty() {
            "nobody is unreachable".to_owned()
        } else {
            format!("{} indirectly connected, the rest fully connected", indirect.len())
        };
        return verdict(Decision::Nothing, Vec::new(), reason);
    }
    let counted = |side: &[&Candidate], tag: &Option<TagFilter>| -> usize {
        match tag {
            Some(t) => side.iter().filter(|c| t.admits(c)).count(),
            None => side.len(),
        }
    };
    let (survive, lose) = (
        |r: String| verdict(Decision::DownUnreachable, names(&theirs), r),
        |r: String| verdict(Decision::DownReachable, names(&mine), r),
    );
    match strategy {
        Strategy::Auto => unreachable_auto(),
        Strategy::DownAll => verdict(Decision::DownAll, everyone(), "down-all: a partition stops the cluster".into()),
        Strategy::KeepMajority { tag } => match majority(&mine, &theirs, tag) {
            Side::Mine(why) => survive(why),
            Side::Theirs(why) => lose(why),
        },
        Strategy::StaticQuorum { size, tag } => {
            let (m, all) = (counted(&mine, tag), counted(&mine, tag) + counted(&theirs, tag));
            if all > 2 * size - 1 {
                verdict(
                    Decision::DownAll,
                    everyone(),
                    format!("{all} members counted, more than 2 × {size} − 1: both sides could hold a quorum"),
                )
            } else if m >= *size {
                survive(format!("{m} members counted here, a quorum of {size}"))
            } else {
                lose(format!("{m} members counted here, fewer than a quorum of {size}"))
            }
        }
        Strategy::KeepOldest { down_if_alone, tag } => {
            let oldest = members
                .iter()
                .filter(|c| tag.as_ref().is_none_or(|t| t.admits(c)))
                .min_by_key(|c| (c.age, c.addr))
                .or_else(|| members.iter().min_by_key(|c| (c.age, c.addr)));
            let Some(oldest) = oldest else { return lose("no member to keep".into()) };
            let here = !unreachable.contains(oldest.name.as_str());
            let alone = |side: &[&Candidate]| side.len() == 1;
            match (here, down_if_alone) {
                (true, true) if alone(&mine) => lose(format!("the oldest, {}, is alone here: it goes", oldest.name)),
                (true, _) => survive(format!("the oldest, {}, is here", oldest.name)),
                (false, true) if alone(&theirs) => {
                    survive(format!("the oldest, {}, is alone on the other side: it goes", oldest.name))
                }
                (false, _) => lose(format!("the oldest, {}, is on the other side", oldest.name)),
            }
        }
        Strategy::KeepReferee { referee, down_all_if_less_than } => {
            if !mine.iter().any(|c| c.addr == *referee) {
                lose(format!("the referee {referee} is not here"))
            } else if mine.len() < *down_all_if_less_than {
                verdict(
                    Decision::DownAll,
                    everyone(),
                    format!("the referee is here with {} members, fewer than {down_all_if_less_than}", mine.len()),
                )
            } else {
                survive(format!("the referee {referee} is here"))
            }
        }
        Strategy::LeaseMajority { acquire_delay_for_minority, tag } => {
            let (after, why) = match majority(&mine, &theirs, tag) {
                Side::Mine(why) => (Duration::ZERO, why),
                Side::Theirs(why) => (*acquire_delay_for_minority, why),
            };
            verdict(Decision::AskLease { after }, names(&theirs), format!("the lease decides ({why})"))
        }
    }
}

/// `decide` returns early for [`Strategy::Auto`].
fn unreachable_auto() -> Verdict {
    Verdict { decision: Decision::Auto, down: Vec::new(), indirectly_connected: Vec::new(), reason: String::new() }
}

/// Which side a majority keeps, and why.
enum Side {
    Mine(String),
    Theirs(String),
}

fn majority<'a>(mine: &[&'a Candidate], theirs: &[&'a Candidate], tag: &Option<TagFilter>) -> Side {
    // With a tag, only members that have it count, unless none has it.
    fn tagged<'a>(side: &[&'a Candidate], tag: &Option<TagFilter>) -> Vec<&'a Candidate> {
        match tag {
            Some(t) => side.iter().copied().filter(|c| t.admits(c)).collect(),
            None => side.to_vec(),
        }
    }
    let (m, t) = match (tagged(mine, tag), tagged(theirs, tag)) {
        (m, t) if m.is_empty() && t.is_empty() => (mine.to_vec(), theirs.to_vec()),
        pair => pair,
    };
    if m.len() != t.len() {
        let why = format!("{} members here, {} on the other side", m.len(), t.len());
        return if m.len() > t.len() { Side::Mine(why) } else { Side::Theirs(why) };
    }
    // A tie: the side holding the lowest address.
    let lowest = |side: &[&'a Candidate]| side.iter().map(|c| c.addr).min();
    let why = format!("{} members on each side, a tie kept by the lowest address", m.len());
    match (lowest(&m), lowest(&t)) {
        (Some(a), Some(b)) if a < b => Side::Mine(why),
        (Some(_), None) => Side::Mine(why),
        _ => Side::Theirs(why),
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
/// `keep-oldest[:down-if-alone][,tag=KEY=VALUE]`,
/// `keep-referee:address=IP:PORT[,down-all-if-less-than=N]`,
/// `lease-majority[:acquire-delay-for-minority=DURATION][,tag=KEY=VALUE]`
/// (a duration with its unit: `2s`, `500ms`).
///
/// ```
/// use vigil_membership::downing::Strategy;
///
/// for text in ["auto", "keep-majority", "static-quorum:size=3", "keep-oldest:down-if-alone,tag=role=db",
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
            "keep-oldest" => Strategy::KeepOldest { down_if_alone: flags.contains("down-if-alone"), tag },
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
                with(f, "keep-oldest", vec![down_if_alone.then(|| "down-if-alone".to_owned()), tag(t)])
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
    /// The members it downs, by name.
    pub down: Vec<String>,
    /// The indirectly connected members among them: downed when the
    /// margin ends whatever they do meanwhile. The others are downed only
    /// if they are still found unreachable then.
    pub indirect: Vec<String>,
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
    /// Another side holds it.
    Refused,
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
        assert!(v.indirectly_connected.is_empty(), "a clean partition has no indirectly connected member");
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
    }

    #[test]
    fn the_referees_side_survives_if_it_is_large_enough() {
        let p = split("a", &FIVE, &["a", "b"]);
        let referee = p.members["b"].addr;
        assert!(survives(&Strategy::KeepReferee { referee, down_all_if_less_than: 2 }, &p));
        let v = decide(&Strategy::KeepReferee { referee, down_all_if_less_than: 3 }, &p);
        assert_eq!(v.decision, Decision::DownAll);
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
    fn one_bad_link_downs_the_indirectly_connected_and_nobody_else() {
        // c finds d unreachable and d finds c unreachable (the link between
        // them failed): both are observers and subjects, indirectly
        // connected; the rest is fully connected and keeps running.
        let p = Picture::new("a", FIVE).unreachable("c", "d").unreachable("d", "c");
        let v = decide(&Strategy::KeepMajority { tag: None }, &p);
        assert_eq!(v.decision, Decision::Nothing);
        assert_eq!(v.down, ["c", "d"]);
        assert_eq!(v.indirectly_connected, ["c", "d"]);
        // Only d is found unreachable, by c, and d finds nobody
        // unreachable: d is the other side, alone, and the majority downs
        // it. (The protocol records unreachability only once indirect
        // probes failed too, so one bad link seldom gets this far.)
        let p = Picture::new("a", FIVE).unreachable("c", "d");
        let v = decide(&Strategy::KeepMajority { tag: None }, &p);
        assert_eq!((v.decision, v.down.clone()), (Decision::DownUnreachable, vec!["d".to_owned()]));
        // Records naming members that are not known are ignored.
        let p = Picture::new("a", FIVE).unreachable("z", "a");
        assert_eq!(decide(&Strategy::KeepMajority { tag: None }, &p).decision, Decision::Nothing);
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
            ("down-all:x", "it takes nothing"),
        ] {
            let e = text.parse::<Strategy>().unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
        let s: Strategy = "lease-majority:acquire-delay-for-minority=500ms,tag=role=db".parse().unwrap();
        assert_eq!(s.to_string(), "lease-majority:acquire-delay-for-minority=500ms,tag=role=db");
        assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s);
    }
}
