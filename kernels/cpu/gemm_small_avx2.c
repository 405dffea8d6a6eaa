/* gemm_small_avx2.c - the small-m products (gemm_kernels.h,
 * kb_gemm_small_fn) at the avx2 level: the scheme of gemm_small_avx512.c
 * with 8 lanes.  small_dot: blocks of 8 outputs, an 8 x 8 tile of B
 * transposed so that lanes run along j, two blocks interleaved while A has
 * at most 4 rows (16 registers: the tile and the accumulators must fit).
 * small_axpy: chunks of 32, 16 or 8 outputs by the number of rows of A.
 * Every output is the contract's chain, so the bits are the scalar level's. */
#include <stdbool.h>
#include <stdint.h>

#include "gemm_kernels.h"
#include "gemm_load.h"
#include "gemm_small_prefetch.h"
#include "gemm_transpose.h"
#include "simd.h"

#if KB_HAVE_X86_SIMD

#define KB_SMALL_AXPY_AHEAD 8

/* col[q] = B(j0 + l, p + q) in lane l for `rows` rows and w <= 8 steps. */
KB_TARGET_AVX2 __attribute__((always_inline)) static inline void tile(const int BDT, const char *row0, int64_t ld_bytes,
                                                                    int64_t rows, int64_t w, __m256 col[8]) {
  __m256 r[8];
  if (rows == 8 && w == 8) {
    _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++) r[l] = kb_gemm_load8(BDT, row0 + l * ld_bytes);
  } else {
    for (int l = 0; l < 8; l++)
      r[l] = l >= rows ? _mm256_setzero_ps() : w == 8 ? kb_gemm_load8(BDT, row0 + l * ld_bytes) : kb_gemm_load8_part(BDT, row0 + l * ld_bytes, w);
  }
  transpose8(r, col);
}

#define CHAIN(M_, acc, col, a, lda, p, w)                                                         \
  do {                                                                                            \
    if ((w) == 8) {                                                                               \
      _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)                                         \
          _Pragma("GCC unroll 16") for (int i = 0; i < (M_); i++)                                 \
              acc[i] = _mm256_fmadd_ps(_mm256_set1_ps((a)[i * (lda) + (p) + q]), col[q], acc[i]); \
    } else {                                                                                      \
      for (int64_t q = 0; q < (w); q++)                                                           \
        _Pragma("GCC unroll 16") for (int i = 0; i < (M_); i++)                                   \
            acc[i] = _mm256_fmadd_ps(_mm256_set1_ps((a)[i * (lda) + (p) + q]), col[q], acc[i]);   \
    }                                                                                             \
  } while (0)

KB_TARGET_AVX2 __attribute__((always_inline)) static inline void dot_blocks(const int BDT, const int M, int64_t k,
                                                                          const float *a, int64_t lda, const void *b,
                                                                          int64_t ldb, int64_t n, int64_t j0,
                                                                          int64_t rows, int64_t rows2, float *c,
                                                                          int64_t ldc) {
  const int64_t esize = BDT == KB_GEMM_F32 ? 4 : 2, ld_bytes = ldb * esize;
  const char *b0 = (const char *)b + j0 * ld_bytes, *b1 = b0 + 8 * ld_bytes;
  __m256 acc0[KB_GEMM_SMALL_M], acc1[KB_GEMM_SMALL_M];
  for (int i = 0; i < M; i++) acc0[i] = acc1[i] = _mm256_setzero_ps();
  /* The next block: as many rows as this one, right after it. */
  const int64_t count = rows2 > 0 ? 16 : 8, steps = (k + 7) / 8;
  const char *next = (const char *)((uintptr_t)b0 + (uintptr_t)(count * ld_bytes));
  const int64_t next_rows = kb_small_next_rows(n, j0, count);
  for (int64_t p = 0; p < k; p += 8) {
    int64_t w = k - p < 8 ? k - p : 8;
    if (k <= KB_SMALL_PREFETCH) {
      kb_small_prefetch_next_rows(next, ld_bytes, k * esize, count, p / 8, steps);
    } else if (p % 16 == 0) {
      if (p + KB_SMALL_PREFETCH < k) {
        for (int l = 0; l < rows; l++) KB_PREFETCH_STREAM(b0 + l * ld_bytes + (p + KB_SMALL_PREFETCH) * esize);
        for (int l = 0; l < rows2; l++) KB_PREFETCH_STREAM(b1 + l * ld_bytes + (p + KB_SMALL_PREFETCH) * esize);
      } else {
        kb_small_prefetch_next_starts(next, ld_bytes, next_rows, (p + KB_SMALL_PREFETCH - k) * esize);
      }
    }
    __m256 col[8];
    tile(BDT, b0 + p * esize, ld_bytes, rows, w, col);
    CHAIN(M, acc0, col, a, lda, p, w);
    if (rows2 > 0) {
      tile(BDT, b1 + p * esize, ld_bytes, rows2, w, col);
      CHAIN(M, acc1, col, a, lda, p, w);
    }
  }
  for (int i = 0; i < M; i++) {
    _mm256_maskstore_ps(c + i * ldc + j0, kb_first8_lanes(rows), acc0[i]);
    if (rows2 > 0) _mm256_maskstore_ps(c + i * ldc + j0 + 8, kb_first8_lanes(rows2), acc1[i]);
  }
}

KB_TARGET_AVX2 __attribute__((always_inline)) static inline void dot_m(const int BDT, const int M, int64_t n, int64_t k,
                                                                     const float *a, int64_t lda, const void *b,
                                                                     int64_t ldb, float *c, int64_t ldc) {
  const int64_t step = M <= 4 ? 16 : 8;
  for (int64_t j0 = 0; j0 < n; j0 += step) {
    int64_t rows = n - j0 < 8 ? n - j0 : 8;
    int64_t rows2 = step == 16 && n - j0 > 8 ? (n - j0 - 8 < 8 ? n - j0 - 8 : 8) : 0;
    dot_blocks(BDT, M, k, a, lda, b, ldb, n, j0, rows, rows2, c, ldc);
  }
}

#define DOT_CASES(BDT)                                                                      \
  switch (m) {                                                                              \
    case 1: dot_m(BDT, 1, n, k, a, lda, b, ldb, c, ldc); break;                             \
    case 2: dot_m(BDT, 2, n, k, a, lda, b, ldb, c, ldc); break;                             \
    case 3: dot_m(BDT, 3, n, k, a, lda, b, ldb, c, ldc); break;                             \
    case 4: dot_m(BDT, 4, n, k, a, lda, b, ldb, c, ldc); break;                             \
    default:                                                                                \
      /* More rows: 4 at a time (the tile and the accumulators fill the registers). */      \
      dot_m(BDT, 4, n, k, a, lda, b, ldb, c, ldc);                                          \
      kb__gemm_small_dot_avx2(bdt, m - 4, n, k, a + 4 * lda, lda, b, ldb, c + 4 * ldc, ldc); \
      break;                                                                                \
  }

KB_TARGET_AVX2 void kb__gemm_small_dot_avx2(int bdt, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                            const void *b, int64_t ldb, float *c, int64_t ldc) {
  if (bdt == KB_GEMM_BF16) {
    DOT_CASES(KB_GEMM_BF16)
  } else if (bdt == KB_GEMM_F16) {
    DOT_CASES(KB_GEMM_F16)
  } else {
    DOT_CASES(KB_GEMM_F32)
  }
}

/* ---- packing 16-bit B for the blocked path ---- */

/* A row of BDT values widened: 8 per load, the rest through kb_gemm_load8_part. */
KB_TARGET_AVX2 __attribute__((always_inline)) static inline void widen_row(const int BDT, int64_t n, const uint16_t *src,
                                                                         float *dst) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(dst + j, kb_gemm_load8(BDT, src + j));
  if (j < n) _mm256_maskstore_ps(dst + j, kb_first8_lanes(n - j), kb_gemm_load8_part(BDT, src + j, n - j));
}

/* kb_gemm_widen_fn. */
KB_TARGET_AVX2 void kb__gemm_widen_avx2(int bdt, int64_t n, const uint16_t *src, float *dst) {
  if (bdt == KB_GEMM_F16)
    widen_row(KB_GEMM_F16, n, src, dst);
  else
    widen_row(KB_GEMM_BF16, n, src, dst);
}

/* kb_gemm_pack_bt_fn for B stored as bdt (bfloat16 or float16 [nc, kc]
 * rows): the rows widened while loaded, then transposed as pack_bt does. */
KB_TARGET_AVX2 void kb__gemm_pack_bt_half_avx2(int bdt, int64_t kc, int64_t nc, const uint16_t *b, int64_t ldb,
                                               float *dst, int64_t nr) {
  for (int64_t j0 = 0; j0 < nc; j0 += nr) {
    float *panel = dst + (j0 / nr) * kc * nr;
    for (int64_t h = 0; h < nr; h += 8) {
      int64_t rows = nc - (j0 + h);
      if (rows > 8) rows = 8;
      for (int64_t p = 0; p < kc; p += 8) {
        int64_t w = kc - p < 8 ? kc - p : 8;
        __m256 col[8];
        if (rows <= 0) {
          for (int q = 0; q < 8; q++) col[q] = _mm256_setzero_ps();
        } else if (bdt == KB_GEMM_F16) {
          tile(KB_GEMM_F16, (const char *)(b + (j0 + h) * ldb + p), ldb * 2, rows, w, col);
        } else {
          tile(KB_GEMM_BF16, (const char *)(b + (j0 + h) * ldb + p), ldb * 2, rows, w, col);
        }
        for (int64_t q = 0; q < w; q++) _mm256_storeu_ps(panel + (p + q) * nr + h, col[q]);
      }
    }
  }
}

/* ---- small_axpy ---- */

KB_TARGET_AVX2 __attribute__((always_inline)) static inline void axpy_chunk(const int BDT, const int M, const int V,
                                                                          int64_t k, const float *a, int64_t lda,
                                                                          const void *b, int64_t ldb, int64_t j0,
                                                                          int64_t width, float *c, int64_t ldc) {
  const int64_t esize = BDT == KB_GEMM_F32 ? 4 : 2, ld_bytes = ldb * esize;
  const char *base = (const char *)b + j0 * esize;
  __m256 acc[KB_GEMM_SMALL_M][4];
  for (int i = 0; i < M; i++)
    for (int v = 0; v < V; v++) acc[i][v] = _mm256_setzero_ps();
  bool full = width == 8 * V;
  for (int64_t p = 0; p < k; p++) {
    const char *row = base + p * ld_bytes;
    if (p + KB_SMALL_AXPY_AHEAD < k)
      for (int64_t off = 0; off < width * esize; off += 64)
        KB_PREFETCH_STREAM(row + KB_SMALL_AXPY_AHEAD * ld_bytes + off);
    __m256 w[4];
    for (int v = 0; v < V; v++) {
      int64_t left = width - 8 * v;
      w[v] = full || left >= 8 ? kb_gemm_load8(BDT, row + v * 8 * esize) : kb_gemm_load8_part(BDT, row + v * 8 * esize, left);
    }
    _Pragma("GCC unroll 16") for (int i = 0; i < M; i++) {
      __m256 ai = _mm256_set1_ps(a[i * lda + p]);
      for (int v = 0; v < V; v++) acc[i][v] = _mm256_fmadd_ps(ai, w[v], acc[i][v]);
    }
  }
  for (int i = 0; i < M; i++)
    for (int v = 0; v < V; v++) {
      int64_t left = width - 8 * v;
      if (left > 0) _mm256_maskstore_ps(c + i * ldc + j0 + 8 * v, kb_first8_lanes(left), acc[i][v]);
    }
}

KB_TARGET_AVX2 __attribute__((always_inline)) static inline void axpy_m(const int BDT, const int M, int64_t n, int64_t k,
                                                                      const float *a, int64_t lda, const void *b,
                                                                      int64_t ldb, float *c, int64_t ldc) {
  const int V = M <= 2 ? 4 : M <= 4 ? 2 : 1;
  for (int64_t j0 = 0; j0 < n; j0 += 8 * V) {
    int64_t width = n - j0 < 8 * V ? n - j0 : 8 * V;
    axpy_chunk(BDT, M, V, k, a, lda, b, ldb, j0, width, c, ldc);
  }
}

#define AXPY_CASES(BDT)                                                                      \
  switch (m) {                                                                               \
    case 1: axpy_m(BDT, 1, n, k, a, lda, b, ldb, c, ldc); break;                             \
    case 2: axpy_m(BDT, 2, n, k, a, lda, b, ldb, c, ldc); break;                             \
    case 3: axpy_m(BDT, 3, n, k, a, lda, b, ldb, c, ldc); break;                             \
    case 4: axpy_m(BDT, 4, n, k, a, lda, b, ldb, c, ldc); break;                             \
    case 5: axpy_m(BDT, 5, n, k, a, lda, b, ldb, c, ldc); break;                             \
    case 6: axpy_m(BDT, 6, n, k, a, lda, b, ldb, c, ldc); break;                             \
    default:                                                                                 \
      axpy_m(BDT, 6, n, k, a, lda, b, ldb, c, ldc);                                          \
      kb__gemm_small_axpy_avx2(bdt, m - 6, n, k, a + 6 * lda, lda, b, ldb, c + 6 * ldc, ldc); \
      break;                                                                                 \
  }

KB_TARGET_AVX2 void kb__gemm_small_axpy_avx2(int bdt, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                             const void *b, int64_t ldb, float *c, int64_t ldc) {
  if (bdt == KB_GEMM_BF16) {
    AXPY_CASES(KB_GEMM_BF16)
  } else if (bdt == KB_GEMM_F16) {
    AXPY_CASES(KB_GEMM_F16)
  } else {
    AXPY_CASES(KB_GEMM_F32)
  }
}

#endif /* KB_HAVE_X86_SIMD */
