#!/bin/sh
# Compiles the Java tests against kernelbridge.jar and runs them under
# -Xcheck:jni; fails on a failed test or on any JNI warning in the output.
set -eu
jar=$1
shift
out=${TEST_TMPDIR:-$(mktemp -d)}/java_unit
rm -rf "$out"
mkdir -p "$out/classes"
javac --release 11 -encoding UTF-8 -cp "$jar" -d "$out/classes" "$@"
status=0
# InternalTest is in package org.kernelbridge (package-private access through the
# class path); the GPU tests are //bindings/java:gpu_test.
java -Xcheck:jni -cp "$jar:$out/classes" org.kernelbridge.test.Harness \
  org.kernelbridge.test.KernelsTest org.kernelbridge.test.BindingTest org.kernelbridge.test.BufferTest \
  org.kernelbridge.test.HalfTest org.kernelbridge.test.ModelTest org.kernelbridge.test.CudaTest org.kernelbridge.InternalTest \
  org.kernelbridge.test.StressTest org.kernelbridge.test.SharedTest org.kernelbridge.test.QTensorTest \
  org.kernelbridge.test.GgufTest org.kernelbridge.test.TokenizerTest > "$out/log" 2>&1 || status=$?
cat "$out/log"
if grep -q -i "warning" "$out/log"; then
  echo "unit_test.sh: the JVM printed a warning under -Xcheck:jni (see above)" >&2
  exit 1
fi
# A line starting "SKIPPED:" would make CI count this whole target as skipped.
if grep -q "^SKIPPED:" "$out/log"; then
  echo "unit_test.sh: a unit test printed a SKIPPED: line (GPU-only tests belong in gpu_test)" >&2
  exit 1
fi
exit $status
