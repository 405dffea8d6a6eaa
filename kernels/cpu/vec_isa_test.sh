#!/bin/bash
# vec_isa_test.sh PROGRAM - runs PROGRAM (testutil/vec_isa_outputs.c: the
# vector layer's kernels through the public API, each with 1 and 3 threads)
# under KB_CPU_ISA=scalar, avx2 and avx512 and fails unless every level
# prints the scalar level's hashes.  Levels the CPU lacks are skipped; the
# scalar level always runs.
set -uo pipefail
prog=$1
tmp=${TEST_TMPDIR:-$(mktemp -d)}
status=0
for level in scalar avx2 avx512; do
  KB_CPU_ISA=$level "$prog" >"$tmp/$level.out" 2>"$tmp/$level.err"
  rc=$?
  if [[ $rc -eq 2 ]]; then
    echo "level $level: not supported here, skipped ($(cat "$tmp/$level.out"))"
    continue
  fi
  if [[ $rc -ne 0 ]]; then
    echo "level $level: FAILED (exit $rc)"
    cat "$tmp/$level.err"
    status=1
    continue
  fi
  if [[ $(head -1 "$tmp/$level.out") != "isa $level" ]]; then
    echo "level $level: the library ran at another level: $(head -1 "$tmp/$level.out")"
    status=1
    continue
  fi
  if [[ $level == scalar ]]; then
    echo "level scalar: $(($(wc -l <"$tmp/scalar.out") - 1)) kernels, 1 and 3 threads identical"
  elif diff <(tail -n +2 "$tmp/scalar.out") <(tail -n +2 "$tmp/$level.out") >"$tmp/$level.diff"; then
    echo "level $level: every kernel identical to the scalar level"
  else
    echo "level $level: outputs differ from the scalar level:"
    cat "$tmp/$level.diff"
    status=1
  fi
done
exit $status
