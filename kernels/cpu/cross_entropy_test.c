/* Tests of kb_cross_entropy and kb_cross_entropy_backward. */
#include "kernels/cpu/testutil/cpu_test.h"

static double ref_lse(const float *x, int64_t n) {
  double m = -INFINITY, s = 0;
  for (int64_t c = 0; c < n; c++)
    if (x[c] > m) m = x[c];
  for (int64_t c = 0; c < n; c++) s += exp((double)x[c] - m);
  return m + log(s);
}

static void test_hand_values(void) {
  /* Row 0: logits (1, 2, 3), target 2: loss = log(e + e^2 + e^3) - 3. */
  float x[6] = {1, 2, 3, 0, 0, 0}, losses[2], mean;
  int32_t t[2] = {2, 0};
  CHECK_OK(kb_cross_entropy(NULL, 2, 3, x, t, -100, losses, &mean));
  CHECK_CLOSE(losses[0], 0.40760596444438030, 0, 1e-7);
  CHECK_CLOSE(losses[1], log(3.0), 0, 1e-7);
  CHECK_CLOSE(mean, (0.40760596444438030 + log(3.0)) / 2, 0, 1e-7);
  /* ignore_index: the row's loss is 0 and it leaves the mean. */
  t[1] = -100;
  CHECK_OK(kb_cross_entropy(NULL, 2, 3, x, t, -100, losses, &mean));
  CHECK(losses[1] == 0.0f);
  CHECK_CLOSE(mean, 0.40760596444438030, 0, 1e-7);
  /* Every row ignored: the mean is NaN (as PyTorch), losses are 0. */
  t[0] = -100;
  CHECK_OK(kb_cross_entropy(NULL, 2, 3, x, t, -100, losses, &mean));
  CHECK(isnan(mean) && losses[0] == 0.0f && losses[1] == 0.0f);
  /* Large logits stay finite. */
  float big[3] = {1e4f, -1e4f, 0};
  int32_t tb = 1;
  CHECK_OK(kb_cross_entropy(NULL, 1, 3, big, &tb, -1, losses, &mean));
  CHECK_CLOSE(losses[0], 2e4, 0, 1e-7);
}

static void test_forward_reference(void) {
  static const int64_t sizes[] = {1, 7, 9, 17, 33};
  for (int s = 0; s < 5; s++) {
    int64_t rows = 6, cols = sizes[s];
    float *x = alloc_f(rows * cols), losses[6], mean;
    int32_t t[6];
    rand_fill(x, rows * cols, 20 + (uint64_t)cols, -8.0f, 8.0f);
    for (int r = 0; r < 6; r++) t[r] = (int32_t)((r * 5) % cols);
    t[3] = 7777; /* a custom ignore_index */
    CHECK_OK(kb_cross_entropy(NULL, rows, cols, x, t, 7777, losses, &mean));
    double sum = 0;
    for (int r = 0; r < 6; r++) {
      double want = r == 3 ? 0.0 : ref_lse(x + r * cols, cols) - x[r * cols + t[r]];
      CHECK_CLOSE(losses[r], want, 1e-6, 2e-7);
      if (r != 3) sum += (double)losses[r];
    }
    CHECK_CLOSE(mean, sum / 5, 0, 1.2e-7);
    free(x);
  }
}

/* Backward against the analytic formula in double and against central
 * finite differences of the forward mean loss (in double). */
static void test_backward(void) {
  enum { R = 4, C = 9 };
  float x[R * C], g[R * C], buf[R * C];
  int32_t t[R] = {3, -1, 0, 8};
  rand_fill(x, R * C, 31, -3.0f, 3.0f);
  const float dloss = 1.7f;
  CHECK_OK(kb_cross_entropy_backward(NULL, R, C, x, t, -1, dloss, g));
  for (int r = 0; r < R; r++) {
    double lse = ref_lse(x + r * C, C);
    for (int c = 0; c < C; c++) {
      double want = t[r] == -1 ? 0.0 : dloss * (exp(x[r * C + c] - lse) - (c == t[r])) / 3.0;
      CHECK_CLOSE(g[r * C + c], want, 1e-7, 2e-7);
    }
  }
  /* Finite differences of dloss * mean over the 3 rows not ignored. */
  for (int r = 0; r < R; r++) {
    if (t[r] == -1) continue;
    for (int c = 0; c < C; c++) {
      const double h = 1e-4;
      double lp = 0, lm = 0;
      double xs[C];
      for (int j = 0; j < C; j++) xs[j] = x[r * C + j];
      /* loss(row) = lse - x_t, computed from double logits */
      for (int sgn = 0; sgn < 2; sgn++) {
        xs[c] = x[r * C + c] + (sgn ? -h : h);
        double m = -INFINITY, s = 0;
        for (int j = 0; j < C; j++) m = xs[j] > m ? xs[j] : m;
        for (int j = 0; j < C; j++) s += exp(xs[j] - m);
        double l = m + log(s) - xs[t[r]];
        if (sgn) lm = l; else lp = l;
      }
      double fd = dloss * (lp - lm) / (2 * h) / 3.0;
      CHECK_CLOSE(g[r * C + c], fd, 1e-6, 1e-5);
    }
  }
  /* In place: dlogits == logits. */
  memcpy(buf, x, sizeof x);
  CHECK_OK(kb_cross_entropy_backward(NULL, R, C, buf, t, -1, dloss, buf));
  CHECK(same_bits_f(buf, g, R * C));
  /* All ignored: zeros. */
  int32_t ti[R] = {-1, -1, -1, -1};
  CHECK_OK(kb_cross_entropy_backward(NULL, R, C, x, ti, -1, dloss, g));
  CHECK(all_f(g, R * C, 0.0f));
}

static void test_empty(void) {
  float mean = 5.0f;
  CHECK_OK(kb_cross_entropy(NULL, 0, 0, NULL, NULL, -100, NULL, &mean));
  CHECK(isnan(mean));
  CHECK_OK(kb_cross_entropy_backward(NULL, 0, 0, NULL, NULL, -100, 1.0f, NULL));
  CHECK_OK(kb_cross_entropy_backward(NULL, 0, 10, NULL, NULL, -100, 1.0f, NULL));
}

static void test_threads_bitwise_identical(void) {
  enum { R = 203, C = 1000 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *x = alloc_f(R * C), *g1 = alloc_f(R * C), *g3 = alloc_f(R * C), l1[R], l3[R], m1, m3;
  int32_t t[R];
  rand_fill(x, R * C, 8, -5, 5);
  for (int r = 0; r < R; r++) t[r] = r % 11 == 0 ? -100 : (int32_t)((r * 37) % C);
  CHECK_OK(kb_cross_entropy(c1, R, C, x, t, -100, l1, &m1));
  CHECK_OK(kb_cross_entropy(c3, R, C, x, t, -100, l3, &m3));
  CHECK(same_bits_f(l1, l3, R) && same_bits_f(&m1, &m3, 1));
  CHECK_OK(kb_cross_entropy_backward(c1, R, C, x, t, -100, 0.5f, g1));
  CHECK_OK(kb_cross_entropy_backward(c3, R, C, x, t, -100, 0.5f, g3));
  CHECK(same_bits_f(g1, g3, R * C));
  free(x);
  free(g1);
  free(g3);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_forward_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float x[6] = {1, 2, 3, 4, 5, 6}, losses[2], mean, buf[16];
  int32_t t[2] = {0, 2};
  fill_f(losses, 2, SENTINEL_F);
  mean = SENTINEL_F;
#define CE(r, c, X, T, L, M) kb_cross_entropy(ctx, r, c, X, T, -100, L, M)
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_cross_entropy: rows must be >= 0", CE(-1, 3, x, t, losses, &mean));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "classes must be >= 0", CE(2, -3, x, t, losses, &mean));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "classes must be > 0 when rows > 0", CE(2, 0, x, t, losses, &mean));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of logits overflows", CE(2, HUGE_DIM, x, t, losses, &mean));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits must not be NULL", CE(2, 3, NULL, t, losses, &mean));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "targets must not be NULL", CE(2, 3, x, NULL, losses, &mean));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "losses must not be NULL", CE(2, 3, x, t, NULL, &mean));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "mean_loss must not be NULL", CE(2, 3, x, t, losses, NULL));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "mean_loss must not be NULL", CE(0, 3, NULL, NULL, NULL, NULL));
  t[1] = 3;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "targets[1] = 3 is out of range [0, 3)", CE(2, 3, x, t, losses, &mean));
  t[1] = -1;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "targets[1] = -1", CE(2, 3, x, t, losses, &mean));
  t[1] = 2;
  CHECK(all_f(losses, 2, SENTINEL_F) && all_f(&mean, 1, SENTINEL_F));
  fill_f(buf, 16, 1.0f);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "losses must not overlap logits", CE(2, 3, buf, t, buf + 5, &mean));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "losses must not overlap targets",
              CE(2, 3, x, (const int32_t *)(void *)(buf + 1), buf, &mean));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "mean_loss must not overlap logits", CE(2, 3, buf, t, losses, buf + 2));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "mean_loss must not overlap targets",
              CE(2, 3, x, (const int32_t *)(void *)buf, losses, buf + 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "mean_loss must not overlap losses", CE(2, 3, x, t, buf, buf + 1));
  CHECK(all_f(buf, 16, 1.0f));
#undef CE
  kb_context_destroy(ctx);
}

static void test_backward_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float x[6] = {1, 2, 3, 4, 5, 6}, g[6], buf[16];
  int32_t t[2] = {0, 2};
  fill_f(g, 6, SENTINEL_F);
#define CEB(r, c, X, T, d, G) kb_cross_entropy_backward(ctx, r, c, X, T, -100, d, G)
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_cross_entropy_backward: rows must be >= 0", CEB(-1, 3, x, t, 1, g));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "classes must be >= 0", CEB(2, -3, x, t, 1, g));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "classes must be > 0 when rows > 0", CEB(2, 0, x, t, 1, g));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of logits overflows", CEB(HUGE_DIM, 3, x, t, 1, g));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits must not be NULL", CEB(2, 3, NULL, t, 1, g));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "targets must not be NULL", CEB(2, 3, x, NULL, 1, g));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "dlogits must not be NULL", CEB(2, 3, x, t, 1, NULL));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "dloss must be finite", CEB(2, 3, x, t, NAN, g));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "dloss must be finite", CEB(2, 3, x, t, INFINITY, g));
  t[0] = 9;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "targets[0] = 9 is out of range", CEB(2, 3, x, t, 1, g));
  t[0] = 0;
  CHECK(all_f(g, 6, SENTINEL_F));
  fill_f(buf, 16, 1.0f);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "dlogits partially overlaps logits", CEB(2, 3, buf, t, 1, buf + 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "dlogits must not overlap targets",
              CEB(2, 3, x, (const int32_t *)(void *)(buf + 5), 1, buf));
  CHECK(all_f(buf, 16, 1.0f));
#undef CEB
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_hand_values);
  KB_RUN(test_forward_reference);
  KB_RUN(test_backward);
  KB_RUN(test_empty);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_forward_bad_inputs);
  KB_RUN(test_backward_bad_inputs);
  return kb_test_summary();
}
