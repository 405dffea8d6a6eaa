package org.kernelbridge.test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.Comparator;

/** A minimal test runner: every public static void test*() of the given classes. */
public final class Harness {
  private Harness() {}

  public interface Body {
    void run() throws Exception;
  }

  public static void check(boolean ok, String message) {
    if (!ok) throw new AssertionError(message);
  }

  public static void equal(Object expected, Object actual, String what) {
    if (expected == null ? actual != null : !expected.equals(actual)) {
      throw new AssertionError(what + ": expected " + expected + ", got " + actual);
    }
  }

  /** Runs body and returns what it threw; fails when it throws nothing or another type. */
  public static <T extends Throwable> T expect(Class<T> type, Body body) {
    try {
      body.run();
    } catch (Throwable t) {
      if (type.isInstance(t)) return type.cast(t);
      throw new AssertionError("expected " + type.getSimpleName() + ", got " + t, t);
    }
    throw new AssertionError("expected " + type.getSimpleName() + ", nothing was thrown");
  }

  /** |got - want| <= atol + rtol * |want| for every element (NaN matches NaN). */
  public static void close(double[] want, float[] got, double rtol, double atol, String what) {
    check(want.length == got.length, what + ": length " + got.length + " != " + want.length);
    for (int i = 0; i < want.length; i++) {
      double w = want[i];
      double g = got[i];
      if (Double.isNaN(w) && Double.isNaN(g)) continue;
      if (w == g) continue;
      if (!(Math.abs(g - w) <= atol + rtol * Math.abs(w))) {
        throw new AssertionError(what + "[" + i + "]: got " + g + ", want " + w);
      }
    }
  }

  public static void main(String[] args) throws Exception {
    int run = 0;
    int failed = 0;
    for (String name : args) {
      Class<?> cls = Class.forName(name);
      Method[] methods = cls.getDeclaredMethods();
      Arrays.sort(methods, Comparator.comparing(Method::getName));
      for (Method m : methods) {
        if (!m.getName().startsWith("test") || !Modifier.isStatic(m.getModifiers()) || m.getParameterCount() != 0) continue;
        run++;
        long t0 = System.nanoTime();
        try {
          m.invoke(null);
          System.out.printf("PASS %s.%s (%.1f ms)%n", cls.getSimpleName(), m.getName(), (System.nanoTime() - t0) / 1e6);
        } catch (InvocationTargetException e) {
          failed++;
          System.out.printf("FAIL %s.%s%n", cls.getSimpleName(), m.getName());
          e.getCause().printStackTrace(System.out);
        }
      }
    }
    System.out.printf("%d tests, %d failed%n", run, failed);
    System.exit(failed == 0 && run > 0 ? 0 : 1);
  }
}
