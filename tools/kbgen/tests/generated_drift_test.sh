#!/usr/bin/env bash
# Fails when a committed generated file differs from what the generator
# produces from the header now (someone edited the header and forgot to run
# `python3 -m kbgen generate`, or edited a generated file by hand).
set -euo pipefail
root="${TEST_SRCDIR:-}/kernelbridge"
[ -d "$root/tools/kbgen" ] || root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root/tools/kbgen"
python3 -m kbgen --root "$root" check
