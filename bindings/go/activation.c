/* vendored by tools/vendor_c.py from kernels/cpu/activation.c; do not edit */
/* activation.c - the one-input activations silu, gelu and gelu_tanh, in
 * float32 and in bf16 / f16 storage.
 *
 * Activations are evaluated in double and rounded once to float, so every
 * result is the correctly rounded value of the double formula up to the
 * accuracy of libm (far below float's half ulp).  Each element depends only
 * on its own inputs, so splitting over threads cannot change any result. */
#include <math.h>

#include "internal.h"
#include "reduced.h"

/* Elements per thread below which starting a thread costs more than it saves. */
#define KB_EW_MIN_CHUNK 16384

typedef float (*kb_unary_fn)(float x);

/* x / (1 + exp(-x)) has no cancellation for either sign: for large positive
 * x the denominator tends to 1, for large negative x it grows and the
 * quotient tends to -0.  x = -inf gives -inf / inf = NaN, as PyTorch. */
static float silu1(float xf) {
  double x = (double)xf;
  return (float)(x / (1.0 + exp(-x)));
}

/* 0.5 * x * (1 + erf(x / sqrt 2)) == 0.5 * x * erfc(-x / sqrt 2).  The erfc
 * form keeps full relative accuracy for negative x, where 1 + erf(..) would
 * cancel (e.g. x = -5 gives about -1.4e-6, which 1 + erf loses). */
static float gelu1(float xf) {
  double x = (double)xf;
  return (float)(0.5 * x * erfc(-x * 0.70710678118654752440));
}

/* 0.5 * x * (1 + tanh(u)) == x / (1 + exp(-2u)) (since 1 + tanh(u) =
 * 2 / (1 + exp(-2u))), which avoids the cancellation of 1 + tanh(u) for
 * negative u.  exp(-2u) overflowing to inf gives the correct limit -0. */
static float gelu_tanh1(float xf) {
  double x = (double)xf;
  double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x); /* sqrt(2/pi) */
  return (float)(x / (1.0 + exp(-2.0 * u)));
}

/* Indexed by the CUDA table's op numbers, so one `op` selects both backends. */
static const kb_unary_fn kUnaryFns[] = {
    [KBCUDA_OP_SILU] = silu1,
    [KBCUDA_OP_GELU] = gelu1,
    [KBCUDA_OP_GELU_TANH] = gelu_tanh1,
};

struct unary_job {
  kb_unary_fn f;
  const float *x;
  float *y;
};

static void unary_body(void *arg, int64_t begin, int64_t end) {
  const struct unary_job *job = (const struct unary_job *)arg;
  for (int64_t i = begin; i < end; i++) job->y[i] = job->f(job->x[i]);
}

static void unary_compute(const kb_context *ctx, int op, int64_t count, const float *x, float *y) {
  struct unary_job job = {kUnaryFns[op], x, y};
  kb__parallel_for(ctx, count, KB_EW_MIN_CHUNK, unary_body, &job);
}

/* Validation of every activation entry point; elem is the element size (4
 * for float32, 2 for bf16 / f16).  Ends with the memory-kind check. */
static kb_status unary_check(kb_context *ctx, const char *fn, int64_t elem, int64_t n, const void *x, const void *y,
                             int64_t *count) {
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  KB_TRY(kb__count(ctx, fn, "x", elem, 1, &n, count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, *count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, *count));
  int64_t bytes = *count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  const struct kb_mem_ref refs[] = {{"x", x, bytes}, {"y", y, bytes}};
  return kb__check_memory(ctx, fn, 2, refs);
}

static kbcuda_status cuda_unary(kb_context *ctx, const char *fn, int op, int64_t n, const float *x, float *y) {
  const struct kbcuda_table *t = ctx->cuda;
  switch (op) {
    case KBCUDA_OP_GELU:
      return t->gelu(ctx->cuda_ctx, fn, n, x, y);
    case KBCUDA_OP_GELU_TANH:
      return t->gelu_tanh(ctx->cuda_ctx, fn, n, x, y);
    default:
      return t->silu(ctx->cuda_ctx, fn, n, x, y);
  }
}

static kb_status unary(kb_context *ctx, const char *fn, int op, int64_t n, const float *x, float *y) {
  kb__begin(ctx);
  int64_t count;
  KB_TRY(unary_check(ctx, fn, (int64_t)sizeof(float), n, x, y, &count));
  if (kb__on_cuda(ctx)) return kb__cuda_finish(ctx, fn, cuda_unary(ctx, fn, op, n, x, y));
  unary_compute(ctx, op, count, x, y);
  return KB_STATUS_OK;
}

/* bf16 / f16: widen x into scratch, apply the float32 activation in place
 * there, narrow into y (which may be x: x is fully read first). */
static kb_status unary_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, int op, int64_t n, const uint16_t *x,
                          uint16_t *y) {
  kb__begin(ctx);
  int64_t count;
  KB_TRY(unary_check(ctx, fn, KB_HALF_SIZE, n, x, y, &count));
  if (kb__on_cuda(ctx)) return kb__cuda_finish(ctx, fn, ctx->cuda->unary_dt(ctx->cuda_ctx, fn, op, dt, n, x, y));
  if (count == 0) return KB_STATUS_OK;
  struct kb_dt_scratch s;
  KB_TRY(kb_dt_alloc(ctx, fn, 1, &count, &s));
  kb_dt_widen(ctx, dt, x, s.t[0], count);
  unary_compute(ctx, op, count, s.t[0], s.t[0]);
  kb_dt_narrow(ctx, dt, s.t[0], y, count);
  kb_dt_free(&s);
  return KB_STATUS_OK;
}

kb_status kb_silu(kb_context *ctx, int64_t n, const float *x, float *y) {
  return unary(ctx, "kb_silu", KBCUDA_OP_SILU, n, x, y);
}

kb_status kb_gelu(kb_context *ctx, int64_t n, const float *x, float *y) {
  return unary(ctx, "kb_gelu", KBCUDA_OP_GELU, n, x, y);
}

kb_status kb_gelu_tanh(kb_context *ctx, int64_t n, const float *x, float *y) {
  return unary(ctx, "kb_gelu_tanh", KBCUDA_OP_GELU_TANH, n, x, y);
}

kb_status kb_silu_bf16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_silu_bf16", KBCUDA_BF16, KBCUDA_OP_SILU, n, x, y);
}

kb_status kb_silu_f16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_silu_f16", KBCUDA_F16, KBCUDA_OP_SILU, n, x, y);
}

kb_status kb_gelu_bf16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_gelu_bf16", KBCUDA_BF16, KBCUDA_OP_GELU, n, x, y);
}

kb_status kb_gelu_f16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_gelu_f16", KBCUDA_F16, KBCUDA_OP_GELU, n, x, y);
}

kb_status kb_gelu_tanh_bf16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_gelu_tanh_bf16", KBCUDA_BF16, KBCUDA_OP_GELU_TANH, n, x, y);
}

kb_status kb_gelu_tanh_f16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_gelu_tanh_f16", KBCUDA_F16, KBCUDA_OP_GELU_TANH, n, x, y);
}
