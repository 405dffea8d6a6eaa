/* elementwise.c - simple arithmetic (add, mul, scale, add_bias), in float32
 * and in bf16 / f16 storage.  The activations are in activation.c.
 *
 * Plain float32 arithmetic, one rounding per element, in the vector layer
 * (vec_kernels.h); 16-bit inputs are widened and results narrowed in
 * registers.  Each element depends only on its own inputs, so splitting
 * over threads cannot change any result. */
#include "dispatch.h"
#include "internal.h"
#include "reduced.h"

/* Elements per thread below which starting a thread costs more than it saves. */
#define KB_EW_MIN_CHUNK 16384

struct ew_job {
  const struct kb_vec_ops *ops;
  int op, dt;
  const char *a, *b;
  char *y;
  float alpha;
  int64_t cols; /* add_bias */
};

/* ---- add, mul ---- */

static void binary_body(void *arg, int64_t begin, int64_t end) {
  const struct ew_job *j = (const struct ew_job *)arg;
  int64_t es = kb_vec_size(j->dt);
  j->ops->binary(j->op, j->dt, end - begin, j->a + begin * es, j->b + begin * es, j->y + begin * es);
}

static void binary_compute(const kb_context *ctx, int op, int dt, int64_t count, const void *a, const void *b,
                           void *y) {
  struct ew_job job = {&kb__cpu_ops()->vec, op == KBCUDA_OP_MUL ? KB_VEC_MUL : KB_VEC_ADD, dt, (const char *)a,
                       (const char *)b, (char *)y, 0.0f, 0};
  kb__parallel_for(ctx, count, KB_EW_MIN_CHUNK, binary_body, &job);
}

/* Validation of add and mul in every dtype (elem: element size in bytes),
 * ending with the memory-kind check. */
static kb_status binary_check(kb_context *ctx, const char *fn, int64_t elem, int64_t n, const void *a, const void *b,
                              const void *y, int64_t *count) {
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  KB_TRY(kb__count(ctx, fn, "a", elem, 1, &n, count));
  KB_TRY(kb__check_ptr(ctx, fn, "a", a, *count));
  KB_TRY(kb__check_ptr(ctx, fn, "b", b, *count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, *count));
  int64_t bytes = *count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "a", a, bytes, true));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "b", b, bytes, true));
  const struct kb_mem_ref refs[] = {{"a", a, bytes}, {"b", b, bytes}, {"y", y, bytes}};
  return kb__check_memory(ctx, fn, 3, refs);
}

static kb_status binary(kb_context *ctx, const char *fn, int op, int64_t n, const float *a, const float *b, float *y) {
  KB_BEGIN(ctx, fn);
  int64_t count;
  KB_TRY(binary_check(ctx, fn, (int64_t)sizeof(float), n, a, b, y, &count));
  if (kb__on_cuda(ctx)) {
    const struct kbcuda_table *t = ctx->cuda;
    kbcuda_status s =
        op == KBCUDA_OP_MUL ? t->mul(ctx->cuda_ctx, fn, n, a, b, y) : t->add(ctx->cuda_ctx, fn, n, a, b, y);
    return kb__cuda_finish(ctx, fn, s);
  }
  binary_compute(ctx, op, KB_VEC_F32, count, a, b, y);
  return KB_STATUS_OK;
}

/* y may be a and/or b: an element is read before it is written. */
static kb_status binary_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, int op, int64_t n, const uint16_t *a,
                           const uint16_t *b, uint16_t *y) {
  KB_BEGIN(ctx, fn);
  int64_t count;
  KB_TRY(binary_check(ctx, fn, KB_HALF_SIZE, n, a, b, y, &count));
  if (kb__on_cuda(ctx)) return kb__cuda_finish(ctx, fn, ctx->cuda->binary_dt(ctx->cuda_ctx, fn, op, dt, n, a, b, y));
  binary_compute(ctx, op, kb_vec_dt_of(dt), count, a, b, y);
  return KB_STATUS_OK;
}

kb_status kb_add(kb_context *ctx, int64_t n, const float *a, const float *b, float *y) {
  return binary(ctx, "kb_add", KBCUDA_OP_ADD, n, a, b, y);
}

kb_status kb_mul(kb_context *ctx, int64_t n, const float *a, const float *b, float *y) {
  return binary(ctx, "kb_mul", KBCUDA_OP_MUL, n, a, b, y);
}

kb_status kb_add_bf16(kb_context *ctx, int64_t n, const uint16_t *a, const uint16_t *b, uint16_t *y) {
  return binary_dt(ctx, "kb_add_bf16", KBCUDA_BF16, KBCUDA_OP_ADD, n, a, b, y);
}

kb_status kb_add_f16(kb_context *ctx, int64_t n, const uint16_t *a, const uint16_t *b, uint16_t *y) {
  return binary_dt(ctx, "kb_add_f16", KBCUDA_F16, KBCUDA_OP_ADD, n, a, b, y);
}

kb_status kb_mul_bf16(kb_context *ctx, int64_t n, const uint16_t *a, const uint16_t *b, uint16_t *y) {
  return binary_dt(ctx, "kb_mul_bf16", KBCUDA_BF16, KBCUDA_OP_MUL, n, a, b, y);
}

kb_status kb_mul_f16(kb_context *ctx, int64_t n, const uint16_t *a, const uint16_t *b, uint16_t *y) {
  return binary_dt(ctx, "kb_mul_f16", KBCUDA_F16, KBCUDA_OP_MUL, n, a, b, y);
}

/* ---- scale ---- */

static void scale_body(void *arg, int64_t begin, int64_t end) {
  const struct ew_job *j = (const struct ew_job *)arg;
  int64_t es = kb_vec_size(j->dt);
  j->ops->scale(j->dt, end - begin, j->alpha, j->a + begin * es, j->y + begin * es);
}

static void scale_compute(const kb_context *ctx, int dt, int64_t count, float alpha, const void *x, void *y) {
  struct ew_job job = {&kb__cpu_ops()->vec, 0, dt, (const char *)x, NULL, (char *)y, alpha, 0};
  kb__parallel_for(ctx, count, KB_EW_MIN_CHUNK, scale_body, &job);
}

static kb_status scale_check(kb_context *ctx, const char *fn, int64_t elem, int64_t n, float alpha, const void *x,
                             const void *y, int64_t *count) {
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  KB_TRY(kb__count(ctx, fn, "x", elem, 1, &n, count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, *count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, *count));
  KB_TRY(kb__check_finite(ctx, fn, "alpha", (double)alpha, false));
  int64_t bytes = *count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  const struct kb_mem_ref refs[] = {{"x", x, bytes}, {"y", y, bytes}};
  return kb__check_memory(ctx, fn, 2, refs);
}

kb_status kb_scale(kb_context *ctx, int64_t n, float alpha, const float *x, float *y) {
  static const char fn[] = "kb_scale";
  KB_BEGIN(ctx, fn);
  int64_t count;
  KB_TRY(scale_check(ctx, fn, (int64_t)sizeof(float), n, alpha, x, y, &count));
  if (kb__on_cuda(ctx)) return kb__cuda_finish(ctx, fn, ctx->cuda->scale(ctx->cuda_ctx, fn, n, alpha, x, y));
  scale_compute(ctx, KB_VEC_F32, count, alpha, x, y);
  return KB_STATUS_OK;
}

static kb_status scale_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, int64_t n, float alpha, const uint16_t *x,
                          uint16_t *y) {
  KB_BEGIN(ctx, fn);
  int64_t count;
  KB_TRY(scale_check(ctx, fn, KB_HALF_SIZE, n, alpha, x, y, &count));
  if (kb__on_cuda(ctx)) return kb__cuda_finish(ctx, fn, ctx->cuda->scale_dt(ctx->cuda_ctx, fn, dt, n, alpha, x, y));
  scale_compute(ctx, kb_vec_dt_of(dt), count, alpha, x, y);
  return KB_STATUS_OK;
}

kb_status kb_scale_bf16(kb_context *ctx, int64_t n, float alpha, const uint16_t *x, uint16_t *y) {
  return scale_dt(ctx, "kb_scale_bf16", KBCUDA_BF16, n, alpha, x, y);
}

kb_status kb_scale_f16(kb_context *ctx, int64_t n, float alpha, const uint16_t *x, uint16_t *y) {
  return scale_dt(ctx, "kb_scale_f16", KBCUDA_F16, n, alpha, x, y);
}

/* ---- add_bias ---- */

static void bias_body(void *arg, int64_t begin, int64_t end) {
  const struct ew_job *j = (const struct ew_job *)arg;
  int64_t row = j->cols * kb_vec_size(j->dt);
  j->ops->add_bias(j->dt, end - begin, j->cols, j->a + begin * row, j->b, j->y + begin * row);
}

/* Needs rows * cols > 0. */
static void bias_compute(const kb_context *ctx, int dt, int64_t rows, int64_t cols, const void *x, const void *bias,
                         void *y) {
  struct ew_job job = {&kb__cpu_ops()->vec, 0, dt, (const char *)x, (const char *)bias, (char *)y, 0.0f, cols};
  int64_t min_rows = KB_EW_MIN_CHUNK / cols + 1;
  kb__parallel_for(ctx, rows, min_rows, bias_body, &job);
}

static kb_status bias_check(kb_context *ctx, const char *fn, int64_t elem, int64_t rows, int64_t cols, const void *x,
                            const void *bias, const void *y, int64_t *count, int64_t *bias_count) {
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  int64_t dims[2] = {rows, cols};
  KB_TRY(kb__count(ctx, fn, "x", elem, 2, dims, count));
  KB_TRY(kb__count(ctx, fn, "bias", elem, 1, &cols, bias_count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, *count));
  KB_TRY(kb__check_ptr(ctx, fn, "bias", bias, *bias_count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, *count));
  int64_t bytes = *count * elem, bias_bytes = *bias_count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "bias", bias, bias_bytes, false));
  const struct kb_mem_ref refs[] = {{"x", x, bytes}, {"bias", bias, bias_bytes}, {"y", y, bytes}};
  return kb__check_memory(ctx, fn, 3, refs);
}

kb_status kb_add_bias(kb_context *ctx, int64_t rows, int64_t cols, const float *x, const float *bias, float *y) {
  static const char fn[] = "kb_add_bias";
  KB_BEGIN(ctx, fn);
  int64_t count, bias_count;
  KB_TRY(bias_check(ctx, fn, (int64_t)sizeof(float), rows, cols, x, bias, y, &count, &bias_count));
  if (kb__on_cuda(ctx)) return kb__cuda_finish(ctx, fn, ctx->cuda->add_bias(ctx->cuda_ctx, fn, rows, cols, x, bias, y));
  if (count == 0) return KB_STATUS_OK;
  bias_compute(ctx, KB_VEC_F32, rows, cols, x, bias, y);
  return KB_STATUS_OK;
}

static kb_status add_bias_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols,
                             const uint16_t *x, const uint16_t *bias, uint16_t *y) {
  KB_BEGIN(ctx, fn);
  int64_t count, bias_count;
  KB_TRY(bias_check(ctx, fn, KB_HALF_SIZE, rows, cols, x, bias, y, &count, &bias_count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn, ctx->cuda->add_bias_dt(ctx->cuda_ctx, fn, dt, rows, cols, x, bias, y));
  if (count == 0) return KB_STATUS_OK;
  bias_compute(ctx, kb_vec_dt_of(dt), rows, cols, x, bias, y);
  return KB_STATUS_OK;
}

kb_status kb_add_bias_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, const uint16_t *bias,
                           uint16_t *y) {
  return add_bias_dt(ctx, "kb_add_bias_bf16", KBCUDA_BF16, rows, cols, x, bias, y);
}

kb_status kb_add_bias_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, const uint16_t *bias,
                          uint16_t *y) {
  return add_bias_dt(ctx, "kb_add_bias_f16", KBCUDA_F16, rows, cols, x, bias, y);
}
