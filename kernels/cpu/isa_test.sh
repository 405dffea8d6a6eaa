#!/bin/bash
# isa_test.sh PROGRAM - runs PROGRAM (testutil/isa_outputs.c) under every
# instruction-set level this CPU has (KB_CPU_ISA=scalar, avx2, avx512) and
# fails unless every level prints the same hashes as the scalar level.  A
# level the CPU lacks is reported and skipped; the scalar level always runs.
set -uo pipefail
prog=$1
tmp=${TEST_TMPDIR:-$(mktemp -d)}
status=0
levels_run=()
for level in scalar avx2 avx512; do
  KB_CPU_ISA=$level "$prog" >"$tmp/$level.out" 2>"$tmp/$level.err"
  rc=$?
  if [[ $rc -eq 2 ]]; then
    echo "level $level: not supported here: $(cat "$tmp/$level.out")"
    continue
  fi
  if [[ $rc -ne 0 ]]; then
    echo "level $level: FAILED (exit $rc)"
    cat "$tmp/$level.err"
    status=1
    continue
  fi
  if ! grep -qx "isa $level" "$tmp/$level.out"; then
    echo "level $level: the library did not run at that level: $(head -1 "$tmp/$level.out")"
    status=1
    continue
  fi
  levels_run+=("$level")
  if [[ $level != scalar ]]; then
    if diff <(tail -n +2 "$tmp/scalar.out") <(tail -n +2 "$tmp/$level.out") >"$tmp/$level.diff"; then
      echo "level $level: $(($(wc -l <"$tmp/$level.out") - 1)) outputs identical to the scalar level"
    else
      echo "level $level: outputs differ from the scalar level:"
      cat "$tmp/$level.diff"
      status=1
    fi
  fi
done
echo "levels run: ${levels_run[*]}"

# A name that is no level: kb_context_create fails with a message naming
# the variable (the program prints it and exits 1).
KB_CPU_ISA=sse9 "$prog" >"$tmp/bad.out" 2>"$tmp/bad.err"
rc=$?
if [[ $rc -eq 1 ]] && grep -q 'INVALID_ARGUMENT: kb_context_create: KB_CPU_ISA="sse9" is not an instruction-set level' "$tmp/bad.err"; then
  echo "KB_CPU_ISA=sse9: rejected as expected"
else
  echo "KB_CPU_ISA=sse9: expected INVALID_ARGUMENT naming KB_CPU_ISA, got exit $rc:"
  cat "$tmp/bad.out" "$tmp/bad.err"
  status=1
fi
[[ ${#levels_run[@]} -ge 1 && ${levels_run[0]} == scalar ]] || status=1
exit $status
