#!/usr/bin/env python3
"""PyTorch's side of attention_decode_bench.c: one query per sequence over a
KV cache, torch.nn.functional.scaled_dot_product_attention (float32, CPU,
enable_gqa for grouped heads), on the same shapes, in its own process.

    python3 benchmarks/decoder/attention_sdpa_decode.py [--threads N] [--reps N] [--shapes H/KVH/KEYS/D,...]
"""
import argparse
import time

import torch
import torch.nn.functional as F

DEFAULT = "32/32/1024/128,32/8/4096/128,8/1/8192/128,1/1/1024/128,1/1/8192/128,8/8/8192/128"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--shapes", default=DEFAULT)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print("torch %s, %d threads" % (torch.__version__, a.threads))
    print("| heads | kv_heads | keys | head_dim | median us | best us |")
    print("| --- | --- | --- | --- | --- | --- |")
    g = torch.Generator().manual_seed(0)
    for shape in a.shapes.split(","):
        h, kvh, keys, d = (int(x) for x in shape.split("/"))
        q = torch.randn(1, h, 1, d, generator=g)
        k = torch.randn(1, kvh, keys, d, generator=g)
        v = torch.randn(1, kvh, keys, d, generator=g)
        times = []
        with torch.no_grad():
            for r in range(a.reps + 3):
                t0 = time.perf_counter()
                F.scaled_dot_product_attention(q, k, v, enable_gqa=kvh != h)
                if r >= 3:
                    times.append(time.perf_counter() - t0)
        times.sort()
        print("| %d | %d | %d | %d | %.1f | %.1f |" % (h, kvh, keys, d, 1e6 * times[len(times) // 2], 1e6 * times[0]))


if __name__ == "__main__":
    main()
