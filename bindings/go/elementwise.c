/* vendored by tools/vendor_c.py from kernels/cpu/elementwise.c; do not edit */
/* elementwise.c - activations (silu, gelu, gelu_tanh) and simple arithmetic
 * (add, mul, scale, add_bias).
 *
 * Activations are evaluated in double and rounded once to float, so every
 * result is the correctly rounded value of the double formula up to the
 * accuracy of libm (far below float's half ulp).  Each element depends only
 * on its own inputs, so splitting over threads cannot change any result. */
#include <math.h>
#include <string.h>

#include "internal.h"

/* Elements per thread below which starting a thread costs more than it saves. */
#define KB_EW_MIN_CHUNK 16384

typedef float (*kb_unary_fn)(float x);

struct unary_job {
  kb_unary_fn f;
  const float *x;
  float *y;
};

static void unary_body(void *arg, int64_t begin, int64_t end) {
  const struct unary_job *job = (const struct unary_job *)arg;
  for (int64_t i = begin; i < end; i++) job->y[i] = job->f(job->x[i]);
}

/* Shared validation and dispatch of the one-input activations. */
static kb_status unary(kb_context *ctx, const char *fn, int64_t n, const float *x, float *y, kb_unary_fn f) {
  kb__begin(ctx);
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  int64_t count;
  KB_TRY(kb__count(ctx, fn, "x", (int64_t)sizeof(float), 1, &n, &count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, count));
  int64_t bytes = count * (int64_t)sizeof(float);
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  struct unary_job job = {f, x, y};
  kb__parallel_for(ctx, count, KB_EW_MIN_CHUNK, unary_body, &job);
  return KB_STATUS_OK;
}

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

kb_status kb_silu(kb_context *ctx, int64_t n, const float *x, float *y) { return unary(ctx, "kb_silu", n, x, y, silu1); }

kb_status kb_gelu(kb_context *ctx, int64_t n, const float *x, float *y) { return unary(ctx, "kb_gelu", n, x, y, gelu1); }

kb_status kb_gelu_tanh(kb_context *ctx, int64_t n, const float *x, float *y) {
  return unary(ctx, "kb_gelu_tanh", n, x, y, gelu_tanh1);
}

/* ---- binary ops: plain float32 arithmetic, one rounding per element. ---- */

struct binary_job {
  const float *a, *b;
  float *y;
  float alpha;
};

static void add_body(void *arg, int64_t begin, int64_t end) {
  const struct binary_job *job = (const struct binary_job *)arg;
  const float *a = job->a, *b = job->b;
  float *y = job->y;
  for (int64_t i = begin; i < end; i++) y[i] = a[i] + b[i];
}

static void mul_body(void *arg, int64_t begin, int64_t end) {
  const struct binary_job *job = (const struct binary_job *)arg;
  const float *a = job->a, *b = job->b;
  float *y = job->y;
  for (int64_t i = begin; i < end; i++) y[i] = a[i] * b[i];
}

static void scale_body(void *arg, int64_t begin, int64_t end) {
  const struct binary_job *job = (const struct binary_job *)arg;
  const float *a = job->a;
  float *y = job->y;
  float alpha = job->alpha;
  for (int64_t i = begin; i < end; i++) y[i] = alpha * a[i];
}

static kb_status binary(kb_context *ctx, const char *fn, int64_t n, const float *a, const float *b, float *y,
                        void (*body)(void *, int64_t, int64_t)) {
  kb__begin(ctx);
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  int64_t count;
  KB_TRY(kb__count(ctx, fn, "a", (int64_t)sizeof(float), 1, &n, &count));
  KB_TRY(kb__check_ptr(ctx, fn, "a", a, count));
  KB_TRY(kb__check_ptr(ctx, fn, "b", b, count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, count));
  int64_t bytes = count * (int64_t)sizeof(float);
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "a", a, bytes, true));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "b", b, bytes, true));
  struct binary_job job = {a, b, y, 0.0f};
  kb__parallel_for(ctx, count, KB_EW_MIN_CHUNK, body, &job);
  return KB_STATUS_OK;
}

kb_status kb_add(kb_context *ctx, int64_t n, const float *a, const float *b, float *y) {
  return binary(ctx, "kb_add", n, a, b, y, add_body);
}

kb_status kb_mul(kb_context *ctx, int64_t n, const float *a, const float *b, float *y) {
  return binary(ctx, "kb_mul", n, a, b, y, mul_body);
}

kb_status kb_scale(kb_context *ctx, int64_t n, float alpha, const float *x, float *y) {
  static const char fn[] = "kb_scale";
  kb__begin(ctx);
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  int64_t count;
  KB_TRY(kb__count(ctx, fn, "x", (int64_t)sizeof(float), 1, &n, &count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, count));
  KB_TRY(kb__check_finite(ctx, fn, "alpha", (double)alpha, false));
  int64_t bytes = count * (int64_t)sizeof(float);
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  struct binary_job job = {x, NULL, y, alpha};
  kb__parallel_for(ctx, count, KB_EW_MIN_CHUNK, scale_body, &job);
  return KB_STATUS_OK;
}

struct bias_job {
  int64_t cols;
  const float *x, *bias;
  float *y;
};

static void bias_body(void *arg, int64_t begin, int64_t end) {
  const struct bias_job *job = (const struct bias_job *)arg;
  int64_t cols = job->cols;
  for (int64_t r = begin; r < end; r++) {
    const float *xr = job->x + r * cols;
    float *yr = job->y + r * cols;
    for (int64_t c = 0; c < cols; c++) yr[c] = xr[c] + job->bias[c];
  }
}

kb_status kb_add_bias(kb_context *ctx, int64_t rows, int64_t cols, const float *x, const float *bias, float *y) {
  static const char fn[] = "kb_add_bias";
  kb__begin(ctx);
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  int64_t dims[2] = {rows, cols}, count;
  KB_TRY(kb__count(ctx, fn, "x", (int64_t)sizeof(float), 2, dims, &count));
  int64_t bias_count;
  KB_TRY(kb__count(ctx, fn, "bias", (int64_t)sizeof(float), 1, &cols, &bias_count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, count));
  KB_TRY(kb__check_ptr(ctx, fn, "bias", bias, bias_count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, count));
  int64_t bytes = count * (int64_t)sizeof(float);
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "bias", bias, bias_count * (int64_t)sizeof(float), false));
  if (count == 0) return KB_STATUS_OK;
  struct bias_job job = {cols, x, bias, y};
  int64_t min_rows = KB_EW_MIN_CHUNK / cols + 1;
  kb__parallel_for(ctx, rows, min_rows, bias_body, &job);
  return KB_STATUS_OK;
}
