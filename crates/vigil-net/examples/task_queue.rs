//! Seed 004's task queue, with graded policies and outlier detection. One
//! process, four members on 127.0.0.1: a dispatcher hands tasks to three
//! workers, records the outcome of each, and watches the workers with three
//! policies in the policy grammar:
//!
//! - `stop-assigning=2,dwell=500ms,ejection`: no new tasks once φ has held
//!   at 2 for half a second, or as soon as outlier detection ejects the
//!   worker;
//! - `reassign=5,dwell=1s`: its running tasks go to the others;
//! - `remove=8,dwell=2s,destructive`: out of the pool, its fencing token
//!   refused from then on (under the brake: never most of the pool at once).
//!
//! Two workers go wrong. `worker-2` answers every task with a 503 while its
//! heartbeats stay fine: φ sees nothing, outlier detection ejects it after
//! five in a row, and `stop-assigning` fires on the ejection. `worker-3`
//! freezes (its member stops without leaving): its tasks hang without an
//! answer, and φ fires the three policies in order.
//!
//! ```sh
//! cargo run -p vigil-net --example task_queue
//! ```
//!
//! Each worker's epoch (generation, incarnation) is the fencing token the
//! dispatcher hands out with its tasks: a worker that comes back after its
//! removal comes back with a higher epoch, and a store that remembers the
//! highest epoch it has seen per worker refuses the removed one's late
//! writes.
//!
//! The dispatcher itself cut off by a partition is the next example,
//! `fenced_leader.rs` (`cargo run -p vigil-net --example fenced_leader`):
//! under `keep-majority` the side it is on downs itself, the dispatcher
//! obeys the `downed` event and stops writing, the same kind of store
//! refuses its writes of the old epoch still on their way, and the
//! majority takes over.
//!
//! It ends on its own once the frozen worker is removed (about 4 seconds
//! after it freezes), or 30 seconds after the freeze at the latest.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;
use vigil_net::{Cluster, Config, DEFAULT_CLUSTER, Event, HealthPolicy, Outcome, Signal, Status};

/// The dispatcher's policies, gentlest first. φ only grows while a worker
/// is silent, so a policy fires after a gentler one as long as its dwell is
/// at least as long: `reassign` waits a second at φ 5, or it would fire
/// before `stop-assigning` has held φ 2 for its half second.
const POLICIES: [&str; 3] =
    ["stop-assigning=2,dwell=500ms,ejection", "reassign=5,dwell=1s", "remove=8,dwell=2s,destructive"];

/// The worker that answers 503 from [`GRAY_AT`] on.
const GRAY: &str = "worker-2";
/// The worker that freezes at [`FREEZE_AT`].
const FROZEN: &str = "worker-3";
/// When, after the dispatcher starts watching, `worker-2` goes gray.
const GRAY_AT: Duration = Duration::from_secs(1);
/// When `worker-3` freezes: late enough for the dispatcher to have heard
/// several of its heartbeats.
const FREEZE_AT: Duration = Duration::from_secs(3);
/// How long the dispatcher waits for the frozen worker's removal.
const REMOVAL_BOUND: Duration = Duration::from_secs(30);
/// The dispatcher hands out a task this often.
const TASK_EVERY: Duration = Duration::from_millis(50);

/// A policy that fired, recovered or was withheld for a worker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verdict {
    /// The worker.
    pub(crate) worker: String,
    /// The policy's name.
    pub(crate) policy: String,
    /// Whether it fired (rather than recovered or was withheld).
    pub(crate) fired: bool,
    /// Which signal moved it.
    pub(crate) signal: Signal,
}

/// What the run showed.
#[derive(Debug)]
pub(crate) struct Summary {
    /// The worker that answered 503s.
    pub(crate) gray: String,
    /// The worker that froze.
    pub(crate) frozen: String,
    /// Workers outlier detection ejected, in order.
    pub(crate) ejected: Vec<String>,
    /// Every policy verdict the dispatcher saw, in order.
    pub(crate) verdicts: Vec<Verdict>,
    /// Workers removed from the pool, with the fencing token fenced off.
    pub(crate) removed: Vec<(String, (u64, u64))>,
    /// Tasks each worker completed.
    pub(crate) done: BTreeMap<String, u32>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let s = run().await?;
    println!("-- summary");
    println!("ejected by outlier detection: {}", s.ejected.join(", "));
    for (worker, token) in &s.removed {
        println!("removed: {worker}, fencing token {token:?} refused from now on");
    }
    let fired: Vec<String> =
        s.verdicts.iter().filter(|v| v.fired).map(|v| format!("{} {} ({})", v.worker, v.policy, v.signal)).collect();
    println!("policies fired: {}", fired.join(", "));
    let done: Vec<String> = s.done.iter().map(|(w, n)| format!("{w} {n}")).collect();
    println!("tasks done: {} ({} went gray, {} froze)", done.join(", "), s.gray, s.frozen);
    Ok(())
}

/// What the dispatcher knows of one worker.
#[derive(Debug)]
struct Worker {
    /// The fencing token its tasks carry.
    token: (u64, u64),
    /// Whether new tasks go to it.
    assigning: bool,
    /// Whether it is out of the pool for good.
    removed: bool,
    /// Tasks it took and has not answered.
    running: u32,
    /// Tasks it completed.
    done: u32,
}

/// Runs the dispatcher and its workers until the frozen worker is removed
/// (or [`REMOVAL_BOUND`] passes), then leaves.
pub(crate) async fn run() -> Result<Summary, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let say = |what: std::fmt::Arguments<'_>| println!("{:5.2} s  {what}", start.elapsed().as_secs_f64());
    let local = "127.0.0.1:0".parse()?;

    let mut config = Config::lan(DEFAULT_CLUSTER);
    config.policies = POLICIES.iter().map(|p| p.parse::<HealthPolicy>()).collect::<Result<_, _>>()?;
    let dispatcher = Cluster::builder("dispatcher").bind(local).config(config).start().await?;
    let mut events = dispatcher.events();
    let mut members = Vec::new();
    for i in 1..=3 {
        let name = format!("worker-{i}");
        members.push(Cluster::builder(&name).bind(local).seeds([dispatcher.local_addr()]).start().await?);
    }

    // The pool: every worker the dispatcher knows alive, watched, each with
    // the token its tasks carry.
    let mut pool: BTreeMap<String, Worker> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.len() < members.len() {
        if Instant::now() > deadline {
            return Err("the dispatcher did not meet its workers within 10 s".into());
        }
        for m in dispatcher.members().await? {
            if m.status == Status::Alive && !pool.contains_key(&m.id.name) {
                dispatcher.watch(&m.id.name).await?;
                say(format_args!("{} joins the pool; its tasks carry fencing token {:?}", m.id.name, m.epoch()));
                let w = Worker { token: m.epoch(), assigning: true, removed: false, running: 0, done: 0 };
                pool.insert(m.id.name.clone(), w);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let watching = Instant::now();
    let mut gray = false;
    let mut frozen = None;
    let mut next = 0usize;
    let mut pending = 0u32;
    let mut summary = Summary {
        gray: GRAY.to_owned(),
        frozen: FROZEN.to_owned(),
        ejected: Vec::new(),
        verdicts: Vec::new(),
        removed: Vec::new(),
        done: BTreeMap::new(),
    };
    let mut tick = tokio::time::interval(TASK_EVERY);
    loop {
        if !gray && watching.elapsed() >= GRAY_AT {
            gray = true;
            say(format_args!("-- {GRAY} starts answering 503 (its heartbeats stay fine)"));
        }
        if frozen.is_none() && watching.elapsed() >= FREEZE_AT {
            let i = members.iter().position(|m| m.id().name == FROZEN).ok_or("no such worker")?;
            let m = members.remove(i);
            say(format_args!("-- {FROZEN} freezes"));
            m.shutdown().await;
            frozen = Some(Instant::now());
        }
        if frozen.is_some_and(|t| t.elapsed() > REMOVAL_BOUND) {
            say(format_args!("-- {FROZEN} not removed within {} s; giving up", REMOVAL_BOUND.as_secs()));
            break;
        }
        if summary.removed.iter().any(|(w, _)| w == FROZEN) {
            break;
        }
        tokio::select! {
            _ = tick.tick() => {
                // A new task arrives; every waiting task (new, reassigned or
                // refused with a 503) goes to the next worker that takes
                // tasks, round robin.
                pending += 1;
                let open: Vec<String> =
                    pool.iter().filter(|(_, w)| w.assigning && !w.removed).map(|(n, _)| n.clone()).collect();
                // With no worker open, tasks wait.
                let batch = if open.is_empty() { 0 } else { pending };
                let mut refused = 0;
                for _ in 0..batch {
                    let name = &open[next % open.len()];
                    next += 1;
                    pending -= 1;
                    let w = pool.get_mut(name).ok_or("no such worker")?;
                    if name == FROZEN && frozen.is_some() {
                        // No answer, and none recorded: the dispatcher learns
                        // of a frozen worker from φ, not from its requests.
                        w.running += 1;
                    } else if name == GRAY && gray {
                        dispatcher.record_outcome(name, Outcome::Response(503), Some(Duration::from_millis(2))).await?;
                        refused += 1;
                    } else {
                        dispatcher.record_outcome(name, Outcome::Response(200), Some(Duration::from_millis(10))).await?;
                        w.done += 1;
                    }
                }
                pending += refused;
            }
            e = events.next() => {
                let Some(e) = e else { return Err("the dispatcher stopped".into()) };
                match e.event {
                    Event::Ejected { id, reason, .. } => {
                        say(format_args!("{}: ejected by outlier detection ({})", id.name, reason.name()));
                        summary.ejected.push(id.name);
                    }
                    Event::Policy { id, policy, fired, signal, withheld, .. } => {
                        let Some(w) = pool.get_mut(&id.name) else { continue };
                        let why = match (fired, withheld) {
                            (true, _) => "fired",
                            (false, true) => "withheld by the brake",
                            (false, false) => "recovered",
                        };
                        match (policy.as_str(), fired) {
                            ("stop-assigning", true) => {
                                w.assigning = false;
                                say(format_args!("{}: stop assigning new tasks [{signal}]", id.name));
                            }
                            ("stop-assigning", false) if !withheld => {
                                w.assigning = true;
                                say(format_args!("{}: assigning again [{signal}]", id.name));
                            }
                            ("reassign", true) => {
                                say(format_args!(
                                    "{}: reassign its {} running tasks to the others [{signal}]",
                                    id.name, w.running
                                ));
                                pending += std::mem::take(&mut w.running);
                            }
                            ("remove", true) => {
                                w.removed = true;
                                say(format_args!(
                                    "{}: removed from the pool [{signal}]; fencing token {:?} refused from now on",
                                    id.name, w.token
                                ));
                                summary.removed.push((id.name.clone(), w.token));
                            }
                            _ => say(format_args!("{}: policy {policy} {why} [{signal}]", id.name)),
                        }
                        summary.verdicts.push(Verdict { worker: id.name, policy, fired, signal });
                    }
                    Event::Refuted { ref id, .. } | Event::Up { ref id, .. } => {
                        // A new incarnation or generation is a new token; the
                        // first `Up` of each worker says nothing new.
                        let epoch = dispatcher.member(&id.name).await?.map(|m| m.epoch());
                        match (pool.get_mut(&id.name), epoch) {
                            (Some(w), Some(epoch)) if epoch != w.token => {
                                say(format_args!("{}", e.event));
                                w.token = epoch;
                                say(format_args!("{}: its tasks carry fencing token {epoch:?} from now on", id.name));
                            }
                            (Some(_), _) => {}
                            (None, _) => say(format_args!("{}", e.event)),
                        }
                    }
                    other => say(format_args!("{other}")),
                }
            }
        }
    }

    summary.done = pool.iter().map(|(n, w)| (n.clone(), w.done)).collect();
    if pending > 0 {
        say(format_args!("{pending} tasks still waiting for a worker"));
    }
    for m in &members {
        m.leave().await;
    }
    dispatcher.leave().await;
    Ok(summary)
}
