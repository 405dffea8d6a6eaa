package org.kernelbridge.examples.textgen;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * Unit checks of the option and token-id parsing (C's strtod, strtol, strtoull rules) and of the
 * raw-argument lookup; exits 1 on a failure.
 */
public final class UnitTest {
  private static int failures;

  private static void check(boolean ok, String what) {
    if (!ok) {
      failures++;
      System.err.println("FAIL " + what);
    }
  }

  private static Options parse(String... args) throws UsageException {
    return Options.parse(args);
  }

  private static String usageError(String... args) {
    try {
      Options.parse(args);
      return null;
    } catch (UsageException e) {
      return e.getMessage();
    }
  }

  private static void options() throws UsageException {
    Options o = parse("--model", "m.gguf", "--prompt", "hi");
    check(o.maxTokens == 32 && o.temperature == 0 && o.topP == 1.0 && o.topK == 0 && o.seed == 0 && o.threads == 0
        && !o.printIds && !o.printPromptIds && o.logitsOut == null, "defaults");
    o = parse("--print-ids", "--model", "m", "--prompt-ids", "1,2", "--max-tokens", "7.9", "--temperature", "0.8",
        "--top-k", "40", "--seed", "42", "--threads", "2", "--print-prompt-ids", "--logits-out", "f");
    check(o.printIds && o.printPromptIds && o.maxTokens == 7 && o.temperature == 0.8 && o.topK == 40 && o.seed == 42
        && o.threads == 2 && "f".equals(o.logitsOut) && "1,2".equals(o.promptIds), "every option");
    check(parse("--model", "m", "--prompt", "", "--top-p", " 0x1p-1").topP == 0.5, "strtod: space, hexadecimal");
    check(parse("--model", "m", "--prompt", "", "--max-tokens", "1e3").maxTokens == 1000, "strtod: exponent");
    check(parse("--model", "m", "--prompt", "", "--seed", "18446744073709551615").seed == -1L, "seed 2^64 - 1");
    check(parse("--model", "m", "--prompt", "", "--seed", "18446744073709551616").seed == -1L, "seed saturates");
    check(parse("--model", "m", "--prompt", "", "--seed", "12.7").seed == 12, "seed: strtoull stops at '.'");
    check(parse("--model", "m", "--prompt", "", "--top-k", "5", "--top-p", "1").topK == 5, "top-p 1 is off");
    check(usageError("--model", "m", "--prompt", "x", "--top-k", "5", "--top-p", "0.5").contains("cannot be combined"),
        "top-k with top-p");
    check(usageError("--model", "m").contains("--prompt"), "no prompt");
    check(usageError("--model", "m", "--prompt", "a", "--prompt-ids", "1").contains("--prompt"), "both prompts");
    check(usageError("--model", "m", "--prompt").equals("--prompt needs a value"), "missing value");
    check(usageError("--model", "m", "--prompt", "a", "--what", "1").equals("unknown option --what"), "unknown");
    for (String bad : new String[] {"-1", "1e10", "nan", "inf", "", " ", "1x", "0x", "1e", "1e-400", "12 "}) {
      String e = usageError("--model", "m", "--prompt", "a", "--max-tokens", bad);
      check(e != null && e.startsWith("--max-tokens expects a number in [0, 1e+09], got '"), "refused: '" + bad + "'");
    }
    check(usageError("--model", "m", "--prompt", "a", "--temperature", "1e6") == null, "the upper bound is in");
  }

  private static int[] ids(String text) throws GenerateException {
    return Options.parseIds(text);
  }

  private static void promptIds() throws GenerateException {
    check(Arrays.equals(ids("1,2,3"), new int[] {1, 2, 3}), "1,2,3");
    check(Arrays.equals(ids(" 1,+5,\t300"), new int[] {1, 5, 300}), "spaces and plus signs, as strtol");
    check(Arrays.equals(ids("7,"), new int[] {7}), "a trailing comma ends the list");
    check(Arrays.equals(ids("-0"), new int[] {0}), "-0 is 0");
    check(ids("").length == 0, "empty: no ids");
    check(Arrays.equals(ids("2147483647"), new int[] {Integer.MAX_VALUE}), "INT32_MAX");
    for (String bad : new String[] {"1,x", "1,,2", ",1", "-1", "2147483648", "99999999999999999999", "1 ", "0x10",
        "1;2", "- 1", "1,2,", "1,2,,"}) {
      boolean refused;
      try {
        ids(bad);
        refused = bad.equals("1,2,");
      } catch (GenerateException e) {
        refused = !bad.equals("1,2,") && e.getMessage().contains("--prompt-ids");
      }
      check(refused, "ids '" + bad + "'");
    }
  }

  private static void rawArgs() {
    byte[] cmdline = "java\0-cp\0x\0Main\0--prompt\0a\u00e9\0\0".getBytes(StandardCharsets.UTF_8);
    List<byte[]> entries = RawArgs.split(cmdline);
    check(entries.size() == 7 && entries.get(6).length == 0, "split keeps an empty last argument");
    List<byte[]> mine = RawArgs.match(entries, new String[] {"--prompt", "a\u00e9", ""});
    check(mine != null && new String(mine.get(1), StandardCharsets.UTF_8).equals("a\u00e9"), "the last entries");
    check(RawArgs.match(entries, new String[] {"--prompt", "b", ""}) == null, "other arguments: no match");
    List<byte[]> raw = List.of("--prompt".getBytes(StandardCharsets.UTF_8), new byte[] {'a', (byte) 0xff});
    List<byte[]> got = RawArgs.match(raw, new String[] {"--prompt", "a\ufffd"});
    check(got != null && Arrays.equals(got.get(1), new byte[] {'a', (byte) 0xff}), "invalid UTF-8 kept as bytes");
  }

  public static void main(String[] args) throws Exception {
    options();
    promptIds();
    rawArgs();
    if (failures > 0) {
      System.err.println(failures + " failures");
      System.exit(1);
    }
    System.out.println("UnitTest: all checks passed");
  }
}
