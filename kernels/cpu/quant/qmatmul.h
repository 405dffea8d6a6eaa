/* qmatmul.h - the quantized path of kb_linear_w (qmatmul.c).  Internal to
 * kernels/cpu. */
#ifndef KB_CPU_QMATMUL_H
#define KB_CPU_QMATMUL_H

#include "../gemm_engine.h"
#include "internal.h"
#include "qdot.h"

/* y [rows, out] = act(x [rows, in] . W^T + bias) for W the [out, in] weight
 * of block format type (KB_QTYPE_*), rows of row_bytes bytes, as qdot.h's
 * contract and kb_linear's epilogue say.  Validated arguments, rows * out >
 * 0; OUT_OF_MEMORY (recorded in ctx) when the quantized x cannot be
 * allocated, before anything is written. */
kb_status kb__qlinear_run(kb_context *ctx, const char *fn, int type, int64_t rows, int64_t in, int64_t out,
                          const float *x, const void *w, int64_t row_bytes, const struct kb_linear_epilogue *lin,
                          float *y);

#endif /* KB_CPU_QMATMUL_H */
