#!/bin/bash
# kb_rows_smoke_test.sh KB_ROWS
# Runs kb_rows once per kernel name on tiny shapes (one call per round, two
# threads): every call must return OK and print its timing line.  Nothing
# here looks at a speed.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -x $bin ]] || fail "$bin is not an executable"
n=0
check() {
  local out
  out=$("$bin" "$@") || fail "kb_rows $*: exited non-zero: $out"
  [[ $out =~ ^$1\ [0-9]+x[0-9]+\ th2:\ [0-9.]+\ ms,\ [0-9.]+\ GB/s$ ]] || fail "kb_rows $*: unexpected output: $out"
  n=$((n + 1))
}
for k in softmax log_softmax layernorm rmsnorm ce ce_backward gelu gelu_tanh silu glu glu_fused copy; do
  check $k 3 40 1 2
done
check rope 3 256 1 2
for dt in bf16 f16; do
  for k in softmax log_softmax layernorm rmsnorm gelu gelu_tanh silu glu; do check ${k}_$dt 3 40 1 2; done
done
# An unknown name is refused (exit 2), not run as something else.
if "$bin" softmax_f8 3 40 1 2 >/dev/null; then fail "kb_rows softmax_f8 succeeded"; fi
echo "kb_rows: $n kernels ran"
