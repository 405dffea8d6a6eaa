#!/bin/sh
# Proves the error bounds of the CPU math layer (kernels/cpu/vmath.h): every
# float32 input through every function on every instruction-set level the
# CPU runs, against the C library in double precision, and every vector
# level bit for bit against the scalar one.  A few minutes per function on
# two cores.  Record the output in docs/kernels.md ("Vector math").
#
#   tools/vmath_exhaustive.sh [--threads N] [FUNCTION ...]
set -eu
cd "$(dirname "$0")/.."
bazel build -c opt //kernels/cpu:vmath_exhaustive
exec bazel-bin/kernels/cpu/vmath_exhaustive "$@"
