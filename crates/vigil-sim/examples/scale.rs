//! `cargo run --release -p vigil-sim --example scale -- N SECS`: one crash
//! in a cluster of N for SECS virtual seconds, and the wall time it took.
use std::time::Duration;

use vigil_sim::{Fault, Scenario, Sim, Timed};

// The example measures its own wall time; the simulator itself reads no
// clock.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn main() -> Result<(), vigil_sim::SimError> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let secs: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(600);
    let mut s = Scenario::new("scale", n);
    s.duration = Duration::from_secs(secs);
    s.faults.push(Timed::new(Duration::from_secs(30), Fault::Crash { node: 7 }));
    let started = std::time::Instant::now();
    let r = Sim::new(&s)?.run(&mut |_| {});
    println!("{:?}", r.crashes);
    println!(
        "msgs/member/s {:.2} bytes {:.0} false susp {} deaths {} violations {}",
        r.messages_per_member_second, r.bytes_per_member_second, r.false_suspicions, r.false_deaths, r.violations.total
    );
    println!("wall {:.2} s", started.elapsed().as_secs_f64());
    Ok(())
}
