#!/bin/bash
# exported_symbols.sh - prints the functions a shared library exports: the
# defined dynamic symbols of type T (text), W (weak) or i (indirect), one per
# line, sorted.  Usage: exported_symbols.sh LIBRARY.so
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 LIBRARY.so" >&2
  exit 2
fi
nm -D --defined-only "$1" | awk '$2 == "T" || $2 == "W" || $2 == "i" { print $3 }' | LC_ALL=C sort
