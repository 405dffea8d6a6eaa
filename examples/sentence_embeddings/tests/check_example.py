#!/usr/bin/env python3
"""Checks one language's example program as a black box:

    check_example.py LANGUAGE PROGRAM

- token ids of every sentence of testdata/tokens.json (the tokenizers
  package's);
- embeddings of the check sentences against the float64 reference
  (testdata/reference_embeddings.npz): cosine >= 0.99999 and unit length;
  the same bits in one batch, in other batches, from arguments and with
  one thread;
- the printed similarity matrix and embeddings against the raw float32
  output;
- bad models (tests/bad_models.py) and bad input: exit status 1 and a
  message naming the file and tensor, bad usage: status 2; never a crash.

MINILM_MODEL_DIR names the model folder.  Prints one line per check and
exits 1 if any failed.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bad_models  # noqa: E402

MIN_COSINE = 0.99999
HIDDEN = 384
CRASH_MARKERS = ("Traceback", "panicked", "Exception in thread", "SIGSEGV", "fatal error", "goroutine ")


class Checker:
    def __init__(self, lang, program, work):
        self.lang, self.program, self.work = lang, program, work
        self.failures = 0
        with open(os.path.join(EXAMPLE, "testdata", "tokens.json"), encoding="utf-8") as f:
            self.cases = json.load(f)["cases"]
        self.by_name = {c["name"]: c for c in self.cases}
        ref = np.load(os.path.join(EXAMPLE, "testdata", "reference_embeddings.npz"))
        self.ref = dict(zip([str(n) for n in ref["names"]], ref["embeddings"]))

    def report(self, ok, what, detail="", always=False):
        """One line per check; the detail is shown on failure (or always)."""
        shown = f": {detail}" if detail and (always or not ok) else ""
        print(f"{'ok  ' if ok else 'FAIL'} {self.lang}: {what}{shown}", flush=True)
        if not ok:
            self.failures += 1
        return ok

    def run(self, args, texts=None, timeout=300):
        """(status, stdout, stderr); texts go through a JSON --input file."""
        if texts is not None:
            path = os.path.join(self.work, "input.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(texts, f)
            args = args + ["--input", path]
        p = subprocess.run([self.program] + args, capture_output=True, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def no_crash(self, what, status, err):
        crashed = status < 0 or status > 2 or any(m in err for m in CRASH_MARKERS)
        if crashed:
            self.report(False, what, f"crashed (status {status}): {err.strip()[-500:]}")
        return not crashed

    def embed(self, what, names, extra=()):
        """Raw float32 embeddings of the named cases, or None."""
        raw = os.path.join(self.work, "emb.raw")
        if os.path.exists(raw):
            os.remove(raw)
        status, out, err = self.run(["--raw", raw] + list(extra), [self.by_name[n]["text"] for n in names])
        if not self.no_crash(what, status, err) or not self.report(status == 0, what, f"status {status}: {err.strip()}"):
            return None, out
        emb = np.fromfile(raw, dtype="<f4")
        if not self.report(emb.size == len(names) * HIDDEN, what + ": size of --raw", f"{emb.size} floats"):
            return None, out
        return emb.reshape(len(names), HIDDEN), out

    # --- checks -----------------------------------------------------------

    def check_help(self):
        status, out, err = self.run(["--help"])
        self.report(status == 0 and "usage" in out, "--help", f"status {status}")

    def check_tokens(self):
        status, out, err = self.run(["--tokens"], [c["text"] for c in self.cases])
        if not self.no_crash("tokens", status, err) or not self.report(status == 0, "tokens", err.strip()):
            return
        lines = out.split("\n")
        bad = []
        for i, c in enumerate(self.cases):
            got = [int(t) for t in lines[i].split()] if i < len(lines) else None
            if got != c["ids"]:
                bad.append(f"{c['name']}: got {got[:12] if got else got}..., want {c['ids'][:12]}...")
        self.report(not bad, f"token ids of {len(self.cases)} sentences (tokenizers package)", "; ".join(bad))

    def against_reference(self, what, names, emb):
        cos = []
        for n, e in zip(names, emb.astype(np.float64)):
            r = self.ref[n]
            cos.append(float(e @ r / (np.linalg.norm(e) * np.linalg.norm(r))))
        worst = int(np.argmin(cos))
        self.report(min(cos) >= MIN_COSINE, f"{what}: cosine with the float64 reference >= {MIN_COSINE}",
                    f"min {min(cos):.12f} ({names[worst]}), 1 - min = {1 - min(cos):.2e}", always=True)
        norms = np.linalg.norm(emb.astype(np.float64), axis=1)
        self.report(np.all(np.abs(norms - 1) < 1e-5), f"{what}: unit length",
                    f"max |norm - 1| {np.abs(norms - 1).max():.2e}", always=True)

    def check_embeddings(self):
        names = [n for n in self.ref if n != "many_words_truncated"]
        emb, out = self.embed("embeddings of the check sentences", names)
        if emb is None:
            return
        self.against_reference("batch of short sentences", names, emb)
        self.check_matrix(out, emb, len(names))

        long_names = ["many_words_truncated", "plain"]
        emb2, out2 = self.embed("embeddings with a 256-token sentence", long_names, ["--embeddings"])
        if emb2 is not None:
            self.against_reference("batch with a truncated sentence", long_names, emb2)
            self.report(np.array_equal(emb2[1], emb[names.index("plain")]), "same bits in another batch")
            printed = np.array([[float(v) for v in line.split()] for line in out2.strip().split("\n")])
            self.report(printed.shape == emb2.shape and np.abs(printed - emb2).max() <= 5.0001e-7,
                        "--embeddings prints the raw values to 6 decimals")

        emb1, _ = self.embed("one thread", names[:4], ["--threads", "1"])
        if emb1 is not None:
            self.report(np.array_equal(emb1, emb[:4]), "same bits with one thread")

        # Sentences given as arguments (UTF-8 beyond ASCII) rather than in a file.
        picks = ["accents", "chinese", "empty"]
        raw = os.path.join(self.work, "args.raw")
        status, _, err = self.run(["--raw", raw, "--"] + [self.by_name[n]["text"] for n in picks])
        if self.no_crash("arguments", status, err) and self.report(status == 0, "sentences as arguments", err.strip()):
            got = np.fromfile(raw, dtype="<f4").reshape(-1, HIDDEN)
            want = emb[[names.index(n) for n in picks]]
            self.report(np.array_equal(got, want), "arguments give the same bits as --input")

    def check_matrix(self, out, emb, n):
        lines = out.strip().split("\n")
        try:
            rows = [[float(v) for v in lines[2 + i].split()[1:]] for i in range(n)]
            printed = np.array(rows)
        except (ValueError, IndexError):
            self.report(False, "similarity matrix", "cannot parse:\n" + out[:400])
            return
        e = emb.astype(np.float64)
        want = e @ e.T
        ok = printed.shape == (n, n) and np.abs(printed - want).max() <= 0.00005 + 1e-6
        self.report(ok and lines[0] == "cosine similarity", "printed similarity matrix (4 decimals)")

    def check_bad_models(self):
        cases = bad_models.make(os.environ["MINILM_MODEL_DIR"], os.path.join(self.work, "bad"))
        for name, (folder, expect) in cases.items():
            status, out, err = self.run(["--model", folder, "A sentence."])
            if not self.no_crash(f"bad model {name}", status, err):
                continue
            missing = [s for s in expect if s not in err]
            self.report(status == 1 and not out and not missing and err.startswith("sentence_embeddings: error: "),
                        f"bad model {name}: status 1, message naming {expect}",
                        f"status {status}, stderr {err.strip()!r}" + (f", stdout {out[:400]!r}" if out else ""))

    def check_bad_input(self):
        missing = os.path.join(self.work, "no-such-input.json")
        not_strings = os.path.join(self.work, "numbers.json")
        with open(not_strings, "w") as f:
            f.write("[1, 2]")
        not_utf8 = os.path.join(self.work, "latin1.json")
        with open(not_utf8, "wb") as f:
            f.write(b'["caf\xe9"]')
        for what, args, status_want, expect in [
            ("missing input file", ["--input", missing], 1, "no-such-input.json"),
            ("input not an array of strings", ["--input", not_strings], 1, "numbers.json"),
            ("input not UTF-8", ["--input", not_utf8], 1, "latin1.json"),
            ("no sentences", [], 2, "usage"),
            ("unknown option", ["--frobnicate", "x"], 2, "--frobnicate"),
            ("bad thread count", ["--threads", "many", "x"], 2, "--threads"),
            ("option without value", ["x", "--model"], 2, "--model"),
            ("two output modes", ["--tokens", "--embeddings", "x"], 2, "exclude"),
        ]:
            status, out, err = self.run(args)
            if self.no_crash(what, status, err):
                self.report(status == status_want and expect in err, f"{what}: status {status_want}",
                            f"status {status}, stderr {err.strip()!r}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    lang, program = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as work:
        c = Checker(lang, program, work)
        c.check_help()
        c.check_tokens()
        c.check_embeddings()
        c.check_bad_models()
        c.check_bad_input()
    if c.failures:
        print(f"{lang}: {c.failures} check(s) failed")
        sys.exit(1)
    print(f"{lang}: all checks passed")


if __name__ == "__main__":
    main()
