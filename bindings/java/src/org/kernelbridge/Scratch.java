package org.kernelbridge;

/**
 * Hand-written runtime of the generated facade: the small-call path of the
 * array overloads of KernelBridge, which calls these methods (see "How arrays
 * reach C" in docs/java.md).
 *
 * <p>A call whose arrays hold few elements in total copies them into its
 * context's off-heap scratch and passes native addresses to the address variant
 * of the raw method ({@code kb_x__addr}): the native call then has only
 * primitive arguments and makes no JNI function call, which would cost more
 * than a small kernel's whole call overhead budget.  A generated wrapper does:
 *
 * <pre>{@code
 * if (Scratch.fits(ctx, Scratch.len(x) + Scratch.len(y), 4)) {
 *   final long pX = Scratch.in(ctx, x), pY = y == x ? pX : Scratch.out(ctx, y);
 *   KernelBridgeNative.kb_silu__addr(ctx, n, pX, pY);
 *   Scratch.back(ctx, y, pY);
 * } else {
 *   KernelBridgeNative.kb_silu(ctx, n, x, y);   // pinned or copied by the native wrapper
 * }
 * }</pre>
 *
 * <p>Arrays are laid out one after the other in the order they are staged; an
 * array passed twice (in-place use the header allows) is staged once, so the
 * library sees identical pointers, as on the other paths.  One call stages
 * arrays of one element size only (the generator calls {@link #fits} only for
 * such kernels; kernels with raw-byte tensors, whose weights are large anyway,
 * never use the scratch).  Only the thread that owns a context's scratch uses it (see
 * {@link #fits}), so the scratch and the cursor {@link Context#scratchNext}
 * need no locking, also when the context is shared by threads.
 *
 * <p>Everything here is static, small and monomorphic (one method per Java
 * array type), so the JIT inlines it into each wrapper and the path stays
 * allocation-free.
 */
final class Scratch {
  private Scratch() {}

  /** Elements of a tensor's array, 0 for null; a long, so that a call's total cannot overflow. */
  static long len(float[] a) {
    return a == null ? 0 : a.length;
  }

  static long len(int[] a) {
    return a == null ? 0 : a.length;
  }

  static long len(short[] a) {
    return a == null ? 0 : a.length;
  }

  /**
   * Whether a call whose arrays hold {@code total} elements of {@code elementSize}
   * bytes (4 or 2) goes through ctx's scratch; if so, starts staging it (the
   * scratch is allocated on first use and empty after this).
   */
  static boolean fits(Context ctx, long total, int elementSize) {
    if (total > (4 / elementSize) * (long) Context.SCRATCH_ELEMENTS) return false;
    final Thread me = Thread.currentThread();
    if (ctx.scratchOwner != me && !claim(ctx, me)) return false;
    ctx.scratchAddress(); // allocates it on first use; Context.scratchBase from here on
    ctx.scratchNext = 0;
    return true;
  }

  /**
   * Makes {@code me} the owner of ctx's scratch if it has none yet; whether
   * {@code me} owns it.  A context may be shared by threads, its scratch is
   * not: the first thread to stage a call owns it for good, the others take
   * the JNI array path (same results).  Out of line: the owner's calls never
   * come here.
   */
  private static boolean claim(Context ctx, Thread me) {
    synchronized (ctx) {
      if (ctx.scratchOwner == null) ctx.scratchOwner = me;
      return ctx.scratchOwner == me;
    }
  }

  /** Reserves room for {@code length} elements of {@code elementSize} bytes; their address. */
  private static long reserve(Context ctx, int length, int elementSize) {
    final int at = ctx.scratchNext;
    ctx.scratchNext = at + length;
    return ctx.scratchBase + (long) elementSize * at;
  }

  /** Index of the element at {@code address} in the scratch viewed as elements of {@code elementSize} bytes. */
  private static int index(Context ctx, long address, int elementSize) {
    return (int) ((address - ctx.scratchBase) / elementSize);
  }

  /** An output: reserves its elements; their address (0, C's NULL, for null). */
  static long out(Context ctx, float[] a) {
    return a == null ? 0L : reserve(ctx, a.length, 4);
  }

  static long out(Context ctx, int[] a) {
    return a == null ? 0L : reserve(ctx, a.length, 4);
  }

  static long out(Context ctx, short[] a) {
    return a == null ? 0L : reserve(ctx, a.length, 2);
  }

  /** An input (or input and output): copies it into the scratch; its address (0, C's NULL, for null). */
  static long in(Context ctx, float[] a) {
    if (a == null) return 0L;
    final int at = ctx.scratchNext;
    final long address = reserve(ctx, a.length, 4);
    ctx.scratchFloats.position(at).put(a);
    return address;
  }

  static long in(Context ctx, int[] a) {
    if (a == null) return 0L;
    final int at = ctx.scratchNext;
    final long address = reserve(ctx, a.length, 4);
    ctx.scratchInts.position(at).put(a);
    return address;
  }

  static long in(Context ctx, short[] a) {
    if (a == null) return 0L;
    final int at = ctx.scratchNext;
    final long address = reserve(ctx, a.length, 2);
    ctx.scratchShorts.position(at).put(a);
    return address;
  }

  /**
   * After a successful call: copies an output (or input and output) back from
   * its staged address into the array.  Not reached when the call throws, so a
   * failed call writes nothing.
   */
  static void back(Context ctx, float[] a, long address) {
    if (a != null) ctx.scratchFloats.position(index(ctx, address, 4)).get(a);
  }

  static void back(Context ctx, int[] a, long address) {
    if (a != null) ctx.scratchInts.position(index(ctx, address, 4)).get(a);
  }

  static void back(Context ctx, short[] a, long address) {
    if (a != null) ctx.scratchShorts.position(index(ctx, address, 2)).get(a);
  }
}
