/* Tests of kb_glu, kb_glu_bf16, kb_glu_f16:
 * - the fused gate_up layout (gate = h, up = h + ffn, ld = 2 * ffn) against
 *   the activation kernel followed by kb_mul, bit for bit, every activation,
 *   1 and 3 threads, rows longer than a tile and one long row split over
 *   threads;
 * - against an independent float64 evaluation within the documented bound
 *   (the activation's bound + 1/2 ulp, relative);
 * - the 16-bit variants against kb_glu on the widened inputs, rounded once;
 * - bad inputs: typed status, message naming the argument, y untouched. */
#include <float.h>
#include <math.h>

#include "../half.h"
#include "kernels/cpu/testutil/cpu_test.h"

static const kb_activation kActs[] = {KB_ACTIVATION_NONE, KB_ACTIVATION_RELU, KB_ACTIVATION_GELU,
                                      KB_ACTIVATION_GELU_TANH, KB_ACTIVATION_SILU};

/* e = act(g) * u through the public one-input kernels and kb_mul (the
 * two-call sequence kb_glu must reproduce). */
static void two_calls(kb_activation act, int64_t n, const float *g, const float *u, float *e) {
  float *t = alloc_f(n);
  memcpy(t, g, (size_t)n * sizeof(float));
  switch (act) {
    case KB_ACTIVATION_RELU:
      for (int64_t i = 0; i < n; i++) t[i] = t[i] > 0.0f || t[i] != t[i] ? t[i] : 0.0f;
      break;
    case KB_ACTIVATION_GELU:
      CHECK_OK(kb_gelu(NULL, n, t, t));
      break;
    case KB_ACTIVATION_GELU_TANH:
      CHECK_OK(kb_gelu_tanh(NULL, n, t, t));
      break;
    case KB_ACTIVATION_SILU:
      CHECK_OK(kb_silu(NULL, n, t, t));
      break;
    default:
      break;
  }
  CHECK_OK(kb_mul(NULL, n, t, u, e));
  free(t);
}

/* Random values with NaN, infinities, signed zeros and a subnormal in the
 * first eighth. */
static void fill_special(float *p, int64_t n, uint64_t seed) {
  static const uint32_t kSpecial[] = {0x7fc00001u, 0xff800000u, 0x7f800000u, 0x80000000u, 0x00000005u, 0x00000000u};
  rand_fill(p, n, seed, -9.0f, 9.0f);
  uint64_t s = seed ^ 0xabcdefull;
  for (int64_t i = 0; i < n / 8; i++)
    if (test_next(&s) % 7 == 0) p[i] = kb_test_float(kSpecial[test_next(&s) % 6]);
}

static void test_fused_layout_bits(void) {
  /* ffn = 2500: three tiles of 1024 per row, the last partial. */
  enum { R = 5, F = 2500 };
  float *h = alloc_f(R * 2 * F), *h0 = alloc_f(R * 2 * F), *y = alloc_f(R * F), *e = alloc_f(R * F);
  fill_special(h, R * 2 * F, 11);
  memcpy(h0, h, sizeof(float) * R * 2 * F);
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  for (int a = 0; a < 5; a++) {
    for (int r = 0; r < R; r++) two_calls(kActs[a], F, h + r * 2 * F, h + r * 2 * F + F, e + r * F);
    for (int t = 0; t < 2; t++) {
      fill_f(y, R * F, SENTINEL_F);
      CHECK_OK(kb_glu(t ? c3 : c1, R, F, h, 2 * F, h + F, 2 * F, kActs[a], y));
      CHECK(same_bits_f(y, e, R * F));
    }
    CHECK(same_bits_f(h, h0, R * 2 * F)); /* inputs untouched */
  }
  /* The default-context path too. */
  CHECK_OK(kb_glu(NULL, R, F, h, 2 * F, h + F, 2 * F, KB_ACTIVATION_SILU, y));
  two_calls(KB_ACTIVATION_SILU, F, h, h + F, e);
  CHECK(same_bits_f(y, e, F));
  /* The test can fail: a different activation gives different bits. */
  two_calls(KB_ACTIVATION_GELU, F, h, h + F, e);
  CHECK(!same_bits_f(y, e, F));
  kb_context_destroy(c1);
  kb_context_destroy(c3);
  free(h);
  free(h0);
  free(y);
  free(e);
}

/* One row of 70000 elements (many tiles, split over threads) and separate
 * gate / up buffers with different strides. */
static void test_long_row_and_strides(void) {
  enum { N = 70000, R = 3, C = 37, LG = 40, LU = 64 };
  float *g = alloc_f(N), *u = alloc_f(N), *y1 = alloc_f(N), *y3 = alloc_f(N), *e = alloc_f(N);
  fill_special(g, N, 21);
  rand_fill(u, N, 22, -3.0f, 3.0f);
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  CHECK_OK(kb_glu(c1, 1, N, g, N, u, N, KB_ACTIVATION_GELU, y1));
  CHECK_OK(kb_glu(c3, 1, N, g, N, u, N, KB_ACTIVATION_GELU, y3));
  two_calls(KB_ACTIVATION_GELU, N, g, u, e);
  CHECK(same_bits_f(y1, e, N));
  CHECK(same_bits_f(y3, e, N));
  float gs[R * LG], us[R * LU], ys[R * C], es[C];
  rand_fill(gs, R * LG, 23, -6.0f, 6.0f);
  rand_fill(us, R * LU, 24, -2.0f, 2.0f);
  CHECK_OK(kb_glu(c3, R, C, gs, LG, us, LU, KB_ACTIVATION_SILU, ys));
  for (int r = 0; r < R; r++) {
    two_calls(KB_ACTIVATION_SILU, C, gs + r * LG, us + r * LU, es);
    CHECK(same_bits_f(ys + r * C, es, C));
  }
  kb_context_destroy(c1);
  kb_context_destroy(c3);
  free(g);
  free(u);
  free(y1);
  free(y3);
  free(e);
}

static double act_ref(kb_activation act, double g) {
  switch (act) {
    case KB_ACTIVATION_RELU:
      return g > 0 ? g : 0.0;
    case KB_ACTIVATION_GELU:
      return 0.5 * g * erfc(-g / sqrt(2.0));
    case KB_ACTIVATION_GELU_TANH:
      /* 0.5 g (1 + tanh u) as g / (1 + e^(-2u)): no cancellation for g < 0. */
      return g / (1.0 + exp(-2.0 * sqrt(2.0 / 3.14159265358979323846) * (g + 0.044715 * g * g * g)));
    case KB_ACTIVATION_SILU:
      return g / (1.0 + exp(-g));
    default:
      return g;
  }
}

/* The documented bound (docs/kernels.md, "kb_glu"): relative error at most
 * (b + 1/2) * 2^-23, b the activation's relative bound in units of 2^-23
 * (silu 1.12, gelu 0.7 and gelu_tanh 1.12, measured over all inputs; none
 * and relu 0), for results in the normal range. */
static void test_accuracy(void) {
  enum { N = 20000 };
  static const double kBound[] = {0.0, 0.0, 0.7, 1.12, 1.12};
  float *g = alloc_f(N), *u = alloc_f(N), *y = alloc_f(N);
  rand_fill(g, N, 31, -12.0f, 12.0f);
  rand_fill(u, N, 32, -5.0f, 5.0f);
  for (int a = 0; a < 5; a++) {
    CHECK_OK(kb_glu(NULL, 1, N, g, N, u, N, kActs[a], y));
    double worst = 0.0;
    for (int64_t i = 0; i < N; i++) {
      double act = act_ref(kActs[a], g[i]), want = act * (double)u[i];
      /* Subnormal activations or results have an absolute bound only. */
      if (fabs(act) < FLT_MIN || fabs(want) < FLT_MIN) continue;
      double rel = fabs((double)y[i] - want) / fabs(want) / ldexp(1.0, -23);
      if (rel > worst) worst = rel;
    }
    printf("act %d: max error %.4f x 2^-23 relative, bound %.3f\n", a, worst, kBound[a] + 0.5);
    CHECK(worst <= kBound[a] + 0.5);
  }
  free(g);
  free(u);
  free(y);
}

/* bf16 / f16: exactly the float32 kernel on the widened values, rounded once. */
static void test_half(void) {
  enum { R = 4, F = 1500 };
  for (int f16 = 0; f16 < 2; f16++) {
    float *hf = alloc_f(R * 2 * F), *wide = alloc_f(R * 2 * F), *yf = alloc_f(R * F);
    uint16_t *h = (uint16_t *)calloc(R * 2 * F, 2), *y = (uint16_t *)calloc(R * F, 2), *e = (uint16_t *)calloc(R * F, 2);
    fill_special(hf, R * 2 * F, 41 + (uint64_t)f16);
    kb_half_narrow(f16, hf, h, R * 2 * F);
    kb_half_widen(f16, h, wide, R * 2 * F);
    kb_context *c3 = make_ctx(3);
    for (int a = 0; a < 5; a++) {
      CHECK_OK(kb_glu(NULL, R, F, wide, 2 * F, wide + F, 2 * F, kActs[a], yf));
      kb_half_narrow(f16, yf, e, R * F);
      memset(y, 0xAB, R * F * 2);
      if (f16)
        CHECK_OK(kb_glu_f16(c3, R, F, h, 2 * F, h + F, 2 * F, kActs[a], y));
      else
        CHECK_OK(kb_glu_bf16(c3, R, F, h, 2 * F, h + F, 2 * F, kActs[a], y));
      CHECK(memcmp(y, e, R * F * 2) == 0);
    }
    kb_context_destroy(c3);
    free(hf);
    free(wide);
    free(yf);
    free(h);
    free(y);
    free(e);
  }
}

static void test_empty(void) {
  CHECK_OK(kb_glu(NULL, 0, 5, NULL, 5, NULL, 5, KB_ACTIVATION_SILU, NULL));
  CHECK_OK(kb_glu(NULL, 3, 0, NULL, 1, NULL, 0 + 1, KB_ACTIVATION_SILU, NULL));
  CHECK_OK(kb_glu_bf16(NULL, 0, 0, NULL, 1, NULL, 1, KB_ACTIVATION_GELU, NULL));
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float h[2 * 8], y[2 * 4];
  rand_fill(h, 16, 5, -1.0f, 1.0f);
  fill_f(y, 8, SENTINEL_F);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "rows must be >= 0",
              kb_glu(ctx, -1, 4, h, 8, h + 4, 8, KB_ACTIVATION_SILU, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ld_up must be >= 0",
              kb_glu(ctx, 2, 4, h, 8, h + 4, -8, KB_ACTIVATION_SILU, y));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "ld_gate must be >= 4",
              kb_glu(ctx, 2, 4, h, 3, h + 4, 8, KB_ACTIVATION_SILU, y));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "ld_up must be >= 1",
              kb_glu(ctx, 2, 0, h, 1, h, 0, KB_ACTIVATION_SILU, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of gate overflows",
              kb_glu(ctx, HUGE_DIM, 4, h, 8, h + 4, 8, KB_ACTIVATION_SILU, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "gate must not be NULL",
              kb_glu(ctx, 2, 4, NULL, 8, h + 4, 8, KB_ACTIVATION_SILU, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not be NULL",
              kb_glu(ctx, 2, 4, h, 8, h + 4, 8, KB_ACTIVATION_SILU, NULL));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "act must be a kb_activation",
              kb_glu(ctx, 2, 4, h, 8, h + 4, 8, (kb_activation)5, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "act must be a kb_activation",
              kb_glu(ctx, 2, 4, h, 8, h + 4, 8, (kb_activation)-1, y));
  /* y may not be gate, nor overlap up (no in-place form: y is dense). */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "gate", kb_glu(ctx, 2, 4, h, 8, h + 4, 8, KB_ACTIVATION_SILU, h));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "up", kb_glu(ctx, 1, 4, y, 4, h, 4, KB_ACTIVATION_SILU, h + 2));
  CHECK(all_f(y, 8, SENTINEL_F));
  uint16_t hh[16] = {0}, hy[8] = {0};
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "kb_glu_f16: ld_up",
              kb_glu_f16(ctx, 2, 4, hh, 8, hh + 4, 2, KB_ACTIVATION_GELU, hy));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_glu_bf16: act",
              kb_glu_bf16(ctx, 2, 4, hh, 8, hh + 4, 8, (kb_activation)9, hy));
  /* A successful call clears the message. */
  CHECK_OK(kb_glu(ctx, 2, 4, h, 8, h + 4, 8, KB_ACTIVATION_SILU, y));
  CHECK(kb_context_last_error(ctx)[0] == '\0');
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_fused_layout_bits);
  KB_RUN(test_long_row_and_strides);
  KB_RUN(test_accuracy);
  KB_RUN(test_half);
  KB_RUN(test_empty);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
