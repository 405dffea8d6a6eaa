#!/bin/bash
# nvcc.sh - runs nvcc for the CUDA backend's genrules (Bazel 4.2.3 has no
# CUDA rules).  Finds nvcc on PATH, then in $CUDA_HOME/bin, then in
# /usr/local/cuda/bin.
#   nvcc.sh compile SRC.cu OUT.o [extra nvcc flags...]
#   nvcc.sh link OUT.so VERSION_SCRIPT OBJ.o...
# Flags are explained in docs/cuda.md ("Build").
set -euo pipefail

nvcc=""
if command -v nvcc >/dev/null 2>&1; then
  nvcc=$(command -v nvcc)
elif [[ -n "${CUDA_HOME:-}" && -x "$CUDA_HOME/bin/nvcc" ]]; then
  nvcc="$CUDA_HOME/bin/nvcc"
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  nvcc=/usr/local/cuda/bin/nvcc
else
  echo "nvcc.sh: nvcc not found on PATH, in \$CUDA_HOME/bin or in /usr/local/cuda/bin;" \
       "the CUDA backend needs the CUDA 13 toolkit (docs/cuda.md)" >&2
  exit 1
fi

# sm_80 and sm_90 machine code, plus compute_90 PTX for newer GPUs (JIT).
GENCODE=(-gencode arch=compute_80,code=sm_80
         -gencode arch=compute_90,code=sm_90
         -gencode arch=compute_90,code=compute_90)

# nvcc names its temporary files after its process id.  Sandboxed actions
# run in their own pid namespace, so concurrent actions would collide in a
# shared /tmp: give each invocation a private TMPDIR.
work=$(mktemp -d "${TMPDIR:-/tmp}/kb-nvcc.XXXXXX")
trap 'rm -rf "$work"' EXIT
export TMPDIR="$work"

mode=$1
shift
case "$mode" in
  compile)
    src=$1 out=$2
    shift 2
    # -O3 device and host code; PIC and hidden visibility for the shared
    # object; warnings are errors on both sides.  No -use_fast_math: the
    # kernels rely on IEEE division, sqrt and accurate exp/erfc.
    "$nvcc" -std=c++17 -O3 "${GENCODE[@]}" --Werror all-warnings \
      -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror \
      "$@" -c "$src" -o "$out"
    ;;
  link)
    out=$1 map=$2
    shift 2
    # Static CUDA runtime (the library needs only the driver at run time;
    # cuBLASLt is dlopen'ed, never linked).  The version script exports
    # kbcuda_get_table only, hiding the static runtime's symbols as well.
    "$nvcc" -shared "${GENCODE[@]}" -cudart static -o "$out" "$@" \
      -Xlinker --version-script="$map" -Xlinker -z,defs -Xlinker --as-needed \
      -Xlinker -soname=libkernelbridge_cuda.so -ldl -lpthread -lrt
    ;;
  *)
    echo "nvcc.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
