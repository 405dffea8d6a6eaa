/* Fuzz target: kb_adamw_step (specs.c, family "adamw"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("adamw", data, size); }
