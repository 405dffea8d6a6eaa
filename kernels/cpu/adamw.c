/* adamw.c - one AdamW step with PyTorch's single-tensor order of operations.
 *
 * torch.optim.AdamW (foreach=False, fused=False) does, with Python floats
 * (double) for the hyper-parameters and float32 tensors:
 *   param.mul_(1 - lr * wd)
 *   exp_avg.lerp_(grad, 1 - beta1)
 *   exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
 *   bc1 = 1 - beta1 ** step; bc2 = 1 - beta2 ** step
 *   denom = (exp_avg_sq.sqrt() / sqrt(bc2)).add_(eps)
 *   param.addcdiv_(exp_avg, denom, value=-lr / bc1)
 * Scalar coefficients are computed in double and converted to float once, as
 * ATen does when a double scalar meets a float tensor; the tensor arithmetic
 * is float32, one rounding per operation, in ATen's scalar-kernel order:
 * lerp(m, g, w) = |w| < 0.5 ? m + w * (g - m) : g - (g - m) * (1 - w),
 * addcmul(v, g, g, c) = v + c * g * g, addcdiv(p, m, d, s) = p + s * m / d
 * (left to right).  ATen's vectorised loops may fuse some of these into FMAs,
 * so PyTorch itself can differ from this by an ulp; the sequence here is the
 * documented, reproducible one. */
#include <math.h>

#include "dispatch.h"
#include "internal.h"

#define KB_ADAMW_MIN_CHUNK 16384

struct adamw_job {
  const struct kb_vec_ops *ops;
  float *p, *m, *v;
  const float *g;
  struct kb_adamw_coef c;
};

/* The element sequence above, in the vector layer (vec_body.h: no fused
 * steps, one rounding per operation). */
static void adamw_body(void *arg, int64_t begin, int64_t end) {
  const struct adamw_job *j = (const struct adamw_job *)arg;
  j->ops->adamw(end - begin, j->p + begin, j->g + begin, j->m + begin, j->v + begin, &j->c);
}

static kb_status check_beta(kb_context *ctx, const char *fn, const char *name, float beta) {
  /* Written so that NaN fails too. */
  if (!(beta >= 0.0f && beta < 1.0f))
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s must be in [0, 1), got %g", name, (double)beta);
  return KB_STATUS_OK;
}

kb_status kb_adamw_step(kb_context *ctx, int64_t n, float *params, const float *grads, float *m, float *v, float lr,
                        float beta1, float beta2, float eps, float weight_decay, int64_t step) {
  static const char fn[] = "kb_adamw_step";
  KB_BEGIN(ctx, fn);
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  int64_t count;
  KB_TRY(kb__count(ctx, fn, "params", (int64_t)sizeof(float), 1, &n, &count));
  KB_TRY(kb__check_ptr(ctx, fn, "params", params, count));
  KB_TRY(kb__check_ptr(ctx, fn, "grads", grads, count));
  KB_TRY(kb__check_ptr(ctx, fn, "m", m, count));
  KB_TRY(kb__check_ptr(ctx, fn, "v", v, count));
  KB_TRY(kb__check_finite(ctx, fn, "lr", (double)lr, true));
  KB_TRY(check_beta(ctx, fn, "beta1", beta1));
  KB_TRY(check_beta(ctx, fn, "beta2", beta2));
  KB_TRY(kb__check_finite(ctx, fn, "eps", (double)eps, true));
  KB_TRY(kb__check_finite(ctx, fn, "weight_decay", (double)weight_decay, true));
  if (step < 1) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "step must be >= 1, got %lld", (long long)step);
  int64_t b = count * (int64_t)sizeof(float);
  KB_TRY(kb__check_overlap(ctx, fn, "params", params, b, "grads", grads, b, false));
  KB_TRY(kb__check_overlap(ctx, fn, "params", params, b, "m", m, b, false));
  KB_TRY(kb__check_overlap(ctx, fn, "params", params, b, "v", v, b, false));
  KB_TRY(kb__check_overlap(ctx, fn, "m", m, b, "grads", grads, b, false));
  KB_TRY(kb__check_overlap(ctx, fn, "m", m, b, "v", v, b, false));
  KB_TRY(kb__check_overlap(ctx, fn, "v", v, b, "grads", grads, b, false));
  const struct kb_mem_ref refs[] = {{"params", params, b}, {"grads", grads, b}, {"m", m, b}, {"v", v, b}};
  KB_TRY(kb__check_memory(ctx, fn, 4, refs));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->adamw_step(ctx->cuda_ctx, fn, n, params, grads, m, v, lr, beta1, beta2, eps,
                                                 weight_decay, step));
  if (count == 0) return KB_STATUS_OK;

  double bc1 = 1.0 - pow((double)beta1, (double)step);
  double bc2 = 1.0 - pow((double)beta2, (double)step);
  struct adamw_job job;
  job.ops = &kb__cpu_ops()->vec;
  job.p = params;
  job.m = m;
  job.v = v;
  job.g = grads;
  job.c.decay = (float)(1.0 - (double)lr * (double)weight_decay);
  job.c.w1 = (float)(1.0 - (double)beta1);
  job.c.one_minus_w1 = 1.0f - job.c.w1; /* ATen: opmath_t(1) - weight, in float */
  job.c.small_w1 = fabsf(job.c.w1) < 0.5f;
  job.c.beta2 = beta2;
  job.c.w2 = (float)(1.0 - (double)beta2);
  job.c.step_size = (float)(-((double)lr / bc1));
  job.c.bc2_sqrt = (float)sqrt(bc2);
  job.c.eps = eps;
  kb__parallel_for(ctx, count, KB_ADAMW_MIN_CHUNK, adamw_body, &job);
  return KB_STATUS_OK;
}
