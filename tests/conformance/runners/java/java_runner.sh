#!/usr/bin/env bash
# The Java conformance runner (docs/conformance.md): compiles Runner.java,
# Json.java and Npy.java against kernelbridge.jar into a temporary directory
# and runs them under -Xcheck:jni with the given arguments:
#   java_runner.sh --corpus DIR --out FILE [--threads N]
# Relative paths are relative to the current directory.  Works from Bazel
# runfiles (bazel run, bazel test, the report) and from a checkout with the
# jar built (bazel build //bindings/java:kernelbridge_jar).
set -euo pipefail
rel_src=tests/conformance/runners/java
rel_jar=bindings/java/kernelbridge.jar
root=
for cand in "${RUNFILES_DIR:-}/kernelbridge" "$0.runfiles/kernelbridge" "${TEST_SRCDIR:-}/kernelbridge" "$PWD"; do
  if [[ -f $cand/$rel_src/Runner.java && -f $cand/$rel_jar ]]; then
    root=$cand
    break
  fi
done
if [[ -z $root ]]; then
  # A checkout: the sources next to this script, the jar in bazel-bin.
  ws=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../../../.." && pwd)
  if [[ -f $ws/$rel_src/Runner.java && -f $ws/bazel-bin/$rel_jar ]]; then
    root=$ws
    jar=$ws/bazel-bin/$rel_jar
  else
    echo "java_runner.sh: cannot find $rel_src/Runner.java and $rel_jar" >&2
    exit 2
  fi
fi
jar=${jar:-$root/$rel_jar}
tmp=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/kb-java-runner.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
javac --release 11 -encoding UTF-8 -cp "$jar" -d "$tmp/classes" \
  "$root/$rel_src/Runner.java" "$root/$rel_src/Json.java" "$root/$rel_src/Npy.java"
status=0
java -Xcheck:jni -Djava.io.tmpdir="$tmp" -cp "$jar:$tmp/classes" kbconformance.Runner "$@" || status=$?
exit $status
