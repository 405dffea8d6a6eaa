/* Tests of the elementwise kernels: silu, gelu, gelu_tanh, add, mul, scale,
 * add_bias. */
#include "kernels/cpu/testutil/cpu_test.h"

static const int64_t kSizes[] = {1, 7, 9, 17, 33};

/* References in long double: with 64 mantissa bits the textbook formulas are
 * accurate enough to judge the kernels' double-then-round results. */
static double ref_silu(float x) { return (double)((long double)x / (1.0L + expl(-(long double)x))); }
static double ref_gelu(float x) { return (double)(0.5L * x * erfcl(-(long double)x / sqrtl(2.0L))); }
static double ref_gelu_tanh(float x) {
  long double xl = x, u = sqrtl(2.0L / 3.14159265358979323846264338327950288L) * (xl + 0.044715L * xl * xl * xl);
  /* 1 + tanh(u) cancels even in long double once u < -23; there the
   * identity 0.5 * x * (1 + tanh u) = x / (1 + exp(-2u)) is used instead. */
  if (u > -5.0L) return (double)(0.5L * xl * (1.0L + tanhl(u)));
  return (double)(xl / (1.0L + expl(-2.0L * u)));
}

typedef kb_status (*unary_fn)(kb_context *, int64_t, const float *, float *);
static const unary_fn kUnary[] = {kb_silu, kb_gelu, kb_gelu_tanh};
static double (*const kUnaryRef[])(float) = {ref_silu, ref_gelu, ref_gelu_tanh};
/* Their relative error bounds on normal results, in units of 2^-23
 * (docs/kernels.md, measured over all 2^32 inputs). */
static const double kRelBound[] = {1.12, 0.7, 1.12};

static void test_activation_hand_values(void) {
  float x[4] = {0.0f, 1.0f, -1.0f, 2.0f}, y[4];
  CHECK_OK(kb_silu(NULL, 4, x, y));
  CHECK_CLOSE(y[0], 0.0, 0.0, 0.0);
  CHECK_CLOSE(y[1], 0.7310585786300049, 0.0, 1e-7);
  CHECK_CLOSE(y[2], -0.2689414213699951, 0.0, 1e-7);
  CHECK_CLOSE(y[3], 1.7615941559557649, 0.0, 1e-7);
  CHECK_OK(kb_gelu(NULL, 4, x, y));
  CHECK_CLOSE(y[0], 0.0, 0.0, 0.0);
  CHECK_CLOSE(y[1], 0.8413447460685429, 0.0, 1e-7);
  CHECK_CLOSE(y[2], -0.15865525393145707, 0.0, 1e-7);
  CHECK_CLOSE(y[3], 1.9544997361036416, 0.0, 1e-7);
  CHECK_OK(kb_gelu_tanh(NULL, 4, x, y));
  CHECK_CLOSE(y[0], 0.0, 0.0, 0.0);
  CHECK_CLOSE(y[1], 0.8411919906082768, 0.0, kRelBound[2] * 0x1p-23);
  CHECK_CLOSE(y[2], -0.15880800939172324, 0.0, kRelBound[2] * 0x1p-23);
  CHECK_CLOSE(y[3], 1.9545976940818358, 0.0, kRelBound[2] * 0x1p-23);
}

/* Relative accuracy over a sweep, including the far negative tails where a
 * naive 1 + erf / 1 + tanh form would cancel to 0 or lose all digits. */
static void test_activation_accuracy_sweep(void) {
  enum { N = 2001 };
  float *x = alloc_f(N), *y = alloc_f(N);
  for (int i = 0; i < N; i++) x[i] = -20.0f + 40.0f * (float)i / (float)(N - 1);
  for (int f = 0; f < 3; f++) {
    CHECK_OK(kUnary[f](NULL, N, x, y));
    int bad = 0;
    for (int i = 0; i < N; i++) {
      double want = kUnaryRef[f](x[i]);
      /* The relative bounds of docs/kernels.md (units of 2^-23). */
      if (!(fabs((double)y[i] - want) <= 1e-44 + kRelBound[f] * 0x1p-23 * fabs(want))) {
        if (bad++ < 5) fprintf(stderr, "fn %d x=%.9g got %.9g want %.17g\n", f, x[i], y[i], want);
      }
    }
    CHECK(bad == 0);
  }
  /* gelu(-5) ~ -1.43e-6 and gelu_tanh(-5) ~ -2.3e-7 must keep full relative accuracy. */
  float xm = -5.0f, ym;
  CHECK_OK(kb_gelu(NULL, 1, &xm, &ym));
  CHECK_CLOSE(ym, ref_gelu(xm), 0.0, kRelBound[1] * 0x1p-23);
  CHECK(ym < 0.0f);
  CHECK_OK(kb_gelu_tanh(NULL, 1, &xm, &ym));
  CHECK_CLOSE(ym, ref_gelu_tanh(xm), 0.0, kRelBound[2] * 0x1p-23);
  CHECK(ym < 0.0f);
  free(x);
  free(y);
}

static void test_activation_special_values(void) {
  float x[5] = {INFINITY, -INFINITY, NAN, -100.0f, 100.0f}, y[5];
  for (int f = 0; f < 3; f++) {
    CHECK_OK(kUnary[f](NULL, 5, x, y));
    CHECK(y[0] == INFINITY);
    CHECK(isnan(y[1])); /* -inf * 0, as PyTorch */
    CHECK(isnan(y[2]));
    CHECK(y[3] <= 0.0f && y[3] > -1e-30f); /* tends to -0 */
    CHECK(y[4] == 100.0f);
  }
}

static void test_arith_values(void) {
  float a[3] = {1.5f, -2.0f, 1e30f}, b[3] = {0.25f, 4.0f, 1e30f}, y[3];
  CHECK_OK(kb_add(NULL, 3, a, b, y));
  CHECK(y[0] == 1.75f && y[1] == 2.0f && y[2] == 2e30f);
  CHECK_OK(kb_mul(NULL, 3, a, b, y));
  CHECK(y[0] == 0.375f && y[1] == -8.0f && y[2] == INFINITY);
  CHECK_OK(kb_scale(NULL, 3, -2.0f, a, y));
  CHECK(y[0] == -3.0f && y[1] == 4.0f && y[2] == -2e30f);
  float x[6] = {1, 2, 3, 4, 5, 6}, bias[3] = {10, 20, 30}, out[6];
  CHECK_OK(kb_add_bias(NULL, 2, 3, x, bias, out));
  const float want[6] = {11, 22, 33, 14, 25, 36};
  CHECK(memcmp(out, want, sizeof want) == 0);
}

/* Edge sizes (not multiples of a vector width) against scalar references. */
static void test_edge_sizes(void) {
  for (size_t s = 0; s < sizeof kSizes / sizeof kSizes[0]; s++) {
    int64_t n = kSizes[s];
    float *a = alloc_f(n), *b = alloc_f(n), *y = alloc_f(n);
    rand_fill(a, n, 1 + (uint64_t)n, -6.0f, 6.0f);
    rand_fill(b, n, 100 + (uint64_t)n, -6.0f, 6.0f);
    for (int f = 0; f < 3; f++) {
      CHECK_OK(kUnary[f](NULL, n, a, y));
      for (int64_t i = 0; i < n; i++) CHECK_CLOSE(y[i], kUnaryRef[f](a[i]), 1e-37, 1.2e-7);
    }
    CHECK_OK(kb_add(NULL, n, a, b, y));
    for (int64_t i = 0; i < n; i++) CHECK(y[i] == a[i] + b[i]);
    CHECK_OK(kb_mul(NULL, n, a, b, y));
    for (int64_t i = 0; i < n; i++) CHECK(y[i] == a[i] * b[i]);
    CHECK_OK(kb_scale(NULL, n, 0.3f, a, y));
    for (int64_t i = 0; i < n; i++) CHECK(y[i] == 0.3f * a[i]);
    CHECK_OK(kb_add_bias(NULL, 1, n, a, b, y));
    for (int64_t i = 0; i < n; i++) CHECK(y[i] == a[i] + b[i]);
    free(a);
    free(b);
    free(y);
  }
}

static void test_in_place_matches_out_of_place(void) {
  enum { N = 33 };
  float a[N], b[N], ref[N], buf[N];
  rand_fill(a, N, 7, -4.0f, 4.0f);
  rand_fill(b, N, 8, -4.0f, 4.0f);
  for (int f = 0; f < 3; f++) {
    CHECK_OK(kUnary[f](NULL, N, a, ref));
    memcpy(buf, a, sizeof a);
    CHECK_OK(kUnary[f](NULL, N, buf, buf));
    CHECK(same_bits_f(buf, ref, N));
  }
  CHECK_OK(kb_add(NULL, N, a, b, ref));
  memcpy(buf, a, sizeof a);
  CHECK_OK(kb_add(NULL, N, buf, b, buf)); /* y == a */
  CHECK(same_bits_f(buf, ref, N));
  memcpy(buf, b, sizeof b);
  CHECK_OK(kb_add(NULL, N, a, buf, buf)); /* y == b */
  CHECK(same_bits_f(buf, ref, N));
  CHECK_OK(kb_mul(NULL, N, a, a, ref));
  memcpy(buf, a, sizeof a);
  CHECK_OK(kb_mul(NULL, N, buf, buf, buf)); /* y == a == b */
  CHECK(same_bits_f(buf, ref, N));
  CHECK_OK(kb_scale(NULL, N, 1.7f, a, ref));
  memcpy(buf, a, sizeof a);
  CHECK_OK(kb_scale(NULL, N, 1.7f, buf, buf));
  CHECK(same_bits_f(buf, ref, N));
  CHECK_OK(kb_add_bias(NULL, 3, 11, a, b, ref));
  memcpy(buf, a, sizeof a);
  CHECK_OK(kb_add_bias(NULL, 3, 11, buf, b, buf));
  CHECK(same_bits_f(buf, ref, N));
}

static void test_empty(void) {
  kb_context *ctx = make_ctx(2);
  for (int f = 0; f < 3; f++) CHECK_OK(kUnary[f](ctx, 0, NULL, NULL));
  CHECK_OK(kb_add(ctx, 0, NULL, NULL, NULL));
  CHECK_OK(kb_mul(ctx, 0, NULL, NULL, NULL));
  CHECK_OK(kb_scale(ctx, 0, 2.0f, NULL, NULL));
  CHECK_OK(kb_add_bias(ctx, 0, 0, NULL, NULL, NULL));
  CHECK_OK(kb_add_bias(ctx, 5, 0, NULL, NULL, NULL));
  float bias[3] = {1, 2, 3};
  CHECK_OK(kb_add_bias(ctx, 0, 3, NULL, bias, NULL));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "");
  CHECK(kb_context_last_error(ctx)[0] == '\0');
  kb_context_destroy(ctx);
}

static void test_threads_bitwise_identical(void) {
  enum { N = 100003 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *a = alloc_f(N), *b = alloc_f(N), *y1 = alloc_f(N), *y3 = alloc_f(N);
  rand_fill(a, N, 11, -8.0f, 8.0f);
  rand_fill(b, N, 12, -8.0f, 8.0f);
  for (int f = 0; f < 3; f++) {
    CHECK_OK(kUnary[f](c1, N, a, y1));
    CHECK_OK(kUnary[f](c3, N, a, y3));
    CHECK(same_bits_f(y1, y3, N));
  }
  CHECK_OK(kb_add(c1, N, a, b, y1));
  CHECK_OK(kb_add(c3, N, a, b, y3));
  CHECK(same_bits_f(y1, y3, N));
  CHECK_OK(kb_mul(c1, N, a, b, y1));
  CHECK_OK(kb_mul(c3, N, a, b, y3));
  CHECK(same_bits_f(y1, y3, N));
  CHECK_OK(kb_scale(c1, N, 0.7f, a, y1));
  CHECK_OK(kb_scale(c3, N, 0.7f, a, y3));
  CHECK(same_bits_f(y1, y3, N));
  CHECK_OK(kb_add_bias(c1, 1000, 100, a, b, y1));
  CHECK_OK(kb_add_bias(c3, 1000, 100, a, b, y3));
  CHECK(same_bits_f(y1, y3, 100000));
  for (int64_t i = 0; i < 100000; i++) CHECK(y1[i] == a[i] + b[i % 100]);
  free(a);
  free(b);
  free(y1);
  free(y3);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_unary_bad_inputs(void) {
  static const char *names[] = {"kb_silu", "kb_gelu", "kb_gelu_tanh"};
  kb_context *ctx = make_ctx(1);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
  for (int f = 0; f < 3; f++) {
    fill_f(y, 8, SENTINEL_F);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "n must be >= 0, got -3", kUnary[f](ctx, -3, x, y));
    CHECK_STR_CONTAINS(kb_context_last_error(ctx), names[f]);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x must not be NULL", kUnary[f](ctx, 4, NULL, y));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not be NULL", kUnary[f](ctx, 4, x, NULL));
    CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of x overflows", kUnary[f](ctx, HUGE_DIM, x, y));
    CHECK(all_f(y, 8, SENTINEL_F));
    /* y one element past x: a partial overlap, not in-place use. */
    memcpy(y, x, sizeof x);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y partially overlaps x", kUnary[f](ctx, 4, y, y + 1));
    CHECK(memcmp(y, x, sizeof x) == 0);
    /* The same status without a context (no message to record). */
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kUnary[f](NULL, -1, x, y));
    /* A successful call clears the message. */
    CHECK_OK(kUnary[f](ctx, 1, x, y));
    CHECK(kb_context_last_error(ctx)[0] == '\0');
  }
  kb_context_destroy(ctx);
}

static void test_binary_bad_inputs(void) {
  typedef kb_status (*bin_fn)(kb_context *, int64_t, const float *, const float *, float *);
  static const bin_fn fns[] = {kb_add, kb_mul};
  kb_context *ctx = make_ctx(1);
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {8, 7, 6, 5, 4, 3, 2, 1}, y[8], buf[8];
  for (int f = 0; f < 2; f++) {
    fill_f(y, 8, SENTINEL_F);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "n must be >= 0", fns[f](ctx, -1, a, b, y));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "a must not be NULL", fns[f](ctx, 4, NULL, b, y));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "b must not be NULL", fns[f](ctx, 4, a, NULL, y));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not be NULL", fns[f](ctx, 4, a, b, NULL));
    CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "overflows", fns[f](ctx, HUGE_DIM, a, b, y));
    CHECK(all_f(y, 8, SENTINEL_F));
    memcpy(buf, a, sizeof a);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y partially overlaps a", fns[f](ctx, 4, buf + 1, b, buf));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y partially overlaps b", fns[f](ctx, 4, b, buf, buf + 2));
    CHECK(memcmp(buf, a, sizeof a) == 0);
  }
  /* scale: alpha must be finite. */
  fill_f(y, 8, SENTINEL_F);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "n must be >= 0", kb_scale(ctx, -2, 1.0f, a, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x must not be NULL", kb_scale(ctx, 4, 1.0f, NULL, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not be NULL", kb_scale(ctx, 4, 1.0f, a, NULL));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "alpha must be finite", kb_scale(ctx, 4, NAN, a, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "alpha must be finite", kb_scale(ctx, 4, INFINITY, a, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "alpha must be finite", kb_scale(ctx, 4, -INFINITY, a, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of x overflows", kb_scale(ctx, HUGE_DIM, 1.0f, a, y));
  CHECK(all_f(y, 8, SENTINEL_F));
  memcpy(buf, a, sizeof a);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y partially overlaps x", kb_scale(ctx, 4, 2.0f, buf, buf + 3));
  CHECK(memcmp(buf, a, sizeof a) == 0);
  kb_context_destroy(ctx);
}

static void test_add_bias_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, bias[4] = {1, 1, 1, 1}, y[8], buf[8];
  fill_f(y, 8, SENTINEL_F);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "rows must be >= 0, got -1", kb_add_bias(ctx, -1, 4, x, bias, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be >= 0, got -4", kb_add_bias(ctx, 2, -4, x, bias, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x must not be NULL", kb_add_bias(ctx, 2, 4, NULL, bias, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "bias must not be NULL", kb_add_bias(ctx, 2, 4, x, NULL, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not be NULL", kb_add_bias(ctx, 2, 4, x, bias, NULL));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of x overflows", kb_add_bias(ctx, HUGE_DIM, 4, x, bias, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of bias overflows", kb_add_bias(ctx, 0, HUGE_DIM, x, bias, y));
  CHECK(all_f(y, 8, SENTINEL_F));
  memcpy(buf, x, sizeof x);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y partially overlaps x", kb_add_bias(ctx, 1, 4, buf, bias, buf + 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not overlap bias", kb_add_bias(ctx, 1, 4, x, buf + 2, buf));
  CHECK(memcmp(buf, x, sizeof x) == 0);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_activation_hand_values);
  KB_RUN(test_activation_accuracy_sweep);
  KB_RUN(test_activation_special_values);
  KB_RUN(test_arith_values);
  KB_RUN(test_edge_sizes);
  KB_RUN(test_in_place_matches_out_of_place);
  KB_RUN(test_empty);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_unary_bad_inputs);
  KB_RUN(test_binary_bad_inputs);
  KB_RUN(test_add_bias_bad_inputs);
  return kb_test_summary();
}
