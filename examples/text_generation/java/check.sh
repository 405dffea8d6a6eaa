#!/bin/sh
# Unit checks of the Java example (java/tests: option and id parsing),
# compiled with -Xlint:all -Werror against the jar java/build.sh uses.
here=$(dirname "$0")
lib_dir=$here/..
. "$lib_dir/lib.sh"
"$here/build.sh" >/dev/null
lock java
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-example-java.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
jar=$CACHE/java/kernelbridge.jar
# shellcheck disable=SC2046 # one path per word
javac -Xlint:all -Werror -encoding UTF-8 -cp "$jar" -d "$tmp" \
  $(find "$EXAMPLE/java/src" "$EXAMPLE/java/tests" -name '*.java' | LC_ALL=C sort)
java -cp "$jar:$tmp" org.kernelbridge.examples.textgen.UnitTest
