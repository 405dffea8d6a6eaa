/* Fuzz target: kb_embedding and kb_rope (specs.c, family "embedding_rope"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("embedding_rope", data, size); }
