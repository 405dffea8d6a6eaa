# Sourced by the Rust binding's test scripts: an isolated, offline cargo
# environment under the test's scratch directory.
#
# Sets ROOT (the repository), WORK (scratch), HOME, CARGO_HOME (holding the
# offline source-replacement config of tools/cargo/config.toml), RUSTUP_HOME,
# PATH and CARGO_TARGET_DIR, and provides copy_crates DEST (a plain copy of
# bindings/rust without build outputs, so cargo never writes into the source
# tree or into Bazel's runfiles).
set -eu

# The repository: under Bazel, follow a runfile back to the source tree (the
# tests read sources of other packages that are not visible to this one).
if [ -n "${TEST_SRCDIR:-}" ]; then
  _self="$TEST_SRCDIR/${TEST_WORKSPACE:-kernelbridge}/bindings/rust/tests/rust_env.sh"
  ROOT=$(cd "$(dirname "$(readlink -f "$_self")")/../../.." && pwd)
else
  ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
fi
WORK=${TEST_TMPDIR:-$(mktemp -d)}
mkdir -p "$WORK"

_orig_home=${HOME:-/root}
export RUSTUP_HOME=${RUSTUP_HOME:-$_orig_home/.rustup}
[ -d "$RUSTUP_HOME" ] || RUSTUP_HOME=/root/.rustup
export PATH="$_orig_home/.cargo/bin:/root/.cargo/bin:$PATH"
export HOME="$WORK/home"
export CARGO_HOME="$WORK/cargo-home"
export CARGO_TARGET_DIR="${KB_CARGO_TARGET_DIR:-$WORK/target}"
export CARGO_TERM_COLOR=never
export CARGO_INCREMENTAL=0
mkdir -p "$HOME" "$CARGO_HOME"
if [ -f "$ROOT/tools/cargo/config.toml" ]; then
  cp "$ROOT/tools/cargo/config.toml" "$CARGO_HOME/config.toml"
else
  # The same replacement, should the shared file move.
  printf '[source.crates-io]\nreplace-with = "debian"\n[source.debian]\ndirectory = "/usr/share/cargo/registry"\n[net]\noffline = true\n' \
    >"$CARGO_HOME/config.toml"
fi

copy_crates() {
  mkdir -p "$1"
  (cd "$ROOT/bindings/rust" && tar -cf - --exclude=./target --exclude=./Cargo.lock .) | (cd "$1" && tar -xf -)
}

step() { echo "=== $*"; }
