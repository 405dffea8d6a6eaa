#!/bin/sh
# benchmarks/go/run.sh - times a 16-element kb_silu through the Go package's
# public API, a Context method and a bare cgo call (main.go), and the same
# function called from C (cbaseline/silu_bench.c), in one run.
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
  -I"$gomod" -o "$tmp/silu_bench" "$here/cbaseline/silu_bench.c" "$gomod"/*.c -lm -lpthread

echo "== C baseline"
"$tmp/silu_bench" "$runs"
echo
echo "== Go ($(go version | cut -d' ' -f3))"
cd "$here"
GOFLAGS=-mod=mod GOPROXY=off go build -o "$tmp/gobench" .
"$tmp/gobench" -runs "$runs"
