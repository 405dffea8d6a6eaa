"""Checks one language's text-generation example: the committed references
(references.py: llama.cpp's prompt ids, transformers' greedy tokens and
logits, bad files and options), and byte-identical output to the C driver
for every model, sampler, prompt, thread count and ISA level it is run with.

    check_example.py LANG PROGRAM --c-driver PATH_TO_GENERATE

PROGRAM is the example's command (its build.sh prints it).
"""

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import references  # noqa: E402
from references import DATA, check  # noqa: E402

MODELS = ["tiny-llama-f32.gguf", "tiny-llama-bf16.gguf", "tiny-llama-q4_0.gguf", "tiny-llama-q8_0.gguf",
          "tiny-moe-f32.gguf", "tiny-llama-f16.gguf"]
SAMPLERS = [
    [],  # greedy
    ["--temperature", "0.8", "--top-k", "40", "--seed", "42"],
    ["--temperature", "0.9", "--top-p", "0.9", "--seed", "1"],
    ["--temperature", "1.0", "--seed", "7"],
]


def output(cmd, args, env=None):
    p = subprocess.run([*cmd, *args], capture_output=True, timeout=300, env=env)
    return p.returncode, p.stdout


def agreement(lang, program, c_driver):
    """The example's stdout equals the C driver's, byte for byte."""
    ref = json.load(open(os.path.join(DATA, "references.json")))
    texts = [p["text"] for p in ref["prompts"]]
    # Emoji, CJK, byte fallback, accents and the empty prompt are among the
    # reference prompts; three of them per model, in turn.
    cases = 0
    for m, model in enumerate(MODELS):
        path = os.path.join(DATA, model)
        for s, sampler in enumerate(SAMPLERS):
            prompt = texts[(3 * m + s) % len(texts)]
            threads = str(1 + (m + s) % 2)
            for mode in ([], ["--print-ids", "--print-prompt-ids"]):
                args = ["--model", path, "--prompt", prompt, "--max-tokens", "24", "--threads", threads,
                        *sampler, *mode]
                got, want = output(program, args), output(c_driver, args)
                cases += 1
                check(got == want, "%s %s: %r, C driver %r" % (lang, " ".join(args[2:]), got, want))
    # Every instruction-set level gives the C driver's bits (the kernels' own
    # guarantee, seen through the binding).
    for isa, model in itertools.product(("scalar", "avx2"), ("tiny-llama-q4_0.gguf", "tiny-moe-f32.gguf")):
        env = dict(os.environ, KB_CPU_ISA=isa)
        args = ["--model", os.path.join(DATA, model), "--prompt", texts[1], "--max-tokens", "16", "--print-ids",
                "--temperature", "0.7", "--top-k", "20", "--seed", "3"]
        got, want = output(program, args, env), output(c_driver, args, env)
        cases += 1
        check(got == want, "%s KB_CPU_ISA=%s %s: %r, C driver %r" % (lang, isa, model, got, want))
    # The prompt's logits, as files.
    with tempfile.TemporaryDirectory() as tmp:
        for model in ("tiny-llama-bf16.gguf", "tiny-moe-f32.gguf"):
            a, b = os.path.join(tmp, "a.bin"), os.path.join(tmp, "b.bin")
            args = ["--model", os.path.join(DATA, model), "--prompt", texts[2], "--max-tokens", "0"]
            output(program, args + ["--logits-out", a])
            output(c_driver, args + ["--logits-out", b])
            cases += 1
            check(os.path.exists(a) and open(a, "rb").read() == open(b, "rb").read(),
                  "%s %s: --logits-out differs from the C driver's" % (lang, model))
    print("%s: %d cases compared with the C driver" % (lang, cases))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lang")
    ap.add_argument("program")
    ap.add_argument("--c-driver", required=True)
    a = ap.parse_args()
    program = [os.path.abspath(a.program)]
    # 1 and 2 threads: compared with the C driver in agreement().
    references.check_references(program, thread_counts=("2",))
    agreement(a.lang, program, [os.path.abspath(a.c_driver)])
    return references.report()


if __name__ == "__main__":
    sys.exit(main())
