#!/bin/bash
# build.sh - builds the GPU call-overhead benchmark, every language, into DIR
# so that a GPU machine without compilers can run it (run.sh, copied into DIR
# too).  Runs here, on the build machine: nvcc, gcc, Go, cargo (offline) and
# a JDK; no GPU needed.
#
#   benchmarks/cuda/overhead/build.sh DIR
#   KB_JAR=path/to/kernelbridge.jar benchmarks/cuda/overhead/build.sh DIR
#       (use that jar instead of `bazel build //bindings/java:kernelbridge_jar`)
#
# DIR afterwards:
#   bare_launch       bare launch + sync and kb_silu from C (bare_launch.cu)
#   go_overhead       benchmarks/go built with -cuda support
#   rust_overhead     benchmarks/rust (kernelbridge-bench) with --cuda support
#   java/classes/     benchmarks/java compiled against the binding jar
#   java/kernelbridge.jar   that jar (run.sh uses $KB_JAVA_CP before it)
#   python/           bench_overhead.py and cuda_overhead.py (the package
#                     itself comes from PYTHONPATH at run time)
#   run.sh            the runner
# The binaries are stripped; only glibc (and libstdc++ for bare_launch) is
# needed from the machine, plus the NVIDIA driver and libkernelbridge_cuda.so
# ($KB_CUDA_LIBRARY) for the measurements themselves.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-overhead-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
step() { echo "== $*" >&2; }

# Found the way kernels/cuda/nvcc.sh finds it.
nvcc=$(command -v nvcc || true)
[[ -z "$nvcc" && -n "${CUDA_HOME:-}" && -x "$CUDA_HOME/bin/nvcc" ]] && nvcc="$CUDA_HOME/bin/nvcc"
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
if [[ -z "$nvcc" ]]; then
  echo "build.sh: nvcc not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)" >&2
  exit 1
fi

step "bare_launch (nvcc: sm_80, sm_90, compute_90 PTX)"
# The library as one translation unit, fresh from core/ and kernels/cpu/,
# compiled with the library's own flags (tools/bazel/copts.bzl).
python3 "$root/tools/vendor_c.py" sync "$tmp/csrc" >/dev/null
gcc -c -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -fvisibility=hidden -fno-strict-aliasing -ffp-contract=off \
  -I"$tmp/csrc" -o "$tmp/kernelbridge.o" "$tmp/csrc/kernelbridge.c"
# The project's targets (kernels/cuda/nvcc.sh): machine code for A100 and
# H100, PTX for newer GPUs.
gencode=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
         -gencode arch=compute_90,code=compute_90)
"$nvcc" -std=c++17 -O3 "${gencode[@]}" --Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror \
  -I"$tmp/csrc" -c "$here/bare_launch.cu" -o "$tmp/bare_launch.o"
# Static CUDA runtime (nvcc's default): the program needs only the driver.
"$nvcc" "${gencode[@]}" -o "$out/bare_launch" "$tmp/bare_launch.o" "$tmp/kernelbridge.o" -ldl -lpthread -lm
strip "$out/bare_launch"

step "go_overhead"
(cd "$root/benchmarks/go" && GOFLAGS=-mod=mod GOPROXY=off go build -trimpath -ldflags="-s -w" -o "$out/go_overhead" .)

step "rust_overhead (cargo, offline)"
PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:$PATH"
target=${CARGO_TARGET_DIR:-$root/benchmarks/rust/target}
(cd "$root/benchmarks/rust" &&
  CARGO_TARGET_DIR="$target" cargo --config "$root/tools/cargo/config.toml" build --offline --release --quiet)
cp "$target/release/kernelbridge-bench" "$out/rust_overhead"
strip "$out/rust_overhead"

step "java (classes for Java 17, against the binding jar)"
if [[ -z "${KB_JAR:-}" ]]; then
  (cd "$root" && bazel build //bindings/java:kernelbridge_jar >/dev/null 2>&1) || {
    echo "build.sh: bazel build //bindings/java:kernelbridge_jar failed (or set KB_JAR)" >&2
    exit 1
  }
  KB_JAR="$root/bazel-bin/bindings/java/kernelbridge.jar"
fi
rm -rf "$out/java"
mkdir -p "$out/java"
cp "$KB_JAR" "$out/java/kernelbridge.jar"
chmod u+w "$out/java/kernelbridge.jar"
javac --release 17 -cp "$KB_JAR" -d "$out/java/classes" "$root"/benchmarks/java/org/kernelbridge/*.java

step "python (scripts only)"
mkdir -p "$out/python"
cp "$root/benchmarks/python/bench_overhead.py" "$root/benchmarks/python/cuda_overhead.py" "$out/python/"

cp "$here/run.sh" "$out/run.sh"
chmod +x "$out/run.sh"
step "done: $(du -sh "$out" | cut -f1) in $out"
