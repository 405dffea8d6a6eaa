/* norm.cu - RMSNorm and LayerNorm over the rows of a [rows, cols] matrix.
 *
 * One warp per row up to 1024 columns, one block per row beyond.  float32:
 * statistics in double (LayerNorm: mean, then the biased variance about it
 * in a second pass, as kernels/cpu/norm.c), each output in double from its
 * own input and rounded once.  The reductions are fixed-order trees rather
 * than the CPU's sequential sums (last-bit differences in double).
 * bf16/f16: the same in float, weight and bias in the same dtype as x.
 * Statistics are complete before the row is written, so y may be x. */
#include "kbcuda_internal.cuh"

template <int WPR, typename T, typename Acc>
__global__ void rmsnorm_kernel(int64_t rows, int64_t cols, const T *x, const T *__restrict__ weight, float eps, T *y) {
  __shared__ Acc red[KBCUDA_ROW_WARPS];
  const int group = WPR * 32;
  const int lane = WPR == 1 ? (threadIdx.x & 31) : threadIdx.x;
  const int64_t per_block = KBCUDA_ROW_WARPS / WPR;
  const int64_t slot = WPR == 1 ? (threadIdx.x >> 5) : 0;
  for (int64_t r = blockIdx.x * per_block + slot; r < rows; r += (int64_t)gridDim.x * per_block) {
    const T *xr = x + r * cols;
    T *yr = y + r * cols;
    Acc ss = 0;
    for (int64_t c = lane; c < cols; c += group) {
      Acc v = (Acc)kb_dt<T>::load(xr + c);
      ss += v * v;
    }
    ss = kb_row_reduce<WPR>(ss, red, kb_sum_op());
    Acc inv = (Acc)1 / sqrt(ss / (Acc)cols + (Acc)eps);
    for (int64_t c = lane; c < cols; c += group)
      kb_dt<T>::store(yr + c, (float)((Acc)kb_dt<T>::load(xr + c) * inv * (Acc)kb_dt<T>::load(weight + c)));
  }
}

template <int WPR, typename T, typename Acc>
__global__ void layernorm_kernel(int64_t rows, int64_t cols, const T *x, const T *__restrict__ weight,
                                 const T *__restrict__ bias, float eps, T *y) {
  __shared__ Acc red[KBCUDA_ROW_WARPS];
  const int group = WPR * 32;
  const int lane = WPR == 1 ? (threadIdx.x & 31) : threadIdx.x;
  const int64_t per_block = KBCUDA_ROW_WARPS / WPR;
  const int64_t slot = WPR == 1 ? (threadIdx.x >> 5) : 0;
  for (int64_t r = blockIdx.x * per_block + slot; r < rows; r += (int64_t)gridDim.x * per_block) {
    const T *xr = x + r * cols;
    T *yr = y + r * cols;
    Acc sum = 0;
    for (int64_t c = lane; c < cols; c += group) sum += (Acc)kb_dt<T>::load(xr + c);
    sum = kb_row_reduce<WPR>(sum, red, kb_sum_op());
    Acc mean = sum / (Acc)cols;
    Acc sq = 0;
    for (int64_t c = lane; c < cols; c += group) {
      Acc d = (Acc)kb_dt<T>::load(xr + c) - mean;
      sq += d * d;
    }
    sq = kb_row_reduce<WPR>(sq, red, kb_sum_op());
    Acc inv = (Acc)1 / sqrt(sq / (Acc)cols + (Acc)eps);
    for (int64_t c = lane; c < cols; c += group) {
      Acc v = ((Acc)kb_dt<T>::load(xr + c) - mean) * inv;
      if (weight != NULL) v *= (Acc)kb_dt<T>::load(weight + c);
      if (bias != NULL) v += (Acc)kb_dt<T>::load(bias + c);
      kb_dt<T>::store(yr + c, (float)v);
    }
  }
}

template <typename T, typename Acc>
static cudaError_t rms_launch(int64_t rows, int64_t cols, const void *x, const void *w, float eps, void *y,
                              cudaStream_t stream) {
  bool block = kbcuda_row_use_block(cols);
  unsigned grid = kbcuda_row_blocks(rows, block);
  if (block)
    rmsnorm_kernel<KBCUDA_ROW_WARPS, T, Acc><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, cols, (const T *)x,
                                                                                    (const T *)w, eps, (T *)y);
  else
    rmsnorm_kernel<1, T, Acc><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, cols, (const T *)x, (const T *)w, eps,
                                                                     (T *)y);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}

template <typename T, typename Acc>
static cudaError_t ln_launch(int64_t rows, int64_t cols, const void *x, const void *w, const void *b, float eps,
                             void *y, cudaStream_t stream) {
  bool block = kbcuda_row_use_block(cols);
  unsigned grid = kbcuda_row_blocks(rows, block);
  if (block)
    layernorm_kernel<KBCUDA_ROW_WARPS, T, Acc><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(
        rows, cols, (const T *)x, (const T *)w, (const T *)b, eps, (T *)y);
  else
    layernorm_kernel<1, T, Acc><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, cols, (const T *)x, (const T *)w,
                                                                       (const T *)b, eps, (T *)y);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}

cudaError_t kbcuda_rmsnorm(int dt, int64_t rows, int64_t cols, const void *x, const void *weight, float eps, void *y,
                           cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  switch (dt) {
    case KBCUDA_F32:
      return rms_launch<float, double>(rows, cols, x, weight, eps, y, stream);
    case KBCUDA_BF16:
      return rms_launch<__nv_bfloat16, float>(rows, cols, x, weight, eps, y, stream);
    case KBCUDA_F16:
      return rms_launch<__half, float>(rows, cols, x, weight, eps, y, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t kbcuda_layernorm(int dt, int64_t rows, int64_t cols, const void *x, const void *weight, const void *bias,
                             float eps, void *y, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  switch (dt) {
    case KBCUDA_F32:
      return ln_launch<float, double>(rows, cols, x, weight, bias, eps, y, stream);
    case KBCUDA_BF16:
      return ln_launch<__nv_bfloat16, float>(rows, cols, x, weight, bias, eps, y, stream);
    case KBCUDA_F16:
      return ln_launch<__half, float>(rows, cols, x, weight, bias, eps, y, stream);
  }
  return cudaErrorInvalidValue;
}
