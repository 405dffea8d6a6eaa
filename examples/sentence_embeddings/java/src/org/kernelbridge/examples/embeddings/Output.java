package org.kernelbridge.examples.embeddings;

import java.nio.FloatBuffer;
import java.util.List;
import java.util.Locale;

/**
 * Printing numbers the same way in every language: fixed decimals, rounded half to even from the
 * float32 value (README, "Output").
 */
final class Output {
  private Output() {}

  static String fixed(float value, int decimals) {
    double v = value;
    if (Double.isNaN(v)) {
      return "nan";
    }
    if (Double.isInfinite(v)) {
      return v > 0 ? "inf" : "-inf";
    }
    long scale = 1;
    for (int i = 0; i < decimals; i++) {
      scale *= 10;
    }
    long n = (long) Math.rint(v * scale); // Math.rint: ties to even
    String sign = n < 0 ? "-" : "";
    n = Math.abs(n);
    String frac = Long.toString(n % scale);
    return sign + (n / scale) + "." + "0".repeat(decimals - frac.length()) + frac;
  }

  static String similarityTable(List<String> texts, FloatBuffer sim) {
    int n = texts.size();
    StringBuilder b = new StringBuilder("cosine similarity\n     ");
    for (int j = 0; j < n; j++) {
      b.append(String.format(Locale.ROOT, "%8d", j));
    }
    for (int i = 0; i < n; i++) {
      b.append(String.format(Locale.ROOT, "\n%5d", i));
      for (int j = 0; j < n; j++) {
        b.append(String.format(Locale.ROOT, "%8s", fixed(sim.get(i * n + j), 4)));
      }
    }
    for (int i = 0; i < n; i++) {
      b.append(String.format(Locale.ROOT, "\n%5d  ", i)).append(texts.get(i));
    }
    return b.toString();
  }

  static String embeddingLines(FloatBuffer emb, int hidden) {
    StringBuilder b = new StringBuilder();
    for (int r = 0; r * hidden < emb.limit(); r++) {
      if (r > 0) {
        b.append('\n');
      }
      for (int j = 0; j < hidden; j++) {
        b.append(j > 0 ? " " : "").append(fixed(emb.get(r * hidden + j), 6));
      }
    }
    return b.toString();
  }

  static String tokenLines(List<int[]> ids) {
    StringBuilder b = new StringBuilder();
    for (int r = 0; r < ids.size(); r++) {
      if (r > 0) {
        b.append('\n');
      }
      int[] row = ids.get(r);
      for (int j = 0; j < row.length; j++) {
        b.append(j > 0 ? " " : "").append(row[j]);
      }
    }
    return b.toString();
  }
}
