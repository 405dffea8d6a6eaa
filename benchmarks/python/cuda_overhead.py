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


import numpy as np

import kernelbridge

SIDE = "python-kernelbridge.silu"


def _report(side, fn, calls, runs, timeit):
    """Warms fn up (backend loading, first launches), then times it with
    bench_overhead's timeit: min and median ns per call."""
    for _ in range(calls // 4 + 2):
        fn()
    lo, med = timeit(fn, calls, runs)
    print(f"overhead {side} {lo:.1f} {med:.1f}", flush=True)


def _torch_references(ctx, x, calls, runs, timeit):
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
            _report(side, fn, calls, runs, timeit)
        except Exception as e:  # noqa: BLE001 - any failure is reported, not raised
            print(f"SKIPPED: {side}: {type(e).__name__}: {e}")


def run(runs, calls, timeit):
    reason = kernelbridge.cuda.unavailable_reason()
    if reason is not None:
        print(f"SKIPPED: {SIDE}: no usable CUDA device ({reason})")
        return
    x = np.linspace(-4, 4, 16, dtype=np.float32)
    with kernelbridge.Context("cuda", 0) as ctx:
        bx = kernelbridge.Buffer.from_numpy(ctx, x)
        by = kernelbridge.Buffer(ctx, x.shape)
        silu = kernelbridge.silu
        _report(SIDE, lambda: silu(bx, out=by, ctx=ctx), calls, runs, timeit)
        _torch_references(ctx, x, calls, runs, timeit)
