"""The file's own vocabulary (the tokenizer.ggml.* keys) as a
kernelbridge.Tokenizer: llama.cpp's SentencePiece algorithm with byte
fallback, as the C driver builds it."""

import numpy as np

import kernelbridge as kb


class ModelError(Exception):
    """The model file cannot be used: the message names the problem."""


def _int(g, key, default):
    return g.get_int(key) if key in g else default


def tokenizer(g):
    """A kb.Tokenizer from the open kb.Gguf g."""
    if "tokenizer.ggml.model" in g:
        kind = g.get_bytes("tokenizer.ggml.model")
        if kind != b"llama":
            raise ModelError("tokenizer '%s' is not supported (only 'llama')" % kind.decode("utf-8", "replace"))
    if "tokenizer.ggml.tokens" not in g:
        raise ModelError("the model has no vocabulary (tokenizer.ggml.tokens)")
    blob, offsets, scores, types = g.vocabulary()
    n = len(offsets) - 1
    if len(scores) != n or len(types) != n:
        raise ModelError("vocabulary: %d tokens but %d scores and %d token types" % (n, len(scores), len(types)))
    pieces = [blob[offsets[i]:offsets[i + 1]] for i in range(n)]
    return kb.Tokenizer(pieces, np.asarray(scores, np.float32), np.asarray(types, np.int32),
                        bos_id=_int(g, "tokenizer.ggml.bos_token_id", -1),
                        eos_id=_int(g, "tokenizer.ggml.eos_token_id", -1),
                        unk_id=_int(g, "tokenizer.ggml.unknown_token_id", -1),
                        add_bos=_int(g, "tokenizer.ggml.add_bos_token", 1) != 0,
                        add_eos=_int(g, "tokenizer.ggml.add_eos_token", 0) != 0,
                        add_space_prefix=_int(g, "tokenizer.ggml.add_space_prefix", 1) != 0)
