/* gemm_avx512.c - the avx512 level of the gemm pieces (gemm_kernels.h).
 *
 * Register tile 12 x 32: 24 zmm accumulators, two B vectors and one
 * broadcast A element per step of p (27 of the 32 registers).  Edge tiles
 * use instances of 8, 4, 2 and 1 rows and masked columns, and at most 16
 * columns one vector of them; rows of A that would crowd one L1 set take
 * 8 and 4 rows at a time; with A in rows, 1-4 columns past a multiple of
 * 16 are computed with the tile's rows as the lanes (tail()), and other
 * 1-8 columns past a multiple of 16 as a vector of 8.  kernel_bf16a runs
 * the same tiles on bfloat16 weights read in place (bf16_at).  Every
 * accumulator follows the contract's fma chain, so the result is the
 * scalar level's, bit for bit. */
#include <string.h>

#include "gemm_kernels.h"
#include "gemm_load.h"
#include "gemm_small_prefetch.h"
#include "gemm_transpose.h"
#include "simd.h"

#if KB_HAVE_X86_SIMD

#define MR 12
#define NR 32
/* Rows of A up to which the small-m dot beats the blocked path (the
 * 12 x 32 tile, swapped): on an AVX-512 Zen 4, kb_linear_w [3584, 1024] at
 * 9-16 rows took 3.4-4.4 ms through the small-m dot (16 rows of transposed
 * tiles) against 1.9-2.2 swapped for float32 weights, and 2.0-3.4 against
 * 1.65 for bf16 / f16 ones; at 8 rows the two were even
 * (docs/performance.md). */
#define SMALL_DOT_ROWS_F32 8
#define SMALL_DOT_ROWS_HALF 8
/* Most columns past a multiple of 16 that kernel() computes with A's rows
 * as the lanes (tail()) rather than with a vector of 16 columns. */
#define TAIL_COLS 4
/* How far ahead (floats) gemv_dot prefetches each row. */
#ifndef KB_GEMV_PREFETCH
#define KB_GEMV_PREFETCH 128
#endif

/* The bfloat16 weight at p widened to a float32 broadcast (exact: its bits
 * are the float's high half).  A16 tiles read A in place as bfloat16 (a
 * swapped product's weights), with no widening pass: the 32 bits that end
 * at p (the element before it, then p) are broadcast by the load itself
 * and the low half cleared, one bitwise operation beside the multiply-adds
 * on a core whose logic ports are not the fma ones.  The element before p
 * lies in A except at its very first one, which SAFE steps (the first of a
 * tile whose K block starts A's columns) read alone. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline __m512 bf16_at(const uint16_t *p, const int safe) {
  if (safe) return _mm512_castsi512_ps(_mm512_set1_epi32((int32_t)((uint32_t)*p << 16)));
  int32_t pair;
  memcpy(&pair, p - 1, sizeof pair);
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_set1_epi32(pair), _mm512_set1_epi32((int32_t)0xffff0000u)));
}

/* Row i of the tile, if the instance has it: acc_i0/acc_i1 += a(i, p) *
 * b(p, 0..31); with NB == 1 (at most 16 columns) only acc_i0. */
#define ROW_FMA(i)                                                            \
  if (R > (i)) {                                                              \
    if (NZ > 0) {                                                             \
      __m512 ai = A16 ? bf16_at(ap16 + (i) * a_rs, SAFE) : _mm512_set1_ps(ap[(i) * a_rs]); \
      c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0);                             \
      if (NZ > 1) c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1);                 \
      if (H) h##i = _mm256_fmadd_ps(_mm512_castps512_ps256(ai), bh, h##i);    \
    } else if (A16) {                                                         \
      h##i = _mm256_fmadd_ps(_mm512_castps512_ps256(bf16_at(ap16 + (i) * a_rs, SAFE)), bh, h##i); \
    } else {                                                                  \
      h##i = _mm256_fmadd_ps(_mm256_broadcast_ss(ap + (i) * a_rs), bh, h##i); \
    }                                                                         \
  }

#define ROW_INIT(i)                                                         \
  if (R > (i) && !first) {                                                  \
    if (NZ > 0) c##i##0 = _mm512_maskz_loadu_ps(m0, c + (i) * ldc);         \
    if (NZ > 1) c##i##1 = _mm512_maskz_loadu_ps(m1, c + (i) * ldc + 16);    \
    if (H) h##i = _mm256_maskload_ps(c + (i) * ldc + 16 * NZ, mh);          \
  }

#define ROW_PREFETCH(i)                                        \
  if (R > (i)) {                                               \
    _mm_prefetch((const char *)(c + (i) * ldc), _MM_HINT_T0);  \
    if (NB > 1) _mm_prefetch((const char *)(c + (i) * ldc + 16), _MM_HINT_T0); \
  }

/* Stores row i: the sums, or the epilogue alpha * acc (+ beta * c0). */
#define ROW_STORE(i)                                                                         \
  if (R > (i)) {                                                                             \
    __m512 v0 = c##i##0, v1 = c##i##1;                                                       \
    if (last != NULL) {                                                                      \
      /* alpha == 1 is exact without the product: acc is never a signalling NaN. */          \
      if (last->alpha != 1.0f) {                                                             \
        v0 = _mm512_mul_ps(alpha, v0);                                                       \
        v1 = _mm512_mul_ps(alpha, v1);                                                       \
      }                                                                                      \
      if (last->beta != 0.0f) {                                                              \
        const float *r0 = last->c0 + (i) * last->ldc0;                                       \
        v0 = _mm512_add_ps(v0, _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(m0, r0)));          \
        v1 = _mm512_add_ps(v1, _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(m1, r0 + 16)));     \
      }                                                                                      \
    }                                                                                        \
    if (full) {                                                                              \
      _mm512_storeu_ps(c + (i) * ldc, v0);                                                   \
      _mm512_storeu_ps(c + (i) * ldc + 16, v1);                                              \
    } else {                                                                                 \
      if (NZ > 0) _mm512_mask_storeu_ps(c + (i) * ldc, m0, v0);                              \
      if (NZ > 1) _mm512_mask_storeu_ps(c + (i) * ldc + 16, m1, v1);                         \
    }                                                                                        \
    if (H) {                                                                                 \
      __m256 vh = h##i;                                                                      \
      if (last != NULL) {                                                                    \
        if (last->alpha != 1.0f) vh = _mm256_mul_ps(_mm512_castps512_ps256(alpha), vh);      \
        if (last->beta != 0.0f)                                                              \
          vh = _mm256_add_ps(vh, _mm256_mul_ps(_mm512_castps512_ps256(beta),                 \
                                               _mm256_maskload_ps(last->c0 + (i) * last->ldc0 + 16 * NZ, mh))); \
      }                                                                                      \
      _mm256_maskstore_ps(c + (i) * ldc + 16 * NZ, mh, vh);                                  \
    }                                                                                        \
  }

#define ALL_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* One step p of the tile: B's vectors, then every row's multiply-adds. */
#define ROWS_STEP                                                       \
  {                                                                     \
    const float *ap = A16 ? NULL : a + p * a_cs;                        \
    const uint16_t *ap16 = A16 ? a16 + p : NULL;                        \
    __m512 b0 = NZ > 0 ? _mm512_loadu_ps(b + p * b_rs) : z;             \
    __m512 b1 = NZ > 1 ? _mm512_loadu_ps(b + p * b_rs + 16) : z;        \
    __m256 bh = H ? _mm256_loadu_ps(b + p * b_rs + 16 * NZ) : zh;       \
    (void)ap;                                                           \
    (void)ap16;                                                         \
    ALL_ROWS(ROW_FMA)                                                   \
  }

/* The first R rows of a tile (R a constant: rows past it compile away).
 * Columns past `cols` are neither read from C nor written (masks); B always
 * has nr readable columns (a packed panel is zero-padded).  NB (a constant)
 * is the 16-column vectors the tile computes: 1 when cols <= 16, so that a
 * narrow last panel (a product of 33 rows swapped, docs/kernels.md) costs
 * half a full one.  With H (a constant) the last of them is a vector of 8
 * (cols at most 8 past a multiple of 16): a core that splits a 16-lane
 * multiply-add in two halves (Zen 4) then spends half as long on it, and
 * one that does not spends as long as on 16.  Every computed element is the
 * same chain either way. */
#define DEFINE_ROWS(R_)                                                                                         \
  KB_TARGET_AVX512 __attribute__((always_inline)) static inline void rows_##R_(                                \
      const int NB, const int H, const int A16, int64_t kc, const float *a, const uint16_t *a16, int64_t a_rs, \
      int64_t a_cs, const float *b, int64_t b_rs, float *c, int64_t ldc, __mmask16 m0, __mmask16 m1,          \
      __m256i mh, int full, int first, const struct kb_gemm_epilogue *last) {                                 \
    enum { R = R_ };                                                                                        \
    const int NZ = NB - H; /* vectors of 16 */                                                                \
    __m512 z = _mm512_setzero_ps();                                                                           \
    __m256 zh = _mm256_setzero_ps();                                                                          \
    __m512 c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z;          \
    __m512 c50 = z, c51 = z, c60 = z, c61 = z, c70 = z, c71 = z, c80 = z, c81 = z, c90 = z, c91 = z;          \
    __m512 c100 = z, c101 = z, c110 = z, c111 = z;                                                            \
    __m256 h0 = zh, h1 = zh, h2 = zh, h3 = zh, h4 = zh, h5 = zh, h6 = zh, h7 = zh, h8 = zh, h9 = zh;          \
    __m256 h10 = zh, h11 = zh;                                                                                \
    ALL_ROWS(ROW_PREFETCH)                                                                                    \
    ALL_ROWS(ROW_INIT)                                                                                        \
    int64_t p0 = 0;                                                                                           \
    if (A16 && first && kc > 0) { /* A's first column: its element alone (SAFE) */                           \
      enum { SAFE = 1 };                                                                                      \
      const int64_t p = 0;                                                                                    \
      ROWS_STEP                                                                                               \
      p0 = 1;                                                                                                 \
    }                                                                                                         \
    _Pragma("GCC unroll 4")                                                                                   \
    for (int64_t p = p0; p < kc; p++) {                                                                       \
      enum { SAFE = 0 };                                                                                      \
      ROWS_STEP                                                                                               \
    }                                                                                                         \
    __m512 alpha = _mm512_set1_ps(last != NULL ? last->alpha : 1.0f);                                         \
    __m512 beta = _mm512_set1_ps(last != NULL ? last->beta : 0.0f);                                           \
    ALL_ROWS(ROW_STORE)                                                                                       \
  }

DEFINE_ROWS(12)
DEFINE_ROWS(8)
DEFINE_ROWS(4)
DEFINE_ROWS(2)
DEFINE_ROWS(1)

/* The rows of a tile, NB vectors of columns (a constant): full blocks of
 * 12 rows, then the remainder as 8 + 4 + 2 + 1 rows, so no multiply-add is
 * wasted on rows that do not exist.  The packed-A instance has constant
 * strides. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void tile_rows(
    const int NB, const int H, const int A16, int64_t kc, const float *a, const uint16_t *a16, int64_t a_rs,
    int64_t a_cs, const float *b, int64_t b_rs, float *c, int64_t ldc, int64_t rows, __mmask16 m0, __mmask16 m1,
    __m256i mh, int full, int first, const struct kb_gemm_epilogue *last) {
  struct kb_gemm_epilogue e;
  if (last != NULL) e = *last;
  /* Rows of A read in place a multiple of 4 KiB apart (weights of 1024,
   * 2048, 4096 columns, swapped) share one set of L1, whose 8 ways cannot
   * hold the lines of 12 rows and the tile's others: such tiles take 8 + 4
   * rows (on an AVX-512 Zen 4 kb_linear_w [3584, 1024] from L3 at 16-64
   * rows, 46-73 -> 56-95 GFLOP/s; docs/performance.md). */
  int crowd = a_cs == 1 && ((a_rs * (A16 ? 2 : 4)) & 4095) == 0;
  for (int64_t r = 0; r < rows;) {
    int64_t left = rows - r;
    const float *ar = A16 ? NULL : a + r * a_rs;
    const uint16_t *ar16 = A16 ? a16 + r * a_rs : NULL;
    float *cr = c + r * ldc;
    const struct kb_gemm_epilogue *ep = NULL;
    if (last != NULL) {
      e.c0 = last->c0 != NULL ? last->c0 + r * last->ldc0 : NULL; /* NULL when beta == 0 */
      ep = &e;
    }
    if (left >= 12 && !crowd) {
      if (!A16 && a_rs == 1 && a_cs == MR)
        rows_12(NB, H, 0, kc, ar, NULL, 1, MR, b, b_rs, cr, ldc, m0, m1, mh, full, first, ep);
      else
        rows_12(NB, H, A16, kc, ar, ar16, a_rs, a_cs, b, b_rs, cr, ldc, m0, m1, mh, full, first, ep);
      r += 12;
    } else if (left >= 8) {
      rows_8(NB, H, A16, kc, ar, ar16, a_rs, a_cs, b, b_rs, cr, ldc, m0, m1, mh, full, first, ep);
      r += 8;
    } else if (left >= 4) {
      rows_4(NB, H, A16, kc, ar, ar16, a_rs, a_cs, b, b_rs, cr, ldc, m0, m1, mh, full, first, ep);
      r += 4;
    } else if (left >= 2) {
      rows_2(NB, H, A16, kc, ar, ar16, a_rs, a_cs, b, b_rs, cr, ldc, m0, m1, mh, full, first, ep);
      r += 2;
    } else {
      rows_1(NB, H, A16, kc, ar, ar16, a_rs, a_cs, b, b_rs, cr, ldc, m0, m1, mh, full, first, ep);
      r += 1;
    }
  }
}

/* tile_rows with NB = 1 (narrow) and with a last vector of 8 (half, H = 1,
 * after `lead` = 0 or 16 columns in a vector of 16), out of line, so that
 * the full instance's code is what it was without them; for A as float32
 * (suffix f32) and as bfloat16 read in place (bf16, A in rows). */
#define DEFINE_TILE_EDGES(SUF, A16_, AT)                                                                           \
  KB_TARGET_AVX512 __attribute__((noinline)) static void tile_rows_narrow_##SUF(                                   \
      int64_t kc, const AT *a, int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs, float *c, int64_t ldc,    \
      int64_t rows, __mmask16 m0, int first, const struct kb_gemm_epilogue *last) {                               \
    tile_rows(1, 0, A16_, kc, A16_ ? NULL : (const float *)(const void *)a,                                       \
              A16_ ? (const uint16_t *)(const void *)a : NULL, a_rs, a_cs, b, b_rs, c, ldc, rows, m0, 0,          \
              _mm256_setzero_si256(), 0, first, last);                                                            \
  }                                                                                                               \
  KB_TARGET_AVX512 __attribute__((noinline)) static void tile_rows_half_##SUF(                                     \
      int64_t kc, const AT *a, int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs, float *c, int64_t ldc,    \
      int64_t rows, int64_t lead, int64_t rest, int first, const struct kb_gemm_epilogue *last) {                 \
    /* The AVX2 masked loads and stores leave C past the columns untouched. */                                    \
    __m256i mh = kb_first8_lanes(rest);                                                                           \
    const float *af = A16_ ? NULL : (const float *)(const void *)a;                                               \
    const uint16_t *ah = A16_ ? (const uint16_t *)(const void *)a : NULL;                                         \
    if (lead == 0)                                                                                                \
      tile_rows(1, 1, A16_, kc, af, ah, a_rs, a_cs, b, b_rs, c, ldc, rows, 0, 0, mh, 0, first, last);             \
    else                                                                                                          \
      tile_rows(2, 1, A16_, kc, af, ah, a_rs, a_cs, b, b_rs, c, ldc, rows, 0xffff, 0, mh, 0, first, last);        \
  }
DEFINE_TILE_EDGES(f32, 0, float)
DEFINE_TILE_EDGES(bf16, 1, uint16_t)

/* The C (a constant, at most TAIL_COLS) columns of a tile from A stored in
 * rows (a_cs == 1), in the other orientation: the lanes are the tile's rows
 * and each column of B is broadcast.  Each block of 16 steps loads the rows'
 * 16 values and transposes them, so that vector q holds A(i, p + q) in lane
 * i; then acc[j] += vector q * B(p + q, j), q increasing.  Every element is
 * the same fma chain as in the row-broadcast tile (the two factors of each
 * product swapped, which changes no bit), started and finished as the
 * contract says. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void tail_cols(const int C, const int A16, int64_t kc,
                                                                           const void *a, int64_t a_rs,
                                                                           const float *b, int64_t b_rs, float *c,
                                                                           int64_t ldc, int64_t rows, int first,
                                                                           const struct kb_gemm_epilogue *last) {
  float t[16];
  __m512 acc[TAIL_COLS];
  for (int j = 0; j < C; j++) {
    for (int i = 0; i < 16; i++) t[i] = !first && i < rows ? c[i * ldc + j] : 0.0f;
    acc[j] = _mm512_loadu_ps(t);
  }
  for (int64_t p = 0; p < kc; p += 16) {
    int64_t w = kc - p < 16 ? kc - p : 16;
    __m512 r[16], col[16];
    _Pragma("GCC unroll 16") for (int l = 0; l < 16; l++) {
      if (l >= rows)
        r[l] = _mm512_setzero_ps();
      else if (A16)
        r[l] = w == 16 ? kb_gemm_load16(KB_GEMM_BF16, (const uint16_t *)a + l * a_rs + p)
                       : kb_gemm_load16_part(KB_GEMM_BF16, (const uint16_t *)a + l * a_rs + p, w);
      else
        r[l] = _mm512_maskz_loadu_ps(kb_first16_lanes(w), (const float *)a + l * a_rs + p);
    }
    transpose16(r, col);
    if (w == 16) {
      _Pragma("GCC unroll 16") for (int q = 0; q < 16; q++)
        _Pragma("GCC unroll 4") for (int j = 0; j < C; j++)
          acc[j] = _mm512_fmadd_ps(col[q], _mm512_set1_ps(b[(p + q) * b_rs + j]), acc[j]);
    } else {
      for (int64_t q = 0; q < w; q++)
        _Pragma("GCC unroll 4") for (int j = 0; j < C; j++)
          acc[j] = _mm512_fmadd_ps(col[q], _mm512_set1_ps(b[(p + q) * b_rs + j]), acc[j]);
    }
  }
  for (int j = 0; j < C; j++) {
    __m512 v = acc[j];
    /* ROW_STORE's epilogue, lane by lane. */
    if (last != NULL && last->alpha != 1.0f) v = _mm512_mul_ps(_mm512_set1_ps(last->alpha), v);
    _mm512_storeu_ps(t, v);
    for (int64_t i = 0; i < rows; i++) {
      float y = t[i];
      if (last != NULL && last->beta != 0.0f) y = y + last->beta * last->c0[i * last->ldc0 + j];
      c[i * ldc + j] = y;
    }
  }
}

/* tail_cols for 1 .. TAIL_COLS columns, out of line; A float32 (A16 = 0)
 * or bfloat16 (1). */
#define DEFINE_TAIL(SUF, A16_)                                                                                   \
  KB_TARGET_AVX512 __attribute__((noinline)) static void tail_##SUF(int64_t kc, const void *a, int64_t a_rs,     \
                                                                   const float *b, int64_t b_rs, float *c,      \
                                                                   int64_t ldc, int64_t rows, int64_t cols,     \
                                                                   int first,                                   \
                                                                   const struct kb_gemm_epilogue *last) {       \
    switch (cols) {                                                                                             \
      case 1: tail_cols(1, A16_, kc, a, a_rs, b, b_rs, c, ldc, rows, first, last); break;                      \
      case 2: tail_cols(2, A16_, kc, a, a_rs, b, b_rs, c, ldc, rows, first, last); break;                      \
      case 3: tail_cols(3, A16_, kc, a, a_rs, b, b_rs, c, ldc, rows, first, last); break;                      \
      default: tail_cols(4, A16_, kc, a, a_rs, b, b_rs, c, ldc, rows, first, last); break;                     \
    }                                                                                                           \
  }
DEFINE_TAIL(f32, 0)
DEFINE_TAIL(bf16, 1)

/* A tile of rows x cols (at most 12 x 32); at most 16 columns compute one
 * vector of them (tile_rows with NB = 1).  With A in rows (a_cs == 1: the
 * weights of a swapped product, read in place or widened), up to
 * TAIL_COLS columns past a multiple of 16 take tail() instead of a vector
 * of 16 that would be mostly padding: the last panel of an expert's or a
 * prefill's 33-36 rows, or a whole panel of 17-20.  Otherwise 1-8 columns
 * past a multiple of 16 are a vector of 8 (tile_rows_half): an expert's
 * 21-24 or 37-40 rows swapped, 6-11% faster on a Zen 4 (docs/performance.md). */
#define KERNEL_BODY(SUF, A16_)                                                                                \
  int64_t lead = cols / 16 * 16, rest = cols - lead;                                                         \
  if (a_cs == 1 && rest > 0 && rest <= TAIL_COLS) {                                                          \
    if (lead == 16) tile_rows_narrow_##SUF(kc, a, a_rs, a_cs, b, b_rs, c, ldc, rows, 0xffff, first, last);   \
    struct kb_gemm_epilogue e;                                                                               \
    const struct kb_gemm_epilogue *ep = NULL;                                                                \
    if (last != NULL) {                                                                                      \
      e = *last;                                                                                             \
      if (e.c0 != NULL) e.c0 += lead;                                                                        \
      ep = &e;                                                                                               \
    }                                                                                                        \
    tail_##SUF(kc, a, a_rs, b + lead, b_rs, c + lead, ldc, rows, rest, first, ep);                          \
    return;                                                                                                  \
  }                                                                                                          \
  if (rest > 0 && rest <= 8) {                                                                               \
    tile_rows_half_##SUF(kc, a, a_rs, a_cs, b, b_rs, c, ldc, rows, lead, rest, first, last);                 \
    return;                                                                                                  \
  }                                                                                                          \
  __mmask16 m0 = kb_first16_lanes(cols), m1 = kb_first16_lanes(cols - 16);                                             \
  int full = cols == NR;                                                                                     \
  if (cols <= 16)                                                                                            \
    tile_rows_narrow_##SUF(kc, a, a_rs, a_cs, b, b_rs, c, ldc, rows, m0, first, last);                       \
  else                                                                                                       \
    tile_rows(2, 0, A16_, kc, A16_ ? NULL : (const float *)(const void *)a,                                 \
              A16_ ? (const uint16_t *)(const void *)a : NULL, a_rs, a_cs, b, b_rs, c, ldc, rows, m0, m1,    \
              _mm256_setzero_si256(), full, first, last);

KB_TARGET_AVX512 static void kernel(int64_t kc, const float *a, int64_t a_rs, int64_t a_cs, const float *b,
                                    int64_t b_rs, float *c, int64_t ldc, int64_t rows, int64_t cols, int first,
                                    const struct kb_gemm_epilogue *last) {
  KERNEL_BODY(f32, 0)
}

/* kernel() with A bfloat16 in rows, read in place (kb_gemm_kernel_bf16a_fn):
 * the same tiles, each weight widened as it is broadcast (bf16_at). */
KB_TARGET_AVX512 static void kernel_bf16a(int64_t kc, const uint16_t *a, int64_t a_rs, const float *b, int64_t b_rs,
                                          float *c, int64_t ldc, int64_t rows, int64_t cols, int first,
                                          const struct kb_gemm_epilogue *last) {
  const int64_t a_cs = 1;
  KERNEL_BODY(bf16, 1)
}

/* Loads the 16 x w block (w <= 16 columns from p) of `rows` rows starting at
 * src (row stride ld); missing rows and columns read as zero. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void load_block(const float *src, int64_t ld, int64_t rows, int64_t w, __m512 r[16]) {
  __mmask16 mask = kb_first16_lanes(w);
  _Pragma("GCC unroll 16")
  for (int l = 0; l < 16; l++) r[l] = l < rows ? _mm512_maskz_loadu_ps(mask, src + l * ld) : _mm512_setzero_ps();
}

KB_TARGET_AVX512 static void pack_bt(int64_t kc, int64_t nc, const float *b, int64_t ldb, float *dst, int64_t nr) {
  for (int64_t j0 = 0; j0 < nc; j0 += nr) {
    float *panel = dst + (j0 / nr) * kc * nr;
    for (int64_t h = 0; h < nr; h += 16) {
      int64_t rows = nc - (j0 + h);
      if (rows > 16) rows = 16;
      for (int64_t p = 0; p < kc; p += 16) {
        int64_t w = kc - p < 16 ? kc - p : 16;
        __m512 r[16], col[16];
        if (rows > 0) {
          load_block(b + (j0 + h) * ldb + p, ldb, rows, w, r);
          transpose16(r, col);
        } else {
          for (int q = 0; q < 16; q++) col[q] = _mm512_setzero_ps();
        }
        for (int64_t q = 0; q < w; q++) _mm512_storeu_ps(panel + (p + q) * nr + h, col[q]);
      }
    }
  }
}

/* y[j] = chain of x[p] * mat[p * ldm + j].  Rows are read whole, four at a
 * time (four sequential streams the prefetchers follow), and the sums wait
 * in y between groups of rows (exact: they are float32 and y stays in L1/L2
 * for the column ranges a thread is given). */
KB_TARGET_AVX512 static void gemv_axpy(int64_t k, int64_t n, const float *x, const float *mat, int64_t ldm,
                                       float *y) {
  for (int64_t p0 = 0; p0 < k; p0 += 4) {
    int64_t rows = k - p0 < 4 ? k - p0 : 4;
    /* Only rows that exist are addressed (a huge ldm with one row is valid). */
    const float *r[4];
    for (int i = 0; i < 4; i++) r[i] = mat + (p0 + (i < rows ? i : 0)) * ldm;
    __m512 xv[4];
    for (int i = 0; i < 4; i++) xv[i] = _mm512_set1_ps(i < rows ? x[p0 + i] : 0.0f);
    for (int64_t j = 0; j < n; j += 64) {
      __m512 acc[4];
      if (rows == 4 && n - j >= 64) {
        _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) {
          acc[v] = p0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(y + j + 16 * v);
          acc[v] = _mm512_fmadd_ps(xv[0], _mm512_loadu_ps(r[0] + j + 16 * v), acc[v]);
          acc[v] = _mm512_fmadd_ps(xv[1], _mm512_loadu_ps(r[1] + j + 16 * v), acc[v]);
          acc[v] = _mm512_fmadd_ps(xv[2], _mm512_loadu_ps(r[2] + j + 16 * v), acc[v]);
          acc[v] = _mm512_fmadd_ps(xv[3], _mm512_loadu_ps(r[3] + j + 16 * v), acc[v]);
          _mm512_storeu_ps(y + j + 16 * v, acc[v]);
        }
      } else {
        for (int v = 0; v < 4; v++) {
          __mmask16 mk = kb_first16_lanes(n - j - 16 * v);
          acc[v] = p0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mk, y + j + 16 * v);
          for (int i = 0; i < rows; i++)
            acc[v] = _mm512_fmadd_ps(xv[i], _mm512_maskz_loadu_ps(mk, r[i] + j + 16 * v), acc[v]);
          _mm512_mask_storeu_ps(y + j + 16 * v, mk, acc[v]);
        }
      }
    }
  }
  if (k == 0)
    for (int64_t j = 0; j < n; j++) y[j] = 0.0f;
}

/* y[j] = chain of x[p] * mat[j * ldm + p]: 16 rows at a time, read in runs
 * of 16 floats that are transposed in registers so that lanes run along j;
 * the 16 rows' chains are one register.  Software prefetch keeps the 16
 * row streams ahead (hardware prefetchers do not follow that many short
 * streams). */
KB_TARGET_AVX512 static void gemv_dot(int64_t k, int64_t n, const float *x, const float *mat, int64_t ldm, float *y) {
  for (int64_t j0 = 0; j0 < n; j0 += 16) {
    int64_t rows = n - j0 < 16 ? n - j0 : 16;
    const float *base = mat + j0 * ldm;
    const char *next = (const char *)((uintptr_t)base + (uintptr_t)(16 * ldm * 4));
    const int64_t next_rows = kb_small_next_rows(n, j0, 16);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t p = 0; p < k; p += 16) {
      int64_t w = k - p < 16 ? k - p : 16;
      __m512 r[16], c[16];
      if (p + KB_GEMV_PREFETCH < k)
        for (int l = 0; l < rows; l++) KB_PREFETCH_STREAM(base + l * ldm + p + KB_GEMV_PREFETCH);
      else
        kb_small_prefetch_next_starts(next, ldm * 4, next_rows, (p + KB_GEMV_PREFETCH - k) * 4);
      load_block(base + p, ldm, rows, w, r);
      transpose16(r, c);
      if (w == 16) {
        _Pragma("GCC unroll 16") for (int q = 0; q < 16; q++) acc = _mm512_fmadd_ps(_mm512_set1_ps(x[p + q]), c[q], acc);
      } else {
        for (int64_t q = 0; q < w; q++) acc = _mm512_fmadd_ps(_mm512_set1_ps(x[p + q]), c[q], acc);
      }
    }
    _mm512_mask_storeu_ps(y + j0, kb_first16_lanes(rows), acc);
  }
}

/* 16 x 16 blocks transposed in registers; the ragged edges masked. */
KB_TARGET_AVX512 static void transpose(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst,
                                       int64_t ldd) {
  for (int64_t i0 = 0; i0 < rows; i0 += 16) {
    int64_t h = rows - i0 < 16 ? rows - i0 : 16;
    __mmask16 keep = kb_first16_lanes(h);
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      int64_t w = cols - j0 < 16 ? cols - j0 : 16;
      __m512 r[16], col[16];
      load_block(src + i0 * lds + j0, lds, h, w, r);
      transpose16(r, col);
      for (int64_t q = 0; q < w; q++) _mm512_mask_storeu_ps(dst + (j0 + q) * ldd + i0, keep, col[q]);
    }
  }
}

const struct kb_gemm_ops kb__gemm_ops_avx512 = {MR, NR, kernel, pack_bt, gemv_axpy, gemv_dot,
                                                kb__gemm_small_dot_avx512, kb__gemm_small_axpy_avx512, kb__gemm_pack_bt_half_avx512,
                                                transpose, kb__gemm_widen_avx512, SMALL_DOT_ROWS_F32,
                                                SMALL_DOT_ROWS_HALF, kernel_bf16a};

#endif /* KB_HAVE_X86_SIMD */
