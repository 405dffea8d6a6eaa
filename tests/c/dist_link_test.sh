#!/bin/bash
# dist_link_test.sh - unpacks the C distribution (//:dist) and checks it the
# way a user would consume it:
#   - the expected files, with lib/libkernelbridge.so a symlink to .so.0;
#   - the static archive holds an object for every library source file and
#     defines every function the shared library exports;
#   - the shared library has SONAME libkernelbridge.so.0 and pulls in neither
#     CUDA nor the C++ runtime;
#   - lib/libkernelbridge_cuda.so exports only kbcuda_get_table, and the
#     library finds it at run time: beside libkernelbridge.so.0 for a shared
#     link, through $KB_CUDA_LIBRARY for a static one (cuda_example.c);
#   - pkg-config reports the header's version;
#   - link_example.c builds with `cc` + pkg-config against the static archive
#     alone and against the shared library alone, and both binaries print the
#     expected output.
#
# Usage: dist_link_test.sh DIST_TARBALL LINK_EXAMPLE_C CUDA_EXAMPLE_C EXPORTED_SYMBOLS_SH LIBRARY_SOURCES...
set -euo pipefail

dist=$(realpath "$1") example=$(realpath "$2") cuda_example=$(realpath "$3") exported_symbols=$(realpath "$4")
shift 4
sources=("$@")

work=${TEST_TMPDIR:-$(mktemp -d)}/dist_link_test
rm -rf "$work"
mkdir -p "$work"
cd "$work"

passed=0 failed=0
pass() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAILED: $*"; failed=$((failed + 1)); }
check() { # description, command...
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

# --- contents -------------------------------------------------------------
mkdir full
tar -xzf "$dist" -C full
listing=$(tar -tzf "$dist" | grep -v '/$' | LC_ALL=C sort | tr '\n' ' ')
want="include/kernelbridge.h lib/libkernelbridge.a lib/libkernelbridge.so lib/libkernelbridge.so.0 lib/libkernelbridge_cuda.so lib/pkgconfig/kernelbridge.pc "
check "tarball lists exactly: $want" test "$listing" = "$want"
check "lib/libkernelbridge.so -> libkernelbridge.so.0" \
  test "$(readlink full/lib/libkernelbridge.so 2>/dev/null)" = libkernelbridge.so.0

# --- static archive -------------------------------------------------------
members=$(ar t full/lib/libkernelbridge.a)
for src in "${sources[@]}"; do
  case $src in *.c) ;; *) continue ;; esac
  base=$(basename "$src" .c)
  if grep -qx -e "$base.o" -e "$base.pic.o" <<<"$members"; then
    pass "archive has an object for $src"
  else
    fail "archive has no object for $src (members: $(tr '\n' ' ' <<<"$members"))"
  fi
done
"$exported_symbols" full/lib/libkernelbridge.so.0 >exported.txt
nm --defined-only full/lib/libkernelbridge.a 2>/dev/null | awk '$2 == "T" { print $3 }' | LC_ALL=C sort -u >archive.txt
missing=$(LC_ALL=C comm -23 exported.txt archive.txt | tr '\n' ' ')
check "archive defines every exported function (missing: ${missing:-none})" test -z "$missing"
check "shared library exports kb_version_number" grep -qx kb_version_number exported.txt
stray=$(grep -v '^kb_' exported.txt | tr '\n' ' ' || true)
check "shared library exports only kb_* functions (others: ${stray:-none})" test -z "$stray"

# --- shared library -------------------------------------------------------
soname=$(readelf -d full/lib/libkernelbridge.so.0 | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
check "SONAME is libkernelbridge.so.0 (got '$soname')" test "$soname" = libkernelbridge.so.0
deps=$(ldd full/lib/libkernelbridge.so.0)
while IFS= read -r line; do echo "  ldd: $line"; done <<<"$deps"
lacks() { ! grep -qE "$1" <<<"$2"; } # pattern, text
check "shared library needs no libcuda/libcudart" lacks 'libcuda|libcudart' "$deps"
check "shared library needs no libstdc++" lacks 'libstdc\+\+' "$deps"

# --- CUDA backend ---------------------------------------------------------
cuda_exports=$("$exported_symbols" full/lib/libkernelbridge_cuda.so | tr '\n' ' ')
check "libkernelbridge_cuda.so exports only kbcuda_get_table (got: $cuda_exports)" test "$cuda_exports" = "kbcuda_get_table "
check "libkernelbridge.so.0 does not link libkernelbridge_cuda.so (it is dlopen'ed)" \
  lacks 'kernelbridge_cuda' "$(readelf -d full/lib/libkernelbridge.so.0)"

# --- pkg-config -----------------------------------------------------------
header=full/include/kernelbridge.h
part() { sed -n "s/^#define KB_VERSION_$1 \([0-9]*\).*/\1/p" "$header"; }
version="$(part MAJOR).$(part MINOR).$(part PATCH)"
pc() { PKG_CONFIG_LIBDIR="$1/lib/pkgconfig" PKG_CONFIG_PATH='' pkg-config "${@:2}" kernelbridge; }
check "pkg-config --modversion is $version" test "$(pc full --modversion)" = "$version"

expected="kernelbridge $version
context: OK backend=0 threads=2
kb_add: OK 5 7 9
kb_softmax: OK 0.5 0.5 0.5 0.5
kb_add(n=-1): INVALID_ARGUMENT, message names kb_add: yes"

run_example() { # description, binary, extra env...
  local what=$1 binary=$2
  shift 2
  local got
  if got=$(env "$@" "./$binary" 2>&1) && [[ $got == "$expected" ]]; then
    pass "$what"
  else
    fail "$what"
    echo "--- expected"
    echo "$expected"
    echo "--- got"
    echo "$got"
  fi
}

# Static: a prefix without the shared library, so -lkernelbridge can only
# resolve to the archive.
mkdir static
cp -a full/include full/lib static/
rm static/lib/libkernelbridge.so static/lib/libkernelbridge.so.0
read -r -a static_flags <<<"$(pc "$PWD/static" --cflags --libs --static)"
echo "  static flags: ${static_flags[*]}"
if cc -std=c99 -Wall -Wextra -Werror -o example_static "$example" "${static_flags[@]}"; then
  pass "link against the static archive"
  check "static example does not need libkernelbridge.so" lacks 'libkernelbridge' "$(readelf -d example_static)"
  run_example "static example output" example_static
else
  fail "link against the static archive"
fi

# The CUDA backend was found when the message is about the driver or the
# devices (or there is none: a GPU machine), not about loading the library.
run_cuda_example() { # description, binary, extra env...
  local what=$1 binary=$2
  shift 2
  local got
  got=$(env "$@" "./$binary" 2>&1) || true
  echo "  $binary: $(tr '\n' ' ' <<<"$got")"
  if [[ $got == OK* ]] || { [[ $got == BACKEND_UNAVAILABLE* ]] && ! grep -q 'cannot load the CUDA backend' <<<"$got"; }; then
    pass "$what"
  else
    fail "$what"
  fi
}
if cc -std=c99 -Wall -Wextra -Werror -o cuda_static "$cuda_example" "${static_flags[@]}"; then
  run_cuda_example "static link loads the backend named by KB_CUDA_LIBRARY" cuda_static \
    KB_CUDA_LIBRARY="$PWD/full/lib/libkernelbridge_cuda.so"
else
  fail "link cuda_example.c against the static archive"
fi

# Shared: the full prefix; the loader finds the library through LD_LIBRARY_PATH.
read -r -a shared_flags <<<"$(pc "$PWD/full" --cflags --libs)"
echo "  shared flags: ${shared_flags[*]}"
if cc -std=c99 -Wall -Wextra -Werror -o example_shared "$example" "${shared_flags[@]}"; then
  pass "link against the shared library"
  check "shared example needs libkernelbridge.so.0" \
    grep -qE 'NEEDED.*\[libkernelbridge\.so\.0\]' <(readelf -d example_shared)
  run_example "shared example output" example_shared LD_LIBRARY_PATH="$PWD/full/lib"
else
  fail "link against the shared library"
fi
if cc -std=c99 -Wall -Wextra -Werror -o cuda_shared "$cuda_example" "${shared_flags[@]}"; then
  # No KB_CUDA_LIBRARY and not on the system path: only the loader's
  # "beside libkernelbridge.so.0" candidate can find it.
  run_cuda_example "shared link finds libkernelbridge_cuda.so beside libkernelbridge.so.0" cuda_shared \
    LD_LIBRARY_PATH="$PWD/full/lib" KB_CUDA_LIBRARY=
else
  fail "link cuda_example.c against the shared library"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
