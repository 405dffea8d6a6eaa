#!/bin/sh
# Runs SWIG on the generated interface: writes the JNI C wrapper and a source
# jar of the raw Java layer (package-private classes of org.kernelbridge).
#   swig.sh INTERFACE HEADER_DIR OUT_WRAP_C OUT_SRCJAR
set -eu
iface=$1 incdir=$2 wrap=$3 srcjar=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/org/kernelbridge"
swig -java -package org.kernelbridge -I"$incdir" -outdir "$tmp/org/kernelbridge" -o "$wrap" "$iface"
jar --create --file "$srcjar" --date=2000-01-01T00:00:00Z -C "$tmp" org
