package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;
import static org.kernelbridge.test.Harness.equal;
import static org.kernelbridge.test.Harness.expect;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ShortBuffer;
import java.util.Arrays;
import java.util.Random;
import org.kernelbridge.Backend;
import org.kernelbridge.Bf16;
import org.kernelbridge.Context;
import org.kernelbridge.DeviceBuffer;
import org.kernelbridge.F16;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Status;

/**
 * The bf16 and f16 kernels: on the CPU each is the float32 kernel on the inputs
 * widened to float32, rounded once to the dtype (nearest, ties to even).  The
 * expected bits come from the float32 kernel and a rounding written here
 * independently of the library and of Bf16/F16: the nearest of all
 * representable values, found by binary search over the (monotonic) bit
 * patterns, compared in double precision.
 */
public final class HalfTest {
  private HalfTest() {}

  // --- an independent reference rounding ---------------------------------------

  /** The dtypes: 16-bit patterns of non-negative finite values are monotonic in value. */
  enum Dt {
    BF16(0x7f80, 7, 127),
    F16(0x7c00, 10, 15);

    /** Bit pattern of +infinity; one past the largest finite value. */
    final int inf;
    /** value[i] for 0 <= i <= inf; value[inf] is the next value after the largest finite one. */
    final double[] value;

    final int fracBits;
    final int bias;

    Dt(int inf, int fracBits, int bias) {
      this.inf = inf;
      this.fracBits = fracBits;
      this.bias = bias;
      value = new double[inf + 1];
      for (int i = 0; i < inf; i++) value[i] = decode(i);
      // The value the next pattern would have with an unbounded exponent: the rounding
      // boundary to infinity lies halfway between it and the largest finite value.
      value[inf] = 2 * value[inf - 1] - value[inf - 2];
    }

    /** The value of a non-negative finite pattern, from the format's definition. */
    double decode(int bits) {
      int e = bits >> fracBits;
      int f = bits & ((1 << fracBits) - 1);
      if (e == 0) return Math.scalb((double) f, 1 - bias - fracBits);
      return Math.scalb((double) ((1 << fracBits) + f), e - bias - fracBits);
    }

    /** Widening: the exact value of any pattern (NaN for NaNs). */
    float widen(short s) {
      int bits = s & 0xffff;
      int mag = bits & 0x7fff;
      double v;
      if (mag > inf) v = Double.NaN;
      else if (mag == inf) v = Double.POSITIVE_INFINITY;
      else v = value[mag];
      return (float) ((bits & 0x8000) != 0 ? -v : v);
    }

    /** x rounded to nearest, ties to the even pattern; NaN for NaN (any NaN pattern). */
    short round(double x) {
      if (Double.isNaN(x)) return (short) (inf | 0x40); // a NaN; compared as "is NaN"
      int sign = (Double.doubleToRawLongBits(x) < 0) ? 0x8000 : 0;
      double a = Math.abs(x);
      int r;
      if (a >= value[inf]) {
        r = inf;
      } else {
        // largest i with value[i] <= a
        int lo = 0, hi = inf;
        while (hi - lo > 1) {
          int mid = (lo + hi) >>> 1;
          if (value[mid] <= a) lo = mid;
          else hi = mid;
        }
        double dlo = a - value[lo], dhi = value[hi] - a;
        if (dlo < dhi) r = lo;
        else if (dhi < dlo) r = hi;
        else r = (lo & 1) == 0 ? lo : hi;
      }
      return (short) (sign | r);
    }

    boolean isNaN(short s) {
      return (s & 0x7fff) > inf;
    }
  }

  static short[] round(Dt dt, float[] x) {
    short[] out = new short[x.length];
    for (int i = 0; i < x.length; i++) out[i] = dt.round(x[i]);
    return out;
  }

  static float[] widen(Dt dt, short[] s) {
    if (s == null) return null;
    float[] out = new float[s.length];
    for (int i = 0; i < s.length; i++) out[i] = dt.widen(s[i]);
    return out;
  }

  /** Bit equality, any NaN matching any NaN. */
  static void sameBits(Dt dt, short[] want, short[] got, String what) {
    check(want.length == got.length, what + ": length " + got.length + " != " + want.length);
    for (int i = 0; i < want.length; i++) {
      if (dt.isNaN(want[i]) && dt.isNaN(got[i])) continue;
      if (want[i] != got[i]) {
        throw new AssertionError(what + "[" + i + "]: got 0x" + Integer.toHexString(got[i] & 0xffff) + " ("
            + dt.widen(got[i]) + "), want 0x" + Integer.toHexString(want[i] & 0xffff) + " (" + dt.widen(want[i]) + ")");
      }
    }
  }

  static final Random RNG = new Random(4242);

  /** Random values of the dtype (as patterns): normal-ish with a few edge values. */
  static short[] randomHalf(Dt dt, int n, double scale) {
    short[] out = new short[n];
    for (int i = 0; i < n; i++) out[i] = dt.round(RNG.nextGaussian() * scale);
    if (n > 6) {
      out[0] = 0;
      out[1] = (short) 0x8000; // -0
      out[2] = dt.round(1.0);
      out[3] = 1; // the smallest subnormal
      out[4] = (short) (dt.inf - 1); // the largest finite
      out[5] = (short) (0x8000 | (dt.inf - 1));
    }
    return out;
  }

  // --- the binding's conversion helpers against the reference -------------------

  public static void testReferenceRoundingSelfCheck() {
    // Known values, so that the reference itself is trustworthy.
    equal(0x3c00, F16.ONE & 0xffff, "f16 one");
    equal((short) 0x3c00, Dt.F16.round(1.0), "f16 1.0");
    equal((short) 0x7bff, Dt.F16.round(65504.0), "f16 max");
    equal((short) 0x7bff, Dt.F16.round(65519.99), "f16 below the tie to infinity");
    equal((short) 0x7c00, Dt.F16.round(65520.0), "f16 tie to infinity (even)");
    equal((short) 0x0001, Dt.F16.round(Math.scalb(1.0, -24)), "f16 smallest subnormal");
    equal((short) 0x0000, Dt.F16.round(Math.scalb(1.0, -25)), "f16 tie to zero (even)");
    equal((short) 0x0002, Dt.F16.round(Math.scalb(3.0, -25)), "f16 1.5 units: tie to even 2");
    equal((short) 0x3f80, Dt.BF16.round(1.0), "bf16 1.0");
    equal((short) 0x3f80, Dt.BF16.round(1.00390625), "bf16 1 + 2^-8: tie to even");
    equal((short) 0x3f82, Dt.BF16.round(1.01171875), "bf16 1 + 3 * 2^-8: tie to even (up)");
    equal((short) 0x7f80, Dt.BF16.round(Float.MAX_VALUE), "bf16 FLT_MAX rounds to infinity");
    equal((short) 0xff80, Dt.BF16.round(Double.NEGATIVE_INFINITY), "bf16 -inf");
  }

  public static void testConversionHelpersMatchReference() {
    for (Dt dt : Dt.values()) {
      // Every pattern widens exactly (and narrows back to itself unless NaN).
      for (int b = 0; b < 0x10000; b++) {
        short s = (short) b;
        float want = dt.widen(s);
        float got = dt == Dt.BF16 ? Bf16.toFloat(s) : F16.toFloat(s);
        if (Float.isNaN(want)) {
          check(Float.isNaN(got), dt + " toFloat NaN " + b);
          short back = dt == Dt.BF16 ? Bf16.fromFloat(got) : F16.fromFloat(got);
          check(dt.isNaN(back), dt + " NaN stays NaN " + b);
          continue;
        }
        check(Float.floatToRawIntBits(want) == Float.floatToRawIntBits(got), dt + " toFloat " + b + ": " + got + " vs " + want);
        short back = dt == Dt.BF16 ? Bf16.fromFloat(got) : F16.fromFloat(got);
        check(back == s, dt + " round trip " + b);
      }
      // Halfway points and their neighbours (ties to even), then random floats.
      for (int b = 0; b < dt.inf; b++) {
        double mid = (dt.value[b] + dt.value[b + 1]) / 2;
        for (double x : new double[] {mid, Math.nextDown((float) mid), Math.nextUp((float) mid), -mid}) {
          float f = (float) x;
          short want = dt.round(f);
          short got = dt == Dt.BF16 ? Bf16.fromFloat(f) : F16.fromFloat(f);
          check(want == got, dt + " fromFloat(" + f + "): got 0x" + Integer.toHexString(got & 0xffff) + ", want 0x"
              + Integer.toHexString(want & 0xffff));
        }
      }
      for (int i = 0; i < 200_000; i++) {
        float f = Float.intBitsToFloat(RNG.nextInt());
        if (Float.isNaN(f)) continue;
        short want = dt.round(f);
        short got = dt == Dt.BF16 ? Bf16.fromFloat(f) : F16.fromFloat(f);
        check(want == got, dt + " fromFloat(" + f + ")");
      }
      check(Arrays.equals(dt == Dt.BF16 ? Bf16.fromFloats(new float[] {1f, -2f}) : F16.fromFloats(new float[] {1f, -2f}),
          new short[] {dt.round(1), dt.round(-2)}), "fromFloats");
    }
  }

  // --- kernels ------------------------------------------------------------------

  /** Every bf16/f16 kernel of one element size, for both dtypes. */
  interface HalfOp {
    /** Runs the dtype's kernel on the given inputs, filling outputs. */
    void run(Dt dt, short[][] t);
  }

  interface FloatOp {
    void run(float[][] t);
  }

  /**
   * Runs the half kernel on patterns t, and the float32 kernel on t widened;
   * compares the half outputs (indices outs) with the rounded float32 outputs.
   */
  static void compare(String name, Dt dt, short[][] t, int[] outs, HalfOp half, FloatOp f32) {
    float[][] wide = new float[t.length][];
    for (int i = 0; i < t.length; i++) wide[i] = widen(dt, t[i]);
    short[][] ht = new short[t.length][];
    for (int i = 0; i < t.length; i++) ht[i] = t[i] == null ? null : t[i].clone();
    half.run(dt, ht);
    f32.run(wide);
    for (int o : outs) sameBits(dt, round(dt, wide[o]), ht[o], name + " " + dt);
  }

  static void unary(String name, HalfOp half, FloatOp f32) {
    for (Dt dt : Dt.values()) {
      for (int n : new int[] {0, 1, 17, 3000, 9000}) {
        compare(name + " n=" + n, dt, new short[][] {randomHalf(dt, n, 3), new short[n]}, new int[] {1}, half, f32);
      }
    }
  }

  static boolean bf(Dt dt) {
    return dt == Dt.BF16;
  }

  public static void testElementwise() {
    unary("silu", (dt, t) -> {
      if (bf(dt)) KernelBridge.siluBf16(t[0], t[1]);
      else KernelBridge.siluF16(t[0], t[1]);
    }, t -> KernelBridge.silu(t[0], t[1]));
    unary("gelu", (dt, t) -> {
      if (bf(dt)) KernelBridge.geluBf16(t[0], t[1]);
      else KernelBridge.geluF16(t[0], t[1]);
    }, t -> KernelBridge.gelu(t[0], t[1]));
    unary("gelu_tanh", (dt, t) -> {
      if (bf(dt)) KernelBridge.geluTanhBf16(t[0], t[1]);
      else KernelBridge.geluTanhF16(t[0], t[1]);
    }, t -> KernelBridge.geluTanh(t[0], t[1]));
    unary("scale", (dt, t) -> {
      if (bf(dt)) KernelBridge.scaleBf16(1000.5f, t[0], t[1]);
      else KernelBridge.scaleF16(1000.5f, t[0], t[1]); // overflows f16 for |x| > 65.5: infinity
    }, t -> KernelBridge.scale(1000.5f, t[0], t[1]));
    for (Dt dt : Dt.values()) {
      for (int n : new int[] {0, 5, 2000, 7000}) {
        short[] a = randomHalf(dt, n, 100), b = randomHalf(dt, n, 100);
        compare("add", dt, new short[][] {a, b, new short[n]}, new int[] {2}, (d, t) -> {
          if (bf(d)) KernelBridge.addBf16(t[0], t[1], t[2]);
          else KernelBridge.addF16(t[0], t[1], t[2]);
        }, t -> KernelBridge.add(t[0], t[1], t[2]));
        compare("mul", dt, new short[][] {a, b, new short[n]}, new int[] {2}, (d, t) -> {
          if (bf(d)) KernelBridge.mulBf16(t[0], t[1], t[2]);
          else KernelBridge.mulF16(t[0], t[1], t[2]);
        }, t -> KernelBridge.mul(t[0], t[1], t[2]));
      }
      // in place: y == a (declared alias)
      short[] a = randomHalf(dt, 100, 2), b = randomHalf(dt, 100, 2), y = new short[100];
      short[] c = a.clone();
      if (bf(dt)) {
        KernelBridge.addBf16(a, b, y);
        KernelBridge.addBf16(c, b, c);
      } else {
        KernelBridge.addF16(a, b, y);
        KernelBridge.addF16(c, b, c);
      }
      check(Arrays.equals(y, c), "in place add " + dt);
    }
  }

  public static void testRowwise() {
    for (Dt dt : Dt.values()) {
      for (int[] rc : new int[][] {{0, 4}, {1, 1}, {3, 7}, {40, 130}}) {
        final int rows = rc[0], cols = rc[1];
        short[] x = randomHalf(dt, rows * cols, 2), w = randomHalf(dt, cols, 1), bias = randomHalf(dt, cols, 1);
        compare("add_bias", dt, new short[][] {x, bias, new short[rows * cols]}, new int[] {2}, (d, t) -> {
          if (bf(d)) KernelBridge.addBiasBf16(rows, t[0], t[1], t[2]);
          else KernelBridge.addBiasF16(rows, t[0], t[1], t[2]);
        }, t -> KernelBridge.addBias(rows, t[0], t[1], t[2]));
        compare("softmax", dt, new short[][] {x, new short[rows * cols]}, new int[] {1}, (d, t) -> {
          if (bf(d)) KernelBridge.softmaxBf16(rows, cols, t[0], t[1]);
          else KernelBridge.softmaxF16(rows, cols, t[0], t[1]);
        }, t -> KernelBridge.softmax(rows, cols, t[0], t[1]));
        compare("log_softmax", dt, new short[][] {x, new short[rows * cols]}, new int[] {1}, (d, t) -> {
          if (bf(d)) KernelBridge.logSoftmaxBf16(rows, cols, t[0], t[1]);
          else KernelBridge.logSoftmaxF16(rows, cols, t[0], t[1]);
        }, t -> KernelBridge.logSoftmax(rows, cols, t[0], t[1]));
        compare("rmsnorm", dt, new short[][] {x, w, new short[rows * cols]}, new int[] {2}, (d, t) -> {
          if (bf(d)) KernelBridge.rmsnormBf16(rows, t[0], t[1], 1e-5f, t[2]);
          else KernelBridge.rmsnormF16(rows, t[0], t[1], 1e-5f, t[2]);
        }, t -> KernelBridge.rmsnorm(rows, t[0], t[1], 1e-5f, t[2]));
        compare("layernorm", dt, new short[][] {x, w, bias, new short[rows * cols]}, new int[] {3}, (d, t) -> {
          if (bf(d)) KernelBridge.layernormBf16(rows, cols, t[0], t[1], t[2], 1e-5f, t[3]);
          else KernelBridge.layernormF16(rows, cols, t[0], t[1], t[2], 1e-5f, t[3]);
        }, t -> KernelBridge.layernorm(rows, cols, t[0], t[1], t[2], 1e-5f, t[3]));
        compare("layernorm without affine", dt, new short[][] {x, null, null, new short[rows * cols]}, new int[] {3},
            (d, t) -> {
              if (bf(d)) KernelBridge.layernormBf16(rows, cols, t[0], null, null, 1e-5f, t[3]);
              else KernelBridge.layernormF16(rows, cols, t[0], null, null, 1e-5f, t[3]);
            }, t -> KernelBridge.layernorm(rows, cols, t[0], null, null, 1e-5f, t[3]));
      }
    }
  }

  public static void testGemm() {
    for (Dt dt : Dt.values()) {
      for (int[] c : new int[][] {{2, 3, 4, 0, 0}, {7, 5, 9, 1, 0}, {16, 33, 20, 0, 1}, {64, 70, 65, 1, 1}}) {
        final int m = c[0], n = c[1], k = c[2];
        final boolean ta = c[3] == 1, tb = c[4] == 1;
        final int lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 3;
        short[] a = randomHalf(dt, ((ta ? k : m) - 1) * lda + (ta ? m : k), 1);
        short[] b = randomHalf(dt, ((tb ? n : k) - 1) * ldb + (tb ? k : n), 1);
        short[] cc = randomHalf(dt, (m - 1) * ldc + n, 1);
        compare("gemm " + Arrays.toString(c), dt, new short[][] {a, b, cc}, new int[] {2}, (d, t) -> {
          if (bf(d)) KernelBridge.gemmBf16(ta, tb, m, n, k, 0.5f, t[0], lda, t[1], ldb, -1.5f, t[2], ldc);
          else KernelBridge.gemmF16(ta, tb, m, n, k, 0.5f, t[0], lda, t[1], ldb, -1.5f, t[2], ldc);
        }, t -> KernelBridge.gemm(ta, tb, m, n, k, 0.5f, t[0], lda, t[1], ldb, -1.5f, t[2], ldc));
      }
    }
  }

  public static void testAttention() {
    for (Dt dt : Dt.values()) {
      for (boolean causal : new boolean[] {false, true}) {
        final int batch = 2, heads = 4, kvHeads = 2, seqQ = 5, seqKv = 7, hd = 8;
        short[] q = randomHalf(dt, batch * heads * seqQ * hd, 1);
        short[] k = randomHalf(dt, batch * kvHeads * seqKv * hd, 1);
        short[] v = randomHalf(dt, batch * kvHeads * seqKv * hd, 1);
        compare("attention causal=" + causal, dt, new short[][] {q, k, v, new short[q.length]}, new int[] {3},
            (d, t) -> {
              if (bf(d)) KernelBridge.attentionBf16(batch, heads, kvHeads, seqQ, seqKv, hd, t[0], t[1], t[2], causal, 0f, t[3]);
              else KernelBridge.attentionF16(batch, heads, kvHeads, seqQ, seqKv, hd, t[0], t[1], t[2], causal, 0f, t[3]);
            }, t -> KernelBridge.attention(batch, heads, kvHeads, seqQ, seqKv, hd, t[0], t[1], t[2], causal, 0f, t[3]));
      }
    }
  }

  static ShortBuffer directShorts(short[] v) {
    ShortBuffer b = ByteBuffer.allocateDirect(2 * v.length).order(ByteOrder.nativeOrder()).asShortBuffer();
    b.put(v).flip();
    return b;
  }

  /** Arrays (scratch, pinned and copied paths), direct ShortBuffers and DeviceBuffers agree bit for bit. */
  public static void testArraysBuffersAndDeviceBuffersAgree() {
    try (Context ctx = new Context(Backend.CPU, 2)) {
      for (Dt dt : Dt.values()) {
        for (int n : new int[] {10, 1024, 2048, 3000, 20000}) {
          short[] x = randomHalf(dt, n, 4), y = new short[n];
          if (bf(dt)) KernelBridge.geluBf16(ctx, x, y);
          else KernelBridge.geluF16(ctx, x, y);
          ShortBuffer bx = directShorts(x), by = directShorts(new short[n]);
          if (bf(dt)) KernelBridge.geluBf16(ctx, bx, by);
          else KernelBridge.geluF16(ctx, bx, by);
          short[] got = new short[n];
          by.get(got);
          check(Arrays.equals(y, got), "direct " + dt + " n=" + n);
          try (DeviceBuffer dx = DeviceBuffer.of(ctx, x); DeviceBuffer dy = new DeviceBuffer(ctx, 2L * n)) {
            if (bf(dt)) KernelBridge.geluBf16(ctx, dx, dy);
            else KernelBridge.geluF16(ctx, dx, dy);
            check(Arrays.equals(y, dy.toShortArray()), "device buffer " + dt + " n=" + n);
          }
          // in place through the scratch / pinned / copied paths
          short[] z = x.clone();
          if (bf(dt)) KernelBridge.geluBf16(ctx, z, z);
          else KernelBridge.geluF16(ctx, z, z);
          check(Arrays.equals(y, z), "in place " + dt + " n=" + n);
        }
      }
    }
  }

  public static void testShapeErrors() {
    KernelBridgeException e = expect(KernelBridgeException.class, () -> KernelBridge.siluBf16(new short[4], new short[3]));
    equal(Status.SHAPE_MISMATCH, e.status(), "length");
    check(e.getMessage().startsWith("kb_silu_bf16: y "), e.getMessage());
    e = expect(KernelBridgeException.class, () -> KernelBridge.softmaxF16(2, 3, new short[6], new short[5]));
    check(e.getMessage().startsWith("kb_softmax_f16: y "), e.getMessage());
    // from C: a negative eps; nothing written
    short[] y = {7, 7};
    e = expect(KernelBridgeException.class, () -> KernelBridge.rmsnormF16(1, new short[] {1, 2}, new short[] {1, 1}, -1f, y));
    equal(Status.INVALID_ARGUMENT, e.status(), "eps");
    check(e.getMessage().startsWith("kb_rmsnorm_f16:"), e.getMessage());
    check(y[0] == 7 && y[1] == 7, "nothing written");
    // undeclared aliasing of short[] arrays
    short[] a = new short[4];
    e = expect(KernelBridgeException.class,
        () -> KernelBridge.gemmBf16(false, false, 2, 2, 2, 1f, a, 2, new short[4], 2, 0f, a, 2));
    equal(Status.INVALID_ARGUMENT, e.status(), "c == a");
  }

  /**
   * The 16-bit embedding, argmax and samplers: rows copied bit for bit, and the float32
   * kernels' index and tokens on the widened logits, for the same seed.
   */
  public static void testDecodingKernels() {
    for (Dt dt : Dt.values()) {
      boolean b = bf(dt);
      short[] table = randomHalf(dt, 7 * 5, 1);
      int[] ids = {3, 0, 6, 3};
      short[] out = new short[4 * 5];
      if (b) KernelBridge.embeddingBf16(7, 5, ids, table, out);
      else KernelBridge.embeddingF16(7, 5, ids, table, out);
      for (int i = 0; i < ids.length; i++) {
        check(Arrays.equals(Arrays.copyOfRange(out, i * 5, i * 5 + 5),
            Arrays.copyOfRange(table, ids[i] * 5, ids[i] * 5 + 5)), "embedding row " + i + " " + dt);
      }
      short[] keep = new short[4 * 5];
      Arrays.fill(keep, (short) 9);
      KernelBridgeException e = expect(KernelBridgeException.class, () -> {
        if (b) KernelBridge.embeddingBf16(7, 5, new int[] {0, 7, 1, 1}, table, keep);
        else KernelBridge.embeddingF16(7, 5, new int[] {0, 7, 1, 1}, table, keep);
      });
      check(e.getMessage().contains("ids[1] = 7 is out of range [0, 7)"), e.getMessage());
      for (short v : keep) check(v == 9, "nothing written");

      final int rows = 6, cols = 300;
      short[] x = randomHalf(dt, rows * cols, 3);
      float[] xf = widen(dt, x);
      int[] got = new int[rows], want = new int[rows];
      if (b) KernelBridge.argmaxBf16(cols, x, got);
      else KernelBridge.argmaxF16(cols, x, got);
      KernelBridge.argmax(cols, xf, want);
      check(Arrays.equals(got, want), "argmax " + dt);
      java.util.Set<Integer> seen = new java.util.HashSet<>();
      for (long seed = 0; seed < 20; seed++) {
        float temp = 0.5f + (seed % 3) * 0.6f;
        if (b) KernelBridge.sampleBf16(cols, x, temp, seed, got);
        else KernelBridge.sampleF16(cols, x, temp, seed, got);
        KernelBridge.sample(cols, xf, temp, seed, want);
        check(Arrays.equals(got, want), "sample " + dt + " seed " + seed);
        int k = 1 + (int) (seed * 17 % cols);
        if (b) KernelBridge.topkSampleBf16(cols, x, k, temp, seed, got);
        else KernelBridge.topkSampleF16(cols, x, k, temp, seed, got);
        KernelBridge.topkSample(cols, xf, k, temp, seed, want);
        check(Arrays.equals(got, want), "topk_sample " + dt + " seed " + seed);
        float p = 0.2f + 0.04f * seed;
        if (b) KernelBridge.toppSampleBf16(cols, x, p, temp, seed, got);
        else KernelBridge.toppSampleF16(cols, x, p, temp, seed, got);
        KernelBridge.toppSample(cols, xf, p, temp, seed, want);
        check(Arrays.equals(got, want), "topp_sample " + dt + " seed " + seed);
        for (int v : got) seen.add(v);
      }
      check(seen.size() >= 10, "only " + seen.size() + " distinct tokens for " + dt);
      short[] bad = x.clone();
      bad[cols + 5] = (short) dt.inf;
      e = expect(KernelBridgeException.class, () -> {
        if (b) KernelBridge.sampleBf16(cols, bad, 1f, 1, new int[rows]);
        else KernelBridge.sampleF16(cols, bad, 1f, 1, new int[rows]);
      });
      equal(Status.INVALID_ARGUMENT, e.status(), "+inf logit");
      check(e.getMessage().contains("logits row 1 holds +inf"), e.getMessage());
    }
  }
}
