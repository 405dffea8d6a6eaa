#!/bin/sh
# Drift check of the Java binding alone: the committed generated files
# (kernelbridge.i, src/org/kernelbridge/{KernelBridge,Context}.java and the enums)
# equal what tools/kbgen produces from the header now.
set -eu
root="${TEST_SRCDIR:-}/kernelbridge"
[ -d "$root/tools/kbgen" ] || root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root/tools/kbgen"
python3 -m kbgen check --root "$root" --target java
