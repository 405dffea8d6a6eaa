#!/bin/sh
# Runs the C and the Rust conformance runners over the corpus and checks both
# with report.py: tolerances, bad-input statuses (n/a needs a reason),
# xfail/{c,rust}.txt, and Rust's output bytes equal to C's (hashes).
#   rust_conformance_test.sh C_RUNNER RUST_RUNNER [CORPUS_DIR]
set -eu
c_runner="$1"
rust_runner="$2"
corpus="${3:-tests/conformance/corpus}"
out="${TEST_UNDECLARED_OUTPUTS_DIR:-${TMPDIR:-/tmp}}"
exec python3 tests/conformance/report.py --runner "c=$c_runner" --runner "rust=$rust_runner" \
  --corpus "$corpus" --xfail-dir tests/conformance/xfail --json "$out/conformance_rust.json"
