#!/bin/sh
# A user's view: in an empty directory, compile and run an example against
# nothing but kernelbridge.jar (the JNI library comes out of the jar), under
# -Xcheck:jni with no warning.  Then check the error for an unsupported
# platform.
set -eu
jar=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
example=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/consumer.XXXXXX")
cd "$dir"
cp "$jar" kernelbridge.jar
cp "$example" Example.java
javac -cp kernelbridge.jar Example.java
mkdir extract
java -Xcheck:jni -Dkernelbridge.tmpdir=extract -cp kernelbridge.jar:. Example > out.txt 2>&1 || { cat out.txt; echo "consumer_test.sh: Example failed" >&2; exit 1; }
cat out.txt
grep -q "OK$" out.txt
if grep -q -i "warning" out.txt; then echo "consumer_test.sh: JVM warning under -Xcheck:jni" >&2; exit 1; fi
# The library was extracted there and deleted once loaded.
if [ -n "$(ls -A extract)" ]; then echo "consumer_test.sh: extracted library left behind: $(ls extract)" >&2; exit 1; fi

# Unsupported platform: a clear UnsatisfiedLinkError naming os.name/os.arch.
if java -Dos.arch=sparcv9 -cp kernelbridge.jar:. Example > bad.txt 2>&1; then
  cat bad.txt; echo "consumer_test.sh: expected a failure on os.arch=sparcv9" >&2; exit 1
fi
cat bad.txt
grep -q "UnsatisfiedLinkError: kernelbridge: unsupported platform os.name=Linux, os.arch=sparcv9" bad.txt
echo "consumer_test.sh: OK"
