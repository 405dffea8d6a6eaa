#!/bin/bash
# The CPU benchmark in one command (benchmarks/README.md, "CPU"): builds
# //benchmarks/cpu:cpu_benchmark and the Python binding (in place), then runs
# the C benchmark and its Python companion.  Markdown on stdout.
#
#   benchmarks/cpu/run.sh [--quick | --smoke] [--threads N] [--rounds N]
#                         [--min-round SECONDS] [--only SECTION] [--no-python]
#
# --quick takes about 20 s after the builds, the default run a few minutes
# (2 cores).  Without Bazel (or with KB_BENCH_BUILD=direct) the benchmark is
# compiled with gcc from the sources instead.  Exit status: nonzero when a
# build, a kernel call or a result check failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

cargs=() pyargs=() python=1 only=""
while (($#)); do
  case $1 in
    --quick | --smoke) cargs+=("$1") pyargs+=("$1") ;;
    --threads | --rounds | --min-round)
      (($# >= 2)) || { echo "run.sh: $1 needs a value" >&2; exit 2; }
      cargs+=("$1" "$2") pyargs+=("$1" "$2")
      shift ;;
    --only)
      (($# >= 2)) || { echo "run.sh: --only needs a value" >&2; exit 2; }
      only=$2
      cargs+=("$1" "$2")
      shift ;;
    --no-python) python=0 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case $only in
  "") ;;
  limits) python=0 ;;
  gemm | attention | memory) pyargs+=(--only "$only") ;;
  *) echo "run.sh: --only takes limits, gemm, attention or memory" >&2; exit 2 ;;
esac

logdir=$(mktemp -d "${TMPDIR:-/tmp}/kb-cpu-bench.XXXXXX")
trap 'rm -rf "$logdir"' EXIT
start=$SECONDS

# --- the C benchmark
if [[ ${KB_BENCH_BUILD:-bazel} != direct ]] && command -v bazel >/dev/null; then
  if ! bazel build //benchmarks/cpu:cpu_benchmark >"$logdir/build.log" 2>&1; then
    cat "$logdir/build.log" >&2
    echo "run.sh: bazel build //benchmarks/cpu:cpu_benchmark failed" >&2
    exit 1
  fi
  bench=$root/bazel-bin/benchmarks/cpu/cpu_benchmark
else
  # The library's flags for its sources, the tools' flags for the benchmark.
  warn=(-Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wformat=2 -Wundef -Wpointer-arith)
  mkdir -p "$logdir/obj"
  # kernels/cpu and its family folders (decoder/, quant/); testutil/ holds
  # test programs.
  for src in core/src/*.c kernels/cpu/*.c kernels/cpu/*/*.c; do
    [[ $src == *_test.c || $src == kernels/cpu/testutil/* ]] && continue
    gcc -c -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -fvisibility=hidden -fno-strict-aliasing -ffp-contract=off \
      "${warn[@]}" -Icore/include -Icore/src -o "$logdir/obj/$(basename "${src%.c}")_$(basename "$(dirname "$src")").o" "$src" &
  done
  wait
  bench=$logdir/cpu_benchmark
  gcc -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -ffp-contract=off "${warn[@]}" -Icore/include \
    -o "$bench" benchmarks/cpu/*.c "$logdir"/obj/*.o -lopenblas -lm -lpthread -ldl
fi

if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
  dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo ", with uncommitted changes" || true)
  echo "commit $(git rev-parse --short HEAD)$dirty; $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
fi

status=0
"$bench" "${cargs[@]}" || status=$?

# --- the Python companion
if ((python)); then
  if ! (cd bindings/python && python3 setup.py build_ext --inplace) >"$logdir/python-build.log" 2>&1; then
    tail -n 30 "$logdir/python-build.log" >&2
    echo "run.sh: building the Python binding failed; Python companion not run" >&2
    status=1
  else
    PYTHONPATH=$root/bindings/python python3 benchmarks/cpu/bench_py.py "${pyargs[@]}" || status=$?
  fi
fi

echo "run.sh: $((SECONDS - start)) s in all (builds included); load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
