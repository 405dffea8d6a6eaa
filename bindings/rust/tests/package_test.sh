#!/bin/sh
# `cargo package` of both crates, offline, with verification (each packaged
# crate is unpacked and built on its own).
#
# The safe crate depends on kernelbridge-sys by version as well as by path;
# packaging turns that into a registry dependency, which the Debian crate
# directory used for offline builds cannot provide.  So the -sys crate is
# packaged first, unpacked into a local directory registry next to links to
# the Debian crates, and the safe crate is packaged against that registry.
if [ -n "${TEST_SRCDIR:-}" ]; then
  . "$TEST_SRCDIR/${TEST_WORKSPACE:-kernelbridge}/bindings/rust/tests/rust_env.sh"
else
  . "$(dirname "$0")/rust_env.sh"
fi

src="$WORK/src"
copy_crates "$src"
cd "$src"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' kernelbridge-sys/Cargo.toml | head -1)
pkg="$CARGO_TARGET_DIR/package"

step "cargo package kernelbridge-sys"
# --registry crates-io: packaging checks the target registry, and crates-io is
# replaced by a local directory here.
cargo package --offline --registry crates-io -p kernelbridge-sys
crate="$pkg/kernelbridge-sys-$version.crate"
listing=$(tar -tzf "$crate")
for f in build.rs src/bindings.rs csrc/kernelbridge.c csrc/kernelbridge.h; do
  echo "$listing" | grep -qx "kernelbridge-sys-$version/$f" || { echo "package lacks $f" >&2; exit 1; }
done
for c in "$ROOT"/bindings/rust/kernelbridge-sys/csrc/*.c; do
  f="kernelbridge-sys-$version/csrc/$(basename "$c")"
  echo "$listing" | grep -qx "$f" || { echo "package lacks $f" >&2; exit 1; }
done

step "local registry with kernelbridge-sys $version"
reg="$WORK/registry"
rm -rf "$reg"
mkdir -p "$reg"
for d in /usr/share/cargo/registry/*; do ln -s "$d" "$reg/"; done
tar -xzf "$crate" -C "$reg"
sum=$(sha256sum "$crate" | cut -d' ' -f1)
printf '{"package":"%s","files":{}}\n' "$sum" >"$reg/kernelbridge-sys-$version/.cargo-checksum.json"

step "cargo package kernelbridge"
cargo package --offline --registry crates-io -p kernelbridge \
  --config "source.kb-local.directory='$reg'" \
  --config 'source.crates-io.replace-with="kb-local"'
tar -tzf "$pkg/kernelbridge-$version.crate" | grep -qx "kernelbridge-$version/src/lib.rs"
echo "packaged: $(cd "$pkg" && ls ./*.crate | tr '\n' ' ')"
