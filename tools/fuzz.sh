#!/bin/bash
# tools/fuzz.sh SECONDS [TARGET...] - builds kernelbridge's fuzz targets
# (tests/fuzz) with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer and runs each target for SECONDS seconds, one
# after another, starting from its committed corpus
# (tests/fuzz/corpus/TARGET).  Prints executions, speed, crashes and corpus
# size per target, and exits non-zero when any target crashed.
#
# Targets: elementwise rowwise gemm attention linear embedding_rope
# cross_entropy adamw sampling half quant decoder buffers gguf tokenizer (default:
# all of them).
#
# Environment:
#   CC              clang to use (default: clang-14, else clang)
#   KB_FUZZ_OUT     work directory (default: /tmp/kernelbridge-fuzz): objects,
#                   binaries, the growing corpora (corpus/TARGET), crash
#                   inputs (crashes/TARGET) and logs (logs/TARGET.log)
#   KB_FUZZ_JOBS    parallel compile jobs (default: 2)
#   KB_FUZZ_RUNS    stop each target after this many executions (libFuzzer
#                   -runs); SECONDS still bounds each target's time
#   KB_FUZZ_FLAGS   extra libFuzzer flags
#   KB_CPU_ISA      passed on to the library: scalar, avx2 or avx512 fuzzes
#                   that instruction-set level instead of the best one
#   KB_FUZZ_MERGE   1: afterwards, merge each grown corpus back into
#                   tests/fuzz/corpus/TARGET, keeping only inputs that add
#                   edge coverage (libFuzzer -merge=1 -use_counters=0, which
#                   keeps the committed corpus small)
#
#      tools/fuzz.sh replay TARGET FILE...
# builds TARGET and runs each FILE once with KB_FUZZ_KNOWN_DEFECTS=1 and no
# UBSan suppressions: the way to reproduce a crash input
# ($KB_FUZZ_OUT/crashes/TARGET/crash-...) or a seed of tests/fuzz/corpus,
# with KB_FUZZ_VERBOSE=1 describing
# each call first.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

all_targets=(elementwise rowwise gemm attention linear embedding_rope cross_entropy adamw sampling half quant decoder buffers gguf
  tokenizer)

usage() {
  echo "usage: tools/fuzz.sh SECONDS [TARGET...]" >&2
  echo "       tools/fuzz.sh replay TARGET FILE..." >&2
  echo "targets: ${all_targets[*]}" >&2
  exit 2
}

replay=()
if [[ ${1:-} == replay ]]; then
  [[ $# -ge 3 ]] || usage
  targets=("$2")
  shift 2
  for f in "$@"; do replay+=("$(realpath "$f")"); done
  seconds=0
else
  [[ $# -ge 1 && $1 =~ ^[0-9]+$ ]] || usage
  seconds=$1
  shift
  targets=("$@")
fi
((${#targets[@]})) || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target $t" >&2; usage; }
done

cc=${CC:-}
if [[ -z $cc ]]; then
  if command -v clang-14 >/dev/null; then cc=clang-14; else cc=clang; fi
fi
command -v "$cc" >/dev/null || { echo "fuzz.sh: $cc not found (tools/bootstrap.sh installs clang-14)" >&2; exit 1; }

out=${KB_FUZZ_OUT:-/tmp/kernelbridge-fuzz}
jobs=${KB_FUZZ_JOBS:-2}
mkdir -p "$out/obj" "$out/bin" "$out/logs"

# The library as tools/bazel/copts.bzl compiles it, plus the sanitizers and
# libFuzzer's coverage instrumentation.
# pointer-overflow stays recoverable so that tests/fuzz/ubsan_known.supp can
# name the sites of a known defect (none is open at present, see
# docs/reliability.md); UBSAN_OPTIONS halt_on_error=1 still stops on any
# other report.
sanitize=(-fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize-recover=pointer-overflow
  -fno-omit-frame-pointer -g)
lib_flags=(-std=c99 -D_POSIX_C_SOURCE=200809L -O2 -fvisibility=hidden -fno-strict-aliasing -ffp-contract=off
  -Icore/include -Icore/src -I.)

start=$(date +%s)
sources=()
for f in core/src/*.c kernels/cpu/*.c kernels/cpu/quant/*.c kernels/cpu/decoder/*.c tests/fuzz/fuzz.c tests/fuzz/specs.c; do
  [[ $f == *_test.c ]] && continue
  sources+=("$f")
done
echo "fuzz.sh: compiling ${#sources[@]} sources with $cc ($($cc --version | head -1))"
export cc out
printf '%s\n' "${sources[@]}" | xargs -P "$jobs" -I{} sh -c '
  o="$out/obj/$(echo "{}" | tr / _).o"
  if [ ! -e "$o" ] || [ "{}" -nt "$o" ] || [ "$0" -nt "$o" ]; then
    "$cc" -c "$@" -fsanitize=fuzzer-no-link "{}" -o "$o"
  fi' "$0" "${lib_flags[@]}" "${sanitize[@]}"
# Headers changed?  Rebuild everything when any header is newer than an object.
newest_header=$(ls -t core/include/*.h core/src/*.h kernels/cpu/*.h kernels/cpu/quant/*.h kernels/cpu/decoder/*.h tests/fuzz/*.h | head -1)
objects=()
for f in "${sources[@]}"; do
  o="$out/obj/$(echo "$f" | tr / _).o"
  if [[ $newest_header -nt $o ]]; then
    "$cc" -c "${lib_flags[@]}" "${sanitize[@]}" -fsanitize=fuzzer-no-link "$f" -o "$o"
  fi
  objects+=("$o")
done
for t in "${targets[@]}"; do
  "$cc" "${lib_flags[@]}" "${sanitize[@]}" -fsanitize=fuzzer "tests/fuzz/${t}_fuzz.c" "${objects[@]}" \
    -lm -lpthread -ldl -o "$out/bin/$t"
done
echo "fuzz.sh: built ${#targets[@]} targets in $(($(date +%s) - start)) s"

if ((${#replay[@]})); then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  export KB_FUZZ_KNOWN_DEFECTS=1
  exec "$out/bin/${targets[0]}" "${replay[@]}"
fi

# Huge requested sizes must come back as OUT_OF_MEMORY, not abort the run.
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$PWD/tests/fuzz/ubsan_known.supp}

summary=()
failed=0
for t in "${targets[@]}"; do
  corpus=$out/corpus/$t
  crashes=$out/crashes/$t
  mkdir -p "$corpus" "$crashes"
  log=$out/logs/$t.log
  before=$(ls "$crashes" | wc -l)
  echo "fuzz.sh: $t for $seconds s (log: $log)"
  set +e
  # shellcheck disable=SC2086
  "$out/bin/$t" -max_total_time="$seconds" ${KB_FUZZ_RUNS:+-runs=$KB_FUZZ_RUNS} -print_final_stats=1 -timeout=20 \
    -rss_limit_mb=4096 -max_len=4096 -artifact_prefix="$crashes/" ${KB_FUZZ_FLAGS:-} "$corpus" \
    "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -h 'stat::number_of_executed_units' "$log" | awk '{s += $2} END {print s + 0}')
  speed=$(grep -h 'stat::average_exec_per_sec' "$log" | awk '{s += $2} END {print s + 0}')
  crashed=$(($(ls "$crashes" | wc -l) - before))
  if ((rc != 0 && crashed == 0)); then crashed=1; fi
  ((crashed == 0)) || failed=1
  size=$(ls "$corpus" | wc -l)
  summary+=("$(printf '%-15s %14s %10s %8s %8s' "$t" "$execs" "$speed" "$crashed" "$size")")
  if ((crashed)); then
    echo "fuzz.sh: $t CRASHED; the input is in $crashes, the report in $log:" >&2
    grep -m5 -E 'FUZZ CHECK FAILED|ERROR: |runtime error' "$log" >&2 || tail -20 "$log" >&2
  fi
  if [[ ${KB_FUZZ_MERGE:-0} == 1 ]]; then
    mkdir -p "tests/fuzz/corpus/$t"
    "$out/bin/$t" -merge=1 -use_counters=0 -max_len=4096 "tests/fuzz/corpus/$t" "$corpus" >>"$log" 2>&1
  fi
done

echo
printf '%-15s %14s %10s %8s %8s\n' target executions exec/s crashes corpus
printf '%s\n' "${summary[@]}"
echo "fuzz.sh: $seconds s per target, $cc, -fsanitize=fuzzer,address,undefined; total $(($(date +%s) - start)) s"
exit "$failed"
