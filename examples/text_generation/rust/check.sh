#!/bin/sh
# Static and unit checks of the Rust example, on the copy rust/build.sh
# makes: cargo fmt --check, cargo clippy -D warnings, cargo test.
here=$(dirname "$0")
lib_dir=$here/..
. "$lib_dir/lib.sh"
"$here/build.sh" >/dev/null
lock rust
out=$CACHE/rust
PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:$PATH"
[ -d "${RUSTUP_HOME:-${HOME:-/root}/.rustup}" ] || export RUSTUP_HOME=/root/.rustup
export CARGO_HOME=$out/cargo-home CARGO_TARGET_DIR=$out/target
cd "$out/src/examples/text_generation/rust"
cargo fmt --check
cargo clippy --offline --locked --quiet --all-targets -- -D warnings
cargo test --offline --locked --quiet
