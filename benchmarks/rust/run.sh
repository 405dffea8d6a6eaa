#!/bin/sh
# Builds (release, offline) and runs the Rust call-overhead benchmark.
#   benchmarks/rust/run.sh [ROUNDS] [ITERS]      (default 15 rounds x 200000 calls)
# Uses the offline cargo configuration of tools/cargo/config.toml and its own
# target directory (benchmarks/rust/target).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:$PATH"
export PATH
cd "$here"
cargo --config "$root/tools/cargo/config.toml" build --offline --release --quiet
exec "${CARGO_TARGET_DIR:-$here/target}/release/kernelbridge-bench" "$@"
