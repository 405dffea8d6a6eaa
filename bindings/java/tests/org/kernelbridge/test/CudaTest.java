package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;
import static org.kernelbridge.test.Harness.equal;
import static org.kernelbridge.test.Harness.expect;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.kernelbridge.Backend;
import org.kernelbridge.Context;
import org.kernelbridge.Cuda;
import org.kernelbridge.DeviceBuffer;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Status;

/**
 * CUDA queries and contexts.  Without a usable CUDA backend (this build machine:
 * no GPU, no driver) every CUDA entry point throws BACKEND_UNAVAILABLE with the
 * library's message saying what is missing; with a device these tests check the
 * queries and contexts instead (the kernels on a GPU: GpuTest, //bindings/java:gpu_test).
 */
public final class CudaTest {
  private CudaTest() {}

  static final boolean AVAILABLE = Cuda.isAvailable();

  /** The exception of an unavailable backend: status, the function's name, a reason. */
  static void unavailable(String fn, Harness.Body call) {
    KernelBridgeException e = expect(KernelBridgeException.class, call);
    equal(Status.BACKEND_UNAVAILABLE, e.status(), fn + " status");
    equal(Status.BACKEND_UNAVAILABLE.code(), e.code(), fn + " code");
    String m = e.getMessage();
    check(m.startsWith(fn + ": "), fn + ": message names the function: " + m);
    // The library's own message (what is missing), not the binding's fallback text.
    check(!m.contains("failed with status"), fn + ": no message from the library: " + m);
    check(m.contains("libkernelbridge_cuda.so") || m.contains("driver") || m.contains("device"),
        fn + ": message says what is missing: " + m);
  }

  public static void testUnavailableOrPresent() {
    if (AVAILABLE) {
      int count = Cuda.deviceCount();
      check(count >= 1, "device count " + count);
      for (int d = 0; d < count; d++) {
        check(!Cuda.deviceName(d).isEmpty(), "device name");
        check(Cuda.computeCapability(d).major() >= 1, "compute capability " + Cuda.computeCapability(d));
        check(Cuda.totalMemory(d) > 0, "total memory");
        long free = Cuda.freeMemory(d);
        check(free >= 0 && free <= Cuda.totalMemory(d), "free memory");
      }
      KernelBridgeException e = expect(KernelBridgeException.class, () -> Cuda.deviceName(count));
      equal(Status.INVALID_ARGUMENT, e.status(), "device out of range");
      e = expect(KernelBridgeException.class, () -> Context.cuda(count));
      equal(Status.INVALID_ARGUMENT, e.status(), "context on a device out of range");
      if (!Cuda.computeCapability(0).atLeast(8, 0)) return; // the backend cannot run on it
      try (Context ctx = Context.cuda(0)) {
        equal(Backend.CUDA, ctx.backend(), "backend");
        equal(0L, ctx.device(), "device");
        ctx.synchronize();
      }
      try (Context ctx = new Context(Backend.CUDA, 1)) {
        equal(0L, ctx.device(), "Backend.CUDA is device 0");
      }
      return;
    }
    String reason = Cuda.unavailableReason();
    check(reason != null && reason.startsWith("kb_cuda_device_count: "), "reason: " + reason);
    unavailable("kb_cuda_device_count", Cuda::deviceCount);
    unavailable("kb_cuda_device_count", KernelBridge::cudaDeviceCount);
    unavailable("kb_cuda_device_name", () -> Cuda.deviceName(0));
    unavailable("kb_cuda_device_compute_capability", () -> Cuda.computeCapability(0));
    unavailable("kb_cuda_device_total_memory", () -> Cuda.totalMemory(0));
    unavailable("kb_cuda_device_free_memory", () -> Cuda.freeMemory(0));
    unavailable("kb_context_create_cuda", () -> Context.cuda(0));
    unavailable("kb_context_create", () -> new Context(Backend.CUDA, 1));
  }

  /**
   * The message of a context-free call is the calling thread's, read inside the native
   * call: threads failing concurrently with different functions each get their own.
   */
  public static void testMessagesArePerCall() throws Exception {
    if (AVAILABLE) return; // nothing fails
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        final int which = t % 2;
        fs.add(pool.submit(() -> {
          for (int i = 0; i < 200; i++) {
            if (which == 0) unavailable("kb_cuda_device_name", () -> Cuda.deviceName(0));
            else unavailable("kb_context_create_cuda", () -> Context.cuda(1));
            // a successful call in between (on a context) does not disturb the next failure
            KernelBridge.silu(new float[2], new float[2]);
          }
          return null;
        }));
      }
      for (Future<?> f : fs) f.get();
    } finally {
      pool.shutdown();
    }
  }

  /** A CPU context: device -1, synchronize does nothing, AUTO without CUDA is the CPU. */
  public static void testCpuContextDevice() {
    try (Context ctx = new Context(Backend.CPU, 1)) {
      equal(-1L, ctx.device(), "CPU context device");
      ctx.synchronize();
      equal("", ctx.lastError(), "no message");
      try (DeviceBuffer b = new DeviceBuffer(ctx, 8)) {
        equal(-1L, b.device(), "CPU context makes host buffers");
      }
    }
    try (Context auto = new Context(Backend.AUTO, 1)) {
      if (!AVAILABLE) equal(Backend.CPU, auto.backend(), "AUTO without CUDA");
      equal(auto.backend() == Backend.CUDA ? 0L : -1L, auto.device(), "AUTO device");
    }
    Context closed = new Context(Backend.CPU, 1);
    closed.close();
    expect(IllegalStateException.class, closed::synchronize);
    expect(IllegalStateException.class, closed::device);
  }

  public static void testComputeCapabilityValue() {
    Cuda.ComputeCapability cc = new Cuda.ComputeCapability(9, 0);
    equal("9.0", cc.toString(), "toString");
    check(cc.atLeast(8, 0) && cc.atLeast(9, 0) && !cc.atLeast(9, 1), "atLeast");
    equal(new Cuda.ComputeCapability(9, 0), cc, "equals");
    check(new Cuda.ComputeCapability(10, 0).compareTo(cc) > 0, "10.0 > 9.0");
  }
}
