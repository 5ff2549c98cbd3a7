fn main() {
    let seed: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let from: f64 = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(0.0);
    let to: f64 = std::env::args().nth(3).and_then(|a| a.parse().ok()).unwrap_or(1e9);
    let s = vigil_sim::swarm::schedule(seed);
    println!("{}", toml::to_string(&s).unwrap());
    let r = vigil_sim::Sim::new(&s).unwrap().keep_records(true).run(&mut |_| {});
    for rec in &r.records {
        let t = rec.at.as_secs_f64();
        if t >= from && t <= to {
            println!("{t:8.3} {:?}", rec.what);
        }
    }
    println!("{:?}", r.violations);
}
