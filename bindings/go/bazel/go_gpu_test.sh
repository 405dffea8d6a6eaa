#!/usr/bin/env bash
# The Go binding's CUDA tests (cuda_test.go: TestCUDA*, TestGPU*), verbose.
# Without a usable CUDA device they check the "backend unavailable" errors
# and the TestGPU* tests skip; the log then has a line "SKIPPED: <reason>",
# which CI counts as a skipped test (Bazel 4 reports PASSED).  $1 is the
# CUDA backend built by //kernels/cuda; an explicit KB_CUDA_LIBRARY
# (--test_env) wins.
set -euo pipefail
if [[ -z ${KB_CUDA_LIBRARY:-} && -n ${1:-} ]]; then
  KB_CUDA_LIBRARY=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  export KB_CUDA_LIBRARY
fi
bazel_dir="${TEST_SRCDIR:-}/${TEST_WORKSPACE:-kernelbridge}/bindings/go/bazel"
[[ -f $bazel_dir/common.sh ]] || bazel_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$bazel_dir/common.sh"
export GOCACHE=${GOCACHE:-$work/gocache} GOPROXY=off
mod=$work/module
copy_module "$mod"
cd "$mod"
echo "KB_CUDA_LIBRARY=${KB_CUDA_LIBRARY:-(not set)}"
if ! go test -count=1 -v -run '^Test(CUDA|GPU)' . > "$work/gpu.txt" 2>&1; then
  cat "$work/gpu.txt"
  exit 1
fi
cat "$work/gpu.txt"
run=$(grep -c -- '^--- PASS: TestGPU' "$work/gpu.txt" || true)
skipped=$(grep -c -- '^--- SKIP: TestGPU' "$work/gpu.txt" || true)
if [[ $skipped -gt 0 ]]; then
  reason=$(grep -m1 -o 'no CUDA device: .*' "$work/gpu.txt" || true)
  echo "SKIPPED: ${reason:-no CUDA device}"
fi
echo "$run passed, 0 failed, $skipped skipped"
