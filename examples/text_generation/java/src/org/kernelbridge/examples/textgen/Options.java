package org.kernelbridge.examples.textgen;

import java.math.BigInteger;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The command line, parsed exactly as the C driver (c/main.c) parses it: the same options, defaults,
 * ranges and the same C conversions (strtod, strtol, strtoull), so that every language accepts the
 * same arguments and draws the same tokens from them.
 */
final class Options {
  static final String USAGE =
      "usage: generate --model FILE (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N] [--temperature T]\n"
      + "                [--top-k K | --top-p P] [--seed S] [--threads N] [--print-ids] [--print-prompt-ids]\n"
      + "                [--logits-out FILE]";

  String model, prompt, promptIds, logitsOut;
  /** Where --prompt's value is in the arguments (for its raw bytes, RawArgs), or -1. */
  int promptArg = -1;
  long maxTokens = 32, topK, threads;
  double temperature, topP = 1.0;
  /** The seed as C's uint64_t: its 64 bits, step i samples with seed + i (wrapping). */
  long seed;
  boolean printIds, printPromptIds;

  static Options parse(String[] args) throws UsageException {
    Options o = new Options();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--print-ids")) {
        o.printIds = true;
        continue;
      }
      if (a.equals("--print-prompt-ids")) {
        o.printPromptIds = true;
        continue;
      }
      // As in C, every other word takes the next one as its value, even an unknown option.
      if (i + 1 >= args.length) {
        throw new UsageException(a + " needs a value");
      }
      String v = args[++i];
      switch (a) {
        case "--model":
          o.model = v;
          break;
        case "--prompt":
          o.prompt = v;
          o.promptArg = i;
          break;
        case "--prompt-ids":
          o.promptIds = v;
          break;
        case "--logits-out":
          o.logitsOut = v;
          break;
        case "--max-tokens":
          o.maxTokens = (long) number(a, v, 0, 1e9, "[0, 1e+09]");
          break;
        case "--top-k":
          o.topK = (long) number(a, v, 0, 1e9, "[0, 1e+09]");
          break;
        case "--threads":
          o.threads = (long) number(a, v, 0, 4096, "[0, 4096]");
          break;
        case "--temperature":
          o.temperature = number(a, v, 0, 1e6, "[0, 1e+06]");
          break;
        case "--top-p":
          o.topP = number(a, v, 0, 1, "[0, 1]");
          break;
        case "--seed":
          // C checks the range as a double, then takes the integer with strtoull.
          number(a, v, 0, 18446744073709551615.0, "[0, 1.84467e+19]");
          o.seed = strtoull(v);
          break;
        default:
          throw new UsageException("unknown option " + a);
      }
    }
    if (o.model == null || (o.prompt == null) == (o.promptIds == null)) {
      throw new UsageException("--model and one of --prompt / --prompt-ids are required");
    }
    if (o.topK > 0 && o.topP < 1.0) {
      throw new UsageException("--top-k and --top-p cannot be combined (the library samples with one of them)");
    }
    return o;
  }

  private static double number(String flag, String text, double lo, double hi, String range) throws UsageException {
    Double v = strtod(text);
    if (v == null || !(v >= lo && v <= hi)) {
      throw new UsageException(flag + " expects a number in " + range + ", got '" + text + "'");
    }
    return v;
  }

  /** C's isspace in the "C" locale. */
  static boolean isSpace(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
  }

  private static final Pattern DECIMAL = Pattern.compile("([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?");
  private static final Pattern HEX =
      Pattern.compile("0[xX]([0-9a-fA-F]+\\.?[0-9a-fA-F]*|\\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?");

  /**
   * The whole of text as C's strtod reads it (leading white space, a sign, decimal or hexadecimal
   * digits, inf, nan), or null where C's check fails: nothing converted, characters left over, or a
   * result out of range (errno ERANGE: overflow, or underflow to zero or a subnormal).
   */
  static Double strtod(String text) {
    int i = 0;
    while (i < text.length() && isSpace(text.charAt(i))) {
      i++;
    }
    boolean negative = false;
    if (i < text.length() && (text.charAt(i) == '+' || text.charAt(i) == '-')) {
      negative = text.charAt(i) == '-';
      i++;
    }
    String body = text.substring(i);
    String lower = body.toLowerCase(Locale.ROOT);
    double v;
    if (lower.equals("inf") || lower.equals("infinity")) {
      v = Double.POSITIVE_INFINITY;
    } else if (lower.matches("nan(\\([0-9a-z_]*\\))?")) {
      v = Double.NaN;
    } else {
      boolean hex = HEX.matcher(body).matches();
      if (!hex && !DECIMAL.matcher(body).matches()) {
        return null;
      }
      // Java's hexadecimal literal needs the binary exponent that strtod makes optional.
      v = Double.parseDouble(hex && lower.indexOf('p') < 0 ? body + "p0" : body);
      if (Double.isInfinite(v) || (v != 0 && v < Double.MIN_NORMAL)) {
        return null;
      }
      String mantissa = hex ? lower.substring(2).split("p")[0] : lower.split("e")[0];
      if (v == 0 && mantissa.matches(".*[1-9a-f].*")) {
        return null;
      }
    }
    return negative ? -v : v;
  }

  /** C's strtoull(text, NULL, 10): the leading decimal integer, saturating at 2^64 - 1, negated mod 2^64. */
  static long strtoull(String text) {
    int i = 0;
    while (i < text.length() && isSpace(text.charAt(i))) {
      i++;
    }
    boolean negative = false;
    if (i < text.length() && (text.charAt(i) == '+' || text.charAt(i) == '-')) {
      negative = text.charAt(i) == '-';
      i++;
    }
    int start = i;
    while (i < text.length() && text.charAt(i) >= '0' && text.charAt(i) <= '9') {
      i++;
    }
    if (i == start) {
      return 0;
    }
    BigInteger v = new BigInteger(text.substring(start, i));
    if (v.bitLength() > 64) {
      return -1L;
    }
    long bits = v.longValue();
    return negative ? -bits : bits;
  }

  /**
   * Comma-separated token ids as c/main.c's parse_ids reads them with strtol: each one optional
   * white space, an optional sign and decimal digits, in [0, 2^31 - 1]; an empty text gives no ids.
   */
  static int[] parseIds(String text) throws GenerateException {
    int[] ids = new int[text.length() + 1];
    int n = 0;
    int p = 0;
    while (p < text.length()) {
      int i = p;
      while (i < text.length() && isSpace(text.charAt(i))) {
        i++;
      }
      boolean negative = false;
      if (i < text.length() && (text.charAt(i) == '+' || text.charAt(i) == '-')) {
        negative = text.charAt(i) == '-';
        i++;
      }
      int start = i;
      long v = 0;
      while (i < text.length() && text.charAt(i) >= '0' && text.charAt(i) <= '9') {
        // Past 2^31 the value is refused anyway; stop growing it before it could overflow.
        v = Math.min(v * 10 + (text.charAt(i) - '0'), 1L << 40);
        i++;
      }
      if (negative) {
        v = -v;
      }
      if (i == start || v < 0 || v > Integer.MAX_VALUE || (i < text.length() && text.charAt(i) != ',')) {
        throw new GenerateException("--prompt-ids expects comma-separated token ids, got '" + text + "'");
      }
      ids[n++] = (int) v;
      p = i < text.length() ? i + 1 : i;
    }
    return java.util.Arrays.copyOf(ids, n);
  }
}
