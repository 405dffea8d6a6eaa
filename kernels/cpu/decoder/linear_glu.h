/* linear_glu.h - kb_linear_glu_w's fused product for arguments already
 * validated (linear_glu.c), shared with kb_moe_experts.  Internal to
 * kernels/cpu. */
#ifndef KB_CPU_DECODER_LINEAR_GLU_H
#define KB_CPU_DECODER_LINEAR_GLU_H

#include <stdint.h>

#include "internal.h"

/* y [rows, out] (row stride ldy) = act(x . Wg^T) * (x . Wu^T), x [rows, in]
 * float32, Wg and Wu [out, in] of kb_dtype type with rows row_bytes apart:
 * what kb_linear_glu_w computes.  rows * out > 0.  Fails only with
 * OUT_OF_MEMORY (recorded in ctx under fn), before y is written. */
kb_status kb__linear_glu_run(kb_context *ctx, const char *fn, int type, int64_t rows, int64_t in, int64_t out,
                             const float *x, const void *gate_w, const void *up_w, int64_t row_bytes, int act, float *y,
                             int64_t ldy);

#endif /* KB_CPU_DECODER_LINEAR_GLU_H */
