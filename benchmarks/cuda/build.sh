#!/bin/bash
# build.sh - compiles and links cuda_benchmark with nvcc, for the Bazel
# genrule (benchmarks/cuda/BUILD) and for run_gpu_checks.sh when Bazel is
# missing.  Bazel 4.2.3 has no CUDA rules, as in kernels/cuda/nvcc.sh.
#   build.sh OUT INCLUDE_DIR ARCHIVE... -- SRC.c...
# ARCHIVE: kernelbridge's static library (libkernelbridge.a / .lo).  cuBLAS
# and the CUDA runtime (static) are linked into the benchmark only.
set -euo pipefail

nvcc=""
if command -v nvcc >/dev/null 2>&1; then
  nvcc=$(command -v nvcc)
elif [[ -n "${CUDA_HOME:-}" && -x "$CUDA_HOME/bin/nvcc" ]]; then
  nvcc="$CUDA_HOME/bin/nvcc"
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  nvcc=/usr/local/cuda/bin/nvcc
else
  echo "build.sh: nvcc not found on PATH, in \$CUDA_HOME/bin or /usr/local/cuda/bin (CUDA 13 toolkit)" >&2
  exit 1
fi

out=$1 inc=$2
shift 2
archives=()
while (($# > 0)) && [[ $1 != -- ]]; do
  # Bazel may list the library's other outputs too; only archives link.
  case $1 in *.a | *.lo) archives+=("$1") ;; esac
  shift
done
shift # --
if ((${#archives[@]} == 0 || $# == 0)); then
  echo "usage: build.sh OUT INCLUDE_DIR ARCHIVE... -- SRC.c..." >&2
  exit 2
fi

# libcublas.so.13 at run time: the toolkit's library directory goes into
# the RUNPATH, since it is not always in the loader's cache.
top=$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)
rpath=()
for d in "$top/lib64" "$top/lib" "$top/targets/x86_64-linux/lib"; do
  if [[ -e "$d/libcublas.so" ]]; then rpath=(-Xlinker -rpath="$d"); break; fi
done

# nvcc names temporaries after its pid, and sandboxed actions all run as the
# same pid: a private TMPDIR per invocation.
work=$(mktemp -d "${TMPDIR:-/tmp}/kb-bench-nvcc.XXXXXX")
trap 'rm -rf "$work"' EXIT
export TMPDIR="$work"

# nvcc accepts archives by their .a suffix only (Bazel's alwayslink
# libraries end in .lo).
for i in "${!archives[@]}"; do
  if [[ ${archives[$i]} == *.lo ]]; then
    ln -s "$(readlink -f "${archives[$i]}")" "$work/libkernelbridge$i.a"
    archives[i]="$work/libkernelbridge$i.a"
  fi
done

# Plain C compiled by nvcc's host compiler; -cudart static is nvcc's default.
"$nvcc" -O2 -Xcompiler -Wall,-Wextra,-Werror,-D_POSIX_C_SOURCE=200809L -I"$inc" -o "$out" "$@" \
  "${archives[@]}" -lcublas -lcublasLt -cudart static "${rpath[@]}" -lm -lpthread -ldl
