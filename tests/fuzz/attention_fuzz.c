/* Fuzz target: kb_attention and kb_attention_ex (specs.c, family "attention"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("attention", data, size); }
