package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;
import static org.kernelbridge.test.Harness.close;
import static org.kernelbridge.test.Harness.equal;

import java.util.Arrays;
import java.util.Random;
import java.util.function.DoubleUnaryOperator;
import org.kernelbridge.Context;
import org.kernelbridge.KernelBridge;

/** Every kernel against a float64 reference computed here. */
public final class KernelsTest {
  private KernelsTest() {}

  static final Random RNG = new Random(12345);

  static float[] randn(int n, double scale) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) a[i] = (float) (RNG.nextGaussian() * scale);
    return a;
  }

  static float[] uniform(int n, double lo, double hi) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) a[i] = (float) (lo + (hi - lo) * RNG.nextDouble());
    return a;
  }

  interface Unary {
    void apply(float[] x, float[] y);
  }

  static void unary(String name, Unary k, DoubleUnaryOperator ref, double rtol) {
    for (int n : new int[] {0, 1, 16, 1000, 50000}) {
      float[] x = uniform(n, -8, 8);
      if (n > 3) {
        x[0] = 0f;
        x[1] = -0f;
        x[2] = 30f;
        x[3] = -30f;
      }
      float[] y = new float[n];
      k.apply(x, y);
      double[] want = new double[n];
      for (int i = 0; i < n; i++) want[i] = ref.applyAsDouble(x[i]);
      close(want, y, rtol, 1e-37, name + " n=" + n);
      // in place (the header allows y == x)
      float[] z = x.clone();
      k.apply(z, z);
      check(Arrays.equals(z, y), name + " in place differs, n=" + n);
    }
  }

  public static void testSilu() {
    unary("silu", KernelBridge::silu, Ref::silu, 3e-7);
  }

  public static void testGelu() {
    unary("gelu", KernelBridge::gelu, Ref::gelu, 3e-7);
  }

  public static void testGeluTanh() {
    unary("geluTanh", KernelBridge::geluTanh, Ref::geluTanh, 3e-7);
  }

  public static void testAddMulScale() {
    for (int n : new int[] {0, 7, 20000}) {
      float[] a = randn(n, 3), b = randn(n, 3), y = new float[n];
      KernelBridge.add(a, b, y);
      for (int i = 0; i < n; i++) check(y[i] == (float) ((double) a[i] + b[i]), "add " + i);
      KernelBridge.mul(a, b, y);
      for (int i = 0; i < n; i++) check(y[i] == (float) ((double) a[i] * b[i]), "mul " + i);
      KernelBridge.scale(0.75f, a, y);
      for (int i = 0; i < n; i++) check(y[i] == (float) (0.75 * a[i]), "scale " + i);
    }
  }

  public static void testAddBias() {
    int rows = 5, cols = 7;
    float[] x = randn(rows * cols, 1), bias = randn(cols, 1), y = new float[rows * cols];
    KernelBridge.addBias(rows, x, bias, y);
    for (int r = 0; r < rows; r++)
      for (int c = 0; c < cols; c++) check(y[r * cols + c] == x[r * cols + c] + bias[c], "addBias");
  }

  public static void testSoftmaxLogSoftmax() {
    int rows = 6, cols = 33;
    float[] x = randn(rows * cols, 4);
    x[5] = 1e4f; // stability
    float[] y = new float[rows * cols], ly = new float[rows * cols];
    KernelBridge.softmax(rows, cols, x, y);
    KernelBridge.logSoftmax(rows, cols, x, ly);
    double[] want = new double[rows * cols], lwant = new double[rows * cols];
    for (int r = 0; r < rows; r++) {
      double[] s = Ref.softmaxRow(x, r * cols, cols);
      double lse = Ref.logSumExp(x, r * cols, cols);
      for (int c = 0; c < cols; c++) {
        want[r * cols + c] = s[c];
        lwant[r * cols + c] = x[r * cols + c] - lse;
      }
    }
    close(want, y, 1e-5, 1e-9, "softmax");
    close(lwant, ly, 1e-5, 1e-5, "logSoftmax");
  }

  public static void testRmsnorm() {
    int rows = 4, cols = 19;
    float[] x = randn(rows * cols, 2), w = randn(cols, 1), y = new float[rows * cols];
    float eps = 1e-5f;
    KernelBridge.rmsnorm(rows, x, w, eps, y);
    double[] want = new double[rows * cols];
    for (int r = 0; r < rows; r++) {
      double ss = 0;
      for (int c = 0; c < cols; c++) ss += (double) x[r * cols + c] * x[r * cols + c];
      double inv = 1 / Math.sqrt(ss / cols + eps);
      for (int c = 0; c < cols; c++) want[r * cols + c] = x[r * cols + c] * inv * w[c];
    }
    close(want, y, 1e-5, 1e-6, "rmsnorm");
  }

  public static void testLayernorm() {
    layernorm(3, 24); // scratch path
    layernorm(300, 24); // pinned/copied array path, null weight and bias passed as NULL
  }

  static void layernorm(int rows, int cols) {
    float[] x = randn(rows * cols, 2), w = randn(cols, 1), b = randn(cols, 1);
    float eps = 1e-5f;
    for (boolean affine : new boolean[] {true, false}) {
      float[] y = new float[rows * cols];
      KernelBridge.layernorm(rows, cols, x, affine ? w : null, affine ? b : null, eps, y);
      double[] want = new double[rows * cols];
      for (int r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int c = 0; c < cols; c++) mean += x[r * cols + c];
        mean /= cols;
        for (int c = 0; c < cols; c++) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
        var /= cols;
        for (int c = 0; c < cols; c++) {
          double v = (x[r * cols + c] - mean) / Math.sqrt(var + eps);
          want[r * cols + c] = affine ? v * w[c] + b[c] : v;
        }
      }
      close(want, y, 1e-5, 1e-5, "layernorm affine=" + affine);
    }
  }

  public static void testGemm() {
    int m = 5, n = 7, k = 9;
    for (boolean ta : new boolean[] {false, true}) {
      for (boolean tb : new boolean[] {false, true}) {
        int aRows = ta ? k : m, aCols = ta ? m : k, bRows = tb ? n : k, bCols = tb ? k : n;
        int lda = aCols + 2, ldb = bCols + 1, ldc = n + 3;
        float[] a = randn((aRows - 1) * lda + aCols, 1), b = randn((bRows - 1) * ldb + bCols, 1);
        float[] c = randn((m - 1) * ldc + n, 1);
        float[] c0 = c.clone();
        float alpha = 1.5f, beta = -0.5f;
        KernelBridge.gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        double[] want = new double[c.length];
        for (int i = 0; i < c.length; i++) want[i] = c0[i];
        for (int i = 0; i < m; i++)
          for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++) {
              double av = ta ? a[p * lda + i] : a[i * lda + p];
              double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
              s += av * bv;
            }
            want[i * ldc + j] = alpha * s + beta * c0[i * ldc + j];
          }
        close(want, c, 1e-5, 1e-5, "gemm ta=" + ta + " tb=" + tb);
      }
    }
    // beta == 0: C is not read, NaN in C does not propagate.
    float[] a = randn(4, 1), b = randn(4, 1), c = {Float.NaN, Float.NaN, Float.NaN, Float.NaN};
    KernelBridge.gemm(false, false, 2, 2, 2, 1f, a, 2, b, 2, 0f, c, 2);
    for (float v : c) check(!Float.isNaN(v), "gemm beta=0 read C");
  }

  public static void testEmbedding() {
    int vocab = 11, dim = 5;
    float[] table = randn(vocab * dim, 1);
    int[] ids = {3, 0, 10, 3};
    float[] out = new float[ids.length * dim];
    KernelBridge.embedding(vocab, dim, ids, table, out);
    for (int i = 0; i < ids.length; i++)
      for (int d = 0; d < dim; d++) check(out[i * dim + d] == table[ids[i] * dim + d], "embedding");
  }

  public static void testRope() {
    int seq = 3, heads = 2, headDim = 8;
    float theta = 10000f;
    float[] x = randn(seq * heads * headDim, 1), y = new float[x.length];
    int[] pos = {0, 5, 17};
    KernelBridge.rope(heads, headDim, x, pos, theta, y);
    double[] want = new double[x.length];
    int h = headDim / 2;
    for (int s = 0; s < seq; s++)
      for (int hd = 0; hd < heads; hd++) {
        int base = (s * heads + hd) * headDim;
        for (int i = 0; i < h; i++) {
          double ang = pos[s] * Math.pow(theta, -2.0 * i / headDim);
          want[base + i] = x[base + i] * Math.cos(ang) - x[base + i + h] * Math.sin(ang);
          want[base + i + h] = x[base + i + h] * Math.cos(ang) + x[base + i] * Math.sin(ang);
        }
      }
    close(want, y, 1e-5, 1e-6, "rope");
  }

  public static void testAttention() {
    int batch = 2, heads = 4, kvHeads = 2, seqQ = 3, seqKv = 5, hd = 8;
    float[] q = randn(batch * heads * seqQ * hd, 1);
    float[] k = randn(batch * kvHeads * seqKv * hd, 1);
    float[] v = randn(batch * kvHeads * seqKv * hd, 1);
    for (boolean causal : new boolean[] {false, true}) {
      float[] out = new float[q.length];
      KernelBridge.attention(batch, heads, kvHeads, seqQ, seqKv, hd, q, k, v, causal, 0f, out);
      double[] want = new double[q.length];
      double scale = 1 / Math.sqrt(hd);
      for (int b = 0; b < batch; b++)
        for (int h = 0; h < heads; h++) {
          int kh = h / (heads / kvHeads);
          for (int i = 0; i < seqQ; i++) {
            int qo = ((b * heads + h) * seqQ + i) * hd;
            double[] sc = new double[seqKv];
            double m = Double.NEGATIVE_INFINITY;
            for (int j = 0; j < seqKv; j++) {
              if (causal && j > i) {
                sc[j] = Double.NEGATIVE_INFINITY;
                continue;
              }
              int ko = ((b * kvHeads + kh) * seqKv + j) * hd;
              double s = 0;
              for (int d = 0; d < hd; d++) s += (double) q[qo + d] * k[ko + d];
              sc[j] = s * scale;
              m = Math.max(m, sc[j]);
            }
            double sum = 0;
            for (int j = 0; j < seqKv; j++) sum += Math.exp(sc[j] - m);
            for (int d = 0; d < hd; d++) {
              double acc = 0;
              for (int j = 0; j < seqKv; j++) {
                int vo = ((b * kvHeads + kh) * seqKv + j) * hd;
                acc += Math.exp(sc[j] - m) / sum * v[vo + d];
              }
              want[qo + d] = acc;
            }
          }
        }
      close(want, out, 1e-4, 1e-5, "attention causal=" + causal);
    }
  }

  public static void testCrossEntropy() {
    int rows = 5, classes = 9, ignore = -100;
    float[] logits = randn(rows * classes, 2);
    int[] targets = {1, ignore, 8, 0, 4};
    float[] losses = new float[rows], mean = new float[1], grad = new float[rows * classes];
    KernelBridge.crossEntropy(classes, logits, targets, ignore, losses, mean);
    double[] want = new double[rows];
    double total = 0;
    int count = 0;
    for (int r = 0; r < rows; r++) {
      if (targets[r] == ignore) continue;
      want[r] = Ref.logSumExp(logits, r * classes, classes) - logits[r * classes + targets[r]];
      total += want[r];
      count++;
    }
    close(want, losses, 1e-5, 1e-6, "crossEntropy losses");
    close(new double[] {total / count}, mean, 1e-5, 1e-6, "crossEntropy mean");
    float dloss = 2f;
    KernelBridge.crossEntropyBackward(classes, logits, targets, ignore, dloss, grad);
    double[] gw = new double[rows * classes];
    for (int r = 0; r < rows; r++) {
      if (targets[r] == ignore) continue;
      double[] s = Ref.softmaxRow(logits, r * classes, classes);
      for (int c = 0; c < classes; c++) gw[r * classes + c] = dloss * (s[c] - (c == targets[r] ? 1 : 0)) / count;
    }
    close(gw, grad, 1e-5, 1e-6, "crossEntropyBackward");
    // every row ignored: mean is NaN
    KernelBridge.crossEntropy(classes, logits, new int[] {ignore, ignore, ignore, ignore, ignore}, ignore, losses, mean);
    check(Float.isNaN(mean[0]), "mean of no rows is NaN");
  }

  public static void testAdamw() {
    int n = 10;
    float[] p = randn(n, 1), g = randn(n, 1), m = randn(n, 0.1), v = uniform(n, 0, 0.1);
    double[] pd = new double[n], md = new double[n], vd = new double[n];
    for (int i = 0; i < n; i++) {
      pd[i] = p[i];
      md[i] = m[i];
      vd[i] = v[i];
    }
    float lr = 1e-2f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    long step = 3;
    KernelBridge.adamwStep(p, g, m, v, lr, b1, b2, eps, wd, step);
    for (int i = 0; i < n; i++) {
      pd[i] *= 1 - (double) lr * wd;
      md[i] = b1 * md[i] + (1 - (double) b1) * g[i];
      vd[i] = b2 * vd[i] + (1 - (double) b2) * g[i] * g[i];
      double bc1 = 1 - Math.pow(b1, step), bc2 = 1 - Math.pow(b2, step);
      pd[i] -= (lr / bc1) * md[i] / (Math.sqrt(vd[i]) / Math.sqrt(bc2) + eps);
    }
    close(pd, p, 1e-5, 1e-6, "adamw params");
    close(md, m, 1e-5, 1e-7, "adamw m");
    close(vd, v, 1e-5, 1e-9, "adamw v");
  }

  public static void testArgmax() {
    int rows = 4, cols = 6;
    float[] x = randn(rows * cols, 1);
    x[1 * cols + 2] = 9f;
    x[1 * cols + 4] = 9f; // tie: first wins
    x[2 * cols + 3] = Float.NaN; // NaN is largest
    int[] out = new int[rows];
    KernelBridge.argmax(cols, x, out);
    for (int r = 0; r < rows; r++) {
      int best = 0;
      for (int c = 1; c < cols; c++) {
        float a = x[r * cols + c], b = x[r * cols + best];
        if (Float.isNaN(b)) break;
        if (Float.isNaN(a) || a > b) best = c;
      }
      equal(best, out[r], "argmax row " + r);
    }
  }

  public static void testSampling() {
    int rows = 64, cols = 10;
    float[] logits = randn(rows * cols, 2);
    logits[3] = Float.NEGATIVE_INFINITY;
    long seed = 0x1234_5678_9abc_def0L;
    float t = 0.8f, p = 0.7f;
    int k = 4;
    int[] s = new int[rows], tk = new int[rows], tp = new int[rows];
    KernelBridge.sample(cols, logits, t, seed, s);
    KernelBridge.topkSample(cols, logits, k, t, seed, tk);
    KernelBridge.toppSample(cols, logits, p, t, seed, tp);
    for (int r = 0; r < rows; r++) {
      double u = Ref.uniform(seed, r);
      equal(Ref.sampleRow(logits, r * cols, cols, u, 0, 0, 0, t), s[r], "sample row " + r);
      equal(Ref.sampleRow(logits, r * cols, cols, u, 1, k, 0, t), tk[r], "topk row " + r);
      equal(Ref.sampleRow(logits, r * cols, cols, u, 2, 0, p, t), tp[r], "topp row " + r);
    }
  }

  public static void testPhiloxKnownAnswer() {
    long[] w = Ref.philox(new long[] {0, 0, 0, 0}, new long[] {0, 0});
    equal(0x6627e8d5L, w[0], "philox kat");
    equal(0x9b00dbd8L, w[3], "philox kat");
  }

  public static void testThreadCountDoesNotChangeResults() {
    float[] x = randn(200_000, 3), y1 = new float[x.length], y4 = new float[x.length];
    try (Context one = new Context(org.kernelbridge.Backend.CPU, 1);
        Context four = new Context(org.kernelbridge.Backend.CPU, 4)) {
      KernelBridge.gelu(one, x, y1);
      KernelBridge.gelu(four, x, y4);
      equal(4L, four.numThreads(), "numThreads");
    }
    check(Arrays.equals(y1, y4), "gelu differs between 1 and 4 threads");
  }
}
