package org.kernelbridge.examples.textgen;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.kernelbridge.Gguf;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Tokenizer;

/** The file's own vocabulary (the tokenizer.ggml.* keys) as a kernelbridge Tokenizer, as c/main.c builds it. */
final class Vocabulary {
  private Vocabulary() {}

  static Tokenizer fromGguf(Gguf g) throws GenerateException {
    try {
      if (g.hasKey("tokenizer.ggml.model")) {
        byte[] kind = g.getBytes("tokenizer.ggml.model");
        // C reads the name into a 32-byte buffer and judges only names that fit.
        if (kind.length < 32 && !new String(kind, StandardCharsets.UTF_8).equals("llama")) {
          throw new GenerateException(
              "tokenizer '" + new String(kind, StandardCharsets.UTF_8) + "' is not supported (only 'llama')");
        }
      }
      if (!g.hasKey("tokenizer.ggml.tokens")) {
        throw new GenerateException("the model has no vocabulary (tokenizer.ggml.tokens)");
      }
      byte[] blob = g.stringArrayBlob("tokenizer.ggml.tokens");
      int[] offsets = g.stringArrayOffsets("tokenizer.ggml.tokens");
      int n = offsets.length - 1;
      String[] pieces = pieces(blob, offsets);
      // Absent scores are zeros and absent types normal (1), as llama.cpp (and c/main.c) take them.
      float[] scores = g.hasKey("tokenizer.ggml.scores") ? g.getFloats("tokenizer.ggml.scores") : new float[n];
      int[] types;
      if (g.hasKey("tokenizer.ggml.token_type")) {
        types = g.getInts("tokenizer.ggml.token_type");
      } else {
        types = new int[n];
        Arrays.fill(types, 1);
      }
      if (scores.length != n || types.length != n) {
        throw new GenerateException("vocabulary: " + n + " tokens but " + scores.length + " scores and "
            + types.length + " token types");
      }
      long bos = optional(g, "tokenizer.ggml.bos_token_id", -1);
      long eos = optional(g, "tokenizer.ggml.eos_token_id", -1);
      long unk = optional(g, "tokenizer.ggml.unknown_token_id", -1);
      boolean addBos = optional(g, "tokenizer.ggml.add_bos_token", 1) != 0;
      boolean addEos = optional(g, "tokenizer.ggml.add_eos_token", 0) != 0;
      boolean addSpace = optional(g, "tokenizer.ggml.add_space_prefix", 1) != 0;
      return new Tokenizer(pieces, scores, types, bos, eos, unk, addBos, addEos, addSpace);
    } catch (KernelBridgeException | IllegalArgumentException e) {
      throw new GenerateException("vocabulary: " + e.getMessage());
    }
  }

  private static long optional(Gguf g, String key, long def) {
    return g.hasKey(key) ? g.getLong(key) : def;
  }

  /**
   * The pieces as Strings, which the Java Tokenizer takes (and encodes back to the same UTF-8 bytes).
   * A piece that is not valid UTF-8 would not survive that round trip, so it is refused rather than
   * silently changed (the C driver passes the bytes as they are).
   */
  static String[] pieces(byte[] blob, int[] offsets) throws GenerateException {
    CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT);
    String[] pieces = new String[offsets.length - 1];
    for (int i = 0; i < pieces.length; i++) {
      try {
        pieces[i] = utf8.decode(ByteBuffer.wrap(blob, offsets[i], offsets[i + 1] - offsets[i])).toString();
      } catch (CharacterCodingException e) {
        throw new GenerateException("vocabulary: token " + i + " is not valid UTF-8, which the Java Tokenizer "
            + "(String pieces) cannot take");
      }
    }
    return pieces;
  }
}
