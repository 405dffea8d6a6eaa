/* vmath_avx512.h - the vector math layer (vmath.h) at the avx512 level: 16
 * floats per __m512, AVX-512F instructions only.  Lane for lane the
 * operations of vmath_scalar.h, so the results are the same bits.  Internal
 * to kernels/cpu; include it from any file (the functions carry their own
 * target attribute and may only be called once the dispatch chose the
 * avx512 level). */
#ifndef KB_CPU_VMATH_AVX512_H
#define KB_CPU_VMATH_AVX512_H

#include "simd.h"
#include "vmath.h"

#if KB_HAVE_X86_SIMD

/* q * 2^e rounded once: vscalefps is exactly that (vmath.h, "scaling by 2^e"). */
KB_TARGET_AVX512 static inline __m512 kb_vm_ldexp_avx512(__m512 q, __m512i e) {
  return _mm512_scalef_ps(q, _mm512_cvtepi32_ps(e));
}

/* The end of every exp core: see kb_vm_exp_finish_scalar. */
KB_TARGET_AVX512 static inline void kb_vm_exp_finish_avx512(__m512 t, __m512 r, __m512 *th, __m512 *tt, __m512i *e) {
  __m512i k = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(KB_VM_EXP_SHIFTER_BITS));
  /* vpermps reads the low 4 bits of each index; the table repeats every 8. */
  __m512 hi = _mm512_permutexvar_ps(k, _mm512_loadu_ps(kb_vm_exp_tab_hi));
  __m512 lo = _mm512_permutexvar_ps(k, _mm512_loadu_ps(kb_vm_exp_tab_lo));
  __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(KB_VM_EXP_C4), r, _mm512_set1_ps(KB_VM_EXP_C3));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(KB_VM_EXP_C2));
  __m512 s = _mm512_fmadd_ps(q, _mm512_mul_ps(r, r), r);
  *th = hi;
  *tt = _mm512_fmadd_ps(hi, s, lo);
  *e = _mm512_srai_epi32(k, 3);
}

/* The core of exp: see kb_vm_exp_core_scalar.  Lanes holding NaN give
 * meaningless (but harmless) outputs; callers replace them. */
KB_TARGET_AVX512 static inline void kb_vm_exp_core_avx512(__m512 x, __m512 *th, __m512 *tt, __m512i *e) {
  __m512 xc = _mm512_min_ps(_mm512_set1_ps(KB_VM_EXP_HI), _mm512_max_ps(_mm512_set1_ps(KB_VM_EXP_LO), x));
  __m512 shifter = _mm512_set1_ps(KB_VM_EXP_SHIFTER);
  __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(KB_VM_EXP_INV_STEP), shifter);
  __m512 kf = _mm512_sub_ps(t, shifter);
  __m512 r = _mm512_fmadd_ps(kf, _mm512_set1_ps(KB_VM_EXP_NSTEP_HI), xc);
  kb_vm_exp_finish_avx512(t, _mm512_fmadd_ps(kf, _mm512_set1_ps(KB_VM_EXP_NSTEP_LO), r), th, tt, e);
}

/* The core of e^-x for -x in [KB_VM_EXP_LO, KB_VM_EXP_HI]: see
 * kb_vm_exp_core_neg_scalar (no clamps; other lanes meaningless). */
KB_TARGET_AVX512 static inline void kb_vm_exp_core_neg_avx512(__m512 x, __m512 *th, __m512 *tt, __m512i *e) {
  __m512 shifter = _mm512_set1_ps(KB_VM_EXP_SHIFTER);
  __m512 t = _mm512_fnmadd_ps(x, _mm512_set1_ps(KB_VM_EXP_INV_STEP), shifter);
  __m512 kf = _mm512_sub_ps(t, shifter);
  __m512 r = _mm512_fmsub_ps(kf, _mm512_set1_ps(KB_VM_EXP_NSTEP_HI), x);
  kb_vm_exp_finish_avx512(t, _mm512_fmadd_ps(kf, _mm512_set1_ps(KB_VM_EXP_NSTEP_LO), r), th, tt, e);
}

/* The core for the argument xh + xl (vmath.h); NaN lanes give meaningless
 * outputs. */
KB_TARGET_AVX512 static inline void kb_vm_exp_core2_avx512(__m512 xh, __m512 xl, __m512 *th, __m512 *tt, __m512i *e) {
  __m512 xc = _mm512_min_ps(_mm512_set1_ps(KB_VM_EXP_HI), _mm512_max_ps(_mm512_set1_ps(KB_VM_EXP_LO), xh));
  __m512 lc = _mm512_min_ps(_mm512_set1_ps(KB_VM_EXP_XL_MAX), _mm512_max_ps(_mm512_set1_ps(-KB_VM_EXP_XL_MAX), xl));
  __m512 shifter = _mm512_set1_ps(KB_VM_EXP_SHIFTER);
  __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(KB_VM_EXP_INV_STEP), shifter);
  __m512 kf = _mm512_sub_ps(t, shifter);
  __m512 r = _mm512_fmadd_ps(kf, _mm512_set1_ps(KB_VM_EXP_NSTEP_HI), xc);
  kb_vm_exp_finish_avx512(t, _mm512_add_ps(_mm512_fmadd_ps(kf, _mm512_set1_ps(KB_VM_EXP_NSTEP_LO), r), lc), th, tt, e);
}

/* e^x (vmath.h, "exp"). */
KB_TARGET_AVX512 static inline __m512 kb_exp_avx512(__m512 x) {
  __m512 th, tt;
  __m512i e;
  kb_vm_exp_core_avx512(x, &th, &tt, &e);
  __m512 y = kb_vm_ldexp_avx512(_mm512_add_ps(th, tt), e);
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_add_ps(y, nan, x, x);
}

/* ---- double precision (vmath.h, "exp in double precision") ---- */

/* q * 2^k rounded once: vscalefpd (vmath.h, "scaling by 2^e"). */
KB_TARGET_AVX512 static inline __m512d kb_vm_ldexp_f64_avx512(__m512d q, __m512d kf) { return _mm512_scalef_pd(q, kf); }

/* See kb_vm_expd_core_scalar; NaN lanes give meaningless outputs. */
KB_TARGET_AVX512 static inline void kb_vm_expd_core_avx512(__m512d x, int first, __m512d *s, __m512d *kf) {
  __m512d xc = _mm512_min_pd(_mm512_set1_pd(KB_VM_EXPD_HI), _mm512_max_pd(_mm512_set1_pd(KB_VM_EXPD_LO), x));
  __m512d sh = _mm512_set1_pd(KB_VM_EXPD_SHIFTER);
  __m512d t = _mm512_fmadd_pd(xc, _mm512_set1_pd(KB_VM_EXPD_INV_LN2), sh);
  __m512d k = _mm512_sub_pd(t, sh);
  __m512d r = _mm512_fmadd_pd(k, _mm512_set1_pd(KB_VM_EXPD_NLN2_HI), xc);
  r = _mm512_fmadd_pd(k, _mm512_set1_pd(KB_VM_EXPD_NLN2_LO), r);
  __m512d q = _mm512_set1_pd(kb_vm_expd_c[first]);
  for (int i = first + 1; i < KB_VM_EXPD_NC; i++) q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(kb_vm_expd_c[i]));
  *s = _mm512_fmadd_pd(q, _mm512_mul_pd(r, r), r);
  *kf = k;
}

/* e^x in double precision (vmath.h). */
KB_TARGET_AVX512 static inline __m512d kb_exp_f64_avx512(__m512d x) {
  __m512d s, kf;
  kb_vm_expd_core_avx512(x, 0, &s, &kf);
  __m512d y = kb_vm_ldexp_f64_avx512(_mm512_add_pd(_mm512_set1_pd(1.0), s), kf);
  return _mm512_mask_add_pd(y, _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q), x, x);
}

#endif /* KB_HAVE_X86_SIMD */
#endif /* KB_CPU_VMATH_AVX512_H */
