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
 * computation"; Java only lays out ids, lengths and the pooling weights.
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

  /** batch.size() rows of hidden floats, each of unit length. */
  FloatBuffer embed(List<int[]> batch) {
    int b = batch.size(), s = 0;
    IntBuffer lengths = ints(b);
    for (int i = 0; i < b; i++) {
      lengths.put(i, batch.get(i).length);
      s = Math.max(s, batch.get(i).length);
    }
    int rows = b * s, h = c.hidden;
    IntBuffer ids = ints(rows); // padding: id 0 ([PAD])
    IntBuffer positions = ints(rows);
    IntBuffer types = ints(rows);
    for (int i = 0; i < b; i++) {
      int[] seq = batch.get(i);
      for (int j = 0; j < s; j++) {
        ids.put(i * s + j, j < seq.length ? seq[j] : 0);
        positions.put(i * s + j, j);
      }
    }
    FloatBuffer x = floats(rows * h), t = floats(rows * h), hid = floats(rows * h);
    FloatBuffer q = floats(rows * h), k = floats(rows * h), v = floats(rows * h), att = floats(rows * h);
    FloatBuffer ff = floats(rows * c.intermediate);
    Activation none = Activation.NONE;

    KernelBridge.embedding(ctx, c.vocabSize, h, ids, w.word, x);
    KernelBridge.embedding(ctx, c.typeVocab, h, types, w.tokenType, t);
    KernelBridge.add(ctx, x, t, x);
    KernelBridge.embedding(ctx, c.maxPositions, h, positions, w.position, t);
    KernelBridge.add(ctx, x, t, x);
    KernelBridge.layernorm(ctx, rows, h, x, w.lnW, w.lnB, eps, hid);
    for (Weights.Layer l : w.layers) {
      KernelBridge.linear(ctx, rows, h, h, hid, l.qW, l.qB, none, q);
      KernelBridge.linear(ctx, rows, h, h, hid, l.kW, l.kB, none, k);
      KernelBridge.linear(ctx, rows, h, h, hid, l.vW, l.vB, none, v);
      KernelBridge.attentionEx(ctx, b, c.heads, c.heads, s, s, c.headDim, true, q, k, v, lengths,
          1, 1, 1, null, false, false, 0f, att);
      KernelBridge.linear(ctx, rows, h, h, att, l.oW, l.oB, none, q);
      KernelBridge.add(ctx, q, hid, q);
      KernelBridge.layernorm(ctx, rows, h, q, l.ln1W, l.ln1B, eps, x);
      KernelBridge.linear(ctx, rows, h, c.intermediate, x, l.ff1W, l.ff1B, Activation.GELU, ff);
      KernelBridge.linear(ctx, rows, c.intermediate, h, ff, l.ff2W, l.ff2B, none, q);
      KernelBridge.add(ctx, q, x, q);
      KernelBridge.layernorm(ctx, rows, h, q, l.ln2W, l.ln2B, eps, hid);
    }
    FloatBuffer pool = poolingMatrix(lengths, b, s);
    FloatBuffer mean = floats(b * h);
    KernelBridge.gemm(ctx, false, false, b, h, rows, 1f, pool, rows, hid, h, 0f, mean, h);
    FloatBuffer out = floats(b * h);
    KernelBridge.rmsnorm(ctx, b, mean, l2Weight, l2Eps, out);
    return out;
  }

  /** [b, b*s]: row r holds float32(1 / lengths[r]) over its own tokens, 0 elsewhere. */
  private static FloatBuffer poolingMatrix(IntBuffer lengths, int b, int s) {
    FloatBuffer p = floats(b * b * s); // zero-filled
    for (int r = 0; r < b; r++) {
      int n = lengths.get(r);
      float inv = (float) (1.0 / n);
      for (int j = 0; j < n; j++) {
        p.put(r * b * s + r * s + j, inv);
      }
    }
    return p;
  }

  /** Cosine similarities of n unit vectors: E E^T. */
  FloatBuffer similarity(FloatBuffer emb, int n) {
    FloatBuffer sim = floats(n * n);
    KernelBridge.gemm(ctx, false, true, n, n, c.hidden, 1f, emb, c.hidden, emb, c.hidden, 0f, sim, n);
    return sim;
  }
}
