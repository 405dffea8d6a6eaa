/* Fuzz target: kb_linear (specs.c, family "linear"; the 16-bit variants are in "half"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("linear", data, size); }
