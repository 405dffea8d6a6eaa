#!/usr/bin/env python3
"""Prefill and decode tokens per second of the text generation example: the
C driver, the Python, Go, Rust and Java examples, and llama.cpp (through
llama-cpp-python, llama_cpp_decode.py), on the same GGUF file, prompt ids
and thread count; each run in its own process, the programs in turn (each
round starting one program later), the median of --repeat runs.  Each
program's decode rate is also divided by the C driver's in the same
round: the median of those per-round ratios cancels the slow drifts of a
shared machine's memory speed, which the ratio of two medians keeps.

    bench.py --model bench-llama-q4_0.gguf --threads 2 \\
        --program c=PATH --program python=PATH ... [--llama-cpp-python VENV/bin/python]

The prompt is --prompt-tokens ids drawn from the vocabulary (a fixed
sequence, BOS first); every program decodes greedily for --max-tokens
(decode tokens/s counts the forward passes after the first token, as every
program reports them).  Prints one table row per program and the ratios to
the C driver and to llama.cpp.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LINE = re.compile(r"prefill: (\d+) tokens, ([\d.]+) tokens/s; decode: (\d+) tokens, ([\d.]+) tokens/s")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, timeout=1800)
    m = LINE.search(p.stderr.decode(errors="replace"))
    if p.returncode != 0 or m is None:
        raise SystemExit("%s failed (%d): %s" % (" ".join(cmd[:3]), p.returncode, p.stderr.decode(errors="replace")))
    return float(m.group(2)), float(m.group(4)), p.stdout.decode(errors="replace").strip().splitlines()[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--program", action="append", default=[], help="NAME=COMMAND (the C driver named c first)")
    ap.add_argument("--llama-cpp-python", help="a python with llama-cpp-python installed")
    a = ap.parse_args()
    # BOS, then a fixed walk over ordinary pieces (ids past the control and
    # byte tokens of the test vocabulary).
    ids = [1] + [300 + (37 * i) % 600 for i in range(a.prompt_tokens - 1)]
    common = ["--prompt-ids", ",".join(map(str, ids)), "--max-tokens", str(a.max_tokens), "--threads",
              str(a.threads), "--print-ids"]
    programs = []
    for spec in a.program:
        name, _, cmd = spec.partition("=")
        programs.append((name, [cmd, "--model", a.model] + common))
    if a.llama_cpp_python:
        programs.append(("llama.cpp", [a.llama_cpp_python, os.path.join(HERE, "llama_cpp_decode.py"), a.model,
                                       common[1], str(a.max_tokens), str(a.threads)]))
    if not programs:
        ap.error("give at least one --program or --llama-cpp-python")
    results = {name: [] for name, _ in programs}
    tokens = {}
    for r in range(a.repeat):
        # Round r starts at program r (mod their count): none always runs
        # right after another (its caches, its clock) or first.
        first = r % len(programs)
        for name, cmd in programs[first:] + programs[:first]:
            pre, dec, out = run(cmd)
            results[name].append((pre, dec))
            tokens[name] = out
    med = {n: (statistics.median(p for p, _ in r), statistics.median(d for _, d in r)) for n, r in results.items()}
    print("model %s, %d threads, prompt %d tokens, %d new tokens, median of %d"
          % (os.path.basename(a.model), a.threads, len(ids), a.max_tokens, a.repeat))
    base = med.get("c")
    ref = med.get("llama.cpp")
    print("%-10s %12s %12s %10s %10s %12s %12s" % ("program", "prefill t/s", "decode t/s", "pre/C", "dec/C",
                                                  "pre/llama", "dec/llama"))
    for name, (pre, dec) in med.items():
        print("%-10s %12.1f %12.2f %10s %10s %12s %12s" % (
            name, pre, dec,
            "%.3f" % (pre / base[0]) if base else "-", "%.3f" % (dec / base[1]) if base else "-",
            "%.3f" % (pre / ref[0]) if ref else "-", "%.3f" % (dec / ref[1]) if ref else "-"))
    if base and a.repeat > 1:
        print("decode / C per round (the programs run in turn within a round): median [min, max]")
        for name, r in results.items():
            if name == "c":
                continue
            q = sorted(d / c[1] for (_, d), c in zip(r, results["c"]))
            print("%-10s %.3f [%.3f, %.3f]" % (name, statistics.median(q), q[0], q[-1]))
    kb = [n for n in tokens if n != "llama.cpp"]
    same = len({tokens[n] for n in kb}) <= 1
    print("kernelbridge programs' tokens identical: %s" % ("yes" if same else "NO"))
    if "llama.cpp" in tokens and kb:
        a_ids, b_ids = tokens[kb[0]].split(","), tokens["llama.cpp"].split(",")
        agree = next((i for i, (x, y) in enumerate(zip(a_ids, b_ids)) if x != y), min(len(a_ids), len(b_ids)))
        print("greedy tokens equal to llama.cpp's for the first %d of %d" % (agree, len(a_ids)))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
