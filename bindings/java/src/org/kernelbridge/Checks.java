package org.kernelbridge;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Argument checks shared by the generated facade and DeviceBuffer: hand-written
 * runtime that the generated KernelBridge calls for every tensor and dimension
 * (its wrappers keep only what is specific to the kernel: names, shapes and the
 * size expressions).  The checks are small static methods, one per Java
 * array/buffer type, so that the JIT inlines them into each wrapper; the
 * exceptions are built only on failure.
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

  /**
   * The first negative one of a kernel's dimensions, named in {@code names} (comma-separated, in the
   * order of {@code values}); called only on failure, when {@code (a | b | ...) < 0}.
   */
  static KernelBridgeException negative(String fn, String names, long... values) {
    final String[] n = names.split(", ");
    for (int i = 0; i < values.length; i++) {
      if (values[i] < 0) return negative(fn, n[i], values[i]);
    }
    throw new IllegalArgumentException("no negative value");
  }

  /**
   * A tensor's array or buffer: exactly {@code required} elements; null only where
   * the tensor is empty (see {@link #emptyIfNull}).
   */
  static void exact(String fn, String name, float[] a, long required, String shape) {
    if (a == null) emptyIfNull(fn, name, required, shape);
    else if (a.length != required) throw mismatch(fn, name, a.length, required, shape);
  }

  static void exact(String fn, String name, int[] a, long required, String shape) {
    if (a == null) emptyIfNull(fn, name, required, shape);
    else if (a.length != required) throw mismatch(fn, name, a.length, required, shape);
  }

  static void exact(String fn, String name, short[] a, long required, String shape) {
    if (a == null) emptyIfNull(fn, name, required, shape);
    else if (a.length != required) throw mismatch(fn, name, a.length, required, shape);
  }

  static void exact(String fn, String name, Buffer b, long required, String shape) {
    if (b == null) emptyIfNull(fn, name, required, shape);
    else if (b.remaining() != required) throw mismatch(fn, name, b.remaining(), required, shape);
  }

  /**
   * A u8 tensor (raw bytes: a weight in a storage format): exactly {@code required}
   * bytes, a byte[]'s length or a direct buffer's bytes from position to limit
   * ({@link #bytes}); null only where the tensor is empty.
   */
  static void exactBytes(String fn, String name, byte[] a, long required, String shape) {
    if (a == null) emptyIfNull(fn, name, required, shape);
    else if (a.length != required) throw bytesMismatch(fn, name, a.length, required, shape);
  }

  static void exactBytes(String fn, String name, Buffer b, long required, String shape) {
    if (b == null) emptyIfNull(fn, name, required, shape);
    else if (bytes(b) != required) throw bytesMismatch(fn, name, bytes(b), required, shape);
  }

  /** Bytes of a NIO buffer from its position to its limit (a long: a FloatBuffer's can exceed an int). */
  static long bytes(Buffer b) {
    return (long) b.remaining() * elementSize(b);
  }

  /**
   * A tensor with a row or item stride: at least {@code required} elements (the
   * span of its rows or items); null only where the tensor is empty.
   */
  static void atLeast(String fn, String name, float[] a, long required, String shape) {
    if (a == null) emptyIfNull(fn, name, required, shape);
    else if (a.length < required) throw tooShort(fn, name, a.length, required, shape);
  }

  static void atLeast(String fn, String name, int[] a, long required, String shape) {
    if (a == null) emptyIfNull(fn, name, required, shape);
    else if (a.length < required) throw tooShort(fn, name, a.length, required, shape);
  }

  static void atLeast(String fn, String name, short[] a, long required, String shape) {
    if (a == null) emptyIfNull(fn, name, required, shape);
    else if (a.length < required) throw tooShort(fn, name, a.length, required, shape);
  }

  static void atLeast(String fn, String name, Buffer b, long required, String shape) {
    if (b == null) emptyIfNull(fn, name, required, shape);
    else if (b.remaining() < required) throw tooShort(fn, name, b.remaining(), required, shape);
  }

  /**
   * A tensor in a DeviceBuffer: the buffer holds at least {@code required} elements
   * of {@code elementSize} bytes (it may be larger); null only where the tensor is empty.
   */
  static void holds(String fn, String name, DeviceBuffer b, long required, int elementSize, String shape) {
    if (b == null) emptyIfNull(fn, name, required, shape);
    else b.require(fn, name, required, elementSize, shape);
  }

  /**
   * An output array that is also passed as another tensor the header does not let
   * it alias: INVALID_ARGUMENT (the C library checks overlap on pointers, which an
   * array copy would hide).  Empty arrays never overlap.
   */
  static void notSame(String fn, String out, float[] o, String other, float[] a) {
    if (o == a && o != null && o.length > 0) throw sameArray(fn, out, other);
  }

  static void notSame(String fn, String out, int[] o, String other, int[] a) {
    if (o == a && o != null && o.length > 0) throw sameArray(fn, out, other);
  }

  static void notSame(String fn, String out, short[] o, String other, short[] a) {
    if (o == a && o != null && o.length > 0) throw sameArray(fn, out, other);
  }

  static void notSame(String fn, String out, byte[] o, String other, byte[] a) {
    if (o == a && o != null && o.length > 0) throw sameArray(fn, out, other);
  }

  static KernelBridgeException mismatch(String fn, String name, long length, long required, String shape) {
    return new KernelBridgeException(
        Status.SHAPE_MISMATCH,
        fn + ": " + name + " has " + length + " elements, but its shape " + shape + " needs " + required);
  }

  static KernelBridgeException bytesMismatch(String fn, String name, long length, long required, String shape) {
    return new KernelBridgeException(
        Status.SHAPE_MISMATCH,
        fn + ": " + name + " has " + length + " bytes, but its shape " + shape + " needs " + required);
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

  /** Elements of a dense tensor of shape [a, b, ...] (OUT_OF_MEMORY when the product overflows). */
  static long size(String fn, String name, long a, long b) {
    return mul(fn, name, a, b);
  }

  static long size(String fn, String name, long a, long b, long c) {
    return mul(fn, name, mul(fn, name, a, b), c);
  }

  static long size(String fn, String name, long a, long b, long c, long d) {
    return mul(fn, name, mul(fn, name, mul(fn, name, a, b), c), d);
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

  /**
   * Elements spanned by a batch of count items of item elements each, consecutive items stride elements
   * apart (stride 0: one item for all); 0 when the batch is empty.
   */
  static long batched(String fn, String name, long count, long item, long stride) {
    if (count == 0 || item == 0) return 0;
    long r = mul(fn, name, count - 1, stride);
    if (r > Long.MAX_VALUE - item) {
      throw new KernelBridgeException(Status.OUT_OF_MEMORY, fn + ": the size of " + name + " overflows");
    }
    return r + item;
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

  static ShortBuffer direct(String fn, String name, ShortBuffer b) {
    if (b == null) return null;
    checkDirect(fn, name, b, b.order());
    return b.position() == 0 ? b : b.slice();
  }

  static ShortBuffer writableDirect(String fn, String name, ShortBuffer b) {
    if (b != null && b.isReadOnly()) {
      throw new KernelBridgeException(Status.INVALID_ARGUMENT, fn + ": " + name + " must not be read-only");
    }
    return direct(fn, name, b);
  }

  /** Bytes per element of a NIO buffer. */
  static int elementSize(Buffer b) {
    if (b instanceof ByteBuffer) return 1;
    if (b instanceof ShortBuffer || b instanceof CharBuffer) return 2;
    if (b instanceof IntBuffer || b instanceof FloatBuffer) return 4;
    return 8; // LongBuffer, DoubleBuffer
  }

  /** Byte order of a NIO buffer's elements; the native order for bytes, which have none. */
  private static ByteOrder order(Buffer b) {
    if (b instanceof ShortBuffer) return ((ShortBuffer) b).order();
    if (b instanceof CharBuffer) return ((CharBuffer) b).order();
    if (b instanceof IntBuffer) return ((IntBuffer) b).order();
    if (b instanceof FloatBuffer) return ((FloatBuffer) b).order();
    if (b instanceof LongBuffer) return ((LongBuffer) b).order();
    if (b instanceof DoubleBuffer) return ((DoubleBuffer) b).order();
    return ByteOrder.nativeOrder();
  }

  /**
   * A direct buffer of any element type for raw byte transfers (DeviceBuffer):
   * direct, elements (other than bytes) in native byte order, writable when
   * written; as a buffer whose memory starts at the position.
   */
  static Buffer rawDirect(String fn, String name, Buffer b, boolean written) {
    if (written && b.isReadOnly()) {
      throw new KernelBridgeException(Status.INVALID_ARGUMENT, fn + ": " + name + " must not be read-only");
    }
    checkDirect(fn, name, b, order(b));
    return b.position() == 0 ? b : b.slice();
  }

  /**
   * A direct input buffer holding a kernel's u8 tensor (raw bytes, any element
   * type; see {@link #rawDirect}); null stays null (C's NULL, for an empty tensor).
   */
  static Buffer directBytes(String fn, String name, Buffer b) {
    return b == null ? null : rawDirect(fn, name, b, false);
  }

  /** A direct output buffer holding a kernel's u8 tensor: also must not be read-only. */
  static Buffer writableDirectBytes(String fn, String name, Buffer b) {
    return b == null ? null : rawDirect(fn, name, b, true);
  }

  /** The bytes up to the first NUL, as UTF-8 (a C string the native wrapper copied). */
  static String cString(byte[] b) {
    int n = 0;
    while (n < b.length && b[n] != 0) n++;
    return new String(b, 0, n, StandardCharsets.UTF_8);
  }
}
