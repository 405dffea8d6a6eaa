/* attention_avx512.c - the avx512 level of the attention pieces
 * (attention_kernels.h): attention_scalar.c's operations, 16 keys at a time. */
#include <stdbool.h>
#include <string.h>

#include "attention_kernels.h"
#include "gemm_kernels.h"
#include "simd.h"

#if KB_HAVE_X86_SIMD

/* attention_scalar.c's attn_exp, lane by lane. */
KB_TARGET_AVX512 static inline __m512 attn_exp(__m512 x) {
  const __m512 magic = _mm512_set1_ps(12582912.0f);
  __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269502e+00f), magic);
  __m512 n = _mm512_sub_ps(t, magic);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-6.93145752e-01f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-1.42860677e-06f), r);
  __m512 p = _mm512_set1_ps(1.98412698e-04f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.38888889e-03f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.33333333e-03f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.16666667e-02f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.66666667e-01f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.00000000e-01f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  __m512i k = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_castps_si512(t), _mm512_castps_si512(magic)), 23);
  __m512 e = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), k));
  __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(tiny, e, _mm512_setzero_ps());
}

KB_TARGET_AVX512 static void softmax_block(const float *s, int64_t len, float m_old, float *p, float *m_new,
                                           float *sum) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 vmax = ninf;
  for (int64_t j = 0; j < len; j += 16) {
    __m512 v = _mm512_mask_loadu_ps(ninf, kb_first16_lanes(len - j), s + j);
    vmax = _mm512_max_ps(v, vmax); /* v > vmax ? v : vmax, as the scalar loop */
  }
  float mx = _mm512_reduce_max_ps(vmax);
  float m = m_old > mx ? m_old : mx;
  __m512 vm = _mm512_set1_ps(m), part = _mm512_setzero_ps();
  for (int64_t j = 0; j < len; j += 16) {
    __mmask16 mask = kb_first16_lanes(len - j);
    __m512 e = attn_exp(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, mask, s + j), vm));
    _mm512_mask_storeu_ps(p + j, mask, e);
    part = _mm512_add_ps(part, e); /* lanes past len add exp(-inf) = +0 */
  }
  __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(part),
                            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(part), 1)));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  *sum = _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
  *m_new = m;
}

#define lanes kb_first16_lanes
#define PV_LOAD(mask, src) _mm512_maskz_loadu_ps((mask), (src))
#define PV_STORE(dst, mask, x) _mm512_mask_storeu_ps((dst), (mask), (x))
typedef __mmask16 pv_mask;

/* 16 elements of V (storage type VDT) from src, widened to float32; lanes
 * outside mask are zero and not read. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline __m512 pv_load(const int VDT, const bool full,
                                                                             __mmask16 mask, const void *src) {
  if (VDT == KB_GEMM_F32) return full ? _mm512_loadu_ps(src) : _mm512_maskz_loadu_ps(mask, src);
  __m256i h;
  if (full) {
    h = _mm256_loadu_si256((const __m256i *)src);
  } else { /* mask is the first lanes; no 16-bit masked load at this level */
    uint16_t t[16] = {0};
    for (int l = 0; l < 16 && (mask >> l & 1); l++) t[l] = ((const uint16_t *)src)[l];
    h = _mm256_loadu_si256((const __m256i *)t);
  }
  if (VDT == KB_GEMM_F16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Rows of V ahead of the current key that pv prefetches (into L2: simd.h,
 * KB_PREFETCH_STREAM). */
#define KB_PV_AHEAD 8

/* pv (attention_kernels.h) on columns [0, width) of R rows (R a constant),
 * width <= NV * 16: each key's row of V is loaded once (NV vectors) and
 * fed to the R x NV chains, keys in increasing order.  NV chains per row
 * are independent, so the fma latency is hidden with one row. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void pv_cols(const int VDT, const int R, const int NV,
                                                                           const bool full, int64_t len, int64_t width,
                                                                           const float *p, int64_t ldp, const void *v,
                                                                           int64_t ldv, float *o, int64_t ldo,
                                                                           int first) {
  /* Fully unrolled, so that the accumulators stay in registers; masked
   * loads and stores only for a last partial chunk (full false). */
  const int64_t es = VDT == KB_GEMM_F32 ? 4 : 2;
  pv_mask mask[8];
  __m512 acc[4][8];
  _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) mask[t] = lanes(width - 16 * t);
  _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
    _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {
      float *at = o + i * ldo + 16 * t;
      acc[i][t] = first ? _mm512_setzero_ps() : full ? _mm512_loadu_ps(at) : PV_LOAD(mask[t], at);
    }
  }
  for (int64_t j = 0; j < len; j++) {
    const char *row = (const char *)v + j * ldv * es;
    if (j + KB_PV_AHEAD < len)
      for (int64_t x = 0; x < width; x += 64 / es) KB_PREFETCH_STREAM(row + (KB_PV_AHEAD * ldv + x) * es);
    __m512 pj[4];
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) pj[i] = _mm512_set1_ps(p[i * ldp + j]);
    if (full) {
      _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {
        __m512 w = pv_load(VDT, true, mask[t], row + 16 * t * es);
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) acc[i][t] = _mm512_fmadd_ps(pj[i], w, acc[i][t]);
      }
    } else {
      _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {
        __m512 w = pv_load(VDT, false, mask[t], row + 16 * t * es);
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) acc[i][t] = _mm512_fmadd_ps(pj[i], w, acc[i][t]);
      }
    }
  }
  _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
    _Pragma("GCC unroll 8") for (int t = 0; t < NV; t++) {
      if (full)
        _mm512_storeu_ps(o + i * ldo + 16 * t, acc[i][t]);
      else
        PV_STORE(o + i * ldo + 16 * t, mask[t], acc[i][t]);
    }
  }
}

/* pv_cols with `full` a constant in each instantiation. */
#define PV_COLS(VDT, R, NV)                                                                               \
  do {                                                                                                    \
    if (width == (NV)*16)                                                                                 \
      pv_cols(VDT, R, NV, true, len, width, p, ldp, (const char *)v + x0 * es, ldv, o + x0, ldo, first);  \
    else                                                                                                  \
      pv_cols(VDT, R, NV, false, len, width, p, ldp, (const char *)v + x0 * es, ldv, o + x0, ldo, first); \
  } while (0)

KB_TARGET_AVX512 __attribute__((always_inline)) static inline void pv_dt(const int VDT, int64_t rows, int64_t len,
                                                                         int64_t d, const float *p, int64_t ldp,
                                                                         const void *v, int64_t ldv, float *o,
                                                                         int64_t ldo, int first) {
  /* 32 registers: up to two rows take 128 columns per pass, three or four
   * rows 64 (16 chains, the row's broadcasts and the loaded vector). */
  const int64_t chunk = rows <= 2 ? 8 * 16 : 4 * 16;
  for (int64_t x0 = 0; x0 < d; x0 += chunk) {
    const int64_t es = VDT == KB_GEMM_F32 ? 4 : 2;
    int64_t width = d - x0 < chunk ? d - x0 : chunk;
    if (rows == 1) {
      if (width > 4 * 16)
        PV_COLS(VDT, 1, 8);
      else
        PV_COLS(VDT, 1, 4);
    } else if (rows == 2) {
      if (width > 4 * 16)
        PV_COLS(VDT, 2, 8);
      else
        PV_COLS(VDT, 2, 4);
    } else if (rows == 3) {
      PV_COLS(VDT, 3, 4);
    } else {
      PV_COLS(VDT, 4, 4);
    }
  }
}

KB_TARGET_AVX512 static void pv(int vdt, int64_t rows, int64_t len, int64_t d, const float *p, int64_t ldp,
                                const void *v, int64_t ldv, float *o, int64_t ldo, int first) {
  if (vdt == KB_GEMM_BF16)
    pv_dt(KB_GEMM_BF16, rows, len, d, p, ldp, v, ldv, o, ldo, first);
  else if (vdt == KB_GEMM_F16)
    pv_dt(KB_GEMM_F16, rows, len, d, p, ldp, v, ldv, o, ldo, first);
  else
    pv_dt(KB_GEMM_F32, rows, len, d, p, ldp, v, ldv, o, ldo, first);
}

/* dot_rows 8: the small-m product (16 x 16 transposes of K) is faster than
 * packing K at 5-8 rows, 16-bit K by 10-20% (AVX-512 Xeon).  pv_rows 4: at
 * 8 rows of a float32 V the microkernel on V in place is faster than two
 * passes of pv (docs/performance.md, "Decode attention: the K and V routes
 * per level"). */
const struct kb_attn_ops kb__attn_ops_avx512 = {softmax_block, pv, 8, 4};

#endif /* KB_HAVE_X86_SIMD */
