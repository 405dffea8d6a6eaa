/* gemm_small_avx512.c - the small-m products (gemm_kernels.h,
 * kb_gemm_small_fn) at the avx512 level: the decode case, reading every
 * weight once at memory speed.
 *
 * small_dot (B is [n, k], rows along p): blocks of 16 outputs.  A 16 x 16
 * tile of B (16 rows j, 16 steps p) is loaded row by row (16-bit values
 * widened in registers), transposed so that lanes run along j, and each row
 * i of A adds its 16 products to its accumulator, p increasing: the
 * contract's chain, one register per row of A holding 16 outputs.  With few
 * rows of A a chain is 16 dependent multiply-adds per tile, so two blocks of
 * outputs are interleaved (their chains overlap) and the 16 row streams are
 * prefetched ahead.
 *
 * small_axpy (B is [k, n], rows along j): chunks of 64, 32 or 16 outputs
 * (by the number of rows of A, to keep every accumulator in a register);
 * row p of B updates every accumulator of the chunk, p increasing.  Rows of
 * B are prefetched ahead (the stride between them is a whole row). */
#include <stdbool.h>

#include "gemm_kernels.h"
#include "gemm_load.h"
#include "gemm_small_prefetch.h"
#include "gemm_transpose.h"
#include "simd.h"

#if KB_HAVE_X86_SIMD

/* Rows of B ahead of the current one that small_axpy prefetches. */
#define KB_SMALL_AXPY_AHEAD 8

/* transpose16's result for a whole float32 tile (16 rows of 16 floats from
 * row0, rows ld_bytes apart), with a quarter of its shuffles moved to the
 * loads: v[a] holds row a in its low 8 lanes and row a + 8 in its high 8
 * (one load and one insert from memory, which the second vector port or
 * the load ports take), so that what is left is an 8 x 8 transpose inside
 * each 256-bit half: 48 shuffles instead of 64 on the one port they share.
 * A copy, so the same bits as tile().  Taken for one or two rows of A
 * (decode attention over ungrouped heads), where the shuffles are the
 * limit: in cache 4-6% faster on an AVX-512 Xeon; with four rows the
 * products fill the other port and it was slower. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void tile_f32_full(const char *row0, int64_t ld_bytes,
                                                                               __m512 col[16]) {
  _Pragma("GCC unroll 2") for (int c = 0; c < 2; c++) {
    __m512 v[8], t[8], u[8];
    _Pragma("GCC unroll 8") for (int a = 0; a < 8; a++) {
      const float *lo = (const float *)(const void *)(row0 + a * ld_bytes) + 8 * c;
      const float *hi = (const float *)(const void *)(row0 + (a + 8) * ld_bytes) + 8 * c;
      v[a] = _mm512_castpd_ps(
          _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm256_loadu_ps(lo))),
                             _mm256_castps_pd(_mm256_loadu_ps(hi)), 1));
    }
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
      t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    /* u[q], u[q + 4]: columns q and q + 4 of rows 0-3 and of rows 4-7 of
     * each half, in its two 128-bit lanes. */
    _Pragma("GCC unroll 2") for (int g = 0; g < 2; g++) {
      __m512d x0 = _mm512_castps_pd(t[4 * g]), x1 = _mm512_castps_pd(t[4 * g + 1]);
      __m512d x2 = _mm512_castps_pd(t[4 * g + 2]), x3 = _mm512_castps_pd(t[4 * g + 3]);
      u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(x0, x2));
      u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x0, x2));
      u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(x1, x3));
      u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(x1, x3));
    }
    /* Column 8c + q: [u[q] lane 0, u[q + 4] lane 0, u[q] lane 2, u[q + 4]
     * lane 2]; column 8c + q + 4 the same of lanes 1 and 3. */
    _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {
      col[8 * c + q] = _mm512_mask_shuffle_f32x4(u[q], 0xf0f0, u[q + 4], u[q + 4], _MM_SHUFFLE(2, 0, 0, 0));
      col[8 * c + q + 4] = _mm512_mask_shuffle_f32x4(u[q + 4], 0x0f0f, u[q], u[q], _MM_SHUFFLE(0, 3, 0, 1));
    }
  }
}

/* col[q] = B(j0 + l, p + q) in lane l, for the `rows` rows of the block
 * (lanes past them zero) and w <= 16 steps (columns past them zero). */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void tile(const int BDT, const int M, const char *row0,
                                                                      int64_t ld_bytes, int64_t rows, int64_t w,
                                                                      __m512 col[16]) {
  __m512 r[16];
  if (BDT == KB_GEMM_F32 && M <= 2 && rows == 16 && w == 16) {
    tile_f32_full(row0, ld_bytes, col);
    return;
  }
  if (rows == 16 && w == 16) {
    _Pragma("GCC unroll 16") for (int l = 0; l < 16; l++) r[l] = kb_gemm_load16(BDT, row0 + l * ld_bytes);
  } else {
    for (int l = 0; l < 16; l++)
      r[l] = l >= rows ? _mm512_setzero_ps() : w == 16 ? kb_gemm_load16(BDT, row0 + l * ld_bytes) : kb_gemm_load16_part(BDT, row0 + l * ld_bytes, w);
  }
  transpose16(r, col);
}

/* acc[i] (i < M) += the w steps of column block col, row i of A from ai. */
#define CHAIN(M_, acc, col, a, lda, p, w)                                                         \
  do {                                                                                            \
    if ((w) == 16) {                                                                              \
      _Pragma("GCC unroll 16") for (int q = 0; q < 16; q++)                                       \
          _Pragma("GCC unroll 16") for (int i = 0; i < (M_); i++)                                 \
              acc[i] = _mm512_fmadd_ps(_mm512_set1_ps((a)[i * (lda) + (p) + q]), col[q], acc[i]); \
    } else {                                                                                      \
      for (int64_t q = 0; q < (w); q++)                                                           \
        _Pragma("GCC unroll 16") for (int i = 0; i < (M_); i++)                                   \
            acc[i] = _mm512_fmadd_ps(_mm512_set1_ps((a)[i * (lda) + (p) + q]), col[q], acc[i]);   \
    }                                                                                             \
  } while (0)

/* bfloat16 rows, 32 steps per tile: each row's 32 values are loaded as 16
 * dwords (pairs of steps) and the 16 x 16 dwords transposed, so that lane l
 * of pairs[q] holds B(j0 + l, p + 2q) in its low half and B(j0 + l, p + 2q
 * + 1) in its high half; a shift and a mask make them float32.  Half the
 * shuffles per weight of widening first and transposing floats. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void tile_pairs(const char *row0, int64_t ld_bytes,
                                                                            int64_t rows, int64_t w, __m512 pairs[16]) {
  __m512 r[16];
  if (rows == 16 && w == 32) {
    _Pragma("GCC unroll 16") for (int l = 0; l < 16; l++) r[l] = _mm512_loadu_ps(row0 + l * ld_bytes);
  } else {
    for (int l = 0; l < 16; l++) {
      if (l >= rows) {
        r[l] = _mm512_setzero_ps();
      } else if (w == 32) {
        r[l] = _mm512_loadu_ps(row0 + l * ld_bytes);
      } else {
        uint16_t t[32] = {0};
        for (int64_t q = 0; q < w; q++) t[q] = ((const uint16_t *)(row0 + l * ld_bytes))[q];
        r[l] = _mm512_loadu_ps(t);
      }
    }
  }
  transpose16(r, pairs);
}

/* The chains over the w <= 32 bfloat16 steps of a pair tile. */
#define CHAIN_PAIRS(M_, acc, pairs, a, lda, p, w)                                                      \
  do {                                                                                                 \
    const __m512i hi_mask = _mm512_set1_epi32((int)0xffff0000u);                                      \
    if ((w) == 32) {                                                                                   \
      _Pragma("GCC unroll 16") for (int q = 0; q < 16; q++) {                                          \
        __m512i v = _mm512_castps_si512(pairs[q]);                                                     \
        __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));                                   \
        __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask));                                \
        _Pragma("GCC unroll 16") for (int i = 0; i < (M_); i++)                                        \
            acc[i] = _mm512_fmadd_ps(_mm512_set1_ps((a)[i * (lda) + (p) + 2 * q]), even, acc[i]);      \
        _Pragma("GCC unroll 16") for (int i = 0; i < (M_); i++)                                        \
            acc[i] = _mm512_fmadd_ps(_mm512_set1_ps((a)[i * (lda) + (p) + 2 * q + 1]), odd, acc[i]);   \
      }                                                                                                \
    } else {                                                                                           \
      for (int64_t q = 0; 2 * q < (w); q++) {                                                          \
        __m512i v = _mm512_castps_si512(pairs[q]);                                                     \
        __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));                                   \
        __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask));                                \
        for (int i = 0; i < (M_); i++)                                                                 \
          acc[i] = _mm512_fmadd_ps(_mm512_set1_ps((a)[i * (lda) + (p) + 2 * q]), even, acc[i]);        \
        if (2 * q + 1 < (w))                                                                           \
          for (int i = 0; i < (M_); i++)                                                               \
            acc[i] = _mm512_fmadd_ps(_mm512_set1_ps((a)[i * (lda) + (p) + 2 * q + 1]), odd, acc[i]);   \
      }                                                                                                \
    }                                                                                                  \
  } while (0)

/* Outputs j0 .. j0+rows (rows <= 16) and, when rows2 > 0, j0+16 .. j0+16+rows2
 * of M rows of A (M a constant). */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void dot_blocks(const int BDT, const int M, int64_t k,
                                                                            const float *a, int64_t lda, const void *b,
                                                                            int64_t ldb, int64_t n, int64_t j0,
                                                                            int64_t rows, int64_t rows2, float *c,
                                                                            int64_t ldc) {
  const int64_t esize = BDT == KB_GEMM_F32 ? 4 : 2, ld_bytes = ldb * esize;
  /* Steps per tile: 16 floats, or 32 bfloat16 values (pairs). */
  const int64_t step = BDT == KB_GEMM_BF16 ? 32 : 16;
  const char *b0 = (const char *)b + j0 * ld_bytes, *b1 = b0 + 16 * ld_bytes;
  __m512 acc0[KB_GEMM_SMALL_M], acc1[KB_GEMM_SMALL_M];
  for (int i = 0; i < M; i++) acc0[i] = acc1[i] = _mm512_setzero_ps();
  /* The next block: as many rows as this one, right after it. */
  const int64_t count = rows2 > 0 ? 32 : 16, steps = (k + step - 1) / step;
  const char *next = (const char *)((uintptr_t)b0 + (uintptr_t)(count * ld_bytes));
  const int64_t next_rows = kb_small_next_rows(n, j0, count);
  for (int64_t p = 0; p < k; p += step) {
    int64_t w = k - p < step ? k - p : step;
    if (k <= KB_SMALL_PREFETCH) {
      kb_small_prefetch_next_rows(next, ld_bytes, k * esize, count, p / step, steps);
    } else if (p + KB_SMALL_PREFETCH < k) {
      for (int l = 0; l < rows; l++) KB_PREFETCH_STREAM(b0 + l * ld_bytes + (p + KB_SMALL_PREFETCH) * esize);
      for (int l = 0; l < rows2; l++) KB_PREFETCH_STREAM(b1 + l * ld_bytes + (p + KB_SMALL_PREFETCH) * esize);
    } else {
      kb_small_prefetch_next_starts(next, ld_bytes, next_rows, (p + KB_SMALL_PREFETCH - k) * esize);
    }
    __m512 col[16];
    if (BDT == KB_GEMM_BF16) {
      tile_pairs(b0 + p * esize, ld_bytes, rows, w, col);
      CHAIN_PAIRS(M, acc0, col, a, lda, p, w);
      if (rows2 > 0) {
        tile_pairs(b1 + p * esize, ld_bytes, rows2, w, col);
        CHAIN_PAIRS(M, acc1, col, a, lda, p, w);
      }
    } else {
      tile(BDT, M, b0 + p * esize, ld_bytes, rows, w, col);
      CHAIN(M, acc0, col, a, lda, p, w);
      if (rows2 > 0) {
        tile(BDT, M, b1 + p * esize, ld_bytes, rows2, w, col);
        CHAIN(M, acc1, col, a, lda, p, w);
      }
    }
  }
  for (int i = 0; i < M; i++) {
    _mm512_mask_storeu_ps(c + i * ldc + j0, kb_first16_lanes(rows), acc0[i]);
    if (rows2 > 0) _mm512_mask_storeu_ps(c + i * ldc + j0 + 16, kb_first16_lanes(rows2), acc1[i]);
  }
}

/* small_dot for M rows (a constant): two blocks at a time while M <= 8
 * (their chains overlap; more rows are enough independent chains). */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void dot_m(const int BDT, const int M, int64_t n,
                                                                       int64_t k, const float *a, int64_t lda,
                                                                       const void *b, int64_t ldb, float *c,
                                                                       int64_t ldc) {
  const int64_t step = M <= 8 ? 32 : 16;
  for (int64_t j0 = 0; j0 < n; j0 += step) {
    int64_t rows = n - j0 < 16 ? n - j0 : 16;
    int64_t rows2 = step == 32 && n - j0 > 16 ? (n - j0 - 16 < 16 ? n - j0 - 16 : 16) : 0;
    dot_blocks(BDT, M, k, a, lda, b, ldb, n, j0, rows, rows2, c, ldc);
  }
}

#define DOT_CASES(BDT)                                       \
  switch (m) {                                               \
    case 1: dot_m(BDT, 1, n, k, a, lda, b, ldb, c, ldc); break; \
    case 2: dot_m(BDT, 2, n, k, a, lda, b, ldb, c, ldc); break; \
    case 3: dot_m(BDT, 3, n, k, a, lda, b, ldb, c, ldc); break; \
    case 4: dot_m(BDT, 4, n, k, a, lda, b, ldb, c, ldc); break; \
    case 5: dot_m(BDT, 5, n, k, a, lda, b, ldb, c, ldc); break; \
    case 6: dot_m(BDT, 6, n, k, a, lda, b, ldb, c, ldc); break; \
    case 7: dot_m(BDT, 7, n, k, a, lda, b, ldb, c, ldc); break; \
    case 8: dot_m(BDT, 8, n, k, a, lda, b, ldb, c, ldc); break; \
    default:                                                 \
      /* 9 .. 16 rows: one pass over B for all 16 (see below). */ \
      dot_m(BDT, 16, n, k, a, lda, b, ldb, c, ldc);          \
      break;                                                 \
  }

/* More than 8 rows of A are computed as 16 in one pass over B: the caller
 * (gemm_engine.c) gives a with 16 readable rows and c with 16 writable rows
 * in that case (rows past m are padding whose results it ignores), which
 * keeps one instantiation for 9 .. 16 instead of reading B twice. */
KB_TARGET_AVX512 void kb__gemm_small_dot_avx512(int bdt, int64_t m, int64_t n, int64_t k, const float *a,
                                                int64_t lda, const void *b, int64_t ldb, float *c, int64_t ldc) {
  if (bdt == KB_GEMM_BF16) {
    DOT_CASES(KB_GEMM_BF16)
  } else if (bdt == KB_GEMM_F16) {
    DOT_CASES(KB_GEMM_F16)
  } else {
    DOT_CASES(KB_GEMM_F32)
  }
}

/* ---- packing 16-bit B for the blocked path ---- */

/* A row of BDT values widened: 16 per load, the rest through kb_gemm_load16_part. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void widen_row(const int BDT, int64_t n,
                                                                           const uint16_t *src, float *dst) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(dst + j, kb_gemm_load16(BDT, src + j));
  if (j < n) _mm512_mask_storeu_ps(dst + j, kb_first16_lanes(n - j), kb_gemm_load16_part(BDT, src + j, n - j));
}

/* kb_gemm_widen_fn. */
KB_TARGET_AVX512 void kb__gemm_widen_avx512(int bdt, int64_t n, const uint16_t *src, float *dst) {
  if (bdt == KB_GEMM_F16)
    widen_row(KB_GEMM_F16, n, src, dst);
  else
    widen_row(KB_GEMM_BF16, n, src, dst);
}

/* kb_gemm_pack_bt_fn for B stored as bdt (bfloat16 or float16 [nc, kc]
 * rows): the rows widened while loaded, then transposed as pack_bt does. */
KB_TARGET_AVX512 void kb__gemm_pack_bt_half_avx512(int bdt, int64_t kc, int64_t nc, const uint16_t *b, int64_t ldb,
                                                   float *dst, int64_t nr) {
  for (int64_t j0 = 0; j0 < nc; j0 += nr) {
    float *panel = dst + (j0 / nr) * kc * nr;
    for (int64_t h = 0; h < nr; h += 16) {
      int64_t rows = nc - (j0 + h);
      if (rows > 16) rows = 16;
      for (int64_t p = 0; p < kc; p += 16) {
        int64_t w = kc - p < 16 ? kc - p : 16;
        __m512 col[16];
        if (rows <= 0) {
          for (int q = 0; q < 16; q++) col[q] = _mm512_setzero_ps();
        } else if (bdt == KB_GEMM_F16) {
          tile(KB_GEMM_F16, 16, (const char *)(b + (j0 + h) * ldb + p), ldb * 2, rows, w, col);
        } else {
          tile(KB_GEMM_BF16, 16, (const char *)(b + (j0 + h) * ldb + p), ldb * 2, rows, w, col);
        }
        for (int64_t q = 0; q < w; q++) _mm512_storeu_ps(panel + (p + q) * nr + h, col[q]);
      }
    }
  }
}

/* ---- small_axpy ---- */

/* Outputs j0 .. j0 + 16*V (the last vector masked to `last` lanes) of M rows
 * of A: every row p of B, p increasing, updates the M x V accumulators. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void axpy_chunk(const int BDT, const int M, const int V,
                                                                            int64_t k, const float *a, int64_t lda,
                                                                            const void *b, int64_t ldb, int64_t j0,
                                                                            int64_t width, float *c, int64_t ldc) {
  const int64_t esize = BDT == KB_GEMM_F32 ? 4 : 2, ld_bytes = ldb * esize;
  const char *base = (const char *)b + j0 * esize;
  __m512 acc[KB_GEMM_SMALL_M][4];
  for (int i = 0; i < M; i++)
    for (int v = 0; v < V; v++) acc[i][v] = _mm512_setzero_ps();
  bool full = width == 16 * V;
  for (int64_t p = 0; p < k; p++) {
    const char *row = base + p * ld_bytes;
    if (p + KB_SMALL_AXPY_AHEAD < k)
      for (int64_t off = 0; off < width * esize; off += 64)
        KB_PREFETCH_STREAM(row + KB_SMALL_AXPY_AHEAD * ld_bytes + off);
    __m512 w[4];
    for (int v = 0; v < V; v++) {
      int64_t left = width - 16 * v;
      w[v] = full || left >= 16 ? kb_gemm_load16(BDT, row + v * 16 * esize) : kb_gemm_load16_part(BDT, row + v * 16 * esize, left);
    }
    _Pragma("GCC unroll 16") for (int i = 0; i < M; i++) {
      __m512 ai = _mm512_set1_ps(a[i * lda + p]);
      for (int v = 0; v < V; v++) acc[i][v] = _mm512_fmadd_ps(ai, w[v], acc[i][v]);
    }
  }
  for (int i = 0; i < M; i++)
    for (int v = 0; v < V; v++) {
      int64_t left = width - 16 * v;
      if (left > 0) _mm512_mask_storeu_ps(c + i * ldc + j0 + 16 * v, kb_first16_lanes(left), acc[i][v]);
    }
}

/* small_axpy for M rows: chunks of 64 outputs (M <= 4), 32 (M <= 8) or 16. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void axpy_m(const int BDT, const int M, int64_t n,
                                                                        int64_t k, const float *a, int64_t lda,
                                                                        const void *b, int64_t ldb, float *c,
                                                                        int64_t ldc) {
  const int V = M <= 4 ? 4 : M <= 8 ? 2 : 1;
  for (int64_t j0 = 0; j0 < n; j0 += 16 * V) {
    int64_t width = n - j0 < 16 * V ? n - j0 : 16 * V;
    axpy_chunk(BDT, M, V, k, a, lda, b, ldb, j0, width, c, ldc);
  }
}

#define AXPY_CASES(BDT)                                       \
  switch (m) {                                                \
    case 1: axpy_m(BDT, 1, n, k, a, lda, b, ldb, c, ldc); break; \
    case 2: axpy_m(BDT, 2, n, k, a, lda, b, ldb, c, ldc); break; \
    case 3: axpy_m(BDT, 3, n, k, a, lda, b, ldb, c, ldc); break; \
    case 4: axpy_m(BDT, 4, n, k, a, lda, b, ldb, c, ldc); break; \
    case 5: axpy_m(BDT, 5, n, k, a, lda, b, ldb, c, ldc); break; \
    case 6: axpy_m(BDT, 6, n, k, a, lda, b, ldb, c, ldc); break; \
    case 7: axpy_m(BDT, 7, n, k, a, lda, b, ldb, c, ldc); break; \
    case 8: axpy_m(BDT, 8, n, k, a, lda, b, ldb, c, ldc); break; \
    default:                                                  \
      axpy_m(BDT, 8, n, k, a, lda, b, ldb, c, ldc);           \
      kb__gemm_small_axpy_avx512(bdt, m - 8, n, k, a + 8 * lda, lda, b, ldb, c + 8 * ldc, ldc); \
      break;                                                  \
  }

KB_TARGET_AVX512 void kb__gemm_small_axpy_avx512(int bdt, int64_t m, int64_t n, int64_t k, const float *a,
                                                 int64_t lda, const void *b, int64_t ldb, float *c, int64_t ldc) {
  if (bdt == KB_GEMM_BF16) {
    AXPY_CASES(KB_GEMM_BF16)
  } else if (bdt == KB_GEMM_F16) {
    AXPY_CASES(KB_GEMM_F16)
  } else {
    AXPY_CASES(KB_GEMM_F32)
  }
}

#endif /* KB_HAVE_X86_SIMD */
