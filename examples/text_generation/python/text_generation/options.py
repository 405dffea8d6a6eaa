"""The command line, as the C driver takes it (c/main.c): the same options,
defaults, limits and messages, so the examples of every language can be
driven by one test."""

import math
import re

USAGE = ("usage: text_generation --model FILE (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N] "
         "[--temperature T]\n"
         "                [--top-k K | --top-p P] [--seed S] [--threads N] [--print-ids] [--print-prompt-ids]\n"
         "                [--logits-out FILE]")


class OptionError(Exception):
    """A bad command line: the message names the option (exit status 2)."""


class Options:
    def __init__(self):
        self.model = None
        self.prompt = None
        self.prompt_ids = None
        self.logits_out = None
        self.max_tokens = 32
        self.top_k = 0
        self.threads = 0
        self.temperature = 0.0
        self.top_p = 1.0
        self.seed = 0
        self.print_ids = False
        self.print_prompt_ids = False


# What glibc's strtod consumes entirely (the C driver refuses trailing
# characters): decimal and hexadecimal numbers, infinity and NaN, after C's
# blanks.
_STRTOD = re.compile(r"[ \t\n\v\f\r]*([+-]?)("
                     r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                     r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
                     r"|(?i:inf|infinity|nan(?:\([0-9A-Za-z_]*\))?))")
_SMALLEST_NORMAL = 2.2250738585072014e-308


def strtod(text):
    """text as C's strtod(text, &end) with *end == '\\0' reads it; None where
    the C driver's parse_number fails on the syntax or on ERANGE (overflow,
    or a non-zero value below the smallest normal double)."""
    m = _STRTOD.fullmatch(text)
    if m is None:
        return None
    sign, body = m.group(1), m.group(2).lower()
    if body.startswith("nan"):
        return math.nan
    if body.startswith("inf"):
        return -math.inf if sign == "-" else math.inf
    if body.startswith("0x"):
        mantissa = body[2:].split("p")[0]
        v = float.fromhex(body if "p" in body else body + "p0") if mantissa != "." else None
    else:
        mantissa = body.split("e")[0]
        v = float(body)
    if v is None or math.isinf(v) or (v != 0 and abs(v) < _SMALLEST_NORMAL):
        return None  # ERANGE: overflow, or a subnormal result
    if v == 0 and any(c in "123456789abcdef" for c in mantissa):
        return None  # ERANGE: underflow to zero
    return -v if sign == "-" else v


def _number(flag, text, lo, hi):
    """A number in [lo, hi] (C's parse_number: NaN fails)."""
    v = strtod(text)
    if v is None or not lo <= v <= hi:
        raise OptionError("%s expects a number in [%s, %s], got '%s'" % (flag, _g(lo), _g(hi), text))
    return v


def _g(v):
    """A bound as C's %g prints it."""
    return "%g" % v


def parse(argv):
    """Options from the arguments (sys.argv[1:]); OptionError when they are bad."""
    o = Options()
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "--print-ids":
            o.print_ids = True
            continue
        if a == "--print-prompt-ids":
            o.print_prompt_ids = True
            continue
        if i >= len(argv):
            raise OptionError("%s needs a value" % a)
        v = argv[i]
        i += 1
        if a == "--model":
            o.model = v
        elif a == "--prompt":
            o.prompt = v
        elif a == "--prompt-ids":
            o.prompt_ids = v
        elif a == "--logits-out":
            o.logits_out = v
        elif a == "--max-tokens":
            o.max_tokens = int(_number(a, v, 0, 1e9))
        elif a == "--top-k":
            o.top_k = int(_number(a, v, 0, 1e9))
        elif a == "--threads":
            o.threads = int(_number(a, v, 0, 4096))
        elif a == "--temperature":
            o.temperature = _number(a, v, 0, 1e6)
        elif a == "--top-p":
            o.top_p = _number(a, v, 0, 1)
        elif a == "--seed":
            _number(a, v, 0, 18446744073709551615.0)
            o.seed = _seed(v)
        else:
            raise OptionError("unknown option %s" % a)
    if o.model is None or (o.prompt is None) == (o.prompt_ids is None):
        raise OptionError("--model and one of --prompt / --prompt-ids are required")
    if o.top_k > 0 and o.top_p < 1.0:
        raise OptionError("--top-k and --top-p cannot be combined (the library samples with one of them)")
    return o


def _seed(text):
    """The seed as C's strtoull reads it: the leading decimal digits, at most
    2^64 - 1 (the range was checked as a number)."""
    digits = ""
    for c in text.strip():
        if not c.isdigit() or not c.isascii():
            break
        digits += c
    return min(int(digits), 2 ** 64 - 1) if digits else 0


def parse_ids(text):
    """Comma-separated token ids, each in [0, 2^31 - 1], read as C's strtol
    reads them (leading blanks and a sign allowed; a trailing comma ends the
    list)."""
    ids = []
    p = 0
    while p < len(text):
        q = p
        while q < len(text) and text[q] in " \t\n\v\f\r":
            q += 1
        start = q
        if q < len(text) and text[q] in "+-":
            q += 1
        digits = q
        while q < len(text) and "0" <= text[q] <= "9":
            q += 1
        if q == digits or (q < len(text) and text[q] != ","):
            raise ValueError("--prompt-ids expects comma-separated token ids, got '%s'" % text)
        v = int(text[start:q])
        if not 0 <= v <= 2 ** 31 - 1:
            raise ValueError("--prompt-ids expects comma-separated token ids, got '%s'" % text)
        ids.append(v)
        p = q + 1 if q < len(text) else q
    return ids
