package org.kernelbridge;

/**
 * A kernelbridge call failed.  {@link #status()} is the library's status code;
 * the message is the one the C library recorded on the context (such as
 * {@code "kb_softmax: cols must be >= 0, got -3"}), or the binding's own message
 * for checks made in Java before the native call.
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

  /** Called from the native library with the C status value. */
  KernelBridgeException(int code, String message) {
    super(message);
    Status s = Status.fromCode(code);
    this.status = s != null ? s : Status.INTERNAL;
    this.code = code;
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
