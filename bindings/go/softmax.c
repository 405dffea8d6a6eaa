/* vendored by tools/vendor_c.py from kernels/cpu/softmax.c; do not edit */
/* softmax.c - softmax and log-softmax over the rows of a [rows, cols] matrix.
 *
 * Per row: m = max (NaN ignored), s = sum exp(x - m) in double, then each
 * output is computed in double from its own input and rounded once.  exp is
 * evaluated twice per element instead of being cached: that needs no scratch
 * memory (so no allocation can fail) and keeps in-place use trivially safe,
 * because y[c] is written only after the row's sum no longer needs x. */
#include <math.h>

#include "internal.h"
#include "rowwise.h"

struct softmax_job {
  int64_t cols;
  const float *x;
  float *y;
  bool want_log;
};

static void softmax_body(void *arg, int64_t begin, int64_t end) {
  const struct softmax_job *job = (const struct softmax_job *)arg;
  int64_t cols = job->cols;
  for (int64_t r = begin; r < end; r++) {
    const float *x = job->x + r * cols;
    float *y = job->y + r * cols;
    double m = kb_cpu_row_max(x, cols);
    double s = kb_cpu_sum_exp(x, cols, m);
    if (job->want_log) {
      double ls = log(s);
      for (int64_t c = 0; c < cols; c++) y[c] = (float)(((double)x[c] - m) - ls);
    } else {
      for (int64_t c = 0; c < cols; c++) y[c] = (float)(exp((double)x[c] - m) / s);
    }
  }
}

static kb_status run(kb_context *ctx, const char *fn, int64_t rows, int64_t cols, const float *x, float *y, bool want_log) {
  kb__begin(ctx);
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  KB_TRY(kb__check_inner(ctx, fn, "cols", cols, "rows", rows));
  int64_t dims[2] = {rows, cols}, count;
  KB_TRY(kb__count(ctx, fn, "x", (int64_t)sizeof(float), 2, dims, &count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, count));
  int64_t bytes = count * (int64_t)sizeof(float);
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  if (count == 0) return KB_STATUS_OK;
  struct softmax_job job = {cols, x, y, want_log};
  kb__parallel_for(ctx, rows, kb_cpu_min_rows(cols), softmax_body, &job);
  return KB_STATUS_OK;
}

kb_status kb_softmax(kb_context *ctx, int64_t rows, int64_t cols, const float *x, float *y) {
  return run(ctx, "kb_softmax", rows, cols, x, y, false);
}

kb_status kb_log_softmax(kb_context *ctx, int64_t rows, int64_t cols, const float *x, float *y) {
  return run(ctx, "kb_log_softmax", rows, cols, x, y, true);
}
