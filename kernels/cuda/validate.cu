/* validate.cu - the argument checks that must read tensor contents, for the
 * core to run before a kernel writes anything (kernels/cpu validates the same
 * rules on the host): index ranges (embedding ids, cross-entropy targets,
 * rope positions) and sampling logits (NaN, +inf, all -inf rows).  Both find
 * the FIRST offending element/row, as the CPU's sequential scan reports it,
 * with an atomicMin over indices, then copy the answer to the host and
 * synchronise the stream. */
#include <limits.h>

#include "kbcuda_internal.cuh"

__global__ void validate_index_kernel(int64_t n, const int32_t *__restrict__ values, int64_t lo, int64_t hi,
                                      bool has_ignore, int32_t ignore, unsigned long long *first) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int32_t v = values[i];
    if (has_ignore && v == ignore) continue;
    if ((int64_t)v < lo || (int64_t)v >= hi) atomicMin(first, (unsigned long long)i);
  }
}

cudaError_t kbcuda_validate_index(int64_t n, const int32_t *values, int64_t lo, int64_t hi, bool has_ignore,
                                  int32_t ignore, int64_t *first_bad, int32_t *bad_value, cudaStream_t stream) {
  *first_bad = -1;
  *bad_value = 0;
  if (n == 0) return cudaSuccess;
  unsigned long long *d = NULL, h = ULLONG_MAX;
  KBCUDA_TRY(cudaMallocAsync((void **)&d, sizeof *d, stream));
  cudaError_t e = cudaMemsetAsync(d, 0xff, sizeof *d, stream);
  if (e == cudaSuccess) {
    validate_index_kernel<<<kbcuda_blocks(n, 256), 256, 0, stream>>>(n, values, lo, hi, has_ignore, ignore, d);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, stream);
  cudaError_t f = cudaFreeAsync(d, stream);
  if (e == cudaSuccess) e = f;
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return e;
  if (h != ULLONG_MAX) {
    KBCUDA_TRY(cudaMemcpy(bad_value, values + h, sizeof *bad_value, cudaMemcpyDeviceToHost));
    *first_bad = (int64_t)h;
  }
  return cudaSuccess;
}

/* key = row * 4 + reason, so the minimum is the first bad row. */
template <int WPR>
__global__ void validate_logits_kernel(int64_t rows, int64_t cols, const float *__restrict__ x,
                                       unsigned long long *first) {
  __shared__ long long redl[KBCUDA_ROW_WARPS];
  __shared__ int redi[KBCUDA_ROW_WARPS];
  const int group = WPR * 32;
  const int lane = WPR == 1 ? (threadIdx.x & 31) : threadIdx.x;
  const int64_t per_block = KBCUDA_ROW_WARPS / WPR;
  const int64_t slot = WPR == 1 ? (threadIdx.x >> 5) : 0;
  struct min_op {
    __device__ long long operator()(long long a, long long b) const { return a < b ? a : b; }
  };
  struct or_op {
    __device__ int operator()(int a, int b) const { return a | b; }
  };
  for (int64_t r = blockIdx.x * per_block + slot; r < rows; r += (int64_t)gridDim.x * per_block) {
    const float *xr = x + r * cols;
    long long bad_col = LLONG_MAX;
    int not_neg_inf = 0;
    for (int64_t c = lane; c < cols; c += group) {
      float v = xr[c];
      if ((isnan(v) || v == INFINITY) && c < bad_col) bad_col = c;
      if (v != -INFINITY) not_neg_inf = 1;
    }
    bad_col = kb_row_reduce<WPR>(bad_col, redl, min_op());
    not_neg_inf = kb_row_reduce<WPR>(not_neg_inf, redi, or_op());
    if (lane == 0) {
      int reason = KBCUDA_LOGITS_OK;
      if (bad_col != LLONG_MAX)
        reason = isnan(xr[bad_col]) ? KBCUDA_LOGITS_NAN : KBCUDA_LOGITS_POS_INF;
      else if (!not_neg_inf)
        reason = KBCUDA_LOGITS_ALL_NEG_INF;
      if (reason != KBCUDA_LOGITS_OK) atomicMin(first, (unsigned long long)r * 4ull + (unsigned long long)reason);
    }
  }
}

cudaError_t kbcuda_validate_logits(int64_t rows, int64_t cols, const float *logits, int64_t *first_bad_row,
                                   int32_t *reason, cudaStream_t stream) {
  *first_bad_row = -1;
  *reason = KBCUDA_LOGITS_OK;
  if (rows == 0 || cols == 0) return cudaSuccess;
  unsigned long long *d = NULL, h = ULLONG_MAX;
  KBCUDA_TRY(cudaMallocAsync((void **)&d, sizeof *d, stream));
  cudaError_t e = cudaMemsetAsync(d, 0xff, sizeof *d, stream);
  if (e == cudaSuccess) {
    bool block = kbcuda_row_use_block(cols);
    unsigned grid = kbcuda_row_blocks(rows, block);
    if (block)
      validate_logits_kernel<KBCUDA_ROW_WARPS><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, cols, logits, d);
    else
      validate_logits_kernel<1><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, cols, logits, d);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, stream);
  cudaError_t f = cudaFreeAsync(d, stream);
  if (e == cudaSuccess) e = f;
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return e;
  if (h != ULLONG_MAX) {
    *first_bad_row = (int64_t)(h / 4);
    *reason = (int32_t)(h % 4);
  }
  return cudaSuccess;
}
