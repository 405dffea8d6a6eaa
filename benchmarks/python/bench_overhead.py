#!/usr/bin/env python3
"""Call overhead of the Python binding: kernelbridge.silu through the public
wrapper, a bare cffi call with pre-cast pointers, and a ctypes call (argtypes
set) into a shared library built from the same sources; kernelbridge.add
against numpy's own np.add, with the C fast path (src/fastcall.c) on and off.
Not a test.

  python3 benchmarks/python/bench_overhead.py [--runs 7] [--calls N] [--lib PATH]

Needs an importable kernelbridge (pip install bindings/python, or an in-place
build: cd bindings/python && python3 setup.py build_ext --inplace, then run
with PYTHONPATH=bindings/python).  The ctypes library is built with gcc from
core/ and kernels/cpu/ unless --lib names one (e.g. bazel-bin/core/libkernelbridge.so).
Prints min and median ns per call over --runs runs for 16 and 1M elements,
including the wrapper on host kernelbridge.Buffer arguments (the checked
"slow path" every Buffer / device / DLPack argument takes).

  python3 benchmarks/python/bench_overhead.py --cuda [--runs 7] [--calls 20000]

times the same silu on CUDA device buffers instead (cuda_overhead.py) and
builds nothing.
"""

import argparse
import ctypes
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import kernelbridge
from kernelbridge import _runtime
from kernelbridge._native import ffi, lib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def build_shared_library(outdir):
    """libkernelbridge.so from the repository's sources, with the library's flags."""
    srcs = sorted(glob.glob(os.path.join(ROOT, "core", "src", "*.c")) + glob.glob(os.path.join(ROOT, "kernels", "cpu", "*.c")))
    srcs = [s for s in srcs if not s.endswith("_test.c")]
    out = os.path.join(outdir, "libkernelbridge.so")
    cmd = ["gcc", "-shared", "-fPIC", "-std=c99", "-D_POSIX_C_SOURCE=200809L", "-O2", "-fvisibility=hidden",
           "-fno-strict-aliasing", "-ffp-contract=off", "-I", os.path.join(ROOT, "core", "include"),
           "-I", os.path.join(ROOT, "core", "src"), "-o", out] + srcs + ["-lm", "-lpthread", "-ldl"]
    subprocess.check_call(cmd)
    return out


def timeit(fn, calls, runs):
    """min and median ns per call of fn() over `runs` runs of `calls` calls."""
    per = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter_ns() - t0) / calls)
    return min(per), statistics.median(per)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--calls", type=int, default=0, help="calls per run (for 16 elements (default 200000; 1M elements always use 20))")
    ap.add_argument("--lib", help="shared library for the ctypes call (default: build one with gcc)")
    ap.add_argument("--cuda", action="store_true", help="time silu on CUDA device buffers (benchmarks/cuda/overhead)")
    args = ap.parse_args()
    if args.cuda:
        import cuda_overhead  # next to this script, which is on sys.path[0]

        cuda_overhead.run(max(1, args.runs), max(1, args.calls or 20000), timeit)
        return

    tmp = tempfile.TemporaryDirectory()
    so = args.lib or build_shared_library(tmp.name)
    cl = ctypes.CDLL(so)
    cl.kb_silu.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_float)]
    cl.kb_silu.restype = ctypes.c_int
    # The idiomatic numpy + ctypes binding: arrays passed directly, checked by ndpointer.
    nd_in = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")
    nd_out = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS,WRITEABLE")
    cl2 = ctypes.CDLL(so)
    cl2.kb_silu.argtypes = [ctypes.c_void_p, ctypes.c_int64, nd_in, nd_out]
    cl2.kb_silu.restype = ctypes.c_int
    cl.kb_context_create.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)]
    cl.kb_context_destroy.argtypes = [ctypes.c_void_p]

    print(f"kernelbridge {kernelbridge.__version__}, Python {sys.version.split()[0]}, numpy {np.__version__}")
    print(f"ctypes library: {so}")
    print(f"{'elements':>9} {'variant':<34} {'min ns':>12} {'median ns':>12}")
    for n in (16, 1 << 20):
        calls = (args.calls or 200000) if n == 16 else 20
        x = np.linspace(-4, 4, n, dtype=np.float32)
        y = np.empty_like(x)
        ctx = kernelbridge.default_context()  # the context the wrapper uses
        # cffi with pointers cast once, outside the loop.
        px, py = ffi.from_buffer("float[]", x), ffi.from_buffer("float[]", y, require_writable=True)
        cptr = ctx._ptr
        f = lib.kb_silu
        # ctypes with argtypes: pointers from numpy, converted per call as a ctypes user would.
        cctx = ctypes.c_void_p()
        cl.kb_context_create(0, 0, ctypes.byref(cctx))
        csilu = cl.kb_silu
        csilu2 = cl2.kb_silu
        fa = ffi.typeof("float[]")
        fb = ffi.from_buffer
        fp = ctypes.POINTER(ctypes.c_float)
        bx = kernelbridge.Buffer.from_numpy(ctx, x)
        by = kernelbridge.Buffer(ctx, x.shape)
        a2 = np.linspace(-1, 1, n, dtype=np.float32)
        variants = [
            ("numpy add(x, a, out=y)", lambda: np.add(x, a2, out=y)),
            ("wrapper add(x, a, out=y)", lambda: kernelbridge.add(x, a2, out=y)),
            ("numpy add(x, a) (new array)", lambda: np.add(x, a2)),
            ("wrapper add(x, a) (new array)", lambda: kernelbridge.add(x, a2)),
            ("wrapper silu(x) (new array)", lambda: kernelbridge.silu(x)),
            ("wrapper silu(x, out=y)", lambda: kernelbridge.silu(x, y)),
            ("wrapper silu(bx, out=by), Buffers", lambda: kernelbridge.silu(bx, by, ctx=ctx)),
            ("bare cffi, pre-cast pointers", lambda: f(cptr, n, px, py)),
            ("cffi + from_buffer per call (floor)", lambda: f(cptr, n, fb(fa, x), fb(fa, y, True))),
            ("ctypes, argtypes, data_as per call", lambda: csilu(cctx, n, x.ctypes.data_as(fp), y.ctypes.data_as(fp))),
            ("ctypes, ndpointer argtypes", lambda: csilu2(cctx, n, x, y)),
        ]
        # The same wrappers with the C fast path off: the Python path every
        # call took before it existed (and every Buffer / foreign-memory call takes).
        python_path = [
            ("Python path add(x, a, out=y)", lambda: kernelbridge.add(x, a2, out=y)),
            ("Python path silu(x, out=y)", lambda: kernelbridge.silu(x, y)),
        ]
        res = {}
        for group, fast in ((variants, True), (python_path, False)):
            was = _runtime.fast_enabled(fast)
            for name, fn in group:
                fn()
                res[name] = timeit(fn, calls, args.runs)
                print(f"{n:>9} {name:<34} {res[name][0]:>12.0f} {res[name][1]:>12.0f}")
            _runtime.fast_enabled(was)
        bare = res["bare cffi, pre-cast pointers"][0]
        ct = res["ctypes, argtypes, data_as per call"][0]
        ct2 = res["ctypes, ndpointer argtypes"][0]
        for kb_name, np_name in (("wrapper add(x, a, out=y)", "numpy add(x, a, out=y)"),
                                 ("wrapper add(x, a) (new array)", "numpy add(x, a) (new array)"),
                                 ("Python path add(x, a, out=y)", "numpy add(x, a, out=y)")):
            print(f"{n:>9}   {kb_name}: {res[kb_name][0] / res[np_name][0]:.2f}x {np_name} (min)")
        for name in ("wrapper silu(x) (new array)", "wrapper silu(x, out=y)"):
            w = res[name][0]
            print(f"{n:>9}   {name}: {w / bare:.2f}x bare cffi; ctypes data_as {ct / w:.2f}x, "
                  f"ctypes ndpointer {ct2 / w:.2f}x slower (min)")
        cl.kb_context_destroy(cctx)


if __name__ == "__main__":
    main()
