package org.kernelbridge;

import java.nio.charset.StandardCharsets;

/**
 * A kernelbridge call failed.  {@link #status()} is the library's status code;
 * the message is the one the C library recorded for the call (on the context,
 * such as {@code "kb_softmax: cols must be >= 0, got -3"}, or, for the
 * functions without a context such as {@link Context#cuda} and {@link Cuda},
 * for the calling thread, read in the same native call), or the binding's own
 * message for checks made in Java before the native call.
 *
 * <p>{@link Status#DEVICE_LOST} is thrown as the subclass {@link DeviceLostException}.
 */
public class KernelBridgeException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int code;
  private final Status status;

  /** A failure with the given status and message. */
  public KernelBridgeException(Status status, String message) {
    super(message);
    this.status = status;
    this.code = status.code();
  }

  /** A failure with the C status value (INTERNAL for a value this binding does not know). */
  KernelBridgeException(int code, String message) {
    super(message);
    Status s = Status.fromCode(code);
    this.status = s != null ? s : Status.INTERNAL;
    this.code = code;
  }

  /**
   * Called from the native library for a failed call: the exception for the C
   * status value (a {@link DeviceLostException} for DEVICE_LOST), with the
   * library's message given as UTF-8 bytes.
   */
  static KernelBridgeException fromNative(int code, byte[] utf8Message) {
    String message = new String(utf8Message, StandardCharsets.UTF_8);
    if (code == Status.DEVICE_LOST.code()) return new DeviceLostException(message);
    return new KernelBridgeException(code, message);
  }

  /** The status; {@link Status#INTERNAL} for a value this binding does not know. */
  public Status status() {
    return status;
  }

  /** The C status value (as {@code kb_status}). */
  public int code() {
    return code;
  }
}
