"""vocab.txt: one token per line, its id the line number (from 0)."""
from .errors import ModelError
from .wordpiece import SPECIAL_TOKENS


def read_vocab(path, vocab_size):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise ModelError(f"{path}: missing") from None
    except OSError as e:
        raise ModelError(f"{path}: cannot read: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelError(f"{path}: not UTF-8: {e}") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line
    if len(lines) != vocab_size:
        raise ModelError(f"{path}: {len(lines)} tokens, config.json says vocab_size {vocab_size}")
    vocab = {tok: i for i, tok in enumerate(lines)}  # a repeated token keeps its last id
    for tok in SPECIAL_TOKENS:
        if tok not in vocab:
            raise ModelError(f"{path}: special token {tok} is missing")
    return vocab
