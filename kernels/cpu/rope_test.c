/* Tests of kb_rope. */
#include "kernels/cpu/testutil/cpu_test.h"

/* The header's formula, in double. */
static void ref_rope(int64_t seq, int64_t heads, int64_t hd, const float *x, const int32_t *pos, double theta,
                     double *y) {
  int64_t h = hd / 2;
  for (int64_t s = 0; s < seq; s++)
    for (int64_t hh = 0; hh < heads; hh++)
      for (int64_t i = 0; i < h; i++) {
        double ang = pos[s] * pow(theta, -2.0 * (double)i / (double)hd);
        const float *xr = x + (s * heads + hh) * hd;
        double *yr = y + (s * heads + hh) * hd;
        yr[i] = xr[i] * cos(ang) - xr[i + h] * sin(ang);
        yr[i + h] = xr[i + h] * cos(ang) + xr[i] * sin(ang);
      }
}

static void test_hand_values(void) {
  /* head_dim 2: a plain 2-D rotation by the position (theta^0 = 1). */
  float x[4] = {1, 0, 0, 1}, y[4];
  int32_t pos[2] = {0, 1};
  CHECK_OK(kb_rope(NULL, 2, 1, 2, x, pos, 10000.0f, y));
  CHECK(y[0] == 1.0f && y[1] == 0.0f);
  CHECK_CLOSE(y[2], -sin(1.0), 0, 1e-7);
  CHECK_CLOSE(y[3], cos(1.0), 0, 1e-7);
  /* head_dim 4, theta 100, position 2: pair 0 angle 2, pair 1 angle 2 / 10. */
  float x4[4] = {1, 2, 3, 4}, y4[4];
  int32_t p2 = 2;
  CHECK_OK(kb_rope(NULL, 1, 1, 4, x4, &p2, 100.0f, y4));
  CHECK_CLOSE(y4[0], 1 * cos(2.0) - 3 * sin(2.0), 1e-7, 1e-7);
  CHECK_CLOSE(y4[1], 2 * cos(0.2) - 4 * sin(0.2), 1e-7, 1e-7);
  CHECK_CLOSE(y4[2], 3 * cos(2.0) + 1 * sin(2.0), 1e-7, 1e-7);
  CHECK_CLOSE(y4[3], 4 * cos(0.2) + 2 * sin(0.2), 1e-7, 1e-7);
}

static void test_against_formula(void) {
  static const int64_t hds[] = {2, 8, 18, 34, 64};
  for (int t = 0; t < 5; t++) {
    int64_t seq = 9, heads = 3, hd = hds[t], n = seq * heads * hd;
    float *x = alloc_f(n), *y = alloc_f(n), *buf = alloc_f(n);
    double *ref = (double *)calloc((size_t)n, sizeof(double));
    int32_t pos[9] = {0, 1, 2, 7, 100, 4095, 17, 33, 65535};
    rand_fill(x, n, 10 + (uint64_t)hd, -2.0f, 2.0f);
    CHECK_OK(kb_rope(NULL, seq, heads, hd, x, pos, 10000.0f, y));
    ref_rope(seq, heads, hd, x, pos, 10000.0, ref);
    for (int64_t i = 0; i < n; i++) CHECK_CLOSE(y[i], ref[i], 1e-6, 1e-6);
    memcpy(buf, x, (size_t)n * sizeof(float));
    CHECK_OK(kb_rope(NULL, seq, heads, hd, buf, pos, 10000.0f, buf));
    CHECK(same_bits_f(buf, y, n));
    /* A rotation preserves each pair's norm. */
    for (int64_t r = 0; r < seq * heads; r++)
      for (int64_t i = 0; i < hd / 2; i++) {
        double a = x[r * hd + i], b = x[r * hd + i + hd / 2], c = y[r * hd + i], d = y[r * hd + i + hd / 2];
        CHECK_CLOSE(c * c + d * d, a * a + b * b, 1e-6, 1e-6);
      }
    free(x);
    free(y);
    free(buf);
    free(ref);
  }
}

static void test_empty(void) {
  CHECK_OK(kb_rope(NULL, 0, 0, 0, NULL, NULL, 10000.0f, NULL));
  int32_t pos[2] = {0, 1};
  CHECK_OK(kb_rope(NULL, 2, 0, 4, NULL, pos, 10000.0f, NULL));
  CHECK_OK(kb_rope(NULL, 2, 3, 0, NULL, pos, 10000.0f, NULL));
}

static void test_threads_bitwise_identical(void) {
  enum { S = 211, H = 8, D = 64 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *x = alloc_f(S * H * D), *y1 = alloc_f(S * H * D), *y3 = alloc_f(S * H * D);
  int32_t pos[S];
  for (int s = 0; s < S; s++) pos[s] = s * 3;
  rand_fill(x, S * H * D, 4, -1.0f, 1.0f);
  CHECK_OK(kb_rope(c1, S, H, D, x, pos, 500000.0f, y1));
  CHECK_OK(kb_rope(c3, S, H, D, x, pos, 500000.0f, y3));
  CHECK(same_bits_f(y1, y3, S * H * D));
  free(x);
  free(y1);
  free(y3);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8], buf[8];
  int32_t pos[2] = {0, 1};
  fill_f(y, 8, SENTINEL_F);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_rope: seq must be >= 0", kb_rope(ctx, -1, 1, 4, x, pos, 1e4f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "heads must be >= 0", kb_rope(ctx, 2, -1, 4, x, pos, 1e4f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "head_dim must be >= 0", kb_rope(ctx, 2, 1, -4, x, pos, 1e4f, y));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "head_dim must be even, got 3", kb_rope(ctx, 2, 1, 3, x, pos, 1e4f, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of x overflows", kb_rope(ctx, 2, HUGE_DIM, 4, x, pos, 1e4f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x must not be NULL", kb_rope(ctx, 2, 1, 4, NULL, pos, 1e4f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "positions must not be NULL", kb_rope(ctx, 2, 1, 4, x, NULL, 1e4f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not be NULL", kb_rope(ctx, 2, 1, 4, x, pos, 1e4f, NULL));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "theta must be finite and > 0", kb_rope(ctx, 2, 1, 4, x, pos, 0.0f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "theta must be finite and > 0", kb_rope(ctx, 2, 1, 4, x, pos, -1.0f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "theta must be finite and > 0", kb_rope(ctx, 2, 1, 4, x, pos, NAN, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "theta must be finite and > 0", kb_rope(ctx, 2, 1, 4, x, pos, INFINITY, y));
  pos[1] = -5;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "positions[1] must be >= 0, got -5", kb_rope(ctx, 2, 1, 4, x, pos, 1e4f, y));
  pos[1] = 1;
  CHECK(all_f(y, 8, SENTINEL_F));
  memcpy(buf, x, sizeof x);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y partially overlaps x", kb_rope(ctx, 1, 1, 4, buf, pos, 1e4f, buf + 2));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not overlap positions",
              kb_rope(ctx, 1, 1, 4, x, (const int32_t *)(void *)(buf + 1), 1e4f, buf));
  CHECK(memcmp(buf, x, sizeof x) == 0);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_hand_values);
  KB_RUN(test_against_formula);
  KB_RUN(test_empty);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
