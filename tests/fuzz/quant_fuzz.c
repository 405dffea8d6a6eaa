/* Fuzz target: kb_quantize, kb_dequantize, kb_linear_w, kb_embedding_w (specs.c, family "quant"). */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run("quant", data, size); }
