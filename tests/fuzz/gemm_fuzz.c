/* Fuzz target: kb_gemm and kb_gemm_batched (specs.c, family "gemm"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("gemm", data, size); }
