#!/bin/sh
# Runs the Python example (building the kernelbridge extension on first use):
#   examples/sentence_embeddings/python/run.sh "A sentence." "Another one."
# Options as in python3 -m sentence_embeddings --help.
here=$(dirname "$0")
launcher=$("$here/build.sh")
exec "$launcher" "$@"
