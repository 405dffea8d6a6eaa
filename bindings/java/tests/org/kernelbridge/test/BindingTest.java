package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;
import static org.kernelbridge.test.Harness.equal;
import static org.kernelbridge.test.Harness.expect;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.ArrayList;
import java.util.List;
import org.kernelbridge.Backend;
import org.kernelbridge.Context;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Status;

/** Errors, length checks, empty arrays, direct buffers, aliasing and contexts. */
public final class BindingTest {
  private BindingTest() {}

  static FloatBuffer direct(int n) {
    return ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder()).asFloatBuffer();
  }

  static IntBuffer directInts(int n) {
    return ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder()).asIntBuffer();
  }

  public static void testVersion() {
    equal(KernelBridge.VERSION, KernelBridge.versionString(), "version string");
    equal(KernelBridge.VERSION_NUMBER, KernelBridge.versionNumber(), "version number");
  }

  /** Runs IsaProbe in a child JVM with KB_CPU_ISA=level; its output lines. */
  private static String[] probe(String level) throws Exception {
    String javaBin = System.getProperty("java.home") + "/bin/java";
    ProcessBuilder pb = new ProcessBuilder(javaBin, "-cp", System.getProperty("java.class.path"),
        "org.kernelbridge.test.IsaProbe");
    pb.environment().put("KB_CPU_ISA", level);
    pb.redirectErrorStream(true);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    equal(0, p.waitFor(), "IsaProbe exit status, output: " + out);
    return out.trim().split("\n", 2);
  }

  /** cpuIsa() names the level; KB_CPU_ISA forces a lower one (in a child
   * JVM: the level is fixed per process) with the same result bits; a value
   * that is no level makes the context constructor throw naming it. */
  public static void testCpuIsa() throws Exception {
    String isa = KernelBridge.cpuIsa();
    check(isa.equals("scalar") || isa.equals("avx2") || isa.equals("avx512"), "cpuIsa: " + isa);
    String[] scalar = probe("scalar");
    equal("scalar", scalar[0], "forced level");
    check(scalar[1].matches("-?[0-9]+"), "gemm bits: " + scalar[1]);
    for (String level : new String[] {"avx2", "avx512"}) {
      String[] got = probe(level);
      if (got[1].startsWith("UNSUPPORTED")) continue; /* this CPU lacks the level */
      equal(level, got[0], "forced level");
      equal(scalar[1], got[1], "gemm bits on " + level);
    }
    String[] bad = probe("sse9");
    check(bad[1].startsWith("INVALID_ARGUMENT") && bad[1].contains("KB_CPU_ISA=\"sse9\" is not an instruction-set level"),
        "bad KB_CPU_ISA: " + bad[1]);
  }

  public static void testStatusEnum() {
    for (Status s : Status.values()) {
      equal(s, Status.fromCode(s.code()), "fromCode");
      equal(s.name(), KernelBridge.statusString(s), "statusString");
      check(!s.description().isEmpty(), "description");
    }
    equal(null, Status.fromCode(9999), "unknown code");
    equal(0, Status.OK.code(), "OK is 0");
  }

  public static void testShapeMismatchNamesArgument() {
    KernelBridgeException e = expect(KernelBridgeException.class, () -> KernelBridge.silu(new float[4], new float[3]));
    equal(Status.SHAPE_MISMATCH, e.status(), "status");
    check(e.getMessage().contains("y"), "message names y: " + e.getMessage());
    e = expect(KernelBridgeException.class, () -> KernelBridge.softmax(2, 3, new float[5], new float[6]));
    equal(Status.SHAPE_MISMATCH, e.status(), "status");
    check(e.getMessage().startsWith("kb_softmax: x "), e.getMessage());
    e = expect(KernelBridgeException.class, () -> KernelBridge.rmsnorm(2, new float[6], new float[3], 1e-5f, new float[7]));
    check(e.getMessage().startsWith("kb_rmsnorm: y "), e.getMessage());
    // strided: too short
    e = expect(KernelBridgeException.class,
        () -> KernelBridge.gemm(false, false, 2, 2, 2, 1f, new float[4], 3, new float[4], 2, 0f, new float[4], 2));
    equal(Status.SHAPE_MISMATCH, e.status(), "gemm a too short");
    check(e.getMessage().startsWith("kb_gemm: a "), e.getMessage());
  }

  public static void testNegativeDimsAndStride() {
    KernelBridgeException e = expect(KernelBridgeException.class, () -> KernelBridge.softmax(-1, 3, new float[0], new float[0]));
    equal(Status.INVALID_ARGUMENT, e.status(), "negative rows");
    equal("kb_softmax: rows must be >= 0, got -1", e.getMessage(), "message");
    e = expect(KernelBridgeException.class,
        () -> KernelBridge.gemm(false, false, 2, 2, 2, 1f, new float[4], 1, new float[4], 2, 0f, new float[4], 2));
    equal(Status.SHAPE_MISMATCH, e.status(), "lda < k (SHAPE_MISMATCH, as in C)");
    check(e.getMessage().contains("lda"), e.getMessage());
    e = expect(KernelBridgeException.class,
        () -> KernelBridge.gemm(false, false, 0, 3, 0, 1f, new float[0], 0, new float[0], 3, 0f, new float[0], 3));
    equal(Status.SHAPE_MISMATCH, e.status(), "lda 0 < 1");
    e = expect(KernelBridgeException.class,
        () -> KernelBridge.gemm(false, false, 2, 2, 2, 1f, new float[4], -2, new float[4], 2, 0f, new float[4], 2));
    equal(Status.INVALID_ARGUMENT, e.status(), "negative lda");
  }

  public static void testErrorFromCCarriesContextMessage() {
    try (Context ctx = new Context(Backend.CPU, 1)) {
      float[] y = {7f, 7f};
      KernelBridgeException e = expect(KernelBridgeException.class,
          () -> KernelBridge.rmsnorm(ctx, 1, new float[] {1f, 2f}, new float[] {1f, 1f}, -1f, y));
      equal(Status.INVALID_ARGUMENT, e.status(), "negative eps");
      check(e.getMessage().startsWith("kb_rmsnorm:"), e.getMessage());
      equal(e.getMessage(), ctx.lastError(), "context message");
      check(y[0] == 7f && y[1] == 7f, "nothing written on failure");
      // out-of-range id, large arrays (copy path): nothing written either
      float[] out = new float[5000 * 2];
      Arrays.fill(out, 3f);
      int[] ids = new int[5000];
      ids[4999] = 9;
      e = expect(KernelBridgeException.class, () -> KernelBridge.embedding(ctx, 4, 2, ids, new float[8], out));
      equal(Status.INVALID_ARGUMENT, e.status(), "bad id");
      for (float v : out) check(v == 3f, "embedding wrote on failure");
      // a successful call clears the message
      KernelBridge.silu(ctx, new float[1], new float[1]);
      equal("", ctx.lastError(), "cleared");
    }
  }

  public static void testAutoAndNegativeThreads() {
    try (Context auto = new Context(Backend.AUTO, 1)) {
      check(auto.backend() == Backend.CPU || auto.backend() == Backend.CUDA, "AUTO is CPU or CUDA");
    }
    KernelBridgeException e = expect(KernelBridgeException.class, () -> new Context(Backend.CPU, -1));
    equal(Status.INVALID_ARGUMENT, e.status(), "negative threads");
  }

  static void expectNull(String fn, String arg, Harness.Body call) {
    KernelBridgeException e = expect(KernelBridgeException.class, call);
    equal(Status.INVALID_ARGUMENT, e.status(), fn + " null " + arg);
    check(e.getMessage().startsWith(fn + ": " + arg + " must not be null"), e.getMessage());
  }

  /** A null array or buffer for a non-nullable, non-empty tensor: INVALID_ARGUMENT, as NULL in C. */
  public static void testNullArrays() {
    expectNull("kb_silu", "x", () -> KernelBridge.silu((float[]) null, new float[1]));
    expectNull("kb_silu", "y", () -> KernelBridge.silu(new float[1], (float[]) null));
    expectNull("kb_add", "b", () -> KernelBridge.add(new float[4], null, new float[4]));
    expectNull("kb_softmax", "x", () -> KernelBridge.softmax(2, 3, null, new float[6]));
    expectNull("kb_gemm", "c", () -> KernelBridge.gemm(false, false, 2, 3, 4, 1f, new float[8], 4, new float[12], 3, 0f, null, 3));
    expectNull("kb_embedding", "table", () -> KernelBridge.embedding(5, 2, new int[3], null, new float[6]));
    expectNull("kb_cross_entropy", "mean_loss",
        () -> KernelBridge.crossEntropy(3, new float[6], new int[2], -100, new float[2], null));
    expectNull("kb_sample", "logits", () -> KernelBridge.sample(3, (float[]) null, 1f, 1L, new int[2]));
    // rows is read from out alone: a null out means rows = 0, so x is the mismatch
    KernelBridgeException e = expect(KernelBridgeException.class, () -> KernelBridge.argmax(3, new float[6], null));
    equal(Status.SHAPE_MISMATCH, e.status(), "argmax null out");
    // the copy path (more than Context.SCRATCH_ELEMENTS elements) and direct buffers
    expectNull("kb_add", "a", () -> KernelBridge.add(null, new float[3000], new float[3000]));
    expectNull("kb_silu", "x", () -> KernelBridge.silu((FloatBuffer) null, direct(2)));
    expectNull("kb_softmax", "y", () -> KernelBridge.softmax(1, 2, direct(2), (FloatBuffer) null));
    // nothing is written on failure
    float[] losses = {5f, 5f};
    expectNull("kb_cross_entropy", "mean_loss",
        () -> KernelBridge.crossEntropy(3, new float[6], new int[2], -100, losses, null));
    check(losses[0] == 5f && losses[1] == 5f, "cross_entropy wrote on failure");
    // the context is not a tensor: still a NullPointerException
    expect(NullPointerException.class, () -> KernelBridge.silu((Context) null, new float[1], new float[1]));
  }

  /** An empty tensor may be null, as NULL in C (nullable or not). */
  public static void testNullEmptyArrays() {
    KernelBridge.silu((float[]) null, (float[]) null);
    KernelBridge.silu((float[]) null, new float[0]);
    KernelBridge.silu(new float[0], (float[]) null);
    KernelBridge.silu((FloatBuffer) null, (FloatBuffer) null);
    KernelBridge.softmax(0, 3, (float[]) null, (float[]) null);
    KernelBridge.argmax(3, null, new int[0]);
    // k == 0: a and b are empty; c = beta * c
    float[] c = {1f, 2f, 3f, 4f, 5f, 6f};
    KernelBridge.gemm(false, false, 2, 3, 0, 1f, null, 1, null, 3, 2f, c, 3);
    equal("[2.0, 4.0, 6.0, 8.0, 10.0, 12.0]", Arrays.toString(c), "gemm k = 0");
    // the same through the copy path (c has more than Context.SCRATCH_ELEMENTS elements)
    float[] big = new float[40 * 40];
    Arrays.fill(big, 1.5f);
    KernelBridge.gemm(false, false, 40, 40, 0, 1f, null, 1, null, 40, 2f, big, 40);
    for (float v : big) check(v == 3f, "gemm k = 0, copy path");
    // a derived size comes from the first tensor that is not null
    float[] y = new float[2];
    expectNull("kb_silu", "x", () -> KernelBridge.silu((float[]) null, y));
    float[] m = new float[3];
    KernelBridgeException e = expect(KernelBridgeException.class,
        () -> KernelBridge.adamwStep(new float[3], null, m, new float[2], 1e-3f, 0.9f, 0.999f, 1e-8f, 0f, 1));
    equal(Status.INVALID_ARGUMENT, e.status(), "adamw null grads");
  }

  public static void testEmptyArrays() {
    KernelBridge.silu(new float[0], new float[0]);
    KernelBridge.softmax(0, 5, new float[0], new float[0]);
    KernelBridge.softmax(0, 0, new float[0], new float[0]);
    KernelBridge.gemm(false, false, 0, 3, 4, 1f, new float[0], 4, new float[12], 3, 0f, new float[0], 3);
    KernelBridge.argmax(3, new float[0], new int[0]);
    KernelBridge.silu(direct(0), direct(0));
  }

  public static void testDirectBuffers() {
    int n = 40;
    FloatBuffer x = direct(n + 3), y = direct(n + 5);
    for (int i = 0; i < n + 3; i++) x.put(i, i * 0.25f - 3);
    x.position(3);
    y.position(2).limit(2 + n);
    KernelBridge.silu(x, y);
    equal(3, x.position(), "x position unchanged");
    equal(2, y.position(), "y position unchanged");
    for (int i = 0; i < n; i++) {
      check(Ref.siluWithinBound(y.get(2 + i), x.get(3 + i)),
          "silu direct " + i + ": " + y.get(2 + i) + " vs " + Ref.silu(x.get(3 + i)));
    }
    check(y.get(0) == 0f && y.get(1) == 0f, "before position untouched");
    // int buffers
    FloatBuffer logits = direct(6);
    logits.put(new float[] {1, 5, 2, 9, 0, 3}).flip();
    IntBuffer out = directInts(2);
    KernelBridge.argmax(3, logits, out);
    equal(1, out.get(0), "argmax row 0");
    equal(0, out.get(1), "argmax row 1");
    // big buffers: same results as arrays
    float[] big = KernelsTest.randn(100_000, 2);
    FloatBuffer bx = direct(big.length);
    bx.put(big).flip();
    FloatBuffer by = direct(big.length);
    float[] ay = new float[big.length];
    KernelBridge.gelu(big, ay);
    KernelBridge.gelu(bx, by);
    float[] got = new float[big.length];
    by.get(got);
    check(Arrays.equals(ay, got), "direct and array results differ");
    // in place on the same buffer
    KernelBridge.gelu(bx, bx);
    bx.get(got);
    check(Arrays.equals(ay, got), "direct in place");
  }

  public static void testDirectBufferRejections() {
    KernelBridgeException e = expect(KernelBridgeException.class, () -> KernelBridge.silu(FloatBuffer.allocate(4), direct(4)));
    equal(Status.INVALID_ARGUMENT, e.status(), "heap buffer");
    check(e.getMessage().contains("direct"), e.getMessage());
    FloatBuffer wrongOrder = ByteBuffer.allocateDirect(16)
        .order(ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? ByteOrder.LITTLE_ENDIAN : ByteOrder.BIG_ENDIAN)
        .asFloatBuffer();
    e = expect(KernelBridgeException.class, () -> KernelBridge.silu(wrongOrder, direct(4)));
    check(e.getMessage().contains("byte order"), e.getMessage());
    e = expect(KernelBridgeException.class, () -> KernelBridge.silu(direct(4), direct(4).asReadOnlyBuffer()));
    check(e.getMessage().contains("read-only"), e.getMessage());
    e = expect(KernelBridgeException.class, () -> KernelBridge.silu(direct(4), direct(5)));
    equal(Status.SHAPE_MISMATCH, e.status(), "buffer length");
    // read-only input is fine
    KernelBridge.silu(direct(4).asReadOnlyBuffer(), direct(4));
  }

  /**
   * The three array strategies agree, in place too: add has 3n elements per call, so
   * n <= 341 uses the context's scratch, n <= 1365 pins the arrays, larger n copies them.
   */
  public static void testScratchPinnedAndCopiedPathsAgree() {
    for (int n : new int[] {10, 341, 342, 1365, 1366, 5000, 300_000}) {
      float[] a = KernelsTest.randn(n, 1), b = KernelsTest.randn(n, 1), y = new float[n];
      KernelBridge.add(a, b, y);
      for (int i = 0; i < n; i++) check(y[i] == a[i] + b[i], "add n=" + n);
      float[] c = a.clone();
      KernelBridge.add(c, b, c); // y aliases a (declared)
      check(Arrays.equals(c, y), "in place add n=" + n);
      float[] d = a.clone();
      KernelBridge.add(d, d, d); // y aliases a and b
      for (int i = 0; i < n; i++) check(d[i] == a[i] + a[i], "a+a n=" + n);
    }
  }

  public static void testUndeclaredAliasRejected() {
    for (int n : new int[] {2, 64}) {
      float[] a = new float[n * n];
      KernelBridgeException e = expect(KernelBridgeException.class,
          () -> KernelBridge.gemm(false, false, n, n, n, 1f, a, n, new float[n * n], n, 0f, a, n));
      equal(Status.INVALID_ARGUMENT, e.status(), "c == a");
      check(e.getMessage().contains("c") && e.getMessage().contains("a"), e.getMessage());
    }
  }

  public static void testContextLifetime() {
    Context ctx = new Context(Backend.CPU, 2);
    equal(2L, ctx.numThreads(), "threads");
    equal(Backend.CPU, ctx.backend(), "backend");
    check(!ctx.isClosed(), "open");
    ctx.close();
    check(ctx.isClosed(), "closed");
    ctx.close(); // idempotent
    expect(IllegalStateException.class, () -> KernelBridge.silu(ctx, new float[1], new float[1]));
    expect(IllegalStateException.class, ctx::numThreads);
    try (Context all = new Context(Backend.CPU, 0)) {
      check(all.numThreads() >= 1, "0 means one per CPU");
    }
  }

  public static void testThreadDefaultContext() throws Exception {
    Context mine = Context.forCurrentThread();
    check(mine == Context.forCurrentThread(), "same object on one thread");
    equal(1L, mine.numThreads(), "default is one thread");
    mine.close(); // no-op on the default
    check(!mine.isClosed(), "default cannot be closed");
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Context>> fs = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        final int seed = t;
        fs.add(pool.submit(() -> {
          float[] x = KernelsTest.randn(3000 + seed, 1), y = new float[x.length];
          for (int rep = 0; rep < 50; rep++) KernelBridge.silu(x, y);
          for (int i = 0; i < x.length; i++) check(Ref.siluWithinBound(y[i], x[i]), "silu on worker");
          return Context.forCurrentThread();
        }));
      }
      for (Future<Context> f : fs) check(f.get() != mine, "worker has its own context");
    } finally {
      pool.shutdown();
    }
  }

  /** Unclosed contexts are freed by the Cleaner; creating many must not exhaust anything. */
  public static void testCleanerSafetyNet() throws Exception {
    for (int i = 0; i < 20_000; i++) {
      Context c = new Context(Backend.CPU, 1);
      KernelBridge.silu(c, new float[1], new float[1]);
    }
    System.gc();
    Thread.sleep(50);
  }
}
