/* Fuzz target: kb_add_bias, the softmaxes and the norms (specs.c, family "rowwise"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("rowwise", data, size); }
