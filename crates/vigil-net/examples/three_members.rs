//! Three members in one process on 127.0.0.1: each prints every event it
//! sees; then one is stopped without leaving, as if its process had been
//! killed, and the other two print its death; then they leave.
//!
//! ```sh
//! cargo run -p vigil-net --example three_members
//! ```
//!
//! It ends on its own: on the LAN preset a crash is declared dead in about
//! 4 to 7 seconds, and the example gives up 30 seconds after the kill.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;
use tokio::time::Instant;
use vigil_net::{Cluster, ClusterEvent, Event};

/// How long the example waits for both survivors to declare the killed
/// member dead before it gives up.
const DEATH_BOUND: Duration = Duration::from_secs(30);

/// Milliseconds since the Unix epoch: the clock events are stamped with.
fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Prints one line, stamped with seconds since `t0` (Unix milliseconds).
fn say(t0: u64, at: u64, what: impl std::fmt::Display) {
    println!("{:5.2} s  {what}", at.saturating_sub(t0) as f64 / 1000.0);
}

/// What the run showed.
#[derive(Debug)]
pub(crate) struct Summary {
    /// The member that was stopped.
    pub(crate) killed: String,
    /// Each survivor that declared it dead, with how long after the kill.
    pub(crate) declared_dead: Vec<(String, Duration)>,
    /// Every event printed, from all three members.
    pub(crate) events: usize,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let summary = run().await?;
    for (by, after) in &summary.declared_dead {
        println!("{by} declared {} dead {:.1} s after the kill", summary.killed, after.as_secs_f64());
    }
    println!("{} events in all", summary.events);
    Ok(())
}

/// Starts `a`, `b` and `c`, kills `c`, and waits until `a` and `b` have both
/// declared it dead (or [`DEATH_BOUND`] has passed), then leaves.
pub(crate) async fn run() -> Result<Summary, Box<dyn std::error::Error>> {
    // Lines carry the time the event happened (its own stamp), not the
    // time it was printed.
    let t0 = unix_ms();
    let local = "127.0.0.1:0".parse()?;
    // Every member's events go to one channel, tagged with the member that
    // saw them, so that one loop prints them in the order they arrive.
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, ClusterEvent)>();
    let mut members = Vec::new();
    for name in ["a", "b", "c"] {
        let seeds: Vec<_> = members.first().map(Cluster::local_addr).into_iter().collect();
        let builder = Cluster::builder(name).bind(local).seeds(seeds);
        // Subscribed before the start, so that the joins are printed too.
        let mut events = builder.events();
        let member = builder.start().await?;
        say(t0, unix_ms(), format_args!("{} started on {}", member.id(), member.local_addr()));
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(e) = events.next().await {
                if tx.send((name.to_owned(), e)).is_err() {
                    break;
                }
            }
        });
        members.push(member);
    }
    drop(tx);

    // Let them meet, and let the survivors hear a few heartbeats from `c`,
    // so that its silence is judged against a real history.
    let mut printed = 0;
    let settle = Instant::now() + Duration::from_secs(2);
    while let Ok(Some((by, e))) = tokio::time::timeout_at(settle, rx.recv()).await {
        say(t0, e.unix_ms, format_args!("[{by}] {}", e.event));
        printed += 1;
    }

    let c = members.pop().ok_or("no member to kill")?;
    let killed = c.id().name.clone();
    say(t0, unix_ms(), format_args!("-- {} stops without leaving", c.id()));
    let kill = Instant::now();
    c.shutdown().await;

    let mut declared_dead: Vec<(String, Duration)> = Vec::new();
    let deadline = kill + DEATH_BOUND;
    while declared_dead.len() < members.len() {
        let Ok(Some((by, e))) = tokio::time::timeout_at(deadline, rx.recv()).await else {
            println!("-- not declared dead by both within {} s; giving up", DEATH_BOUND.as_secs());
            break;
        };
        say(t0, e.unix_ms, format_args!("[{by}] {}", e.event));
        printed += 1;
        if let Event::Dead { id, .. } = &e.event
            && id.name == killed
            && !declared_dead.iter().any(|(b, _)| *b == by)
        {
            declared_dead.push((by, kill.elapsed()));
        }
    }

    // The survivors leave one after the other while this loop goes on
    // printing, so that `b` is seen to hear of `a`'s departure. Once every
    // member has stopped, every stream ends and the channel closes.
    let leaving = tokio::spawn(async move {
        for m in members {
            say(t0, unix_ms(), format_args!("-- {} leaves", m.id()));
            m.leave().await;
        }
    });
    while let Some((by, e)) = rx.recv().await {
        say(t0, e.unix_ms, format_args!("[{by}] {}", e.event));
        printed += 1;
    }
    leaving.await?;
    Ok(Summary { killed, declared_dead, events: printed })
}
