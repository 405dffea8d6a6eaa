package org.kernelbridge;

import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * An immutable {@code [rows, cols]} tensor in a storage format ({@link Dtype}): float32, float16,
 * bfloat16 or one of GGML's block quantizations (Q8_0, Q4_0), as a GGUF file holds a model's
 * weights.  It holds the tensor's bytes, laid out as {@link Dtype} describes, in a {@code byte[]}
 * or in a direct {@link ByteBuffer} (a file mapped with {@code FileChannel.map}); neither is
 * copied: kernels read them in place.
 *
 * <pre>{@code
 * QTensor w = QTensor.quantize(Dtype.Q8_0, outFeatures, inFeatures, weights);   // or QTensor.of(type, rows, cols, bytes)
 * QTensor.linear(ctx, x, w, bias, Activation.NONE, y);        // KernelBridge.linearW, rows = x.length / inFeatures
 * QTensor.embedding(ctx, ids, table, out);                    // KernelBridge.embeddingW
 * float[] values = w.dequantize();
 * }</pre>
 *
 * <p>Hand-written (the generated {@link KernelBridge} has the kernels it calls:
 * {@code quantize}, {@code dequantize}, {@code linearW}, {@code embeddingW}).  The byte count is
 * checked against the shape with {@code kb_dtype_bytes} when the tensor is made; everything else
 * (a format's constraints, ids in range, the other tensors' lengths) is checked by those kernels
 * before anything is written, with the library's messages.  A QTensor never writes its bytes, so
 * one may be used by several threads at once; the caller must not change the bytes of a tensor
 * made by {@link #of(Dtype, int, int, byte[])} or {@link #of(Dtype, int, int, ByteBuffer)} while
 * it is in use.
 */
public final class QTensor {
  /** The largest Java array, with the headroom some JVMs keep for the array header. */
  private static final long MAX_ARRAY = Integer.MAX_VALUE - 8;

  private final Dtype dtype;
  private final int rows;
  private final int cols;
  /** The bytes: exactly one of these is set.  The buffer is a read-only view from 0 to its limit. */
  private final byte[] array;
  private final ByteBuffer buffer;

  private QTensor(Dtype dtype, int rows, int cols, byte[] array, ByteBuffer buffer) {
    this.dtype = dtype;
    this.rows = rows;
    this.cols = cols;
    this.array = array;
    this.buffer = buffer;
  }

  /**
   * A tensor over {@code bytes}, used in place (not copied).
   *
   * @param dtype the storage format
   * @param rows rows, at least 0
   * @param cols elements per row, at least 0 (a multiple of 32 for the block formats)
   * @param bytes exactly {@code KernelBridge.dtypeBytes(dtype, rows, cols)} bytes
   * @return the tensor
   * @throws NullPointerException when dtype is null
   * @throws KernelBridgeException INVALID_ARGUMENT for a null {@code bytes}, a negative size or
   *     {@code cols} not a multiple of 32 for a block format; SHAPE_MISMATCH when {@code bytes} has
   *     another length, e.g. {@code QTensor.of: bytes must be 108 (a [3, 64] tensor as Q4_0), got 107}
   */
  public static QTensor of(Dtype dtype, int rows, int cols, byte[] bytes) {
    final String where = "QTensor.of";
    final long expected = byteCount(where, dtype, rows, cols);
    if (bytes == null) throw nullTensor(where, "bytes");
    checkBytes(where, dtype, rows, cols, bytes.length, expected);
    return new QTensor(dtype, rows, cols, bytes, null);
  }

  /**
   * A tensor over the bytes of a direct buffer from its position to its limit, used in place (not
   * copied; the buffer's position is not changed).  Read-only buffers, such as a file mapped
   * {@code READ_ONLY}, are fine; the byte order does not matter.
   *
   * @param dtype the storage format
   * @param rows rows, at least 0
   * @param cols elements per row, at least 0 (a multiple of 32 for the block formats)
   * @param bytes a direct buffer of exactly {@code KernelBridge.dtypeBytes(dtype, rows, cols)}
   *     remaining bytes
   * @return the tensor
   * @throws NullPointerException when dtype is null
   * @throws KernelBridgeException INVALID_ARGUMENT for a null or heap buffer, a negative size or
   *     {@code cols} not a multiple of 32 for a block format; SHAPE_MISMATCH when {@code bytes} has
   *     another number of remaining bytes
   */
  public static QTensor of(Dtype dtype, int rows, int cols, ByteBuffer bytes) {
    final String where = "QTensor.of";
    final long expected = byteCount(where, dtype, rows, cols);
    if (bytes == null) throw nullTensor(where, "bytes");
    if (!bytes.isDirect()) {
      throw new KernelBridgeException(
          Status.INVALID_ARGUMENT, where + ": bytes must be a direct buffer (use the byte[] form for heap bytes)");
    }
    checkBytes(where, dtype, rows, cols, bytes.remaining(), expected);
    // A read-only view of just the tensor's bytes: position 0, never moved, so
    // that threads may pass it to kernels at once.
    return new QTensor(dtype, rows, cols, null, bytes.slice().asReadOnlyBuffer());
  }

  /**
   * {@link #quantize(Context, Dtype, int, int, float[])} on the calling thread's default context
   * ({@link Context#forCurrentThread()}).
   *
   * @param dtype the storage format
   * @param rows rows, at least 0
   * @param cols elements per row, at least 0 (a multiple of 32 for the block formats)
   * @param x the {@code rows * cols} values, row-major
   * @return a new tensor holding x in dtype
   */
  public static QTensor quantize(Dtype dtype, int rows, int cols, float[] x) {
    return quantize(Context.forCurrentThread(), dtype, rows, cols, x);
  }

  /**
   * Converts float32 values into a storage format ({@link KernelBridge#quantize(Context, Dtype,
   * int, int, float[], byte[])}: GGML's reference quantization bit for bit for Q8_0 and Q4_0,
   * rounding to nearest even for F16 and BF16, a copy for F32).
   *
   * @param ctx the context to run on
   * @param dtype the storage format
   * @param rows rows, at least 0
   * @param cols elements per row, at least 0 (a multiple of 32 for the block formats)
   * @param x the {@code rows * cols} values, row-major
   * @return a new tensor holding x in dtype, in a byte[] of its own
   * @throws NullPointerException when ctx or dtype is null
   * @throws KernelBridgeException INVALID_ARGUMENT for a negative size, {@code cols} not a
   *     multiple of 32 for a block format or, for a block format, an element that is not finite
   *     or a block whose scale overflows float16 (naming it); SHAPE_MISMATCH when x does not hold
   *     {@code rows * cols} values; OUT_OF_MEMORY when the bytes would not fit a Java array
   */
  public static QTensor quantize(Context ctx, Dtype dtype, int rows, int cols, float[] x) {
    Objects.requireNonNull(ctx, "ctx");
    final String where = "QTensor.quantize";
    final long n = byteCount(where, dtype, rows, cols);
    if (n > MAX_ARRAY) {
      throw new KernelBridgeException(
          Status.OUT_OF_MEMORY,
          where + ": a [" + rows + ", " + cols + "] tensor as " + dtype + " has " + n + " bytes, more than a Java array holds");
    }
    final byte[] y = new byte[(int) n];
    KernelBridge.quantize(ctx, dtype, rows, cols, x, y);
    return new QTensor(dtype, rows, cols, y, null);
  }

  /**
   * {@link #dequantize(Context)} on the calling thread's default context ({@link
   * Context#forCurrentThread()}).
   *
   * @return the {@code rows * cols} values, row-major
   */
  public float[] dequantize() {
    return dequantize(Context.forCurrentThread());
  }

  /**
   * The tensor's values in float32 ({@link KernelBridge#dequantize(Context, Dtype, int, int,
   * byte[], float[])}): exact, every value of every format is a float32.
   *
   * @param ctx the context to run on
   * @return a new array of the {@code rows * cols} values, row-major
   * @throws NullPointerException when ctx is null
   * @throws KernelBridgeException OUT_OF_MEMORY when {@code rows * cols} exceeds a Java array
   */
  public float[] dequantize(Context ctx) {
    Objects.requireNonNull(ctx, "ctx");
    final long n = (long) rows * cols;
    if (n > MAX_ARRAY) {
      throw new KernelBridgeException(
          Status.OUT_OF_MEMORY, "QTensor.dequantize: " + rows + " * " + cols + " values are more than a Java array holds");
    }
    final float[] y = new float[(int) n];
    if (array != null) KernelBridge.dequantize(ctx, dtype, rows, cols, array, y);
    else KernelBridge.dequantize(ctx, dtype, rows, cols, buffer, y);
    return y;
  }

  /**
   * {@link #linear(Context, float[], QTensor, float[], Activation, float[])} on the calling thread's
   * default context ({@link Context#forCurrentThread()}).
   *
   * @param x input, {@code [rows, w.cols()]}
   * @param w the weight, {@code [out_features, in_features]}
   * @param bias {@code w.rows()} values, or null for none
   * @param act the activation
   * @param y output, {@code [rows, w.rows()]}
   */
  public static void linear(float[] x, QTensor w, float[] bias, Activation act, float[] y) {
    linear(Context.forCurrentThread(), x, w, bias, act, y);
  }

  /**
   * A fused linear layer with a weight in a storage format: {@code y[r, o] = act(sum_i x[r, i] *
   * W[o, i] + bias[o])}, exactly {@link KernelBridge#linearW(Context, int, int, int, float[], Dtype,
   * byte[], float[], Activation, float[])} with {@code in_features = w.cols()}, {@code out_features
   * = w.rows()} and {@code rows = x.length / w.cols()} (when {@code w.cols()} is 0, {@code rows =
   * y.length / w.rows()}; 0 when both are 0).  For an F32 weight the result is {@link
   * KernelBridge#linear(Context, int, int, int, float[], float[], float[], Activation, float[])}'s
   * bit for bit.
   *
   * @param ctx the context to run on
   * @param x input, {@code [rows, w.cols()]}; null only where empty
   * @param w the weight, {@code [out_features, in_features]} (PyTorch's and GGUF's layout)
   * @param bias {@code w.rows()} values, or null for none
   * @param act the activation
   * @param y output, {@code [rows, w.rows()]}; not the same array as x or bias
   * @throws NullPointerException when ctx or act is null
   * @throws KernelBridgeException INVALID_ARGUMENT for a null w; SHAPE_MISMATCH when x (or, for
   *     {@code w.cols() == 0}, y) is not a whole number of rows, or bias or y has another length;
   *     and the statuses of kb_linear_w.  Nothing is written on failure.
   */
  public static void linear(Context ctx, float[] x, QTensor w, float[] bias, Activation act, float[] y) {
    Objects.requireNonNull(ctx, "ctx");
    final String where = "QTensor.linear";
    if (w == null) throw nullTensor(where, "w");
    final int rows;
    if (w.cols > 0) rows = wholeRows(where, "x", x == null ? 0 : x.length, "in_features = w.cols()", w.cols);
    else if (w.rows > 0) rows = wholeRows(where, "y", y == null ? 0 : y.length, "out_features = w.rows()", w.rows);
    else rows = 0;
    if (w.array != null) KernelBridge.linearW(ctx, rows, w.cols, w.rows, x, w.dtype, w.array, bias, act, y);
    else KernelBridge.linearW(ctx, rows, w.cols, w.rows, x, w.dtype, w.buffer, bias, act, y);
  }

  /**
   * {@link #embedding(Context, int[], QTensor, float[])} on the calling thread's default context
   * ({@link Context#forCurrentThread()}).
   *
   * @param ids token ids, each in {@code [0, table.rows())}
   * @param table the {@code [vocab, dim]} table
   * @param out output, {@code [ids.length, table.cols()]}
   */
  public static void embedding(int[] ids, QTensor table, float[] out) {
    embedding(Context.forCurrentThread(), ids, table, out);
  }

  /**
   * Embedding lookup from a table in a storage format: row {@code ids[i]} of the table, widened to
   * float32 exactly, into row i of out ({@link KernelBridge#embeddingW(Context, int, int, int[],
   * Dtype, byte[], float[])} with {@code vocab = table.rows()}, {@code dim = table.cols()}).  The
   * rows equal those of {@link #dequantize()}.
   *
   * @param ctx the context to run on
   * @param ids token ids, each in {@code [0, table.rows())}
   * @param table the {@code [vocab, dim]} table
   * @param out output, {@code [ids.length, table.cols()]}
   * @throws NullPointerException when ctx is null
   * @throws KernelBridgeException INVALID_ARGUMENT for a null table or an id out of range (naming
   *     it: {@code kb_embedding_w: ids[1] = 5 is out of range [0, 5)}); SHAPE_MISMATCH when out has
   *     another length.  The ids are all checked before anything is written.
   */
  public static void embedding(Context ctx, int[] ids, QTensor table, float[] out) {
    Objects.requireNonNull(ctx, "ctx");
    if (table == null) throw nullTensor("QTensor.embedding", "table");
    if (table.array != null) KernelBridge.embeddingW(ctx, table.rows, table.cols, ids, table.dtype, table.array, out);
    else KernelBridge.embeddingW(ctx, table.rows, table.cols, ids, table.dtype, table.buffer, out);
  }

  /** The storage format. */
  public Dtype dtype() {
    return dtype;
  }

  /** Rows (the first axis: a weight's out_features, a table's vocab). */
  public int rows() {
    return rows;
  }

  /** Elements per row (the second axis: a weight's in_features, a table's dim). */
  public int cols() {
    return cols;
  }

  /** The number of bytes, {@code KernelBridge.dtypeBytes(dtype(), rows(), cols())}. */
  public long byteSize() {
    return array != null ? array.length : buffer.capacity();
  }

  /** Whether the bytes are in a direct buffer (made from a ByteBuffer) rather than a byte[]. */
  public boolean isDirect() {
    return buffer != null;
  }

  /**
   * A read-only view of the bytes (position 0, limit {@link #byteSize()}), without a copy; a new
   * view each call, so its position is the caller's to move.
   */
  public ByteBuffer bytes() {
    return array != null ? ByteBuffer.wrap(array).asReadOnlyBuffer() : buffer.duplicate();
  }

  /** A copy of the bytes. */
  public byte[] toByteArray() {
    if (array != null) return array.clone();
    final byte[] b = new byte[buffer.capacity()];
    buffer.duplicate().get(b);
    return b;
  }

  @Override
  public String toString() {
    return "QTensor[" + dtype + " [" + rows + ", " + cols + "], " + byteSize() + " bytes"
        + (buffer != null ? ", direct" : "") + "]";
  }

  /** kb_dtype_bytes(dtype, rows, cols), its failure prefixed with where it was needed. */
  private static long byteCount(String where, Dtype dtype, int rows, int cols) {
    Objects.requireNonNull(dtype, "dtype");
    try {
      return KernelBridge.dtypeBytes(dtype, rows, cols);
    } catch (KernelBridgeException e) {
      throw new KernelBridgeException(e.status(), where + ": " + e.getMessage());
    }
  }

  private static void checkBytes(String where, Dtype dtype, int rows, int cols, long length, long expected) {
    if (length != expected) {
      throw new KernelBridgeException(
          Status.SHAPE_MISMATCH,
          where + ": bytes must be " + expected + " (a [" + rows + ", " + cols + "] tensor as " + dtype + "), got " + length);
    }
  }

  /** The rows of a row-major array of {@code length} elements, {@code rowLength} (> 0) to a row. */
  private static int wholeRows(String where, String name, int length, String rowName, int rowLength) {
    if (length % rowLength != 0) {
      throw new KernelBridgeException(
          Status.SHAPE_MISMATCH,
          where + ": " + name + " has " + length + " elements, not a whole number of rows of " + rowName + " = "
              + rowLength);
    }
    return length / rowLength;
  }

  private static KernelBridgeException nullTensor(String where, String name) {
    return new KernelBridgeException(Status.INVALID_ARGUMENT, where + ": " + name + " must not be null");
  }
}
