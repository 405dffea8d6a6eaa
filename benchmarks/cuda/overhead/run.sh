#!/bin/bash
# run.sh - the GPU call-overhead benchmark: a 16-element silu on device
# buffers from C, Go, Rust, Java and Python, each against a bare CUDA launch +
# cudaStreamSynchronize of the same kernel (target: at most 1.5x).  Runs the
# programs build.sh put in DIR; needs no compiler.  Prints a markdown table on
# stdout; without a GPU every program says SKIPPED and so does the table.
#
#   run.sh [DIR]              (DIR defaults to this script's directory)
#
# Environment:
#   KB_CUDA_LIBRARY   libkernelbridge_cuda.so (the backend; every side needs it)
#   JAVA              java to run (default: java on PATH); java.base suffices
#   KB_JAVA_CP        the binding jar (default: DIR/java/kernelbridge.jar)
#   PYTHON            python to run (default: python3); PYTHONPATH must reach
#                     the kernelbridge package
#   KB_OVERHEAD_RUNS, KB_OVERHEAD_ITERS, KB_OVERHEAD_ROUNDS
#                     runs per program (7), calls per run (10000), rounds of
#                     all programs (2); the whole run stays under a minute
#                     at around 10 us a call
#
# Each round runs every program once, in turn, so a slow phase of the machine
# hits all languages.  A side's min is the least over its rounds, its median
# the median of its per-round medians.  Exit status: 0 unless a program failed.
set -uo pipefail

dir=$(cd "${1:-$(dirname "$0")}" && pwd)
runs=${KB_OVERHEAD_RUNS:-7}
iters=${KB_OVERHEAD_ITERS:-10000}
rounds=${KB_OVERHEAD_ROUNDS:-2}
java=${JAVA:-java}
python=${PYTHON:-python3}
jar=${KB_JAVA_CP:-$dir/java/kernelbridge.jar}
log=$(mktemp "${TMPDIR:-/tmp}/kb-overhead.XXXXXX")
trap 'rm -f "$log"' EXIT
failed=0

# One program: its lines go to the log (and stderr, to follow progress); a
# nonzero exit is reported and remembered, the other programs still run.
measure() {
  local name=$1
  shift
  local rc=0
  timeout 120 "$@" 2>&1 | tee -a "$log" >&2 || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "FAILED: $name (exit $rc)" | tee -a "$log" >&2
    failed=1
  fi
}

for ((round = 1; round <= rounds; round++)); do
  echo "== round $round of $rounds" >&2
  measure bare_launch "$dir/bare_launch" "$runs" "$iters"
  measure go "$dir/go_overhead" -cuda -runs "$runs" -iters "$iters"
  measure rust "$dir/rust_overhead" --cuda "$runs" "$iters"
  measure java "$java" -cp "$jar:$dir/java/classes" org.kernelbridge.Bench --cuda "$runs" "$iters"
  measure python "$python" "$dir/python/bench_overhead.py" --cuda --runs "$runs" --calls "$iters"
done

echo "GPU call overhead: 16-element float32 silu on device buffers, ns/call;" \
  "$rounds rounds x $runs runs x $iters calls"
echo
awk -v baseline=c-bare-launch-sync '
  $1 == "overhead" && NF == 4 {
    s = $2
    if (!(s in n)) order[++sides] = s
    k = ++n[s]
    med[s, k] = $4 + 0
    if (k == 1 || $3 + 0 < lo[s]) lo[s] = $3 + 0
  }
  /^SKIPPED: / && !seen[$0]++ { skipped[++nskip] = $0 }
  /^FAILED: / { failed[++nfail] = $0 }
  # median of the per-round medians (the lower middle one for an even count)
  function median(s,    i, j, t, a) {
    for (i = 1; i <= n[s]; i++) a[i] = med[s, i]
    for (i = 2; i <= n[s]; i++)
      for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return a[int((n[s] + 1) / 2)]
  }
  END {
    if (sides > 0) {
      print "| side | min ns/call | median ns/call | median / bare launch+sync | min / bare launch+sync | target <= 1.5x |"
      print "| --- | ---: | ---: | ---: | ---: | --- |"
      base_med = (baseline in n) ? median(baseline) : 0
      base_lo = (baseline in n) ? lo[baseline] : 0
      for (i = 1; i <= sides; i++) {
        s = order[i]
        m = median(s)
        if (base_med > 0) {
          r = m / base_med
          verdict = (s == baseline) ? "baseline" : (s ~ /\(reference\)$/ ? "(reference)" : (r <= 1.5 ? "met" : "NOT met"))
          printf "| %s | %.0f | %.0f | %.2fx | %.2fx | %s |\n", s, lo[s], m, r, lo[s] / base_lo, verdict
        } else {
          printf "| %s | %.0f | %.0f | - | - | no baseline |\n", s, lo[s], m
        }
      }
      print ""
    } else {
      print "No measurements: no program found a usable GPU."
      print ""
    }
    for (i = 1; i <= nskip; i++) print "- " skipped[i]
    for (i = 1; i <= nfail; i++) print "- " failed[i]
  }' "$log"
exit $failed
