"""Unit checks of the Python example's tokeniser and number format."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sentence_embeddings import output, wordpiece  # noqa: E402
from sentence_embeddings.cli import UsageError, parse_args  # noqa: E402

VOCAB = {t: i for i, t in enumerate(
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "aff", "a", "##a"])}


def test_character_data():
    assert [wordpiece.strip_accents_char(c) for c in "éÅǰ\u0301ß\uf900한"] == \
        ["e", "A", "j", "", "ß", "\u8c48", "\u1112\u1161\u11ab"]
    assert all(wordpiece.is_punctuation(c) for c in "$+~«。—")
    assert not any(wordpiece.is_punctuation(c) for c in "a½€\u2160")
    assert all(wordpiece.is_control(c) for c in "\x00\x1b\x85\u200b\ufeff\xad\ue000")
    assert not any(wordpiece.is_control(c) for c in "\t\n\ra\u0378")
    assert wordpiece.is_cjk("\U0002b920") and not wordpiece.is_cjk("\U0002b820")


def test_normalize_lowercases_per_character():
    # No final-sigma rule: each Σ becomes σ, as the model's tokenizer does.
    assert wordpiece.normalize("ΟΔΟΣ") == "οδοσ"


def test_encode():
    wp = wordpiece.WordPiece(VOCAB, 6)
    assert wp.encode("") == [2, 3]
    assert wp.encode("UNAFFÁBLE") == [2, 5, 6, 7, 3]
    assert wp.encode("unaffablex") == [2, 1, 3]
    assert wp.encode("a [MASK]aff") == [2, 9, 4, 8, 3]
    assert wp.encode("a a a a a a a") == [2, 9, 9, 9, 9, 3]
    assert wp.encode("a" * 101) == [2, 1, 3]


def test_fixed():
    assert output.fixed(0.03125, 4) == "0.0312"
    assert output.fixed(0.09375, 4) == "0.0938"
    assert output.fixed(-0.00001, 4) == "0.0000"
    assert output.fixed(float("nan"), 4) == "nan"


def test_parse_args():
    o = parse_args(["--threads", "2", "x", "--", "--y"])
    assert o["threads"] == 2 and o["texts"] == ["x", "--y"]
    for bad in (["--threads", "-1"], ["--model"], ["--bogus"], ["--tokens", "--embeddings"]):
        try:
            parse_args(bad)
        except UsageError:
            continue
        raise AssertionError(f"{bad} accepted")
