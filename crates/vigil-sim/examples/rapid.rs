//! Rapid's stability experiments on both protocols and each downing
//! strategy, as a markdown table:
//!
//! ```sh
//! cargo run --release -p vigil-sim --example rapid -- 1000
//! ```
//!
//! The argument is the cluster size (default 1000); the seed is 1 (a
//! second argument sets another); a third, comma-separated, picks setups
//! (`phi/auto,classic/auto`), and a fourth experiments by their first
//! word (`crashes`, `flip-flop`, `80`, `1`, `bootstrap`); `all` for
//! every one. Each run prints
//! its line as it ends. The bootstrap (every member joining through one
//! seed at once) has a table of its own. A fifth argument names a
//! directory for the plots: one per experiment, `rapid-<experiment>.svg`,
//! how many distinct views of who is alive the healthy members held over
//! time, per setup.

use vigil_lab::report::svg::{Chart, Scale, Series, Style};
use vigil_sim::experiment::{Experiment, Outcome, Setup, bootstrap};

const SETUPS: [&str; 8] = [
    "classic/auto",
    "classic/keep-majority",
    "phi/auto",
    "phi/keep-majority",
    "phi/keep-oldest",
    "phi/static-quorum:size=QUORUM",
    "phi/lease-majority",
    "phi/down-all",
];

// The wall-clock time of each run, for the reader: an example may read
// the clock the library never does.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn main() {
    let mut args = std::env::args().skip(1);
    let number = |a: Option<String>, what: &str, default: u64| -> u64 {
        a.map_or(default, |a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!("rapid: {what} must be a whole number, got {a:?}");
                std::process::exit(2)
            })
        })
    };
    let n = number(args.next(), "the cluster size", 1000) as usize;
    if !(20..=100_000).contains(&n) {
        eprintln!("rapid: the cluster size must be 20 to 100000, got {n}");
        std::process::exit(2);
    }
    let seed = number(args.next(), "the seed", 1);
    // `all` (or nothing) for every setup or experiment.
    let list = |a: Option<String>| -> Option<Vec<String>> {
        a.filter(|a| !a.is_empty() && a != "all").map(|a| a.split(',').map(str::to_owned).collect())
    };
    let picked = list(args.next());
    let experiments = list(args.next());
    let plots: Option<std::path::PathBuf> = args.next().map(Into::into);
    if let Some(dir) = &plots
        && !dir.is_dir()
    {
        eprintln!("rapid: the plots' directory {} is not a directory", dir.display());
        std::process::exit(2);
    }
    println!("N = {n}, seed {seed} (replay with the same arguments)\n");
    println!(
        "| experiment | setup | faulty removed | healthy removed | views disagree | most views at once | changes per member | events per member | msgs/member·s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for e in Experiment::ALL {
        let first = e.name().split(' ').find(|w| *w != "10").unwrap_or("");
        if experiments.as_ref().is_some_and(|x| !x.iter().any(|w| w == first)) {
            continue;
        }
        let mut outcomes: Vec<Outcome> = Vec::new();
        for s in SETUPS {
            if picked.as_ref().is_some_and(|p| !p.iter().any(|x| s.starts_with(x.as_str()))) {
                continue;
            }
            let text = s.replace("QUORUM", &(n / 2 + 1).to_string());
            let setup = Setup::parse(&text).expect("the setups parse");
            let started = std::time::Instant::now();
            let o = e.run(n, &setup, seed);
            println!(
                "| {} | {} | {}/{} | {} | {:.0} of {:.0} s | {} | {:.1} | {:.1} | {:.2} |",
                e.name(),
                o.setup,
                o.faulty_removed,
                o.faulty,
                o.wrongly_removed,
                o.inconsistent_secs,
                o.observed_secs,
                o.most_views,
                o.changes_per_member,
                o.events_per_member,
                o.messages_per_member_second
            );
            eprintln!("  ({:.1} s)", started.elapsed().as_secs_f64());
            outcomes.push(o);
        }
        if let Some(dir) = &plots {
            plot(dir, e, n, seed, &outcomes);
        }
    }
    if experiments.as_ref().is_some_and(|x| !x.iter().any(|w| w == "bootstrap")) {
        return;
    }
    println!(
        "\n| bootstrap | setup | distinct cluster sizes per member: fewest / median / most | a member's view complete after, mean | every view complete after | msgs/member·s | bytes/member·s |"
    );
    println!("|---|---|---|---|---|---|---|");
    // Joining does not depend on the downing strategy: one of each protocol.
    for s in ["classic/auto", "phi/auto"] {
        if picked.as_ref().is_some_and(|p| !p.iter().any(|x| s.starts_with(x.as_str()))) {
            continue;
        }
        let setup = Setup::parse(s).expect("the setups parse");
        let started = std::time::Instant::now();
        let b = bootstrap(n, &setup, seed);
        let secs = |s: Option<f64>| s.map_or("not within 180 s".to_owned(), |c| format!("{c:.1} s"));
        println!(
            "| {n} joining through one seed | {} | {} / {} / {} | {} | {} | {:.2} | {:.0} |",
            b.setup,
            b.sizes.0,
            b.sizes.1,
            b.sizes.2,
            secs(b.mean_complete_secs),
            secs(b.converged_secs),
            b.messages_per_member_second,
            b.bytes_per_member_second
        );
        eprintln!("  ({:.1} s)", started.elapsed().as_secs_f64());
    }
}

/// One experiment's plot: distinct views among the healthy members over
/// time, a line per setup, the fault's span shaded.
fn plot(dir: &std::path::Path, e: Experiment, n: usize, seed: u64, outcomes: &[Outcome]) {
    let (from, to) = e.fault_window();
    let mut chart = Chart::new(
        format!("{}: distinct views of who is alive, N = {n}, seed {seed}", e.name()),
        "seconds",
        "distinct views among healthy members (log; 1: all agree)",
    )
    .with_y_scale(Scale::Log10)
    .with_band(from, to.max(from + 1.0), if e == Experiment::Crashes { "crashes" } else { "fault" });
    for o in outcomes {
        let points = o.views.iter().map(|&(t, v)| (t, v as f64));
        chart = chart.with_series(Series::new(o.setup.clone(), points).with_style(Style::Step));
    }
    let slug: Vec<&str> = e.name().split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let path = dir.join(format!("rapid-{}.svg", slug.join("-")));
    match std::fs::write(&path, chart.to_svg()) {
        Ok(()) => eprintln!("plot: {}", path.display()),
        Err(err) => {
            eprintln!("rapid: cannot write {}: {err}", path.display());
            std::process::exit(1);
        }
    }
}
