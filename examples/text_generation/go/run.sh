#!/bin/sh
# Runs the Go example (built on first use):
#   examples/text_generation/go/run.sh --model FILE --prompt "Once upon a time" --max-tokens 32
# Options as the C driver's (../README.md).
here=$(dirname "$0")
program=$("$here/build.sh")
exec "$program" "$@"
