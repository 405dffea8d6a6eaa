#!/bin/sh
# Copies jni.h and jni_md.h of the JDK whose javac is on PATH (found from
# javac's real path, e.g. /usr/lib/jvm/java-17-openjdk-amd64/bin/javac).
#   jni_headers.sh OUT_JNI_H OUT_JNI_MD_H
set -eu
javac=$(command -v javac) || { echo "jni_headers.sh: javac not on PATH (install default-jdk-headless)" >&2; exit 1; }
jdk=$(dirname "$(dirname "$(readlink -f "$javac")")")
for f in "$jdk/include/jni.h" "$jdk/include/linux/jni_md.h"; do
  [ -f "$f" ] || { echo "jni_headers.sh: $f not found (JDK at $jdk)" >&2; exit 1; }
done
cp "$jdk/include/jni.h" "$1"
cp "$jdk/include/linux/jni_md.h" "$2"
