//! Prints the membership events of a scenario that concern one member (as
//! the subject of the event, or as the node reporting it):
//! `cargo run --release -p vigil-sim --example trace -- SCENARIO.toml n63`.

use std::error::Error;

use vigil_sim::{Scenario, Sim};

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(name)) = (args.get(1), args.get(2)) else {
        return Err("usage: trace SCENARIO.toml MEMBER (for example n63)".into());
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    let scenario = Scenario::from_toml(&text).map_err(|e| format!("{path}: {e}"))?;
    eprintln!("seed {}", scenario.seed);
    let report = Sim::new(&scenario)?.keep_records(true).run(&mut |_| {});
    let quoted = format!("\"{name}\"");
    for (at, node, event) in report.events() {
        let shown = format!("{event:?}");
        if shown.contains(&quoted) || format!("n{node}") == *name {
            println!("{at:10.3} ms  n{node:<5} {shown}");
        }
    }
    Ok(())
}
