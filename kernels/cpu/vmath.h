/* vmath.h - the vector math layer of the CPU kernels: what every level
 * shares (constants, tables) and the contract of each function.  Internal
 * to kernels/cpu.
 *
 * The primitives exist once per instruction-set level, at that level's
 * natural width, as inline functions any kernel file may include:
 *   vmath_scalar.h   float / double, plain C with fmaf / fma
 *   vmath_avx2.h     __m256 / __m256d  (KB_TARGET_AVX2)
 *   vmath_avx512.h   __m512 / __m512d  (KB_TARGET_AVX512)
 *     kb_exp_<isa>(x)            e^x for floats (below)
 *     kb_vm_exp_core_<isa>       its unrounded mantissa pair and exponent
 *     kb_vm_exp_core2_<isa>      the same for an argument xh + xl
 *     kb_vm_ldexp_<isa>(q, e)    q * 2^e rounded once
 *     kb_exp_f64_<isa>(x)        e^x for doubles; kb_vm_expd_core_<isa>
 * The three perform the same IEEE operations in the same order on each
 * lane (fused multiply-adds where the scalar code calls fmaf, the same
 * table lookups, the same clamps), so they return THE SAME BITS for every
 * input, NaN payloads and signed zeros included.  Nothing depends on the
 * lane position, so results are independent of the thread count and of how
 * an array is cut into vectors.  The only instruction that differs between
 * levels is the final scaling by a power of two: AVX-512 uses vscalefps, the
 * other levels two multiplications arranged so that only the last one
 * rounds; both give the correctly rounded q * 2^e, so the bits agree (see
 * kb_vm_ldexp_* and the exhaustive tests).
 *
 * The composite functions (log, tanh, erf, and the activations silu, gelu,
 * gelu_tanh) are written once over the 16-lane vocabulary of the vector
 * kernels (vec_body.h, on these primitives and vmath_tables.h), so they too
 * give the same bits on every level; their contracts are in
 * docs/kernels.md ("Vector math and reductions").
 *
 * Accuracy is stated in ulps of the exact result (the float32 spacing at the
 * exact value, 2^-149 below 2^-126) and was measured over every float32
 * input (all 2^32 bit patterns) against the C library's double-precision
 * function, whose error (below one double ulp) is 2^-29 float ulps: far
 * below the printed digits.  `testutil/vmath_exhaustive.c` does this
 * (tools/vmath_exhaustive.sh); `vmath_test.c` repeats it on 2^24 inputs
 * spread over every exponent in `bazel test`; docs/kernels.md records the
 * latest exhaustive run.
 *
 * ---- exp ----
 * kb_exp_<isa>(x) = e^x.
 *   Error: at most 0.61 ulp where the result is a normal float, at most
 *   0.79 ulp where it is subnormal (the mantissa is rounded once before the
 *   scaling into the subnormal range).
 *   Domain: x >= 88.72284 (including +inf) gives +inf; x <= -103.973
 *   (including -inf) gives +0; results below 2^-126 are subnormal (no
 *   flush to zero); exp(+-0) = 1 exactly; NaN gives the same NaN made quiet
 *   (sign and payload kept).
 *   Method: k = round(x * 8 / ln 2) (the 1.5 * 2^23 shifter), reduced
 *   argument r = x - k * ln2/8 in two fused steps (the first is exact), so
 *   |r| <= ln2/16; e^r - 1 = r + r^2 (1/2 + r/6 + r^2/24); the result is
 *   T[k mod 8] * e^r * 2^floor(k/8) with T[j] = 2^(j/8) held as a pair of
 *   floats (T_hi + T_lo, 48 bits), evaluated as
 *   T_hi + fma(T_hi, e^r - 1, T_lo): one rounding of a value known to
 *   about 2^-28 relative, then an exact (or, for subnormal results, once
 *   rounded) scaling.
 */
#ifndef KB_CPU_VMATH_H
#define KB_CPU_VMATH_H

#include <stdint.h>

/* ---- exp ---- */

/* Inputs are clamped to [KB_VM_EXP_LO, KB_VM_EXP_HI] before the reduction:
 * e^89 overflows and e^-160 * 2^9 (the largest factor a kernel multiplies
 * the mantissa by before scaling, see silu) still rounds to zero, so the
 * clamp changes no result, and it keeps k within the shifter's range. */
#define KB_VM_EXP_LO (-160.0f)
#define KB_VM_EXP_HI 89.0f
/* 8 / ln 2, and the shifter 1.5 * 2^23: fma(x, 8/ln2, shifter) leaves
 * round(x * 8/ln2) in the low mantissa bits. */
#define KB_VM_EXP_INV_STEP 0x1.715476p+3f
#define KB_VM_EXP_SHIFTER 0x1.8p23f
#define KB_VM_EXP_SHIFTER_BITS 0x4B400000
/* -ln2/8 = KB_VM_EXP_NSTEP_HI + KB_VM_EXP_NSTEP_LO (+ 2^-57); the high
 * part has trailing zero bits, so fma(k, NSTEP_HI, x) is exact. */
#define KB_VM_EXP_NSTEP_HI (-0x1.62e43p-4f)
#define KB_VM_EXP_NSTEP_LO 0x1.05c61p-32f
/* Taylor coefficients 1/2, 1/6, 1/24 (float-rounded); with |r| <= ln2/16
 * the truncation error is below 2^-29. */
#define KB_VM_EXP_C2 0.5f
#define KB_VM_EXP_C3 0x1.555556p-3f
#define KB_VM_EXP_C4 0x1.555556p-5f
/* 1/120, for the degree-5 polynomial of the row kernels' exponentials,
 * whose reduced argument reaches ln2/8 (vec_body.h, exp_rel). */
#define KB_VM_EXP_C5 0x1.111112p-7f

/* 2^(j/8) = hi[j] + lo[j] for j = 0..7, repeated so that a 16-lane
 * permutation (which reads the low 4 index bits) sees the same table as an
 * 8-lane one (low 3 bits). */
static const float kb_vm_exp_tab_hi[16] = {
    0x1p+0f,         0x1.172b84p+0f, 0x1.306fe0p+0f, 0x1.4bfdaep+0f, 0x1.6a09e6p+0f, 0x1.8ace54p+0f,
    0x1.ae89fap+0f,  0x1.d5818ep+0f, 0x1p+0f,        0x1.172b84p+0f, 0x1.306fe0p+0f, 0x1.4bfdaep+0f,
    0x1.6a09e6p+0f,  0x1.8ace54p+0f, 0x1.ae89fap+0f, 0x1.d5818ep+0f,
};
static const float kb_vm_exp_tab_lo[16] = {
    0.0f,           -0x1.c15742p-27f, 0x1.4636e2p-25f,  -0x1.593abcp-25f, 0x1.9fcef4p-26f, 0x1.15506ep-27f,
    -0x1.a94b14p-26f, -0x1.822dbcp-27f, 0.0f,           -0x1.c15742p-27f, 0x1.4636e2p-25f, -0x1.593abcp-25f,
    0x1.9fcef4p-26f, 0x1.15506ep-27f, -0x1.a94b14p-26f, -0x1.822dbcp-27f,
};

/* The core of exp also takes its argument as an unevaluated sum xh + xl
 * (kb_vm_exp_core2_*): the row kernels pass x - max exactly that way (a
 * float subtraction would lose up to |x - max| * 2^-24 of the argument,
 * tens of ulps of e^(x - max)).  xl is added to the reduced argument after
 * the exact step and is clamped to +-KB_VM_EXP_XL_MAX, which is far above
 * half an ulp of any xh that does not underflow the result. */
#define KB_VM_EXP_XL_MAX 0x1p-10f

/* ---- scaling by 2^e ----
 * kb_vm_ldexp_<isa>(q, e) = q * 2^e rounded once, for e in [-240, 128]:
 * vscalefps on AVX-512; elsewhere (q * 2^c) * 2^b with b = clamp(e, -149,
 * 127) (2^b may be subnormal) and c = e - b in [-91, 1].  The first product
 * is exact unless it underflows, which needs c < 0, so b = -149 and the
 * final value is below 2^-275: zero either way.  So both are the correctly
 * rounded product, hence equal.  The same for doubles (kb_vm_ldexp_f64_*)
 * with b = clamp(e, -1074, 1023), e in [-1100, 1024]. */
#define KB_VM_LDEXP_BMIN (-149)
#define KB_VM_LDEXP_BMAX 127
#define KB_VM_LDEXPD_BMIN (-1074)
#define KB_VM_LDEXPD_BMAX 1023

/* ---- exp in double precision ----
 * kb_exp_f64_<isa>(x) = e^x for doubles, within 2 double ulps (sampled, see
 * vmath_test.c): k = round(x / ln 2), r = x - k ln 2 (two fused steps, the
 * first exact), e^r = 1 + (r + r^2 (1/2! + r/3! + ... + r^11/13!)) (Taylor:
 * truncation below 2^-57 for |r| <= ln2/2), times 2^k.  Inputs are clamped
 * to [-746, 710] (beyond, the result is 0 or inf anyway); NaN gives the
 * same NaN made quiet.  The kernels that evaluate a float function in
 * double precision (log, tanh, erf) and the sampling
 * weights use it. */
#define KB_VM_EXPD_LO (-746.0)
#define KB_VM_EXPD_HI 710.0
#define KB_VM_EXPD_INV_LN2 0x1.71547652b82fep+0
#define KB_VM_EXPD_SHIFTER 0x1.8p52
#define KB_VM_EXPD_NLN2_HI (-0x1.62e42fefa39efp-1)
#define KB_VM_EXPD_NLN2_LO (-0x1.abc9e3b39803fp-56)
/* 1/n! for n = 13 down to 2: the polynomial is evaluated by Horner's rule
 * q = c[0]; q = fma(q, r, c[i]) for i = 1..11; e^r - 1 = fma(q, r*r, r). */
#define KB_VM_EXPD_NC 12
static const double kb_vm_expd_c[KB_VM_EXPD_NC] = {
    0x1.6124613a86d09p-33, 0x1.1eed8eff8d898p-29, 0x1.ae64567f544e4p-26, 0x1.27e4fb7789f5cp-22,
    0x1.71de3a556c734p-19, 0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-13, 0x1.6c16c16c16c17p-10,
    0x1.1111111111111p-7,  0x1.5555555555555p-5,  0x1.5555555555555p-3,  0x1p-1,
};

#endif /* KB_CPU_VMATH_H */
