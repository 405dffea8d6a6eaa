#!/bin/sh
# go/unicode_tables.go and rust/src/unicode_tables.rs are current.
set -eu
here=${TEST_SRCDIR:?}/${TEST_WORKSPACE:-kernelbridge}/examples/sentence_embeddings
python3 "$here/tools/gen_unicode_tables.py" --check
echo "Unicode tables are current"
