/* softmax.c - softmax and log-softmax over the rows of a [rows, cols] matrix,
 * in float32 and in bf16 / f16 storage.
 *
 * Per row (vec_body.h): one read to find the maximum m (NaN ignored) and
 * s = sum e^(x - m), both online per block of 1024 elements, the
 * exponentials accumulated unrounded in 16 double lanes; then one read and
 * one write: y = e^(x - m) / s as one rounding of a product carried to about
 * 2^-28, or (x - m) - log s with x - m exact.  Both within about 0.6 ulp
 * (docs/kernels.md).  No scratch memory, so y may be x. */
#include "dispatch.h"
#include "internal.h"
#include "reduced.h"
#include "rowwise.h"

struct softmax_job {
  const struct kb_vec_ops *ops;
  int dt, want_log;
  int64_t cols;
  const char *x;
  char *y;
};

static void softmax_body(void *arg, int64_t begin, int64_t end) {
  const struct softmax_job *j = (const struct softmax_job *)arg;
  int64_t row = j->cols * kb_vec_size(j->dt);
  j->ops->softmax(j->dt, j->want_log, end - begin, j->cols, j->x + begin * row, j->y + begin * row);
}

/* Needs rows * cols > 0. */
static void compute(const kb_context *ctx, int dt, int64_t rows, int64_t cols, const void *x, void *y, bool want_log) {
  struct softmax_job job = {&kb__cpu_ops()->vec, dt, want_log ? 1 : 0, cols, (const char *)x, (char *)y};
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
  KB_BEGIN(ctx, fn);
  int64_t count;
  KB_TRY(check(ctx, fn, (int64_t)sizeof(float), rows, cols, x, y, &count));
  if (kb__on_cuda(ctx)) {
    const struct kbcuda_table *t = ctx->cuda;
    kbcuda_status s = want_log ? t->log_softmax(ctx->cuda_ctx, fn, rows, cols, x, y)
                               : t->softmax(ctx->cuda_ctx, fn, rows, cols, x, y);
    return kb__cuda_finish(ctx, fn, s);
  }
  if (count == 0) return KB_STATUS_OK;
  compute(ctx, KB_VEC_F32, rows, cols, x, y, want_log);
  return KB_STATUS_OK;
}

/* bf16 / f16: the float32 kernel on the widened row, rounded once into y. */
static kb_status run_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols, const uint16_t *x,
                        uint16_t *y, bool want_log) {
  KB_BEGIN(ctx, fn);
  int64_t count;
  KB_TRY(check(ctx, fn, KB_HALF_SIZE, rows, cols, x, y, &count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn, ctx->cuda->softmax_dt(ctx->cuda_ctx, fn, dt, want_log ? 1 : 0, rows, cols, x, y));
  if (count == 0) return KB_STATUS_OK;
  compute(ctx, kb_vec_dt_of(dt), rows, cols, x, y, want_log);
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
