#!/usr/bin/env python3
"""The four languages agree bit for bit:

    agreement.py python=PROGRAM go=PROGRAM rust=PROGRAM java=PROGRAM

Each program embeds the check sentences (testdata/reference_embeddings.npz,
one of them truncated to 256 tokens) in one batch and prints their
similarity matrix; the raw float32 embeddings and the printed output must be
the same bytes in every language, and the token ids of every sentence of
testdata/tokens.json the same text.  Prints each language's agreement with
the float64 reference.  MINILM_MODEL_DIR names the model folder.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

EXAMPLE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_COSINE = 0.99999


def main():
    programs = dict(a.split("=", 1) for a in sys.argv[1:])
    if sorted(programs) != ["go", "java", "python", "rust"]:
        sys.exit(__doc__)
    with open(os.path.join(EXAMPLE, "testdata", "tokens.json"), encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    by_name = {c["name"]: c for c in cases}
    ref = np.load(os.path.join(EXAMPLE, "testdata", "reference_embeddings.npz"))
    names = [str(n) for n in ref["names"]]
    failures = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as work:
        check_in = os.path.join(work, "check.json")
        with open(check_in, "w", encoding="utf-8") as f:
            json.dump([by_name[n]["text"] for n in names], f)
        tokens_in = os.path.join(work, "tokens.json")
        with open(tokens_in, "w", encoding="utf-8") as f:
            json.dump([c["text"] for c in cases], f)
        results = {}
        for lang, prog in sorted(programs.items()):
            raw = os.path.join(work, lang + ".raw")
            p = subprocess.run([prog, "--input", check_in, "--raw", raw], capture_output=True, timeout=600)
            t = subprocess.run([prog, "--tokens", "--input", tokens_in], capture_output=True, timeout=600)
            if p.returncode or t.returncode:
                failures.append(f"{lang}: status {p.returncode}/{t.returncode}: {(p.stderr + t.stderr).decode()[-400:]}")
                continue
            with open(raw, "rb") as f:
                results[lang] = (f.read(), p.stdout, t.stdout)

        print(f"{len(names)} check sentences in one batch (padded to the longest, 256 tokens)")
        print(f"{'language':<8}  {'min cosine vs float64':>22}  {'1 - min':>9}  {'max |norm-1|':>12}  sha256 of the raw embeddings")
        for lang, (raw, _, _) in sorted(results.items()):
            emb = np.frombuffer(raw, dtype="<f4").reshape(len(names), -1).astype(np.float64)
            r = ref["embeddings"]
            cos = (emb * r).sum(1) / (np.linalg.norm(emb, axis=1) * np.linalg.norm(r, axis=1))
            norm_err = np.abs(np.linalg.norm(emb, axis=1) - 1).max()
            print(f"{lang:<8}  {cos.min():>22.15f}  {1 - cos.min():>9.2e}  {norm_err:>12.2e}  "
                  f"{hashlib.sha256(raw).hexdigest()[:16]}")
            if cos.min() < MIN_COSINE:
                failures.append(f"{lang}: cosine {cos.min()} < {MIN_COSINE} ({names[int(np.argmin(cos))]})")
        langs = sorted(results)
        for what, k in (("raw float32 embeddings", 0), ("printed similarity matrix", 1), ("token ids", 2)):
            same = len(langs) == 4 and all(results[lg][k] == results[langs[0]][k] for lg in langs)
            print(f"{'identical' if same else 'DIFFERENT'} in all four languages: {what}")
            if not same:
                failures.append(f"{what} differ: " + ", ".join(
                    f"{lg}={hashlib.sha256(results[lg][k]).hexdigest()[:12]}" for lg in langs))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
