/*
 * tolerance.h - how the runner compares a backend's output with the CPU
 * kernel's output on the same inputs: the GPU tolerances of docs/cuda.md
 * ("Numerics and GPU tolerances"), and the 16-bit storage formats of the
 * reduced-precision variants.
 *
 * docs/cuda.md defines its tolerances against the CPU kernel, not against
 * the float64 golden values, so the cuda backend runs every case on a CPU
 * context too and compares with that (docs/conformance.md, "Backends").
 */
#ifndef KB_CONFORMANCE_TOLERANCE_H
#define KB_CONFORMANCE_TOLERANCE_H

#include <stdint.h>

#include "runner.h"

enum tol_kind {
  TOL_BITWISE, /* identical bytes (also token ids and indices) */
  TOL_BITS_NAN, /* identical bytes, except that any NaN matches any NaN (a
                   GPU's arithmetic gives the canonical NaN where x86
                   passes an operand's on: docs/cuda.md) */
  TOL_ULP,     /* within `ulp` float32 ulps, or |diff| <= abs */
  TOL_BOUND    /* |diff| <= abs + rel * |cpu| + extra[i] */
};

struct tol {
  enum tol_kind kind;
  double ulp, abs, rel;
  const char *rule; /* the docs/cuda.md row, for messages */
};

/* The rule for float32 kernel `kernel` on the GPU (gemm: the cuBLASLt
 * bound, whose per-element part the caller passes as `extra`). */
struct tol gpu_tol_f32(const char *kernel);

/* The rule for kb_<kernel>_bf16 / _f16 on the GPU, against the CPU float32
 * kernel on the inputs rounded to the dtype. */
struct tol gpu_tol_lowp(const char *kernel, enum lowp dt);

/* Largest ratio of an element's difference to what the rule allows (0 when
 * identical, > 1 outside, infinity for a NaN or infinity mismatch); *first
 * is the first element above 1, or -1.  extra may be NULL. */
double tol_compare(const struct tol *t, const float *got, const float *cpu, const double *extra, int64_t n,
                   int64_t *first);

/* float32 -> bfloat16 / binary16, round to nearest even (overflow to
 * infinity, subnormals kept, NaN stays a quiet NaN); and back (exact). */
uint16_t to_half(enum lowp dt, float f);
float from_half(enum lowp dt, uint16_t h);

#endif /* KB_CONFORMANCE_TOLERANCE_H */
