#!/usr/bin/env python3
"""Side-by-side decode and prefill speed: kernelbridge's decode_bench against
llama.cpp's llama-bench on the same GGUF files, the same thread counts, in one
run, each side in its own process.

For every model and thread count it runs, alternating which side goes first
(round r even: llama.cpp first; odd: kernelbridge first):

  llama-bench -m M -p 64,512 -n 64 -t T -r R -o jsonl
  decode_bench --gguf M --threads T --prompt 64  --gen 64 --reps R
  decode_bench --gguf M --threads T --prompt 512 --gen 8  --reps R

and prints one markdown row per (model, threads, round): tokens/s (median
of the R repetitions on both sides) of pp64, pp512 and tg64, and the ratio
kernelbridge / llama.cpp.  llama-bench's tg64 decodes from an empty cache;
decode_bench's decodes after its 64-token prompt (slightly more attention
work on our side).

  python3 benchmarks/decoder/compare.py --llama-bench PATH --decode-bench PATH \\
      [--threads 1,2] [--reps 5] [--rounds 2] MODEL.gguf...

Standard library only; not part of `bazel test`.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys


def llama(bench, model, threads, reps):
    out = subprocess.run(
        [bench, "-m", model, "-p", "64,512", "-n", "64", "-t", str(threads), "-r", str(reps), "-o", "jsonl"],
        check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        test = "pp%d" % r["n_prompt"] if r["n_prompt"] > 0 else "tg%d" % r["n_gen"]
        samples = r.get("samples_ts") or [r["avg_ts"]]
        res[test] = statistics.median(samples)
    return res


def kb(bench, model, threads, reps, prompt, gen):
    out = subprocess.run(
        [bench, "--gguf", model, "--threads", str(threads), "--prompt", str(prompt), "--gen", str(gen),
         "--reps", str(reps)], check=True, capture_output=True, text=True).stdout
    pre = re.search(r"^prefill \d+ tokens: ([0-9.]+) tokens/s", out, re.M)
    dec = re.search(r"^decode \d+ tokens: ([0-9.]+) tokens/s", out, re.M)
    bw = re.search(r"^weights read per decode step: ([0-9.]+) MB; ([0-9.]+) GB/s; copy of as many bytes "
                   r"([0-9.]+) GB/s", out, re.M)
    if not (pre and dec and bw):
        raise RuntimeError("unexpected decode_bench output:\n" + out)
    return float(pre.group(1)), float(dec.group(1)), float(bw.group(1)), float(bw.group(2)), float(bw.group(3))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-bench", required=True)
    ap.add_argument("--decode-bench", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    print("| model | threads | round | pp64 kb / llama | pp512 kb / llama | tg64 kb / llama | "
          "decode weights MB, GB/s, copy GB/s |")
    print("|---|---:|---:|---|---|---|---|")
    for rnd in range(a.rounds):
        for model in a.models:
            for t in threads:
                def run_kb():
                    p64, d64, mb, gbs, copy = kb(a.decode_bench, model, t, a.reps, 64, 64)
                    p512, _, _, _, _ = kb(a.decode_bench, model, t, a.reps, 512, 8)
                    return {"pp64": p64, "pp512": p512, "tg64": d64, "bw": (mb, gbs, copy)}
                if rnd % 2 == 0:
                    ll = llama(a.llama_bench, model, t, a.reps)
                    k = run_kb()
                else:
                    k = run_kb()
                    ll = llama(a.llama_bench, model, t, a.reps)
                cells = []
                for test in ("pp64", "pp512", "tg64"):
                    cells.append("%.0f / %.0f = **%.2f**" % (k[test], ll[test], k[test] / ll[test]))
                mb, gbs, copy = k["bw"]
                print("| %s | %d | %d | %s | %.1f, %.1f, %.1f |" % (
                    os.path.basename(model), t, rnd + 1, " | ".join(cells), mb, gbs, copy))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
