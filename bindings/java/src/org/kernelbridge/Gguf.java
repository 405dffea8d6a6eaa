package org.kernelbridge;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * An open GGUF file (versions 2 and 3), validated by the C library when
 * opened (kb_gguf_open; docs/gguf.md).  Keys and tensors are looked up by
 * name.  Shapes are row-major, outermost axis first, as kernels take them
 * (GGUF stores the innermost axis first).  Calls run on the {@link Context}
 * given when opening, which must stay open; queries may run on several
 * threads at once, {@link #close} must not overlap them.
 */
public final class Gguf implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();
  /** Bytes of the buffer for a name (NUL included), as the native wrapper's. */
  private static final int NAME_CAPACITY = 256;

  /** Owns the native kb_gguf; runs once (close or Cleaner). */
  private static final class Owner implements Runnable {
    volatile long handle;

    Owner(long handle) {
      this.handle = handle;
    }

    @Override
    public void run() {
      long h = handle;
      handle = 0;
      if (h != 0) KernelBridgeNative.kb_gguf_destroy(h);
    }
  }

  private final Context context;
  private final Owner owner;
  private final Cleaner.Cleanable cleanable;

  private Gguf(Context context, long handle) {
    this.context = context;
    this.owner = new Owner(handle);
    this.cleanable = CLEANER.register(this, owner);
  }

  /**
   * Maps and validates the GGUF file at path.
   *
   * @throws KernelBridgeException INVALID_ARGUMENT (a missing or malformed file, naming the problem) or
   *     UNSUPPORTED (a version or type this reader does not handle)
   */
  public static Gguf open(Context ctx, String path) {
    Objects.requireNonNull(ctx, "ctx");
    noNul("kb_gguf_open", "path", path);
    final long[] out = new long[1];
    try {
      KernelBridgeNative.kb_gguf_open(ctx.address(), path, out);
    } finally {
      Reference.reachabilityFence(ctx);
    }
    return new Gguf(ctx, out[0]);
  }

  /** Validates a GGUF file held in data, which is copied. */
  public static Gguf openMemory(Context ctx, byte[] data) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(data, "data");
    final long[] out = new long[1];
    try {
      KernelBridgeNative.kb_gguf_open_memory__i8(ctx.address(), data.length, data, out);
    } finally {
      Reference.reachabilityFence(ctx);
    }
    return new Gguf(ctx, out[0]);
  }

  /** Validates a GGUF file held in a direct buffer (all of its capacity), which is copied. */
  public static Gguf openMemory(Context ctx, ByteBuffer data) {
    Objects.requireNonNull(ctx, "ctx");
    Objects.requireNonNull(data, "data");
    if (!data.isDirect()) throw new IllegalArgumentException("Gguf.openMemory: data must be a direct ByteBuffer");
    final long[] out = new long[1];
    try {
      KernelBridgeNative.kb_gguf_open_memory__direct(ctx.address(), data.capacity(), data, out);
    } finally {
      Reference.reachabilityFence(ctx);
      Reference.reachabilityFence(data);
    }
    return new Gguf(ctx, out[0]);
  }

  /** Releases the file; idempotent. */
  @Override
  public void close() {
    cleanable.clean();
  }

  private static void noNul(String fn, String name, String s) {
    Objects.requireNonNull(s, name);
    if (s.indexOf('\0') >= 0) {
      throw new KernelBridgeException(Status.INVALID_ARGUMENT, fn + ": " + name + " holds a NUL character");
    }
  }

  private long handle(String fn) {
    long h = owner.handle;
    if (h == 0) throw new IllegalStateException(fn + ": the Gguf is closed");
    return h;
  }

  /** A query on the handle: one native call returning an int64. */
  private interface LongCall {
    void call(long ctx, long g, long[] out);
  }

  private long query(String fn, LongCall f) {
    final long[] out = new long[1];
    try {
      f.call(context.address(), handle(fn), out);
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(context);
    }
    return out[0];
  }

  /** The file's GGUF version: 2 or 3. */
  public int version() {
    return (int) query("kb_gguf_version", KernelBridgeNative::kb_gguf_version);
  }

  /** The metadata keys, in file order. */
  public List<String> keys() {
    long n = query("kb_gguf_key_count", KernelBridgeNative::kb_gguf_key_count);
    List<String> keys = new ArrayList<>();
    for (long i = 0; i < n; i++) {
      final long index = i;
      final byte[] name = new byte[NAME_CAPACITY];
      query("kb_gguf_key_name", (c, g, out) -> KernelBridgeNative.kb_gguf_key_name(c, g, index, name));
      keys.add(Checks.cString(name));
    }
    return keys;
  }

  /** The index of key, or -1 when the file has none. */
  private long findKey(String key) {
    noNul("kb_gguf_find_key", "key", key);
    return query("kb_gguf_find_key", (c, g, out) -> KernelBridgeNative.kb_gguf_find_key(c, g, key, out));
  }

  private long key(String fn, String key) {
    long i = findKey(key);
    if (i < 0) throw new KernelBridgeException(Status.INVALID_ARGUMENT, fn + ": the file has no key '" + key + "'");
    return i;
  }

  /** Whether the file has metadata key key. */
  public boolean hasKey(String key) {
    return findKey(key) >= 0;
  }

  /** The type of key's value ({@link GgufType#ARRAY} for arrays). */
  public GgufType keyType(String key) {
    long i = key("Gguf.keyType", key);
    return GgufType.fromCode((int) query("kb_gguf_key_type", (c, g, out) -> KernelBridgeNative.kb_gguf_key_type(c, g, i, out)));
  }

  /** key's integer (or BOOL) value. */
  public long getLong(String key) {
    long i = key("Gguf.getLong", key);
    return query("kb_gguf_get_int64", (c, g, out) -> KernelBridgeNative.kb_gguf_get_int64(c, g, i, out));
  }

  /** The number of values of key i: its array length, or 1. */
  private long count(long i) {
    long t = query("kb_gguf_key_type", (c, g, out) -> KernelBridgeNative.kb_gguf_key_type(c, g, i, out));
    if (t != GgufType.ARRAY.code()) return 1;
    return query("kb_gguf_array_length", (c, g, out) -> KernelBridgeNative.kb_gguf_array_length(c, g, i, out));
  }

  /** key's numbers (a scalar or an array) as float32 values. */
  public float[] getFloats(String key) {
    long i = key("Gguf.getFloats", key);
    final float[] values = new float[(int) count(i)];
    query("kb_gguf_get_f32", (c, g, out) -> KernelBridgeNative.kb_gguf_get_f32(c, g, i, values.length, values));
    return values;
  }

  /** key's integers (a scalar or an array) as int32 values. */
  public int[] getInts(String key) {
    long i = key("Gguf.getInts", key);
    final int[] values = new int[(int) count(i)];
    query("kb_gguf_get_i32", (c, g, out) -> KernelBridgeNative.kb_gguf_get_i32(c, g, i, values.length, values));
    return values;
  }

  /** The bytes of key's STRING value. */
  public byte[] getBytes(String key) {
    long i = key("Gguf.getBytes", key);
    long n = query("kb_gguf_string_bytes", (c, g, out) -> KernelBridgeNative.kb_gguf_string_bytes(c, g, i, out));
    final byte[] value = new byte[(int) n];
    query("kb_gguf_get_string", (c, g, out) -> KernelBridgeNative.kb_gguf_get_string__i8(c, g, i, value.length, value));
    return value;
  }

  /** key's STRING value decoded as UTF-8. */
  public String getString(String key) {
    return new String(getBytes(key), StandardCharsets.UTF_8);
  }

  /** The strings of key's array of strings, one after the other (see {@link #stringArrayOffsets}). */
  public byte[] stringArrayBlob(String key) {
    long i = key("Gguf.stringArrayBlob", key);
    long n = query("kb_gguf_string_array_bytes", (c, g, out) -> KernelBridgeNative.kb_gguf_string_array_bytes(c, g, i, out));
    final byte[] blob = new byte[(int) n];
    query("kb_gguf_get_string_array_data",
        (c, g, out) -> KernelBridgeNative.kb_gguf_get_string_array_data__i8(c, g, i, blob.length, blob));
    return blob;
  }

  /** Offsets[n + 1] into {@link #stringArrayBlob}: string k is blob[offsets[k], offsets[k + 1]). */
  public int[] stringArrayOffsets(String key) {
    long i = key("Gguf.stringArrayOffsets", key);
    long n = query("kb_gguf_array_length", (c, g, out) -> KernelBridgeNative.kb_gguf_array_length(c, g, i, out));
    final int[] offsets = new int[(int) n + 1];
    query("kb_gguf_get_string_array_offsets",
        (c, g, out) -> KernelBridgeNative.kb_gguf_get_string_array_offsets(c, g, i, offsets.length, offsets));
    return offsets;
  }

  /** The tensor names, in file order. */
  public List<String> tensorNames() {
    long n = query("kb_gguf_tensor_count", KernelBridgeNative::kb_gguf_tensor_count);
    List<String> names = new ArrayList<>();
    for (long i = 0; i < n; i++) {
      final long index = i;
      final byte[] name = new byte[NAME_CAPACITY];
      query("kb_gguf_tensor_name", (c, g, out) -> KernelBridgeNative.kb_gguf_tensor_name(c, g, index, name));
      names.add(Checks.cString(name));
    }
    return names;
  }

  private long tensor(String fn, String name) {
    noNul("kb_gguf_find_tensor", "name", name);
    long i = query("kb_gguf_find_tensor", (c, g, out) -> KernelBridgeNative.kb_gguf_find_tensor(c, g, name, out));
    if (i < 0) throw new KernelBridgeException(Status.INVALID_ARGUMENT, fn + ": the file has no tensor '" + name + "'");
    return i;
  }

  /**
   * The GGML type number of tensor name: a {@link Dtype} code for the types kernels take (F32, F16, BF16,
   * Q8_0, Q4_0), another GGML type otherwise, which {@link #readTensor} refuses.
   */
  public int tensorType(String name) {
    long i = tensor("Gguf.tensorType", name);
    return (int) query("kb_gguf_tensor_type", (c, g, out) -> KernelBridgeNative.kb_gguf_tensor_type(c, g, i, out));
  }

  /** The shape of tensor name, row-major (the last axis is GGUF's ne[0]). */
  public long[] tensorShape(String name) {
    long i = tensor("Gguf.tensorShape", name);
    long n = query("kb_gguf_tensor_n_dims", (c, g, out) -> KernelBridgeNative.kb_gguf_tensor_n_dims(c, g, i, out));
    final long[] shape = new long[(int) n];
    for (int a = 0; a < shape.length; a++) {
      final int axis = a;
      shape[a] = query("kb_gguf_tensor_dim", (c, g, out) -> KernelBridgeNative.kb_gguf_tensor_dim(c, g, i, axis, out));
    }
    return shape;
  }

  /** The size in bytes of tensor name's data. */
  public long tensorBytes(String name) {
    long i = tensor("Gguf.tensorBytes", name);
    return query("kb_gguf_tensor_bytes", (c, g, out) -> KernelBridgeNative.kb_gguf_tensor_bytes(c, g, i, out));
  }

  /** Where tensor name's data starts in the file (to map it as a direct buffer). */
  public long tensorOffset(String name) {
    long i = tensor("Gguf.tensorOffset", name);
    return query("kb_gguf_tensor_offset", (c, g, out) -> KernelBridgeNative.kb_gguf_tensor_offset(c, g, i, out));
  }

  /**
   * A copy of tensor name's data.
   *
   * @throws KernelBridgeException UNSUPPORTED for a type kernels do not take
   */
  public byte[] readTensor(String name) {
    long i = tensor("Gguf.readTensor", name);
    long n = query("kb_gguf_tensor_bytes", (c, g, out) -> KernelBridgeNative.kb_gguf_tensor_bytes(c, g, i, out));
    final byte[] data = new byte[(int) n];
    query("kb_gguf_tensor_read", (c, g, out) -> KernelBridgeNative.kb_gguf_tensor_read__i8(c, g, i, data.length, data));
    return data;
  }
}
