package org.kernelbridge;

/**
 * {@link Status#DEVICE_LOST}: the device failed in a way that leaves it
 * unusable (illegal address, launch failure, ECC error, ...).  The context
 * latches the status: every later call on it fails fast with this exception.
 * Close the context; the process's CUDA state is usually unusable too, so
 * restarting the process is the dependable way out.  Buffers on the lost
 * device can still be closed.
 */
public final class DeviceLostException extends KernelBridgeException {
  private static final long serialVersionUID = 1L;

  /** A DEVICE_LOST failure with the library's message. */
  public DeviceLostException(String message) {
    super(Status.DEVICE_LOST, message);
  }
}
