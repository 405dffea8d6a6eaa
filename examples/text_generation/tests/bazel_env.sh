# Sourced by the examples' Bazel tests (sh_test): finds the example's
# sources behind the runfiles' symbolic links (the builds also read
# bindings/ and core/, which are not visible from this package: the tests
# are tagged "external" so that Bazel never serves a stale result), and sets
#   EXAMPLE              the example's source directory
#   KB_EXAMPLES_CACHE    builds, in /tmp (the sandbox keeps $HOME read-only)
#   KB_JAR               //bindings/java:kernelbridge_jar from the runfiles
set -eu
_runfiles=${TEST_SRCDIR:?run under bazel test}/${TEST_WORKSPACE:-kernelbridge}
EXAMPLE=$(cd "$(dirname "$(readlink -f "$_runfiles/examples/text_generation/lib.sh")")" && pwd -P)
export KB_EXAMPLES_CACHE=${KB_EXAMPLES_CACHE:-/tmp/kernelbridge-examples-cache}
export PYTHONDONTWRITEBYTECODE=1
if [ -f "$_runfiles/bindings/java/kernelbridge.jar" ]; then
  export KB_JAR=$_runfiles/bindings/java/kernelbridge.jar
fi
