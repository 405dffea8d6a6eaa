/*
 * kbcuda_internal.cuh - definitions shared by the .cu files of the CUDA
 * backend.  Internal to kernels/cuda; the core sees only kbcuda_api.h.
 *
 * Layout: one .cu per op family, each with its __global__ <op>_kernel(s) and
 * a launcher kbcuda_<op>(..., cudaStream_t stream) that assumes validated
 * arguments, launches on `stream`, checks cudaGetLastError() after every
 * launch and returns the cudaError_t.  table.cu wraps the launchers into the
 * kbcuda_table entries (device selection, lost latch, error translation).
 */
#ifndef KBCUDA_INTERNAL_CUH
#define KBCUDA_INTERNAL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kbcuda_api.h"

/* Returns the launch error of the preceding <<<>>> from the enclosing
 * launcher.  cudaGetLastError also clears a non-sticky error. */
#define KBCUDA_CHECK_LAUNCH()                       \
  do {                                              \
    cudaError_t kbcuda_e_ = cudaGetLastError();     \
    if (kbcuda_e_ != cudaSuccess) return kbcuda_e_; \
  } while (0)

/* Returns from the enclosing launcher when a runtime call fails. */
#define KBCUDA_TRY(expr)                            \
  do {                                              \
    cudaError_t kbcuda_e_ = (expr);                 \
    if (kbcuda_e_ != cudaSuccess) return kbcuda_e_; \
  } while (0)

/* Per-context state.  Only the table's entry points touch it. */
struct kbcuda_ctx {
  int device;
  cudaStream_t stream;
  int lost;             /* latched after a sticky error */
  int gemm_impl;        /* KBCUDA_GEMM_* requested */
  int last_gemm_impl;   /* KBCUDA_GEMM_* used by the last gemm */
  void *lt_handle;      /* cublasLtHandle_t, created on first use */
  void *lt_workspace;   /* device workspace for cuBLASLt */
  size_t lt_workspace_bytes;
  char message[KBCUDA_MESSAGE_CAPACITY];
};

/* What the gemm launcher needs besides the stream. */
struct kbcuda_gemm_env {
  int impl;                 /* requested KBCUDA_GEMM_* */
  void **lt_handle;         /* in/out: created lazily */
  void **workspace;         /* in/out: allocated lazily */
  size_t *workspace_bytes;  /* in/out */
  int used;                 /* out: KBCUDA_GEMM_CUBLASLT or KBCUDA_GEMM_TILED */
  char *note;               /* out (may be NULL): why cuBLASLt was not used */
  size_t note_cap;
};

/* ---- element types ---- */

template <typename T>
struct kb_dt;
template <>
struct kb_dt<float> {
  static __device__ __forceinline__ float load(const float *p) { return *p; }
  static __device__ __forceinline__ void store(float *p, float v) { *p = v; }
};
template <>
struct kb_dt<__nv_bfloat16> {
  static __device__ __forceinline__ float load(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
  static __device__ __forceinline__ void store(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }
};
template <>
struct kb_dt<__half> {
  static __device__ __forceinline__ float load(const __half *p) { return __half2float(*p); }
  static __device__ __forceinline__ void store(__half *p, float v) { *p = __float2half_rn(v); }
};

/* ---- launch geometry ---- */

/* Blocks for a grid-stride loop over n items with `threads` per block. */
static inline unsigned kbcuda_blocks(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535) b = 65535;
  return (unsigned)b;
}

/* Row-wise kernels use 256-thread blocks and either one warp per row (short
 * rows) or the whole block per row (long rows). */
#define KBCUDA_ROW_THREADS 256
#define KBCUDA_ROW_WARPS (KBCUDA_ROW_THREADS / 32)
static inline bool kbcuda_row_use_block(int64_t cols) { return cols > 1024; }
static inline unsigned kbcuda_row_blocks(int64_t rows, bool block_per_row) {
  int64_t per = block_per_row ? 1 : KBCUDA_ROW_WARPS;
  int64_t b = (rows + per - 1) / per;
  if (b < 1) b = 1;
  if (b > 65535) b = 65535;
  return (unsigned)b;
}

/* ---- reductions (fixed order: results are deterministic run to run) ---- */

struct kb_sum_op {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
/* fmax ignores NaN, matching the CPU's `if (x > m) m = x` row maximum. */
struct kb_max_op {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
  __device__ __forceinline__ double operator()(double a, double b) const { return fmax(a, b); }
};

/* Butterfly reduction: every lane ends with the same bits (a+b == b+a). */
template <typename T, typename Op>
__device__ __forceinline__ T kb_warp_reduce(T v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/* Reduces over the threads that share a row: the warp (WPR == 1) or the
 * whole 256-thread block (WPR == 8; every thread of the block must call it).
 * smem holds KBCUDA_ROW_WARPS values. */
template <int WPR, typename T, typename Op>
__device__ __forceinline__ T kb_row_reduce(T v, T *smem, Op op) {
  v = kb_warp_reduce(v, op);
  if (WPR == 1) return v;
  int w = threadIdx.x >> 5;
  __syncthreads(); /* smem may still be read from the previous reduction */
  if ((threadIdx.x & 31) == 0) smem[w] = v;
  __syncthreads();
  T r = smem[0];
  for (int i = 1; i < KBCUDA_ROW_WARPS; i++) r = op(r, smem[i]);
  return r;
}

/* ---- launchers (validated arguments; each returns the first CUDA error) ---- */

cudaError_t kbcuda_unary(int op, int dt, int64_t n, const void *x, void *y, cudaStream_t stream);
cudaError_t kbcuda_binary(int op, int dt, int64_t n, const void *a, const void *b, void *y, cudaStream_t stream);
cudaError_t kbcuda_scale(int dt, int64_t n, float alpha, const void *x, void *y, cudaStream_t stream);
cudaError_t kbcuda_add_bias(int dt, int64_t rows, int64_t cols, const void *x, const void *bias, void *y,
                            cudaStream_t stream);
cudaError_t kbcuda_softmax(int dt, bool log, int64_t rows, int64_t cols, const void *x, void *y, cudaStream_t stream);
cudaError_t kbcuda_rmsnorm(int dt, int64_t rows, int64_t cols, const void *x, const void *weight, float eps, void *y,
                           cudaStream_t stream);
cudaError_t kbcuda_layernorm(int dt, int64_t rows, int64_t cols, const void *x, const void *weight, const void *bias,
                             float eps, void *y, cudaStream_t stream);
cudaError_t kbcuda_gemm(struct kbcuda_gemm_env *env, int dt, bool trans_a, bool trans_b, int64_t m, int64_t n,
                        int64_t k, float alpha, const void *a, int64_t lda, const void *b, int64_t ldb, float beta,
                        void *c, int64_t ldc, cudaStream_t stream);
/* Frees what kbcuda_gemm created in env (handle, workspace). */
void kbcuda_gemm_release(void *lt_handle, void *workspace);
cudaError_t kbcuda_embedding(int64_t n_ids, int64_t dim, const int32_t *ids, const float *table, float *out,
                             cudaStream_t stream);
cudaError_t kbcuda_rope(int64_t seq, int64_t heads, int64_t head_dim, const float *x, const int32_t *positions,
                        float theta, float *y, cudaStream_t stream);
cudaError_t kbcuda_attention(int dt, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q, int64_t seq_kv,
                             int64_t head_dim, const void *q, const void *k, const void *v, bool causal, float scale,
                             void *out, cudaStream_t stream);
cudaError_t kbcuda_cross_entropy(int64_t rows, int64_t classes, const float *logits, const int32_t *targets,
                                 int32_t ignore_index, float *losses, float *mean_loss, cudaStream_t stream);
cudaError_t kbcuda_cross_entropy_backward(int64_t rows, int64_t classes, const float *logits, const int32_t *targets,
                                          int32_t ignore_index, float dloss, float *dlogits, cudaStream_t stream);
cudaError_t kbcuda_adamw_step(int64_t n, float *params, const float *grads, float *m, float *v, float lr, float beta1,
                              float beta2, float eps, float weight_decay, int64_t step, cudaStream_t stream);
cudaError_t kbcuda_argmax(int64_t rows, int64_t cols, const float *x, int32_t *out, cudaStream_t stream);
/* mode: 0 sample, 1 top-k, 2 top-p. */
cudaError_t kbcuda_sample(int mode, int64_t rows, int64_t cols, const float *logits, int64_t k, float p,
                          float temperature, uint64_t seed, int32_t *out, cudaStream_t stream);
/* Results land in host memory; both synchronise the stream. */
cudaError_t kbcuda_validate_index(int64_t n, const int32_t *values, int64_t lo, int64_t hi, bool has_ignore,
                                  int32_t ignore, int64_t *first_bad, int32_t *bad_value, cudaStream_t stream);
cudaError_t kbcuda_validate_logits(int64_t rows, int64_t cols, const float *logits, int64_t *first_bad_row,
                                   int32_t *reason, cudaStream_t stream);

#endif /* KBCUDA_INTERNAL_CUH */
