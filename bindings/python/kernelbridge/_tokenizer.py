"""kernelbridge.Tokenizer: the library's SentencePiece-style ("llama")
tokenizer (docs/tokenizer.md), over the generated kb_tokenizer_* wrappers of
_capi.  The C side does all the work, so every binding gives the same ids.

    tok = kb.Tokenizer(pieces, scores, types, bos_id=1, eos_id=2, unk_id=0)
    ids = tok.tokenize("Hello world")          # [1, 15043, 3186]
    text = tok.decode(ids[1:])                 # "Hello world"
    stream = tok.stream()                      # text as tokens arrive
    print("".join(stream.feed(i) for i in ids), stream.flush())
"""

import codecs
import weakref
from typing import Iterable, List, Sequence, Union

import numpy as np

from . import _capi

__all__ = ["Tokenizer", "TokenStream"]


def _utf8(piece) -> bytes:
    return piece.encode("utf-8") if isinstance(piece, str) else bytes(piece)


def _ids_array(ids) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=np.int32))


class Tokenizer:
    """A vocabulary and its tokenizer (kb_tokenizer).

    pieces: the token strings (str or UTF-8 bytes), in id order; scores and
    types: one number per token (GGUF's tokenizer.ggml.scores and
    tokenizer.ggml.token_type).  The ids of BOS, EOS and the unknown token
    are -1 for none.  Immutable and safe to share between threads; close()
    (or the end of a with block) frees it and must not overlap other calls.
    """

    def __init__(self, pieces: Sequence[Union[str, bytes]], scores, types, *, bos_id: int = -1, eos_id: int = -1,
                 unk_id: int = -1, add_bos: bool = True, add_eos: bool = False, add_space_prefix: bool = True):
        encoded = [_utf8(p) for p in pieces]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in encoded], out=offsets[1:])
        if offsets[-1] > np.iinfo(np.int32).max:
            raise ValueError("kernelbridge.Tokenizer: the pieces take more than 2^31 - 1 bytes")
        blob = b"".join(encoded)
        scores = np.ascontiguousarray(scores, dtype=np.float32)
        types = np.ascontiguousarray(types, dtype=np.int32)
        handle = _capi.tokenizer_create(len(scores), len(blob), blob, len(offsets), offsets.astype(np.int32), scores,
                                        types, int(bos_id), int(eos_id), int(unk_id), bool(add_bos), bool(add_eos),
                                        bool(add_space_prefix))
        self._handle = handle
        self.add_space_prefix = bool(add_space_prefix)
        self._finalizer = weakref.finalize(self, _capi.tokenizer_destroy, handle)

    def _h(self):
        if self._handle is None:
            raise ValueError("kernelbridge.Tokenizer is closed")
        return self._handle

    def close(self) -> None:
        """Frees the C tokenizer; idempotent."""
        self._handle = None
        self._finalizer()

    def __enter__(self) -> "Tokenizer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def n_tokens(self) -> int:
        return _capi.tokenizer_n_tokens(self._h())

    @property
    def bos(self) -> int:
        """Id of the BOS token, -1 for none."""
        return _capi.tokenizer_bos(self._h())

    @property
    def eos(self) -> int:
        """Id of the EOS token, -1 for none."""
        return _capi.tokenizer_eos(self._h())

    def tokenize(self, text: Union[str, bytes], add_special: bool = True, parse_special: bool = False) -> List[int]:
        """Token ids of text (str, or bytes: any bytes are accepted), as
        llama.cpp's llama_tokenize(text, add_special, parse_special)."""
        data = _utf8(text)
        h = self._h()
        # Most text needs fewer tokens than bytes: one call; else a second one
        # with the count the first reported.
        ids = np.empty(len(data) + 2, dtype=np.int32)
        n = _capi.tokenize(h, len(data), data, add_special, parse_special, len(ids), ids)
        if n > len(ids):
            ids = np.empty(n, dtype=np.int32)
            n = _capi.tokenize(h, len(data), data, add_special, parse_special, len(ids), ids)
        return ids[:n].tolist()

    def piece(self, token_id: int, special: bool = False) -> bytes:
        """The bytes token_id stands for (kb_tokenizer_piece): may be part of
        a UTF-8 character; see stream() for text."""
        h = self._h()
        buf = bytearray(64)
        n = _capi.tokenizer_piece(h, int(token_id), special, len(buf), buf)
        if n > len(buf):
            buf = bytearray(n)
            n = _capi.tokenizer_piece(h, int(token_id), special, len(buf), buf)
        return bytes(buf[:n])

    def detokenize(self, ids: Iterable[int], remove_special: bool = False, unparse_special: bool = False) -> bytes:
        """The bytes of a token sequence, as llama.cpp's llama_detokenize."""
        arr = _ids_array(ids)
        h = self._h()
        n = _capi.detokenize(h, len(arr), arr, remove_special, unparse_special, 0, _capi._NULL)
        out = bytearray(n)
        if n:
            _capi.detokenize(h, len(arr), arr, remove_special, unparse_special, n, out)
        return bytes(out)

    def decode(self, ids: Iterable[int], remove_special: bool = False, unparse_special: bool = False) -> str:
        """detokenize() as text (invalid UTF-8 becomes U+FFFD)."""
        return self.detokenize(ids, remove_special, unparse_special).decode("utf-8", "replace")

    def stream(self, special: bool = False) -> "TokenStream":
        """A decoder for tokens that arrive one at a time (generation)."""
        return TokenStream(self, special)


class TokenStream:
    """Turns token ids into text as they arrive: feed(id) returns the text
    that is complete so far, holding back the bytes of a UTF-8 character
    split across byte tokens until the rest arrives; flush() returns what is
    left (an incomplete character as U+FFFD).  The first piece loses its
    leading space when the vocabulary adds a space prefix, as kb_detokenize
    does, so the stream's text equals decode() of the same ids."""

    def __init__(self, tokenizer: Tokenizer, special: bool = False):
        self._tok = tokenizer
        self._special = special
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._first = True

    def feed(self, token_id: int) -> str:
        piece = self._tok.piece(token_id, self._special)
        if self._first:
            self._first = False
            if self._tok.add_space_prefix and piece.startswith(b" "):
                piece = piece[1:]
        return self._decoder.decode(piece)

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)
