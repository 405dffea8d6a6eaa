#!/bin/sh
# Runs the C conformance runner over the corpus and checks its results with
# report.py (tolerances, bad-input statuses, xfail/c.txt).
#   c_conformance_test.sh RUNNER [CORPUS_DIR]
set -eu
runner="$1"
corpus="${2:-tests/conformance/corpus}"
out="${TEST_UNDECLARED_OUTPUTS_DIR:-${TMPDIR:-/tmp}}"
exec python3 tests/conformance/report.py --runner "c=$runner" --corpus "$corpus" \
  --xfail-dir tests/conformance/xfail --json "$out/conformance_c.json"
