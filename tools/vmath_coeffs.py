#!/usr/bin/env python3
"""Writes kernels/cpu/vmath_tables.h: the polynomial tables of the CPU math layer.

G(a) = Phi(-a) * exp(a^2 / 2) = erfc(a / sqrt 2) * exp(a^2 / 2) / 2 for a >= 0
(a scaled complementary error function: Phi(-a) = exp(-a^2/2) G(a)) is what
gelu and erf need in the tails without cancellation.  It is smooth, so on each
of 8 intervals [2i, 2i + 2] a degree-12 polynomial in t = a - (2i + 1) is
fitted by least squares at 400 Chebyshev nodes against Python's
double-precision math.erfc and math.exp (the least-squares problem solved
exactly in rationals, then each coefficient rounded to double); the script
prints the largest relative error of each fit on a dense grid (about 1.5e-10
on [0, 2], 1e-14 elsewhere; evaluated in double, that is below 0.003 float
ulps).

The float32 gelu (vec_body.h) evaluates G in float arithmetic from a second
table: on 8 intervals [0,1), [1,2), [2,4), [4,6), ..., [10,12), [12,16) a
degree-9 polynomial in t = a - centre, fitted for relative error by weighted
least squares at Chebyshev nodes (weights 1 / G^2 rounded to double), its
coefficients rounded to float from the highest degree down (each rounding
followed by a refit of the lower ones), the constant and linear terms kept
as pairs of floats (hi + lo), so that their rounding does not add to the
float evaluation's own error.  The script prints
the largest relative error of the rounded coefficients, evaluated in double,
on a dense grid (below 2^-28 on every interval).

    python3 tools/vmath_coeffs.py            # rewrite the header
    python3 tools/vmath_coeffs.py --check    # exit 1 if the header differs

The fits use no BLAS and no vectorised numpy function (see below), so every
machine with the same C library writes the same header; the drift test
//kernels/cpu:vmath_tables_drift_test runs --check (about 20 s).
"""

import math
import os
import struct
import sys
from fractions import Fraction

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "kernels", "cpu", "vmath_tables.h")
INTERVALS, WIDTH, DEGREE = 8, 2.0, 12


def g(a):
    return 0.5 * math.erfc(a / math.sqrt(2.0)) * math.exp(a * a / 2.0)


# The fits are made without numpy's linear algebra or its vectorised cos and
# pow: those run the BLAS kernel or the SIMD routine the CPU selects, and on
# an AVX2 machine they gave tables different in the last bits from an AVX-512
# machine's, so the drift test could not pass everywhere.  Here the nodes and
# the data are Python floats (math.cos, math.erfc, math.exp: the C library's),
# and each least-squares problem is solved exactly in rationals (the normal
# equations with fractions.Fraction), then rounded once: the same tables on
# every machine with the same C library.


def chebyshev_nodes(count):
    """cos(pi (k + 1/2) / count) for k = 0 .. count-1, as Python floats."""
    return [math.cos(math.pi * (k + 0.5) / count) for k in range(count)]


def lstsq_exact(columns, rhs, weights):
    """The exact minimiser c of sum_r weights[r] (sum_j c_j columns[j][r] - rhs[r])^2.

    columns, rhs and weights hold Fractions; returns Fractions."""
    n = len(columns)
    rows = len(rhs)
    wcol = [[weights[r] * col[r] for r in range(rows)] for col in columns]
    a = [[sum(wcol[j][r] * columns[k][r] for r in range(rows)) for k in range(n)] for j in range(n)]
    b = [sum(wcol[j][r] * rhs[r] for r in range(rows)) for j in range(n)]
    for p in range(n):  # Gauss-Jordan; the normal matrix is positive definite
        piv = a[p][p]
        for q in range(n):
            if q != p and a[q][p] != 0:
                f = a[q][p] / piv
                a[q] = [a[q][k] - f * a[p][k] for k in range(n)]
                b[q] -= f * b[p]
    return [b[j] / a[j][j] for j in range(n)]


def powers(values, degree):
    """[[v^0 for v], [v^1 for v], ..., [v^degree for v]] of Fractions."""
    out = [[Fraction(1)] * len(values)]
    for _ in range(degree):
        out.append([p * v for p, v in zip(out[-1], values)])
    return out


def horner(coefs, t):
    """coefs[0] t^n + ... + coefs[n] in float arithmetic."""
    acc = 0.0
    for c in coefs:
        acc = acc * t + c
    return acc


def fit(i):
    """Monomial coefficients (highest first) of G on interval i, and the fit's error."""
    t = chebyshev_nodes(400)
    y = [Fraction(g(2 * i + 1 + v)) for v in t]
    tp = powers([Fraction(v) for v in t], DEGREE)
    c = lstsq_exact(tp, y, [Fraction(1)] * len(t))
    mono = [float(v) for v in reversed(c)]
    err = 0.0
    for k in range(4001):
        v = -1.0 + k / 2000.0
        err = max(err, abs(horner(mono, v) / g(2 * i + 1 + v) - 1.0))
    return mono, err


# The float tables: (low end, high end, centre) of each interval; the centres
# are floats whose difference with any a of the interval is exact (Sterbenz),
# except a < 0.25 in the first, where the kernel carries the rounding error.
F_INTERVALS = [(0, 1, 0.5), (1, 2, 1.5), (2, 4, 3), (4, 6, 5), (6, 8, 7), (8, 10, 9), (10, 12, 11), (12, 16, 14)]
F_DEGREE = 9


def f32(v):
    """v rounded to float32 (v a float or a Fraction, rounded to double first)."""
    return struct.unpack("<f", struct.pack("<f", float(v)))[0]


def fit_float(lo, hi, centre):
    """Float coefficients of G on [lo, hi] in t = a - centre: [c9, ..., c2], (c1 hi, lo), (c0 hi, lo), error."""
    t = [(lo + hi) / 2 + (hi - lo) / 2 * u - centre for u in chebyshev_nodes(400)]
    y = [Fraction(g(centre + v)) for v in t]
    tp = powers([Fraction(v) for v in t], F_DEGREE)
    # Relative error: weights 1 / y^2, rounded to double (dyadic, so that the
    # exact sums stay fractions with power-of-two denominators).
    w = [Fraction(1.0 / (float(v) * float(v))) for v in y]
    fixed = {}
    for k in range(F_DEGREE, 1, -1):
        rest = [y[r] - sum(fixed[j] * tp[j][r] for j in fixed) for r in range(len(t))]
        fixed[k] = Fraction(f32(lstsq_exact(tp[: k + 1], rest, w)[k]))
    rest = [y[r] - sum(fixed[j] * tp[j][r] for j in fixed) for r in range(len(t))]
    c0, c1 = lstsq_exact(tp[:2], rest, w)
    c1h, c0h = f32(c1), f32(c0)
    c1l, c0l = f32(c1 - Fraction(c1h)), f32(c0 - Fraction(c0h))
    high = [float(fixed[k]) for k in range(F_DEGREE, 1, -1)]
    err = 0.0
    for k in range(20001):
        v = lo + (hi - lo) * k / 20000.0 - centre
        got = (c0h + c0l) + (c1h + c1l) * v + horner(high + [0.0, 0.0], v)
        err = max(err, abs(got / g(centre + v) - 1.0))
    return high, (c1h, c1l), (c0h, c0l), err


def render():
    fits = [fit(i) for i in range(INTERVALS)]
    ffits = [fit_float(*iv) for iv in F_INTERVALS]
    lines = [
        "/* Generated by tools/vmath_coeffs.py; do not edit. */",
        "/* vmath_tables.h - polynomial tables of the CPU math layer (vmath.h). */",
        "#ifndef KB_CPU_VMATH_TABLES_H",
        "#define KB_CPU_VMATH_TABLES_H",
        "",
        "/* G(a) = erfc(a / sqrt 2) * exp(a^2 / 2) / 2 on [2i, 2i + 2] (i = 0..7) is",
        " * the polynomial in t = a - (2i + 1) with coefficients",
        " * kb_vm_g_coef[0][i] t^12 + ... + kb_vm_g_coef[12][i] (Horner's rule).",
        " * Largest relative error of each fit: "
        + ", ".join("%.1e" % err for _, err in fits)
        + ". */",
        "#define KB_VM_G_DEGREE %d" % DEGREE,
        "static const double kb_vm_g_center[8] = {%s};" % ", ".join("%.1f" % (2 * i + 1) for i in range(INTERVALS)),
        "static const double kb_vm_g_coef[KB_VM_G_DEGREE + 1][8] = {",
    ]
    for j in range(DEGREE + 1):
        lines.append("    {" + ", ".join(float.hex(fits[i][0][j]) for i in range(INTERVALS)) + "},")
    lines += ["};", ""]

    def fhex(v):
        mant, exp = float.hex(v).split("p")
        mant = mant.rstrip("0").rstrip(".")
        return mant + "p" + exp + "f"

    def row(values):
        # Each row twice: a 16-lane permutation reads the low 4 index bits,
        # an 8-lane one the low 3 (kv_lookup8).
        return "    {" + ", ".join(fhex(v) for v in values + values) + "},"

    lines += [
        "/* The same G in float arithmetic (the float32 gelu): on the intervals",
        " * " + ", ".join("[%g, %g)" % (lo, hi) for lo, hi, _ in F_INTERVALS) + ",",
        " * G(a) = c0 + c1 t + ... + c9 t^9 with t = a - centre.  Rows of",
        " * kb_vm_gf: the centre, c9 down to c2, then c1 and c0 as pairs (hi, lo);",
        " * each row holds the 8 intervals twice (kv_lookup8).  Largest relative",
        " * error of each (exactly evaluated) fit: "
        + ", ".join("2^%.1f" % math.log2(f[3]) for f in ffits)
        + ". */",
        "#define KB_VM_GF_DEGREE %d" % F_DEGREE,
        "#define KB_VM_GF_CENTRE 0",
        "#define KB_VM_GF_C1_HI %d" % F_DEGREE,
        "#define KB_VM_GF_C1_LO %d" % (F_DEGREE + 1),
        "#define KB_VM_GF_C0_HI %d" % (F_DEGREE + 2),
        "#define KB_VM_GF_C0_LO %d" % (F_DEGREE + 3),
        "static const float kb_vm_gf[%d][16] = {" % (F_DEGREE + 4),
        row([float(c) for _, _, c in F_INTERVALS]),
    ]
    for k in range(F_DEGREE - 1):
        lines.append(row([f[0][k] for f in ffits]))
    lines += [row([f[1][0] for f in ffits]), row([f[1][1] for f in ffits])]
    lines += [row([f[2][0] for f in ffits]), row([f[2][1] for f in ffits])]
    lines += ["};", "", "#endif /* KB_CPU_VMATH_TABLES_H */", ""]
    return "\n".join(lines), fits, ffits


def main(argv):
    text, fits, ffits = render()
    for i, (_, err) in enumerate(fits):
        print("interval [%g, %g]: max relative error %.2e" % (2 * i, 2 * i + 2, err), file=sys.stderr)
    for (lo, hi, _), (_, _, _, err) in zip(F_INTERVALS, ffits):
        print("float interval [%g, %g): max relative error 2^%.1f" % (lo, hi, math.log2(err)), file=sys.stderr)
    if argv[1:] == ["--check"]:
        with open(OUT) as f:
            same = f.read() == text
        if same:
            print("vmath_coeffs: up to date", file=sys.stderr)
        else:
            print("vmath_coeffs: kernels/cpu/vmath_tables.h differs from what this script writes; run"
                  " `python3 tools/vmath_coeffs.py`, then prove erf and gelu again"
                  " (tools/vmath_exhaustive.sh erf gelu) and record it in docs/kernels.md", file=sys.stderr)
        return 0 if same else 1
    with open(OUT, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
