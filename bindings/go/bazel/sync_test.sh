#!/usr/bin/env bash
# Fails when bindings/go drifts from its sources: the vendored C copy
# (tools/vendor_c.py check) or the generated wrappers (kbgen check, go
# target), or when a Go file is not gofmt-clean.
#
# Needs the source tree (core/, kernels/, tools/), which Bazel packages do
# not export to bindings/go, so the test runs outside the sandbox (tag
# "local") from the checkout this script lives in, and is never cached (tag
# "external").
set -euo pipefail
script=$(readlink -f "${BASH_SOURCE[0]}")
root=$(cd "$(dirname "$script")/../../.." && pwd)
[[ -f $root/tools/vendor_c.py ]] || { echo "source tree not found from $script" >&2; exit 1; }
cd "$root"
python3 tools/vendor_c.py check bindings/go
(cd tools/kbgen && python3 -m kbgen --root "$root" check --target go)
bad=$(/usr/bin/gofmt -l bindings/go benchmarks/go)
if [[ -n $bad ]]; then echo "not gofmt-clean: $bad" >&2; exit 1; fi
echo "PASS"
