package org.kernelbridge.examples.embeddings;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Map;

/**
 * A minimal safetensors reader: 8 bytes little-endian header length N, N bytes of JSON ({"name":
 * {"dtype", "shape", "data_offsets"}, ...}), then the data. The file is memory-mapped and tensors
 * are direct FloatBuffer views of it (zero copy; kernelbridge reads them in place).
 */
final class SafeTensors {
  private static final long MAX_HEADER_BYTES = 100L << 20;

  private final Path path;
  private final Map<String, Object> header;
  private final MappedByteBuffer map;
  private final long start;
  private final long size;

  @SuppressWarnings("unchecked")
  SafeTensors(Path path) throws ModelException {
    this.path = path;
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
      size = ch.size();
      if (size < 8) {
        throw new ModelException(path + ": truncated: " + size + " bytes, a safetensors file starts with an 8-byte header length");
      }
      if (size > Integer.MAX_VALUE) {
        throw new ModelException(path + ": larger than 2 GiB, which this example does not map");
      }
      map = ch.map(FileChannel.MapMode.READ_ONLY, 0, size);
    } catch (NoSuchFileException e) {
      throw new ModelException(path + ": missing");
    } catch (IOException e) {
      throw new ModelException(path + ": cannot read: " + e.getMessage());
    }
    map.order(ByteOrder.LITTLE_ENDIAN);
    long n = map.getLong(0);
    if (n < 0 || n > MAX_HEADER_BYTES || n + 8 > size) {
      throw new ModelException(path + ": truncated or corrupt: header length " + Long.toUnsignedString(n) + " but the file has " + size + " bytes");
    }
    byte[] raw = new byte[(int) n];
    map.get(8, raw);
    String text = ModelFiles.utf8(raw);
    Object h;
    try {
      h = text == null ? null : Json.parse(text);
    } catch (Json.ParseException e) {
      throw new ModelException(path + ": the header is not valid JSON: " + e.getMessage());
    }
    if (!(h instanceof Map)) {
      throw new ModelException(path + ": the header is not a JSON object");
    }
    header = (Map<String, Object>) h;
    start = 8 + n;
  }

  /** The tensor name, which must be F32 with the given shape, as a read-only direct buffer. */
  FloatBuffer float32(String name, long... shape) throws ModelException {
    Object e = header.get(name);
    if (!(e instanceof Map) || name.equals("__metadata__")) {
      throw new ModelException(path + ": tensor " + name + (e == null ? " is missing" : ": header entry is not an object"));
    }
    Map<?, ?> entry = (Map<?, ?>) e;
    String where = path + ": tensor " + name;
    Object dtype = entry.get("dtype");
    if (!"F32".equals(dtype)) {
      throw new ModelException(where + ": dtype is " + (dtype instanceof String ? dtype : Json.brief(dtype)) + ", expected F32");
    }
    long[] dims = ModelFiles.asLongs(entry.get("shape"));
    if (dims == null || Arrays.stream(dims).anyMatch(d -> d < 0)) {
      throw new ModelException(where + ": shape is not a list of sizes");
    }
    if (!Arrays.equals(dims, shape)) {
      throw new ModelException(where + ": shape is " + ModelFiles.shape(dims) + ", expected " + ModelFiles.shape(shape));
    }
    long[] off = ModelFiles.asLongs(entry.get("data_offsets"));
    if (off == null || off.length != 2 || off[0] < 0 || off[0] > off[1]) {
      throw new ModelException(where + ": data_offsets are not [begin, end]");
    }
    long count = 1;
    for (long d : shape) {
      count *= d;
    }
    if (off[1] - off[0] != 4 * count) {
      throw new ModelException(where + ": data_offsets [" + off[0] + ", " + off[1] + "] hold " + (off[1] - off[0])
          + " bytes, shape " + ModelFiles.shape(shape) + " needs " + 4 * count);
    }
    if (start + off[1] > size) {
      throw new ModelException(where + ": data ends at byte " + (start + off[1]) + " but the file has " + size + " bytes (truncated?)");
    }
    if (off[0] % 4 != 0) {
      throw new ModelException(where + ": data_offsets begin " + off[0] + " is not a multiple of 4");
    }
    ByteBuffer bytes = map.slice((int) (start + off[0]), (int) (off[1] - off[0])).order(ByteOrder.LITTLE_ENDIAN);
    if (ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN && (start + off[0]) % 4 == 0) {
      return bytes.asFloatBuffer().asReadOnlyBuffer();
    }
    // kernelbridge needs aligned, native-order buffers: copy once.
    FloatBuffer copy = ByteBuffer.allocateDirect(bytes.capacity()).order(ByteOrder.nativeOrder()).asFloatBuffer();
    copy.put(bytes.asFloatBuffer()).flip();
    return copy;
  }

}
