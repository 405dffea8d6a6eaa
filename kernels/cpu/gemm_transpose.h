/* gemm_transpose.h - the in-register transposes of a square block of B
 * (8 x 8 floats on avx2, 16 x 16 on avx512), shared by the packing of the
 * blocked path (gemm_<level>.c) and the small-m products
 * (gemm_small_<level>.c).  A copy, no arithmetic: every level's bits. */
#ifndef KB_CPU_GEMM_TRANSPOSE_H
#define KB_CPU_GEMM_TRANSPOSE_H

#include "simd.h"

#if KB_HAVE_X86_SIMD

/* out[q] = column q of the 8 x 8 block whose row l is r[l]. */
KB_TARGET_AVX2 __attribute__((always_inline)) static inline void transpose8(const __m256 r[8], __m256 out[8]) {
  __m256 t[8], u[8];
  _Pragma("GCC unroll 16")
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  /* u[4g + s]: rows 4g..4g+3 of columns s and s+4 (one per 128-bit lane). */
  _Pragma("GCC unroll 16")
  for (int g = 0; g < 2; g++) {
    u[4 * g + 0] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
    u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
  }
  _Pragma("GCC unroll 16")
  for (int s = 0; s < 4; s++) {
    out[s] = _mm256_permute2f128_ps(u[s], u[4 + s], 0x20);
    out[s + 4] = _mm256_permute2f128_ps(u[s], u[4 + s], 0x31);
  }
}

/* out[q] = column q of the 16 x 16 block whose row l is r[l]. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline void transpose16(const __m512 r[16], __m512 out[16]) {
  __m512 t[16], u[16];
  _Pragma("GCC unroll 16")
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  /* u[4g + s]: rows 4g..4g+3 of columns s, s+4, s+8, s+12 (one per 128-bit lane). */
  _Pragma("GCC unroll 16")
  for (int g = 0; g < 4; g++) {
    __m512d lo = _mm512_castps_pd(t[4 * g]), hi = _mm512_castps_pd(t[4 * g + 1]);
    __m512d lo2 = _mm512_castps_pd(t[4 * g + 2]), hi2 = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, lo2));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, lo2));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi, hi2));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi, hi2));
  }
  _Pragma("GCC unroll 16")
  for (int s = 0; s < 4; s++) {
    __m512 v0 = _mm512_shuffle_f32x4(u[s], u[4 + s], 0x88);      /* cols s, s+8 of rows 0-7 */
    __m512 v1 = _mm512_shuffle_f32x4(u[s], u[4 + s], 0xdd);      /* cols s+4, s+12 */
    __m512 v2 = _mm512_shuffle_f32x4(u[8 + s], u[12 + s], 0x88); /* rows 8-15 */
    __m512 v3 = _mm512_shuffle_f32x4(u[8 + s], u[12 + s], 0xdd);
    out[s] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    out[s + 8] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
    out[s + 4] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    out[s + 12] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
  }
}

#endif /* KB_HAVE_X86_SIMD */

#endif /* KB_CPU_GEMM_TRANSPOSE_H */
