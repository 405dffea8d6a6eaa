#!/bin/bash
# make_gpu_bundle.sh - builds, on this (GPU-less) machine, everything that
# run_gpu_checks.sh runs on a GPU machine, into one directory that travels
# with the working tree (the GPU machine has no Bazel, Go, Rust or Java, and
# device time is too short to build there).
#
#   benchmarks/cuda/make_gpu_bundle.sh [DIR]     (default .gpu; from the repository root)
#   then, on the GPU machine:  KB_GPU_BIN=DIR.tar.xz benchmarks/cuda/run_gpu_checks.sh
#   (the directory itself, KB_GPU_BIN=DIR, works as well)
#
# DIR holds: the CUDA backend, cuda_kernels_test_bin, the C conformance
# runner, cuda_benchmark (Bazel); go_gpu.test (go test -c of the Go module);
# rust_cuda.test (cargo's test binary of kernelbridge/tests/cuda.rs);
# java/ (the jar, the compiled tests and a jlink runtime of the modules they
# need); python/ (the staged package with its cffi extension, which is built
# for the stable ABI and so loads in another CPython 3, plus a cffi wheel for
# the GPU machine's Python when one is given as $KB_CFFI_WHEEL); overhead/
# (benchmarks/cuda/overhead/build.sh: the call-overhead benchmark).
# The Go and Rust test binaries are stripped to keep the bundle small.
set -euo pipefail
root=$(pwd)
[[ -f core/include/kernelbridge.h ]] || { echo "run from the repository root" >&2; exit 2; }
dir=${1:-.gpu}
rm -rf "$dir"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== bazel"
targets=(//kernels/cuda:libkernelbridge_cuda.so //kernels/cuda:cuda_kernels_test_bin
         //tests/conformance:c_runner //benchmarks/cuda:cuda_benchmark //bindings/java:kernelbridge_jar)
bazel build "${targets[@]}"
bb=$(bazel info bazel-bin 2>/dev/null)
cp -f "$bb/kernels/cuda/libkernelbridge_cuda.so" "$bb/kernels/cuda/cuda_kernels_test_bin" \
  "$bb/tests/conformance/c_runner" "$bb/benchmarks/cuda/cuda_benchmark" "$dir/"
chmod u+w "$dir"/*
# The C programs keep their symbols: a crash on the GPU machine gets a
# readable backtrace (run_gpu_checks.sh runs cuda-gdb on one).

echo "== go"
mkdir -p "$work/go"
(cd bindings/go && tar -cf - --exclude=./bazel .) | (cd "$work/go" && tar -xf -)
(cd "$work/go" && HOME=$work/home GOPATH=$work/gopath GOCACHE=${GOCACHE:-$work/gocache} GOPROXY=off \
  GOFLAGS= CGO_ENABLED=1 go test -c -o "$dir/go_gpu.test" .)
strip "$dir/go_gpu.test"

echo "== rust"
(
  export TEST_TMPDIR=$work/rust
  . bindings/rust/tests/rust_env.sh
  ROOT=$root # rust_env.sh derives it from $0, which is this script
  copy_crates "$WORK/src"
  cd "$WORK/src"
  exe=$(cargo test --offline -p kernelbridge --test cuda --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "cuda":
        print(m["executable"])')
  [[ -n $exe ]] || { echo "cargo built no test binary for tests/cuda.rs" >&2; exit 1; }
  cp "$exe" "$dir/rust_cuda.test"
)
strip "$dir/rust_cuda.test"

echo "== java"
mkdir -p "$dir/java/classes"
cp "$bb/bindings/java/kernelbridge.jar" "$dir/java/"
javac --release 11 -encoding UTF-8 -cp "$dir/java/kernelbridge.jar" -d "$dir/java/classes" \
  $(find bindings/java/tests -name '*.java')
mods=$(jdeps --ignore-missing-deps --print-module-deps -cp "$dir/java/kernelbridge.jar" \
  "$dir/java/kernelbridge.jar" "$dir/java/classes")
jlink --add-modules "$mods" --strip-debug --no-man-pages --no-header-files --compress=2 \
  --output "$dir/java/jre"
strip --strip-unneeded "$dir/java/jre/lib/server/libjvm.so"

echo "== python"
stage=$dir/python
cp -r bindings/python "$stage"
rm -rf "$stage/csrc" "$stage/build" "$stage/kernelbridge/"*.so "$stage/tests/__pycache__"
KB_SOURCE_ROOT=$root python3 tools/vendor_c.py sync "$stage/csrc"
(cd "$stage" && python3 setup.py -q build_ext --inplace >"$work/py.log" 2>&1) || { cat "$work/py.log"; exit 1; }
# _fastcall is built against this CPython's ABI: leave it out (the binding
# runs without it); _native is a stable-ABI module and loads anywhere.
rm -f "$stage/kernelbridge/_fastcall"*.so
rm -rf "$stage/csrc" "$stage/build" "$stage/src"
strip --strip-unneeded "$stage/kernelbridge/"*.so
if [[ -n ${KB_CFFI_WHEEL:-} ]]; then cp "$KB_CFFI_WHEEL" "$dir/"; fi

echo "== overhead"
# The call-overhead benchmark of every language (benchmarks/cuda/overhead).
KB_JAR="$dir/java/kernelbridge.jar" benchmarks/cuda/overhead/build.sh "$dir/overhead"

# The working tree that travels to a GPU machine is limited (64 MiB): the
# bundle goes as one xz archive (about a third of the size), which
# run_gpu_checks.sh unpacks when $KB_GPU_BIN names it.
tar -C "$dir" -cf - . | xz -T0 -6 >"$dir.tar.xz"
du -sh "$dir" "$dir.tar.xz"
