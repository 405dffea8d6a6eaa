#!/bin/sh
# Builds kernelbridge.jar: compiles the facade (src/) and the SWIG-generated
# raw layer, and puts the JNI library at native/linux-x86_64/.
#   build_jar.sh OUT_JAR INPUT...   (inputs: one *.srcjar from SWIG, one *.so,
#                                    the *.java sources of src/)
set -eu
out=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/swig" "$tmp/classes/native/linux-x86_64" "$tmp/meta"
so="" srcjar=""
: > "$tmp/sources"
for f in "$@"; do
  case "$f" in
    *.srcjar) srcjar=$(cd "$(dirname "$f")" && pwd)/$(basename "$f") ;;
    *.so) so=$f ;;
    *.java) echo "$f" >> "$tmp/sources" ;;
    *) echo "build_jar.sh: unexpected input $f" >&2; exit 1 ;;
  esac
done
[ -n "$so" ] && [ -n "$srcjar" ] || { echo "build_jar.sh: need a .srcjar and a .so" >&2; exit 1; }
(cd "$tmp/swig" && jar --extract --file "$srcjar")
find "$tmp/swig" -name '*.java' >> "$tmp/sources"
javac --release 11 -encoding UTF-8 -Xlint:all -Xlint:-serial -Werror -d "$tmp/classes" "@$tmp/sources"
cp "$so" "$tmp/classes/native/linux-x86_64/libkernelbridge_jni.so"
chmod 644 "$tmp/classes/native/linux-x86_64/libkernelbridge_jni.so"
printf 'Automatic-Module-Name: org.kernelbridge\nImplementation-Title: kernelbridge\n' > "$tmp/meta/MANIFEST.MF"
jar --create --file "$out" --manifest "$tmp/meta/MANIFEST.MF" --date=2000-01-01T00:00:00Z -C "$tmp/classes" .
