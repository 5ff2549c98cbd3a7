#!/usr/bin/env python3
"""Generates the piecewise polynomial table for ln(erfcx(x)) on [0, 26).

vigil's exact normal tail needs ln Q(y) = ln(erfcx(x)) - x^2 - ln 2 with
x = y / sqrt(2). This script fits ln(erfcx(x)) on each unit interval
[k, k+1), k = 0..25, by Chebyshev interpolation of degree 12 in
u = 2 (x - k) - 1, using 40-digit values from mpmath, converts each piece to
the power basis in u, checks the error on a fine grid, and prints the Rust
table to paste into crates/vigil-detector/src/math.rs.

Needs: mpmath, numpy (pip install mpmath numpy). The output is committed;
CI does not run this.
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
PIECES = 26
DEGREE = 12


def ln_erfcx(x):
    x = mp.mpf(x)
    return mp.log(mp.erfc(x)) + x * x


def fit(k):
    n = DEGREE + 1
    j = np.arange(n)
    u = np.cos((2 * j + 1) * np.pi / (2 * n))
    ys = [float(ln_erfcx(k + (float(t) + 1) / 2)) for t in u]
    cheb = np.polynomial.chebyshev.chebfit(u, ys, DEGREE)
    return np.polynomial.chebyshev.cheb2poly(cheb)


def horner(coeffs, u):
    acc = 0.0
    for c in reversed(coeffs):
        acc = acc * u + c
    return acc


def main():
    table = [fit(k) for k in range(PIECES)]
    worst = 0.0
    for k, coeffs in enumerate(table):
        for t in np.linspace(-1, 1, 401):
            x = k + (t + 1) / 2
            worst = max(worst, abs(float(ln_erfcx(x)) - horner(coeffs, t)))
    print(f"// max |error| on a 401-point grid per piece: {worst:.2e}")
    print(f"const LN_ERFCX: [[f64; {DEGREE + 1}]; {PIECES}] = [")
    for coeffs in table:
        print("    [" + ", ".join(repr(float(c)) for c in coeffs) + "],")
    print("];")


if __name__ == "__main__":
    main()
