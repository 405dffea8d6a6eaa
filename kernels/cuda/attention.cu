/* attention.cu - scaled dot-product attention, flash style: one pass over
 * the keys in tiles of 32 with an online softmax (running max m, running
 * normaliser l, output accumulator rescaled by exp(m_old - m_new)), so the
 * [seq_q, seq_kv] score matrix never exists, in shared or global memory.
 *
 * Semantics of kernels/cpu/attention.c: query head h reads kv head
 * h / (heads / kv_heads); scale == 0 means 1 / sqrt(head_dim); causal keeps
 * keys j <= i (top-left).  Arithmetic is float32 (FMA dot products, expf),
 * not the CPU's double, so results match within the attention tolerance of
 * docs/cuda.md.  bf16/f16 inputs are widened to float, the output rounded
 * once.
 *
 * attention_tiled_kernel (head_dim <= 256): a block of 4 warps serves 4
 * consecutive query rows of one (batch, head); each key tile (K and V, 32
 * rows) is staged once in shared memory for the 4 rows.  Per tile, lane j
 * computes the score of key j0 + j; then each lane accumulates its
 * head_dim / 32 output columns in registers.
 * attention_generic_kernel (larger head_dim): one warp per query row,
 * accumulator in shared memory, K and V read from global memory. */
#include "kbcuda_internal.cuh"

#define ATT_TILE 32
#define ATT_WARPS 4

struct att_shape {
  int64_t batch, heads, kv_heads, seq_q, seq_kv, head_dim, group;
  bool causal;
  float scale;
};

__device__ __forceinline__ float warp_max_f(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum_f(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T, int DPL>
__global__ void __launch_bounds__(ATT_WARPS * 32) attention_tiled_kernel(struct att_shape sh, const T *__restrict__ q,
                                                                        const T *__restrict__ k,
                                                                        const T *__restrict__ v, T *__restrict__ out) {
  extern __shared__ float smem[];
  const int64_t hd = sh.head_dim, hdp = hd + 1; /* padded K rows: no bank conflicts on the dot products */
  float *ks = smem;                  /* [ATT_TILE][hd + 1] */
  float *vs = ks + ATT_TILE * hdp;   /* [ATT_TILE][hd] */
  float *qs = vs + ATT_TILE * hd;    /* [ATT_WARPS][hd] */
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  for (int64_t bh = blockIdx.y; bh < sh.batch * sh.heads; bh += gridDim.y) {
    const int64_t b = bh / sh.heads, h = bh % sh.heads, kvh = h / sh.group;
    const T *kb = k + (b * sh.kv_heads + kvh) * sh.seq_kv * hd;
    const T *vb = v + (b * sh.kv_heads + kvh) * sh.seq_kv * hd;
    for (int64_t i0 = (int64_t)blockIdx.x * ATT_WARPS; i0 < sh.seq_q; i0 += (int64_t)gridDim.x * ATT_WARPS) {
      const int64_t i = i0 + w;
      const bool active = i < sh.seq_q;
      const int64_t row = bh * sh.seq_q + i; /* q and out share the [batch, heads, seq_q] order */
      int64_t nk = sh.seq_kv;                /* keys of this warp's row */
      if (sh.causal && i + 1 < nk) nk = i + 1;
      int64_t last = i0 + ATT_WARPS - 1 < sh.seq_q ? i0 + ATT_WARPS - 1 : sh.seq_q - 1;
      int64_t nk_block = sh.causal && last + 1 < sh.seq_kv ? last + 1 : sh.seq_kv; /* keys of any row */
      if (active)
        for (int64_t d = lane; d < hd; d += 32) qs[w * hd + d] = kb_dt<T>::load(q + row * hd + d);
      float acc[DPL];
#pragma unroll
      for (int t = 0; t < DPL; t++) acc[t] = 0.0f;
      float m = -INFINITY, l = 0.0f;
      for (int64_t j0 = 0; j0 < nk_block; j0 += ATT_TILE) {
        __syncthreads(); /* previous tile fully consumed (and qs written) */
        const int64_t tile = nk_block - j0 < ATT_TILE ? nk_block - j0 : ATT_TILE;
        for (int64_t e = threadIdx.x; e < tile * hd; e += ATT_WARPS * 32) {
          int64_t j = e / hd, d = e % hd;
          ks[j * hdp + d] = kb_dt<T>::load(kb + (j0 + j) * hd + d);
          vs[j * hd + d] = kb_dt<T>::load(vb + (j0 + j) * hd + d);
        }
        __syncthreads();
        if (!active || j0 >= nk) continue; /* warp-uniform */
        const bool valid = j0 + lane < nk;
        float s = -INFINITY;
        if (valid) {
          const float *kr = ks + lane * hdp, *qr = qs + w * hd;
          float dot = 0.0f;
          for (int64_t d = 0; d < hd; d++) dot = fmaf(qr[d], kr[d], dot);
          s = dot * sh.scale;
        }
        const float m_new = fmaxf(m, warp_max_f(s));
        const float p = valid ? expf(s - m_new) : 0.0f;
        const float corr = expf(m - m_new); /* 0 on the first tile (m = -inf) */
        l = l * corr + warp_sum_f(p);
#pragma unroll
        for (int t = 0; t < DPL; t++) acc[t] *= corr;
        const int nvalid = nk - j0 < ATT_TILE ? (int)(nk - j0) : ATT_TILE;
        for (int j = 0; j < nvalid; j++) {
          const float pj = __shfl_sync(0xffffffffu, p, j);
#pragma unroll
          for (int t = 0; t < DPL; t++) {
            const int64_t d = lane + 32 * t;
            if (d < hd) acc[t] = fmaf(pj, vs[j * hd + d], acc[t]);
          }
        }
        m = m_new;
      }
      if (active) {
#pragma unroll
        for (int t = 0; t < DPL; t++) {
          const int64_t d = lane + 32 * t;
          if (d < hd) kb_dt<T>::store(out + row * hd + d, acc[t] / l);
        }
      }
    }
  }
}

/* One warp per query row; acc (head_dim floats) in dynamic shared memory. */
template <typename T>
__global__ void __launch_bounds__(32) attention_generic_kernel(struct att_shape sh, const T *__restrict__ q,
                                                               const T *__restrict__ k, const T *__restrict__ v,
                                                               T *__restrict__ out) {
  extern __shared__ float acc[];
  const int lane = threadIdx.x;
  const int64_t hd = sh.head_dim, rows = sh.batch * sh.heads * sh.seq_q;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t i = row % sh.seq_q, bh = row / sh.seq_q;
    const int64_t b = bh / sh.heads, h = bh % sh.heads, kvh = h / sh.group;
    const T *qr = q + row * hd;
    const T *kb = k + (b * sh.kv_heads + kvh) * sh.seq_kv * hd;
    const T *vb = v + (b * sh.kv_heads + kvh) * sh.seq_kv * hd;
    int64_t nk = sh.seq_kv;
    if (sh.causal && i + 1 < nk) nk = i + 1;
    for (int64_t d = lane; d < hd; d += 32) acc[d] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int64_t j0 = 0; j0 < nk; j0 += 32) {
      const bool valid = j0 + lane < nk;
      float s = -INFINITY;
      if (valid) {
        const T *kr = kb + (j0 + lane) * hd;
        float dot = 0.0f;
        for (int64_t d = 0; d < hd; d++) dot = fmaf(kb_dt<T>::load(qr + d), kb_dt<T>::load(kr + d), dot);
        s = dot * sh.scale;
      }
      const float m_new = fmaxf(m, warp_max_f(s));
      const float p = valid ? expf(s - m_new) : 0.0f;
      const float corr = expf(m - m_new);
      l = l * corr + warp_sum_f(p);
      const int nvalid = nk - j0 < 32 ? (int)(nk - j0) : 32;
      /* d0 advances uniformly so that every lane joins each __shfl_sync. */
      for (int64_t d0 = 0; d0 < hd; d0 += 32) {
        const int64_t d = d0 + lane;
        float a = d < hd ? acc[d] * corr : 0.0f;
        for (int j = 0; j < nvalid; j++) {
          const float pj = __shfl_sync(0xffffffffu, p, j);
          if (d < hd) a = fmaf(pj, kb_dt<T>::load(vb + (j0 + j) * hd + d), a);
        }
        if (d < hd) acc[d] = a;
      }
      m = m_new;
    }
    for (int64_t d = lane; d < hd; d += 32) kb_dt<T>::store(out + row * hd + d, acc[d] / l);
    __syncwarp();
  }
}

template <typename T, int DPL>
static cudaError_t tiled(const struct att_shape &sh, const void *q, const void *k, const void *v, void *out,
                         cudaStream_t stream) {
  size_t bytes = sizeof(float) * (size_t)(ATT_TILE * (sh.head_dim + 1) + ATT_TILE * sh.head_dim +
                                          ATT_WARPS * sh.head_dim);
  if (bytes > 48 * 1024)
    KBCUDA_TRY(cudaFuncSetAttribute(attention_tiled_kernel<T, DPL>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)bytes));
  int64_t gx = (sh.seq_q + ATT_WARPS - 1) / ATT_WARPS, gy = sh.batch * sh.heads;
  dim3 grid((unsigned)(gx > 65535 ? 65535 : gx), (unsigned)(gy > 65535 ? 65535 : gy));
  attention_tiled_kernel<T, DPL><<<grid, ATT_WARPS * 32, bytes, stream>>>(sh, (const T *)q, (const T *)k,
                                                                           (const T *)v, (T *)out);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}

template <typename T>
static cudaError_t launch(const struct att_shape &sh, const void *q, const void *k, const void *v, void *out,
                          cudaStream_t stream) {
  if (sh.head_dim <= 32) return tiled<T, 1>(sh, q, k, v, out, stream);
  if (sh.head_dim <= 64) return tiled<T, 2>(sh, q, k, v, out, stream);
  if (sh.head_dim <= 128) return tiled<T, 4>(sh, q, k, v, out, stream);
  if (sh.head_dim <= 256) return tiled<T, 8>(sh, q, k, v, out, stream);
  size_t bytes = sizeof(float) * (size_t)sh.head_dim;
  if (bytes > 48 * 1024)
    KBCUDA_TRY(cudaFuncSetAttribute(attention_generic_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)bytes)); /* fails (invalid value) beyond the device's limit */
  int64_t rows = sh.batch * sh.heads * sh.seq_q;
  attention_generic_kernel<T><<<(unsigned)(rows > 1048576 ? 1048576 : rows), 32, bytes, stream>>>(
      sh, (const T *)q, (const T *)k, (const T *)v, (T *)out);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}

cudaError_t kbcuda_attention(int dt, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q, int64_t seq_kv,
                             int64_t head_dim, const void *q, const void *k, const void *v, bool causal, float scale,
                             void *out, cudaStream_t stream) {
  if (batch == 0 || heads == 0 || seq_q == 0 || head_dim == 0) return cudaSuccess;
  struct att_shape sh;
  sh.batch = batch;
  sh.heads = heads;
  sh.kv_heads = kv_heads;
  sh.seq_q = seq_q;
  sh.seq_kv = seq_kv;
  sh.head_dim = head_dim;
  sh.group = heads / kv_heads;
  sh.causal = causal;
  sh.scale = (float)(scale == 0.0f ? 1.0 / sqrt((double)head_dim) : (double)scale);
  switch (dt) {
    case KBCUDA_F32:
      return launch<float>(sh, q, k, v, out, stream);
    case KBCUDA_BF16:
      return launch<__nv_bfloat16>(sh, q, k, v, out, stream);
    case KBCUDA_F16:
      return launch<__half>(sh, q, k, v, out, stream);
  }
  return cudaErrorInvalidValue;
}
