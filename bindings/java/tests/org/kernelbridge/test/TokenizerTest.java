package org.kernelbridge.test;

import static org.kernelbridge.test.Harness.check;
import static org.kernelbridge.test.Harness.equal;
import static org.kernelbridge.test.Harness.expect;

import java.util.Arrays;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Status;
import org.kernelbridge.Tokenizer;

/**
 * Tokenizer: a hand-built vocabulary whose ids are worked out by hand (core/tokenizer_test.c has
 * the full set), round trips, streaming of split characters and errors.
 */
public final class TokenizerTest {
  private TokenizerTest() {}

  static final int SPACE = 259;
  static final int AB = 262;
  static final int SPACE_A = 263;
  static final int UD = 264;

  static Tokenizer small() {
    String[] pieces = new String[265];
    float[] scores = new float[265];
    int[] types = new int[265];
    String[] head = {"<unk>", "<s>", "</s>"};
    int[] headTypes = {2, 3, 3};
    for (int i = 0; i < 3; i++) {
      pieces[i] = head[i];
      types[i] = headTypes[i];
    }
    for (int b = 0; b < 256; b++) {
      pieces[3 + b] = String.format("<0x%02X>", b);
      types[3 + b] = 6;
    }
    String[] extra = {"\u2581", "a", "b", "ab", "\u2581a", "<ud>"};
    float[] extraScores = {-1, -2, -2, -3, -4, 0};
    for (int i = 0; i < extra.length; i++) {
      pieces[259 + i] = extra[i];
      scores[259 + i] = extraScores[i];
      types[259 + i] = i == 5 ? 4 : 1;
    }
    return new Tokenizer(pieces, scores, types, 1, 2, 0, true, false, true);
  }

  public static void testIds() {
    try (Tokenizer tok = small()) {
      equal(265L, tok.nTokens(), "nTokens");
      equal(1L, tok.bos(), "bos");
      equal(2L, tok.eos(), "eos");
      check(Arrays.equals(new int[] {1, SPACE, AB, SPACE_A}, tok.tokenize("ab a", true, false)), "ab a");
      check(Arrays.equals(new int[] {SPACE_A, UD, SPACE, 261}, tok.tokenize("a<ud>b", false, false)), "ud");
      check(Arrays.equals(new int[] {1, SPACE_A}, tok.tokenize("<s>a", false, true)), "parse special");
      check(Arrays.equals(new int[] {1}, tok.tokenize("", true, false)), "empty");
      equal("<s> a</s>", tok.decode(new int[] {1, SPACE_A, 2}, false, true), "unparse special");
    }
  }

  public static void testRoundTripAndStream() {
    try (Tokenizer tok = small()) {
      for (String text : new String[] {"ab a", "  a b  ", "\u4e2d\u6587 \uD83D\uDE00", "a\nb"}) {
        int[] ids = tok.tokenize(text, false, false);
        equal(text, tok.decode(ids, false, false), "round trip of " + text);
        Tokenizer.Stream s = tok.stream(false);
        StringBuilder sb = new StringBuilder();
        for (int id : ids) sb.append(s.feed(id));
        sb.append(s.flush());
        equal(text, sb.toString(), "stream of " + text);
      }
      Tokenizer.Stream s = tok.stream(false);
      equal("", s.feed(3 + 0xF0) + s.feed(3 + 0x9F) + s.feed(3 + 0x98), "split character held back");
      equal("\uD83D\uDE00", s.feed(3 + 0x80), "completed character");
    }
  }

  public static void testErrors() {
    KernelBridgeException e = expect(KernelBridgeException.class,
        () -> new Tokenizer(new String[] {"a", "a"}, new float[2], new int[] {1, 1}, -1, -1, -1, false, false, true));
    equal(Status.INVALID_ARGUMENT, e.status(), "status");
    check(e.getMessage().contains("same piece"), e.getMessage());
    e = expect(KernelBridgeException.class,
        () -> new Tokenizer(new String[] {"a"}, new float[1], new int[] {1}, 5, -1, -1, true, false, true));
    check(e.getMessage().contains("bos_id"), e.getMessage());
    Tokenizer tok = small();
    e = expect(KernelBridgeException.class, () -> tok.decode(new int[] {1, 100000}, false, false));
    check(e.getMessage().contains("ids[1]"), e.getMessage());
    tok.close();
    tok.close();
    check(tok.isClosed(), "closed");
    expect(IllegalStateException.class, () -> tok.tokenize("a", true, false));
  }
}
