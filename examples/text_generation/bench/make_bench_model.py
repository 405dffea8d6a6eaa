#!/usr/bin/env python3
"""Writes the benchmark models of the text generation example: the tiny
models' vocabulary (testdata/tokenizer.model) and random weights drawn as
testdata/make_models.py draws them, at a size where decoding is bound by
memory traffic, as it is for real models, and not by per-call overheads:

  bench-llama-{f32,q8_0,q4_0}.gguf   8 layers, hidden 1024, 16 heads / 4 KV
                                     heads, ffn 2816, context 2048 (93 M
                                     parameters: 373 MB as float32)
  bench-moe-q4_0.gguf                the same with 8 experts, 2 used

    python3 examples/text_generation/bench/make_bench_model.py --out DIR

Needs numpy and gguf (pip), as make_models.py; not committed (hundreds of
MB), made again when needed (a minute or two).
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testdata"))
import make_models  # noqa: E402

BENCH = dict(make_models.DENSE, name="kernelbridge bench llama", seed=27101, n_layer=8, n_embd=1024, n_head=16,
             n_head_kv=4, head_dim=64, n_ff=2816, n_ctx=2048)
BENCH_MOE = dict(BENCH, name="kernelbridge bench moe", seed=27102, n_ff=1408, n_expert=8, n_expert_used=2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--formats", default="F32,Q8_0,Q4_0", help="dense model formats (default F32,Q8_0,Q4_0)")
    ap.add_argument("--moe", action="store_true", help="also the model with experts (Q4_0)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    vocab = make_models.vocab_from_spm(os.path.join(HERE, "..", "testdata", "tokenizer.model"))
    jobs = [(BENCH, "bench-llama", f) for f in a.formats.split(",") if f]
    if a.moe:
        jobs.append((BENCH_MOE, "bench-moe", "Q4_0"))
    weights = {}
    for cfg, stem, fmt in jobs:
        if cfg["name"] not in weights:
            weights = {cfg["name"]: make_models.gguf_tensors(cfg, make_models.hf_weights(cfg, len(vocab[0])))}
        path = os.path.join(a.out, "%s-%s.gguf" % (stem, fmt.lower()))
        make_models.write_gguf(path, cfg, weights[cfg["name"]], vocab, fmt)
        print("%s: %d bytes" % (path, os.path.getsize(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
