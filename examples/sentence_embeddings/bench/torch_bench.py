#!/usr/bin/env python3
"""The benchmark's PyTorch peer: the same 32 sentences, tokenised by the
Python example's tokeniser, encoded by reference/torch_forward.py on
THREADS threads (0 or absent: one per CPU); prints a timing line in the
examples' format.

    torch_bench.py MODEL_DIR SENTENCES.json REPEAT [THREADS]
"""
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(EXAMPLE, "reference"))
sys.path.insert(0, os.path.join(EXAMPLE, "python"))

import torch  # noqa: E402

from sentence_embeddings.config import Config  # noqa: E402
from sentence_embeddings.vocab import read_vocab  # noqa: E402
from sentence_embeddings.wordpiece import WordPiece  # noqa: E402
from torch_forward import TorchMiniLM  # noqa: E402


def main():
    model_dir, sentences, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    with open(sentences, encoding="utf-8") as f:
        texts = json.load(f)
    torch.set_num_threads(threads or os.cpu_count())
    cfg = Config(model_dir)
    tok = WordPiece(read_vocab(os.path.join(model_dir, "vocab.txt"), cfg.vocab_size), cfg.max_seq_length)
    model = TorchMiniLM(model_dir)

    def embed():
        return model.embed([tok.encode(t) for t in texts])

    embed()  # warm-up, as the examples embed once before timing
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        embed()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(f"timing: {repeat} runs of {len(texts)} sentences: median {med * 1e3:.1f} ms, "
          f"{len(texts) / med:.1f} sentences/s (torch {torch.__version__}, {torch.get_num_threads()} threads)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
