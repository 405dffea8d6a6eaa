/* attention_avx512.c - the avx512 level of the attention pieces
 * (attention_kernels.h): attention_scalar.c's operations, 16 keys at a time. */
#include <string.h>

#include "attention_kernels.h"
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

static inline __mmask16 first_lanes(int64_t count) {
  return count >= 16 ? (__mmask16)0xffff : count <= 0 ? (__mmask16)0 : (__mmask16)((1u << count) - 1u);
}

KB_TARGET_AVX512 static void softmax_block(const float *s, int64_t len, float m_old, float *p, float *m_new,
                                           float *sum) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 vmax = ninf;
  for (int64_t j = 0; j < len; j += 16) {
    __m512 v = _mm512_mask_loadu_ps(ninf, first_lanes(len - j), s + j);
    vmax = _mm512_max_ps(v, vmax); /* v > vmax ? v : vmax, as the scalar loop */
  }
  float mx = _mm512_reduce_max_ps(vmax);
  float m = m_old > mx ? m_old : mx;
  __m512 vm = _mm512_set1_ps(m), part = _mm512_setzero_ps();
  for (int64_t j = 0; j < len; j += 16) {
    __mmask16 mask = first_lanes(len - j);
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

const struct kb_attn_ops kb__attn_ops_avx512 = {softmax_block};

#endif /* KB_HAVE_X86_SIMD */
