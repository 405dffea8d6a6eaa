"""The GPU mode of bench_overhead.py (--cuda): the 16-element silu on device
buffers of a CUDA context through the public wrapper,
kernelbridge.silu(bx, out=by, ctx=ctx).  benchmarks/cuda/overhead/run.sh
compares it with a bare CUDA launch + synchronize (bare_launch.cu), so it
prints machine-readable lines, "overhead SIDE MIN_NS MEDIAN_NS", or
"SKIPPED: reason" without a GPU.

When torch with CUDA imports, two reference lines follow (not part of the
target): torch's own silu on 16 floats + torch.cuda.synchronize(), what a
PyTorch user pays for the same tiny step, and kernelbridge.silu on torch
tensors (the __cuda_array_interface__ / DLPack path of the wrapper).
"""

import statistics
import time

import numpy as np

import kernelbridge

SIDE = "python-kernelbridge.silu"


def _ns_per_call(fn, calls, runs):
    """min and median ns per call of fn() over `runs` runs of `calls` calls."""
    fn()
    for _ in range(calls // 4 + 1):  # warm-up: backend loading, first launches
        fn()
    per = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter_ns() - t0) / calls)
    return min(per), statistics.median(per)


def _report(side, fn, calls, runs):
    lo, med = _ns_per_call(fn, calls, runs)
    print(f"overhead {side} {lo:.1f} {med:.1f}", flush=True)


def _torch_references(ctx, x, calls, runs):
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        return
    t = torch.from_numpy(x).to("cuda")
    out = torch.empty_like(t)
    silu = torch.nn.functional.silu
    sync = torch.cuda.synchronize

    def torch_step():
        silu(t)
        sync()

    sync()  # kernelbridge runs on its own stream: t must be ready
    refs = (("python-torch-silu-sync(reference)", torch_step),
            ("python-kernelbridge.silu-torch-tensors(reference)", lambda: kernelbridge.silu(t, out=out, ctx=ctx)))
    for side, fn in refs:
        # A reference that fails must not hide the measurement printed above.
        try:
            _report(side, fn, calls, runs)
        except Exception as e:  # noqa: BLE001 - any failure is reported, not raised
            print(f"SKIPPED: {side}: {type(e).__name__}: {e}")


def run(runs, calls):
    reason = kernelbridge.cuda.unavailable_reason()
    if reason is not None:
        print(f"SKIPPED: {SIDE}: no usable CUDA device ({reason})")
        return
    x = np.linspace(-4, 4, 16, dtype=np.float32)
    with kernelbridge.Context("cuda", 0) as ctx:
        bx = kernelbridge.Buffer.from_numpy(ctx, x)
        by = kernelbridge.Buffer(ctx, x.shape)
        silu = kernelbridge.silu
        _report(SIDE, lambda: silu(bx, out=by, ctx=ctx), calls, runs)
        _torch_references(ctx, x, calls, runs)
