//! Prints the membership events about one member in a scenario file:
//! `cargo run --release -p vigil-sim --example trace -- FILE NAME`.
use vigil_sim::{Scenario, Sim};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).unwrap();
    let s = Scenario::from_toml(&text).unwrap();
    let r = Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
    for (at, node, e) in r.events() {
        let s = format!("{e:?}");
        if s.contains(&format!("\"{}\"", args[2])) || node.to_string() == args[2].trim_start_matches('n') {
            println!("{at:10.3} n{node:<3} {s}");
        }
    }
}
