package org.kernelbridge;

import java.nio.Buffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;

/**
 * Argument checks shared by the generated facade.  The checks themselves are
 * inlined in KernelBridge; these helpers build the exceptions (only on failure)
 * and do the size arithmetic.
 */
final class Checks {
  private Checks() {}

  static KernelBridgeException negative(String fn, String name, long value) {
    return new KernelBridgeException(Status.INVALID_ARGUMENT, fn + ": " + name + " must be >= 0, got " + value);
  }

  /** A row stride below the row length: SHAPE_MISMATCH, as the C library reports it. */
  static KernelBridgeException badStride(String fn, String name, long value, long rowLength) {
    return new KernelBridgeException(
        Status.SHAPE_MISMATCH,
        fn + ": " + name + " must be >= max(1, " + rowLength + "), got " + value);
  }

  /**
   * A null array or buffer for a tensor that is not nullable: allowed only
   * where the tensor is empty (C accepts NULL there), otherwise
   * INVALID_ARGUMENT, as the C library reports a NULL pointer.
   */
  static void emptyIfNull(String fn, String name, long required, String shape) {
    if (required != 0) {
      throw new KernelBridgeException(
          Status.INVALID_ARGUMENT,
          fn + ": " + name + " must not be null (its shape " + shape + " needs " + required + " elements)");
    }
  }

  static KernelBridgeException mismatch(String fn, String name, long length, long required, String shape) {
    return new KernelBridgeException(
        Status.SHAPE_MISMATCH,
        fn + ": " + name + " has " + length + " elements, but its shape " + shape + " needs " + required);
  }

  static KernelBridgeException tooShort(String fn, String name, long length, long required, String shape) {
    return new KernelBridgeException(
        Status.SHAPE_MISMATCH,
        fn + ": " + name + " has " + length + " elements, but its shape " + shape
            + " with its row stride needs at least " + required);
  }

  static KernelBridgeException sameArray(String fn, String out, String other) {
    return new KernelBridgeException(
        Status.INVALID_ARGUMENT, fn + ": " + out + " must not be the same array as " + other);
  }

  /** a * b for non-negative sizes; OUT_OF_MEMORY (as the C library) when it overflows. */
  static long mul(String fn, String name, long a, long b) {
    try {
      return Math.multiplyExact(a, b);
    } catch (ArithmeticException e) {
      throw new KernelBridgeException(Status.OUT_OF_MEMORY, fn + ": the size of " + name + " overflows");
    }
  }

  /** Elements spanned by a [rows, cols] matrix with row stride ld (0 when empty). */
  static long strided(String fn, String name, long rows, long cols, long ld) {
    if (rows == 0 || cols == 0) return 0;
    long r = mul(fn, name, rows - 1, ld);
    if (r > Long.MAX_VALUE - cols) {
      throw new KernelBridgeException(Status.OUT_OF_MEMORY, fn + ": the size of " + name + " overflows");
    }
    return r + cols;
  }

  private static void checkDirect(String fn, String name, Buffer b, ByteOrder order) {
    if (!b.isDirect()) {
      throw new KernelBridgeException(Status.INVALID_ARGUMENT, fn + ": " + name + " must be a direct buffer");
    }
    if (order != ByteOrder.nativeOrder()) {
      throw new KernelBridgeException(
          Status.INVALID_ARGUMENT, fn + ": " + name + " must be in native byte order (" + ByteOrder.nativeOrder() + ")");
    }
  }

  /** A direct input buffer, as a buffer whose memory starts at its position. */
  static FloatBuffer direct(String fn, String name, FloatBuffer b) {
    if (b == null) return null;
    checkDirect(fn, name, b, b.order());
    return b.position() == 0 ? b : b.slice();
  }

  static IntBuffer direct(String fn, String name, IntBuffer b) {
    if (b == null) return null;
    checkDirect(fn, name, b, b.order());
    return b.position() == 0 ? b : b.slice();
  }

  /** A direct output buffer: also must not be read-only. */
  static FloatBuffer writableDirect(String fn, String name, FloatBuffer b) {
    if (b != null && b.isReadOnly()) {
      throw new KernelBridgeException(Status.INVALID_ARGUMENT, fn + ": " + name + " must not be read-only");
    }
    return direct(fn, name, b);
  }

  static IntBuffer writableDirect(String fn, String name, IntBuffer b) {
    if (b != null && b.isReadOnly()) {
      throw new KernelBridgeException(Status.INVALID_ARGUMENT, fn + ": " + name + " must not be read-only");
    }
    return direct(fn, name, b);
  }
}
