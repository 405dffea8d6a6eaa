/* add_rmsnorm.c - the fused residual add + RMSNorm of a pre-norm decoder:
 * kb_add_rmsnorm, kb_add_rmsnorm_bf16, kb_add_rmsnorm_f16.
 *
 *   residual[r, :] += x[r, :]      (written back)
 *   y[r, :] = rmsnorm(residual[r, :]) * weight
 *
 * Row by row, the vector layer's `add_rmsnorm` entry adds as kb_add's entry
 * (float32 sum, rounded to the storage type), writes the row of residual
 * and takes the norm's sum of squares of what it stored in the same pass,
 * then writes y with kb_rmsnorm's output pass, reading the row back from
 * cache.  So every bit is the two-call sequence kb_add + kb_rmsnorm (for
 * 16-bit storage the rounded sum is what the norm reads, as the two calls
 * would), while memory sees x and residual read once and residual and y
 * written once whenever a row fits in cache (a 4096-wide float32 row is
 * 16 KiB).  Rows are independent, so splitting
 * them over threads cannot change any bit; y may be x because a row of x is
 * consumed before the same row of y is written. */
#include "../dispatch.h"
#include "../reduced.h"
#include "../rowwise.h"
#include "internal.h"

struct add_norm_job {
  const struct kb_vec_ops *ops;
  int dt;
  int64_t cols;
  const char *x, *weight;
  char *residual, *y;
  float eps;
};

static void add_norm_body(void *arg, int64_t begin, int64_t end) {
  const struct add_norm_job *j = (const struct add_norm_job *)arg;
  int64_t row = j->cols * kb_vec_size(j->dt);
  j->ops->add_rmsnorm(j->dt, end - begin, j->cols, j->residual + begin * row, j->x + begin * row, j->weight, j->eps,
                      j->y + begin * row);
}

static kb_status add_rmsnorm(kb_context *ctx, const char *fn, int dt, int64_t rows, int64_t cols, const void *x,
                             void *residual, const void *weight, float eps, void *y) {
  KB_BEGIN(ctx, fn);
  int64_t elem = kb_vec_size(dt);
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  KB_TRY(kb__check_inner(ctx, fn, "cols", cols, "rows", rows));
  int64_t dims[2] = {rows, cols}, count, wcount;
  KB_TRY(kb__count(ctx, fn, "x", elem, 2, dims, &count));
  KB_TRY(kb__count(ctx, fn, "weight", elem, 1, &cols, &wcount));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, count));
  KB_TRY(kb__check_ptr(ctx, fn, "residual", residual, count));
  KB_TRY(kb__check_ptr(ctx, fn, "weight", weight, wcount));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, count));
  KB_TRY(kb__check_finite(ctx, fn, "eps", (double)eps, true));
  int64_t bytes = count * elem, wbytes = wcount * elem;
  /* residual is written too: it may overlap nothing; y may be x exactly. */
  KB_TRY(kb__check_overlap(ctx, fn, "residual", residual, bytes, "x", x, bytes, false));
  KB_TRY(kb__check_overlap(ctx, fn, "residual", residual, bytes, "weight", weight, wbytes, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "residual", residual, bytes, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "weight", weight, wbytes, false));
  const struct kb_mem_ref refs[] = {
      {"x", x, bytes}, {"residual", residual, bytes}, {"weight", weight, wbytes}, {"y", y, bytes}};
  KB_TRY(kb__check_memory(ctx, fn, 4, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  if (count == 0) return KB_STATUS_OK;
  struct add_norm_job job = {&kb__cpu_ops()->vec, dt, cols, (const char *)x, (const char *)weight,
                             (char *)residual, (char *)y, eps};
  kb__parallel_for(ctx, rows, kb_cpu_min_rows(cols), add_norm_body, &job);
  return KB_STATUS_OK;
}

kb_status kb_add_rmsnorm(kb_context *ctx, int64_t rows, int64_t cols, const float *x, float *residual,
                         const float *weight, float eps, float *y) {
  return add_rmsnorm(ctx, "kb_add_rmsnorm", KB_VEC_F32, rows, cols, x, residual, weight, eps, y);
}

kb_status kb_add_rmsnorm_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, uint16_t *residual,
                              const uint16_t *weight, float eps, uint16_t *y) {
  return add_rmsnorm(ctx, "kb_add_rmsnorm_bf16", KB_VEC_BF16, rows, cols, x, residual, weight, eps, y);
}

kb_status kb_add_rmsnorm_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, uint16_t *residual,
                             const uint16_t *weight, float eps, uint16_t *y) {
  return add_rmsnorm(ctx, "kb_add_rmsnorm_f16", KB_VEC_F16, rows, cols, x, residual, weight, eps, y);
}
