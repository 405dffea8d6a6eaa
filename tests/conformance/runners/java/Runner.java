package kbconformance;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.kernelbridge.Activation;
import org.kernelbridge.AttentionOptions;
import org.kernelbridge.Backend;
import org.kernelbridge.Context;
import org.kernelbridge.Dtype;
import org.kernelbridge.MoeRouting;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.RopeScaling;
import org.kernelbridge.RopeStyle;

/**
 * The Java conformance runner (docs/conformance.md).
 *
 * <pre>
 *   Runner --corpus DIR --out FILE [--threads N]
 * </pre>
 *
 * Reads DIR/manifest.json and DIR/bad_input.json, calls every kernel through
 * the public Java facade ({@link KernelBridge} with {@code float[]}/{@code int[]}
 * arrays, and {@code byte[]} for the bytes of tensors in a storage format, on
 * a {@link Context}), and writes the same result JSON as the C
 * runner (tests/conformance/runners/c/runner.c): the same case names, the
 * {@code max_ulp} metric computed the same way, FNV-1a 64 hashes of the output
 * bytes (little-endian), the bad-input statuses.  Bad-input cases the facade
 * cannot express are recorded {@code "got": "n/a"} with a reason.  Exit
 * status: 0 when everything passed, 1 otherwise, 2 on a usage or corpus error.
 */
public final class Runner {
  private Runner() {}

  /** The float32 quiet NaN outputs are pre-filled with. */
  private static final float QNAN = Float.intBitsToFloat(0x7fc00000);

  // --- the kernels' signatures (manifest.json "signatures") -------------------

  /** One parameter after ctx, in C order. */
  static final class Param {
    final String name;
    final String role; // dim, flag, scalar, in, out, inout
    final String dtype; // tensors: f32, i32, u8 (bytes)
    final List<String> shape; // tensors
    final String ld; // tensors with a row stride
    final boolean nullable;

    Param(Map<String, Object> m) {
      name = (String) m.get("name");
      role = (String) m.get("role");
      dtype = (String) m.get("dtype");
      List<String> s = new ArrayList<>();
      if (m.get("shape") != null) for (Object o : (List<?>) m.get("shape")) s.add((String) o);
      shape = s;
      ld = (String) m.get("ld");
      nullable = Boolean.TRUE.equals(m.get("nullable"));
    }

    boolean isTensor() {
      return role.equals("in") || role.equals("out") || role.equals("inout");
    }
  }

  static Map<String, List<Param>> signatures(Object json) {
    Map<String, List<Param>> out = new LinkedHashMap<>();
    for (Map.Entry<String, Object> e : asMap(json).entrySet()) {
      List<Param> ps = new ArrayList<>();
      for (Object o : (List<?>) e.getValue()) ps.add(new Param(asMap(o)));
      out.put(e.getKey(), ps);
    }
    return out;
  }

  /**
   * The dims the Java facade reads from array lengths (docs/java.md): a dim is
   * derived when a tensor that is not nullable is 1-D with exactly that dim;
   * the facade reads it from the first such tensor that is not null (inputs
   * first), and takes 0 when all of them are null.  dim -> its tensors.
   */
  static Map<String, List<String>> derivedDims(List<Param> sig) {
    Map<String, List<String>> out = new LinkedHashMap<>();
    List<Param> ordered = new ArrayList<>();
    for (Param p : sig) if (p.isTensor() && p.role.equals("in")) ordered.add(p);
    for (Param p : sig) if (p.isTensor() && !p.role.equals("in")) ordered.add(p);
    for (Param p : ordered) {
      if (p.nullable || p.shape.size() != 1) continue;
      for (Param d : sig) {
        if (d.role.equals("dim") && d.name.equals(p.shape.get(0))) {
          out.computeIfAbsent(d.name, k -> new ArrayList<>()).add(p.name);
        }
      }
    }
    return out;
  }

  // --- one call ---------------------------------------------------------------

  /** The arguments of one call, by C parameter name. */
  static final class Call {
    final String name;
    final String kernel;
    final Map<String, Object> dims;
    final Map<String, Object> flags;
    final Map<String, Object> scalars;
    /** float[], int[] or byte[]; a tensor absent from the map is passed as null. */
    final Map<String, Object> tensors = new LinkedHashMap<>();
    String missing;

    Call(Map<String, Object> c) {
      name = (String) c.get("name");
      kernel = (String) c.get("kernel");
      dims = asMap(c.get("dims"));
      flags = asMap(c.get("flags"));
      scalars = asMap(c.get("scalars"));
    }

    private Object get(Map<String, Object> m, String key) {
      if (!m.containsKey(key)) {
        if (missing == null) missing = key;
        return null;
      }
      return m.get(key);
    }

    long dimLong(String key) {
      Object v = get(dims, key);
      return v == null ? 0 : ((Json.Num) v).asLong();
    }

    /** An explicit dim of the facade (an int). */
    int D(String key) {
      long v = dimLong(key);
      if (v != (int) v) throw new IllegalStateException("dim " + key + " = " + v + " does not fit a Java int");
      return (int) v;
    }

    boolean FL(String key) {
      Object v = get(flags, key);
      return Boolean.TRUE.equals(v);
    }

    /** A float scalar: the double of the decimal, then float (as the C runner's (float)strtod). */
    float SF(String key) {
      return (float) scalarDouble(get(scalars, key));
    }

    int SI(String key) {
      Object v = get(scalars, key);
      return v == null ? 0 : (int) ((Json.Num) v).asLong();
    }

    long SL(String key) {
      Object v = get(scalars, key);
      return v == null ? 0 : ((Json.Num) v).asLong();
    }

    /** A u64 scalar (a decimal string): its 64 bits as a long, as the facade takes it. */
    long SU(String key) {
      Object v = get(scalars, key);
      if (v == null) return 0;
      return Long.parseUnsignedLong(v instanceof String ? (String) v : v.toString());
    }

    float[] TF(String key) {
      return (float[]) tensors.get(key);
    }

    int[] TI(String key) {
      return (int[]) tensors.get(key);
    }

    byte[] TB(String key) {
      return (byte[]) tensors.get(key);
    }

    /** bfloat16 / float16 bit patterns. */
    short[] TH(String key) {
      return (short[]) tensors.get(key);
    }

    /** An i32 scalar holding a kb_activation value. */
    Activation act(String key) {
      Activation a = Activation.fromCode(SI(key));
      if (a == null) throw new IllegalStateException(key + " = " + SI(key) + " is no Activation");
      return a;
    }

    /** An i32 scalar holding a kb_rope_style value. */
    RopeStyle ropeStyle(String key) {
      RopeStyle r = RopeStyle.fromCode(SI(key));
      if (r == null) throw new IllegalStateException(key + " = " + SI(key) + " is no RopeStyle");
      return r;
    }

    /** An i32 scalar holding a kb_rope_scaling value. */
    RopeScaling ropeScaling(String key) {
      RopeScaling r = RopeScaling.fromCode(SI(key));
      if (r == null) throw new IllegalStateException(key + " = " + SI(key) + " is no RopeScaling");
      return r;
    }

    /** An i32 scalar holding a kb_dtype value (GGML's type number). */
    Dtype dtype(String key) {
      Dtype d = Dtype.fromCode(SI(key));
      if (d == null) throw new IllegalStateException(key + " = " + SI(key) + " is no Dtype");
      return d;
    }

    /** An i32 scalar holding a kb_moe_routing value. */
    MoeRouting routing(String key) {
      MoeRouting m = MoeRouting.fromCode(SI(key));
      if (m == null) throw new IllegalStateException(key + " = " + SI(key) + " is no MoeRouting");
      return m;
    }
  }

  static double scalarDouble(Object v) {
    if (v == null) return 0;
    if (v instanceof Json.Num) return ((Json.Num) v).asDouble();
    String s = ((String) v).trim().toLowerCase();
    switch (s) {
      case "nan":
        return Double.NaN;
      case "inf":
      case "+inf":
      case "infinity":
        return Double.POSITIVE_INFINITY;
      case "-inf":
      case "-infinity":
        return Double.NEGATIVE_INFINITY;
      default:
        return Double.parseDouble(s);
    }
  }

  /**
   * Calls c.kernel through the public facade.  Dims the facade derives from
   * array lengths are not passed (see derivedDims).  Returns false for an
   * unknown kernel; a failing call throws KernelBridgeException.
   */
  static boolean dispatch(Context ctx, Call c) {
    switch (c.kernel) {
      case "silu":
        KernelBridge.silu(ctx, c.TF("x"), c.TF("y"));
        break;
      case "gelu":
        KernelBridge.gelu(ctx, c.TF("x"), c.TF("y"));
        break;
      case "gelu_tanh":
        KernelBridge.geluTanh(ctx, c.TF("x"), c.TF("y"));
        break;
      case "add":
        KernelBridge.add(ctx, c.TF("a"), c.TF("b"), c.TF("y"));
        break;
      case "mul":
        KernelBridge.mul(ctx, c.TF("a"), c.TF("b"), c.TF("y"));
        break;
      case "scale":
        KernelBridge.scale(ctx, c.SF("alpha"), c.TF("x"), c.TF("y"));
        break;
      case "add_bias":
        KernelBridge.addBias(ctx, c.D("rows"), c.TF("x"), c.TF("bias"), c.TF("y"));
        break;
      case "softmax":
        KernelBridge.softmax(ctx, c.D("rows"), c.D("cols"), c.TF("x"), c.TF("y"));
        break;
      case "log_softmax":
        KernelBridge.logSoftmax(ctx, c.D("rows"), c.D("cols"), c.TF("x"), c.TF("y"));
        break;
      case "rmsnorm":
        KernelBridge.rmsnorm(ctx, c.D("rows"), c.TF("x"), c.TF("weight"), c.SF("eps"), c.TF("y"));
        break;
      case "layernorm":
        KernelBridge.layernorm(ctx, c.D("rows"), c.D("cols"), c.TF("x"), c.TF("weight"), c.TF("bias"), c.SF("eps"),
            c.TF("y"));
        break;
      case "gemm":
        KernelBridge.gemm(ctx, c.FL("trans_a"), c.FL("trans_b"), c.D("m"), c.D("n"), c.D("k"), c.SF("alpha"),
            c.TF("a"), c.D("lda"), c.TF("b"), c.D("ldb"), c.SF("beta"), c.TF("c"), c.D("ldc"));
        break;
      case "embedding":
        KernelBridge.embedding(ctx, c.D("vocab"), c.D("dim"), c.TI("ids"), c.TF("table"), c.TF("out"));
        break;
      case "rope":
        KernelBridge.rope(ctx, c.D("heads"), c.D("head_dim"), c.TF("x"), c.TI("positions"), c.SF("theta"), c.TF("y"));
        break;
      case "attention":
        KernelBridge.attention(ctx, c.D("batch"), c.D("heads"), c.D("kv_heads"), c.D("seq_q"), c.D("seq_kv"),
            c.D("head_dim"), c.TF("q"), c.TF("k"), c.TF("v"), c.FL("causal"), c.SF("scale"), c.TF("out"));
        break;
      case "cross_entropy":
        KernelBridge.crossEntropy(ctx, c.D("classes"), c.TF("logits"), c.TI("targets"), c.SI("ignore_index"),
            c.TF("losses"), c.TF("mean_loss"));
        break;
      case "cross_entropy_backward":
        KernelBridge.crossEntropyBackward(ctx, c.D("classes"), c.TF("logits"), c.TI("targets"), c.SI("ignore_index"),
            c.SF("dloss"), c.TF("dlogits"));
        break;
      case "adamw_step":
        KernelBridge.adamwStep(ctx, c.TF("params"), c.TF("grads"), c.TF("m"), c.TF("v"), c.SF("lr"), c.SF("beta1"),
            c.SF("beta2"), c.SF("eps"), c.SF("weight_decay"), c.SL("step"));
        break;
      case "argmax":
        KernelBridge.argmax(ctx, c.D("cols"), c.TF("x"), c.TI("out"));
        break;
      case "embedding_bf16":
        KernelBridge.embeddingBf16(ctx, c.D("vocab"), c.D("dim"), c.TI("ids"), c.TH("table"), c.TH("out"));
        break;
      case "embedding_f16":
        KernelBridge.embeddingF16(ctx, c.D("vocab"), c.D("dim"), c.TI("ids"), c.TH("table"), c.TH("out"));
        break;
      case "argmax_bf16":
        KernelBridge.argmaxBf16(ctx, c.D("cols"), c.TH("x"), c.TI("out"));
        break;
      case "argmax_f16":
        KernelBridge.argmaxF16(ctx, c.D("cols"), c.TH("x"), c.TI("out"));
        break;
      case "sample_bf16":
        KernelBridge.sampleBf16(ctx, c.D("cols"), c.TH("logits"), c.SF("temperature"), c.SU("seed"), c.TI("out"));
        break;
      case "sample_f16":
        KernelBridge.sampleF16(ctx, c.D("cols"), c.TH("logits"), c.SF("temperature"), c.SU("seed"), c.TI("out"));
        break;
      case "topk_sample_bf16":
        KernelBridge.topkSampleBf16(ctx, c.D("cols"), c.TH("logits"), c.D("k"), c.SF("temperature"), c.SU("seed"),
            c.TI("out"));
        break;
      case "topk_sample_f16":
        KernelBridge.topkSampleF16(ctx, c.D("cols"), c.TH("logits"), c.D("k"), c.SF("temperature"), c.SU("seed"),
            c.TI("out"));
        break;
      case "topp_sample_bf16":
        KernelBridge.toppSampleBf16(ctx, c.D("cols"), c.TH("logits"), c.SF("p"), c.SF("temperature"), c.SU("seed"),
            c.TI("out"));
        break;
      case "topp_sample_f16":
        KernelBridge.toppSampleF16(ctx, c.D("cols"), c.TH("logits"), c.SF("p"), c.SF("temperature"), c.SU("seed"),
            c.TI("out"));
        break;
      case "sample":
        KernelBridge.sample(ctx, c.D("cols"), c.TF("logits"), c.SF("temperature"), c.SU("seed"), c.TI("out"));
        break;
      case "topk_sample":
        KernelBridge.topkSample(ctx, c.D("cols"), c.TF("logits"), c.D("k"), c.SF("temperature"), c.SU("seed"),
            c.TI("out"));
        break;
      case "topp_sample":
        KernelBridge.toppSample(ctx, c.D("cols"), c.TF("logits"), c.SF("p"), c.SF("temperature"), c.SU("seed"),
            c.TI("out"));
        break;
      case "rope_ex":
        KernelBridge.ropeEx(ctx, c.D("batch"), c.D("seq"), c.D("q_heads"), c.D("kv_heads"), c.D("head_dim"),
            c.D("rotary_dim"), c.ropeStyle("style"), c.TI("positions"), c.SF("theta"), c.ropeScaling("scaling"),
            c.SF("factor"), c.SF("low_freq_factor"), c.SF("high_freq_factor"), c.SL("original_max_position"),
            c.TF("q"), c.TF("k"));
        break;
      case "linear":
        KernelBridge.linear(ctx, c.D("rows"), c.D("in_features"), c.D("out_features"), c.TF("x"), c.TF("weight"),
            c.TF("bias"), c.act("act"), c.TF("y"));
        break;
      case "attention_ex": {
        // Through the options builder (the idiomatic entry point), which
        // calls the facade's attentionEx with every argument.
        AttentionOptions o = new AttentionOptions(c.D("batch"), c.D("heads"), c.D("kv_heads"), c.D("seq_q"),
            c.D("seq_kv"), c.D("head_dim"))
            .seqMajor(c.FL("seq_major"))
            .kvLengths(c.TI("kv_lengths"))
            .causal(c.FL("causal"))
            .causalBottomRight(c.FL("causal_bottom_right"))
            .scale(c.SF("scale"));
        o.mask(c.TF("mask"), c.D("mask_batch"), c.D("mask_heads"), c.D("mask_q"));
        o.run(ctx, c.TF("q"), c.TF("k"), c.TF("v"), c.TF("out"));
        break;
      }
      case "gemm_batched":
        KernelBridge.gemmBatched(ctx, c.FL("trans_a"), c.FL("trans_b"), c.D("batch"), c.D("m"), c.D("n"), c.D("k"),
            c.SF("alpha"), c.TF("a"), c.D("lda"), c.D("stride_a"), c.TF("b"), c.D("ldb"), c.D("stride_b"),
            c.SF("beta"), c.TF("c"), c.D("ldc"), c.D("stride_c"));
        break;
      // Tensors in a storage format: their bytes in byte[]s, the byte counts derived.
      case "quantize":
        KernelBridge.quantize(ctx, c.dtype("type"), c.D("rows"), c.D("cols"), c.TF("x"), c.TB("y"));
        break;
      case "dequantize":
        KernelBridge.dequantize(ctx, c.dtype("type"), c.D("rows"), c.D("cols"), c.TB("x"), c.TF("y"));
        break;
      case "linear_w":
        KernelBridge.linearW(ctx, c.D("rows"), c.D("in_features"), c.D("out_features"), c.TF("x"),
            c.dtype("weight_type"), c.TB("weight"), c.TF("bias"), c.act("act"), c.TF("y"));
        break;
      case "linear_glu_w":
        KernelBridge.linearGluW(ctx, c.D("rows"), c.D("in_features"), c.D("out_features"), c.TF("x"),
            c.dtype("weight_type"), c.TB("gate_weight"), c.TB("up_weight"), c.act("act"), c.TF("y"));
        break;
      case "moe_experts":
        KernelBridge.moeExperts(ctx, c.D("tokens"), c.D("hidden"), c.D("ffn"), c.D("experts"), c.D("top_k"),
            c.TF("x"), c.TI("ids"), c.TF("weights"), c.dtype("weight_type"), c.TB("gate_weight"),
            c.TB("up_weight"), c.TB("down_weight"), c.act("act"), c.TF("y"));
        break;
      case "glu":
        KernelBridge.glu(ctx, c.D("rows"), c.D("cols"), c.TF("gate"), c.D("ld_gate"), c.TF("up"), c.D("ld_up"),
            c.act("act"), c.TF("y"));
        break;
      case "add_rmsnorm":
        KernelBridge.addRmsnorm(ctx, c.D("rows"), c.TF("x"), c.TF("residual"), c.TF("weight"), c.SF("eps"),
            c.TF("y"));
        break;
      case "embedding_w":
        KernelBridge.embeddingW(ctx, c.D("vocab"), c.D("dim"), c.TI("ids"), c.dtype("table_type"), c.TB("table"),
            c.TF("out"));
        break;
      case "moe_route":
        KernelBridge.moeRoute(ctx, c.D("tokens"), c.D("experts"), c.D("top_k"), c.routing("routing"), c.TF("logits"),
            c.TI("ids"), c.TF("weights"));
        break;
      case "kv_cache_append":
        KernelBridge.kvCacheAppend(ctx, c.D("kv_heads"), c.D("seq_new"), c.D("capacity"), c.D("head_dim"),
            c.FL("seq_major"), c.TF("k_new"), c.TF("v_new"), c.TI("positions"), c.TF("k_cache"), c.TF("v_cache"));
        break;
      case "kv_cache_append_to_bf16":
        KernelBridge.kvCacheAppendToBf16(ctx, c.D("kv_heads"), c.D("seq_new"), c.D("capacity"), c.D("head_dim"),
            c.FL("seq_major"), c.TF("k_new"), c.TF("v_new"), c.TI("positions"), c.TH("k_cache"), c.TH("v_cache"));
        break;
      case "kv_cache_append_to_f16":
        KernelBridge.kvCacheAppendToF16(ctx, c.D("kv_heads"), c.D("seq_new"), c.D("capacity"), c.D("head_dim"),
            c.FL("seq_major"), c.TF("k_new"), c.TF("v_new"), c.TI("positions"), c.TH("k_cache"), c.TH("v_cache"));
        break;
      case "attention_ex_kv_bf16":
        KernelBridge.attentionExKvBf16(ctx, c.D("batch"), c.D("heads"), c.D("kv_heads"), c.D("seq_q"), c.D("seq_kv"),
            c.D("head_dim"), c.FL("seq_major"), c.TF("q"), c.TH("k"), c.TH("v"), c.TI("kv_lengths"),
            c.D("mask_batch"), c.D("mask_heads"), c.D("mask_q"), c.TF("mask"), c.FL("causal"),
            c.FL("causal_bottom_right"), c.SF("scale"), c.TF("out"));
        break;
      case "attention_ex_kv_f16":
        KernelBridge.attentionExKvF16(ctx, c.D("batch"), c.D("heads"), c.D("kv_heads"), c.D("seq_q"), c.D("seq_kv"),
            c.D("head_dim"), c.FL("seq_major"), c.TF("q"), c.TH("k"), c.TH("v"), c.TI("kv_lengths"),
            c.D("mask_batch"), c.D("mask_heads"), c.D("mask_q"), c.TF("mask"), c.FL("causal"),
            c.FL("causal_bottom_right"), c.SF("scale"), c.TF("out"));
        break;
      default:
        return false;
    }
    return true;
  }

  /** The value the facade derives for a dim from the call's arrays (first non-null tensor, else 0). */
  static long derivedValue(Call c, List<String> sources) {
    for (String s : sources) {
      Object a = c.tensors.get(s);
      if (a != null) return length(a);
    }
    return 0;
  }

  static int length(Object a) {
    if (a instanceof byte[]) return ((byte[]) a).length;
    if (a instanceof short[]) return ((short[]) a).length;
    return a instanceof float[] ? ((float[]) a).length : ((int[]) a).length;
  }

  // --- error metric and hash (docs/conformance.md) ----------------------------

  static double ulp32(double want) {
    long bits = Double.doubleToRawLongBits(want);
    int e = (int) ((bits >>> 52) & 0x7ff) - 1023;
    if (e < -126) e = -126;
    return Math.scalb(1.0, e - 23);
  }

  static double elementError(double got, double want, double floor) {
    if (Double.isNaN(got) && Double.isNaN(want)) return 0.0;
    if (got == want) return 0.0;
    if (!Double.isFinite(got) || !Double.isFinite(want)) return Double.POSITIVE_INFINITY;
    double denom = ulp32(want);
    if (floor > denom) denom = floor;
    return Math.abs(got - want) / denom;
  }

  /** FNV-1a 64 over the array's bytes in little-endian order (raw bits: NaN payloads count). */
  static long fnv1a64(Object a) {
    long h = 0xcbf29ce484222325L;
    if (a instanceof byte[]) {
      for (byte b : (byte[]) a) {
        h ^= b & 0xff;
        h *= 0x100000001b3L;
      }
      return h;
    }
    if (a instanceof short[]) {
      for (short v : (short[]) a) {
        for (int b = 0; b < 2; b++) {
          h ^= (v >>> (8 * b)) & 0xff;
          h *= 0x100000001b3L;
        }
      }
      return h;
    }
    int n = length(a);
    boolean f = a instanceof float[];
    for (int i = 0; i < n; i++) {
      int v = f ? Float.floatToRawIntBits(((float[]) a)[i]) : ((int[]) a)[i];
      for (int b = 0; b < 4; b++) {
        h ^= (v >>> (8 * b)) & 0xff;
        h *= 0x100000001b3L;
      }
    }
    return h;
  }

  static String hex16(long h) {
    String s = Long.toHexString(h);
    return "0".repeat(16 - s.length()) + s;
  }

  /** Bitwise equality (raw bits, unlike Arrays.equals for float[]). */
  static boolean sameBits(Object a, Object b) {
    if (a instanceof float[]) {
      float[] x = (float[]) a, y = (float[]) b;
      if (x.length != y.length) return false;
      for (int i = 0; i < x.length; i++) {
        if (Float.floatToRawIntBits(x[i]) != Float.floatToRawIntBits(y[i])) return false;
      }
      return true;
    }
    if (a instanceof byte[]) return java.util.Arrays.equals((byte[]) a, (byte[]) b);
    if (a instanceof short[]) return java.util.Arrays.equals((short[]) a, (short[]) b);
    return java.util.Arrays.equals((int[]) a, (int[]) b);
  }

  static Object copyOf(Object a) {
    if (a instanceof byte[]) return ((byte[]) a).clone();
    if (a instanceof short[]) return ((short[]) a).clone();
    return a instanceof float[] ? ((float[]) a).clone() : ((int[]) a).clone();
  }

  /** The Java array a tensor of this dtype is passed as (for messages). */
  static String javaArray(String dtype) {
    return dtype.equals("f32") ? "float[]" : dtype.equals("u8") ? "byte[]"
        : dtype.equals("bf16") || dtype.equals("f16") ? "short[]" : "int[]";
  }

  // --- golden cases -----------------------------------------------------------

  static final class Tally {
    int golden, goldenFailed, bad, badFailed, badNa;
  }

  static String statusName(KernelBridgeException e) {
    return KernelBridge.statusString(e.status());
  }

  static void runGolden(Context ctx, Path dir, Map<String, Object> json, Map<String, List<Param>> sigs,
      Map<String, Object> tolerances, StringBuilder out, boolean first, Tally tl) {
    Call c = new Call(json);
    // A case may carry its own bound (kb_linear_w with block-quantized weights).
    Map<String, Object> tol = asMap(json.containsKey("tolerance") ? json.get("tolerance") : tolerances.get(c.kernel));
    double tolUlp = tol == null ? 0 : scalarDouble(tol.get("ulp"));
    double tolAbs = tol == null ? 0 : scalarDouble(tol.get("abs"));
    List<Param> sig = sigs.get(c.kernel);
    Map<String, Object> inputs = asMap(json.get("inputs"));
    Map<String, Object> expected = asMap(json.get("expected"));
    Map<String, Object> alias = asMap(json.get("alias"));
    String err = "";
    String status = "OK";
    boolean ok = true;
    // Outputs in the order the C runner hashes them: inputs, aliases, then the others.
    List<String> order = new ArrayList<>();
    Map<String, Npy> want = new LinkedHashMap<>();
    try {
      if (sig == null) throw new IllegalStateException("unknown kernel " + c.kernel);
      for (Param p : sig) {
        if (!p.isTensor() || !inputs.containsKey(p.name)) continue;
        Npy a = Npy.read(dir.resolve((String) inputs.get(p.name)));
        if (a.dtype == Npy.Dtype.F64) {
          throw new IOException(inputs.get(p.name) + ": inputs must be <f4, <i4, <u2 or |u1");
        }
        c.tensors.put(p.name, a.dtype == Npy.Dtype.F32 ? a.f32 : a.dtype == Npy.Dtype.I32 ? a.i32
            : a.dtype == Npy.Dtype.U16 ? a.u16 : a.u8);
        if (expected.containsKey(p.name)) order.add(p.name);
      }
      for (Param p : sig) {
        if (!p.isTensor() || !alias.containsKey(p.name)) continue;
        Object src = c.tensors.get((String) alias.get(p.name));
        if (src == null) throw new IllegalStateException("alias of unknown input " + alias.get(p.name));
        c.tensors.put(p.name, src); // the same array: in place
        if (expected.containsKey(p.name) && !order.contains(p.name)) order.add(p.name);
      }
      for (Param p : sig) {
        if (p.isTensor() && expected.containsKey(p.name) && !order.contains(p.name)) order.add(p.name);
      }
      for (String k : expected.keySet()) if (!order.contains(k)) order.add(k);
      // Outputs that are not inputs get fresh arrays pre-filled with quiet NaN (f32), -1 (i32) or
      // 0x80 (u8: -128, a code the Q8_0 quantizer never writes), as the C runner's.
      for (String name : order) {
        Npy w = Npy.read(dir.resolve((String) expected.get(name)));
        want.put(name, w);
        Object t = c.tensors.get(name);
        if (t == null) {
          if (w.dtype == Npy.Dtype.I32) {
            int[] a = new int[w.count];
            java.util.Arrays.fill(a, -1);
            t = a;
          } else if (w.dtype == Npy.Dtype.U8) {
            byte[] a = new byte[w.count];
            java.util.Arrays.fill(a, (byte) 0x80);
            t = a;
          } else if (w.dtype == Npy.Dtype.U16) {
            short[] a = new short[w.count];
            java.util.Arrays.fill(a, (short) 0xffff); // a NaN pattern in both formats
            t = a;
          } else {
            float[] a = new float[w.count];
            java.util.Arrays.fill(a, QNAN);
            t = a;
          }
          c.tensors.put(name, t);
        }
        if (length(t) != w.count) {
          throw new IllegalStateException(name + ": expected " + w.count + " elements, buffer has " + length(t));
        }
      }
      // The arrays must describe the case's dims where the facade derives them.
      for (Map.Entry<String, List<String>> d : derivedDims(sig).entrySet()) {
        long v = derivedValue(c, d.getValue());
        if (v != c.dimLong(d.getKey())) {
          throw new IllegalStateException("the arrays give " + d.getKey() + " = " + v + ", the case says "
              + c.dimLong(d.getKey()));
        }
      }
      c.missing = null;
      if (!dispatch(ctx, c)) throw new IllegalStateException("unknown kernel " + c.kernel);
      if (c.missing != null) throw new IllegalStateException("case lacks parameter " + c.missing);
    } catch (KernelBridgeException e) {
      ok = false;
      status = statusName(e);
      err = status + ": " + e.getMessage();
    } catch (Throwable e) {
      ok = false;
      err = e.toString();
    }

    double maxErr = 0.0;
    double floor = tolUlp > 0 ? tolAbs / tolUlp : 0.0;
    out.append(first ? "" : ",").append("\n  {\"name\": ");
    Json.string(out, c.name);
    out.append(", \"kernel\": ");
    Json.string(out, c.kernel);
    out.append(", \"status\": ");
    Json.string(out, ok ? "OK" : status);
    out.append(", \"hashes\": {");
    int nh = 0;
    for (int o = 0; ok && o < order.size(); o++) {
      String name = order.get(o);
      Object t = c.tensors.get(name);
      Npy w = want.get(name);
      for (int j = 0; j < w.count; j++) {
        double e;
        if (t instanceof byte[]) {
          // Bytes of a storage format: exact, like integers.
          double g = ((byte[]) t)[j] & 0xff;
          e = w.dtype == Npy.Dtype.U8 && g == (w.u8[j] & 0xff) ? 0.0 : Double.POSITIVE_INFINITY;
        } else if (t instanceof short[]) {
          // bfloat16 / float16 bit patterns (a copied row): exact.
          e = w.dtype == Npy.Dtype.U16 && ((short[]) t)[j] == w.u16[j] ? 0.0 : Double.POSITIVE_INFINITY;
        } else if (t instanceof int[]) {
          double g = ((int[]) t)[j];
          double x = w.dtype == Npy.Dtype.I32 ? (double) w.i32[j] : w.f64[j];
          // Integers are exact whatever the tolerance (kb_moe_route's ids
          // sit beside float weights with a tolerance of ulps).
          e = g == x ? 0.0 : Double.POSITIVE_INFINITY;
        } else {
          double x = w.dtype == Npy.Dtype.F64 ? w.f64[j] : (double) w.f32[j];
          e = elementError((double) ((float[]) t)[j], x, floor);
        }
        if (!(e <= maxErr)) maxErr = e;
      }
      out.append(nh++ > 0 ? ", " : "");
      Json.string(out, name);
      out.append(": \"").append(hex16(fnv1a64(t))).append('"');
    }
    boolean passed = ok && maxErr <= tolUlp;
    out.append("}, \"max_ulp\": ");
    if (ok) {
      Json.number(out, maxErr);
    } else {
      out.append("\"inf\"");
    }
    out.append(", \"passed\": ").append(passed ? "true" : "false");
    if (!ok) {
      out.append(", \"error\": ");
      Json.string(out, err);
    }
    out.append("}");
    tl.golden++;
    if (!passed) {
      tl.goldenFailed++;
      System.err.printf("FAIL %s: %s (max_ulp %g, tolerance %g)%n", c.name, ok ? "out of tolerance" : err, maxErr,
          tolUlp);
    }
  }

  // --- bad-input cases --------------------------------------------------------

  /** Why the facade cannot express this call, or null when it can. */
  static String cannotExpress(Map<String, Object> json, List<Param> sig, Call c) {
    List<?> requires = (List<?>) json.get("requires");
    List<?> nulls = (List<?>) json.get("null");
    Map<String, Object> tensors = asMap(json.get("tensors"));
    Map<String, Object> overlap = asMap(json.get("overlap"));
    Map<String, List<String>> derived = derivedDims(sig);
    for (Map.Entry<String, List<String>> d : derived.entrySet()) {
      long v = c.dimLong(d.getKey());
      String from = String.join(", ", d.getValue());
      if (v < 0) {
        return "negative_dim: the Java facade reads " + d.getKey() + " from the length of " + from
            + ", which cannot be negative";
      }
      if (v > Integer.MAX_VALUE) {
        return "huge_dim: the Java facade reads " + d.getKey() + " from the length of " + from
            + ", and " + d.getKey() + " = " + v + " exceeds the largest Java array";
      }
      boolean allNull = true;
      for (String s : d.getValue()) if (!nulls.contains(s)) allNull = false;
      if (allNull && v != 0) {
        return "null: the Java facade reads " + d.getKey() + " from the length of " + from
            + ", all null in this case, so " + d.getKey() + " = " + v + " cannot be stated (a null there means "
            + d.getKey() + " = 0)";
      }
    }
    for (Param p : sig) {
      if (!p.role.equals("dim") || derived.containsKey(p.name)) continue;
      long v = c.dimLong(p.name);
      if (v != (int) v) {
        return "huge_dim: the Java facade takes " + p.name + " as an int, and " + v + " does not fit";
      }
    }
    for (Map.Entry<String, Object> e : overlap.entrySet()) {
      Map<String, Object> o = asMap(e.getValue());
      String with = (String) o.get("with");
      long offset = ((Json.Num) o.get("offset")).asLong();
      Param a = param(sig, e.getKey()), b = param(sig, with);
      if (a == null || b == null) return null; // a corpus error: reported when the call is set up
      if (!a.dtype.equals(b.dtype)) {
        return "overlap: " + e.getKey() + " (" + a.dtype + ") would view the memory of " + with + " (" + b.dtype
            + "); a Java " + javaArray(a.dtype) + " cannot view a " + javaArray(b.dtype);
      }
      if (offset != 0 || arrayLength(asMap(tensors.get(e.getKey())), a, c) != arrayLength(asMap(tensors.get(with)), b, c)) {
        return "overlap: " + e.getKey() + " would start " + offset + " elements into " + with
            + " with another length; Java arrays cannot be partial views of one another (only the whole same"
            + " array can be passed twice)";
      }
    }
    if (requires.contains("bad_enum")) {
      return "bad_enum: C enums are Java enums in the facade (Activation, Dtype, RopeStyle, RopeScaling): a value outside the enum cannot"
          + " be passed";
    }
    for (Object r : requires) {
      String s = (String) r;
      if (!s.equals("null") && !s.equals("negative_dim") && !s.equals("huge_dim") && !s.equals("explicit_ld")
          && !s.equals("overlap") && !s.equals("length_mismatch")) {
        return s + ": a feature this runner does not know";
      }
    }
    return null;
  }

  static Param param(List<Param> sig, String name) {
    for (Param p : sig) if (p.name.equals(name)) return p;
    return null;
  }

  /**
   * The length of the array built for a bad-input tensor: its logical shape
   * (what a binding that derives sizes from its arrays builds), except for a
   * tensor with a row stride (whose whole buffer is passed with an explicit
   * ld, as in C) or without a shape (a negative or absurd dim): len.
   */
  static long arrayLength(Map<String, Object> t, Param p, Call c) {
    long len = ((Json.Num) t.get("len")).asLong();
    Object shape = t.get("shape");
    if (p.ld != null || shape == null) return len;
    long n = 1;
    for (Object d : (List<?>) shape) n = Math.multiplyExact(n, ((Json.Num) d).asLong());
    return n;
  }

  static void runBad(Context ctx, Map<String, Object> json, Map<String, List<Param>> sigs, StringBuilder out,
      boolean first, Tally tl) {
    Call c = new Call(json);
    String expected = (String) json.get("expected");
    String got = "n/a";
    String na = null;
    String err = "";
    boolean ok = false;
    boolean untouched = true;
    try {
      List<Param> sig = sigs.get(c.kernel);
      if (sig == null) throw new IllegalStateException("unknown kernel " + c.kernel);
      na = cannotExpress(json, sig, c);
      if (na == null) {
        got = "RUNNER_ERROR";
        Map<String, Object> tensors = asMap(json.get("tensors"));
        Map<String, Object> overlap = asMap(json.get("overlap"));
        for (Param p : sig) {
          if (!p.isTensor() || !tensors.containsKey(p.name) || overlap.containsKey(p.name)) continue;
          Map<String, Object> t = asMap(tensors.get(p.name));
          long n = arrayLength(t, p, c);
          if (n > Integer.MAX_VALUE) throw new IllegalStateException(p.name + ": " + n + " elements");
          List<?> values = (List<?>) t.get("values");
          Object a;
          if (p.dtype.equals("f32")) {
            float[] f = new float[(int) n];
            java.util.Arrays.fill(f, 1.0f);
            for (int i = 0; values != null && i < values.size() && i < f.length; i++) {
              f[i] = (float) scalarDouble(values.get(i));
            }
            a = f;
          } else if (p.dtype.equals("bf16") || p.dtype.equals("f16")) {
            short[] f = new short[(int) n]; // bit patterns, 0 unless values are given
            for (int i = 0; values != null && i < values.size() && i < f.length; i++) {
              f[i] = (short) ((Json.Num) values.get(i)).asLong();
            }
            a = f;
          } else if (p.dtype.equals("u8")) {
            byte[] f = new byte[(int) n]; // 0 unless values are given, as the C runner's
            for (int i = 0; values != null && i < values.size() && i < f.length; i++) {
              f[i] = (byte) ((Json.Num) values.get(i)).asLong();
            }
            a = f;
          } else {
            int[] f = new int[(int) n];
            for (int i = 0; values != null && i < values.size() && i < f.length; i++) {
              f[i] = (int) ((Json.Num) values.get(i)).asLong();
            }
            a = f;
          }
          c.tensors.put(p.name, a);
        }
        // Overlaps the facade can express: the whole same array (checked in cannotExpress).
        for (Map.Entry<String, Object> e : overlap.entrySet()) {
          Object with = c.tensors.get((String) asMap(e.getValue()).get("with"));
          if (with == null) throw new IllegalStateException("bad overlap " + e.getKey());
          c.tensors.put(e.getKey(), with);
        }
        List<?> requires = (List<?>) json.get("requires");
        if (!requires.contains("length_mismatch")) {
          for (Map.Entry<String, List<String>> d : derivedDims(sig).entrySet()) {
            long v = derivedValue(c, d.getValue());
            if (v != c.dimLong(d.getKey())) {
              throw new IllegalStateException("the arrays give " + d.getKey() + " = " + v + ", the case says "
                  + c.dimLong(d.getKey()));
            }
          }
        }
        // Snapshot every array (once per array: an alias is the same array).
        Map<Object, Object> before = new IdentityHashMap<>();
        for (Object a : c.tensors.values()) before.put(a, copyOf(a));
        c.missing = null;
        try {
          if (!dispatch(ctx, c)) throw new IllegalStateException("unknown kernel " + c.kernel);
          got = "OK";
        } catch (KernelBridgeException e) {
          got = statusName(e);
          if (!got.equals(expected)) err = e.getMessage();
          for (Map.Entry<Object, Object> b : before.entrySet()) {
            if (!sameBits(b.getKey(), b.getValue())) untouched = false;
          }
        }
        if (c.missing != null) {
          got = "RUNNER_ERROR";
          err = "cannot call " + c.kernel + " (missing " + c.missing + ")";
        }
        ok = got.equals(expected) && untouched;
      }
    } catch (Throwable e) {
      // A runner error or an exception the binding should not throw: a failure, never a crash.
      na = null;
      got = e instanceof IllegalStateException ? "RUNNER_ERROR" : e.getClass().getSimpleName();
      err = e.toString();
      ok = false;
    }
    out.append(first ? "" : ",").append("\n  {\"name\": ");
    Json.string(out, c.name);
    out.append(", \"kernel\": ");
    Json.string(out, c.kernel);
    out.append(", \"expected\": ");
    Json.string(out, expected);
    out.append(", \"got\": ");
    Json.string(out, got);
    if (na != null) {
      out.append(", \"reason\": ");
      Json.string(out, na);
    } else {
      out.append(", \"untouched\": ").append(untouched ? "true" : "false");
      if (!err.isEmpty()) {
        out.append(", \"reason\": ");
        Json.string(out, err);
      }
    }
    out.append("}");
    tl.bad++;
    if (na != null) tl.badNa++;
    if (na == null && !ok) {
      tl.badFailed++;
      System.err.printf("FAIL %s: expected %s, got %s%s %s%n", c.name, expected, got,
          untouched ? "" : " and an output was modified", err);
    }
  }

  // --- main -------------------------------------------------------------------

  @SuppressWarnings("unchecked")
  static Map<String, Object> asMap(Object o) {
    return o == null ? Collections.emptyMap() : (Map<String, Object>) o;
  }

  static Object readJson(Path p) throws IOException {
    return Json.parse(new String(Files.readAllBytes(p), StandardCharsets.UTF_8));
  }

  private static void usage() {
    System.err.println("usage: Runner --corpus DIR --out FILE [--threads N]");
  }

  public static void main(String[] args) {
    System.exit(run(args));
  }

  static int run(String[] args) {
    String dir = null, outPath = null;
    int threads = 4;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--corpus") && i + 1 < args.length) {
        dir = args[++i];
      } else if (args[i].equals("--out") && i + 1 < args.length) {
        outPath = args[++i];
      } else if (args[i].equals("--threads") && i + 1 < args.length) {
        threads = Integer.parseInt(args[++i]);
      } else {
        usage();
        return 2;
      }
    }
    if (dir == null || outPath == null) {
      usage();
      return 2;
    }
    Path corpus = Paths.get(dir);
    Map<String, Object> manifest, bad;
    try {
      manifest = asMap(readJson(corpus.resolve("manifest.json")));
      bad = asMap(readJson(corpus.resolve("bad_input.json")));
    } catch (IOException | RuntimeException e) {
      System.err.println("cannot read the corpus in " + dir + ": " + e);
      return 2;
    }
    Tally tl = new Tally();
    StringBuilder out = new StringBuilder();
    long numThreads;
    try (Context ctx = new Context(Backend.CPU, threads)) {
      numThreads = ctx.numThreads();
      out.append("{\n  \"format\": 1,\n  \"language\": \"java\",\n  \"backend\": \"cpu\",\n  \"version\": ");
      Json.string(out, KernelBridge.versionString());
      out.append(",\n  \"threads\": ").append(numThreads).append(",\n");
      Map<String, List<Param>> sigs = signatures(manifest.get("signatures"));
      Map<String, Object> tolerances = asMap(manifest.get("tolerances"));
      out.append("  \"cases\": [");
      boolean first = true;
      for (Object c : (List<?>) manifest.get("cases")) {
        runGolden(ctx, corpus, asMap(c), sigs, tolerances, out, first, tl);
        first = false;
      }
      out.append("\n  ],\n");
      Map<String, List<Param>> badSigs = bad.containsKey("signatures") ? signatures(bad.get("signatures")) : sigs;
      out.append("  \"bad_input\": [");
      first = true;
      for (Object c : (List<?>) bad.get("cases")) {
        runBad(ctx, asMap(c), badSigs, out, first, tl);
        first = false;
      }
      out.append("\n  ]\n");
      out.append("}\n");
    } catch (KernelBridgeException e) {
      System.err.println("Context: " + statusName(e) + ": " + e.getMessage());
      return 2;
    }
    try {
      Files.write(Paths.get(outPath), out.toString().getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      System.err.println("cannot write " + outPath + ": " + e);
      return 2;
    }
    System.out.printf("java runner: %d/%d golden cases passed, %d/%d bad-input cases as expected (%d n/a, threads %d)%n",
        tl.golden - tl.goldenFailed, tl.golden, tl.bad - tl.badFailed - tl.badNa, tl.bad - tl.badNa, tl.badNa,
        numThreads);
    return tl.goldenFailed == 0 && tl.badFailed == 0 ? 0 : 1;
  }
}
