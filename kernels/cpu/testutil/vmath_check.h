/*
 * vmath_check.h - how the math layer (kernels/cpu/vmath.h) is measured, shared
 * by vmath_test.c (2^24 sampled inputs, in bazel test) and
 * testutil/vmath_exhaustive.c (all 2^32 inputs).
 *
 * The reference is the C library's double-precision function of the
 * (exactly widened) float input.  Its error is below one double ulp, i.e.
 * about 2^-29 float ulps, so it measures a float result's error to far
 * better than the digits reported; it also decides the correctly rounded
 * float except when the exact value lies within 2^-29 ulps of a rounding
 * boundary, which is why the error is measured against the unrounded double
 * instead of comparing with a rounded reference.
 *
 * Error of y against the reference w, in ulps of w: |y - w| / ulp(w), with
 * ulp(w) = 2^(exponent(w) - 23) and never below 2^-149 (the conformance
 * runner's metric).  NaN must match NaN; where w rounds to +-inf, y must be
 * that infinity, and an infinite y with finite w is an infinite error.
 */
#ifndef KB_VMATH_CHECK_H
#define KB_VMATH_CHECK_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu/vec_kernels.h"

/* Subnormal result: where the float spacing is fixed at 2^-149. */
#define VMC_SUBNORMAL_BELOW 0x1p-126

static inline double vmc_ulp32(double w) {
  int e;
  frexp(w, &e); /* w = f * 2^e with f in [0.5, 1) */
  e -= 1;
  if (e < -126) e = -126;
  return ldexp(1.0, e - 23);
}

static inline double vmc_error(float y, double w) {
  float wf = (float)w;
  if (isnan(w) || isnan(y)) return isnan(w) && isnan(y) ? 0.0 : INFINITY;
  if (isinf(wf) || isinf(y)) return y == wf ? 0.0 : INFINITY;
  if ((double)y == w) return 0.0;
  return fabs((double)y - w) / vmc_ulp32(w);
}

static inline float vmc_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint32_t vmc_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* The float64 references (double in, double out). */
static inline double vmc_ref_exp(double x) { return exp(x); }
static inline double vmc_ref_log(double x) { return log(x); }
static inline double vmc_ref_tanh(double x) { return tanh(x); }
static inline double vmc_ref_erf(double x) { return erf(x); }
/* The activations as docs/kernels.md defines them (x * sigmoid(x) etc.),
 * evaluated the way tests/conformance/reference.py does. */
static inline double vmc_ref_silu(double x) { return x / (1.0 + exp(-x)); }
static inline double vmc_ref_gelu(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static inline double vmc_ref_gelu_tanh(double x) {
  double u = sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
  return x / (1.0 + exp(-2.0 * u));
}

/* Each function of the layer with its reference and its documented bounds
 * (vmath.h) for normal and for subnormal exact results; bound_rel > 0: also
 * a bound on the relative error |y - w| / |w| of normal results, in units
 * of 2^-23 (silu's, which kb_glu's bound multiplies: docs/kernels.md). */
struct vmc_case {
  enum kb_vm_fn fn;
  const char *name;
  double (*ref)(double);
  double bound_normal, bound_subnormal, bound_rel;
};

static const struct vmc_case vmc_cases[] = {
    {KB_VM_EXP, "exp", vmc_ref_exp, 0.61, 0.79, 0},
    {KB_VM_LOG, "log", vmc_ref_log, 0.501, 0.501, 0},
    {KB_VM_TANH, "tanh", vmc_ref_tanh, 0.501, 0.501, 0},
    {KB_VM_ERF, "erf", vmc_ref_erf, 0.502, 0.501, 0},
    {KB_VM_SILU, "silu", vmc_ref_silu, 1.6, 0.80, 1.12},
    {KB_VM_GELU, "gelu", vmc_ref_gelu, 0.9, 0.79, 0.7},
    {KB_VM_GELU_TANH, "gelu_tanh", vmc_ref_gelu_tanh, 1.6, 0.79, 1.12},
};

#define VMC_NCASES ((int)(sizeof vmc_cases / sizeof vmc_cases[0]))

/* Worst errors seen, split by whether the exact result is a normal float. */
struct vmc_stats {
  double max_normal, max_subnormal, max_rel; /* max_rel: normal results, units of 2^-23 */
  float worst_normal, worst_subnormal, worst_rel; /* inputs where they occurred */
  uint64_t count;
};

static inline void vmc_add(struct vmc_stats *s, float x, float y, double w) {
  double err = vmc_error(y, w);
  s->count++;
  if (fabs(w) < VMC_SUBNORMAL_BELOW && w != 0.0) {
    if (!(err <= s->max_subnormal)) {
      s->max_subnormal = err;
      s->worst_subnormal = x;
    }
  } else {
    if (!(err <= s->max_normal)) {
      s->max_normal = err;
      s->worst_normal = x;
    }
    double rel = err == 0.0 || isinf(err) ? err : fabs((double)y - w) / fabs(w) * 0x1p23;
    if (!(rel <= s->max_rel)) {
      s->max_rel = rel;
      s->worst_rel = x;
    }
  }
}

static inline void vmc_merge(struct vmc_stats *into, const struct vmc_stats *from) {
  if (!(from->max_normal <= into->max_normal)) {
    into->max_normal = from->max_normal;
    into->worst_normal = from->worst_normal;
  }
  if (!(from->max_subnormal <= into->max_subnormal)) {
    into->max_subnormal = from->max_subnormal;
    into->worst_subnormal = from->worst_subnormal;
  }
  if (!(from->max_rel <= into->max_rel)) {
    into->max_rel = from->max_rel;
    into->worst_rel = from->worst_rel;
  }
  into->count += from->count;
}

#endif /* KB_VMATH_CHECK_H */
