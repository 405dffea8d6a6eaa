#!/usr/bin/env bash
# Fails when the module's vendored C sources differ from core/ and kernels/
# (run `python3 tools/vendor_c.py sync bindings/go`), or when a Go file of
# the module is not gofmt-clean.  The generated wrappers are checked by
# //tools/kbgen:generated_drift_test.
set -euo pipefail
root=${TEST_SRCDIR:?run me with bazel test}/kernelbridge
cd "$root"
python3 tools/vendor_c.py check bindings/go
bad=$(gofmt -l bindings/go)
if [[ -n $bad ]]; then echo "not gofmt-clean: $bad" >&2; exit 1; fi
echo "1 passed, 0 failed"
