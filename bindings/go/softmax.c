/* vendored by tools/vendor_c.py from kernels/cpu/softmax.c; do not edit */
/* softmax.c - softmax and log-softmax over the rows of a [rows, cols] matrix,
 * in float32 and in bf16 / f16 storage.
 *
 * Per row: m = max (NaN ignored), s = sum exp(x - m) in double, then each
 * output is computed in double from its own input and rounded once.  exp is
 * evaluated twice per element instead of being cached: that needs no scratch
 * memory (so no allocation can fail) and keeps in-place use trivially safe,
 * because y[c] is written only after the row's sum no longer needs x. */
#include <math.h>

#include "internal.h"
#include "reduced.h"
#include "rowwise.h"

struct softmax_job {
  int64_t cols;
  const float *x;
  float *y;
  bool want_log;
};

static void softmax_body(void *arg, int64_t begin, int64_t end) {
  const struct softmax_job *job = (const struct softmax_job *)arg;
  int64_t cols = job->cols;
  for (int64_t r = begin; r < end; r++) {
    const float *x = job->x + r * cols;
    float *y = job->y + r * cols;
    double m = kb_cpu_row_max(x, cols);
    double s = kb_cpu_sum_exp(x, cols, m);
    if (job->want_log) {
      double ls = log(s);
      for (int64_t c = 0; c < cols; c++) y[c] = (float)(((double)x[c] - m) - ls);
    } else {
      for (int64_t c = 0; c < cols; c++) y[c] = (float)(exp((double)x[c] - m) / s);
    }
  }
}

/* Needs rows * cols > 0. */
static void compute(const kb_context *ctx, int64_t rows, int64_t cols, const float *x, float *y, bool want_log) {
  struct softmax_job job = {cols, x, y, want_log};
  kb__parallel_for(ctx, rows, kb_cpu_min_rows(cols), softmax_body, &job);
}

/* Validation of every entry point (elem: element size in bytes), ending with
 * the memory-kind check. */
static kb_status check(kb_context *ctx, const char *fn, int64_t elem, int64_t rows, int64_t cols, const void *x,
                       const void *y, int64_t *count) {
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  KB_TRY(kb__check_inner(ctx, fn, "cols", cols, "rows", rows));
  int64_t dims[2] = {rows, cols};
  KB_TRY(kb__count(ctx, fn, "x", elem, 2, dims, count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, *count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, *count));
  int64_t bytes = *count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  const struct kb_mem_ref refs[] = {{"x", x, bytes}, {"y", y, bytes}};
  return kb__check_memory(ctx, fn, 2, refs);
}

static kb_status run(kb_context *ctx, const char *fn, int64_t rows, int64_t cols, const float *x, float *y,
                     bool want_log) {
  kb__begin(ctx);
  int64_t count;
  KB_TRY(check(ctx, fn, (int64_t)sizeof(float), rows, cols, x, y, &count));
  if (kb__on_cuda(ctx)) {
    const struct kbcuda_table *t = ctx->cuda;
    kbcuda_status s = want_log ? t->log_softmax(ctx->cuda_ctx, fn, rows, cols, x, y)
                               : t->softmax(ctx->cuda_ctx, fn, rows, cols, x, y);
    return kb__cuda_finish(ctx, fn, s);
  }
  if (count == 0) return KB_STATUS_OK;
  compute(ctx, rows, cols, x, y, want_log);
  return KB_STATUS_OK;
}

/* bf16 / f16: the float32 kernel in place on a widened copy, then narrowed. */
static kb_status run_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols, const uint16_t *x,
                        uint16_t *y, bool want_log) {
  kb__begin(ctx);
  int64_t count;
  KB_TRY(check(ctx, fn, KB_HALF_SIZE, rows, cols, x, y, &count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn, ctx->cuda->softmax_dt(ctx->cuda_ctx, fn, dt, want_log ? 1 : 0, rows, cols, x, y));
  if (count == 0) return KB_STATUS_OK;
  struct kb_dt_scratch s;
  KB_TRY(kb_dt_alloc(ctx, fn, 1, &count, &s));
  kb_dt_widen(ctx, dt, x, s.t[0], count);
  compute(ctx, rows, cols, s.t[0], s.t[0], want_log);
  kb_dt_narrow(ctx, dt, s.t[0], y, count);
  kb_dt_free(&s);
  return KB_STATUS_OK;
}

kb_status kb_softmax(kb_context *ctx, int64_t rows, int64_t cols, const float *x, float *y) {
  return run(ctx, "kb_softmax", rows, cols, x, y, false);
}

kb_status kb_log_softmax(kb_context *ctx, int64_t rows, int64_t cols, const float *x, float *y) {
  return run(ctx, "kb_log_softmax", rows, cols, x, y, true);
}

kb_status kb_softmax_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, uint16_t *y) {
  return run_dt(ctx, "kb_softmax_bf16", KBCUDA_BF16, rows, cols, x, y, false);
}

kb_status kb_softmax_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, uint16_t *y) {
  return run_dt(ctx, "kb_softmax_f16", KBCUDA_F16, rows, cols, x, y, false);
}

kb_status kb_log_softmax_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, uint16_t *y) {
  return run_dt(ctx, "kb_log_softmax_bf16", KBCUDA_BF16, rows, cols, x, y, true);
}

kb_status kb_log_softmax_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, uint16_t *y) {
  return run_dt(ctx, "kb_log_softmax_f16", KBCUDA_F16, rows, cols, x, y, true);
}
