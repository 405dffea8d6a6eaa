#!/bin/sh
# One language's example: its static and unit checks (LANG/check.sh), then
# the black-box checks of tests/check_example.py on the built program.
#   language_test.sh python|go|rust|java
. "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-kernelbridge}/examples/sentence_embeddings/tests/bazel_env.sh"
lang=$1
echo "== $lang: static and unit checks"
"$EXAMPLE/$lang/check.sh"
echo "== $lang: the program"
program=$("$EXAMPLE/$lang/build.sh")
python3 "$EXAMPLE/tests/check_example.py" "$lang" "$program"
