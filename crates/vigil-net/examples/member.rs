//! One member, printing what it sees. Run it in two terminals:
//!
//! ```sh
//! cargo run -p vigil-net --example member -- a 127.0.0.1:7001
//! cargo run -p vigil-net --example member -- b 127.0.0.1:7002 127.0.0.1:7001
//! ```
//!
//! Stop one with Ctrl-C: it leaves, and the other prints `Left`. Stop one
//! with `kill -9`: the other prints `Suspected`, then `Dead`, within about
//! 4 seconds.

use std::net::SocketAddr;

use vigil_net::Cluster;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: member NAME BIND_ADDR [SEED_ADDR...]";
    let name = args.next().ok_or(usage)?;
    let bind: SocketAddr = args.next().ok_or(usage)?.parse()?;
    let seeds = args.map(|a| a.parse()).collect::<Result<Vec<SocketAddr>, _>>()?;
    let member = Cluster::builder(&name).bind(bind).seeds(seeds).start().await?;
    println!("{} (generation {}) listening on {}", member.id().name, member.id().generation, member.local_addr());
    let mut events = member.events();
    loop {
        tokio::select! {
            e = events.next() => match e {
                Some(e) => println!("{:?}", e.event),
                None => break,
            },
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    member.leave().await;
    Ok(())
}
