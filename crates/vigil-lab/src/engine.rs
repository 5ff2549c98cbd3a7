//! The metric engine: a trace and a detector in, an exact trust/suspect
//! timeline out.
//!
//! The engine feeds a trace's heartbeats to a detector in arrival order and,
//! between two arrivals, asks the detector's inverse
//! ([`Detector::crossing`]) when its level reaches the threshold. Levels are
//! non-decreasing between heartbeats, so a suspicion starts inside the gap
//! exactly when the level one nanosecond before the next arrival is at the
//! threshold, and it starts at the crossing instant, exact on the nanosecond
//! grid. Nothing is sampled on a polling grid.
//!
//! One run of a detector serves every threshold that does not change the
//! detector itself (all models but Akka, whose threshold also decides which
//! intervals are recorded): the level is computed once per gap and compared
//! with each threshold.
//!
//! ```
//! use vigil_lab::engine::judge;
//! use vigil_lab::trace::Trace;
//! use vigil_detector::{FixedConfig, ModelConfig};
//! use std::time::Duration;
//!
//! // Heartbeats every 100 ms, one 300 ms gap, then a crash at 1000 ms.
//! let trace = Trace::parse("0,hb\n100,hb\n200,hb\n500,hb\n600,hb\n700,hb,700\n1000,crash\n")?;
//! let fixed = ModelConfig::Fixed(FixedConfig { timeout: Duration::from_millis(250) });
//! let timelines = judge(&trace, &fixed, &[1.0], 1).unwrap();
//! let t = &timelines[0];
//! // The 300 ms gap is one mistake, from 450 ms to the arrival at 500 ms.
//! assert_eq!(t.suspicions[0].start.as_nanos(), 450_000_000);
//! assert_eq!(t.suspicions[0].end.unwrap().as_nanos(), 500_000_000);
//! // The crash is detected at 950 ms, 250 ms after the last heartbeat.
//! assert_eq!(t.suspicions[1].start.as_nanos(), 950_000_000);
//! assert_eq!(t.suspicions[1].end, None);
//! # Ok::<(), vigil_lab::trace::TraceError>(())
//! ```

use std::time::Duration;

use rayon::prelude::*;
use vigil_detector::{AnyDetector, ConfigError, Detector, Instant, ModelConfig};

use crate::qos::{Qos, Summary, Suspicion, Timeline};
use crate::spec::DetectorSpec;
use crate::trace::Trace;

const ONE_NS: Duration = Duration::from_nanos(1);

#[derive(Clone, Default)]
struct State {
    open: Option<(Instant, Option<u64>)>,
    suspicions: Vec<Suspicion>,
    sampled: u64,
}

/// Judges one trace with one detector configuration, at each threshold.
///
/// Judging starts at the arrival of heartbeat number `warmup` (1-based; a
/// `warmup` of 0 counts as 1): before it, heartbeats train the detector and
/// nothing is judged. Returns one timeline per threshold, in order.
pub fn judge(
    trace: &Trace,
    config: &ModelConfig,
    thresholds: &[f64],
    warmup: usize,
) -> Result<Vec<Timeline>, ConfigError> {
    let mut d = AnyDetector::new(config)?;
    let warmup = warmup.max(1);
    let beats = &trace.beats;
    let id = |k: usize| beats.get(k).map(|b| b.seq.unwrap_or(k as u64));
    let end = trace.observed_until();
    let start = beats.get(warmup - 1).map_or(end, |b| b.arrival);
    let mut states = vec![State::default(); thresholds.len()];
    // Without a crash, the time to suspect after each judged heartbeat
    // stands in for the detection time: measured in this same pass.
    let measure_tts = trace.crash.is_none();
    let mut tts: Vec<Vec<f64>> = vec![Vec::new(); if measure_tts { thresholds.len() } else { 0 }];
    for (k, beat) in beats.iter().enumerate() {
        let t = beat.arrival;
        if k >= warmup {
            // Seed 001's count: is the detector suspecting as this heartbeat lands?
            let at = d.level(t);
            for (st, &th) in states.iter_mut().zip(thresholds) {
                st.sampled += u64::from(at >= th);
            }
        }
        d.heartbeat(t);
        if k + 1 < warmup {
            continue;
        }
        for (v, &th) in tts.iter_mut().zip(thresholds) {
            if let Some(at) = d.crossing(th) {
                v.push((at.as_nanos() - t.as_nanos()) as f64 / 1e6);
            }
        }
        let next = beats.get(k + 1).map(|b| b.arrival).filter(|&x| x > t);
        let now = d.level(t);
        let before_next = next.map(|x| d.level(x - ONE_NS));
        for (st, &th) in states.iter_mut().zip(thresholds) {
            if now >= th {
                // Still (or already) suspecting as the heartbeat is processed.
                if st.open.is_none() {
                    st.open = Some((t, id(k + 1)));
                }
                continue;
            }
            if let Some((s, b)) = st.open.take() {
                st.suspicions.push(Suspicion { start: s, end: Some(t), beat: b });
            }
            match (next, before_next) {
                (Some(x), Some(level)) if level >= th => {
                    let at = d.crossing(th).unwrap_or(x - ONE_NS).min(x - ONE_NS);
                    st.open = Some((at, id(k + 1)));
                }
                (Some(_), _) => {}
                (None, _) if beats.get(k + 1).is_some() => {}
                (None, _) => {
                    if let Some(at) = d.crossing(th)
                        && (trace.crash.is_some() || at < end)
                    {
                        st.open = Some((at, None));
                    }
                }
            }
        }
    }
    let due = trace.first_missing_due();
    tts.resize_with(thresholds.len(), Vec::new);
    Ok(states
        .into_iter()
        .zip(tts)
        .map(|(mut st, mut tts)| {
            if let Some((s, b)) = st.open.take() {
                st.suspicions.push(Suspicion { start: s, end: None, beat: b });
            }
            Timeline {
                start,
                end,
                crash: trace.crash,
                due,
                suspicions: st.suspicions,
                sampled_mistakes: st.sampled,
                time_to_suspect_ms: (!tts.is_empty()).then(|| Summary::of(&mut tts)),
            }
        })
        .collect())
}

/// How long after each heartbeat the detector would suspect if the sender
/// crashed right after sending it: `crossing(threshold) − arrival`, one value
/// per judged heartbeat, summarised per threshold (ms). This is the
/// "equivalent timeout" of the φ paper, and stands in for detection time on
/// traces without a crash.
pub fn time_to_suspect(
    trace: &Trace,
    config: &ModelConfig,
    thresholds: &[f64],
    warmup: usize,
) -> Result<Vec<Summary>, ConfigError> {
    let mut d = AnyDetector::new(config)?;
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); thresholds.len()];
    for (k, beat) in trace.beats.iter().enumerate() {
        d.heartbeat(beat.arrival);
        if k + 1 < warmup.max(1) {
            continue;
        }
        for (v, &th) in values.iter_mut().zip(thresholds) {
            if let Some(at) = d.crossing(th) {
                v.push((at.as_nanos() - beat.arrival.as_nanos()) as f64 / 1e6);
            }
        }
    }
    Ok(values.iter_mut().map(|v| Summary::of(v)).collect())
}

/// Specs that can share one detector run: same model configuration, thresholds
/// differ.
fn groups(specs: &[DetectorSpec]) -> Vec<Vec<usize>> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        // Equal configurations build equal detectors (Akka's carries its
        // threshold, so its thresholds never share a run).
        let key = format!("{:?}", s.config());
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(i),
            None => out.push((key, vec![i])),
        }
    }
    out.into_iter().map(|(_, v)| v).collect()
}

/// Judges every trace with every spec, in parallel over traces, and returns
/// each spec's timelines (indexed `[spec][trace]`).
///
/// The result does not depend on the number of threads: each trace is judged
/// on its own and the results are collected in trace order. `progress` is
/// called once per finished trace (from worker threads).
pub fn judge_all(
    traces: &[Trace],
    specs: &[DetectorSpec],
    warmup: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<Vec<Timeline>>, ConfigError> {
    let groups = groups(specs);
    let per_trace: Vec<Vec<Timeline>> = traces
        .par_iter()
        .map(|trace| {
            let mut row: Vec<Option<Timeline>> = vec![None; specs.len()];
            for g in &groups {
                let thresholds: Vec<f64> = g.iter().map(|&i| specs[i].threshold()).collect();
                let timelines = judge(trace, specs[g[0]].config(), &thresholds, warmup)?;
                for (&i, t) in g.iter().zip(timelines) {
                    row[i] = Some(t);
                }
            }
            progress();
            Ok(row.into_iter().map(|t| t.expect("every spec is in a group")).collect())
        })
        .collect::<Result<_, ConfigError>>()?;
    let mut by_spec: Vec<Vec<Timeline>> = (0..specs.len()).map(|_| Vec::with_capacity(traces.len())).collect();
    for row in per_trace {
        for (i, t) in row.into_iter().enumerate() {
            by_spec[i].push(t);
        }
    }
    Ok(by_spec)
}

/// [`judge_all`], aggregated: one [`Qos`] per spec.
pub fn evaluate(
    traces: &[Trace],
    specs: &[DetectorSpec],
    warmup: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<Qos>, ConfigError> {
    Ok(judge_all(traces, specs, warmup, progress)?.iter().map(Qos::from_timelines).collect())
}

/// A detector's level over part of a trace: at every arrival of heartbeats
/// `from..=to` (0-based) and at `steps` evenly spaced instants in each gap
/// between them, as `(time in ms, level)`; with `until`, also across the
/// silence from heartbeat `to` until then (after a crash, say). The detector
/// sees every heartbeat up to `to`, so the level is the one it would report
/// live.
///
/// ```
/// use vigil_lab::engine::level_series;
/// use vigil_lab::trace::Trace;
/// use vigil_detector::{FixedConfig, ModelConfig};
/// use std::time::Duration;
///
/// let trace = Trace::parse("0,hb\n100,hb\n300,hb\n")?;
/// let fixed = ModelConfig::Fixed(FixedConfig { timeout: Duration::from_millis(100) });
/// let levels = level_series(&trace, &fixed, 1, 2, 2, None).unwrap();
/// // At 100 ms (arrival), then 100, 200 and 300 ms across the gap, then the arrival at 300 ms.
/// let times: Vec<f64> = levels.iter().map(|p| p.0).collect();
/// assert_eq!(times, [100.0, 100.0, 200.0, 300.0, 300.0]);
/// assert_eq!(levels[3].1, 2.0); // 200 ms after the heartbeat at 100 ms, timeout 100 ms
/// # Ok::<(), vigil_lab::trace::TraceError>(())
/// ```
///
/// # Errors
///
/// The configuration's [`ConfigError`], if it is invalid.
pub fn level_series(
    trace: &Trace,
    config: &ModelConfig,
    from: usize,
    to: usize,
    steps: u64,
    until: Option<Instant>,
) -> Result<Vec<(f64, f64)>, ConfigError> {
    let mut d = AnyDetector::new(config)?;
    let mut pts = Vec::new();
    let steps = steps.max(1);
    for (k, b) in trace.beats.iter().enumerate().take(to.saturating_add(1)) {
        if k > from {
            let prev = trace.beats[k - 1].arrival.as_nanos();
            let now = b.arrival.as_nanos();
            for i in 0..=steps {
                let t = prev + ((u128::from(now - prev) * u128::from(i)) / u128::from(steps)) as u64;
                pts.push((t as f64 / 1e6, d.level(Instant::from_nanos(t))));
            }
        }
        d.heartbeat(b.arrival);
        if k >= from {
            pts.push((b.arrival.as_nanos() as f64 / 1e6, d.level(b.arrival)));
        }
    }
    let last = trace.beats.get(to.min(trace.beats.len().saturating_sub(1))).map(|b| b.arrival.as_nanos());
    if let (Some(last), Some(until)) = (last, until.map(Instant::as_nanos))
        && until > last
    {
        for i in 1..=steps {
            let t = last + ((u128::from(until - last) * u128::from(i)) / u128::from(steps)) as u64;
            pts.push((t as f64 / 1e6, d.level(Instant::from_nanos(t))));
        }
    }
    Ok(pts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Beat;
    use vigil_detector::{ChenConfig, FixedConfig, NormalConfig};

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    fn regular(n: u64, period: u64, late: &[(u64, u64)]) -> Trace {
        let beats = (0..n)
            .map(|i| {
                let extra = late.iter().find(|(k, _)| *k == i).map_or(0, |(_, e)| *e);
                Beat { arrival: ms(i * period + extra), sent: Some(ms(i * period)), seq: Some(i) }
            })
            .collect();
        Trace { beats, crash: Some(ms((n - 1) * period)), end: None }
    }

    #[test]
    fn fixed_timeout_is_exact() {
        // Beat 5 arrives 180 ms late: the 280 ms gap exceeds 250 ms for 30 ms.
        let trace = regular(10, 100, &[(5, 180)]);
        let fixed = ModelConfig::Fixed(FixedConfig { timeout: Duration::from_millis(250) });
        let t = &judge(&trace, &fixed, &[1.0], 1).unwrap()[0];
        assert_eq!(t.suspicions.len(), 2);
        assert_eq!(t.suspicions[0], Suspicion { start: ms(650), end: Some(ms(680)), beat: Some(5) });
        assert_eq!(t.suspicions[1], Suspicion { start: ms(1150), end: None, beat: None });
        assert_eq!(t.sampled_mistakes, 1);
        let q = Qos::from_timelines([t]);
        assert_eq!(q.mistakes, 1);
        assert_eq!(q.mistake_duration_ms.mean, 30.0);
        assert_eq!(q.detection_ms.mean, 250.0);
        // Due at 1000 ms (the next send), detected at 1150.
        assert_eq!(q.detection_from_due_ms.mean, 150.0);
    }

    #[test]
    fn sampled_and_exact_counts_differ_when_a_heartbeat_does_not_restore_trust() {
        // Chen with a known interval: a heartbeat that arrives more than
        // α + η late leaves the detector suspecting (its next freshness point
        // has passed), so one episode spans two arrivals; seed 001's sampled
        // count sees it twice.
        let config = ModelConfig::Chen(ChenConfig {
            window: 4,
            alpha: Duration::from_millis(20),
            interval: Some(Duration::from_millis(100)),
            ..ChenConfig::default()
        });
        let mut trace = regular(12, 100, &[]);
        // Beats 8 and 9 are held up and arrive together at 1030 ms.
        trace.beats[8].arrival = ms(1030);
        trace.beats[9].arrival = ms(1030);
        let t = &judge(&trace, &config, &[1.0], 4).unwrap()[0];
        let q = Qos::from_timelines([t]);
        assert_eq!(q.mistakes, 1, "{:?}", t.suspicions);
        assert!(t.sampled_mistakes >= 2, "{t:?}");
    }

    #[test]
    fn thresholds_share_a_run_and_agree_with_separate_runs() {
        let trace = regular(60, 100, &[(20, 40), (30, 90), (45, 25)]);
        let config = ModelConfig::Normal(NormalConfig {
            window: 100,
            min_std_dev: Duration::from_millis(1),
            ..NormalConfig::default()
        });
        let ths = [1.0, 3.0, 8.0, 16.0];
        let together = judge(&trace, &config, &ths, 1).unwrap();
        for (i, &th) in ths.iter().enumerate() {
            assert_eq!(judge(&trace, &config, &[th], 1).unwrap()[0], together[i]);
        }
        // Higher thresholds never make more mistakes here, and detect later.
        let qs: Vec<Qos> = together.iter().map(|t| Qos::from_timelines([t])).collect();
        for w in qs.windows(2) {
            assert!(w[1].mistakes <= w[0].mistakes);
            assert!(w[1].detection_ms.mean > w[0].detection_ms.mean);
        }
        assert!(qs[0].mistakes >= 1);
    }

    #[test]
    fn the_time_to_suspect_comes_with_the_timeline_of_a_trace_without_a_crash() {
        let mut trace = regular(60, 100, &[(20, 40), (30, 90)]);
        trace.crash = None;
        let config = ModelConfig::Normal(NormalConfig {
            window: 100,
            min_std_dev: Duration::from_millis(1),
            ..NormalConfig::default()
        });
        let ths = [1.0, 8.0];
        let timelines = judge(&trace, &config, &ths, 3).unwrap();
        let alone = time_to_suspect(&trace, &config, &ths, 3).unwrap();
        for (t, s) in timelines.iter().zip(&alone) {
            // The same pass measures exactly what a separate run measures.
            assert_eq!(t.time_to_suspect_ms.as_ref(), Some(s));
            assert_eq!(s.count, 58, "beats 3..=60 are judged");
        }
        // With a crash, detection is measured instead.
        let crashed = regular(60, 100, &[]);
        assert!(judge(&crashed, &config, &ths, 3).unwrap().iter().all(|t| t.time_to_suspect_ms.is_none()));
        // A fixed timeout suspects exactly its timeout after each heartbeat.
        let fixed = ModelConfig::Fixed(FixedConfig { timeout: Duration::from_millis(250) });
        let s = judge(&trace, &fixed, &[1.0], 1).unwrap()[0].time_to_suspect_ms.unwrap();
        assert_eq!((s.count, s.mean, s.max), (60, 250.0, 250.0));
    }

    #[test]
    fn exact_mistakes_match_a_fine_polling_grid() {
        // Brute force: poll the level every 0.1 ms and find the suspect
        // intervals; the exact engine must agree to within one grid step.
        let trace = regular(80, 100, &[(20, 60), (21, 60), (40, 170), (55, 30)]);
        let config = ModelConfig::Normal(NormalConfig {
            window: 100,
            min_std_dev: Duration::from_millis(1),
            ..NormalConfig::default()
        });
        let th = 4.0;
        let t = &judge(&trace, &config, &[th], 1).unwrap()[0];
        let mut d = AnyDetector::new(&config).unwrap();
        let mut found: Vec<(u64, u64)> = Vec::new();
        let step = 100_000u64;
        for w in trace.beats.windows(2) {
            d.heartbeat(w[0].arrival);
            let (a, b) = (w[0].arrival.as_nanos(), w[1].arrival.as_nanos());
            let mut x = a;
            while x < b {
                if d.level(Instant::from_nanos(x)) >= th {
                    found.push((x, b));
                    break;
                }
                x += step;
            }
        }
        let exact: Vec<(u64, u64)> =
            t.suspicions.iter().filter_map(|s| Some((s.start.as_nanos(), s.end?.as_nanos()))).collect();
        assert_eq!(exact.len(), found.len(), "{exact:?} vs {found:?}");
        assert!(!exact.is_empty());
        for (e, f) in exact.iter().zip(&found) {
            assert_eq!(e.1, f.1);
            assert!(f.0 >= e.0 && f.0 - e.0 < step, "{e:?} vs {f:?}");
        }
    }
}
