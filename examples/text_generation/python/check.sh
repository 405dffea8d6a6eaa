#!/bin/sh
# Unit checks of the Python example (python/tests), with pytest, on the
# kernelbridge package python/build.sh builds.
here=$(dirname "$0")
lib_dir=$here/..
. "$lib_dir/lib.sh"
"$here/build.sh" >/dev/null
pkg=$(ls -d "$CACHE"/python/kernelbridge-* | head -n 1)
PYTHONPATH="$pkg:$EXAMPLE/python" PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider "$EXAMPLE/python/tests"
