/* adamw.cu - one AdamW step, PyTorch single-tensor order of operations.
 *
 * The scalar coefficients are computed on the host exactly as
 * kernels/cpu/adamw.c computes them (double, rounded once to float, the same
 * C library pow/sqrt), and every per-element operation is an explicitly
 * rounded float intrinsic (no FMA contraction; IEEE sqrt and division, which
 * nvcc uses without -use_fast_math), so results are bitwise equal to the
 * CPU. */
#include <math.h>

#include "kbcuda_internal.cuh"

struct adamw_coef {
  float decay, w1, one_minus_w1, beta2, w2, step_size, bc2_sqrt, eps;
  bool small_w1;
};

__global__ void adamw_kernel(int64_t n, float *__restrict__ params, const float *__restrict__ grads,
                             float *__restrict__ m, float *__restrict__ v, struct adamw_coef k) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float g = grads[i];
    float p = __fmul_rn(params[i], k.decay);
    float mi = m[i];
    float gm = __fsub_rn(g, mi);
    mi = k.small_w1 ? __fadd_rn(mi, __fmul_rn(k.w1, gm)) : __fsub_rn(g, __fmul_rn(gm, k.one_minus_w1));
    float vi = __fmul_rn(v[i], k.beta2);
    vi = __fadd_rn(vi, __fmul_rn(__fmul_rn(k.w2, g), g));
    float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), k.bc2_sqrt), k.eps);
    p = __fadd_rn(p, __fdiv_rn(__fmul_rn(k.step_size, mi), denom));
    params[i] = p;
    m[i] = mi;
    v[i] = vi;
  }
}

cudaError_t kbcuda_adamw_step(int64_t n, float *params, const float *grads, float *m, float *v, float lr, float beta1,
                              float beta2, float eps, float weight_decay, int64_t step, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  double bc1 = 1.0 - pow((double)beta1, (double)step);
  double bc2 = 1.0 - pow((double)beta2, (double)step);
  struct adamw_coef k;
  k.decay = (float)(1.0 - (double)lr * (double)weight_decay);
  k.w1 = (float)(1.0 - (double)beta1);
  k.one_minus_w1 = 1.0f - k.w1;
  k.small_w1 = fabsf(k.w1) < 0.5f;
  k.beta2 = beta2;
  k.w2 = (float)(1.0 - (double)beta2);
  k.step_size = (float)(-((double)lr / bc1));
  k.bc2_sqrt = (float)sqrt(bc2);
  k.eps = eps;
  adamw_kernel<<<kbcuda_blocks(n, 256), 256, 0, stream>>>(n, params, grads, m, v, k);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}
