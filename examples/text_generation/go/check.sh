#!/bin/sh
# Static and unit checks of the Go example, on the copy go/build.sh makes:
# gofmt, go vet, go test.
here=$(dirname "$0")
lib_dir=$here/..
. "$lib_dir/lib.sh"
"$here/build.sh" >/dev/null
lock go
cd "$CACHE/go/src/examples/text_generation/go"
bad=$(gofmt -l .)
if [ -n "$bad" ]; then
  echo "not gofmt-clean: $bad" >&2
  exit 1
fi
export GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
go vet .
# The model tests read the committed test models.
KB_TG_TESTDATA=$EXAMPLE/testdata go test -count=1 .
