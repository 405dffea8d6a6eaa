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
static inline void kb_vm_exp_core_scalar(float x, float *th, float *tt, int32_t *e) {
  /* The same clamps as the vector levels' max(LO, x) and min(HI, x). */
  float xc = KB_VM_EXP_LO > x ? KB_VM_EXP_LO : x;
  xc = KB_VM_EXP_HI < xc ? KB_VM_EXP_HI : xc;
  float t = fmaf(xc, KB_VM_EXP_INV_STEP, KB_VM_EXP_SHIFTER);
  float kf = t - KB_VM_EXP_SHIFTER;
  float r = fmaf(kf, KB_VM_EXP_NSTEP_HI, xc);
  r = fmaf(kf, KB_VM_EXP_NSTEP_LO, r);
  /* t lies in [2^23, 2^24), where the bit pattern counts units: k is the
   * pattern minus the shifter's (no overflow: |k| < 2^11). */
  int32_t k = (int32_t)kb_vm_bits_scalar(t) - KB_VM_EXP_SHIFTER_BITS;
  int j = (int)(k & 7);
  float q = fmaf(KB_VM_EXP_C4, r, KB_VM_EXP_C3);
  q = fmaf(q, r, KB_VM_EXP_C2);
  float s = fmaf(q, r * r, r);
  *th = kb_vm_exp_tab_hi[j];
  *tt = fmaf(kb_vm_exp_tab_hi[j], s, kb_vm_exp_tab_lo[j]);
  /* floor(k / 8): an arithmetic shift, written without shifting a negative
   * number (implementation-defined in C). */
  *e = k >= 0 ? k >> 3 : -((-k + 7) >> 3);
}

/* e^x (vmath.h, "exp"). */
static inline float kb_exp_scalar(float x) {
  if (x != x) return x + x; /* NaN: made quiet, as the vector levels' x + x */
  float th, tt;
  int32_t e;
  kb_vm_exp_core_scalar(x, &th, &tt, &e);
  return kb_vm_ldexp_scalar(th + tt, e);
}

#endif /* KB_CPU_VMATH_SCALAR_H */
