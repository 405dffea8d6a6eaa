/* softmax.cu - softmax and log-softmax over the rows of a [rows, cols] matrix.
 *
 * One warp per row for rows of up to 1024 columns, one 256-thread block per
 * row beyond.  float32: m = row max (NaN ignored), s = sum exp(x - m) in
 * double (a fixed-order tree over the threads instead of the CPU's
 * sequential sum, so s may differ in the last bits of double), outputs in
 * double rounded once, exactly as kernels/cpu/softmax.c.  bf16/f16: the same
 * in float.  exp is evaluated twice per element (no scratch), and every
 * element is read before it is written by the same thread, so y may be x.
 *
 * log_softmax, as the CPU (kernels/cpu/vec_body.h): the elements equal to
 * a finite maximum are counted apart (their exponential is exactly 1), the
 * rest summed into t, and s = count + t is rounded to double once.  Adding
 * the 1s into the tree instead rounds at other points than the CPU: where
 * the maximum dominates a row (t ~ 1e-13), the top element's
 * log-probability, -log(s) ~ -t, then differed from the CPU's by 8192 ulp
 * (seen on an H100). */
#include "kbcuda_internal.cuh"

template <typename Acc>
struct sm_math;
template <>
struct sm_math<double> {
  static __device__ __forceinline__ double ex(double v) { return exp(v); }
  static __device__ __forceinline__ double lg(double v) { return log(v); }
};
template <>
struct sm_math<float> {
  static __device__ __forceinline__ float ex(float v) { return expf(v); }
  static __device__ __forceinline__ float lg(float v) { return logf(v); }
};

template <int WPR, bool LOG, typename T, typename Acc>
__global__ void softmax_kernel(int64_t rows, int64_t cols, const T *x, T *y) {
  __shared__ Acc red[KBCUDA_ROW_WARPS];
  __shared__ float redf[KBCUDA_ROW_WARPS];
  const int group = WPR * 32;
  const int lane = WPR == 1 ? (threadIdx.x & 31) : threadIdx.x;
  const int64_t per_block = KBCUDA_ROW_WARPS / WPR;
  const int64_t slot = WPR == 1 ? (threadIdx.x >> 5) : 0;
  for (int64_t r = blockIdx.x * per_block + slot; r < rows; r += (int64_t)gridDim.x * per_block) {
    const T *xr = x + r * cols;
    T *yr = y + r * cols;
    float mf = -INFINITY;
    for (int64_t c = lane; c < cols; c += group) mf = fmaxf(mf, kb_dt<T>::load(xr + c));
    mf = kb_row_reduce<WPR>(mf, redf, kb_max_op());
    Acc m = (Acc)mf, s = 0;
    if (LOG) {
      /* s = count of the (finite) maximum + t, the rest's exponentials. */
      const bool split = isfinite(mf);
      Acc count = 0;
      for (int64_t c = lane; c < cols; c += group) {
        float v = kb_dt<T>::load(xr + c);
        if (split && v == mf)
          count += 1;
        else
          s += sm_math<Acc>::ex((Acc)v - m);
      }
      s = kb_row_reduce<WPR>(s, red, kb_sum_op());
      count = kb_row_reduce<WPR>(count, red, kb_sum_op());
      Acc ls = sm_math<Acc>::lg(count + s);
      for (int64_t c = lane; c < cols; c += group) kb_dt<T>::store(yr + c, (float)(((Acc)kb_dt<T>::load(xr + c) - m) - ls));
    } else {
      for (int64_t c = lane; c < cols; c += group) s += sm_math<Acc>::ex((Acc)kb_dt<T>::load(xr + c) - m);
      s = kb_row_reduce<WPR>(s, red, kb_sum_op());
      for (int64_t c = lane; c < cols; c += group)
        kb_dt<T>::store(yr + c, (float)(sm_math<Acc>::ex((Acc)kb_dt<T>::load(xr + c) - m) / s));
    }
  }
}

template <bool LOG, typename T, typename Acc>
static cudaError_t launch(int64_t rows, int64_t cols, const void *x, void *y, cudaStream_t stream) {
  bool block = kbcuda_row_use_block(cols);
  unsigned grid = kbcuda_row_blocks(rows, block);
  if (block)
    softmax_kernel<KBCUDA_ROW_WARPS, LOG, T, Acc><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, cols, (const T *)x,
                                                                                         (T *)y);
  else
    softmax_kernel<1, LOG, T, Acc><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, cols, (const T *)x, (T *)y);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}

template <typename T, typename Acc>
static cudaError_t launch_dt(bool log, int64_t rows, int64_t cols, const void *x, void *y, cudaStream_t stream) {
  return log ? launch<true, T, Acc>(rows, cols, x, y, stream) : launch<false, T, Acc>(rows, cols, x, y, stream);
}

cudaError_t kbcuda_softmax(int dt, bool log, int64_t rows, int64_t cols, const void *x, void *y, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  switch (dt) {
    case KBCUDA_F32:
      return launch_dt<float, double>(log, rows, cols, x, y, stream);
    case KBCUDA_BF16:
      return launch_dt<__nv_bfloat16, float>(log, rows, cols, x, y, stream);
    case KBCUDA_F16:
      return launch_dt<__half, float>(log, rows, cols, x, y, stream);
  }
  return cudaErrorInvalidValue;
}
