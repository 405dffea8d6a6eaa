#!/bin/sh
# Runs the Python example (building the kernelbridge extension on first use):
#   examples/text_generation/python/run.sh --model FILE.gguf --prompt "Once upon a time"
# Options as the C driver's (../README.md).
here=$(dirname "$0")
launcher=$("$here/build.sh")
exec "$launcher" "$@"
