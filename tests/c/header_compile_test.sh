#!/bin/bash
# header_compile_test.sh - the public header compiles warning-free as C99, C11
# and C++17 under -Wall -Wextra -Werror -pedantic with gcc/g++ and, when
# installed, clang/clang++; also with KB_STATIC_DEFINE.
#
# Usage: header_compile_test.sh HEADER TRANSLATION_UNIT
set -euo pipefail

header=$1 tu=$2
include_dir=$(dirname "$header")
work=${TEST_TMPDIR:-$(mktemp -d)}
flags=(-Wall -Wextra -Werror -pedantic -I"$include_dir")

passed=0 failed=0
compile() { # compiler, language, standard, extra flags...
  local cc=$1 lang=$2 std=$3
  shift 3
  local what="$cc -x $lang -std=$std $*"
  if "$cc" -x "$lang" -std="$std" "${flags[@]}" "$@" -c "$tu" -o "$work/header_compile.o"; then
    echo "ok: $what"
    passed=$((passed + 1))
  else
    echo "FAILED: $what"
    failed=$((failed + 1))
  fi
}

compilers=(gcc:g++)
if command -v clang >/dev/null && command -v clang++ >/dev/null; then
  compilers+=(clang:clang++)
else
  echo "note: clang not installed; checking gcc only"
fi

for pair in "${compilers[@]}"; do
  c=${pair%%:*} cxx=${pair#*:}
  for std in c99 c11; do
    compile "$c" c "$std"
    compile "$c" c "$std" -DKB_STATIC_DEFINE
  done
  compile "$cxx" c++ c++17
  compile "$cxx" c++ c++17 -DKB_STATIC_DEFINE
done

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
