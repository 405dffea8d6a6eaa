package org.kernelbridge;

import java.util.Arrays;

/**
 * The GPU mode of {@link Bench} ({@code Bench --cuda [RUNS [ITERS]]}): the
 * 16-element silu on device buffers of a CUDA context through the public
 * facade, {@code KernelBridge.silu(ctx, DeviceBuffer, DeviceBuffer)}.
 * benchmarks/cuda/overhead/run.sh compares it with a bare CUDA launch +
 * synchronize (bare_launch.cu), so it prints one machine-readable line,
 * "overhead SIDE MIN_NS MEDIAN_NS", or "SKIPPED: reason" without a GPU.
 */
final class CudaBench {
  private CudaBench() {}

  static final String SIDE = "java-KernelBridge.silu";

  static void run(int runs, int iters) {
    String reason = Cuda.unavailableReason();
    if (reason != null) {
      System.out.println("SKIPPED: " + SIDE + ": no usable CUDA device (" + reason + ")");
      return;
    }
    float[] x = new float[16];
    for (int i = 0; i < 16; i++) x[i] = (i - 8) * 0.37f;
    try (Context ctx = Context.cuda(0);
        DeviceBuffer dx = DeviceBuffer.of(ctx, x);
        DeviceBuffer dy = new DeviceBuffer(ctx, 4L * x.length)) {
      // Warm-up: backend loading, first launches and the JIT compiling the loop
      // (three passes, as Bench does for the CPU calls).
      for (int w = 0; w < 3; w++) time(ctx, dx, dy, iters / 4 + 1);
      double[] ns = new double[runs];
      for (int r = 0; r < runs; r++) ns[r] = time(ctx, dx, dy, iters);
      Arrays.sort(ns);
      System.out.printf("overhead %s %.1f %.1f%n", SIDE, ns[0], ns[runs / 2]);
    }
  }

  private static double time(Context ctx, DeviceBuffer dx, DeviceBuffer dy, int iters) {
    long t0 = System.nanoTime();
    for (int i = 0; i < iters; i++) KernelBridge.silu(ctx, dx, dy);
    return (System.nanoTime() - t0) / (double) iters;
  }
}
