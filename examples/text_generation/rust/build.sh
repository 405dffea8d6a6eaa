#!/bin/sh
# Builds the Rust example (release) into the cache, from a copy of it and of
# bindings/rust with their timestamps kept, so cargo rebuilds only what
# changed; prints the program's path.  Offline: crates come from Debian's
# registry through tools/cargo/config.toml.
lib_dir=$(dirname "$0")/..
. "$lib_dir/lib.sh"
out=$CACHE/rust
lock rust
rm -rf "$out/src"
mkdir -p "$out/src/bindings/rust" "$out/src/examples/text_generation/rust" "$out/cargo-home"
(cd "$ROOT/bindings/rust" && tar -cf - --exclude=./target --exclude=./Cargo.lock .) | (cd "$out/src/bindings/rust" && tar -xf -)
(cd "$EXAMPLE/rust" && tar -cf - --exclude=./target .) | (cd "$out/src/examples/text_generation/rust" && tar -xf -)
cp "$ROOT/tools/cargo/config.toml" "$out/cargo-home/config.toml"
PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:$PATH"
[ -d "${RUSTUP_HOME:-${HOME:-/root}/.rustup}" ] || export RUSTUP_HOME=/root/.rustup
CARGO_HOME=$out/cargo-home CARGO_TARGET_DIR=$out/target \
  cargo build --offline --locked --release --quiet --manifest-path "$out/src/examples/text_generation/rust/Cargo.toml" >&2
# A copy and a rename: a copy of the program that is running keeps its file.
cp "$out/target/release/text_generation" "$out/text_generation.new"
mv -f "$out/text_generation.new" "$out/text_generation"
echo "$out/text_generation"
