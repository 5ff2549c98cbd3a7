//! Seed 004's task queue, with graded policies on φ: a dispatcher stops
//! assigning new tasks to a worker at φ 2, reassigns its running tasks at
//! φ 5, and removes it at φ 8 held for 2 s. One process, five members on
//! 127.0.0.1; after 5 s one worker stops (as if its host froze).
//!
//! ```sh
//! cargo run -p vigil-net --example task_queue
//! ```
//!
//! Each member's `epoch` (generation, incarnation) is the fencing token
//! the dispatcher hands out with a task: a worker it removed that comes
//! back must come back with a higher epoch, and a store that remembers the
//! highest epoch it has seen per worker refuses the old one's late writes.

use std::collections::BTreeMap;
use std::time::Duration;

use vigil_membership::{Config, Event};
use vigil_net::{Cluster, DEFAULT_CLUSTER};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let local = "127.0.0.1:0".parse()?;
    let mut config = Config::lan(DEFAULT_CLUSTER);
    config.policies = vec!["stop-assigning=2".parse()?, "reassign=5".parse()?, "remove=8,dwell=2s".parse()?];
    let dispatcher = Cluster::builder("dispatcher").bind(local).config(config).start().await?;
    let seed = dispatcher.local_addr();
    let mut workers = Vec::new();
    for i in 1..=4 {
        workers.push(Cluster::builder(&format!("worker-{i}")).bind(local).seeds([seed]).start().await?);
    }
    let mut events = dispatcher.events();
    // Wait until the dispatcher knows every worker, then watch them all.
    while dispatcher.members().await?.len() < 4 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut tokens = BTreeMap::new();
    for m in dispatcher.members().await? {
        dispatcher.watch(&m.id.name).await?;
        tokens.insert(m.id.name.clone(), m.epoch());
        println!("assigning to {} with fencing token {:?}", m.id.name, m.epoch());
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let frozen = workers.pop().ok_or("no worker")?;
    println!("-- {} freezes", frozen.id().name);
    frozen.shutdown().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while let Ok(Some(e)) = tokio::time::timeout_at(deadline, events.next()).await {
        match e.event {
            Event::Policy { id, policy, fired: true, level, .. } => {
                let phi = level.map_or("never heard".to_owned(), |l| format!("φ {l:.1}"));
                match policy.as_str() {
                    "stop-assigning" => println!("{}: stop assigning new tasks ({phi})", id.name),
                    "reassign" => println!("{}: reassign its tasks to the others ({phi})", id.name),
                    "remove" => {
                        println!(
                            "{}: removed from the pool ({phi}); its token {:?} is fenced off",
                            id.name, tokens[&id.name]
                        );
                        break;
                    }
                    _ => {}
                }
            }
            Event::Dead { id, .. } => println!("{}: declared dead by the cluster", id.name),
            _ => {}
        }
    }
    for w in workers {
        w.leave().await;
    }
    dispatcher.leave().await;
    Ok(())
}
