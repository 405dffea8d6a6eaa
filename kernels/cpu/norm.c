/* norm.c - RMSNorm and LayerNorm over the rows of a [rows, cols] matrix, in
 * float32 and in bf16 / f16 storage.
 *
 * Per row (vec_body.h), statistics in 16 double lanes: RMSNorm's sum of
 * squares; LayerNorm's mean and variance per block of 1024 elements (the
 * block's mean, then squares about it: no E[x^2] - E[x]^2 cancellation),
 * blocks merged in order (Chan et al.).  Then each output in float32
 * arithmetic, 1 / sqrt held as a float pair (docs/kernels.md gives the
 * steps and bounds); rows whose statistics fall outside the float range
 * take the double-precision formula, rounded once.  Statistics are
 * gathered before the row is written, so y may be x. */
#include "dispatch.h"
#include "internal.h"
#include "reduced.h"
#include "rowwise.h"

struct norm_job {
  const struct kb_vec_ops *ops;
  int dt;
  bool layer;
  int64_t cols;
  const char *x, *weight, *bias;
  float eps;
  char *y;
};

static void norm_body(void *arg, int64_t begin, int64_t end) {
  const struct norm_job *j = (const struct norm_job *)arg;
  int64_t row = j->cols * kb_vec_size(j->dt);
  if (j->layer)
    j->ops->layernorm(j->dt, end - begin, j->cols, j->x + begin * row, j->weight, j->bias, j->eps, j->y + begin * row);
  else
    j->ops->rmsnorm(j->dt, end - begin, j->cols, j->x + begin * row, j->weight, j->eps, j->y + begin * row);
}

/* Needs rows * cols > 0. */
static void compute(const kb_context *ctx, int dt, bool layer, int64_t rows, int64_t cols, const void *x,
                    const void *weight, const void *bias, float eps, void *y) {
  struct norm_job job = {&kb__cpu_ops()->vec, dt, layer, cols, (const char *)x, (const char *)weight,
                         (const char *)bias, eps, (char *)y};
  kb__parallel_for(ctx, rows, kb_cpu_min_rows(cols), norm_body, &job);
}

/* Validation shared by both norms in every dtype (elem: element size in
 * bytes), ending with the memory-kind check; nullable says whether NULL
 * weight (and bias) mean "no affine transform" or are errors. */
static kb_status check(kb_context *ctx, const char *fn, int64_t elem, int64_t rows, int64_t cols, const void *x,
                       const void *weight, const void *bias, bool nullable, float eps, const void *y, int64_t *count,
                       int64_t *wcount) {
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  KB_TRY(kb__check_inner(ctx, fn, "cols", cols, "rows", rows));
  int64_t dims[2] = {rows, cols};
  KB_TRY(kb__count(ctx, fn, "x", elem, 2, dims, count));
  KB_TRY(kb__count(ctx, fn, "weight", elem, 1, &cols, wcount));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, *count));
  if (!nullable) KB_TRY(kb__check_ptr(ctx, fn, "weight", weight, *wcount));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, *count));
  KB_TRY(kb__check_finite(ctx, fn, "eps", (double)eps, true));
  int64_t bytes = *count * elem, wbytes = *wcount * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "weight", weight, wbytes, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "bias", bias, wbytes, false));
  /* An absent weight or bias (NULL) is no memory to check. */
  const struct kb_mem_ref refs[] = {{"x", x, bytes},
                                    {"weight", weight, weight != NULL ? wbytes : 0},
                                    {"bias", bias, bias != NULL ? wbytes : 0},
                                    {"y", y, bytes}};
  return kb__check_memory(ctx, fn, 4, refs);
}

kb_status kb_rmsnorm(kb_context *ctx, int64_t rows, int64_t cols, const float *x, const float *weight, float eps,
                     float *y) {
  static const char fn[] = "kb_rmsnorm";
  KB_BEGIN(ctx, fn);
  int64_t count, wcount;
  KB_TRY(check(ctx, fn, (int64_t)sizeof(float), rows, cols, x, weight, NULL, false, eps, y, &count, &wcount));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn, ctx->cuda->rmsnorm(ctx->cuda_ctx, fn, rows, cols, x, weight, eps, y));
  if (count == 0) return KB_STATUS_OK;
  compute(ctx, KB_VEC_F32, false, rows, cols, x, weight, NULL, eps, y);
  return KB_STATUS_OK;
}

kb_status kb_layernorm(kb_context *ctx, int64_t rows, int64_t cols, const float *x, const float *weight,
                       const float *bias, float eps, float *y) {
  static const char fn[] = "kb_layernorm";
  KB_BEGIN(ctx, fn);
  int64_t count, wcount;
  KB_TRY(check(ctx, fn, (int64_t)sizeof(float), rows, cols, x, weight, bias, true, eps, y, &count, &wcount));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn, ctx->cuda->layernorm(ctx->cuda_ctx, fn, rows, cols, x, weight, bias, eps, y));
  if (count == 0) return KB_STATUS_OK;
  compute(ctx, KB_VEC_F32, true, rows, cols, x, weight, bias, eps, y);
  return KB_STATUS_OK;
}

/* bf16 / f16 (both norms; rmsnorm passes bias = NULL): the float32 kernel
 * on the widened row, weight and bias, rounded once into y (which may be x). */
static kb_status norm_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, bool layer, int64_t rows, int64_t cols,
                         const uint16_t *x, const uint16_t *weight, const uint16_t *bias, float eps, uint16_t *y) {
  KB_BEGIN(ctx, fn);
  int64_t count, wcount;
  KB_TRY(check(ctx, fn, KB_HALF_SIZE, rows, cols, x, weight, bias, layer, eps, y, &count, &wcount));
  if (kb__on_cuda(ctx)) {
    const struct kbcuda_table *t = ctx->cuda;
    kbcuda_status s = layer ? t->layernorm_dt(ctx->cuda_ctx, fn, dt, rows, cols, x, weight, bias, eps, y)
                            : t->rmsnorm_dt(ctx->cuda_ctx, fn, dt, rows, cols, x, weight, eps, y);
    return kb__cuda_finish(ctx, fn, s);
  }
  if (count == 0) return KB_STATUS_OK;
  compute(ctx, kb_vec_dt_of(dt), layer, rows, cols, x, weight, bias, eps, y);
  return KB_STATUS_OK;
}

kb_status kb_rmsnorm_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, const uint16_t *weight,
                          float eps, uint16_t *y) {
  return norm_dt(ctx, "kb_rmsnorm_bf16", KBCUDA_BF16, false, rows, cols, x, weight, NULL, eps, y);
}

kb_status kb_rmsnorm_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, const uint16_t *weight,
                         float eps, uint16_t *y) {
  return norm_dt(ctx, "kb_rmsnorm_f16", KBCUDA_F16, false, rows, cols, x, weight, NULL, eps, y);
}

kb_status kb_layernorm_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, const uint16_t *weight,
                            const uint16_t *bias, float eps, uint16_t *y) {
  return norm_dt(ctx, "kb_layernorm_bf16", KBCUDA_BF16, true, rows, cols, x, weight, bias, eps, y);
}

kb_status kb_layernorm_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, const uint16_t *weight,
                           const uint16_t *bias, float eps, uint16_t *y) {
  return norm_dt(ctx, "kb_layernorm_f16", KBCUDA_F16, true, rows, cols, x, weight, bias, eps, y);
}
