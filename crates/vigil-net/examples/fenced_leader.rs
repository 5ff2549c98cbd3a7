//! The task queue's dispatcher as a leader that a partition leaves on the
//! losing side, fenced by the downing strategy: the sequel to
//! `task_queue.rs`, where the dispatcher fences off workers. Here the
//! dispatcher itself is cut off.
//!
//! One process, five members on 127.0.0.1 (`queue-1` to `queue-5`), each
//! with `keep-majority` ([`Config::downing`]). `queue-1` leads: it writes
//! the queue's assignments to a store outside the cluster (a database that
//! both sides of a partition still reach), every write stamped with the
//! writer's epoch (generation, incarnation). The store remembers the
//! highest epoch it has seen from each member and refuses a write with a
//! lower one. A write takes [`IN_FLIGHT`] to land, so a few are always on
//! their way (a slow link, a queue, a retry).
//!
//! Then the network splits `queue-1` and `queue-2` from the other three:
//!
//! - both sides find the other unreachable, member after member; once a
//!   member's picture has held still for [`STABLE_AFTER`], it decides.
//!   `queue-1` and `queue-2` are the minority and down themselves:
//!   `downed` about themselves, then `renewed` at a new generation;
//! - `queue-1`'s application obeys at once: it stops writing, and writes
//!   its step-down with its new epoch, so the store refuses the writes of
//!   the old epoch still on their way;
//! - the three declare the two dead a removal margin (as long as
//!   [`STABLE_AFTER`]) after their own decision, when the two have
//!   stopped, and the oldest of the three takes over the writes: the
//!   majority keeps serving;
//! - the cut heals, and `queue-1` and `queue-2` rejoin through the three at
//!   their new generations, as followers.
//!
//! ```sh
//! cargo run -p vigil-net --example fenced_leader
//! ```
//!
//! The partition is made in the process: each member is started with a
//! [`Faults`] intercept (`Builder::intercept`), told to drop every packet
//! to and from the other side's addresses, and to drop nothing at the
//! heal.
//!
//! It ends on its own in about 20 seconds (at most [`PARTITION_BOUND`] and
//! [`REJOIN_BOUND`] after the cut). To be that quick, the members run
//! [`Config::lan_fast`] (suspicion 1.25 s to 5 s) and the strategy waits
//! 6 s of calm instead of Akka's 20 s; the removal margin is as long. Not
//! much shorter: the minority finds the majority's members one after
//! another (the last some 5 s after the cut), each one found starting its
//! calm again, so it decides 1 to 3.5 s after the majority, and the
//! margin must outlast that. With 4 s, a run here had the majority take
//! over 0.8 s before the minority had stopped. Keep `stable_after` above
//! the suspicion timeout's maximum.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use vigil_net::downing::{Decision, Downing};
use vigil_net::{Cluster, ClusterEvent, Config, DEFAULT_CLUSTER, Event, Faults, Status};

/// The members, in the order they start; the first leads.
const NAMES: [&str; 5] = ["queue-1", "queue-2", "queue-3", "queue-4", "queue-5"];
/// How many of them the partition cuts off, from the first: the leader
/// and one more.
const CUT_OFF: usize = 2;
/// How long a member's picture must hold still before it decides; the
/// winning side's removal margin is as long.
pub(crate) const STABLE_AFTER: Duration = Duration::from_secs(6);
/// The leader writes an assignment this often.
const WRITE_EVERY: Duration = Duration::from_millis(100);
/// How long a write takes to reach the store.
pub(crate) const IN_FLIGHT: Duration = Duration::from_millis(300);
/// How long the leader writes before the partition.
const CUT_AFTER: Duration = Duration::from_secs(2);
/// How long the new leader writes before the cut heals.
const SERVE_BEFORE_HEAL: Duration = Duration::from_secs(1);
/// How long the example waits, after the cut, for both sides to act.
const PARTITION_BOUND: Duration = Duration::from_secs(40);
/// How long it waits, after the heal, for the minority to rejoin.
const REJOIN_BOUND: Duration = Duration::from_secs(30);

/// A member's epoch: (generation, incarnation).
pub(crate) type Epoch = (u64, u64);

/// A write, as the store saw it.
#[derive(Debug, Clone)]
pub(crate) struct Write {
    /// The writer.
    pub(crate) from: String,
    /// The epoch it was stamped with.
    pub(crate) epoch: Epoch,
    /// What it wrote.
    pub(crate) what: String,
    /// When it landed, from the start.
    pub(crate) at: Duration,
}

/// The store: the highest epoch it has seen from each member, and every
/// write it accepted or refused.
#[derive(Debug, Default)]
pub(crate) struct Store {
    highest: BTreeMap<String, Epoch>,
    /// Writes accepted, in order.
    pub(crate) accepted: Vec<Write>,
    /// Writes refused: an epoch below the highest seen from their writer.
    pub(crate) refused: Vec<Write>,
}

impl Store {
    /// Takes `w` unless its writer has written with a higher epoch (that
    /// epoch is the error).
    fn write(&mut self, w: Write) -> Result<(), Epoch> {
        let highest = self.highest.entry(w.from.clone()).or_insert(w.epoch);
        if w.epoch < *highest {
            let seen = *highest;
            self.refused.push(w);
            return Err(seen);
        }
        *highest = w.epoch;
        self.accepted.push(w);
        Ok(())
    }
}

/// What the run showed. Durations are from the cut.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    /// The side cut off (the leader's).
    pub(crate) minority: Vec<String>,
    /// The other side.
    pub(crate) majority: Vec<String>,
    /// When the cut was made, from the start.
    pub(crate) cut_at: Duration,
    /// What each member decided.
    pub(crate) decided: Vec<(String, Decision)>,
    /// Members that emitted `downed` about themselves, and when.
    pub(crate) downed_self: Vec<(String, Duration)>,
    /// Members that took a new generation: their epoch before and after.
    pub(crate) renewed: Vec<(String, Epoch, Epoch)>,
    /// Every death declared: by whom, of whom, and when.
    pub(crate) dead: Vec<(String, String, Duration)>,
    /// Who took over the writes, and when.
    pub(crate) takeover: Option<(String, Duration)>,
    /// When the cut healed.
    pub(crate) healed: Option<Duration>,
    /// Minority members the new leader saw up again: at which generation,
    /// and when.
    pub(crate) rejoined: Vec<(String, u64, Duration)>,
    /// The store, at the end.
    pub(crate) store: Store,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let s = run().await?;
    let secs = |d: &Duration| format!("{:.1} s", d.as_secs_f64());
    println!("-- summary (times from the cut)");
    for (name, at) in &s.downed_self {
        println!("{name} downed itself at {}", secs(at));
    }
    for (name, old, new) in &s.renewed {
        println!("{name}: epoch {old:?} -> {new:?}");
    }
    if let Some((leader, at)) = &s.takeover {
        println!("{leader} took over the writes at {}", secs(at));
    }
    let mut counts: BTreeMap<(&str, Epoch), (u32, u32)> = BTreeMap::new();
    for w in &s.store.accepted {
        counts.entry((&w.from, w.epoch)).or_default().0 += 1;
    }
    for w in &s.store.refused {
        counts.entry((&w.from, w.epoch)).or_default().1 += 1;
    }
    for ((from, epoch), (accepted, refused)) in counts {
        println!("store: {from} at epoch {epoch:?}: {accepted} accepted, {refused} refused");
    }
    for (name, generation, at) in &s.rejoined {
        println!("{name} rejoined at generation {generation} ({})", secs(at));
    }
    Ok(())
}

/// One member and its application's state.
struct Member {
    name: String,
    cluster: Cluster,
    /// What stands between it and the network: the partition is made here.
    faults: Arc<Faults>,
    /// Its epoch, as its own events tell it.
    epoch: Epoch,
    /// Whom it takes for the leader; `None` once downed (it follows, and
    /// does not take the lead back).
    leader: Option<String>,
}

/// The five members, the writes on their way and what the run showed.
struct Queue {
    start: Instant,
    members: Vec<Member>,
    /// Writes on their way to the store, with when they land.
    link: VecDeque<(Instant, Write)>,
    /// Assignments written so far.
    seq: u64,
    /// Each member's epoch before the cut.
    before: BTreeMap<String, Epoch>,
    cut: Option<Instant>,
    summary: Summary,
}

impl Queue {
    fn say(&self, what: std::fmt::Arguments<'_>) {
        println!("{:5.2} s  {what}", self.start.elapsed().as_secs_f64());
    }

    /// Time since the cut.
    fn since_cut(&self) -> Duration {
        self.cut.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// What member `i`'s application does with one of its events.
    async fn on_event(&mut self, i: usize, event: Event) -> Result<(), Box<dyn std::error::Error>> {
        let name = self.members[i].name.clone();
        let at = self.since_cut();
        match event {
            Event::Suspected { id, by, .. } => self.say(format_args!("[{name}] {} suspected by {}", id.name, by.name)),
            Event::Unreachable { id, .. } => self.say(format_args!("[{name}] {} unreachable", id.name)),
            Event::Decided { decision, down, .. } => {
                self.say(format_args!("[{name}] keep-majority decided {decision}, downing {}", down.join(", ")));
                self.summary.decided.push((name, decision));
            }
            // This member is downed: it gives up the lead at once.
            Event::Downed { id, by, .. } if id.name == name => {
                self.say(format_args!("[{name}] downed by {}: stops writing, leads no more", by.name));
                self.members[i].leader = None;
                self.summary.downed_self.push((name, at));
            }
            Event::Downed { id, .. } => self.say(format_args!("[{name}] {} downed", id.name)),
            // Its new epoch goes to the store at once, with its step-down:
            // from now on, the old epoch is refused.
            Event::Renewed { id } => {
                let old = self.members[i].epoch;
                let new = (id.generation, 0);
                self.members[i].epoch = new;
                self.summary.renewed.push((name.clone(), old, new));
                let w = Write { from: name.clone(), epoch: new, what: "step-down".into(), at: self.start.elapsed() };
                let stored = if self.summary.store.write(w).is_ok() { "accepted" } else { "refused" };
                self.say(format_args!("[{name}] new epoch {new:?} (was {old:?}); its step-down {stored}"));
            }
            Event::SelfRefuted { incarnation } => self.members[i].epoch.1 = incarnation,
            Event::Dead { id, .. } => {
                self.say(format_args!("[{name}] {} declared dead", id.name));
                self.summary.dead.push((name.clone(), id.name.clone(), at));
                if self.members[i].leader.as_deref() == Some(id.name.as_str()) {
                    self.elect(i).await?;
                }
            }
            Event::Up { id, .. } if self.cut.is_some() => {
                self.say(format_args!("[{name}] {id} up"));
                let renewed = self.before.get(&id.name).is_some_and(|e| id.generation > e.0);
                if renewed && self.summary.takeover.as_ref().is_some_and(|(l, _)| *l == name) {
                    self.summary.rejoined.push((id.name, id.generation, at));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Member `i`'s leader is gone: the oldest live member it knows (lowest
    /// generation, then name), itself included, leads from now on.
    async fn elect(&mut self, i: usize) -> Result<(), Box<dyn std::error::Error>> {
        let me = &self.members[i];
        let mut live: Vec<(u64, String)> = me
            .cluster
            .members()
            .await?
            .into_iter()
            .filter(|v| v.status == Status::Alive)
            .map(|v| (v.id.generation, v.id.name))
            .collect();
        live.push((me.epoch.0, me.name.clone()));
        live.sort();
        let next = live.swap_remove(0).1;
        if next == me.name {
            self.say(format_args!("[{next}] takes over the writes, epoch {:?}", me.epoch));
            self.summary.takeover = Some((next.clone(), self.since_cut()));
        }
        self.members[i].leader = Some(next);
        Ok(())
    }

    /// Every member that takes itself for the leader writes one assignment,
    /// which lands `IN_FLIGHT` later; the writes due land.
    fn write(&mut self) {
        let now = Instant::now();
        for m in self.members.iter().filter(|m| m.leader.as_ref() == Some(&m.name)) {
            self.seq += 1;
            let what = format!("assignment #{}", self.seq);
            self.link
                .push_back((now + IN_FLIGHT, Write { from: m.name.clone(), epoch: m.epoch, what, at: Duration::ZERO }));
        }
        while self.link.front().is_some_and(|(t, _)| *t <= now) {
            let Some((_, mut w)) = self.link.pop_front() else { break };
            w.at = self.start.elapsed();
            let store = &self.summary.store;
            let first = !store.accepted.iter().any(|a| a.from == w.from && a.epoch == w.epoch);
            let (from, epoch, what) = (w.from.clone(), w.epoch, w.what.clone());
            match self.summary.store.write(w) {
                Err(seen) => self.say(format_args!(
                    "store refuses {from}'s {what}: epoch {epoch:?}, and it has seen {seen:?} from {from}"
                )),
                Ok(()) if first => self.say(format_args!("store accepts {from}'s writes at epoch {epoch:?}")),
                Ok(()) => {}
            }
        }
    }

    /// Cuts every link between the first `CUT_OFF` members and the rest,
    /// or, with `cut` false, heals them.
    fn partition(&self, cut: bool) {
        let (minority, majority) = self.members.split_at(CUT_OFF);
        let addrs = |side: &[Member]| if cut { side.iter().map(|m| m.cluster.local_addr()).collect() } else { vec![] };
        for m in minority {
            m.faults.block(addrs(majority));
        }
        for m in majority {
            m.faults.block(addrs(minority));
        }
    }
}

/// Starts the five, lets the leader write, cuts the network, waits until
/// the minority has downed itself and the majority has taken over, heals
/// the cut, waits for the minority to rejoin, and leaves.
pub(crate) async fn run() -> Result<Summary, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let local = "127.0.0.1:0".parse()?;
    let mut config = Config::lan_fast(DEFAULT_CLUSTER);
    config.downing = Downing::new("keep-majority".parse()?).with_stable_after(STABLE_AFTER);

    // Every member's events go to one channel, tagged with its index.
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, ClusterEvent)>();
    let mut members: Vec<Member> = Vec::new();
    for (i, name) in NAMES.into_iter().enumerate() {
        let faults = Arc::new(Faults::default());
        let seeds: Vec<_> = members.first().map(|m| m.cluster.local_addr()).into_iter().collect();
        let builder = Cluster::builder(name).bind(local).seeds(seeds).config(config.clone()).intercept(faults.clone());
        let mut events = builder.events();
        let cluster = builder.start().await?;
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(e) = events.next().await {
                if tx.send((i, e)).is_err() {
                    break;
                }
            }
        });
        let epoch = (cluster.id().generation, 0);
        members.push(Member { name: name.to_owned(), cluster, faults, epoch, leader: Some(NAMES[0].to_owned()) });
    }
    drop(tx);
    let deadline = Instant::now() + Duration::from_secs(10);
    'meet: loop {
        if Instant::now() > deadline {
            return Err("the five did not meet within 10 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        for m in &members {
            if m.cluster.members().await?.iter().filter(|v| v.status == Status::Alive).count() < NAMES.len() - 1 {
                continue 'meet;
            }
        }
        break;
    }

    let summary = Summary {
        minority: NAMES[..CUT_OFF].iter().map(|n| n.to_string()).collect(),
        majority: NAMES[CUT_OFF..].iter().map(|n| n.to_string()).collect(),
        ..Summary::default()
    };
    let before = members.iter().map(|m| (m.name.clone(), m.epoch)).collect();
    let mut q = Queue { start, members, link: VecDeque::new(), seq: 0, before, cut: None, summary };
    q.say(format_args!("five members meet; {} leads, and writes every {} ms", NAMES[0], WRITE_EVERY.as_millis()));
    let writing = Instant::now();
    let mut healed: Option<Instant> = None;
    let mut tick = tokio::time::interval(WRITE_EVERY);
    loop {
        // Every event waiting is handled before the writes, so that a
        // member just downed does not write again.
        tokio::select! {
            _ = tick.tick() => {}
            e = rx.recv() => {
                let (i, e) = e.ok_or("the members stopped")?;
                q.on_event(i, e.event).await?;
            }
        }
        while let Ok((i, e)) = rx.try_recv() {
            q.on_event(i, e.event).await?;
        }
        q.write();

        let s = &q.summary;
        match (q.cut, healed) {
            (None, _) if writing.elapsed() >= CUT_AFTER => {
                q.partition(true);
                q.say(format_args!("-- the network splits: {} | {}", s.minority.join(", "), s.majority.join(", ")));
                q.cut = Some(Instant::now());
                q.summary.cut_at = start.elapsed();
            }
            (Some(cut), None) => {
                let served = s.takeover.as_ref().is_some_and(|(_, t)| q.since_cut() >= *t + SERVE_BEFORE_HEAL);
                let settled = s.renewed.len() == CUT_OFF && served;
                if settled || cut.elapsed() >= PARTITION_BOUND {
                    if !settled {
                        q.say(format_args!("-- not settled {} s after the cut; healing", PARTITION_BOUND.as_secs()));
                    }
                    q.partition(false);
                    q.say(format_args!("-- the cut heals"));
                    healed = Some(Instant::now());
                    q.summary.healed = Some(q.since_cut());
                }
            }
            (Some(_), Some(heal)) => {
                if s.rejoined.len() == CUT_OFF {
                    break;
                }
                if heal.elapsed() >= REJOIN_BOUND {
                    q.say(format_args!("-- not rejoined {} s after the heal; giving up", REJOIN_BOUND.as_secs()));
                    break;
                }
            }
            _ => {}
        }
    }

    for m in &q.members {
        m.cluster.leave().await;
    }
    Ok(q.summary)
}
