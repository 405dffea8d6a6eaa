/* Fuzz target: kb_argmax and the sampling kernels (specs.c, family "sampling"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("sampling", data, size); }
