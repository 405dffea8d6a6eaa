# Sourced by the Bazel tests of the Python binding: copies the package and
# the library's C sources (from //core:vendored_srcs, through tools/vendor_c.py)
# out of the runfiles into $STAGE, a writable tree that setup.py builds from.
# Sets STAGE (the copy of bindings/python) and a writable HOME and TMPDIR.
set -euo pipefail
runfiles="${TEST_SRCDIR:?run me under bazel test}/kernelbridge"
tmp="${TEST_TMPDIR:?}"
export HOME="$tmp/home" TMPDIR="$tmp/tmp" PIP_CACHE_DIR="$tmp/pip-cache"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PYTHONDONTWRITEBYTECODE=1
mkdir -p "$HOME" "$TMPDIR"
STAGE="$tmp/src/bindings/python"
mkdir -p "$STAGE"
# -L: the runfiles are symlinks; the copy must hold real files.
(cd "$runfiles/bindings/python" && cp -RL . "$STAGE/")
rm -rf "$STAGE/csrc" "$STAGE/build" "$STAGE"/kernelbridge/_native.* "$STAGE"/kernelbridge/_fastcall.*
KB_SOURCE_ROOT="$runfiles" python3 "$runfiles/tools/vendor_c.py" sync "$STAGE/csrc" >/dev/null
