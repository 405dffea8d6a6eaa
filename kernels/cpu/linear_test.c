/* Tests of kb_linear: exactly kb_gemm (x times weight transposed), then
 * kb_add_bias, then the activation kernel, bit for bit, on every path of
 * the gemm (blocked, matrix-vector, k == 0) and thread count; the 16-bit
 * variants; bad input. */
#include "kernels/cpu/testutil/cpu_test.h"
#include "half.h"

/* The unfused composition the header defines kb_linear as. */
static void unfused(kb_context *ctx, int64_t rows, int64_t in, int64_t out, const float *x, const float *w,
                    const float *bias, kb_activation act, float *y) {
  CHECK_OK(kb_gemm(ctx, false, true, rows, out, in, 1.0f, x, in > 0 ? in : 1, w, in > 0 ? in : 1, 0.0f, y,
                   out > 0 ? out : 1));
  if (bias != NULL) CHECK_OK(kb_add_bias(ctx, rows, out, y, bias, y));
  int64_t n = rows * out;
  switch (act) {
    case KB_ACTIVATION_RELU:
      for (int64_t i = 0; i < n; i++) y[i] = y[i] > 0.0f || isnan(y[i]) ? y[i] : 0.0f;
      break;
    case KB_ACTIVATION_GELU:
      CHECK_OK(kb_gelu(ctx, n, y, y));
      break;
    case KB_ACTIVATION_GELU_TANH:
      CHECK_OK(kb_gelu_tanh(ctx, n, y, y));
      break;
    case KB_ACTIVATION_SILU:
      CHECK_OK(kb_silu(ctx, n, y, y));
      break;
    default:
      break;
  }
}

static void run_case(kb_context *ctx, int64_t rows, int64_t in, int64_t out, bool with_bias, kb_activation act) {
  float *x = alloc_f(rows * in), *w = alloc_f(out * in), *b = alloc_f(out), *y = alloc_f(rows * out),
        *want = alloc_f(rows * out);
  rand_fill(x, rows * in, 1 + (uint64_t)rows, -1.5f, 1.5f);
  rand_fill(w, out * in, 2 + (uint64_t)out, -0.5f, 0.5f);
  rand_fill(b, out, 3, -1.0f, 1.0f);
  fill_f(y, rows * out, SENTINEL_F);
  CHECK_OK(kb_linear(ctx, rows, in, out, x, w, with_bias ? b : NULL, act, y));
  unfused(ctx, rows, in, out, x, w, with_bias ? b : NULL, act, want);
  if (!same_bits_f(y, want, rows * out)) {
    fprintf(stderr, "kb_linear rows=%lld in=%lld out=%lld bias=%d act=%d differs from gemm + add_bias + act\n",
            (long long)rows, (long long)in, (long long)out, with_bias, (int)act);
    CHECK(false);
  }
  free(x);
  free(w);
  free(b);
  free(y);
  free(want);
}

static void test_matches_unfused(void) {
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  static const int64_t shapes[][3] = {{1, 1, 1},   {7, 13, 9},   {1, 384, 1536}, /* decode: matrix-vector */
                                      {33, 70, 1}, {64, 128, 96}, {45, 700, 300}, /* blocked, K split */
                                      {20, 64, 1200},                             /* swapped, two MC blocks */
                                      {5, 0, 6}};                                 /* in_features 0: act(bias) */
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int a = KB_ACTIVATION_NONE; a <= KB_ACTIVATION_SILU; a++)
      for (int bias = 0; bias < 2; bias++) {
        kb_context *ctx = (s + (size_t)a) % 2 ? c3 : c1;
        run_case(ctx, shapes[s][0], shapes[s][1], shapes[s][2], bias, (kb_activation)a);
      }
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_relu_edges(void) {
  /* rows 1, in 1, out 4: y = relu(x * w + b) with NaN, -0 and negatives. */
  float x[1] = {1.0f}, w[4] = {2.0f, -1.0f, NAN, -0.0f}, b[4] = {0.0f, 0.5f, 0.0f, 0.0f}, y[4];
  CHECK_OK(kb_linear(NULL, 1, 1, 4, x, w, b, KB_ACTIVATION_RELU, y));
  CHECK(y[0] == 2.0f && y[1] == 0.0f && isnan(y[2]) && y[3] == 0.0f && !signbit(y[3]));
}

static float round16(int f16, float x, uint16_t *bits) {
  *bits = f16 ? kb_f32_to_f16(x) : kb_f32_to_bf16(x);
  return f16 ? kb_f16_to_f32(*bits) : kb_bf16_to_f32(*bits);
}

/* The 16-bit variants are kb_linear on the widened inputs, rounded once. */
static void test_half_variants(void) {
  enum { R = 9, I = 40, O = 35 };
  kb_context *ctx = make_ctx(2);
  float x[R * I], w[O * I], b[O], y[R * O];
  uint16_t x16[R * I], w16[O * I], b16[O], y16[R * O];
  for (int f16 = 0; f16 < 2; f16++)
    for (int a = KB_ACTIVATION_NONE; a <= KB_ACTIVATION_SILU; a++) {
      rand_fill(x, R * I, 7, -2, 2);
      rand_fill(w, O * I, 8, -1, 1);
      rand_fill(b, O, 9, -1, 1);
      for (int i = 0; i < R * I; i++) x[i] = round16(f16, x[i], x16 + i);
      for (int i = 0; i < O * I; i++) w[i] = round16(f16, w[i], w16 + i);
      for (int i = 0; i < O; i++) b[i] = round16(f16, b[i], b16 + i);
      CHECK_OK(kb_linear(ctx, R, I, O, x, w, b, (kb_activation)a, y));
      if (f16)
        CHECK_OK(kb_linear_f16(ctx, R, I, O, x16, w16, b16, (kb_activation)a, y16));
      else
        CHECK_OK(kb_linear_bf16(ctx, R, I, O, x16, w16, b16, (kb_activation)a, y16));
      int bad = 0;
      for (int i = 0; i < R * O; i++) {
        uint16_t want;
        round16(f16, y[i], &want);
        bad += want != y16[i];
      }
      CHECK(bad == 0);
    }
  kb_context_destroy(ctx);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 0, 0, 1, 1, 1}, b[3] = {0, 0, 0}, y[6], buf[32];
  fill_f(y, 6, SENTINEL_F);
  /* rows 2, in 3, out 2 */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_linear: rows must be >= 0",
              kb_linear(ctx, -2, 3, 2, x, w, b, KB_ACTIVATION_NONE, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "in_features must be >= 0",
              kb_linear(ctx, 2, -3, 2, x, w, b, KB_ACTIVATION_NONE, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out_features must be >= 0",
              kb_linear(ctx, 2, 3, -2, x, w, b, KB_ACTIVATION_NONE, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "act must be a kb_activation",
              kb_linear(ctx, 2, 3, 2, x, w, b, (kb_activation)5, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "got -1", kb_linear(ctx, 2, 3, 2, x, w, b, (kb_activation)-1, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of x overflows",
              kb_linear(ctx, HUGE_DIM, 3, 2, x, w, b, KB_ACTIVATION_NONE, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of weight overflows",
              kb_linear(ctx, 2, 3, HUGE_DIM, x, w, b, KB_ACTIVATION_NONE, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of bias overflows",
              kb_linear(ctx, 0, 0, (int64_t)1 << 62, NULL, NULL, b, KB_ACTIVATION_NONE, NULL));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x must not be NULL",
              kb_linear(ctx, 2, 3, 2, NULL, w, b, KB_ACTIVATION_NONE, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weight must not be NULL",
              kb_linear(ctx, 2, 3, 2, x, NULL, b, KB_ACTIVATION_NONE, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not be NULL",
              kb_linear(ctx, 2, 3, 2, x, w, b, KB_ACTIVATION_NONE, NULL));
  CHECK(all_f(y, 6, SENTINEL_F));
  fill_f(buf, 32, 0.5f);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not overlap x",
              kb_linear(ctx, 2, 3, 2, buf, w, b, KB_ACTIVATION_NONE, buf + 5));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not overlap weight",
              kb_linear(ctx, 2, 3, 2, x, buf, b, KB_ACTIVATION_NONE, buf + 2));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not overlap bias",
              kb_linear(ctx, 2, 3, 2, x, w, buf + 10, KB_ACTIVATION_NONE, buf + 9));
  CHECK(all_f(buf, 32, 0.5f));
  /* Empty tensors may be NULL; NULL bias means no bias. */
  CHECK_OK(kb_linear(ctx, 0, 3, 2, NULL, w, NULL, KB_ACTIVATION_SILU, NULL));
  CHECK_OK(kb_linear(ctx, 2, 3, 0, x, NULL, NULL, KB_ACTIVATION_SILU, NULL));
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_matches_unfused);
  KB_RUN(test_relu_edges);
  KB_RUN(test_half_variants);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
