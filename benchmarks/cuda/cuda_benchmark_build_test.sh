#!/bin/bash
# cuda_benchmark_build_test.sh BENCHMARK CUDA_LIBRARY SDPA_SCRIPT
# The benchmark links (cuBLAS in the program, not in kernelbridge) and
# handles a machine without a GPU; the SDPA script handles missing torch.
set -euo pipefail
bench=$1 lib=$2 sdpa=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

[[ -x $bench ]] || fail "$bench is not an executable"
readelf -d "$bench" | grep -q "NEEDED.*libcublas" || fail "$bench does not link cuBLAS"

out=$("$bench" --cuda-library "$PWD/$lib" --quick --min-round 0.01 --rounds 1) || fail "benchmark exited $?: $out"
sed "s/^/  | /" <<<"$out"  # indented: this test checks real things here, so its log must not read as SKIPPED
if [[ $out == SKIPPED:* ]]; then
  echo "benchmark: skipped (no usable GPU), as expected here"
else
  # A GPU: the quick run must have produced every table without failures.
  for t in "### gemm" "### memory-bound" "### attention"; do
    grep -q "^$t" <<<"$out" || fail "no '$t' table"
  done
  ! grep -q "n/a" <<<"$out" || fail "a measurement failed (n/a)"
fi

# The benchmark's own kernelbridge calls (arguments, buffer sizes) on a CPU
# context: every kernelbridge figure must be a number, nothing on stderr.
err=$(mktemp "${TEST_TMPDIR:-/tmp}/stderr.XXXXXX")
out=$("$bench" --cpu-context --quick --min-round 0.001 --rounds 1 2>"$err") || fail "--cpu-context exited $?: $out $(cat "$err")"
sed "s/^/  | /" <<<"$out"
[[ ! -s $err ]] || fail "--cpu-context wrote to stderr: $(cat "$err")"
rows=$(grep -cE '^\| (1024|[a-z]+ \| (f32|bf16)|1 \| 16 \| 512 \| 64 \| (f32|bf16)) \|' <<<"$out" || true)
((rows == 13)) || fail "expected 13 table rows (1 gemm, 10 memory, 2 attention), got $rows"
if grep -qE '^\| 1024 \| n/a|^\| [a-z]+ \| (f32|bf16) \| [^|]+ \| n/a|\| (f32|bf16) \| n/a' <<<"$out"; then
  fail "a kernelbridge call of the benchmark failed on the CPU"
fi

out=$(python3 "$sdpa" --help) || fail "attention_sdpa.py --help exited $?"
out=$(KB_CUDA_LIBRARY="$PWD/$lib" python3 "$sdpa" --quick) || fail "attention_sdpa.py exited $?: $out"
sed "s/^/  | /" <<<"$out"
