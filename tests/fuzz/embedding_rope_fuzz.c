/* Fuzz target: kb_embedding, kb_rope and kb_rope_ex (specs.c, family "embedding_rope"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("embedding_rope", data, size); }
