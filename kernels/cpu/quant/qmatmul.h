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

/* x [rows, in] (row stride ldx, in a multiple of 32) quantized per block
 * as qdot.h's step 1 says, once, for any number of products with it. */
struct kb_qlinear_x {
  struct kb_qact act;
  void *mem; /* the one allocation behind act */
};

/* Allocates and fills qx (rows quantized on ctx's threads).  Fails only
 * with OUT_OF_MEMORY, recorded in ctx under fn; release with
 * kb__qlinear_release after a success. */
kb_status kb__qlinear_prepare(kb_context *ctx, const char *fn, int64_t rows, int64_t in, const float *x, int64_t ldx,
                              struct kb_qlinear_x *qx);

/* y[i * ldy + j] = the sum (qdot.h's step 2, no epilogue) of quantized row
 * i with weight row j, for i < rows, j < n, the weight rows of format type
 * row_bytes apart from w.  On the calling thread. */
void kb__qlinear_columns(int type, int64_t rows, const struct kb_qlinear_x *qx, const void *w, int64_t row_bytes,
                         int64_t n, float *y, int64_t ldy);

void kb__qlinear_release(struct kb_qlinear_x *qx);

#endif /* KB_CPU_QMATMUL_H */
