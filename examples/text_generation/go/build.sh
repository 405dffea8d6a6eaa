#!/bin/sh
# Builds the Go example into the cache (from a copy of it and of
# bindings/go, so nothing is written into the source tree) and prints the
# program's path.  Needs go >= 1.19 and a C compiler; offline (GOPROXY=off).
lib_dir=$(dirname "$0")/..
. "$lib_dir/lib.sh"
out=$CACHE/go
lock go
rm -rf "$out/src"
mkdir -p "$out/src/bindings" "$out/src/examples/text_generation"
cp -R "$ROOT/bindings/go" "$out/src/bindings/go"
cp -R "$EXAMPLE/go" "$out/src/examples/text_generation/go"
cd "$out/src/examples/text_generation/go"
GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local go build -o "$out/text_generation.new" . >&2
# A rename: a copy of the program that is running keeps its file.
mv -f "$out/text_generation.new" "$out/text_generation"
echo "$out/text_generation"
