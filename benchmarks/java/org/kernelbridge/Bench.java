package org.kernelbridge;

import java.util.Arrays;

/**
 * 16-element silu through the public facade, through the raw SWIG/JNI method
 * of the same C function, and a JNI no-op.  Lives in package org.kernelbridge
 * (on the class path next to kernelbridge.jar) to reach the package-private
 * raw layer.  Prints "name min median" in ns/call over several runs.
 * {@code Bench --cuda [RUNS [ITERS]]} times the same call on CUDA device
 * buffers instead ({@link CudaBench}).
 */
public final class Bench {
  private Bench() {}

  interface Op {
    void run(int iters);
  }

  static float sink;

  static final java.util.List<String> NAMES = new java.util.ArrayList<>();
  static final java.util.List<Op> OPS = new java.util.ArrayList<>();

  static void add(String name, Op op) {
    NAMES.add(name);
    OPS.add(op);
  }

  /** Runs every op once per round (interleaved, so load changes hit all alike). */
  static void runAll(int runs, int iters) {
    int k = OPS.size();
    for (int w = 0; w < 3; w++) for (Op op : OPS) op.run(iters); // warm-up: JIT compilation
    double[][] t = new double[k][runs];
    for (int r = 0; r < runs; r++) {
      for (int i = 0; i < k; i++) {
        long t0 = System.nanoTime();
        OPS.get(i).run(iters);
        t[i][r] = (System.nanoTime() - t0) / (double) iters;
      }
    }
    for (int i = 0; i < k; i++) {
      Arrays.sort(t[i]);
      System.out.printf("%-17s %8.1f %8.1f%n", NAMES.get(i), t[i][0], t[i][runs / 2]);
    }
  }

  public static void main(String[] args) {
    if (args.length > 0 && args[0].equals("--cuda")) {
      CudaBench.run(args.length > 1 ? Math.max(1, Integer.parseInt(args[1])) : 7,
          args.length > 2 ? Math.max(1, Integer.parseInt(args[2])) : 20_000);
      return;
    }
    int runs = args.length > 0 ? Integer.parseInt(args[0]) : 7;
    int iters = args.length > 1 ? Integer.parseInt(args[1]) : 2_000_000;
    final float[] x = new float[16];
    final float[] y = new float[16];
    for (int i = 0; i < 16; i++) x[i] = (i - 8) * 0.37f;
    final Context ctx = Context.forCurrentThread();
    final long address = ctx.address();
    System.loadLibrary("kbnoop");

    add("jni_noop", iters1 -> {
      for (int i = 0; i < iters1; i++) JniNoop.noop();
    });
    add("jni_noop_args", iters1 -> {
      int s = 0;
      for (int i = 0; i < iters1; i++) s += JniNoop.noopArgs(address, 16, x, y);
      sink += s;
    });
    // The thinnest raw SWIG/JNI method of kb_silu: tensors as native addresses
    // (data already off-heap, in the context's scratch), primitives only.
    final long base = ctx.scratchAddress();
    ctx.scratchFloats.position(0);
    ctx.scratchFloats.put(x);
    add("raw_swig_addr", iters1 -> {
      for (int i = 0; i < iters1; i++) KernelBridgeNativeJNI.kb_silu__addr(address, 16, base, base + 64);
    });
    // The raw SWIG/JNI method taking Java arrays (pinned: 32 elements <= 4096).
    add("raw_swig_array", iters1 -> {
      for (int i = 0; i < iters1; i++) KernelBridgeNativeJNI.kb_silu(address, 16, x, y);
      sink += y[3];
    });
    add("public_facade", iters1 -> {
      for (int i = 0; i < iters1; i++) KernelBridge.silu(x, y);
      sink += y[3];
    });
    add("public_facade_ctx", iters1 -> {
      for (int i = 0; i < iters1; i++) KernelBridge.silu(ctx, x, y);
      sink += y[3];
    });
    runAll(runs, iters);
    if (sink == 12345f) System.out.println();
  }
}
