/* gemm_scalar.c - the portable level of the gemm pieces (gemm_kernels.h):
 * plain C with fmaf, the reference the vector levels are tested against.
 *
 * fmaf is one correctly rounded fused multiply-add whatever the hardware
 * (glibc uses the FMA instruction when the CPU has one), so this level gives
 * the same bits as the vector levels, only slower. */
#include <math.h>
#include <stddef.h>

#include "gemm_kernels.h"

#define MR 4
#define NR 8
/* The reference level keeps every small-m product on the small-m dot. */
#define SMALL_DOT_ROWS_F32 KB_GEMM_SMALL_M
#define SMALL_DOT_ROWS_HALF KB_GEMM_SMALL_M

static void kernel(int64_t kc, const float *a, int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs, float *c,
                   int64_t ldc, int64_t rows, int64_t cols, int first, const struct kb_gemm_epilogue *last) {
  float acc[MR][NR];
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) acc[i][j] = first ? 0.0f : c[i * ldc + j];
  for (int64_t p = 0; p < kc; p++) {
    const float *bp = b + p * b_rs;
    for (int64_t i = 0; i < rows; i++) {
      float ai = a[i * a_rs + p * a_cs];
      for (int64_t j = 0; j < cols; j++) acc[i][j] = fmaf(ai, bp[j], acc[i][j]);
    }
  }
  for (int64_t i = 0; i < rows; i++) {
    for (int64_t j = 0; j < cols; j++) {
      float v = acc[i][j];
      if (last != NULL) {
        float s = last->alpha * v;
        v = last->beta == 0.0f ? s : s + last->beta * last->c0[i * last->ldc0 + j];
      }
      c[i * ldc + j] = v;
    }
  }
}

static void pack_bt(int64_t kc, int64_t nc, const float *b, int64_t ldb, float *dst, int64_t nr) {
  for (int64_t q = 0; q * nr < nc; q++) {
    float *panel = dst + q * kc * nr;
    for (int64_t jj = 0; jj < nr; jj++) {
      int64_t j = q * nr + jj;
      if (j < nc) {
        const float *row = b + j * ldb;
        for (int64_t p = 0; p < kc; p++) panel[p * nr + jj] = row[p];
      } else {
        for (int64_t p = 0; p < kc; p++) panel[p * nr + jj] = 0.0f;
      }
    }
  }
}

static void gemv_axpy(int64_t k, int64_t n, const float *x, const float *mat, int64_t ldm, float *y) {
  for (int64_t j = 0; j < n; j++) y[j] = 0.0f;
  for (int64_t p = 0; p < k; p++) {
    const float *row = mat + p * ldm;
    float xp = x[p];
    for (int64_t j = 0; j < n; j++) y[j] = fmaf(xp, row[j], y[j]);
  }
}

static void gemv_dot(int64_t k, int64_t n, const float *x, const float *mat, int64_t ldm, float *y) {
  for (int64_t j = 0; j < n; j++) {
    const float *row = mat + j * ldm;
    float acc = 0.0f;
    for (int64_t p = 0; p < k; p++) acc = fmaf(x[p], row[p], acc);
    y[j] = acc;
  }
}

static void transpose(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst, int64_t ldd) {
  for (int64_t j = 0; j < cols; j++)
    for (int64_t i = 0; i < rows; i++) dst[j * ldd + i] = src[i * lds + j];
}

const struct kb_gemm_ops kb__gemm_ops_scalar = {MR, NR, kernel, pack_bt, gemv_axpy, gemv_dot,
                                                kb__gemm_small_dot_scalar, kb__gemm_small_axpy_scalar, kb__gemm_pack_bt_half_scalar,
                                                transpose, kb__gemm_widen_scalar, SMALL_DOT_ROWS_F32,
                                                SMALL_DOT_ROWS_HALF, NULL};
