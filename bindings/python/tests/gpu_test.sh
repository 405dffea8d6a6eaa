#!/usr/bin/env bash
# The CUDA path of the Python binding (tests/test_gpu.py) with the CUDA
# backend Bazel built (//kernels/cuda:libkernelbridge_cuda.so, through
# $KB_CUDA_LIBRARY).  Without a usable GPU (no NVIDIA driver, no device) the
# GPU tests are skipped with the library's reason, this script prints
# "SKIPPED: <reason>" (CI counts the target as skipped) and exits 0; the test
# of that reason itself still runs.
set -euo pipefail
source "${TEST_SRCDIR:?run me under bazel test}/kernelbridge/bindings/python/tests/stage.sh"
lib="$TEST_SRCDIR/kernelbridge/kernels/cuda/libkernelbridge_cuda.so"
[[ -f $lib ]] || { echo "missing $lib"; exit 1; }
export KB_CUDA_LIBRARY
KB_CUDA_LIBRARY=$(readlink -f "$lib")
cd "$STAGE"
python3 setup.py -q build_ext --inplace >"$TMPDIR/build.log" 2>&1 || { cat "$TMPDIR/build.log"; exit 1; }
reason=$(PYTHONPATH="$STAGE" python3 -c '
import kernelbridge as kb
try:
    kb.Context("cuda").close()
except kb.BackendUnavailableError as e:
    print(e.message)
')
PYTHONPATH="$STAGE" python3 -m pytest -q -rs -p no:cacheprovider tests/test_gpu.py "$@"
if [[ -n $reason ]]; then
  echo "SKIPPED: no CUDA device: $reason"
fi
