package org.kernelbridge;

import java.nio.charset.StandardCharsets;

/**
 * Package-internal checks (this class is compiled into package org.kernelbridge
 * on the test class path): the mapping from the C status the native wrapper
 * reports to the exception class, DEVICE_LOST included.  No device can be lost
 * on a machine without a GPU, so the native path is exercised with the other
 * statuses (CudaTest, BindingTest) and this checks the mapping it goes through:
 * KernelBridgeException.fromNative, which the wrapper calls for every failure.
 */
public final class InternalTest {
  private InternalTest() {}

  static void check(boolean ok, String message) {
    if (!ok) throw new AssertionError(message);
  }

  public static void testDeviceLostMapping() {
    String msg = "kb_softmax: device lost: cudaErrorIllegalAddress (an illegal memory access, 5 µs)";
    KernelBridgeException e = KernelBridgeException.fromNative(8, msg.getBytes(StandardCharsets.UTF_8));
    check(e instanceof DeviceLostException, "DEVICE_LOST is a DeviceLostException: " + e.getClass());
    check(e.status() == Status.DEVICE_LOST, "status " + e.status());
    check(e.code() == 8, "code " + e.code());
    check(e.getMessage().equals(msg), "UTF-8 message: " + e.getMessage());
    check(Status.DEVICE_LOST.code() == 8, "DEVICE_LOST is 8 as in C");
    check("DEVICE_LOST".equals(KernelBridge.statusString(Status.DEVICE_LOST)), "C name");
    DeviceLostException d = new DeviceLostException("x");
    check(d.status() == Status.DEVICE_LOST && d.code() == 8, "public constructor");
  }

  public static void testOtherStatusesMapping() {
    for (Status s : Status.values()) {
      if (s == Status.OK || s == Status.DEVICE_LOST) continue;
      KernelBridgeException e = KernelBridgeException.fromNative(s.code(), new byte[] {'m'});
      check(e.getClass() == KernelBridgeException.class, s + ": plain KernelBridgeException");
      check(e.status() == s && e.code() == s.code() && e.getMessage().equals("m"), s + " mapping");
    }
    KernelBridgeException e = KernelBridgeException.fromNative(42, new byte[] {(byte) 0xff});
    check(e.status() == Status.INTERNAL && e.code() == 42, "unknown code: INTERNAL, code kept");
    check(e.getMessage().equals("\ufffd"), "malformed UTF-8 is replaced, not fatal");
  }

  /** The per-call native path: a failure reaches Java through fromNative with the library's message. */
  public static void testNativeFailureGoesThroughFactory() {
    try {
      KernelBridgeNative.kb_context_create(Backend.CPU.code(), -5, new long[1]);
      throw new AssertionError("no exception");
    } catch (KernelBridgeException e) {
      check(e.getClass() == KernelBridgeException.class && e.status() == Status.INVALID_ARGUMENT, "status " + e.status());
      check(e.getMessage().startsWith("kb_context_create: num_threads ") && e.getMessage().endsWith("got -5"),
          e.getMessage());
    }
  }
}
