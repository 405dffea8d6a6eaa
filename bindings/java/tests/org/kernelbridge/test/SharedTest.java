package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.kernelbridge.Backend;
import org.kernelbridge.Context;
import org.kernelbridge.DeviceBuffer;
import org.kernelbridge.KernelBridge;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Status;

/**
 * One Context and one DeviceBuffer shared by threads, and closed while they
 * use them (docs/java.md, "Threads"), run under -Xcheck:jni by unit_test.sh:
 * 8 threads x 3,000 mixed calls on one two-thread Context give the bits of
 * the call made alone (the scratch of small calls belongs to one thread, the
 * others take the JNI array path), each thread's failing call carries its own
 * message; close() while threads call gives right results or the closed
 * error, never a crash or hang; the same for a DeviceBuffer.
 */
public final class SharedTest {
  private SharedTest() {}

  static final int THREADS = 8;

  interface Work {
    void run(int thread) throws Exception;
  }

  /** Runs work on THREADS threads started together; the first failure, or null. */
  static String runThreads(Work work, Runnable whileRunning) throws InterruptedException {
    AtomicReference<String> failure = new AtomicReference<>();
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      final int id = t;
      Thread th = new Thread(() -> {
        try {
          start.await();
          work.run(id);
        } catch (Throwable e) {
          failure.compareAndSet(null, "thread " + id + ": " + e);
        }
      });
      threads.add(th);
      th.start();
    }
    start.countDown();
    if (whileRunning != null) whileRunning.run();
    for (Thread th : threads) th.join();
    return failure.get();
  }

  static int[][] reference() {
    int[][] want = new int[StressTest.KINDS][];
    try (Context one = new Context(Backend.CPU, 1)) {
      for (int kind = 0; kind < StressTest.KINDS; kind++) want[kind] = StressTest.call(one, kind);
    }
    return want;
  }

  public static void testEightThreadsShareOneContext() throws Exception {
    int[][] want = reference();
    try (Context shared = new Context(Backend.CPU, 2)) {
      String failure = runThreads(t -> {
        for (int j = 0; j < 3000; j++) {
          int kind = j % 16 == 15 ? StressTest.KINDS - 1 : StressTest.kindOf(t, j);
          int[] got = StressTest.call(shared, kind);
          if (!Arrays.equals(got, want[kind])) throw new AssertionError("call " + j + " (kind " + kind + ") differs");
          if (j % 100 == 0) {
            float eps = -(t + 1);
            try {
              KernelBridge.rmsnorm(shared, 2, new float[8], new float[4], eps, new float[8]);
              throw new AssertionError("no error for eps " + eps);
            } catch (KernelBridgeException e) {
              if (e.status() != Status.INVALID_ARGUMENT || !e.getMessage().contains("got " + (int) eps)) {
                throw new AssertionError("eps " + eps + ": " + e.getMessage());
              }
            }
          }
        }
      }, null);
      check(failure == null, "shared context: " + failure);
    }
  }

  static boolean isClosed(RuntimeException e) {
    if (e instanceof IllegalStateException) return e.getMessage().contains("closed");
    return e instanceof KernelBridgeException
        && ((KernelBridgeException) e).status() == Status.INVALID_ARGUMENT
        && e.getMessage().contains("destroyed context");
  }

  public static void testCloseContextWhileThreadsUseIt() throws Exception {
    int[][] want = reference();
    for (int round = 0; round < 3; round++) {
      Context ctx = new Context(Backend.CPU, 2);
      AtomicInteger done = new AtomicInteger(), refused = new AtomicInteger();
      final int r = round;
      String failure = runThreads(t -> {
        int after = 0;
        for (int j = 0; after < 5 && j < 1_000_000; j++) {
          int kind = StressTest.kindOf(t, j);
          int[] got;
          try {
            got = StressTest.call(ctx, kind);
          } catch (RuntimeException e) {
            if (!isClosed(e)) throw e;
            after++;
            refused.incrementAndGet();
            continue;
          }
          if (!Arrays.equals(got, want[kind])) throw new AssertionError("call " + j + " differs");
          done.incrementAndGet();
        }
      }, () -> {
        try {
          // Close once the threads have finished calls (one each, on
          // average), so that the close lands among calls however late the
          // threads start on a loaded machine.
          long deadline = System.nanoTime() + 60_000_000_000L;
          while (done.get() < THREADS && System.nanoTime() < deadline) Thread.sleep(1);
          Thread.sleep(5L * (r + 1));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        ctx.close();
      });
      check(failure == null, "close while in use: " + failure);
      check(refused.get() >= THREADS * 5 && done.get() > 0, "round " + round + ": " + done + " done, " + refused + " refused");
      ctx.close(); // again: nothing
    }
  }

  public static void testCloseDeviceBufferWhileThreadsUseIt() throws Exception {
    float[] x = StressTest.values(4096, 31);
    float[] want = new float[x.length];
    KernelBridge.silu(x, want);
    try (Context ctx = new Context(Backend.CPU, 2)) {
      for (int round = 0; round < 3; round++) {
        DeviceBuffer in = DeviceBuffer.of(ctx, x);
        final int r = round;
        String failure = runThreads(t -> {
          try (DeviceBuffer out = new DeviceBuffer(ctx, 4L * x.length)) {
            float[] got = new float[x.length];
            float[] back = new float[16];
            int after = 0;
            for (int j = 0; after < 5 && j < 1_000_000; j++) {
              try {
                KernelBridge.silu(ctx, in, out);
                if (j % 3 == 0) {
                  in.download(64L * t, back);
                  if (!Arrays.equals(back, Arrays.copyOfRange(x, 16 * t, 16 * t + 16))) throw new AssertionError("download");
                }
              } catch (RuntimeException e) {
                if (!isClosed(e)) throw e;
                after++;
                continue;
              }
              out.download(0, got);
              if (!Arrays.equals(got, want)) throw new AssertionError("silu result differs");
            }
          }
        }, () -> {
          try {
            Thread.sleep(5L * (r + 1));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          in.close();
        });
        check(failure == null, "buffer closed while in use: " + failure);
        check(in.isClosed(), "closed");
      }
    }
  }

  /** A 64 MB buffer (freed memory would be unmapped) closed during a long kernel call: close waits. */
  public static void testCloseDeviceBufferDuringLongCall() throws Exception {
    final int n = 1 << 24;
    float[] x = new float[n];
    for (int i = 0; i < n; i++) x[i] = (i % 1000) / 250f - 2f;
    try (Context ctx = new Context(Backend.CPU, 1); DeviceBuffer out = new DeviceBuffer(ctx, 4L * n)) {
      DeviceBuffer in = DeviceBuffer.of(ctx, x);
      AtomicReference<RuntimeException> error = new AtomicReference<>();
      CountDownLatch started = new CountDownLatch(1);
      Thread th = new Thread(() -> {
        started.countDown();
        try {
          KernelBridge.gelu(ctx, in, out);
        } catch (RuntimeException e) {
          error.set(e);
        }
      });
      th.start();
      started.await();
      Thread.sleep(5);
      in.close();
      th.join();
      check(error.get() == null || isClosed(error.get()), "gelu: " + error.get());
      if (error.get() == null) {
        float[] tail = new float[16], wantTail = new float[16];
        out.download(4L * (n - 16), tail);
        KernelBridge.gelu(Arrays.copyOfRange(x, n - 16, n), wantTail);
        check(Arrays.equals(tail, wantTail), "gelu result after the buffer was closed during the call");
      }
    }
  }
}
