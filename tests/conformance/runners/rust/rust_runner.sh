#!/bin/sh
# //tests/conformance:rust_runner - builds the Rust conformance runner (this
# directory, a cargo crate depending on bindings/rust/kernelbridge by path)
# with cargo, offline, and runs it with the given arguments:
#
#   rust_runner --corpus DIR --out FILE [--threads N]
#
# Works under `bazel run` (as a runner of //tests/conformance:report), under
# `bazel test` and straight from the source tree.  Cargo never writes into the
# source tree or the runfiles: the crate is mirrored into a build directory
# whose bindings/ is a symlink to the repository's, so the path dependency
# resolves; the build directory and target directory are kept between runs
# (KB_RUST_RUNNER_DIR, default /tmp/kernelbridge-rust-runner-<uid>-<hash of
# the repository path>), so a rerun only rebuilds what changed.
set -eu

# The repository: follow this crate's Cargo.toml (a runfile symlink under
# Bazel) back to the source tree.
manifest=""
for cand in \
  "$(dirname "$0")/runners/rust/Cargo.toml" \
  "$(dirname "$0")/Cargo.toml" \
  "${RUNFILES_DIR:-/nonexistent}/${TEST_WORKSPACE:-kernelbridge}/tests/conformance/runners/rust/Cargo.toml" \
  "$0.runfiles/kernelbridge/tests/conformance/runners/rust/Cargo.toml" \
  "${TEST_SRCDIR:-/nonexistent}/${TEST_WORKSPACE:-kernelbridge}/tests/conformance/runners/rust/Cargo.toml" \
  "$PWD/tests/conformance/runners/rust/Cargo.toml"; do
  if [ -f "$cand" ]; then
    manifest=$(readlink -f "$cand")
    break
  fi
done
if [ -z "$manifest" ]; then
  echo "rust_runner: cannot find tests/conformance/runners/rust/Cargo.toml" >&2
  exit 2
fi
crate=$(dirname "$manifest")
ROOT=$(cd "$crate/../../../.." && pwd)
if [ ! -f "$ROOT/bindings/rust/kernelbridge/Cargo.toml" ]; then
  echo "rust_runner: $ROOT has no bindings/rust/kernelbridge" >&2
  exit 2
fi

key=$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)
W=${KB_RUST_RUNNER_DIR:-/tmp/kernelbridge-rust-runner-$(id -u)-$key}
mkdir -p "$W/src/tests/conformance/runners/rust/src" "$W/cargo-home"

# Offline cargo (tools/cargo/config.toml: Debian's crate directory), rustup's
# toolchain even when HOME is not /root.
_home=${HOME:-/root}
export RUSTUP_HOME=${RUSTUP_HOME:-$_home/.rustup}
[ -d "$RUSTUP_HOME" ] || RUSTUP_HOME=/root/.rustup
export PATH="$_home/.cargo/bin:/root/.cargo/bin:$PATH"
export CARGO_HOME="$W/cargo-home"
export CARGO_TARGET_DIR="$W/target"
export CARGO_TERM_COLOR=never
export CARGO_INCREMENTAL=0
unset RUSTFLAGS CARGO_BUILD_TARGET 2>/dev/null || true

(
  # One build at a time per build directory (report and test may overlap).
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$W/.lock"
    flock 9
  fi
  # Copies a file only when it changed, so that cargo's mtime-based
  # fingerprints stay valid between runs.
  sync_file() {
    if ! cmp -s "$1" "$2"; then
      cp "$1" "$2.tmp.$$" && mv -f "$2.tmp.$$" "$2"
    fi
  }
  sync_file "$ROOT/tools/cargo/config.toml" "$W/cargo-home/config.toml"
  dst="$W/src/tests/conformance/runners/rust"
  sync_file "$crate/Cargo.toml" "$dst/Cargo.toml"
  for f in "$crate"/src/*.rs; do
    sync_file "$f" "$dst/src/$(basename "$f")"
  done
  for f in "$dst"/src/*.rs; do
    [ -f "$crate/src/$(basename "$f")" ] || rm -f "$f"
  done
  ln -sfn "$ROOT/bindings" "$W/src/bindings.tmp.$$" && mv -Tf "$W/src/bindings.tmp.$$" "$W/src/bindings"
  cd "$dst"
  cargo build --offline --quiet --bin rust_runner >&2
) || {
  echo "rust_runner: cargo build failed (build directory $W)" >&2
  exit 2
}

exec "$W/target/debug/rust_runner" "$@"
