#!/usr/bin/env bash
# Builds the extension in place in a staged copy of bindings/python and runs
# the binding's pytest suite against it, with the C fast path on and off.  The GPU tests (tests/test_gpu.py)
# are //bindings/python:python_cuda_test's (tests/gpu_test.sh).
set -euo pipefail
source "${TEST_SRCDIR:?run me under bazel test}/kernelbridge/bindings/python/tests/stage.sh"
cd "$STAGE"
python3 setup.py -q build_ext --inplace >"$TMPDIR/build.log" 2>&1 || { cat "$TMPDIR/build.log"; exit 1; }
PYTHONPATH="$STAGE" python3 -m pytest -q -p no:cacheprovider --ignore=tests/test_gpu.py tests "$@"
# Again with the C fast path off: every kernel call then takes the generated
# Python path, which must give the same results (it is what Buffers, foreign
# memory and unusual arrays always take).
echo "--- again with KB_PYTHON_FASTCALL=0 (the Python path only)"
KB_PYTHON_FASTCALL=0 PYTHONPATH="$STAGE" python3 -m pytest -q -p no:cacheprovider --ignore=tests/test_gpu.py tests "$@"
