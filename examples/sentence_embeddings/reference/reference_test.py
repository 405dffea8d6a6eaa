#!/usr/bin/env python3
"""Checks of the float64 reference itself (bert_reference.py):

- its erf against math.erf;
- the committed testdata/reference_embeddings.npz is what make_reference.py
  computes now;
- it reproduces the similarities the sentence-transformers documentation
  publishes for all-MiniLM-L6-v2 (to the 4 decimals printed there);
- when PyTorch is installed, the benchmark's PyTorch forward
  (torch_forward.py) agrees with it.

MINILM_MODEL_DIR names the model folder.
"""
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bert_reference  # noqa: E402
import make_reference  # noqa: E402

# sentence-transformers documentation, "Semantic Textual Similarity" (all-MiniLM-L6-v2).
PUBLISHED = [("sts_eating_1", "sts_eating_2", 0.7553), ("sts_horse_1", "sts_horse_2", 0.7369),
             ("sts_drums_1", "sts_drums_2", 0.6433)]

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def main():
    model_dir = os.environ["MINILM_MODEL_DIR"]
    x = np.linspace(-8, 8, 40001)
    err = np.abs(bert_reference.erf(x) - np.array([math.erf(v) for v in x])).max()
    check(err < 1e-14, f"erf series against math.erf: max error {err:.1e}")

    names, emb = make_reference.compute(model_dir)
    committed = np.load(make_reference.OUT)
    same_names = [str(n) for n in committed["names"]] == [str(n) for n in names]
    diff = np.abs(committed["embeddings"] - emb).max() if same_names else float("inf")
    check(same_names and diff < 1e-12, f"committed reference embeddings recomputed: max difference {diff:.1e}")

    idx = {str(n): i for i, n in enumerate(names)}
    for a, b, want in PUBLISHED:
        sim = float(emb[idx[a]] @ emb[idx[b]])
        check(round(sim, 4) == want, f"published similarity {a}/{b}: {sim:.6f}, published {want}")

    try:
        import torch  # noqa: F401
    except ImportError:
        print("skip PyTorch forward: torch is not installed")
    else:
        import json

        from torch_forward import TorchMiniLM

        with open(os.path.join(os.path.dirname(HERE), "testdata", "tokens.json"), encoding="utf-8") as f:
            ids = {c["name"]: c["ids"] for c in json.load(f)["cases"]}
        got = TorchMiniLM(model_dir).embed([ids[str(n)] for n in names]).double().numpy()
        cos = (got * emb).sum(1) / np.linalg.norm(got, axis=1)
        check(cos.min() >= 0.99999, f"PyTorch forward (benchmark peer) against the reference: min cosine {cos.min():.9f}")
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main()
