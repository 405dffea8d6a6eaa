#!/usr/bin/env python3
"""kernelbridge attention against PyTorch's scaled_dot_product_attention.

    attention_sdpa.py [--quick] [--rounds N] [--min-round SECONDS]

Prints a markdown table; prints "SKIPPED: <reason>" and exits 0 when torch,
a CUDA device, the kernelbridge Python binding or its CUDA backend is
missing.  Exits 1 when a measurement failed.

Timing as cuda_benchmark (benchmarks/README.md): host clock, back-to-back
calls after warm-up, median of rounds, one synchronisation per call on both
sides (kernelbridge's kernels wait before returning; SDPA is followed by
torch.cuda.synchronize()).  The tensors are torch CUDA tensors passed to
kernelbridge without a copy (__cuda_array_interface__ / DLPack).
"""

import argparse
import statistics
import sys
import time

# (batch, heads, seq, head_dim), non-causal, kv_heads = heads: as cuda_benchmark.
SETTINGS = [(1, 16, 512, 64), (4, 16, 1024, 64), (1, 32, 2048, 128), (1, 8, 4096, 128)]


def skip(reason):
    print("SKIPPED: %s" % reason)
    sys.exit(0)


def timed(fn, rounds, min_round):
    """Median seconds per call of fn."""
    for _ in range(3):
        fn()
    t0 = time.perf_counter()
    fn()
    n = max(1, min(10000, int(min_round / max(time.perf_counter() - t0, 1e-9))))
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        per.append((time.perf_counter() - t0) / n)
    return statistics.median(per)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the first setting only")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-round", type=float, default=0.05)
    args = ap.parse_args()

    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # ImportError, or a broken installation
        skip("torch is not importable (%s: %s)" % (type(e).__name__, e))
    if not torch.cuda.is_available():
        skip("torch sees no CUDA device")
    try:
        import kernelbridge as kb
    except Exception as e:
        skip("the kernelbridge Python binding is not importable (%s: %s)" % (type(e).__name__, e))
    try:
        ctx = kb.Context("cuda", 0)
    except Exception as e:
        skip("no kernelbridge CUDA context (%s: %s)" % (type(e).__name__, e))

    print("## kernelbridge attention vs PyTorch SDPA: %s\n" % torch.cuda.get_device_name(0))
    print("torch %s, kernelbridge %s; median of %d rounds, host clock, one synchronisation per call.\n"
          % (torch.__version__, getattr(kb, "__version__", "?"), args.rounds))
    print("| batch | heads | seq | head_dim | dtype | kb TFLOP/s | SDPA TFLOP/s | kb / SDPA | max abs diff vs SDPA f32 |")
    print("|---|---|---|---|---|---|---|---|---|")
    failures = 0
    for b, h, s, d in SETTINGS[:1] if args.quick else SETTINGS:
        flops = 4.0 * b * h * s * s * d
        for dtype, fn, name in ((torch.float32, kb.attention, "f32"), (torch.bfloat16, kb.attention_bf16, "bf16")):
            gen = torch.Generator(device="cuda").manual_seed(0)
            q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype, generator=gen) for _ in range(3))
            out = torch.empty_like(q)
            torch.cuda.synchronize()  # kernelbridge runs on its own stream
            kb_t = sdpa_t = None
            diff = note = ""
            try:
                kb_t = timed(lambda: fn(q, k, v, out=out, ctx=ctx), args.rounds, args.min_round)
                ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float())
                diff = "%.3g" % (out.float() - ref).abs().max().item()
            except Exception as e:
                failures += 1
                note = "kb: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:120] if str(e) else "")
            try:
                sdpa_t = timed(lambda: (F.scaled_dot_product_attention(q, k, v), torch.cuda.synchronize()),
                               args.rounds, args.min_round)
            except Exception as e:
                failures += 1
                note += " SDPA: %s: %s" % (type(e).__name__, str(e)[:120])
            kb_tf = "%.2f" % (flops / kb_t * 1e-12) if kb_t else "n/a"
            sd_tf = "%.2f" % (flops / sdpa_t * 1e-12) if sdpa_t else "n/a"
            ratio = "%.2f" % (sdpa_t / kb_t) if kb_t and sdpa_t else "n/a"
            if note:
                print("attention %s %s: %s" % ((b, h, s, d), name, note), file=sys.stderr)
            print("| %d | %d | %d | %d | %s | %s | %s | %s | %s |"
                  % (b, h, s, d, name, kb_tf, sd_tf, ratio, diff or note or "n/a"), flush=True)
            del q, k, v, out
    ctx.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
