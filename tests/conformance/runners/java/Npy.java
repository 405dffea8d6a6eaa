package kbconformance;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A reader of the corpus's .npy files (NumPy format 1.0, also 2.0/3.0):
 * little-endian float32 ({@code <f4}), int32 ({@code <i4}), float64
 * ({@code <f8}), uint16 ({@code <u2}: bfloat16 / float16 bit patterns) or bytes ({@code |u1}: tensors in a
 * storage format), C order.  The header is parsed generally (the keys are
 * found, the shape tuple is read), as docs/conformance.md asks.
 */
final class Npy {
  enum Dtype {
    F32,
    I32,
    F64,
    U8,
    U16
  }

  final Dtype dtype;
  final long[] shape;
  final int count;
  /** Exactly one of these is set, by dtype. */
  final float[] f32;
  final int[] i32;
  final double[] f64;
  final byte[] u8;
  final short[] u16;

  private Npy(Dtype dtype, long[] shape, int count, float[] f32, int[] i32, double[] f64, byte[] u8) {
    this(dtype, shape, count, f32, i32, f64, u8, null);
  }

  private Npy(Dtype dtype, long[] shape, int count, float[] f32, int[] i32, double[] f64, byte[] u8, short[] u16) {
    this.dtype = dtype;
    this.shape = shape;
    this.count = count;
    this.f32 = f32;
    this.i32 = i32;
    this.f64 = f64;
    this.u8 = u8;
    this.u16 = u16;
  }

  static Npy read(Path path) throws IOException {
    byte[] all = Files.readAllBytes(path);
    String name = path.getFileName().toString();
    if (all.length < 10 || (all[0] & 0xff) != 0x93 || all[1] != 'N' || all[2] != 'U' || all[3] != 'M' || all[4] != 'P'
        || all[5] != 'Y') {
      throw new IOException(name + ": not a .npy file");
    }
    int major = all[6] & 0xff;
    ByteBuffer bb = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
    long headerLen;
    int start;
    if (major == 1) {
      headerLen = bb.getShort(8) & 0xffff;
      start = 10;
    } else if (major == 2 || major == 3) {
      if (all.length < 12) throw new IOException(name + ": truncated header");
      headerLen = bb.getInt(8) & 0xffffffffL;
      start = 12;
    } else {
      throw new IOException(name + ": unsupported .npy version " + major);
    }
    if (start + headerLen > all.length) throw new IOException(name + ": truncated header");
    String header = new String(all, start, (int) headerLen, StandardCharsets.ISO_8859_1);
    String descr = stringValue(header, "descr", name);
    String fortran = rawValue(header, "fortran_order", name);
    if (!fortran.startsWith("False")) throw new IOException(name + ": fortran_order arrays are not supported");
    long[] shape = shapeValue(header, name);
    long count = 1;
    for (long d : shape) {
      if (d < 0) throw new IOException(name + ": negative dimension");
      count = Math.multiplyExact(count, d);
    }
    Dtype dtype;
    int size;
    switch (descr) {
      case "<f4":
        dtype = Dtype.F32;
        size = 4;
        break;
      case "<i4":
        dtype = Dtype.I32;
        size = 4;
        break;
      case "<f8":
        dtype = Dtype.F64;
        size = 8;
        break;
      case "|u1":
        dtype = Dtype.U8;
        size = 1;
        break;
      case "<u2":
        dtype = Dtype.U16;
        size = 2;
        break;
      default:
        throw new IOException(name + ": unsupported dtype " + descr);
    }
    long dataStart = start + headerLen;
    if (count > Integer.MAX_VALUE || dataStart + count * size > all.length) {
      throw new IOException(name + ": data shorter than the shape says");
    }
    int n = (int) count;
    ByteBuffer data = ByteBuffer.wrap(all, (int) dataStart, n * size).slice().order(ByteOrder.LITTLE_ENDIAN);
    // Bulk copies keep every bit (NaN payloads, signed zeros).
    switch (dtype) {
      case F32: {
        float[] a = new float[n];
        data.asFloatBuffer().get(a);
        return new Npy(dtype, shape, n, a, null, null, null);
      }
      case I32: {
        int[] a = new int[n];
        data.asIntBuffer().get(a);
        return new Npy(dtype, shape, n, null, a, null, null);
      }
      case U8: {
        byte[] a = new byte[n];
        data.get(a);
        return new Npy(dtype, shape, n, null, null, null, a);
      }
      case U16: {
        short[] a = new short[n];
        data.asShortBuffer().get(a);
        return new Npy(dtype, shape, n, null, null, null, null, a);
      }
      default: {
        double[] a = new double[n];
        data.asDoubleBuffer().get(a);
        return new Npy(dtype, shape, n, null, null, a, null);
      }
    }
  }

  /** The text after 'key': in the header dict. */
  private static String rawValue(String header, String key, String name) throws IOException {
    int k = header.indexOf("'" + key + "'");
    if (k < 0) k = header.indexOf("\"" + key + "\"");
    if (k < 0) throw new IOException(name + ": header lacks " + key);
    int colon = header.indexOf(':', k + key.length() + 2);
    if (colon < 0) throw new IOException(name + ": bad header near " + key);
    int i = colon + 1;
    while (i < header.length() && header.charAt(i) == ' ') i++;
    return header.substring(i);
  }

  private static String stringValue(String header, String key, String name) throws IOException {
    String v = rawValue(header, key, name);
    if (v.isEmpty() || (v.charAt(0) != '\'' && v.charAt(0) != '"')) throw new IOException(name + ": bad " + key);
    int end = v.indexOf(v.charAt(0), 1);
    if (end < 0) throw new IOException(name + ": bad " + key);
    return v.substring(1, end);
  }

  private static long[] shapeValue(String header, String name) throws IOException {
    String v = rawValue(header, "shape", name);
    if (v.isEmpty() || v.charAt(0) != '(') throw new IOException(name + ": bad shape");
    int end = v.indexOf(')');
    if (end < 0) throw new IOException(name + ": bad shape");
    String inner = v.substring(1, end).trim();
    if (inner.isEmpty()) return new long[0];
    String[] parts = inner.split(",");
    int n = 0;
    long[] out = new long[parts.length];
    for (String p : parts) {
      String t = p.trim();
      if (t.endsWith("L")) t = t.substring(0, t.length() - 1);
      if (t.isEmpty()) continue; // the trailing comma of (n,)
      try {
        out[n++] = Long.parseLong(t);
      } catch (NumberFormatException e) {
        throw new IOException(name + ": bad shape entry " + t);
      }
    }
    long[] shape = new long[n];
    System.arraycopy(out, 0, shape, 0, n);
    return shape;
  }
}
