#!/bin/sh
# Rewrites every file derived from the sources, after a change to the header
# or to the C library:
#   - the generated bindings (tools/kbgen from core/include/kernelbridge.h),
#   - the amalgamation vendored into the Go module and the Rust -sys crate
#     (tools/vendor_c.py; the Python sdist makes its own when it is built),
#   - the Rust raw declarations (bindgen, kernelbridge-sys/regen.sh).
# The drift tests of `bazel test //...` fail until these are current.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
(cd tools/kbgen && python3 -m kbgen generate)
python3 tools/vendor_c.py sync bindings/go
python3 tools/vendor_c.py sync bindings/rust/kernelbridge-sys/csrc
bindings/rust/kernelbridge-sys/regen.sh
