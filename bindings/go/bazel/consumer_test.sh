#!/usr/bin/env bash
# A user's view of the Go binding: publish bindings/go at the header's version
# into a file-based module proxy, then in an empty directory create a new
# module, `go get` the package from that proxy, build and run an example
# that calls several kernels and checks the results.
set -euo pipefail
bazel_dir="${TEST_SRCDIR:-}/${TEST_WORKSPACE:-kernelbridge}/bindings/go/bazel"
[[ -f $bazel_dir/common.sh ]] || bazel_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$bazel_dir/common.sh"
export GOCACHE=$work/gocache
mod=$work/module
copy_module "$mod"

proxy=$work/proxy
python3 "$bazel_dir/mkproxy.py" "$mod" "$proxy" > "$work/published.txt"
read -r module version < "$work/published.txt"
[[ -n $module && -n $version ]]
echo "published $module $version to $proxy"

app=$work/app
mkdir -p "$app"
cd "$app"
export GOPROXY=file://$proxy GOSUMDB=off GONOSUMDB=$module GOPRIVATE= GOFLAGS=-mod=mod
go mod init example.com/kbconsumer
go get "$module@$version"
grep -q "$module $version" go.mod
cp "$mod/example/main.go" main.go
go vet .
go build -o "$work/example" .
"$work/example"
# The package came from the module cache, not from the checkout.
go list -m -f '{{.Path}} {{.Version}} {{.Dir}}' "$module" | tee "$work/list.txt"
grep -q "$GOMODCACHE/$module@$version" "$work/list.txt"
echo "PASS"
