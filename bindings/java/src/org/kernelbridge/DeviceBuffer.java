package org.kernelbridge;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.Buffer;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A block of memory that kernels read and write in place: device memory on the
 * device of a CUDA context, 64-byte aligned host memory for a CPU context (the
 * C {@code kb_buffer}).  The kernels of {@link KernelBridge} take buffers where
 * they take arrays (the overloads with a {@link Context} and
 * {@code DeviceBuffer}s); this class moves bytes between Java and the buffer.
 *
 * <pre>{@code
 * try (Context ctx = Context.cuda(0);
 *      DeviceBuffer x = DeviceBuffer.of(ctx, input);          // upload
 *      DeviceBuffer y = new DeviceBuffer(ctx, 4L * input.length)) {
 *   KernelBridge.silu(ctx, x, y);                             // n = x.size() / 4
 *   float[] out = y.toFloatArray();                           // download
 * }
 * }</pre>
 *
 * <p><b>Offsets and sizes</b> are in bytes.  A range must lie inside the buffer,
 * checked before anything is copied (INVALID_ARGUMENT naming the argument,
 * nothing modified).  Uploads and downloads take {@code byte[]},
 * {@code short[]}, {@code int[]}, {@code float[]} (all of the array, in native
 * byte order: the buffer holds the elements as C does) or a direct NIO buffer
 * (its elements from position to limit, in native byte order unless bytes;
 * positions are not changed).
 *
 * <p><b>Contexts.</b> Every transfer runs on a context: the one passed, or the
 * one the buffer was created with.  A device buffer needs a CUDA context on its
 * device; a host buffer works with any context.  A buffer does not depend on
 * its context and may outlive it: once that context is closed, pass another one.
 *
 * <p><b>Slices.</b> {@link #slice} gives a view of a range of the buffer, for a
 * kernel tensor that does not start at the first byte (or one of several tensors
 * in one allocation).  A slice shares the memory: closing the buffer ends every
 * slice; closing a slice ends only that slice.
 *
 * <p><b>Lifetime and threads.</b> Like {@link Context}, a buffer is safe to use
 * from several threads at once (what they write to the same bytes at the same
 * time is unspecified, as for any memory).  {@link #close()} frees the memory
 * once the calls other threads are making with it have returned, and is
 * idempotent (try-with-resources); an unreachable buffer that was not closed
 * is freed by a {@link Cleaner}.  Using a closed buffer throws
 * {@link IllegalStateException}.
 */
public final class DeviceBuffer implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  /** Owns the native kb_buffer; runs at most once (close or Cleaner). */
  private static final class Owner implements Runnable {
    volatile long handle;
    /** Calls using the memory now (acquire ... release), across the buffer and its slices. */
    final AtomicInteger users = new AtomicInteger();
    /** Set once, when the memory is to be freed: new uses fail, and run() waits for the current ones. */
    volatile boolean closing;

    Owner(long handle) {
      this.handle = handle;
    }

    @Override
    public void run() {
      // A use adds itself, then checks closing; this sets closing, then waits
      // for the uses to end (volatile and atomic accesses are sequentially
      // consistent: one side sees the other).  Calls take microseconds.
      closing = true;
      for (long wait = 1_000; users.get() != 0; wait = Math.min(2 * wait, 1_000_000)) {
        LockSupport.parkNanos(wait);
      }
      long h = handle;
      handle = 0;
      if (h != 0) KernelBridgeNative.kb_buffer_destroy(h);
    }
  }

  private final Owner owner; // shared with the slices
  private final Cleaner.Cleanable cleanable; // null for a slice
  private final DeviceBuffer root; // null for a buffer; for a slice the buffer (keeps it reachable)
  private final Context context;
  private final long base; // kb_buffer_data of the whole buffer (0 for 0 bytes)
  private final long offset; // of this buffer's first byte in the whole buffer
  private final long size;
  private final long device;
  private volatile boolean sliceClosed;

  /**
   * Allocates a buffer of {@code bytes} bytes (contents undefined) for use with
   * contexts like {@code ctx}: device memory on a CUDA context's device, host
   * memory for a CPU context.  0 bytes is allowed.
   *
   * @param ctx the context; the transfers without a context argument use it
   * @param bytes size in bytes, at least 0
   * @throws KernelBridgeException OUT_OF_MEMORY when the memory cannot be had,
   *     INVALID_ARGUMENT for a negative size, the statuses of kb_buffer_create
   * @throws IllegalStateException when ctx is closed
   */
  public DeviceBuffer(Context ctx, long bytes) {
    Objects.requireNonNull(ctx, "ctx");
    if (bytes < 0) throw Checks.negative("kb_buffer_create", "bytes", bytes);
    final long c = ctx.address();
    final long[] out = new long[1];
    try {
      KernelBridgeNative.kb_buffer_create(c, bytes, out);
    } finally {
      Reference.reachabilityFence(ctx);
    }
    final long h = out[0];
    this.owner = new Owner(h);
    this.cleanable = CLEANER.register(this, owner);
    this.root = null;
    this.context = ctx;
    this.base = KernelBridgeNative.kb_buffer_data(h);
    this.offset = 0;
    this.size = KernelBridgeNative.kb_buffer_size(h);
    this.device = KernelBridgeNative.kb_buffer_device(h);
  }

  private DeviceBuffer(DeviceBuffer parent, long offset, long bytes) {
    this.owner = parent.owner;
    this.cleanable = null;
    this.root = parent.root != null ? parent.root : parent;
    this.context = parent.context;
    this.base = parent.base;
    this.offset = parent.offset + offset;
    this.size = bytes;
    this.device = parent.device;
  }

  /** A new buffer on ctx holding a copy of {@code data}. */
  public static DeviceBuffer of(Context ctx, float[] data) {
    Objects.requireNonNull(data, "data");
    DeviceBuffer b = new DeviceBuffer(ctx, 4L * data.length);
    return b.filledWith(() -> b.upload(0, data));
  }

  /** A new buffer on ctx holding a copy of {@code data}. */
  public static DeviceBuffer of(Context ctx, int[] data) {
    Objects.requireNonNull(data, "data");
    DeviceBuffer b = new DeviceBuffer(ctx, 4L * data.length);
    return b.filledWith(() -> b.upload(0, data));
  }

  /** A new buffer on ctx holding a copy of {@code data} (bf16/f16 bit patterns, or other 16-bit values). */
  public static DeviceBuffer of(Context ctx, short[] data) {
    Objects.requireNonNull(data, "data");
    DeviceBuffer b = new DeviceBuffer(ctx, 2L * data.length);
    return b.filledWith(() -> b.upload(0, data));
  }

  /** A new buffer on ctx holding a copy of {@code data}. */
  public static DeviceBuffer of(Context ctx, byte[] data) {
    Objects.requireNonNull(data, "data");
    DeviceBuffer b = new DeviceBuffer(ctx, data.length);
    return b.filledWith(() -> b.upload(0, data));
  }

  private DeviceBuffer filledWith(Runnable upload) {
    try {
      upload.run();
      return this;
    } catch (RuntimeException | Error e) {
      close();
      throw e;
    }
  }

  // --- properties -------------------------------------------------------------

  /** The native kb_buffer; throws IllegalStateException once closed. */
  long handle() {
    final long h = owner.handle;
    if (h == 0 || sliceClosed || owner.closing) throw new IllegalStateException("DeviceBuffer is closed");
    return h;
  }

  /**
   * Begins a use of the memory by a native call: close() (in any thread) waits
   * for {@link #release()} before it frees the memory.  Throws
   * IllegalStateException, with nothing to release, when the buffer is closed.
   */
  void acquire() {
    owner.users.incrementAndGet();
    if (owner.closing || owner.handle == 0 || sliceClosed) {
      owner.users.decrementAndGet();
      throw new IllegalStateException("DeviceBuffer is closed");
    }
  }

  /** Ends a use begun by {@link #acquire()}. */
  void release() {
    owner.users.decrementAndGet();
  }

  /** The context the buffer was created with (the transfers without a context argument use it). */
  public Context context() {
    return context;
  }

  /**
   * Size in bytes.
   *
   * @throws IllegalStateException when closed
   */
  public long size() {
    handle();
    return size;
  }

  /**
   * The CUDA device holding the buffer; -1 for host memory.
   *
   * @throws IllegalStateException when closed
   */
  public long device() {
    handle();
    return device;
  }

  /**
   * Whether the buffer is host memory (made for a CPU context).
   *
   * @throws IllegalStateException when closed
   */
  public boolean isHost() {
    return device() < 0;
  }

  /**
   * The address of the first byte (device memory for a device buffer), for
   * handing to other native code; 0 for an empty buffer that owns its memory.
   * Valid until the buffer is closed.  Java never dereferences it.
   *
   * @throws IllegalStateException when closed
   */
  public long dataAddress() {
    handle();
    return base == 0 ? 0L : base + offset;
  }

  /**
   * A view of {@code bytes} bytes of this buffer from {@code offset}: same memory,
   * same device and context.  A kernel tensor in a slice starts at its first
   * byte, which must then be a multiple of the element size.
   *
   * @throws KernelBridgeException INVALID_ARGUMENT when the range is not inside the buffer
   * @throws IllegalStateException when closed
   */
  public DeviceBuffer slice(long offset, long bytes) {
    handle();
    range("DeviceBuffer.slice", "buf", "offset", offset, bytes);
    return new DeviceBuffer(this, offset, bytes);
  }

  /** Whether this buffer (or, for a slice, the buffer it is part of) has been closed. */
  public boolean isClosed() {
    return owner.handle == 0 || sliceClosed;
  }

  /**
   * Frees the memory (a slice: ends only the slice); idempotent.  Calls that other
   * threads are making with the buffer (kernels, transfers) return first; later
   * ones throw IllegalStateException.
   */
  @Override
  public void close() {
    if (cleanable != null) {
      cleanable.clean();
    } else {
      sliceClosed = true;
    }
  }

  @Override
  public String toString() {
    if (isClosed()) return "DeviceBuffer[closed]";
    return "DeviceBuffer[" + size + " bytes, " + (device < 0 ? "host" : "CUDA device " + device) + "]";
  }

  // --- checks -------------------------------------------------------------------

  /** offset >= 0, bytes >= 0 and [offset, offset + bytes) inside this buffer, as kb_buffer_* report it. */
  private void range(String fn, String bufName, String offsetName, long offset, long bytes) {
    if (offset < 0) throw Checks.negative(fn, offsetName, offset);
    if (bytes < 0) throw Checks.negative(fn, "bytes", bytes);
    if (offset > size || bytes > size - offset) {
      throw new KernelBridgeException(
          Status.INVALID_ARGUMENT,
          fn + ": " + offsetName + " " + offset + " + bytes " + bytes + " exceeds the size of " + bufName + " ("
              + size + " bytes)");
    }
  }

  /** For kernels: the elements of the buffer, when a dimension is derived from it. */
  long elements(String fn, String name, int elementSize) {
    final long s = size();
    if (s % elementSize != 0) {
      throw new KernelBridgeException(
          Status.SHAPE_MISMATCH,
          fn + ": " + name + " has " + s + " bytes, which is not a whole number of " + elementSize + "-byte elements");
    }
    return s / elementSize;
  }

  /** For kernels: the buffer holds a tensor of {@code elements} elements. */
  void require(String fn, String name, long elements, int elementSize, String shape) {
    final long bytes = Checks.mul(fn, name, elements, elementSize);
    final long s = size();
    if (s < bytes) {
      // A u8 tensor's elements are its bytes.
      throw new KernelBridgeException(
          Status.SHAPE_MISMATCH,
          fn + ": " + name + " has " + s + " bytes, but its shape " + shape + " needs " + bytes
              + (elementSize == 1 ? "" : " (" + elements + " elements of " + elementSize + " bytes)"));
    }
  }

  /**
   * For kernels: the address of a tensor in buffer b (0 for null and for an
   * empty buffer), and the beginning of the call's use of b's memory when the
   * address is not 0: the generated code then calls {@link #release(DeviceBuffer,
   * long)} with it once the native call has returned (or thrown).
   */
  static long acquire(String fn, String name, DeviceBuffer b, int elementSize) {
    if (b == null) return 0L;
    b.handle();
    if (b.offset % elementSize != 0) {
      throw new KernelBridgeException(
          Status.INVALID_ARGUMENT,
          fn + ": " + name + " starts at byte " + b.offset + " of its buffer, which is not a multiple of its"
              + " element size " + elementSize);
    }
    if (b.base == 0) return 0L;
    b.acquire();
    return b.base + b.offset;
  }

  /** Ends the use that {@link #acquire(String, String, DeviceBuffer, int)} began (address != 0). */
  static void release(DeviceBuffer b, long address) {
    if (address != 0) b.release();
  }

  // --- upload -------------------------------------------------------------------

  /**
   * Copies all of {@code src} into the buffer at byte {@code offset}, on the creating context.
   *
   * @throws KernelBridgeException INVALID_ARGUMENT when the bytes do not fit (nothing is copied)
   * @throws IllegalStateException when the buffer or its context is closed
   */
  public void upload(long offset, float[] src) {
    upload(context, offset, src);
  }

  /** As {@link #upload(long, float[])}, on ctx. */
  public void upload(Context ctx, long offset, float[] src) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(src, "src");
    final long h = handle();
    final long bytes = 4L * src.length;
    range("kb_buffer_upload", "buf", "offset", offset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      KernelBridgeNative.kb_buffer_upload__f32(c, h, this.offset + offset, bytes, src);
    } finally {
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
    }
  }

  /** As {@link #upload(long, float[])}. */
  public void upload(long offset, int[] src) {
    upload(context, offset, src);
  }

  /** As {@link #upload(long, float[])}, on ctx. */
  public void upload(Context ctx, long offset, int[] src) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(src, "src");
    final long h = handle();
    final long bytes = 4L * src.length;
    range("kb_buffer_upload", "buf", "offset", offset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      KernelBridgeNative.kb_buffer_upload__i32(c, h, this.offset + offset, bytes, src);
    } finally {
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
    }
  }

  /** As {@link #upload(long, float[])}; bf16/f16 tensors are uploaded from their bit patterns. */
  public void upload(long offset, short[] src) {
    upload(context, offset, src);
  }

  /** As {@link #upload(long, float[])}, on ctx. */
  public void upload(Context ctx, long offset, short[] src) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(src, "src");
    final long h = handle();
    final long bytes = 2L * src.length;
    range("kb_buffer_upload", "buf", "offset", offset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      KernelBridgeNative.kb_buffer_upload__i16(c, h, this.offset + offset, bytes, src);
    } finally {
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
    }
  }

  /** As {@link #upload(long, float[])}. */
  public void upload(long offset, byte[] src) {
    upload(context, offset, src);
  }

  /** As {@link #upload(long, float[])}, on ctx. */
  public void upload(Context ctx, long offset, byte[] src) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(src, "src");
    final long h = handle();
    final long bytes = src.length;
    range("kb_buffer_upload", "buf", "offset", offset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      KernelBridgeNative.kb_buffer_upload__i8(c, h, this.offset + offset, bytes, src);
    } finally {
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Copies the elements of a direct buffer from its position to its limit (in native byte
   * order unless it is a ByteBuffer) into the buffer at byte {@code offset}; zero copy on the
   * Java side.  The position is not changed.
   *
   * @throws KernelBridgeException INVALID_ARGUMENT for a heap or wrong-order buffer, or when
   *     the bytes do not fit (nothing is copied)
   */
  public void upload(long offset, Buffer src) {
    upload(context, offset, src);
  }

  /** As {@link #upload(long, Buffer)}, on ctx. */
  public void upload(Context ctx, long offset, Buffer src) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(src, "src");
    final long h = handle();
    final long bytes = (long) src.remaining() * Checks.elementSize(src);
    final Buffer s = Checks.rawDirect("kb_buffer_upload", "src", src, false);
    range("kb_buffer_upload", "buf", "offset", offset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      KernelBridgeNative.kb_buffer_upload__direct(c, h, this.offset + offset, bytes, s);
    } finally {
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(s);
    }
  }

  // --- download -----------------------------------------------------------------

  /**
   * Fills all of {@code dst} from the buffer's bytes at {@code offset}, on the creating context.
   *
   * @throws KernelBridgeException INVALID_ARGUMENT when the range is not inside the buffer
   *     ({@code dst} is not modified)
   * @throws IllegalStateException when the buffer or its context is closed
   */
  public void download(long offset, float[] dst) {
    download(context, offset, dst);
  }

  /** As {@link #download(long, float[])}, on ctx. */
  public void download(Context ctx, long offset, float[] dst) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(dst, "dst");
    final long h = handle();
    final long bytes = 4L * dst.length;
    range("kb_buffer_download", "buf", "offset", offset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      KernelBridgeNative.kb_buffer_download__f32(c, h, this.offset + offset, bytes, dst);
    } finally {
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
    }
  }

  /** As {@link #download(long, float[])}. */
  public void download(long offset, int[] dst) {
    download(context, offset, dst);
  }

  /** As {@link #download(long, float[])}, on ctx. */
  public void download(Context ctx, long offset, int[] dst) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(dst, "dst");
    final long h = handle();
    final long bytes = 4L * dst.length;
    range("kb_buffer_download", "buf", "offset", offset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      KernelBridgeNative.kb_buffer_download__i32(c, h, this.offset + offset, bytes, dst);
    } finally {
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
    }
  }

  /** As {@link #download(long, float[])}; bf16/f16 tensors are downloaded as their bit patterns. */
  public void download(long offset, short[] dst) {
    download(context, offset, dst);
  }

  /** As {@link #download(long, float[])}, on ctx. */
  public void download(Context ctx, long offset, short[] dst) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(dst, "dst");
    final long h = handle();
    final long bytes = 2L * dst.length;
    range("kb_buffer_download", "buf", "offset", offset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      KernelBridgeNative.kb_buffer_download__i16(c, h, this.offset + offset, bytes, dst);
    } finally {
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
    }
  }

  /** As {@link #download(long, float[])}. */
  public void download(long offset, byte[] dst) {
    download(context, offset, dst);
  }

  /** As {@link #download(long, float[])}, on ctx. */
  public void download(Context ctx, long offset, byte[] dst) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(dst, "dst");
    final long h = handle();
    final long bytes = dst.length;
    range("kb_buffer_download", "buf", "offset", offset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      KernelBridgeNative.kb_buffer_download__i8(c, h, this.offset + offset, bytes, dst);
    } finally {
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Fills a direct buffer's elements from its position to its limit (in native byte order
   * unless it is a ByteBuffer) from the buffer's bytes at {@code offset}.  The position is not
   * changed.
   *
   * @throws KernelBridgeException INVALID_ARGUMENT for a heap, read-only or wrong-order buffer,
   *     or when the range is not inside the buffer (nothing is modified)
   */
  public void download(long offset, Buffer dst) {
    download(context, offset, dst);
  }

  /** As {@link #download(long, Buffer)}, on ctx. */
  public void download(Context ctx, long offset, Buffer dst) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(dst, "dst");
    final long h = handle();
    final long bytes = (long) dst.remaining() * Checks.elementSize(dst);
    final Buffer d = Checks.rawDirect("kb_buffer_download", "dst", dst, true);
    range("kb_buffer_download", "buf", "offset", offset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      KernelBridgeNative.kb_buffer_download__direct(c, h, this.offset + offset, bytes, d);
    } finally {
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(d);
    }
  }

  /**
   * The whole buffer as floats.
   *
   * @throws KernelBridgeException SHAPE_MISMATCH when the size is not a multiple of 4
   */
  public float[] toFloatArray() {
    final float[] out = new float[(int) Math.min(Integer.MAX_VALUE, elements("DeviceBuffer.toFloatArray", "buf", 4))];
    checkArrayFits(out.length, 4);
    download(0, out);
    return out;
  }

  /** The whole buffer as ints (SHAPE_MISMATCH when the size is not a multiple of 4). */
  public int[] toIntArray() {
    final int[] out = new int[(int) Math.min(Integer.MAX_VALUE, elements("DeviceBuffer.toIntArray", "buf", 4))];
    checkArrayFits(out.length, 4);
    download(0, out);
    return out;
  }

  /** The whole buffer as shorts, e.g. bf16/f16 bit patterns (SHAPE_MISMATCH when the size is odd). */
  public short[] toShortArray() {
    final short[] out = new short[(int) Math.min(Integer.MAX_VALUE, elements("DeviceBuffer.toShortArray", "buf", 2))];
    checkArrayFits(out.length, 2);
    download(0, out);
    return out;
  }

  /** The whole buffer as bytes. */
  public byte[] toByteArray() {
    final byte[] out = new byte[(int) Math.min(Integer.MAX_VALUE, size())];
    checkArrayFits(out.length, 1);
    download(0, out);
    return out;
  }

  private void checkArrayFits(int length, int elementSize) {
    if ((long) length * elementSize != size) {
      throw new KernelBridgeException(
          Status.OUT_OF_MEMORY, "DeviceBuffer: " + size + " bytes do not fit in one Java array; download slices");
    }
  }

  // --- fill and copy ------------------------------------------------------------

  /**
   * Sets {@code bytes} bytes from {@code offset} to {@code value} (0..255), as memset, on the
   * creating context.
   *
   * @throws KernelBridgeException INVALID_ARGUMENT when the range is not inside the buffer or
   *     the value is not in [0, 255] (nothing is modified)
   */
  public void fill(long offset, long bytes, int value) {
    fill(context, offset, bytes, value);
  }

  /** As {@link #fill(long, long, int)}, on ctx. */
  public void fill(Context ctx, long offset, long bytes, int value) {
    Objects.requireNonNull(ctx, "ctx");
    final long h = handle();
    range("kb_buffer_fill", "buf", "offset", offset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      KernelBridgeNative.kb_buffer_fill(c, h, this.offset + offset, bytes, value);
    } finally {
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Copies {@code bytes} bytes of {@code src} from {@code srcOffset} into this buffer at
   * {@code dstOffset}, on the creating context.  Both buffers must be of the same kind (host,
   * or the same device); ranges in the same memory must not overlap unless they are identical.
   *
   * @throws KernelBridgeException INVALID_ARGUMENT when a range is not inside its buffer, the
   *     kinds differ or the ranges overlap (nothing is modified)
   */
  public void copyFrom(long dstOffset, DeviceBuffer src, long srcOffset, long bytes) {
    copyFrom(context, dstOffset, src, srcOffset, bytes);
  }

  /** As {@link #copyFrom(long, DeviceBuffer, long, long)}, on ctx. */
  public void copyFrom(Context ctx, long dstOffset, DeviceBuffer src, long srcOffset, long bytes) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(src, "src");
    final long h = handle();
    final long s = src.handle();
    range("kb_buffer_copy", "dst", "dst_offset", dstOffset, bytes);
    src.range("kb_buffer_copy", "src", "src_offset", srcOffset, bytes);
    final long c = ctx.address();
    acquire();
    try {
      src.acquire();
    } catch (RuntimeException e) {
      release();
      throw e;
    }
    try {
      KernelBridgeNative.kb_buffer_copy(c, h, this.offset + dstOffset, s, src.offset + srcOffset, bytes);
    } finally {
      src.release();
      release();
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(src);
    }
  }
}
