package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;
import static org.kernelbridge.test.Harness.equal;
import static org.kernelbridge.test.Harness.expect;

import java.util.Arrays;
import org.kernelbridge.Activation;
import org.kernelbridge.Backend;
import org.kernelbridge.Bf16;
import org.kernelbridge.Context;
import org.kernelbridge.Cuda;
import org.kernelbridge.DeviceBuffer;
import org.kernelbridge.Dtype;
import org.kernelbridge.F16;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Status;

/**
 * The Java binding on a GPU (//bindings/java:gpu_test): device buffers, kernels on
 * a CUDA context against the CPU kernels within the tolerances of docs/cuda.md,
 * and the errors of mixing host and device memory.  Without a usable CUDA device
 * it prints "SKIPPED: reason" and runs nothing (CI counts it as skipped).
 */
public final class GpuTest {
  private GpuTest() {}

  public static void main(String[] args) throws Exception {
    String reason = Cuda.unavailableReason();
    if (reason != null) {
      System.out.println("SKIPPED: no usable CUDA device: " + reason);
      return;
    }
    Cuda.ComputeCapability cc = Cuda.computeCapability(0);
    if (!cc.atLeast(8, 0)) {
      System.out.println("SKIPPED: CUDA device 0 (" + Cuda.deviceName(0) + ") has compute capability " + cc
          + "; the CUDA backend needs 8.0 or newer");
      return;
    }
    System.out.println("device 0: " + Cuda.deviceName(0) + ", compute capability " + cc + ", "
        + (Cuda.totalMemory(0) >> 20) + " MiB");
    Harness.main(new String[] {GpuTest.class.getName()});
  }

  /** Units in the last place of float between a and b (NaN must match NaN). */
  static long ulps(float a, float b) {
    if (Float.isNaN(a) || Float.isNaN(b)) return Float.isNaN(a) && Float.isNaN(b) ? 0 : Long.MAX_VALUE;
    if (a == b) return 0;
    long x = Float.floatToRawIntBits(a), y = Float.floatToRawIntBits(b);
    if (x < 0) x = 0x80000000L - x;
    if (y < 0) y = 0x80000000L - y;
    return Math.abs(x - y);
  }

  static void withinUlps(float[] want, float[] got, long max, double abs, String what) {
    check(want.length == got.length, what + ": length");
    for (int i = 0; i < want.length; i++) {
      if (ulps(want[i], got[i]) <= max || Math.abs(want[i] - got[i]) <= abs) continue;
      throw new AssertionError(what + "[" + i + "]: gpu " + got[i] + ", cpu " + want[i]);
    }
  }

  public static void testContextAndBuffers() {
    try (Context ctx = Context.cuda(0)) {
      equal(Backend.CUDA, ctx.backend(), "backend");
      equal(0L, ctx.device(), "device");
      try (DeviceBuffer b = new DeviceBuffer(ctx, 1024)) {
        equal(0L, b.device(), "device buffer");
        check(!b.isHost(), "not host");
        check(b.dataAddress() != 0, "device address");
        float[] f = KernelsTest.randn(256, 1);
        b.upload(0, f);
        check(Arrays.equals(f, b.toFloatArray()), "float round trip");
        short[] s = F16.fromFloats(KernelsTest.randn(100, 1));
        b.upload(24, s);
        short[] so = new short[100];
        b.download(24, so);
        check(Arrays.equals(s, so), "short round trip at an offset");
        b.fill(0, 1024, 0x3f);
        byte[] all = b.toByteArray();
        for (byte x : all) check(x == 0x3f, "fill");
        try (DeviceBuffer c = new DeviceBuffer(ctx, 1024)) {
          c.copyFrom(0, b, 0, 1024);
          check(Arrays.equals(all, c.toByteArray()), "device copy");
        }
        KernelBridgeException e = expect(KernelBridgeException.class, () -> b.upload(1000, new float[8]));
        equal(Status.INVALID_ARGUMENT, e.status(), "range");
        // a device buffer needs a CUDA context on its device
        try (Context cpu = new Context(Backend.CPU, 1)) {
          e = expect(KernelBridgeException.class, () -> b.download(cpu, 0, new float[1]));
          equal(Status.INVALID_ARGUMENT, e.status(), "device buffer on a CPU context");
          e = expect(KernelBridgeException.class, () -> KernelBridge.silu(cpu, b, b));
          equal(Status.INVALID_ARGUMENT, e.status(), "device buffer to a CPU kernel");
          try (DeviceBuffer host = new DeviceBuffer(cpu, 1024)) {
            e = expect(KernelBridgeException.class, () -> KernelBridge.silu(ctx, host, b));
            equal(Status.INVALID_ARGUMENT, e.status(), "host buffer to a CUDA kernel");
          }
        }
      }
      ctx.synchronize();
    }
  }

  /** Java arrays are host memory: a CUDA context refuses them, naming the argument. */
  public static void testHostArraysOnCudaContext() {
    try (Context ctx = Context.cuda(0)) {
      float[] y = {5f, 5f};
      KernelBridgeException e = expect(KernelBridgeException.class, () -> KernelBridge.silu(ctx, new float[2], y));
      equal(Status.INVALID_ARGUMENT, e.status(), "host array");
      check(e.getMessage().startsWith("kb_silu: x"), e.getMessage());
      check(y[0] == 5f && y[1] == 5f, "nothing written");
    }
  }

  public static void testKernelsMatchCpu() {
    try (Context ctx = Context.cuda(0)) {
      int n = 100_000;
      float[] a = KernelsTest.randn(n, 3), b = KernelsTest.randn(n, 3);
      try (DeviceBuffer da = DeviceBuffer.of(ctx, a); DeviceBuffer db = DeviceBuffer.of(ctx, b);
          DeviceBuffer dy = new DeviceBuffer(ctx, 4L * n)) {
        float[] want = new float[n];
        KernelBridge.add(a, b, want);
        KernelBridge.add(ctx, da, db, dy);
        check(Arrays.equals(want, dy.toFloatArray()), "add bitwise");
        KernelBridge.silu(a, want);
        KernelBridge.silu(ctx, da, dy);
        withinUlps(want, dy.toFloatArray(), 3, 0, "silu");  // CPU silu 1.59 ulp + GPU rounding
        KernelBridge.gelu(a, want);
        KernelBridge.gelu(ctx, da, dy);
        withinUlps(want, dy.toFloatArray(), 1, 0, "gelu");
        int rows = 100, cols = 1000;
        KernelBridge.softmax(rows, cols, a, want);
        KernelBridge.softmax(ctx, rows, cols, da, dy);
        withinUlps(want, dy.toFloatArray(), 2, 1e-37, "softmax");
        float[] w = Arrays.copyOf(b, cols);
        try (DeviceBuffer dw = DeviceBuffer.of(ctx, w)) {
          KernelBridge.rmsnorm(rows, a, w, 1e-5f, want);
          KernelBridge.rmsnorm(ctx, rows, da, dw, 1e-5f, dy);
          withinUlps(want, dy.toFloatArray(), 2, 0, "rmsnorm");
        }
        int[] am = new int[rows];
        KernelBridge.argmax(cols, a, am);
        try (DeviceBuffer dam = new DeviceBuffer(ctx, 4L * rows)) {
          KernelBridge.argmax(ctx, cols, da, dam);
          check(Arrays.equals(am, dam.toIntArray()), "argmax identical");
          KernelBridge.sample(cols, a, 0.7f, 12345L, am);
          KernelBridge.sample(ctx, cols, da, 0.7f, 12345L, dam);
          check(Arrays.equals(am, dam.toIntArray()), "sample identical token ids");
        }
      }
      // gemm: within the cuBLASLt bound of docs/cuda.md
      int m = 64, nn = 48, k = 96;
      float[] x = KernelsTest.randn(m * k, 1), y = KernelsTest.randn(k * nn, 1), c = new float[m * nn];
      KernelBridge.gemm(false, false, m, nn, k, 1f, x, k, y, nn, 0f, c, nn);
      try (DeviceBuffer dx = DeviceBuffer.of(ctx, x); DeviceBuffer dyy = DeviceBuffer.of(ctx, y);
          DeviceBuffer dc = new DeviceBuffer(ctx, 4L * m * nn)) {
        dc.fill(0, dc.size(), 0);
        KernelBridge.gemm(ctx, false, false, m, nn, k, 1f, dx, k, dyy, nn, 0f, dc, nn);
        float[] got = dc.toFloatArray();
        for (int i = 0; i < m; i++) {
          for (int j = 0; j < nn; j++) {
            double bound = 0;
            for (int p = 0; p < k; p++) bound += Math.abs((double) x[i * k + p] * y[p * nn + j]);
            bound *= (k + 2) * Math.scalb(1.0, -23);
            check(Math.abs(got[i * nn + j] - c[i * nn + j]) <= bound, "gemm (" + i + ", " + j + ")");
          }
        }
      }
    }
  }

  public static void testHalfKernels() {
    try (Context ctx = Context.cuda(0)) {
      int n = 10_000;
      float[] f = KernelsTest.randn(n, 2);
      short[] hb = Bf16.fromFloats(f), hf = F16.fromFloats(f);
      short[] wantB = new short[n], wantF = new short[n];
      KernelBridge.siluBf16(hb, wantB);
      KernelBridge.siluF16(hf, wantF);
      try (DeviceBuffer db = DeviceBuffer.of(ctx, hb); DeviceBuffer df = DeviceBuffer.of(ctx, hf);
          DeviceBuffer out = new DeviceBuffer(ctx, 2L * n)) {
        KernelBridge.siluBf16(ctx, db, out);
        float[] got = Bf16.toFloats(out.toShortArray()), want = Bf16.toFloats(wantB);
        for (int i = 0; i < n; i++) check(Math.abs(got[i] - want[i]) <= 1e-3 + 1.6e-2 * Math.abs(want[i]), "silu_bf16 " + i);
        KernelBridge.siluF16(ctx, df, out);
        got = F16.toFloats(out.toShortArray());
        want = F16.toFloats(wantF);
        for (int i = 0; i < n; i++) check(Math.abs(got[i] - want[i]) <= 1e-3 + 2e-3 * Math.abs(want[i]), "silu_f16 " + i);
        KernelBridge.addBf16(ctx, db, db, out);
        short[] wantAdd = new short[n];
        KernelBridge.addBf16(hb, hb, wantAdd);
        float[] ga = Bf16.toFloats(out.toShortArray()), wa = Bf16.toFloats(wantAdd);
        for (int i = 0; i < n; i++) check(Math.abs(ga[i] - wa[i]) <= 1.6e-2 * Math.abs(wa[i]), "add_bf16 " + i);
      }
    }
  }

  /**
   * The kernels of weights in storage formats run on the CPU only so far: on a CUDA context they
   * throw UNSUPPORTED (after the argument checks) and write nothing.
   */
  public static void testStorageFormatKernelsUnsupported() {
    try (Context ctx = Context.cuda(0);
        DeviceBuffer x = DeviceBuffer.of(ctx, new float[2 * 64]);
        DeviceBuffer w = DeviceBuffer.of(ctx, new byte[3 * 2 * 34]);
        DeviceBuffer ids = DeviceBuffer.of(ctx, new int[] {0, 2});
        DeviceBuffer y = DeviceBuffer.of(ctx, new float[3 * 64])) {
      y.fill(0, y.size(), 0x7f);
      byte[] before = y.toByteArray();
      KernelBridgeException e = expect(KernelBridgeException.class,
          () -> KernelBridge.linearW(ctx, 2, 64, 3, x, Dtype.Q8_0, w, null, Activation.NONE, y.slice(0, 4 * 2 * 3)));
      equal(Status.UNSUPPORTED, e.status(), "linearW: " + e.getMessage());
      e = expect(KernelBridgeException.class, () -> KernelBridge.embeddingW(ctx, 3, 64, ids, Dtype.Q8_0, w, y.slice(0, 4 * 2 * 64)));
      equal(Status.UNSUPPORTED, e.status(), "embeddingW: " + e.getMessage());
      e = expect(KernelBridgeException.class, () -> KernelBridge.dequantize(ctx, Dtype.Q8_0, 3, 64, w, y));
      equal(Status.UNSUPPORTED, e.status(), "dequantize: " + e.getMessage());
      e = expect(KernelBridgeException.class, () -> KernelBridge.quantize(ctx, Dtype.Q8_0, 3, 64, y, w));
      equal(Status.UNSUPPORTED, e.status(), "quantize: " + e.getMessage());
      check(Arrays.equals(before, y.toByteArray()), "nothing written");
      check(Arrays.equals(new byte[3 * 2 * 34], w.toByteArray()), "quantize wrote nothing");
    }
  }

  /** A buffer outlives its context; closing both in either order is safe. */
  public static void testLifetimes() {
    Context ctx = Context.cuda(0);
    DeviceBuffer b = DeviceBuffer.of(ctx, new float[] {1f, 2f});
    ctx.close();
    try (Context other = Context.cuda(0)) {
      float[] got = new float[2];
      b.download(other, 0, got);
      check(got[0] == 1f && got[1] == 2f, "download on another context");
    }
    b.close();
    expect(IllegalStateException.class, b::size);
  }
}
