"""Runs pytest on the files given as arguments (entry point for Bazel py_test)."""

import sys

import pytest

if __name__ == "__main__":
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider"] + sys.argv[1:]))
