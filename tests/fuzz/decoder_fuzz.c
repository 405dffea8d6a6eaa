/* Fuzz target: the decoder family, kb_kv_cache_append (specs.c, family "decoder"; the 16-bit variants are in "half"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("decoder", data, size); }
