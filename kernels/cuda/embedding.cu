/* embedding.cu - out[i, :] = table[ids[i], :], an exact copy (bitwise equal
 * to the CPU).  The ids were range-checked by the core (validate_index)
 * before the launch.  One warp per output row, grid-stride over rows. */
#include "kbcuda_internal.cuh"

__global__ void embedding_kernel(int64_t n_ids, int64_t dim, const int32_t *__restrict__ ids,
                                 const float *__restrict__ table, float *__restrict__ out) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t i = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); i < n_ids; i += warps) {
    const float *src = table + (int64_t)ids[i] * dim;
    float *dst = out + i * dim;
    for (int64_t d = lane; d < dim; d += 32) dst[d] = src[d];
  }
}

cudaError_t kbcuda_embedding(int64_t n_ids, int64_t dim, const int32_t *ids, const float *table, float *out,
                             cudaStream_t stream) {
  if (n_ids == 0 || dim == 0) return cudaSuccess;
  embedding_kernel<<<kbcuda_blocks(n_ids, 8), 256, 0, stream>>>(n_ids, dim, ids, table, out);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}
