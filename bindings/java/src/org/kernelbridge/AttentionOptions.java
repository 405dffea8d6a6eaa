package org.kernelbridge;

/**
 * The options of {@code kb_attention_ex} as a builder: shapes, layout, key lengths, an additive mask
 * and causal alignment.  {@link #run} calls {@link KernelBridge#attentionEx} (float32 arrays),
 * {@link #runBf16} / {@link #runF16} its 16-bit variants, so every check and error is the
 * facade's.
 *
 * <p>Defaults: head-major layout ({@code [batch, heads, seq, head_dim]}), every key taking part,
 * no mask, not causal, scale {@code 1 / sqrt(headDim)}.
 *
 * <pre>{@code
 * // A padded batch in the [batch, seq, heads, head_dim] layout a linear layer writes:
 * new AttentionOptions(batch, heads, heads, seq, seq, headDim)
 *     .seqMajor(true)
 *     .kvLengths(new int[] {seq, seq - 1})
 *     .run(ctx, q, k, v, out);
 * }</pre>
 *
 * <p>A builder is a plain value: not thread-safe while being changed, reusable afterwards.
 */
public final class AttentionOptions {
  private final int batch, heads, kvHeads, seqQ, seqKv, headDim;
  private boolean seqMajor, causal, bottomRight;
  private int[] kvLengths;
  private float[] mask;
  private short[] mask16;
  private int maskBatch = 1, maskHeads = 1, maskQ = 1;
  private float scale;

  /** Shapes: query head {@code h} reads key/value head {@code h / (heads / kvHeads)}. */
  public AttentionOptions(int batch, int heads, int kvHeads, int seqQ, int seqKv, int headDim) {
    this.batch = batch;
    this.heads = heads;
    this.kvHeads = kvHeads;
    this.seqQ = seqQ;
    this.seqKv = seqKv;
    this.headDim = headDim;
  }

  /** {@code true}: q, k, v and out are {@code [batch, seq, heads, head_dim]}. */
  public AttentionOptions seqMajor(boolean on) {
    seqMajor = on;
    return this;
  }

  /** Keys {@code j < kvLengths[b]} take part for batch row {@code b} (each in [0, seqKv]). */
  public AttentionOptions kvLengths(int[] lengths) {
    kvLengths = lengths;
    return this;
  }

  /**
   * A float32 additive mask {@code [maskBatch, maskHeads, maskQ, seqKv]}, broadcast over its
   * dimensions of size 1 (each 1 or batch / heads / seqQ); {@code -Infinity} removes a key.
   */
  public AttentionOptions mask(float[] mask, int maskBatch, int maskHeads, int maskQ) {
    this.mask = mask;
    this.mask16 = null;
    return maskDims(maskBatch, maskHeads, maskQ);
  }

  /** The mask of the 16-bit variants, as bit patterns (bf16 for runBf16, f16 for runF16). */
  public AttentionOptions mask(short[] mask, int maskBatch, int maskHeads, int maskQ) {
    this.mask16 = mask;
    this.mask = null;
    return maskDims(maskBatch, maskHeads, maskQ);
  }

  /** The mask dimensions alone (ignored by the library when there is no mask). */
  public AttentionOptions maskDims(int maskBatch, int maskHeads, int maskQ) {
    this.maskBatch = maskBatch;
    this.maskHeads = maskHeads;
    this.maskQ = maskQ;
    return this;
  }

  /** Causal masking aligned top-left (PyTorch's {@code is_causal}): query i sees keys j &lt;= i. */
  public AttentionOptions causal(boolean on) {
    causal = on;
    return this;
  }

  /**
   * With {@link #causal}: align bottom-right (the KV-cache case, FlashAttention's convention):
   * the last query sees every key of its row.  Without causal the call fails (INVALID_ARGUMENT).
   */
  public AttentionOptions causalBottomRight(boolean on) {
    bottomRight = on;
    return this;
  }

  /** The score scale; 0 (the default) means {@code 1 / sqrt(headDim)}. */
  public AttentionOptions scale(float scale) {
    this.scale = scale;
    return this;
  }

  /** float32 attention on ctx; a query row left without keys gives zeros. */
  public void run(Context ctx, float[] q, float[] k, float[] v, float[] out) {
    if (mask16 != null) {
      throw new KernelBridgeException(Status.INVALID_ARGUMENT,
          "kb_attention_ex: mask was given as 16-bit bits; the float32 kernel takes a float[] mask");
    }
    KernelBridge.attentionEx(ctx, batch, heads, kvHeads, seqQ, seqKv, headDim, seqMajor, q, k, v, kvLengths,
        maskBatch, maskHeads, maskQ, mask, causal, bottomRight, scale, out);
  }

  /** bfloat16 attention (every tensor as bf16 bits, the mask too) on ctx. */
  public void runBf16(Context ctx, short[] q, short[] k, short[] v, short[] out) {
    KernelBridge.attentionExBf16(ctx, batch, heads, kvHeads, seqQ, seqKv, headDim, seqMajor, q, k, v, kvLengths,
        maskBatch, maskHeads, maskQ, half("kb_attention_ex_bf16"), causal, bottomRight, scale, out);
  }

  /** float16 attention (every tensor as IEEE binary16 bits, the mask too) on ctx. */
  public void runF16(Context ctx, short[] q, short[] k, short[] v, short[] out) {
    KernelBridge.attentionExF16(ctx, batch, heads, kvHeads, seqQ, seqKv, headDim, seqMajor, q, k, v, kvLengths,
        maskBatch, maskHeads, maskQ, half("kb_attention_ex_f16"), causal, bottomRight, scale, out);
  }

  private short[] half(String fn) {
    if (mask != null) {
      throw new KernelBridgeException(Status.INVALID_ARGUMENT,
          fn + ": mask was given as a float[]; the 16-bit kernels take the mask as short[] bits");
    }
    return mask16;
  }
}
