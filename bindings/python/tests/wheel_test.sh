#!/usr/bin/env bash
# Packaging: builds the sdist, builds the wheel from the sdist, installs the
# wheel into a fresh virtual environment and runs examples/quickstart.py from a
# directory outside any source tree.
#
# No network: the environment's dependencies (cffi, pycparser, numpy) are
# installed from wheels repacked from the interpreter's own installed copies
# (tests/repack_wheels.py), with pip --no-index.
set -euo pipefail
source "${TEST_SRCDIR:?run me under bazel test}/kernelbridge/bindings/python/tests/stage.sh"
cd "$STAGE"
dist="$TMPDIR/dist"
python3 -m build --no-isolation --sdist --outdir "$dist" . >"$TMPDIR/sdist.log" 2>&1 || { cat "$TMPDIR/sdist.log"; exit 1; }
sdist=$(ls "$dist"/kernelbridge-*.tar.gz)
echo "sdist: $(basename "$sdist")"
# The sdist must carry the C sources and build without the repository.
tar -tzf "$sdist" >"$TMPDIR/sdist.txt"
# The C library travels as the amalgamation and its header.
for f in kernelbridge.c kernelbridge.h; do
  grep -q "/csrc/$f\$" "$TMPDIR/sdist.txt" || { echo "sdist lacks csrc/$f"; exit 1; }
done
mkdir -p "$TMPDIR/unpacked"
tar -xzf "$sdist" -C "$TMPDIR/unpacked"
(cd "$TMPDIR/unpacked"/kernelbridge-* && python3 -m pip wheel --no-build-isolation --no-deps -q -w "$dist" .) \
  >"$TMPDIR/wheel.log" 2>&1 || { cat "$TMPDIR/wheel.log"; exit 1; }
wheel=$(ls "$dist"/kernelbridge-*.whl)
echo "wheel: $(basename "$wheel")"
case "$(basename "$wheel")" in
  *-linux_x86_64.whl | *manylinux*.whl | *-linux_aarch64.whl) ;;
  *) echo "not a platform wheel: $wheel"; exit 1 ;;
esac
python3 "$STAGE/tests/repack_wheels.py" "$dist" cffi pycparser numpy
python3 -m venv "$TMPDIR/venv"
"$TMPDIR/venv/bin/python" -m pip install -q --no-index --find-links "$dist" kernelbridge
outside="$TMPDIR/elsewhere"
mkdir -p "$outside"
cp "$STAGE/examples/quickstart.py" "$outside/"
cd "$outside"
env -u PYTHONPATH "$TMPDIR/venv/bin/python" quickstart.py
# The installed extension links nothing of CUDA (the backend is dlopened).
so=$(env -u PYTHONPATH "$TMPDIR/venv/bin/python" -c 'import kernelbridge._native as n; print(n.__file__)')
case "$so" in "$TMPDIR/venv/"*) ;; *) echo "extension not from the venv: $so"; exit 1 ;; esac
if ldd "$so" | grep -Ei 'cuda|cublas|nvrtc'; then echo "the extension depends on CUDA"; exit 1; fi
echo "ldd $(basename "$so"): no CUDA dependency"
# The fast path's extension is in the wheel too, and the kernels use it.
fast=$(env -u PYTHONPATH "$TMPDIR/venv/bin/python" -c '
import numpy as np, kernelbridge as kb
from kernelbridge import _fastcall, _runtime
kb.default_context()
before = _runtime.fast_calls()
kb.add(np.ones(4, np.float32), np.ones(4, np.float32))
assert _runtime.fast_calls() == before + 1, "kb.add did not take the fast path"
print(_fastcall.__file__)')
case "$fast" in "$TMPDIR/venv/"*) echo "fast path: $(basename "$fast")" ;; *) echo "fast path not from the venv: $fast"; exit 1 ;; esac
