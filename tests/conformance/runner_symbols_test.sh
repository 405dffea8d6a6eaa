#!/bin/bash
# The C runner defines no global function that the C library also defines.
# Such a function interposes on libc's for every library in the process: the
# runner's bind() (tensor staging) once replaced bind(2), and the CUDA
# driver's debugger support, calling bind(2) on a socket, crashed the runner
# on its first GPU run.
#   runner_symbols_test.sh PATH/TO/c_runner
set -euo pipefail
runner=$1
libc=$(ldd "$runner" | awk '/libc\.so/ {print $3}')
[[ -r $libc ]] || { echo "cannot find the C library of $runner (ldd)" >&2; exit 1; }
ours=$(nm -g --defined-only "$runner" | awk '$2 == "T" || $2 == "D" || $2 == "B" {print $3}' | sort -u)
theirs=$(nm -D --defined-only "$libc" | awk '{sub(/@.*/, "", $3); print $3}' | sort -u)
[[ $(wc -l <<<"$ours") -gt 10 && $(wc -l <<<"$theirs") -gt 1000 ]] ||
  { echo "nm listed too few symbols (runner $(wc -l <<<"$ours"), libc $(wc -l <<<"$theirs"))" >&2; exit 1; }
clash=$(comm -12 <(grep -v -x -e main -e _start -e '__.*' -e '_[A-Z].*' <<<"$ours") <(echo "$theirs"))
if [[ -n $clash ]]; then
  echo "the runner defines functions of the C library (rename them or make them static):" >&2
  echo "$clash" >&2
  exit 1
fi
echo "$(wc -l <<<"$ours") global symbols of the runner, none defined by $libc"
