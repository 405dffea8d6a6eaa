/* Tests of kb_add_rmsnorm, kb_add_rmsnorm_bf16, kb_add_rmsnorm_f16:
 * - bit identity with the two-call sequence kb_add(residual, x -> residual)
 *   + kb_rmsnorm(residual -> y), residual and y, for 1 and 3 threads, rows
 *   from 1 to 5000 columns, y == x in place, NaN and infinite entries;
 * - against an independent float64 evaluation (the float32 sum, then the
 *   norm in double) within kb_rmsnorm's bound;
 * - the 16-bit variants against kb_add_<t> + kb_rmsnorm_<t>;
 * - bad inputs: typed status naming the argument, residual and y untouched. */
#include <math.h>

#include "kernels/cpu/testutil/cpu_test.h"

static void fill_some_special(float *p, int64_t n, uint64_t seed) {
  rand_fill(p, n, seed, -4.0f, 4.0f);
  if (n > 40) {
    p[3] = NAN;
    p[n - 5] = INFINITY;
  }
}

static void test_bits_vs_two_calls(void) {
  static const int64_t kCols[] = {1, 17, 1024, 4096, 5000};
  static const int64_t kRows[] = {1, 9};
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  for (int ci = 0; ci < 5; ci++)
    for (int ri = 0; ri < 2; ri++) {
      int64_t rows = kRows[ri], cols = kCols[ci], n = rows * cols;
      float *x = alloc_f(n), *res = alloc_f(n), *w = alloc_f(cols), *res_e = alloc_f(n), *y_e = alloc_f(n);
      float *res_g = alloc_f(n), *y_g = alloc_f(n), *x_in = alloc_f(n);
      rand_fill(x, n, 100 + (uint64_t)n, -2.0f, 2.0f);
      rand_fill(res, n, 200 + (uint64_t)n, -8.0f, 8.0f);
      rand_fill(w, cols, 300 + (uint64_t)cols, 0.5f, 1.5f);
      if (rows == 9 && cols == 5000) fill_some_special(x + cols, cols, 7); /* row 1: NaN, inf */
      memcpy(res_e, res, (size_t)n * sizeof(float));
      CHECK_OK(kb_add(NULL, n, res_e, x, res_e));
      CHECK_OK(kb_rmsnorm(NULL, rows, cols, res_e, w, 1e-6f, y_e));
      for (int t = 0; t < 3; t++) {
        memcpy(res_g, res, (size_t)n * sizeof(float));
        if (t < 2) {
          fill_f(y_g, n, SENTINEL_F);
          CHECK_OK(kb_add_rmsnorm(t ? c3 : c1, rows, cols, x, res_g, w, 1e-6f, y_g));
        } else {
          /* In place: y is x. */
          memcpy(y_g, x, (size_t)n * sizeof(float));
          CHECK_OK(kb_add_rmsnorm(c3, rows, cols, y_g, res_g, w, 1e-6f, y_g));
        }
        CHECK(same_bits_f(res_g, res_e, n));
        CHECK(same_bits_f(y_g, y_e, n));
      }
      /* The test can fail: a different eps changes the bits. */
      memcpy(x_in, res, (size_t)n * sizeof(float));
      CHECK_OK(kb_add_rmsnorm(c1, rows, cols, x, x_in, w, 1e-2f, y_g));
      CHECK(!same_bits_f(y_g, y_e, n));
      free(x);
      free(res);
      free(w);
      free(res_e);
      free(y_e);
      free(res_g);
      free(y_g);
      free(x_in);
    }
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

/* Independent expectation: residual = fl32(residual + x) (one IEEE
 * addition), y = residual / sqrt(mean(residual^2) + eps) * weight in double.
 * kb_rmsnorm's bound is 1.5 ulp (0.5 ulp of y plus 2^-24 |y|; docs/kernels.md). */
static void test_accuracy(void) {
  enum { R = 6, C = 3000 };
  float *x = alloc_f(R * C), *res = alloc_f(R * C), *w = alloc_f(C), *y = alloc_f(R * C), *res0 = alloc_f(R * C);
  rand_fill(x, R * C, 1, -3.0f, 3.0f);
  rand_fill(res, R * C, 2, -30.0f, 30.0f);
  rand_fill(w, C, 3, -2.0f, 2.0f);
  memcpy(res0, res, sizeof(float) * R * C);
  const float eps = 1e-5f;
  CHECK_OK(kb_add_rmsnorm(NULL, R, C, x, res, w, eps, y));
  double worst = 0.0;
  for (int r = 0; r < R; r++) {
    double ss = 0.0;
    for (int c = 0; c < C; c++) {
      volatile float sum = res0[r * C + c] + x[r * C + c];
      CHECK(kb_test_bits(res[r * C + c]) == kb_test_bits(sum));
      ss += (double)sum * (double)sum;
    }
    double inv = 1.0 / sqrt(ss / C + (double)eps);
    for (int c = 0; c < C; c++) {
      double want = (double)res[r * C + c] * inv * (double)w[c];
      double ulp = ldexp(1.0, ilogb(want) - 23);
      double err = fabs((double)y[r * C + c] - want) / ulp;
      if (err > worst) worst = err;
    }
  }
  CHECK(worst <= 1.5 + 1e-6);
  free(x);
  free(res);
  free(w);
  free(y);
  free(res0);
}

/* 16-bit rows: 700 columns take the vector layer's widened path (rows and
 * weights in float32 on the stack), 3000 the direct one (longer than its
 * stack buffers); each against the two calls, on 1 and 3 threads. */
static void test_half(void) {
  enum { R = 5 };
  static const int kHalfCols[] = {700, 3000};
  kb_context *c3 = make_ctx(3);
  for (int ci = 0; ci < 2; ci++) {
    const int C = kHalfCols[ci];
    size_t bytes = (size_t)R * C * sizeof(uint16_t);
    uint16_t *x = malloc(bytes), *res = malloc(bytes), *w = malloc((size_t)C * sizeof(uint16_t));
    uint16_t *res_e = malloc(bytes), *y_e = malloc(bytes), *res_g = malloc(bytes), *y_g = malloc(bytes);
    CHECK(x && res && w && res_e && y_e && res_g && y_g);
    for (int f16 = 0; f16 < 2; f16++) {
      uint64_t s = 77 + (uint64_t)f16 + 10 * (uint64_t)ci;
      /* Random finite 16-bit patterns of moderate magnitude, then a few special values. */
      for (int i = 0; i < R * C; i++) {
        x[i] = (uint16_t)((test_next(&s) & 0x83ff) | (f16 ? 0x3800 : 0x3f00));
        res[i] = (uint16_t)((test_next(&s) & 0x83ff) | (f16 ? 0x3c00 : 0x3f80));
      }
      for (int i = 0; i < C; i++) w[i] = (uint16_t)((test_next(&s) & 0x03ff) | (f16 ? 0x3800 : 0x3f00));
      /* Row 1: NaN operands with payloads (both NaN, a signalling one, a
       * negative one), inf - inf, and an overflowing sum; row 3 a lone
       * NaN late in the row. */
      x[C + 3] = f16 ? 0x7e55 : 0x7fd5;
      res[C + 3] = f16 ? 0xfe2a : 0xffaa;
      x[C + 9] = f16 ? 0x7c11 : 0x7f81;
      res[C + 17] = f16 ? 0xfd03 : 0xff83;
      x[C + 30] = f16 ? 0x7c00 : 0x7f80;
      res[C + 30] = f16 ? 0xfc00 : 0xff80;
      x[C + 41] = res[C + 41] = f16 ? 0x7bff : 0x7f7f;
      res[3 * C + C - 2] = f16 ? 0x7e01 : 0x7fc1;
      memcpy(res_e, res, bytes);
      if (f16) {
        CHECK_OK(kb_add_f16(NULL, R * C, res_e, x, res_e));
        CHECK_OK(kb_rmsnorm_f16(NULL, R, C, res_e, w, 1e-6f, y_e));
      } else {
        CHECK_OK(kb_add_bf16(NULL, R * C, res_e, x, res_e));
        CHECK_OK(kb_rmsnorm_bf16(NULL, R, C, res_e, w, 1e-6f, y_e));
      }
      for (int t = 0; t < 2; t++) {
        memcpy(res_g, res, bytes);
        memset(y_g, 0xAB, bytes);
        kb_context *c = t ? c3 : NULL;
        if (f16)
          CHECK_OK(kb_add_rmsnorm_f16(c, R, C, x, res_g, w, 1e-6f, y_g));
        else
          CHECK_OK(kb_add_rmsnorm_bf16(c, R, C, x, res_g, w, 1e-6f, y_g));
        CHECK(memcmp(res_g, res_e, bytes) == 0);
        CHECK(memcmp(y_g, y_e, bytes) == 0);
      }
    }
    free(x), free(res), free(w), free(res_e), free(y_e), free(res_g), free(y_g);
  }
  kb_context_destroy(c3);
}

static void test_empty(void) {
  CHECK_OK(kb_add_rmsnorm(NULL, 0, 4, NULL, NULL, (const float[4]){1, 1, 1, 1}, 1e-5f, NULL));
  CHECK_OK(kb_add_rmsnorm(NULL, 0, 0, NULL, NULL, NULL, 1e-5f, NULL));
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float x[8], res[8], w[4], y[8], buf[16];
  rand_fill(x, 8, 1, -1, 1);
  rand_fill(w, 4, 2, -1, 1);
  fill_f(res, 8, SENTINEL_F);
  fill_f(y, 8, SENTINEL_F);
  fill_f(buf, 16, SENTINEL_F);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be >= 0", kb_add_rmsnorm(ctx, 2, -4, x, res, w, 1e-5f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be > 0 when rows > 0",
              kb_add_rmsnorm(ctx, 2, 0, x, res, w, 1e-5f, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of x overflows",
              kb_add_rmsnorm(ctx, HUGE_DIM, 4, x, res, w, 1e-5f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "residual must not be NULL",
              kb_add_rmsnorm(ctx, 2, 4, x, NULL, w, 1e-5f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weight must not be NULL",
              kb_add_rmsnorm(ctx, 2, 4, x, res, NULL, 1e-5f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "eps", kb_add_rmsnorm(ctx, 2, 4, x, res, w, -1.0f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "eps", kb_add_rmsnorm(ctx, 2, 4, x, res, w, NAN, y));
  /* residual may not be x (it is written while x is read), nor overlap y. */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "residual", kb_add_rmsnorm(ctx, 2, 4, buf, buf, w, 1e-5f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weight", kb_add_rmsnorm(ctx, 1, 4, x, buf, buf + 2, 1e-5f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y", kb_add_rmsnorm(ctx, 1, 4, x, buf, w, 1e-5f, buf + 3));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y partially overlaps x",
              kb_add_rmsnorm(ctx, 1, 4, buf, res, w, 1e-5f, buf + 1));
  CHECK(all_f(res, 8, SENTINEL_F));
  CHECK(all_f(y, 8, SENTINEL_F));
  CHECK(all_f(buf, 16, SENTINEL_F));
  uint16_t hx[8] = {0}, hr[8] = {0}, hw[4] = {0}, hy[8] = {0};
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_add_rmsnorm_bf16: eps",
              kb_add_rmsnorm_bf16(ctx, 2, 4, hx, hr, hw, -1.0f, hy));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_add_rmsnorm_f16: residual",
              kb_add_rmsnorm_f16(ctx, 2, 4, hx, hx, hw, 1e-5f, hy));
  CHECK_OK(kb_add_rmsnorm(ctx, 2, 4, x, res, w, 1e-5f, y));
  CHECK(kb_context_last_error(ctx)[0] == '\0');
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_bits_vs_two_calls);
  KB_RUN(test_accuracy);
  KB_RUN(test_half);
  KB_RUN(test_empty);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
