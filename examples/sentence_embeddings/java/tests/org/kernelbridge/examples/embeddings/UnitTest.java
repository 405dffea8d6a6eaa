package org.kernelbridge.examples.embeddings;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Unit checks of the JSON parser, the number format and the tokeniser; exits 1 on a failure. */
public final class UnitTest {
  private static int failures;

  private static void check(boolean ok, String what) {
    if (!ok) {
      failures++;
      System.err.println("FAIL " + what);
    }
  }

  @SuppressWarnings("unchecked")
  private static void json() throws Json.ParseException {
    Map<String, Object> v = (Map<String, Object>) Json.parse(
        " {\"a\": [1, -2.5e3, true, false, null], \"b\": \"x\\u00e9\\ud83d\\ude00\\n\", \"a\": 7} ");
    check(ModelFiles.asLong(v.get("a")) == 7L, "repeated key: the last counts");
    check("x\u00e9\ud83d\ude00\n".equals(v.get("b")), "escapes and surrogate pairs");
    check(ModelFiles.asLong(Json.parse("384.0")) == null, "384.0 is not an integer");
    check(((Json.Number) Json.parse("1e-12")).asDouble() == 1e-12, "1e-12");
    check("\ufffdx".equals(Json.parse("\"\\ud800x\"")), "lone surrogate -> U+FFFD");
    check(((List<?>) Json.parse("[]")).isEmpty(), "empty array");
    for (String bad : new String[] {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "\"a", "\"\u0001\"", "\"\\x\"",
        "\"\\u12\"", "nul", "[] []", "{1: 2}", "[".repeat(100) + "]".repeat(100)}) {
      try {
        Json.parse(bad);
        check(false, "should not parse: " + bad);
      } catch (Json.ParseException e) {
        // expected
      }
    }
  }

  private static void fixed() {
    check(Output.fixed(0.03125f, 4).equals("0.0312"), "tie rounds to even");
    check(Output.fixed(0.09375f, 4).equals("0.0938"), "tie rounds to even (up)");
    check(Output.fixed(-0.5f, 4).equals("-0.5000"), "negative");
    check(Output.fixed(-0.00001f, 4).equals("0.0000"), "negative zero prints 0.0000");
    check(Output.fixed(1f, 6).equals("1.000000"), "six decimals");
    check(Output.fixed(Float.NaN, 4).equals("nan"), "nan");
  }

  private static void tokenizer() {
    check(WordPiece.isPunct('$') && WordPiece.isPunct(0xAB) && WordPiece.isPunct(0x3002), "punctuation");
    check(!WordPiece.isPunct('a') && !WordPiece.isPunct(0xBD) && !WordPiece.isPunct(0x20AC), "not punctuation");
    check(WordPiece.isControl(0x200B) && WordPiece.isControl(0xE000) && !WordPiece.isControl('\n'), "controls");
    check(WordPiece.isCjk(0x2B920) && !WordPiece.isCjk(0x2B820) && !WordPiece.isCjk(0x3041), "CJK ranges");
    Map<String, Integer> vocab = new HashMap<>();
    String[] toks = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "aff", "a", "##a"};
    for (int i = 0; i < toks.length; i++) {
      vocab.put(toks[i], i);
    }
    WordPiece wp = new WordPiece(vocab, 6);
    check(Arrays.equals(wp.encode(""), new int[] {2, 3}), "empty text");
    check(Arrays.equals(wp.encode("UNAFFÁBLE"), new int[] {2, 5, 6, 7, 3}), "pieces, lower case, accents");
    check(Arrays.equals(wp.encode("unaffablex"), new int[] {2, 1, 3}), "unknown part: [UNK]");
    check(Arrays.equals(wp.encode("a [MASK]aff"), new int[] {2, 9, 4, 8, 3}), "special token in the text");
    check(Arrays.equals(wp.encode("a a a a a a a"), new int[] {2, 9, 9, 9, 9, 3}), "truncation");
    check(Arrays.equals(wp.encode("a".repeat(101)), new int[] {2, 1, 3}), "101 characters: [UNK]");
  }

  public static void main(String[] args) throws Exception {
    json();
    fixed();
    tokenizer();
    if (failures > 0) {
      System.err.println(failures + " unit check(s) failed");
      System.exit(1);
    }
    System.out.println("java unit checks passed");
  }
}
