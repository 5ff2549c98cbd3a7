//! `vigil sim swarm`: many random fault schedules over every downing
//! strategy, each from a seed, held to the simulator's checkers; or one
//! schedule replayed, with what it did.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use vigil_sim::swarm::{self, Outcome};
use vigil_sim::{Sim, What};

use crate::error::{CheckFailed, UsageError};

/// The most schedules one command runs.
const MAX_SCHEDULES: u64 = 10_000_000;

/// Arguments of `vigil sim swarm`.
#[derive(Debug, Args)]
pub(super) struct SwarmArgs {
    /// Schedules to run.
    #[arg(long, default_value_t = 300, value_name = "N")]
    schedules: u64,
    /// The first schedule's seed; the others follow it.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run the schedule of this seed alone, and print it (as a scenario
    /// file `vigil sim run` takes), what each checker found and, with
    /// `--events`, every membership event.
    #[arg(long, value_name = "SEED", conflicts_with_all = ["schedules", "seed"])]
    replay: Option<u64>,
    /// With `--replay`: print every membership event, fault and lease
    /// request, with its virtual time.
    #[arg(long, requires = "replay")]
    events: bool,
    /// Worker threads (default: the machine's cores).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
}

pub(super) fn swarm_cmd(a: &SwarmArgs, out: &mut dyn Write) -> Result<()> {
    if let Some(seed) = a.replay {
        return replay(seed, a.events, out);
    }
    if !(1..=MAX_SCHEDULES).contains(&a.schedules) {
        return Err(UsageError(format!("--schedules: {} is outside 1 to {MAX_SCHEDULES}", a.schedules)).into());
    }
    if a.seed.checked_add(a.schedules).is_none() {
        return Err(UsageError(format!("--seed: {} leaves no room for {} schedules", a.seed, a.schedules)).into());
    }
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if !(1..=256).contains(&threads) {
        return Err(UsageError(format!("--threads: {threads} is outside 1 to 256")).into());
    }
    let (first, count) = (a.seed, a.schedules);
    writeln!(out, "swarm: {count} schedules, seeds {first} to {}, on {threads} thread(s)", first + count - 1)?;
    let pb = ProgressBar::new(count);
    pb.set_style(
        ProgressStyle::with_template("{msg:>8} [{bar:30}] {pos}/{len} {elapsed}, {per_sec}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message("swarm");
    let next = AtomicU64::new(first);
    let end = first + count;
    let (tx, rx) = mpsc::channel::<Outcome>();
    let mut tally = Tally::default();
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..threads.min(usize::try_from(count).unwrap_or(usize::MAX)) {
            let (tx, next) = (tx.clone(), &next);
            scope.spawn(move || {
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= end || tx.send(swarm::run(seed)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for o in rx {
            pb.inc(1);
            if !o.violations.is_empty() {
                pb.suspend(|| writeln!(out, "{o}\n  replay: vigil sim swarm --replay {} --events", o.seed))?;
            }
            tally.add(&o);
        }
        Ok(())
    })?;
    pb.finish_and_clear();
    tally.print(out)?;
    if tally.violating.is_empty() {
        return Ok(());
    }
    Err(CheckFailed(format!(
        "{} of {count} schedules violated a property (seeds {})",
        tally.violating.len(),
        tally.violating.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
    ))
    .into())
}

/// What the schedules found, in all and per strategy.
#[derive(Debug, Default)]
struct Tally {
    schedules: u64,
    virtual_secs: f64,
    forged: u64,
    downed: u64,
    /// Per strategy: schedules run, and those with a violation.
    strategies: BTreeMap<String, (u64, u64)>,
    /// Per checker: schedules it found a violation in.
    checkers: BTreeMap<&'static str, u64>,
    violating: Vec<u64>,
}

impl Tally {
    fn add(&mut self, o: &Outcome) {
        self.schedules += 1;
        self.virtual_secs += o.virtual_secs;
        self.forged += o.forged;
        self.downed += o.downed_deaths;
        let s = self.strategies.entry(o.strategy.clone()).or_default();
        s.0 += 1;
        if !o.violations.is_empty() {
            s.1 += 1;
            self.violating.push(o.seed);
            let mut seen: Vec<&'static str> = o.violations.first.iter().map(|v| v.checker).collect();
            seen.sort_unstable();
            seen.dedup();
            for c in seen {
                *self.checkers.entry(c).or_default() += 1;
            }
        }
    }

    fn print(&mut self, out: &mut dyn Write) -> Result<()> {
        self.violating.sort_unstable();
        writeln!(
            out,
            "{} schedules, {:.1} virtual hours, {} forged datagrams, {} members downed by decisions: {} with a \
             violation",
            self.schedules,
            self.virtual_secs / 3600.0,
            self.forged,
            self.downed,
            self.violating.len()
        )?;
        for (strategy, (run, bad)) in &self.strategies {
            writeln!(out, "  {strategy:<36} {run:>7} run, {bad:>5} with a violation")?;
        }
        for (checker, n) in &self.checkers {
            writeln!(out, "  violated: {checker}: {n} schedule(s)")?;
        }
        Ok(())
    }
}

/// Runs the schedule of `seed` and prints it, what it found, and with
/// `events` what it did.
fn replay(seed: u64, events: bool, out: &mut dyn Write) -> Result<()> {
    let s = swarm::schedule(seed);
    writeln!(out, "# The schedule of seed {seed}: `vigil sim run FILE` runs it again.")?;
    writeln!(out, "{}", s.to_toml())?;
    let report = Sim::new(&s)?.keep_records(events).run(&mut |_| {});
    if events {
        for r in &report.records {
            let at = r.at.as_secs_f64();
            match &r.what {
                What::Membership { node, event } => writeln!(out, "{at:10.3} n{node}: {event}")?,
                What::FaultStarted { fault } => writeln!(out, "{at:10.3} fault {fault} ({}) starts", kind(&s, *fault))?,
                What::FaultEnded { fault } => writeln!(out, "{at:10.3} fault {fault} ({}) ends", kind(&s, *fault))?,
                What::Converged => writeln!(out, "{at:10.3} every live node sees every other alive")?,
                What::Lease { node, holder, replacing, renewal, granted } => {
                    let answer = if *granted { "granted" } else { "refused" };
                    let asks = if *renewal { "renews" } else { "asks" };
                    let replacing = replacing.as_ref().map(|r| format!(" (replacing {r})")).unwrap_or_default();
                    writeln!(out, "{at:10.3} n{node}: {asks} the lease for {holder}{replacing}: {answer}")?;
                }
                other => writeln!(out, "{at:10.3} {other:?}")?,
            }
        }
    }
    let o = Outcome::of(seed, &s, &report);
    writeln!(out, "{o}")?;
    if o.violations.is_empty() {
        return Ok(());
    }
    Err(CheckFailed(format!("seed {seed}: {} violation(s)", o.violations.total)).into())
}

fn kind(s: &vigil_sim::Scenario, fault: usize) -> &'static str {
    s.faults.get(fault).map_or("?", vigil_sim::Timed::kind)
}
