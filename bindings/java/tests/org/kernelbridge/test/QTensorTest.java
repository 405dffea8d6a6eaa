package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;
import static org.kernelbridge.test.Harness.equal;
import static org.kernelbridge.test.Harness.expect;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.kernelbridge.Activation;
import org.kernelbridge.Backend;
import org.kernelbridge.Bf16;
import org.kernelbridge.Context;
import org.kernelbridge.DeviceBuffer;
import org.kernelbridge.Dtype;
import org.kernelbridge.F16;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.QTensor;
import org.kernelbridge.Status;

/**
 * Weights in storage formats: the Dtype enum and kb_dtype_bytes, QTensor (quantize/dequantize
 * within each format's step, the block formats' bytes against GGML's reference quantization
 * written here), linear and embedding through QTensor against the generated linearW / embeddingW
 * overloads (arrays, byte[] or direct or memory-mapped bytes, NIO buffers, DeviceBuffers) bit for
 * bit, F32 weights against KernelBridge.linear bit for bit, Q8_0 against a float64 product, and bad
 * inputs (status, the argument named, nothing written).
 */
public final class QTensorTest {
  private QTensorTest() {}

  static final Random RNG = new Random(20250611);

  static float[] randn(int n) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) a[i] = (float) RNG.nextGaussian();
    return a;
  }

  /** Bytes of a [rows, cols] tensor, from the format descriptions of kb_dtype. */
  static long formatBytes(Dtype dt, long rows, long cols) {
    switch (dt) {
      case F32:
        return rows * cols * 4;
      case F16:
      case BF16:
        return rows * cols * 2;
      case Q8_0:
        return rows * (cols / 32) * 34;
      default:
        return rows * (cols / 32) * 18;
    }
  }

  static void sameBits(float[] want, float[] got, String what) {
    equal(want.length, got.length, what + " length");
    for (int i = 0; i < want.length; i++) {
      if (Float.floatToRawIntBits(want[i]) != Float.floatToRawIntBits(got[i])) {
        throw new AssertionError(what + "[" + i + "]: " + got[i] + " vs " + want[i]);
      }
    }
  }

  static void fails(KernelBridgeException e, Status status, String... parts) {
    equal(status, e.status(), "status of \"" + e.getMessage() + "\"");
    for (String p : parts) check(e.getMessage().contains(p), "\"" + e.getMessage() + "\" should name " + p);
  }

  // --- GGML's reference quantization (quantize_row_q8_0_ref / _q4_0_ref), in Java ---------------

  static void putScale(byte[] out, int at, float d) {
    short h = F16.fromFloat(d);
    out[at] = (byte) h;
    out[at + 1] = (byte) (h >> 8);
  }

  /** C's roundf: halves away from zero (the sum in double is exact for floats). */
  static float roundf(float v) {
    return (float) Math.copySign(Math.floor(Math.abs((double) v) + 0.5), v);
  }

  static byte[] refQ8_0(float[] x) {
    byte[] out = new byte[x.length / 32 * 34];
    for (int b = 0; b < x.length / 32; b++) {
      float amax = 0f;
      for (int j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j]));
      float d = amax / 127f;
      float id = d != 0f ? 1f / d : 0f;
      putScale(out, b * 34, d);
      for (int j = 0; j < 32; j++) out[b * 34 + 2 + j] = (byte) (int) roundf(x[b * 32 + j] * id);
    }
    return out;
  }

  static byte[] refQ4_0(float[] x) {
    byte[] out = new byte[x.length / 32 * 18];
    for (int b = 0; b < x.length / 32; b++) {
      float amax = 0f, max = 0f;
      for (int j = 0; j < 32; j++) {
        float v = x[b * 32 + j];
        if (amax < Math.abs(v)) {
          amax = Math.abs(v);
          max = v;
        }
      }
      float d = max / -8f;
      float id = d != 0f ? 1f / d : 0f;
      putScale(out, b * 18, d);
      for (int j = 0; j < 16; j++) {
        int lo = Math.min(15, (int) (x[b * 32 + j] * id + 8.5f));
        int hi = Math.min(15, (int) (x[b * 32 + 16 + j] * id + 8.5f));
        out[b * 18 + 2 + j] = (byte) (lo | hi << 4);
      }
    }
    return out;
  }

  /** The simple formats: each element's bits, little-endian. */
  static byte[] refElementwise(Dtype dt, float[] x) {
    int size = dt == Dtype.F32 ? 4 : 2;
    ByteBuffer b = ByteBuffer.allocate(x.length * size).order(ByteOrder.LITTLE_ENDIAN);
    for (float v : x) {
      if (dt == Dtype.F32) b.putFloat(v);
      else b.putShort(dt == Dtype.F16 ? F16.fromFloat(v) : Bf16.fromFloat(v));
    }
    return b.array();
  }

  static byte[] reference(Dtype dt, float[] x) {
    if (dt == Dtype.Q8_0) return refQ8_0(x);
    if (dt == Dtype.Q4_0) return refQ4_0(x);
    return refElementwise(dt, x);
  }

  // --- the enum and kb_dtype_bytes --------------------------------------------------------------

  public static void testDtypeCodesAndBytes() {
    equal(0, Dtype.F32.code(), "F32");
    equal(1, Dtype.F16.code(), "F16");
    equal(2, Dtype.Q4_0.code(), "Q4_0");
    equal(8, Dtype.Q8_0.code(), "Q8_0");
    equal(30, Dtype.BF16.code(), "BF16");
    equal(5, Dtype.values().length, "number of formats");
    for (Dtype dt : Dtype.values()) equal(dt, Dtype.fromCode(dt.code()), "fromCode " + dt);
    for (int code : new int[] {-1, 3, 7, 9, 29, 31, 1000}) equal(null, Dtype.fromCode(code), "fromCode " + code);
    for (Dtype dt : Dtype.values()) {
      for (long[] s : new long[][] {{0, 0}, {3, 64}, {1, 32}, {1000, 4096}, {0, 96}}) {
        equal(formatBytes(dt, s[0], s[1]), KernelBridge.dtypeBytes(dt, s[0], s[1]), dt + " " + Arrays.toString(s));
      }
    }
    fails(expect(KernelBridgeException.class, () -> KernelBridge.dtypeBytes(Dtype.Q8_0, 2, 33)),
        Status.INVALID_ARGUMENT, "kb_dtype_bytes", "cols", "33");
    fails(expect(KernelBridgeException.class, () -> KernelBridge.dtypeBytes(Dtype.Q4_0, 2, 48)),
        Status.INVALID_ARGUMENT, "cols", "48");
    equal(2L * 33 * 2, KernelBridge.dtypeBytes(Dtype.F16, 2, 33), "F16 has no blocks");
    fails(expect(KernelBridgeException.class, () -> KernelBridge.dtypeBytes(Dtype.F32, -1, 4)),
        Status.INVALID_ARGUMENT, "rows", "-1");
    fails(expect(KernelBridgeException.class, () -> KernelBridge.dtypeBytes(Dtype.F32, Long.MAX_VALUE / 2, 4)),
        Status.OUT_OF_MEMORY, "overflows");
    expect(NullPointerException.class, () -> KernelBridge.dtypeBytes(null, 1, 32));
  }

  // --- quantize / dequantize ----------------------------------------------------------------------

  public static void testRoundTripWithinStep() {
    int rows = 5, cols = 96;
    float[] x = randn(rows * cols);
    for (int i = 0; i < x.length; i += 7) x[i] *= 40f; // blocks of very different scales
    x[1] = 0f;
    x[2] = -0f;
    Arrays.fill(x, 3 * cols, 3 * cols + 32, 0f); // an all-zero block
    for (Dtype dt : Dtype.values()) {
      QTensor q = QTensor.quantize(dt, rows, cols, x);
      equal(dt, q.dtype(), "dtype");
      equal(rows, q.rows(), "rows");
      equal(cols, q.cols(), "cols");
      equal(formatBytes(dt, rows, cols), q.byteSize(), dt + " bytes");
      float[] y = q.dequantize();
      equal(x.length, y.length, "values");
      for (int i = 0; i < x.length; i++) {
        double bound;
        switch (dt) {
          case F32:
            bound = 0;
            break;
          case F16: // half an ulp of binary16 (11 significant bits), subnormals below 2^-14
            bound = Math.max(Math.abs(x[i]) * 0x1p-11, 0x1p-25);
            break;
          case BF16: // half an ulp of 8 significant bits
            bound = Math.abs(x[i]) * 0x1p-8;
            break;
          default: {
            // One step of the block's grid (Q8_0: max|x| / 127, half a step of rounding;
            // Q4_0: max|x| / 8, up to a whole step where +8 is clamped to 7), plus the
            // scale's rounding to binary16 times the largest code.
            int b = i / 32 * 32;
            double amax = 0;
            for (int j = b; j < b + 32; j++) amax = Math.max(amax, Math.abs(x[j]));
            double step = dt == Dtype.Q8_0 ? amax / 127 : amax / 8;
            int codes = dt == Dtype.Q8_0 ? 127 : 8;
            bound = (dt == Dtype.Q8_0 ? 0.5 : 1.0) * step + codes * step * 0x1p-11 + Math.ulp((float) amax);
          }
        }
        double err = Math.abs((double) y[i] - x[i]);
        check(err <= bound, dt + " [" + i + "]: " + x[i] + " -> " + y[i] + ", error " + err + " > " + bound);
      }
      // Zeros stay zero in every format.
      for (int i = 3 * cols; i < 3 * cols + 32; i++) check(y[i] == 0f, dt + " zero block [" + i + "] = " + y[i]);
      // The same through an explicit context, and dequantize of a direct-buffer copy.
      try (Context ctx = new Context(Backend.CPU, 3)) {
        QTensor q2 = QTensor.quantize(ctx, dt, rows, cols, x);
        check(Arrays.equals(q.toByteArray(), q2.toByteArray()), dt + " bytes differ between contexts");
        ByteBuffer direct = ByteBuffer.allocateDirect((int) q.byteSize());
        direct.put(q.toByteArray()).flip();
        sameBits(y, QTensor.of(dt, rows, cols, direct).dequantize(ctx), dt + " dequantize of a direct buffer");
      }
    }
  }

  public static void testBytesMatchReference() {
    for (int[] s : new int[][] {{1, 32}, {4, 64}, {3, 256}}) {
      float[] x = randn(s[0] * s[1]);
      x[0] = 1e-30f; // tiny and huge values in one tensor
      x[x.length - 1] = -300f;
      if (x.length == 32) {
        // Q8_0 scale 1: codes at exact halves, which round away from zero (3, -3, 1, -1).
        x[31] = 127f;
        x[1] = 2.5f;
        x[2] = -2.5f;
        x[3] = 0.5f;
        x[4] = -0.5f;
      }
      for (Dtype dt : Dtype.values()) {
        byte[] want = reference(dt, x);
        byte[] got = QTensor.quantize(dt, s[0], s[1], x).toByteArray();
        check(Arrays.equals(want, got), dt + " " + Arrays.toString(s) + ": bytes differ from the reference");
        // The generated overloads write the same bytes: byte[], any direct buffer, DeviceBuffer.
        byte[] viaArray = new byte[want.length];
        KernelBridge.quantize(dt, s[0], s[1], x, viaArray);
        check(Arrays.equals(want, viaArray), dt + " quantize(byte[])");
        FloatBuffer fx = ByteBuffer.allocateDirect(4 * x.length).order(ByteOrder.nativeOrder()).asFloatBuffer();
        fx.put(x).flip();
        ByteBuffer out = ByteBuffer.allocateDirect(want.length + 8);
        out.position(8); // a tensor starts at the position
        KernelBridge.quantize(dt, s[0], s[1], fx, out);
        equal(8, out.position(), "position unchanged");
        byte[] viaBuffer = new byte[want.length];
        out.get(viaBuffer);
        check(Arrays.equals(want, viaBuffer), dt + " quantize(FloatBuffer, ByteBuffer)");
        try (Context ctx = new Context(Backend.CPU, 2);
            DeviceBuffer dx = DeviceBuffer.of(ctx, x);
            DeviceBuffer dy = new DeviceBuffer(ctx, want.length)) {
          KernelBridge.quantize(ctx, dt, s[0], s[1], dx, dy);
          check(Arrays.equals(want, dy.toByteArray()), dt + " quantize(DeviceBuffer)");
          float[] back = new float[x.length];
          KernelBridge.dequantize(ctx, dt, s[0], s[1], dy, dx);
          KernelBridge.dequantize(ctx, dt, s[0], s[1], want, back);
          sameBits(back, dx.toFloatArray(), dt + " dequantize(DeviceBuffer)");
        }
      }
    }
  }

  // --- linear -------------------------------------------------------------------------------------

  /**
   * The bytes in a direct, read-only buffer that starts at byte {@code start} of a larger one
   * (the buffer's own memory is at least 8-byte aligned).
   */
  static ByteBuffer directCopyAt(byte[] bytes, int start) {
    ByteBuffer b = ByteBuffer.allocateDirect(bytes.length + 8);
    b.position(start);
    b.put(bytes);
    b.position(start).limit(start + bytes.length);
    return b.asReadOnlyBuffer();
  }

  /**
   * A direct copy at the least aligned start the format allows: byte 3 for the block formats
   * (a GGUF tensor may start at any byte), byte 4 for the float formats (element-aligned).
   */
  static ByteBuffer directCopy(Dtype dt, byte[] bytes) {
    boolean block = dt == Dtype.Q8_0 || dt == Dtype.Q4_0;
    return directCopyAt(bytes, block ? 3 : 4);
  }

  static FloatBuffer directFloats(float[] a) {
    if (a == null) return null;
    FloatBuffer b = ByteBuffer.allocateDirect(4 * a.length).order(ByteOrder.nativeOrder()).asFloatBuffer();
    b.put(a).flip();
    return b;
  }

  public static void testLinearEqualsLinearW() {
    // The first shape is small (the JNI wrapper pins the arrays), the second large (it copies them).
    int[][] shapes = {{3, 64, 5}, {8, 1024, 6}};
    try (Context ctx = new Context(Backend.CPU, 4)) {
      for (int[] s : shapes) {
        int rows = s[0], in = s[1], out = s[2];
        float[] x = randn(rows * in), wf = randn(out * in), bias = randn(out);
        for (Dtype dt : Dtype.values()) {
          for (Activation act : new Activation[] {Activation.NONE, Activation.GELU}) {
            for (float[] b : new float[][] {bias, null}) {
              String what = dt + " " + Arrays.toString(s) + " " + act + (b == null ? " no bias" : "");
              QTensor w = QTensor.quantize(ctx, dt, out, in, wf);
              byte[] wb = w.toByteArray();
              float[] want = new float[rows * out];
              KernelBridge.linearW(ctx, rows, in, out, x, dt, wb, b, act, want);

              float[] y = new float[rows * out];
              QTensor.linear(ctx, x, w, b, act, y);
              sameBits(want, y, what + " QTensor (byte[])");

              Arrays.fill(y, Float.NaN);
              QTensor.linear(ctx, x, QTensor.of(dt, out, in, directCopy(dt, wb)), b, act, y);
              sameBits(want, y, what + " QTensor (direct)");

              Arrays.fill(y, Float.NaN);
              QTensor.linear(x, w, b, act, y);
              sameBits(want, y, what + " QTensor, default context");

              FloatBuffer fy = directFloats(new float[rows * out]);
              KernelBridge.linearW(ctx, rows, in, out, directFloats(x), dt, directCopy(dt, wb), directFloats(b), act, fy);
              float[] got = new float[rows * out];
              fy.get(got);
              sameBits(want, got, what + " linearW (NIO)");

              try (DeviceBuffer dx = DeviceBuffer.of(ctx, x);
                  DeviceBuffer dw = DeviceBuffer.of(ctx, wb);
                  DeviceBuffer db = b == null ? null : DeviceBuffer.of(ctx, b);
                  DeviceBuffer dy = new DeviceBuffer(ctx, 4L * rows * out)) {
                KernelBridge.linearW(ctx, rows, in, out, dx, dt, dw, db, act, dy);
                sameBits(want, dy.toFloatArray(), what + " linearW (DeviceBuffer)");
              }
            }
          }
        }
      }
    }
  }

  public static void testF32WeightsEqualLinear() {
    int[][] shapes = {{2, 16, 3}, {1, 7, 1}, {5, 900, 4}, {0, 8, 3}};
    for (int[] s : shapes) {
      int rows = s[0], in = s[1], out = s[2];
      float[] x = randn(rows * in), wf = randn(out * in), bias = randn(out);
      QTensor w = QTensor.quantize(Dtype.F32, out, in, wf);
      for (Activation act : Activation.values()) {
        float[] want = new float[rows * out], y = new float[rows * out];
        KernelBridge.linear(rows, in, out, x, wf, bias, act, want);
        QTensor.linear(x, w, bias, act, y);
        sameBits(want, y, "F32 " + Arrays.toString(s) + " " + act);
      }
    }
  }

  public static void testNoInputFeaturesGiveActivatedBias() {
    // in_features == 0: every sum is empty, y = act(bias), in every format
    // (a block format then holds no block at all).
    float[] bias = {-1f, 0.5f, 2f};
    for (Dtype dt : Dtype.values()) {
      QTensor w = QTensor.of(dt, 3, 0, new byte[0]);
      float[] y = new float[6];
      Arrays.fill(y, Float.NaN);
      QTensor.linear(new float[0], w, bias, Activation.RELU, y);
      check(Arrays.equals(y, new float[] {0f, 0.5f, 2f, 0f, 0.5f, 2f}), dt + ": " + Arrays.toString(y));
    }
  }

  public static void testQ8_0NearFloat64Product() {
    // kb_linear_w quantizes each block of x to int8 (max|x| / 127 per block, rounded to
    // nearest): the result differs from the float64 product of x and the dequantized weights
    // by at most half an x step per element times |w|, plus float32 rounding.
    int rows = 3, in = 256, out = 7;
    float[] x = randn(rows * in), bias = randn(out);
    QTensor w = QTensor.quantize(Dtype.Q8_0, out, in, randn(out * in));
    float[] wd = w.dequantize(), y = new float[rows * out];
    QTensor.linear(x, w, bias, Activation.NONE, y);
    for (int r = 0; r < rows; r++) {
      for (int o = 0; o < out; o++) {
        double sum = bias[o], bound = 0, mag = Math.abs(bias[o]);
        for (int b = 0; b < in; b += 32) {
          double amax = 0;
          for (int i = b; i < b + 32; i++) amax = Math.max(amax, Math.abs(x[r * in + i]));
          for (int i = b; i < b + 32; i++) {
            sum += (double) x[r * in + i] * wd[o * in + i];
            bound += amax / 254 * Math.abs(wd[o * in + i]);
            mag += Math.abs((double) x[r * in + i] * wd[o * in + i]);
          }
        }
        bound = bound * 1.01 + mag * 1e-6;
        double err = Math.abs(y[r * out + o] - sum);
        check(err <= bound, "y[" + r + ", " + o + "] = " + y[r * out + o] + ", float64 " + sum + ", error " + err + " > " + bound);
      }
    }
  }

  public static void testMappedFileInPlace() throws Exception {
    // A weight memory-mapped read-only from a file, as from a GGUF file: used in place.
    int rows = 2, in = 128, out = 9;
    float[] x = randn(rows * in), wf = randn(out * in);
    QTensor w = QTensor.quantize(Dtype.Q4_0, out, in, wf);
    Path file = Files.createTempFile("kb-qtensor", ".bin");
    try {
      byte[] header = {1, 2, 3, 4, 5};
      Files.write(file, header);
      Files.write(file, w.toByteArray(), StandardOpenOption.APPEND);
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
        MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
        map.position(header.length);
        QTensor mapped = QTensor.of(Dtype.Q4_0, out, in, map);
        equal(header.length, map.position(), "the caller's position is kept");
        check(mapped.isDirect(), "isDirect");
        float[] want = new float[rows * out], y = new float[rows * out];
        QTensor.linear(x, w, null, Activation.SILU, want);
        QTensor.linear(x, mapped, null, Activation.SILU, y);
        sameBits(want, y, "mapped Q4_0");
        sameBits(w.dequantize(), mapped.dequantize(), "mapped dequantize");
        check(Arrays.equals(w.toByteArray(), mapped.toByteArray()), "mapped bytes");
        check(mapped.bytes().isReadOnly(), "bytes() is read-only");
      }
    } finally {
      Files.delete(file);
    }
  }

  // --- embedding ----------------------------------------------------------------------------------

  public static void testEmbeddingRowsEqualDequantize() {
    int vocab = 7, dim = 64;
    int[] ids = {3, 0, 6, 3, 1};
    float[] values = randn(vocab * dim);
    for (Dtype dt : Dtype.values()) {
      QTensor table = QTensor.quantize(dt, vocab, dim, values);
      float[] rows = table.dequantize();
      for (QTensor t : new QTensor[] {table, QTensor.of(dt, vocab, dim, directCopy(dt, table.toByteArray()))}) {
        float[] out = new float[ids.length * dim];
        QTensor.embedding(ids, t, out);
        for (int i = 0; i < ids.length; i++) {
          sameBits(Arrays.copyOfRange(rows, ids[i] * dim, ids[i] * dim + dim), Arrays.copyOfRange(out, i * dim, i * dim + dim),
              dt + (t.isDirect() ? " direct" : "") + " row " + i);
        }
        float[] raw = new float[out.length];
        KernelBridge.embeddingW(vocab, dim, ids, dt, table.toByteArray(), raw);
        sameBits(out, raw, dt + " embeddingW");
      }
      // No ids: nothing to write.
      QTensor.embedding(new int[0], table, new float[0]);
    }
  }

  // --- shared by threads ----------------------------------------------------------------------------

  public static void testSharedAcrossThreads() throws Exception {
    int rows = 2, in = 512, out = 33;
    float[] x = randn(rows * in);
    QTensor w = QTensor.of(Dtype.Q8_0, out, in, directCopy(Dtype.Q8_0, QTensor.quantize(Dtype.Q8_0, out, in, randn(out * in)).toByteArray()));
    float[] want = new float[rows * out];
    QTensor.linear(x, w, null, Activation.NONE, want);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try (Context shared = new Context(Backend.CPU, 2)) {
      Future<?>[] fs = new Future<?>[8];
      for (int t = 0; t < fs.length; t++) {
        final boolean own = t % 2 == 0;
        fs[t] = pool.submit(() -> {
          for (int i = 0; i < 25; i++) {
            float[] y = new float[rows * out];
            if (own) QTensor.linear(x, w, null, Activation.NONE, y);
            else QTensor.linear(shared, x, w, null, Activation.NONE, y);
            sameBits(want, y, "thread result");
          }
          return null;
        });
      }
      for (Future<?> f : fs) f.get();
    } finally {
      pool.shutdown();
    }
  }

  // --- bad inputs -----------------------------------------------------------------------------------

  public static void testFactoryErrors() {
    fails(expect(KernelBridgeException.class, () -> QTensor.of(Dtype.Q4_0, 3, 64, new byte[107])),
        Status.SHAPE_MISMATCH, "QTensor.of", "bytes must be 108", "Q4_0", "got 107");
    fails(expect(KernelBridgeException.class, () -> QTensor.of(Dtype.F16, 2, 3, ByteBuffer.allocateDirect(13))),
        Status.SHAPE_MISMATCH, "bytes must be 12", "got 13");
    fails(expect(KernelBridgeException.class, () -> QTensor.of(Dtype.Q8_0, 2, 33, new byte[68])),
        Status.INVALID_ARGUMENT, "QTensor.of", "cols", "33");
    fails(expect(KernelBridgeException.class, () -> QTensor.of(Dtype.F32, -1, 4, new byte[0])),
        Status.INVALID_ARGUMENT, "rows", "-1");
    fails(expect(KernelBridgeException.class, () -> QTensor.of(Dtype.Q8_0, 1, 32, (byte[]) null)),
        Status.INVALID_ARGUMENT, "bytes must not be null");
    fails(expect(KernelBridgeException.class, () -> QTensor.of(Dtype.Q8_0, 1, 32, ByteBuffer.allocate(34))),
        Status.INVALID_ARGUMENT, "bytes must be a direct buffer");
    expect(NullPointerException.class, () -> QTensor.of(null, 1, 32, new byte[34]));
    // quantize: the format's constraints, the input's length and values; nothing made.
    float[] x = randn(66);
    fails(expect(KernelBridgeException.class, () -> QTensor.quantize(Dtype.Q8_0, 2, 33, x)),
        Status.INVALID_ARGUMENT, "QTensor.quantize", "cols", "33");
    fails(expect(KernelBridgeException.class, () -> QTensor.quantize(Dtype.F32, 2, 32, x)),
        Status.SHAPE_MISMATCH, "x has 66 elements", "needs 64");
    float[] bad = randn(64);
    bad[37] = Float.NaN;
    fails(expect(KernelBridgeException.class, () -> QTensor.quantize(Dtype.Q4_0, 2, 32, bad)),
        Status.INVALID_ARGUMENT, "x[1, 5]");
    // F16 keeps NaN: no constraint on the values there.
    check(Float.isNaN(QTensor.quantize(Dtype.F16, 2, 32, bad).dequantize()[37]), "F16 NaN");
  }

  public static void testKernelErrorsWriteNothing() {
    float[] x = randn(2 * 64);
    byte[] w = QTensor.quantize(Dtype.Q4_0, 3, 64, randn(3 * 64)).toByteArray(); // 108 bytes
    float[] y = new float[2 * 3];
    Arrays.fill(y, 42f);
    float[] y0 = y.clone(), x0 = x.clone();
    // A weight one byte short: SHAPE_MISMATCH naming weight_bytes.
    byte[] shortW = Arrays.copyOf(w, 107);
    fails(expect(KernelBridgeException.class,
        () -> KernelBridge.linearW(2, 64, 3, x, Dtype.Q4_0, shortW, null, Activation.NONE, y)),
        Status.SHAPE_MISMATCH, "kb_linear_w", "weight_bytes must be 108", "got 107");
    fails(expect(KernelBridgeException.class,
        () -> KernelBridge.linearW(2, 64, 3, x, Dtype.Q4_0, directCopy(Dtype.Q4_0, shortW), null, Activation.NONE, y)),
        Status.SHAPE_MISMATCH, "weight_bytes must be 108", "got 107");
    // in_features not a multiple of 32 for a block format: INVALID_ARGUMENT naming it.
    float[] x33 = randn(2 * 33);
    fails(expect(KernelBridgeException.class,
        () -> KernelBridge.linearW(2, 33, 3, x33, Dtype.Q8_0, new byte[3 * 34], null, Activation.NONE, y)),
        Status.INVALID_ARGUMENT, "in_features", "33");
    // A heap ByteBuffer is not a direct buffer.
    fails(expect(KernelBridgeException.class,
        () -> KernelBridge.linearW(2, 64, 3, x, Dtype.Q4_0, ByteBuffer.wrap(w), null, Activation.NONE, y)),
        Status.INVALID_ARGUMENT, "weight must be a direct buffer");
    // QTensor.linear: x not a whole number of rows, y of another length, no weight.
    QTensor qw = QTensor.of(Dtype.Q4_0, 3, 64, w);
    fails(expect(KernelBridgeException.class, () -> QTensor.linear(Arrays.copyOf(x, 100), qw, null, Activation.NONE, y)),
        Status.SHAPE_MISMATCH, "QTensor.linear", "x has 100 elements", "w.cols() = 64");
    fails(expect(KernelBridgeException.class, () -> QTensor.linear(x, qw, null, Activation.NONE, new float[7])),
        Status.SHAPE_MISMATCH, "y has 7 elements", "needs 6");
    fails(expect(KernelBridgeException.class, () -> QTensor.linear(x, qw, new float[4], Activation.NONE, y)),
        Status.SHAPE_MISMATCH, "bias has 4 elements");
    fails(expect(KernelBridgeException.class, () -> QTensor.linear(x, null, null, Activation.NONE, y)),
        Status.INVALID_ARGUMENT, "w must not be null");
    expect(NullPointerException.class, () -> QTensor.linear(x, qw, null, null, y));
    expect(NullPointerException.class, () -> KernelBridge.linearW(2, 64, 3, x, null, w, null, Activation.NONE, y));
    // Float weights in a direct buffer that starts off their element size (a block format may
    // start at any byte; an F32 or F16 array may not): INVALID_ARGUMENT naming weight.
    byte[] w32 = QTensor.quantize(Dtype.F32, 3, 64, randn(3 * 64)).toByteArray();
    byte[] w16 = QTensor.quantize(Dtype.F16, 3, 64, randn(3 * 64)).toByteArray();
    fails(expect(KernelBridgeException.class, () -> QTensor.linear(x, QTensor.of(Dtype.F32, 3, 64, directCopyAt(w32, 2)),
        null, Activation.NONE, y)), Status.INVALID_ARGUMENT, "kb_linear_w", "weight must be aligned to 4 bytes");
    fails(expect(KernelBridgeException.class, () -> KernelBridge.linearW(2, 64, 3, x, Dtype.F16, directCopyAt(w16, 3),
        null, Activation.NONE, y)), Status.INVALID_ARGUMENT, "weight must be aligned to 2 bytes");
    sameBits(y0, y, "y after the failed calls");
    sameBits(x0, x, "x after the failed calls");

    // quantize / dequantize with the wrong byte count, and a bad value.
    byte[] q = new byte[2 * 34];
    Arrays.fill(q, (byte) 0x5a);
    byte[] q0 = q.clone();
    float[] x64 = randn(64);
    fails(expect(KernelBridgeException.class, () -> KernelBridge.quantize(Dtype.Q8_0, 1, 64, x64, Arrays.copyOf(q, 67))),
        Status.SHAPE_MISMATCH, "kb_quantize", "y_bytes must be 68", "got 67");
    float[] inf = x64.clone();
    inf[40] = Float.POSITIVE_INFINITY;
    fails(expect(KernelBridgeException.class, () -> KernelBridge.quantize(Dtype.Q8_0, 1, 64, inf, q)),
        Status.INVALID_ARGUMENT, "x[0, 40]");
    fails(expect(KernelBridgeException.class, () -> KernelBridge.quantize(Dtype.Q8_0, 2, 32, x64,
        ByteBuffer.allocateDirect(68).asReadOnlyBuffer())), Status.INVALID_ARGUMENT, "y must not be read-only");
    check(Arrays.equals(q0, q), "quantize wrote after failing");
    float[] out = new float[64];
    Arrays.fill(out, -3f);
    float[] out0 = out.clone();
    fails(expect(KernelBridgeException.class, () -> KernelBridge.dequantize(Dtype.Q8_0, 1, 64, new byte[69], out)),
        Status.SHAPE_MISMATCH, "kb_dequantize", "x_bytes must be 68", "got 69");
    fails(expect(KernelBridgeException.class, () -> KernelBridge.dequantize(Dtype.Q4_0, 2, 32, new byte[36], new float[63])),
        Status.SHAPE_MISMATCH, "y has 63 elements");
    sameBits(out0, out, "dequantize output after the failed calls");
  }

  public static void testEmbeddingErrorsWriteNothing() {
    int vocab = 7, dim = 32;
    QTensor table = QTensor.quantize(Dtype.Q8_0, vocab, dim, randn(vocab * dim));
    QTensor direct = QTensor.of(Dtype.Q8_0, vocab, dim, directCopy(Dtype.Q8_0, table.toByteArray()));
    float[] out = new float[3 * dim];
    Arrays.fill(out, 9f);
    float[] out0 = out.clone();
    for (QTensor t : new QTensor[] {table, direct}) {
      fails(expect(KernelBridgeException.class, () -> QTensor.embedding(new int[] {0, 7, 1}, t, out)),
          Status.INVALID_ARGUMENT, "kb_embedding_w", "ids[1] = 7", "[0, 7)");
      fails(expect(KernelBridgeException.class, () -> QTensor.embedding(new int[] {2, 1, -1}, t, out)),
          Status.INVALID_ARGUMENT, "ids[2] = -1");
      fails(expect(KernelBridgeException.class, () -> QTensor.embedding(new int[] {2, 1}, t, out)),
          Status.SHAPE_MISMATCH, "out has 96 elements", "needs 64");
    }
    fails(expect(KernelBridgeException.class,
        () -> KernelBridge.embeddingW(vocab, dim, new int[] {0, 1, 2}, Dtype.Q8_0, new byte[7 * 34 - 1], out)),
        Status.SHAPE_MISMATCH, "table_bytes must be 238", "got 237");
    fails(expect(KernelBridgeException.class,
        () -> KernelBridge.embeddingW(vocab, 48, new int[] {0, 1, 2}, Dtype.Q4_0, new byte[0], new float[3 * 48])),
        Status.INVALID_ARGUMENT, "dim", "48");
    fails(expect(KernelBridgeException.class, () -> QTensor.embedding(new int[] {0}, null, out)),
        Status.INVALID_ARGUMENT, "table must not be null");
    sameBits(out0, out, "out after the failed calls");
  }
}
