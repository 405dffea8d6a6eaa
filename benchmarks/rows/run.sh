#!/usr/bin/env bash
# benchmarks/rows/run.sh [PYTHON] - the row kernels and activations against
# PyTorch, each side in its own process, 1 and 2 threads (issue 28's
# shapes: 4096x1024 rows, 64x32000 cross-entropy, 16M activations), then
# kernelbridge's bf16 / f16 entry points on the same shapes.
# PYTHON: an interpreter with torch (default python3).  Builds kb_rows from
# the vendored amalgamation with the library's flags.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${1:-python3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
gcc -std=c99 -O2 -D_POSIX_C_SOURCE=200809L -fvisibility=hidden -fno-strict-aliasing -ffp-contract=off \
  -I"$root/core/include" -o "$tmp/kb_rows" "$root/benchmarks/rows/kb_rows.c" "$root/bindings/go/kernelbridge.c" -lm -lpthread
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); $(nproc) CPUs; $(date -u '+%F %H:%M UTC')"
for th in 1 2; do
  for k in softmax log_softmax layernorm rmsnorm rope; do
    "$tmp/kb_rows" $k 4096 1024 10 $th; "$py" "$root/benchmarks/rows/torch_rows.py" $th $k
  done
  "$tmp/kb_rows" ce 64 32000 20 $th; "$py" "$root/benchmarks/rows/torch_rows.py" $th ce
  "$tmp/kb_rows" ce_backward 64 32000 20 $th; "$py" "$root/benchmarks/rows/torch_rows.py" $th ce_backward
  for k in gelu gelu_tanh silu; do
    "$tmp/kb_rows" $k 16384 1024 3 $th; "$py" "$root/benchmarks/rows/torch_rows.py" $th $k
  done
  "$tmp/kb_rows" copy 4096 1024 10 $th
  # 16-bit storage (issue 28: within 1.2x of the float32 time), kernelbridge only.
  for dt in bf16 f16; do
    for k in softmax log_softmax layernorm rmsnorm; do "$tmp/kb_rows" ${k}_$dt 4096 1024 10 $th; done
    for k in gelu gelu_tanh silu; do "$tmp/kb_rows" ${k}_$dt 16384 1024 3 $th; done
    "$tmp/kb_rows" glu_$dt 256 11008 10 $th
  done
  "$tmp/kb_rows" glu 256 11008 10 $th
done
