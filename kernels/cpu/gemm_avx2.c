/* gemm_avx2.c - the avx2 level of the gemm pieces (gemm_kernels.h).
 *
 * Register tile 6 x 16: 12 ymm accumulators, two B vectors and one
 * broadcast A element per step of p (15 of the 16 registers).  Edge tiles
 * use instances of 4, 2 and 1 rows and masked columns; with A in rows, a
 * tile of 1-4 columns is computed with the tile's rows as the lanes
 * (tail()).  kernel_bf16a runs the same tiles on bfloat16 weights read in
 * place (bf16_at).  Every accumulator follows the contract's fma chain, so
 * the result is the scalar level's, bit for bit. */
#include <string.h>

#include "gemm_kernels.h"
#include "gemm_load.h"
#include "gemm_small_prefetch.h"
#include "gemm_transpose.h"
#include "simd.h"

#if KB_HAVE_X86_SIMD

#define MR 6
#define NR 16
/* Rows of A up to which the small-m dot beats the blocked path (swapped),
 * kb_linear_w [3584, 1024] on a Zen 4 at this level: float32 weights 4
 * (5-16 rows took 2.6-6.2 ms through the dot, 1.9 swapped; 2-4 rows were
 * even); bf16 / f16 weights 8 (9-16 rows 2.0-3.9 ms through the dot,
 * 1.6-1.7 swapped; 5-8 rows 1.4-1.75 through the dot, 1.6-1.75 swapped).
 * docs/performance.md. */
#define SMALL_DOT_ROWS_F32 4
#define SMALL_DOT_ROWS_HALF 8
/* Most columns of a tile that kernel() computes with A's rows as the lanes
 * (tail()) rather than with two vectors of 8 columns. */
#define TAIL_COLS 4

/* The bfloat16 weight at p as a float32 broadcast: gemm_avx512.c's bf16_at
 * (the 32 bits ending at p broadcast, the low half cleared; SAFE steps
 * read p alone). */
KB_TARGET_AVX2 __attribute__((always_inline)) static inline __m256 bf16_at(const uint16_t *p, const int safe) {
  if (safe) return _mm256_castsi256_ps(_mm256_set1_epi32((int32_t)((uint32_t)*p << 16)));
  int32_t pair;
  memcpy(&pair, p - 1, sizeof pair);
  return _mm256_castsi256_ps(_mm256_and_si256(_mm256_set1_epi32(pair), _mm256_set1_epi32((int32_t)0xffff0000u)));
}

/* Row i of the tile, if the instance has it: acc_i0/acc_i1 += a(i, p) * b(p, 0..15). */
#define ROW_FMA(i)                                                                            \
  if (R > (i)) {                                                                              \
    __m256 ai = A16 ? bf16_at(ap16 + (i) * a_rs, SAFE) : _mm256_set1_ps(ap[(i) * a_rs]);      \
    c##i##0 = _mm256_fmadd_ps(ai, b0, c##i##0);                                               \
    c##i##1 = _mm256_fmadd_ps(ai, b1, c##i##1);                                               \
  }

/* One step p of the tile: B's two vectors, then every row's multiply-adds. */
#define ROWS_STEP                                                                                  \
  {                                                                                                \
    const float *ap = A16 ? NULL : a + p * a_cs;                                                   \
    const uint16_t *ap16 = A16 ? a16 + p : NULL;                                                   \
    __m256 b0 = _mm256_loadu_ps(b + p * b_rs), b1 = _mm256_loadu_ps(b + p * b_rs + 8);             \
    (void)ap;                                                                                      \
    (void)ap16;                                                                                    \
    ALL_ROWS(ROW_FMA)                                                                              \
  }

#define LOAD8(ptr, mask) (full ? _mm256_loadu_ps(ptr) : _mm256_maskload_ps((ptr), (mask)))

#define ROW_INIT(i)                                      \
  if (R > (i) && !first) {                               \
    c##i##0 = LOAD8(c + (i) * ldc, m0);                  \
    c##i##1 = LOAD8(c + (i) * ldc + 8, m1);              \
  }

#define ROW_STORE(i)                                                                  \
  if (R > (i)) {                                                                      \
    __m256 v0 = c##i##0, v1 = c##i##1;                                                \
    if (last != NULL) {                                                               \
      v0 = _mm256_mul_ps(alpha, v0);                                                  \
      v1 = _mm256_mul_ps(alpha, v1);                                                  \
      if (last->beta != 0.0f) {                                                       \
        const float *r0 = last->c0 + (i) * last->ldc0;                                \
        v0 = _mm256_add_ps(v0, _mm256_mul_ps(beta, LOAD8(r0, m0)));                   \
        v1 = _mm256_add_ps(v1, _mm256_mul_ps(beta, LOAD8(r0 + 8, m1)));               \
      }                                                                               \
    }                                                                                 \
    if (full) {                                                                       \
      _mm256_storeu_ps(c + (i) * ldc, v0);                                            \
      _mm256_storeu_ps(c + (i) * ldc + 8, v1);                                        \
    } else {                                                                          \
      _mm256_maskstore_ps(c + (i) * ldc, m0, v0);                                     \
      _mm256_maskstore_ps(c + (i) * ldc + 8, m1, v1);                                 \
    }                                                                                 \
  }

#define ALL_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

/* The first R rows of a tile (R a constant: rows past it compile away).
 * Columns past `cols` are neither read from C nor written (masks); B always
 * has nr readable columns (a packed panel is zero-padded). */
#define DEFINE_ROWS(R_)                                                                                      \
  KB_TARGET_AVX2 __attribute__((always_inline)) static inline void rows_##R_(                                 \
      const int A16, int64_t kc, const float *a, const uint16_t *a16, int64_t a_rs, int64_t a_cs,          \
      const float *b, int64_t b_rs, float *c, int64_t ldc, __m256i m0, __m256i m1, int full, int first,    \
      const struct kb_gemm_epilogue *last) {                                                               \
    enum { R = R_ };                                                                                        \
    __m256 z = _mm256_setzero_ps();                                                                        \
    __m256 c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z;       \
    __m256 c50 = z, c51 = z;                                                                               \
    ALL_ROWS(ROW_INIT)                                                                                     \
    int64_t p0 = 0;                                                                                        \
    if (A16 && first && kc > 0) { /* A's first column: its element alone (SAFE) */                        \
      enum { SAFE = 1 };                                                                                   \
      const int64_t p = 0;                                                                                 \
      ROWS_STEP                                                                                            \
      p0 = 1;                                                                                              \
    }                                                                                                      \
    for (int64_t p = p0; p < kc; p++) {                                                                    \
      enum { SAFE = 0 };                                                                                   \
      ROWS_STEP                                                                                            \
    }                                                                                                      \
    __m256 alpha = _mm256_set1_ps(last != NULL ? last->alpha : 1.0f);                                      \
    __m256 beta = _mm256_set1_ps(last != NULL ? last->beta : 0.0f);                                        \
    ALL_ROWS(ROW_STORE)                                                                                    \
  }

DEFINE_ROWS(6)
DEFINE_ROWS(4)
DEFINE_ROWS(2)
DEFINE_ROWS(1)

/* The C (a constant, at most TAIL_COLS) columns of a tile from A stored in
 * rows (a_cs == 1), the other way round: the lanes are the tile's rows
 * (at most 6 of 8) and each column of B is broadcast.  Each block of 8
 * steps loads the rows' 8 values and transposes them, so that vector q
 * holds A(i, p + q) in lane i; then acc[j] += vector q * B(p + q, j), q
 * increasing: every element the contract's fma chain (the two factors of
 * each product swapped, which changes no bit), started and finished as
 * the contract says. */
KB_TARGET_AVX2 __attribute__((always_inline)) static inline void tail_cols(const int C, const int A16, int64_t kc,
                                                                         const void *a, int64_t a_rs,
                                                                         const float *b, int64_t b_rs, float *c,
                                                                         int64_t ldc, int64_t rows, int first,
                                                                         const struct kb_gemm_epilogue *last) {
  float t[8];
  __m256 acc[TAIL_COLS];
  for (int j = 0; j < C; j++) {
    for (int i = 0; i < 8; i++) t[i] = !first && i < rows ? c[i * ldc + j] : 0.0f;
    acc[j] = _mm256_loadu_ps(t);
  }
  for (int64_t p = 0; p < kc; p += 8) {
    int64_t w = kc - p < 8 ? kc - p : 8;
    __m256 r[8], col[8];
    __m256i mask = kb_first8_lanes(w);
    _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++) {
      if (l >= rows)
        r[l] = _mm256_setzero_ps();
      else if (A16)
        r[l] = w == 8 ? kb_gemm_load8(KB_GEMM_BF16, (const uint16_t *)a + l * a_rs + p)
                      : kb_gemm_load8_part(KB_GEMM_BF16, (const uint16_t *)a + l * a_rs + p, w);
      else
        r[l] = _mm256_maskload_ps((const float *)a + l * a_rs + p, mask);
    }
    transpose8(r, col);
    if (w == 8) {
      _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
        _Pragma("GCC unroll 4") for (int j = 0; j < C; j++)
          acc[j] = _mm256_fmadd_ps(col[q], _mm256_set1_ps(b[(p + q) * b_rs + j]), acc[j]);
    } else {
      for (int64_t q = 0; q < w; q++)
        _Pragma("GCC unroll 4") for (int j = 0; j < C; j++)
          acc[j] = _mm256_fmadd_ps(col[q], _mm256_set1_ps(b[(p + q) * b_rs + j]), acc[j]);
    }
  }
  for (int j = 0; j < C; j++) {
    __m256 v = acc[j];
    /* ROW_STORE's epilogue, lane by lane. */
    if (last != NULL) v = _mm256_mul_ps(_mm256_set1_ps(last->alpha), v);
    _mm256_storeu_ps(t, v);
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
  KB_TARGET_AVX2 __attribute__((noinline)) static void tail_##SUF(int64_t kc, const void *a, int64_t a_rs,       \
                                                                 const float *b, int64_t b_rs, float *c,        \
                                                                 int64_t ldc, int64_t rows, int64_t cols,       \
                                                                 int first, const struct kb_gemm_epilogue *last) { \
    switch (cols) {                                                                                             \
      case 1: tail_cols(1, A16_, kc, a, a_rs, b, b_rs, c, ldc, rows, first, last); break;                      \
      case 2: tail_cols(2, A16_, kc, a, a_rs, b, b_rs, c, ldc, rows, first, last); break;                      \
      case 3: tail_cols(3, A16_, kc, a, a_rs, b, b_rs, c, ldc, rows, first, last); break;                      \
      default: tail_cols(4, A16_, kc, a, a_rs, b, b_rs, c, ldc, rows, first, last); break;                     \
    }                                                                                                           \
  }
DEFINE_TAIL(f32, 0)
DEFINE_TAIL(bf16, 1)

/* A tile of rows x cols (at most 6 x 16): blocks of 6 rows, then the
 * remainder as 4 + 2 + 1 rows.  The packed-A instance has constant strides.
 * With A in rows (a_cs == 1: the weights of a swapped product, read in
 * place or widened), a tile of at most TAIL_COLS columns (the last panel
 * of 17-20 or 33-36 rows, swapped) takes tail() instead of two vectors of
 * 8 that would be mostly padding.  A16: A bfloat16 in rows, read in place
 * (kernel_bf16a). */
#define KERNEL_BODY(SUF, A16_)                                                                               \
  if (a_cs == 1 && cols <= TAIL_COLS) {                                                                     \
    tail_##SUF(kc, a, a_rs, b, b_rs, c, ldc, rows, cols, first, last);                                      \
    return;                                                                                                 \
  }                                                                                                         \
  __m256i m0 = kb_first8_lanes(cols), m1 = kb_first8_lanes(cols - 8);                                       \
  int full = cols == NR;                                                                                    \
  struct kb_gemm_epilogue e;                                                                                \
  if (last != NULL) e = *last;                                                                              \
  for (int64_t r = 0; r < rows;) {                                                                          \
    int64_t left = rows - r;                                                                                \
    const float *ar = A16_ ? NULL : (const float *)(const void *)a + r * a_rs;                              \
    const uint16_t *ar16 = A16_ ? (const uint16_t *)(const void *)a + r * a_rs : NULL;                      \
    float *cr = c + r * ldc;                                                                                \
    const struct kb_gemm_epilogue *ep = NULL;                                                               \
    if (last != NULL) {                                                                                     \
      e.c0 = last->c0 != NULL ? last->c0 + r * last->ldc0 : NULL; /* NULL when beta == 0 */                 \
      ep = &e;                                                                                              \
    }                                                                                                       \
    if (left >= 6) {                                                                                        \
      if (!A16_ && a_rs == 1 && a_cs == MR)                                                                 \
        rows_6(0, kc, ar, NULL, 1, MR, b, b_rs, cr, ldc, m0, m1, full, first, ep);                          \
      else                                                                                                  \
        rows_6(A16_, kc, ar, ar16, a_rs, a_cs, b, b_rs, cr, ldc, m0, m1, full, first, ep);                  \
      r += 6;                                                                                               \
    } else if (left >= 4) {                                                                                 \
      rows_4(A16_, kc, ar, ar16, a_rs, a_cs, b, b_rs, cr, ldc, m0, m1, full, first, ep);                    \
      r += 4;                                                                                               \
    } else if (left >= 2) {                                                                                 \
      rows_2(A16_, kc, ar, ar16, a_rs, a_cs, b, b_rs, cr, ldc, m0, m1, full, first, ep);                    \
      r += 2;                                                                                               \
    } else {                                                                                                \
      rows_1(A16_, kc, ar, ar16, a_rs, a_cs, b, b_rs, cr, ldc, m0, m1, full, first, ep);                    \
      r += 1;                                                                                               \
    }                                                                                                       \
  }

KB_TARGET_AVX2 static void kernel(int64_t kc, const float *a, int64_t a_rs, int64_t a_cs, const float *b,
                                  int64_t b_rs, float *c, int64_t ldc, int64_t rows, int64_t cols, int first,
                                  const struct kb_gemm_epilogue *last) {
  KERNEL_BODY(f32, 0)
}

/* kernel() with A bfloat16 in rows, read in place (kb_gemm_kernel_bf16a_fn):
 * the same tiles, each weight widened as it is broadcast (bf16_at). */
KB_TARGET_AVX2 static void kernel_bf16a(int64_t kc, const uint16_t *a, int64_t a_rs, const float *b, int64_t b_rs,
                                        float *c, int64_t ldc, int64_t rows, int64_t cols, int first,
                                        const struct kb_gemm_epilogue *last) {
  const int64_t a_cs = 1;
  KERNEL_BODY(bf16, 1)
}

/* Loads the 8 x w block (w <= 8 columns) of `rows` rows at src (row stride
 * ld); missing rows and columns read as zero. */
KB_TARGET_AVX2 __attribute__((always_inline)) static inline void load_block(const float *src, int64_t ld, int64_t rows, int64_t w, __m256 r[8]) {
  __m256i mask = kb_first8_lanes(w);
  _Pragma("GCC unroll 16")
  for (int l = 0; l < 8; l++)
    r[l] = l >= rows ? _mm256_setzero_ps() : w == 8 ? _mm256_loadu_ps(src + l * ld) : _mm256_maskload_ps(src + l * ld, mask);
}

KB_TARGET_AVX2 static void pack_bt(int64_t kc, int64_t nc, const float *b, int64_t ldb, float *dst, int64_t nr) {
  for (int64_t j0 = 0; j0 < nc; j0 += nr) {
    float *panel = dst + (j0 / nr) * kc * nr;
    for (int64_t h = 0; h < nr; h += 8) {
      int64_t rows = nc - (j0 + h);
      if (rows > 8) rows = 8;
      for (int64_t p = 0; p < kc; p += 8) {
        int64_t w = kc - p < 8 ? kc - p : 8;
        __m256 r[8], col[8];
        if (rows > 0) {
          load_block(b + (j0 + h) * ldb + p, ldb, rows, w, r);
          transpose8(r, col);
        } else {
          for (int q = 0; q < 8; q++) col[q] = _mm256_setzero_ps();
        }
        for (int64_t q = 0; q < w; q++) _mm256_storeu_ps(panel + (p + q) * nr + h, col[q]);
      }
    }
  }
}

/* y[j] = chain of x[p] * mat[p * ldm + j].  Rows are read whole, four at a
 * time (four sequential streams), and the sums wait in y between groups of
 * rows (exact: they are float32). */
KB_TARGET_AVX2 static void gemv_axpy(int64_t k, int64_t n, const float *x, const float *mat, int64_t ldm, float *y) {
  for (int64_t p0 = 0; p0 < k; p0 += 4) {
    int64_t rows = k - p0 < 4 ? k - p0 : 4;
    /* Only rows that exist are addressed (a huge ldm with one row is valid). */
    const float *r[4];
    for (int i = 0; i < 4; i++) r[i] = mat + (p0 + (i < rows ? i : 0)) * ldm;
    __m256 xv[4];
    for (int i = 0; i < 4; i++) xv[i] = _mm256_set1_ps(i < rows ? x[p0 + i] : 0.0f);
    for (int64_t j = 0; j < n; j += 32) {
      __m256 acc[4];
      if (rows == 4 && n - j >= 32) {
        _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++) {
          acc[v] = p0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(y + j + 8 * v);
          acc[v] = _mm256_fmadd_ps(xv[0], _mm256_loadu_ps(r[0] + j + 8 * v), acc[v]);
          acc[v] = _mm256_fmadd_ps(xv[1], _mm256_loadu_ps(r[1] + j + 8 * v), acc[v]);
          acc[v] = _mm256_fmadd_ps(xv[2], _mm256_loadu_ps(r[2] + j + 8 * v), acc[v]);
          acc[v] = _mm256_fmadd_ps(xv[3], _mm256_loadu_ps(r[3] + j + 8 * v), acc[v]);
          _mm256_storeu_ps(y + j + 8 * v, acc[v]);
        }
      } else {
        for (int v = 0; v < 4; v++) {
          __m256i mk = kb_first8_lanes(n - j - 8 * v);
          acc[v] = p0 == 0 ? _mm256_setzero_ps() : _mm256_maskload_ps(y + j + 8 * v, mk);
          for (int i = 0; i < rows; i++)
            acc[v] = _mm256_fmadd_ps(xv[i], _mm256_maskload_ps(r[i] + j + 8 * v, mk), acc[v]);
          _mm256_maskstore_ps(y + j + 8 * v, mk, acc[v]);
        }
      }
    }
  }
  if (k == 0)
    for (int64_t j = 0; j < n; j++) y[j] = 0.0f;
}

/* y[j] = chain of x[p] * mat[j * ldm + p]: 16 rows at a time as two 8 x 8
 * blocks transposed in registers (two independent chains), with software
 * prefetch of the 16 row streams. */
KB_TARGET_AVX2 static void gemv_dot(int64_t k, int64_t n, const float *x, const float *mat, int64_t ldm, float *y) {
  for (int64_t j0 = 0; j0 < n; j0 += 16) {
    int64_t rows0 = n - j0 < 8 ? n - j0 : 8;
    int64_t rows1 = n - j0 - 8 < 8 ? n - j0 - 8 : 8;
    const float *b0 = mat + j0 * ldm, *b1 = b0 + 8 * ldm;
    const char *next = (const char *)((uintptr_t)b0 + (uintptr_t)(16 * ldm * 4));
    const int64_t next_rows = kb_small_next_rows(n, j0, 16);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t p = 0;
    if (rows1 == 8) {
      /* Sixteen whole rows: the loads without the per-row checks of
       * load_block (whose branches, and the arrays they kept on the stack,
       * cost more than the arithmetic); the same chains, so the same bits. */
      for (; p + 8 <= k; p += 8) {
        if (p + 64 < k) {
          _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++) {
            KB_PREFETCH_STREAM(b0 + l * ldm + p + 64);
            KB_PREFETCH_STREAM(b1 + l * ldm + p + 64);
          }
        } else {
          kb_small_prefetch_next_starts(next, ldm * 4, next_rows, (p + 64 - k) * 4);
        }
        __m256 r[8], c0[8], c1[8];
        _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++) r[l] = _mm256_loadu_ps(b0 + l * ldm + p);
        transpose8(r, c0);
        _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++) r[l] = _mm256_loadu_ps(b1 + l * ldm + p);
        transpose8(r, c1);
        _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++) {
          __m256 xq = _mm256_set1_ps(x[p + q]);
          acc0 = _mm256_fmadd_ps(xq, c0[q], acc0);
          acc1 = _mm256_fmadd_ps(xq, c1[q], acc1);
        }
      }
    }
    for (; p < k; p += 8) {
      int64_t w = k - p < 8 ? k - p : 8;
      __m256 r[8], c0[8], c1[8];
      if (p + 64 < k) {
        for (int l = 0; l < rows0; l++) KB_PREFETCH_STREAM(b0 + l * ldm + p + 64);
        for (int l = 0; l < rows1; l++) KB_PREFETCH_STREAM(b1 + l * ldm + p + 64);
      } else {
        kb_small_prefetch_next_starts(next, ldm * 4, next_rows, (p + 64 - k) * 4);
      }
      load_block(b0 + p, ldm, rows0, w, r);
      transpose8(r, c0);
      if (rows1 > 0) {
        load_block(b1 + p, ldm, rows1, w, r);
        transpose8(r, c1);
      } else {
        for (int q = 0; q < 8; q++) c1[q] = _mm256_setzero_ps();
      }
      if (w == 8) {
        _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++) {
          __m256 xq = _mm256_set1_ps(x[p + q]);
          acc0 = _mm256_fmadd_ps(xq, c0[q], acc0);
          acc1 = _mm256_fmadd_ps(xq, c1[q], acc1);
        }
      } else {
        for (int64_t q = 0; q < w; q++) {
          __m256 xq = _mm256_set1_ps(x[p + q]);
          acc0 = _mm256_fmadd_ps(xq, c0[q], acc0);
          acc1 = _mm256_fmadd_ps(xq, c1[q], acc1);
        }
      }
    }
    _mm256_maskstore_ps(y + j0, kb_first8_lanes(rows0), acc0);
    if (rows1 > 0) _mm256_maskstore_ps(y + j0 + 8, kb_first8_lanes(rows1), acc1);
  }
}

/* 8 x 8 blocks transposed in registers; the ragged edges masked. */
KB_TARGET_AVX2 static void transpose(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst,
                                     int64_t ldd) {
  for (int64_t i0 = 0; i0 < rows; i0 += 8) {
    int64_t h = rows - i0 < 8 ? rows - i0 : 8;
    __m256i keep = kb_first8_lanes(h);
    for (int64_t j0 = 0; j0 < cols; j0 += 8) {
      int64_t w = cols - j0 < 8 ? cols - j0 : 8;
      __m256 r[8], col[8];
      load_block(src + i0 * lds + j0, lds, h, w, r);
      transpose8(r, col);
      for (int64_t q = 0; q < w; q++) {
        if (h == 8)
          _mm256_storeu_ps(dst + (j0 + q) * ldd + i0, col[q]);
        else
          _mm256_maskstore_ps(dst + (j0 + q) * ldd + i0, keep, col[q]);
      }
    }
  }
}

const struct kb_gemm_ops kb__gemm_ops_avx2 = {MR, NR, kernel, pack_bt, gemv_axpy, gemv_dot,
                                              kb__gemm_small_dot_avx2, kb__gemm_small_axpy_avx2, kb__gemm_pack_bt_half_avx2,
                                              transpose, kb__gemm_widen_avx2, SMALL_DOT_ROWS_F32,
                                                SMALL_DOT_ROWS_HALF, kernel_bf16a};

#endif /* KB_HAVE_X86_SIMD */
