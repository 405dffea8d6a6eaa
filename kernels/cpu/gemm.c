/* gemm.c - kb_gemm, kb_gemm_bf16, kb_gemm_f16 and kb_gemm_batched*:
 * validation and dispatch to the CUDA backend or the CPU engine
 * (gemm_engine.c).  C = alpha * op(A) * op(B) + beta * C, row-major. */
#include <stdlib.h>

#include "gemm_engine.h"
#include "internal.h"
#include "reduced.h"

/* Multiply-adds per item from which a batch runs its items one after
 * another on all threads, rather than one item per thread. */
#define KB_GEMM_BATCH_SPLIT ((int64_t)1 << 20)

/* Validation of every entry point (elem: element size in bytes), ending with
 * the memory-kind check.  The counts are the strided extents in elements. */
static kb_status check(kb_context *ctx, const char *fn, int64_t elem, bool trans_a, bool trans_b, int64_t m, int64_t n,
                       int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb, const void *c, int64_t ldc,
                       int64_t *a_count, int64_t *b_count, int64_t *c_count) {
  KB_TRY(kb__check_dim(ctx, fn, "m", m));
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  KB_TRY(kb__check_dim(ctx, fn, "k", k));
  KB_TRY(kb__check_dim(ctx, fn, "lda", lda));
  KB_TRY(kb__check_dim(ctx, fn, "ldb", ldb));
  KB_TRY(kb__check_dim(ctx, fn, "ldc", ldc));
  /* Stored shapes: A is [m, k] or, transposed, [k, m]; likewise B. */
  int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  KB_TRY(kb__check_ld(ctx, fn, "lda", lda, a_cols));
  KB_TRY(kb__check_ld(ctx, fn, "ldb", ldb, b_cols));
  KB_TRY(kb__check_ld(ctx, fn, "ldc", ldc, n));
  KB_TRY(kb__count_strided(ctx, fn, "a", elem, a_rows, a_cols, lda, a_count));
  KB_TRY(kb__count_strided(ctx, fn, "b", elem, b_rows, b_cols, ldb, b_count));
  KB_TRY(kb__count_strided(ctx, fn, "c", elem, m, n, ldc, c_count));
  KB_TRY(kb__check_ptr(ctx, fn, "a", a, *a_count));
  KB_TRY(kb__check_ptr(ctx, fn, "b", b, *b_count));
  KB_TRY(kb__check_ptr(ctx, fn, "c", c, *c_count));
  /* Extents are the bounding ranges [first, last] of each strided matrix. */
  int64_t ab = *a_count * elem, bb = *b_count * elem, cb = *c_count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "c", c, cb, "a", a, ab, false));
  KB_TRY(kb__check_overlap(ctx, fn, "c", c, cb, "b", b, bb, false));
  const struct kb_mem_ref refs[] = {{"a", a, ab}, {"b", b, bb}, {"c", c, cb}};
  return kb__check_memory(ctx, fn, 3, refs);
}

kb_status kb_gemm(kb_context *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  static const char fn[] = "kb_gemm";
  KB_BEGIN(ctx, fn);
  int64_t a_count, b_count, c_count;
  KB_TRY(check(ctx, fn, (int64_t)sizeof(float), trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, &a_count, &b_count,
               &c_count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->gemm(ctx->cuda_ctx, fn, trans_a ? 1 : 0, trans_b ? 1 : 0, m, n, k, alpha, a, lda,
                                           b, ldb, beta, c, ldc));
  if (c_count == 0) return KB_STATUS_OK;
  return kb__gemm_run(ctx, fn, KB_GEMM_F32, KB_GEMM_F32, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                      NULL);
}

/* bf16 / f16: panels are widened while they are packed and the sums kept
 * in float32 per rectangle, so the result is exactly kb_gemm on the widened
 * inputs, rounded once; only the m x n elements of C are written, never the
 * padding between its rows. */
static kb_status gemm_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, bool trans_a, bool trans_b, int64_t m,
                         int64_t n, int64_t k, float alpha, const uint16_t *a, int64_t lda, const uint16_t *b,
                         int64_t ldb, float beta, uint16_t *c, int64_t ldc) {
  KB_BEGIN(ctx, fn);
  int64_t a_count, b_count, c_count;
  KB_TRY(check(ctx, fn, KB_HALF_SIZE, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, &a_count, &b_count, &c_count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->gemm_dt(ctx->cuda_ctx, fn, dt, trans_a ? 1 : 0, trans_b ? 1 : 0, m, n, k, alpha,
                                              a, lda, b, ldb, beta, c, ldc));
  if (c_count == 0) return KB_STATUS_OK;
  int gdt = dt == KBCUDA_F16 ? KB_GEMM_F16 : KB_GEMM_BF16;
  return kb__gemm_run(ctx, fn, gdt, gdt, trans_a, trans_b, m, n, k, alpha, a, lda,
                      b, ldb, beta, c, ldc, NULL);
}

kb_status kb_gemm_bf16(kb_context *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float beta, uint16_t *c,
                       int64_t ldc) {
  return gemm_dt(ctx, "kb_gemm_bf16", KBCUDA_BF16, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

kb_status kb_gemm_f16(kb_context *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float beta, uint16_t *c,
                      int64_t ldc) {
  return gemm_dt(ctx, "kb_gemm_f16", KBCUDA_F16, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}


/* ---- kb_gemm_batched: C_i = alpha op(A_i) op(B_i) + beta C_i ---- */

/* Bytes of a batch of count matrices of `one` elements every `stride`
 * elements: (count - 1) * stride + one, or 0; OUT_OF_MEMORY naming `name`
 * on overflow. */
static kb_status batch_extent(kb_context *ctx, const char *fn, const char *name, int64_t elem, int64_t count,
                              int64_t stride, int64_t one, int64_t *out) {
  *out = 0;
  if (count == 0 || one == 0) return KB_STATUS_OK;
  if (stride > 0 && count - 1 > (INT64_MAX / elem - one) / stride)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "size of %s overflows", name);
  *out = (count - 1) * stride + one;
  return KB_STATUS_OK;
}

struct batch_job {
  const struct kb_gemm_plan *plan;
  const char *a, *b; /* bytes */
  char *c;
  int64_t lda, ldb, ldc, sa, sb, sc, elem; /* strides in bytes */
  int64_t batch, next;                     /* next: atomic, the next item to take */
  float *scratch;
  int64_t scratch_floats; /* per worker */
};

/* Item i of an operand (bytes); an empty operand may be NULL and stays so. */
static const char *item(const char *base, int64_t i, int64_t stride_bytes) {
  return base != NULL ? base + i * stride_bytes : NULL;
}

/* Each worker runs whole items, one thread each, taking the next free one. */
static void batch_body(void *arg, int64_t begin, int64_t end) {
  struct batch_job *j = (struct batch_job *)arg;
  for (int64_t w = begin; w < end; w++)
    for (;;) {
      int64_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
      if (i >= j->batch) break;
      /* C is never empty here (an empty C returns first); the scratch is
       * NULL when the plan needs none, and NULL + 0 is undefined. */
      float *scratch = j->scratch != NULL ? j->scratch + w * j->scratch_floats : NULL;
      kb__gemm_exec(NULL, j->plan, item(j->a, i, j->sa), j->lda, item(j->b, i, j->sb), j->ldb, j->c + i * j->sc, j->ldc,
                    scratch);
    }
}

static kb_status gemm_batched_dt(kb_context *ctx, const char *fn, int dt, bool trans_a, bool trans_b, int64_t batch,
                                 int64_t m, int64_t n, int64_t k, float alpha, const void *a, int64_t lda,
                                 int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b, float beta, void *c,
                                 int64_t ldc, int64_t stride_c) {
  KB_BEGIN(ctx, fn);
  int64_t elem = dt == KB_GEMM_F32 ? (int64_t)sizeof(float) : KB_HALF_SIZE;
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
  KB_TRY(kb__check_ld(ctx, fn, "lda", lda, a_cols));
  KB_TRY(kb__check_ld(ctx, fn, "ldb", ldb, b_cols));
  KB_TRY(kb__check_ld(ctx, fn, "ldc", ldc, n));
  int64_t a_one, b_one, c_one, a_all, b_all, c_all;
  KB_TRY(kb__count_strided(ctx, fn, "a", elem, a_rows, a_cols, lda, &a_one));
  KB_TRY(kb__count_strided(ctx, fn, "b", elem, b_rows, b_cols, ldb, &b_one));
  KB_TRY(kb__count_strided(ctx, fn, "c", elem, m, n, ldc, &c_one));
  /* Items of C are written: they must not overlap one another. */
  if (batch > 1 && c_one > 0 && stride_c < c_one)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn,
                    "stride_c must be >= %lld (the extent of one C, so that the items do not overlap), got %lld",
                    (long long)c_one, (long long)stride_c);
  /* The stride of an empty operand, or of a batch of one, is never used:
   * 0, so that the byte strides below cannot overflow (each other one is
   * bounded by the operand's checked extent). */
  if (a_one == 0 || batch <= 1) stride_a = 0;
  if (b_one == 0 || batch <= 1) stride_b = 0;
  if (c_one == 0 || batch <= 1) stride_c = 0;
  KB_TRY(batch_extent(ctx, fn, "a", elem, batch, stride_a, a_one, &a_all));
  KB_TRY(batch_extent(ctx, fn, "b", elem, batch, stride_b, b_one, &b_all));
  KB_TRY(batch_extent(ctx, fn, "c", elem, batch, stride_c, c_one, &c_all));
  KB_TRY(kb__check_ptr(ctx, fn, "a", a, a_all));
  KB_TRY(kb__check_ptr(ctx, fn, "b", b, b_all));
  KB_TRY(kb__check_ptr(ctx, fn, "c", c, c_all));
  int64_t ab = a_all * elem, bb = b_all * elem, cb = c_all * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "c", c, cb, "a", a, ab, false));
  KB_TRY(kb__check_overlap(ctx, fn, "c", c, cb, "b", b, bb, false));
  const struct kb_mem_ref refs[] = {{"a", a, ab}, {"b", b, bb}, {"c", c, cb}};
  KB_TRY(kb__check_memory(ctx, fn, 3, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  if (c_all == 0) return KB_STATUS_OK;

  struct kb_gemm_plan plan;
  /* Multiply-adds per item (m * n fits: C was counted), saturated. */
  int64_t kk = k > 0 ? k : 1, per_item = m * n > INT64_MAX / kk ? INT64_MAX : m * n * kk;
  if (batch == 1 || per_item >= KB_GEMM_BATCH_SPLIT * kb__threads(ctx)) {
    /* Items big enough to share out: one after another, each on every thread. */
    KB_TRY(kb__gemm_plan(ctx, fn, ctx, dt, dt, trans_a, trans_b, m, n, k, alpha, beta, NULL, &plan));
    float *scratch = NULL;
    if (plan.scratch_floats > 0 && (scratch = kb__gemm_scratch(ctx, fn, plan.scratch_floats)) == NULL)
      return KB_STATUS_OUT_OF_MEMORY;
    for (int64_t i = 0; i < batch; i++)
      kb__gemm_exec(ctx, &plan, item((const char *)a, i, stride_a * elem), lda, item((const char *)b, i, stride_b * elem), ldb,
                    (char *)c + i * stride_c * elem, ldc, scratch);
    free(scratch);
    return KB_STATUS_OK;
  }
  /* Small items: one thread per item, the workers sharing the batch. */
  KB_TRY(kb__gemm_plan(ctx, fn, NULL, dt, dt, trans_a, trans_b, m, n, k, alpha, beta, NULL, &plan));
  int64_t workers = kb__task_count(ctx, batch, KB_GEMM_BATCH_SPLIT / per_item + 1);
  int64_t per_worker = (plan.scratch_floats + 15) / 16 * 16, dims[2] = {workers, per_worker}, total;
  KB_TRY(kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 2, dims, &total));
  float *scratch = NULL;
  if (total > 0 && (scratch = kb__gemm_scratch(ctx, fn, total)) == NULL) return KB_STATUS_OUT_OF_MEMORY;
  struct batch_job j = {&plan,          (const char *)a, (const char *)b, (char *)c,
                        lda,            ldb,             ldc,             stride_a * elem,
                        stride_b * elem, stride_c * elem, elem,           batch,
                        0,              scratch,         per_worker};
  kb__parallel_for(ctx, workers, 1, batch_body, &j);
  free(scratch);
  return KB_STATUS_OK;
}

kb_status kb_gemm_batched(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                          float alpha, const float *a, int64_t lda, int64_t stride_a, const float *b, int64_t ldb,
                          int64_t stride_b, float beta, float *c, int64_t ldc, int64_t stride_c) {
  return gemm_batched_dt(ctx, "kb_gemm_batched", KB_GEMM_F32, trans_a, trans_b, batch, m, n, k, alpha, a, lda,
                         stride_a, b, ldb, stride_b, beta, c, ldc, stride_c);
}

kb_status kb_gemm_batched_bf16(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n,
                               int64_t k, float alpha, const uint16_t *a, int64_t lda, int64_t stride_a,
                               const uint16_t *b, int64_t ldb, int64_t stride_b, float beta, uint16_t *c, int64_t ldc,
                               int64_t stride_c) {
  return gemm_batched_dt(ctx, "kb_gemm_batched_bf16", KB_GEMM_BF16, trans_a, trans_b, batch, m, n, k, alpha, a, lda,
                         stride_a, b, ldb, stride_b, beta, c, ldc, stride_c);
}

kb_status kb_gemm_batched_f16(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n,
                              int64_t k, float alpha, const uint16_t *a, int64_t lda, int64_t stride_a,
                              const uint16_t *b, int64_t ldb, int64_t stride_b, float beta, uint16_t *c, int64_t ldc,
                              int64_t stride_c) {
  return gemm_batched_dt(ctx, "kb_gemm_batched_f16", KB_GEMM_F16, trans_a, trans_b, batch, m, n, k, alpha, a, lda,
                         stride_a, b, ldb, stride_b, beta, c, ldc, stride_c);
}
