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

/* The end of every exp core: see kb_vm_exp_finish_scalar. */
KB_TARGET_AVX2 static inline void kb_vm_exp_finish_avx2(__m256 t, __m256 r, __m256 *th, __m256 *tt, __m256i *e) {
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

/* The core of exp: see kb_vm_exp_core_scalar.  Lanes holding NaN give
 * meaningless (but harmless) outputs; callers replace them. */
KB_TARGET_AVX2 static inline void kb_vm_exp_core_avx2(__m256 x, __m256 *th, __m256 *tt, __m256i *e) {
  __m256 xc = _mm256_min_ps(_mm256_set1_ps(KB_VM_EXP_HI), _mm256_max_ps(_mm256_set1_ps(KB_VM_EXP_LO), x));
  __m256 shifter = _mm256_set1_ps(KB_VM_EXP_SHIFTER);
  __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(KB_VM_EXP_INV_STEP), shifter);
  __m256 kf = _mm256_sub_ps(t, shifter);
  __m256 r = _mm256_fmadd_ps(kf, _mm256_set1_ps(KB_VM_EXP_NSTEP_HI), xc);
  kb_vm_exp_finish_avx2(t, _mm256_fmadd_ps(kf, _mm256_set1_ps(KB_VM_EXP_NSTEP_LO), r), th, tt, e);
}

/* The core of e^-x for -x in [KB_VM_EXP_LO, KB_VM_EXP_HI]: see
 * kb_vm_exp_core_neg_scalar (no clamps; other lanes meaningless). */
KB_TARGET_AVX2 static inline void kb_vm_exp_core_neg_avx2(__m256 x, __m256 *th, __m256 *tt, __m256i *e) {
  __m256 shifter = _mm256_set1_ps(KB_VM_EXP_SHIFTER);
  __m256 t = _mm256_fnmadd_ps(x, _mm256_set1_ps(KB_VM_EXP_INV_STEP), shifter);
  __m256 kf = _mm256_sub_ps(t, shifter);
  __m256 r = _mm256_fmsub_ps(kf, _mm256_set1_ps(KB_VM_EXP_NSTEP_HI), x);
  kb_vm_exp_finish_avx2(t, _mm256_fmadd_ps(kf, _mm256_set1_ps(KB_VM_EXP_NSTEP_LO), r), th, tt, e);
}

/* The core for the argument xh + xl (vmath.h); NaN lanes give meaningless
 * outputs. */
KB_TARGET_AVX2 static inline void kb_vm_exp_core2_avx2(__m256 xh, __m256 xl, __m256 *th, __m256 *tt, __m256i *e) {
  __m256 xc = _mm256_min_ps(_mm256_set1_ps(KB_VM_EXP_HI), _mm256_max_ps(_mm256_set1_ps(KB_VM_EXP_LO), xh));
  __m256 lc = _mm256_min_ps(_mm256_set1_ps(KB_VM_EXP_XL_MAX), _mm256_max_ps(_mm256_set1_ps(-KB_VM_EXP_XL_MAX), xl));
  __m256 shifter = _mm256_set1_ps(KB_VM_EXP_SHIFTER);
  __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(KB_VM_EXP_INV_STEP), shifter);
  __m256 kf = _mm256_sub_ps(t, shifter);
  __m256 r = _mm256_fmadd_ps(kf, _mm256_set1_ps(KB_VM_EXP_NSTEP_HI), xc);
  kb_vm_exp_finish_avx2(t, _mm256_add_ps(_mm256_fmadd_ps(kf, _mm256_set1_ps(KB_VM_EXP_NSTEP_LO), r), lc), th, tt, e);
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

/* ---- double precision (vmath.h, "exp in double precision") ---- */

/* q * 2^k rounded once, k an integer-valued double in [-1100, 1024].  The
 * exponent fields come from the shifter: bits(k + 1.5 * 2^52) end in k. */
KB_TARGET_AVX2 static inline __m256d kb_vm_ldexp_f64_avx2(__m256d q, __m256d kf) {
  __m256d sh = _mm256_set1_pd(KB_VM_EXPD_SHIFTER);
  __m256d b = _mm256_max_pd(_mm256_min_pd(kf, _mm256_set1_pd(KB_VM_LDEXPD_BMAX)), _mm256_set1_pd(KB_VM_LDEXPD_BMIN));
  __m256d c = _mm256_sub_pd(kf, b);
  __m256i bias = _mm256_set1_epi64x(1023);
  __m256d two_c = _mm256_castsi256_pd(
      _mm256_slli_epi64(_mm256_add_epi64(_mm256_castpd_si256(_mm256_add_pd(c, sh)), bias), 52));
  __m256i bb = _mm256_castpd_si256(_mm256_add_pd(b, sh));
  __m256i b_normal = _mm256_slli_epi64(_mm256_add_epi64(bb, bias), 52);
  /* Counts of 64 or more give 0 in vpsllvq; those lanes take b_normal. */
  __m256i count = _mm256_add_epi64(_mm256_sub_epi64(bb, _mm256_castpd_si256(sh)), _mm256_set1_epi64x(1074));
  __m256i b_sub = _mm256_sllv_epi64(_mm256_set1_epi64x(1), count);
  __m256d normal = _mm256_cmp_pd(b, _mm256_set1_pd(-1022.5), _CMP_GT_OQ);
  __m256d two_b = _mm256_blendv_pd(_mm256_castsi256_pd(b_sub), _mm256_castsi256_pd(b_normal), normal);
  return _mm256_mul_pd(_mm256_mul_pd(q, two_c), two_b);
}

/* See kb_vm_expd_core_scalar; NaN lanes give meaningless outputs. */
KB_TARGET_AVX2 static inline void kb_vm_expd_core_avx2(__m256d x, int first, __m256d *s, __m256d *kf) {
  __m256d xc = _mm256_min_pd(_mm256_set1_pd(KB_VM_EXPD_HI), _mm256_max_pd(_mm256_set1_pd(KB_VM_EXPD_LO), x));
  __m256d sh = _mm256_set1_pd(KB_VM_EXPD_SHIFTER);
  __m256d t = _mm256_fmadd_pd(xc, _mm256_set1_pd(KB_VM_EXPD_INV_LN2), sh);
  __m256d k = _mm256_sub_pd(t, sh);
  __m256d r = _mm256_fmadd_pd(k, _mm256_set1_pd(KB_VM_EXPD_NLN2_HI), xc);
  r = _mm256_fmadd_pd(k, _mm256_set1_pd(KB_VM_EXPD_NLN2_LO), r);
  __m256d q = _mm256_set1_pd(kb_vm_expd_c[first]);
  for (int i = first + 1; i < KB_VM_EXPD_NC; i++) q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(kb_vm_expd_c[i]));
  *s = _mm256_fmadd_pd(q, _mm256_mul_pd(r, r), r);
  *kf = k;
}

/* e^x in double precision (vmath.h). */
KB_TARGET_AVX2 static inline __m256d kb_exp_f64_avx2(__m256d x) {
  __m256d s, kf;
  kb_vm_expd_core_avx2(x, 0, &s, &kf);
  __m256d y = kb_vm_ldexp_f64_avx2(_mm256_add_pd(_mm256_set1_pd(1.0), s), kf);
  return _mm256_blendv_pd(y, _mm256_add_pd(x, x), _mm256_cmp_pd(x, x, _CMP_UNORD_Q));
}

#endif /* KB_HAVE_X86_SIMD */
#endif /* KB_CPU_VMATH_AVX2_H */
