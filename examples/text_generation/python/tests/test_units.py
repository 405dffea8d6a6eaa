"""Unit checks of the Python example's command line (the black-box checks
are tests/check_example.py's)."""

import pytest

from text_generation import options


def test_defaults_are_the_c_drivers():
    o = options.parse(["--model", "m.gguf", "--prompt", "hi"])
    assert (o.max_tokens, o.temperature, o.top_k, o.top_p, o.seed, o.threads) == (32, 0.0, 0, 1.0, 0, 0)
    assert not o.print_ids and not o.print_prompt_ids and o.logits_out is None


def test_values():
    o = options.parse(["--model", "m", "--prompt-ids", "1,2", "--max-tokens", "5", "--temperature", "0.5",
                       "--top-p", "0.9", "--seed", "18446744073709551615", "--threads", "2", "--print-ids"])
    assert (o.prompt_ids, o.max_tokens, o.temperature, o.top_p, o.seed, o.threads, o.print_ids) == (
        "1,2", 5, 0.5, 0.9, 2 ** 64 - 1, 2, True)


@pytest.mark.parametrize("argv, needle", [
    (["--model", "m"], "--prompt"),
    (["--model", "m", "--prompt", "a", "--prompt-ids", "1"], "--prompt"),
    (["--model", "m", "--prompt", "a", "--top-k", "3", "--top-p", "0.5"], "cannot be combined"),
    (["--model", "m", "--prompt", "a", "--max-tokens", "-1"], "--max-tokens expects a number in [0, 1e+09]"),
    (["--model", "m", "--prompt", "a", "--top-p", "1.5"], "--top-p expects a number in [0, 1]"),
    (["--model", "m", "--prompt", "a", "--temperature", "nan"], "--temperature"),
    (["--model", "m", "--prompt"], "--prompt needs a value"),
    (["--model", "m", "--prompt", "a", "--bogus", "1"], "unknown option --bogus"),
])
def test_bad_options(argv, needle):
    with pytest.raises(options.OptionError, match=None) as e:
        options.parse(argv)
    assert needle in str(e.value)


def test_ids_as_strtol_reads_them():
    assert options.parse_ids("1,2,3") == [1, 2, 3]
    assert options.parse_ids(" 7,+8,") == [7, 8]  # blanks and a sign; a trailing comma ends the list
    assert options.parse_ids("") == []
    for bad in ("1,x", "1,,2", "-1", "2147483648", "1 2"):
        with pytest.raises(ValueError, match="--prompt-ids"):
            options.parse_ids(bad)


def test_numbers_as_strtod_reads_them():
    for text, want in [("5", 5.0), (" 7.5", 7.5), ("0x10", 16.0), ("0x1p-2", 0.25), ("1e3", 1000.0), ("5.", 5.0),
                       (".5", 0.5), ("-0", 0.0), ("INF", float("inf"))]:
        assert options.strtod(text) == want, text
    for bad in ("", "5 ", "1_000", "abc", "1e400", "1e-400", "1e-310", "0x", "--1"):
        assert options.strtod(bad) is None, bad
    assert options.strtod("nan") != options.strtod("nan")  # NaN, refused by every range check


def test_seed_as_strtoull_reads_it():
    assert options.parse(["--model", "m", "--prompt", "a", "--seed", "1e3"]).seed == 1  # C: strtoull stops at 'e'
    assert options.parse(["--model", "m", "--prompt", "a", "--seed", "0x10"]).seed == 0
