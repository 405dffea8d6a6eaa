"""The Python conformance runner (docs/conformance.md).

  runner.py --corpus DIR --out FILE [--threads N]

Runs every golden and bad-input case of the corpus through the public
package `kernelbridge` (not its cffi module) and writes the result JSON.
The Python API takes arrays, not sizes: dims come from the arrays' shapes,
so cases needing a negative or absurd size, or a leading dimension
inconsistent with the array, are recorded as n/a with the reason.  Strided
gemm buffers ([rows, ld]) are passed as views of their first columns; an
inout one is updated through a contiguous copy written back, which leaves
the padding untouched as the C API does.  Batches of strided matrices
(gemm_batched) are numpy views with the case's strides, which the binding
reads and writes in place.

u8 tensors (raw bytes, the weights in storage formats) are uint8 arrays and
kb_dtype parameters plain ints, as `act` is.  The package's quantize and
dequantize are hand-written (they make and take kernelbridge.QTensor); the
corpus describes the C-shaped functions they call, the generated ones in
kernelbridge._kernels, which run those cases (their sizes that no input
gives, such as y_bytes or rows and cols, are keyword arguments and passed as
such).  linear_w and embedding_w are the package's own functions.
"""

import argparse
import inspect
import json
import math
import os
import struct
import sys

import numpy as np

import kernelbridge as kb
from kernelbridge import _kernels

# bf16 / f16 tensors are uint16 arrays of bit patterns, which the 16-bit
# functions of the package take for both formats.
DTYPES = {"f32": np.float32, "i32": np.int32, "u8": np.uint8, "bf16": np.uint16, "f16": np.uint16}
NAN32 = np.frombuffer(struct.pack("<I", 0x7FC00000), np.float32)[0]
# What an output holds before a call (a value the kernel is unlikely to write).
FILL = {"f32": NAN32, "i32": -1, "u8": 0xA5, "bf16": 0xFFFF, "f16": 0xFFFF}
# Kernels whose package-level name is a hand-written function of another
# shape (kernelbridge/_qtensor.py): the generated function runs the case.
GENERATED_ONLY = {"quantize", "dequantize"}


def scalar(value, typ):
    if isinstance(value, str):
        if value in ("nan", "inf", "-inf"):
            return float(value)
        return int(value)  # u64 as a decimal string
    return value


def eval_dim(expr, dims, flags):
    if "?" in expr:
        flag, rest = expr.split("?", 1)
        a, b = rest.split(":", 1)
        return eval_dim(a if flags[flag.strip()] else b, dims, flags)
    expr = expr.strip()
    return int(expr) if expr.isdigit() else dims[expr]


def fnv1a64(arr):
    h = 0xCBF29CE484222325
    for b in np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def max_err(got, want, tol):
    if got.dtype.kind in "iu":  # int32 ids, u8 bytes: exact whatever the tolerance
        return 0.0 if np.array_equal(got.astype(np.int64), want.astype(np.int64)) else math.inf
    n, a = tol["ulp"], tol["abs"]
    floor = a / n if n else 0.0
    worst = 0.0
    for g, w in zip(got.astype(np.float64).ravel().tolist(), want.astype(np.float64).ravel().tolist()):
        if (math.isnan(g) and math.isnan(w)) or g == w:
            continue
        if math.isnan(g) or math.isnan(w) or math.isinf(g) or math.isinf(w):
            return math.inf
        e = (struct.unpack("<Q", struct.pack("<d", w))[0] >> 52) & 0x7FF
        ulp = 2.0 ** (max(e - 1023, -126) - 23)
        worst = max(worst, abs(g - w) / max(ulp, floor))
    return worst


class Call:
    """A kernel call assembled from a case: arrays by parameter name."""

    def __init__(self, kernel, sig, dims, flags, scalars):
        self.fn = getattr(_kernels if kernel in GENERATED_ONLY else kb, kernel)
        self.sig = sig
        self.dims, self.flags, self.scalars = dims, flags, scalars
        self.accepts = set(inspect.signature(self.fn).parameters)
        self.arrays = {}
        self.writeback = []  # (contiguous array given to the call, buffer view to copy into)

    def tensors(self):
        return [p for p in self.sig if p["role"] in ("in", "out", "inout")]

    def logical(self, p, buf):
        """The array to pass for tensor p whose storage is buf."""
        if buf is None or not p.get("ld"):
            return buf
        if p.get("stride"):
            # A batch of strided matrices in a flat buffer: a numpy view with
            # the case's strides, which the binding passes on as they are
            # (inouts are written in place; gaps stay untouched).
            shape = tuple(eval_dim(e, self.dims, self.flags) for e in p["shape"])
            if buf.ndim != 1:  # bad-input cases build the logical shape
                return buf
            if buf.size == 0 or 0 in shape:
                return np.zeros(shape, buf.dtype)
            size = buf.itemsize
            strides = (self.dims[p["stride"]] * size, self.dims[p["ld"]] * size, size)
            return np.lib.stride_tricks.as_strided(buf, shape=shape, strides=strides,
                                                   writeable=p["role"] != "in")
        rows, cols = (eval_dim(e, self.dims, self.flags) for e in p["shape"])
        view = buf.reshape(-1, buf.shape[-1])[:rows, :cols] if buf.size else buf.reshape(rows, cols)
        if p["role"] == "inout":
            tmp = np.ascontiguousarray(view)
            self.writeback.append((tmp, view))
            return tmp
        return view

    def run(self, ctx):
        pos, outs = [], []
        for p in self.tensors():
            arr = self.logical(p, self.arrays.get(p["name"]))
            (outs if p["role"] == "out" else pos).append(arr)
        kw = {}
        for p in self.sig:
            if p["role"] == "flag":
                kw[p["name"]] = bool(self.flags[p["name"]])
            elif p["role"] == "scalar":
                kw[p["name"]] = scalar(self.scalars[p["name"]], p.get("type"))
            elif p["role"] == "dim" and p["name"] in self.accepts:
                kw[p["name"]] = self.dims[p["name"]]
        if outs:
            kw["out"] = outs[0] if len(outs) == 1 else tuple(outs)
        self.fn(*pos, ctx=ctx, **kw)
        for tmp, view in self.writeback:
            view[...] = tmp


def golden(corpus, manifest, ctx):
    results = []
    for case in manifest["cases"]:
        sig = manifest["signatures"][case["kernel"]]
        # A case may carry its own bound (block-quantized linear_w: it depends on the data).
        tol = case.get("tolerance", manifest["tolerances"][case["kernel"]])
        res = {"name": case["name"], "kernel": case["kernel"]}
        call = Call(case["kernel"], sig, case["dims"], case["flags"], case["scalars"])
        for name, f in case["inputs"].items():
            call.arrays[name] = np.load(os.path.join(corpus, f))
        expected = {name: np.load(os.path.join(corpus, f)) for name, f in case["expected"].items()}
        for p in call.tensors():
            name = p["name"]
            if name in case["null"]:
                call.arrays[name] = None
            elif name in case["alias"]:
                call.arrays[name] = call.arrays[case["alias"][name]]
            elif p["role"] == "out":
                want = expected[name]
                call.arrays[name] = np.full(want.shape, FILL[p["dtype"]], DTYPES[p["dtype"]])
        try:
            call.run(ctx)
            res["status"] = "OK"
        except kb.Error as e:
            res.update(status=e.status.name if e.status is not None else "UNKNOWN", error=str(e))
        except Exception as e:  # a binding-level rejection the C API has no status for
            res.update(status="PYTHON_ERROR", error=f"{type(e).__name__}: {e}")
        hashes, worst = {}, 0.0
        if res["status"] == "OK":
            for name, want in expected.items():
                got = call.arrays[name]
                hashes[name] = fnv1a64(got)
                worst = max(worst, max_err(got, want, tol))
        else:
            worst = math.inf
        res["hashes"] = hashes
        res["max_ulp"] = "inf" if math.isinf(worst) else worst
        res["passed"] = res["status"] == "OK" and worst <= tol["ulp"]
        results.append(res)
    return results


def na_reason(case):
    req = set(case["requires"])
    if "negative_dim" in req:
        return "sizes come from array shapes in Python: a negative size cannot be expressed"
    if "huge_dim" in req:
        return "sizes come from array shapes in Python: an overflowing size needs an array of that size"
    if "explicit_ld" in req:
        return "ld is the row length of the contiguous array in Python: an inconsistent ld cannot be expressed"
    return None


def bad_input(bad):
    out = []
    for case in bad["cases"]:
        res = {"name": case["name"], "kernel": case["kernel"], "expected": case["expected"]}
        reason = na_reason(case)
        sig = bad["signatures"][case["kernel"]]
        call = Call(case["kernel"], sig, case["dims"], case["flags"], case["scalars"])
        if reason is None:
            for p in call.tensors():
                if p["name"] in case["null"] and not p.get("nullable"):
                    reason = (f"{p['name']} is not nullable: Python passes NULL only for nullable tensors "
                              "(None as out= allocates a new array; an empty input is an empty array)")
                    break
            for p in call.tensors():
                t = case["tensors"].get(p["name"])
                if t is not None and "shape" not in t:
                    reason = f"{p['name']} has no shape for these sizes"
        if reason is not None:
            res.update(got="n/a", reason=reason)
            out.append(res)
            continue
        owners = {}
        for p in call.tensors():
            name = p["name"]
            if name in case["null"]:
                call.arrays[name] = None
                continue
            t = case["tensors"][name]
            dt = DTYPES[p["dtype"]]
            size = int(np.prod(t["shape"], dtype=np.int64))
            ov = case["overlap"].get(name)
            if ov is not None:
                continue
            n = max(t["len"], size)
            extra = [o for o, v in case["overlap"].items() if v["with"] == name]
            for o in extra:
                ot = case["tensors"][o]
                n = max(n, case["overlap"][o]["offset"] + max(ot["len"], int(np.prod(ot["shape"]))))
            if "values" in t:
                vals = np.array([scalar(v, None) for v in t["values"]], dtype=np.float64).astype(dt)
                buf = np.concatenate([vals, np.full(max(0, n - len(vals)), 1.0 if dt is np.float32 else 0, dt)])
            else:
                buf = np.full(n, 1.0 if dt is np.float32 else 0, dt)
            owners[name] = buf
            call.arrays[name] = buf[:size].reshape(t["shape"])
        for name, ov in case["overlap"].items():
            t = case["tensors"][name]
            size = int(np.prod(t["shape"], dtype=np.int64))
            base = owners[ov["with"]]
            call.arrays[name] = base[ov["offset"]:ov["offset"] + size].reshape(t["shape"])
        written = [p["name"] for p in call.tensors() if p["role"] != "in" and call.arrays.get(p["name"]) is not None]
        before = {n: call.arrays[n].copy() for n in written}
        try:
            with kb.Context(threads=2) as ctx:
                call.run(ctx)
            res["got"] = "OK"
        except kb.Error as e:
            res["got"] = e.status.name if e.status is not None else "UNKNOWN"
            res["message"] = str(e)
        except Exception as e:
            res.update(got="n/a", reason=f"the binding rejects the call before C: {type(e).__name__}: {e}")
        if res["got"] not in ("OK", "n/a"):
            res["untouched"] = all(
                np.array_equal(before[n].view(np.uint8), call.arrays[n].view(np.uint8)) for n in written
            )
        out.append(res)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="kernelbridge Python conformance runner")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args(argv)
    with open(os.path.join(args.corpus, "manifest.json")) as f:
        manifest = json.load(f)
    with open(os.path.join(args.corpus, "bad_input.json")) as f:
        bad = json.load(f)
    with kb.Context(threads=args.threads) as ctx:
        cases = golden(args.corpus, manifest, ctx)
    bads = bad_input(bad)
    doc = {"format": 1, "language": "python", "backend": "cpu", "version": kb.version_string(),
           "threads": args.threads, "cases": cases, "bad_input": bads}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    ok = all(c["passed"] for c in cases) and all(
        b["got"] == "n/a" or (b["got"] == b["expected"] and b.get("untouched", True)) for b in bads
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
