/* Tests of kb_softmax and kb_log_softmax. */
#include "kernels/cpu/testutil/cpu_test.h"

typedef kb_status (*row_fn)(kb_context *, int64_t, int64_t, const float *, float *);
static const row_fn kFns[] = {kb_softmax, kb_log_softmax};
static const char *const kNames[] = {"kb_softmax", "kb_log_softmax"};

/* Double-precision reference of one row. */
static void ref_row(const float *x, int64_t cols, bool log_out, double *y) {
  double m = -INFINITY, s = 0.0;
  for (int64_t c = 0; c < cols; c++)
    if (x[c] > m) m = x[c];
  for (int64_t c = 0; c < cols; c++) s += exp((double)x[c] - m);
  for (int64_t c = 0; c < cols; c++) y[c] = log_out ? (double)x[c] - m - log(s) : exp((double)x[c] - m) / s;
}

static void test_hand_values(void) {
  float x[3] = {1.0f, 2.0f, 3.0f}, y[3];
  CHECK_OK(kb_softmax(NULL, 1, 3, x, y));
  CHECK_CLOSE(y[0], 0.09003057317038046, 0.0, 1e-7);
  CHECK_CLOSE(y[1], 0.24472847105479764, 0.0, 1e-7);
  CHECK_CLOSE(y[2], 0.6652409557748219, 0.0, 1e-7);
  CHECK_OK(kb_log_softmax(NULL, 1, 3, x, y));
  CHECK_CLOSE(y[0], -2.4076059644443806, 0.0, 1e-7);
  CHECK_CLOSE(y[1], -1.4076059644443806, 0.0, 1e-7);
  CHECK_CLOSE(y[2], -0.4076059644443806, 0.0, 1e-7);
}

static void test_properties(void) {
  enum { R = 13, C = 37 };
  float x[R * C], p[R * C], lp[R * C];
  rand_fill(x, R * C, 3, -10.0f, 10.0f);
  CHECK_OK(kb_softmax(NULL, R, C, x, p));
  CHECK_OK(kb_log_softmax(NULL, R, C, x, lp));
  for (int r = 0; r < R; r++) {
    double sum = 0.0, ref[C];
    ref_row(x + r * C, C, false, ref);
    for (int c = 0; c < C; c++) {
      sum += p[r * C + c];
      CHECK(p[r * C + c] >= 0.0f);
      CHECK_CLOSE(p[r * C + c], ref[c], 1e-45, 1.2e-7);
      /* log_softmax = log(softmax), to float accuracy of the log. */
      CHECK_CLOSE(lp[r * C + c], log((double)p[r * C + c]), 2e-6, 2e-7);
    }
    CHECK_CLOSE(sum, 1.0, 1e-6, 0.0);
    ref_row(x + r * C, C, true, ref);
    for (int c = 0; c < C; c++) CHECK_CLOSE(lp[r * C + c], ref[c], 1e-7, 1.2e-7);
  }
}

static void test_large_magnitudes(void) {
  float x[4] = {1e4f, 1e4f - 1.0f, -1e4f, -1e4f}, y[4];
  CHECK_OK(kb_softmax(NULL, 1, 4, x, y));
  CHECK_CLOSE(y[0], 0.7310585786300049, 0.0, 1e-7);
  CHECK_CLOSE(y[1], 0.2689414213699951, 0.0, 1e-7);
  CHECK(y[2] == 0.0f && y[3] == 0.0f);
  CHECK_OK(kb_log_softmax(NULL, 1, 4, x, y));
  CHECK_CLOSE(y[0], -0.31326168751822286, 0.0, 1e-7);
  CHECK_CLOSE(y[2], -20000.31326168752, 0.0, 1e-7);
}

static void test_special_values(void) {
  const float ninf = -INFINITY;
  float x[12] = {1.0f, NAN, 2.0f, /* NaN row */
                 ninf, ninf, ninf, /* all -inf */
                 0.0f, ninf, 0.0f, /* -inf entry */
                 1.0f, 2.0f, INFINITY};
  float y[12];
  for (int f = 0; f < 2; f++) {
    CHECK_OK(kFns[f](NULL, 4, 3, x, y));
    for (int c = 0; c < 3; c++) CHECK(isnan(y[c]));
    for (int c = 3; c < 6; c++) CHECK(isnan(y[c]));
    if (f == 0) {
      CHECK(y[6] == 0.5f && y[7] == 0.0f && y[8] == 0.5f);
    } else {
      CHECK_CLOSE(y[6], -0.6931471805599453, 0.0, 1e-7);
      CHECK(y[7] == -INFINITY);
    }
    for (int c = 9; c < 12; c++) CHECK(isnan(y[c])); /* +inf: inf - inf */
  }
}

static void test_edge_sizes_and_in_place(void) {
  static const int64_t sizes[] = {1, 7, 9, 17, 33};
  for (size_t s = 0; s < 5; s++) {
    int64_t cols = sizes[s], rows = 3, n = rows * cols;
    float *x = alloc_f(n), *y = alloc_f(n), *buf = alloc_f(n);
    double *ref = (double *)calloc((size_t)cols, sizeof(double));
    rand_fill(x, n, 40 + (uint64_t)cols, -5.0f, 5.0f);
    for (int f = 0; f < 2; f++) {
      CHECK_OK(kFns[f](NULL, rows, cols, x, y));
      for (int64_t r = 0; r < rows; r++) {
        ref_row(x + r * cols, cols, f == 1, ref);
        for (int64_t c = 0; c < cols; c++) CHECK_CLOSE(y[r * cols + c], ref[c], 1e-7, 1.2e-7);
      }
      memcpy(buf, x, (size_t)n * sizeof(float));
      CHECK_OK(kFns[f](NULL, rows, cols, buf, buf));
      CHECK(same_bits_f(buf, y, n));
    }
    if (cols == 1) CHECK(y[0] == 0.0f); /* log_softmax of one element */
    free(x);
    free(y);
    free(buf);
    free(ref);
  }
}

static void test_empty(void) {
  for (int f = 0; f < 2; f++) {
    CHECK_OK(kFns[f](NULL, 0, 0, NULL, NULL));
    CHECK_OK(kFns[f](NULL, 0, 5, NULL, NULL));
  }
}

static void test_threads_bitwise_identical(void) {
  enum { R = 301, C = 1000 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *x = alloc_f(R * C), *y1 = alloc_f(R * C), *y3 = alloc_f(R * C);
  rand_fill(x, R * C, 5, -30.0f, 30.0f);
  for (int f = 0; f < 2; f++) {
    CHECK_OK(kFns[f](c1, R, C, x, y1));
    CHECK_OK(kFns[f](c3, R, C, x, y3));
    CHECK(same_bits_f(y1, y3, R * C));
  }
  free(x);
  free(y1);
  free(y3);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8], buf[8];
  for (int f = 0; f < 2; f++) {
    fill_f(y, 8, SENTINEL_F);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "rows must be >= 0, got -2", kFns[f](ctx, -2, 4, x, y));
    CHECK_STR_CONTAINS(kb_context_last_error(ctx), kNames[f]);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be >= 0, got -3", kFns[f](ctx, 2, -3, x, y));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be > 0 when rows > 0", kFns[f](ctx, 2, 0, x, y));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x must not be NULL", kFns[f](ctx, 2, 4, NULL, y));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y must not be NULL", kFns[f](ctx, 2, 4, x, NULL));
    CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of x overflows", kFns[f](ctx, HUGE_DIM, 4, x, y));
    CHECK(all_f(y, 8, SENTINEL_F));
    memcpy(buf, x, sizeof x);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y partially overlaps x", kFns[f](ctx, 1, 4, buf, buf + 4 - 1));
    CHECK(memcmp(buf, x, sizeof x) == 0);
  }
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_hand_values);
  KB_RUN(test_properties);
  KB_RUN(test_large_magnitudes);
  KB_RUN(test_special_values);
  KB_RUN(test_edge_sizes_and_in_place);
  KB_RUN(test_empty);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
