package org.kernelbridge.test;

import org.kernelbridge.Backend;
import org.kernelbridge.Context;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;

/**
 * Run in a child JVM by BindingTest.testCpuIsa with KB_CPU_ISA set (the level
 * is chosen once per process): prints the level, then the bits of a gemm on
 * a two-thread context, or the status and message when the context is refused.
 */
public final class IsaProbe {
  private IsaProbe() {}

  public static void main(String[] args) {
    System.out.println(KernelBridge.cpuIsa());
    try (Context ctx = new Context(Backend.CPU, 2)) {
      int m = 10, n = 10, k = 100;
      float[] a = new float[m * k];
      for (int i = 0; i < a.length; i++) a[i] = (float) Math.sin(i * 0.37);
      float[] c = new float[m * n];
      KernelBridge.gemm(ctx, false, true, m, n, k, 1.0f, a, k, a, k, 0.0f, c, n);
      long bits = 0;
      for (float v : c) bits = bits * 31 + Float.floatToRawIntBits(v);
      System.out.println(bits);
    } catch (KernelBridgeException e) {
      System.out.println(e.status() + " " + e.getMessage());
    }
  }
}
