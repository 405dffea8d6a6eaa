#!/usr/bin/env bash
# Builds the Python package (bindings/python, its extension compiled in place
# in a temporary copy) and runs the Python conformance runner with the given
# arguments:
#   python_runner.sh --corpus DIR --out FILE [--threads N]
# Works from Bazel runfiles (bazel run / the report) and from a checkout.
# The C sources come from the runfiles (//core:vendored_srcs).
set -euo pipefail
ws="${RUNFILES_DIR:-$0.runfiles}/kernelbridge"
if [[ ! -f $ws/tests/conformance/runners/python/runner.py ]]; then
  ws=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../../../.." && pwd)
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-py-runner.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/python"
(cd "$ws/bindings/python" && cp -RL . "$tmp/python/")
rm -rf "$tmp/python/csrc" "$tmp/python/build" "$tmp/python"/kernelbridge/_native.* "$tmp/python"/kernelbridge/_fastcall.*
python3 "$ws/tools/vendor_c.py" sync "$tmp/python/csrc" >/dev/null
(cd "$tmp/python" && python3 setup.py -q build_ext --inplace >"$tmp/build.log" 2>&1) || { cat "$tmp/build.log" >&2; exit 1; }
PYTHONPATH="$tmp/python" PYTHONDONTWRITEBYTECODE=1 python3 "$ws/tests/conformance/runners/python/runner.py" "$@"
