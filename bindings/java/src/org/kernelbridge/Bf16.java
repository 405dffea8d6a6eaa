package org.kernelbridge;

/**
 * bfloat16 values as Java {@code short}s, the form the {@code *Bf16} kernels take:
 * the bit pattern of a bfloat16 (1 sign bit, 8 exponent bits, 7 fraction bits),
 * which is the upper 16 bits of the float32 with the same sign and exponent.
 * Conversions round like the library: to nearest, ties to even; NaN stays NaN
 * (made quiet); values beyond the largest finite bfloat16 become infinity.
 */
public final class Bf16 {
  private Bf16() {}

  /** Positive zero. */
  public static final short ZERO = 0;
  /** 1.0. */
  public static final short ONE = 0x3f80;

  /** The bfloat16 nearest to f (ties to even); a quiet NaN for NaN. */
  public static short fromFloat(float f) {
    int u = Float.floatToRawIntBits(f);
    if ((u & 0x7fffffff) > 0x7f800000) return (short) ((u >>> 16) | 0x0040);
    // Round the 16 discarded bits to nearest even: adding 0x7fff carries into the kept bits
    // exactly when they exceed one half, the kept lsb breaks the tie; a carry out of the
    // fraction increments the exponent (up to infinity).  int arithmetic wraps like uint32_t.
    u += 0x7fff + ((u >>> 16) & 1);
    return (short) (u >>> 16);
  }

  /** The float32 value of a bfloat16 (exact); a quiet NaN for NaN. */
  public static float toFloat(short bits) {
    int u = (bits & 0xffff) << 16;
    if ((u & 0x7fffffff) > 0x7f800000) u |= 0x00400000;
    return Float.intBitsToFloat(u);
  }

  /** {@link #fromFloat} of every element. */
  public static short[] fromFloats(float[] values) {
    short[] out = new short[values.length];
    for (int i = 0; i < values.length; i++) out[i] = fromFloat(values[i]);
    return out;
  }

  /** {@link #toFloat} of every element. */
  public static float[] toFloats(short[] bits) {
    float[] out = new float[bits.length];
    for (int i = 0; i < bits.length; i++) out[i] = toFloat(bits[i]);
    return out;
  }
}
