"""kernelbridge.Tokenizer: the C tokenizer from Python.

- A hand-built vocabulary whose ids are worked out by hand (the C test has
  the full set; here what the binding adds: str / bytes, the retry on a
  short first buffer, errors as exceptions, streaming).
- A SentencePiece BPE model with byte fallback (data/spm_tiny.json, written by
  make_tokenizer_reference.py): the same ids as sentencepiece's encode for
  every stored sentence, and decode gives each sentence back.
"""

import json
import os
import threading

import numpy as np
import pytest

import kernelbridge as kb

SP = "\u2581"
DATA = os.path.join(os.path.dirname(__file__), "data", "spm_tiny.json")

# ids 0-2 special, 3-258 the byte tokens, then these.
EXTRA = [(SP, -1), ("a", -2), ("b", -2), ("ab", -3), (SP + "a", -4), ("<ud>", 0)]
A_ID = 260
AB_ID = 262
SP_A_ID = 263
UD_ID = 264


def small(**kw):
    pieces = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + [p for p, _ in EXTRA]
    scores = [0.0] * 259 + [s for _, s in EXTRA]
    types = [2, 3, 3] + [6] * 256 + [1] * (len(EXTRA) - 1) + [4]
    args = dict(bos_id=1, eos_id=2, unk_id=0)
    args.update(kw)
    return kb.Tokenizer(pieces, scores, types, **args)


def test_tokenize_and_decode():
    with small() as tok:
        assert tok.n_tokens == 259 + len(EXTRA) and tok.bos == 1 and tok.eos == 2
        assert tok.tokenize("ab a") == [1, 259, AB_ID, SP_A_ID]
        assert tok.tokenize(b"ab a", add_special=False) == [259, AB_ID, SP_A_ID]
        assert tok.tokenize("a<ud>b", add_special=False) == [SP_A_ID, UD_ID, 259, 261]
        assert tok.tokenize("<s>a", add_special=False, parse_special=True) == [1, SP_A_ID]
        assert tok.tokenize("") == [1]
        assert tok.decode(tok.tokenize("ab a", add_special=False)) == "ab a"
        assert tok.decode([1, SP_A_ID], unparse_special=True) == "<s> a"
        assert tok.piece(SP_A_ID) == b" a" and tok.piece(1) == b"" and tok.piece(1, special=True) == b"<s>"


def test_more_tokens_than_bytes():
    # Every space falls back to three byte tokens when the vocabulary has no
    # U+2581: more ids than the first buffer (bytes + 2) holds.
    pieces = ["<unk>"] + ["<0x%02X>" % b for b in range(256)]
    with kb.Tokenizer(pieces, [0.0] * 257, [2] + [6] * 256, unk_id=0, add_bos=False) as tok:
        ids = tok.tokenize("    ")
        assert ids == [3 + 0xE2 - 2, 3 + 0x96 - 2, 3 + 0x81 - 2] * 5
        assert tok.detokenize(ids) == ("\u2581" * 5).encode()


def test_stream_holds_split_characters():
    with small() as tok:
        ids = tok.tokenize("a \U0001F600", add_special=False)
        assert ids[-4:] == [3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80]
        stream = tok.stream()
        parts = [stream.feed(i) for i in ids]
        assert parts[-4:] == ["", "", "", "\U0001F600"]
        assert "".join(parts) + stream.flush() == tok.decode(ids) == "a \U0001F600"
        stream = tok.stream()
        assert stream.feed(3 + 0xF0) == "" and stream.flush() == "\ufffd"


def test_errors_name_the_argument():
    with pytest.raises(kb.InvalidArgumentError, match="kb_tokenizer_create: .*bos_id"):
        small(bos_id=10**6)
    with pytest.raises(kb.InvalidArgumentError, match="add_bos"):
        small(bos_id=-1)
    with pytest.raises(kb.InvalidArgumentError, match="same piece"):
        kb.Tokenizer(["a", "a"], [0, 0], [1, 1], add_bos=False)
    with pytest.raises(kb.InvalidArgumentError, match="types"):
        kb.Tokenizer(["a"], [0], [9], add_bos=False)
    with pytest.raises(kb.InvalidArgumentError, match="n_tokens"):
        kb.Tokenizer([], [], [], add_bos=False)
    with small() as tok:
        with pytest.raises(kb.InvalidArgumentError, match="ids\\[1\\]"):
            tok.decode([1, 10**6])
        with pytest.raises(kb.InvalidArgumentError, match="kb_tokenizer_piece: id"):
            tok.piece(-1)
    tok.close()
    tok.close()
    with pytest.raises(ValueError, match="closed"):
        tok.tokenize("a")


def load_reference():
    with open(DATA, encoding="utf-8") as f:
        ref = json.load(f)
    tok = kb.Tokenizer(ref["pieces"], ref["scores"], ref["types"], bos_id=ref["bos_id"], eos_id=ref["eos_id"],
                       unk_id=ref["unk_id"])
    return ref, tok


def test_sentencepiece_reference_ids():
    ref, tok = load_reference()
    with tok:
        assert len(ref["cases"]) > 50
        for case in ref["cases"]:
            assert tok.tokenize(case["text"], add_special=False) == case["ids"], case["text"]
            assert tok.tokenize(case["text"]) == [ref["bos_id"]] + case["ids"]
            if SP not in case["text"]:  # U+2581 in the text comes back as a space
                assert tok.decode(case["ids"]) == case["text"]


def test_threads_share_a_tokenizer():
    ref, tok = load_reference()
    texts = [c["text"] for c in ref["cases"]]
    want = [tok.tokenize(t) for t in texts]
    errors = []

    def work():
        for _ in range(5):
            if [tok.tokenize(t) for t in texts] != want:
                errors.append("mismatch")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tok.close()
    assert errors == []
