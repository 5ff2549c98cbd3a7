fn main() {
    let first: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let count: u64 = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    let s = vigil_sim::swarm::run_many(first, count, &mut |o| {
        if !o.violations.is_empty() {
            println!("{o}")
        }
    });
    println!("{} schedules, {} violating, {:.0} virtual s", s.schedules, s.violating.len(), s.virtual_secs);
}
