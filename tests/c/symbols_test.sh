#!/usr/bin/env bash
# The shared library exports exactly the functions the header declares: no
# internal helper leaks out (-fvisibility=hidden works) and no KB_API function
# is missing.
# Usage: symbols_test.sh LIBRARY.so exported_symbols.sh KBGEN_MAIN.py
set -euo pipefail
lib=$1 exported=$2 kbgen_main=$3
root=$(cd "$(dirname "$kbgen_main")/../../.." && pwd)
tmp=${TEST_TMPDIR:-$(mktemp -d)}

bash "$exported" "$lib" >"$tmp/exported.txt"
(cd "$root/tools/kbgen" && python3 -m kbgen --root "$root" symbols) | LC_ALL=C sort >"$tmp/declared.txt"

echo "declared in the header: $(wc -l <"$tmp/declared.txt"), exported: $(wc -l <"$tmp/exported.txt")"
if ! diff -u "$tmp/declared.txt" "$tmp/exported.txt"; then
  echo "FAIL: the dynamic symbol table differs from the header ('-' declared only, '+' exported only)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
echo "1 passed, 0 failed"
