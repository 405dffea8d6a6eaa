#!/bin/sh
# Runs cbindgen_compat.py (see there) with the test environment's toolchain.
if [ -n "${TEST_SRCDIR:-}" ]; then
  . "$TEST_SRCDIR/${TEST_WORKSPACE:-kernelbridge}/bindings/rust/tests/rust_env.sh"
else
  . "$(dirname "$0")/rust_env.sh"
fi
python3 "$ROOT/bindings/rust/tests/cbindgen_compat.py" --root "$ROOT" --keep "$WORK/cbindgen" --selftest
