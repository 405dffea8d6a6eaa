#!/bin/sh
# Runs the Go example (built on first use):
#   examples/sentence_embeddings/go/run.sh "A sentence." "Another one."
here=$(dirname "$0")
lib_dir=$here/..
. "$lib_dir/lib.sh"
model_dir >/dev/null
program=$("$here/build.sh")
exec "$program" "$@"
