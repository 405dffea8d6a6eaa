#!/bin/sh
# The committed Rust files match what produces them.
#   drift_test.sh bindgen     src/bindings.rs of kernelbridge-sys (regen.sh --check)
#   drift_test.sh vendored    the C sources in kernelbridge-sys/csrc (tools/vendor_c.py check)
# (The kbgen-generated crate files are checked by //tools/kbgen:generated_drift_test.)
if [ -n "${TEST_SRCDIR:-}" ]; then
  . "$TEST_SRCDIR/${TEST_WORKSPACE:-kernelbridge}/bindings/rust/tests/rust_env.sh"
else
  . "$(dirname "$0")/rust_env.sh"
fi

case "${1:-}" in
  bindgen)
    "$ROOT/bindings/rust/kernelbridge-sys/regen.sh" --check ;;
  vendored)
    # Declared inputs only (//core:vendored_srcs), so Bazel may cache the result.
    runfiles=${TEST_SRCDIR:+$TEST_SRCDIR/${TEST_WORKSPACE:-kernelbridge}}
    base=${runfiles:-$ROOT}
    python3 "$base/tools/vendor_c.py" check "$base/bindings/rust/kernelbridge-sys/csrc" ;;
  *)
    echo "usage: drift_test.sh bindgen|vendored" >&2; exit 2 ;;
esac
