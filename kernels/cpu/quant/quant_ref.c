/* quant_ref.c - GGML's Q8_0 / Q4_0 block formats, scalar (see quant.h).
 *
 * Every float operation is the one ggml's reference performs, in the same
 * order and precision (float, never double; no contraction into fma: the
 * library is built with -ffp-contract=off), which is what makes the bytes
 * identical: the scale, its reciprocal and each product round exactly as
 * there.  The scale is stored little-endian byte by byte, so the layout does
 * not depend on the host's byte order or on alignment. */
#include "quant.h"

#include <float.h>
#include <math.h>

#include "../half.h"

/* ---- the reference's float -> int8_t casts ---- */

/* The low byte of the reference's `(int8_t)v` as compiled for x86-64, where
 * the conversion is a 32-bit cvttss2si: truncation toward zero, and
 * INT32_MIN (low byte 0) for NaN and for values beyond int32.  In C such a
 * cast is undefined outside [-128, 127]; for rows kb__quant_check_row
 * accepts it never leaves that range except where 1 / d overflows to
 * infinity (|d| < 2^-128: the products become +-inf, or NaN for zeros), and
 * there the stored scale is zero anyway.  Emulating x86 (the platform
 * ggml's and the gguf package's outputs come from) keeps those blocks
 * deterministic and equal to them. */
static uint8_t quant_i8_byte(float v) {
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
  return (uint8_t)(uint32_t)(int32_t)v;
}

/* One Q4_0 code from t = x * id: ggml's `MIN(15, (int8_t)(t + 8.5f))` stored
 * into a uint8_t.  The addition is rounded in float before the truncation,
 * so a t just below k + 0.5 can round up (0.49999997f + 8.5f == 9.0f); the
 * code reproduces that rather than rounding t itself.  For valid rows
 * t + 8.5f lies in [0, 17) and this is min(15, floor(t + 8.5f)). */
static unsigned quant_q4_code(float t) {
  int c = quant_i8_byte(t + 8.5f);
  if (c > 127) c -= 256; /* the byte as the reference's int8_t */
  if (c > 15) c = 15;
  return (unsigned)c & 0xffu; /* a negative c (rejected rows only) wraps as in the reference */
}

/* ---- scales ---- */

static void quant_put_scale(unsigned char *p, float d) {
  uint16_t h = kb_f32_to_f16(d); /* round to nearest even, like ggml's GGML_FP32_TO_FP16 */
  p[0] = (unsigned char)(h & 0xffu);
  p[1] = (unsigned char)(h >> 8);
}

static float quant_get_scale(const unsigned char *p) {
  return kb_f16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
}

/* ---- Q8_0 ---- */

void kb__quantize_row_q8_0(const float *x, void *y, int64_t n) {
  unsigned char *out = y;
  for (int64_t b = 0; b < n / KB_QK; b++, x += KB_QK, out += KB_Q8_0_BLOCK_BYTES) {
    float amax = 0.0f;
    for (int j = 0; j < KB_QK; j++) {
      float a = fabsf(x[j]);
      /* ggml's MAX(amax, a): a NaN replaces amax and the next element
       * replaces the NaN.  Same result as any max on valid rows. */
      amax = amax > a ? amax : a;
    }
    float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f; /* 0 for an all-zero block: every q is 0 */
    quant_put_scale(out, d);
    /* roundf, not rintf: ggml rounds halves away from zero. */
    for (int j = 0; j < KB_QK; j++) out[2 + j] = quant_i8_byte(roundf(x[j] * id));
  }
}

void kb__dequantize_row_q8_0(const void *x, float *y, int64_t n) {
  const unsigned char *in = x;
  for (int64_t b = 0; b < n / KB_QK; b++, in += KB_Q8_0_BLOCK_BYTES, y += KB_QK) {
    float d = quant_get_scale(in);
    for (int j = 0; j < KB_QK; j++) {
      int q = in[2 + j] < 128 ? in[2 + j] : in[2 + j] - 256; /* the byte as int8_t */
      y[j] = (float)q * d;
    }
  }
}

/* ---- Q4_0 ---- */

void kb__quantize_row_q4_0(const float *x, void *y, int64_t n) {
  unsigned char *out = y;
  for (int64_t b = 0; b < n / KB_QK; b++, x += KB_QK, out += KB_Q4_0_BLOCK_BYTES) {
    /* Signed value of the first element of largest magnitude.  The search
     * starts from +0.0 and needs a strictly larger magnitude, exactly as
     * ggml's: an all-zero block keeps max = +0.0 even when its elements are
     * -0.0 (the gguf package's numpy code differs there, see README.md). */
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < KB_QK; j++) {
      if (amax < fabsf(x[j])) {
        amax = fabsf(x[j]);
        max = x[j];
      }
    }
    /* Negative d maps max to -8, the end of [-8, 7] that has no positive
     * partner, so the largest element keeps full resolution. */
    float d = max / -8.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    quant_put_scale(out, d);
    for (int j = 0; j < KB_QK / 2; j++) {
      unsigned lo = quant_q4_code(x[j] * id), hi = quant_q4_code(x[j + KB_QK / 2] * id);
      out[2 + j] = (unsigned char)((lo | hi << 4) & 0xffu);
    }
  }
}

void kb__dequantize_row_q4_0(const void *x, float *y, int64_t n) {
  const unsigned char *in = x;
  for (int64_t b = 0; b < n / KB_QK; b++, in += KB_Q4_0_BLOCK_BYTES, y += KB_QK) {
    float d = quant_get_scale(in);
    for (int j = 0; j < KB_QK / 2; j++) {
      y[j] = (float)((in[2 + j] & 0x0f) - 8) * d;
      y[j + KB_QK / 2] = (float)((in[2 + j] >> 4) - 8) * d;
    }
  }
}

/* ---- validation ---- */

int64_t kb__quant_check_row(int type, const float *x, int64_t n) {
  if (type != KB_QTYPE_Q4_0 && type != KB_QTYPE_Q8_0) return 0;
  /* |d| is amax / 127 or amax / 8, computed as the quantizers compute it
   * (dividing by -8 only flips the sign), so "rounds to infinity" is decided
   * on the very value that would be stored. */
  float div = type == KB_QTYPE_Q8_0 ? 127.0f : 8.0f;
  for (int64_t b = 0; b < n / KB_QK; b++) {
    const float *blk = x + b * KB_QK;
    float amax = 0.0f;
    int imax = 0;
    for (int j = 0; j < KB_QK; j++) {
      float a = fabsf(blk[j]);
      if (!(a <= FLT_MAX)) return b * KB_QK + j; /* NaN or infinity */
      if (a > amax) {
        amax = a;
        imax = j;
      }
    }
    if ((kb_f32_to_f16(amax / div) & 0x7fffu) == 0x7c00u) return b * KB_QK + imax;
  }
  return -1;
}
