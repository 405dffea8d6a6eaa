package org.kernelbridge.examples.embeddings;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.util.List;
import org.kernelbridge.Activation;
import org.kernelbridge.Context;
import org.kernelbridge.KernelBridge;

/**
 * The encoder: token ids of a batch to L2-normalised mean-pooled embeddings. Every arithmetic
 * operation on tensors is a kernelbridge call on direct buffers, in the order of the README's "The
 * computation"; Java only lays out ids, lengths, row indices and the pooling weights (Layout).
 */
final class Encoder {
  private final Config c;
  private final Weights w;
  private final Context ctx;
  private final float eps, l2Eps;
  private final FloatBuffer l2Weight;

  Encoder(Config c, Weights w, Context ctx) {
    this.c = c;
    this.w = w;
    this.ctx = ctx;
    this.eps = (float) c.layerNormEps;
    this.l2Eps = (float) (1e-24 / c.hidden);
    this.l2Weight = floats(c.hidden);
    for (int i = 0; i < c.hidden; i++) {
      l2Weight.put(i, (float) (1.0 / Math.sqrt(c.hidden)));
    }
  }

  static FloatBuffer floats(int n) {
    return ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder()).asFloatBuffer();
  }

  static IntBuffer ints(int n) {
    return ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder()).asIntBuffer();
  }

  /**
   * batch.size() rows of hidden floats, each of unit length. Rows hold real tokens only ("packed",
   * n rows), except around attention, which reads the padded batch [b, s, heads, headDim].
   */
  FloatBuffer embed(List<int[]> batch) {
    Layout l = new Layout(batch);
    int b = l.b, s = l.s, n = l.n, h = c.hidden;
    IntBuffer types = ints(n);
    FloatBuffer x = floats(n * h), t = floats(n * h), hid = floats(n * h);
    FloatBuffer q = floats(n * h), k = floats(n * h), v = floats(n * h), a = floats(n * h);
    FloatBuffer ff = floats(n * c.intermediate);
    FloatBuffer qp = floats(b * s * h), kp = floats(b * s * h), vp = floats(b * s * h), ap = floats(b * s * h);
    Activation none = Activation.NONE;

    KernelBridge.embedding(ctx, c.vocabSize, h, l.ids, w.word, x);
    KernelBridge.embedding(ctx, c.typeVocab, h, types, w.tokenType, t);
    KernelBridge.add(ctx, x, t, x);
    KernelBridge.embedding(ctx, c.maxPositions, h, l.positions, w.position, t);
    KernelBridge.add(ctx, x, t, x);
    KernelBridge.layernorm(ctx, n, h, x, w.lnW, w.lnB, eps, hid);
    for (Weights.Layer y : w.layers) {
      KernelBridge.linear(ctx, n, h, h, hid, y.qW, y.qB, none, q);
      KernelBridge.linear(ctx, n, h, h, hid, y.kW, y.kB, none, k);
      KernelBridge.linear(ctx, n, h, h, hid, y.vW, y.vB, none, v);
      KernelBridge.embedding(ctx, n, h, l.toPadded, q, qp);
      KernelBridge.embedding(ctx, n, h, l.toPadded, k, kp);
      KernelBridge.embedding(ctx, n, h, l.toPadded, v, vp);
      KernelBridge.attentionEx(ctx, b, c.heads, c.heads, s, s, c.headDim, true, qp, kp, vp, l.lengths,
          1, 1, 1, null, false, false, 0f, ap);
      KernelBridge.embedding(ctx, b * s, h, l.toPacked, ap, a);
      KernelBridge.linear(ctx, n, h, h, a, y.oW, y.oB, none, q);
      KernelBridge.add(ctx, q, hid, q);
      KernelBridge.layernorm(ctx, n, h, q, y.ln1W, y.ln1B, eps, x);
      KernelBridge.linear(ctx, n, h, c.intermediate, x, y.ff1W, y.ff1B, Activation.GELU, ff);
      KernelBridge.linear(ctx, n, c.intermediate, h, ff, y.ff2W, y.ff2B, none, q);
      KernelBridge.add(ctx, q, x, q);
      KernelBridge.layernorm(ctx, n, h, q, y.ln2W, y.ln2B, eps, hid);
    }
    FloatBuffer mean = floats(b * h);
    KernelBridge.gemm(ctx, false, false, b, h, n, 1f, l.pooling(), n, hid, h, 0f, mean, h);
    FloatBuffer out = floats(b * h);
    KernelBridge.rmsnorm(ctx, b, mean, l2Weight, l2Eps, out);
    return out;
  }

  /** Cosine similarities of n unit vectors: E E^T. */
  FloatBuffer similarity(FloatBuffer emb, int n) {
    FloatBuffer sim = floats(n * n);
    KernelBridge.gemm(ctx, false, true, n, n, c.hidden, 1f, emb, c.hidden, emb, c.hidden, 0f, sim, n);
    return sim;
  }
}
