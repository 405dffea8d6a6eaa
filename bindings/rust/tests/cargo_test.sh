#!/bin/sh
# Builds and checks both crates offline, in one target directory:
#   cargo test (unit, integration, generated contract and doc tests),
#   cargo clippy -D warnings, cargo doc (warnings are errors), and a consumer
#   project made from scratch with `cargo new` + `cargo add --path`.
if [ -n "${TEST_SRCDIR:-}" ]; then
  . "$TEST_SRCDIR/${TEST_WORKSPACE:-kernelbridge}/bindings/rust/tests/rust_env.sh"
else
  . "$(dirname "$0")/rust_env.sh"
fi

src="$WORK/src"
copy_crates "$src"
cd "$src"

step "cargo test"
cargo test --offline --workspace
step "cargo clippy -D warnings"
cargo clippy --offline --workspace --all-targets -- -D warnings
step "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --offline --workspace --no-deps

step "consumer: cargo new + cargo add --path"
cd "$WORK"
rm -rf consumer
cargo new --vcs none --bin consumer
cd consumer
cargo add --offline kernelbridge --path "$src/kernelbridge"
cp "$ROOT/bindings/rust/tests/consumer_main.rs" src/main.rs
cargo run --offline --release
