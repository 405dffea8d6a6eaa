/* Fuzz target: kb_silu, kb_gelu, kb_gelu_tanh, kb_add, kb_mul, kb_scale (specs.c, family "elementwise"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("elementwise", data, size); }
