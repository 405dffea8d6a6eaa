/* cross_entropy.cu - softmax cross-entropy forward (per-row losses and their
 * mean over the rows not ignored) and backward.
 *
 * As kernels/cpu/cross_entropy.c: per row lse = m + log(sum exp(x - m)) in
 * double, loss = (float)(lse - x[t]); ignored rows give 0.  The mean is the
 * double sum of the float losses of the rows not ignored over their count,
 * NaN when the count is 0; the GPU adds them in a fixed tree order instead of
 * row order.  Backward: dlogits = (float)((softmax - onehot) * (dloss /
 * count)) with the count computed on the device (no host round trip); ignored
 * rows, and every row when count == 0, are 0.  Each element is read before
 * it is written by the same thread, so dlogits may be logits. */
#include "kbcuda_internal.cuh"

template <int WPR>
__global__ void cross_entropy_kernel(int64_t rows, int64_t classes, const float *__restrict__ logits,
                                     const int32_t *__restrict__ targets, int32_t ignore_index,
                                     float *__restrict__ losses) {
  __shared__ double red[KBCUDA_ROW_WARPS];
  __shared__ float redf[KBCUDA_ROW_WARPS];
  const int group = WPR * 32;
  const int lane = WPR == 1 ? (threadIdx.x & 31) : threadIdx.x;
  const int64_t per_block = KBCUDA_ROW_WARPS / WPR;
  const int64_t slot = WPR == 1 ? (threadIdx.x >> 5) : 0;
  for (int64_t r = blockIdx.x * per_block + slot; r < rows; r += (int64_t)gridDim.x * per_block) {
    int32_t t = targets[r];
    if (t == ignore_index) { /* uniform over the row's threads: no reduction is skipped by some only */
      if (lane == 0) losses[r] = 0.0f;
      continue;
    }
    const float *x = logits + r * classes;
    float mf = -INFINITY;
    for (int64_t c = lane; c < classes; c += group) mf = fmaxf(mf, x[c]);
    mf = kb_row_reduce<WPR>(mf, redf, kb_max_op());
    double m = (double)mf, s = 0.0;
    for (int64_t c = lane; c < classes; c += group) s += exp((double)x[c] - m);
    s = kb_row_reduce<WPR>(s, red, kb_sum_op());
    if (lane == 0) losses[r] = (float)((m + log(s)) - (double)x[t]);
  }
}

/* One block: mean of the losses of the rows not ignored (NaN when none). */
__global__ void cross_entropy_mean_kernel(int64_t rows, const int32_t *__restrict__ targets, int32_t ignore_index,
                                          const float *__restrict__ losses, float *__restrict__ mean_loss) {
  __shared__ double sums[1024];
  __shared__ long long counts[1024];
  double s = 0.0;
  long long n = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    if (targets[r] != ignore_index) {
      s += (double)losses[r];
      n++;
    }
  }
  sums[threadIdx.x] = s;
  counts[threadIdx.x] = n;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) {
      sums[threadIdx.x] += sums[threadIdx.x + w];
      counts[threadIdx.x] += counts[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) mean_loss[0] = counts[0] > 0 ? (float)(sums[0] / (double)counts[0]) : __int_as_float(0x7fc00000);
}

/* One block: number of rows not ignored. */
__global__ void count_kernel(int64_t rows, const int32_t *__restrict__ targets, int32_t ignore_index,
                             long long *__restrict__ count) {
  __shared__ long long counts[1024];
  long long n = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) n += targets[r] != ignore_index;
  counts[threadIdx.x] = n;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) counts[threadIdx.x] += counts[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) *count = counts[0];
}

template <int WPR>
__global__ void cross_entropy_backward_kernel(int64_t rows, int64_t classes, const float *logits,
                                              const int32_t *__restrict__ targets, int32_t ignore_index, float dloss,
                                              const long long *__restrict__ count, float *dlogits) {
  __shared__ double red[KBCUDA_ROW_WARPS];
  __shared__ float redf[KBCUDA_ROW_WARPS];
  const int group = WPR * 32;
  const int lane = WPR == 1 ? (threadIdx.x & 31) : threadIdx.x;
  const int64_t per_block = KBCUDA_ROW_WARPS / WPR;
  const int64_t slot = WPR == 1 ? (threadIdx.x >> 5) : 0;
  const long long cnt = *count;
  const double scale = cnt > 0 ? (double)dloss / (double)cnt : 0.0;
  for (int64_t r = blockIdx.x * per_block + slot; r < rows; r += (int64_t)gridDim.x * per_block) {
    int32_t t = targets[r];
    const float *x = logits + r * classes;
    float *g = dlogits + r * classes;
    if (t == ignore_index) {
      for (int64_t c = lane; c < classes; c += group) g[c] = 0.0f;
      continue;
    }
    float mf = -INFINITY;
    for (int64_t c = lane; c < classes; c += group) mf = fmaxf(mf, x[c]);
    mf = kb_row_reduce<WPR>(mf, redf, kb_max_op());
    double m = (double)mf, s = 0.0;
    for (int64_t c = lane; c < classes; c += group) s += exp((double)x[c] - m);
    s = kb_row_reduce<WPR>(s, red, kb_sum_op());
    for (int64_t c = lane; c < classes; c += group) {
      double p = exp((double)x[c] - m) / s;
      if (c == (int64_t)t) p -= 1.0;
      g[c] = (float)(p * scale);
    }
  }
}

cudaError_t kbcuda_cross_entropy(int64_t rows, int64_t classes, const float *logits, const int32_t *targets,
                                 int32_t ignore_index, float *losses, float *mean_loss, cudaStream_t stream) {
  if (rows > 0) {
    bool block = kbcuda_row_use_block(classes);
    unsigned grid = kbcuda_row_blocks(rows, block);
    if (block)
      cross_entropy_kernel<KBCUDA_ROW_WARPS><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, classes, logits, targets,
                                                                                    ignore_index, losses);
    else
      cross_entropy_kernel<1><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, classes, logits, targets, ignore_index,
                                                                     losses);
    KBCUDA_CHECK_LAUNCH();
  }
  /* Also with rows == 0: mean_loss is NaN then. */
  cross_entropy_mean_kernel<<<1, 1024, 0, stream>>>(rows, targets, ignore_index, losses, mean_loss);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}

cudaError_t kbcuda_cross_entropy_backward(int64_t rows, int64_t classes, const float *logits, const int32_t *targets,
                                          int32_t ignore_index, float dloss, float *dlogits, cudaStream_t stream) {
  if (rows == 0 || classes == 0) return cudaSuccess;
  long long *count = NULL;
  KBCUDA_TRY(cudaMallocAsync((void **)&count, sizeof *count, stream));
  count_kernel<<<1, 1024, 0, stream>>>(rows, targets, ignore_index, count);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) {
    bool block = kbcuda_row_use_block(classes);
    unsigned grid = kbcuda_row_blocks(rows, block);
    if (block)
      cross_entropy_backward_kernel<KBCUDA_ROW_WARPS><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(
          rows, classes, logits, targets, ignore_index, dloss, count, dlogits);
    else
      cross_entropy_backward_kernel<1><<<grid, KBCUDA_ROW_THREADS, 0, stream>>>(rows, classes, logits, targets,
                                                                              ignore_index, dloss, count, dlogits);
    e = cudaGetLastError();
  }
  cudaError_t f = cudaFreeAsync(count, stream);
  return e != cudaSuccess ? e : f;
}
