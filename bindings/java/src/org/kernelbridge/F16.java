package org.kernelbridge;

/**
 * IEEE 754 binary16 ("half") values as Java {@code short}s, the form the
 * {@code *F16} kernels take: the bit pattern (1 sign bit, 5 exponent bits, 10
 * fraction bits; largest finite 65504, smallest subnormal 2^-24).  Java 17 has
 * no conversion of its own ({@code Float.floatToFloat16} arrived in Java 20).
 * Conversions round like the library: to nearest, ties to even, subnormals
 * included; values from 65520 up become infinity; NaN stays NaN (made quiet,
 * keeping the top payload bits).
 */
public final class F16 {
  private F16() {}

  /** Positive zero. */
  public static final short ZERO = 0;
  /** 1.0. */
  public static final short ONE = 0x3c00;

  /** The binary16 nearest to f (ties to even). */
  public static short fromFloat(float f) {
    int u = Float.floatToRawIntBits(f);
    int sign = (u >>> 16) & 0x8000;
    int a = u & 0x7fffffff;
    if (a > 0x7f800000) return (short) (sign | 0x7e00 | ((a >>> 13) & 0x1ff));
    // 65520 = 0x1.ffep15 lies halfway between 65504 (odd fraction) and 2^16: it and
    // everything above round to infinity.
    if (a >= 0x477ff000) return (short) (sign | 0x7c00);
    if (a >= 0x38800000) {
      // Normal (|f| >= 2^-14): rebias the exponent 127 -> 15 and round the 13 dropped
      // fraction bits to nearest even; a carry into the exponent is the next binade.
      a += 0xfff + ((a >>> 13) & 1) - (112 << 23);
      return (short) (sign | (a >>> 13));
    }
    // Subnormal: round(|f| * 2^24) units of 2^-24, from the significand m (implicit bit
    // included), |f| = m * 2^(e - 150).
    int e = a >>> 23;
    if (e < 102) return (short) sign; // below a quarter unit (and float subnormals): zero
    int m = (a & 0x7fffff) | 0x800000;
    int shift = 126 - e; // 14 .. 24
    int q = m >>> shift;
    int rem = m & ((1 << shift) - 1);
    int half = 1 << (shift - 1);
    if (rem > half || (rem == half && (q & 1) != 0)) q++;
    return (short) (sign | q); // q == 0x400 is the smallest normal, same bits
  }

  /** The float32 value of a binary16 (exact); a quiet NaN for NaN. */
  public static float toFloat(short bits) {
    int h = bits & 0xffff;
    int sign = (h & 0x8000) << 16;
    int exp = (h >>> 10) & 0x1f;
    int frac = h & 0x3ff;
    if (exp == 0x1f) {
      int u = sign | 0x7f800000 | (frac << 13);
      if (frac != 0) u |= 0x00400000;
      return Float.intBitsToFloat(u);
    }
    if (exp == 0) {
      float mag = frac * 0x1p-24f; // exact
      return sign != 0 ? -mag : mag;
    }
    return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (frac << 13));
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
