"""The command line: reads the model, tokenizes the prompt, generates and
streams the text, reports prefill and decode tokens per second (as the C
driver, c/main.c, does: same options, output and messages)."""

import os
import sys
import time

import numpy as np

import kernelbridge as kb

from . import options, vocab
from .model import Model
from .vocab import ModelError


def _sampler(o, ctx):
    """A function of (logits [1, vocab], step) -> next id: greedy (kb.argmax)
    at temperature 0, else kb.topk_sample / kb.topp_sample / kb.sample with
    seed + step as the step's seed, as every language's example draws."""
    out = np.zeros(1, np.int32)
    t = o.temperature
    if t == 0.0:
        def draw(logits, seed):
            kb.argmax(logits, out=out, ctx=ctx)
    elif o.top_k > 0:
        def draw(logits, seed):
            kb.topk_sample(logits, out=out, k=o.top_k, temperature=t, seed=seed, ctx=ctx)
    elif o.top_p < 1.0:
        def draw(logits, seed):
            kb.topp_sample(logits, out=out, p=o.top_p, temperature=t, seed=seed, ctx=ctx)
    else:
        def draw(logits, seed):
            kb.sample(logits, out=out, temperature=t, seed=seed, ctx=ctx)

    def pick(logits, step):
        draw(logits, (o.seed + step) % 2 ** 64)
        return int(out[0])
    return pick


def run(o, stdout):
    ctx = kb.Context("cpu", threads=o.threads)
    with kb.Gguf(o.model, ctx=ctx) as g:
        tok = vocab.tokenizer(g)
        if o.prompt is not None:
            ids = tok.tokenize(os.fsencode(o.prompt), add_special=True, parse_special=False)
        else:
            ids = options.parse_ids(o.prompt_ids)
        if not ids:
            raise ModelError("the prompt has no tokens")
        if o.print_prompt_ids:
            stdout.write(",".join(str(i) for i in ids).encode() + b"\n")
            stdout.flush()
        model = Model(g, len(ids), ctx)
    if len(ids) + o.max_tokens > model.context:
        raise ModelError("%d prompt tokens + %d new ones exceed the model's context of %d"
                         % (len(ids), o.max_tokens, model.context))
    prompt = np.array(ids, np.int32)
    logits = np.zeros((len(ids) if o.logits_out else 1, model.vocab), np.float32)
    t0 = time.perf_counter()
    model.forward(prompt, logits, all_logits=o.logits_out is not None)
    t_prefill = time.perf_counter() - t0
    if o.logits_out is not None:
        try:
            logits.tofile(o.logits_out)
        except OSError:
            raise ModelError("cannot write %s" % o.logits_out) from None
    last = logits[-1:]  # the last row, as a [1, vocab] view
    pick = _sampler(o, ctx)
    eos = tok.eos
    produced = []
    token = np.zeros(1, np.int32)
    step_logits = np.zeros((1, model.vocab), np.float32)
    t_decode = 0.0
    for step in range(o.max_tokens):
        nxt = pick(last, step)
        produced.append(nxt)
        if nxt == eos:
            break
        if not o.print_ids:
            stdout.write(tok.piece(nxt))
            stdout.flush()
        if step + 1 == o.max_tokens:
            break
        token[0] = nxt
        t1 = time.perf_counter()
        model.forward(token, step_logits)
        t_decode += time.perf_counter() - t1
        last = step_logits
    if o.print_ids:
        stdout.write(",".join(str(i) for i in produced).encode())
    stdout.write(b"\n")
    stdout.flush()
    decoded = len(produced) - 1 if len(produced) > 1 else 0
    sys.stderr.write("prefill: %d tokens, %.1f tokens/s; decode: %d tokens, %.1f tokens/s\n" % (
        len(ids), len(ids) / t_prefill, decoded, decoded / t_decode if decoded and t_decode > 0 else 0.0))


def main(argv):
    try:
        o = options.parse(argv)
    except options.OptionError as e:
        sys.stderr.write("error: %s\n%s\n" % (e, options.USAGE))
        return 2
    try:
        run(o, sys.stdout.buffer)
    except (ModelError, ValueError, kb.Error) as e:
        sys.stderr.write("error: %s\n" % e)
        return 1
    except OSError as e:
        sys.stderr.write("error: %s\n" % e)
        return 1
    return 0
