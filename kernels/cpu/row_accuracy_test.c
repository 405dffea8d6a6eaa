/* The documented error bounds of the row kernels (docs/kernels.md,
 * "Row-wise kernels"): softmax, log_softmax, cross-entropy forward and
 * backward, rmsnorm and layernorm against the documented double-precision
 * formulas (docs/kernels.md), with the sums of exponentials computed without
 * rounding the small terms into the maximum's 1 first (s is the double
 * nearest the exact sum), over rows of many widths (one and several
 * online-maximum blocks, blocks longer than 1024), magnitudes (including a
 * maximum beyond 3e5, the kernels' TwoSum path), -inf entries and repeated
 * maxima.  Errors in ulps of the exact value, as the conformance runner
 * measures them (no absolute floor), except the norms' and the
 * cross-entropy's, in units of their documented bounds. */
#include "kernels/cpu/testutil/cpu_test.h"
#include "kernels/cpu/testutil/vmath_check.h"

#define BOUND_SOFTMAX 1.57
#define BOUND_LOG_SOFTMAX 1.5
/* cross-entropy: 0.5 ulp of the loss plus 6.1 * 2^-24 absolute (log s,
 * with s to 6.07 * 2^-24 relative: each term rounded once, at most five
 * float additions; docs/kernels.md) plus the double steps' 2^-51 |loss|,
 * measured in units of that bound. */
#define BOUND_CE 1.0
#define BOUND_CE_BACKWARD 1.57
/* rmsnorm: 0.5 ulp of y plus 2^-24 |y| (t = x * inv and t * w each
 * rounded once), so 1.5 ulp; layernorm: 0.5 ulp of y plus 2^-24 |t * w|
 * with t = (x - mean) * inv, measured in units of that bound (the bias may
 * cancel t * w, so no ulp bound of y alone holds).  Both plus the
 * statistics' double roundings (below 2^-36 relative). */
#define BOUND_RMSNORM 1.5001
#define BOUND_LAYERNORM 1.0001

/* m, s - 1 (the maximum's own 1s apart) and log s (of s in double, as the
 * documented formula) of a row. */
static void ref_lse(const float *x, int64_t cols, double *m, double *sm1, double *l) {
  double mm = -INFINITY, rest = 0.0;
  int64_t ones = 0;
  for (int64_t c = 0; c < cols; c++)
    if (x[c] > mm) mm = x[c];
  for (int64_t c = 0; c < cols; c++) {
    if ((double)x[c] == mm)
      ones++;
    else
      rest += exp((double)x[c] - mm);
  }
  *m = mm;
  *sm1 = (double)(ones - 1) + rest;
  *l = log((double)ones + rest);
}

struct worst {
  double softmax, log_softmax, ce, ce_backward, rmsnorm, layernorm;
};

static void keep(double *w, double e) {
  if (!(e <= *w)) *w = e;
}

static void check_rows(kb_context *ctx, int64_t rows, int64_t cols, const float *x, struct worst *w) {
  int64_t n = rows * cols;
  float *y = alloc_f(n), *wt = alloc_f(cols), *bs = alloc_f(cols), *loss = alloc_f(rows), mean;
  int32_t *t = alloc_i(rows);
  rand_fill(wt, cols, 17, 0.5f, 1.5f);
  rand_fill(bs, cols, 18, -0.5f, 0.5f);
  for (int64_t r = 0; r < rows; r++) t[r] = (int32_t)((r * 7919 + 3) % cols);
  CHECK_OK(kb_softmax(ctx, rows, cols, x, y));
  for (int64_t r = 0; r < rows; r++) {
    double m, sm1, l;
    ref_lse(x + r * cols, cols, &m, &sm1, &l);
    for (int64_t c = 0; c < cols; c++)
      keep(&w->softmax, vmc_error(y[r * cols + c], exp((double)x[r * cols + c] - m) / (1.0 + sm1)));
  }
  CHECK_OK(kb_log_softmax(ctx, rows, cols, x, y));
  for (int64_t r = 0; r < rows; r++) {
    double m, sm1, l;
    ref_lse(x + r * cols, cols, &m, &sm1, &l);
    for (int64_t c = 0; c < cols; c++) {
      double xv = (double)x[r * cols + c];
      keep(&w->log_softmax, vmc_error(y[r * cols + c], xv == -INFINITY ? -INFINITY : (xv - m) - l));
    }
  }
  CHECK_OK(kb_cross_entropy(ctx, rows, cols, x, t, -100, loss, &mean));
  for (int64_t r = 0; r < rows; r++) {
    double m, sm1, l;
    ref_lse(x + r * cols, cols, &m, &sm1, &l);
    double want = (m - (double)x[r * cols + t[r]]) + l;
    double bound = 0.5 * vmc_ulp32(want) + 6.1 * 0x1p-24 + 0x1p-51 * fabs(want);
    keep(&w->ce, isinf(want) && loss[r] == want ? 0.0 : fabs((double)loss[r] - want) / bound);
  }
  CHECK_OK(kb_cross_entropy_backward(ctx, rows, cols, x, t, -100, 0.75f, y));
  double scale = 0.75 / (double)rows;
  for (int64_t r = 0; r < rows; r++) {
    double m, sm1, l;
    ref_lse(x + r * cols, cols, &m, &sm1, &l);
    for (int64_t c = 0; c < cols; c++) {
      double d = (double)x[r * cols + c] - m;
      double p = c == t[r] ? exp(d) / (1.0 + sm1) - 1.0 : exp(d) / (1.0 + sm1);
      keep(&w->ce_backward, vmc_error(y[r * cols + c], p * scale));
    }
  }
  /* The norms on finite rows only (-inf rows are NaN by definition). */
  bool finite = true;
  for (int64_t i = 0; i < n; i++) finite = finite && isfinite(x[i]);
  if (finite) {
    CHECK_OK(kb_rmsnorm(ctx, rows, cols, x, wt, 1e-5f, y));
    for (int64_t r = 0; r < rows; r++) {
      double ss = 0.0;
      for (int64_t c = 0; c < cols; c++) ss += (double)x[r * cols + c] * (double)x[r * cols + c];
      double inv = 1.0 / sqrt(ss / (double)cols + (double)1e-5f);
      for (int64_t c = 0; c < cols; c++)
        keep(&w->rmsnorm, vmc_error(y[r * cols + c], (double)x[r * cols + c] * inv * (double)wt[c]));
    }
    CHECK_OK(kb_layernorm(ctx, rows, cols, x, wt, bs, 1e-5f, y));
    for (int64_t r = 0; r < rows; r++) {
      double s = 0.0, q = 0.0;
      for (int64_t c = 0; c < cols; c++) s += (double)x[r * cols + c];
      double mu = s / (double)cols;
      for (int64_t c = 0; c < cols; c++) q += ((double)x[r * cols + c] - mu) * ((double)x[r * cols + c] - mu);
      double inv = 1.0 / sqrt(q / (double)cols + (double)1e-5f);
      for (int64_t c = 0; c < cols; c++)
      {
        double tw = ((double)x[r * cols + c] - mu) * inv * (double)wt[c], want = tw + (double)bs[c];
        double err = fabs((double)y[r * cols + c] - want);
        double bound = 0.5 * vmc_ulp32(want) + 0x1p-24 * fabs(tw);
        keep(&w->layernorm, err / bound);
      }
    }
  }
  free(y);
  free(wt);
  free(bs);
  free(loss);
  free(t);
}

static void test_bounds(void) {
  kb_context *ctx = make_ctx(2);
  const int64_t widths[] = {1, 5, 64, 1000, 1025, 3000, 70000};
  const float scales[] = {1.0f, 10.0f, 60.0f, 1000.0f, 1e6f};
  struct worst w = {0, 0, 0, 0, 0, 0};
  for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
    int64_t cols = widths[wi], rows = cols >= 3000 ? 2 : 40;
    float *x = alloc_f(rows * cols);
    for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++) {
      for (int variant = 0; variant < 3; variant++) {
        rand_fill(x, rows * cols, 1000 + (uint64_t)(wi * 10 + si) * 3 + (uint64_t)variant, -scales[si], scales[si]);
        if (variant == 1) /* -inf entries, a repeated maximum */
          for (int64_t r = 0; r < rows; r++) {
            for (int64_t c = 0; c < cols; c += 3) x[r * cols + c] = -INFINITY;
            x[r * cols + cols - 1] = scales[si] * 2.0f;
            x[r * cols + cols / 2] = scales[si] * 2.0f;
          }
        if (variant == 2) /* one dominant element: s barely above 1 */
          for (int64_t r = 0; r < rows; r++) x[r * cols + (r % cols)] = scales[si] + 40.0f;
        check_rows(ctx, rows, cols, x, &w);
      }
    }
    free(x);
  }
  printf("max ulp: softmax %.3f (bound %.2f), log_softmax %.3f (%.2f), cross_entropy %.3f of its bound (%.2f), backward %.3f "
         "(%.2f), rmsnorm %.3f (%.2f), layernorm %.3f of its bound (%.2f)\n",
         w.softmax, BOUND_SOFTMAX, w.log_softmax, BOUND_LOG_SOFTMAX, w.ce, BOUND_CE, w.ce_backward, BOUND_CE_BACKWARD,
         w.rmsnorm, BOUND_RMSNORM, w.layernorm, BOUND_LAYERNORM);
  CHECK(w.softmax <= BOUND_SOFTMAX);
  CHECK(w.log_softmax <= BOUND_LOG_SOFTMAX);
  CHECK(w.ce <= BOUND_CE);
  CHECK(w.ce_backward <= BOUND_CE_BACKWARD);
  CHECK(w.rmsnorm <= BOUND_RMSNORM);
  CHECK(w.layernorm <= BOUND_LAYERNORM);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_bounds);
  return kb_test_summary();
}
