package org.kernelbridge.examples.textgen;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import org.kernelbridge.Activation;
import org.kernelbridge.Context;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.MoeRouting;
import org.kernelbridge.RopeScaling;
import org.kernelbridge.RopeStyle;

/**
 * The forward pass of c/model.c (tg_model_forward): the same kernels, in the same order, with the
 * same arguments, on a float32 KV cache of the same layout ([context, kv_heads, head_dim] per layer)
 * and scratch for the prompt's rows.
 *
 * <p>Every tensor is a direct buffer, which the binding passes to C by address (no copy, no pinning).
 * The binding derives no size from a direct buffer it is not told (each must hold exactly its
 * shape), so the scratch is seen through views of n rows; the views for the prompt and for one token
 * are made once, so a decode step allocates nothing.
 */
final class Decoder {
  /** Views of the scratch for one forward call of n tokens. */
  private static final class Rows {
    final int n;
    final IntBuffer tokens, pos, routeIds;
    final FloatBuffer x, h, q, k, v, attn, o, g, routeLogits, routeW;
    /** The last row of h: the output layer's input when only the last token's logits are wanted. */
    final FloatBuffer hLast;

    Rows(Decoder d, int n) {
      Model m = d.m;
      int kvd = m.kvHeads * m.headDim;
      this.n = n;
      tokens = d.tokens.slice(0, n);
      pos = d.pos.slice(0, n);
      routeIds = d.routeIds.slice(0, n * Math.max(m.expertsUsed, 1));
      x = d.x.slice(0, n * m.hidden);
      h = d.h.slice(0, n * m.hidden);
      q = d.q.slice(0, n * m.hidden);
      k = d.k.slice(0, n * kvd);
      v = d.v.slice(0, n * kvd);
      attn = d.attn.slice(0, n * m.hidden);
      o = d.o.slice(0, n * m.hidden);
      g = d.g.slice(0, n * m.ffn);
      routeLogits = d.routeLogits.slice(0, n * Math.max(m.experts, 1));
      routeW = d.routeW.slice(0, n * Math.max(m.expertsUsed, 1));
      hLast = d.h.slice((n - 1) * m.hidden, m.hidden);
    }
  }

  private final Context ctx;
  private final Model m;
  /** Per layer: [context, kv_heads, head_dim] float32, C's k_cache + l * context * kvd. */
  private final FloatBuffer[] kCache, vCache;
  private final int scratchRows;
  private final IntBuffer tokens, pos, routeIds, at, len;
  private final FloatBuffer x, h, q, k, v, attn, o, g, routeLogits, routeW;
  private final Rows one, all;
  /** Tokens in the cache. */
  private int cached;
  /** What the kernel being called does, for the message when it fails (C's TRY labels). */
  private String stage = "";

  Decoder(Context ctx, Model m, int maxRows) throws GenerateException {
    this.ctx = ctx;
    this.m = m;
    long r = maxRows, kvd = (long) m.kvHeads * m.headDim, wide = Math.max(m.ffn, m.hidden);
    scratchRows = maxRows;
    try {
      kCache = new FloatBuffer[m.layers];
      vCache = new FloatBuffer[m.layers];
      for (int l = 0; l < m.layers; l++) {
        kCache[l] = floats((long) m.context * kvd);
        vCache[l] = floats((long) m.context * kvd);
      }
      x = floats(r * m.hidden);
      h = floats(r * m.hidden);
      q = floats(r * m.hidden);
      k = floats(r * kvd);
      v = floats(r * kvd);
      attn = floats(r * m.hidden);
      o = floats(r * m.hidden);
      g = floats(r * wide);
      routeLogits = floats(r * Math.max(m.experts, 1));
      routeW = floats(r * Math.max(m.expertsUsed, 1));
      routeIds = ints(r * Math.max(m.expertsUsed, 1));
      pos = ints(r);
      tokens = ints(r);
      at = ints(1);
      len = ints(1);
    } catch (OutOfMemoryError e) {
      throw new GenerateException("no memory for the cache and scratch");
    }
    one = new Rows(this, 1);
    all = maxRows == 1 ? one : new Rows(this, maxRows);
  }

  /** A zeroed direct float32 buffer of n elements (calloc). */
  static FloatBuffer floats(long n) throws GenerateException {
    return bytes(4 * Math.max(n, 1)).asFloatBuffer();
  }

  static IntBuffer ints(long n) throws GenerateException {
    return bytes(4 * Math.max(n, 1)).asIntBuffer();
  }

  static ByteBuffer bytes(long n) throws GenerateException {
    if (n > Integer.MAX_VALUE) {
      throw new GenerateException("a buffer of " + n + " bytes is larger than Java's direct buffers (2^31 bytes)");
    }
    return ByteBuffer.allocateDirect((int) n).order(ByteOrder.nativeOrder());
  }

  int cached() {
    return cached;
  }

  /**
   * Runs the prompt (ids.length <= the scratch rows) and writes the logits of its last token, or with
   * allLogits of every token ([n, vocab]), to out, which holds exactly that many floats.
   */
  void prefill(int[] ids, boolean allLogits, FloatBuffer out) throws GenerateException {
    Rows r = ids.length == scratchRows ? all : ids.length == 1 ? one : null;
    if (ids.length <= 0 || ids.length > scratchRows || r == null) {
      throw new GenerateException(ids.length + " tokens in one step (1 to " + scratchRows + ")");
    }
    forward(r, ids, 0, allLogits, out);
  }

  /** Runs one token and writes its logits (vocab floats) to out. */
  void step(int token, FloatBuffer out) throws GenerateException {
    forward(one, null, token, false, out);
  }

  private void forward(Rows r, int[] ids, int token, boolean allLogits, FloatBuffer out) throws GenerateException {
    int n = r.n;
    if ((long) cached + n > m.context) {
      throw new GenerateException(
          n + " tokens after " + cached + " do not fit in the model's context of " + m.context);
    }
    for (int t = 0; t < n; t++) {
      int id = ids != null ? ids[t] : token;
      if (id < 0 || id >= m.vocab) {
        throw new GenerateException("token id " + id + " is not in [0, " + m.vocab + ")");
      }
      r.tokens.put(t, id);
      r.pos.put(t, cached + t);
    }
    int hd = m.hidden;
    try {
      stage = "token embedding";
      KernelBridge.embeddingW(ctx, m.vocab, hd, r.tokens, m.embed.type, m.embed.data, r.x);
      stage = "attn_norm";
      KernelBridge.rmsnorm(ctx, n, r.x, m.layer[0].attnNorm.floats, m.eps, r.h);
      len.put(0, cached + n);
      at.put(0, cached);
      for (int l = 0; l < m.layers; l++) {
        Model.Layer y = m.layer[l];
        FloatBuffer kc = kCache[l], vc = vCache[l];
        stage = "attn_q";
        linear(n, r.h, y.wq, r.q);
        stage = "attn_k";
        linear(n, r.h, y.wk, r.k);
        stage = "attn_v";
        linear(n, r.h, y.wv, r.v);
        stage = "rope";
        KernelBridge.ropeEx(ctx, 1, n, m.heads, m.kvHeads, m.headDim, m.rotaryDim, RopeStyle.ADJACENT, r.pos,
            m.ropeTheta, RopeScaling.NONE, 1.0f, 1.0f, 4.0f, 8192, r.q, r.k);
        stage = "kv cache";
        KernelBridge.kvCacheAppend(ctx, m.kvHeads, n, m.context, m.headDim, true, r.k, r.v, at, kc, vc);
        stage = "attention";
        KernelBridge.attentionEx(ctx, 1, m.heads, m.kvHeads, n, m.context, m.headDim, true, r.q, kc, vc, len, 1, 1,
            1, null, true, true, 0.0f, r.attn);
        stage = "attn_output";
        linear(n, r.attn, y.wo, r.o);
        stage = "ffn_norm";
        KernelBridge.addRmsnorm(ctx, n, r.o, r.x, y.ffnNorm.floats, m.eps, r.h);
        if (m.experts > 0) {
          stage = "ffn_gate_inp";
          linear(n, r.h, y.router, r.routeLogits);
          stage = "router";
          KernelBridge.moeRoute(ctx, n, m.experts, m.expertsUsed, MoeRouting.SOFTMAX_TOPK_NORM, r.routeLogits,
              r.routeIds, r.routeW);
          stage = "experts";
          KernelBridge.moeExperts(ctx, n, hd, m.ffn, m.experts, m.expertsUsed, r.h, r.routeIds, r.routeW,
              y.gate.type, y.gate.data, y.up.data, y.down.data, Activation.SILU, r.o);
        } else {
          stage = "ffn_gate / ffn_up";
          KernelBridge.linearGluW(ctx, n, hd, m.ffn, r.h, y.gate.type, y.gate.data, y.up.data, Activation.SILU,
              r.g);
          stage = "ffn_down";
          linear(n, r.g, y.down, r.o);
        }
        // x += f, and the next norm (or the output norm) of it.
        Weight next = l + 1 < m.layers ? m.layer[l + 1].attnNorm : m.outNorm;
        stage = "norm";
        KernelBridge.addRmsnorm(ctx, n, r.o, r.x, next.floats, m.eps, r.h);
      }
      cached += n;
      Weight head = m.output != null ? m.output : m.embed;
      stage = "output";
      linear(allLogits ? n : 1, allLogits ? r.h : r.hLast, head, out);
    } catch (KernelBridgeException e) {
      throw new GenerateException(stage + ": " + e.getMessage());
    }
  }

  private void linear(int rows, FloatBuffer in, Weight w, FloatBuffer out) {
    KernelBridge.linearW(ctx, rows, w.cols, w.rows, in, w.type, w.data, null, Activation.NONE, out);
  }
}
