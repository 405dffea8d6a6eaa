#!/usr/bin/env bash
# Every golden case of the corpus through the Go binding's Buffer methods
# (Context.<Kernel>Buf, tensors staged in host Buffers): within tolerance of
# the golden values and bit-identical to the slice methods.  The runner exits
# 1 on any failed case.
set -euo pipefail
runner=$1
corpus=$2
out=${TEST_UNDECLARED_OUTPUTS_DIR:-${TMPDIR:-/tmp}}/conformance_go_cpu_buffers.json
"$runner" --backend cpu-buffers --corpus "$corpus" --out "$out"
python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cases = r["cases"]
passed = sum(1 for c in cases if c["passed"])
print(f"{passed} passed, {len(cases) - passed} failed (golden cases through Go Buffers, backend {r['backend']})")
sys.exit(0 if passed == len(cases) and r["backend"] == "cpu-buffers" else 1)
PY
