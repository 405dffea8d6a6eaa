#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz targets (tests/fuzz/corpus/*/seed-*).

Seeds are the shared bad-input corpus (tests/conformance/corpus/bad_input.json)
encoded in the fuzz input format (docs/reliability.md, decoded by fuzz.c):
every case of a float32 kernel becomes a seed of that kernel's target, and of
its bfloat16 and float16 variants in the "half" target; a few hand-written
cases add paths of kb_linear, kb_attention_ex and kb_gemm_batched (the
decode split, many small batch items), cover the weight formats of the
"quant" target (every entry point with every kb_dtype, and the ways a
call of it goes wrong) and drive the contexts-and-buffers target; small GGUF
files (gguf_seeds) start the GGUF reader's target.

    python3 tests/fuzz/make_seeds.py            # rewrite every seed-* file
    python3 tests/fuzz/make_seeds.py --out DIR  # write DIR/corpus/*/seed-* instead

The entry points, their families and their parameter lists are read from
specs.c, so the seeds follow the spec table.  coverage_test.py checks that
the committed seeds are what this script writes.
"""
import argparse
import json
import math
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# ---- the spec table ----

def parse_specs(path=os.path.join(HERE, "specs.c")):
    """[(family, fn, dtype, [(kind, name, type, role, nullable, aliases)])] in table order."""
    with open(path) as f:
        text = f.read()
    macros = dict(re.findall(r'#define (\w+) "([^"]*)"', text))
    table = text[text.index("const fz_spec fz_specs[] = {"):]
    table = table[:table.index("\n};")]

    def sig_of(chunk):
        # String literals and macro names up to the shape function, joined.
        parts = re.findall(r'"([^"]*)"|\b([A-Z_]+_SIG)\b', chunk)
        return "".join(lit if lit else macros[mac] for lit, mac in parts)

    out = []
    pattern = re.compile(r'(SPEC3\(|SPEC16\(|\{)"(\w+)", "(\w+)",(.*?)(?:FZ_F32, )?\b(shape_\w+)', re.S)
    for m in pattern.finditer(table):
        macro, family, fn, chunk = m.group(1), m.group(2), m.group(3), m.group(4)
        sig = sig_of(chunk)
        # SPEC16: only the 16-bit variants, in the family it names; SPEC3:
        # the float32 spec in its family and the 16-bit ones in "half".
        if macro == "SPEC16(":
            variants = [(family, fn + "_bf16", "bf16"), (family, fn + "_f16", "f16")]
        else:
            variants = [(family, fn, "f32")]
            if macro != "{":
                variants += [("half", fn + "_bf16", "bf16"), ("half", fn + "_f16", "f16")]
        for fam, name, dtype in variants:
            out.append((fam, name, dtype, parse_sig(sig, dtype)))
    return out


def parse_sig(sig, dtype):
    params = []
    for tok in sig.split():
        f = tok.split(":")
        kind, name = f[0], f[1]
        typ, role, nullable, aliases = None, None, False, []
        if kind == "s":
            typ = f[2]
        elif kind == "t":
            typ = dtype if f[2] == "$" else f[2]
            role = f[3]
            for opt in f[4:]:
                if opt == "null":
                    nullable = True
                elif opt.startswith("alias="):
                    aliases = opt[6:].split(",")
        params.append((kind, name, typ, role, nullable, aliases))
    return params


# ---- encoding (mirror of fuzz.c) ----

def enc_dim(v):
    v = int(v)
    if 0 <= v < 20:
        return bytes([v])
    return b"\xf8" + struct.pack("<q", v)


def f32_value(v):
    if isinstance(v, str):
        return {"nan": float("nan"), "inf": math.inf, "-inf": -math.inf}[v]
    return float(v)


def f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", f32_value(v)))[0]


def to_bf16(v):
    x = f32_bits(v)
    if (x & 0x7FFFFFFF) > 0x7F800000:
        return (x >> 16) | 0x40
    return x >> 16


def to_f16(v):
    v = f32_value(v)
    try:
        return struct.unpack("<H", struct.pack("<e", v))[0]
    except OverflowError:
        return 0xFC00 if v < 0 else 0x7C00


def enc_scalar(typ, v):
    if typ == "f32":
        return b"\xe0" + struct.pack("<I", f32_bits(v))
    if typ in ("i32", "dtype"):
        return b"\xe0" + struct.pack("<i", int(v))
    if typ == "i64":
        return b"\xe0" + struct.pack("<q", int(v))
    return b"\xe0" + struct.pack("<Q", int(v))  # u64 (seed: a decimal string in JSON)


def enc_values(typ, values):
    if typ == "f32":
        return b"".join(struct.pack("<I", f32_bits(v)) for v in values)
    if typ == "i32":
        return b"".join(struct.pack("<i", int(v)) for v in values)
    if typ == "u8":
        return bytes(int(v) & 0xFF for v in values)
    # A float32 kernel's case gives values (converted); a 16-bit kernel's
    # case (embedding_bf16, ...) gives the bit patterns, JSON integers.
    conv = to_bf16 if typ == "bf16" else to_f16
    return b"".join(struct.pack("<H", v if isinstance(v, int) else conv(v)) for v in values)


# Context byte: the one-thread context, and the call again on three threads.
CTX_ONE_AND_RERUN = 4
FILL_RAW, FILL_CONST = 3, 2
PALETTE_ONE = 2  # fpal(2) == 1.0f


def encode(index, params, case):
    """One call: case has dims, flags, scalars, tensors, null, overlap."""
    out = bytearray([index, CTX_ONE_AND_RERUN])
    tensors = [p for p in params if p[0] == "t"]
    tnames = [p[1] for p in tensors]
    placed_out = set()
    for kind, name, typ, role, nullable, aliases in params:
        if kind == "d":
            out += enc_dim(case["dims"][name])
        elif kind == "f":
            out.append(1 if case["flags"].get(name) else 0)
        elif kind == "s":
            out += enc_scalar(typ, case["scalars"][name])
        else:
            if name in case.get("null", []):
                out.append(12)
            elif name in case.get("dummy", []):
                out.append(1)  # odd: a dummy buffer when the tensor is too large and nothing is written
            elif name in case.get("misalign", {}):
                out.append(case["misalign"][name] << 4)  # own buffer, 1 to 3 bytes past alignment (u8)
            elif name in case.get("overlap", {}):
                ov = case["overlap"][name]
                i, j = tnames.index(name), tnames.index(ov["with"])
                out.append(13)
                out.append(j if j < i else j - 1)
                out += enc_dim(ov["offset"])
                if role == "out":
                    placed_out.add(name)
            else:
                out.append(0)
    for kind, name, typ, role, nullable, aliases in tensors:
        if name in case.get("null", []) or name in placed_out:
            continue
        t = case["tensors"].get(name, {})
        if "values" in t:
            out += bytes([FILL_RAW, 0, 0]) + enc_values(typ, t["values"])
        else:
            out += bytes([FILL_CONST, 0, 0 if typ == "i32" else PALETTE_ONE])
    return bytes(out)


# ---- cases ----

# More cases for the newer entry points (seeds named seed-extra_*), in the
# bad-input corpus's format (dims, flags, scalars, tensors, null, overlap).
def extra_cases():
    cases = []

    def case(kernel, name, dims, flags=None, scalars=None, tensors=None, null=(), overlap=None, dummy=()):
        cases.append({"kernel": kernel, "name": name, "dims": dims, "flags": flags or {}, "scalars": scalars or {},
                      "tensors": tensors or {}, "null": list(null), "overlap": overlap or {}, "dummy": list(dummy)})

    lin = {"rows": 3, "in_features": 4, "out_features": 5}
    case("linear", "linear_base_ok", lin, scalars={"act": 2})
    case("linear", "linear_no_bias_ok", lin, scalars={"act": 4}, null=["bias"])
    case("linear", "linear_relu_k0_ok", {"rows": 2, "in_features": 0, "out_features": 3}, scalars={"act": 1})
    case("linear", "linear_bad_act", lin, scalars={"act": 5})
    case("linear", "linear_negative_rows", dict(lin, rows=-1), scalars={"act": 0})
    case("linear", "linear_huge", dict(lin, rows=1 << 40, out_features=1 << 40), scalars={"act": 0})
    case("linear", "linear_y_overlaps_x", lin, scalars={"act": 0}, overlap={"y": {"with": "x", "offset": 2}})
    case("linear", "linear_weight_null", lin, scalars={"act": 3}, null=["weight"])
    case("linear", "linear_gemv_ok", {"rows": 1, "in_features": 37, "out_features": 70}, scalars={"act": 3})
    # Nothing to compute, but a bias of 2^62 floats: its byte size overflows,
    # so OUT_OF_MEMORY (kb_linear once returned OK here, with a signed
    # overflow; fixed).
    case("linear", "linear_bias_bytes_overflow", {"rows": 0, "in_features": 0, "out_features": 1 << 62},
         scalars={"act": 0}, dummy=["bias"])

    ex = {"batch": 2, "heads": 4, "kv_heads": 2, "seq_q": 3, "seq_kv": 5, "head_dim": 8,
          "mask_batch": 1, "mask_heads": 4, "mask_q": 3}
    exf = {"seq_major": False, "causal": False, "causal_bottom_right": False}
    case("attention_ex", "attention_ex_base_ok", ex, exf, {"scale": 0.0}, null=["kv_lengths", "mask"])
    case("attention_ex", "attention_ex_everything_ok", ex, dict(exf, seq_major=True, causal=True,
                                                                 causal_bottom_right=True),
         {"scale": 0.25}, {"kv_lengths": {"len": 2, "values": [5, 2]}})
    case("attention_ex", "attention_ex_length_too_big", ex, exf, {"scale": 0.0},
         {"kv_lengths": {"len": 2, "values": [6, 1]}}, null=["mask"])
    case("attention_ex", "attention_ex_zero_lengths_ok", ex, dict(exf, causal=True), {"scale": 0.0},
         {"kv_lengths": {"len": 2, "values": [0, 0]}}, null=["mask"])
    case("attention_ex", "attention_ex_mask_heads_bad", dict(ex, mask_heads=3), exf, {"scale": 0.0},
         null=["kv_lengths"])
    case("attention_ex", "attention_ex_bottom_right_without_causal", ex,
         dict(exf, causal_bottom_right=True), {"scale": 0.0}, null=["kv_lengths", "mask"])
    case("attention_ex", "attention_ex_out_overlaps_mask", ex, exf, {"scale": 0.0},
         null=["kv_lengths"], overlap={"out": {"with": "mask", "offset": 1}})
    case("attention_ex", "attention_ex_nan_scale", ex, exf, {"scale": "nan"}, null=["kv_lengths", "mask"])
    case("attention_ex", "attention_ex_decode_ok", dict(ex, seq_q=1, seq_kv=600, mask_q=1, head_dim=4), exf,
         {"scale": 0.0}, null=["kv_lengths", "mask"])

    gb = {"batch": 3, "m": 2, "n": 3, "k": 4, "lda": 4, "stride_a": 8, "ldb": 3, "stride_b": 0, "ldc": 5,
          "stride_c": 12}
    gf = {"trans_a": False, "trans_b": False}
    gs = {"alpha": 1.0, "beta": 0.5}
    case("gemm_batched", "gemm_batched_base_ok", gb, gf, gs)
    case("gemm_batched", "gemm_batched_transposed_ok", dict(gb, lda=2, stride_a=9, ldb=4, stride_b=12),
         {"trans_a": True, "trans_b": True}, gs)
    case("gemm_batched", "gemm_batched_c_items_overlap", dict(gb, stride_c=4), gf, gs)
    case("gemm_batched", "gemm_batched_negative_stride", dict(gb, stride_b=-1), gf, gs)
    case("gemm_batched", "gemm_batched_huge_stride", dict(gb, stride_a=1 << 62), gf, gs)
    case("gemm_batched", "gemm_batched_c_overlaps_a", gb, gf, gs, overlap={"c": {"with": "a", "offset": 3}})
    case("gemm_batched", "gemm_batched_k0_null_ab_ok", dict(gb, k=0), gf, gs, null=["a", "b"])
    case("gemm_batched", "gemm_batched_many_small_ok", dict(gb, batch=40, stride_a=8, stride_c=10, ldc=5), gf,
         {"alpha": -2.0, "beta": 0.0})
    return cases


# ---- weights in storage formats (the "quant" target) ----

DTYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 8, "bf16": 30}
# Bytes per unit and elements per unit (kernelbridge.h, kb_dtype).
LAYOUT = {0: (4, 1), 1: (2, 1), 30: (2, 1), 8: (34, 32), 2: (18, 32)}


def dtype_bytes(dtype, rows, cols):
    unit, per = LAYOUT[dtype]
    return rows * (cols // per) * unit


def sample_values(n, seed):
    """n floats k / 8 with |k| <= 14: exact in every float format."""
    return [((i * 37 + seed * 11) % 29 - 14) / 8 for i in range(n)]


def stored(dtype, rows, cols, seed=0):
    """The bytes of a [rows, cols] tensor of dtype: sample values for the
    float formats; for the block formats blocks with scales 0.25, 0.5, 0.75
    and codes running through the whole range (Q8_0's -128 included)."""
    out = bytearray()
    if dtype == 0:
        for v in sample_values(rows * cols, seed):
            out += struct.pack("<f", v)
    elif dtype == 1:
        for v in sample_values(rows * cols, seed):
            out += struct.pack("<e", v)
    elif dtype == 30:
        for v in sample_values(rows * cols, seed):
            out += struct.pack("<H", to_bf16(v))
    else:
        for b in range(rows * cols // 32):
            out += struct.pack("<e", 0.25 * (1 + (b + seed) % 3))
            if dtype == 8:
                out += bytes(((i * 29 + b * 7 + seed) % 256) for i in range(32))
            else:
                out += bytes(((i * 5 + b + seed) % 16) | (((i * 11 + b) % 16) << 4) for i in range(16))
    return list(out)


def quant_cases():
    cases = []

    def case(kernel, name, dims, scalars, tensors=None, null=(), misalign=None, overlap=None):
        cases.append({"kernel": kernel, "name": name, "dims": dims, "flags": {}, "scalars": scalars,
                      "tensors": {k: {"values": v} for k, v in (tensors or {}).items()}, "null": list(null),
                      "misalign": misalign or {}, "overlap": overlap or {}})

    def quantize(name, dtype, rows, cols, x, y_bytes=None, **kw):
        y_bytes = dtype_bytes(dtype, rows, cols) if y_bytes is None else y_bytes
        case("quantize", name, {"rows": rows, "cols": cols, "y_bytes": y_bytes}, {"type": dtype}, {"x": x}, **kw)

    def dequantize(name, dtype, rows, cols, data, **kw):
        case("dequantize", name, {"rows": rows, "cols": cols, "x_bytes": len(data)}, {"type": dtype}, {"x": data},
             **kw)

    def linear_w(name, dtype, rows, inf, outf, weight, act=0, **kw):
        case("linear_w", name, {"rows": rows, "in_features": inf, "out_features": outf, "weight_bytes": len(weight)},
             {"weight_type": dtype, "act": act},
             {"x": sample_values(rows * inf, 3), "weight": weight, "bias": sample_values(outf, 4)}, **kw)

    def embedding_w(name, dtype, ids, vocab, dim, table, **kw):
        case("embedding_w", name, {"n_ids": len(ids), "vocab": vocab, "dim": dim, "table_bytes": len(table)},
             {"table_type": dtype}, {"ids": ids, "table": table}, **kw)

    # Every entry point with every type; the bytes of a weight also at an
    # address that is not a multiple of 2 or 4, and y of kb_quantize too:
    # valid for the block formats (any address), refused for F32, F16 and
    # BF16 (aligned as their elements).
    for label, t in sorted(DTYPES.items()):
        cols = 64 if t in (2, 8) else 48
        odd = {0: 2, 1: 1, 30: 3, 8: 1, 2: 3}[t]
        mis = "misaligned_ok" if t in (2, 8) else "misaligned_refused"
        quantize("quantize_%s_ok" % label, t, 2, cols, sample_values(2 * cols, 1))
        quantize("quantize_%s_y_%s" % (label, mis), t, 2, cols, sample_values(2 * cols, 2), misalign={"y": odd})
        dequantize("dequantize_%s_ok" % label, t, 2, cols, stored(t, 2, cols))
        dequantize("dequantize_%s_%s" % (label, mis), t, 3, cols, stored(t, 3, cols, 1), misalign={"x": odd})
        linear_w("linear_w_%s_ok" % label, t, 3, cols, 5, stored(t, 5, cols), act=4)
        linear_w("linear_w_%s_gemv_ok" % label, t, 1, 2 * cols, 7, stored(t, 7, 2 * cols, 2))
        linear_w("linear_w_%s_%s" % (label, mis), t, 2, cols, 4, stored(t, 4, cols, 1), act=1,
                 misalign={"weight": odd})
        embedding_w("embedding_w_%s_ok" % label, t, [0, 5, 2, 2], 6, cols, stored(t, 6, cols))
        embedding_w("embedding_w_%s_%s" % (label, mis), t, [3, 1], 4, cols, stored(t, 4, cols, 2),
                    misalign={"table": odd})

    Q8, Q4, F16 = DTYPES["q8_0"], DTYPES["q4_0"], DTYPES["f16"]
    x = sample_values(128, 5)
    # Not a kb_dtype: 7, GGML's Q4_1 (3), -1.
    quantize("quantize_type_unknown", 7, 2, 64, x, y_bytes=136)
    quantize("quantize_type_q4_1", 3, 2, 64, x, y_bytes=80)
    dequantize("dequantize_type_unknown", 7, 2, 64, stored(Q8, 2, 64))
    linear_w("linear_w_weight_type_unknown", 7, 2, 64, 3, stored(Q4, 3, 64))
    linear_w("linear_w_weight_type_negative", -1, 2, 64, 3, stored(Q4, 3, 64))
    embedding_w("embedding_w_table_type_unknown", 7, [0, 1], 3, 64, stored(Q8, 3, 64))
    # Byte counts that do not match the shape.
    quantize("quantize_y_bytes_short", Q8, 2, 64, x, y_bytes=135)
    quantize("quantize_y_bytes_long", Q8, 2, 64, x, y_bytes=137)
    dequantize("dequantize_x_bytes_short", Q4, 2, 64, stored(Q4, 2, 64)[:-1])
    linear_w("linear_w_weight_bytes_short", Q4, 2, 64, 3, stored(Q4, 3, 64)[:-1])
    linear_w("linear_w_bytes_of_another_type", Q8, 2, 64, 3, stored(Q4, 3, 64))
    embedding_w("embedding_w_table_bytes_long", F16, [0, 1], 3, 48, stored(F16, 3, 48) + [0])
    # Block formats need whole blocks of 32.
    quantize("quantize_cols_not_multiple_of_32", Q8, 2, 48, sample_values(96, 6), y_bytes=102)
    dequantize("dequantize_cols_not_multiple_of_32", Q4, 2, 40, stored(Q4, 2, 64)[:45])
    linear_w("linear_w_in_features_not_multiple_of_32", Q8, 2, 40, 3, stored(Q8, 3, 64)[:-9])
    embedding_w("embedding_w_dim_not_multiple_of_32", Q4, [0], 2, 16, stored(Q4, 2, 32))
    # ids outside [0, vocab), checked before anything is written.
    embedding_w("embedding_w_id_eq_vocab", Q8, [0, 6, 1], 6, 32, stored(Q8, 6, 32))
    embedding_w("embedding_w_id_negative", F16, [1, 0, -1], 6, 16, stored(F16, 6, 16))
    # Rows a block format cannot hold; the tiny block (1 / d overflows) can.

    def x_with(index, value):
        v = [1.0] * 128
        v[index] = value
        return v

    quantize("quantize_q8_0_x_nan", Q8, 2, 64, x_with(70, "nan"))
    quantize("quantize_q4_0_x_inf", Q4, 2, 64, x_with(127, "-inf"))
    quantize("quantize_q8_0_scale_overflow", Q8, 2, 64, x_with(33, 1e7))
    quantize("quantize_q4_0_scale_overflow", Q4, 2, 64, x_with(0, -6e5))
    quantize("quantize_q8_0_largest_scale_ok", Q8, 2, 64, x_with(33, 65519.0 * 127))
    quantize("quantize_q8_0_tiny_block_ok", Q8, 1, 64, [1e-40] * 32 + [-3e-39] * 32)
    quantize("quantize_f16_x_nan_ok", F16, 2, 64, x_with(70, "nan"))
    # Other invalid calls: y overlapping x, a negative byte count, act.
    quantize("quantize_y_overlaps_x", Q8, 2, 64, x, overlap={"y": {"with": "x", "offset": 4}})
    linear_w("linear_w_act_unknown", Q8, 2, 64, 3, stored(Q8, 3, 64), act=5)
    case("linear_w", "linear_w_negative_weight_bytes", {"rows": 2, "in_features": 64, "out_features": 3,
                                                        "weight_bytes": -1},
         {"weight_type": Q8, "act": 0})
    return cases


# Reproducers of open library defects the fuzzers found (docs/reliability.md,
# "Known defects"; seed-open_*): specs.c's fz_known_defect() makes the replay
# skip them until the fix, KB_FUZZ_KNOWN_DEFECTS=1 makes them run.  Once a
# defect is fixed its seed moves to fixed_defect_cases().  None is open.
def open_defect_cases():
    return []


# Reproducers of D7, D8, D10, D11 and D12 (the `quant` target's findings,
# fixed), replayed as seed-fixed_* like those of fixed_defect_cases().  D8's
# are now refused: F32, F16 and BF16 bytes must be aligned as their elements.
def quant_fixed_defect_cases():
    cases = []

    def case(kernel, name, dims, scalars, tensors=None, null=(), misalign=None):
        cases.append({"kernel": kernel, "name": name, "dims": dims, "flags": {}, "scalars": scalars,
                      "tensors": {k: {"values": v} for k, v in (tensors or {}).items()}, "null": list(null),
                      "misalign": misalign or {}, "overlap": {}})

    Q8, BF16, F32 = DTYPES["q8_0"], DTYPES["bf16"], DTYPES["f32"]
    # D7: a block-format weight with in_features == 0 (y = act(bias)): SIGFPE.
    case("linear_w", "linear_w_q8_0_in_features_0", {"rows": 2, "in_features": 0, "out_features": 3,
                                                     "weight_bytes": 0},
         {"weight_type": Q8, "act": 0}, {"bias": [1.0, -2.0, 0.5]}, null=["x", "weight"])
    # D11: a block of x below 127 * 2^-128 in magnitude (1 / its scale is
    # infinite) against a Q8_0 weight of scale 1.
    case("linear_w", "linear_w_q8_0_tiny_x_block", {"rows": 1, "in_features": 32, "out_features": 1,
                                                    "weight_bytes": 34},
         {"weight_type": Q8, "act": 0},
         {"x": [(1e-39 if i % 2 else -2e-39) * (i % 5 + 1) for i in range(32)],
          "weight": [0x00, 0x3C] + [(i * 7 - 100) & 0xFF for i in range(32)]}, null=["bias"])
    # D12: rows of no element checked one by one, 2^62 of them.
    case("quantize", "quantize_q8_0_cols0_many_rows", {"rows": 1 << 62, "cols": 0, "y_bytes": 0}, {"type": Q8})
    case("quantize", "quantize_q4_0_cols0_null_x", {"rows": 4, "cols": 0, "y_bytes": 0}, {"type": DTYPES["q4_0"]},
         null=["x"])
    # D8: a float32 weight at an odd address, read as float by the
    # matrix-vector path (one output, many rows: the weight is the vector).
    case("linear_w", "linear_w_f32_weight_odd_address", {"rows": 60, "in_features": 2, "out_features": 1,
                                                         "weight_bytes": 8},
         {"weight_type": F32, "act": 0}, {"x": sample_values(120, 7), "weight": stored(F32, 1, 2), "bias": [0.5]},
         misalign={"weight": 1})
    # D8: bfloat16 bytes written at an odd address as uint16_t.
    case("quantize", "quantize_bf16_y_odd_address", {"rows": 1, "cols": 5, "y_bytes": 10}, {"type": BF16},
         {"x": [1.0, -2.5, 3.0, 0.125, 1e-3]}, misalign={"y": 1})
    # D10: an empty tensor whose rows would hold 4 * 2^62 bytes (valid: OK).
    case("quantize", "quantize_f32_rows0_row_bytes_overflow", {"rows": 0, "cols": 1 << 62, "y_bytes": 0},
         {"type": F32}, null=["x", "y"])
    return cases


# Reproducers of library defects the fuzzers found and that are fixed
# (docs/reliability.md, D3 and D4), kept as seeds (seed-fixed_*) so that the
# replay in `bazel test //...` (and under --config=asan) guards the fix.
def fixed_defect_cases():
    cases = []

    def case(kernel, name, dims, flags=None, scalars=None, null=(), dummy=()):
        cases.append({"kernel": kernel, "name": name, "dims": dims, "flags": flags or {}, "scalars": scalars or {},
                      "tensors": {}, "null": list(null), "dummy": list(dummy), "overlap": {}})

    # kb_gemm_batched computes stride_a * 4 with signed overflow (A is empty:
    # k == 0, so any stride is valid).
    case("gemm_batched", "gemm_batched_stride_bytes_overflow",
         {"batch": 2, "m": 2, "n": 2, "k": 0, "lda": 1, "stride_a": 1 << 62, "ldb": 2, "stride_b": 0, "ldc": 2,
          "stride_c": 4}, {"trans_a": False, "trans_b": False}, {"alpha": 1.0, "beta": 0.0})
    # kb_gemm, matrix-vector path (m == 1: y = x B reads B by rows): B has
    # one row (k == 1) and a leading dimension of 2^60; the kernel forms
    # the addresses of rows 1..3 as well (gemv_axpy), and 2^60 floats past
    # B overflow the address space.
    case("gemm", "gemv_row_pointers_overflow",
         {"m": 1, "n": 40, "k": 1, "lda": 1, "ldb": 1 << 60, "ldc": 40}, {"trans_a": False, "trans_b": False},
         {"alpha": 1.0, "beta": 0.0})
    return cases


def buffers_seeds():
    """Operation sequences for buffers_fuzz.c (op byte, then its arguments)."""
    def size(v):
        return bytes([v]) if 0 <= v < 80 else b"\xf0" + struct.pack("<q", v)

    ctx_create = lambda slot, backend, threads: bytes([0, slot, backend]) + size(threads) + b"\x01"
    # The fill value of a new buffer is read only when the buffer is made.
    buf_create = lambda slot, ctx, n, value=7: bytes([2, slot, ctx]) + size(n) + bytes([1]) + (
        bytes([value]) if 0 <= n <= 4096 else b"")
    upload = lambda b, ctx, off, n: bytes([4, b, ctx]) + size(off) + size(n) + bytes([2]) + bytes(range(n % 80))
    download = lambda b, ctx, off, n: bytes([5, b, ctx]) + size(off) + size(n) + bytes([2]) + bytes(n % 80)
    # v: index into buffers_fuzz.c's value list (3 is 255, 4 is 256, 5 is -1).
    fill = lambda b, ctx, off, n, v: bytes([6, b, ctx]) + size(off) + size(n) + bytes([v])
    copy = lambda d, s, ctx, doff, soff, n: bytes([7, d, s, ctx]) + size(doff) + size(soff) + size(n)
    # kb_dtype_bytes: type index (0 F32, 1 F16, 2 Q4_0, 3 Q8_0, 4 BF16, then
    # 3, 7 and -1), rows, cols, cols in blocks of 32 or not, NULL bytes or not.
    dtype_bytes = lambda ti, rows, cols, whole=False, null=False: bytes([11, ti]) + size(rows) + size(cols) + bytes(
        [1 if whole else 0, 0 if null else 1])
    seeds = {
        "seed-dtype_bytes": dtype_bytes(0, 3, 5) + dtype_bytes(1, 2, 2, True) + dtype_bytes(4, 7, 3)
        + dtype_bytes(3, 3, 2, True) + dtype_bytes(2, 5, 1, True) + dtype_bytes(3, 2, 48) + dtype_bytes(5, 1, 32)
        + dtype_bytes(6, 2, 2) + dtype_bytes(7, 1, 1) + dtype_bytes(0, -1, 4) + dtype_bytes(3, 1, 1, True, True)
        + dtype_bytes(3, 1 << 62, 2, True) + dtype_bytes(0, (1 << 63) - 1, 0) + dtype_bytes(2, 0, 1 << 40),
        "seed-round_trip": ctx_create(1, 0, 3) + buf_create(0, 1, 64) + upload(0, 1, 8, 16) + download(0, 1, 0, 64)
        + fill(0, 1, 60, 4, 3) + copy(1, 0, 0, 0, 0, 0) + buf_create(1, 0, 32) + copy(1, 0, 1, 0, 8, 32)
        + bytes([10, 1, 1]) + download(1, 0, 0, 32),
        "seed-bad_ranges": buf_create(0, 0, 16) + upload(0, 0, 10, 7) + download(0, 0, 17, 0) + fill(0, 0, 0, 16, 4)
        + copy(0, 0, 0, 0, 4, 8) + copy(0, 0, 0, 0, 8, 8) + bytes([3, 0]) + upload(0, 0, 0, 1),
        "seed-huge": buf_create(0, 0, 1 << 62) + buf_create(1, 0, -1) + ctx_create(2, 3, 0) + ctx_create(1, 0, 257)
        + ctx_create(2, 1, 1) + bytes([9, 5, 0, 0, 0]),
        "seed-empty": buf_create(0, 0, 0) + upload(0, 0, 0, 0) + download(0, 0, 0, 0) + fill(0, 0, 0, 0, 5)
        + copy(0, 0, 0, 0, 0, 0) + bytes([8, 0x10, 3]),
    }
    return seeds


def gguf_file(version=3, keys=(), tensors=(), alignment=32, data=None):
    """A GGUF file: keys are (name, type, payload bytes), tensors (name, ne,
    ggml type, byte count); tensor data follows at aligned offsets."""
    def string(text):
        raw = text.encode() if isinstance(text, str) else text
        return struct.pack("<Q", len(raw)) + raw

    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(keys))
    for name, typ, payload in keys:
        out += string(name) + struct.pack("<I", typ) + payload
    offset, blobs = 0, b""
    for name, ne, typ, nbytes in tensors:
        out += string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", typ, offset)
        blob = bytes((offset + i) & 0xFF for i in range(nbytes))
        blob += bytes(-len(blob) % alignment)
        blobs += blob
        offset += len(blob)
    out += bytes(-len(out) % alignment)
    return out + (blobs if data is None else data)


def gguf_seeds():
    """GGUF files for gguf_fuzz.c: a small llama-like model (every value type,
    a vocabulary, tensors of every kernel type and one of another type) in
    versions 2 and 3, and a few broken ones."""
    u32 = lambda v: struct.pack("<I", v)  # noqa: E731
    s = lambda t: struct.pack("<Q", len(t)) + t.encode()  # noqa: E731
    arr = lambda typ, items: struct.pack("<IQ", typ, len(items)) + b"".join(items)  # noqa: E731
    tokens = ["<unk>", "<s>", "</s>", "\u2581the", "<0x0A>", ""]
    keys = [
        ("general.architecture", 8, s("llama")),
        ("llama.block_count", 4, u32(1)),
        ("llama.embedding_length", 4, u32(32)),
        ("llama.rope.freq_base", 6, struct.pack("<f", 10000.0)),
        ("llama.attention.layer_norm_rms_epsilon", 12, struct.pack("<d", 1e-5)),
        ("general.flag", 7, b"\x01"),
        ("general.i8", 1, b"\xfe"),
        ("general.u16", 2, struct.pack("<H", 65535)),
        ("general.i16", 3, struct.pack("<h", -7)),
        ("general.i32", 5, struct.pack("<i", -70000)),
        ("general.u64", 10, struct.pack("<Q", 2**64 - 1)),
        ("general.i64", 11, struct.pack("<q", -(2**40))),
        ("tokenizer.ggml.tokens", 9, arr(8, [s(t) for t in tokens])),
        ("tokenizer.ggml.scores", 9, arr(6, [struct.pack("<f", -i) for i in range(6)])),
        ("tokenizer.ggml.token_type", 9, arr(5, [struct.pack("<i", t) for t in (2, 3, 3, 1, 6, 1)])),
        ("general.bools", 9, arr(7, [b"\x00", b"\x01"])),
        ("general.empty", 9, arr(0, [])),
    ]
    tensors = [
        ("token_embd.weight", (32, 6), 0, 32 * 6 * 4),
        ("blk.0.attn_q.weight", (32, 32), 8, 32 * 34),
        ("blk.0.ffn_up.weight", (32, 2), 2, 2 * 18),
        ("blk.0.attn_norm.weight", (32,), 1, 64),
        ("blk.0.ffn_gate_exps.weight", (32, 2, 2), 30, 32 * 2 * 2 * 2),
        ("blk.0.ffn_down.weight", (256, 1), 12, 144),
    ]
    good = gguf_file(3, keys, tensors)
    seeds = {
        "seed-llama_v3": good,
        "seed-llama_v2": gguf_file(2, keys, tensors),
        "seed-aligned_64": gguf_file(3, keys + [("general.alignment", 4, u32(64))], tensors, alignment=64),
        "seed-header_only": gguf_file(3),
        "seed-truncated": good[: len(good) - 100],
        "seed-nested_array": gguf_file(3, [("k", 9, struct.pack("<IQ", 9, 1) + arr(4, [u32(1)]))]),
        "seed-duplicate_tensor": gguf_file(3, [], [("t", (4,), 0, 16), ("t", (4,), 0, 16)]),
        "seed-bad_alignment": gguf_file(3, [("general.alignment", 4, u32(48))]),
        "seed-version_1": gguf_file(1),
    }
    return seeds


def tokenizer_seeds():
    """Inputs of tokenizer_fuzz.c: flags (1 add_bos, 2 add_eos, 4 add_space_prefix,
    8 add_special, 16 parse_special, 32 the byte tokens), the number of extra
    pieces, the corruption (0 none, 1..7 one invalid array or id), each extra
    piece (shape: type index << 2 | characters - 1; the characters as indices
    into the fuzz target's alphabet a b c U+2581 < > e-acute U+4E2D; the score
    times 4), the token to corrupt, then the text."""
    A, B, C, SP, LT, GT, E, ZH = range(8)
    NORMAL, USER, CONTROL, UNUSED, UNDEFINED = 0, 4, 5, 6, 7

    def extra(chars, score=-4, kind=NORMAL):
        return bytes([(kind << 2) | (len(chars) - 1)] + list(chars) + [score & 0xFF])

    def seed(flags, extras, text, corrupt=0, pick=0):
        return bytes([flags, len(extras), corrupt]) + b"".join(extras) + bytes([pick]) + text.encode("utf-8", "surrogateescape")

    common = [extra([A], -8), extra([B], -8), extra([C], -8), extra([A, B], -12), extra([B, C], -12),
              extra([SP, A], -16), extra([SP, SP], -4), extra([E, ZH], -20), extra([LT]), extra([GT])]
    seeds = {
        "seed-basic": seed(1 | 4 | 8 | 32, common, "a ab abc  bca\n\u4e2d\u00e9 <>\U0001F600 "),
        "seed-no_prefix_no_bytes": seed(0, common, " abc ca \u00e9\u4e2d zz"),
        "seed-specials": seed(4 | 16 | 32, common + [extra([LT, A, GT], 0, USER), extra([LT, B, GT], 0, CONTROL),
                                                     extra([C, C], 0, UNUSED), extra([B, B], 0, UNDEFINED)],
                              "x<a>y<b>z<s>cc</s>bb<unk>"),
        "seed-user_defined_no_parse": seed(1 | 2 | 4 | 8 | 32, common + [extra([LT, A, GT], 0, USER)], "<a><a> a<a>"),
        "seed-duplicate_piece": seed(4, [extra([A]), extra([A])], "a"),
        # Decodes to nothing: kb_detokenize with capacity 0 and NULL text
        # once did pointer arithmetic on the NULL (UBSan).
        "seed-fixed_empty_text_bos": seed(1 | 4 | 8 | 32, common, ""),
        "seed-invalid_utf8_text": seed(4 | 32, common, "a\udcff\udce2\udc96 b\udcc3"),
        "seed-long": seed(4 | 32, common, "abc " * 300),
    }
    for corrupt in range(1, 8):
        seeds["seed-corrupt_%d" % corrupt] = seed(4 | 32, common, "abc", corrupt=corrupt, pick=3)
    seeds["seed-corrupt_space"] = seed(4, [], "a", corrupt=6)
    return seeds


def build(out_dir):
    specs = parse_specs()
    index = {}
    families = {}
    for fam, fn, dtype, params in specs:
        families.setdefault(fam, []).append(fn)
        index[fn] = (fam, families[fam].index(fn), params)
    with open(os.path.join(ROOT, "tests", "conformance", "corpus", "bad_input.json")) as f:
        bad = json.load(f)
    written = {}
    cases = [("", c) for c in bad["cases"]] + [("extra_", c) for c in extra_cases() + quant_cases()]
    for prefix, case in cases:
        for suffix in ("", "_bf16", "_f16"):
            fn = "kb_" + case["kernel"] + suffix
            if fn not in index:
                continue
            fam, i, params = index[fn]
            written[("corpus", fam, "seed-" + prefix + case["name"] + suffix)] = encode(i, params, case)
    for name, data in buffers_seeds().items():
        written[("corpus", "buffers", name)] = data
    for name, data in gguf_seeds().items():
        written[("corpus", "gguf", name)] = data
    for name, data in tokenizer_seeds().items():
        written[("corpus", "tokenizer", name)] = data
    for prefix, defects in (("fixed_", fixed_defect_cases() + quant_fixed_defect_cases()),
                            ("open_", open_defect_cases())):
        for case in defects:
            fam, i, params = index["kb_" + case["kernel"]]
            written[("corpus", fam, "seed-" + prefix + case["name"])] = encode(i, params, case)
    for (top, fam, name), data in sorted(written.items()):
        d = os.path.join(out_dir, top, fam)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    corpus = os.path.join(args.out, "corpus")
    if os.path.isdir(corpus):
        for fam in os.listdir(corpus):
            for name in os.listdir(os.path.join(corpus, fam)):
                if name.startswith("seed-"):
                    os.remove(os.path.join(corpus, fam, name))
    written = build(args.out)
    print("wrote %d seeds under %s" % (len(written), args.out))


if __name__ == "__main__":
    sys.exit(main())
