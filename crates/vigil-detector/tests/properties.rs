//! Property-based tests of the promises every detector model makes.
//!
//! The heartbeat sequences mix ordinary jittered gaps with duplicates (equal
//! times), backwards times, 1 ns gaps, gaps of hours and days, and
//! astronomical gaps of up to 10^18 ns; start times range up to the end of
//! time, so sequences also saturate at `Instant::MAX`. After every heartbeat
//! the level, its monotonicity, the exact inverse (`crossing`) and the
//! handling of backwards heartbeats are checked for every model, in its
//! default configuration and in many non-default ones. Then: the window's
//! statistics against a naive recomputation, invariance under a shift of
//! every timestamp, scale equivariance, the exact normal tail out to 10^6 σ,
//! and no drift on a perfectly regular link.
//!
//! Whole file: about 10 s in debug on two cores, almost all of it in the
//! first property (24 cases × every configuration in `all_configs`).

use std::collections::VecDeque;
use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use vigil_detector::{
    Admission, AkkaConfig, AnyDetector, BertierConfig, Bootstrap, ChenConfig, DeadlineConfig, Detector,
    EmpiricalConfig, ExponentialConfig, FixedConfig, HeartbeatOutcome, Instant, MaxInterval, Model, ModelConfig,
    NormalConfig, Prior, SkipReason, Stats, TwoWindowConfig,
};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;
const HOUR: u64 = 3_600 * SEC;
const DAY: u64 = 24 * HOUR;
/// 10^18 ns, about 31.7 years: the largest single gap generated.
const EON: u64 = 1_000_000_000_000_000_000;

type TestResult = Result<(), TestCaseError>;

/// `cases` cases, and no regression files written next to the sources.
///
/// `PROPERTIES_CASES_SCALE=40` runs forty times as many, for a longer hunt
/// (in `--release`).
fn cases(cases: u32) -> ProptestConfig {
    let scale: u32 = std::env::var("PROPERTIES_CASES_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    ProptestConfig { cases: cases * scale, failure_persistence: None, ..ProptestConfig::default() }
}

fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

fn at(n: u64) -> Instant {
    Instant::from_nanos(n)
}

// ---------------------------------------------------------------------------
// Configurations
// ---------------------------------------------------------------------------

/// The models whose configuration has a window, a bootstrap and admission
/// rules.
const WINDOWED: [Model; 6] =
    [Model::Normal, Model::Exponential, Model::Empirical, Model::Chen, Model::Bertier, Model::TwoWindow];

/// A windowed model with the given window, bootstrap and admission and
/// everything else at its default (the exponential model without Cassandra's
/// seed, cap or a prior, so that only the given rules apply). For 2W-FD the
/// window is the long one, and the short one is 1.
fn windowed(model: Model, window: usize, bootstrap: Bootstrap, admission: Admission) -> ModelConfig {
    match model {
        Model::Normal => ModelConfig::Normal(NormalConfig { window, bootstrap, admission, ..NormalConfig::default() }),
        Model::Exponential => ModelConfig::Exponential(ExponentialConfig { window, bootstrap, admission, prior: None }),
        Model::Empirical => ModelConfig::Empirical(EmpiricalConfig { window, bootstrap, admission }),
        Model::Chen => ModelConfig::Chen(ChenConfig { window, bootstrap, admission, ..ChenConfig::default() }),
        Model::Bertier => {
            ModelConfig::Bertier(BertierConfig { window, bootstrap, admission, ..BertierConfig::default() })
        }
        Model::TwoWindow => {
            ModelConfig::TwoWindow(TwoWindowConfig { n2: window, bootstrap, admission, ..TwoWindowConfig::default() })
        }
        other => panic!("{other} has no window"),
    }
}

fn bootstraps() -> Vec<Bootstrap> {
    vec![
        Bootstrap::Estimate(Duration::from_secs(1)),
        Bootstrap::Seed(Duration::from_secs(2)),
        // Rounds to a zero-microsecond sample: a degenerate window.
        Bootstrap::Estimate(ns(1)),
        Bootstrap::Seed(ns(1)),
    ]
}

fn admissions() -> Vec<Admission> {
    let none = Admission::default();
    vec![
        Admission { max_interval: Some(MaxInterval::Ignore(Duration::from_secs(2))), ..none },
        Admission { max_interval: Some(MaxInterval::Clamp(Duration::from_millis(1_500))), ..none },
        Admission { min_interval: Some(Duration::from_millis(1)), ..none },
        Admission {
            min_interval: Some(ns(1)),
            max_interval: Some(MaxInterval::Ignore(Duration::from_secs(3_600))),
            ..none
        },
        Admission { skip_if_level_at_least: Some(3.0), ..none },
        Admission { reset_if_level_at_least: Some(2.0), ..none },
        Admission { skip_if_level_at_least: Some(0.5), reset_if_level_at_least: Some(5.0), ..none },
    ]
}

/// Every model's default, then non-default configurations of each.
fn all_configs() -> Vec<ModelConfig> {
    let mut configs: Vec<ModelConfig> = Model::ALL.iter().map(|&m| ModelConfig::default_for(m)).collect();
    for model in WINDOWED {
        for window in [1, 2, 3, 10] {
            configs.push(windowed(model, window, Bootstrap::None, Admission::default()));
        }
        for bootstrap in bootstraps() {
            configs.push(windowed(model, 3, bootstrap, Admission::default()));
        }
        for admission in admissions() {
            configs.push(windowed(model, 10, Bootstrap::None, admission));
        }
        configs.push(windowed(model, 2, Bootstrap::Estimate(Duration::from_millis(100)), admissions()[6]));
    }
    let normal = NormalConfig::default();
    configs.extend([
        ModelConfig::Normal(NormalConfig { acceptable_pause: Duration::from_secs(3), ..normal.clone() }),
        // The smallest σ floor there is: the tail is as steep as it gets.
        ModelConfig::Normal(NormalConfig { min_std_dev: ns(1), ..normal.clone() }),
        ModelConfig::Normal(NormalConfig { min_std_dev: ns(1), window: 2, ..normal }),
    ]);
    let akka = AkkaConfig::default();
    for window in [1, 2, 3, 10] {
        configs.push(ModelConfig::Akka(AkkaConfig { window, ..akka.clone() }));
    }
    configs.extend([
        ModelConfig::Akka(AkkaConfig::remote_watch()),
        ModelConfig::Akka(AkkaConfig { acceptable_pause: Duration::ZERO, window: 100, ..akka.clone() }),
        ModelConfig::Akka(AkkaConfig { threshold: 0.5, window: 3, ..akka.clone() }),
        ModelConfig::Akka(AkkaConfig { threshold: 1e-3, window: 2, acceptable_pause: Duration::ZERO, ..akka.clone() }),
        ModelConfig::Akka(AkkaConfig { threshold: 300.0, window: 10, ..akka.clone() }),
        ModelConfig::Akka(AkkaConfig {
            first_heartbeat_estimate: ns(1),
            min_std_dev: ns(1),
            acceptable_pause: Duration::ZERO,
            ..akka
        }),
        ModelConfig::Deadline(DeadlineConfig { heartbeat_interval: ns(1), acceptable_pause: Duration::ZERO }),
        ModelConfig::Deadline(DeadlineConfig {
            heartbeat_interval: Duration::from_secs(1),
            acceptable_pause: Duration::from_secs(4),
        }),
        ModelConfig::Fixed(FixedConfig { timeout: ns(1) }),
        ModelConfig::Fixed(FixedConfig { timeout: Duration::from_secs(86_400) }),
        ModelConfig::Exponential(ExponentialConfig::plain()),
        ModelConfig::Exponential(ExponentialConfig::chitchat()),
        ModelConfig::Exponential(ExponentialConfig {
            prior: Some(Prior { mean: Duration::from_secs(1), weight: 0.5 }),
            ..ExponentialConfig::plain()
        }),
        ModelConfig::Exponential(ExponentialConfig {
            window: 2,
            prior: Some(Prior { mean: ns(1), weight: 1_000.0 }),
            ..ExponentialConfig::plain()
        }),
        ModelConfig::Chen(ChenConfig { interval: Some(Duration::from_secs(1)), ..ChenConfig::default() }),
        ModelConfig::Chen(ChenConfig {
            window: 3,
            interval: Some(ns(1)),
            alpha: Duration::ZERO,
            ..ChenConfig::default()
        }),
        ModelConfig::Bertier(BertierConfig { interval: Some(Duration::from_millis(100)), ..BertierConfig::default() }),
        ModelConfig::Bertier(BertierConfig { window: 3, gamma: 1.0, beta: 0.0, phi: 10.0, ..BertierConfig::default() }),
        ModelConfig::TwoWindow(TwoWindowConfig {
            interval: Some(Duration::from_secs(1)),
            ..TwoWindowConfig::default()
        }),
        ModelConfig::TwoWindow(TwoWindowConfig { n1: 10, n2: 3, ..TwoWindowConfig::default() }),
        ModelConfig::TwoWindow(TwoWindowConfig { n1: 2, n2: 2, alpha: Duration::ZERO, ..TwoWindowConfig::default() }),
    ]);
    configs
}

fn build(config: &ModelConfig) -> AnyDetector {
    config.build().unwrap_or_else(|e| panic!("{config:?} does not build: {e}"))
}

/// Whether the model's level is a `-log10` probability (φ-like).
fn is_phi_like(model: Model) -> bool {
    matches!(model, Model::Normal | Model::Akka | Model::Exponential | Model::Empirical)
}

// ---------------------------------------------------------------------------
// Heartbeat sequences
// ---------------------------------------------------------------------------

/// One step of a heartbeat sequence, relative to the detector's last
/// heartbeat (the latest time so far).
#[derive(Debug, Clone, Copy)]
enum Step {
    /// At exactly the latest time.
    Duplicate,
    /// This long before the latest time (saturating at the origin).
    Backwards(u64),
    /// The sequence's base interval, jittered by this many per mille.
    Jittered(i64),
    /// This long after the latest time (saturating at `Instant::MAX`).
    Gap(u64),
    /// Within a nanosecond of where the level reaches one of the levels that
    /// matter to the configuration (admission rules, default threshold): at
    /// `crossing(level) + nudge`. The base interval if it is never reached.
    Crossing { which: usize, nudge: i8 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => (-300i64..=300).prop_map(Step::Jittered),
        2 => Just(Step::Duplicate),
        2 => prop_oneof![1u64..=10, 1..=SEC, Just(u64::MAX)].prop_map(Step::Backwards),
        2 => (1u64..=10).prop_map(Step::Gap),
        1 => (US..=MS).prop_map(Step::Gap),
        1 => (HOUR..=10 * DAY).prop_map(Step::Gap),
        1 => (EON / 1_000..=EON).prop_map(Step::Gap),
        3 => (0usize..8, -1i8..=1).prop_map(|(which, nudge)| Step::Crossing { which, nudge }),
    ]
}

/// A heartbeat sequence: a start time, a base interval and steps.
#[derive(Debug, Clone)]
struct Sequence {
    start: u64,
    base: u64,
    steps: Vec<Step>,
}

/// The levels at which a configuration's behaviour changes: its admission
/// rules' levels, its model's default threshold, and 1.
fn pivotal_levels(config: &ModelConfig) -> Vec<f64> {
    let (skip_at, reset_at) = level_rules(config);
    let mut levels: Vec<f64> = skip_at.into_iter().chain(reset_at).collect();
    levels.extend([config.model().default_threshold(), 1.0]);
    levels
}

impl Sequence {
    /// How many heartbeats the sequence has.
    fn len(&self) -> usize {
        self.steps.len() + 1
    }

    /// The time of heartbeat `i`, given the state of the detector that has
    /// taken heartbeats `0..i`.
    fn time(&self, i: usize, d: &AnyDetector, pivotal: &[f64]) -> u64 {
        let Some(latest) = d.last_heartbeat().map(Instant::as_nanos).filter(|_| i > 0) else {
            return self.start;
        };
        let after_base = latest.saturating_add(self.base);
        match self.steps[i - 1] {
            Step::Duplicate => latest,
            Step::Backwards(by) => latest.saturating_sub(by),
            Step::Jittered(per_mille) => {
                let jitter = (self.base as i128 * i128::from(per_mille) / 1_000) as i64;
                latest.saturating_add_signed(self.base as i64 + jitter)
            }
            Step::Gap(g) => latest.saturating_add(g),
            Step::Crossing { which, nudge } => match d.crossing(pivotal[which % pivotal.len()]) {
                Some(t) => t.as_nanos().saturating_add_signed(i64::from(nudge)),
                None => after_base,
            },
        }
    }
}

fn sequence(max_steps: usize) -> impl Strategy<Value = Sequence> {
    let start = prop_oneof![
        Just(0u64),
        0u64..=1_000 * SEC,
        0u64..=EON,
        // Close to the end of time: later heartbeats saturate at MAX.
        (u64::MAX - 100 * SEC)..=u64::MAX,
    ];
    let base = prop_oneof![Just(10 * MS), Just(100 * MS), Just(SEC), Just(5 * SEC), 1u64..=10 * SEC];
    (start, base, proptest::collection::vec(step(), 0..max_steps)).prop_map(|(start, base, steps)| Sequence {
        start,
        base,
        steps,
    })
}

/// Where to look at the level after a heartbeat: offsets from the last
/// heartbeat (used backwards and forwards) and multiples of the detector's
/// mean interval (to land near where the level takes off); and thresholds
/// for the φ-like models (which reach 50 only far into a silence) and for
/// the others (which count timeouts or intervals).
#[derive(Debug, Clone)]
struct Probes {
    offsets: Vec<u64>,
    multiples: Vec<f64>,
    phi_thresholds: Vec<f64>,
    other_thresholds: Vec<f64>,
}

fn probes() -> impl Strategy<Value = Probes> {
    let offset = prop_oneof![0u64..=1_000, 0..=10 * SEC, 0..=10 * DAY, 0..=EON, any::<u64>()];
    (
        proptest::collection::vec(offset, 6..12),
        proptest::collection::vec(0.0f64..40.0, 6..12),
        proptest::collection::vec(0.01f64..50.0, 3..6),
        proptest::collection::vec(0.1f64..10.0, 3..6),
    )
        .prop_map(|(offsets, multiples, phi_thresholds, other_thresholds)| Probes {
            offsets,
            multiples,
            phi_thresholds,
            other_thresholds,
        })
}

/// The thresholds a model is asked about: the random ones in its range, its
/// default, degenerate ones whose answer is prescribed, and extremes.
fn thresholds(model: Model, probes: &Probes) -> Vec<f64> {
    let random = if is_phi_like(model) { &probes.phi_thresholds } else { &probes.other_thresholds };
    let mut thresholds = random.clone();
    thresholds.extend([
        model.default_threshold(),
        f64::NAN,
        0.0,
        -0.0,
        -1.0,
        f64::NEG_INFINITY,
        f64::INFINITY,
        1e300,
        f64::MIN_POSITIVE,
        5e-324,
    ]);
    thresholds
}

// ---------------------------------------------------------------------------
// The invariants checked after every heartbeat
// ---------------------------------------------------------------------------

fn assert_valid_level(level: f64, what: &str) -> TestResult {
    prop_assert!(level.is_finite() && level >= 0.0, "{what}: level {level} is not finite and >= 0");
    Ok(())
}

/// Properties 1 to 3 for one detector state.
fn check_state(d: &AnyDetector, probes: &Probes) -> TestResult {
    let thresholds = thresholds(d.model(), probes);

    let Some(last) = d.last_heartbeat() else {
        // Before any heartbeat: level 0 everywhere, never a crossing.
        for t in [Instant::ZERO, at(1), at(SEC), at(EON), Instant::MAX] {
            prop_assert_eq!(d.level(t), 0.0, "no heartbeat yet, level at {:?}", t);
        }
        for &th in &thresholds {
            prop_assert_eq!(d.crossing(th), None, "no heartbeat yet, crossing({})", th);
        }
        return Ok(());
    };

    // Property 1: at the last heartbeat, and before it (which counts as the
    // last heartbeat, so the level is exactly the same).
    let at_last = d.level(last);
    assert_valid_level(at_last, "at the last heartbeat")?;
    for &off in &probes.offsets {
        let t = last - ns(off);
        let level = d.level(t);
        prop_assert_eq!(level.to_bits(), at_last.to_bits(), "level at {:?}, before the last {:?}", t, last);
    }

    // The sorted query times after the last heartbeat: random offsets,
    // multiples of the mean, fixed ones out to the end of time, and the
    // neighbourhoods of every crossing.
    let stats = d.stats();
    let unit = stats.mean.or(stats.last_interval).filter(|d| !d.is_zero()).map_or(SEC as f64, |d| d.as_nanos() as f64);
    let mut times: Vec<Instant> = vec![last, last + ns(1), last + ns(US), last + ns(MS), last + ns(SEC)];
    times.extend([last + ns(DAY), last + ns(EON), Instant::MAX]);
    times.extend(probes.offsets.iter().map(|&o| last + ns(o)));
    times.extend(probes.multiples.iter().map(|&m| last + ns((unit * m) as u64)));
    let crossings: Vec<Option<Instant>> = thresholds.iter().map(|&th| d.crossing(th)).collect();
    for &t in crossings.iter().flatten() {
        // Each crossing, its next neighbour, and a ladder of 1, 2, 4, ... ns
        // before it: with the monotonicity check below, this makes sure no
        // earlier time (at these scales) already reaches the threshold.
        times.extend([t, t + ns(1), t - ns(US)]);
        times.extend((0..64).map(|k| t - ns(1 << k)));
    }
    times.retain(|&t| t >= last);
    times.sort_unstable();
    times.dedup();

    // Properties 1 and 2: finite, non-negative, non-decreasing in `now`.
    let mut previous = (last, at_last);
    for &t in &times {
        let level = d.level(t);
        assert_valid_level(level, &format!("at {t:?}"))?;
        prop_assert!(
            level >= previous.1,
            "level decreases from {} at {:?} to {} at {:?} (last heartbeat {:?})",
            previous.1,
            previous.0,
            level,
            t,
            last
        );
        previous = (t, level);
    }

    // Property 3: the inverse.
    for (&th, &crossing) in thresholds.iter().zip(&crossings) {
        if th.is_nan() {
            prop_assert_eq!(crossing, None, "crossing(NaN)");
            continue;
        }
        if th <= 0.0 {
            prop_assert_eq!(crossing, Some(last), "crossing({}) must be the last heartbeat", th);
            continue;
        }
        if at_last >= th {
            prop_assert_eq!(crossing, Some(last), "level {} at the last heartbeat already reaches {}", at_last, th);
        }
        match crossing {
            Some(t) => {
                prop_assert!(t >= last, "crossing({}) = {:?} is before the last heartbeat {:?}", th, t, last);
                let level = d.level(t);
                prop_assert!(level >= th, "crossing({}) = {:?} but the level there is {}", th, t, level);
                if t > last {
                    // Exact on the nanosecond grid: one nanosecond earlier
                    // the threshold is not reached yet; by monotonicity,
                    // neither is it a microsecond earlier.
                    let before = d.level(t - ns(1));
                    prop_assert!(before < th, "crossing({}) = {:?} but level({:?} - 1ns) = {}", th, t, t, before);
                    let before = d.level(t - ns(US));
                    prop_assert!(before < th, "crossing({}) = {:?} but level({:?} - 1us) = {}", th, t, t, before);
                }
            }
            None => {
                // Never: the level stays below the threshold at every later
                // time looked at; they were checked to be non-decreasing up
                // to the end of time, so that is the one to look at.
                let level = d.level(Instant::MAX);
                prop_assert!(level < th, "crossing({}) = None but level(Instant::MAX) = {}", th, level);
            }
        }
    }

    // A consequence of monotonicity: crossings are ordered like thresholds
    // (None counts as after every instant).
    let mut positive: Vec<(f64, Option<Instant>)> =
        thresholds.iter().copied().zip(crossings.iter().copied()).filter(|&(th, _)| th > 0.0).collect();
    positive.sort_by(|a, b| a.0.total_cmp(&b.0));
    let order: Vec<Option<Instant>> = positive.iter().map(|&(_, c)| c).collect();
    for (i, pair) in order.windows(2).enumerate() {
        let later_or_never = match pair {
            [_, None] => true,
            [None, Some(_)] => false,
            [Some(a), Some(b)] => a <= b,
            _ => unreachable!(),
        };
        prop_assert!(
            later_or_never,
            "crossing({}) = {:?} but crossing({}) = {:?}",
            positive[i].0,
            pair[0],
            positive[i + 1].0,
            pair[1]
        );
    }
    Ok(())
}

/// What can be observed of a detector without changing it.
fn observe(
    d: &AnyDetector,
    probes: &Probes,
    thresholds: &[f64],
) -> (Option<Instant>, Stats, Vec<u64>, Vec<Option<Instant>>) {
    let base = d.last_heartbeat().unwrap_or(Instant::ZERO);
    let mut times: Vec<Instant> = probes.offsets.iter().flat_map(|&o| [base - ns(o), base + ns(o)]).collect();
    times.push(Instant::MAX);
    // Compare bit patterns: "unchanged" means exactly the same number.
    let levels = times.iter().map(|&t| d.level(t).to_bits()).collect();
    let crossings = thresholds.iter().map(|&th| d.crossing(th)).collect();
    (d.last_heartbeat(), d.stats(), levels, crossings)
}

/// Feeds a sequence to a detector, checking properties 1 to 4 before the
/// first heartbeat and after every heartbeat.
fn run_sequence(config: &ModelConfig, seq: &Sequence, probes: &Probes) -> TestResult {
    let mut d = build(config);
    let pivotal = pivotal_levels(config);
    let thresholds = thresholds(d.model(), probes);
    let (skip_at, reset_at) = level_rules(config);
    check_state(&d, probes)?;
    for i in 0..seq.len() {
        let t = seq.time(i, &d, &pivotal);
        // Everything observable before a backwards heartbeat; just the last
        // heartbeat and statistics before any other.
        let backwards = d.last_heartbeat().is_some_and(|last| at(t) < last);
        let before = if backwards {
            observe(&d, probes, &thresholds)
        } else {
            (d.last_heartbeat(), d.stats(), Vec::new(), Vec::new())
        };
        let level_at_arrival = d.level(at(t));
        let outcome = d.heartbeat(at(t));
        match before.0 {
            Some(last) if at(t) < last => {
                // Property 4: ignored, counted, nothing else changes.
                prop_assert_eq!(outcome, HeartbeatOutcome::Backwards { by: last - at(t) }, "heartbeat #{} at {}", i, t);
                let after = observe(&d, probes, &thresholds);
                let mut expected = before.clone();
                expected.1.backwards += 1;
                prop_assert_eq!(after, expected, "backwards heartbeat #{} at {} changed the detector", i, t);
            }
            None => {
                prop_assert_eq!(outcome, HeartbeatOutcome::First, "heartbeat #{} at {}", i, t);
                prop_assert_eq!(d.last_heartbeat(), Some(at(t)));
            }
            Some(last) => {
                prop_assert_eq!(d.last_heartbeat(), Some(at(t)));
                prop_assert_eq!(d.stats().backwards, before.1.backwards);
                prop_assert_eq!(d.stats().heartbeats, before.1.heartbeats + 1);
                // The level-based admission rules, decided by the level just
                // before the heartbeat: the reset rule first, then the skip
                // rule (Akka's rule is a skip at its threshold).
                let interval = at(t) - last;
                let restart = reset_at.is_some_and(|r| level_at_arrival >= r);
                let skip = !restart && skip_at.is_some_and(|s| level_at_arrival >= s);
                let why = format!("heartbeat #{i} at {t}, level at arrival {level_at_arrival}: {outcome:?}");
                match outcome {
                    HeartbeatOutcome::Restarted { interval: got } => {
                        prop_assert!(restart, "{}", why);
                        prop_assert_eq!(got, interval);
                    }
                    HeartbeatOutcome::Skipped { interval: got, reason } => {
                        prop_assert!(!restart, "{}", why);
                        prop_assert_eq!(reason == SkipReason::EndedSuspicion, skip, "{}", why);
                        prop_assert_eq!(got, interval);
                    }
                    HeartbeatOutcome::Recorded { interval: got } => {
                        prop_assert!(!restart && !skip, "{}", why);
                        prop_assert_eq!(got, interval);
                    }
                    other => prop_assert!(false, "heartbeat #{} at {} after {:?}: {:?}", i, t, last, other),
                }
                prop_assert_eq!(d.stats().restarts, before.1.restarts + u64::from(restart));
            }
        }
        check_state(&d, probes)
            .map_err(|e| TestCaseError::fail(format!("{config:?}, after heartbeat #{i} at {t}ns: {e}")))?;
    }
    Ok(())
}

/// The admission rules that depend on the level: (skip at, reset at).
fn level_rules(config: &ModelConfig) -> (Option<f64>, Option<f64>) {
    let admission = match config {
        ModelConfig::Akka(c) => return (Some(c.threshold), None),
        ModelConfig::Normal(c) => c.admission,
        ModelConfig::Exponential(c) => c.admission,
        ModelConfig::Empirical(c) => c.admission,
        ModelConfig::Chen(c) => c.admission,
        ModelConfig::Bertier(c) => c.admission,
        ModelConfig::TwoWindow(c) => c.admission,
        ModelConfig::Deadline(_) | ModelConfig::Fixed(_) => return (None, None),
        other => panic!("a model this test does not know yet: {other:?}"),
    };
    (admission.skip_if_level_at_least, admission.reset_if_level_at_least)
}

proptest! {
    #![proptest_config(cases(24))]

    /// Properties 1 to 4 for every configuration in `all_configs`.
    #[test]
    fn levels_are_finite_monotone_and_inverted_exactly_and_backwards_heartbeats_are_ignored(
        seq in sequence(30),
        probes in probes(),
    ) {
        for config in all_configs() {
            run_sequence(&config, &seq, &probes)?;
        }
    }
}

// ---------------------------------------------------------------------------
// Property 5: the window's statistics against a naive recomputation
// ---------------------------------------------------------------------------

/// Samples as the window stores them: whole microseconds, rounded to
/// nearest, saturating at `u32::MAX`.
fn to_sample(d: Duration) -> u32 {
    u32::try_from((d.as_nanos() + 500) / 1_000).unwrap_or(u32::MAX)
}

/// An independent model of the window for admission rules that do not
/// depend on the level: the interval cap, the minimum and the bootstrap.
struct NaiveWindow {
    capacity: usize,
    bootstrap: Bootstrap,
    admission: Admission,
    samples: VecDeque<u32>,
    last: Option<Instant>,
    last_interval: Option<Duration>,
    heartbeats: u64,
    backwards: u64,
    skipped: u64,
}

impl NaiveWindow {
    fn push(&mut self, sample: u32) {
        if self.samples.len() == self.capacity {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
    }

    fn heartbeat(&mut self, now: Instant) -> HeartbeatOutcome {
        let Some(last) = self.last else {
            self.last = Some(now);
            self.heartbeats += 1;
            self.samples.clear();
            match self.bootstrap {
                Bootstrap::None => {}
                Bootstrap::Estimate(e) => {
                    let mean = to_sample(e);
                    self.push(mean - mean / 4);
                    self.push(mean.saturating_add(mean / 4));
                }
                Bootstrap::Seed(s) => self.push(to_sample(s)),
            }
            return HeartbeatOutcome::First;
        };
        if now < last {
            self.backwards += 1;
            return HeartbeatOutcome::Backwards { by: last - now };
        }
        let interval = now - last;
        self.last = Some(now);
        self.last_interval = Some(interval);
        self.heartbeats += 1;
        if self.admission.min_interval.is_some_and(|min| interval < min) {
            self.skipped += 1;
            return HeartbeatOutcome::Skipped { interval, reason: SkipReason::TooShort };
        }
        match self.admission.max_interval {
            Some(MaxInterval::Ignore(cap)) if interval > cap => {
                self.skipped += 1;
                return HeartbeatOutcome::Skipped { interval, reason: SkipReason::TooLong };
            }
            Some(MaxInterval::Clamp(cap)) if interval > cap => self.push(to_sample(cap)),
            _ => self.push(to_sample(interval)),
        }
        HeartbeatOutcome::Recorded { interval }
    }

    /// Mean and population standard deviation in nanoseconds, two-pass.
    fn mean_std_ns(&self) -> Option<(f64, f64)> {
        if self.samples.is_empty() {
            return None;
        }
        let n = self.samples.len() as f64;
        let mean_us = self.samples.iter().map(|&s| f64::from(s)).sum::<f64>() / n;
        let var_us2 = self.samples.iter().map(|&s| (f64::from(s) - mean_us).powi(2)).sum::<f64>() / n;
        Some((mean_us * 1e3, var_us2.sqrt() * 1e3))
    }

    /// The level after `elapsed` ns of silence, restated from the
    /// documentation for the two models whose level is simple enough: the
    /// exponential model (`Δ / (mean ln 10)`, mean floored at 1 µs) and the
    /// empirical one (`-log10 ((c + 1) / (n + 1))` with `c` samples longer
    /// than Δ, then an exponential tail of the mean past the longest).
    fn level(&self, model: Model, elapsed: u64) -> Option<f64> {
        if self.samples.is_empty() {
            return matches!(model, Model::Exponential | Model::Empirical).then_some(0.0);
        }
        let n = self.samples.len();
        let sum: u64 = self.samples.iter().map(|&s| u64::from(s)).sum();
        let mean_ns = (sum as f64 / n as f64 * 1e3).max(1e3);
        let per_mean = |ns: u64| ns as f64 / (mean_ns * std::f64::consts::LN_10);
        match model {
            Model::Exponential => Some(per_mean(elapsed)),
            Model::Empirical => {
                let top = ((n + 1) as f64).log10();
                let longest_ns = u64::from(*self.samples.iter().max()?) * 1_000;
                if elapsed >= longest_ns {
                    return Some(top + per_mean(elapsed - longest_ns));
                }
                let longer = self.samples.iter().filter(|&&s| u64::from(s) * 1_000 > elapsed).count();
                Some(top - ((longer + 1) as f64).log10())
            }
            _ => None,
        }
    }
}

/// A windowed configuration whose admission the naive window predicts.
#[derive(Debug, Clone)]
struct Predictable {
    config: ModelConfig,
    capacity: usize,
    bootstrap: Bootstrap,
    admission: Admission,
}

fn predictable() -> impl Strategy<Value = Predictable> {
    let none = Admission::default();
    let admission = select(vec![
        none,
        Admission { max_interval: Some(MaxInterval::Ignore(Duration::from_secs(2))), ..none },
        Admission { max_interval: Some(MaxInterval::Clamp(Duration::from_millis(1_500))), ..none },
        Admission { max_interval: Some(MaxInterval::Clamp(ns(1_499))), ..none },
        Admission { min_interval: Some(Duration::from_millis(1)), ..none },
        Admission {
            min_interval: Some(ns(2)),
            max_interval: Some(MaxInterval::Ignore(Duration::from_secs(7_200))),
            ..none
        },
    ]);
    let bootstrap = select(vec![
        Bootstrap::None,
        Bootstrap::None,
        Bootstrap::Estimate(Duration::from_secs(1)),
        Bootstrap::Estimate(ns(1_999)),
        Bootstrap::Seed(Duration::from_secs(2)),
        // The longest seed a window holds: the clamp is at its edge.
        Bootstrap::Seed(vigil_detector::MAX_SAMPLE),
    ]);
    (
        select(WINDOWED.to_vec()),
        select(vec![1usize, 2, 3, 10, 1_000]),
        select(vec![1usize, 2, 3, 10]),
        bootstrap,
        admission,
    )
        .prop_map(|(model, window, n1, bootstrap, admission)| {
            let mut config = windowed(model, window, bootstrap, admission);
            let mut capacity = window;
            if let ModelConfig::TwoWindow(c) = &mut config {
                // One buffer serves both windows.
                c.n1 = n1;
                capacity = window.max(n1);
            }
            Predictable { config, capacity, bootstrap, admission }
        })
}

proptest! {
    #![proptest_config(cases(256))]

    /// Property 5.
    #[test]
    fn window_statistics_agree_with_a_naive_recomputation(p in predictable(), seq in sequence(60)) {
        let mut d = build(&p.config);
        let mut naive = NaiveWindow {
            capacity: p.capacity,
            bootstrap: p.bootstrap,
            admission: p.admission,
            samples: VecDeque::new(),
            last: None,
            last_interval: None,
            heartbeats: 0,
            backwards: 0,
            skipped: 0,
        };
        let pivotal = pivotal_levels(&p.config);
        for i in 0..seq.len() {
            let t = seq.time(i, &d, &pivotal);
            let outcome = d.heartbeat(at(t));
            let expected = naive.heartbeat(at(t));
            prop_assert_eq!(outcome, expected, "heartbeat #{} at {}", i, t);
            let stats = d.stats();
            prop_assert_eq!(stats.samples, naive.samples.len(), "samples after heartbeat #{} at {}", i, t);
            prop_assert_eq!(stats.skipped, naive.skipped);
            prop_assert_eq!(stats.heartbeats, naive.heartbeats);
            prop_assert_eq!(stats.backwards, naive.backwards);
            prop_assert_eq!(stats.last_interval, naive.last_interval);
            prop_assert_eq!(stats.last_heartbeat, naive.last);
            match naive.mean_std_ns() {
                None => {
                    prop_assert_eq!(stats.mean, None);
                    prop_assert_eq!(stats.std_dev, None);
                }
                Some((mean, std)) => {
                    let (Some(got_mean), Some(got_std)) = (stats.mean, stats.std_dev) else {
                        return Err(TestCaseError::fail(format!("no mean or std with {} samples", stats.samples)));
                    };
                    // The detector rounds to the nanosecond (0.5 ns) values
                    // computed from exact integer sums with a few float
                    // roundings. The naive two-pass values are off by about
                    // 1e-16 of the mean (the rounded mean shifts every
                    // deviation) plus n·1e-16 of σ. Hence 0.5 ns plus 1e-13
                    // of mean and σ (under 1 ns even for 71-minute samples,
                    // so a value 1 ns off is caught).
                    let got_mean = got_mean.as_nanos() as f64;
                    let got_std = got_std.as_nanos() as f64;
                    prop_assert!((got_mean - mean).abs() <= 0.5 + 1e-13 * mean, "mean {} vs naive {}", got_mean, mean);
                    prop_assert!((got_std - std).abs() <= 0.5 + 1e-13 * (mean + std), "std {} vs naive {} (mean {})", got_std, std, mean);
                }
            }
            // The level's shape, at every sample's boundary (±1 ns) and
            // beyond the longest.
            let last = d.last_heartbeat().unwrap();
            let mut elapsed: Vec<u64> = naive.samples.iter().flat_map(|&s| {
                let s = u64::from(s) * 1_000;
                [s.saturating_sub(1), s, s + 1]
            }).collect();
            elapsed.extend([0, 1, SEC, DAY, EON]);
            for e in elapsed {
                // Near the end of time the query saturates at Instant::MAX.
                let t = last + ns(e);
                let e = t.as_nanos() - last.as_nanos();
                if let Some(expected) = naive.level(p.config.model(), e) {
                    let got = d.level(t);
                    // The same closed forms, with the operations in a
                    // different order: a few roundings apart.
                    prop_assert!(close(got, expected, 1e-12, 1e-15), "level {} vs naive {} after {} ns", got, expected, e);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Property 6: invariance under a shift of every timestamp
// ---------------------------------------------------------------------------

fn shift_configs() -> Vec<ModelConfig> {
    let mut configs: Vec<ModelConfig> = Model::ALL.iter().map(|&m| ModelConfig::default_for(m)).collect();
    configs.extend([
        ModelConfig::Normal(NormalConfig { window: 3, admission: admissions()[6], ..NormalConfig::default() }),
        ModelConfig::Akka(AkkaConfig { window: 2, acceptable_pause: Duration::ZERO, ..AkkaConfig::default() }),
        ModelConfig::Exponential(ExponentialConfig::chitchat()),
        ModelConfig::Deadline(DeadlineConfig { heartbeat_interval: ns(1), acceptable_pause: Duration::ZERO }),
        ModelConfig::Fixed(FixedConfig { timeout: ns(7) }),
    ]);
    configs
}

/// Relative agreement: `|a - b| <= rel * max(|a|, |b|) + abs`.
fn close(a: f64, b: f64, rel: f64, abs: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()) + abs
}

proptest! {
    #![proptest_config(cases(64))]

    /// Property 6.
    #[test]
    fn levels_and_crossings_are_invariant_under_shifting_every_timestamp(
        seq in sequence(25),
        shift in prop_oneof![1u64..=10, 1..=DAY, 1..=4 * EON],
        offsets in proptest::collection::vec(prop_oneof![0u64..=10 * SEC, 0..=EON], 1..8),
        thresholds in proptest::collection::vec(0.01f64..20.0, 1..4),
    ) {
        // Keep every shifted time and query below the end of time: times
        // are capped at 4e18 ns, shifts at 4e18 ns and query offsets at
        // 1e18 ns, 9e18 ns in all (u64::MAX is 1.8e19).
        for config in shift_configs() {
            let mut a = build(&config);
            let mut b = build(&config);
            let pivotal = pivotal_levels(&config);
            for i in 0..seq.len() {
                let t = seq.time(i, &a, &pivotal).min(4 * EON);
                let (outcome_a, outcome_b) = (a.heartbeat(at(t)), b.heartbeat(at(t + shift)));
                // The same decision about the heartbeat (admission rules
                // look at levels and intervals only).
                prop_assert_eq!(outcome_a, outcome_b, "{:?}: heartbeat #{} at {} and shifted", config, i, t);
                let (Some(la), Some(lb)) = (a.last_heartbeat(), b.last_heartbeat()) else { unreachable!() };
                prop_assert_eq!(lb, la + ns(shift));
                for &o in &offsets {
                    let (x, y) = (a.level(la + ns(o)), b.level(lb + ns(o)));
                    // Levels depend on differences of integer instants only;
                    // 1e-9 relative is the tolerance asked for (in fact they
                    // are expected to be identical).
                    prop_assert!(close(x, y, 1e-9, 0.0), "{:?}: level {} vs shifted {} at +{}ns", config, x, y, o);
                }
                for &th in &thresholds {
                    let (x, y) = (a.crossing(th), b.crossing(th));
                    match x.and_then(|x| x.checked_add(ns(shift))) {
                        // The crossing is exact, hence moves with the shift.
                        Some(x) => prop_assert_eq!(Some(x), y, "{:?}: crossing({})", config, th),
                        // Beyond the end of time once shifted (or never).
                        None => prop_assert_eq!(y, None, "{:?}: crossing({}) unshifted {:?}", config, th, x),
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Property 7: scale equivariance
// ---------------------------------------------------------------------------

/// Heartbeats at offsets (in whole microseconds, so that scaling does not
/// change how samples round) from a start: intervals of 0 (duplicates) or
/// 1 µs to 400 s (so that ten times an interval still fits a sample), and
/// backwards steps.
fn us_offsets(allow_duplicates: bool) -> impl Strategy<Value = Vec<u64>> {
    let min = if allow_duplicates { 0u64 } else { 1 };
    let step = prop_oneof![
        6 => (800_000i64..=1_200_000).prop_map(Some),
        2 => (min as i64..=10).prop_map(Some),
        1 => (1i64..=400_000_000).prop_map(Some),
        1 => Just(None),
    ];
    proptest::collection::vec(step, 1..30).prop_map(|steps| {
        let mut latest = 0u64;
        let mut offsets = vec![0];
        for s in steps {
            match s {
                Some(gap) => {
                    latest += gap as u64;
                    offsets.push(latest);
                }
                // Backwards: half-way back to the origin (if there is room
                // to go back at all).
                None if latest > 0 => offsets.push(latest / 2),
                None => {}
            }
        }
        offsets
    })
}

proptest! {
    #![proptest_config(cases(256))]

    /// Property 7, normal model: σ floor and pause scaled too.
    #[test]
    fn normal_levels_are_unchanged_when_every_interval_is_scaled(
        offsets_us in us_offsets(true),
        start in 0u64..=1_000 * SEC,
        k in select(vec![2u64, 10]),
        window in select(vec![1usize, 2, 3, 10, 1_000]),
        min_std_ns in 10 * MS..=SEC,
        pause_ns in prop_oneof![Just(0u64), 0..=5 * SEC],
        queries_us in proptest::collection::vec(prop_oneof![0u64..=10_000_000, 0u64..=100_000_000_000], 1..10),
    ) {
        let config = |k: u64| {
            ModelConfig::Normal(NormalConfig {
                window,
                min_std_dev: ns(min_std_ns * k),
                acceptable_pause: ns(pause_ns * k),
                ..NormalConfig::default()
            })
        };
        let (mut a, mut b) = (build(&config(1)), build(&config(k)));
        for &o in &offsets_us {
            a.heartbeat(at(start + o * US));
            b.heartbeat(at(start + k * o * US));
            let (la, lb) = (a.last_heartbeat().unwrap(), b.last_heartbeat().unwrap());
            for &q in &queries_us {
                let (x, y) = (a.level(la + ns(q * US)), b.level(lb + ns(k * q * US)));
                // μ and σ are each a few ulps off the exact multiple (one
                // float division and square root each); the level's relative
                // sensitivity to that is at most |y| (μ/σ + |y|) ulps, with
                // μ/σ <= 400 s / 10 ms = 4e4. Where the level is above
                // 1e-12 that stays below 1e-9 relative; below, 1e-12
                // absolute covers it.
                prop_assert!(close(x, y, 1e-9, 1e-12), "level {} vs {} scaled by {} at +{}us", x, y, k, q);
            }
        }
    }

    /// Property 7, exponential model (with and without a prior, whose mean is
    /// scaled too).
    #[test]
    fn exponential_levels_are_unchanged_when_every_interval_is_scaled(
        offsets_us in us_offsets(false),
        start in 0u64..=1_000 * SEC,
        k in select(vec![2u64, 10]),
        window in select(vec![1usize, 2, 3, 10, 1_000]),
        prior in proptest::option::of((1u64..=10 * SEC, 0.1f64..10.0)),
        queries_us in proptest::collection::vec(prop_oneof![0u64..=10_000_000, 0u64..=100_000_000_000], 1..10),
    ) {
        let config = |k: u64| {
            ModelConfig::Exponential(ExponentialConfig {
                window,
                prior: prior.map(|(mean, weight)| Prior { mean: ns(mean * k), weight }),
                ..ExponentialConfig::plain()
            })
        };
        let (mut a, mut b) = (build(&config(1)), build(&config(k)));
        for &o in &offsets_us {
            a.heartbeat(at(start + o * US));
            b.heartbeat(at(start + k * o * US));
            let (la, lb) = (a.last_heartbeat().unwrap(), b.last_heartbeat().unwrap());
            for &q in &queries_us {
                let (x, y) = (a.level(la + ns(q * US)), b.level(lb + ns(k * q * US)));
                // level = elapsed / (mean ln 10): a handful of roundings,
                // each 1.1e-16 relative. Intervals are at least 1 µs, so the
                // 1 µs floor on the mean never applies.
                prop_assert!(close(x, y, 1e-12, 0.0), "level {} vs {} scaled by {} at +{}us", x, y, k, q);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Property 8: the exact normal tail far out
// ---------------------------------------------------------------------------

/// A normal detector after regular 1 s heartbeats: μ = 1 s, σ = the 100 ms
/// floor. Returns it and its last heartbeat.
fn regular_normal() -> (AnyDetector, Instant) {
    let mut d = build(&ModelConfig::default_for(Model::Normal));
    for i in 0..=20 {
        d.heartbeat(Instant::from_secs(i));
    }
    (d, Instant::from_secs(20))
}

/// The instant μ + kσ after the last heartbeat, in whole nanoseconds.
fn mu_plus_k_sigma(last: Instant, k: f64) -> Instant {
    last + ns((1e9 + k * 1e8).round() as u64)
}

#[test]
fn the_exact_normal_level_is_finite_and_strictly_increasing_up_to_a_million_standard_deviations() {
    let (d, last) = regular_normal();
    // A dense, increasing set of k from 5σ before the mean to 10^6 σ after:
    // steps of 0.001 σ up to 100 σ, then geometric steps of 0.01 %.
    let mut ks: Vec<f64> = (-5_000..=100_000).map(|i| f64::from(i) * 1e-3).collect();
    let mut k = 100.0f64;
    while k < 1e6 {
        k *= 1.0001;
        ks.push(k.min(1e6));
    }
    let mut previous: Option<(f64, f64)> = None;
    for &k in &ks {
        let level = d.level(mu_plus_k_sigma(last, k));
        assert!(level.is_finite() && level >= 0.0, "level {level} at {k} σ");
        if let Some((pk, pl)) = previous {
            assert!(level > pl, "not strictly increasing: {pl} at {pk} σ, {level} at {k} σ");
        }
        previous = Some((k, level));
    }
    // At exactly 10^6 σ, -log10 Q(10^6) = 217147240958.025 (40-digit
    // arithmetic, mpmath). 1e-12 relative: a few roundings of a value that
    // is essentially y² / (2 ln 10).
    let far = previous.unwrap().1;
    assert!((far / 217_147_240_958.025 - 1.0).abs() < 1e-12, "level {far} at 10^6 σ");
}

#[test]
fn the_exact_normal_level_increases_at_every_nanosecond_near_where_its_computation_changes_method() {
    let (d, last) = regular_normal();
    // y = 0 (the two formulas for Q), y = 26 √2 (erfc's asymptotic series),
    // and a few far points; 1 ns is 1e-8 σ here.
    for k in [0.0, 26.0 * std::f64::consts::SQRT_2, 10.0, 1e3, 1e5, 1e6 - 1.0] {
        let centre = mu_plus_k_sigma(last, k);
        let mut previous = d.level(centre - ns(2_001));
        for i in -2_000i64..=2_000 {
            let t = if i < 0 { centre - ns(i.unsigned_abs()) } else { centre + ns(i as u64) };
            let level = d.level(t);
            assert!(level > previous, "not strictly increasing at {k} σ {i:+} ns: {previous} then {level}");
            previous = level;
        }
    }
}

proptest! {
    #![proptest_config(cases(256))]

    /// Property 8 at random pairs of points (finer than the dense grid).
    #[test]
    fn the_exact_normal_level_orders_any_two_points_up_to_a_million_standard_deviations(
        k in -5.0f64..1e6,
        dk in prop_oneof![1e-8f64..1e-6, 1e-6..1.0, 1.0..1e3],
    ) {
        let (d, last) = regular_normal();
        let (a, b) = (mu_plus_k_sigma(last, k), mu_plus_k_sigma(last, k + dk));
        prop_assume!(a < b, "the two points round to the same nanosecond");
        let (x, y) = (d.level(a), d.level(b));
        prop_assert!(x.is_finite() && y.is_finite());
        prop_assert!(x < y, "level {} at {:?} is not below {} at {:?}", x, a, y, b);
    }
}

// ---------------------------------------------------------------------------
// Property 9: no drift on a perfectly regular link
// ---------------------------------------------------------------------------

/// Akka's φ (its logistic approximation of the normal CDF) at `y` standard
/// deviations past the mean, as Akka writes it; finite for the small `y`
/// used here.
fn akka_phi(y: f64) -> f64 {
    let e = (-y * (1.5976 + 0.070566 * y * y)).exp();
    if y > 0.0 { -(e / (1.0 + e)).log10() } else { -(1.0 - 1.0 / (1.0 + e)).log10() }
}

#[test]
fn five_thousand_regular_heartbeats_never_drift_toward_suspicion() {
    let half = -(0.5f64.log10()); // 0.30103: the level at exactly μ.
    for window in [100u64, 1_000] {
        let config = AkkaConfig { window: window as usize, acceptable_pause: Duration::ZERO, ..AkkaConfig::default() };
        let mut d = build(&ModelConfig::Akka(config));
        for count in 1..=5_000u64 {
            let last = Instant::from_millis((count - 1) * 1_000);
            d.heartbeat(last);
            let level = d.level(last + Duration::from_millis(1_000));
            // Never toward suspicion. 1e-9: the level is computed from exact
            // integer sums; only libm's rounding is allowed for.
            assert!(level <= half + 1e-9, "window {window}: level {level} > log10 2 after {count} heartbeats");
            if count == window {
                // The one count at which the window is not all 1,000 ms: the
                // bootstrap's 750 ms sample has just been evicted and its
                // 1,250 ms sample not yet (Akka evicts them one at a time
                // too). The mean is 1,000 + 250 / window ms, σ is floored
                // at 100 ms, and the level dips *below* log10 2 for this one
                // heartbeat, by exactly what the formula says (1e-12: two
                // evaluations of the same closed form, in a different order).
                let mean_ms = 1_000.0 + 250.0 / window as f64;
                assert_eq!(d.stats().mean, Some(Duration::from_nanos((mean_ms * 1e6).round() as u64)));
                let expected = akka_phi((1_000.0 - mean_ms) / 100.0);
                assert!((level - expected).abs() < 1e-12, "window {window}: level {level}, expected {expected}");
                assert!(level < half - 1e-4, "window {window}: level {level} at the bootstrap transient");
            } else {
                // The window's mean is exactly 1 s (750 and 1,250 ms average
                // to 1 s, and sums are exact integers): the level is log10 2.
                assert!(
                    (level - half).abs() < 1e-9,
                    "window {window}: level {level} instead of log10 2 after {count} heartbeats"
                );
            }
        }
    }
}
