package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;
import static org.kernelbridge.test.Harness.close;
import static org.kernelbridge.test.Harness.equal;
import static org.kernelbridge.test.Harness.expect;

import java.util.Arrays;
import java.util.Random;
import org.kernelbridge.Activation;
import org.kernelbridge.AttentionOptions;
import org.kernelbridge.Backend;
import org.kernelbridge.Context;
import org.kernelbridge.F16;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Status;

/**
 * The model-ready API: AttentionOptions (against a float64 reference written here from the header,
 * and bit for bit against the attentionEx call it makes), linear for every activation, gemmBatched
 * with a shared operand and gaps between items.
 */
public final class ModelTest {
  private ModelTest() {}

  static float[] randn(Random r, int n) {
    float[] x = new float[n];
    for (int i = 0; i < n; i++) x[i] = (float) r.nextGaussian();
    return x;
  }

  /** kb_attention_ex in float64: head-major, key lengths, a [batch, 1, 1, seqKv] mask, causal bottom-right. */
  static double[] attention(int b, int h, int kvh, int sq, int skv, int d, float[] q, float[] k, float[] v,
      int[] lengths, float[] mask, boolean causal, boolean bottomRight) {
    double[] out = new double[q.length];
    double scale = 1 / Math.sqrt(d);
    for (int bi = 0; bi < b; bi++) {
      int n = lengths == null ? skv : lengths[bi];
      for (int hi = 0; hi < h; hi++) {
        int kh = hi / (h / kvh);
        for (int i = 0; i < sq; i++) {
          int lim = n;
          if (causal) lim = Math.max(0, Math.min(n, bottomRight ? i + 1 + n - sq : i + 1));
          double[] s = new double[lim];
          boolean any = false;
          double m = Double.NEGATIVE_INFINITY;
          for (int j = 0; j < lim; j++) {
            double dot = 0;
            for (int x = 0; x < d; x++) dot += (double) q[((bi * h + hi) * sq + i) * d + x] * k[((bi * kvh + kh) * skv + j) * d + x];
            s[j] = dot * scale + (mask == null ? 0 : mask[bi * skv + j]);
            if (s[j] != Double.NEGATIVE_INFINITY) any = true;
            m = Math.max(m, s[j]);
          }
          if (!any) continue;
          double sum = 0;
          for (int j = 0; j < lim; j++) sum += s[j] = Math.exp(s[j] - m);
          for (int x = 0; x < d; x++) {
            double acc = 0;
            for (int j = 0; j < lim; j++) acc += s[j] / sum * v[((bi * kvh + kh) * skv + j) * d + x];
            out[((bi * h + hi) * sq + i) * d + x] = acc;
          }
        }
      }
    }
    return out;
  }

  public static void testAttentionOptionsMatchReference() {
    Random r = new Random(3);
    int b = 2, h = 4, kvh = 2, sq = 3, skv = 6, d = 8;
    float[] q = randn(r, b * h * sq * d), k = randn(r, b * kvh * skv * d), v = randn(r, b * kvh * skv * d);
    int[] lengths = {6, 3};
    float[] mask = new float[b * skv];
    mask[2] = Float.NEGATIVE_INFINITY;
    try (Context ctx = new Context(Backend.CPU, 2)) {
      float[] out = new float[q.length];
      AttentionOptions o = new AttentionOptions(b, h, kvh, sq, skv, d)
          .kvLengths(lengths)
          .mask(mask, b, 1, 1)
          .causal(true)
          .causalBottomRight(true);
      o.run(ctx, q, k, v, out);
      close(attention(b, h, kvh, sq, skv, d, q, k, v, lengths, mask, true, true), out, 1e-5, 1e-6, "attention");
      float[] direct = new float[q.length];
      KernelBridge.attentionEx(ctx, b, h, kvh, sq, skv, d, false, q, k, v, lengths, b, 1, 1, mask, true, true, 0f,
          direct);
      check(Arrays.equals(out, direct), "options form differs from attentionEx");
      // float16: the float32 kernel on the widened inputs, rounded once.
      short[] q16 = F16.fromFloats(q), k16 = F16.fromFloats(k), v16 = F16.fromFloats(v), out16 = new short[q.length];
      AttentionOptions o16 = new AttentionOptions(b, h, kvh, sq, skv, d).causal(true);
      o16.runF16(ctx, q16, k16, v16, out16);
      float[] wide = new float[q.length];
      o16.run(ctx, F16.toFloats(q16), F16.toFloats(k16), F16.toFloats(v16), wide);
      check(Arrays.equals(out16, F16.fromFloats(wide)), "f16 attention is not the rounded float32 result");
    }
  }

  public static void testAttentionOptionsErrors() {
    int b = 2, h = 2, kvh = 1, sq = 2, skv = 3, d = 4;
    float[] q = new float[b * h * sq * d], k = new float[b * kvh * skv * d], out = new float[q.length];
    Arrays.fill(out, 5f);
    Object[][] cases = {
      {new AttentionOptions(b, h, kvh, sq, skv, d).mask(new float[9], 3, 1, 1), Status.SHAPE_MISMATCH, "mask_batch"},
      {new AttentionOptions(b, h, kvh, sq, skv, d).mask(new float[2], 1, 1, 1), Status.SHAPE_MISMATCH, "mask"},
      {new AttentionOptions(b, h, kvh, sq, skv, d).kvLengths(new int[] {1, 4}), Status.INVALID_ARGUMENT,
        "kv_lengths[1] = 4"},
      {new AttentionOptions(b, h, kvh, sq, skv, d).causalBottomRight(true), Status.INVALID_ARGUMENT, "needs causal"},
      {new AttentionOptions(b, h, kvh, sq, skv, d).mask(new short[3], 1, 1, 1), Status.INVALID_ARGUMENT, "takes a float[] mask"},
    };
    try (Context ctx = new Context(Backend.CPU, 1)) {
      for (Object[] c : cases) {
        AttentionOptions o = (AttentionOptions) c[0];
        KernelBridgeException e = expect(KernelBridgeException.class, () -> o.run(ctx, q, k, k, out));
        equal(c[1], e.status(), "status of " + e.getMessage());
        check(e.getMessage().contains((String) c[2]), e.getMessage());
        for (float x : out) check(x == 5f, "out written on error");
      }
    }
  }

  public static void testLinearEveryActivation() {
    Random r = new Random(5);
    int rows = 4, in = 6, outF = 3;
    float[] x = randn(r, rows * in), w = randn(r, outF * in), bias = randn(r, outF);
    for (Activation act : Activation.values()) {
      float[] y = new float[rows * outF];
      KernelBridge.linear(rows, in, outF, x, w, bias, act, y);
      double[] want = new double[rows * outF];
      for (int i = 0; i < rows; i++) {
        for (int o = 0; o < outF; o++) {
          double s = bias[o];
          for (int p = 0; p < in; p++) s += (double) x[i * in + p] * w[o * in + p];
          want[i * outF + o] = activate(act, s);
        }
      }
      close(want, y, act == Activation.GELU ? 0 : 2e-5, act == Activation.GELU ? 2e-3 : 2e-6, act.name());
    }
  }

  static double activate(Activation act, double s) {
    switch (act) {
      case RELU:
        return Math.max(s, 0);
      case SILU:
        return s / (1 + Math.exp(-s));
      case GELU: // within 2e-3 of the tanh form (no erf in java.lang.Math)
      case GELU_TANH:
        return 0.5 * s * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (s + 0.044715 * s * s * s)));
      default:
        return s;
    }
  }

  public static void testGemmBatchedSharedOperandAndGaps() {
    Random r = new Random(7);
    int batch = 3, m = 2, n = 4, k = 5, ldc = n + 2, strideC = m * ldc + 3;
    float[] a = randn(r, batch * m * k), w = randn(r, k * n);
    float[] c = new float[(batch - 1) * strideC + (m - 1) * ldc + n];
    Arrays.fill(c, -3f);
    KernelBridge.gemmBatched(false, false, batch, m, n, k, 1f, a, k, m * k, w, n, 0, 0f, c, ldc, strideC);
    int written = 0;
    for (float x : c) if (x != -3f) written++;
    equal(batch * m * n, written, "elements written (padding and gaps must stay)");
    for (int i = 0; i < batch; i++) {
      float[] item = new float[m * n];
      KernelBridge.gemm(false, false, m, n, k, 1f, Arrays.copyOfRange(a, i * m * k, (i + 1) * m * k), k, w, n, 0f, item, n);
      for (int row = 0; row < m; row++) {
        for (int col = 0; col < n; col++) {
          equal(item[row * n + col], c[i * strideC + row * ldc + col], "item " + i);
        }
      }
    }
    KernelBridgeException e = expect(KernelBridgeException.class,
        () -> KernelBridge.gemmBatched(false, false, batch, m, n, k, 1f, a, k, m * k, w, n, 0, 0f, c, ldc, 2));
    equal(Status.SHAPE_MISMATCH, e.status(), e.getMessage());
    check(e.getMessage().contains("stride_c"), e.getMessage());
    e = expect(KernelBridgeException.class, () -> KernelBridge.gemmBatched(false, false, batch, m, n, k, 1f, a, k,
        m * k, w, n, 0, 0f, Arrays.copyOf(c, c.length - 1), ldc, strideC));
    equal(Status.SHAPE_MISMATCH, e.status(), e.getMessage());
  }
}
