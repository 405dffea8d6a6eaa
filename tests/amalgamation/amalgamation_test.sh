#!/bin/bash
# amalgamation_test.sh AMALGAMATION HEADER AMALGAMATED_RUNNER RUNNER
# 1. The amalgamation compiles without any warning under gcc and clang at
#    -Wall -Wextra plus the project's own warnings.
# 2. The C conformance runner linked against it produces exactly the results
#    (every output hash and status) of the runner linked against the library
#    built from the separate files.
set -uo pipefail
amalgamation=$1 header=$2 amalgamated_runner=$3 runner=$4
work=${TEST_TMPDIR:-$(mktemp -d)}
status=0

cp "$amalgamation" "$work/kernelbridge.c"
cp "$header" "$work/kernelbridge.h"
flags=(-std=c99 -D_POSIX_C_SOURCE=200809L -O2 -fvisibility=hidden -ffp-contract=off -Wall -Wextra -Werror -Wshadow
  -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wformat=2 -Wundef -Wpointer-arith -c)
for cc in gcc clang; do
  if ! command -v "$cc" >/dev/null; then
    echo "FAIL: $cc is not installed (tools/bootstrap.sh installs it)"
    status=1
    continue
  fi
  if "$cc" "${flags[@]}" "$work/kernelbridge.c" -o "$work/kernelbridge-$cc.o" 2>"$work/$cc.log"; then
    echo "$cc: the amalgamation compiles without a warning ($(wc -l <"$work/kernelbridge.c") lines)"
  else
    echo "FAIL: $cc:"
    cat "$work/$cc.log"
    status=1
  fi
done

corpus=$(dirname "$(dirname "$runner")")/conformance/corpus
[[ -d $corpus ]] || corpus=tests/conformance/corpus
"$runner" --corpus "$corpus" --out "$work/files.json" >/dev/null
"$amalgamated_runner" --corpus "$corpus" --out "$work/one.json" >/dev/null
python3 - "$work/files.json" "$work/one.json" <<'PY' || status=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def key(r):
    return {c["name"]: (c.get("status"), c.get("hashes"), c.get("passed")) for c in r["cases"]}, \
           {c["name"]: (c.get("got"), c.get("untouched")) for c in r["bad_input"]}
ga, ba = key(a)
gb, bb = key(b)
diff = [n for n in ga if ga[n] != gb.get(n)] + [n for n in ba if ba[n] != bb.get(n)]
if diff or set(ga) != set(gb) or set(ba) != set(bb):
    print("FAIL: the amalgamated library differs on", diff[:10])
    sys.exit(1)
failed = [n for n in gb if not gb[n][2]]
if failed:
    print("FAIL: golden cases failed:", failed[:10])
    sys.exit(1)
print(f"conformance: {len(ga)} golden and {len(ba)} bad-input cases identical")
PY
exit $status
