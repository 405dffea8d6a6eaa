/* sampling.cu - multinomial, top-k and top-p sampling of one token per row,
 * following docs/kernels.md ("Sampling kernels") so that the token ids equal
 * the CPU's:
 * - u from Philox4x32-10, key = seed, counter = {row lo, row hi, 0, 0},
 *   u = (word0 >> 8) * 2^-24 (the same integer arithmetic: identical u);
 * - candidates: all columns in index order (sample), or the row sorted by
 *   decreasing logit with ties by increasing index (top-p; top-k keeps the
 *   first k).  The sort key packs (logit, index) into one 64-bit integer,
 *   a total order, so any correct sort gives the CPU's permutation; -0.0 is
 *   folded into +0.0 so that they tie as the CPU's comparison does;
 * - weights exp((x - m) / T), running sums, nucleus and threshold in double.
 *
 * Difference from the CPU: the running sums are a chunked scan (each of the
 * 256 threads sums a contiguous chunk sequentially, chunk offsets are summed
 * sequentially) instead of one sequential sum, and CUDA's double exp may
 * differ from the C library's by an ulp.  The token can differ only when u *
 * total falls within a few ulps (of double) of a running sum, the
 * measure-zero case docs/kernels.md already excludes.
 *
 * sort_rows_kernel: one 1024-thread block per row, bitonic sort of the keys
 * (in shared memory up to 4096 columns, in a global scratch row beyond).
 * sample_kernel: one 256-thread block per row. */
#include <limits.h>

#include "kbcuda_internal.cuh"

#define SAMPLE_THREADS 256
#define SORT_THREADS 1024
#define SORT_SMEM_MAX 4096

__device__ __forceinline__ void philox4x32_10(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
    uint32_t hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
    uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
  }
}

__device__ __forceinline__ double philox_uniform(uint64_t seed, uint64_t row) {
  uint32_t c[4] = {(uint32_t)row, (uint32_t)(row >> 32), 0u, 0u};
  philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
  return (double)(c[0] >> 8) * (1.0 / 16777216.0);
}

/* Ascending order of keys = decreasing logit, then increasing index. */
__device__ __forceinline__ uint64_t sort_key(float v, int64_t index) {
  if (v == 0.0f) v = 0.0f; /* -0.0 ties +0.0 */
  uint32_t u = __float_as_uint(v);
  uint32_t ord = (u & 0x80000000u) ? ~u : (u | 0x80000000u); /* increasing with v */
  return ((uint64_t)(~ord) << 32) | (uint64_t)(uint32_t)index;
}

__global__ void __launch_bounds__(SORT_THREADS) sort_rows_kernel(int64_t rows, int64_t cols, const float *x,
                                                                 uint64_t *scratch, int64_t npad) {
  extern __shared__ uint64_t sk[];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    uint64_t *keys = npad <= SORT_SMEM_MAX ? sk : scratch + r * npad;
    const float *xr = x + r * cols;
    for (int64_t i = threadIdx.x; i < npad; i += blockDim.x) keys[i] = i < cols ? sort_key(xr[i], i) : ~0ull;
    __syncthreads();
    for (int64_t size = 2; size <= npad; size <<= 1) {
      for (int64_t stride = size >> 1; stride > 0; stride >>= 1) {
        for (int64_t i = threadIdx.x; i < npad; i += blockDim.x) {
          int64_t j = i ^ stride;
          if (j > i) {
            uint64_t a = keys[i], b = keys[j];
            bool ascending = (i & size) == 0;
            if ((a > b) == ascending) {
              keys[i] = b;
              keys[j] = a;
            }
          }
        }
        __syncthreads();
      }
    }
    if (npad <= SORT_SMEM_MAX) {
      uint64_t *dst = scratch + r * npad;
      for (int64_t i = threadIdx.x; i < npad; i += blockDim.x) dst[i] = keys[i];
      __syncthreads();
    }
  }
}

struct pick_smem {
  double part[SAMPLE_THREADS];
  double prefix[SAMPLE_THREADS];
  long long red[SAMPLE_THREADS / 32];
  float redf[SAMPLE_THREADS / 32];
  double total, mass;
};

__device__ __forceinline__ long long block_min_ll(long long v, long long *red) {
  for (int o = 16; o > 0; o >>= 1) {
    long long w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w < v ? w : v;
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  long long r = red[0];
  for (int i = 1; i < SAMPLE_THREADS / 32; i++) r = red[i] < r ? red[i] : r;
  return r;
}

__device__ __forceinline__ long long block_max_ll(long long v, long long *red) {
  return -block_min_ll(-v, red);
}

/* mode 0: sample, 1: top-k, 2: top-p. */
__global__ void __launch_bounds__(SAMPLE_THREADS) sample_kernel(int mode, int64_t rows, int64_t cols,
                                                                const float *__restrict__ x,
                                                                const uint64_t *__restrict__ sorted, int64_t npad,
                                                                int64_t k, double p, double temperature, uint64_t seed,
                                                                int32_t *__restrict__ out) {
  __shared__ struct pick_smem sm;
  const int tid = threadIdx.x;
  const int64_t n = mode == 1 ? k : cols; /* candidates */
  const int64_t chunk = (n + SAMPLE_THREADS - 1) / SAMPLE_THREADS;
  const int64_t c0 = tid * chunk < n ? tid * chunk : n, c1 = c0 + chunk < n ? c0 + chunk : n;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *xr = x + r * cols;
    const uint64_t *sr = mode == 0 ? NULL : sorted + r * npad;
#define CAND(i) (sr != NULL ? (int64_t)(sr[i] & 0xffffffffull) : (int64_t)(i))
    /* Row maximum: over all columns (the first sorted candidate for top-k/p). */
    double m;
    if (mode == 0) {
      float mf = -INFINITY;
      for (int64_t c = tid; c < cols; c += SAMPLE_THREADS) mf = fmaxf(mf, xr[c]);
      for (int o = 16; o > 0; o >>= 1) mf = fmaxf(mf, __shfl_xor_sync(0xffffffffu, mf, o));
      __syncthreads();
      if ((tid & 31) == 0) sm.redf[tid >> 5] = mf;
      __syncthreads();
      mf = sm.redf[0];
      for (int i = 1; i < SAMPLE_THREADS / 32; i++) mf = fmaxf(mf, sm.redf[i]);
      m = (double)mf;
    } else {
      m = (double)xr[CAND(0)];
    }
    /* Chunk sums, then the chunk offsets, sequentially. */
    double local = 0.0;
    for (int64_t i = c0; i < c1; i++) local += exp(((double)xr[CAND(i)] - m) / temperature);
    sm.part[tid] = local;
    __syncthreads();
    if (tid == 0) {
      double s = 0.0;
      for (int t = 0; t < SAMPLE_THREADS; t++) {
        sm.prefix[t] = s;
        s += sm.part[t];
      }
    }
    __syncthreads();
    /* S[i] = prefix + sequential sum of the chunk up to i; total = S[n-1]. */
    if (c1 == n && c0 < c1) {
      double s = sm.prefix[tid];
      for (int64_t i = c0; i < c1; i++) s += exp(((double)xr[CAND(i)] - m) / temperature);
      sm.total = s;
    }
    __syncthreads();
    double total = sm.total;
    int64_t len = n;
    if (mode == 2) {
      /* Nucleus: shortest prefix with S[L-1] >= p * total. */
      double need = p * total;
      long long first = LLONG_MAX;
      double s = sm.prefix[tid];
      for (int64_t i = c0; i < c1; i++) {
        s += exp(((double)xr[CAND(i)] - m) / temperature);
        if (s >= need) {
          first = i;
          break;
        }
      }
      first = block_min_ll(first, sm.red);
      if (first == LLONG_MAX) first = n - 1; /* unreachable: S[n-1] = total >= p * total */
      len = first + 1;
      if (c0 <= first && first < c1) {
        double s2 = sm.prefix[tid];
        for (int64_t i = c0; i <= first; i++) s2 += exp(((double)xr[CAND(i)] - m) / temperature);
        sm.mass = s2;
      }
      __syncthreads();
      total = sm.mass;
    }
    const double t = philox_uniform(seed, (uint64_t)r) * total;
    long long hit = LLONG_MAX, last_pos = -1;
    {
      double s = sm.prefix[tid];
      for (int64_t i = c0; i < c1 && i < len; i++) {
        double w = exp(((double)xr[CAND(i)] - m) / temperature);
        s += w;
        if (w > 0.0) last_pos = i;
        if (s > t) {
          hit = i;
          break;
        }
      }
    }
    hit = block_min_ll(hit, sm.red);
    if (hit == LLONG_MAX) { /* unreachable guard, as the CPU: last positive weight */
      hit = block_max_ll(last_pos, sm.red);
      if (hit < 0) hit = 0;
    }
    if (tid == 0) out[r] = (int32_t)CAND(hit);
    __syncthreads();
#undef CAND
  }
}

cudaError_t kbcuda_sample(int mode, int64_t rows, int64_t cols, const float *logits, int64_t k, float p,
                          float temperature, uint64_t seed, int32_t *out, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  unsigned grid = (unsigned)(rows > 65535 ? 65535 : rows);
  uint64_t *scratch = NULL;
  int64_t npad = 1;
  cudaError_t e = cudaSuccess;
  if (mode != 0) {
    while (npad < cols) npad <<= 1;
    KBCUDA_TRY(cudaMallocAsync((void **)&scratch, (size_t)rows * (size_t)npad * sizeof(uint64_t), stream));
    size_t smem = npad <= SORT_SMEM_MAX ? (size_t)npad * sizeof(uint64_t) : 0;
    sort_rows_kernel<<<grid, SORT_THREADS, smem, stream>>>(rows, cols, logits, scratch, npad);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) {
    sample_kernel<<<grid, SAMPLE_THREADS, 0, stream>>>(mode, rows, cols, logits, scratch, npad, k, (double)p,
                                                        (double)temperature, seed, out);
    e = cudaGetLastError();
  }
  if (scratch != NULL) {
    cudaError_t f = cudaFreeAsync(scratch, stream);
    if (e == cudaSuccess) e = f;
  }
  return e;
}
