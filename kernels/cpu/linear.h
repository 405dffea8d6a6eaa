/* linear.h - kb_linear_w's product for arguments already validated
 * (linear.c), shared with the decoder kernels that run linear layers on
 * storage-format weights (decoder/linear_glu.c, decoder/moe_experts.c).
 * Internal to kernels/cpu. */
#ifndef KB_CPU_LINEAR_H
#define KB_CPU_LINEAR_H

#include "gemm_engine.h"
#include "internal.h"

/* The gemm engine's storage type (KB_GEMM_*) of float weights of kb_dtype
 * type: F16, BF16, or F32 for everything else (block formats never reach
 * the engine with in_features > 0). */
int kb__linear_w_gemm_type(int type);

/* y [rows, out] = lin(x [rows, in] . W^T) for W the [out, in] weight of
 * kb_dtype type, rows row_bytes apart: exactly what kb_linear_w computes.
 * rows * out > 0.  Fails only with OUT_OF_MEMORY (recorded in ctx under fn)
 * when scratch cannot be allocated, before y is written. */
kb_status kb__linear_w_run(kb_context *ctx, const char *fn, int type, int64_t rows, int64_t in, int64_t out,
                           const float *x, const void *w, int64_t row_bytes, const struct kb_linear_epilogue *lin,
                           float *y);

#endif /* KB_CPU_LINEAR_H */
