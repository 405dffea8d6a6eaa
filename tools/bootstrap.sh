#!/bin/bash
# bootstrap.sh - installs what kernelbridge's build and tests need, offline
# apart from Debian's apt repositories and PyPI.
#
# Idempotent and fast when everything is present: every requirement is probed
# first; only when something is missing does it run `apt-get update` (once)
# and `apt-get install -y` for the missing Debian packages, and `pip install`
# for the missing Python packages.  Expects Debian bookworm, root (or sudo),
# Python 3 from pyenv as `python3`, and a rustup toolchain.  Writes nothing
# into the repository; Rust builds read tools/cargo/config.toml explicitly
# (see docs/building.md).
#
# Usage: tools/bootstrap.sh        (no options)
set -euo pipefail

start_ns=$(date +%s%N)
log() { echo "bootstrap: $*"; }
die() { echo "bootstrap: error: $*" >&2; exit 1; }

have() { command -v "$1" >/dev/null 2>&1; }
have_all() { local c; for c in "$@"; do have "$c" || return 1; done; }
dpkg_installed() { [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]; }

# Debian package -> probe that succeeds when what we need from it is there.
declare -A probes=(
  [bazel-bootstrap]="have bazel"
  [golang-go]="have go"
  [swig]="have swig"
  [bindgen]="have bindgen"
  [cbindgen]="have cbindgen"
  [librust-cc-dev]="compgen -G '/usr/share/cargo/registry/cc-[0-9]*/Cargo.toml' >/dev/null"
  [libopenblas-dev]="dpkg_installed libopenblas-dev"
  [pkg-config]="have pkg-config"
  [binutils]="have_all ar nm readelf objdump"
  [gcc]="have_all gcc cc"
  [g++]="have g++"
  [default-jdk-headless]="have_all java javac"
  [clang]="have clang"
  # libFuzzer and the sanitizer runtimes of clang, for tools/fuzz.sh.
  [libclang-rt-14-dev]="compgen -G '/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a' >/dev/null"
)
packages=(bazel-bootstrap golang-go swig bindgen cbindgen librust-cc-dev libopenblas-dev pkg-config binutils gcc g++
  default-jdk-headless clang libclang-rt-14-dev)

missing_debs=()
for pkg in "${packages[@]}"; do
  eval "${probes[$pkg]}" || missing_debs+=("$pkg")
done

if ((${#missing_debs[@]})); then
  [[ -r /etc/debian_version ]] || die "missing ${missing_debs[*]}, and this is not Debian: install them by hand"
  sudo=()
  if ((EUID != 0)); then
    have sudo || die "missing ${missing_debs[*]}; run as root (or install sudo)"
    sudo=(sudo)
  fi
  log "installing Debian packages: ${missing_debs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing_debs[@]}"
  for pkg in "${missing_debs[@]}"; do
    eval "${probes[$pkg]}" || die "$pkg was installed but its check still fails: ${probes[$pkg]}"
  done
else
  log "Debian packages: all present"
fi

# Python: the interpreter on PATH (pyenv) must import every package.
have python3 || die "python3 not found on PATH (expected Python 3.11 from pyenv)"
requirements="$(dirname "${BASH_SOURCE[0]}")/python-requirements.txt"
# Pinned packages that are missing or at another version: the first line
# lists those installed with their dependencies, the second those marked
# "# no-deps" in the requirements file (installed with pip --no-deps).
{ read -r -a missing_py || true; read -r -a missing_py_nodeps || true; } <<<"$(python3 - "$requirements" <<'PY'
import importlib.metadata as md, sys
wrong, wrong_nodeps = [], []
for line in open(sys.argv[1]):
    spec, _, comment = line.partition("#")
    spec = spec.strip()
    if not spec:
        continue
    name, _, version = spec.partition("==")
    try:
        ok = md.version(name) == version
    except md.PackageNotFoundError:
        ok = False
    if not ok:
        (wrong_nodeps if comment.strip() == "no-deps" else wrong).append(spec)
print(" ".join(wrong))
print(" ".join(wrong_nodeps))
PY
)"
if ((${#missing_py[@]} + ${#missing_py_nodeps[@]})); then
  prefix=$(python3 -c 'import sys; print(sys.prefix)')
  if ((${#missing_py[@]})); then
    log "installing Python packages into $prefix: ${missing_py[*]}"
    python3 -m pip install --quiet --disable-pip-version-check --no-input "${missing_py[@]}"
  fi
  if ((${#missing_py_nodeps[@]})); then
    log "installing Python packages without their dependencies into $prefix: ${missing_py_nodeps[*]}"
    python3 -m pip install --quiet --disable-pip-version-check --no-input --no-deps "${missing_py_nodeps[@]}"
  fi
  # New console scripts (pytest) need pyenv shims.
  if have pyenv; then pyenv rehash; fi
else
  log "Python packages: all present ($(python3 --version 2>&1))"
fi

# Rust comes from rustup, which this script does not install.
cargo_bin=${CARGO_HOME:-$HOME/.cargo}/bin
if ! have cargo && ! [[ -x $cargo_bin/cargo ]]; then
  die "cargo not found on PATH or in $cargo_bin: install a stable toolchain with rustup"
fi
if ! have cargo; then
  log "note: cargo is in $cargo_bin but not on PATH; add it (.ci/run does)"
fi

elapsed_ns=$(($(date +%s%N) - start_ns))
printf 'bootstrap: done in %d.%03ds\n' $((elapsed_ns / 1000000000)) $((elapsed_ns / 1000000 % 1000))
