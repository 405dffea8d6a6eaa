/* argmax.cu - index of the largest element of each row: first index on ties,
 * NaN larger than every number (the first NaN wins), -0.0 ties +0.0, a row
 * of -inf gives 0.  That is a total order on (key, index), so the parallel
 * reduction returns exactly the CPU's index.  One warp per row up to 1024
 * columns, one block per row beyond. */
#include "kbcuda_internal.cuh"

struct am {
  float v;
  int64_t i;
};

/* True when a ranks before b. */
__device__ __forceinline__ bool am_before(am a, am b) {
  bool an = isnan(a.v), bn = isnan(b.v);
  if (an != bn) return an;
  if (!an && a.v != b.v) return a.v > b.v;
  return a.i < b.i;
}

__device__ __forceinline__ am am_warp(am x) {
  for (int o = 16; o > 0; o >>= 1) {
    am y;
    y.v = __shfl_xor_sync(0xffffffffu, x.v, o);
    y.i = __shfl_xor_sync(0xffffffffu, x.i, o);
    if (am_before(y, x)) x = y;
  }
  return x;
}

template <int WPR>
__global__ void argmax_kernel(int64_t rows, int64_t cols, const float *__restrict__ x, int32_t *__restrict__ out) {
  __shared__ am red[KBCUDA_ROW_WARPS];
  const int group = WPR * 32;
  const int lane = WPR == 1 ? (threadIdx.x & 31) : threadIdx.x;
  const int64_t per_block = KBCUDA_ROW_WARPS / WPR;
  const int64_t slot = WPR == 1 ? (threadIdx.x >> 5) : 0;
  for (int64_t r = blockIdx.x * per_block + slot; r < rows; r += (int64_t)gridDim.x * per_block) {
    const float *xr = x + r * cols;
    am best = {-INFINITY, (int64_t)INT64_MAX};
    for (int64_t c = lane; c < cols; c += group) {
      am e = {xr[c], c};
      if (am_before(e, best)) best = e;
    }
    best = am_warp(best);
    if (WPR > 1) {
      __syncthreads();
      if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = best;
      __syncthreads();
      best = red[0];
      for (int w = 1; w < KBCUDA_ROW_WARPS; w++)
        if (am_before(red[w], best)) best = red[w];
    }
    /* A row of -inf never beats the sentinel (-inf, INT64_MAX) on value,
     * but index 0 ranks before it, so best.i is 0 there. */
    if (lane == 0) out[r] = (int32_t)best.i;
  }
}

cudaError_t kbcuda_argmax(int64_t rows, int64_t cols, const float *x, int32_t *out, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  bool block = kbcuda_row_use_block(cols);
  unsigned grid = kbcuda_row_blocks(rows, block);
  if (block)
    argmax_kernel<KBCUDA_ROW_WARPS><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, cols, x, out);
  else
    argmax_kernel<1><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, cols, x, out);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}
