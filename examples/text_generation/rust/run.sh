#!/bin/sh
# Runs the Rust example (built on first use):
#   examples/text_generation/rust/run.sh --model FILE --prompt "Once upon a time"
here=$(dirname "$0")
program=$("$here/build.sh")
exec "$program" "$@"
