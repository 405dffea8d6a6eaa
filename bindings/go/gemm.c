/* vendored by tools/vendor_c.py from kernels/cpu/gemm.c; do not edit */
/* gemm.c - C = alpha * op(A) * op(B) + beta * C, row-major, in float32 and
 * in bf16 / f16 storage.
 *
 * Every element of C is computed the same way whatever the blocking or the
 * thread count: acc = 0; for p = 0 .. k-1: acc = acc + op(A)[i,p] * op(B)[p,j]
 * (float32, two roundings per step: no FMA, the build uses -ffp-contract=off);
 * then C[i,j] = alpha * acc (beta == 0, C not read) or
 * alpha * acc + beta * C[i,j].  The loops are i-p-j over a row segment of
 * accumulators, so the innermost loop is a contiguous axpy that compilers
 * vectorise across j without reordering any single element's sum.
 *
 * Threads split the rows of C; within a thread rows are processed four at a
 * time so that each segment of a B row, once in L1, serves four rows. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "reduced.h"

/* Columns of C per accumulator segment: 4 rows x 256 floats = 4 KiB, in L1. */
#define KB_GEMM_JB 256
/* Rows of C sharing each B segment. */
#define KB_GEMM_RB 4
/* Multiply-adds per thread below which a thread is not worth starting. */
#define KB_GEMM_MIN_WORK 65536

struct gemm_job {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
  const float *a, *b;
  int64_t lda, ldb;
  float *c;
  int64_t ldc;
  const float *bt; /* B packed as op(B) [k, n] when trans_b, or NULL */
};

static void axpy(float *restrict acc, const float *restrict b, float a, int64_t len) {
  for (int64_t j = 0; j < len; j++) acc[j] += a * b[j];
}

/* acc[j] += a * B[(j0 + j) * ldb + p]: op(B) row p read with a stride, used
 * when trans_b and no packed copy could be allocated.  Same arithmetic. */
static void axpy_strided(float *acc, const float *b, int64_t ldb, float a, int64_t len) {
  for (int64_t j = 0; j < len; j++) acc[j] += a * b[j * ldb];
}

static void gemm_rows(const struct gemm_job *g, int64_t i0, int64_t nr) {
  float acc[KB_GEMM_RB][KB_GEMM_JB];
  for (int64_t j0 = 0; j0 < g->n; j0 += KB_GEMM_JB) {
    int64_t jn = g->n - j0 < KB_GEMM_JB ? g->n - j0 : KB_GEMM_JB;
    for (int64_t r = 0; r < nr; r++) memset(acc[r], 0, (size_t)jn * sizeof(float));
    for (int64_t p = 0; p < g->k; p++) {
      for (int64_t r = 0; r < nr; r++) {
        int64_t i = i0 + r;
        float a = g->trans_a ? g->a[p * g->lda + i] : g->a[i * g->lda + p];
        if (!g->trans_b)
          axpy(acc[r], g->b + p * g->ldb + j0, a, jn);
        else if (g->bt != NULL)
          axpy(acc[r], g->bt + p * g->n + j0, a, jn);
        else
          axpy_strided(acc[r], g->b + j0 * g->ldb + p, g->ldb, a, jn);
      }
    }
    for (int64_t r = 0; r < nr; r++) {
      float *crow = g->c + (i0 + r) * g->ldc + j0;
      if (g->beta == 0.0f) {
        /* C is not read: NaN or garbage in it must not leak into the result. */
        for (int64_t j = 0; j < jn; j++) crow[j] = g->alpha * acc[r][j];
      } else {
        for (int64_t j = 0; j < jn; j++) crow[j] = g->alpha * acc[r][j] + g->beta * crow[j];
      }
    }
  }
}

static void gemm_body(void *arg, int64_t begin, int64_t end) {
  const struct gemm_job *g = (const struct gemm_job *)arg;
  for (int64_t i = begin; i < end; i += KB_GEMM_RB) gemm_rows(g, i, end - i < KB_GEMM_RB ? end - i : KB_GEMM_RB);
}

struct pack_job {
  const float *b;
  int64_t ldb, k, n;
  float *bt;
};

/* bt[p, j] = B[j, p] for the rows p in [begin, end). */
static void pack_body(void *arg, int64_t begin, int64_t end) {
  const struct pack_job *pj = (const struct pack_job *)arg;
  for (int64_t p = begin; p < end; p++)
    for (int64_t j = 0; j < pj->n; j++) pj->bt[p * pj->n + j] = pj->b[j * pj->ldb + p];
}

/* Fails with SHAPE_MISMATCH unless ld >= max(1, row_len). */
static kb_status check_ld(kb_context *ctx, const char *fn, const char *name, int64_t ld, int64_t row_len) {
  int64_t need = row_len > 1 ? row_len : 1;
  if (ld < need)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "%s must be >= %lld (the stored row length, at least 1), got %lld",
                    name, (long long)need, (long long)ld);
  return KB_STATUS_OK;
}

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
  KB_TRY(check_ld(ctx, fn, "lda", lda, a_cols));
  KB_TRY(check_ld(ctx, fn, "ldb", ldb, b_cols));
  KB_TRY(check_ld(ctx, fn, "ldc", ldc, n));
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

/* The float32 computation on validated arguments with m * n > 0. */
static void compute(const kb_context *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  struct gemm_job g = {trans_a, trans_b, m, n, k, alpha, beta, a, b, lda, ldb, c, ldc, NULL};
  float *bt = NULL;
  if (trans_b && k > 1) {
    /* A contiguous copy of op(B) makes the inner loop unit-stride.  It is an
     * optimisation only: without memory the strided loop gives the same bits. */
    bt = (float *)malloc((size_t)k * (size_t)n * sizeof(float));
    if (bt != NULL) {
      struct pack_job pj = {b, ldb, k, n, bt};
      kb__parallel_for(ctx, k, KB_GEMM_MIN_WORK / n + 1, pack_body, &pj);
      g.bt = bt;
    }
  }
  /* Rows per thread so that each thread has at least KB_GEMM_MIN_WORK
   * multiply-adds (k may be 0: then the work is just scaling C). */
  int64_t per_row = n * (k > 0 ? k : 1);
  int64_t min_rows = per_row >= KB_GEMM_MIN_WORK ? 1 : KB_GEMM_MIN_WORK / per_row + 1;
  kb__parallel_for(ctx, m, min_rows, gemm_body, &g);
  free(bt);
}

kb_status kb_gemm(kb_context *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  static const char fn[] = "kb_gemm";
  kb__begin(ctx);
  int64_t a_count, b_count, c_count;
  KB_TRY(check(ctx, fn, (int64_t)sizeof(float), trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, &a_count, &b_count,
               &c_count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->gemm(ctx->cuda_ctx, fn, trans_a ? 1 : 0, trans_b ? 1 : 0, m, n, k, alpha, a, lda,
                                           b, ldb, beta, c, ldc));
  if (c_count == 0) return KB_STATUS_OK;
  compute(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return KB_STATUS_OK;
}

/* bf16 / f16: A, B (and C when beta != 0, since C is then an input) are
 * widened into compact float32 matrices (row stride = row length, padding
 * skipped), the float32 kernel runs on them, and only the m x n elements of
 * C are narrowed back: the padding between C's rows is never written. */
static kb_status gemm_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, bool trans_a, bool trans_b, int64_t m,
                         int64_t n, int64_t k, float alpha, const uint16_t *a, int64_t lda, const uint16_t *b,
                         int64_t ldb, float beta, uint16_t *c, int64_t ldc) {
  kb__begin(ctx);
  int64_t a_count, b_count, c_count;
  KB_TRY(check(ctx, fn, KB_HALF_SIZE, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, &a_count, &b_count, &c_count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->gemm_dt(ctx->cuda_ctx, fn, dt, trans_a ? 1 : 0, trans_b ? 1 : 0, m, n, k, alpha,
                                              a, lda, b, ldb, beta, c, ldc));
  if (c_count == 0) return KB_STATUS_OK;
  int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  /* Compact sizes never exceed the validated strided extents. */
  const int64_t counts[3] = {a_rows * a_cols, b_rows * b_cols, m * n};
  struct kb_dt_scratch s;
  KB_TRY(kb_dt_alloc(ctx, fn, 3, counts, &s));
  int64_t slda = a_cols > 1 ? a_cols : 1, sldb = b_cols > 1 ? b_cols : 1;
  kb_dt_widen_rows(ctx, dt, a_rows, a_cols, a, lda, s.t[0], slda);
  kb_dt_widen_rows(ctx, dt, b_rows, b_cols, b, ldb, s.t[1], sldb);
  if (beta != 0.0f) kb_dt_widen_rows(ctx, dt, m, n, c, ldc, s.t[2], n);
  compute(ctx, trans_a, trans_b, m, n, k, alpha, s.t[0], slda, s.t[1], sldb, beta, s.t[2], n);
  kb_dt_narrow_rows(ctx, dt, m, n, s.t[2], n, c, ldc);
  kb_dt_free(&s);
  return KB_STATUS_OK;
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
