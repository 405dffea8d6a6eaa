# Sourced by the examples' build.sh and run.sh scripts (POSIX sh).
#
# Sets EXAMPLE (this directory), ROOT (the repository) and CACHE (where
# builds go: $KB_EXAMPLES_CACHE, else ~/.cache/kernelbridge-examples, one
# subdirectory per checkout, shared with examples/sentence_embeddings), and
# defines
#   lock NAME      holds an exclusive lock on $CACHE/NAME.lock until the
#                  script exits (builds of one checkout never overlap).
set -eu
# $lib_dir: set by the sourcing script to this file's directory.
EXAMPLE=$(cd "$lib_dir" && pwd -P)
ROOT=$(cd "$EXAMPLE/../.." && pwd -P)
_key=$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)
CACHE=${KB_EXAMPLES_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/kernelbridge-examples}/$_key/text_generation
mkdir -p "$CACHE"

lock() {
  exec 9>"$CACHE/$1.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -x 9
  fi
}
