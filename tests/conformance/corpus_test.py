"""Checks that make_corpus.py reproduces the committed corpus byte for byte.

Runs under pytest, under Bazel (py_test) or directly.  When it fails, the
corpus was edited by hand or make_corpus.py / reference.py changed without
regenerating: run `python3 tests/conformance/make_corpus.py` and commit.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_corpus  # noqa: E402


def corpus_dir():
    return os.path.join(HERE, "corpus")


def test_corpus_is_reproducible():
    problems = make_corpus.check(corpus_dir())
    assert not problems, "corpus is stale:\n" + "\n".join(problems[:50])


def test_corpus_size():
    total = sum(os.path.getsize(os.path.join(corpus_dir(), n)) for n in os.listdir(corpus_dir()))
    assert total < 5 * 1024 * 1024, total


if __name__ == "__main__":
    test_corpus_is_reproducible()
    test_corpus_size()
    print("corpus is up to date")
