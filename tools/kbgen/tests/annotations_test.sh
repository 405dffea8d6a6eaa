#!/usr/bin/env bash
# The annotation checker: parsing the header with the generator enforces the
# rules of docs/annotations.md and prints file:line: message on a violation.
set -euo pipefail
root="${TEST_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}/kernelbridge"
[ -d "$root/tools/kbgen" ] || root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root/tools/kbgen"
n=$(python3 -m kbgen --root "$root" symbols | wc -l)
if [ "$n" -lt 1 ]; then echo "no functions found" >&2; exit 1; fi
echo "annotations: $n public functions fully annotated"
echo "1 passed, 0 failed"
