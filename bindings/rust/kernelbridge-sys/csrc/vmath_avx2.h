/* vendored by tools/vendor_c.py from kernels/cpu/vmath_avx2.h; do not edit */
/* vmath_avx2.h - the vector math layer (vmath.h) at the avx2 level: 8
 * floats per __m256.  Lane for lane the operations of vmath_scalar.h, so
 * the results are the same bits.  Internal to kernels/cpu; include it from
 * any file (the functions carry their own target attribute and may only be
 * called once the dispatch chose the avx2 level or above). */
#ifndef KB_CPU_VMATH_AVX2_H
#define KB_CPU_VMATH_AVX2_H

#include "simd.h"
#include "vmath.h"

#if KB_HAVE_X86_SIMD

/* q * 2^e rounded once (vmath.h, "scaling by 2^e"), e in [-240, 128]. */
KB_TARGET_AVX2 static inline __m256 kb_vm_ldexp_avx2(__m256 q, __m256i e) {
  __m256i b = _mm256_max_epi32(_mm256_min_epi32(e, _mm256_set1_epi32(KB_VM_LDEXP_BMAX)),
                               _mm256_set1_epi32(KB_VM_LDEXP_BMIN));
  __m256i c = _mm256_sub_epi32(e, b);
  __m256 two_c = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(c, _mm256_set1_epi32(127)), 23));
  __m256i b_normal = _mm256_slli_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(127)), 23);
  /* Counts of 32 or more give 0 in vpsllvd; those lanes take b_normal. */
  __m256i b_sub = _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_add_epi32(b, _mm256_set1_epi32(149)));
  __m256i normal = _mm256_cmpgt_epi32(b, _mm256_set1_epi32(-127));
  __m256 two_b = _mm256_castsi256_ps(_mm256_blendv_epi8(b_sub, b_normal, normal));
  return _mm256_mul_ps(_mm256_mul_ps(q, two_c), two_b);
}

/* The core of exp: see kb_vm_exp_core_scalar.  Lanes holding NaN give
 * meaningless (but harmless) outputs; callers replace them. */
KB_TARGET_AVX2 static inline void kb_vm_exp_core_avx2(__m256 x, __m256 *th, __m256 *tt, __m256i *e) {
  __m256 xc = _mm256_min_ps(_mm256_set1_ps(KB_VM_EXP_HI), _mm256_max_ps(_mm256_set1_ps(KB_VM_EXP_LO), x));
  __m256 shifter = _mm256_set1_ps(KB_VM_EXP_SHIFTER);
  __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(KB_VM_EXP_INV_STEP), shifter);
  __m256 kf = _mm256_sub_ps(t, shifter);
  __m256 r = _mm256_fmadd_ps(kf, _mm256_set1_ps(KB_VM_EXP_NSTEP_HI), xc);
  r = _mm256_fmadd_ps(kf, _mm256_set1_ps(KB_VM_EXP_NSTEP_LO), r);
  __m256i k = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(KB_VM_EXP_SHIFTER_BITS));
  /* vpermps reads the low 3 bits of each index: k mod 8. */
  __m256 hi = _mm256_permutevar8x32_ps(_mm256_loadu_ps(kb_vm_exp_tab_hi), k);
  __m256 lo = _mm256_permutevar8x32_ps(_mm256_loadu_ps(kb_vm_exp_tab_lo), k);
  __m256 q = _mm256_fmadd_ps(_mm256_set1_ps(KB_VM_EXP_C4), r, _mm256_set1_ps(KB_VM_EXP_C3));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(KB_VM_EXP_C2));
  __m256 s = _mm256_fmadd_ps(q, _mm256_mul_ps(r, r), r);
  *th = hi;
  *tt = _mm256_fmadd_ps(hi, s, lo);
  *e = _mm256_srai_epi32(k, 3);
}

/* e^x (vmath.h, "exp"). */
KB_TARGET_AVX2 static inline __m256 kb_exp_avx2(__m256 x) {
  __m256 th, tt;
  __m256i e;
  kb_vm_exp_core_avx2(x, &th, &tt, &e);
  __m256 y = kb_vm_ldexp_avx2(_mm256_add_ps(th, tt), e);
  __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  return _mm256_blendv_ps(y, _mm256_add_ps(x, x), nan);
}

#endif /* KB_HAVE_X86_SIMD */
#endif /* KB_CPU_VMATH_AVX2_H */
