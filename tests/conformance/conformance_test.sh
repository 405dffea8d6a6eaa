#!/usr/bin/env bash
# Runs conformance runners over the corpus and checks them with report.py:
# tolerances, bad-input statuses (n/a needs a reason), the xfail lists, and
# every language's output bytes equal to C's (hashes).  Also fails when a
# runner prints a warning (the Java runner runs under -Xcheck:jni, whose
# complaints are warnings).
#   conformance_test.sh LANG=RUNNER [LANG=RUNNER ...]     (c first)
set -euo pipefail
corpus=tests/conformance/corpus
out=${TEST_UNDECLARED_OUTPUTS_DIR:-${TMPDIR:-/tmp}}
log=$(mktemp "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/conformance.XXXXXX")
args=()
langs=()
for pair in "$@"; do
  args+=(--runner "$pair")
  langs+=("${pair%%=*}")
done
name=$(IFS=_; echo "${langs[*]}")
status=0
python3 tests/conformance/report.py "${args[@]}" --corpus "$corpus" \
  --xfail-dir tests/conformance/xfail --json "$out/conformance_$name.json" >"$log" 2>&1 || status=$?
cat "$log"
if grep -q -i "warning" "$log"; then
  echo "conformance_test.sh: a runner printed a warning (see above)" >&2
  status=1
fi
if ((${#langs[@]} > 1)) && ! grep -q "^all languages bit-identical to C: yes$" "$log"; then
  echo "conformance_test.sh: outputs are not bit-identical to C's" >&2
  status=1
fi
exit $status
