//! Numerics for the accrual models: normal tails in log space and their
//! inverses, and the logistic approximation used by Akka.
//!
//! All functions here are total: they return finite numbers for every finite
//! input and never NaN for non-NaN input.

use core::f64::consts::{LN_2, LN_10, SQRT_2};

/// `ln(sqrt(pi))`.
const LN_SQRT_PI: f64 = 0.572_364_942_924_700_1;
/// `ln(sqrt(2 pi))`.
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_7;

/// Above this argument `erfc` is computed from its asymptotic series, which is
/// accurate to double precision there and never underflows. Below it
/// `libm::erfc` is accurate to about one ulp and its result is a normal float.
const ERFC_ASYMPTOTIC_FROM: f64 = 26.0;

/// Natural log of the complementary error function, for `x >= 0`.
///
/// Finite for every finite `x` (about `-x^2` for large `x`), where computing
/// `ln(erfc(x))` directly would give `-inf` once `erfc` underflows near 27.
pub(crate) fn ln_erfc(x: f64) -> f64 {
    debug_assert!(x >= 0.0 || x.is_nan());
    if x < ERFC_ASYMPTOTIC_FROM {
        return libm::erfc(x).ln();
    }
    // erfc(x) = exp(-x^2) / (x sqrt(pi)) * sum_k (-1)^k (2k-1)!! / (2x^2)^k.
    // At x >= 26, 2x^2 >= 1352 and the eighth term is below 1e-17.
    let t = 1.0 / (2.0 * x * x);
    let mut term = 1.0;
    let mut series = 0.0;
    for k in 1..=8 {
        term *= -((2 * k - 1) as f64) * t;
        series += term;
    }
    -x * x - x.ln() - LN_SQRT_PI + series.ln_1p()
}

/// Natural log of the standard normal survival function `Q(y) = P(Z > y)`.
pub(crate) fn ln_normal_sf(y: f64) -> f64 {
    if y >= 0.0 {
        -LN_2 + ln_erfc(y / SQRT_2)
    } else {
        // Q(y) = 1 - Q(-y), and Q(-y) <= 1/2 here.
        let tail = 0.5 * libm::erfc(-y / SQRT_2);
        (-tail).ln_1p()
    }
}

/// `-log10 Q(y)`: the exact normal suspicion level at `y` standard deviations
/// past the mean. Finite, non-negative and strictly increasing in `y`.
pub(crate) fn normal_phi(y: f64) -> f64 {
    // Q(y) <= 1, so the level is >= 0; clamp the -0.0 of the far left tail.
    (-ln_normal_sf(y) / LN_10).max(0.0)
}

/// `y` such that `normal_phi(y) == level`, for `level > 0`.
///
/// Newton's method on the convex, increasing function `-ln Q(y)`, started to
/// the right of the root so the iterates decrease monotonically to it. The
/// caller refines the resulting instant on the integer nanosecond grid, so
/// this only needs to be close.
pub(crate) fn normal_phi_inverse(level: f64) -> f64 {
    let target = level * LN_10; // -ln Q(y) = target
    // Q(y) <= exp(-y^2/2)/2 for y >= 0, so -ln Q(sqrt(2 target)) > target.
    let mut y = (2.0 * target).sqrt().max(1.0);
    for _ in 0..100 {
        let ln_q = ln_normal_sf(y);
        let g = -ln_q - target;
        // d/dy (-ln Q(y)) = pdf(y) / Q(y)
        let slope = (-0.5 * y * y - LN_SQRT_2PI - ln_q).exp();
        if !(slope.is_finite() && slope > 0.0) {
            break;
        }
        let step = g / slope;
        y -= step;
        if step.abs() <= 1e-13 * y.abs().max(1.0) {
            break;
        }
    }
    y
}

/// Coefficients of Akka's logistic approximation of the normal CDF:
/// `F(y) ~ 1 / (1 + exp(-y (A + B y^2)))`.
const LOGISTIC_A: f64 = 1.5976;
const LOGISTIC_B: f64 = 0.070566;

/// `ln(1 + e^z)` without overflow or cancellation.
#[inline]
fn softplus(z: f64) -> f64 {
    if z > 37.0 {
        // ln(1 + e^-z) < 1e-16 is below half an ulp of z: the sum is z.
        z
    } else if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    }
}

/// Below this `z`, `1 - 1/(1 + e^-z)` rounds to exactly 1 in double
/// precision (`e^-z >= 2^54`), so Akka's phi is exactly zero there.
const LOGISTIC_ZERO_BELOW: f64 = -54.0 * LN_2;

/// Akka's phi at `y` standard deviations past the mean.
///
/// Akka evaluates `-log10(e / (1 + e))` with `e = exp(-y (A + B y^2))`, which
/// is `log10(1 + exp(z))` with `z = y (A + B y^2)`. Computing it as a softplus
/// gives the same values where Akka's expression is finite, and stays finite
/// (about `z / ln 10`) where Akka's overflows to infinity (`y > 21.59`). Far
/// left of the mean, where Akka's expression rounds to exactly 0, so does
/// this one (a level of 0 right after a heartbeat, as Akka and Hazelcast
/// report).
#[inline]
pub(crate) fn logistic_phi(y: f64) -> f64 {
    let z = y * (LOGISTIC_A + LOGISTIC_B * y * y);
    if z < LOGISTIC_ZERO_BELOW {
        return 0.0;
    }
    softplus(z) * core::f64::consts::LOG10_E
}

/// `y` such that `logistic_phi(y) == level`, for `level > 0`.
pub(crate) fn logistic_phi_inverse(level: f64) -> f64 {
    let l = level * LN_10;
    // Inverse softplus: z = ln(e^l - 1) = l + ln(1 - e^-l).
    let z = l + (-(-l).exp_m1()).ln();
    // Solve B y^3 + A y - z = 0 (strictly increasing in y). Cardano for the
    // depressed cubic y^3 + p y - q = 0, then Newton to polish.
    let p = LOGISTIC_A / LOGISTIC_B;
    let q = z / LOGISTIC_B;
    let disc = (q * q / 4.0 + p * p * p / 27.0).sqrt();
    let mut y = (q / 2.0 + disc).cbrt() + (q / 2.0 - disc).cbrt();
    for _ in 0..4 {
        let f = y * (LOGISTIC_A + LOGISTIC_B * y * y) - z;
        let df = LOGISTIC_A + 3.0 * LOGISTIC_B * y * y;
        y -= f / df;
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values of -log10 Q(y) computed with 50-digit arithmetic
    /// (mpmath), as published in the project's reference notes.
    const EXACT: [(f64, f64); 11] = [
        (0.0, core::f64::consts::LOG10_2),
        (1.0, 0.79955),
        (2.0, 1.64302),
        (3.0, 2.86970),
        (4.0, 4.49933),
        (5.0, 6.54265),
        (6.0, 9.00586),
        (7.0, 11.89285),
        (8.0, 15.20614),
        (10.0, 23.11805),
        (20.0, 88.5601),
    ];

    #[test]
    fn normal_phi_matches_high_precision_reference() {
        for (y, expected) in EXACT {
            let got = normal_phi(y);
            // The reference is rounded to 5 decimals (4 at y = 20).
            assert!((got - expected).abs() < 6e-5, "y={y}: {got} vs {expected}");
        }
    }

    #[test]
    fn normal_phi_is_finite_far_in_the_tail() {
        // erfc(x) underflows to 0 near x = 27.2 (y = 38.5); the log-space form
        // keeps going. The reference notes give ln erfc(30) = -903.974 and
        // ln erfc(100) = -10005.18.
        assert!((ln_erfc(30.0) - (-903.974)).abs() < 1e-3);
        assert!((ln_erfc(100.0) - (-10005.18)).abs() < 1e-2);
        let far = normal_phi(1e6);
        assert!(far.is_finite() && far > 2e11, "{far}");
    }

    #[test]
    fn ln_erfc_is_continuous_where_the_method_changes() {
        let below = libm::erfc(ERFC_ASYMPTOTIC_FROM).ln();
        let x = ERFC_ASYMPTOTIC_FROM;
        let t = 1.0 / (2.0 * x * x);
        let mut term = 1.0;
        let mut series = 0.0;
        for k in 1..=8 {
            term *= -((2 * k - 1) as f64) * t;
            series += term;
        }
        let above = -x * x - x.ln() - LN_SQRT_PI + series.ln_1p();
        // Both methods agree to a few ulps of a value near -680.
        assert!((below - above).abs() < 1e-11, "{below} vs {above}");
    }

    #[test]
    fn normal_phi_is_strictly_increasing_across_branch_points() {
        // y = 0 (the two formulas for Q) and y = 26 sqrt 2 (the asymptotic
        // series) are where the computation changes method.
        for centre in [0.0, ERFC_ASYMPTOTIC_FROM * SQRT_2] {
            let mut prev = normal_phi(centre - 1e-3);
            for i in -999..=1000 {
                let y = centre + f64::from(i) * 1e-6;
                let v = normal_phi(y);
                assert!(v > prev, "not increasing at y={y}: {v} <= {prev}");
                prev = v;
            }
        }
    }

    #[test]
    fn normal_inverse_round_trips() {
        for level in [1e-9, 1e-3, 0.1, core::f64::consts::LOG10_2, 0.5, 1.0, 3.0, 8.0, 12.0, 50.0, 300.0, 1e4, 1e8] {
            let y = normal_phi_inverse(level);
            let back = normal_phi(y);
            assert!((back - level).abs() <= 1e-9 * level.max(1.0), "level={level}: y={y} back={back}");
        }
    }

    #[test]
    fn threshold_equivalences_match_the_reference_tables() {
        // y at which each model reaches a threshold (reference notes, B1).
        for (threshold, logistic_y, exact_y) in [
            (1.0, 1.2822, 1.2816),
            (3.0, 3.0589, 3.0902),
            (5.0, 4.1192, 4.2649),
            (8.0, 5.2260, 5.6120),
            (10.0, 5.7990, 6.3613),
            (12.0, 6.2921, 7.0345),
            (16.0, 7.1197, 8.2221),
        ] {
            assert!((logistic_phi_inverse(threshold) - logistic_y).abs() < 1e-4, "{threshold}");
            assert!((normal_phi_inverse(threshold) - exact_y).abs() < 1e-4, "{threshold}");
        }
    }

    #[test]
    fn logistic_matches_akkas_expression_where_that_is_finite() {
        // Up to y = 21 Akka's exp(-z) is a normal float; beyond, it goes
        // subnormal and Akka's own value loses precision before overflowing.
        for i in -300..=210 {
            let y = f64::from(i) / 10.0;
            let e = (-y * (LOGISTIC_A + LOGISTIC_B * y * y)).exp();
            let akka = if y > 0.0 { -(e / (1.0 + e)).log10() } else { -(1.0 - 1.0 / (1.0 + e)).log10() };
            let ours = logistic_phi(y);
            if akka == 0.0 {
                // Where Akka's expression rounds to (-)0, ours is 0 or below
                // the smallest non-zero value Akka's could take (4.8e-17).
                assert!(ours < 4.9e-17, "y={y}: {ours}");
                continue;
            }
            assert!((ours - akka).abs() <= 1e-12 * akka.abs().max(1e-300) + 1e-15, "y={y}: {ours} vs {akka}");
        }
        // Where Akka's form overflows (phi = inf), ours stays finite.
        assert!(logistic_phi(30.0).is_finite());
        assert!(logistic_phi(1e6).is_finite());
    }

    #[test]
    fn logistic_inverse_round_trips() {
        for level in [1e-6, 0.1, 1.0, 8.0, 100.0, 1e5] {
            let y = logistic_phi_inverse(level);
            assert!((logistic_phi(y) - level).abs() <= 1e-9 * level.max(1.0), "{level}");
        }
    }
}
