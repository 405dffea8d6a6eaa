/* rope.cu - rotary position embedding (half rotation, GPT-NeoX / Llama) on
 * x of shape [seq, heads, head_dim].
 *
 * As kernels/cpu/rope.c: angle = pos * pow(theta, -(2i) / head_dim), cos,
 * sin and the rotation in double, each output rounded once.  CUDA's double
 * pow/cos/sin may differ from the C library's by an ulp of double, which
 * almost never changes the float.  One thread per (s, head, i) pair; both
 * inputs of a pair are read before either output is written, so y may be x. */
#include "kbcuda_internal.cuh"

__global__ void rope_kernel(int64_t seq, int64_t heads, int64_t head_dim, const float *x,
                            const int32_t *__restrict__ positions, double theta, float *y) {
  const int64_t h = head_dim / 2, pairs = seq * heads * h;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < pairs; t += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = t % h, sh = t / h; /* sh = s * heads + head */
    int64_t s = sh / heads;
    double angle = (double)positions[s] * pow(theta, -(double)(2 * i) / (double)head_dim);
    double cs = cos(angle), sn = sin(angle);
    const float *xr = x + sh * head_dim;
    float *yr = y + sh * head_dim;
    double x0 = (double)xr[i], x1 = (double)xr[i + h];
    /* Separate roundings, as the CPU (no FMA contraction). */
    float y0 = (float)__dsub_rn(__dmul_rn(x0, cs), __dmul_rn(x1, sn));
    float y1 = (float)__dadd_rn(__dmul_rn(x1, cs), __dmul_rn(x0, sn));
    yr[i] = y0;
    yr[i + h] = y1;
  }
}

cudaError_t kbcuda_rope(int64_t seq, int64_t heads, int64_t head_dim, const float *x, const int32_t *positions,
                        float theta, float *y, cudaStream_t stream) {
  int64_t pairs = seq * heads * (head_dim / 2);
  if (pairs == 0) return cudaSuccess;
  rope_kernel<<<kbcuda_blocks(pairs, 256), 256, 0, stream>>>(seq, heads, head_dim, x, positions, (double)theta, y);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}
