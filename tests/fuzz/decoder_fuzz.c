/* Fuzz target: the decoder family, kb_kv_cache_append and the float32-over-16-bit-cache kernels
 * (kb_kv_cache_append_to_*, kb_attention_ex_kv_*) (specs.c, family "decoder"; the 16-bit variants of
 * kb_kv_cache_append are in "half"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("decoder", data, size); }
