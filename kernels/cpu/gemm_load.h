/* gemm_load.h - a vector of elements stored as float32, float16 or
 * bfloat16 (KB_GEMM_*), widened exactly to float32 as it is loaded: 8 lanes
 * on avx2, 16 on avx512.  Shared by the small-m products (gemm_small_<level>.c,
 * B's rows) and the blocked tiles (gemm_<level>.c, bfloat16 weights read in
 * place in tail()).  Exact conversions, no arithmetic: every level's bits. */
#ifndef KB_CPU_GEMM_LOAD_H
#define KB_CPU_GEMM_LOAD_H

#include "gemm_kernels.h"
#include "simd.h"

#if KB_HAVE_X86_SIMD

/* 8 elements from src (storage type BDT), widened to float32. */
KB_TARGET_AVX2 __attribute__((always_inline)) static inline __m256 kb_gemm_load8(const int BDT, const void *src) {
  if (BDT == KB_GEMM_F32) return _mm256_loadu_ps(src);
  __m128i h = _mm_loadu_si128((const __m128i *)src);
  if (BDT == KB_GEMM_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The first w < 8 elements from src, the rest zero (no read past them). */
KB_TARGET_AVX2 static inline __m256 kb_gemm_load8_part(const int BDT, const void *src, int64_t w) {
  if (BDT == KB_GEMM_F32) return _mm256_maskload_ps(src, kb_first8_lanes(w));
  uint16_t t[8] = {0};
  for (int64_t q = 0; q < w; q++) t[q] = ((const uint16_t *)src)[q];
  return kb_gemm_load8(BDT, t);
}

/* 16 elements from src (storage type BDT), widened to float32. */
KB_TARGET_AVX512 __attribute__((always_inline)) static inline __m512 kb_gemm_load16(const int BDT, const void *src) {
  if (BDT == KB_GEMM_F32) return _mm512_loadu_ps(src);
  __m256i h = _mm256_loadu_si256((const __m256i *)src);
  if (BDT == KB_GEMM_F16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The first w < 16 elements from src, the rest zero (no read past them). */
KB_TARGET_AVX512 static inline __m512 kb_gemm_load16_part(const int BDT, const void *src, int64_t w) {
  if (BDT == KB_GEMM_F32) return _mm512_maskz_loadu_ps(kb_first16_lanes(w), src);
  uint16_t t[16] = {0};
  for (int64_t q = 0; q < w; q++) t[q] = ((const uint16_t *)src)[q];
  return kb_gemm_load16(BDT, t);
}

#endif /* KB_HAVE_X86_SIMD */

#endif /* KB_CPU_GEMM_LOAD_H */
