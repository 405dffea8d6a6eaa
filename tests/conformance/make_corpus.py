#!/usr/bin/env python3
"""Writes the kernelbridge conformance corpus (see docs/conformance.md).

    make_corpus.py [OUT_DIR]        write the corpus (default: ./corpus next to this file)
    make_corpus.py --check DIR      regenerate into a temporary directory and
                                    fail unless DIR holds exactly the same files,
                                    byte for byte

Every expected value comes from reference.py (float64 numpy, independent of
kernelbridge).  Inputs are drawn from np.random.Generator(PCG64(seed)) with a
seed derived from the case name, so the corpus is a pure function of this
script, reference.py and the numpy version.
"""

import filecmp
import json
import math
import os
import shutil
import sys
import tempfile
import zlib
from decimal import ROUND_CEILING, Decimal

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref  # noqa: E402

FORMAT_VERSION = 1
LIBRARY_VERSION = "0.1.0"

# ---------------------------------------------------------------------------
# Tolerances: one bound per kernel, identical for every language.  An output
# element passes when err <= ulp, with
#   err = |got - want| / max(ulp32(want), abs / ulp)
# (so it passes when within `ulp` float32 ulps of the float64 value OR within
# `abs` absolutely).  ulp == 0 means bit-exact; integer and byte outputs are
# exact.  A case may carry its own {"ulp", "abs"} ("tolerance" in the
# manifest) where the bound depends on its data: kb_linear_w with block-
# quantized weights (linear_w_quant_tolerance).  Rationale for each bound:
# docs/conformance.md.
TOLERANCES = {
    "silu": {"ulp": 2, "abs": 0.0},
    "gelu": {"ulp": 2, "abs": 0.0},
    "gelu_tanh": {"ulp": 2, "abs": 0.0},
    "add": {"ulp": 0.5, "abs": 0.0},
    "mul": {"ulp": 0.5, "abs": 0.0},
    "scale": {"ulp": 0.5, "abs": 0.0},
    "add_bias": {"ulp": 0.5, "abs": 0.0},
    "softmax": {"ulp": 2, "abs": 0.0},
    "log_softmax": {"ulp": 2, "abs": 0.0},
    "rmsnorm": {"ulp": 4, "abs": 0.0},
    "layernorm": {"ulp": 4, "abs": 1e-6},
    "gemm": {"ulp": 16, "abs": 1e-5},
    "embedding": {"ulp": 0, "abs": 0.0},
    "rope": {"ulp": 2, "abs": 1e-6},
    "attention": {"ulp": 8, "abs": 1e-6},
    "cross_entropy": {"ulp": 4, "abs": 1e-6},
    "cross_entropy_backward": {"ulp": 4, "abs": 1e-9},
    "adamw_step": {"ulp": 4, "abs": 1e-8},
    "argmax": {"ulp": 0, "abs": 0.0},
    "sample": {"ulp": 0, "abs": 0.0},
    "topk_sample": {"ulp": 0, "abs": 0.0},
    "topp_sample": {"ulp": 0, "abs": 0.0},
    "linear": {"ulp": 18, "abs": 1e-5},
    "attention_ex": {"ulp": 8, "abs": 1e-6},
    "gemm_batched": {"ulp": 16, "abs": 1e-5},
    "quantize": {"ulp": 0, "abs": 0.0},
    "dequantize": {"ulp": 0, "abs": 0.0},
    "linear_w": {"ulp": 18, "abs": 1e-5},
    "embedding_w": {"ulp": 0, "abs": 0.0},
    # ids exact (integers); weights: kb_softmax's bound.  SOFTMAX_TOPK_NORM
    # cases carry their own bound (MOE_NORM_TOLERANCE).
    "moe_route": {"ulp": 2, "abs": 0.0},
    "rope_ex": {"ulp": 2, "abs": 1e-6},
    "glu": {"ulp": 3, "abs": 0.0},
    "add_rmsnorm": {"ulp": 4, "abs": 0.0},
    "kv_cache_append": {"ulp": 0, "abs": 0.0},
    # Every case carries its own absolute bound, carried through the sums,
    # the activation, the product (and for moe_experts the down product and
    # the weighted sum) from the data (ffn_tolerance); these are the ulps
    # allowed besides it.
    "linear_glu_w": {"ulp": 8, "abs": 0.0},
    "moe_experts": {"ulp": 8, "abs": 0.0},
}

# kb_moe_route with SOFTMAX_TOPK_NORM: two softmax probabilities (1.57 ulp
# each) in a quotient, rounded once more: <= 6.8 ulp (docs/kernels.md).
MOE_NORM_TOLERANCE = {"ulp": 7, "abs": 0.0}

# Parameters of every kernel in C order (after ctx), mirroring
# core/include/kernelbridge.h.  Roles: dim (int64), flag (bool), scalar with
# its type (f32, i32, i64, u64), tensor "in"/"out"/"inout" with dtype (f32,
# i32, or u8: raw bytes) and shape (a list of dim names / integers; "a?b:c" is
# a conditional on a flag).
SIGNATURES = {
    "silu": [("n", "dim"), ("x", "in f32 n"), ("y", "out f32 n")],
    "gelu": [("n", "dim"), ("x", "in f32 n"), ("y", "out f32 n")],
    "gelu_tanh": [("n", "dim"), ("x", "in f32 n"), ("y", "out f32 n")],
    "add": [("n", "dim"), ("a", "in f32 n"), ("b", "in f32 n"), ("y", "out f32 n")],
    "mul": [("n", "dim"), ("a", "in f32 n"), ("b", "in f32 n"), ("y", "out f32 n")],
    "scale": [("n", "dim"), ("alpha", "scalar f32"), ("x", "in f32 n"), ("y", "out f32 n")],
    "add_bias": [("rows", "dim"), ("cols", "dim"), ("x", "in f32 rows,cols"), ("bias", "in f32 cols"),
                 ("y", "out f32 rows,cols")],
    "softmax": [("rows", "dim"), ("cols", "dim"), ("x", "in f32 rows,cols"), ("y", "out f32 rows,cols")],
    "log_softmax": [("rows", "dim"), ("cols", "dim"), ("x", "in f32 rows,cols"), ("y", "out f32 rows,cols")],
    "rmsnorm": [("rows", "dim"), ("cols", "dim"), ("x", "in f32 rows,cols"), ("weight", "in f32 cols"),
                ("eps", "scalar f32"), ("y", "out f32 rows,cols")],
    "layernorm": [("rows", "dim"), ("cols", "dim"), ("x", "in f32 rows,cols"), ("weight", "in f32 cols nullable"),
                  ("bias", "in f32 cols nullable"), ("eps", "scalar f32"), ("y", "out f32 rows,cols")],
    "gemm": [("trans_a", "flag"), ("trans_b", "flag"), ("m", "dim"), ("n", "dim"), ("k", "dim"),
             ("alpha", "scalar f32"), ("a", "in f32 trans_a?k:m,trans_a?m:k ld=lda"), ("lda", "dim"),
             ("b", "in f32 trans_b?n:k,trans_b?k:n ld=ldb"), ("ldb", "dim"), ("beta", "scalar f32"),
             ("c", "inout f32 m,n ld=ldc"), ("ldc", "dim")],
    "embedding": [("n_ids", "dim"), ("vocab", "dim"), ("dim", "dim"), ("ids", "in i32 n_ids"),
                  ("table", "in f32 vocab,dim"), ("out", "out f32 n_ids,dim")],
    "rope": [("seq", "dim"), ("heads", "dim"), ("head_dim", "dim"), ("x", "in f32 seq,heads,head_dim"),
             ("positions", "in i32 seq"), ("theta", "scalar f32"), ("y", "out f32 seq,heads,head_dim")],
    "attention": [("batch", "dim"), ("heads", "dim"), ("kv_heads", "dim"), ("seq_q", "dim"), ("seq_kv", "dim"),
                  ("head_dim", "dim"), ("q", "in f32 batch,heads,seq_q,head_dim"),
                  ("k", "in f32 batch,kv_heads,seq_kv,head_dim"), ("v", "in f32 batch,kv_heads,seq_kv,head_dim"),
                  ("causal", "flag"), ("scale", "scalar f32"), ("out", "out f32 batch,heads,seq_q,head_dim")],
    "cross_entropy": [("rows", "dim"), ("classes", "dim"), ("logits", "in f32 rows,classes"),
                      ("targets", "in i32 rows"), ("ignore_index", "scalar i32"), ("losses", "out f32 rows"),
                      ("mean_loss", "out f32 1")],
    "cross_entropy_backward": [("rows", "dim"), ("classes", "dim"), ("logits", "in f32 rows,classes"),
                               ("targets", "in i32 rows"), ("ignore_index", "scalar i32"), ("dloss", "scalar f32"),
                               ("dlogits", "out f32 rows,classes")],
    "adamw_step": [("n", "dim"), ("params", "inout f32 n"), ("grads", "in f32 n"), ("m", "inout f32 n"),
                   ("v", "inout f32 n"), ("lr", "scalar f32"), ("beta1", "scalar f32"), ("beta2", "scalar f32"),
                   ("eps", "scalar f32"), ("weight_decay", "scalar f32"), ("step", "scalar i64")],
    "argmax": [("rows", "dim"), ("cols", "dim"), ("x", "in f32 rows,cols"), ("out", "out i32 rows")],
    "sample": [("rows", "dim"), ("cols", "dim"), ("logits", "in f32 rows,cols"), ("temperature", "scalar f32"),
               ("seed", "scalar u64"), ("out", "out i32 rows")],
    "topk_sample": [("rows", "dim"), ("cols", "dim"), ("logits", "in f32 rows,cols"), ("k", "dim"),
                    ("temperature", "scalar f32"), ("seed", "scalar u64"), ("out", "out i32 rows")],
    "topp_sample": [("rows", "dim"), ("cols", "dim"), ("logits", "in f32 rows,cols"), ("p", "scalar f32"),
                    ("temperature", "scalar f32"), ("seed", "scalar u64"), ("out", "out i32 rows")],
    # act is a kb_activation (an enum): its value as an i32 scalar.
    "linear": [("rows", "dim"), ("in_features", "dim"), ("out_features", "dim"), ("x", "in f32 rows,in_features"),
               ("weight", "in f32 out_features,in_features"), ("bias", "in f32 out_features nullable"),
               ("act", "scalar i32"), ("y", "out f32 rows,out_features")],
    "attention_ex": [("batch", "dim"), ("heads", "dim"), ("kv_heads", "dim"), ("seq_q", "dim"), ("seq_kv", "dim"),
                     ("head_dim", "dim"), ("seq_major", "flag"),
                     ("q", "in f32 batch,seq_major?seq_q:heads,seq_major?heads:seq_q,head_dim"),
                     ("k", "in f32 batch,seq_major?seq_kv:kv_heads,seq_major?kv_heads:seq_kv,head_dim"),
                     ("v", "in f32 batch,seq_major?seq_kv:kv_heads,seq_major?kv_heads:seq_kv,head_dim"),
                     ("kv_lengths", "in i32 batch nullable"), ("mask_batch", "dim"), ("mask_heads", "dim"),
                     ("mask_q", "dim"), ("mask", "in f32 mask_batch,mask_heads,mask_q,seq_kv nullable"),
                     ("causal", "flag"), ("causal_bottom_right", "flag"), ("scale", "scalar f32"),
                     ("out", "out f32 batch,seq_major?seq_q:heads,seq_major?heads:seq_q,head_dim")],
    "gemm_batched": [("trans_a", "flag"), ("trans_b", "flag"), ("batch", "dim"), ("m", "dim"), ("n", "dim"),
                     ("k", "dim"), ("alpha", "scalar f32"),
                     ("a", "in f32 batch,trans_a?k:m,trans_a?m:k ld=lda stride=stride_a"), ("lda", "dim"),
                     ("stride_a", "dim"), ("b", "in f32 batch,trans_b?n:k,trans_b?k:n ld=ldb stride=stride_b"),
                     ("ldb", "dim"), ("stride_b", "dim"), ("beta", "scalar f32"),
                     ("c", "inout f32 batch,m,n ld=ldc stride=stride_c"), ("ldc", "dim"), ("stride_c", "dim")],
    # Tensors in a storage format: u8 bytes, one dimension, the byte count
    # (y_bytes, ...); type, weight_type and table_type are kb_dtype values
    # (GGML's type numbers, an enum like act): i32 scalars.
    "quantize": [("type", "scalar i32"), ("rows", "dim"), ("cols", "dim"), ("x", "in f32 rows,cols"),
                 ("y", "out u8 y_bytes"), ("y_bytes", "dim")],
    "dequantize": [("type", "scalar i32"), ("rows", "dim"), ("cols", "dim"), ("x", "in u8 x_bytes"),
                   ("x_bytes", "dim"), ("y", "out f32 rows,cols")],
    "linear_w": [("rows", "dim"), ("in_features", "dim"), ("out_features", "dim"), ("x", "in f32 rows,in_features"),
                 ("weight_type", "scalar i32"), ("weight", "in u8 weight_bytes"), ("weight_bytes", "dim"),
                 ("bias", "in f32 out_features nullable"), ("act", "scalar i32"), ("y", "out f32 rows,out_features")],
    "embedding_w": [("n_ids", "dim"), ("vocab", "dim"), ("dim", "dim"), ("ids", "in i32 n_ids"),
                    ("table_type", "scalar i32"), ("table", "in u8 table_bytes"), ("table_bytes", "dim"),
                    ("out", "out f32 n_ids,dim")],
    # routing is a kb_moe_routing (an enum): its value as an i32 scalar.
    "moe_route": [("tokens", "dim"), ("experts", "dim"), ("top_k", "dim"), ("routing", "scalar i32"),
                  ("logits", "in f32 tokens,experts"), ("ids", "out i32 tokens,top_k"),
                  ("weights", "out f32 tokens,top_k")],
    # style (kb_rope_style) and scaling (kb_rope_scaling) are enums: i32
    # scalars, as act.  q and k are rotated in place; k may be NULL.
    "rope_ex": [("batch", "dim"), ("seq", "dim"), ("q_heads", "dim"), ("kv_heads", "dim"), ("head_dim", "dim"),
                ("rotary_dim", "dim"), ("style", "scalar i32"), ("positions", "in i32 batch,seq"),
                ("theta", "scalar f32"), ("scaling", "scalar i32"), ("factor", "scalar f32"),
                ("low_freq_factor", "scalar f32"), ("high_freq_factor", "scalar f32"),
                ("original_max_position", "scalar i64"), ("q", "inout f32 batch,seq,q_heads,head_dim"),
                ("k", "inout f32 batch,seq,kv_heads,head_dim nullable")],
    # Decoder kernels.  glu's act is a kb_activation, as linear's.
    "glu": [("rows", "dim"), ("cols", "dim"), ("gate", "in f32 rows,cols ld=ld_gate"), ("ld_gate", "dim"),
            ("up", "in f32 rows,cols ld=ld_up"), ("ld_up", "dim"), ("act", "scalar i32"), ("y", "out f32 rows,cols")],
    "add_rmsnorm": [("rows", "dim"), ("cols", "dim"), ("x", "in f32 rows,cols"), ("residual", "inout f32 rows,cols"),
                    ("weight", "in f32 cols"), ("eps", "scalar f32"), ("y", "out f32 rows,cols")],
    "kv_cache_append": [("batch", "dim"), ("kv_heads", "dim"), ("seq_new", "dim"), ("capacity", "dim"),
                        ("head_dim", "dim"), ("seq_major", "flag"), ("k_new", "in f32 batch,seq_new,kv_heads,head_dim"),
                        ("v_new", "in f32 batch,seq_new,kv_heads,head_dim"), ("positions", "in i32 batch"),
                        ("k_cache", "inout f32 batch,seq_major?capacity:kv_heads,seq_major?kv_heads:capacity,head_dim"),
                        ("v_cache", "inout f32 batch,seq_major?capacity:kv_heads,seq_major?kv_heads:capacity,head_dim")],
    # Gated feed-forward blocks on storage-format weights (u8 byte tensors, as
    # linear_w; weight_type and act are enums: i32 scalars).
    "linear_glu_w": [("rows", "dim"), ("in_features", "dim"), ("out_features", "dim"),
                     ("x", "in f32 rows,in_features"), ("weight_type", "scalar i32"),
                     ("gate_weight", "in u8 gate_bytes"), ("gate_bytes", "dim"), ("up_weight", "in u8 up_bytes"),
                     ("up_bytes", "dim"), ("act", "scalar i32"), ("y", "out f32 rows,out_features")],
    "moe_experts": [("tokens", "dim"), ("hidden", "dim"), ("ffn", "dim"), ("experts", "dim"), ("top_k", "dim"),
                    ("x", "in f32 tokens,hidden"), ("ids", "in i32 tokens,top_k"), ("weights", "in f32 tokens,top_k"),
                    ("weight_type", "scalar i32"), ("gate_weight", "in u8 gate_bytes"), ("gate_bytes", "dim"),
                    ("up_weight", "in u8 up_bytes"), ("up_bytes", "dim"), ("down_weight", "in u8 down_bytes"),
                    ("down_bytes", "dim"), ("act", "scalar i32"), ("y", "out f32 tokens,hidden")],
}

# The 16-bit embedding, argmax and samplers: the float32 kernel's
# parameters with its float tensors in bfloat16 / float16, stored as their
# bit patterns ("<u2").  The embedding copies bits and the others return
# int32 indices, so every output is exact.
HALF_DECODING = ("embedding", "argmax", "sample", "topk_sample", "topp_sample")
for _base in HALF_DECODING:
    for _dt in ("bf16", "f16"):
        SIGNATURES[_base + "_" + _dt] = [(n, s.replace(" f32 ", " %s " % _dt)) for n, s in SIGNATURES[_base]]
        TOLERANCES[_base + "_" + _dt] = {"ulp": 0, "abs": 0.0}

# A float32 model over a 16-bit KV cache: kb_kv_cache_append_to_<t> (float32
# rows into a 16-bit cache: exact, the reference's rounding) and
# kb_attention_ex_kv_<t> (float32 q / mask / out, 16-bit k / v: the float32
# kernel on the exactly widened cache, so kb_attention_ex's bound).
for _dt in ("bf16", "f16"):
    SIGNATURES["kv_cache_append_to_" + _dt] = [
        (n, s.replace(" f32 ", " %s " % _dt) if n in ("k_cache", "v_cache") else s)
        for n, s in SIGNATURES["kv_cache_append"]]
    TOLERANCES["kv_cache_append_to_" + _dt] = {"ulp": 0, "abs": 0.0}
    SIGNATURES["attention_ex_kv_" + _dt] = [
        (n, s.replace(" f32 ", " %s " % _dt) if n in ("k", "v") else s) for n, s in SIGNATURES["attention_ex"]]
    TOLERANCES["attention_ex_kv_" + _dt] = TOLERANCES["attention_ex"]

KERNELS = list(SIGNATURES)


def signature_json(kernel):
    params = []
    for name, spec in SIGNATURES[kernel]:
        words = spec.split()
        entry = {"name": name}
        if words[0] in ("dim", "flag"):
            entry["role"] = words[0]
        elif words[0] == "scalar":
            entry["role"] = "scalar"
            entry["type"] = words[1]
        else:
            entry["role"] = words[0]
            entry["dtype"] = words[1]
            entry["shape"] = words[2].split(",")
            for opt in words[3:]:
                if opt.startswith("ld="):
                    entry["ld"] = opt[3:]
                elif opt.startswith("stride="):
                    entry["stride"] = opt[7:]
                elif opt == "nullable":
                    entry["nullable"] = True
        params.append(entry)
    return params


# ---------------------------------------------------------------------------
# .npy v1.0 writer with a fixed header layout (so the bytes do not depend on
# the numpy version).


def npy_bytes(array):
    array = np.ascontiguousarray(array)
    descr = {np.dtype(np.float32): "<f4", np.dtype(np.float64): "<f8", np.dtype(np.int32): "<i4",
             np.dtype(np.uint8): "|u1", np.dtype(np.uint16): "<u2"}[array.dtype]
    if array.ndim == 1:
        shape = "(%d,)" % array.shape[0]
    else:
        shape = "(" + ", ".join(str(d) for d in array.shape) + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    total = 10 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    out = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1")
    return out + array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes(order="C")


# ---------------------------------------------------------------------------
# JSON / TSV number formatting.


def scalar_json(value, typ):
    if typ == "u64":
        return str(int(value))  # decimal string: not every JSON reader keeps 64-bit integers
    if typ in ("i32", "i64"):
        return int(value)
    v = float(np.float32(value))  # the exact float32 value, printed as the shortest double
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def scalar_text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def f32(a):
    return np.asarray(a, dtype=np.float32)


def i32(a):
    return np.asarray(a, dtype=np.int32)


# numpy dtypes of a signature's tensor dtype: as given to the kernel, and as
# stored for expected values (float32 outputs are compared with float64).
INPUT_DTYPES = {"f32": np.float32, "i32": np.int32, "u8": np.uint8, "bf16": np.uint16, "f16": np.uint16}
EXPECTED_DTYPES = {"f32": np.float64, "i32": np.int32, "u8": np.uint8, "bf16": np.uint16, "f16": np.uint16}


def rng_for(name):
    return np.random.Generator(np.random.PCG64(zlib.crc32(name.encode("ascii"))))


# ---------------------------------------------------------------------------
# Golden cases.


class Corpus:
    def __init__(self):
        self.cases = []
        self.files = {}

    def add(self, name, kernel, dims=None, flags=None, scalars=None, inputs=None, expected=None, alias=None,
            null=None, about="", tolerance=None):
        assert name not in {c["name"] for c in self.cases}, name
        sig = dict(SIGNATURES[kernel])
        dims = dict(dims or {})
        flags = dict(flags or {})
        scalars = dict(scalars or {})
        for pname, spec in SIGNATURES[kernel]:
            kind = spec.split()[0]
            if kind == "dim":
                assert pname in dims, (name, pname)
            elif kind == "flag":
                assert pname in flags, (name, pname)
            elif kind == "scalar":
                assert pname in scalars, (name, pname)
        case = {
            "name": name,
            "kernel": kernel,
            "about": about,
            "dims": {k: int(v) for k, v in dims.items()},
            "flags": {k: bool(v) for k, v in flags.items()},
            "scalars": {k: scalar_json(v, sig[k].split()[1]) for k, v in scalars.items()},
            "inputs": {},
            "expected": {},
            "alias": dict(alias or {}),
            "null": sorted(null or []),
        }
        if tolerance is not None:
            case["tolerance"] = {"ulp": tolerance["ulp"], "abs": float(tolerance["abs"])}
        for pname, arr in (inputs or {}).items():
            dtype = INPUT_DTYPES[sig[pname].split()[1]]
            fname = "%s.%s.npy" % (name, pname)
            self.files[fname] = npy_bytes(np.asarray(arr, dtype=dtype))
            case["inputs"][pname] = fname
        for pname, arr in (expected or {}).items():
            dtype = EXPECTED_DTYPES[sig[pname].split()[1]]
            fname = "%s.%s.expected.npy" % (name, pname)
            self.files[fname] = npy_bytes(np.asarray(arr, dtype=dtype))
            case["expected"][pname] = fname
        for out, src in case["alias"].items():
            assert src in case["inputs"] and out not in case["inputs"], (name, out, src)
        self.cases.append(case)


def gen_elementwise(cx):
    unary = {"silu": ref.silu, "gelu": ref.gelu, "gelu_tanh": ref.gelu_tanh}
    extremes = [-80, 80, -20, 20, -10, 10, -5.5, 5.5, -3, 3, -1, 1, -1e-3, 1e-3, 1e-30, -1e-30, 0.0, -0.0,
                -40, 40, 1e10, -1e10, 0.5, -0.5]
    for kern, fn in unary.items():
        for n in (0, 1, 7, 33, 1031):
            name = "%s_n%d" % (kern, n)
            x = f32(rng_for(name).standard_normal(n) * 3)
            cx.add(name, kern, dims={"n": n}, inputs={"x": x}, expected={"y": fn(x)},
                   about="random N(0, 9) inputs, n not a multiple of a SIMD width")
        if kern == "silu":
            name = "silu_threads"
            x = f32(rng_for(name).standard_normal(40009) * 3)
            cx.add(name, kern, dims={"n": x.size}, inputs={"x": x}, expected={"y": fn(x)},
                   about="large enough to be split over several threads")
        name = kern + "_extremes"
        x = f32(extremes)
        cx.add(name, kern, dims={"n": x.size}, inputs={"x": x}, expected={"y": fn(x)},
               about="large magnitudes (+-80, +-1e10), tiny and signed-zero inputs")
        name = kern + "_nan"
        x = f32([1.0, math.nan, -2.0])
        cx.add(name, kern, dims={"n": 3}, inputs={"x": x}, expected={"y": fn(x)},
               about="NaN propagates to its own element only")
        name = kern + "_inplace"
        x = f32(rng_for(name).standard_normal(37) * 4)
        cx.add(name, kern, dims={"n": 37}, inputs={"x": x}, expected={"y": fn(x)}, alias={"y": "x"},
               about="y is the same buffer as x")

    for kern, fn in (("add", ref.add), ("mul", ref.mul)):
        for n in (0, 1, 7, 33, 1031):
            name = "%s_n%d" % (kern, n)
            g = rng_for(name)
            a, b = f32(g.standard_normal(n) * 10), f32(g.standard_normal(n) * 10)
            cx.add(name, kern, dims={"n": n}, inputs={"a": a, "b": b}, expected={"y": fn(a, b)})
        for which in ("a", "b"):
            name = "%s_inplace_%s" % (kern, which)
            g = rng_for(name)
            a, b = f32(g.standard_normal(19)), f32(g.standard_normal(19))
            cx.add(name, kern, dims={"n": 19}, inputs={"a": a, "b": b}, expected={"y": fn(a, b)},
                   alias={"y": which}, about="y is the same buffer as %s" % which)
        name = kern + "_special"
        a = f32([math.inf, -math.inf, math.inf, math.nan, 1.0, 0.0, -0.0, 1e-45, 3e38, 1e-20])
        b = f32([1.0, 2.0, -math.inf, 1.0, math.nan, -0.0, -0.0, 1e-45, -0.5, 1e-20])
        cx.add(name, kern, dims={"n": a.size}, inputs={"a": a, "b": b}, expected={"y": fn(a, b)},
               about="IEEE infinities, NaN, signed zeros, subnormals")

    for n, alpha in ((0, 2.0), (1, -1.5), (7, 0.1), (33, 3.0), (1031, -0.3), (5, 0.0)):
        name = "scale_n%d_%s" % (n, ("%g" % alpha).replace("-", "m").replace(".", "p"))
        x = f32(rng_for(name).standard_normal(n) * 5)
        cx.add(name, "scale", dims={"n": n}, scalars={"alpha": alpha}, inputs={"x": x},
               expected={"y": ref.scale(np.float32(alpha), x)})
    name = "scale_inplace"
    x = f32(rng_for(name).standard_normal(21))
    cx.add(name, "scale", dims={"n": 21}, scalars={"alpha": 0.7}, inputs={"x": x},
           expected={"y": ref.scale(np.float32(0.7), x)}, alias={"y": "x"})

    for rows, cols in ((1, 1), (3, 17), (5, 33), (0, 4), (3, 0), (2, 1031)):
        name = "add_bias_%dx%d" % (rows, cols)
        g = rng_for(name)
        x, bias = f32(g.standard_normal((rows, cols))), f32(g.standard_normal(cols))
        cx.add(name, "add_bias", dims={"rows": rows, "cols": cols}, inputs={"x": x, "bias": bias},
               expected={"y": ref.add_bias(x, bias)})
    name = "add_bias_inplace"
    g = rng_for(name)
    x, bias = f32(g.standard_normal((4, 9))), f32(g.standard_normal(9))
    cx.add(name, "add_bias", dims={"rows": 4, "cols": 9}, inputs={"x": x, "bias": bias},
           expected={"y": ref.add_bias(x, bias)}, alias={"y": "x"})


def gen_rowwise(cx):
    for kern, fn in (("softmax", ref.softmax), ("log_softmax", ref.log_softmax)):
        for rows, cols in ((1, 1), (3, 7), (4, 33), (2, 1031), (0, 5), (0, 0)):
            name = "%s_%dx%d" % (kern, rows, cols)
            x = f32(rng_for(name).standard_normal((rows, cols)) * 3)
            cx.add(name, kern, dims={"rows": rows, "cols": cols}, inputs={"x": x}, expected={"y": fn(x)})
        name = kern + "_long_row"
        x = f32(rng_for(name).standard_normal((1, 32771)) * 4)
        cx.add(name, kern, dims={"rows": 1, "cols": 32771}, inputs={"x": x}, expected={"y": fn(x)},
               about="one row of 32771 columns")
        if kern == "softmax":
            name = "softmax_threads"
            x = f32(rng_for(name).standard_normal((3, 16411)) * 2)
            cx.add(name, kern, dims={"rows": 3, "cols": 16411}, inputs={"x": x}, expected={"y": fn(x)},
                   about="rows large enough to be split over several threads")
        name = kern + "_extremes"
        g = rng_for(name)
        x = f32(g.uniform(-1e4, 1e4, (3, 40)))
        x[0, 5] = 1e4
        x[0, 6] = -1e4
        x[1] = f32(g.standard_normal(40)) + 1e4
        x[2, :20] = -1e4
        x[2, 20:] = 1e4 - f32(g.uniform(0, 30, 20))
        cx.add(name, kern, dims={"rows": 3, "cols": 40}, inputs={"x": x}, expected={"y": fn(x)},
               about="logits of magnitude 1e4 (stability)")
        name = kern + "_special"
        x = f32([[0.0, -math.inf, 1.0, -math.inf],      # -inf entries: probability 0
                 [0.0, math.nan, 1.0, 2.0],             # NaN: whole row NaN
                 [-math.inf] * 4,                       # all -inf: NaN row (as PyTorch)
                 [1.0, math.inf, 0.0, 2.0],             # +inf: inf - inf = NaN, whole row NaN
                 [5.0, 5.0, 5.0, 5.0]])
        cx.add(name, kern, dims={"rows": 5, "cols": 4}, inputs={"x": x}, expected={"y": fn(x)},
               about="-inf entries, NaN row, all -inf row, +inf row, constant row")
        name = kern + "_inplace"
        x = f32(rng_for(name).standard_normal((3, 19)) * 2)
        cx.add(name, kern, dims={"rows": 3, "cols": 19}, inputs={"x": x}, expected={"y": fn(x)}, alias={"y": "x"})

    for rows, cols, eps in ((1, 1, 1e-5), (3, 7, 1e-5), (4, 33, 1e-6), (2, 1031, 1e-5), (0, 8, 1e-5),
                            (2, 16, 0.0)):
        name = "rmsnorm_%dx%d" % (rows, cols) + ("_eps0" if eps == 0 else "")
        g = rng_for(name)
        x, w = f32(g.standard_normal((rows, cols)) * 2), f32(g.uniform(0.5, 1.5, cols))
        cx.add(name, "rmsnorm", dims={"rows": rows, "cols": cols}, scalars={"eps": eps},
               inputs={"x": x, "weight": w}, expected={"y": ref.rmsnorm(x, w, np.float32(eps))})
    name = "rmsnorm_long_row"
    g = rng_for(name)
    x, w = f32(g.standard_normal((1, 32771))), f32(g.uniform(0.5, 1.5, 32771))
    cx.add(name, "rmsnorm", dims={"rows": 1, "cols": 32771}, scalars={"eps": 1e-6}, inputs={"x": x, "weight": w},
           expected={"y": ref.rmsnorm(x, w, np.float32(1e-6))}, about="one row of 32771 columns")
    name = "rmsnorm_zero_row"
    x, w = f32(np.zeros((1, 9))), f32(np.ones(9))
    cx.add(name, "rmsnorm", dims={"rows": 1, "cols": 9}, scalars={"eps": 1e-5}, inputs={"x": x, "weight": w},
           expected={"y": ref.rmsnorm(x, w, np.float32(1e-5))}, about="all-zero row with eps > 0 gives 0")
    name = "rmsnorm_inplace"
    g = rng_for(name)
    x, w = f32(g.standard_normal((3, 24)) * 3), f32(g.uniform(0.5, 1.5, 24))
    cx.add(name, "rmsnorm", dims={"rows": 3, "cols": 24}, scalars={"eps": 1e-5}, inputs={"x": x, "weight": w},
           expected={"y": ref.rmsnorm(x, w, np.float32(1e-5))}, alias={"y": "x"})

    for rows, cols, eps, affine in ((1, 1, 1e-5, "wb"), (3, 7, 1e-5, "wb"), (4, 33, 1e-5, "wb"),
                                    (2, 1031, 1e-6, "wb"), (3, 17, 1e-5, "none"), (3, 17, 1e-5, "w"),
                                    (3, 17, 1e-5, "b"), (0, 6, 1e-5, "wb"), (2, 10, 0.0, "wb")):
        name = "layernorm_%dx%d_%s" % (rows, cols, affine) + ("_eps0" if eps == 0 else "")
        g = rng_for(name)
        x = f32(g.standard_normal((rows, cols)) * 2 + 1)
        w, b = f32(g.uniform(0.5, 1.5, cols)), f32(g.standard_normal(cols) * 0.1)
        inputs, null = {"x": x}, []
        if "w" in affine:
            inputs["weight"] = w
        else:
            null.append("weight")
        if "b" in affine:
            inputs["bias"] = b
        else:
            null.append("bias")
        y = ref.layernorm(x, w if "w" in affine else None, b if "b" in affine else None, np.float32(eps))
        cx.add(name, "layernorm", dims={"rows": rows, "cols": cols}, scalars={"eps": eps}, inputs=inputs,
               expected={"y": y}, null=null,
               about="weight/bias NULL means 1/0" if affine != "wb" else "")
    name = "layernorm_constant_row"
    x, w, b = f32(np.full((2, 8), 3.25)), f32(np.ones(8)), f32(np.arange(8) * 0.5)
    cx.add(name, "layernorm", dims={"rows": 2, "cols": 8}, scalars={"eps": 1e-5},
           inputs={"x": x, "weight": w, "bias": b}, expected={"y": ref.layernorm(x, w, b, np.float32(1e-5))},
           about="zero variance with eps > 0 gives the bias")
    name = "layernorm_inplace"
    g = rng_for(name)
    x, w, b = f32(g.standard_normal((3, 24))), f32(g.uniform(0.5, 1.5, 24)), f32(g.standard_normal(24))
    cx.add(name, "layernorm", dims={"rows": 3, "cols": 24}, scalars={"eps": 1e-5},
           inputs={"x": x, "weight": w, "bias": b}, expected={"y": ref.layernorm(x, w, b, np.float32(1e-5))},
           alias={"y": "x"})


def gemm_case(cx, name, ta, tb, m, n, k, alpha, beta, pad=(0, 0, 0), c_nan=False, about=""):
    g = rng_for(name)
    ar, ac = (k, m) if ta else (m, k)
    br, bc = (n, k) if tb else (k, n)
    lda, ldb, ldc = max(1, ac) + pad[0], max(1, bc) + pad[1], max(1, n) + pad[2]
    a = f32(np.full((ar, lda), np.nan))  # padding is NaN: it must never be read
    a[:, :ac] = f32(g.standard_normal((ar, ac)))
    b = f32(np.full((br, ldb), np.nan))
    b[:, :bc] = f32(g.standard_normal((br, bc)))
    c = f32(np.full((m, ldc), -777.0))   # padding must be left unchanged
    c[:, :n] = np.nan if c_nan else f32(g.standard_normal((m, n)))
    want = ref.gemm(ta, tb, m, n, k, np.float32(alpha), a, lda, b, ldb, np.float32(beta), c, ldc).reshape(m, ldc)
    cx.add(name, "gemm", dims={"m": m, "n": n, "k": k, "lda": lda, "ldb": ldb, "ldc": ldc},
           flags={"trans_a": ta, "trans_b": tb}, scalars={"alpha": alpha, "beta": beta},
           inputs={"a": a, "b": b, "c": c}, expected={"c": want}, about=about)


def gen_gemm(cx):
    shapes = {"tall": (67, 3, 5), "wide": (2, 129, 9), "square": (17, 19, 33)}
    for label, (m, n, k) in shapes.items():
        for ta in (False, True):
            for tb in (False, True):
                name = "gemm_%s_%s%s" % (label, "t" if ta else "n", "t" if tb else "n")
                gemm_case(cx, name, ta, tb, m, n, k, 1.25, 0.5 if label != "square" else -1.0,
                          about="op(A) %s, op(B) %s, beta != 0" % ("A^T" if ta else "A", "B^T" if tb else "B"))
    gemm_case(cx, "gemm_1x1x1", False, False, 1, 1, 1, 1.0, 0.0)
    gemm_case(cx, "gemm_padded_nn", False, False, 5, 6, 7, 0.75, 2.0, pad=(3, 2, 5),
              about="lda, ldb, ldc larger than the rows; A/B padding holds NaN, C padding must stay")
    gemm_case(cx, "gemm_padded_tt", True, True, 6, 5, 4, -1.0, 0.25, pad=(1, 4, 2))
    gemm_case(cx, "gemm_beta0_c_nan", False, True, 4, 5, 6, 1.0, 0.0, c_nan=True,
              about="beta == 0: C holds NaN and must not be read")
    gemm_case(cx, "gemm_k0", False, False, 3, 4, 0, 1.0, 0.5, about="k == 0: C = beta * C")
    gemm_case(cx, "gemm_k0_beta0", True, False, 3, 4, 0, 1.0, 0.0, c_nan=True, about="k == 0, beta == 0: C = 0")
    gemm_case(cx, "gemm_m0", False, False, 0, 4, 3, 1.0, 0.5)
    gemm_case(cx, "gemm_n0", False, True, 3, 0, 3, 1.0, 0.5)
    gemm_case(cx, "gemm_k300", False, False, 3, 4, 300, 0.5, 0.0, about="long accumulation")


def gen_transformer(cx):
    for n_ids, vocab, dim in ((5, 11, 7), (1, 1, 1), (0, 4, 3), (3, 4, 0), (9, 50, 33)):
        name = "embedding_%dx%dx%d" % (n_ids, vocab, dim)
        g = rng_for(name)
        ids = i32(g.integers(0, vocab, n_ids))
        if n_ids >= 5:
            ids[0], ids[1], ids[2] = 0, vocab - 1, 0
        table = f32(g.standard_normal((vocab, dim)))
        cx.add(name, "embedding", dims={"n_ids": n_ids, "vocab": vocab, "dim": dim},
               inputs={"ids": ids, "table": table}, expected={"out": ref.embedding(ids, table)},
               about="repeated ids and both ends of [0, vocab)" if n_ids >= 5 else "")

    for seq, heads, hd, theta, maxpos in ((3, 2, 8, 10000.0, 8), (5, 3, 34, 10000.0, 4096), (4, 1, 2, 500000.0, 100),
                                          (0, 2, 4, 10000.0, 1), (2, 4, 128, 1e6, 131072)):
        name = "rope_%dx%dx%d" % (seq, heads, hd)
        g = rng_for(name)
        x = f32(g.standard_normal((seq, heads, hd)))
        pos = i32(g.integers(0, maxpos, seq))
        if seq > 0:
            pos[0] = 0
        cx.add(name, "rope", dims={"seq": seq, "heads": heads, "head_dim": hd}, scalars={"theta": theta},
               inputs={"x": x, "positions": pos}, expected={"y": ref.rope(x, pos, np.float32(theta))})
    name = "rope_inplace"
    g = rng_for(name)
    x, pos = f32(g.standard_normal((3, 2, 16))), i32([0, 5, 17])
    cx.add(name, "rope", dims={"seq": 3, "heads": 2, "head_dim": 16}, scalars={"theta": 10000.0},
           inputs={"x": x, "positions": pos}, expected={"y": ref.rope(x, pos, np.float32(10000.0))},
           alias={"y": "x"})

    att = [  # name, batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal, scale
        ("attention_basic", 1, 2, 2, 3, 5, 8, False, 0.0),
        ("attention_causal", 2, 2, 2, 5, 5, 16, True, 0.0),
        ("attention_gqa", 1, 4, 2, 3, 7, 8, False, 0.0),
        ("attention_mqa_causal", 1, 3, 1, 4, 6, 8, True, 0.0),
        ("attention_decode", 2, 2, 1, 1, 17, 32, False, 0.0),
        ("attention_causal_sq_gt_skv", 1, 2, 2, 6, 4, 8, True, 0.0),
        ("attention_causal_sq_lt_skv", 1, 1, 1, 3, 9, 8, True, 0.0),
        ("attention_scale", 1, 2, 1, 3, 4, 5, False, 0.3),
        ("attention_head_dim1", 1, 1, 1, 2, 3, 1, False, 0.0),
        ("attention_long_kv", 1, 1, 1, 2, 257, 33, False, 0.0),
        ("attention_batch0", 0, 2, 2, 3, 3, 4, False, 0.0),
    ]
    for name, b, h, kvh, sq, skv, hd, causal, sc in att:
        g = rng_for(name)
        q = f32(g.standard_normal((b, h, sq, hd)))
        k = f32(g.standard_normal((b, kvh, skv, hd)))
        v = f32(g.standard_normal((b, kvh, skv, hd)))
        cx.add(name, "attention",
               dims={"batch": b, "heads": h, "kv_heads": kvh, "seq_q": sq, "seq_kv": skv, "head_dim": hd},
               flags={"causal": causal}, scalars={"scale": sc}, inputs={"q": q, "k": k, "v": v},
               expected={"out": ref.attention(q, k, v, causal, np.float32(sc))})


def gen_model(cx):
    """kb_linear, kb_attention_ex and kb_gemm_batched (the model-ready API)."""
    act_names = ["none", "relu", "gelu", "gelu_tanh", "silu"]
    lin = [  # name, rows, in, out, act, bias
        ("linear_none", 5, 7, 6, 0, True),
        ("linear_relu", 5, 7, 6, 1, True),
        ("linear_gelu", 5, 7, 6, 2, True),
        ("linear_gelu_tanh", 5, 7, 6, 3, True),
        ("linear_silu", 5, 7, 6, 4, True),
        ("linear_none_no_bias", 4, 9, 3, 0, False),
        ("linear_relu_no_bias", 4, 9, 3, 1, False),
        ("linear_gelu_no_bias", 4, 9, 3, 2, False),
        ("linear_row1_silu", 1, 33, 17, 4, True),
        ("linear_out1_gelu_tanh", 6, 20, 1, 3, True),
        ("linear_blocks_gelu", 33, 70, 40, 2, True),
        ("linear_in0_silu", 3, 0, 4, 4, True),
        ("linear_rows0", 0, 5, 4, 2, True),
    ]
    for name, rows, inf, outf, act, with_bias in lin:
        g = rng_for(name)
        x = f32(g.standard_normal((rows, inf)))
        w = f32(g.standard_normal((outf, inf)) / math.sqrt(max(inf, 1)))
        b = f32(g.standard_normal(outf) * 0.5)
        inputs = {"x": x, "weight": w}
        if with_bias:
            inputs["bias"] = b
        cx.add(name, "linear", dims={"rows": rows, "in_features": inf, "out_features": outf},
               scalars={"act": act}, inputs=inputs, null=[] if with_bias else ["bias"],
               expected={"y": ref.linear(x, w, b if with_bias else None, act)},
               about="y = %s(x W^T%s)" % (act_names[act], " + b" if with_bias else ""))
    name = "linear_relu_special"
    x = f32([[1.0, -2.0, 0.5], [math.nan, 1.0, 1.0], [0.0, 0.0, 0.0]])
    w = f32([[1.0, 1.0, 1.0], [-1.0, 0.0, 0.0]])
    cx.add(name, "linear", dims={"rows": 3, "in_features": 3, "out_features": 2}, scalars={"act": 1},
           inputs={"x": x, "weight": w}, null=["bias"], expected={"y": ref.linear(x, w, None, 1)},
           about="relu keeps NaN; negatives and zeros give +0")

    # name, batch, heads, kv_heads, seq_q, seq_kv, head_dim, seq_major, lengths, mask dims, causal, bottom_right,
    # scale
    att = [
        ("attention_ex_plain", 1, 2, 2, 3, 5, 8, False, None, None, False, False, 0.0),
        ("attention_ex_seq_major_gqa", 2, 4, 2, 3, 6, 8, True, None, None, False, False, 0.0),
        ("attention_ex_lengths", 3, 2, 1, 4, 5, 8, False, [5, 2, 0], None, False, False, 0.0),
        ("attention_ex_lengths_seq_major", 2, 2, 2, 3, 6, 4, True, [6, 1], None, False, False, 0.0),
        ("attention_ex_mask_full", 2, 2, 1, 3, 5, 8, False, None, (2, 2, 3), False, False, 0.0),
        ("attention_ex_mask_padding", 2, 3, 3, 4, 6, 8, True, None, (2, 1, 1), False, False, 0.0),
        ("attention_ex_mask_heads", 1, 3, 1, 2, 4, 8, False, None, (1, 3, 1), False, False, 0.0),
        ("attention_ex_mask_queries", 2, 2, 2, 3, 4, 8, True, None, (1, 1, 3), False, False, 0.0),
        ("attention_ex_mask_batch_queries", 2, 2, 2, 3, 4, 8, False, None, (2, 1, 3), False, False, 0.0),
        ("attention_ex_masked_rows", 2, 2, 2, 3, 4, 8, False, None, (2, 2, 3), False, False, 0.0),
        ("attention_ex_causal_top_left", 1, 2, 2, 3, 7, 8, False, None, None, True, False, 0.0),
        ("attention_ex_causal_bottom_right", 1, 2, 2, 3, 7, 8, False, None, None, True, True, 0.0),
        ("attention_ex_bottom_right_lengths", 2, 2, 1, 3, 7, 8, True, [7, 2], None, True, True, 0.0),
        ("attention_ex_bottom_right_mask", 2, 2, 2, 4, 4, 8, False, [4, 3], (2, 1, 1), True, True, 0.0),
        ("attention_ex_decode_chunks", 2, 2, 1, 1, 600, 16, True, [600, 300], (2, 1, 1), True, True, 0.0),
        ("attention_ex_long_kv_mask", 1, 1, 1, 2, 257, 16, False, None, (1, 1, 2), False, False, 0.0),
        ("attention_ex_scale", 1, 2, 1, 3, 4, 5, True, None, None, False, False, 0.3),
        ("attention_ex_batch0", 0, 2, 2, 3, 3, 4, False, None, None, False, False, 0.0),
        ("attention_ex_seq_q0", 2, 2, 2, 0, 3, 4, True, [3, 1], None, True, True, 0.0),
    ]
    for name, b, h, kvh, sq, skv, hd, sm, lengths, mdims, causal, br, sc in att:
        g = rng_for(name)
        qs = (b, sq, h, hd) if sm else (b, h, sq, hd)
        ks = (b, skv, kvh, hd) if sm else (b, kvh, skv, hd)
        q, k, v = f32(g.standard_normal(qs)), f32(g.standard_normal(ks)), f32(g.standard_normal(ks))
        inputs = {"q": q, "k": k, "v": v}
        null = []
        lens = None
        if lengths is not None:
            lens = i32(lengths)
            inputs["kv_lengths"] = lens
        else:
            null.append("kv_lengths")
        mask = None
        mb, mh, mq = 1, 1, 1
        if mdims is not None:
            mb, mh, mq = mdims
            if name == "attention_ex_mask_padding" or name.startswith(("attention_ex_bottom_right_mask",
                                                                        "attention_ex_decode")):
                # a key-padding mask: 0 for kept keys, -inf for padding
                mask = np.zeros((mb, mh, mq, skv), np.float32)
                for bi in range(mb):
                    mask[bi, :, :, skv - 1 - bi:] = -np.inf
            else:
                mask = f32(g.standard_normal((mb, mh, mq, skv)))
                mask[g.random((mb, mh, mq, skv)) < 0.25] = -np.inf
            if name == "attention_ex_masked_rows":
                mask[0, 1, 2, :] = -np.inf  # one query row without any key: zeros
                mask[1, :, 0, :] = -np.inf
            inputs["mask"] = mask
        else:
            null.append("mask")
        about = []
        if sm:
            about.append("[batch, seq, heads, head_dim] layout")
        if lengths is not None:
            about.append("kv_lengths %s" % lengths)
        if mdims is not None:
            about.append("mask [%d, %d, %d, seq_kv]" % mdims)
        if causal:
            about.append("causal " + ("bottom-right" if br else "top-left"))
        cx.add(name, "attention_ex",
               dims={"batch": b, "heads": h, "kv_heads": kvh, "seq_q": sq, "seq_kv": skv, "head_dim": hd,
                     "mask_batch": mb, "mask_heads": mh, "mask_q": mq},
               flags={"seq_major": sm, "causal": causal, "causal_bottom_right": br}, scalars={"scale": sc},
               inputs=inputs, null=null,
               expected={"out": ref.attention_ex(q, k, v, lens, mask, causal, br, np.float32(sc), sm)},
               about="; ".join(about))

    # name, ta, tb, batch, m, n, k, alpha, beta, pads (lda, ldb, ldc), gaps (a, b, c) or "bcast_a"/"bcast_b"
    gb = [
        ("gemm_batched_nn", False, False, 3, 4, 5, 6, 1.25, 0.5, (0, 0, 0), (0, 0, 0)),
        ("gemm_batched_tt_gaps", True, True, 2, 5, 3, 4, -1.0, 0.25, (2, 1, 3), (5, 3, 7)),
        ("gemm_batched_shared_b", False, True, 4, 3, 6, 5, 1.0, 0.0, (0, 0, 0), (0, "bcast", 0)),
        ("gemm_batched_shared_a", True, False, 3, 2, 4, 3, 0.5, 1.0, (1, 0, 0), ("bcast", 2, 1)),
        ("gemm_batched_beta0_c_nan", False, False, 2, 3, 3, 4, 1.0, 0.0, (0, 0, 0), (0, 0, 0)),
        ("gemm_batched_k0", False, False, 2, 3, 4, 0, 1.0, 0.5, (0, 0, 0), (0, 0, 0)),
        ("gemm_batched_m1", False, True, 3, 1, 7, 9, 1.0, 0.0, (0, 0, 0), (0, 0, 2)),
        ("gemm_batched_batch1", False, False, 1, 4, 4, 4, 1.0, 0.0, (0, 0, 0), (0, 0, 0)),
        ("gemm_batched_batch0", False, False, 0, 3, 3, 3, 1.0, 0.0, (0, 0, 0), (0, 0, 0)),
    ]
    for name, ta, tb, batch, m, n, k, alpha, beta, pads, gaps in gb:
        g = rng_for(name)
        ar, ac = (k, m) if ta else (m, k)
        br_, bc = (n, k) if tb else (k, n)
        lda, ldb, ldc = max(1, ac) + pads[0], max(1, bc) + pads[1], max(1, n) + pads[2]

        def extent(rows, cols, ld):
            return 0 if rows * cols == 0 else (rows - 1) * ld + cols

        def stride_of(gap, ext):
            return 0 if gap == "bcast" else ext + gap

        sa, sb = stride_of(gaps[0], extent(ar, ac, lda)), stride_of(gaps[1], extent(br_, bc, ldb))
        sc_ = stride_of(gaps[2], extent(m, n, ldc))
        if name == "gemm_batched_batch1":
            sc_ = 0  # stride_c is free when there is one item

        def buffer(count, rows, cols, ld, stride, fill, pad_fill):
            size = 0 if count * rows * cols == 0 else (count - 1) * stride + (rows - 1) * ld + cols
            buf = np.full(size, pad_fill, np.float32)
            for i in range(count if stride else min(count, 1)):
                for r in range(rows):
                    buf[i * stride + r * ld:i * stride + r * ld + cols] = fill(cols)
            return buf

        a = buffer(batch, ar, ac, lda, sa, lambda c: f32(g.standard_normal(c)), np.nan)
        b = buffer(batch, br_, bc, ldb, sb, lambda c: f32(g.standard_normal(c)), np.nan)
        if name == "gemm_batched_beta0_c_nan":
            c = buffer(batch, m, n, ldc, sc_, lambda c: np.full(c, np.nan, np.float32), -777.0)
        else:
            c = buffer(batch, m, n, ldc, sc_, lambda c: f32(g.standard_normal(c)), -777.0)
        want = ref.gemm_batched(ta, tb, batch, m, n, k, np.float32(alpha), a, lda, sa, b, ldb, sb, np.float32(beta),
                                c, ldc, sc_)
        about = []
        if "bcast" in gaps:
            about.append("stride %s = 0: one matrix for every item" % ("a" if gaps[0] == "bcast" else "b"))
        if any(p for p in pads) or any(x not in (0, "bcast") for x in gaps):
            about.append("row padding and gaps between items hold NaN (A, B) or -777 (C, must stay)")
        cx.add(name, "gemm_batched",
               dims={"batch": batch, "m": m, "n": n, "k": k, "lda": lda, "stride_a": sa, "ldb": ldb, "stride_b": sb,
                     "ldc": ldc, "stride_c": sc_},
               flags={"trans_a": ta, "trans_b": tb}, scalars={"alpha": alpha, "beta": beta},
               inputs={"a": a, "b": b, "c": c}, expected={"c": want}, about="; ".join(about))


# ---------------------------------------------------------------------------
# Decoder kernels: kb_glu, kb_add_rmsnorm.


def glu_case(cx, name, rows, cols, act, ld_pad=0, gate=None, up=None, about=""):
    """gate and up as [rows, ld] buffers with NaN padding (never read); the
    default ld is 2 * cols: the stride of a fused gate_up output."""
    g = rng_for(name)
    ld = max(1, cols) + ld_pad
    if gate is None:
        gate = g.standard_normal((rows, cols)) * 3
    if up is None:
        up = g.standard_normal((rows, cols))
    gbuf = f32(np.full((rows, ld), np.nan))
    gbuf[:, :cols] = f32(gate)
    ubuf = f32(np.full((rows, ld), np.nan))
    ubuf[:, :cols] = f32(up)
    want = ref.glu(gbuf[:, :cols], ubuf[:, :cols], act)
    cx.add(name, "glu", dims={"rows": rows, "cols": cols, "ld_gate": ld, "ld_up": ld}, scalars={"act": act},
           inputs={"gate": gbuf, "up": ubuf}, expected={"y": want}, about=about)


def add_rmsnorm_case(cx, name, rows, cols, eps, inplace=False, specials=False, about=""):
    g = rng_for(name)
    x = f32(g.standard_normal((rows, cols)))
    res = f32(g.standard_normal((rows, cols)) * 4)
    w = f32(g.uniform(0.5, 1.5, cols))
    if specials and rows >= 3 and cols >= 3:
        x[1, 2] = np.nan
        res[2, 0] = np.inf
    new_res, y = ref.add_rmsnorm(x, res, w, np.float32(eps))
    cx.add(name, "add_rmsnorm", dims={"rows": rows, "cols": cols}, scalars={"eps": eps},
           inputs={"x": x, "residual": res, "weight": w}, expected={"residual": new_res, "y": y},
           alias={"y": "x"} if inplace else None, about=about)


def gen_decoder(cx):
    for act, label in enumerate(("none", "relu", "gelu", "gelu_tanh", "silu")):
        glu_case(cx, "glu_%s_fused_3x37" % label, 3, 37, act, ld_pad=37,
                 about="gate and up with the row stride of a fused [rows, 2 * cols] gate_up output")
    glu_case(cx, "glu_silu_dense_2x17", 2, 17, 4, about="ld == cols")
    glu_case(cx, "glu_silu_long_row", 1, 4100, 4, ld_pad=3,
             about="one row of several 1024-element tiles, the last partial")
    extremes = [-80, 80, -20, 20, -10, 10, -5.5, 5.5, -3, 3, -1, 1, -1e-3, 1e-3, 1e-30, -1e-30, 0.0, -0.0,
                -40, 40, 1e10, -1e10, 0.5, -0.5]
    for act, label in ((2, "gelu"), (3, "gelu_tanh"), (4, "silu")):
        name = "glu_%s_extremes" % label
        up = rng_for(name).uniform(0.5, 2.0, (1, len(extremes)))
        glu_case(cx, name, 1, len(extremes), act, ld_pad=2, gate=np.array([extremes]), up=up,
                 about="the activation's tails and signed zeros, times up")
    glu_case(cx, "glu_silu_nan_inf", 2, 3, 4, gate=np.array([[1.0, math.nan, -2.0], [math.inf, -math.inf, 0.5]]),
             up=np.array([[math.nan, 2.0, 0.0], [1.0, 2.0, math.inf]]),
             about="NaN stays in its element; silu(+inf) = inf, silu(-inf) = NaN; 0 * inf = NaN")
    glu_case(cx, "glu_rows0", 0, 5, 4)
    glu_case(cx, "glu_cols0", 3, 0, 2)

    add_rmsnorm_case(cx, "add_rmsnorm_4x33", 4, 33, 1e-5)
    add_rmsnorm_case(cx, "add_rmsnorm_1x1", 1, 1, 1e-6)
    add_rmsnorm_case(cx, "add_rmsnorm_3x1100", 3, 1100, 1e-6, about="rows longer than a 16-lane block and 1024")
    add_rmsnorm_case(cx, "add_rmsnorm_inplace", 2, 17, 1e-5, inplace=True, about="y is the same buffer as x")
    add_rmsnorm_case(cx, "add_rmsnorm_nan_inf", 4, 5, 1e-5, specials=True,
                     about="NaN in x and +inf in residual make their rows NaN")
    add_rmsnorm_case(cx, "add_rmsnorm_rows0", 0, 3, 1e-5)


# ---------------------------------------------------------------------------
# Weights in storage formats: kb_quantize, kb_dequantize, kb_linear_w,
# kb_embedding_w.

WEIGHT_TYPES = [("f32", ref.DTYPE_F32), ("f16", ref.DTYPE_F16), ("bf16", ref.DTYPE_BF16), ("q8_0", ref.DTYPE_Q8_0),
                ("q4_0", ref.DTYPE_Q4_0)]

# Largest |f'| of each activation (kb_activation value): how far an error in
# the sum can move the output.  GELU's derivative peaks at 1.1289 (x = sqrt 2),
# the tanh form's at 1.1290, SiLU's at 1.0998.
ACT_LIPSCHITZ = {0: 1.0, 1: 1.0, 2: 1.13, 3: 1.13, 4: 1.1}


def ceil_2_digits(v):
    """v rounded up to two significant decimal digits (exactly, with decimal),
    so that the manifest shows a readable bound that is never below v."""
    d = Decimal(v)
    if d == 0:
        return 0.0
    return float(d.quantize(Decimal(1).scaleb(d.adjusted() - 1), rounding=ROUND_CEILING))


def linear_w_quant_tolerance(x, w, bias, act):
    """The tolerance of a kb_linear_w case with Q8_0 / Q4_0 weights.

    Such a product quantizes each row of x per block of 32 to int8 (scale
    dx_b = max|x| / 127 over the block, kernels/cpu/quant/qdot.h), so it is
    not within a few ulps of the float64 product of the dequantized weights w
    and x: per output (i, j) the error of the sum is at most (the bound of
    docs/kernels.md, which kernels/cpu/quant/qmatmul_test.c checks)
      B = sum_b (dx_b / 2) (1 + 2^-20) sum_{e in b} |w[j,e]|
          + (nb / 8 + 5) 2^-23 sum_e |w[j,e]| (|x[i,e]| + dx_b)
    (half a step of every activation times its weight, plus the float32
    roundings of the block sums).  Adding the bias rounds once more (2^-24 of
    the sum) and the activation moves an error by at most its Lipschitz
    constant L, then rounds within 2 ulps (2^-22 of the magnitude, which no
    activation increases): with T = |sum + bias| + B,
      A = L (B + 2^-24 T) + 2^-22 T.
    The case's tolerance is {"ulp": linear_w's, "abs": max A} (rows holding
    NaN or infinity are NaN, exactly), rounded up to two digits."""
    x64, w64 = np.asarray(x, dtype=np.float64), np.asarray(w, dtype=np.float64)
    lip = ACT_LIPSCHITZ[int(act)]
    worst = 0.0
    for i in range(x64.shape[0]):
        if not np.isfinite(x64[i]).all():
            continue
        exact, err = sum_bounds(x64[i], w64, ref.DTYPE_Q8_0)  # B: the same for both block formats
        total = np.abs(exact + (0.0 if bias is None else np.asarray(bias, dtype=np.float64))) + err
        worst = max(worst, float(np.max(lip * (err + 2.0**-24 * total) + 2.0**-22 * total, initial=0.0)))
    return {"ulp": TOLERANCES["linear_w"]["ulp"], "abs": ceil_2_digits(worst)}


def half_bits(sign, exponent, fraction):
    return (sign << 15) | (exponent << 10) | fraction


def random_scales(g, n):
    """n finite binary16 scales over every exponent (zero and subnormals
    included), as bytes [n, 2]: arbitrary data, not what a quantizer writes."""
    bits = (g.integers(0, 2, n) << 15) | (g.integers(0, 31, n) << 10) | g.integers(0, 1024, n)
    return np.stack([bits & 0xFF, bits >> 8], axis=1).astype(np.uint8)


def raw_blocks(g, dtype, rows, cols, scales=None):
    """Arbitrary bytes of a [rows, cols] block-format tensor: random (or
    given) scales, random quantized values (Q8_0's -128 included, which
    quantizing never produces)."""
    nblocks = rows * cols // ref.QK
    body = 32 if dtype == ref.DTYPE_Q8_0 else 16
    d = random_scales(g, nblocks) if scales is None else scales
    qs = g.integers(0, 256, (nblocks, body)).astype(np.uint8)
    return np.concatenate([d, qs], axis=1).reshape(-1)


def raw_floats(g, dtype, rows, cols):
    """Arbitrary bytes of a [rows, cols] F32 / F16 / BF16 tensor: random bit
    patterns (infinities, NaN, subnormals and signed zeros among them).
    F32 NaN patterns get the quiet bit: F32 bytes are copied as they are, and
    a signalling NaN may be quieted by a binding's float handling, which is
    not what this kernel tests; the 16-bit formats widen NaN to a quiet NaN
    in C anyway."""
    n = rows * cols
    if dtype == ref.DTYPE_F32:
        bits = g.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        nan = ((bits & 0x7F800000) == 0x7F800000) & ((bits & 0x007FFFFF) != 0)
        bits[nan] |= np.uint32(0x00400000)
        return bits.astype("<u4").view(np.uint8)
    return g.integers(0, 1 << 16, n).astype("<u2").view(np.uint8)


def gen_weights(cx):
    """kb_quantize, kb_dequantize, kb_linear_w and kb_embedding_w."""
    Q8, Q4, F16, BF16, F32 = ref.DTYPE_Q8_0, ref.DTYPE_Q4_0, ref.DTYPE_F16, ref.DTYPE_BF16, ref.DTYPE_F32

    def quantize_case(name, dtype, x, about=""):
        x = f32(x)
        y = ref.quantize(x, dtype)
        cx.add(name, "quantize", dims={"rows": x.shape[0], "cols": x.shape[1], "y_bytes": y.size},
               scalars={"type": dtype}, inputs={"x": x}, expected={"y": y}, about=about)

    for label, dtype in (("q8_0", Q8), ("q4_0", Q4)):
        name = "quantize_%s_6x96" % label
        g = rng_for(name)
        x = g.standard_normal((6, 96)) * np.array([[1e-3], [1.0], [30.0], [1e4], [1.0], [0.2]])
        x[4] += 5.0  # one sign dominates: the maxima are positive
        x[5] = g.uniform(-1, 1, 96)
        quantize_case(name, dtype, x, about="rows of different scales; 3 blocks per row")

    # One block per row: GGML's rounding details (kernels/cpu/quant/README.md).
    g = rng_for("quantize_q8_0_special")
    q8 = {
        "ties": [127.0] + [k + 0.5 for k in range(-15, 16)],       # d = 1: x * id is x, .5 away from zero
        "zeros": [0.0] * 32,                                       # d = 0, id = 0
        "signed zeros": [(-0.0 if k % 2 else 0.0) for k in range(32)],
        "negative max": list(g.standard_normal(31)) + [-9.0],
        "f16 tie to even 1.0": [127.0 * (1 + 2.0**-11)] + list(g.uniform(-100, 100, 31)),   # d = 1 + 2^-11
        "f16 tie up": [-127.0 * (1 + 3 * 2.0**-11)] + list(g.uniform(-100, 100, 31)),       # d = 1 + 3 2^-11
        "f16-subnormal scale": list(g.standard_normal(32) * 1e-5),
        "scale rounds to f16 0": list(g.standard_normal(32) * 1e-7),
        "1/d overflows": [1e-40, -3e-41] + [0.0] * 30,             # x * id non-finite: codes 0
        "largest scale": [65519.0 * 127] + list(g.uniform(-8e6, 8e6, 31)),                # f16(d) = 65504
    }
    quantize_case("quantize_q8_0_special", Q8, [v for v in q8.values()],
                  about="rows: " + "; ".join(q8))
    g = rng_for("quantize_q4_0_special")
    q4 = {
        "zeros": [0.0] * 32,                                       # max = +0.0: d = -0.0, codes 8
        "zeros, first -0.0": [-0.0] + [0.0] * 31,                  # still d = -0.0 (ggml's C, not numpy)
        "max -8, halves": [k / 2 for k in range(-16, 16)],         # d = 1: x + 8.5 truncated
        "max +8": [8.0] + [k / 2 for k in range(-15, 16)],         # d = -1
        "repeated max, +3 first": [3.0, -3.0] + list(g.uniform(-2.9, 2.9, 30)),
        "repeated max, -3 first": [-3.0, 3.0] + list(g.uniform(-2.9, 2.9, 30)),
        "max in the high half": list(g.uniform(-1, 1, 20)) + [-4.0] + list(g.uniform(-1, 1, 11)),
        "f16-subnormal scale": list(g.standard_normal(32) * 1e-5),
        "1/d overflows": [3e-41, -1e-41] + [0.0] * 30,
        "largest scale": [-65519.0 * 8] + list(g.uniform(-5e5, 5e5, 31)),                  # f16(d) = 65504
    }
    quantize_case("quantize_q4_0_special", Q4, [v for v in q4.values()],
                  about="rows: " + "; ".join(q4))
    quantize_case("quantize_q8_0_rows0", Q8, np.zeros((0, 64)), about="rows == 0: no bytes")
    quantize_case("quantize_q4_0_cols0", Q4, np.zeros((3, 0)), about="cols == 0: no bytes")

    special16 = {
        F16: [65504.0, 65519.99, 65520.0, -7e4, 2.0**-24, 2.0**-25, 3 * 2.0**-25, 1.5 * 2.0**-24, 2.0**-14,
              2.0**-14 - 2.0**-25, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 1e-10, -1e-10, -0.0, 0.0, math.inf, -math.inf],
        BF16: [3.4028235e38, 3.3895314e38, 1 + 2.0**-8, 1 + 3 * 2.0**-8, 1e-40, 2.0**-133, 2.0**-134,
               3 * 2.0**-134, 1e-45, -1e-45, 1.1754944e-38, 65504.0, -0.0, 0.0, math.inf, -math.inf, 1e30, -3.0],
    }
    for label, dtype in (("f16", F16), ("bf16", BF16), ("f32", F32)):
        name = "quantize_%s_3x37" % label
        g = rng_for(name)
        x = f32(g.standard_normal((3, 37)) * np.array([[1.0], [1e3], [1e-3]]))
        if dtype == F32:
            x[2, :4] = [math.nan, -0.0, math.inf, 1e-45]  # copied bit for bit
        else:
            sp = special16[dtype]
            x[2, :len(sp)] = sp
        quantize_case(name, dtype, x, about="random rows; row 2 starts with %s" % (
            "NaN, -0, inf, a subnormal" if dtype == F32 else
            "ties, overflow to infinity, subnormals and signed zeros (round to nearest even)"))

    def dequantize_case(name, dtype, rows, cols, data, about=""):
        data = np.asarray(data, dtype=np.uint8)
        cx.add(name, "dequantize", dims={"rows": rows, "cols": cols, "x_bytes": data.size}, scalars={"type": dtype},
               inputs={"x": data}, expected={"y": ref.dequantize(data, dtype, rows, cols)}, about=about)

    for label, dtype in (("q8_0", Q8), ("q4_0", Q4)):
        name = "dequantize_%s_4x64" % label
        dequantize_case(name, dtype, 4, 64, raw_blocks(rng_for(name), dtype, 4, 64),
                        about="arbitrary bytes: finite scales of every binary16 exponent, random codes")
        name = "dequantize_%s_special_scales" % label
        g = rng_for(name)
        special = [half_bits(0, 31, 0), half_bits(1, 31, 0), half_bits(0, 31, 0x200), half_bits(0, 31, 1),
                   half_bits(0, 30, 0x3FF), half_bits(0, 0, 1), half_bits(1, 0, 0), half_bits(0, 0, 0)]
        scales = np.array([[b & 0xFF, b >> 8] for b in special], dtype=np.uint8)
        data = raw_blocks(g, dtype, len(special), 32, scales).reshape(len(special), -1)
        data[:, 2:5] = [0x00, 0x80, 0x7F] if dtype == Q8 else [0x08, 0xF0, 0x7F]
        dequantize_case(name, dtype, len(special), 32, data,
                        about="scales +inf, -inf, NaN, signalling NaN, 65504, 2^-24, -0, +0 (element = d * q in "
                              "IEEE float: inf * 0 is NaN); codes 0, -128 and 127 (Q4_0: -8 and 7) in each")
    for label, dtype in (("f32", F32), ("f16", F16), ("bf16", BF16)):
        name = "dequantize_%s_3x40" % label
        dequantize_case(name, dtype, 3, 40, raw_floats(rng_for(name), dtype, 3, 40),
                        about="random bit patterns: exact widening")
    dequantize_case("dequantize_q4_0_rows0", Q4, 0, 32, np.zeros(0), about="rows == 0: no bytes")

    for t, (label, dtype) in enumerate(WEIGHT_TYPES):
        float_weights = dtype not in ref.BLOCK_FORMATS
        cases = [  # name, rows, in, out, act, bias
            ("linear_w_%s_rows1" % label, 1, 64, 48, 0, True),
            ("linear_w_%s_rows7" % label, 7, 45 if float_weights else 96, 17, (2, 3)[t % 2], False),
            ("linear_w_%s_rows64" % label, 64, 64, 40, (4, 1)[t % 2], True),
        ]
        if label == "q8_0":
            cases.append(("linear_w_q8_0_nonfinite", 4, 64, 6, 0, True))
        if not float_weights:
            cases.append(("linear_w_%s_in0" % label, 3, 0, 5, 4, True))
        if label == "f16":
            cases.append(("linear_w_f16_in0", 3, 0, 5, 4, True))
        if label == "bf16":
            cases.append(("linear_w_bf16_rows0", 0, 32, 4, 2, True))
        for name, rows, inf, outf, act, with_bias in cases:
            g = rng_for(name)
            x = f32(g.standard_normal((rows, inf)))
            w = f32(g.standard_normal((outf, inf)) / math.sqrt(max(inf, 1)))
            b = f32(g.standard_normal(outf) * 0.5) if with_bias else None
            about = ["weight as %s" % label.upper(), "act %d" % act, "bias" if with_bias else "no bias"]
            if name.endswith("nonfinite"):
                x[1, 40], x[2, 3], x[3, 63] = math.nan, -math.inf, math.inf
                about.append("rows 1-3 hold NaN, -inf, inf: those rows are NaN")
            wbytes = ref.quantize(w, dtype)
            want = ref.linear_w(x, dtype, wbytes, outf, b, act)
            tol = None
            if not float_weights:
                tol = linear_w_quant_tolerance(x, ref.dequantize(wbytes, dtype, outf, inf), b, act)
                about.append("tolerance from the documented bound")
            cx.add(name, "linear_w", dims={"rows": rows, "in_features": inf, "out_features": outf,
                                           "weight_bytes": wbytes.size},
                   scalars={"weight_type": dtype, "act": act}, inputs={"x": x, "weight": wbytes, "bias": b}
                   if with_bias else {"x": x, "weight": wbytes}, null=[] if with_bias else ["bias"],
                   expected={"y": want}, tolerance=tol, about="; ".join(about))

    for label, dtype in WEIGHT_TYPES:
        name = "embedding_w_%s" % label
        g = rng_for(name)
        n_ids, vocab, dim = 7, 12, 33 if dtype in (F32, F16) else 64
        ids = i32(g.integers(0, vocab, n_ids))
        ids[0], ids[1], ids[2] = 0, vocab - 1, 0
        table = ref.quantize(f32(g.standard_normal((vocab, dim))), dtype)
        cx.add(name, "embedding_w", dims={"n_ids": n_ids, "vocab": vocab, "dim": dim, "table_bytes": table.size},
               scalars={"table_type": dtype}, inputs={"ids": ids, "table": table},
               expected={"out": ref.embedding_w(ids, dtype, table, vocab, dim)},
               about="repeated ids and both ends of [0, vocab)")
    name = "embedding_w_q8_0_raw"
    g = rng_for(name)
    ids = i32([3, 0, 3, 1])
    table = raw_blocks(g, Q8, 4, 64)
    cx.add(name, "embedding_w", dims={"n_ids": 4, "vocab": 4, "dim": 64, "table_bytes": table.size},
           scalars={"table_type": Q8}, inputs={"ids": ids, "table": table},
           expected={"out": ref.embedding_w(ids, Q8, table, 4, 64)}, about="arbitrary table bytes")
    name = "embedding_w_f16_n0"
    table = ref.quantize(f32(rng_for(name).standard_normal((3, 8))), F16)
    cx.add(name, "embedding_w", dims={"n_ids": 0, "vocab": 3, "dim": 8, "table_bytes": table.size},
           scalars={"table_type": F16}, inputs={"ids": i32([]), "table": table},
           expected={"out": np.zeros((0, 8))}, about="no ids")


def gen_rope_ex(cx):
    NONE, LINEAR, LLAMA3 = ref.ROPE_SCALING_NONE, ref.ROPE_SCALING_LINEAR, ref.ROPE_SCALING_LLAMA3
    rope = [  # name, batch, seq, q_heads, kv_heads (None: k NULL), head_dim, rotary_dim, adjacent, theta,
              # scaling, factor, low, high, original, max position, about
        ("rope_ex_half", 1, 4, 2, 1, 16, 16, False, 10000.0, NONE, 1.0, 1.0, 4.0, 8192, 4096,
         "half pairs, whole head, no scaling (kb_rope's formula)"),
        ("rope_ex_adjacent", 1, 4, 2, 1, 16, 16, True, 10000.0, NONE, 1.0, 1.0, 4.0, 8192, 4096,
         "adjacent pairs (2i, 2i+1): GPT-J, GGUF's permuted q/k"),
        ("rope_ex_partial_half", 2, 3, 3, 1, 20, 8, False, 10000.0, NONE, 1.0, 1.0, 4.0, 8192, 2048,
         "rotary_dim 8 of head_dim 20 (GPT-NeoX, Phi-2): the rest passes through"),
        ("rope_ex_partial_adjacent", 2, 3, 2, 2, 24, 10, True, 10000.0, NONE, 1.0, 1.0, 4.0, 8192, 2048,
         "rotary_dim 10 of 24 with adjacent pairs (GPT-J)"),
        ("rope_ex_linear", 1, 5, 2, 1, 32, 32, False, 10000.0, LINEAR, 4.0, 1.0, 4.0, 8192, 16384,
         "linear scaling, factor 4"),
        ("rope_ex_llama3", 2, 4, 4, 2, 64, 64, False, 500000.0, LLAMA3, 8.0, 1.0, 4.0, 8192, 131072,
         "Llama 3.1 scaling (factor 8, low 1, high 4, original 8192): every band present at head_dim 64"),
        ("rope_ex_llama3_short", 1, 3, 2, 1, 32, 24, True, 10000.0, LLAMA3, 2.5, 2.0, 16.0, 256, 100000,
         "llama3 with a short original context and partial adjacent rotary"),
        ("rope_ex_k_null", 3, 2, 2, None, 16, 12, False, 10000.0, NONE, 1.0, 1.0, 4.0, 8192, 1000,
         "k NULL: only q rotates"),
        ("rope_ex_batch_positions", 4, 1, 4, 2, 32, 32, False, 1e6, NONE, 1.0, 1.0, 4.0, 8192, 65536,
         "decode: four sequences at different positions in one call"),
        ("rope_ex_empty", 0, 3, 2, 1, 8, 8, False, 10000.0, NONE, 1.0, 1.0, 4.0, 8192, 1, "batch 0"),
    ]
    for (name, batch, seq, qh, kh, hd, rd, adjacent, theta, scaling, factor, lo, hi, orig, maxpos,
         about) in rope:
        g = rng_for(name)
        q = f32(g.standard_normal((batch, seq, qh, hd)))
        k = None if kh is None else f32(g.standard_normal((batch, seq, kh, hd)))
        pos = i32(g.integers(0, maxpos, (batch, seq)))
        if pos.size:
            pos.flat[0] = 0
            pos.flat[-1] = maxpos - 1
        q2, k2 = ref.rope_ex(q, k, pos, rd, adjacent, np.float32(theta), scaling, np.float32(factor),
                             np.float32(lo), np.float32(hi), orig)
        inputs, expected = {"positions": pos, "q": q}, {"q": q2}
        if k is not None:
            inputs["k"], expected["k"] = k, k2
        cx.add(name, "rope_ex", dims={"batch": batch, "seq": seq, "q_heads": qh, "kv_heads": kh or 0, "head_dim": hd,
                                      "rotary_dim": rd},
               scalars={"style": int(adjacent), "theta": theta, "scaling": scaling, "factor": factor,
                        "low_freq_factor": lo, "high_freq_factor": hi, "original_max_position": orig},
               inputs=inputs, expected=expected, null=["k"] if k is None else [], about=about)


def gen_training(cx):
    ce = [  # name, rows, classes, scale, ignore_index, n_ignored
        ("cross_entropy_4x10", 4, 10, 2.0, -100, 0),
        ("cross_entropy_ignore", 6, 13, 2.0, -100, 2),
        ("cross_entropy_ignore_valid_class", 5, 7, 2.0, 3, 0),
        ("cross_entropy_1x1", 1, 1, 1.0, -100, 0),
        ("cross_entropy_wide", 2, 1031, 3.0, -100, 0),
        ("cross_entropy_all_ignored", 3, 5, 1.0, -1, 3),
        ("cross_entropy_large_logits", 3, 9, 30.0, -100, 0),
        ("cross_entropy_rows0", 0, 5, 1.0, -100, 0),
    ]
    for name, rows, classes, sc, ign, n_ign in ce:
        g = rng_for(name)
        logits = f32(g.standard_normal((rows, classes)) * sc)
        targets = i32(g.integers(0, classes, rows))
        targets[:n_ign] = ign
        losses, mean = ref.cross_entropy(logits, targets, ign)
        cx.add(name, "cross_entropy", dims={"rows": rows, "classes": classes}, scalars={"ignore_index": ign},
               inputs={"logits": logits, "targets": targets}, expected={"losses": losses, "mean_loss": mean},
               about="mean over no rows is NaN" if n_ign == rows and rows > 0 else "")
        bname = name.replace("cross_entropy", "cross_entropy_backward")
        for dloss in (1.0, 0.37):
            dname = bname + ("" if dloss == 1.0 else "_dloss")
            if dloss != 1.0 and rows not in (4, 6):
                continue
            cx.add(dname, "cross_entropy_backward", dims={"rows": rows, "classes": classes},
                   scalars={"ignore_index": ign, "dloss": dloss}, inputs={"logits": logits, "targets": targets},
                   expected={"dlogits": ref.cross_entropy_backward(logits, targets, ign, np.float32(dloss))})
    name = "cross_entropy_backward_inplace"
    g = rng_for(name)
    logits, targets = f32(g.standard_normal((3, 11))), i32([4, -100, 10])
    cx.add(name, "cross_entropy_backward", dims={"rows": 3, "classes": 11},
           scalars={"ignore_index": -100, "dloss": 2.0}, inputs={"logits": logits, "targets": targets},
           expected={"dlogits": ref.cross_entropy_backward(logits, targets, -100, np.float32(2.0))},
           alias={"dlogits": "logits"})

    adam = [  # name, n, lr, beta1, beta2, eps, wd, step
        ("adamw_step_n0", 0, 1e-3, 0.9, 0.999, 1e-8, 0.01, 1),
        ("adamw_step_n1", 1, 1e-3, 0.9, 0.999, 1e-8, 0.01, 1),
        ("adamw_step_n37", 37, 1e-3, 0.9, 0.999, 1e-8, 0.01, 3),
        ("adamw_step_n1031", 1031, 3e-4, 0.9, 0.95, 1e-6, 0.1, 10),
        ("adamw_step_no_decay", 17, 1e-2, 0.8, 0.99, 1e-8, 0.0, 1),
        ("adamw_step_beta0", 17, 1e-2, 0.0, 0.0, 1e-8, 0.05, 1),
        ("adamw_step_late", 33, 1e-3, 0.9, 0.999, 1e-8, 0.01, 100000),
    ]
    for name, n, lr, b1, b2, eps, wd, step in adam:
        g = rng_for(name)
        params = f32(g.standard_normal(n))
        grads = f32(g.standard_normal(n) * 0.1)
        m = f32(g.standard_normal(n) * 0.01) if step > 1 else f32(np.zeros(n))
        v = f32(np.abs(g.standard_normal(n)) * 1e-3) if step > 1 else f32(np.zeros(n))
        if n > 3:
            grads[1] = 0.0
        sc = {"lr": lr, "beta1": b1, "beta2": b2, "eps": eps, "weight_decay": wd}
        p2, m2, v2 = ref.adamw_step(params, grads, m, v, *(np.float32(sc[k]) for k in
                                                            ("lr", "beta1", "beta2", "eps", "weight_decay")), step)
        sc["step"] = step
        cx.add(name, "adamw_step", dims={"n": n}, scalars=sc,
               inputs={"params": params, "grads": grads, "m": m, "v": v},
               expected={"params": p2, "m": m2, "v": v2})


def gen_decoding(cx):
    for rows, cols in ((3, 7), (1, 1), (0, 5), (2, 4099)):
        name = "argmax_%dx%d" % (rows, cols)
        x = f32(rng_for(name).standard_normal((rows, cols)))
        cx.add(name, "argmax", dims={"rows": rows, "cols": cols}, inputs={"x": x}, expected={"out": ref.argmax(x)})
    name = "argmax_special"
    x = f32([[1.0, 3.0, 3.0, 2.0],                 # tie: first
             [1.0, math.nan, 5.0, math.nan],       # NaN is larger than every number: first NaN
             [-math.inf, -math.inf, -math.inf, -math.inf],
             [0.0, math.inf, 7.0, math.inf],
             [-0.0, 0.0, -1.0, -0.0],              # -0 == 0: first
             [math.nan, 1.0, 2.0, 3.0]])
    cx.add(name, "argmax", dims={"rows": 6, "cols": 4}, inputs={"x": x}, expected={"out": ref.argmax(x)},
           about="ties, NaN, infinities, signed zeros")

    min_margin = 1e-9

    def check(name, margin):
        assert margin > min_margin, "%s: threshold too close to a boundary (%g); pick another seed" % (name, margin)

    samp = [  # name, rows, cols, scale, temperature, seed
        ("sample_64x50", 64, 50, 2.0, 1.0, 42),
        ("sample_cold", 16, 30, 1.0, 0.25, 7),
        ("sample_hot_bigseed", 16, 30, 1.0, 3.0, 0xDEADBEEFCAFEF00D),
        ("sample_seed_high_word", 8, 10, 1.0, 1.0, 1 << 32),
        ("sample_cols1", 3, 1, 1.0, 1.0, 5),
        ("sample_rows0", 0, 6, 1.0, 1.0, 5),
        ("sample_long_row", 2, 4099, 3.0, 0.8, 123456789),
        ("sample_peaked", 4, 100, 1.0, 1.0, 99),
    ]
    for name, rows, cols, sc, temp, seed in samp:
        logits = f32(rng_for(name).standard_normal((rows, cols)) * sc)
        if name == "sample_peaked":
            logits[:, 37] += 40.0
            logits[:, 5] = -math.inf
        out, margin = ref.sample(logits, np.float32(temp), seed, with_margin=True)
        check(name, margin)
        cx.add(name, "sample", dims={"rows": rows, "cols": cols}, scalars={"temperature": temp, "seed": seed},
               inputs={"logits": logits}, expected={"out": out})

    topk = [  # name, rows, cols, k, temperature, seed
        ("topk_sample_k1", 8, 20, 1, 1.0, 3),
        ("topk_sample_k5", 32, 40, 5, 1.0, 11),
        ("topk_sample_kcols", 16, 12, 12, 0.7, 12),
        ("topk_sample_ties", 16, 10, 4, 1.0, 2024),
        ("topk_sample_bigseed", 8, 64, 10, 1.5, 0xFFFFFFFFFFFFFFFF),
        ("topk_sample_rows0", 0, 5, 2, 1.0, 1),
        ("topk_sample_long_row", 1, 4099, 50, 1.0, 77),
    ]
    for name, rows, cols, k, temp, seed in topk:
        logits = f32(rng_for(name).standard_normal((rows, cols)))
        if name == "topk_sample_ties":
            logits = f32(np.round(logits))  # many exact ties, including across the cut-off
        out, margin = ref.topk_sample(logits, k, np.float32(temp), seed, with_margin=True)
        check(name, margin)
        cx.add(name, "topk_sample", dims={"rows": rows, "cols": cols, "k": k},
               scalars={"temperature": temp, "seed": seed}, inputs={"logits": logits}, expected={"out": out})

    topp = [  # name, rows, cols, p, temperature, seed
        ("topp_sample_p09", 32, 40, 0.9, 1.0, 5),
        ("topp_sample_p05", 32, 40, 0.5, 0.8, 6),
        ("topp_sample_p1", 16, 30, 1.0, 1.0, 8),
        ("topp_sample_tiny_p", 8, 30, 1e-6, 1.0, 9),
        ("topp_sample_ties", 16, 10, 0.7, 1.0, 10),
        ("topp_sample_neg_inf", 8, 12, 1.0, 1.0, 13),
        ("topp_sample_rows0", 0, 5, 0.5, 1.0, 1),
        ("topp_sample_long_row", 1, 4099, 0.95, 1.2, 0x123456789ABCDEF0),
    ]
    for name, rows, cols, p, temp, seed in topp:
        logits = f32(rng_for(name).standard_normal((rows, cols)) * 2)
        if name == "topp_sample_ties":
            logits = f32(np.round(logits))
        if name == "topp_sample_neg_inf":
            logits[:, 6:] = -math.inf  # trailing zero weights never join the nucleus
        out, margin = ref.topp_sample(logits, np.float32(p), np.float32(temp), seed, with_margin=True)
        check(name, margin)
        cx.add(name, "topp_sample", dims={"rows": rows, "cols": cols}, scalars={"p": p, "temperature": temp,
                                                                                 "seed": seed},
               inputs={"logits": logits}, expected={"out": out})


# ---------------------------------------------------------------------------
# Bad-input cases.

I64_MAX = 2**63 - 1
BIG = 2**40  # rows = cols = 2^40: 2^80 elements, the product overflows int64


# ---------------------------------------------------------------------------
# The decoder family: kb_kv_cache_append (the KV cache).


def gen_kv_cache(cx):
    # (batch, kv_heads, seq_new, capacity, head_dim, seq_major, positions)
    for name, b, kvh, t, cap, d, sm, pos in (
            ("kv_cache_append_prefill", 2, 2, 5, 8, 4, False, [0, 3]),
            ("kv_cache_append_decode", 3, 4, 1, 6, 8, False, [0, 5, 2]),
            ("kv_cache_append_seq_major", 2, 3, 2, 5, 6, True, [3, 1]),
            ("kv_cache_append_seq0", 2, 2, 0, 4, 4, False, [4, 0]),
            ("kv_cache_append_batch0", 0, 2, 1, 4, 4, True, [])):
        g = rng_for(name)
        k_new = f32(g.standard_normal((b, t, kvh, d)))
        v_new = f32(g.standard_normal((b, t, kvh, d)))
        shape = (b, cap, kvh, d) if sm else (b, kvh, cap, d)
        # What the cache held before: kept wherever nothing new lands.
        k_cache = f32(g.standard_normal(shape))
        v_cache = f32(g.standard_normal(shape))
        positions = i32(np.array(pos, dtype=np.int64))
        k2, v2 = ref.kv_cache_append(k_new, v_new, positions, k_cache, v_cache, sm)
        cx.add(name, "kv_cache_append",
               dims={"batch": b, "kv_heads": kvh, "seq_new": t, "capacity": cap, "head_dim": d},
               flags={"seq_major": sm},
               inputs={"k_new": k_new, "v_new": v_new, "positions": positions, "k_cache": k_cache,
                       "v_cache": v_cache},
               expected={"k_cache": k2, "v_cache": v2},
               about="sequences at different positions; the last slot filled" if b > 1 and t > 0 else "")


def gen_kv_cache16(cx):
    """kb_kv_cache_append_to_<t> and kb_attention_ex_kv_<t>."""
    for dt, dtype in HALF_TYPES:
        # (batch, kv_heads, seq_new, capacity, head_dim, seq_major, positions)
        for tag, b, kvh, t, cap, d, sm, pos in (("prefill", 2, 2, 3, 5, 4, False, [0, 2]),
                                                ("decode_seq_major", 3, 2, 1, 4, 4, True, [0, 3, 2])):
            name = "kv_cache_append_to_%s_%s" % (dt, tag)
            g = rng_for(name)
            k_new = f32(g.standard_normal((b, t, kvh, d)))
            v_new = f32(g.standard_normal((b, t, kvh, d)) * 1e4)
            # Values that round: ties, subnormals and overflow of the format.
            flat = k_new.reshape(-1)
            flat[:6] = f32([1.00390625, 1.01171875, 3e-41, -1e-6, 70000.0, -0.0])
            shape = (b, cap, kvh, d) if sm else (b, kvh, cap, d)
            k_cache = ref.to_half_bits(f32(g.standard_normal(shape)), dtype)
            v_cache = ref.to_half_bits(f32(g.standard_normal(shape)), dtype)
            positions = i32(np.array(pos, dtype=np.int64))
            k2, v2 = ref.kv_cache_append(ref.to_half_bits(k_new, dtype), ref.to_half_bits(v_new, dtype), positions,
                                         k_cache, v_cache, sm)
            cx.add(name, "kv_cache_append_to_" + dt,
                   dims={"batch": b, "kv_heads": kvh, "seq_new": t, "capacity": cap, "head_dim": d},
                   flags={"seq_major": sm},
                   inputs={"k_new": k_new, "v_new": v_new, "positions": positions, "k_cache": k_cache,
                           "v_cache": v_cache},
                   expected={"k_cache": k2.astype(np.uint16), "v_cache": v2.astype(np.uint16)},
                   about="float32 rows rounded into the 16-bit cache (ties, subnormals, overflow)")
        # (batch, heads, kv_heads, seq_q, seq_kv, head_dim, seq_major, lengths, mask dims, causal, bottom_right)
        for tag, b, h, kvh, sq, skv, d, sm, lens, mdims, causal, br in (
                ("decode", 2, 4, 2, 1, 40, 8, True, [40, 17], (2, 1, 1), True, True),
                ("prefill", 1, 2, 1, 9, 12, 8, False, None, None, True, False)):
            name = "attention_ex_kv_%s_%s" % (dt, tag)
            g = rng_for(name)
            qshape = (b, sq, h, d) if sm else (b, h, sq, d)
            kshape = (b, skv, kvh, d) if sm else (b, kvh, skv, d)
            q = f32(g.standard_normal(qshape))
            kb16, kw = half_of(g.standard_normal(kshape), dtype)
            vb16, vw = half_of(g.standard_normal(kshape), dtype)
            mask = f32(g.standard_normal(mdims + (skv,)) * 0.5) if mdims else None
            lengths = i32(lens) if lens is not None else None
            md = mdims or (0, 0, 0)
            inputs, null = {"q": q, "k": kb16, "v": vb16}, []
            if lengths is not None:
                inputs["kv_lengths"] = lengths
            else:
                null.append("kv_lengths")
            if mask is not None:
                inputs["mask"] = mask
            else:
                null.append("mask")
            cx.add(name, "attention_ex_kv_" + dt, null=null,
                   dims={"batch": b, "heads": h, "kv_heads": kvh, "seq_q": sq, "seq_kv": skv, "head_dim": d,
                         "mask_batch": md[0], "mask_heads": md[1], "mask_q": md[2]},
                   flags={"seq_major": sm, "causal": causal, "causal_bottom_right": br},
                   scalars={"scale": 0.0}, inputs=inputs,
                   expected={"out": ref.attention_ex(q, kw, vw, lengths, mask, causal, br, np.float32(0.0), sm)},
                   about="float32 queries over the widened 16-bit cache" +
                         (" (read in place)" if h // kvh * sq <= 16 else " (widened into scratch)"))


def gen_bad_kv_cache(add, IA, SM, OOM, OK):
    """Bad inputs of kb_kv_cache_append."""
    kv = "kv_cache_append"
    add(bad_case("kv_cache_append_position_past_capacity", kv, IA, values={"positions": [0, 3]},
                 about="3 + 1 new token > capacity 3"))
    add(bad_case("kv_cache_append_position_negative", kv, IA, values={"positions": [-1, 0]}))
    add(bad_case("kv_cache_append_last_slot_ok", kv, OK, values={"positions": [2, 2]},
                 about="2 + 1 == capacity: the last slot"))
    add(bad_case("kv_cache_append_seq0_position_checked", kv, IA, dims={"seq_new": 0},
                 values={"positions": [0, 4]}, about="positions are checked even when nothing is copied"))
    add(bad_case("kv_cache_append_null_k_new", kv, IA, null=["k_new"]))
    add(bad_case("kv_cache_append_null_positions", kv, IA, null=["positions"]))
    add(bad_case("kv_cache_append_null_v_cache", kv, IA, null=["v_cache"]))
    add(bad_case("kv_cache_append_batch0_null_ok", kv, OK, dims={"batch": 0},
                 null=["k_new", "v_new", "positions", "k_cache", "v_cache"], about="empty tensors may be NULL"))
    add(bad_case("kv_cache_append_negative_capacity", kv, IA, dims={"capacity": -1}))
    add(bad_case("kv_cache_append_overflow", kv, OOM, dims={"kv_heads": BIG, "head_dim": BIG}, requires=["huge_dim"]))
    add(bad_case("kv_cache_append_k_cache_overlaps_v_cache", kv, IA,
                 overlap={"v_cache": {"with": "k_cache", "offset": 4}}))
    add(bad_case("kv_cache_append_k_cache_is_k_new", kv, IA, dims={"capacity": 1},
                 overlap={"k_cache": {"with": "k_new", "offset": 0}}, about="the cache must not alias the new keys"))
    add(bad_case("kv_cache_append_v_cache_too_short", kv, SM, shapes={"v_cache": [2, 2, 2, 4]}))
    for dt in ("bf16", "f16"):
        kv16, at16 = "kv_cache_append_to_" + dt, "attention_ex_kv_" + dt
        add(bad_case(kv16 + "_position_past_capacity", kv16, IA, values={"positions": [0, 3]}))
        add(bad_case(kv16 + "_k_cache_overlaps_v_cache", kv16, IA,
                     overlap={"v_cache": {"with": "k_cache", "offset": 4}}))
        add(bad_case(at16 + "_null_k", at16, IA, null=["k"]))
        add(bad_case(at16 + "_lengths_out_of_range", at16, IA, values={"kv_lengths": [4, 1]}))


# ---------------------------------------------------------------------------
# 16-bit embedding, argmax and samplers: the float32 kernel on the exactly
# widened values, so the expected outputs are the float32 reference's on
# those values (embedding: the table's bit patterns).

HALF_TYPES = (("bf16", ref.DTYPE_BF16), ("f16", ref.DTYPE_F16))


def half_of(x, dtype):
    """(bits, widened float32 values) of x rounded to the 16-bit format."""
    bits = ref.to_half_bits(f32(x), dtype)
    return bits, f32(ref.from_half_bits(bits, dtype))


def gen_decoding16(cx):
    for dt, dtype in HALF_TYPES:
        top, nan, inf, ninf = (0x7BFF, 0x7E00, 0x7C00, 0xFC00) if dt == "f16" else (0x7F7F, 0x7FC0, 0x7F80, 0xFF80)
        name = "embedding_%s_rows" % dt
        g = rng_for(name)
        table = ref.to_half_bits(f32(g.standard_normal((7, 6))), dtype)
        # Special patterns are copied as they are: NaN, infinities, the
        # largest finite value, -0 and the smallest subnormal.
        table[2, :] = [nan, inf, ninf, top, 0x8000, 0x0001]
        ids = i32([2, 0, 6, 2, 5])
        cx.add(name, "embedding_" + dt, dims={"n_ids": 5, "vocab": 7, "dim": 6}, inputs={"ids": ids, "table": table},
               expected={"out": table[ids]}, about="rows copied bit for bit, special patterns included")

        name = "argmax_%s_special" % dt
        one, two = ref.to_half_bits(f32([1.0, 2.0]), dtype)
        x = np.array([[one, two, two, one],           # tie: first
                      [one, nan, two, nan],           # NaN is larger than every number: first NaN
                      [ninf, ninf, ninf, ninf],
                      [0, inf, two, inf],
                      [0x8000, 0, one | 0x8000, 0],   # -0 == 0: first
                      [nan, one, two, top]], dtype=np.uint16)
        cx.add(name, "argmax_" + dt, dims={"rows": 6, "cols": 4}, inputs={"x": x},
               expected={"out": ref.argmax(ref.from_half_bits(x, dtype))}, about="ties, NaN, infinities, signed zeros")
        name = "argmax_%s_2x4099" % dt
        bits, wide = half_of(rng_for(name).standard_normal((2, 4099)), dtype)
        cx.add(name, "argmax_" + dt, dims={"rows": 2, "cols": 4099}, inputs={"x": bits},
               expected={"out": ref.argmax(wide)}, about="rows past the kernel's 4096-column block")

    min_margin = 1e-9

    def logits16(name, rows, cols, dtype, scale=2.0):
        bits, wide = half_of(rng_for(name).standard_normal((rows, cols)) * scale, dtype)
        bits[:, 3::7] = 0xFC00 if dtype == ref.DTYPE_F16 else 0xFF80  # -inf: never drawn
        wide[:, 3::7] = -math.inf
        return bits, wide

    for dt, dtype in HALF_TYPES:
        name = "sample_%s_16x300" % dt
        bits, wide = logits16(name, 16, 300, dtype)
        out, margin = ref.sample(wide, np.float32(0.8), 4242, with_margin=True)
        assert margin > min_margin, name
        cx.add(name, "sample_" + dt, dims={"rows": 16, "cols": 300}, scalars={"temperature": 0.8, "seed": 4242},
               inputs={"logits": bits}, expected={"out": out},
               about="the float32 kernel's tokens on the widened logits (rows past the 256-column block)")
        name = "topk_sample_%s_16x40" % dt
        bits, wide = logits16(name, 16, 40, dtype)
        out, margin = ref.topk_sample(wide, 6, np.float32(1.2), 77, with_margin=True)
        assert margin > min_margin, name
        cx.add(name, "topk_sample_" + dt, dims={"rows": 16, "cols": 40, "k": 6},
               scalars={"temperature": 1.2, "seed": 77}, inputs={"logits": bits}, expected={"out": out})
        name = "topp_sample_%s_16x40" % dt
        bits, wide = logits16(name, 16, 40, dtype)
        out, margin = ref.topp_sample(wide, np.float32(0.8), np.float32(0.9), 0xFEEDFACE12345678, with_margin=True)
        assert margin > min_margin, name
        cx.add(name, "topp_sample_" + dt, dims={"rows": 16, "cols": 40},
               scalars={"p": 0.8, "temperature": 0.9, "seed": 0xFEEDFACE12345678}, inputs={"logits": bits},
               expected={"out": out})


def gen_bad_decoding16(add, IA, SM, OOM, OK):
    """Bad inputs of the 16-bit embedding, argmax and samplers (tensor
    values are bit patterns)."""
    for dt in ("bf16", "f16"):
        nan, pinf, ninf, one = (0x7E00, 0x7C00, 0xFC00, 0x3C00) if dt == "f16" else (0x7FC0, 0x7F80, 0xFF80, 0x3F80)
        emb, am = "embedding_" + dt, "argmax_" + dt
        add(bad_case(emb + "_id_eq_vocab", emb, IA, values={"ids": [0, 5, 1]},
                     about="ids must lie in [0, vocab); checked before anything is written"))
        add(bad_case(emb + "_id_negative", emb, IA, values={"ids": [0, 1, -1]}))
        add(bad_case(emb + "_null_table", emb, IA, null=["table"]))
        add(bad_case(emb + "_overflow", emb, OOM, dims={"n_ids": BIG, "dim": BIG}, requires=["huge_dim"]))
        add(bad_case(emb + "_out_too_short", emb, SM, shapes={"out": [3, 1]}))
        add(bad_case(emb + "_out_overlaps_table", emb, IA, overlap={"out": {"with": "table", "offset": 4}}))
        add(bad_case(am + "_cols0", am, IA, dims={"cols": 0}))
        add(bad_case(am + "_negative_rows", am, IA, dims={"rows": -5}))
        add(bad_case(am + "_null_x", am, IA, null=["x"]))
        add(bad_case(am + "_nan_ok", am, OK, values={"x": [one, nan, 0, pinf, ninf, 0]},
                     about="NaN and infinities are ordinary argmax inputs"))
        for base in ("sample", "topk_sample", "topp_sample"):
            kern = base + "_" + dt
            add(bad_case(kern + "_logits_nan", kern, IA, values={"logits": [0, one, one, one, nan, 0]}))
            add(bad_case(kern + "_logits_pos_inf", kern, IA, values={"logits": [0, pinf, one, one, 0, 0]}))
            add(bad_case(kern + "_row_all_neg_inf", kern, IA, values={"logits": [0, one, 0] + [ninf] * 3}))
            add(bad_case(kern + "_some_neg_inf_ok", kern, OK, values={"logits": [0, ninf, one, ninf, ninf, one]}))
            add(bad_case(kern + "_temperature_zero", kern, IA, scalars={"temperature": 0.0}))
            add(bad_case(kern + "_temperature_nan", kern, IA, scalars={"temperature": math.nan}))
            add(bad_case(kern + "_null_logits", kern, IA, null=["logits"]))
            add(bad_case(kern + "_out_overlaps_logits", kern, IA, overlap={"out": {"with": "logits", "offset": 2}}))
        add(bad_case("topk_sample_%s_k0" % dt, "topk_sample_" + dt, IA, dims={"k": 0}))
        add(bad_case("topk_sample_%s_k_gt_cols" % dt, "topk_sample_" + dt, IA, dims={"k": 4}))
        add(bad_case("topk_sample_%s_k_eq_cols_ok" % dt, "topk_sample_" + dt, OK, dims={"k": 3}))
        for v, tag in ((0.0, "zero"), (1.5, "above_one"), (math.nan, "nan")):
            add(bad_case("topp_sample_%s_p_%s" % (dt, tag), "topp_sample_" + dt, IA, scalars={"p": v}))
        add(bad_case("topp_sample_%s_p1_ok" % dt, "topp_sample_" + dt, OK, scalars={"p": 1.0}))


def tensor_shape(kernel, pname, dims, flags):
    """Logical shape of a tensor for the given dims, or None when a dim is
    negative or the element count is absurd (overflow cases)."""
    spec = dict(SIGNATURES[kernel])[pname].split()
    shape = []
    for expr in spec[2].split(","):
        if "?" in expr:
            cond, rest = expr.split("?")
            yes, no = rest.split(":")
            expr = yes if flags[cond] else no
        shape.append(int(expr) if expr.isdigit() else dims[expr])
    if any(v < 0 for v in shape) or math.prod(shape) > 2**31:
        return None
    return shape


def tensor_len(kernel, pname, dims, flags):
    """Number of elements a tensor needs for (valid, non-negative) dims."""
    return math.prod(tensor_shape(kernel, pname, dims, flags))


BASE = {  # a valid call of every kernel: dims, flags, scalars
    "silu": ({"n": 4}, {}, {}),
    "gelu": ({"n": 4}, {}, {}),
    "gelu_tanh": ({"n": 4}, {}, {}),
    "add": ({"n": 4}, {}, {}),
    "mul": ({"n": 4}, {}, {}),
    "scale": ({"n": 4}, {}, {"alpha": 2.0}),
    "add_bias": ({"rows": 2, "cols": 3}, {}, {}),
    "softmax": ({"rows": 2, "cols": 3}, {}, {}),
    "log_softmax": ({"rows": 2, "cols": 3}, {}, {}),
    "rmsnorm": ({"rows": 2, "cols": 3}, {}, {"eps": 1e-5}),
    "layernorm": ({"rows": 2, "cols": 3}, {}, {"eps": 1e-5}),
    "gemm": ({"m": 2, "n": 3, "k": 4, "lda": 4, "ldb": 3, "ldc": 3}, {"trans_a": False, "trans_b": False},
             {"alpha": 1.0, "beta": 0.0}),
    "embedding": ({"n_ids": 3, "vocab": 5, "dim": 2}, {}, {}),
    "rope": ({"seq": 2, "heads": 1, "head_dim": 4}, {}, {"theta": 10000.0}),
    "attention": ({"batch": 1, "heads": 2, "kv_heads": 1, "seq_q": 2, "seq_kv": 3, "head_dim": 4},
                  {"causal": False}, {"scale": 0.0}),
    "cross_entropy": ({"rows": 2, "classes": 3}, {}, {"ignore_index": -100}),
    "cross_entropy_backward": ({"rows": 2, "classes": 3}, {}, {"ignore_index": -100, "dloss": 1.0}),
    "adamw_step": ({"n": 4}, {}, {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01,
                                  "step": 1}),
    "argmax": ({"rows": 2, "cols": 3}, {}, {}),
    "sample": ({"rows": 2, "cols": 3}, {}, {"temperature": 1.0, "seed": 1}),
    "topk_sample": ({"rows": 2, "cols": 3, "k": 2}, {}, {"temperature": 1.0, "seed": 1}),
    "topp_sample": ({"rows": 2, "cols": 3}, {}, {"p": 0.9, "temperature": 1.0, "seed": 1}),
    "linear": ({"rows": 2, "in_features": 3, "out_features": 2}, {}, {"act": 0}),
    "attention_ex": ({"batch": 2, "heads": 2, "kv_heads": 1, "seq_q": 2, "seq_kv": 3, "head_dim": 4, "mask_batch": 2,
                      "mask_heads": 1, "mask_q": 1},
                     {"seq_major": False, "causal": False, "causal_bottom_right": False}, {"scale": 0.0}),
    "gemm_batched": ({"batch": 2, "m": 2, "n": 3, "k": 4, "lda": 4, "stride_a": 8, "ldb": 3, "stride_b": 12, "ldc": 3,
                      "stride_c": 6}, {"trans_a": False, "trans_b": False}, {"alpha": 1.0, "beta": 0.0}),
    # Byte counts for the type: [2, 64] as Q8_0 is 2 * 2 * 34 bytes, [3, 64]
    # as Q4_0 3 * 2 * 18, [5, 32] as Q8_0 5 * 34.
    "quantize": ({"rows": 2, "cols": 64, "y_bytes": 136}, {}, {"type": ref.DTYPE_Q8_0}),
    "dequantize": ({"rows": 2, "cols": 64, "x_bytes": 72}, {}, {"type": ref.DTYPE_Q4_0}),
    "linear_w": ({"rows": 2, "in_features": 64, "out_features": 3, "weight_bytes": 108}, {},
                 {"weight_type": ref.DTYPE_Q4_0, "act": 0}),
    "embedding_w": ({"n_ids": 3, "vocab": 5, "dim": 32, "table_bytes": 170}, {}, {"table_type": ref.DTYPE_Q8_0}),
    "moe_route": ({"tokens": 2, "experts": 4, "top_k": 2}, {}, {"routing": ref.MOE_SOFTMAX_TOPK_NORM}),
    "rope_ex": ({"batch": 1, "seq": 2, "q_heads": 2, "kv_heads": 1, "head_dim": 4, "rotary_dim": 4}, {},
                {"style": 0, "theta": 10000.0, "scaling": 0, "factor": 1.0, "low_freq_factor": 1.0,
                 "high_freq_factor": 4.0, "original_max_position": 8192}),
    "glu": ({"rows": 2, "cols": 3, "ld_gate": 3, "ld_up": 3}, {}, {"act": 4}),
    "add_rmsnorm": ({"rows": 2, "cols": 3}, {}, {"eps": 1e-5}),
    "kv_cache_append": ({"batch": 2, "kv_heads": 2, "seq_new": 1, "capacity": 3, "head_dim": 4}, {"seq_major": False},
                        {}),
    # [3, 64] as Q4_0: 3 * 2 * 18 = 108 bytes per weight.
    "linear_glu_w": ({"rows": 2, "in_features": 64, "out_features": 3, "gate_bytes": 108, "up_bytes": 108}, {},
                     {"weight_type": ref.DTYPE_Q4_0, "act": 4}),
    # 2 experts of [32, 32] as Q8_0: 2 * 32 * 34 = 2176 bytes per tensor.
    "moe_experts": ({"tokens": 2, "hidden": 32, "ffn": 32, "experts": 2, "top_k": 2, "gate_bytes": 2176,
                     "up_bytes": 2176, "down_bytes": 2176}, {}, {"weight_type": ref.DTYPE_Q8_0, "act": 4}),
}
for _base in HALF_DECODING:  # the 16-bit variants' base calls are the float32 kernels'
    for _dt in ("bf16", "f16"):
        BASE[_base + "_" + _dt] = BASE[_base]
for _dt in ("bf16", "f16"):
    BASE["kv_cache_append_to_" + _dt] = BASE["kv_cache_append"]
    BASE["attention_ex_kv_" + _dt] = BASE["attention_ex"]

# Index tensors need valid contents in the base call.
BASE_VALUES = {
    ("embedding", "ids"): [0, 4, 2],
    ("rope", "positions"): [0, 1],
    ("cross_entropy", "targets"): [0, 2],
    ("cross_entropy_backward", "targets"): [0, 2],
    ("attention_ex", "kv_lengths"): [3, 1],
    ("embedding_w", "ids"): [0, 4, 2],
    ("rope_ex", "positions"): [0, 1],
    ("kv_cache_append", "positions"): [0, 2],
    ("moe_experts", "ids"): [0, 1, 1, 1],
    ("embedding_bf16", "ids"): [0, 4, 2],
    ("embedding_f16", "ids"): [0, 4, 2],
    ("kv_cache_append_to_bf16", "positions"): [0, 2],
    ("kv_cache_append_to_f16", "positions"): [0, 2],
    ("attention_ex_kv_bf16", "kv_lengths"): [3, 1],
    ("attention_ex_kv_f16", "kv_lengths"): [3, 1],
}


def bad_case(name, kernel, expected, dims=None, flags=None, scalars=None, shapes=None, values=None, null=(),
             overlap=None, requires=(), about=""):
    bdims, bflags, bscalars = BASE[kernel]
    sig = dict(SIGNATURES[kernel])
    d = dict(bdims)
    d.update(dims or {})
    f = dict(bflags)
    f.update(flags or {})
    s = dict(bscalars)
    s.update(scalars or {})
    tensors = {}
    for pname, spec in SIGNATURES[kernel]:
        words = spec.split()
        if words[0] not in ("in", "out", "inout") or pname in null:
            continue
        # shape: what a binding that derives sizes from its arrays builds;
        # len: the elements a pointer-based runner allocates, never less than
        # the valid base call uses, so a missed check cannot read past it.
        shape = (shapes or {}).get(pname) or tensor_shape(kernel, pname, d, f)
        base_len = tensor_len(kernel, pname, bdims, bflags)
        if shapes and pname in shapes:
            ln = math.prod(shapes[pname])
        else:
            ln = max(base_len, math.prod(shape) if shape is not None else 0)
        t = {"len": int(ln)}
        if shape is not None:
            t["shape"] = [int(v) for v in shape]
        vals = (values or {}).get(pname, BASE_VALUES.get((kernel, pname)))
        if vals is not None:
            t["values"] = [scalar_json(v, "f32") if words[1] == "f32" else int(v) for v in vals]
            assert len(vals) == t["len"], (name, pname)
        tensors[pname] = t
    feats = set(requires)
    if any(v < 0 for v in d.values()):
        feats.add("negative_dim")
    if null:
        feats.add("null")
    if overlap:
        feats.add("overlap")
    if shapes:
        feats.add("length_mismatch")
    return {
        "name": name,
        "kernel": kernel,
        "about": about,
        "dims": d,
        "flags": f,
        "scalars": {k: scalar_json(v, sig[k].split()[1]) for k, v in s.items()},
        "tensors": tensors,
        "null": sorted(null),
        "overlap": overlap or {},
        "requires": sorted(feats),
        "expected": expected,
    }


def gen_bad_inputs():
    IA, SM, OOM, OK = "INVALID_ARGUMENT", "SHAPE_MISMATCH", "OUT_OF_MEMORY", "OK"
    cases = []
    add = cases.append

    # Controls: the base call of every kernel succeeds.
    for kern in KERNELS:
        add(bad_case(kern + "_base_ok", kern, OK, about="control: the valid base call"))

    # NULL pointers and empty tensors.
    add(bad_case("silu_null_x", "silu", IA, null=["x"]))
    add(bad_case("silu_null_y", "silu", IA, null=["y"]))
    add(bad_case("silu_n0_null_ok", "silu", OK, dims={"n": 0}, null=["x", "y"], about="empty tensors may be NULL"))
    add(bad_case("add_null_b", "add", IA, null=["b"]))
    add(bad_case("softmax_null_x", "softmax", IA, null=["x"]))
    add(bad_case("softmax_null_y", "softmax", IA, null=["y"]))
    add(bad_case("softmax_rows0_null_ok", "softmax", OK, dims={"rows": 0}, null=["x", "y"]))
    add(bad_case("rmsnorm_null_weight", "rmsnorm", IA, null=["weight"]))
    add(bad_case("layernorm_null_weight_bias_ok", "layernorm", OK, null=["weight", "bias"],
                 about="weight and bias are nullable"))
    add(bad_case("layernorm_null_x", "layernorm", IA, null=["x"]))
    add(bad_case("gemm_null_c", "gemm", IA, null=["c"]))
    add(bad_case("gemm_null_a", "gemm", IA, null=["a"]))
    add(bad_case("gemm_k0_null_ab_ok", "gemm", OK, dims={"k": 0, "lda": 1, "ldb": 3}, null=["a", "b"],
                 about="k == 0: A and B are empty and may be NULL"))
    add(bad_case("embedding_null_table", "embedding", IA, null=["table"]))
    add(bad_case("attention_null_v", "attention", IA, null=["v"]))
    add(bad_case("cross_entropy_null_mean", "cross_entropy", IA, null=["mean_loss"]))
    add(bad_case("adamw_step_null_m", "adamw_step", IA, null=["m"]))
    add(bad_case("argmax_null_out", "argmax", IA, null=["out"]))
    add(bad_case("sample_null_logits", "sample", IA, null=["logits"]))

    # Negative dimensions.
    add(bad_case("silu_negative_n", "silu", IA, dims={"n": -1}))
    add(bad_case("add_bias_negative_cols", "add_bias", IA, dims={"cols": -3}))
    add(bad_case("softmax_negative_rows", "softmax", IA, dims={"rows": -1}))
    add(bad_case("softmax_negative_cols", "softmax", IA, dims={"cols": -3}))
    add(bad_case("gemm_negative_m", "gemm", IA, dims={"m": -2}))
    add(bad_case("gemm_negative_k", "gemm", IA, dims={"k": -4}))
    add(bad_case("embedding_negative_dim", "embedding", IA, dims={"dim": -2}))
    add(bad_case("attention_negative_seq_kv", "attention", IA, dims={"seq_kv": -1}))
    add(bad_case("argmax_negative_rows", "argmax", IA, dims={"rows": -5}))
    add(bad_case("adamw_step_negative_n", "adamw_step", IA, dims={"n": -4}))

    # Rows of zero columns.
    add(bad_case("softmax_cols0", "softmax", IA, dims={"cols": 0}, about="cols must be > 0 when rows > 0"))
    add(bad_case("log_softmax_cols0", "log_softmax", IA, dims={"cols": 0}))
    add(bad_case("rmsnorm_cols0", "rmsnorm", IA, dims={"cols": 0}))
    add(bad_case("argmax_cols0", "argmax", IA, dims={"cols": 0}))
    add(bad_case("sample_cols0", "sample", IA, dims={"cols": 0}))

    # Size products that overflow.
    add(bad_case("softmax_overflow", "softmax", OOM, dims={"rows": BIG, "cols": BIG}, requires=["huge_dim"],
                 about="rows * cols * 4 bytes overflows int64"))
    add(bad_case("add_bias_overflow", "add_bias", OOM, dims={"rows": BIG, "cols": BIG}, requires=["huge_dim"]))
    add(bad_case("gemm_overflow", "gemm", OOM, dims={"m": BIG, "n": BIG, "ldb": BIG, "ldc": BIG},
                 requires=["huge_dim"]))
    add(bad_case("embedding_overflow", "embedding", OOM, dims={"n_ids": BIG, "dim": BIG}, requires=["huge_dim"]))
    add(bad_case("silu_n_max", "silu", OOM, dims={"n": I64_MAX}, requires=["huge_dim"],
                 about="n * 4 bytes overflows int64"))

    # Bad scalars.
    for v in ("nan", "inf"):
        add(bad_case("scale_alpha_" + v, "scale", IA, scalars={"alpha": float(v)}))
    for v, tag in ((-1e-5, "negative"), (math.nan, "nan"), (math.inf, "inf")):
        add(bad_case("rmsnorm_eps_" + tag, "rmsnorm", IA, scalars={"eps": v}))
        add(bad_case("layernorm_eps_" + tag, "layernorm", IA, scalars={"eps": v}))
    add(bad_case("rmsnorm_eps0_ok", "rmsnorm", OK, scalars={"eps": 0.0}))
    for v, tag in ((0.0, "zero"), (-2.0, "negative"), (math.inf, "inf"), (math.nan, "nan")):
        add(bad_case("rope_theta_" + tag, "rope", IA, scalars={"theta": v}))
    add(bad_case("cross_entropy_backward_dloss_inf", "cross_entropy_backward", IA, scalars={"dloss": math.inf}))
    add(bad_case("cross_entropy_backward_dloss_nan", "cross_entropy_backward", IA, scalars={"dloss": math.nan}))
    for pname, v, tag in (("lr", -1e-3, "negative"), ("lr", math.nan, "nan"), ("eps", -1e-8, "negative"),
                          ("eps", math.inf, "inf"), ("weight_decay", -0.1, "negative"), ("beta1", 1.0, "one"),
                          ("beta1", -0.1, "negative"), ("beta2", 1.0, "one"), ("beta2", math.nan, "nan")):
        add(bad_case("adamw_step_%s_%s" % (pname, tag), "adamw_step", IA, scalars={pname: v}))
    add(bad_case("adamw_step_step0", "adamw_step", IA, scalars={"step": 0}))
    add(bad_case("adamw_step_step_negative", "adamw_step", IA, scalars={"step": -3}))
    for kern in ("sample", "topk_sample", "topp_sample"):
        for v, tag in ((0.0, "zero"), (-1.0, "negative"), (math.inf, "inf"), (math.nan, "nan")):
            add(bad_case("%s_temperature_%s" % (kern, tag), kern, IA, scalars={"temperature": v}))
    add(bad_case("topk_sample_k0", "topk_sample", IA, dims={"k": 0}))
    add(bad_case("topk_sample_k_gt_cols", "topk_sample", IA, dims={"k": 4}))
    add(bad_case("topk_sample_k_eq_cols_ok", "topk_sample", OK, dims={"k": 3}))
    add(bad_case("topk_sample_rows0_k_gt_cols_ok", "topk_sample", OK, dims={"rows": 0, "k": 7},
                 about="with rows == 0 only k >= 1 is required"))
    for v, tag in ((0.0, "zero"), (-0.5, "negative"), (1.5, "above_one"), (math.nan, "nan")):
        add(bad_case("topp_sample_p_" + tag, "topp_sample", IA, scalars={"p": v}))
    add(bad_case("topp_sample_p1_ok", "topp_sample", OK, scalars={"p": 1.0}))

    # Bad tensor contents.
    add(bad_case("embedding_id_eq_vocab", "embedding", IA, values={"ids": [0, 5, 1]},
                 about="ids must lie in [0, vocab); checked before anything is written"))
    add(bad_case("embedding_id_negative", "embedding", IA, values={"ids": [0, 1, -1]}))
    add(bad_case("rope_negative_position", "rope", IA, values={"positions": [0, -1]}))
    add(bad_case("cross_entropy_target_out_of_range", "cross_entropy", IA, values={"targets": [0, 3]}))
    add(bad_case("cross_entropy_target_negative", "cross_entropy", IA, values={"targets": [-1, 0]}))
    add(bad_case("cross_entropy_ignored_target_ok", "cross_entropy", OK, values={"targets": [-100, 1]}))
    add(bad_case("cross_entropy_backward_target_out_of_range", "cross_entropy_backward", IA,
                 values={"targets": [5, 0]}))
    for kern in ("sample", "topk_sample", "topp_sample"):
        add(bad_case(kern + "_logits_nan", kern, IA, values={"logits": [0.0, 1.0, 2.0, 0.5, math.nan, 1.0]}))
        add(bad_case(kern + "_logits_pos_inf", kern, IA, values={"logits": [0.0, math.inf, 2.0, 0.5, 1.0, 1.0]}))
        add(bad_case(kern + "_row_all_neg_inf", kern, IA,
                     values={"logits": [0.0, 1.0, 2.0] + [-math.inf] * 3}))
        add(bad_case(kern + "_some_neg_inf_ok", kern, OK,
                     values={"logits": [0.0, -math.inf, 2.0, -math.inf, -math.inf, 1.0]}))

    # Inconsistent sizes.
    add(bad_case("gemm_lda_too_small", "gemm", SM, requires=["explicit_ld"], dims={"lda": 3},
                 about="lda < k (A not transposed)"))
    add(bad_case("gemm_lda_too_small_trans", "gemm", SM, requires=["explicit_ld"], dims={"lda": 1},
                 flags={"trans_a": True},
                 about="A^T is stored [k, m]: lda must be >= m = 2"))
    add(bad_case("gemm_ldb_too_small", "gemm", SM, requires=["explicit_ld"], dims={"ldb": 2}))
    add(bad_case("gemm_ldc_too_small", "gemm", SM, requires=["explicit_ld"], dims={"ldc": 2}))
    add(bad_case("gemm_ld_zero", "gemm", SM, requires=["explicit_ld"], dims={"m": 0, "k": 0, "lda": 0},
                 about="ld must be at least 1 even for an empty matrix"))
    add(bad_case("gemm_lda_negative", "gemm", IA, requires=["explicit_ld"], dims={"lda": -4}))
    add(bad_case("attention_kv_heads_not_divisor", "attention", SM, dims={"heads": 3, "kv_heads": 2}))
    add(bad_case("attention_kv_heads0", "attention", SM, dims={"kv_heads": 0}))
    add(bad_case("rope_head_dim_odd", "rope", SM, dims={"head_dim": 3}))
    add(bad_case("embedding_vocab0", "embedding", IA, dims={"vocab": 0}, about="no id can lie in [0, 0)"))

    # Overlap (only expressible where a binding can pass views of one buffer).
    add(bad_case("softmax_partial_overlap", "softmax", IA, overlap={"y": {"with": "x", "offset": 1}},
                 about="y starts one element after x: partial overlap is never allowed"))
    add(bad_case("add_bias_y_overlaps_bias", "add_bias", IA, overlap={"y": {"with": "bias", "offset": 0}},
                 about="bias has no alias(): y must not overlap it"))
    add(bad_case("sample_out_overlaps_logits", "sample", IA, overlap={"out": {"with": "logits", "offset": 0}}))

    # Buffer lengths that disagree with the sizes: only bindings that know
    # their buffers' lengths can detect this (C cannot).
    add(bad_case("softmax_y_too_short", "softmax", SM, shapes={"y": [2, 2]}))
    add(bad_case("add_b_too_long", "add", SM, shapes={"b": [5]}))
    add(bad_case("rmsnorm_weight_too_short", "rmsnorm", SM, shapes={"weight": [2]}))
    add(bad_case("gemm_c_too_short", "gemm", SM, shapes={"c": [1, 3]}))
    add(bad_case("embedding_out_too_short", "embedding", SM, shapes={"out": [3, 1]}))
    add(bad_case("cross_entropy_targets_too_short", "cross_entropy", SM, shapes={"targets": [1]},
                 values={"targets": [0]}))

    gen_bad_model(add, IA, SM, OOM, OK)
    gen_bad_weights(add, IA, SM, OOM, OK)
    gen_bad_moe(add, IA, SM, OOM, OK)
    gen_bad_ffn(add, IA, SM, OOM, OK)
    gen_bad_decoder(add, IA, SM, OOM, OK)
    gen_bad_rope_ex(add, IA, SM, OOM, OK)
    gen_bad_kv_cache(add, IA, SM, OOM, OK)
    gen_bad_decoding16(add, IA, SM, OOM, OK)

    names = [c["name"] for c in cases]
    assert len(names) == len(set(names))
    return cases


def gen_bad_model(add, IA, SM, OOM, OK):
    """Bad inputs of kb_linear, kb_attention_ex and kb_gemm_batched."""
    add(bad_case("linear_null_x", "linear", IA, null=["x"]))
    add(bad_case("linear_null_bias_ok", "linear", OK, null=["bias"], about="bias is nullable: no bias"))
    add(bad_case("linear_in0_null_ok", "linear", OK, dims={"in_features": 0}, null=["x", "weight"],
                 about="in_features == 0: x and weight are empty and may be NULL; y = act(bias)"))
    add(bad_case("linear_act_unknown", "linear", IA, scalars={"act": 7}, requires=["bad_enum"],
                 about="act must be a kb_activation (0..4)"))
    add(bad_case("linear_act_negative", "linear", IA, scalars={"act": -1}, requires=["bad_enum"]))
    add(bad_case("linear_negative_rows", "linear", IA, dims={"rows": -1}))
    add(bad_case("linear_overflow", "linear", OOM, dims={"rows": BIG, "in_features": BIG}, requires=["huge_dim"],
                 about="rows * in_features * 4 bytes overflows int64"))
    add(bad_case("linear_y_overlaps_x", "linear", IA, overlap={"y": {"with": "x", "offset": 1}}))
    add(bad_case("linear_y_overlaps_bias", "linear", IA, overlap={"y": {"with": "bias", "offset": 0}}))
    add(bad_case("linear_weight_too_short", "linear", SM, shapes={"weight": [2, 2]}))
    add(bad_case("linear_bias_too_long", "linear", SM, shapes={"bias": [3]}))

    add(bad_case("attention_ex_null_q", "attention_ex", IA, null=["q"]))
    add(bad_case("attention_ex_null_lengths_mask_ok", "attention_ex", OK, null=["kv_lengths", "mask"],
                 about="kv_lengths and mask are nullable"))
    add(bad_case("attention_ex_mask_batch_wrong", "attention_ex", SM, dims={"mask_batch": 3},
                 about="mask_batch must be 1 or batch"))
    add(bad_case("attention_ex_mask_heads_wrong", "attention_ex", SM, dims={"mask_heads": 3}))
    add(bad_case("attention_ex_mask_q_wrong", "attention_ex", SM, dims={"mask_q": 5}))
    add(bad_case("attention_ex_mask_dims_ignored_without_mask_ok", "attention_ex", OK, dims={"mask_q": 5},
                 null=["mask"], about="the mask dims are not checked against the shapes when mask is NULL"))
    add(bad_case("attention_ex_negative_mask_q", "attention_ex", IA, dims={"mask_q": -1}))
    add(bad_case("attention_ex_lengths_above_seq_kv", "attention_ex", IA, values={"kv_lengths": [3, 4]},
                 about="kv_lengths[b] must lie in [0, seq_kv]"))
    add(bad_case("attention_ex_lengths_negative", "attention_ex", IA, values={"kv_lengths": [-1, 2]}))
    add(bad_case("attention_ex_lengths_zero_ok", "attention_ex", OK, values={"kv_lengths": [0, 3]},
                 about="a batch row without keys gives zeros"))
    add(bad_case("attention_ex_bottom_right_without_causal", "attention_ex", IA,
                 flags={"causal_bottom_right": True}, about="causal_bottom_right requires causal"))
    add(bad_case("attention_ex_bottom_right_ok", "attention_ex", OK, flags={"causal": True,
                                                                          "causal_bottom_right": True}))
    add(bad_case("attention_ex_kv_heads_not_divisor", "attention_ex", SM, dims={"heads": 3, "kv_heads": 2,
                                                                               "mask_heads": 1}))
    add(bad_case("attention_ex_scale_nan", "attention_ex", IA, scalars={"scale": math.nan}))
    add(bad_case("attention_ex_scale_negative", "attention_ex", IA, scalars={"scale": -1.0}))
    add(bad_case("attention_ex_overflow", "attention_ex", OOM, dims={"batch": BIG, "heads": BIG, "kv_heads": BIG,
                                                                     "mask_batch": 1},
                 requires=["huge_dim"]))
    add(bad_case("attention_ex_out_overlaps_q", "attention_ex", IA, overlap={"out": {"with": "q", "offset": 0}}))
    add(bad_case("attention_ex_out_overlaps_mask", "attention_ex", IA,
                 overlap={"out": {"with": "mask", "offset": 2}}))
    add(bad_case("attention_ex_mask_too_short", "attention_ex", SM, shapes={"mask": [2, 1, 1, 2]}))
    add(bad_case("attention_ex_lengths_too_short", "attention_ex", SM, shapes={"kv_lengths": [1]},
                 values={"kv_lengths": [3]}))

    add(bad_case("gemm_batched_null_c", "gemm_batched", IA, null=["c"]))
    add(bad_case("gemm_batched_batch0_null_ok", "gemm_batched", OK, dims={"batch": 0}, null=["a", "b", "c"],
                 about="an empty batch: every operand may be NULL"))
    add(bad_case("gemm_batched_negative_batch", "gemm_batched", IA, dims={"batch": -1}))
    add(bad_case("gemm_batched_negative_stride_b", "gemm_batched", IA, dims={"stride_b": -12},
                 requires=["explicit_ld"], about="strides must be >= 0"))
    add(bad_case("gemm_batched_stride_c_too_small", "gemm_batched", SM, dims={"stride_c": 5},
                 requires=["explicit_ld"], about="items of C would overlap: stride_c < (m - 1) * ldc + n"))
    add(bad_case("gemm_batched_stride_c_overlap_batch1_ok", "gemm_batched", OK, dims={"batch": 1, "stride_c": 0},
                 requires=["explicit_ld"], about="with one item stride_c is free"))
    add(bad_case("gemm_batched_shared_b_ok", "gemm_batched", OK, dims={"stride_b": 0}, requires=["explicit_ld"],
                 about="stride 0: one B for every item"))
    add(bad_case("gemm_batched_ldc_too_small", "gemm_batched", SM, dims={"ldc": 2}, requires=["explicit_ld"]))
    add(bad_case("gemm_batched_stride_overflow", "gemm_batched", OOM, dims={"stride_a": I64_MAX // 2, "batch": 3,
                                                                          "stride_c": 6},
                 requires=["huge_dim", "explicit_ld"], about="(batch - 1) * stride_a overflows"))
    add(bad_case("gemm_batched_c_overlaps_a", "gemm_batched", IA, overlap={"c": {"with": "a", "offset": 3}}))
    add(bad_case("gemm_batched_c_too_short", "gemm_batched", SM, shapes={"c": [2, 2, 2]}))


def gen_bad_rope_ex(add, IA, SM, OOM, OK):
    # rope_ex: base call batch 1, seq 2, q_heads 2, kv_heads 1, head_dim 4, rotary_dim 4.
    add(bad_case("rope_ex_negative_kv_heads", "rope_ex", IA, dims={"kv_heads": -1}))
    add(bad_case("rope_ex_negative_rotary_dim", "rope_ex", IA, dims={"rotary_dim": -2}))
    add(bad_case("rope_ex_rotary_dim0", "rope_ex", IA, dims={"rotary_dim": 0},
                 about="rotary_dim must be > 0 when head_dim > 0"))
    add(bad_case("rope_ex_rotary_dim_odd", "rope_ex", SM, dims={"rotary_dim": 3}))
    add(bad_case("rope_ex_rotary_dim_above_head_dim", "rope_ex", SM, dims={"rotary_dim": 6}))
    add(bad_case("rope_ex_partial_ok", "rope_ex", OK, dims={"rotary_dim": 2}))
    add(bad_case("rope_ex_head_dim0_ok", "rope_ex", OK, dims={"head_dim": 0, "rotary_dim": 0},
                 about="empty heads: nothing to rotate"))
    add(bad_case("rope_ex_style_unknown", "rope_ex", IA, scalars={"style": 2}, requires=["bad_enum"]))
    add(bad_case("rope_ex_scaling_unknown", "rope_ex", IA, scalars={"scaling": 3}, requires=["bad_enum"]))
    add(bad_case("rope_ex_scaling_negative", "rope_ex", IA, scalars={"scaling": -1}, requires=["bad_enum"]))
    add(bad_case("rope_ex_overflow", "rope_ex", OOM, dims={"q_heads": BIG, "head_dim": BIG}, requires=["huge_dim"],
                 about="batch * seq * q_heads * head_dim * 4 bytes overflows int64"))
    add(bad_case("rope_ex_k_overflow", "rope_ex", OOM, dims={"kv_heads": BIG, "head_dim": BIG},
                 requires=["huge_dim"]))
    add(bad_case("rope_ex_null_q", "rope_ex", IA, null=["q"]))
    add(bad_case("rope_ex_null_positions", "rope_ex", IA, null=["positions"]))
    add(bad_case("rope_ex_null_k_ok", "rope_ex", OK, null=["k"], about="k NULL: only q is rotated"))
    for v, tag in ((0.0, "zero"), (-2.0, "negative"), (math.inf, "inf"), (math.nan, "nan")):
        add(bad_case("rope_ex_theta_" + tag, "rope_ex", IA, scalars={"theta": v}))
        add(bad_case("rope_ex_linear_factor_" + tag, "rope_ex", IA, scalars={"scaling": 1, "factor": v}))
        add(bad_case("rope_ex_llama3_factor_" + tag, "rope_ex", IA, scalars={"scaling": 2, "factor": v}))
        add(bad_case("rope_ex_llama3_low_freq_factor_" + tag, "rope_ex", IA,
                     scalars={"scaling": 2, "low_freq_factor": v}))
        add(bad_case("rope_ex_llama3_high_freq_factor_" + tag, "rope_ex", IA,
                     scalars={"scaling": 2, "high_freq_factor": v}))
    add(bad_case("rope_ex_llama3_low_eq_high", "rope_ex", IA,
                 scalars={"scaling": 2, "low_freq_factor": 4.0, "high_freq_factor": 4.0}))
    add(bad_case("rope_ex_llama3_low_above_high", "rope_ex", IA,
                 scalars={"scaling": 2, "low_freq_factor": 5.0, "high_freq_factor": 4.0}))
    add(bad_case("rope_ex_llama3_original_zero", "rope_ex", IA, scalars={"scaling": 2, "original_max_position": 0}))
    add(bad_case("rope_ex_llama3_original_negative", "rope_ex", IA,
                 scalars={"scaling": 2, "original_max_position": -8192}))
    add(bad_case("rope_ex_llama3_ok", "rope_ex", OK, scalars={"scaling": 2, "factor": 8.0}))
    add(bad_case("rope_ex_unused_parameters_ok", "rope_ex", OK,
                 scalars={"scaling": 0, "factor": math.nan, "low_freq_factor": -1.0, "high_freq_factor": 0.0,
                          "original_max_position": -1},
                 about="parameters the scaling does not use are not read"))
    add(bad_case("rope_ex_linear_ignores_llama3_parameters_ok", "rope_ex", OK,
                 scalars={"scaling": 1, "factor": 2.0, "low_freq_factor": 4.0, "high_freq_factor": 4.0,
                          "original_max_position": 0}))
    add(bad_case("rope_ex_negative_position", "rope_ex", IA, values={"positions": [0, -1]}))
    add(bad_case("rope_ex_q_overlaps_k", "rope_ex", IA, overlap={"k": {"with": "q", "offset": 2}},
                 about="q and k are both written: they must not overlap"))
    add(bad_case("rope_ex_k_is_q", "rope_ex", IA, overlap={"k": {"with": "q", "offset": 0}},
                 about="not even as the same buffer (no alias)"))
    add(bad_case("rope_ex_q_overlaps_positions", "rope_ex", IA, overlap={"q": {"with": "positions", "offset": 0}}))


def gen_bad_decoder(add, IA, SM, OOM, OK):
    """Bad inputs of kb_glu and kb_add_rmsnorm."""
    add(bad_case("glu_null_gate", "glu", IA, null=["gate"]))
    add(bad_case("glu_null_y", "glu", IA, null=["y"]))
    add(bad_case("glu_rows0_null_ok", "glu", OK, dims={"rows": 0}, null=["gate", "up", "y"],
                 about="no rows: every tensor is empty and may be NULL"))
    add(bad_case("glu_negative_rows", "glu", IA, dims={"rows": -1}))
    add(bad_case("glu_negative_ld_up", "glu", IA, dims={"ld_up": -3}, requires=["explicit_ld"]))
    add(bad_case("glu_ld_gate_too_small", "glu", SM, dims={"ld_gate": 2}, requires=["explicit_ld"],
                 about="ld_gate must be >= max(1, cols)"))
    add(bad_case("glu_ld_up_zero", "glu", SM, dims={"rows": 0, "cols": 0, "ld_gate": 1, "ld_up": 0},
                 requires=["explicit_ld"], about="an ld is at least 1, even for empty tensors"))
    add(bad_case("glu_act_unknown", "glu", IA, scalars={"act": 5}, requires=["bad_enum"],
                 about="act must be a kb_activation (0..4)"))
    add(bad_case("glu_act_negative", "glu", IA, scalars={"act": -1}, requires=["bad_enum"]))
    add(bad_case("glu_overflow", "glu", OOM, dims={"rows": BIG, "cols": BIG, "ld_gate": BIG, "ld_up": BIG},
                 requires=["huge_dim"], about="rows * cols * 4 bytes overflows int64"))
    add(bad_case("glu_y_overlaps_gate", "glu", IA, overlap={"y": {"with": "gate", "offset": 0}},
                 about="y has no in-place form"))
    add(bad_case("glu_y_overlaps_up", "glu", IA, overlap={"y": {"with": "up", "offset": 1}}))
    add(bad_case("glu_up_too_short", "glu", SM, shapes={"up": [1, 3]}))

    add(bad_case("add_rmsnorm_null_residual", "add_rmsnorm", IA, null=["residual"]))
    add(bad_case("add_rmsnorm_null_weight", "add_rmsnorm", IA, null=["weight"]))
    add(bad_case("add_rmsnorm_cols0", "add_rmsnorm", IA, dims={"cols": 0}))
    add(bad_case("add_rmsnorm_negative_rows", "add_rmsnorm", IA, dims={"rows": -2}))
    add(bad_case("add_rmsnorm_rows0_null_ok", "add_rmsnorm", OK, dims={"rows": 0}, null=["x", "residual", "y"],
                 about="no rows: x, residual and y are empty and may be NULL (weight is not)"))
    for v, tag in ((-1e-5, "negative"), (math.nan, "nan"), (math.inf, "inf")):
        add(bad_case("add_rmsnorm_eps_" + tag, "add_rmsnorm", IA, scalars={"eps": v}))
    add(bad_case("add_rmsnorm_eps0_ok", "add_rmsnorm", OK, scalars={"eps": 0.0}))
    add(bad_case("add_rmsnorm_overflow", "add_rmsnorm", OOM, dims={"rows": BIG, "cols": BIG}, requires=["huge_dim"]))
    add(bad_case("add_rmsnorm_y_overlaps_x", "add_rmsnorm", IA, overlap={"y": {"with": "x", "offset": 1}},
                 about="y may be x exactly, not partially"))
    add(bad_case("add_rmsnorm_y_overlaps_residual", "add_rmsnorm", IA,
                 overlap={"y": {"with": "residual", "offset": 0}}))
    add(bad_case("add_rmsnorm_y_overlaps_weight", "add_rmsnorm", IA, overlap={"y": {"with": "weight", "offset": 0}}))
    add(bad_case("add_rmsnorm_weight_too_short", "add_rmsnorm", SM, shapes={"weight": [2]}))
    add(bad_case("add_rmsnorm_residual_too_short", "add_rmsnorm", SM, shapes={"residual": [2, 2]}))


def gen_bad_weights(add, IA, SM, OOM, OK):
    """Bad inputs of kb_quantize, kb_dequantize, kb_linear_w and kb_embedding_w.

    A u8 tensor's length is its byte count (y_bytes, x_bytes, weight_bytes,
    table_bytes): a binding derives the count from its array, so a wrong
    count is an array of that many bytes (the tensor's shape), which C
    rejects, while a pointer-based runner passes the count with a buffer of
    at least the valid size (len)."""
    Q8, Q4, F16 = ref.DTYPE_Q8_0, ref.DTYPE_Q4_0, ref.DTYPE_F16
    add(bad_case("quantize_y_bytes_short", "quantize", SM, dims={"y_bytes": 135},
                 about="y_bytes must be 136 (y [2, 64] as Q8_0)"))
    add(bad_case("quantize_y_bytes_long", "quantize", SM, dims={"y_bytes": 137}))
    add(bad_case("dequantize_x_bytes_short", "dequantize", SM, dims={"x_bytes": 71}))
    add(bad_case("linear_w_weight_bytes_short", "linear_w", SM, dims={"weight_bytes": 107},
                 about="weight_bytes must be 108 (weight [3, 64] as Q4_0)"))
    add(bad_case("linear_w_weight_bytes_long", "linear_w", SM, dims={"weight_bytes": 109}))
    add(bad_case("linear_w_bytes_of_another_type", "linear_w", SM, scalars={"weight_type": Q8},
                 about="108 bytes hold [3, 64] as Q4_0; as Q8_0 it takes 204"))
    add(bad_case("embedding_w_table_bytes_short", "embedding_w", SM, dims={"table_bytes": 169}))

    # Block formats store whole blocks of 32 per row.
    add(bad_case("quantize_cols_not_multiple_of_32", "quantize", IA, dims={"cols": 48},
                 about="cols must be a multiple of 32 for Q8_0"))
    add(bad_case("dequantize_cols_not_multiple_of_32", "dequantize", IA, dims={"cols": 16, "x_bytes": 36}))
    add(bad_case("linear_w_in_features_not_multiple_of_32", "linear_w", IA, dims={"in_features": 40}))
    add(bad_case("embedding_w_dim_not_multiple_of_32", "embedding_w", IA, dims={"dim": 40}))
    add(bad_case("quantize_f16_cols48_ok", "quantize", OK, dims={"cols": 48, "y_bytes": 192}, scalars={"type": F16},
                 about="the float formats take any number of columns"))
    add(bad_case("dequantize_f32_ok", "dequantize", OK, dims={"x_bytes": 512}, scalars={"type": ref.DTYPE_F32}))

    # kb_dtype values that are not in the enum.
    for kern, pname in (("quantize", "type"), ("dequantize", "type"), ("linear_w", "weight_type"),
                        ("embedding_w", "table_type")):
        add(bad_case("%s_%s_unknown" % (kern, pname), kern, IA, scalars={pname: 7}, requires=["bad_enum"],
                     about="7 is not a kb_dtype (0 F32, 1 F16, 2 Q4_0, 8 Q8_0, 30 BF16)"))
    add(bad_case("dequantize_type_q4_1", "dequantize", IA, scalars={"type": 3}, requires=["bad_enum"],
                 about="GGML's Q4_1 (3) is not a kb_dtype"))
    add(bad_case("linear_w_weight_type_negative", "linear_w", IA, scalars={"weight_type": -1}, requires=["bad_enum"]))

    add(bad_case("embedding_w_id_eq_vocab", "embedding_w", IA, values={"ids": [0, 5, 1]},
                 about="ids must lie in [0, vocab); checked before anything is written"))
    add(bad_case("embedding_w_id_negative", "embedding_w", IA, values={"ids": [1, 0, -1]}))

    # Rows a block format cannot hold: checked before any byte is written.
    def x_with(index, value):
        x = [1.0] * 128
        x[index] = value
        return x

    add(bad_case("quantize_q8_0_x_nan", "quantize", IA, values={"x": x_with(70, math.nan)},
                 about="x[1, 6] is NaN"))
    add(bad_case("quantize_q4_0_x_inf", "quantize", IA, dims={"y_bytes": 72}, scalars={"type": Q4},
                 values={"x": x_with(127, -math.inf)}))
    add(bad_case("quantize_q8_0_scale_overflow", "quantize", IA, values={"x": x_with(33, 1e7)},
                 about="max |x| = 1e7: the scale 1e7 / 127 overflows binary16"))
    add(bad_case("quantize_q4_0_scale_overflow", "quantize", IA, dims={"y_bytes": 72}, scalars={"type": Q4},
                 values={"x": x_with(0, -6e5)}, about="the scale 6e5 / 8 overflows binary16"))
    add(bad_case("quantize_q8_0_largest_scale_ok", "quantize", OK, values={"x": x_with(33, 65519.0 * 127)},
                 about="scale 65519 rounds to binary16 65504"))
    add(bad_case("quantize_f16_x_nan_ok", "quantize", OK, dims={"y_bytes": 256}, scalars={"type": F16},
                 values={"x": x_with(70, math.nan)}, about="the float formats convert NaN (it stays NaN)"))

    add(bad_case("quantize_null_y", "quantize", IA, null=["y"]))
    add(bad_case("dequantize_null_x", "dequantize", IA, null=["x"]))
    add(bad_case("linear_w_null_weight", "linear_w", IA, null=["weight"]))
    add(bad_case("linear_w_null_bias_ok", "linear_w", OK, null=["bias"], about="bias is nullable: no bias"))
    add(bad_case("linear_w_in0_null_ok", "linear_w", OK, dims={"in_features": 0, "weight_bytes": 0},
                 scalars={"weight_type": ref.DTYPE_F32}, null=["x", "weight"],
                 about="in_features == 0: x and weight are empty and may be NULL"))
    add(bad_case("linear_w_q4_0_in0_null_ok", "linear_w", OK, dims={"in_features": 0, "weight_bytes": 0},
                 scalars={"weight_type": ref.DTYPE_Q4_0}, null=["x", "weight"],
                 about="in_features == 0 with a block format: no block to read, y = act(bias)"))
    add(bad_case("embedding_w_null_table", "embedding_w", IA, null=["table"]))
    add(bad_case("quantize_negative_cols", "quantize", IA, dims={"cols": -32}))
    add(bad_case("linear_w_negative_weight_bytes", "linear_w", IA, dims={"weight_bytes": -1}))
    add(bad_case("linear_w_act_unknown", "linear_w", IA, scalars={"act": 5}, requires=["bad_enum"]))
    add(bad_case("linear_w_overflow", "linear_w", OOM, dims={"rows": BIG, "in_features": BIG},
                 requires=["huge_dim"], about="rows * in_features * 4 bytes overflows int64"))
    add(bad_case("dequantize_overflow", "dequantize", OOM, dims={"rows": BIG, "cols": BIG}, requires=["huge_dim"]))

    # Overlap offsets count elements of the "with" tensor (bytes for u8).
    add(bad_case("quantize_y_overlaps_x", "quantize", IA, overlap={"y": {"with": "x", "offset": 0}}))
    add(bad_case("embedding_w_out_overlaps_table", "embedding_w", IA,
                 overlap={"out": {"with": "table", "offset": 0}}))
    add(bad_case("linear_w_y_overlaps_x", "linear_w", IA, overlap={"y": {"with": "x", "offset": 1}}))

    add(bad_case("linear_w_x_too_short", "linear_w", SM, shapes={"x": [2, 32]}))
    add(bad_case("embedding_w_out_too_short", "embedding_w", SM, shapes={"out": [3, 16]}))


# ---------------------------------------------------------------------------
# Output.


def tsv_manifest(cases):
    lines = ["# kernelbridge conformance corpus, flat form of manifest.json (see docs/conformance.md)"]
    for c in cases:
        tol = c.get("tolerance", TOLERANCES[c["kernel"]])
        lines.append("case\t%s\t%s\t%r\t%r" % (c["name"], c["kernel"], float(tol["ulp"]), float(tol["abs"])))
        for k, v in c["dims"].items():
            lines.append("dim\t%s\t%d" % (k, v))
        for k, v in c["flags"].items():
            lines.append("flag\t%s\t%d" % (k, int(v)))
        for k, v in c["scalars"].items():
            lines.append("scalar\t%s\t%s" % (k, scalar_text(v)))
        for k, v in c["inputs"].items():
            lines.append("in\t%s\t%s" % (k, v))
        for k in c["null"]:
            lines.append("null\t%s" % k)
        for k, v in c["alias"].items():
            lines.append("alias\t%s\t%s" % (k, v))
        for k, v in c["expected"].items():
            lines.append("out\t%s\t%s" % (k, v))
        lines.append("end")
    return "\n".join(lines) + "\n"


def tsv_bad(cases):
    lines = ["# kernelbridge bad-input corpus, flat form of bad_input.json (see docs/conformance.md)"]
    for c in cases:
        feats = ",".join(c["requires"]) or "-"
        lines.append("bad\t%s\t%s\t%s\t%s" % (c["name"], c["kernel"], c["expected"], feats))
        for k, v in c["dims"].items():
            lines.append("dim\t%s\t%d" % (k, v))
        for k, v in c["flags"].items():
            lines.append("flag\t%s\t%d" % (k, int(v)))
        for k, v in c["scalars"].items():
            lines.append("scalar\t%s\t%s" % (k, scalar_text(v)))
        for k, t in c["tensors"].items():
            lines.append("tensor\t%s\t%d" % (k, t["len"]))
            if "values" in t:
                lines.append("values\t%s\t%s" % (k, ",".join(scalar_text(v) for v in t["values"])))
        for k in c["null"]:
            lines.append("null\t%s" % k)
        for k, o in c["overlap"].items():
            lines.append("overlap\t%s\t%s\t%d" % (k, o["with"], o["offset"]))
        lines.append("end")
    return "\n".join(lines) + "\n"


MOE_ROUTINGS = (("softmax_topk", ref.MOE_SOFTMAX_TOPK), ("norm", ref.MOE_SOFTMAX_TOPK_NORM),
                ("topk_softmax", ref.MOE_TOPK_SOFTMAX))


def gen_moe(cx):
    """kb_moe_route: the shapes of Mixtral (8 experts, k 2), Qwen / OLMoE (60
    and 64 experts, k 4 and 8), DeepSeek-V3 (256, k 8), k == experts, a row
    longer than one softmax block (1500 experts), exact ties, -inf logits,
    and wide logits, for every routing."""
    def case(name, routing, x, k, about=""):
        ids, w = ref.moe_route(x, k, routing)
        cx.add(name, "moe_route", dims={"tokens": x.shape[0], "experts": x.shape[1], "top_k": k},
               scalars={"routing": routing}, inputs={"logits": x}, expected={"ids": ids, "weights": w},
               tolerance=MOE_NORM_TOLERANCE if routing == ref.MOE_SOFTMAX_TOPK_NORM else None, about=about)

    for label, routing in MOE_ROUTINGS:
        for tokens, experts, k in ((5, 8, 2), (4, 64, 8), (3, 60, 4), (2, 256, 8), (3, 6, 6), (0, 8, 2)):
            name = "moe_route_%s_%dx%d_k%d" % (label, tokens, experts, k)
            case(name, routing, f32(rng_for(name).standard_normal((tokens, experts)) * 2.0), k)
        name = "moe_route_%s_ties" % label
        x = f32(np.round(rng_for(name).standard_normal((6, 16)) * 2.0) / 2.0)
        x[0, :] = 1.0
        case(name, routing, x, 5, about="logits on a grid of 0.5: exact ties, ranked by lower index")
        name = "moe_route_%s_neg_inf" % label
        x = f32(rng_for(name).standard_normal((4, 8)))
        x[0, [1, 5]] = -math.inf
        x[1, :] = -math.inf
        x[1, 6] = 0.25
        x[2, ::2] = -math.inf
        x[3, 3] = -0.0
        x[3, 4] = 0.0
        case(name, routing, x, 3, about="-inf logits: weight 0 when reached; one finite logit; -0 == +0")
    for label, routing in (("softmax_topk", ref.MOE_SOFTMAX_TOPK), ("topk_softmax", ref.MOE_TOPK_SOFTMAX)):
        name = "moe_route_%s_wide" % label
        case(name, routing, f32(rng_for(name).standard_normal((3, 32)) * 30.0), 4,
             about="logits of magnitude up to ~100: tiny and underflowing weights")
    name = "moe_route_norm_long_row"
    case(name, ref.MOE_SOFTMAX_TOPK_NORM, f32(rng_for(name).standard_normal((2, 1500))), 6,
         about="1500 experts: the softmax runs over two blocks")


def gen_bad_moe(add, IA, SM, OOM, OK):
    """Bad inputs of kb_moe_route (base call: 2 tokens, 4 experts, top_k 2)."""
    add(bad_case("moe_route_null_logits", "moe_route", IA, null=["logits"]))
    add(bad_case("moe_route_null_ids", "moe_route", IA, null=["ids"]))
    add(bad_case("moe_route_null_weights", "moe_route", IA, null=["weights"]))
    add(bad_case("moe_route_tokens0_null_ok", "moe_route", OK, dims={"tokens": 0}, null=["logits", "ids", "weights"],
                 about="no tokens: every tensor is empty and may be NULL"))
    add(bad_case("moe_route_negative_tokens", "moe_route", IA, dims={"tokens": -1}))
    add(bad_case("moe_route_negative_top_k", "moe_route", IA, dims={"top_k": -2}))
    add(bad_case("moe_route_experts0", "moe_route", IA, dims={"experts": 0}, about="experts must be > 0 when tokens > 0"))
    add(bad_case("moe_route_top_k0", "moe_route", IA, dims={"top_k": 0}))
    add(bad_case("moe_route_top_k_gt_experts", "moe_route", IA, dims={"top_k": 5}))
    add(bad_case("moe_route_top_k_eq_experts_ok", "moe_route", OK, dims={"top_k": 4}))
    add(bad_case("moe_route_tokens0_top_k_gt_experts_ok", "moe_route", OK, dims={"tokens": 0, "top_k": 7},
                 about="with tokens == 0 only top_k >= 1 is required"))
    add(bad_case("moe_route_overflow", "moe_route", OOM, dims={"tokens": 2**62}, requires=["huge_dim"],
                 about="tokens * experts * 4 bytes overflows int64 (experts itself must fit int32)"))
    add(bad_case("moe_route_routing_unknown", "moe_route", IA, scalars={"routing": 3}, requires=["bad_enum"],
                 about="routing must be a kb_moe_routing (0..2)"))
    add(bad_case("moe_route_routing_negative", "moe_route", IA, scalars={"routing": -1}, requires=["bad_enum"]))
    for label, routing in MOE_ROUTINGS:
        add(bad_case("moe_route_%s_ok" % label, "moe_route", OK, scalars={"routing": routing}))
    add(bad_case("moe_route_logits_nan", "moe_route", IA, values={"logits": [0.0, 1.0, 2.0, 0.5, 1.0, math.nan, 1.0, 0.0]},
                 about="NaN logits are refused before anything is written"))
    add(bad_case("moe_route_logits_pos_inf", "moe_route", IA,
                 values={"logits": [0.0, math.inf, 2.0, 0.5, 1.0, 1.0, 1.0, 0.0]}))
    add(bad_case("moe_route_row_all_neg_inf", "moe_route", IA,
                 values={"logits": [0.0, 1.0, 2.0, 3.0] + [-math.inf] * 4}))
    add(bad_case("moe_route_some_neg_inf_ok", "moe_route", OK,
                 values={"logits": [-math.inf, -math.inf, -math.inf, 1.0, 0.0, -math.inf, 2.0, -math.inf]},
                 about="-inf beside a finite logit: weight 0 when reached (top_k 2 reaches one in row 0)"))
    add(bad_case("moe_route_ids_overlap_logits", "moe_route", IA, overlap={"ids": {"with": "logits", "offset": 0}}))
    add(bad_case("moe_route_weights_overlap_logits", "moe_route", IA,
                 overlap={"weights": {"with": "logits", "offset": 2}}))
    add(bad_case("moe_route_weights_overlap_ids", "moe_route", IA, overlap={"weights": {"with": "ids", "offset": 1}}))
    add(bad_case("moe_route_weights_too_short", "moe_route", SM, shapes={"weights": [2, 1]}))
    add(bad_case("moe_route_ids_too_long", "moe_route", SM, shapes={"ids": [3, 2]}))


# ---------------------------------------------------------------------------
# Gated feed-forward blocks on storage-format weights: kb_linear_glu_w and
# kb_moe_experts.

def sum_bounds(x, w, dtype):
    """Per output j of the product of one float32 row x with the weights w
    ([out, in], dequantized values): (the exact sum, a bound on the error of
    kernelbridge's float32 sum).  Float formats: an fma chain of len(x)
    steps, each rounding once: n 2^-24 / (1 - n 2^-24) sum |x w|.  Block
    formats: B, the bound of docs/kernels.md (linear_w_quant_tolerance's
    docstring), x being quantized per block of 32."""
    x64, w64 = np.asarray(x, dtype=np.float64), np.asarray(w, dtype=np.float64)
    n = x64.size
    exact = np.array([math.fsum((x64 * wj).tolist()) for wj in w64])
    mag = np.abs(w64) @ np.abs(x64)
    if dtype not in ref.BLOCK_FORMATS:
        u = n * 2.0**-24
        return exact, mag * u / (1 - u)
    nb = n // ref.QK
    xa = np.abs(x64).reshape(nb, ref.QK)
    dx = xa.max(axis=1, initial=0.0) / 127.0
    wa = np.abs(w64).reshape(w64.shape[0], nb, ref.QK)
    quant = ((dx / 2) * (1 + 2.0**-20) * wa.sum(axis=2)).sum(axis=1)
    mag = (wa * (xa + dx[:, None])[None]).reshape(w64.shape[0], -1).sum(axis=1)
    return exact, quant + (nb / 8 + 5) * 2.0**-23 * mag


def glu_bounds(x, wg, wu, dtype, act):
    """(h, bound) per output of act(x . wg^T) * (x . wu^T) for one row: the
    sums' bounds moved by the activation (Lipschitz constant L, then its 2
    ulp rounding, 2^-22 of its magnitude) and the product (their cross
    terms, then one rounding)."""
    g, eg = sum_bounds(x, wg, dtype)
    u, eu = sum_bounds(x, wu, dtype)
    a = ref.ACTIVATIONS[int(act)](g)
    lip = ACT_LIPSCHITZ[int(act)]
    ea = lip * eg + 2.0**-22 * (np.abs(a) + lip * eg)
    h = a * u
    eh = ea * (np.abs(u) + eu) + np.abs(a) * eu
    return h, eh + 2.0**-24 * (np.abs(h) + eh)


def moe_token_bounds(x, ids, weights, dtype, wg, wu, wd, act):
    """(y, bound) of one token of kb_moe_experts: each slot's expert output
    (its hidden row's bounds carried through the down product: the weights'
    magnitudes times them, plus the down sum's own bound on the float32
    hidden row, whose block scales are at most those of |h| + bound), then
    the fma chain over the slots (one rounding each)."""
    hidden = wd.shape[1]
    y = np.zeros(hidden)
    ey = np.zeros(hidden)
    for e, w in zip(ids, weights):
        h, eh = glu_bounds(x, wg[e], wu[e], dtype, act)
        o, eo = sum_bounds(np.abs(h) + eh, np.abs(wd[e]), dtype)
        o = wd[e] @ h
        eo = eo + np.abs(wd[e]) @ eh
        y += float(w) * o
        ey += abs(float(w)) * eo
    return y, ey + len(ids) * 2.0**-24 * (np.abs(y) + ey)


def ffn_tolerance(kernel, bounds):
    return {"ulp": TOLERANCES[kernel]["ulp"], "abs": ceil_2_digits(max(float(np.max(bounds, initial=0.0)), 1e-30))}


def gen_ffn(cx):
    """kb_linear_glu_w and kb_moe_experts on every storage format."""
    for label, dtype in WEIGHT_TYPES:
        for rows, inf, outf, act in ((1, 64, 24, 4), (5, 64, 16, (2, 3)[len(label) % 2])):
            name = "linear_glu_w_%s_rows%d" % (label, rows)
            g = rng_for(name)
            x = f32(g.standard_normal((rows, inf)))
            wg = ref.quantize(f32(g.standard_normal((outf, inf)) / math.sqrt(inf)), dtype)
            wu = ref.quantize(f32(g.standard_normal((outf, inf)) / math.sqrt(inf)), dtype)
            dg, du = ref.dequantize(wg, dtype, outf, inf), ref.dequantize(wu, dtype, outf, inf)
            want = np.zeros((rows, outf))
            bound = np.zeros((rows, outf))
            for r in range(rows):
                want[r], bound[r] = glu_bounds(x[r], dg, du, dtype, act)
            assert np.array_equal(want, ref.linear_glu_w(x, dtype, wg, wu, outf, act))
            cx.add(name, "linear_glu_w", dims={"rows": rows, "in_features": inf, "out_features": outf,
                                               "gate_bytes": wg.size, "up_bytes": wu.size},
                   scalars={"weight_type": dtype, "act": act}, inputs={"x": x, "gate_weight": wg, "up_weight": wu},
                   expected={"y": want}, tolerance=ffn_tolerance("linear_glu_w", bound),
                   about="weights as %s, act %d; tolerance from the documented bounds" % (label.upper(), act))
    moe_cases = [  # name suffix, tokens, hidden, ffn, experts, top_k, act, ids (None: random)
        ("decode", 1, 32, 32, 3, 2, 4, None),
        ("prefill", 6, 32, 32, 3, 2, 2, None),
        ("repeat", 3, 32, 32, 3, 3, 3, [[2, 2, 0], [1, 1, 1], [0, 2, 0]]),
    ]
    for label, dtype in WEIGHT_TYPES:
        for suffix, tokens, hidden, ffn, experts, top_k, act, fixed in moe_cases:
            # Every format decodes; the corpus budget keeps the others to
            # float32 and Q4_0.
            if suffix != "decode" and label not in ("f32", "q4_0"):
                continue
            name = "moe_experts_%s_%s" % (label, suffix)
            g = rng_for(name)
            x = f32(g.standard_normal((tokens, hidden)))
            ids = i32(fixed if fixed is not None else [g.permutation(experts)[:top_k] for _ in range(tokens)])
            weights = f32(g.uniform(0.05, 1.0, (tokens, top_k)))
            wg = ref.quantize(f32(g.standard_normal((experts * ffn, hidden)) / math.sqrt(hidden)), dtype)
            wu = ref.quantize(f32(g.standard_normal((experts * ffn, hidden)) / math.sqrt(hidden)), dtype)
            wd = ref.quantize(f32(g.standard_normal((experts * hidden, ffn)) / math.sqrt(ffn)), dtype)
            dg = ref.dequantize(wg, dtype, experts * ffn, hidden).reshape(experts, ffn, hidden)
            du = ref.dequantize(wu, dtype, experts * ffn, hidden).reshape(experts, ffn, hidden)
            dd = ref.dequantize(wd, dtype, experts * hidden, ffn).reshape(experts, hidden, ffn)
            want = np.zeros((tokens, hidden))
            bound = np.zeros((tokens, hidden))
            for t in range(tokens):
                want[t], bound[t] = moe_token_bounds(x[t], ids[t], weights[t], dtype, dg, du, dd, act)
            ref_y = ref.moe_experts(x, ids, weights, dtype, wg, wu, wd, hidden, ffn, experts, act)
            assert np.allclose(want, ref_y, rtol=1e-12, atol=1e-12)
            cx.add(name, "moe_experts", dims={"tokens": tokens, "hidden": hidden, "ffn": ffn, "experts": experts,
                                              "top_k": top_k, "gate_bytes": wg.size, "up_bytes": wu.size,
                                              "down_bytes": wd.size},
                   scalars={"weight_type": dtype, "act": act},
                   inputs={"x": x, "ids": ids, "weights": weights, "gate_weight": wg, "up_weight": wu,
                           "down_weight": wd},
                   expected={"y": ref_y}, tolerance=ffn_tolerance("moe_experts", bound),
                   about="weights as %s, act %d%s; tolerance from the documented bounds" % (
                       label.upper(), act, "; experts named twice in a token" if fixed is not None else ""))


def gen_bad_ffn(add, IA, SM, OOM, OK):
    """Bad inputs of kb_linear_glu_w (base: 2 rows, [3, 64] Q4_0 weights) and
    kb_moe_experts (base: 2 tokens, 2 experts of [32, 32] Q8_0, top_k 2)."""
    add(bad_case("linear_glu_w_gate_bytes_short", "linear_glu_w", SM, dims={"gate_bytes": 107},
                 about="gate_bytes must be 108 (gate_weight [3, 64] as Q4_0)"))
    add(bad_case("linear_glu_w_up_bytes_long", "linear_glu_w", SM, dims={"up_bytes": 109}))
    add(bad_case("linear_glu_w_in_features_not_multiple_of_32", "linear_glu_w", IA, dims={"in_features": 40}))
    add(bad_case("linear_glu_w_weight_type_unknown", "linear_glu_w", IA, scalars={"weight_type": 7},
                 requires=["bad_enum"]))
    add(bad_case("linear_glu_w_act_unknown", "linear_glu_w", IA, scalars={"act": 5}, requires=["bad_enum"]))
    add(bad_case("linear_glu_w_null_up", "linear_glu_w", IA, null=["up_weight"]))
    add(bad_case("linear_glu_w_negative_rows", "linear_glu_w", IA, dims={"rows": -1}))
    add(bad_case("linear_glu_w_rows0_null_ok", "linear_glu_w", OK, dims={"rows": 0}, null=["x", "y"],
                 about="no rows: x and y are empty and may be NULL"))
    add(bad_case("moe_experts_id_eq_experts", "moe_experts", IA, values={"ids": [0, 1, 2, 1]},
                 about="ids must lie in [0, experts); checked before anything is written"))
    add(bad_case("moe_experts_id_negative", "moe_experts", IA, values={"ids": [0, -1, 1, 1]}))
    add(bad_case("moe_experts_down_bytes_short", "moe_experts", SM, dims={"down_bytes": 2175},
                 about="down_bytes must be 2176 (down_weight [2, 32, 32] as Q8_0)"))
    add(bad_case("moe_experts_gate_bytes_long", "moe_experts", SM, dims={"gate_bytes": 2177}))
    add(bad_case("moe_experts_ffn_not_multiple_of_32", "moe_experts", IA, dims={"ffn": 48},
                 about="ffn must be a multiple of 32 for Q8_0 down_weight"))
    add(bad_case("moe_experts_null_weights", "moe_experts", IA, null=["weights"]))
    add(bad_case("moe_experts_null_down", "moe_experts", IA, null=["down_weight"]))
    add(bad_case("moe_experts_act_negative", "moe_experts", IA, scalars={"act": -1}, requires=["bad_enum"]))
    add(bad_case("moe_experts_negative_top_k", "moe_experts", IA, dims={"top_k": -1}))
    add(bad_case("moe_experts_y_overlaps_x", "moe_experts", IA, overlap={"y": {"with": "x", "offset": 0}}))
    add(bad_case("moe_experts_weights_too_short", "moe_experts", SM, shapes={"weights": [2, 1]}))
    add(bad_case("moe_experts_overflow", "moe_experts", OOM, dims={"experts": 2**62}, requires=["huge_dim"],
                 about="experts * 1088 bytes overflows int64"))


def dump_json(obj):
    return (json.dumps(obj, sort_keys=True, indent=1, allow_nan=False, ensure_ascii=True) + "\n").encode("ascii")


def build():
    """Returns {file name: bytes} for the whole corpus."""
    cx = Corpus()
    gen_elementwise(cx)
    gen_rowwise(cx)
    gen_gemm(cx)
    gen_transformer(cx)
    gen_training(cx)
    gen_decoding(cx)
    gen_model(cx)
    gen_weights(cx)
    gen_moe(cx)
    gen_decoder(cx)
    gen_rope_ex(cx)
    gen_kv_cache(cx)
    gen_kv_cache16(cx)
    gen_ffn(cx)
    gen_decoding16(cx)
    covered = {c["kernel"] for c in cx.cases}
    assert covered == set(KERNELS), set(KERNELS) - covered
    manifest = {
        "format": FORMAT_VERSION,
        "library_version": LIBRARY_VERSION,
        "kernels": KERNELS,
        "signatures": {k: signature_json(k) for k in KERNELS},
        "tolerances": TOLERANCES,
        "cases": cx.cases,
    }
    bad = gen_bad_inputs()
    files = dict(cx.files)
    files["manifest.json"] = dump_json(manifest)
    files["manifest.tsv"] = tsv_manifest(cx.cases).encode("ascii")
    files["bad_input.json"] = dump_json({"format": FORMAT_VERSION, "signatures": manifest["signatures"],
                                         "cases": bad})
    files["bad_input.tsv"] = tsv_bad(bad).encode("ascii")
    return files


def write(files, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):
        if name not in files and (name.endswith(".npy") or name.split(".")[0] in ("manifest", "bad_input")):
            os.remove(os.path.join(out_dir, name))
    for name, data in sorted(files.items()):
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)


def check(committed):
    """Regenerates into a temporary directory; returns a list of differences."""
    tmp = tempfile.mkdtemp(prefix="kb_corpus_")
    try:
        write(build(), tmp)
        want = sorted(os.listdir(tmp))
        have = sorted(n for n in os.listdir(committed) if not n.startswith("."))
        problems = ["missing: " + n for n in sorted(set(want) - set(have))]
        problems += ["unexpected: " + n for n in sorted(set(have) - set(want))]
        for n in sorted(set(want) & set(have)):
            if not filecmp.cmp(os.path.join(tmp, n), os.path.join(committed, n), shallow=False):
                problems.append("differs: " + n)
        return problems
    finally:
        shutil.rmtree(tmp)


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    # Under `bazel run`, write into the source tree, and resolve relative
    # paths against the directory the command was started from.
    if os.environ.get("BUILD_WORKSPACE_DIRECTORY"):
        here = os.path.join(os.environ["BUILD_WORKSPACE_DIRECTORY"], "tests", "conformance")
    cwd = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    argv = [argv[0]] + [a if a.startswith("--") else os.path.join(cwd, a) for a in argv[1:]]
    if len(argv) >= 2 and argv[1] == "--check":
        target = argv[2] if len(argv) > 2 else os.path.join(here, "corpus")
        problems = check(target)
        for p in problems:
            print(p)
        if problems:
            print("corpus in %s is stale: run tests/conformance/make_corpus.py" % target)
            return 1
        print("corpus in %s is up to date" % target)
        return 0
    out = argv[1] if len(argv) > 1 else os.path.join(here, "corpus")
    files = build()
    write(files, out)
    total = sum(len(b) for b in files.values())
    print("wrote %d files, %d bytes, to %s" % (len(files), total, out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
