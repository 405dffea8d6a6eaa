#!/bin/sh
# The Java binding on a GPU: compiles the tests against kernelbridge.jar and runs
# GpuTest under -Xcheck:jni, with KB_CUDA_LIBRARY set to the CUDA backend built
# here (the jar's JNI library is extracted to a temporary directory, so the
# loader would not find the backend next to it).  Without a usable CUDA device
# GpuTest prints "SKIPPED: reason" and exits 0 (CI counts the target as
# skipped).  Fails on a failed test or on any JNI warning in the output.
#   gpu_test.sh JAR LIBKERNELBRIDGE_CUDA TEST_SOURCES...
set -eu
jar=$1
KB_CUDA_LIBRARY=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
export KB_CUDA_LIBRARY
shift 2
out=${TEST_TMPDIR:-$(mktemp -d)}/java_gpu
rm -rf "$out"
mkdir -p "$out/classes"
javac --release 11 -encoding UTF-8 -cp "$jar" -d "$out/classes" "$@"
status=0
java -Xcheck:jni -cp "$jar:$out/classes" org.kernelbridge.test.GpuTest > "$out/log" 2>&1 || status=$?
cat "$out/log"
if grep -q -i "warning" "$out/log"; then
  echo "gpu_test.sh: the JVM printed a warning under -Xcheck:jni (see above)" >&2
  exit 1
fi
exit $status
