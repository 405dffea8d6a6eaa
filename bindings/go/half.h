/* vendored by tools/vendor_c.py from kernels/cpu/half.h; do not edit */
/* half.h - conversions between float32 and the 16-bit storage formats of the
 * reduced-precision kernels: bfloat16 (1 sign, 8 exponent, 7 fraction bits,
 * float32's upper half) and IEEE 754 binary16 (1 sign, 5 exponent, 10
 * fraction bits).  Internal to kernels/cpu.
 *
 * Widening is exact (every bf16 and f16 value is a float32).  Narrowing
 * rounds to nearest, ties to even, including into the subnormal range;
 * values beyond the largest finite value round to infinity as IEEE
 * prescribes (f16: |x| >= 65520, bf16: |x| >= 0x1.ffp127).  NaN stays NaN of
 * the same sign and is made quiet in both directions, keeping the top payload
 * bits that fit: a signalling NaN must not come out of a kernel, and a NaN
 * whose only payload bits are the ones cut off must not turn into infinity. */
#ifndef KB_CPU_HALF_H
#define KB_CPU_HALF_H

#include <stdint.h>

float kb_bf16_to_f32(uint16_t h);
uint16_t kb_f32_to_bf16(float f);
float kb_f16_to_f32(uint16_t h);
uint16_t kb_f32_to_f16(float f);

/* dst[i] = widened src[i] for i < n; `f16` selects binary16, else bfloat16. */
void kb_half_widen(int f16, const uint16_t *src, float *dst, int64_t n);
/* dst[i] = src[i] rounded to the 16-bit format, for i < n. */
void kb_half_narrow(int f16, const float *src, uint16_t *dst, int64_t n);

#endif /* KB_CPU_HALF_H */
