#!/usr/bin/env python3
"""Writes the tokenizer reference replayed by test_tokenizer.py
(bindings/python/tests/data/spm_tiny.json).

Trains a small SentencePiece BPE model with byte fallback on the repository's
docs/*.md, with the settings of Llama's tokenizer that matter for encoding
(no normalization, whitespace kept as it is, a dummy prefix space), and
stores its vocabulary (pieces, scores, types: what a GGUF file of
tokenizer.ggml.model "llama" holds) with SentencePiece's own `encode` of a
set of sentences.  SentencePiece's BPE encoding is the algorithm llama.cpp's
SPM tokenizer reimplements, so kernelbridge must give the same ids.  Run
once; the test replays the file without sentencepiece.  Needs sentencepiece
(PyPI).

    python3 bindings/python/tests/make_tokenizer_reference.py [out.json]
"""

import glob
import io
import json
import os
import sys

import sentencepiece as spm

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "spm_tiny.json")

# Encoded by SentencePiece; the test compares kernelbridge's ids with these.
SENTENCES = [
    "",
    "Hello world",
    "The kernels take float32 arrays; sizes come from the shapes.",
    " leading space",
    "trailing space ",
    "two  spaces   and three",
    "   ",
    "line one\nline two\n",
    "tabs\tand\r\ncarriage returns",
    "numbers 12345 and 3.14159",
    "bazel test //core:tokenizer_test",
    "kb_tokenize(tok, text_bytes, text, add_special, parse_special, capacity, ids, &count);",
    "Umlauts: \u00e4\u00f6\u00fc \u00df, accents: caf\u00e9 na\u00efve",
    "CJK: \u4e2d\u6587\u5206\u8bcd \u65e5\u672c\u8a9e",
    "emoji \U0001F600\U0001F680 and a flag \U0001F1E9\U0001F1EA",
    "mixed \u0394\u03b5\u03bb\u03c4\u03b1 \u0414\u0435\u043b\u044c\u0442\u0430",
    "<s> and </s> are control tokens, <unk> is unknown",
    "<0x41> looks like a byte token",
    "\u2581 is the piece's space",
    "a",
    " ",
    "\n",
    "GGUF files of architecture llama carry tokenizer.ggml.model = \"llama\".",
    "The context is shared by threads; every call validates its arguments first.",
    "kernelbridge kernelbridge kernelbridge",
    "supercalifragilisticexpialidocious",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "ZZZZ zzzz QQQQ qqqq",
]


def docs_lines():
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if line.strip():
                    yield line


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else OUT
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=docs_lines(),
        model_writer=model,
        model_type="bpe",
        vocab_size=1000,
        byte_fallback=True,
        character_coverage=0.9995,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=True,
        split_digits=True,
        allow_whitespace_only_pieces=True,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        num_threads=1,
        minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    pieces, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        pieces.append(sp.id_to_piece(i))
        scores.append(sp.get_score(i))
        types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else
                     5 if sp.is_unused(i) else 1)
    cases = [{"text": s, "ids": sp.encode(s)} for s in SENTENCES]
    # Whole lines of the training text too: the common case.
    lines = list(docs_lines())
    cases += [{"text": line, "ids": sp.encode(line)} for line in lines[:: max(1, len(lines) // 40)][:40]]
    data = {
        "about": "SentencePiece BPE with byte fallback trained by make_tokenizer_reference.py on docs/*.md; "
                 "ids are sentencepiece %s's encode (no BOS)" % spm.__version__,
        "bos_id": 1, "eos_id": 2, "unk_id": 0,
        "pieces": pieces, "scores": scores, "types": types,
        "cases": cases,
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("wrote %s: %d pieces, %d cases" % (out, len(pieces), len(cases)))


if __name__ == "__main__":
    main()
