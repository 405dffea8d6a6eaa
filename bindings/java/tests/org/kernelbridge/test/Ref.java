package org.kernelbridge.test;

/** Independent double-precision references, written from the header's formulas. */
final class Ref {
  private Ref() {}

  static double erf(double z) {
    if (z < 0) return -erf(-z);
    if (z > 2.5) return 1 - erfc(z);
    // Taylor series: 2/sqrt(pi) * sum (-1)^n z^(2n+1) / (n! (2n+1)).
    double sum = 0;
    double term = z;
    for (int n = 0; n < 200; n++) {
      double t = term / (2 * n + 1);
      sum += t;
      if (Math.abs(t) < 1e-18 * Math.abs(sum)) break;
      term *= -z * z / (n + 1);
    }
    return 2 / Math.sqrt(Math.PI) * sum;
  }

  /** erfc(z) = 1 - erf(z); continued fraction for z >= 2.5 keeps relative accuracy. */
  static double erfc(double z) {
    if (z < 2.5) return 1 - erf(z);
    double t = z;
    for (int k = 200; k >= 1; k--) t = z + (k / 2.0) / t;
    return Math.exp(-z * z) / Math.sqrt(Math.PI) / t;
  }

  static double silu(double x) {
    return x / (1 + Math.exp(-x));
  }

  /** Whether got is kb's silu of x: within its documented bound of the exact
   * value (docs/kernels.md: 1.59 ulp for normal results, 0.79 for subnormal). */
  static boolean siluWithinBound(float got, float x) {
    double want = silu(x);
    float rounded = (float) want;
    // docs/kernels.md: 1.59 ulp on normal results, 0.79 on subnormal ones.
    double ulps = Math.abs(rounded) < Float.MIN_NORMAL ? 0.8 : 1.59;
    return Math.abs(got - want) <= ulps * Math.ulp(rounded);
  }

  static double gelu(double x) {
    return 0.5 * x * erfc(-x / Math.sqrt(2));
  }

  static double geluTanh(double x) {
    double u = Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x);
    // 1 + tanh(u) cancels for u << 0; 1 + tanh(u) == 2 / (1 + exp(-2u)) exactly.
    double onePlusTanh = u >= 0 ? 1 + Math.tanh(u) : 2 / (1 + Math.exp(-2 * u));
    return 0.5 * x * onePlusTanh;
  }

  static double[] softmaxRow(float[] x, int off, int n) {
    double m = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < n; i++) m = Math.max(m, x[off + i]);
    double s = 0;
    for (int i = 0; i < n; i++) s += Math.exp(x[off + i] - m);
    double[] out = new double[n];
    for (int i = 0; i < n; i++) out[i] = Math.exp(x[off + i] - m) / s;
    return out;
  }

  static double logSumExp(float[] x, int off, int n) {
    double m = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < n; i++) m = Math.max(m, x[off + i]);
    double s = 0;
    for (int i = 0; i < n; i++) s += Math.exp(x[off + i] - m);
    return m + Math.log(s);
  }

  // ---- Philox4x32-10 and the sampling rule of docs/kernels.md ----

  static long[] philox(long[] counter, long[] key) {
    final long mask = 0xffffffffL;
    long c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    long k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
      if (r > 0) {
        k0 = (k0 + 0x9E3779B9L) & mask;
        k1 = (k1 + 0xBB67AE85L) & mask;
      }
      long p0 = 0xD2511F53L * c0; // < 2^64 as unsigned; use unsigned shifts
      long p1 = 0xCD9E8D57L * c2;
      long hi0 = p0 >>> 32, lo0 = p0 & mask;
      long hi1 = p1 >>> 32, lo1 = p1 & mask;
      long n0 = (hi1 ^ c1 ^ k0) & mask;
      long n2 = (hi0 ^ c3 ^ k1) & mask;
      c0 = n0;
      c1 = lo1;
      c2 = n2;
      c3 = lo0;
    }
    return new long[] {c0, c1, c2, c3};
  }

  static double uniform(long seed, long row) {
    long[] w = philox(new long[] {row & 0xffffffffL, row >>> 32, 0, 0}, new long[] {seed & 0xffffffffL, seed >>> 32});
    return (w[0] >>> 8) * 0x1p-24;
  }

  /** kind: 0 sample, 1 top-k, 2 top-p. */
  static int sampleRow(float[] x, int off, int cols, double u, int kind, int k, double p, double temperature) {
    Integer[] cand = new Integer[cols];
    for (int i = 0; i < cols; i++) cand[i] = i;
    if (kind != 0) {
      // decreasing logit, ties by increasing index (-0.0 == 0.0)
      java.util.Arrays.sort(cand, (a, b) -> {
        double xa = x[off + a], xb = x[off + b];
        if (xa > xb) return -1;
        if (xa < xb) return 1;
        return Integer.compare(a, b);
      });
    }
    int n = kind == 1 ? k : cols;
    double m = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < cols; i++) m = Math.max(m, x[off + i]);
    double[] s = new double[n];
    double acc = 0;
    for (int i = 0; i < n; i++) {
      double xi = x[off + cand[i]];
      acc += Math.exp(((double) xi - m) / temperature);
      s[i] = acc;
    }
    int len = n;
    if (kind == 2) {
      double all = 0;
      for (int i = 0; i < cols; i++) all += Math.exp(((double) x[off + cand[i]] - m) / temperature);
      for (len = 1; len <= n; len++) if (s[len - 1] >= p * all) break;
    }
    double t = u * s[len - 1];
    for (int i = 0; i < len; i++) if (s[i] > t) return cand[i];
    return cand[len - 1];
  }
}
