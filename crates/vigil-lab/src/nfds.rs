//! A seeded, exact simulation of Chen, Toueg and Aguilera's NFD-S, and the
//! lab's self-validation against the closed forms of [`crate::chen`].
//!
//! p sends heartbeat m_i at σ_i = iη; each is lost independently with
//! probability p_L, otherwise delayed by an independent draw of the
//! network's delay. q's freshness points are τ_i = σ_i + δ; during
//! [τ_i, τ_{i+1}) q trusts p iff it has received some m_j with j ≥ i (a
//! message arriving at t counts as received at t). So in that interval q
//! suspects exactly on [τ_i, a_i), where a_i is the earliest arrival among
//! the m_j with j ≥ i (if a_i > τ_i), and the output is computed event by
//! event, with no time grid: a sliding-window minimum over the messages in
//! flight, O(δ/η) memory besides the output.
//!
//! Times are integer nanoseconds ([`vigil_detector::Instant`]): η and δ are
//! rounded to the nanosecond once, σ_i = i·η and τ_i = σ_i + δ are then
//! exact, and each delay is rounded to the nanosecond.
//!
//! The tests of this module are the lab's self-validation: the simulated
//! λ_M, E(T_M) and P_A agree with [`crate::chen::predict_nfds`] within their
//! confidence intervals, the detection time never exceeds δ + η, and Chen's
//! identities λ_M = 1/E(T_MR) and P_A = 1 − E(T_M)/E(T_MR) hold on the
//! simulated timelines, measured by [`crate::qos::Qos`].

use std::collections::VecDeque;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vigil_detector::Instant;

use crate::chen::{ChenError, Network, check_timing};
use crate::qos::{Suspicion, Timeline};

/// Simulates NFD-S with period η and shift δ (ms) on `network`, judged over
/// `heartbeats` freshness points: the timeline covers [τ_1, τ_N) with
/// N = `heartbeats` (start τ_1, end τ_N, no crash, `due` None,
/// `sampled_mistakes` 0).
///
/// p is alive throughout: besides m_1..m_N it sends the heartbeats due
/// before τ_N (there are ⌈δ/η⌉ − 1 of them when δ > η), since they can end a
/// suspicion inside the window. Each suspicion's `beat` is the i of the
/// freshness point τ_i at which it started. A suspicion still open at τ_N
/// has `end` None. The same seed gives the same timeline
/// ([`ChaCha8Rng`] seeded by `seed_from_u64`).
///
/// Errors: invalid η, δ or network (as for [`crate::chen::predict_nfds`],
/// so δ/η is at most 10⁴, which bounds the heartbeats in flight);
/// `heartbeats` = 0; η below 1 ns; or a run so long that τ_N overflows
/// 64-bit nanoseconds.
///
/// ```
/// use vigil_lab::chen::{predict_nfds, Network};
/// use vigil_lab::dist::Delay;
/// use vigil_lab::nfds::simulate_nfds;
/// use vigil_lab::qos::Qos;
///
/// let net = Network { loss: 0.1, delay: Delay::Exponential { mean_ms: 80.0 } };
/// let timeline = simulate_nfds(100.0, 150.0, &net, 20_000, 42)?;
/// let qos = Qos::from_timelines([&timeline]);
/// let theory = predict_nfds(100.0, 150.0, &net)?;
/// // About 2,400 mistakes: the rate is within 10 % (4 standard errors).
/// assert!((qos.mistake_rate_per_hour / theory.mistake_rate_per_hour - 1.0).abs() < 0.1);
/// # Ok::<(), vigil_lab::chen::ChenError>(())
/// ```
pub fn simulate_nfds(
    eta_ms: f64,
    delta_ms: f64,
    network: &Network,
    heartbeats: u64,
    seed: u64,
) -> Result<Timeline, ChenError> {
    simulate(eta_ms, delta_ms, network, heartbeats, seed, None)
}

/// When p crashes, for the detection-time checks.
#[derive(Debug, Clone, Copy)]
struct Crash {
    /// The last heartbeat p sends.
    after: u64,
    /// How long after sending it p crashes, in ns (less than η).
    offset_ns: u64,
}

/// Draws the arrival of each heartbeat in turn: `None` if lost.
struct Sender<'a> {
    network: &'a Network,
    rng: ChaCha8Rng,
    eta_ns: u64,
}

impl Sender<'_> {
    fn arrival(&mut self, j: u64) -> Option<u64> {
        // One uniform for the loss, then (if not lost) one delay draw.
        let lost = self.rng.random::<f64>() < self.network.loss;
        if lost {
            return None;
        }
        let d_ns = (self.network.delay.sample(&mut self.rng) * 1e6).round() as u64; // saturates
        Some((j * self.eta_ns).saturating_add(d_ns))
    }
}

fn simulate(
    eta_ms: f64,
    delta_ms: f64,
    network: &Network,
    heartbeats: u64,
    seed: u64,
    crash: Option<Crash>,
) -> Result<Timeline, ChenError> {
    check_timing(eta_ms, delta_ms)?;
    network.validate()?;
    if heartbeats == 0 {
        return Err(ChenError::Invalid { field: "heartbeats", value: 0.0, expected: "at least 1" });
    }
    let eta_ns = (eta_ms * 1e6).round() as u64;
    let delta_ns = (delta_ms * 1e6).round() as u64;
    if eta_ns == 0 {
        return Err(ChenError::Invalid { field: "eta_ms", value: eta_ms, expected: "at least 1e-6 (1 ns)" });
    }
    // Intervals [τ_i, τ_{i+1}) judged, and the last heartbeat sent.
    let (intervals, last_message) = match crash {
        None => (heartbeats - 1, u64::MAX),
        Some(c) => (c.after + 1, c.after),
    };
    // Every time used is at most τ_{intervals+1} + η (the next send).
    let too_long = || ChenError::Invalid {
        field: "heartbeats",
        value: heartbeats as f64,
        expected: "small enough that (heartbeats + 2)·η + δ fits in 64-bit nanoseconds",
    };
    intervals
        .checked_add(3)
        .and_then(|n| n.checked_mul(eta_ns))
        .and_then(|t| t.checked_add(delta_ns))
        .ok_or_else(too_long)?;
    let mut sender = Sender { network, rng: ChaCha8Rng::seed_from_u64(seed), eta_ns };
    let suspicions = judge(eta_ns, delta_ns, intervals, last_message, |j| sender.arrival(j));
    let tau = |i: u64| Instant::from_nanos(i * eta_ns + delta_ns);
    Ok(match crash {
        None => {
            // NFD-S's time to suspect is known in closed form (δ after each
            // send); it is not sampled here.
            Timeline {
                start: tau(1),
                end: tau(heartbeats),
                crash: None,
                due: None,
                suspicions,
                sampled_mistakes: 0,
                time_to_suspect_ms: None,
            }
        }
        Some(c) => Timeline {
            start: tau(1),
            end: tau(c.after + 2),
            crash: Some(Instant::from_nanos(c.after * eta_ns + c.offset_ns)),
            due: Some(Instant::from_nanos((c.after + 1) * eta_ns)),
            suspicions,
            sampled_mistakes: 0,
            time_to_suspect_ms: None,
        },
    })
}

/// NFD-S's output over the intervals [τ_i, τ_{i+1}), i = 1..=`intervals`,
/// given the arrival time (ns) of each heartbeat j ≤ `last_message` (`None`
/// if lost), asked for in order j = 1, 2, … and only for heartbeats sent
/// before the last interval ends.
///
/// The window holds the heartbeats j ≥ i sent so far, with arrivals
/// increasing from front to back: a heartbeat with an earlier arrival and a
/// larger sequence number makes every earlier-numbered, later-arriving one
/// irrelevant, so it evicts them. The front is a_i.
fn judge(
    eta_ns: u64,
    delta_ns: u64,
    intervals: u64,
    last_message: u64,
    mut arrival: impl FnMut(u64) -> Option<u64>,
) -> Vec<Suspicion> {
    let tau = |i: u64| i * eta_ns + delta_ns;
    let mut window: VecDeque<(u64, u64)> = VecDeque::new();
    let mut next = 1u64;
    let mut open: Option<Suspicion> = None;
    let mut out = Vec::new();
    for i in 1..=intervals {
        let (start, end) = (tau(i), tau(i + 1));
        // Heartbeats sent before τ_{i+1} may arrive within this interval.
        while next <= last_message && next * eta_ns < end {
            if let Some(a) = arrival(next) {
                while window.back().is_some_and(|&(_, b)| b >= a) {
                    window.pop_back();
                }
                window.push_back((next, a));
            }
            next += 1;
        }
        while window.front().is_some_and(|&(j, _)| j < i) {
            window.pop_front();
        }
        let a = window.front().map_or(u64::MAX, |&(_, a)| a);
        if open.is_none() && a > start {
            open = Some(Suspicion { start: Instant::from_nanos(start), end: None, beat: Some(i) });
        }
        if a < end
            && let Some(mut s) = open.take()
        {
            s.end = Some(Instant::from_nanos(a.max(start)));
            out.push(s);
        }
    }
    out.extend(open);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chen::{NfdsPrediction, predict_nfds};
    use crate::dist::Delay;
    use crate::qos::Qos;
    use rand::RngExt;

    const NS_PER_MS: f64 = 1e6;

    fn mean_sd(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt())
    }

    /// Per-batch mistake rate (per hour) and query accuracy over `b`
    /// consecutive equal stretches of the timeline: the batch means whose
    /// spread gives the standard errors.
    fn batches(t: &Timeline, b: u64) -> (Vec<f64>, Vec<f64>) {
        let (t0, t1) = (t.start.as_nanos(), t.end.as_nanos());
        let len = (t1 - t0) / b;
        let (mut rates, mut accuracies) = (Vec::new(), Vec::new());
        for k in 0..b {
            let (lo, hi) = (t0 + k * len, t0 + (k + 1) * len);
            let mut count = 0u64;
            let mut suspected = 0u64;
            for s in &t.suspicions {
                let (s0, s1) = (s.start.as_nanos(), s.end.map_or(t1, |e| e.as_nanos()));
                if (lo..hi).contains(&s0) {
                    count += 1;
                }
                suspected += s1.min(hi).saturating_sub(s0.max(lo));
            }
            let hours = len as f64 / NS_PER_MS / 3.6e6;
            rates.push(count as f64 / hours);
            accuracies.push(1.0 - suspected as f64 / len as f64);
        }
        (rates, accuracies)
    }

    /// Simulates, measures with `Qos`, and checks λ_M, E(T_M) and P_A
    /// against the closed forms within 4 standard errors.
    fn check_against_theory(name: &str, eta: f64, delta: f64, net: &Network, heartbeats: u64, seed: u64) {
        let theory: NfdsPrediction = predict_nfds(eta, delta, net).unwrap();
        let t = simulate_nfds(eta, delta, net, heartbeats, seed).unwrap();
        let q = Qos::from_timelines([&t]);
        // Standard errors. λ_M and P_A: batch means over 25 stretches of
        // (heartbeats/25) intervals each, far longer than the correlation of
        // the output (a few intervals), so the batch means are ~independent.
        // E(T_M): the durations are close to independent (each mistake's
        // length depends on the few heartbeats after its freshness point),
        // so sd/√n.
        const B: u64 = 25;
        let (rates, accuracies) = batches(&t, B);
        let (_, sd_rate) = mean_sd(&rates);
        let (_, sd_acc) = mean_sd(&accuracies);
        let se_rate = sd_rate / (B as f64).sqrt();
        let se_acc = sd_acc / (B as f64).sqrt();
        let durations: Vec<f64> = t.mistakes().map(|(_, d)| d as f64 / NS_PER_MS).collect();
        let (mean_dur, sd_dur) = mean_sd(&durations);
        let se_dur = sd_dur / (durations.len() as f64).sqrt();
        assert!((mean_dur - q.mistake_duration_ms.mean).abs() < 1e-9 * mean_dur);
        println!(
            "{name}: {} mistakes over {} heartbeats (p_S = {:.5})\n  \
             λ_M  sim {:.2}/h  theory {:.2}/h  (se {:.2}, {:+.2} se)\n  \
             E(T_M) sim {:.4} ms  theory {:.4} ms  (se {:.4}, {:+.2} se)\n  \
             P_A  sim {:.6}  theory {:.6}  (se {:.6}, {:+.2} se)",
            q.mistakes,
            heartbeats,
            theory.p_s,
            q.mistake_rate_per_hour,
            theory.mistake_rate_per_hour,
            se_rate,
            (q.mistake_rate_per_hour - theory.mistake_rate_per_hour) / se_rate,
            q.mistake_duration_ms.mean,
            theory.mean_mistake_duration_ms,
            se_dur,
            (q.mistake_duration_ms.mean - theory.mean_mistake_duration_ms) / se_dur,
            q.query_accuracy,
            theory.query_accuracy,
            se_acc,
            (q.query_accuracy - theory.query_accuracy) / se_acc,
        );
        assert!(q.mistakes > 5_000, "{name}: too few mistakes for the test to mean much");
        // 4 standard errors: a false alarm has probability about 6e-5 per
        // check under normality (and the seeds are fixed, so the outcome is
        // reproducible).
        assert!((q.mistake_rate_per_hour - theory.mistake_rate_per_hour).abs() < 4.0 * se_rate, "{name}: λ_M");
        assert!((q.mistake_duration_ms.mean - theory.mean_mistake_duration_ms).abs() < 4.0 * se_dur, "{name}: E(T_M)");
        assert!((q.query_accuracy - theory.query_accuracy).abs() < 4.0 * se_acc, "{name}: P_A");
    }

    #[test]
    fn simulation_matches_closed_forms_exponential() {
        // δ = 1.5 η, so u has three factors (k = 2) and the suspicion can be
        // ended by m_i, m_{i+1} or m_{i+2}; p_S ≈ 0.12, ~10⁴ mistakes.
        let net = Network { loss: 0.1, delay: Delay::Exponential { mean_ms: 80.0 } };
        check_against_theory("Exp(80), η 100, δ 150, p_L 0.1", 100.0, 150.0, &net, 85_000, 1);
    }

    #[test]
    fn simulation_matches_closed_forms_shifted_gamma() {
        // A delay with a floor (the kink at the shift) and δ = 1.2 η.
        let net = Network { loss: 0.05, delay: Delay::ShiftedGamma { shift_ms: 20.0, shape: 2.0, scale_ms: 15.0 } };
        check_against_theory("20 + Gamma(2, 15), η 50, δ 60, p_L 0.05", 50.0, 60.0, &net, 80_000, 2);
    }

    #[test]
    fn simulation_matches_closed_forms_clamped_normal() {
        // δ < η (k = 1), and a normal with 9 % of its mass clamped to 0.
        let net = Network { loss: 0.02, delay: Delay::Normal { mean_ms: 40.0, sd_ms: 30.0 } };
        check_against_theory("N(40, 30) clamped, η 100, δ 60, p_L 0.02", 100.0, 60.0, &net, 60_000, 3);
    }

    #[test]
    fn simulation_matches_closed_forms_constant_delay() {
        // u is a step function here: the quadrature must split at the step.
        // p_S = 0.8, E(T_M) = 95 ms, P_A = 0.24 (see chen's tests).
        let net = Network { loss: 0.2, delay: Delay::Constant { ms: 120.0 } };
        check_against_theory("constant 120, η 100, δ 50, p_L 0.2", 100.0, 50.0, &net, 15_000, 4);
    }

    #[test]
    fn detection_time_never_exceeds_delta_plus_eta() {
        // Crash right after heartbeat c (offset 0) or at a random point
        // before the next send. T_D ≤ δ + η must hold in every run; with
        // offset 0 and m_c delivered in time it is attained exactly.
        let cases = [
            (Network { loss: 0.1, delay: Delay::Exponential { mean_ms: 80.0 } }, 100.0, 150.0),
            (Network { loss: 0.3, delay: Delay::Pareto { scale_ms: 5.0, shape: 1.2 } }, 20.0, 7.0),
            (Network { loss: 0.0, delay: Delay::Constant { ms: 30.0 } }, 25.0, 100.0),
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(99);
        for (net, eta, delta) in &cases {
            let bound_ns = ((eta + delta) * NS_PER_MS).round() as u64;
            let mut timelines = Vec::new();
            let mut attained = 0;
            for run in 0..300u64 {
                let after = rng.random_range(1..60u64);
                let offset_ns = if run % 2 == 0 { 0 } else { rng.random_range(0..(eta * NS_PER_MS) as u64) };
                let t = simulate(*eta, *delta, net, 1, run, Some(Crash { after, offset_ns })).unwrap();
                let d = t.detection().expect("the crash is always detected");
                assert!(d <= bound_ns, "detection {d} ns > δ + η = {bound_ns} ns");
                // The final suspicion starts no later than τ_{c+1}.
                let last = t.suspicions.last().unwrap();
                assert!(last.start.as_nanos() <= (after + 1) * (eta * NS_PER_MS) as u64 + (delta * NS_PER_MS) as u64);
                attained += usize::from(d == bound_ns);
                timelines.push(t);
            }
            let q = Qos::from_timelines(&timelines);
            println!(
                "{}: {} crashes, T_D max {:.3} ms (bound {:.3}), mean {:.3} ms, attained {attained}×",
                net.delay.describe(),
                q.crashed,
                q.detection_ms.max,
                eta + delta,
                q.detection_ms.mean
            );
            assert_eq!((q.crashed, q.undetected), (300, 0));
            assert!(q.detection_ms.max <= eta + delta + 1e-9);
            assert!(attained > 0, "the bound is tight: crashing just after a delivered heartbeat attains it");
        }
    }

    #[test]
    fn chen_identities_hold_on_a_long_run() {
        // Theorem 1: λ_M = 1/E(T_MR), P_A = 1 − E(T_M)/E(T_MR) and
        // E(T_G) = E(T_MR) − E(T_M), with E(T_MR) estimated from the
        // recurrence samples (not the renewal estimate that Qos uses for its
        // rate), on a single long stationary run.
        let net = Network { loss: 0.1, delay: Delay::Exponential { mean_ms: 80.0 } };
        let t = simulate_nfds(100.0, 150.0, &net, 150_000, 7).unwrap();
        let q = Qos::from_timelines([&t]);
        let starts: Vec<f64> = t.mistakes().map(|(s, _)| s.start.as_nanos() as f64 / NS_PER_MS).collect();
        let rec: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        let (mean_rec, sd_rec) = mean_sd(&rec);
        let se_rec = sd_rec / (rec.len() as f64).sqrt();
        assert!((mean_rec - q.recurrence_ms.mean).abs() < 1e-9 * mean_rec);
        let durations: Vec<f64> = t.mistakes().map(|(_, d)| d as f64 / NS_PER_MS).collect();
        let (mean_dur, sd_dur) = mean_sd(&durations);
        let se_dur = sd_dur / (durations.len() as f64).sqrt();

        // λ_M vs 1/E(T_MR): by the delta method, se(1/R) = se(R)/R².
        let rate_from_rec = 3.6e6 / mean_rec;
        let se_rate = 3.6e6 * se_rec / (mean_rec * mean_rec);
        // P_A vs 1 − M/R: se from both means (treated as independent,
        // which overstates it; they are positively correlated).
        let pa_from_rec = 1.0 - mean_dur / mean_rec;
        let se_pa = ((se_dur / mean_rec).powi(2) + (mean_dur * se_rec / (mean_rec * mean_rec)).powi(2)).sqrt();
        // T_G = T_MR − T_M, on the samples.
        let se_good = (se_rec * se_rec + se_dur * se_dur).sqrt();
        println!(
            "{} mistakes\n  λ_M {:.3}/h vs 3.6e6/E(T_MR) {:.3}/h (se {:.3})\n  \
             P_A {:.6} vs 1 − E(T_M)/E(T_MR) {:.6} (se {:.6})\n  \
             E(T_G) {:.3} ms vs E(T_MR) − E(T_M) {:.3} ms (se {:.3})",
            q.mistakes,
            q.mistake_rate_per_hour,
            rate_from_rec,
            se_rate,
            q.query_accuracy,
            pa_from_rec,
            se_pa,
            q.good_period_ms.mean,
            mean_rec - mean_dur,
            se_good
        );
        assert!(q.mistakes > 10_000);
        assert!((q.mistake_rate_per_hour - rate_from_rec).abs() < 4.0 * se_rate);
        assert!((q.query_accuracy - pa_from_rec).abs() < 4.0 * se_pa);
        assert!((q.good_period_ms.mean - (mean_rec - mean_dur)).abs() < 4.0 * se_good);
        // The same identities on the closed forms, to rounding.
        let p = predict_nfds(100.0, 150.0, &net).unwrap();
        assert!((p.mistake_rate_per_hour * p.mean_recurrence_ms / 3.6e6 - 1.0).abs() < 1e-12);
        assert!((p.query_accuracy - (1.0 - p.mean_mistake_duration_ms / p.mean_recurrence_ms)).abs() < 1e-12);
    }

    #[test]
    fn judge_agrees_with_the_definition_pointwise() {
        // Random arrivals (losses, reordering, ties with freshness points);
        // at every freshness point, every arrival, one nanosecond before
        // each, and random instants, the timeline's verdict must equal the
        // NFD-S rule applied directly: suspect at t ∈ [τ_i, τ_{i+1}) iff no
        // m_j with j ≥ i has arrived by t.
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for case in 0..40u64 {
            let eta = rng.random_range(1..50u64);
            let delta = rng.random_range(0..200u64);
            let intervals = rng.random_range(1..60u64);
            let max_delay = rng.random_range(1..300u64);
            let last = (intervals + 1) * eta + delta; // sends beyond are not needed
            let arrivals: Vec<Option<u64>> = (0..=last / eta + 1)
                .map(|j| {
                    if j == 0 || rng.random_bool(0.3) {
                        None
                    } else if rng.random_bool(0.2) {
                        Some(j * eta + delta + rng.random_range(0..3u64) * eta) // exactly on a freshness point
                    } else {
                        Some(j * eta + rng.random_range(0..max_delay))
                    }
                })
                .collect();
            let mut asked = Vec::new();
            let sus = judge(eta, delta, intervals, u64::MAX, |j| {
                asked.push(j);
                arrivals[j as usize]
            });
            assert!(asked.iter().copied().eq(1..=asked.len() as u64), "heartbeats drawn in order");
            let tau = |i: u64| i * eta + delta;
            let mut probes: Vec<u64> = (1..=intervals).flat_map(|i| [tau(i), tau(i) + 1]).collect();
            probes.extend(arrivals.iter().flatten().flat_map(|&a| [a, a.saturating_sub(1)]));
            probes.extend((0..200).map(|_| rng.random_range(tau(1)..tau(intervals + 1))));
            for t in probes.into_iter().filter(|&t| t >= tau(1) && t < tau(intervals + 1)) {
                let i = (t - delta) / eta;
                let rule = !arrivals.iter().enumerate().skip(i as usize).any(|(_, a)| a.is_some_and(|a| a <= t));
                let timeline = sus.iter().any(|s| s.start.as_nanos() <= t && s.end.is_none_or(|e| t < e.as_nanos()));
                assert_eq!(rule, timeline, "case {case}: t = {t}, η = {eta}, δ = {delta}");
            }
            // Disjoint, ordered, non-empty, starting at freshness points.
            for w in sus.windows(2) {
                assert!(w[0].end.unwrap() < w[1].start);
            }
            for s in &sus {
                assert!(s.end.is_none_or(|e| e > s.start));
                assert_eq!((s.start.as_nanos() - delta) % eta, 0);
                assert_eq!(s.beat, Some((s.start.as_nanos() - delta) / eta));
            }
        }
    }

    #[test]
    fn deterministic_and_bounded_inputs() {
        let net = Network { loss: 0.1, delay: Delay::LogNormal { median_ms: 50.0, sigma: 0.8 } };
        let a = simulate_nfds(100.0, 80.0, &net, 2_000, 11).unwrap();
        let b = simulate_nfds(100.0, 80.0, &net, 2_000, 11).unwrap();
        let c = simulate_nfds(100.0, 80.0, &net, 2_000, 12).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.suspicions, c.suspicions);
        assert_eq!((a.start, a.end), (Instant::from_millis(180), Instant::from_millis(200_080)));
        assert_eq!((a.crash, a.due, a.sampled_mistakes), (None, None, 0));
        // Constant delay, no loss, 70 ms late each time: every interval has
        // one mistake [τ_i, τ_i + 70 ms).
        let late = Network { loss: 0.0, delay: Delay::Constant { ms: 120.0 } };
        let t = simulate_nfds(100.0, 50.0, &late, 101, 0).unwrap();
        assert_eq!(t.suspicions.len(), 100);
        assert!(t.suspicions.iter().all(|s| s.end.unwrap().as_nanos() - s.start.as_nanos() == 70_000_000));
        // Early enough: never a suspicion.
        let early = Network { loss: 0.0, delay: Delay::Constant { ms: 40.0 } };
        assert!(simulate_nfds(100.0, 50.0, &early, 1_000, 0).unwrap().suspicions.is_empty());
        // Errors, not panics.
        assert!(matches!(simulate_nfds(100.0, 50.0, &net, 0, 0), Err(ChenError::Invalid { field: "heartbeats", .. })));
        assert!(matches!(simulate_nfds(1e-9, 0.0, &net, 10, 0), Err(ChenError::Invalid { field: "eta_ms", .. })));
        assert!(matches!(simulate_nfds(f64::NAN, 0.0, &net, 10, 0), Err(ChenError::Invalid { field: "eta_ms", .. })));
        assert!(matches!(
            simulate_nfds(1e6, 0.0, &net, u64::MAX / 2, 0),
            Err(ChenError::Invalid { field: "heartbeats", .. })
        ));
        let bad = Network { loss: -0.1, ..net };
        assert!(matches!(simulate_nfds(100.0, 50.0, &bad, 10, 0), Err(ChenError::Invalid { field: "loss", .. })));
    }
}
