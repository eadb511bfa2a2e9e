"""Fits the f32 polynomial coefficients of ops/elementwise/f32_math.h (erf and exp without libm
calls, so that GCC vectorises gelu's loops) and checks them in simulated f32 arithmetic.

    /work/venv-torch/bin/python tools/fit_erf.py          # prints the C++ constants and the check

Needs NumPy only; the references are Python's double math.erf, math.erfc and math.exp (within
an ulp of double, ~1e-16: far below the f32 errors measured here).

The approximations (x ≥ 0; erf is odd, the caller restores the sign):
  exp(r) ≈ 1 + r + r²·q(r),      |r| ≤ ln2/2 (+ slack for the rounded reduction), q of degree 4
  erf(x) ≈ x + x·h(x²),          0 ≤ x < 1,                                       h of degree 6
  erf(x) ≈ 1 − exp(−x²)·R(x),    1 ≤ x ≤ 4 (erf rounds to 1 in f32 beyond ~3.92),  R of degree 8
Each is a weighted minimax fit (Lawson's iteratively reweighted least squares on Chebyshev
nodes): relative error for exp and for erf on [0, 1), absolute error of erf on [1, 4] (there
erf ∈ [0.84, 1), so one ulp is a fixed 2^-24). The coefficients are rounded to f32 one at a
time, lowest degree first, and the higher ones refitted after each rounding, so that the
rounding of one is absorbed by the others.

Why these splits: below 1, x + x·h keeps x exact and puts the rounding in the small h term;
above 1, erfc ≤ 0.16 so its relative error reaches erf shrunk. Moving the split either way (0.9,
1.1, 1.25, 1.5 were tried) or folding the 1 into h (x·P(x²)) gave larger worst cases in the
f32 simulation below.
"""

import math
import sys

import numpy as np

f32 = np.float32
i32 = np.int32

EXP_REDUCED_RANGE = 0.3467  # ln2/2 = 0.34657…, plus the error of rounding x·log2(e) to n
ERF_SPLIT = 1.0
ERF_CLAMP = 4.0


def chebyshev_nodes(a, b, n):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)


def lawson(basis, target, weight, iterations=150):
    """Weighted minimax fit of target by the columns of basis: least squares reweighted by the
    error (Lawson), which converges towards the equioscillating minimax solution."""
    lw = np.full(len(target), 1.0 / len(target))
    for _ in range(iterations):
        sw = np.sqrt(lw) * weight
        c, *_ = np.linalg.lstsq(basis * sw[:, None], target * sw, rcond=None)
        err = np.abs((basis @ c - target) * weight)
        lw = lw * err + 1e-300
        lw /= lw.sum()
    return c


def fit_rounded_to_f32(columns, target, weight):
    """Coefficients of sum(c_k * columns[k]) ≈ target, rounded to f32 one by one (lowest
    first) with the rest refitted. Returns the f32 coefficients and the weighted max error."""
    fixed = []
    while len(fixed) < len(columns):
        k = len(fixed)
        residual = target - sum(c * col for c, col in zip(fixed, columns[:k]))
        c = lawson(np.stack(columns[k:], 1), residual, weight)
        fixed.append(float(f32(c[0])))
    residual = target - sum(c * col for c, col in zip(fixed, columns))
    return [f32(c) for c in fixed], float(np.abs(residual * weight).max())


def fit_exp():
    r = chebyshev_nodes(-EXP_REDUCED_RANGE, EXP_REDUCED_RANGE, 4000)
    columns = [r ** (k + 2) for k in range(5)]
    return fit_rounded_to_f32(columns, np.exp(r) - 1 - r, np.exp(-r))


def fit_erf_small():
    u = chebyshev_nodes(0, ERF_SPLIT**2, 3000)  # u = x²
    x = np.sqrt(u)
    ratio = np.array([math.erf(v) / v for v in x])
    return fit_rounded_to_f32([u**k for k in range(7)], ratio - 1, 1 / ratio)


def fit_erf_large():
    x = chebyshev_nodes(ERF_SPLIT, ERF_CLAMP, 4000)
    scaled_erfc = np.array([math.erfc(v) * math.exp(v * v) for v in x])  # erfc(x)·exp(x²)
    return fit_rounded_to_f32([x**k for k in range(9)], scaled_erfc, np.exp(-x * x))


# --- f32 simulation of f32_math.h, operation by operation (NumPy rounds every f32 operation) ---


def horner(coefficients, t):
    acc = coefficients[-1]
    for c in coefficients[-2::-1]:
        acc = c + t * acc
    return acc


def exp_f32(x, q):
    x = np.minimum(np.maximum(x, f32(-104)), f32(89))
    shifter = f32(12582912.0)  # 1.5·2^23
    kf = x * f32(1.4426950408889634) + shifter
    n = kf - shifter
    ni = kf.view(i32) - shifter.view(i32)
    r = (x - n * f32(0.693145751953125)) - n * f32(1.4286068203094172e-06)
    p = f32(1) + (r + (r * r) * horner(q, r))
    n1 = ni >> 1
    n2 = ni - n1
    s1 = ((n1 + 127) << 23).astype(i32).view(f32)
    s2 = ((n2 + 127) << 23).astype(i32).view(f32)
    return (p * s1) * s2


def erf_f32(x, q, h, big_r):
    a = np.abs(x)
    small = a + a * horner(h, a * a)
    ac = np.minimum(a, f32(ERF_CLAMP))
    large = f32(1) - exp_f32(-(ac * ac), q) * horner(big_r, ac)
    return np.copysign(np.where(a < f32(ERF_SPLIT), small, large), x)


def max_ulp_error(fn, reference, lo, hi, stride):
    """Max |fn(x) − reference(x)| in ulps of the f32 result, over every stride-th f32 between
    lo and hi (0 ≤ lo < hi, or hi < lo ≤ 0: through the bit patterns of one sign), and the x
    where it occurs."""
    sign = f32(-1) if min(lo, hi) < 0 else f32(1)
    lo_bits, hi_bits = sorted(int(f32(abs(v)).view(i32)) for v in (lo, hi))
    bits = np.arange(lo_bits, hi_bits, stride, dtype=np.int64)
    x = bits.astype(i32).view(f32) * sign
    with np.errstate(over="ignore"):
        y = fn(x).astype(np.float64)
        ref = np.frompyfunc(reference, 1, 1)(x.astype(np.float64)).astype(np.float64)
        rounded = ref.astype(f32)
    ulp = np.spacing(np.abs(rounded)).astype(np.float64)
    err = np.where(np.isinf(rounded) & (y == rounded), 0.0, np.abs(y - ref) / ulp)
    k = int(np.argmax(err))
    return float(err[k]), float(x[k])


def safe_exp(v):
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def main():
    q, q_err = fit_exp()
    h, h_err = fit_erf_small()
    big_r, r_err = fit_erf_large()

    def cpp(name, cs):
        values = ", ".join(f"{float(c):.9g}f" for c in cs)
        return f"inline constexpr float {name}[] = {{{values}}};"

    print(f"// exp: relative fit error {q_err:.2g}; erf: {h_err:.2g} relative below 1, "
          f"{r_err:.2g} absolute above")
    print(cpp("kExpQ", q))
    print(cpp("kErfSmallH", h))
    print(cpp("kErfLargeR", big_r))
    for cs in (q, h, big_r):  # the printed decimals must read back as the same floats
        assert all(f32(float(f"{float(c):.9g}")) == c for c in cs)

    stride = int(sys.argv[1]) if len(sys.argv) > 1 else 211
    print(f"\nf32 simulation, every {stride}th float, max error in ulps (without FMA contraction):")
    def erf(x):
        return erf_f32(x, q, h, big_r)

    def exp(x):
        return exp_f32(x, q)

    for label, fn, reference, lo, hi in [("erf [0, 4.5]", erf, math.erf, 0.0, 4.5),
                                         ("exp [-103.9, 0]", exp, safe_exp, -0.0, -103.9),
                                         ("exp [0, 88.72]", exp, safe_exp, 0.0, 88.72)]:
        error, x = max_ulp_error(fn, reference, lo, hi, stride)
        print(f"  {label:16s} {error:.4f} at x = {x!r}")


if __name__ == "__main__":
    main()
