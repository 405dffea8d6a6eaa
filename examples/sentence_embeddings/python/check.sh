#!/bin/sh
# Unit checks of the Python example (python/tests), with pytest.
here=$(dirname "$0")
lib_dir=$here/..
. "$lib_dir/lib.sh"
PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider "$EXAMPLE/python/tests"
