#!/bin/sh
# The four languages give the same bits (tests/agreement.py).
. "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-kernelbridge}/examples/sentence_embeddings/tests/bazel_env.sh"
set --
for lang in python go rust java; do
  set -- "$@" "$lang=$("$EXAMPLE/$lang/build.sh")"
done
python3 "$EXAMPLE/tests/agreement.py" "$@"
