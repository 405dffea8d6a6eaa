#!/usr/bin/env python3
"""PyTorch's silu and SwiGLU on the CPU, alone in its own process: the peer
figures for cpu_benchmark's memory-bound rows of kb_silu and kb_glu
(docs/performance.md, "silu and glu in float32 arithmetic").

  python3 benchmarks/cpu/torch_silu.py [--threads N] [--rounds N] [--min-round SECONDS]

Rows (the shapes and byte counts of cpu_benchmark --only memory):
  silu  torch.nn.functional.silu's kernel into a preallocated y
        (torch._C._nn.silu(x, out=y): no 64 MB allocation per call, as
        kb_silu), 16M elements: 8 bytes per
        element in float32 (read x, write y), 4 in bfloat16 / float16;
  glu   torch.mul(F.silu(h[:, :ffn]), h[:, ffn:], out=y), h [256, 2 * 11008]
        (the fused gate_up layout), 12 bytes per output element in float32;
        PyTorch has no fused SwiGLU, so this is its usual expression.
Prints milliseconds per call (minimum and median over the rounds) and GB/s
of the minimum; compare with cpu_benchmark's GB/s for the same row and
thread count, run right before or after (2 noisy cores: repeat).
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def timed(fn, rounds, min_round):
    fn()
    per_call = []
    for _ in range(rounds):
        calls, t0 = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            dt = time.perf_counter() - t0
            if dt >= min_round:
                break
        per_call.append(dt / calls)
    return min(per_call), statistics.median(per_call)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-round", type=float, default=0.3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| op | dtype | shape | ms (min) | ms (median) | GB/s (min) |")
    print("|---|---|---|---|---|---|")
    gen = torch.Generator().manual_seed(1)
    n = 16 << 20
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        x = (torch.rand(n, generator=gen) * 20 - 10).to(dt)
        y = torch.empty_like(x)
        lo, med = timed(lambda: torch._C._nn.silu(x, out=y), args.rounds, args.min_round)
        nbytes = 2 * n * x.element_size()
        print(f"| silu | {str(dt)[6:]} | 16M | {lo * 1e3:.2f} | {med * 1e3:.2f} | {nbytes / lo / 1e9:.1f} |")
    rows, ffn = 256, 11008
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        h = (torch.rand(rows, 2 * ffn, generator=gen) * 20 - 10).to(dt)
        y = torch.empty(rows, ffn, dtype=dt)
        lo, med = timed(lambda: torch.mul(F.silu(h[:, :ffn]), h[:, ffn:], out=y), args.rounds, args.min_round)
        nbytes = 3 * rows * ffn * h.element_size()
        print(f"| glu | {str(dt)[6:]} | {rows}x{ffn} | {lo * 1e3:.2f} | {med * 1e3:.2f} | {nbytes / lo / 1e9:.1f} |")


if __name__ == "__main__":
    main()
