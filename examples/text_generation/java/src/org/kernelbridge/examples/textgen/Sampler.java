package org.kernelbridge.examples.textgen;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import org.kernelbridge.Context;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;

/**
 * Picks the next token as c/main.c does: temperature 0 is greedy (kb_argmax); otherwise
 * kb_topk_sample (top-k), kb_topp_sample (top-p) or kb_sample, with seed + step as step's seed, so
 * every language draws the same tokens.  The temperature and p go to C as float, as in C.
 */
final class Sampler {
  private final Context ctx;
  private final int vocab;
  private final double temperature, topP;
  private final long topK, seed;
  /** The chosen id (a direct buffer, written by the kernel in place). */
  private final IntBuffer next;

  Sampler(Context ctx, int vocab, Options o) throws GenerateException {
    this.ctx = ctx;
    this.vocab = vocab;
    this.temperature = o.temperature;
    this.topP = o.topP;
    this.topK = o.topK;
    this.seed = o.seed;
    this.next = Decoder.ints(1);
  }

  /** The token of step step from logits (vocab floats). */
  int pick(FloatBuffer logits, long step) throws GenerateException {
    long s = seed + step; // uint64_t arithmetic: wraps
    try {
      if (temperature == 0.0) {
        KernelBridge.argmax(ctx, vocab, logits, next);
      } else if (topK > 0) {
        KernelBridge.topkSample(ctx, vocab, logits, (int) topK, (float) temperature, s, next);
      } else if (topP < 1.0) {
        KernelBridge.toppSample(ctx, vocab, logits, (float) topP, (float) temperature, s, next);
      } else {
        KernelBridge.sample(ctx, vocab, logits, (float) temperature, s, next);
      }
    } catch (KernelBridgeException e) {
      throw new GenerateException("sampling: " + e.getMessage());
    }
    return next.get(0);
  }
}
