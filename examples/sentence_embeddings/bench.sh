#!/bin/sh
# Sentences per second of the four examples and of PyTorch (when installed)
# on one batch of 32 sentences of mixed length (bench/sentences.json, 2 to
# 26 words).  Each program embeds the batch once untimed, then REPEAT times
# timed, and reports the median; the languages take turns, in rotating
# order, for ROUNDS rounds.  The best round counts (other load on a shared
# machine only ever slows a round down); the median round is shown too.
# THREADS: 0 (default) for one per CPU.  Tokenisation is included, loading
# the model is not.  Not a test: figures depend on the machine
# (docs/performance.md records them).
#
#   examples/sentence_embeddings/bench.sh [REPEAT [ROUNDS [THREADS]]]   (default 20 3 0)
#
# Needs what the examples need (each language's build.sh); the Java jar
# comes from $KB_JAR or `bazel build //bindings/java:kernelbridge_jar`.
lib_dir=$(dirname "$0")
. "$lib_dir/lib.sh"
repeat=${1:-20}
rounds=${2:-3}
threads=${3:-0}
model=$(model_dir)
input=$EXAMPLE/bench/sentences.json
langs="python go rust java"
have_torch=no
if python3 -c 'import torch' 2>/dev/null; then
  have_torch=yes
  langs="$langs pytorch"
fi
for lang in python go rust java; do
  eval "prog_$lang=\$(\"\$EXAMPLE/\$lang/build.sh\")"
done
# shellcheck disable=SC2154 # prog_python is set by the eval above
pkg=$(sed -n "s/^PYTHONPATH='\([^:]*\):.*/\1/p" "$prog_python")
isa=$(PYTHONPATH=$pkg python3 -c 'import kernelbridge; print(kernelbridge.cpu_isa())')
echo "# $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); kernelbridge cpu_isa: $isa"
[ "$threads" != 0 ] || threads_shown="$(nproc) (all)"
echo "# 32 sentences; threads: ${threads_shown:-$threads}; median of $repeat timed runs; best of $rounds rounds"

timing() { # LANG -> the program's "timing:" line
  if [ "$1" = pytorch ]; then
    python3 "$EXAMPLE/bench/torch_bench.py" "$model" "$input" "$repeat" "$threads" 2>&1 >/dev/null | grep '^timing:'
  else
    eval "prog=\$prog_$1"
    "$prog" --model "$model" --input "$input" --repeat "$repeat" --threads "$threads" --raw /dev/null 2>&1 >/dev/null | grep '^timing:'
  fi
}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
r=0
order=$langs
while [ "$r" -lt "$rounds" ]; do
  for lang in $order; do
    ms=$(timing "$lang" | sed 's/.*median \([0-9.]*\) ms.*/\1/')
    echo "$lang $ms" >>"$results"
  done
  # The next round starts with the next language.
  order="${order#* } ${order%% *}"
  r=$((r + 1))
done
printf '%-8s %9s %12s %14s   %s\n' language "best ms" "sentences/s" "median round" "(ms of each round)"
for lang in $langs; do
  all=$(awk -v l="$lang" '$1 == l { printf "%s ", $2 }' "$results")
  best=$(echo "$all" | tr ' ' '\n' | grep . | sort -n | head -1)
  mid=$(echo "$all" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  printf '%-8s %9s %12s %11s ms   (%s)\n' "$lang" "$best" "$(awk -v b="$best" 'BEGIN { printf "%.1f", 32000 / b }')" "$mid" "${all% }"
done
[ "$have_torch" = yes ] || echo "pytorch  (not installed)"
