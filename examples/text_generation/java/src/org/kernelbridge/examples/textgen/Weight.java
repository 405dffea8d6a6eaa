package org.kernelbridge.examples.textgen;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.kernelbridge.Dtype;

/**
 * A weight tensor as the kernels take it: its format, its bytes in a direct buffer (passed to the
 * kernels by address, never copied) and its [rows, cols] shape (3-D expert tensors: rows = experts *
 * per-expert rows), as c/model.h's tg_weight.
 */
final class Weight {
  final Dtype type;
  final ByteBuffer data;
  final int rows, cols;
  /** The values of a float32 tensor (the norms), a view of data; null for other types. */
  final FloatBuffer floats;

  Weight(Dtype type, byte[] bytes, int rows, int cols) {
    this.type = type;
    // GGUF is little-endian, as the machines the jar runs on (the kernels read native order).
    this.data = ByteBuffer.allocateDirect(Math.max(bytes.length, 1)).order(ByteOrder.nativeOrder());
    data.put(bytes).flip();
    this.rows = rows;
    this.cols = cols;
    this.floats = type == Dtype.F32 ? data.asFloatBuffer() : null;
  }
}
