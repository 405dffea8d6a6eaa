package org.kernelbridge.examples.embeddings;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.util.List;

/**
 * Where the tokens of a batch live: n packed rows (sentence after sentence, real tokens only) and
 * b * s padded rows (sentence r's token j at row r * s + j; s is the longest sentence). The arrays
 * are direct buffers for kernelbridge.
 */
final class Layout {
  final int b, s, n;
  /** Tokens per sentence. */
  final IntBuffer lengths;
  /** First packed row of each sentence. */
  private final int[] offsets;
  /** Packed token ids and positions. */
  final IntBuffer ids, positions;
  /** Padded row to packed row, packed row to padded row. */
  final IntBuffer toPadded, toPacked;

  Layout(List<int[]> batch) {
    b = batch.size();
    offsets = new int[b];
    lengths = Encoder.ints(b);
    int rows = 0, longest = 0;
    for (int r = 0; r < b; r++) {
      int len = batch.get(r).length;
      lengths.put(r, len);
      offsets[r] = rows;
      rows += len;
      longest = Math.max(longest, len);
    }
    n = rows;
    s = longest;
    ids = Encoder.ints(n);
    positions = Encoder.ints(n);
    toPacked = Encoder.ints(n);
    toPadded = Encoder.ints(b * s);
    for (int r = 0; r < b; r++) {
      int[] seq = batch.get(r);
      for (int j = 0; j < s; j++) {
        if (j < seq.length) {
          ids.put(offsets[r] + j, seq[j]);
          positions.put(offsets[r] + j, j);
          toPacked.put(offsets[r] + j, r * s + j);
          toPadded.put(r * s + j, offsets[r] + j);
        } else {
          // A padding row copies its sentence's first token: any real row will do,
          // attention ignores it and nothing reads its result.
          toPadded.put(r * s + j, offsets[r]);
        }
      }
    }
  }

  /** [b, n]: row r holds float32(1 / lengths[r]) over its own tokens, 0 elsewhere. */
  FloatBuffer pooling() {
    FloatBuffer p = Encoder.floats(b * n); // zero-filled
    for (int r = 0; r < b; r++) {
      int len = lengths.get(r);
      float inv = (float) (1.0 / len);
      for (int j = 0; j < len; j++) {
        p.put(r * n + offsets[r] + j, inv);
      }
    }
    return p;
  }
}
