package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.kernelbridge.Backend;
import org.kernelbridge.Context;
import org.kernelbridge.KernelBridge;

/**
 * Concurrency stress (docs/reliability.md), run under -Xcheck:jni by
 * unit_test.sh: 8 threads make 10 000 kernel calls each, first with each
 * thread's default context (the methods without a Context), then each on a
 * private Context with two threads; arrays and direct buffers alternate.
 * Every result must be bit-identical to the same call made alone on one
 * thread.
 */
public final class StressTest {
  private StressTest() {}

  static final int THREADS = 8;
  static final int CALLS = 10_000;
  static final int KINDS = 8;

  static float[] values(int n, int seed) {
    int s = seed;
    float[] out = new float[n];
    for (int i = 0; i < n; i++) {
      s = s * 1664525 + 1013904223;
      out[i] = ((s >>> 8) % 2000) / 500f - 2f;
    }
    return out;
  }

  static final float[] X64 = values(64, 1), Y64 = values(64, 2), W16 = values(16, 3);
  static final float[] Q = values(2 * 4 * 8, 4), K = values(6 * 8, 5), V = values(6 * 8, 6);
  static final float[] LOGITS = values(2 * 16, 7), A8 = values(64, 8), B8 = values(64, 9);
  static final float[] A64 = values(64 * 64, 10), B64 = values(64 * 64, 11);

  static FloatBuffer direct(float[] values) {
    FloatBuffer b = ByteBuffer.allocateDirect(values.length * 4).order(ByteOrder.nativeOrder()).asFloatBuffer();
    b.put(values).flip();
    return b;
  }

  /** Call kind on ctx (null: the thread's default context); the output's bits. */
  static int[] call(Context ctx, int kind) {
    float[] out = new float[kind == KINDS - 1 ? 64 * 64 : 64];
    int[] tokens = new int[2];
    boolean def = ctx == null;
    switch (kind) {
      case 0:
        if (def) KernelBridge.silu(X64, out);
        else KernelBridge.silu(ctx, X64, out);
        break;
      case 1:
        if (def) KernelBridge.gemm(false, true, 8, 8, 8, 1f, A8, 8, B8, 8, 0f, out, 8);
        else KernelBridge.gemm(ctx, false, true, 8, 8, 8, 1f, A8, 8, B8, 8, 0f, out, 8);
        break;
      case 2: {
        // Direct buffers: the other JNI path.
        FloatBuffer y = direct(out);
        if (def) KernelBridge.softmax(4, 16, direct(X64), y);
        else KernelBridge.softmax(ctx, 4, 16, direct(X64), y);
        y.get(out);
        break;
      }
      case 3:
        if (def) KernelBridge.rmsnorm(4, X64, W16, 1e-5f, out);
        else KernelBridge.rmsnorm(ctx, 4, X64, W16, 1e-5f, out);
        break;
      case 4:
        if (def) KernelBridge.attention(1, 2, 1, 4, 6, 8, Q, K, V, true, 0f, out);
        else KernelBridge.attention(ctx, 1, 2, 1, 4, 6, 8, Q, K, V, true, 0f, out);
        break;
      case 5:
        if (def) KernelBridge.topkSample(16, LOGITS, 5, 0.8f, 1234L, tokens);
        else KernelBridge.topkSample(ctx, 16, LOGITS, 5, 0.8f, 1234L, tokens);
        return tokens;
      case 6:
        if (def) KernelBridge.add(X64, Y64, out);
        else KernelBridge.add(ctx, X64, Y64, out);
        break;
      default:
        // Large enough for the packed gemm path and, on two threads, a split.
        if (def) KernelBridge.gemm(false, false, 64, 64, 64, 1f, A64, 64, B64, 64, 0f, out, 64);
        else KernelBridge.gemm(ctx, false, false, 64, 64, 64, 1f, A64, 64, B64, 64, 0f, out, 64);
        break;
    }
    int[] bits = new int[out.length];
    for (int i = 0; i < out.length; i++) bits[i] = Float.floatToRawIntBits(out[i]);
    return bits;
  }

  /** The kinds spread over the calls, the large gemm one call in 64. */
  static int kindOf(int t, int j) {
    return j % 64 == 63 ? KINDS - 1 : (t + j) % (KINDS - 1);
  }

  static void round(int[][] want, boolean privateContexts) throws InterruptedException {
    AtomicReference<String> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      final int id = t;
      Thread th = new Thread(() -> {
        Context ctx = privateContexts ? new Context(Backend.CPU, 2) : null;
        try {
          for (int j = 0; j < CALLS && failure.get() == null; j++) {
            int kind = kindOf(id, j);
            int[] got = call(ctx, kind);
            if (!Arrays.equals(got, want[kind])) {
              failure.compareAndSet(null, "thread " + id + " call " + j + " (kind " + kind + ") differs from the call made alone");
            }
          }
        } catch (RuntimeException e) {
          failure.compareAndSet(null, "thread " + id + ": " + e);
        } finally {
          if (ctx != null) ctx.close();
        }
      });
      threads.add(th);
      th.start();
    }
    for (Thread th : threads) th.join();
    check(failure.get() == null, (privateContexts ? "private contexts: " : "default contexts: ") + failure.get());
  }

  public static void testEightThreadsDefaultAndPrivateContexts() throws Exception {
    int[][] want = new int[KINDS][];
    try (Context one = new Context(Backend.CPU, 1)) {
      for (int kind = 0; kind < KINDS; kind++) want[kind] = call(one, kind);
    }
    round(want, false);
    round(want, true);
  }
}
