#!/bin/sh
# One language's text-generation example: its static and unit checks
# (LANG/check.sh), then tests/check_example.py on the built program: the
# committed references, bad files and options, and the C driver's output
# byte for byte.
#   language_test.sh python|go|rust|java PATH_TO_C_DRIVER
. "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-kernelbridge}/examples/text_generation/tests/bazel_env.sh"
lang=$1
c_driver=$(readlink -f "$2")
echo "== $lang: static and unit checks"
"$EXAMPLE/$lang/check.sh"
echo "== $lang: the program"
program=$("$EXAMPLE/$lang/build.sh")
python3 "$EXAMPLE/tests/check_example.py" "$lang" "$program" --c-driver "$c_driver"
