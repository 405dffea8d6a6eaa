/* Tests of kb_rmsnorm and kb_layernorm. */
#include "kernels/cpu/testutil/cpu_test.h"

static void ref_rms(const float *x, const float *w, int64_t cols, double eps, double *y) {
  double ss = 0.0;
  for (int64_t c = 0; c < cols; c++) ss += (double)x[c] * x[c];
  double d = sqrt(ss / (double)cols + eps);
  for (int64_t c = 0; c < cols; c++) y[c] = (double)x[c] / d * w[c];
}

static void ref_ln(const float *x, const float *w, const float *b, int64_t cols, double eps, double *y) {
  double mean = 0.0, var = 0.0;
  for (int64_t c = 0; c < cols; c++) mean += x[c];
  mean /= (double)cols;
  for (int64_t c = 0; c < cols; c++) var += ((double)x[c] - mean) * ((double)x[c] - mean);
  var /= (double)cols;
  for (int64_t c = 0; c < cols; c++)
    y[c] = ((double)x[c] - mean) / sqrt(var + eps) * (w ? w[c] : 1.0) + (b ? b[c] : 0.0);
}

static void test_rmsnorm_hand(void) {
  float x[4] = {1, 2, 3, 4}, w[4] = {1, 2, 0.5f, -1}, y[4];
  CHECK_OK(kb_rmsnorm(NULL, 1, 4, x, w, 0.0f, y));
  double d = sqrt(7.5);
  CHECK_CLOSE(y[0], 1 / d, 0, 1e-7);
  CHECK_CLOSE(y[1], 4 / d, 0, 1e-7);
  CHECK_CLOSE(y[2], 1.5 / d, 0, 1e-7);
  CHECK_CLOSE(y[3], -4 / d, 0, 1e-7);
  /* A constant row c normalises to sign(c) * weight (eps = 0). */
  float cx[5] = {-3.5f, -3.5f, -3.5f, -3.5f, -3.5f}, ones[5] = {1, 1, 1, 1, 1}, cy[5];
  CHECK_OK(kb_rmsnorm(NULL, 1, 5, cx, ones, 0.0f, cy));
  for (int c = 0; c < 5; c++) CHECK(cy[c] == -1.0f);
  /* With eps the result shrinks: c / sqrt(c^2 + eps). */
  CHECK_OK(kb_rmsnorm(NULL, 1, 5, cx, ones, 1.0f, cy));
  for (int c = 0; c < 5; c++) CHECK_CLOSE(cy[c], -3.5 / sqrt(13.25), 0, 1e-7);
  /* A zero row with eps = 0 is 0 / 0. */
  float z[2] = {0, 0}, zy[2];
  CHECK_OK(kb_rmsnorm(NULL, 1, 2, z, ones, 0.0f, zy));
  CHECK(isnan(zy[0]) && isnan(zy[1]));
}

static void test_layernorm_hand(void) {
  float x[4] = {1, 2, 3, 4}, w[4] = {1, 2, 3, 4}, b[4] = {0.5f, 0.5f, 0.5f, 0.5f}, y[4];
  /* mean 2.5, biased variance 1.25 */
  CHECK_OK(kb_layernorm(NULL, 1, 4, x, w, b, 0.0f, y));
  double s = sqrt(1.25);
  CHECK_CLOSE(y[0], -1.5 / s * 1 + 0.5, 0, 1e-7);
  CHECK_CLOSE(y[1], -0.5 / s * 2 + 0.5, 0, 1e-7);
  CHECK_CLOSE(y[2], 0.5 / s * 3 + 0.5, 0, 1e-7);
  CHECK_CLOSE(y[3], 1.5 / s * 4 + 0.5, 0, 1e-7);
  /* A constant row gives the bias (0 / sqrt(eps)). */
  float cx[3] = {7, 7, 7}, cb[3] = {1, 2, 3}, cy[3];
  CHECK_OK(kb_layernorm(NULL, 1, 3, cx, NULL, cb, 1e-5f, cy));
  CHECK(cy[0] == 1.0f && cy[1] == 2.0f && cy[2] == 3.0f);
}

static void test_layernorm_moments(void) {
  enum { R = 5, C = 33 };
  float x[R * C], y[R * C];
  rand_fill(x, R * C, 9, -100.0f, 300.0f); /* large offset: two-pass variance matters */
  CHECK_OK(kb_layernorm(NULL, R, C, x, NULL, NULL, 0.0f, y));
  for (int r = 0; r < R; r++) {
    double mean = 0, var = 0;
    for (int c = 0; c < C; c++) mean += y[r * C + c];
    mean /= C;
    for (int c = 0; c < C; c++) var += (y[r * C + c] - mean) * (y[r * C + c] - mean);
    var /= C;
    CHECK_CLOSE(mean, 0.0, 1e-6, 0);
    CHECK_CLOSE(var, 1.0, 0, 1e-6);
  }
}

static void test_against_reference_edge_sizes(void) {
  static const int64_t sizes[] = {1, 7, 9, 17, 33};
  for (int s = 0; s < 5; s++) {
    int64_t cols = sizes[s], rows = 4, n = rows * cols;
    float *x = alloc_f(n), *w = alloc_f(cols), *b = alloc_f(cols), *y = alloc_f(n), *buf = alloc_f(n);
    double *ref = (double *)calloc((size_t)cols, sizeof(double));
    rand_fill(x, n, 60 + (uint64_t)cols, -3.0f, 3.0f);
    rand_fill(w, cols, 61, 0.5f, 1.5f);
    rand_fill(b, cols, 62, -1.0f, 1.0f);
    CHECK_OK(kb_rmsnorm(NULL, rows, cols, x, w, 1e-6f, y));
    for (int64_t r = 0; r < rows; r++) {
      ref_rms(x + r * cols, w, cols, (double)1e-6f, ref);
      for (int64_t c = 0; c < cols; c++) CHECK_CLOSE(y[r * cols + c], ref[c], 1e-30, 1.2e-7);
    }
    memcpy(buf, x, (size_t)n * sizeof(float));
    CHECK_OK(kb_rmsnorm(NULL, rows, cols, buf, w, 1e-6f, buf));
    CHECK(same_bits_f(buf, y, n));
    /* All four weight/bias combinations of layernorm. */
    for (int mode = 0; mode < 4; mode++) {
      const float *wp = (mode & 1) ? w : NULL, *bp = (mode & 2) ? b : NULL;
      CHECK_OK(kb_layernorm(NULL, rows, cols, x, wp, bp, 1e-5f, y));
      for (int64_t r = 0; r < rows; r++) {
        ref_ln(x + r * cols, wp, bp, cols, (double)1e-5f, ref);
        for (int64_t c = 0; c < cols; c++) CHECK_CLOSE(y[r * cols + c], ref[c], 1e-6, 1.2e-7);
      }
      memcpy(buf, x, (size_t)n * sizeof(float));
      CHECK_OK(kb_layernorm(NULL, rows, cols, buf, wp, bp, 1e-5f, buf));
      CHECK(same_bits_f(buf, y, n));
    }
    free(x);
    free(w);
    free(b);
    free(y);
    free(buf);
    free(ref);
  }
}

static void test_empty(void) {
  CHECK_OK(kb_rmsnorm(NULL, 0, 0, NULL, NULL, 1e-5f, NULL));
  CHECK_OK(kb_layernorm(NULL, 0, 0, NULL, NULL, NULL, 1e-5f, NULL));
  float w[3] = {1, 1, 1};
  CHECK_OK(kb_rmsnorm(NULL, 0, 3, NULL, w, 1e-5f, NULL));
  CHECK_OK(kb_layernorm(NULL, 0, 3, NULL, NULL, NULL, 1e-5f, NULL));
}

static void test_threads_bitwise_identical(void) {
  enum { R = 257, C = 999 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *x = alloc_f(R * C), *w = alloc_f(C), *b = alloc_f(C), *y1 = alloc_f(R * C), *y3 = alloc_f(R * C);
  rand_fill(x, R * C, 70, -2.0f, 2.0f);
  rand_fill(w, C, 71, -2.0f, 2.0f);
  rand_fill(b, C, 72, -2.0f, 2.0f);
  CHECK_OK(kb_rmsnorm(c1, R, C, x, w, 1e-6f, y1));
  CHECK_OK(kb_rmsnorm(c3, R, C, x, w, 1e-6f, y3));
  CHECK(same_bits_f(y1, y3, R * C));
  CHECK_OK(kb_layernorm(c1, R, C, x, w, b, 1e-6f, y1));
  CHECK_OK(kb_layernorm(c3, R, C, x, w, b, 1e-6f, y3));
  CHECK(same_bits_f(y1, y3, R * C));
  free(x);
  free(w);
  free(b);
  free(y1);
  free(y3);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, w[4] = {1, 1, 1, 1}, y[8], buf[8];
  fill_f(y, 8, SENTINEL_F);
  /* rmsnorm */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_rmsnorm: rows must be >= 0, got -1", kb_rmsnorm(ctx, -1, 4, x, w, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be >= 0", kb_rmsnorm(ctx, 2, -4, x, w, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be > 0 when rows > 0", kb_rmsnorm(ctx, 2, 0, x, w, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of x overflows", kb_rmsnorm(ctx, HUGE_DIM, 4, x, w, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of weight overflows", kb_rmsnorm(ctx, 0, HUGE_DIM, x, w, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x must not be NULL", kb_rmsnorm(ctx, 2, 4, NULL, w, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weight must not be NULL", kb_rmsnorm(ctx, 2, 4, x, NULL, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not be NULL", kb_rmsnorm(ctx, 2, 4, x, w, 0, NULL));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "eps must be >= 0", kb_rmsnorm(ctx, 2, 4, x, w, -1e-5f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "eps must be finite", kb_rmsnorm(ctx, 2, 4, x, w, NAN, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "eps must be finite", kb_rmsnorm(ctx, 2, 4, x, w, INFINITY, y));
  CHECK(all_f(y, 8, SENTINEL_F));
  memcpy(buf, x, sizeof x);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y partially overlaps x", kb_rmsnorm(ctx, 1, 4, buf, w, 0, buf + 2));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not overlap weight", kb_rmsnorm(ctx, 1, 4, x, buf + 1, 0, buf));
  CHECK(memcmp(buf, x, sizeof x) == 0);
  /* layernorm (weight and bias may be NULL) */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_layernorm: rows must be >= 0", kb_layernorm(ctx, -1, 4, x, w, w, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be >= 0", kb_layernorm(ctx, 2, -1, x, w, w, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be > 0 when rows > 0", kb_layernorm(ctx, 1, 0, x, w, w, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of x overflows", kb_layernorm(ctx, 4, HUGE_DIM, x, w, w, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x must not be NULL", kb_layernorm(ctx, 2, 4, NULL, w, w, 0, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not be NULL", kb_layernorm(ctx, 2, 4, x, w, w, 0, NULL));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "eps must be >= 0", kb_layernorm(ctx, 2, 4, x, w, w, -1.0f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "eps must be finite", kb_layernorm(ctx, 2, 4, x, w, w, NAN, y));
  CHECK(all_f(y, 8, SENTINEL_F));
  memcpy(buf, x, sizeof x);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y partially overlaps x", kb_layernorm(ctx, 1, 4, buf, w, w, 0, buf + 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not overlap weight",
              kb_layernorm(ctx, 1, 4, x, buf + 3, NULL, 0, buf));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not overlap bias", kb_layernorm(ctx, 1, 4, x, NULL, buf, 0, buf));
  CHECK(memcmp(buf, x, sizeof x) == 0);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_rmsnorm_hand);
  KB_RUN(test_layernorm_hand);
  KB_RUN(test_layernorm_moments);
  KB_RUN(test_against_reference_edge_sizes);
  KB_RUN(test_empty);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
