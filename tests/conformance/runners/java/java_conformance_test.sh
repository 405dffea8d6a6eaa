#!/usr/bin/env bash
# Runs the C and the Java conformance runners over the corpus and checks them
# with report.py for {c, java}: tolerances, bad-input statuses, xfail lists and
# every Java output hash equal to C's.  Also fails on any JVM warning (the Java
# runner runs under -Xcheck:jni).
#   java_conformance_test.sh C_RUNNER JAVA_RUNNER [CORPUS_DIR]
set -euo pipefail
c_runner=$1
java_runner=$2
corpus=${3:-tests/conformance/corpus}
out=${TEST_UNDECLARED_OUTPUTS_DIR:-${TMPDIR:-/tmp}}
log=$(mktemp "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/java_conformance.XXXXXX")
status=0
python3 tests/conformance/report.py --runner "c=$c_runner" --runner "java=$java_runner" --corpus "$corpus" \
  --xfail-dir tests/conformance/xfail --json "$out/conformance_java.json" > "$log" 2>&1 || status=$?
cat "$log"
if grep -q -i "warning" "$log"; then
  echo "java_conformance_test.sh: the JVM printed a warning under -Xcheck:jni (see above)" >&2
  exit 1
fi
if ! grep -q "^all languages bit-identical to C: yes$" "$log"; then
  echo "java_conformance_test.sh: the Java outputs are not bit-identical to C's" >&2
  status=1
fi
exit $status
