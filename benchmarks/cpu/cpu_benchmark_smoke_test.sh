#!/bin/bash
# cpu_benchmark_smoke_test.sh BENCHMARK
# Runs every call of the CPU benchmark on tiny shapes (--quick --smoke, one
# call per side): every kernelbridge call must succeed, kb_gemm must agree
# with OpenBLAS and kb_attention with the naive composition (the benchmark
# checks both and exits 1 otherwise), and every table must be complete.
# Nothing here looks at a speed.
set -euo pipefail
bench=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=${TEST_TMPDIR:-$(mktemp -d)}

[[ -x $bench ]] || fail "$bench is not an executable"
readelf -d "$bench" | grep -q "NEEDED.*libopenblas" || fail "$bench does not link OpenBLAS"

# Two threads whatever the machine, so the threaded paths of kernelbridge,
# OpenBLAS and the benchmark's own loops all run.
run() {
  local name=$1
  shift
  if ! "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; then
    sed "s/^/  | /" "$tmp/$name.out" "$tmp/$name.err"
    fail "$name: exited non-zero"
  fi
  [[ ! -s $tmp/$name.err ]] || fail "$name wrote to stderr: $(cat "$tmp/$name.err")"
  sed "s/^/  | /" "$tmp/$name.out"
}
run smoke "$bench" --quick --smoke --threads 2
out=$tmp/smoke.out

for t in "## kernelbridge CPU benchmark" "### machine limits" "### gemm:" "### gemv (m = 1)" "### attention:" \
  "### fused linear:" "### masked attention:" "### memory-bound kernels, large sizes" \
  "### memory-bound kernels, small sizes" "### memory-bound kernels in cache"; do
  grep -qF -- "$t" "$out" || fail "no '$t' section"
done
! grep -q "n/a" "$out" || fail "a measurement is n/a"
grep -qE '^\| kernelbridge \| [0-9]+\.[0-9]+\.[0-9]+, ISA level `(scalar|avx2|avx512)`' "$out" || fail "no ISA level in the header"
grep -qE '^\| OpenBLAS \| .*OpenBLAS' "$out" || fail "no OpenBLAS configuration in the header"

count() { grep -cE "$1" "$out" || true; }
# Rows per table: streams 4 × 2 thread counts; gemm 5 shapes × 2; gemv 2 × 2;
# attention 4 × 2; memory 17 f32 + 11 × 2 16-bit kernels, at each size.
(($(count '^\| (\*\*copy\*\*|memcpy|read \(vector sum\)|write \(memset\)) \| [12] \|') == 8)) || fail "expected 8 stream rows"
(($(count '^\| \*\*[a-z0-9]+\*\* \(kernelbridge\) \|') == 2)) || fail "expected the FMA peak of kernelbridge's level on 1 and 2 threads"
(($(count '^\| [0-9]+×[0-9]+×[0-9]+[^|]*\| \[(k, n|n, k)\][^|]*\| [12] \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9]+% \| [0-9]+% \|$') == 10)) ||
  fail "expected 10 complete gemm rows"
(($(count '^\| 1×[0-9]+×[0-9]+ \(gemv') == 4)) || fail "expected 4 gemv rows"
(($(count '^\| (prefill|decode|causal)[^|]* \| [0-9]+ × [0-9]+ × [0-9]+ × [0-9]+ \| (yes|no) \| [12] \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$') == 8)) ||
  fail "expected 8 complete attention rows"
(($(count '^\| [0-9]+ × [0-9]+ → [0-9]+ \| [12] \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$') == 4)) ||
  fail "expected 4 complete fused linear rows"
(($(count '^\| [0-9]+ × [0-9]+ × [0-9]+ × [0-9]+ \| [12] \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$') == 2)) ||
  fail "expected 2 complete masked attention rows"
for dt in f32 bf16 f16; do
  n=$(count "^\| [a-z_]+ \| $dt \| ")
  want=$([[ $dt == f32 ]] && echo 38 || echo 26)
  ((n == want)) || fail "expected $want memory-bound $dt rows (large and small), got $n"
done

# The level reported is the one kernelbridge runs: forced down to scalar,
# the header and the FMA table say so (and every call still succeeds).
run scalar env KB_CPU_ISA=scalar "$bench" --smoke --threads 2 --only gemm
grep -qF 'ISA level `scalar` (KB_CPU_ISA=scalar)' "$tmp/scalar.out" || fail "KB_CPU_ISA=scalar is not reported"
grep -qF '| **scalar** (kernelbridge) |' "$tmp/scalar.out" || fail "the scalar FMA row is not marked as kernelbridge's"

# A level that does not exist: kb_context_create refuses it, the benchmark says why.
if KB_CPU_ISA=bogus "$bench" --smoke >"$tmp/bogus.out" 2>&1; then
  fail "KB_CPU_ISA=bogus: the benchmark exited 0"
fi
grep -q "kb_context_create: INVALID_ARGUMENT" "$tmp/bogus.out" || fail "KB_CPU_ISA=bogus: no reason given: $(cat "$tmp/bogus.out")"

"$bench" --no-such-flag >/dev/null 2>&1 && fail "an unknown flag was accepted"
echo "PASS"
