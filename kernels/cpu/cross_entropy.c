/* cross_entropy.c - softmax cross-entropy over classes, forward and backward,
 * with PyTorch's ignore_index and mean reduction.
 *
 * Per row (vec_body.h, ce_forward): the maximum m, then s = sum e^(x - m)
 * in float32 arithmetic (each term's argument exact, the terms added in
 * float per group of 256, the groups in double); loss = (m - x_t) + log s
 * in double, rounded once (docs/kernels.md gives the bound).  The backward
 * pass (one read for m and s as softmax computes them) reads the row once more and
 * writes e^(x - m) * (scale / s), with the target's (p - 1) * scale in
 * double.  The mean is the sequential double sum of the float losses of the
 * rows not ignored, divided by their count.  All targets are validated (and
 * counted) before any output is written. */
#include <math.h>

#include "dispatch.h"
#include "internal.h"
#include "rowwise.h"

/* Size and pointer checks of the inputs, shared by forward and backward. */
static kb_status validate(kb_context *ctx, const char *fn, int64_t rows, int64_t classes, const float *logits,
                          const int32_t *targets, int64_t *logit_count) {
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "classes", classes));
  KB_TRY(kb__check_inner(ctx, fn, "classes", classes, "rows", rows));
  int64_t dims[2] = {rows, classes}, t_count;
  KB_TRY(kb__count(ctx, fn, "logits", (int64_t)sizeof(float), 2, dims, logit_count));
  KB_TRY(kb__count(ctx, fn, "targets", (int64_t)sizeof(int32_t), 1, &rows, &t_count));
  KB_TRY(kb__check_ptr(ctx, fn, "logits", logits, *logit_count));
  KB_TRY(kb__check_ptr(ctx, fn, "targets", targets, t_count));
  return KB_STATUS_OK;
}

/* The message of a target outside [0, classes) that is not ignore_index,
 * shared by the CPU and CUDA paths. */
static kb_status bad_target(kb_context *ctx, const char *fn, int64_t r, int32_t t, int64_t classes,
                            int32_t ignore_index) {
  return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                  "targets[%lld] = %ld is out of range [0, %lld) and is not ignore_index (%ld)", (long long)r, (long)t,
                  (long long)classes, (long)ignore_index);
}

/* Last validation step, after the outputs' own checks and the memory-kind
 * check: every target is in range or ignored.  On success *count is the
 * number of rows not ignored (on CUDA the device counts them itself). */
static kb_status check_targets(kb_context *ctx, const char *fn, int64_t rows, int64_t classes, const int32_t *targets,
                               int32_t ignore_index, int64_t *count) {
  if (kb__on_cuda(ctx)) {
    /* The host cannot read device memory: the device finds the first
     * offender and the message is formatted here, as on the CPU. */
    *count = 0;
    if (rows == 0) return KB_STATUS_OK;
    int64_t bad;
    int32_t value;
    kbcuda_status st =
        ctx->cuda->validate_index(ctx->cuda_ctx, fn, rows, targets, 0, classes, 1, ignore_index, &bad, &value);
    if (st != KBCUDA_STATUS_OK) return kb__cuda_finish(ctx, fn, st);
    if (bad >= 0) return bad_target(ctx, fn, bad, value, classes, ignore_index);
    return KB_STATUS_OK;
  }
  int64_t n = 0;
  for (int64_t r = 0; r < rows; r++) {
    int32_t t = targets[r];
    if (t == ignore_index) continue;
    if (t < 0 || (int64_t)t >= classes) return bad_target(ctx, fn, r, t, classes, ignore_index);
    n++;
  }
  *count = n;
  return KB_STATUS_OK;
}

struct ce_job {
  const struct kb_vec_ops *ops;
  int64_t classes;
  const float *logits;
  const int32_t *targets;
  int32_t ignore_index;
  float *out;   /* losses (forward) or dlogits (backward) */
  double scale; /* backward: dloss / count */
};

static void forward_body(void *arg, int64_t begin, int64_t end) {
  const struct ce_job *j = (const struct ce_job *)arg;
  j->ops->ce_forward(end - begin, j->classes, j->logits + begin * j->classes, j->targets + begin, j->ignore_index,
                     j->out + begin);
}

static void backward_body(void *arg, int64_t begin, int64_t end) {
  const struct ce_job *j = (const struct ce_job *)arg;
  j->ops->ce_backward(end - begin, j->classes, j->logits + begin * j->classes, j->targets + begin, j->ignore_index,
                      j->scale, j->out + begin * j->classes);
}

kb_status kb_cross_entropy(kb_context *ctx, int64_t rows, int64_t classes, const float *logits, const int32_t *targets,
                           int32_t ignore_index, float *losses, float *mean_loss) {
  static const char fn[] = "kb_cross_entropy";
  KB_BEGIN(ctx, fn);
  int64_t logit_count, count;
  KB_TRY(validate(ctx, fn, rows, classes, logits, targets, &logit_count));
  KB_TRY(kb__check_ptr(ctx, fn, "losses", losses, rows));
  KB_TRY(kb__check_ptr(ctx, fn, "mean_loss", mean_loss, 1));
  int64_t fs = (int64_t)sizeof(float), lb = rows * fs, xb = logit_count * fs, tb = rows * (int64_t)sizeof(int32_t);
  KB_TRY(kb__check_overlap(ctx, fn, "losses", losses, lb, "logits", logits, xb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "losses", losses, lb, "targets", targets, tb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "mean_loss", mean_loss, fs, "logits", logits, xb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "mean_loss", mean_loss, fs, "targets", targets, tb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "mean_loss", mean_loss, fs, "losses", losses, lb, false));
  const struct kb_mem_ref refs[] = {
      {"logits", logits, xb}, {"targets", targets, tb}, {"losses", losses, lb}, {"mean_loss", mean_loss, fs}};
  KB_TRY(kb__check_memory(ctx, fn, 4, refs));
  KB_TRY(check_targets(ctx, fn, rows, classes, targets, ignore_index, &count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->cross_entropy(ctx->cuda_ctx, fn, rows, classes, logits, targets, ignore_index,
                                                    losses, mean_loss));
  if (rows > 0) {
    struct ce_job job = {&kb__cpu_ops()->vec, classes, logits, targets, ignore_index, losses, 0.0};
    kb__parallel_for(ctx, rows, kb_cpu_min_rows(classes), forward_body, &job);
  }
  /* Sequential sum in row order: the same bits for every thread count. */
  double sum = 0.0;
  for (int64_t r = 0; r < rows; r++)
    if (targets[r] != ignore_index) sum += (double)losses[r];
  mean_loss[0] = count > 0 ? (float)(sum / (double)count) : NAN;
  return KB_STATUS_OK;
}

kb_status kb_cross_entropy_backward(kb_context *ctx, int64_t rows, int64_t classes, const float *logits,
                                    const int32_t *targets, int32_t ignore_index, float dloss, float *dlogits) {
  static const char fn[] = "kb_cross_entropy_backward";
  KB_BEGIN(ctx, fn);
  int64_t logit_count, count;
  KB_TRY(validate(ctx, fn, rows, classes, logits, targets, &logit_count));
  KB_TRY(kb__check_ptr(ctx, fn, "dlogits", dlogits, logit_count));
  KB_TRY(kb__check_finite(ctx, fn, "dloss", (double)dloss, false));
  int64_t xb = logit_count * (int64_t)sizeof(float), tb = rows * (int64_t)sizeof(int32_t);
  KB_TRY(kb__check_overlap(ctx, fn, "dlogits", dlogits, xb, "logits", logits, xb, true));
  KB_TRY(kb__check_overlap(ctx, fn, "dlogits", dlogits, xb, "targets", targets, tb, false));
  const struct kb_mem_ref refs[] = {{"logits", logits, xb}, {"targets", targets, tb}, {"dlogits", dlogits, xb}};
  KB_TRY(kb__check_memory(ctx, fn, 3, refs));
  KB_TRY(check_targets(ctx, fn, rows, classes, targets, ignore_index, &count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->cross_entropy_backward(ctx->cuda_ctx, fn, rows, classes, logits, targets,
                                                             ignore_index, dloss, dlogits));
  if (logit_count == 0) return KB_STATUS_OK;
  /* With every row ignored, count is 0 and every row is written as zeros. */
  struct ce_job job = {&kb__cpu_ops()->vec, classes,  logits, targets,
                       ignore_index,        dlogits, count > 0 ? (double)dloss / (double)count : 0.0};
  kb__parallel_for(ctx, rows, kb_cpu_min_rows(classes), backward_body, &job);
  return KB_STATUS_OK;
}
