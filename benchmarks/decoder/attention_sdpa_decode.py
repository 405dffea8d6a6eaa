#!/usr/bin/env python3
"""PyTorch's side of attention_decode_bench.c: one query per sequence over a
KV cache, torch.nn.functional.scaled_dot_product_attention (float32, CPU,
enable_gqa for grouped heads), on the same shapes, in its own process.

    python3 benchmarks/decoder/attention_sdpa_decode.py [--threads N] [--reps N] [--shapes H/KVH/KEYS/D,...]
                                                        [--layers N|auto]

--layers keeps N caches per shape, as a model keeps one per layer, and call r
reads cache r mod N (auto: as many as make 256 MB at least), as
attention_decode_bench --layers does: with caches larger than the last-level
cache together, K and V come from memory, as in a model's decode step.
"""
import argparse
import time

import torch
import torch.nn.functional as F

KAUTO = 256 * 10**6  # --layers auto: caches of this many bytes at least
DEFAULT = "32/32/1024/128,32/8/4096/128,8/1/8192/128,1/1/1024/128,1/1/8192/128,8/8/8192/128"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--shapes", default=DEFAULT)
    ap.add_argument("--layers", default="1", help="caches per shape, or auto (256 MB at least)")
    a = ap.parse_args()
    if a.layers != "auto" and (not a.layers.isdigit() or not 1 <= int(a.layers) <= 4096):
        ap.error("--layers must be auto or 1 to 4096")
    torch.set_num_threads(a.threads)
    print("torch %s, %d threads" % (torch.__version__, a.threads))
    print("| heads | kv_heads | keys | head_dim | layers | median us | best us |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    g = torch.Generator().manual_seed(0)
    for shape in a.shapes.split(","):
        h, kvh, keys, d = (int(x) for x in shape.split("/"))
        block = 2 * 4 * kvh * keys * d  # K and V bytes of one layer
        layers = min(4096, KAUTO // block + 1) if a.layers == "auto" else int(a.layers)
        q = torch.randn(1, h, 1, d, generator=g)
        k = torch.randn(1, kvh, keys, d, generator=g)
        v = torch.randn(1, kvh, keys, d, generator=g)
        # Every layer holds the same values at its own addresses.
        ks = [k.clone() for _ in range(layers)]
        vs = [v.clone() for _ in range(layers)]
        times = []
        with torch.no_grad():
            for r in range(a.reps + 3):
                l = r % layers
                t0 = time.perf_counter()
                F.scaled_dot_product_attention(q, ks[l], vs[l], enable_gqa=kvh != h)
                if r >= 3:
                    times.append(time.perf_counter() - t0)
        times.sort()
        print("| %d | %d | %d | %d | %d | %.1f | %.1f |"
              % (h, kvh, keys, d, layers, 1e6 * times[len(times) // 2], 1e6 * times[0]))
        del ks, vs


if __name__ == "__main__":
    main()
