#!/usr/bin/env python3
"""Writes kernels/cpu/quant/quant_goldens.h, the golden data of quant_test.c.

The expected bytes come from the `gguf` package's numpy implementation of
GGML's formats (gguf.quants.quantize / dequantize), which is independent of
the C code under test.  Usage:

    pip install gguf numpy
    python3 kernels/cpu/quant/make_quant_goldens.py          # rewrite the header
    python3 kernels/cpu/quant/make_quant_goldens.py --check  # fail if it is stale

The inputs are fixed (numpy's legacy RandomState, whose streams never change,
plus hand-built blocks), so a rerun gives the same file unless gguf changed.

Each input block is quantized to every type that accepts it (a block whose
scale overflows binary16 for one type is kept for the other and marked), and
the quantized bytes are dequantized again; separate raw byte blocks with
chosen scales test dequantization on its own.  Two places where numpy's result
is not ggml's C result are marked rather than hidden:

* Q4_0 of an all-zero block whose first element is -0.0: numpy takes that
  element as the block's max and stores d = +0.0; ggml's C (and the code under
  test) starts its search from +0.0 and stores d = -0.0.  Flagged per block;
  the test expects C's bytes there.
* Blocks whose 1/d overflows to infinity (max |x| below about 2^-121 for
  Q8_0, 2^-125 for Q4_0): both implementations cast inf / NaN to an integer,
  which is undefined in C and platform-specific in numpy.  On x86-64 both give
  0; this script refuses to write goldens where numpy gives anything else.
"""

import argparse
import os
import sys

import numpy as np

try:
    import gguf
    from gguf.quants import dequantize, quantize
except ImportError:  # pragma: no cover - a message beats a traceback
    sys.exit("make_quant_goldens: needs the gguf package (pip install gguf numpy)")

QK = 32
Q8 = gguf.GGMLQuantizationType.Q8_0
Q4 = gguf.GGMLQuantizationType.Q4_0
TYPE_BIT = {Q8: 1, Q4: 2}  # kb_qg_types[] bits
BLOCK_BYTES = {Q8: 34, Q4: 18}
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "quant_goldens.h")

f32 = np.float32


def nextafter(x, toward):
    return np.nextafter(f32(x), f32(toward))


def fill(rs, values, bound):
    """A block: `values` first, then random normals scaled below `bound` so the
    designed max stays the max."""
    v = [f32(t) for t in values]
    rest = QK - len(v)
    assert rest >= 0, len(v)
    if rest:
        r = rs.standard_normal(rest)
        r = r / max(1.0, np.abs(r).max()) * 0.9 * bound
        v += [f32(t) for t in r]
    return np.array(v, dtype=f32)


def roundf(v):
    """C's roundf (halves away from zero) of a float32, exactly: in float64
    |v| + 0.5 is exact, so floor() sees the true value."""
    v = np.float64(f32(v))
    return f32(np.copysign(np.floor(abs(v) + 0.5), v))


def neighbours(v, count=3):
    """v and the `count` float32 values on each side of it."""
    out, lo, hi = [f32(v)], f32(v), f32(v)
    for _ in range(count):
        lo, hi = nextafter(lo, -np.inf), nextafter(hi, np.inf)
        out += [lo, hi]
    return out


def sensitive_q8(rs, what):
    """A Q8_0 block (max first) whose codes differ if d is computed as
    amax * (1/127) (what == "d") or the codes as roundf(x / d) (what == "id")."""
    while True:
        amax = f32(rs.uniform(1, 2) * 2.0 ** rs.randint(-8, 9))
        d = amax / f32(127)
        idv = f32(1) / d
        if what == "d":
            d_alt = amax * (f32(1) / f32(127))
            if d_alt == d:
                continue
            id_alt = f32(1) / d_alt
            alt = lambda x: roundf(x * id_alt)  # noqa: E731
        else:
            alt = lambda x: roundf(x / d)  # noqa: E731
        picked = []
        for k in rs.permutation(np.arange(-126, 126)):
            for x in neighbours(f32((k + 0.5) * d)):
                if abs(x) < amax and roundf(x * idv) != alt(x):
                    picked.append(x)
                    break
            if len(picked) == QK - 1:
                return [amax] + picked


def sensitive_q4(rs):
    """A Q4_0 block (max first) whose codes differ if computed from x / d
    instead of x * id."""
    code = lambda t: min(15, int(np.trunc(f32(t) + f32(8.5))))  # noqa: E731
    while True:
        mx = f32(-8 * rs.uniform(1, 2) * 2.0 ** rs.randint(-8, 9))
        d = mx / f32(-8)
        idv = f32(1) / d
        picked = []
        for k in range(-8, 8):  # at most one element per boundary k + 0.5
            for x in neighbours(f32((k + 0.5) * d), 6):
                if abs(x) < abs(mx) and code(x * idv) != code(x / d):
                    picked.append(x)
                    break
        if len(picked) >= 8:  # enough to tell; the rest of the block is plain
            return fill(rs, [mx] + picked, abs(float(mx)))


def input_blocks():
    """(label, 32 float32) pairs.  Order matters only for readability."""
    rs = np.random.RandomState(20240611)
    out = []

    def add(label, arr):
        arr = np.asarray(arr, dtype=f32)
        assert arr.shape == (QK,), (label, arr.shape)
        out.append((label, arr))

    # Random rows at several magnitudes.
    for scale, count in ((1e-3, 1), (1.0, 2), (1e3, 1), (3e4, 1)):
        for i in range(count):
            add(f"normal * {scale:g} #{i}", (rs.standard_normal(QK) * scale).astype(f32))

    # Q8_0 ties: max |x| = 127 * s with s a power of two gives d = s and
    # id = 1/s exactly, so x * id is exactly k + 0.5: roundf and rintf differ.
    ks = [k + 0.5 for k in range(-15, 16)]  # 31 halves, -14.5 .. 15.5 (and +-0.5)
    add("q8 ties, d = 1", [127.0] + ks)
    add("q8 ties, d = 2^-7", [-127.0 / 128] + [k / 128 for k in ks])
    add("q8 ties, d = 2^10", [127.0 * 1024] + [k * 1024 for k in ks[::-1]])
    # One ulp either side of the halves: roundf and rintf agree, truncation does not.
    near = []
    for k in range(-8, 8):
        near += [nextafter(k + 0.5, 0), nextafter(k + 0.5, 100) if k >= 0 else nextafter(k + 0.5, -100)]
    add("q8 near ties, d = 1", [-127.0] + near[:31])
    # d = 3 is exact but id = 1/3 is not: whether x * id lands on, above or
    # below the half depends on id's rounding, as in the reference.
    add("q8 halves, d = 3 (inexact id)", [381.0] + [3 * k for k in ks])

    # Q4_0 ties: max = -8 s gives d = s, id = 1/s exactly; x * id + 8.5f is
    # then an integer for halves, and the float addition rounds values just
    # below a half up (0.49999997f + 8.5f == 9.0f).
    q4 = [k + 0.5 for k in range(-8, 8)]  # -7.5 .. 7.5 (7.5 -> 16, clamped to 15)
    q4_near = [nextafter(0.5, 0), nextafter(-0.5, 0), nextafter(-0.5, -1), nextafter(1.5, 0), nextafter(-1.5, 0),
               nextafter(6.5, 0), nextafter(-7.5, 0), nextafter(8.0, 0), 7.75, -7.75]
    add("q4 ties, max = -8 (d = 1)", [-8.0] + q4 + q4_near + [0.0, -0.0, 3.25, -3.25, 2.0])
    add("q4 ties, max = +8 (d = -1)", [8.0] + [-t for t in q4] + [-t for t in q4_near] + [1.0, -1.0, 0.25, -0.25, 4.0])
    add("q4 ties, max = -8 * 2^12", [t * 4096 for t in [-8.0] + q4 + q4_near + [5.5, -5.5, 0.5, -0.5, 6.0]])

    # Blocks found by search whose bytes depend on computing exactly as the
    # reference does: d = amax / 127 (not amax * (1/127)), and the codes from
    # x * id (not x / d).  Each element sits next to a rounding boundary that
    # the two ways of computing put on different sides.
    add("q8 sensitive to amax / 127", sensitive_q8(rs, "d"))
    add("q8 sensitive to x * id", sensitive_q8(rs, "id"))
    add("q4 sensitive to x * id", sensitive_q4(rs))

    # Zeros and signed zeros.
    z = np.zeros(QK, dtype=f32)
    add("all +0.0", z)
    nz = z.copy()
    nz[0] = -0.0
    nz[5] = -0.0
    add("zeros, first element -0.0", nz)
    add("all -0.0", -z)
    nz2 = z.copy()
    nz2[1::2] = -0.0
    add("zeros, odd elements -0.0", nz2)
    mixed = fill(rs, [-0.0, 1.0, -0.0, -2.5, 0.0, -0.0], 2.5)
    mixed[20] = -0.0
    add("-0.0 among non-zeros", mixed)

    # Sign of the max-magnitude element (Q4_0's d takes it).
    v = fill(rs, [], 1.0)
    v[7] = -4.0
    add("max magnitude negative", v)
    v = fill(rs, [], 1.0)
    v[25] = 4.0
    add("max magnitude positive", v)
    v = fill(rs, [], 1.0)
    v[3], v[20] = 3.0, -3.0
    add("repeated max, +3 first then -3", v)
    v = fill(rs, [], 1.0)
    v[3], v[20] = -3.0, 3.0
    add("repeated max, -3 first then +3", v)
    v = fill(rs, [], 1.0)
    v[16], v[31], v[0] = -3.0, 3.0, 2.9990234375
    add("repeated max in the high half", v)

    # binary16 rounding of the scale: ties to even, and the subnormal range.
    add("q8 d = 1 + 2^-11 (f16 tie, to even 1.0)", fill(rs, [127.0 * (1 + 2.0**-11)], 127.0))
    add("q8 d = 1 + 3 * 2^-11 (f16 tie, to even up)", fill(rs, [-127.0 * (1 + 3 * 2.0**-11)], 127.0))
    add("q4 d = 1.5 * 2^-24 (f16 subnormal tie)", fill(rs, [-12 * 2.0**-24], 12 * 2.0**-24))
    add("q8 d = 1.5 * 2^-24 (f16 subnormal tie)", fill(rs, [190.5 * 2.0**-24], 190.5 * 2.0**-24))
    for scale in (1e-5, 1e-7):
        add(f"f16-subnormal scale: normal * {scale:g}", (rs.standard_normal(QK) * scale).astype(f32))

    # float32 subnormal range: d subnormal with 1/d finite, then 1/d infinite
    # (see the module docstring), then d rounding to zero.
    add("q8 d float-subnormal, 1/d finite (max 1e-36)", fill(rs, [1e-36, -1e-36], 1e-36))
    add("q4 d float-subnormal, 1/d finite (max 3e-38)", fill(rs, [-3e-38, 3e-38, 0.0], 3e-38))
    add("1/d infinite (max 1e-40)", fill(rs, [1e-40, -1e-40, 0.0, -0.0], 1e-40))
    add("d rounds to 0 (float subnormals 2^-149)", [2.0**-149, -(2.0**-149), 0.0, -0.0] * 8)

    # Largest scales: d = 65519 rounds down to 65504 (f16 max); d = 65520
    # rounds to infinity, so such a block is valid for one type only.
    add("q8 d = 65519 (f16 65504)", fill(rs, [65519.0 * 127], 65519.0 * 127))
    add("q4 d = 65519 (f16 65504)", fill(rs, [-65519.0 * 8], 65519.0 * 8))
    add("normal * 1e5", (rs.standard_normal(QK) * 1e5).astype(f32))
    return out


def raw_blocks(qtype, rs):
    """Dequantization-only blocks: random codes under chosen finite scales
    (binary16 subnormals, +-0, the largest finite)."""
    scales = [0x0001, 0x03FF, 0x3555, 0x7BFF, 0x8000, 0xC8A3, 0xFBFF]
    rows = []
    for h in scales:
        qs = rs.randint(0, 256, size=BLOCK_BYTES[qtype] - 2).astype(np.uint8)
        rows.append(np.concatenate([np.array([h & 0xFF, h >> 8], dtype=np.uint8), qs]))
    return rows


def f16_bits(x):
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


def scale_of(qtype, block):
    """(d as float32, id as float32), computed as both references do."""
    with np.errstate(all="ignore"):
        if qtype == Q8:
            d = f32(np.abs(block).max()) / f32(127)
        else:
            d = f32(block[int(np.abs(block).argmax())]) / f32(-8)
        idv = f32(0) if d == 0 else f32(1) / d
    return f32(d), f32(idv)


def quantize_block(qtype, block):
    with np.errstate(all="ignore"):
        q = quantize(block.reshape(1, QK), qtype).reshape(-1)
    assert q.dtype == np.uint8 and q.size == BLOCK_BYTES[qtype]
    d, idv = scale_of(qtype, block)
    if np.isinf(idv) and np.any(q[2:] != 0):
        sys.exit("make_quant_goldens: numpy cast inf/NaN to a non-zero integer on this platform; "
                 "the goldens assume the x86-64 result (0), see the docstring")
    return q


def dequantize_block(qtype, q):
    with np.errstate(all="ignore"):
        y = dequantize(q.reshape(1, -1), qtype).reshape(-1).astype(f32)
    assert y.size == QK
    return y


def c_array(ctype, name, values, per_line, fmt, comment=None):
    lines = []
    if comment:
        lines.append(f"/* {comment} */")
    lines.append(f"static const {ctype} {name}[{len(values)}] = {{")
    for i in range(0, len(values), per_line):
        lines.append("  " + ",".join(fmt(v) for v in values[i:i + per_line]) + ",")
    lines.append("};")
    return "\n".join(lines)


def u32(a):
    return [int(t) for t in np.asarray(a, dtype=f32).view(np.uint32).reshape(-1)]


def generate():
    blocks = input_blocks()
    n = len(blocks)
    inputs = np.stack([b for _, b in blocks])
    types, q8_bytes, q4_bytes, q8_deq, q4_deq, q4_numpy_zero = [], [], [], [], [], []
    for label, b in blocks:
        mask = 0
        for qtype, out_bytes, out_deq in ((Q8, q8_bytes, q8_deq), (Q4, q4_bytes, q4_deq)):
            d, _ = scale_of(qtype, b)
            with np.errstate(all="ignore"):
                valid = bool(np.isfinite(np.float16(d)))
            if valid:
                q = quantize_block(qtype, b)
                assert (int(q[0]) | int(q[1]) << 8) == f16_bits(d), label
                mask |= TYPE_BIT[qtype]
                out_bytes.append(q)
                out_deq.append(dequantize_block(qtype, q))
            else:  # the C code rejects it (kb__quant_check_row); the test checks that
                out_bytes.append(np.zeros(BLOCK_BYTES[qtype], dtype=np.uint8))
                out_deq.append(np.zeros(QK, dtype=f32))
        types.append(mask)
        all_zero = not np.any(b != 0)
        q4_numpy_zero.append(1 if all_zero and np.signbit(b[0]) else 0)
        assert mask != 0, label

    rs = np.random.RandomState(7)
    raw8, raw4 = raw_blocks(Q8, rs), raw_blocks(Q4, rs)
    raw8_deq = [dequantize_block(Q8, r) for r in raw8]
    raw4_deq = [dequantize_block(Q4, r) for r in raw4]

    # The tie blocks must be able to tell roundf from rintf (the test checks
    # this again in C); fail here rather than write goldens that cannot.
    ties = 0
    for (label, b), q in zip(blocks, q8_bytes):
        if "q8 ties" in label:
            _, idv = scale_of(Q8, b)
            p = b * idv
            ties += int(np.count_nonzero((np.abs(p) % 1 == 0.5) & (np.rint(p) != np.trunc(p + np.copysign(0.5, p)))))
    assert ties >= 30, ties

    hx8 = lambda v: f"0x{v:02x}"  # noqa: E731
    hx32 = lambda v: f"0x{v:08x}"  # noqa: E731
    parts = [
        "/* generated by kernels/cpu/quant/make_quant_goldens.py; do not edit.",
        f" * Reference: gguf {getattr(gguf, '__version__', None) or _pkg_version('gguf')} (gguf.quants, numpy "
        f"{np.__version__}).  See quant_test.c and README.md. */",
        "#ifndef KB_CPU_QUANT_GOLDENS_H",
        "#define KB_CPU_QUANT_GOLDENS_H",
        "",
        "#include <stdint.h>",
        "",
        f"#define KB_QG_NBLOCKS {n}",
        f"#define KB_QG_NRAW {len(raw8)}",
        "",
        "/* What each input block is. */",
        "static const char *const kb_qg_labels[KB_QG_NBLOCKS] = {",
    ]
    parts += [f'  "{label}",' for label, _ in blocks]
    parts += ["};", ""]
    parts.append(c_array("uint32_t", "kb_qg_input", u32(inputs), 8, hx32,
                         "Input floats as bit patterns, KB_QG_NBLOCKS blocks of 32."))
    parts.append(c_array("uint8_t", "kb_qg_types", types, 16, str,
                         "Bit 1: Q8_0 accepts the block; bit 2: Q4_0 does (else its scale overflows binary16\n"
                         " * and the block's bytes and outputs below are zero, unused)."))
    parts.append(c_array("uint8_t", "kb_qg_q4_numpy_zero_sign", q4_numpy_zero, 16, str,
                         "1: all-zero block whose first element is -0.0; numpy's Q4_0 stores d = +0.0 there\n"
                         " * (below), ggml's C d = -0.0 (the test expects C's)."))
    parts.append(c_array("uint8_t", "kb_qg_q8_bytes", [int(t) for q in q8_bytes for t in q], 17, hx8,
                         "gguf.quants.quantize(input, Q8_0), 34 bytes per block."))
    parts.append(c_array("uint32_t", "kb_qg_q8_dequant", u32(np.stack(q8_deq)), 8, hx32,
                         "gguf.quants.dequantize(those bytes, Q8_0), bit patterns."))
    parts.append(c_array("uint8_t", "kb_qg_q4_bytes", [int(t) for q in q4_bytes for t in q], 18, hx8,
                         "gguf.quants.quantize(input, Q4_0), 18 bytes per block."))
    parts.append(c_array("uint32_t", "kb_qg_q4_dequant", u32(np.stack(q4_deq)), 8, hx32,
                         "gguf.quants.dequantize(those bytes, Q4_0), bit patterns."))
    parts.append(c_array("uint8_t", "kb_qg_q8_raw", [int(t) for r in raw8 for t in r], 17, hx8,
                         "Q8_0 blocks of random codes under chosen binary16 scales (dequantization only)."))
    parts.append(c_array("uint32_t", "kb_qg_q8_raw_dequant", u32(np.stack(raw8_deq)), 8, hx32,
                         "gguf.quants.dequantize(kb_qg_q8_raw, Q8_0)."))
    parts.append(c_array("uint8_t", "kb_qg_q4_raw", [int(t) for r in raw4 for t in r], 18, hx8,
                         "Q4_0 blocks of random codes under chosen binary16 scales (dequantization only)."))
    parts.append(c_array("uint32_t", "kb_qg_q4_raw_dequant", u32(np.stack(raw4_deq)), 8, hx32,
                         "gguf.quants.dequantize(kb_qg_q4_raw, Q4_0)."))
    parts += ["", "#endif /* KB_CPU_QUANT_GOLDENS_H */", ""]
    return "\n".join(parts)


def _pkg_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # pragma: no cover
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if quant_goldens.h differs from what would be written")
    ap.add_argument("--out", default=OUT, help="output path (default: beside this script)")
    args = ap.parse_args()
    text = generate()
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        if not same:
            print(f"{args.out} is stale: rerun {os.path.relpath(__file__)}", file=sys.stderr)
            return 1
        return 0
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {args.out} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
