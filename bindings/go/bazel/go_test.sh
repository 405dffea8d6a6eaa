#!/usr/bin/env bash
# go vet, go test, go test -race and the 0-allocation check of the Go package
# (bindings/go), on a copy of the module.
set -euo pipefail
bazel_dir="${TEST_SRCDIR:-}/${TEST_WORKSPACE:-kernelbridge}/bindings/go/bazel"
[[ -f $bazel_dir/common.sh ]] || bazel_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$bazel_dir/common.sh"
# The build cache may be shared between test runs (.bazelrc sets GOCACHE);
# it only caches, so results do not depend on it.
export GOCACHE=${GOCACHE:-$work/gocache} GOPROXY=off
mod=$work/module
copy_module "$mod"
cd "$mod"
go version

echo "== gofmt"
bad=$(gofmt -l .)
if [[ -n $bad ]]; then echo "not gofmt-clean: $bad" >&2; exit 1; fi

echo "== go vet ./..."
go vet ./...

echo "== go test ./... (GODEBUG=cgocheck=1)"
GODEBUG=cgocheck=1 go test -count=1 ./...

echo "== go test -race"
go test -race -count=1 .

echo "== benchmarks: 0 allocs/op"
go test -count=1 -run '^$' -bench 'Silu' -benchtime 20000x -benchmem . | tee "$work/bench.txt"
if ! awk '/^Benchmark/ { n++; if ($(NF-1) != 0) bad = 1 } END { exit !(n > 0 && !bad) }' "$work/bench.txt"; then
  echo "a benchmark allocates (want 0 allocs/op)" >&2
  exit 1
fi
# The GPU tests (TestGPU*) ran above and skipped unless a CUDA device can be
# used; //bindings/go:go_gpu_test runs them on their own and reports a skip.
echo "PASS"
