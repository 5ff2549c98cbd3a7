//! `vigil policies`: graded policies at work on seeded traces.
//!
//! Part 1 runs the lab's `regime-change` scenario (a sender every 100 ms; the
//! network delay jumps from N(10, 3) ms to N(80, 40) ms for 30 beats and
//! back; the sender crashes after beat 100) through a setting of every
//! model, with the lab's exact engine.
//!
//! Part 2 runs graded policies over a small cluster whose heartbeats come
//! from a lab scenario: a GC pause, a crash, and a mass silence that the
//! brake refuses to believe.

use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use vigil_detector::{AkkaConfig, Brake, Cause, Event, Instant, Policy, Registry, RegistryConfig};
use vigil_lab::dist::Delay;
use vigil_lab::engine::evaluate;
use vigil_lab::report::table::{Table, format_table};
use vigil_lab::scenario::{Crash, Phase, Scenario, builtin};
use vigil_lab::spec::DetectorSpec;

/// Arguments of `vigil policies`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub(crate) struct DemoArgs {
    /// Seed of every random choice (printed, so a run can be replayed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of traces in part 1.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    traces: u32,
}

/// The beat at which the congestion starts.
const CHANGE_BEAT: u64 = 40;

/// Heartbeats that train each detector before judging starts (as seed 001's
/// analysis does).
const WARMUP: usize = 5;

/// One setting of every model: (model, spec).
const LINEUP: [(&str, &str); 12] = [
    ("normal", "normal:window=100,min-std-ms=1,threshold=8"),
    ("normal", "normal:window=100,min-std-ms=30,threshold=8"),
    ("akka", "akka"),
    ("akka", "akka:pause-ms=0,min-std-ms=30,first-estimate-ms=100"),
    ("exponential", "exponential"),
    ("exponential", "exponential:initial-ms=none,max-interval-ms=none,threshold=2"),
    ("fixed", "fixed:timeout-ms=250"),
    ("deadline", "deadline:interval-ms=100,timeout-ms=150"),
    ("chen", "chen:alpha-ms=100,interval-ms=100"),
    ("bertier", "bertier"),
    ("2w", "2w:alpha-ms=100"),
    ("empirical", "empirical"),
];

fn part_one(args: &DemoArgs, out: &mut impl Write) -> Result<()> {
    writeln!(out, "vigil policies (seed {}, {} traces; replay with --seed {})", args.seed, args.traces, args.seed)?;
    writeln!(out)?;
    writeln!(out, "1. One sender, a heartbeat every 100 ms. The network delay is N(10, 3) ms for 40 beats,")?;
    writeln!(out, "   N(80, 40) ms for 30 beats, N(10, 3) ms for 30 beats; then the sender crashes (the lab's")?;
    writeln!(out, "   regime-change scenario). False alarms are exact episodes from the lab's engine (warm-up")?;
    writeln!(out, "   of {WARMUP} beats); detection is measured from when the first missing heartbeat was due.")?;
    writeln!(out)?;
    let scenario = builtin("regime-change")?;
    let traces = scenario.generate(args.seed, args.traces as usize);
    let specs = LINEUP.iter().map(|(_, s)| s.parse::<DetectorSpec>()).collect::<Result<Vec<_>, _>>()?;
    let qos = evaluate(&traces, &specs, WARMUP, &|| {})?;
    let rows = LINEUP
        .iter()
        .zip(&specs)
        .zip(&qos)
        .map(|(((model, _), spec), q)| {
            let at_change = q.mistake_beats.iter().find(|(b, _)| *b == CHANGE_BEAT).map_or(0, |(_, n)| *n);
            let detection = q.detection_from_due_ms.mean;
            vec![
                model.to_string(),
                spec.to_string(),
                q.mistakes.to_string(),
                format!("{}/{}", q.traces_with_mistake, q.traces),
                at_change.to_string(),
                if detection.is_nan() { "never".into() } else { crate::limits::fixed(detection, 1) },
            ]
        })
        .collect();
    let table = Table::new(
        "lineup",
        "",
        &["model", "setting", "false alarms", "traces with one", "at beat 40", "detection from due (ms)"],
        rows,
    );
    // The table's title line is empty: indent its rows under the text.
    for line in format_table(&table).lines().skip(1) {
        writeln!(out, " {line}")?;
    }
    writeln!(out)?;
    writeln!(out, "   The adaptive normal model with a 1 ms σ floor convicts the live sender at the regime")?;
    writeln!(out, "   change; a 30 ms floor or a fixed timeout does not. Compare rows, not models: each line")?;
    writeln!(out, "   is one setting, and `vigil replay` or `vigil lab replay` shows any of them on your own")?;
    writeln!(out, "   trace.")?;
    Ok(())
}

/// Heartbeats of one peer of part 2: every second for 120 s, each arriving
/// 20 ms late on average (normal, σ 10 ms), from the lab's generator.
fn peer_heartbeats(seed: u64, peer: u64) -> Result<Vec<Instant>> {
    let s = Scenario {
        name: "policies-peer".into(),
        description: String::new(),
        traces: 1,
        period_ms: 1000.0,
        jitter: Default::default(),
        phases: vec![Phase { beats: 120, delay: Delay::Normal { mean_ms: 20.0, sd_ms: 10.0 }, ramp_beats: 0 }],
        loss: Default::default(),
        sender_pauses: None,
        receiver_stalls: None,
        reorder: Default::default(),
        crash: Crash::None,
    };
    s.validate()?;
    Ok(s.trace(seed, peer).beats.iter().map(|b| b.arrival).collect())
}

fn part_two(args: &DemoArgs, out: &mut impl Write) -> Result<()> {
    writeln!(out)?;
    writeln!(out, "2. Graded policies over five peers heartbeating every second (Akka's detector).")?;
    writeln!(out, "   route: φ ≥ 1 · elect: φ ≥ 8 for 2 s · evict: φ ≥ 12 for 10 s, destructive (braked)")?;
    writeln!(out, "   p3 pauses 5 s at t=10 s (GC) · p5 crashes at t=20 s · at t=60 s the observer loses")?;
    writeln!(out, "   p1, p2 and p4 for 30 s (its own network), which the brake refuses to believe.")?;
    writeln!(out)?;
    let policies = vec![
        Policy::new("route", 1.0),
        Policy::new("elect", 8.0).dwell(Duration::from_secs(2)),
        Policy::new("evict", 12.0).dwell(Duration::from_secs(10)).destructive(true),
    ];
    let config = RegistryConfig {
        brake: Some(Brake { fraction: 0.4, window: Duration::from_secs(10), min_peers: 2 }),
        ..RegistryConfig::new(policies)
    };
    let mut registry = Registry::new(vigil_detector::Akka::new(AkkaConfig::default())?, config)?;
    let peers = ["p1", "p2", "p3", "p4", "p5"];
    // Heartbeats: every second from the lab's generator (each peer its own
    // stream of the seed), offset by 37 ms per peer.
    let mut arrivals: Vec<(Instant, &str)> = Vec::new();
    for (k, &p) in peers.iter().enumerate() {
        for t in peer_heartbeats(args.seed, k as u64)? {
            let t = t + Duration::from_millis(37 * k as u64);
            let t_ms = t.as_nanos() as f64 / 1e6;
            let silent = match p {
                "p3" => (10_000.0..15_000.0).contains(&t_ms),
                "p5" => t_ms >= 20_000.0,
                "p1" | "p2" | "p4" => (60_000.0..90_000.0).contains(&t_ms),
                _ => false,
            };
            if !silent {
                arrivals.push((t, p));
            }
        }
    }
    arrivals.sort();
    let mut events = Vec::new();
    for (t, p) in arrivals {
        while let Some(deadline) = registry.next_deadline().filter(|&d| d <= t) {
            events.extend(registry.poll(deadline));
        }
        registry.heartbeat(p, t).map_err(anyhow::Error::from)?;
    }
    let end = Instant::from_secs(121);
    while let Some(deadline) = registry.next_deadline().filter(|&d| d <= end) {
        events.extend(registry.poll(deadline));
    }
    // Recoveries noted by the last heartbeats come out of one more poll.
    events.extend(registry.poll(end));
    for e in &events {
        let line = match e {
            Event::Suspected { peer, policy, at, cause } => {
                let why = match cause {
                    Cause::Level(l) => format!("φ = {l:.2}"),
                    Cause::NeverHeard { .. } => "never heard".to_owned(),
                    other => format!("{other:?}"),
                };
                format!("{:>9.3} s  {peer:<3} suspected by {:<6} ({why})", secs(*at), registry.policy(*policy).name)
            }
            Event::Recovered { peer, policy, at, level } => format!(
                "{:>9.3} s  {peer:<3} recovered for {:<6} (φ = {level:.2})",
                secs(*at),
                registry.policy(*policy).name
            ),
            Event::BrakeEngaged { at, crossed, peers } => format!(
                "{:>9.3} s  BRAKE engaged: {crossed} of {peers} peers crossed a destructive threshold at once",
                secs(*at)
            ),
            Event::BrakeReleased { at, resumed, .. } => {
                format!(
                    "{:>9.3} s  brake released; {resumed} withheld eviction(s) wait out their dwell again",
                    secs(*at)
                )
            }
            Event::LocalPause { at, lateness, .. } => {
                format!("{:>9.3} s  observer stalled ({:.1} s late): quiet period", secs(*at), lateness.as_secs_f64())
            }
            other => format!("{other:?}"),
        };
        writeln!(out, "   {line}")?;
    }
    let c = registry.counters();
    writeln!(out)?;
    writeln!(
        out,
        "   {} suspicions, {} recoveries, {} eviction(s) withheld by the brake, {} dropped when the peer spoke again.",
        c.suspicions, c.recoveries, c.withheld, c.withheld_dropped
    )?;
    Ok(())
}

fn secs(t: Instant) -> f64 {
    t.as_nanos() as f64 / 1e9
}

/// Runs `vigil policies`.
pub(crate) fn run(args: &DemoArgs, out: &mut impl Write) -> Result<()> {
    part_one(args, out)?;
    part_two(args, out)?;
    Ok(())
}
