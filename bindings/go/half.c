/* vendored by tools/vendor_c.py from kernels/cpu/half.c; do not edit */
/* half.c - float32 <-> bfloat16 / binary16 conversions (see half.h).
 *
 * Everything is done on the bit patterns with integer arithmetic, so the
 * result does not depend on the floating-point environment (rounding mode,
 * flush-to-zero) or on compiler contraction. */
#include "half.h"

#include <string.h>

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---- bfloat16: the upper 16 bits of a float32 ---- */

float kb_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  /* Exponent all ones with a non-zero fraction: NaN; set the quiet bit. */
  if ((u & 0x7fffffffu) > 0x7f800000u) u |= 0x00400000u;
  return bits_f32(u);
}

uint16_t kb_f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  /* NaN: truncating could clear every fraction bit (giving infinity), so the
   * quiet bit (bf16 bit 6) is forced on. */
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
  /* Round to nearest even on the 16 discarded bits: adding 0x7fff rounds up
   * exactly when they exceed one half; the kept lsb breaks the tie.  A carry
   * out of the fraction increments the exponent, which is also how the
   * largest finite values round to infinity.  No overflow of u: the largest
   * non-NaN input 0xff800000 plus 0x8000 stays below 2^32. */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* ---- IEEE binary16 ---- */

float kb_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, frac = h & 0x3ffu;
  if (exp == 0x1f) {
    /* Infinity, or NaN with its payload in float's top fraction bits, made quiet. */
    uint32_t u = sign | 0x7f800000u | (frac << 13);
    if (frac != 0) u |= 0x00400000u;
    return bits_f32(u);
  }
  if (exp == 0) {
    /* Zero or subnormal: frac * 2^-24, exact in float (frac < 2^10 and the
     * power of two is a normal float), so the product is not rounded. */
    float mag = (float)frac * 5.9604644775390625e-08f;
    return sign ? -mag : mag;
  }
  /* Normal: rebias the exponent from 15 to 127. */
  return bits_f32(sign | ((exp + 112u) << 23) | (frac << 13));
}

uint16_t kb_f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) {
    /* NaN: keep the top 9 payload bits below the quiet bit, force it on. */
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x1ffu));
  }
  /* 65520 = 0x1.ffep15 is halfway between the largest finite f16 (65504,
   * odd fraction 0x3ff) and 2^16; ties to even round it, and everything
   * above (infinity included), to infinity. */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (a >= 0x38800000u) {
    /* Normal in f16 (|f| >= 2^-14): rebias 127 -> 15 (subtract 112 << 23),
     * then round the 13 discarded fraction bits to nearest even.  A carry
     * into the exponent is correct (it gives the next binade). */
    a += 0xfffu + ((a >> 13) & 1u) - (112u << 23);
    return (uint16_t)(sign | (a >> 13));
  }
  /* Subnormal in f16: the result is round(|f| * 2^24) units of 2^-24.  With
   * the implicit bit made explicit, |f| = m * 2^(e - 150), so |f| * 2^24 =
   * m >> (126 - e).  A shift beyond 24 leaves less than a quarter unit
   * (m < 2^24), which rounds to zero; float subnormals (e == 0) too. */
  uint32_t e = a >> 23;
  if (e < 102u) return sign;
  uint32_t m = (a & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - e; /* 14 .. 24 */
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) q++;
  /* q == 0x400 is 2^-14, the smallest normal: the bit pattern is the same. */
  return (uint16_t)(sign | q);
}

/* ---- arrays ---- */

void kb_half_widen(int f16, const uint16_t *src, float *dst, int64_t n) {
  if (f16) {
    for (int64_t i = 0; i < n; i++) dst[i] = kb_f16_to_f32(src[i]);
  } else {
    for (int64_t i = 0; i < n; i++) dst[i] = kb_bf16_to_f32(src[i]);
  }
}

void kb_half_narrow(int f16, const float *src, uint16_t *dst, int64_t n) {
  if (f16) {
    for (int64_t i = 0; i < n; i++) dst[i] = kb_f32_to_f16(src[i]);
  } else {
    for (int64_t i = 0; i < n; i++) dst[i] = kb_f32_to_bf16(src[i]);
  }
}
