#!/bin/sh
# Compiles the Java example against kernelbridge.jar ($KB_JAR, else built
# with `bazel build //bindings/java:kernelbridge_jar`) into the cache and
# writes a launcher; prints the launcher's path.  Needs a JDK >= 17.
lib_dir=$(dirname "$0")/..
. "$lib_dir/lib.sh"
out=$CACHE/java
if [ -z "${KB_JAR:-}" ]; then
  (cd "$ROOT" && bazel build //bindings/java:kernelbridge_jar >/dev/null 2>&1) || {
    echo "java/build.sh: bazel build //bindings/java:kernelbridge_jar failed (or set KB_JAR)" >&2
    exit 1
  }
  KB_JAR=$(cd "$ROOT" && bazel info bazel-bin 2>/dev/null)/bindings/java/kernelbridge.jar
fi
[ -f "$KB_JAR" ] || { echo "java/build.sh: no jar at $KB_JAR" >&2; exit 1; }
lock java
sources=$(find "$EXAMPLE/java/src" -name '*.java' | LC_ALL=C sort)
# Compiled again only when the sources, the jar or this script changed.
key=$(cat "$KB_JAR" $sources "$0" | cksum | cut -d' ' -f1)
if [ "$(cat "$out/key" 2>/dev/null)" != "$key" ]; then
  rm -rf "$out"
  mkdir -p "$out/classes"
  cp "$KB_JAR" "$out/kernelbridge.jar"
  # shellcheck disable=SC2086 # one path per word
  javac -Xlint:all -Werror -encoding UTF-8 -cp "$out/kernelbridge.jar" -d "$out/classes" $sources >&2
  # The weights and the KV cache are direct buffers: allow them as much
  # memory as the machine has (the default limit is the heap's size).
  cat >"$out/text_generation" <<LAUNCHER
#!/bin/sh
# The JVM decodes arguments with the locale's character set: use UTF-8, so
# that the prompt reaches the tokenizer as the bytes C would see.
case "\$(locale charmap 2>/dev/null)" in UTF-8) ;; *) export LC_ALL=C.UTF-8 ;; esac
# Standard output is the program's data: the VM's own warnings go to stderr
# (-Xlog: its unified logging too).  No hsperfdata file (-XX:-UsePerfData): in
# a PID namespace two VMs can have the same pid and warn about each other's file.
# Only the quick compiler (-XX:TieredStopAtLevel=1): a decode step is a
# hundred thin calls into C, which its code runs as fast as the optimising
# compiler's, and that compiler otherwise keeps a core busy during the first
# hundreds of tokens, while the library's threads want both (docs/performance.md).
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+DisplayVMOutputToStderr -XX:-UsePerfData -Xlog:disable -Xlog:all=warning:stderr -XX:MaxDirectMemorySize=1t -cp '$out/kernelbridge.jar:$out/classes' org.kernelbridge.examples.textgen.Main "\$@"
LAUNCHER
  chmod +x "$out/text_generation"
  echo "$key" >"$out/key"
fi
echo "$out/text_generation"
