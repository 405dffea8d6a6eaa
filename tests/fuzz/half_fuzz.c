/* Fuzz target: the bfloat16 and float16 entry points (specs.c, family "half"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("half", data, size); }
