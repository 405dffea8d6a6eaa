/* gemm_small_scalar.c - the small-m products (gemm_kernels.h,
 * kb_gemm_small_fn) in plain C with fmaf: the reference the vector levels
 * (gemm_small_avx2.c, gemm_small_avx512.c) are tested against.  Every output
 * is the contract's fma chain over p, so the vector levels give these bits. */
#include <math.h>
#include <stddef.h>

#include "gemm_kernels.h"
#include "half.h"

/* Element idx of b, stored as bdt, widened to float32 (exact). */
static float widen(int bdt, const void *b, int64_t idx) {
  switch (bdt) {
    case KB_GEMM_BF16:
      return kb_bf16_to_f32(((const uint16_t *)b)[idx]);
    case KB_GEMM_F16:
      return kb_f16_to_f32(((const uint16_t *)b)[idx]);
    default:
      return ((const float *)b)[idx];
  }
}

void kb__gemm_small_dot_scalar(int bdt, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const void *b,
                               int64_t ldb, float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; p++) acc = fmaf(a[i * lda + p], widen(bdt, b, j * ldb + p), acc);
      c[i * ldc + j] = acc;
    }
}

void kb__gemm_small_axpy_scalar(int bdt, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const void *b,
                                int64_t ldb, float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; p++) acc = fmaf(a[i * lda + p], widen(bdt, b, p * ldb + j), acc);
      c[i * ldc + j] = acc;
    }
}

void kb__gemm_widen_scalar(int bdt, int64_t n, const uint16_t *src, float *dst) {
  kb_half_widen(bdt == KB_GEMM_F16, src, dst, n);
}

void kb__gemm_pack_bt_half_scalar(int bdt, int64_t kc, int64_t nc, const uint16_t *b, int64_t ldb, float *dst,
                                  int64_t nr) {
  for (int64_t q = 0; q * nr < nc; q++) {
    float *panel = dst + q * kc * nr;
    for (int64_t jj = 0; jj < nr; jj++) {
      int64_t j = q * nr + jj;
      for (int64_t p = 0; p < kc; p++) panel[p * nr + jj] = j < nc ? widen(bdt, b, j * ldb + p) : 0.0f;
    }
  }
}
