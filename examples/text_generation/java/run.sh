#!/bin/sh
# Runs the Java example (compiled on first use):
#   examples/text_generation/java/run.sh --model FILE --prompt "Once upon a time"
here=$(dirname "$0")
program=$("$here/build.sh")
exec "$program" "$@"
