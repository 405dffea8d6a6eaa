#!/usr/bin/env python3
"""llama.cpp's side of bench.py, in its own process: prefill the prompt ids
and decode greedily, printing the C driver's stderr line
("prefill: N tokens, X tokens/s; decode: M tokens, Y tokens/s").

    llama_cpp_decode.py MODEL.gguf PROMPT_IDS(1,2,3) MAX_TOKENS THREADS

Needs llama-cpp-python (pip; never needed by the tests).
"""

import sys
import time

import llama_cpp
import numpy as np
from llama_cpp import Llama


def main():
    model, ids, max_tokens, threads = sys.argv[1], [int(i) for i in sys.argv[2].split(",")], int(sys.argv[3]), \
        int(sys.argv[4])
    llm = Llama(model_path=model, n_ctx=len(ids) + max_tokens + 8, n_batch=512, n_ubatch=512, n_threads=threads,
                n_threads_batch=threads, logits_all=False, verbose=False)
    t0 = time.perf_counter()
    llm.eval(ids)
    t_prefill = time.perf_counter() - t0
    produced, t_decode = [], 0.0
    for step in range(max_tokens):
        # The last evaluated token's logits, from llama.cpp itself (the
        # package keeps no copy unless every position's logits are asked for).
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
        nxt = int(np.argmax(logits))
        produced.append(nxt)
        if step + 1 == max_tokens:
            break
        t1 = time.perf_counter()
        llm.eval([nxt])
        t_decode += time.perf_counter() - t1
    print(",".join(map(str, produced)))
    n = len(produced) - 1
    sys.stderr.write("prefill: %d tokens, %.1f tokens/s; decode: %d tokens, %.1f tokens/s\n"
                     % (len(ids), len(ids) / t_prefill, n, n / t_decode if n else 0.0))


if __name__ == "__main__":
    main()
