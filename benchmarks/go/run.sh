#!/bin/sh
# benchmarks/go/run.sh - times a 16-element kb_silu through the Go package's
# public API, a Context method and a bare cgo call (main.go), and the same
# function called from C (benchmarks/c/silu_baseline.c), in one run.
#
#   benchmarks/go/run.sh [RUNS]     (default 5 runs of each)
#
# Not a test: timings depend on the machine.  Results go to docs/performance.md.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
gomod="$here/../../bindings/go"
runs=${1:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-go-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# C baseline: the vendored library sources, compiled with the library's flags
# (tools/bazel/copts.bzl).
cc -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -fvisibility=hidden -fno-strict-aliasing -ffp-contract=off \
  -I"$gomod" -o "$tmp/silu_baseline" "$here/../c/silu_baseline.c" "$gomod"/*.c -lm -lpthread -ldl

echo "== C baseline (ns/call: min median)"
"$tmp/silu_baseline" "$runs" 5000000
echo
echo "== Go ($(go version | cut -d' ' -f3))"
cd "$here"
GOFLAGS=-mod=mod GOPROXY=off go build -o "$tmp/gobench" .
"$tmp/gobench" -runs "$runs"
