/* vendored by tools/vendor_c.py from kernels/cpu/gemm_batched.c; do not edit */
/*
 * gemm_batched.c - kb_gemm_batched (+ _bf16, _f16): TEMPORARY minimal
 * implementation for the bindings' tests on the `model` branch.  It
 * validates the whole call as the header describes, then runs kb_gemm (or
 * its 16-bit variant) once per item, so every item is exactly kb_gemm's
 * arithmetic.  The real implementation lives in gemm.c on main and replaces
 * this file when the branches meet.
 *
 * Known limit of this stand-in: an allocation failure inside a later item's
 * kb_gemm would leave earlier items written (the real implementation
 * allocates before writing anything).
 */
#include <stdint.h>

#include "kernelbridge.h"
#include "internal.h"
#include "reduced.h"

typedef kb_status (*gemm_fn)(kb_context *, bool, bool, int64_t, int64_t, int64_t, float, const void *, int64_t,
                             const void *, int64_t, float, void *, int64_t);

static kb_status check_ld(kb_context *ctx, const char *fn, const char *name, int64_t ld, int64_t row_len) {
  int64_t need = row_len > 1 ? row_len : 1;
  if (ld < need)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "%s must be >= %lld (the stored row length, at least 1), got %lld",
                    name, (long long)need, (long long)ld);
  return KB_STATUS_OK;
}

/* (rows - 1) * ld + cols, 0 for an empty matrix, INT64_MAX when it does not
 * fit (then no stride can reach it). */
static int64_t extent_saturated(int64_t rows, int64_t cols, int64_t ld) {
  if (rows == 0 || cols == 0) return 0;
  if (ld > 0 && rows - 1 > (INT64_MAX - cols) / ld) return INT64_MAX;
  return (rows - 1) * ld + cols;
}

/* Elements spanned by a batch of strided matrices: (batch - 1) * stride +
 * the extent of one, 0 when empty; OUT_OF_MEMORY when the bytes overflow. */
static kb_status span(kb_context *ctx, const char *fn, const char *what, int64_t elem, int64_t batch, int64_t rows,
                      int64_t cols, int64_t ld, int64_t stride, int64_t *count) {
  int64_t one;
  KB_TRY(kb__count_strided(ctx, fn, what, elem, rows, cols, ld, &one));
  if (batch == 0 || one == 0) {
    *count = 0;
    return KB_STATUS_OK;
  }
  int64_t limit = INT64_MAX / elem;
  if (stride > 0 && batch - 1 > (limit - one) / stride)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "size of %s overflows", what);
  *count = (batch - 1) * stride + one;
  if ((uint64_t)*count > (uint64_t)(SIZE_MAX / (size_t)elem))
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "size of %s overflows", what);
  return KB_STATUS_OK;
}

static kb_status batched(kb_context *ctx, const char *fn, int64_t elem, gemm_fn one, bool trans_a, bool trans_b,
                         int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, const void *a, int64_t lda,
                         int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b, float beta, void *c,
                         int64_t ldc, int64_t stride_c) {
  kb__begin(ctx);
  KB_TRY(kb__check_dim(ctx, fn, "batch", batch));
  KB_TRY(kb__check_dim(ctx, fn, "m", m));
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  KB_TRY(kb__check_dim(ctx, fn, "k", k));
  KB_TRY(kb__check_dim(ctx, fn, "lda", lda));
  KB_TRY(kb__check_dim(ctx, fn, "stride_a", stride_a));
  KB_TRY(kb__check_dim(ctx, fn, "ldb", ldb));
  KB_TRY(kb__check_dim(ctx, fn, "stride_b", stride_b));
  KB_TRY(kb__check_dim(ctx, fn, "ldc", ldc));
  KB_TRY(kb__check_dim(ctx, fn, "stride_c", stride_c));
  int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  KB_TRY(check_ld(ctx, fn, "lda", lda, a_cols));
  KB_TRY(check_ld(ctx, fn, "ldb", ldb, b_cols));
  KB_TRY(check_ld(ctx, fn, "ldc", ldc, n));
  int64_t c_extent = extent_saturated(m, n, ldc);
  if (batch > 1 && stride_c < c_extent)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn,
                    "stride_c must be >= %lld (the extent of one C matrix, (m - 1) * ldc + n) when batch > 1, got %lld",
                    (long long)c_extent, (long long)stride_c);
  int64_t a_count, b_count, c_count;
  KB_TRY(span(ctx, fn, "a", elem, batch, a_rows, a_cols, lda, stride_a, &a_count));
  KB_TRY(span(ctx, fn, "b", elem, batch, b_rows, b_cols, ldb, stride_b, &b_count));
  KB_TRY(span(ctx, fn, "c", elem, batch, m, n, ldc, stride_c, &c_count));
  KB_TRY(kb__check_ptr(ctx, fn, "a", a, a_count));
  KB_TRY(kb__check_ptr(ctx, fn, "b", b, b_count));
  KB_TRY(kb__check_ptr(ctx, fn, "c", c, c_count));
  int64_t ab = a_count * elem, bb = b_count * elem, cb = c_count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "c", c, cb, "a", a, ab, false));
  KB_TRY(kb__check_overlap(ctx, fn, "c", c, cb, "b", b, bb, false));
  const struct kb_mem_ref refs[] = {{"a", a, ab}, {"b", b, bb}, {"c", c, cb}};
  KB_TRY(kb__check_memory(ctx, fn, 3, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  if (c_count == 0) return KB_STATUS_OK;
  const char *pa = a, *pb = b;
  char *pc = c;
  for (int64_t i = 0; i < batch; i++) {
    /* Empty operands may be NULL: no offset is taken from them. */
    const void *ai = a_count > 0 ? pa + i * stride_a * elem : a;
    const void *bi = b_count > 0 ? pb + i * stride_b * elem : b;
    KB_TRY(one(ctx, trans_a, trans_b, m, n, k, alpha, ai, lda, bi, ldb, beta, pc + i * stride_c * elem, ldc));
  }
  return KB_STATUS_OK;
}

static kb_status gemm_f32(kb_context *ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                          const void *a, int64_t lda, const void *b, int64_t ldb, float beta, void *c, int64_t ldc) {
  return kb_gemm(ctx, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static kb_status gemm_bf16(kb_context *ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                           const void *a, int64_t lda, const void *b, int64_t ldb, float beta, void *c, int64_t ldc) {
  return kb_gemm_bf16(ctx, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static kb_status gemm_f16(kb_context *ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                          const void *a, int64_t lda, const void *b, int64_t ldb, float beta, void *c, int64_t ldc) {
  return kb_gemm_f16(ctx, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

kb_status kb_gemm_batched(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                          float alpha, const float *a, int64_t lda, int64_t stride_a, const float *b, int64_t ldb,
                          int64_t stride_b, float beta, float *c, int64_t ldc, int64_t stride_c) {
  return batched(ctx, "kb_gemm_batched", (int64_t)sizeof(float), gemm_f32, trans_a, trans_b, batch, m, n, k, alpha, a,
                 lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c);
}

kb_status kb_gemm_batched_bf16(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n,
                               int64_t k, float alpha, const uint16_t *a, int64_t lda, int64_t stride_a,
                               const uint16_t *b, int64_t ldb, int64_t stride_b, float beta, uint16_t *c, int64_t ldc,
                               int64_t stride_c) {
  return batched(ctx, "kb_gemm_batched_bf16", KB_HALF_SIZE, gemm_bf16, trans_a, trans_b, batch, m, n, k, alpha, a, lda,
                 stride_a, b, ldb, stride_b, beta, c, ldc, stride_c);
}

kb_status kb_gemm_batched_f16(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n,
                              int64_t k, float alpha, const uint16_t *a, int64_t lda, int64_t stride_a,
                              const uint16_t *b, int64_t ldb, int64_t stride_b, float beta, uint16_t *c, int64_t ldc,
                              int64_t stride_c) {
  return batched(ctx, "kb_gemm_batched_f16", KB_HALF_SIZE, gemm_f16, trans_a, trans_b, batch, m, n, k, alpha, a, lda,
                 stride_a, b, ldb, stride_b, beta, c, ldc, stride_c);
}
