//! Chen, Toueg and Aguilera's quality-of-service metrics, computed exactly
//! from a detector's trust/suspect timeline.
//!
//! A [`Timeline`] is what one detector, at one threshold, said about one
//! trace: the intervals during which it suspected the sender. Everything else
//! follows from it, with no sampling grid:
//!
//! | metric | definition |
//! |---|---|
//! | mistake | a suspicion that starts while the sender is alive (an S-transition) |
//! | T_M, mistake duration | from a mistake's start to the next trust (capped at the crash) |
//! | T_MR, mistake recurrence | from one mistake's start to the next one's, in the same trace |
//! | T_G, good period | from the end of a mistake to the start of the next one |
//! | λ_M, mistake rate | mistakes per hour of observed alive time, over all traces |
//! | P_A, query accuracy | the fraction of alive time during which the detector trusted |
//! | T_D, detection time | from the crash to the start of the suspicion that never ends |
//!
//! For an ergodic detector Chen et al.'s identities hold: λ_M = 1/E(T_MR)
//! and P_A = 1 − E(T_M)/E(T_MR). The mean recurrence reported here is the
//! renewal estimate (alive time per mistake), so that the identities can be
//! checked against the per-trace samples in [`Qos::recurrence_ms`].

use serde::Serialize;
use vigil_detector::Instant;

use crate::trace::Trace;

/// One interval of suspicion, `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suspicion {
    /// When the detector began to suspect.
    pub start: Instant,
    /// When it trusted again; `None` if it never did within the trace.
    pub end: Option<Instant>,
    /// The heartbeat (its sequence number, or its position in the trace) that
    /// was late when the suspicion started: the one whose arrival ended the
    /// gap. `None` when no heartbeat ended it.
    pub beat: Option<u64>,
}

/// What one detector, at one threshold, said about one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// When judging starts (the detector is armed).
    pub start: Instant,
    /// The end of observation: after it nothing is judged. For a trace with a
    /// crash, the crash ends the alive period and `end` only bounds how long
    /// we waited for a detection.
    pub end: Instant,
    /// When the sender crashed, if it did.
    pub crash: Option<Instant>,
    /// When the first missing heartbeat was due (the crash trace's next send
    /// time), if known.
    pub due: Option<Instant>,
    /// Suspicions in time order, disjoint.
    pub suspicions: Vec<Suspicion>,
    /// False alarms counted as seed 001 counts them: heartbeats (sent while the
    /// sender was alive) at whose arrival the detector was suspecting.
    pub sampled_mistakes: u64,
    /// On a trace without a crash, how long after each judged heartbeat the
    /// detector would suspect if the sender had crashed right after sending
    /// it (ms): the φ paper's equivalent timeout, what stands in for the
    /// detection time. Measured in the same pass as the suspicions; `None`
    /// on a trace with a crash (where detection is measured) and when no
    /// heartbeat was judged.
    pub time_to_suspect_ms: Option<Summary>,
}

impl Timeline {
    /// The end of the alive period: the crash, or the end of observation.
    pub fn alive_until(&self) -> Instant {
        self.crash.unwrap_or(self.end)
    }

    /// The suspicions that started while the sender was alive, with their
    /// durations (capped at the end of the alive period) in nanoseconds.
    pub fn mistakes(&self) -> impl Iterator<Item = (Suspicion, u64)> + '_ {
        let until = self.alive_until();
        self.suspicions.iter().filter(move |s| s.start >= self.start && s.start < until).map(move |s| {
            let end = s.end.map_or(until, |e| e.min(until));
            (*s, end.as_nanos() - s.start.as_nanos())
        })
    }

    /// Detection time from the crash, in nanoseconds: `Some` when the sender
    /// crashed and the last suspicion never ended. A suspicion that began
    /// before the crash and lasted detects it at once (0).
    pub fn detection(&self) -> Option<u64> {
        let crash = self.crash?;
        let last = self.suspicions.last()?;
        if last.end.is_some() {
            return None;
        }
        Some(last.start.as_nanos().saturating_sub(crash.as_nanos()))
    }

    /// Detection time measured from when the first missing heartbeat was due,
    /// in nanoseconds; negative when the detector convicted before then.
    pub fn detection_from_due(&self) -> Option<i128> {
        let due = self.due?;
        let crash = self.crash?;
        let at = crash.as_nanos() + self.detection()?;
        Some(i128::from(at) - i128::from(due.as_nanos()))
    }
}

/// Mean, median, 99th percentile and maximum of a sample, in milliseconds.
/// Percentiles are nearest-rank. An empty sample has `count` 0 and NaN
/// values (`null` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub count: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summarises `values` (sorted in place).
    pub fn of(values: &mut [f64]) -> Summary {
        if values.is_empty() {
            return Summary { count: 0, mean: f64::NAN, p50: f64::NAN, p99: f64::NAN, max: f64::NAN };
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let rank = |p: f64| values[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Summary {
            count: n,
            mean: values.iter().sum::<f64>() / n as f64,
            p50: rank(0.5),
            p99: rank(0.99),
            max: values[n - 1],
        }
    }
}

/// The quality of service of one detector setting over a set of traces.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Qos {
    /// Traces judged.
    pub traces: usize,
    /// Observed alive time over all traces, in hours.
    pub alive_hours: f64,
    /// Mistakes: suspicions that started while the sender was alive.
    pub mistakes: u64,
    /// False alarms counted at heartbeat arrivals, as seed 001 does.
    pub sampled_mistakes: u64,
    /// Traces with at least one mistake.
    pub traces_with_mistake: usize,
    /// λ_M: mistakes per hour of alive time.
    pub mistake_rate_per_hour: f64,
    /// T_M: mistake durations.
    pub mistake_duration_ms: Summary,
    /// T_MR, estimated by renewal: alive time per mistake, in ms (∞ without
    /// mistakes; `null` in JSON).
    pub mean_recurrence_ms: f64,
    /// T_MR samples: times between consecutive mistakes within a trace.
    pub recurrence_ms: Summary,
    /// T_G samples: from the end of a mistake to the start of the next.
    pub good_period_ms: Summary,
    /// P_A: the fraction of alive time during which the detector trusted.
    pub query_accuracy: f64,
    /// Traces in which the sender crashed.
    pub crashed: usize,
    /// Crashed traces in which the crash was never detected.
    pub undetected: usize,
    /// T_D from the crash.
    pub detection_ms: Summary,
    /// T_D from when the first missing heartbeat was due.
    pub detection_from_due_ms: Summary,
    /// Mistakes by the heartbeat that was late: `(beat, mistakes)`, ascending.
    pub mistake_beats: Vec<(u64, u64)>,
}

const NS_PER_MS: f64 = 1e6;

impl Qos {
    /// Aggregates timelines (of one setting, one per trace).
    pub fn from_timelines<'a>(timelines: impl IntoIterator<Item = &'a Timeline>) -> Qos {
        let mut traces = 0;
        let mut alive_ns: u128 = 0;
        let mut suspected_ns: u128 = 0;
        let mut mistakes = 0u64;
        let mut sampled = 0u64;
        let mut with_mistake = 0;
        let (mut durations, mut recurrences, mut goods) = (Vec::new(), Vec::new(), Vec::new());
        let (mut crashed, mut undetected) = (0, 0);
        let (mut detections, mut from_due) = (Vec::new(), Vec::new());
        let mut beats: Vec<u64> = Vec::new();
        for t in timelines {
            traces += 1;
            alive_ns += u128::from(t.alive_until().as_nanos().saturating_sub(t.start.as_nanos()));
            sampled += t.sampled_mistakes;
            let mut previous: Option<(Instant, Instant)> = None;
            let mut any = false;
            for (s, dur) in t.mistakes() {
                any = true;
                mistakes += 1;
                suspected_ns += u128::from(dur);
                durations.push(dur as f64 / NS_PER_MS);
                if let Some((prev_start, prev_end)) = previous {
                    recurrences.push((s.start.as_nanos() - prev_start.as_nanos()) as f64 / NS_PER_MS);
                    goods.push((s.start.as_nanos() - prev_end.as_nanos()) as f64 / NS_PER_MS);
                }
                previous = Some((s.start, Instant::from_nanos(s.start.as_nanos() + dur)));
                if let Some(b) = s.beat {
                    beats.push(b);
                }
            }
            with_mistake += usize::from(any);
            if t.crash.is_some() {
                crashed += 1;
                match t.detection() {
                    Some(d) => detections.push(d as f64 / NS_PER_MS),
                    None => undetected += 1,
                }
                if let Some(d) = t.detection_from_due() {
                    from_due.push(d as f64 / NS_PER_MS);
                }
            }
        }
        beats.sort_unstable();
        let mut mistake_beats: Vec<(u64, u64)> = Vec::new();
        for b in beats {
            match mistake_beats.last_mut() {
                Some((last, n)) if *last == b => *n += 1,
                _ => mistake_beats.push((b, 1)),
            }
        }
        let alive_ms = alive_ns as f64 / NS_PER_MS;
        Qos {
            traces,
            alive_hours: alive_ms / 3.6e6,
            mistakes,
            sampled_mistakes: sampled,
            traces_with_mistake: with_mistake,
            mistake_rate_per_hour: if alive_ns == 0 { f64::NAN } else { mistakes as f64 / (alive_ms / 3.6e6) },
            mistake_duration_ms: Summary::of(&mut durations),
            mean_recurrence_ms: if mistakes == 0 { f64::INFINITY } else { alive_ms / mistakes as f64 },
            recurrence_ms: Summary::of(&mut recurrences),
            good_period_ms: Summary::of(&mut goods),
            query_accuracy: if alive_ns == 0 { f64::NAN } else { 1.0 - suspected_ns as f64 / alive_ns as f64 },
            crashed,
            undetected,
            detection_ms: Summary::of(&mut detections),
            detection_from_due_ms: Summary::of(&mut from_due),
            mistake_beats,
        }
    }

    /// Mistakes per trace (NaN without traces).
    pub fn mistakes_per_trace(&self) -> f64 {
        if self.traces == 0 { f64::NAN } else { self.mistakes as f64 / self.traces as f64 }
    }

    /// The fraction of traces with at least one mistake.
    pub fn traces_with_mistake_fraction(&self) -> f64 {
        if self.traces == 0 { f64::NAN } else { self.traces_with_mistake as f64 / self.traces as f64 }
    }
}

/// Of the traces in which the detector made a mistake, how many later
/// tolerated, while the sender was alive, a silence at least `margin`
/// longer than the first one it convicted on (seed 001: "in four traces out
/// of five"): `(traces with a mistake, traces that later tolerated a longer
/// silence)`. `timelines` are the detector's, one per trace, in order.
pub fn later_tolerated(traces: &[Trace], timelines: &[Timeline], margin: std::time::Duration) -> (usize, usize) {
    let margin = u64::try_from(margin.as_nanos()).unwrap_or(u64::MAX);
    let mut with = 0;
    let mut tolerated = 0;
    for (trace, tl) in traces.iter().zip(timelines) {
        let Some(first) = tl.mistakes().find_map(|(s, _)| s.beat) else { continue };
        with += 1;
        let gap = |k: usize| trace.beats[k].arrival.as_nanos() - trace.beats[k - 1].arrival.as_nanos();
        let Some(k) = trace.beats.iter().position(|b| b.seq == Some(first)).filter(|&k| k > 0) else { continue };
        let convicted = gap(k);
        let convicted_beats: Vec<u64> = tl.mistakes().filter_map(|(s, _)| s.beat).collect();
        let later = (k + 1..trace.beats.len()).any(|j| {
            let alive = trace.crash.is_none_or(|c| trace.beats[j].arrival <= c);
            alive
                && gap(j) >= convicted.saturating_add(margin)
                && !convicted_beats.contains(&trace.beats[j].seq.unwrap_or(j as u64))
        });
        tolerated += usize::from(later);
    }
    (with, tolerated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    fn timeline(suspicions: Vec<Suspicion>, crash: Option<u64>) -> Timeline {
        Timeline {
            start: ms(0),
            end: ms(10_000),
            crash: crash.map(ms),
            due: crash.map(|c| ms(c + 100)),
            suspicions,
            sampled_mistakes: 0,
            time_to_suspect_ms: None,
        }
    }

    fn s(start: u64, end: Option<u64>, beat: u64) -> Suspicion {
        Suspicion { start: ms(start), end: end.map(ms), beat: Some(beat) }
    }

    #[test]
    fn hand_computed_timeline() {
        // Alive for 10 s, two mistakes: [1000, 1100) and [4000, 4300); a
        // crash at 10 s, detected 250 ms later.
        let t = Timeline {
            end: ms(20_000),
            ..timeline(vec![s(1000, Some(1100), 10), s(4000, Some(4300), 40), s(10_250, None, 0)], Some(10_000))
        };
        let q = Qos::from_timelines([&t]);
        assert_eq!(q.mistakes, 2);
        assert_eq!(q.traces_with_mistake, 1);
        assert_eq!(q.mistake_duration_ms.mean, 200.0);
        assert_eq!(q.mistake_duration_ms.max, 300.0);
        assert_eq!(q.recurrence_ms.mean, 3000.0);
        assert_eq!(q.good_period_ms.mean, 2900.0);
        assert!((q.query_accuracy - (1.0 - 400.0 / 10_000.0)).abs() < 1e-15);
        assert!((q.mistake_rate_per_hour - 2.0 / (10.0 / 3600.0)).abs() < 1e-9);
        assert_eq!(q.mean_recurrence_ms, 5000.0);
        assert_eq!(q.detection_ms.mean, 250.0);
        assert_eq!(q.detection_from_due_ms.mean, 150.0);
        assert_eq!(q.mistake_beats, vec![(10, 1), (40, 1)]);
        assert_eq!(q.undetected, 0);
    }

    #[test]
    fn a_suspicion_spanning_the_crash_is_a_mistake_and_an_immediate_detection() {
        let t = timeline(vec![s(9_900, None, 99)], Some(10_000));
        let q = Qos::from_timelines([&t]);
        assert_eq!(q.mistakes, 1);
        assert_eq!(q.mistake_duration_ms.mean, 100.0);
        assert_eq!(q.detection_ms.mean, 0.0);
        assert_eq!(q.detection_from_due_ms.mean, -100.0);
    }

    #[test]
    fn a_crash_followed_by_trust_is_undetected() {
        let t = timeline(vec![s(10_050, Some(10_060), 100)], Some(10_000));
        let q = Qos::from_timelines([&t]);
        assert_eq!(q.mistakes, 0);
        assert_eq!(q.undetected, 1);
        assert_eq!(q.detection_ms.count, 0);
        assert!(q.detection_ms.mean.is_nan());
    }

    #[test]
    fn summary_uses_nearest_rank() {
        let mut v: Vec<f64> = (1..=200).map(f64::from).collect();
        let s = Summary::of(&mut v);
        assert_eq!((s.p50, s.p99, s.max, s.mean), (100.0, 198.0, 200.0, 100.5));
        assert_eq!(Summary::of(&mut [7.0]).p99, 7.0);
    }
}
