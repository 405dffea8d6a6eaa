/* Fuzz target: kb_cross_entropy and kb_cross_entropy_backward (specs.c, family "cross_entropy"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("cross_entropy", data, size); }
