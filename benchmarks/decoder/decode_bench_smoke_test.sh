#!/bin/sh
# Runs decode_bench once per weight format on the small synthesized model
# with a short prompt and generation: each run must finish and print its
# prefill, decode and bandwidth lines (no speed is asserted).
set -eu
bench=$1
for type in f32 f16 bf16 q8_0 q4_0; do
  out=$("$bench" --preset small --type "$type" --threads 2 --prompt 8 --gen 4 --reps 1)
  echo "$out"
  for line in "prefill 8 tokens:" "decode 4 tokens:" "weights read per decode step:"; do
    if ! printf '%s\n' "$out" | grep -q "$line"; then
      echo "decode_bench --type $type: no \"$line\" line" >&2
      exit 1
    fi
  done
done
echo PASS
