#!/bin/sh
# Java call-overhead benchmark (not a test): 16-element kb_silu through the
# public facade, the raw SWIG/JNI method, a JNI no-op, and the C baseline
# called from C.  Prints ns/call, min and median over RUNS runs of ITERS calls.
#
#   benchmarks/java/run.sh [RUNS [ITERS]]      (from anywhere; uses Bazel for the jar)
#   KB_JAR=path/to/kernelbridge.jar benchmarks/java/run.sh   (skip the Bazel build)
set -eu
runs=${1:-7}
iters=${2:-2000000}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ -z "${KB_JAR:-}" ]; then
  (cd "$root" && bazel build //bindings/java:kernelbridge_jar >/dev/null 2>&1) || {
    echo "run.sh: bazel build //bindings/java:kernelbridge_jar failed" >&2
    exit 1
  }
  KB_JAR="$root/bazel-bin/bindings/java/kernelbridge.jar"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
jdk=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
# Same flags as the library (tools/bazel/copts.bzl, KB_LIB_COPTS).
cflags="-std=c99 -D_POSIX_C_SOURCE=200809L -O2 -fvisibility=hidden -fno-strict-aliasing -ffp-contract=off"
gcc $cflags -shared -fPIC -I"$jdk/include" -I"$jdk/include/linux" -o "$work/libkbnoop.so" "$here/noop.c"
gcc $cflags -I"$root/core/include" -I"$root/core/src" -o "$work/bench_c" "$root/benchmarks/c/silu_baseline.c" \
  "$root"/core/src/*.c $(ls "$root"/kernels/cpu/*.c | grep -v '_test\.c$') -lm -lpthread -ldl
javac -cp "$KB_JAR" -d "$work/classes" "$here"/org/kernelbridge/*.java
echo "# ns/call, 16-element silu; $runs runs x $iters calls; $(java -version 2>&1 | head -1)"
echo "# name               min   median"
"$work/bench_c" "$runs" "$iters"
java -Xms256m -Djava.library.path="$work" -cp "$KB_JAR:$work/classes" org.kernelbridge.Bench "$runs" "$iters"
