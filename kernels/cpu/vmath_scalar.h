/* vmath_scalar.h - the vector math layer (vmath.h) at the scalar level: one
 * float at a time, plain C.  The reference of the vector levels: every
 * function performs exactly the operations of its vmath_avx2.h and
 * vmath_avx512.h twins, lane by lane (fmaf where they fuse), so all three
 * return the same bits.  Internal to kernels/cpu; usable from any file. */
#ifndef KB_CPU_VMATH_SCALAR_H
#define KB_CPU_VMATH_SCALAR_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vmath.h"

static inline uint32_t kb_vm_bits_scalar(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float kb_vm_float_scalar(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* q * 2^e rounded once (vmath.h, "scaling by 2^e").  e in [-240, 128]. */
static inline float kb_vm_ldexp_scalar(float q, int32_t e) {
  int32_t b = e < KB_VM_LDEXP_BMIN ? KB_VM_LDEXP_BMIN : (e > KB_VM_LDEXP_BMAX ? KB_VM_LDEXP_BMAX : e);
  int32_t c = e - b;
  float two_c = kb_vm_float_scalar((uint32_t)(c + 127) << 23);
  /* 2^b for b < -126 is the subnormal with the single bit b + 149. */
  float two_b = b >= -126 ? kb_vm_float_scalar((uint32_t)(b + 127) << 23) : kb_vm_float_scalar(1u << (b + 149));
  return (q * two_c) * two_b;
}

/*
 * The core of exp (vmath.h): for x not NaN, e^x = (th + tt) * 2^e with the
 * pair th + tt unrounded (th = T_hi[k mod 8] in [1, 2), |tt| < 0.09) known
 * to about 2^-28 relative.  Kernels that need more than a rounded exp (the
 * softmax sums, silu) use the pair directly.
 */
/* The end of every exp core: from t (the shifted k of the argument) and
 * the reduced argument r, the table pair, the polynomial and e.  k is t's
 * bit pattern minus the shifter's; t lies in [2^23, 2^24) for every
 * argument the cores define (|k| < 2^11), and the unsigned arithmetic keeps
 * the conversions and floor(k / 8) defined for the meaningless lanes of
 * kb_vm_exp_core_neg_scalar too. */
static inline void kb_vm_exp_finish_scalar(float t, float r, float *th, float *tt, int32_t *e) {
  int32_t k = (int32_t)(kb_vm_bits_scalar(t) - (uint32_t)KB_VM_EXP_SHIFTER_BITS);
  int j = (int)(k & 7);
  float q = fmaf(KB_VM_EXP_C4, r, KB_VM_EXP_C3);
  q = fmaf(q, r, KB_VM_EXP_C2);
  float s = fmaf(q, r * r, r);
  *th = kb_vm_exp_tab_hi[j];
  *tt = fmaf(kb_vm_exp_tab_hi[j], s, kb_vm_exp_tab_lo[j]);
  /* floor(k / 8): an arithmetic shift, written without shifting a negative
   * number (implementation-defined in C). */
  *e = k >= 0 ? k >> 3 : -(int32_t)(((uint32_t)(-(int64_t)k) + 7u) >> 3);
}

static inline void kb_vm_exp_core_scalar(float x, float *th, float *tt, int32_t *e) {
  /* The same clamps as the vector levels' max(LO, x) and min(HI, x). */
  float xc = KB_VM_EXP_LO > x ? KB_VM_EXP_LO : x;
  xc = KB_VM_EXP_HI < xc ? KB_VM_EXP_HI : xc;
  float t = fmaf(xc, KB_VM_EXP_INV_STEP, KB_VM_EXP_SHIFTER);
  float kf = t - KB_VM_EXP_SHIFTER;
  float r = fmaf(kf, KB_VM_EXP_NSTEP_HI, xc);
  kb_vm_exp_finish_scalar(t, fmaf(kf, KB_VM_EXP_NSTEP_LO, r), th, tt, e);
}

/* The core of e^-x for -x in [KB_VM_EXP_LO, KB_VM_EXP_HI] (vmath.h): the
 * operations of kb_vm_exp_core_scalar(-x) without its clamps, which do
 * nothing there, and with the negation inside the two fused steps (exact),
 * so the same bits.  Outside that range the outputs are meaningless. */
static inline void kb_vm_exp_core_neg_scalar(float x, float *th, float *tt, int32_t *e) {
  float t = fmaf(-x, KB_VM_EXP_INV_STEP, KB_VM_EXP_SHIFTER);
  float kf = t - KB_VM_EXP_SHIFTER;
  float r = fmaf(kf, KB_VM_EXP_NSTEP_HI, -x);
  kb_vm_exp_finish_scalar(t, fmaf(kf, KB_VM_EXP_NSTEP_LO, r), th, tt, e);
}

/* The core for the argument xh + xl (vmath.h), x not NaN. */
static inline void kb_vm_exp_core2_scalar(float xh, float xl, float *th, float *tt, int32_t *e) {
  float xc = KB_VM_EXP_LO > xh ? KB_VM_EXP_LO : xh;
  xc = KB_VM_EXP_HI < xc ? KB_VM_EXP_HI : xc;
  float lc = -KB_VM_EXP_XL_MAX > xl ? -KB_VM_EXP_XL_MAX : xl;
  lc = KB_VM_EXP_XL_MAX < lc ? KB_VM_EXP_XL_MAX : lc;
  float t = fmaf(xc, KB_VM_EXP_INV_STEP, KB_VM_EXP_SHIFTER);
  float kf = t - KB_VM_EXP_SHIFTER;
  float r = fmaf(kf, KB_VM_EXP_NSTEP_HI, xc);
  kb_vm_exp_finish_scalar(t, fmaf(kf, KB_VM_EXP_NSTEP_LO, r) + lc, th, tt, e);
}

/* e^x (vmath.h, "exp"). */
static inline float kb_exp_scalar(float x) {
  if (x != x) return x + x; /* NaN: made quiet, as the vector levels' x + x */
  float th, tt;
  int32_t e;
  kb_vm_exp_core_scalar(x, &th, &tt, &e);
  return kb_vm_ldexp_scalar(th + tt, e);
}

/* ---- double precision (vmath.h, "exp in double precision") ---- */

static inline double kb_vm_double_scalar(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* q * 2^k rounded once, k an integer-valued double in [-1100, 1024]. */
static inline double kb_vm_ldexp_f64_scalar(double q, double kf) {
  double b = kf < KB_VM_LDEXPD_BMIN ? KB_VM_LDEXPD_BMIN : (kf > KB_VM_LDEXPD_BMAX ? KB_VM_LDEXPD_BMAX : kf);
  int64_t c = (int64_t)(kf - b), bi = (int64_t)b;
  double two_c = kb_vm_double_scalar((uint64_t)(c + 1023) << 52);
  double two_b = bi >= -1022 ? kb_vm_double_scalar((uint64_t)(bi + 1023) << 52)
                             : kb_vm_double_scalar((uint64_t)1 << (bi + 1074));
  return (q * two_c) * two_b;
}

/* e^x = (1 + s) * 2^kf: the reduced polynomial s = e^r - 1 (accurate also
 * when small, for expm1) and the integer kf.  The polynomial starts at
 * coefficient `first` of kb_vm_expd_c (0: degree 13, full double accuracy;
 * 3: degree 10, truncation below 2^-42, for float results).  NaN is treated as 0: the
 * callers replace NaN lanes, and no conversion may see a NaN. */
static inline void kb_vm_expd_core_scalar(double x, int first, double *s, double *kf) {
  if (x != x) x = 0.0;
  double xc = KB_VM_EXPD_LO > x ? KB_VM_EXPD_LO : x;
  xc = KB_VM_EXPD_HI < xc ? KB_VM_EXPD_HI : xc;
  double t = fma(xc, KB_VM_EXPD_INV_LN2, KB_VM_EXPD_SHIFTER);
  double k = t - KB_VM_EXPD_SHIFTER;
  double r = fma(k, KB_VM_EXPD_NLN2_HI, xc);
  r = fma(k, KB_VM_EXPD_NLN2_LO, r);
  double q = kb_vm_expd_c[first];
  for (int i = first + 1; i < KB_VM_EXPD_NC; i++) q = fma(q, r, kb_vm_expd_c[i]);
  *s = fma(q, r * r, r);
  *kf = k;
}

/* e^x in double precision (vmath.h). */
static inline double kb_exp_f64_scalar(double x) {
  if (x != x) return x + x;
  double s, kf;
  kb_vm_expd_core_scalar(x, 0, &s, &kf);
  return kb_vm_ldexp_f64_scalar(1.0 + s, kf);
}

#endif /* KB_CPU_VMATH_SCALAR_H */
