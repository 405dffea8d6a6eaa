package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;
import static org.kernelbridge.test.Harness.equal;
import static org.kernelbridge.test.Harness.expect;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;
import org.kernelbridge.Backend;
import org.kernelbridge.Bf16;
import org.kernelbridge.Context;
import org.kernelbridge.DeviceBuffer;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Status;

/** DeviceBuffer on a CPU context (host memory): transfers, ranges, slices, lifetime, kernels. */
public final class BufferTest {
  private BufferTest() {}

  static byte[] pattern(int n) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) b[i] = (byte) (i * 7 + 3);
    return b;
  }

  static void expectRange(String fn, String argument, Harness.Body call) {
    KernelBridgeException e = expect(KernelBridgeException.class, call);
    equal(Status.INVALID_ARGUMENT, e.status(), fn + " range");
    check(e.getMessage().startsWith(fn + ": " + argument + " "), "message names " + argument + ": " + e.getMessage());
  }

  public static void testProperties() {
    try (Context ctx = new Context(Backend.CPU, 1); DeviceBuffer b = new DeviceBuffer(ctx, 100)) {
      equal(100L, b.size(), "size");
      equal(-1L, b.device(), "host buffer device");
      check(b.isHost(), "host");
      check(b.context() == ctx, "context");
      check(b.dataAddress() != 0 && b.dataAddress() % 64 == 0, "64-byte aligned host memory");
      check(!b.isClosed(), "open");
      check(b.toString().contains("100 bytes"), b.toString());
      try (DeviceBuffer empty = new DeviceBuffer(ctx, 0)) {
        equal(0L, empty.size(), "empty size");
        equal(0, empty.toFloatArray().length, "empty download");
        empty.upload(0, new float[0]);
        empty.fill(0, 0, 1);
      }
      KernelBridgeException e = expect(KernelBridgeException.class, () -> new DeviceBuffer(ctx, -1));
      equal(Status.INVALID_ARGUMENT, e.status(), "negative size");
      equal("kb_buffer_create: bytes must be >= 0, got -1", e.getMessage(), "message");
    }
  }

  public static void testRoundTripEveryType() {
    try (Context ctx = new Context(Backend.CPU, 1); DeviceBuffer b = new DeviceBuffer(ctx, 4096)) {
      float[] f = KernelsTest.randn(300, 1);
      f[0] = Float.intBitsToFloat(0x7fc01234); // NaN payload survives (bytes are copied)
      b.upload(8, f);
      float[] fo = new float[300];
      b.download(8, fo);
      for (int i = 0; i < f.length; i++) check(Float.floatToRawIntBits(f[i]) == Float.floatToRawIntBits(fo[i]), "float " + i);
      int[] n = {1, -2, Integer.MAX_VALUE, Integer.MIN_VALUE};
      b.upload(0, n);
      int[] no = new int[4];
      b.download(0, no);
      check(Arrays.equals(n, no), "int");
      short[] s = {1, -1, Short.MAX_VALUE, Short.MIN_VALUE, Bf16.ONE};
      b.upload(2, s);
      short[] so = new short[5];
      b.download(2, so);
      check(Arrays.equals(s, so), "short");
      byte[] bytes = pattern(4096);
      b.upload(0, bytes);
      check(Arrays.equals(bytes, b.toByteArray()), "bytes");
      // Elements are stored in native byte order, as C sees them.
      b.upload(0, new float[] {1.5f});
      byte[] four = new byte[4];
      b.download(0, four);
      equal(1.5f, ByteBuffer.wrap(four).order(ByteOrder.nativeOrder()).getFloat(), "native order");
      // Large arrays (the copy path, not the pinned one)
      float[] big = KernelsTest.randn(1000, 1);
      b.upload(0, big);
      check(Arrays.equals(big, Arrays.copyOf(b.toFloatArray(), 1000)), "large float[]");
      // Direct buffers of every kind, from their position; positions unchanged.
      ByteBuffer raw = ByteBuffer.allocateDirect(64).order(ByteOrder.nativeOrder());
      FloatBuffer fb = raw.asFloatBuffer();
      for (int i = 0; i < 16; i++) fb.put(i, i + 0.5f);
      fb.position(4);
      b.upload(100, fb);
      equal(4, fb.position(), "position unchanged");
      float[] got = new float[12];
      b.download(100, got);
      for (int i = 0; i < 12; i++) equal(i + 4.5f, got[i], "FloatBuffer " + i);
      FloatBuffer back = ByteBuffer.allocateDirect(48).order(ByteOrder.nativeOrder()).asFloatBuffer();
      b.download(100, back);
      for (int i = 0; i < 12; i++) equal(i + 4.5f, back.get(i), "download into FloatBuffer " + i);
      ByteBuffer bb = ByteBuffer.allocateDirect(10);
      bb.put(pattern(10)).position(3);
      b.upload(0, bb);
      byte[] seven = new byte[7];
      b.download(0, seven);
      check(Arrays.equals(Arrays.copyOfRange(pattern(10), 3, 10), seven), "ByteBuffer from position");
      IntBuffer ib = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder()).asIntBuffer();
      b.download(0, ib);
      ShortBuffer sb = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder()).asShortBuffer();
      b.download(0, sb);
      // static factories
      try (DeviceBuffer x = DeviceBuffer.of(ctx, f)) {
        equal(1200L, x.size(), "of(float[]) size");
      }
      try (DeviceBuffer x = DeviceBuffer.of(ctx, n)) {
        check(Arrays.equals(n, x.toIntArray()), "of(int[])");
      }
      try (DeviceBuffer x = DeviceBuffer.of(ctx, s)) {
        check(Arrays.equals(s, x.toShortArray()), "of(short[])");
      }
      try (DeviceBuffer x = DeviceBuffer.of(ctx, bytes)) {
        check(Arrays.equals(bytes, x.toByteArray()), "of(byte[])");
      }
    }
  }

  public static void testDirectBufferRejections() {
    try (Context ctx = new Context(Backend.CPU, 1); DeviceBuffer b = new DeviceBuffer(ctx, 64)) {
      KernelBridgeException e = expect(KernelBridgeException.class, () -> b.upload(0, FloatBuffer.allocate(4)));
      equal(Status.INVALID_ARGUMENT, e.status(), "heap buffer");
      check(e.getMessage().equals("kb_buffer_upload: src must be a direct buffer"), e.getMessage());
      FloatBuffer wrong = ByteBuffer.allocateDirect(16)
          .order(ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? ByteOrder.LITTLE_ENDIAN : ByteOrder.BIG_ENDIAN)
          .asFloatBuffer();
      e = expect(KernelBridgeException.class, () -> b.upload(0, wrong));
      check(e.getMessage().contains("byte order"), e.getMessage());
      e = expect(KernelBridgeException.class,
          () -> b.download(0, ByteBuffer.allocateDirect(4).asReadOnlyBuffer()));
      check(e.getMessage().equals("kb_buffer_download: dst must not be read-only"), e.getMessage());
      // a ByteBuffer has no element order: any order is fine; read-only is fine for uploads
      b.upload(0, ByteBuffer.allocateDirect(4).order(ByteOrder.BIG_ENDIAN).asReadOnlyBuffer());
      expect(NullPointerException.class, () -> b.upload(0, (float[]) null));
      expect(NullPointerException.class, () -> b.upload((Context) null, 0, new float[1]));
    }
  }

  public static void testFill() {
    try (Context ctx = new Context(Backend.CPU, 1); DeviceBuffer b = DeviceBuffer.of(ctx, new byte[16])) {
      b.fill(4, 8, 0xab);
      byte[] got = b.toByteArray();
      for (int i = 0; i < 16; i++) equal(i >= 4 && i < 12 ? (byte) 0xab : (byte) 0, got[i], "fill " + i);
      b.fill(0, 16, 0);
      KernelBridgeException e = expect(KernelBridgeException.class, () -> b.fill(0, 4, 256));
      equal(Status.INVALID_ARGUMENT, e.status(), "value");
      equal("kb_buffer_fill: value must be in [0, 255], got 256", e.getMessage(), "message");
      expectRange("kb_buffer_fill", "offset", () -> b.fill(10, 7, 1));
      e = expect(KernelBridgeException.class, () -> b.fill(0, -1, 1));
      equal("kb_buffer_fill: bytes must be >= 0, got -1", e.getMessage(), "negative bytes");
      check(Arrays.equals(new byte[16], b.toByteArray()), "failed fills wrote nothing");
    }
  }

  public static void testCopy() {
    try (Context ctx = new Context(Backend.CPU, 1);
        DeviceBuffer a = DeviceBuffer.of(ctx, pattern(32));
        DeviceBuffer b = new DeviceBuffer(ctx, 32)) {
      b.fill(0, 32, 0);
      b.copyFrom(8, a, 4, 16);
      byte[] got = b.toByteArray();
      for (int i = 0; i < 32; i++) equal(i >= 8 && i < 24 ? (int) pattern(32)[i - 4] : 0, (int) got[i], "copy " + i);
      // within one buffer: disjoint ranges, identical ranges; overlapping is an error
      a.copyFrom(16, a, 0, 16);
      a.copyFrom(4, a, 4, 8);
      KernelBridgeException e = expect(KernelBridgeException.class, () -> a.copyFrom(4, a, 0, 8));
      equal(Status.INVALID_ARGUMENT, e.status(), "overlap");
      check(e.getMessage().contains("overlaps"), e.getMessage());
      byte[] before = b.toByteArray();
      expectRange("kb_buffer_copy", "dst_offset", () -> b.copyFrom(30, a, 0, 4));
      expectRange("kb_buffer_copy", "src_offset", () -> b.copyFrom(0, a, 30, 4));
      e = expect(KernelBridgeException.class, () -> b.copyFrom(-1, a, 0, 4));
      equal("kb_buffer_copy: dst_offset must be >= 0, got -1", e.getMessage(), "negative dst_offset");
      check(Arrays.equals(before, b.toByteArray()), "failed copies wrote nothing");
      // slices of one buffer: the library sees the real offsets, so overlap is still caught
      DeviceBuffer lo = a.slice(0, 16), hi = a.slice(8, 16);
      e = expect(KernelBridgeException.class, () -> hi.copyFrom(0, lo, 0, 16));
      check(e.getMessage().contains("overlaps"), e.getMessage());
    }
  }

  /** A range outside the buffer: INVALID_ARGUMENT naming the argument, nothing modified. */
  public static void testRangeErrors() {
    try (Context ctx = new Context(Backend.CPU, 1); DeviceBuffer b = DeviceBuffer.of(ctx, pattern(20))) {
      expectRange("kb_buffer_upload", "offset", () -> b.upload(8, new float[4]));
      KernelBridgeException e = expect(KernelBridgeException.class, () -> b.upload(8, new float[4]));
      equal("kb_buffer_upload: offset 8 + bytes 16 exceeds the size of buf (20 bytes)", e.getMessage(), "message");
      expectRange("kb_buffer_upload", "offset", () -> b.upload(21, new byte[0]));
      expectRange("kb_buffer_upload", "offset", () -> b.upload(Long.MAX_VALUE, new byte[1]));
      e = expect(KernelBridgeException.class, () -> b.upload(-4, new byte[1]));
      equal("kb_buffer_upload: offset must be >= 0, got -4", e.getMessage(), "negative offset");
      check(Arrays.equals(pattern(20), b.toByteArray()), "failed uploads wrote nothing");
      float[] dst = {9f, 9f, 9f, 9f, 9f, 9f};
      expectRange("kb_buffer_download", "offset", () -> b.download(0, dst));
      for (float v : dst) equal(9f, v, "failed download wrote nothing");
      expectRange("DeviceBuffer.slice", "offset", () -> b.slice(10, 11));
      // within a slice, ranges are the slice's
      DeviceBuffer s = b.slice(4, 8);
      e = expect(KernelBridgeException.class, () -> s.upload(4, new int[2]));
      equal("kb_buffer_upload: offset 4 + bytes 8 exceeds the size of buf (8 bytes)", e.getMessage(), "slice range");
      check(Arrays.equals(pattern(20), b.toByteArray()), "failed slice upload wrote nothing");
      s.upload(4, new int[1]);
      byte[] want = pattern(20);
      Arrays.fill(want, 8, 12, (byte) 0);
      check(Arrays.equals(want, b.toByteArray()), "slice upload at its offset");
    }
  }

  public static void testClosedBuffer() {
    try (Context ctx = new Context(Backend.CPU, 1)) {
      DeviceBuffer b = DeviceBuffer.of(ctx, new float[8]);
      DeviceBuffer s = b.slice(0, 16);
      DeviceBuffer other = new DeviceBuffer(ctx, 32);
      b.close();
      check(b.isClosed() && s.isClosed(), "closed, with its slices");
      b.close(); // idempotent
      expect(IllegalStateException.class, b::size);
      expect(IllegalStateException.class, b::device);
      expect(IllegalStateException.class, b::dataAddress);
      expect(IllegalStateException.class, () -> b.upload(0, new float[1]));
      expect(IllegalStateException.class, () -> b.download(0, new float[1]));
      expect(IllegalStateException.class, () -> b.upload(0, ByteBuffer.allocateDirect(4)));
      expect(IllegalStateException.class, () -> b.fill(0, 4, 0));
      expect(IllegalStateException.class, () -> b.copyFrom(0, other, 0, 4));
      expect(IllegalStateException.class, () -> other.copyFrom(0, b, 0, 4));
      expect(IllegalStateException.class, () -> b.slice(0, 4));
      expect(IllegalStateException.class, b::toFloatArray);
      expect(IllegalStateException.class, () -> s.upload(0, new float[1]));
      expect(IllegalStateException.class, () -> KernelBridge.silu(ctx, b, other));
      expect(IllegalStateException.class, () -> KernelBridge.silu(ctx, other, b));
      expect(IllegalStateException.class, () -> KernelBridge.silu(ctx, s, s));
      check(b.toString().contains("closed"), b.toString());
      // closing a slice ends only the slice
      DeviceBuffer s2 = other.slice(4, 8);
      s2.close();
      check(s2.isClosed() && !other.isClosed(), "slice closed alone");
      expect(IllegalStateException.class, () -> s2.upload(0, new float[1]));
      other.upload(0, new float[8]);
      other.close();
    }
  }

  /** A buffer may outlive its context: its own transfers then need another context. */
  public static void testBufferOutlivesContext() {
    Context first = new Context(Backend.CPU, 1);
    DeviceBuffer b = DeviceBuffer.of(first, new float[] {1f, 2f, 3f});
    first.close();
    IllegalStateException e = expect(IllegalStateException.class, () -> b.download(0, new float[3]));
    check(e.getMessage().contains("Context is closed"), e.getMessage());
    try (Context ctx = new Context(Backend.CPU, 1); DeviceBuffer y = new DeviceBuffer(ctx, 12)) {
      float[] got = new float[3];
      b.download(ctx, 0, got);
      check(Arrays.equals(new float[] {1f, 2f, 3f}, got), "download on another context");
      KernelBridge.silu(ctx, b, y);
      float[] want = new float[3];
      KernelBridge.silu(new float[] {1f, 2f, 3f}, want);
      check(Arrays.equals(want, y.toFloatArray()), "kernel on another context");
    } finally {
      b.close();
    }
  }

  static DeviceBuffer dev(Context ctx, float[] a) {
    return a == null ? null : DeviceBuffer.of(ctx, a);
  }

  static DeviceBuffer dev(Context ctx, int[] a) {
    return a == null ? null : DeviceBuffer.of(ctx, a);
  }

  static void sameFloats(float[] want, DeviceBuffer got, String what) {
    float[] g = got.toFloatArray();
    check(want.length == g.length, what + ": length");
    for (int i = 0; i < want.length; i++) {
      check(Float.floatToRawIntBits(want[i]) == Float.floatToRawIntBits(g[i]), what + "[" + i + "]: " + g[i] + " vs " + want[i]);
    }
  }

  /** The DeviceBuffer overloads give the array overloads' results bit for bit. */
  public static void testKernelsOnBuffersMatchArrays() {
    try (Context ctx = new Context(Backend.CPU, 2)) {
      for (int n : new int[] {0, 7, 5000}) {
        float[] x = KernelsTest.randn(n, 2), y = new float[n];
        KernelBridge.geluTanh(ctx, x, y);
        try (DeviceBuffer dx = dev(ctx, x); DeviceBuffer dy = new DeviceBuffer(ctx, 4L * n)) {
          KernelBridge.geluTanh(ctx, dx, dy);
          sameFloats(y, dy, "gelu_tanh n=" + n);
          KernelBridge.geluTanh(ctx, dx, dx); // in place (declared alias)
          sameFloats(y, dx, "gelu_tanh in place n=" + n);
        }
      }
      // softmax, rmsnorm, layernorm (nullable weight/bias)
      int rows = 5, cols = 33;
      float[] x = KernelsTest.randn(rows * cols, 3), w = KernelsTest.randn(cols, 1), bias = KernelsTest.randn(cols, 1);
      float[] y = new float[rows * cols];
      try (DeviceBuffer dx = dev(ctx, x); DeviceBuffer dw = dev(ctx, w); DeviceBuffer db = dev(ctx, bias);
          DeviceBuffer dy = new DeviceBuffer(ctx, 4L * rows * cols)) {
        KernelBridge.softmax(ctx, rows, cols, x, y);
        KernelBridge.softmax(ctx, rows, cols, dx, dy);
        sameFloats(y, dy, "softmax");
        KernelBridge.rmsnorm(ctx, rows, x, w, 1e-6f, y);
        KernelBridge.rmsnorm(ctx, rows, dx, dw, 1e-6f, dy);
        sameFloats(y, dy, "rmsnorm");
        KernelBridge.layernorm(ctx, rows, cols, x, w, bias, 1e-5f, y);
        KernelBridge.layernorm(ctx, rows, cols, dx, dw, db, 1e-5f, dy);
        sameFloats(y, dy, "layernorm");
        KernelBridge.layernorm(ctx, rows, cols, x, null, null, 1e-5f, y);
        KernelBridge.layernorm(ctx, rows, cols, dx, null, null, 1e-5f, dy);
        sameFloats(y, dy, "layernorm without affine");
      }
      // gemm with row strides and transposes; c is inout
      int m = 9, nn = 11, k = 13, lda = m + 2, ldb = k + 1, ldc = nn + 3;
      float[] a = KernelsTest.randn(k * lda, 1), b = KernelsTest.randn(nn * ldb, 1), c = KernelsTest.randn(m * ldc, 1);
      float[] c0 = c.clone();
      KernelBridge.gemm(ctx, true, true, m, nn, k, 0.5f, a, lda, b, ldb, 2f, c, ldc);
      try (DeviceBuffer da = dev(ctx, a); DeviceBuffer dbb = dev(ctx, b); DeviceBuffer dc = dev(ctx, c0)) {
        KernelBridge.gemm(ctx, true, true, m, nn, k, 0.5f, da, lda, dbb, ldb, 2f, dc, ldc);
        sameFloats(c, dc, "gemm");
      }
      // embedding (i32 ids), argmax and sample (i32 outputs), adamw (inout)
      int vocab = 10, dim = 6;
      int[] ids = {3, 0, 9, 3};
      float[] table = KernelsTest.randn(vocab * dim, 1), out = new float[ids.length * dim];
      KernelBridge.embedding(ctx, vocab, dim, ids, table, out);
      try (DeviceBuffer di = dev(ctx, ids); DeviceBuffer dt = dev(ctx, table);
          DeviceBuffer dout = new DeviceBuffer(ctx, 4L * out.length)) {
        KernelBridge.embedding(ctx, vocab, dim, di, dt, dout);
        sameFloats(out, dout, "embedding");
      }
      float[] logits = KernelsTest.randn(4 * 50, 2);
      int[] am = new int[4], sm = new int[4];
      KernelBridge.argmax(ctx, 50, logits, am);
      KernelBridge.topkSample(ctx, 50, logits, 5, 0.8f, 77L, sm);
      try (DeviceBuffer dl = dev(ctx, logits); DeviceBuffer dam = new DeviceBuffer(ctx, 16);
          DeviceBuffer dsm = new DeviceBuffer(ctx, 16)) {
        KernelBridge.argmax(ctx, 50, dl, dam);
        KernelBridge.topkSample(ctx, 50, dl, 5, 0.8f, 77L, dsm);
        check(Arrays.equals(am, dam.toIntArray()), "argmax");
        check(Arrays.equals(sm, dsm.toIntArray()), "topk_sample");
      }
      float[] p = KernelsTest.randn(100, 1), g = KernelsTest.randn(100, 1), mm = KernelsTest.randn(100, 0.1),
          vv = KernelsTest.uniform(100, 0, 0.1);
      try (DeviceBuffer dp = dev(ctx, p); DeviceBuffer dg = dev(ctx, g); DeviceBuffer dm = dev(ctx, mm);
          DeviceBuffer dv = dev(ctx, vv)) {
        KernelBridge.adamwStep(ctx, p, g, mm, vv, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3);
        KernelBridge.adamwStep(ctx, dp, dg, dm, dv, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3);
        sameFloats(p, dp, "adamw params");
        sameFloats(mm, dm, "adamw m");
        sameFloats(vv, dv, "adamw v");
      }
      // attention
      int batch = 1, heads = 4, kvHeads = 2, seqQ = 3, seqKv = 5, hd = 16;
      float[] q = KernelsTest.randn(batch * heads * seqQ * hd, 1), kk = KernelsTest.randn(batch * kvHeads * seqKv * hd, 1),
          v = KernelsTest.randn(batch * kvHeads * seqKv * hd, 1), o = new float[q.length];
      KernelBridge.attention(ctx, batch, heads, kvHeads, seqQ, seqKv, hd, q, kk, v, true, 0f, o);
      try (DeviceBuffer dq = dev(ctx, q); DeviceBuffer dk = dev(ctx, kk); DeviceBuffer dvv = dev(ctx, v);
          DeviceBuffer dout = new DeviceBuffer(ctx, 4L * o.length)) {
        KernelBridge.attention(ctx, batch, heads, kvHeads, seqQ, seqKv, hd, dq, dk, dvv, true, 0f, dout);
        sameFloats(o, dout, "attention");
      }
      // bf16 on buffers
      short[] hx = Bf16.fromFloats(KernelsTest.randn(64, 2)), hy = new short[64];
      KernelBridge.siluBf16(ctx, hx, hy);
      try (DeviceBuffer dx = DeviceBuffer.of(ctx, hx); DeviceBuffer dy = new DeviceBuffer(ctx, 128)) {
        KernelBridge.siluBf16(ctx, dx, dy);
        check(Arrays.equals(hy, dy.toShortArray()), "silu_bf16 on buffers");
      }
    }
  }

  /** Several tensors in one allocation, through slices; a larger output buffer keeps its tail. */
  public static void testSlicesAndLargerBuffers() {
    try (Context ctx = new Context(Backend.CPU, 1); DeviceBuffer all = new DeviceBuffer(ctx, 4 * 30)) {
      float[] a = KernelsTest.randn(10, 1), b = KernelsTest.randn(10, 1), want = new float[10];
      KernelBridge.add(a, b, want);
      DeviceBuffer sa = all.slice(0, 40), sb = all.slice(40, 40), sy = all.slice(80, 40);
      sa.upload(0, a);
      sb.upload(0, b);
      KernelBridge.add(ctx, sa, sb, sy);
      sameFloats(want, sy, "add on slices");
      // a larger output: only the tensor's bytes are written
      try (DeviceBuffer big = DeviceBuffer.of(ctx, new float[] {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7})) {
        KernelBridge.add(ctx, sa, sb, big);
        float[] got = big.toFloatArray();
        check(Arrays.equals(want, Arrays.copyOf(got, 10)), "larger output: tensor");
        check(got[10] == 7f && got[11] == 7f, "larger output: tail untouched");
      }
      // partial overlap of an output with an input (slices of one buffer): refused by the library
      KernelBridgeException e = expect(KernelBridgeException.class, () -> KernelBridge.add(ctx, all.slice(0, 40),
          all.slice(40, 40), all.slice(4, 40)));
      equal(Status.INVALID_ARGUMENT, e.status(), "partial overlap");
    }
  }

  public static void testKernelSizeChecks() {
    try (Context ctx = new Context(Backend.CPU, 1);
        DeviceBuffer x = DeviceBuffer.of(ctx, new float[6]);
        DeviceBuffer small = DeviceBuffer.of(ctx, new float[5]);
        DeviceBuffer odd = new DeviceBuffer(ctx, 10)) {
      float[] before = small.toFloatArray();
      KernelBridgeException e = expect(KernelBridgeException.class, () -> KernelBridge.softmax(ctx, 2, 3, x, small));
      equal(Status.SHAPE_MISMATCH, e.status(), "small output");
      equal("kb_softmax: y has 20 bytes, but its shape [rows, cols] needs 24 (6 elements of 4 bytes)", e.getMessage(), "message");
      check(Arrays.equals(before, small.toFloatArray()), "nothing written");
      e = expect(KernelBridgeException.class, () -> KernelBridge.silu(ctx, odd, odd));
      equal(Status.SHAPE_MISMATCH, e.status(), "derived from a partial element");
      check(e.getMessage().startsWith("kb_silu: x has 10 bytes"), e.getMessage());
      e = expect(KernelBridgeException.class, () -> KernelBridge.softmax(ctx, -1, 3, x, x));
      equal("kb_softmax: rows must be >= 0, got -1", e.getMessage(), "negative dim");
      e = expect(KernelBridgeException.class, () -> KernelBridge.softmax(ctx, 1L << 40, 1L << 40, x, x));
      equal(Status.OUT_OF_MEMORY, e.status(), "overflowing size");
      // a slice not aligned to the element size
      e = expect(KernelBridgeException.class, () -> KernelBridge.silu(ctx, x.slice(2, 8), x.slice(12, 8)));
      equal(Status.INVALID_ARGUMENT, e.status(), "misaligned slice");
      check(e.getMessage().startsWith("kb_silu: x starts at byte 2"), e.getMessage());
      // null: allowed where empty (or nullable), as for arrays
      KernelBridge.silu(ctx, (DeviceBuffer) null, (DeviceBuffer) null);
      KernelBridge.softmax(ctx, 0, 3, (DeviceBuffer) null, (DeviceBuffer) null);
      e = expect(KernelBridgeException.class, () -> KernelBridge.softmax(ctx, 2, 3, null, x));
      equal(Status.INVALID_ARGUMENT, e.status(), "null input");
      check(e.getMessage().startsWith("kb_softmax: x must not be null"), e.getMessage());
      expect(NullPointerException.class, () -> KernelBridge.silu((Context) null, x, x));
      // from C: undeclared aliasing of buffers
      e = expect(KernelBridgeException.class,
          () -> KernelBridge.gemm(ctx, false, false, 1, 1, 1, 1f, x, 1, x, 1, 0f, x, 1));
      equal(Status.INVALID_ARGUMENT, e.status(), "c overlaps a");
      equal("kb_gemm: c must not overlap a", ctx.lastError(), "context message");
    }
  }

  /** Unclosed buffers are freed by the Cleaner. */
  public static void testCleanerSafetyNet() throws Exception {
    try (Context ctx = new Context(Backend.CPU, 1)) {
      for (int i = 0; i < 20_000; i++) {
        DeviceBuffer b = new DeviceBuffer(ctx, 4096);
        b.fill(0, 4096, 1);
      }
    }
    System.gc();
    Thread.sleep(50);
  }
}
