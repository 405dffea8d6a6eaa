package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;
import static org.kernelbridge.test.Harness.equal;
import static org.kernelbridge.test.Harness.expect;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.kernelbridge.Backend;
import org.kernelbridge.Context;
import org.kernelbridge.Gguf;
import org.kernelbridge.GgufType;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Status;

/** Gguf on a small GGUF file written here byte by byte: keys, vocabulary, tensors, errors. */
public final class GgufTest {
  private GgufTest() {}

  /** A little-endian GGUF writer. */
  private static final class W {
    final ByteArrayOutputStream out = new ByteArrayOutputStream();

    W le(long v, int bytes) {
      for (int i = 0; i < bytes; i++) out.write((int) (v >>> (8 * i)) & 0xFF);
      return this;
    }

    W str(String s) {
      byte[] b = s.getBytes(StandardCharsets.UTF_8);
      le(b.length, 8);
      out.write(b, 0, b.length);
      return this;
    }

    W pad() {
      while (out.size() % 32 != 0) out.write(0);
      return this;
    }
  }

  static final String[] TOKENS = {"<unk>", "<s>", "\u2581hi"};

  static byte[] tinyFile() {
    W w = new W();
    w.out.write('G');
    w.out.write('G');
    w.out.write('U');
    w.out.write('F');
    w.le(3, 4).le(1, 8).le(3, 8);
    w.str("general.architecture").le(8, 4).str("llama");
    w.str("llama.block_count").le(4, 4).le(2, 4);
    w.str("tokenizer.ggml.tokens").le(9, 4).le(8, 4).le(TOKENS.length, 8);
    for (String t : TOKENS) w.str(t);
    w.str("token_embd.weight").le(2, 4).le(2, 8).le(3, 8).le(0, 4).le(0, 8); // F32, ne = [2, 3]
    w.pad();
    for (int i = 0; i < 6; i++) w.le(Float.floatToIntBits(i / 2f), 4);
    return w.out.toByteArray();
  }

  static void checkFile(Gguf g) {
    equal(3, g.version(), "version");
    equal(List.of("general.architecture", "llama.block_count", "tokenizer.ggml.tokens"), g.keys(), "keys");
    equal("llama", g.getString("general.architecture"), "architecture");
    equal(2L, g.getLong("llama.block_count"), "block_count");
    check(!g.hasKey("no.such.key"), "hasKey");
    equal(GgufType.ARRAY, g.keyType("tokenizer.ggml.tokens"), "keyType");
    byte[] blob = g.stringArrayBlob("tokenizer.ggml.tokens");
    int[] offsets = g.stringArrayOffsets("tokenizer.ggml.tokens");
    for (int i = 0; i < TOKENS.length; i++) {
      String t = new String(blob, offsets[i], offsets[i + 1] - offsets[i], StandardCharsets.UTF_8);
      equal(TOKENS[i], t, "token " + i);
    }
    equal(List.of("token_embd.weight"), g.tensorNames(), "tensorNames");
    equal(0, g.tensorType("token_embd.weight"), "tensorType");
    check(Arrays.equals(new long[] {3, 2}, g.tensorShape("token_embd.weight")), "row-major shape");
    byte[] data = g.readTensor("token_embd.weight");
    equal(2.5f, ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).getFloat(20), "element 5");
    KernelBridgeException e = expect(KernelBridgeException.class, () -> g.getLong("general.architecture"));
    equal(Status.INVALID_ARGUMENT, e.status(), "getLong(string) status");
    check(e.getMessage().contains("key 'general.architecture' is a STRING, not an integer"), e.getMessage());
  }

  public static void testMemoryAndFile() throws Exception {
    try (Context ctx = new Context(Backend.CPU, 1)) {
      byte[] file = tinyFile();
      try (Gguf g = Gguf.openMemory(ctx, file)) {
        checkFile(g);
      }
      Path path = Files.createTempFile("tiny", ".gguf");
      try {
        Files.write(path, file);
        try (Gguf g = Gguf.open(ctx, path.toString())) {
          checkFile(g);
        }
      } finally {
        Files.delete(path);
      }
      KernelBridgeException e = expect(KernelBridgeException.class,
          () -> Gguf.openMemory(ctx, Arrays.copyOf(file, file.length - 4)));
      equal(Status.INVALID_ARGUMENT, e.status(), "truncated file");
      check(e.getMessage().contains("lies past the end of the file"), e.getMessage());
      Gguf closed = Gguf.openMemory(ctx, file);
      closed.close();
      closed.close();
      expect(IllegalStateException.class, closed::keys);
    }
  }
}
