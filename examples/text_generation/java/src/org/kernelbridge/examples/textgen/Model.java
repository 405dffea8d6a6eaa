package org.kernelbridge.examples.textgen;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import org.kernelbridge.Dtype;
import org.kernelbridge.Gguf;
import org.kernelbridge.KernelBridgeException;

/**
 * A Llama-architecture decoder (dense, or with experts as Mixtral) read from a GGUF file: the
 * hyperparameters (llama.* keys) and every weight, checked as c/model.c's tg_model_load checks them,
 * with the same messages.
 */
final class Model {
  /** One layer's tensors; gate, up, down are the experts' when the model has experts. */
  static final class Layer {
    Weight attnNorm, wq, wk, wv, wo, ffnNorm, gate, up, down, router;
  }

  final int vocab, hidden, layers, heads, kvHeads, headDim, ffn, context, rotaryDim, experts, expertsUsed;
  final float eps, ropeTheta;
  final Weight embed, outNorm;
  /** output.weight, or null: tied to the embedding. */
  final Weight output;
  final Layer[] layer;

  private final Gguf g;
  private final Set<String> tensors;

  Model(Gguf g) throws GenerateException {
    this.g = g;
    try {
      tensors = new HashSet<>(g.tensorNames());
    } catch (KernelBridgeException e) {
      throw new GenerateException("tensors: " + e.getMessage());
    }
    if (!hasKey("general.architecture")) {
      throw new GenerateException("the model has no key 'general.architecture'");
    }
    byte[] arch;
    try {
      arch = g.getBytes("general.architecture");
    } catch (KernelBridgeException e) {
      throw new GenerateException("general.architecture: " + e.getMessage());
    }
    if (arch.length >= 64) {
      throw new GenerateException("architecture name of " + arch.length + " bytes is not 'llama'");
    }
    String name = new String(arch, StandardCharsets.UTF_8);
    if (!name.equals("llama")) {
      throw new GenerateException("architecture '" + name + "' is not supported (only 'llama')");
    }
    long hidden = keyInt("llama.embedding_length", -1);
    long layers = keyInt("llama.block_count", -1);
    long ffn = keyInt("llama.feed_forward_length", -1);
    long heads = keyInt("llama.attention.head_count", -1);
    long kvHeads = keyInt("llama.attention.head_count_kv", heads);
    long context = keyInt("llama.context_length", -1);
    long experts = keyInt("llama.expert_count", 0);
    long expertsUsed = keyInt("llama.expert_used_count", 0);
    eps = keyFloat("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    ropeTheta = keyFloat("llama.rope.freq_base", 10000.0f);
    if (heads <= 0 || kvHeads <= 0 || hidden <= 0 || hidden % heads != 0 || heads % kvHeads != 0 || layers <= 0
        || ffn <= 0 || context <= 0 || layers > 4096) {
      throw new GenerateException("inconsistent hyperparameters: hidden " + hidden + ", heads " + heads
          + ", kv heads " + kvHeads + ", layers " + layers + ", ffn " + ffn + ", context " + context);
    }
    if (experts < 0 || (experts > 0 && (expertsUsed <= 0 || expertsUsed > experts))) {
      throw new GenerateException("expert_used_count " + expertsUsed + " of expert_count " + experts);
    }
    long rot = keyInt("llama.rope.dimension_count", hidden / heads);
    if (!is32(hidden, ffn, context, experts, rot) || !is32(hidden * context, ffn * context)) {
      throw new GenerateException("hyperparameters too large for this example (Java buffers hold 2^31 elements)");
    }
    this.hidden = (int) hidden;
    this.layers = (int) layers;
    this.ffn = (int) ffn;
    this.heads = (int) heads;
    this.kvHeads = (int) kvHeads;
    this.context = (int) context;
    this.experts = (int) experts;
    this.expertsUsed = (int) expertsUsed;
    this.headDim = (int) (hidden / heads);
    this.rotaryDim = (int) rot;
    // The vocabulary size is the embedding's row count.
    if (!tensors.contains("token_embd.weight")) {
      throw new GenerateException("the model has no tensor 'token_embd.weight'");
    }
    long vocab;
    try {
      vocab = g.tensorShape("token_embd.weight")[0];
    } catch (KernelBridgeException e) {
      throw new GenerateException("token_embd.weight: " + e.getMessage());
    }
    if (!is32(vocab)) {
      throw new GenerateException("a vocabulary of " + vocab + " tokens is too large for this example");
    }
    this.vocab = (int) vocab;

    int kvd = this.kvHeads * headDim;
    embed = load("token_embd.weight", this.vocab, this.hidden, 0, false);
    outNorm = load("output_norm.weight", this.hidden, 0, 0, true);
    output = tensors.contains("output.weight") ? load("output.weight", this.vocab, this.hidden, 0, false) : null;
    layer = new Layer[this.layers];
    for (int l = 0; l < this.layers; l++) {
      Layer y = new Layer();
      String p = "blk." + l + ".";
      y.attnNorm = load(p + "attn_norm.weight", this.hidden, 0, 0, true);
      y.wq = load(p + "attn_q.weight", this.hidden, this.hidden, 0, false);
      y.wk = load(p + "attn_k.weight", kvd, this.hidden, 0, false);
      y.wv = load(p + "attn_v.weight", kvd, this.hidden, 0, false);
      y.wo = load(p + "attn_output.weight", this.hidden, this.hidden, 0, false);
      y.ffnNorm = load(p + "ffn_norm.weight", this.hidden, 0, 0, true);
      if (this.experts > 0) {
        y.router = load(p + "ffn_gate_inp.weight", this.experts, this.hidden, 0, true);
        y.gate = load(p + "ffn_gate_exps.weight", this.experts, this.ffn, this.hidden, false);
        y.up = load(p + "ffn_up_exps.weight", this.experts, this.ffn, this.hidden, false);
        y.down = load(p + "ffn_down_exps.weight", this.experts, this.hidden, this.ffn, false);
        if (y.gate.type != y.up.type || y.gate.type != y.down.type) {
          throw new GenerateException("layer " + l + ": the experts' tensors differ in type");
        }
      } else {
        y.gate = load(p + "ffn_gate.weight", this.ffn, this.hidden, 0, false);
        y.up = load(p + "ffn_up.weight", this.ffn, this.hidden, 0, false);
        y.down = load(p + "ffn_down.weight", this.hidden, this.ffn, 0, false);
        if (y.gate.type != y.up.type) {
          throw new GenerateException("layer " + l + ": ffn_gate and ffn_up differ in type");
        }
      }
      layer[l] = y;
    }
  }

  private static boolean is32(long... values) {
    for (long v : values) {
      if (v < 0 || v > Integer.MAX_VALUE) {
        return false;
      }
    }
    return true;
  }

  private boolean hasKey(String key) throws GenerateException {
    try {
      return g.hasKey(key);
    } catch (KernelBridgeException e) {
      throw new GenerateException(key + ": " + e.getMessage());
    }
  }

  /** An integer key, or def when the file has none (def < 0: required). */
  private long keyInt(String key, long def) throws GenerateException {
    if (!hasKey(key)) {
      if (def < 0) {
        throw new GenerateException("the model has no key '" + key + "'");
      }
      return def;
    }
    try {
      return g.getLong(key);
    } catch (KernelBridgeException e) {
      throw new GenerateException(key + ": " + e.getMessage());
    }
  }

  /** A number key (kb_gguf_get_f32 of one value), or def when the file has none. */
  private float keyFloat(String key, float def) throws GenerateException {
    if (!hasKey(key)) {
      return def;
    }
    float[] v;
    try {
      v = g.getFloats(key);
    } catch (KernelBridgeException e) {
      throw new GenerateException(key + ": " + e.getMessage());
    }
    if (v.length != 1) {
      throw new GenerateException(key + ": an array of " + v.length + " values, expected one number");
    }
    return v[0];
  }

  /**
   * Tensor name of shape [d0, d1] (or [d0, d1, d2] when d2 > 0, the experts' tensors; [d0] when d1 ==
   * 0), checked for shape and for a type the weight kernels take (float32 only when f32Only: the
   * norms), read into a direct buffer.
   */
  private Weight load(String name, int d0, int d1, int d2, boolean f32Only) throws GenerateException {
    if (!tensors.contains(name)) {
      throw new GenerateException("the model has no tensor '" + name + "'");
    }
    try {
      long[] shape = g.tensorShape(name);
      long[] want = {d0, d1, d2};
      int wantDims = d2 > 0 ? 3 : d1 > 0 ? 2 : 1;
      if (shape.length != wantDims) {
        throw new GenerateException(
            "tensor '" + name + "' has " + shape.length + " dimensions, expected " + wantDims);
      }
      for (int a = 0; a < shape.length; a++) {
        if (shape[a] != want[a]) {
          throw new GenerateException("tensor '" + name + "' has size " + shape[a] + " on axis " + a
              + ", expected " + want[a]);
        }
      }
      int type = g.tensorType(name);
      Dtype dtype = Dtype.fromCode(type);
      if (dtype == null || (f32Only && dtype != Dtype.F32)) {
        throw new GenerateException("tensor '" + name + "' has GGML type " + type + ", which this example "
            + (f32Only ? "needs as F32" : "does not run (F32, F16, BF16, Q8_0 and Q4_0 it does)"));
      }
      long bytes = g.tensorBytes(name);
      if (bytes > Integer.MAX_VALUE - 8) {
        throw new GenerateException("tensor '" + name + "' has " + bytes
            + " bytes, more than this example's Java reader takes (2^31)");
      }
      long rows = d2 > 0 ? (long) d0 * d1 : d0;
      if (!is32(rows)) {
        throw new GenerateException("tensor '" + name + "' has more than 2^31 rows");
      }
      byte[] data = g.readTensor(name);
      return new Weight(dtype, data, (int) rows, d2 > 0 ? d2 : d1);
    } catch (KernelBridgeException e) {
      throw new GenerateException(name + ": " + e.getMessage());
    } catch (OutOfMemoryError e) {
      throw new GenerateException("no memory for tensor '" + name + "'");
    }
  }
}
