/* gemm.cu - C = alpha * op(A) * op(B) + beta * C, row-major.
 *
 * Two implementations:
 * - cuBLASLt, loaded at run time with dlopen("libcublasLt.so.13") (the
 *   library has no link-time dependency on cuBLAS).  float32 uses
 *   CUBLAS_COMPUTE_32F (true float32, never TF32); bf16/f16 use float32
 *   accumulation and scaling.  Its summation order is its own (blocking,
 *   FMA, possibly split-k), so results match the CPU within the gemm
 *   tolerance of docs/cuda.md, not bitwise.
 * - gemm_tiled_kernel, the library's own 64x64-tile SGEMM.  For every
 *   element it computes exactly what kernels/cpu/gemm.c computes:
 *   acc = 0; acc = fmaf(a, b, acc) for p = 0, 1, ... (one rounding per
 *   step), then alpha * acc [+ beta * C] (the epilogue not fused), so
 *   float32 results are bitwise equal to the CPU.
 *
 * AUTO uses cuBLASLt when it loaded and offers an algorithm, except when
 * alpha == 0 or k == 0 (the tiled kernel keeps the documented semantics there:
 * products are not skipped, NaN/Inf in A or B propagate).  With beta == 0, C
 * is not read by either implementation. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cublasLt.h>

#include "kbcuda_internal.cuh"

/* ------------------------------------------------------------------------ */
/* cuBLASLt, resolved once per process. */

#define KB_LT_LIBRARY "libcublasLt.so.13"
#define KB_LT_WORKSPACE (32u << 20) /* NVIDIA's recommendation for Hopper */

struct lt_api {
  int ok;
  char error[192];
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtMatmulDescCreate) desc_create;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic;
  decltype(&cublasLtMatmul) matmul;
};

static struct lt_api g_lt;
static pthread_once_t g_lt_once = PTHREAD_ONCE_INIT;

template <typename F>
static bool lt_sym(void *h, const char *name, F *out) {
  void *p = dlsym(h, name);
  if (p == NULL) {
    snprintf(g_lt.error, sizeof g_lt.error, "%s has no symbol %s", KB_LT_LIBRARY, name);
    return false;
  }
  *out = (F)p;
  return true;
}

static void lt_load(void) {
  void *h = dlopen(KB_LT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    snprintf(g_lt.error, sizeof g_lt.error, "cannot load %s: %s", KB_LT_LIBRARY, e != NULL ? e : "unknown error");
    return;
  }
  bool ok = lt_sym(h, "cublasLtCreate", &g_lt.create) && lt_sym(h, "cublasLtDestroy", &g_lt.destroy) &&
            lt_sym(h, "cublasLtMatmulDescCreate", &g_lt.desc_create) &&
            lt_sym(h, "cublasLtMatmulDescDestroy", &g_lt.desc_destroy) &&
            lt_sym(h, "cublasLtMatmulDescSetAttribute", &g_lt.desc_set) &&
            lt_sym(h, "cublasLtMatrixLayoutCreate", &g_lt.layout_create) &&
            lt_sym(h, "cublasLtMatrixLayoutDestroy", &g_lt.layout_destroy) &&
            lt_sym(h, "cublasLtMatmulPreferenceCreate", &g_lt.pref_create) &&
            lt_sym(h, "cublasLtMatmulPreferenceDestroy", &g_lt.pref_destroy) &&
            lt_sym(h, "cublasLtMatmulPreferenceSetAttribute", &g_lt.pref_set) &&
            lt_sym(h, "cublasLtMatmulAlgoGetHeuristic", &g_lt.heuristic) && lt_sym(h, "cublasLtMatmul", &g_lt.matmul);
  /* The handle stays open for the life of the process (no dlclose: other
   * contexts may hold cuBLASLt handles). */
  g_lt.ok = ok;
}

static const struct lt_api *lt_get(void) {
  pthread_once(&g_lt_once, lt_load);
  return &g_lt;
}

void kbcuda_gemm_release(void *lt_handle, void *workspace) {
  if (lt_handle != NULL && g_lt.ok) g_lt.destroy((cublasLtHandle_t)lt_handle);
  if (workspace != NULL) cudaFree(workspace);
}

/* Largest power of two (<= 256) dividing the address: cuBLASLt's heuristic
 * otherwise assumes 256-byte aligned operands. */
static uint32_t alignment_of(const void *p) {
  uintptr_t a = (uintptr_t)p;
  uint32_t al = 256;
  while (al > 1 && (a % al) != 0) al >>= 1;
  return al;
}

static void note(struct kbcuda_gemm_env *env, const char *what) {
  if (env->note != NULL && env->note_cap > 0) snprintf(env->note, env->note_cap, "%s", what);
}

enum lt_result { LT_DONE, LT_FALLBACK, LT_ERROR };

/* Row-major C[m,n] = op(A) op(B) is column-major C^T[n,m] = op(B)^T op(A)^T:
 * cuBLASLt's "A" is our B and its "B" is our A, with the same transposes. */
static enum lt_result lt_gemm(struct kbcuda_gemm_env *env, cudaDataType_t type, bool ta, bool tb, int64_t m,
                              int64_t n, int64_t k, const float *alpha, const void *a, int64_t lda, const void *b,
                              int64_t ldb, const float *beta, void *c, int64_t ldc, cudaStream_t stream,
                              cudaError_t *err) {
  const struct lt_api *lt = lt_get();
  if (!lt->ok) {
    note(env, lt->error);
    return LT_FALLBACK;
  }
  if (*env->lt_handle == NULL) {
    cublasLtHandle_t h;
    if (lt->create(&h) != CUBLAS_STATUS_SUCCESS) {
      note(env, "cublasLtCreate failed");
      return LT_FALLBACK;
    }
    *env->lt_handle = (void *)h;
  }
  if (*env->workspace == NULL && *env->workspace_bytes == 0) {
    void *ws = NULL;
    if (cudaMalloc(&ws, KB_LT_WORKSPACE) == cudaSuccess) {
      *env->workspace = ws;
      *env->workspace_bytes = KB_LT_WORKSPACE;
    } else {
      (void)cudaGetLastError(); /* run without workspace */
      *env->workspace_bytes = 1; /* do not retry on every call */
    }
  }
  size_t ws_bytes = *env->workspace != NULL ? *env->workspace_bytes : 0;
  cublasLtHandle_t h = (cublasLtHandle_t)*env->lt_handle;
  cublasLtMatmulDesc_t desc = NULL;
  cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
  cublasLtMatmulPreference_t pref = NULL;
  enum lt_result result = LT_FALLBACK;
  cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLASLt A = our B */
  cublasOperation_t op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLASLt B = our A */
  /* Stored column-major shapes: our row-major [r, c] with ld is [c, r]. */
  uint64_t la_rows = tb ? (uint64_t)k : (uint64_t)n, la_cols = tb ? (uint64_t)n : (uint64_t)k;
  uint64_t lb_rows = ta ? (uint64_t)m : (uint64_t)k, lb_cols = ta ? (uint64_t)k : (uint64_t)m;
  uint32_t al_a = alignment_of(b), al_b = alignment_of(a), al_c = alignment_of(c);
  cublasLtMatmulHeuristicResult_t heur;
  int found = 0;
  cublasStatus_t st;
  if (lt->desc_create(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) goto done;
  if (lt->desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a) != CUBLAS_STATUS_SUCCESS) goto done;
  if (lt->desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b) != CUBLAS_STATUS_SUCCESS) goto done;
  if (lt->layout_create(&la, type, la_rows, la_cols, ldb) != CUBLAS_STATUS_SUCCESS) goto done;
  if (lt->layout_create(&lb, type, lb_rows, lb_cols, lda) != CUBLAS_STATUS_SUCCESS) goto done;
  if (lt->layout_create(&lc, type, (uint64_t)n, (uint64_t)m, ldc) != CUBLAS_STATUS_SUCCESS) goto done;
  if (lt->pref_create(&pref) != CUBLAS_STATUS_SUCCESS) goto done;
  if (lt->pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes) != CUBLAS_STATUS_SUCCESS)
    goto done;
  if (lt->pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a) != CUBLAS_STATUS_SUCCESS ||
      lt->pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b) != CUBLAS_STATUS_SUCCESS ||
      lt->pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof al_c) != CUBLAS_STATUS_SUCCESS ||
      lt->pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof al_c) != CUBLAS_STATUS_SUCCESS)
    goto done;
  if (lt->heuristic(h, desc, la, lb, lc, lc, pref, 1, &heur, &found) != CUBLAS_STATUS_SUCCESS || found == 0) {
    note(env, "cuBLASLt offers no algorithm for this problem");
    goto done;
  }
  /* C is both the input C and the output D (in place, same layout). */
  st = lt->matmul(h, desc, alpha, b, la, a, lb, beta, c, lc, c, lc, &heur.algo, *env->workspace, ws_bytes, stream);
  if (st == CUBLAS_STATUS_SUCCESS) {
    result = LT_DONE;
  } else if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) {
    note(env, "cublasLtMatmul refused the problem");
  } else {
    cudaError_t e = cudaGetLastError();
    *err = e != cudaSuccess ? e : st == CUBLAS_STATUS_ALLOC_FAILED ? cudaErrorMemoryAllocation : cudaErrorUnknown;
    result = LT_ERROR;
  }
done:
  if (pref != NULL) lt->pref_destroy(pref);
  if (lc != NULL) lt->layout_destroy(lc);
  if (lb != NULL) lt->layout_destroy(lb);
  if (la != NULL) lt->layout_destroy(la);
  if (desc != NULL) lt->desc_destroy(desc);
  return result;
}

/* ------------------------------------------------------------------------ */
/* The tiled kernel: 64x64 tile of C per 256-thread block, 4x4 per thread,
 * k in slices of 16 staged in shared memory. */

#define TM 64
#define TN 64
#define TK 16

template <typename T>
__global__ void __launch_bounds__(256) gemm_tiled_kernel(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                                         float alpha, const T *__restrict__ a, int64_t lda,
                                                         const T *__restrict__ b, int64_t ldb, float beta, T *c,
                                                         int64_t ldc) {
  __shared__ float as[TK][TM + 4]; /* as[p][i] = op(A)[i0 + i, k0 + p] */
  __shared__ float bs[TK][TN + 4]; /* bs[p][j] = op(B)[k0 + p, j0 + j] */
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const int64_t j0 = (int64_t)blockIdx.x * TN;
  for (int64_t i0 = (int64_t)blockIdx.y * TM; i0 < m; i0 += (int64_t)gridDim.y * TM) {
    float acc[4][4];
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
      for (int q = 0; q < 4; q++) acc[r][q] = 0.0f;
    for (int64_t k0 = 0; k0 < k; k0 += TK) {
      for (int e = threadIdx.x; e < TM * TK; e += 256) {
        /* Consecutive threads read consecutive addresses of the stored matrix. */
        int i = ta ? e % TM : e / TK, p = ta ? e / TM : e % TK;
        int64_t gi = i0 + i, gp = k0 + p;
        float v = 0.0f;
        if (gi < m && gp < k) v = kb_dt<T>::load(ta ? a + gp * lda + gi : a + gi * lda + gp);
        as[p][i] = v;
      }
      for (int e = threadIdx.x; e < TN * TK; e += 256) {
        int j = tb ? e / TK : e % TN, p = tb ? e % TK : e / TN;
        int64_t gj = j0 + j, gp = k0 + p;
        float v = 0.0f;
        if (gj < n && gp < k) v = kb_dt<T>::load(tb ? b + gj * ldb + gp : b + gp * ldb + gj);
        bs[p][j] = v;
      }
      __syncthreads();
      const int kk = k - k0 < TK ? (int)(k - k0) : TK; /* never add padding */
      for (int p = 0; p < kk; p++) {
        float av[4], bv[4];
#pragma unroll
        for (int r = 0; r < 4; r++) av[r] = as[p][ty + 16 * r];
#pragma unroll
        for (int q = 0; q < 4; q++) bv[q] = bs[p][tx + 16 * q];
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
          for (int q = 0; q < 4; q++) acc[r][q] = __fmaf_rn(av[r], bv[q], acc[r][q]);
      }
      __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 4; r++) {
      int64_t i = i0 + ty + 16 * r;
      if (i >= m) continue;
#pragma unroll
      for (int q = 0; q < 4; q++) {
        int64_t j = j0 + tx + 16 * q;
        if (j >= n) continue;
        T *cp = c + i * ldc + j;
        float out = __fmul_rn(alpha, acc[r][q]);
        if (beta != 0.0f) out = __fadd_rn(out, __fmul_rn(beta, kb_dt<T>::load(cp)));
        kb_dt<T>::store(cp, out);
      }
    }
  }
}

template <typename T>
static cudaError_t tiled(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const void *a, int64_t lda,
                         const void *b, int64_t ldb, float beta, void *c, int64_t ldc, cudaStream_t stream) {
  int64_t gx = (n + TN - 1) / TN, gy = (m + TM - 1) / TM;
  if (gx > 2147483647) return cudaErrorInvalidConfiguration;
  dim3 grid((unsigned)gx, (unsigned)(gy > 65535 ? 65535 : gy));
  gemm_tiled_kernel<T><<<grid, 256, 0, stream>>>(ta, tb, m, n, k, alpha, (const T *)a, lda, (const T *)b, ldb, beta,
                                                 (T *)c, ldc);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}

cudaError_t kbcuda_gemm(struct kbcuda_gemm_env *env, int dt, bool trans_a, bool trans_b, int64_t m, int64_t n,
                        int64_t k, float alpha, const void *a, int64_t lda, const void *b, int64_t ldb, float beta,
                        void *c, int64_t ldc, cudaStream_t stream) {
  env->used = KBCUDA_GEMM_TILED;
  if (m == 0 || n == 0) return cudaSuccess;
  cudaDataType_t type = dt == KBCUDA_BF16 ? CUDA_R_16BF : dt == KBCUDA_F16 ? CUDA_R_16F : CUDA_R_32F;
  if (dt != KBCUDA_F32 && dt != KBCUDA_BF16 && dt != KBCUDA_F16) return cudaErrorInvalidValue;
  if (env->impl != KBCUDA_GEMM_TILED) {
    if (alpha == 0.0f || k == 0) {
      note(env, "alpha == 0 or k == 0: the tiled kernel keeps the CPU semantics");
    } else {
      cudaError_t err = cudaSuccess;
      enum lt_result r = lt_gemm(env, type, trans_a, trans_b, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc, stream,
                                 &err);
      if (r == LT_DONE) {
        env->used = KBCUDA_GEMM_CUBLASLT;
        return cudaSuccess;
      }
      if (r == LT_ERROR) return err;
    }
    if (env->impl == KBCUDA_GEMM_CUBLASLT) return cudaErrorNotSupported;
  }
  switch (dt) {
    case KBCUDA_F32:
      return tiled<float>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, stream);
    case KBCUDA_BF16:
      return tiled<__nv_bfloat16>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, stream);
    default:
      return tiled<__half>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, stream);
  }
}
