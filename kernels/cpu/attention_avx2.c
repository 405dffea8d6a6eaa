/* attention_avx2.c - the avx2 level of the attention pieces
 * (attention_kernels.h): attention_scalar.c's operations, 8 keys at a time,
 * the 16 partial sums in two registers. */
#include <stdbool.h>
#include <string.h>

#include "attention_kernels.h"
#include "gemm_kernels.h"
#include "simd.h"

#if KB_HAVE_X86_SIMD

/* attention_scalar.c's attn_exp, lane by lane. */
KB_TARGET_AVX2 static inline __m256 attn_exp(__m256 x) {
  const __m256 magic = _mm256_set1_ps(12582912.0f);
  __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269502e+00f), magic);
  __m256 n = _mm256_sub_ps(t, magic);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-6.93145752e-01f), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-1.42860677e-06f), r);
  __m256 p = _mm256_set1_ps(1.98412698e-04f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.38888889e-03f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.33333333e-03f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.16666667e-02f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.66666667e-01f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.00000000e-01f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  __m256i k = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(magic)), 23);
  __m256 e = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), k));
  __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ);
  return _mm256_blendv_ps(e, _mm256_setzero_ps(), tiny);
}

/* The next 8 scores from j, -inf past len. */
KB_TARGET_AVX2 static inline __m256 load8(const float *s, int64_t j, int64_t len) {
  if (len - j >= 8) return _mm256_loadu_ps(s + j);
  float tmp[8];
  for (int l = 0; l < 8; l++) tmp[l] = j + l < len ? s[j + l] : -__builtin_inff();
  return _mm256_loadu_ps(tmp);
}

KB_TARGET_AVX2 static void softmax_block(const float *s, int64_t len, float m_old, float *p, float *m_new, float *sum) {
  __m256 vmax = _mm256_set1_ps(-__builtin_inff());
  for (int64_t j = 0; j < len; j += 8) vmax = _mm256_max_ps(load8(s, j, len), vmax);
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
  float mx = _mm_cvtss_f32(m4);
  float m = m_old > mx ? m_old : mx;
  __m256 vm = _mm256_set1_ps(m);
  __m256 part[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t j = 0; j < len; j += 8) {
    __m256 e = attn_exp(_mm256_sub_ps(load8(s, j, len), vm));
    if (len - j >= 8) {
      _mm256_storeu_ps(p + j, e);
    } else {
      float tmp[8];
      _mm256_storeu_ps(tmp, e);
      memcpy(p + j, tmp, (size_t)(len - j) * sizeof(float));
    }
    /* Keys j..j+7 are partials (j mod 16)..(j mod 16)+7. */
    part[(j / 8) & 1] = _mm256_add_ps(part[(j / 8) & 1], e);
  }
  __m256 s8 = _mm256_add_ps(part[0], part[1]);
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  *sum = _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
  *m_new = m;
}

#define PV_LOAD(mask, src) _mm256_maskload_ps((src), (mask))
#define PV_STORE(dst, mask, x) _mm256_maskstore_ps((dst), (mask), (x))
typedef __m256i pv_mask;

/* 8 elements of V (storage type VDT) from src, widened to float32; lanes
 * outside mask are zero and not read. */
KB_TARGET_AVX2 __attribute__((always_inline)) static inline __m256 pv_load(const int VDT, const bool full, __m256i mask,
                                                                           const void *src) {
  if (VDT == KB_GEMM_F32) return full ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, mask);
  __m128i h;
  if (full) {
    h = _mm_loadu_si128((const __m128i *)src);
  } else {
    uint16_t t[8] = {0};
    int lanes_in = _mm256_movemask_ps(_mm256_castsi256_ps(mask));
    for (int l = 0; l < 8 && (lanes_in >> l & 1); l++) t[l] = ((const uint16_t *)src)[l];
    h = _mm_loadu_si128((const __m128i *)t);
  }
  if (VDT == KB_GEMM_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* Rows of V ahead of the current key that pv prefetches (into L2: simd.h,
 * KB_PREFETCH_STREAM). */
#define KB_PV_AHEAD 8

/* pv (attention_kernels.h) on columns [0, width) of R rows (R a constant),
 * width <= NV * 8: each key's row of V is loaded once (NV vectors) and
 * fed to the R x NV chains, keys in increasing order.  NV chains per row
 * are independent, so the fma latency is hidden with one row. */
KB_TARGET_AVX2 __attribute__((always_inline)) static inline void pv_cols(const int VDT, const int R, const int NV,
                                                                         const bool full, int64_t len, int64_t width,
                                                                         const float *p, int64_t ldp, const void *v,
                                                                         int64_t ldv, float *o, int64_t ldo,
                                                                         int first) {
  /* Fully unrolled, so that the accumulators stay in registers; masked
   * loads and stores only for a last partial chunk (full false). */
  const int64_t es = VDT == KB_GEMM_F32 ? 4 : 2;
  pv_mask mask[8];
  __m256 acc[4][8];
  _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) mask[t] = kb_first8_lanes(width - 8 * t);
  _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
    _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {
      float *at = o + i * ldo + 8 * t;
      acc[i][t] = first ? _mm256_setzero_ps() : full ? _mm256_loadu_ps(at) : PV_LOAD(mask[t], at);
    }
  }
  for (int64_t j = 0; j < len; j++) {
    const char *row = (const char *)v + j * ldv * es;
    if (j + KB_PV_AHEAD < len)
      for (int64_t x = 0; x < width; x += 64 / es) KB_PREFETCH_STREAM(row + (KB_PV_AHEAD * ldv + x) * es);
    __m256 pj[4];
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) pj[i] = _mm256_set1_ps(p[i * ldp + j]);
    if (full) {
      _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {
        __m256 w = pv_load(VDT, true, mask[t], row + 8 * t * es);
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) acc[i][t] = _mm256_fmadd_ps(pj[i], w, acc[i][t]);
      }
    } else {
      _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {
        __m256 w = pv_load(VDT, false, mask[t], row + 8 * t * es);
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) acc[i][t] = _mm256_fmadd_ps(pj[i], w, acc[i][t]);
      }
    }
  }
  _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
    _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {
      if (full)
        _mm256_storeu_ps(o + i * ldo + 8 * t, acc[i][t]);
      else
        PV_STORE(o + i * ldo + 8 * t, mask[t], acc[i][t]);
    }
  }
}

/* pv_cols with `full` a constant in each instantiation. */
#define PV_COLS(VDT, R, NV)                                                                               \
  do {                                                                                                    \
    if (width == (NV)*8)                                                                                  \
      pv_cols(VDT, R, NV, true, len, width, p, ldp, (const char *)v + x0 * es, ldv, o + x0, ldo, first);  \
    else                                                                                                  \
      pv_cols(VDT, R, NV, false, len, width, p, ldp, (const char *)v + x0 * es, ldv, o + x0, ldo, first); \
  } while (0)

KB_TARGET_AVX2 __attribute__((always_inline)) static inline void pv_dt(const int VDT, int64_t rows, int64_t len,
                                                                       int64_t d, const float *p, int64_t ldp,
                                                                       const void *v, int64_t ldv, float *o,
                                                                       int64_t ldo, int first) {
  /* 16 registers: two rows take half the columns per pass, three or four
   * a quarter (8 chains, the rows' broadcasts and the loaded vector). */
  const int64_t chunk = rows == 1 ? 8 * 8 : rows == 2 ? 4 * 8 : 2 * 8;
  for (int64_t x0 = 0; x0 < d; x0 += chunk) {
    const int64_t es = VDT == KB_GEMM_F32 ? 4 : 2;
    int64_t width = d - x0 < chunk ? d - x0 : chunk;
    if (rows == 1) {
      if (width > 4 * 8)
        PV_COLS(VDT, 1, 8);
      else
        PV_COLS(VDT, 1, 4);
    } else if (rows == 2) {
      PV_COLS(VDT, 2, 4);
    } else if (rows == 3) {
      PV_COLS(VDT, 3, 2);
    } else {
      PV_COLS(VDT, 4, 2);
    }
  }
}

KB_TARGET_AVX2 static void pv(int vdt, int64_t rows, int64_t len, int64_t d, const float *p, int64_t ldp, const void *v,
                              int64_t ldv, float *o, int64_t ldo, int first) {
  if (vdt == KB_GEMM_BF16)
    pv_dt(KB_GEMM_BF16, rows, len, d, p, ldp, v, ldv, o, ldo, first);
  else if (vdt == KB_GEMM_F16)
    pv_dt(KB_GEMM_F16, rows, len, d, p, ldp, v, ldv, o, ldo, first);
  else
    pv_dt(KB_GEMM_F32, rows, len, d, p, ldp, v, ldv, o, ldo, first);
}

/* dot_rows 4: from 5 query rows per block packing K is faster than the
 * small-m product (16-bit K at 8-16 rows on an AVX2 Zen 3, and at 16 rows
 * on an AVX-512 Xeon at this level).  pv_rows 8: pv is faster than the
 * microkernel on float32 V at 8 rows, slower at 16 (AVX2 Zen 3). */
const struct kb_attn_ops kb__attn_ops_avx2 = {softmax_block, pv, 4, 8};

#endif /* KB_HAVE_X86_SIMD */
