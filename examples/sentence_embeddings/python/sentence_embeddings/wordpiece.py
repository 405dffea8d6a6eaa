"""BERT's uncased WordPiece tokeniser, as the model's tokenizer.json defines it.

The steps (the same in every language of examples/sentence_embeddings; see
../../README.md, "Tokenisation"):

1. The special tokens [PAD] [UNK] [CLS] [SEP] [MASK] written literally in the
   text are kept as themselves (exact, case-sensitive match); the text
   between them goes through steps 2-5.
2. Clean-up: U+0000, U+FFFD and control characters (general categories Cc,
   Cf, Co, except tab, newline and carriage return) are removed; whitespace
   (the Unicode White_Space property, plus tab, newline, carriage return)
   becomes a space.
3. CJK ideographs (the ranges of is_cjk below) get a space on each side.
4. Accents are stripped: each character is replaced by its canonical
   decomposition (NFD) without the nonspacing marks (category Mn); then
   each character is lower-cased on its own (no context rules such as the
   Greek final sigma).
5. The text is split on whitespace, and every punctuation character (ASCII
   punctuation or a Unicode P* category) becomes a word of its own.
6. Each word of more than 100 characters becomes [UNK]; otherwise it is cut
   greedily into the longest vocabulary entries from the left, pieces after
   the first written with the prefix "##"; a word with a part that matches
   nothing becomes a single [UNK].
7. [CLS] + the first max_len - 2 pieces + [SEP].
"""
import unicodedata

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MAX_WORD_CHARS = 100

# The White_Space property (Unicode 14), which the clean-up step uses.
_WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)


def is_whitespace(ch):
    return ch in _WHITE_SPACE


def is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf", "Co")


def is_cjk(ch):
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


_strip_cache = {}


def strip_accents_char(ch):
    """The canonical decomposition of one character without nonspacing marks."""
    out = _strip_cache.get(ch)
    if out is None:
        out = "".join(c for c in unicodedata.normalize("NFD", ch) if unicodedata.category(c) != "Mn")
        _strip_cache[ch] = out
    return out


def normalize(text):
    """Steps 2-4: the text the words are split from."""
    out = []
    for ch in text:
        if ch == "\x00" or ch == "\ufffd" or is_control(ch):
            continue
        if is_whitespace(ch):
            out.append(" ")
        elif is_cjk(ch):
            out.append(" " + ch + " ")
        else:
            out.append(ch)
    stripped = "".join(strip_accents_char(ch) if ord(ch) > 0x7F else ch for ch in "".join(out))
    # Per character: str.lower() of a whole string would apply the final sigma rule.
    return "".join(ch.lower() for ch in stripped)


def split_words(text):
    """Step 5: whitespace-separated words, punctuation characters on their own."""
    words, cur = [], []
    for ch in text:
        if ch == " ":
            if cur:
                words.append("".join(cur))
                cur = []
        elif is_punctuation(ch):
            if cur:
                words.append("".join(cur))
                cur = []
            words.append(ch)
        else:
            cur.append(ch)
    if cur:
        words.append("".join(cur))
    return words


class WordPiece:
    """Token ids of texts with a BERT vocabulary (token -> id)."""

    def __init__(self, vocab, max_len):
        self.vocab = vocab
        self.max_len = max_len
        self.unk = vocab["[UNK]"]
        self.cls = vocab["[CLS]"]
        self.sep = vocab["[SEP]"]

    def word_ids(self, word, out):
        """Step 6 for one word, appending to out."""
        if len(word) > MAX_WORD_CHARS:
            out.append(self.unk)
            return
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            found = None
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                out.append(self.unk)
                return
            pieces.append(found)
            start = end
        out.extend(pieces)

    def encode(self, text):
        """[CLS] ids... [SEP], at most max_len ids."""
        ids = []
        for is_special, part in split_special(text):
            if is_special:
                ids.append(self.vocab[part])
            else:
                for word in split_words(normalize(part)):
                    self.word_ids(word, ids)
        return [self.cls] + ids[: self.max_len - 2] + [self.sep]


def split_special(text):
    """Step 1: (True, token) for special tokens, (False, text) for the rest."""
    parts, start, i = [], 0, 0
    while i < len(text):
        if text[i] == "[":
            tok = next((t for t in SPECIAL_TOKENS if text.startswith(t, i)), None)
            if tok is not None:
                if i > start:
                    parts.append((False, text[start:i]))
                parts.append((True, tok))
                i += len(tok)
                start = i
                continue
        i += 1
    if start < len(text):
        parts.append((False, text[start:]))
    return parts
