package org.kernelbridge.examples.embeddings;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** Reading the model folder's files; errors name the file. */
final class ModelFiles {
  private ModelFiles() {}

  static byte[] read(Path path) throws ModelException {
    try {
      return Files.readAllBytes(path);
    } catch (NoSuchFileException e) {
      throw new ModelException(path + ": missing");
    } catch (IOException e) {
      throw new ModelException(path + ": cannot read: " + e.getMessage());
    }
  }

  /** Strict UTF-8 decoding; null when the bytes are not UTF-8. */
  static String utf8(byte[] bytes) {
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }

  /** The JSON object in path; null when the file is absent and not required. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> readJsonObject(Path path, boolean required) throws ModelException {
    if (!required && !Files.exists(path)) {
      return null;
    }
    String text = utf8(read(path));
    if (text == null) {
      throw new ModelException(path + ": not UTF-8");
    }
    Object v;
    try {
      v = Json.parse(text);
    } catch (Json.ParseException e) {
      throw new ModelException(path + ": not valid JSON: " + e.getMessage());
    }
    if (!(v instanceof Map)) {
      throw new ModelException(path + ": not a JSON object");
    }
    return (Map<String, Object>) v;
  }

  static String shape(long[] dims) {
    StringBuilder b = new StringBuilder("[");
    for (int k = 0; k < dims.length; k++) {
      b.append(k > 0 ? ", " : "").append(dims[k]);
    }
    return b.append(']').toString();
  }

  /** A JSON integer (no fraction or exponent), or null. */
  static Long asLong(Object v) {
    return v instanceof Json.Number ? ((Json.Number) v).asLong() : null;
  }

  /** A list of JSON integers, or null. */
  static long[] asLongs(Object v) {
    if (!(v instanceof List)) {
      return null;
    }
    List<?> items = (List<?>) v;
    long[] out = new long[items.size()];
    for (int k = 0; k < out.length; k++) {
      Long x = asLong(items.get(k));
      if (x == null) {
        return null;
      }
      out[k] = x;
    }
    return out;
  }
}
