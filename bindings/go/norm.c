/* vendored by tools/vendor_c.py from kernels/cpu/norm.c; do not edit */
/* norm.c - RMSNorm and LayerNorm over the rows of a [rows, cols] matrix.
 *
 * Statistics are accumulated sequentially in double (the mean of squares for
 * RMSNorm; mean, then the biased variance about it in a second pass, for
 * LayerNorm: the two-pass form avoids the cancellation of E[x^2] - E[x]^2).
 * Each output is computed in double and rounded once.  Statistics are
 * gathered before the row is written, so y may be x. */
#include <math.h>

#include "internal.h"
#include "rowwise.h"

struct norm_job {
  int64_t cols;
  const float *x, *weight, *bias;
  double eps;
  float *y;
};

static void rmsnorm_body(void *arg, int64_t begin, int64_t end) {
  const struct norm_job *job = (const struct norm_job *)arg;
  int64_t cols = job->cols;
  for (int64_t r = begin; r < end; r++) {
    const float *x = job->x + r * cols;
    float *y = job->y + r * cols;
    double ss = 0.0;
    for (int64_t c = 0; c < cols; c++) ss += (double)x[c] * (double)x[c];
    double inv = 1.0 / sqrt(ss / (double)cols + job->eps);
    for (int64_t c = 0; c < cols; c++) y[c] = (float)((double)x[c] * inv * (double)job->weight[c]);
  }
}

static void layernorm_body(void *arg, int64_t begin, int64_t end) {
  const struct norm_job *job = (const struct norm_job *)arg;
  int64_t cols = job->cols;
  for (int64_t r = begin; r < end; r++) {
    const float *x = job->x + r * cols;
    float *y = job->y + r * cols;
    double sum = 0.0;
    for (int64_t c = 0; c < cols; c++) sum += (double)x[c];
    double mean = sum / (double)cols;
    double sq = 0.0;
    for (int64_t c = 0; c < cols; c++) {
      double d = (double)x[c] - mean;
      sq += d * d;
    }
    double inv = 1.0 / sqrt(sq / (double)cols + job->eps);
    for (int64_t c = 0; c < cols; c++) {
      double v = ((double)x[c] - mean) * inv;
      if (job->weight != NULL) v *= (double)job->weight[c];
      if (job->bias != NULL) v += (double)job->bias[c];
      y[c] = (float)v;
    }
  }
}

/* Validation shared by both norms; weight_nullable says whether NULL weight
 * (and bias) mean "no affine transform" or are errors. */
static kb_status validate(kb_context *ctx, const char *fn, int64_t rows, int64_t cols, const float *x,
                          const float *weight, const float *bias, bool nullable, float eps, const float *y,
                          int64_t *count) {
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  KB_TRY(kb__check_inner(ctx, fn, "cols", cols, "rows", rows));
  int64_t dims[2] = {rows, cols}, wcount;
  KB_TRY(kb__count(ctx, fn, "x", (int64_t)sizeof(float), 2, dims, count));
  KB_TRY(kb__count(ctx, fn, "weight", (int64_t)sizeof(float), 1, &cols, &wcount));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, *count));
  if (!nullable) KB_TRY(kb__check_ptr(ctx, fn, "weight", weight, wcount));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, *count));
  KB_TRY(kb__check_finite(ctx, fn, "eps", (double)eps, true));
  int64_t bytes = *count * (int64_t)sizeof(float), wbytes = wcount * (int64_t)sizeof(float);
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "weight", weight, wbytes, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "bias", bias, wbytes, false));
  return KB_STATUS_OK;
}

kb_status kb_rmsnorm(kb_context *ctx, int64_t rows, int64_t cols, const float *x, const float *weight, float eps,
                     float *y) {
  static const char fn[] = "kb_rmsnorm";
  kb__begin(ctx);
  int64_t count;
  KB_TRY(validate(ctx, fn, rows, cols, x, weight, NULL, false, eps, y, &count));
  if (count == 0) return KB_STATUS_OK;
  struct norm_job job = {cols, x, weight, NULL, (double)eps, y};
  kb__parallel_for(ctx, rows, kb_cpu_min_rows(cols), rmsnorm_body, &job);
  return KB_STATUS_OK;
}

kb_status kb_layernorm(kb_context *ctx, int64_t rows, int64_t cols, const float *x, const float *weight,
                       const float *bias, float eps, float *y) {
  static const char fn[] = "kb_layernorm";
  kb__begin(ctx);
  int64_t count;
  KB_TRY(validate(ctx, fn, rows, cols, x, weight, bias, true, eps, y, &count));
  if (count == 0) return KB_STATUS_OK;
  struct norm_job job = {cols, x, weight, bias, (double)eps, y};
  kb__parallel_for(ctx, rows, kb_cpu_min_rows(cols), layernorm_body, &job);
  return KB_STATUS_OK;
}
