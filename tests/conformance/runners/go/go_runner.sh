#!/usr/bin/env bash
# Builds the Go conformance runner (main.go, through the public Go binding in
# bindings/go) and runs it with the given arguments:
#   go_runner.sh --corpus DIR --out FILE [--threads N]
# Works from Bazel runfiles (bazel run / the report) and from a checkout.
set -euo pipefail
ws="${RUNFILES_DIR:-$0.runfiles}/kernelbridge"
if [[ ! -f $ws/tests/conformance/runners/go/main.go ]]; then
  ws=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../../../.." && pwd)
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-go-runner.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# A plain copy with the same relative layout (go.mod's replace directive).
for d in bindings/go tests/conformance/runners/go; do
  mkdir -p "$tmp/$d"
  (cd "$ws/$d" && find . \( -type f -o -type l \) -not -path './bazel/*' | while read -r f; do
    mkdir -p "$tmp/$d/$(dirname "$f")"
    cp -L "$f" "$tmp/$d/$f"
  done)
done
export PATH=/usr/bin:$PATH GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=1
export GOCACHE=${GOCACHE:-${TMPDIR:-/tmp}/kernelbridge-go-cache}
export GOPATH=$tmp/gopath GOMODCACHE=$tmp/gopath/pkg/mod
(cd "$tmp/tests/conformance/runners/go" && go build -o "$tmp/runner" .)
"$tmp/runner" "$@"
