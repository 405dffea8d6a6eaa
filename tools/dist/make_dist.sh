#!/bin/bash
# make_dist.sh - packs the C distribution of kernelbridge (run by //:dist).
#
# Usage: make_dist.sh OUT.tar.gz HEADER ARCHIVE SHARED_LIB PC_TEMPLATE CUDA_LIB
#
# Layout of the tarball (no top-level directory):
#   include/kernelbridge.h
#   lib/libkernelbridge.a           static archive (PIC objects)
#   lib/libkernelbridge.so.0        shared library, SONAME libkernelbridge.so.0
#   lib/libkernelbridge.so -> libkernelbridge.so.0
#   lib/libkernelbridge_cuda.so     the CUDA backend, dlopen'ed at run time by
#                                   the loader, which looks beside the library
#                                   containing it (docs/cuda.md); nothing links
#                                   against it, and deleting it only makes CUDA
#                                   unavailable
#   lib/pkgconfig/kernelbridge.pc
# The version is read from the KB_VERSION_* macros of the header.  The archive
# is reproducible: sorted names, fixed owner and time, no gzip timestamp.
set -euo pipefail

if [[ $# -ne 6 ]]; then
  echo "usage: $0 OUT.tar.gz HEADER ARCHIVE SHARED_LIB PC_TEMPLATE CUDA_LIB" >&2
  exit 2
fi
out=$1 header=$2 archive=$3 shared=$4 pc_template=$5 cuda=$6

version_part() {
  local value
  value=$(sed -n "s/^#define KB_VERSION_$1 \([0-9][0-9]*\)[[:space:]]*\$/\1/p" "$header")
  if [[ -z $value ]]; then
    echo "make_dist.sh: no '#define KB_VERSION_$1 <number>' in $header" >&2
    exit 1
  fi
  echo "$value"
}
version="$(version_part MAJOR).$(version_part MINOR).$(version_part PATCH)"

stage=$(mktemp -d "${TMPDIR:-/tmp}/kernelbridge-dist.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/include" "$stage/lib/pkgconfig"
cp "$header" "$stage/include/kernelbridge.h"
# Bazel names an alwayslink archive .lo; it is an ordinary ar archive.
cp "$archive" "$stage/lib/libkernelbridge.a"
cp "$shared" "$stage/lib/libkernelbridge.so.0"
ln -s libkernelbridge.so.0 "$stage/lib/libkernelbridge.so"
cp "$cuda" "$stage/lib/libkernelbridge_cuda.so"
sed "s/@VERSION@/$version/g" "$pc_template" >"$stage/lib/pkgconfig/kernelbridge.pc"
chmod 0644 "$stage/include/kernelbridge.h" "$stage/lib/libkernelbridge.a" "$stage/lib/pkgconfig/kernelbridge.pc"
chmod 0755 "$stage/lib/libkernelbridge.so.0" "$stage/lib/libkernelbridge_cuda.so"

tar --create --format=gnu --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
  --directory="$stage" include lib | gzip -9 -n >"$out"
