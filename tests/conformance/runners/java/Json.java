package kbconformance;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A minimal JSON reader and the writer helpers the runner needs (standard
 * library only).  Objects are LinkedHashMap (key order kept), arrays
 * ArrayList, strings String, true/false Boolean, null null; numbers are
 * {@link Num}, which keeps the literal text so that integers up to 64 bits
 * and doubles are both read exactly.
 */
final class Json {
  private Json() {}

  /** A JSON number: its literal text. */
  static final class Num {
    final String text;

    Num(String text) {
      this.text = text;
    }

    boolean isInteger() {
      return text.indexOf('.') < 0 && text.indexOf('e') < 0 && text.indexOf('E') < 0;
    }

    long asLong() {
      return Long.parseLong(text);
    }

    /** The double nearest to the literal (as strtod). */
    double asDouble() {
      return Double.parseDouble(text);
    }

    @Override
    public String toString() {
      return text;
    }
  }

  static Object parse(String s) {
    Json.Parser p = new Json.Parser(s);
    p.ws();
    Object v = p.value();
    p.ws();
    if (p.i != s.length()) throw p.error("trailing characters");
    return v;
  }

  private static final class Parser {
    final String s;
    int i;

    Parser(String s) {
      this.s = s;
    }

    IllegalArgumentException error(String what) {
      return new IllegalArgumentException("JSON: " + what + " at offset " + i);
    }

    void ws() {
      while (i < s.length()) {
        char c = s.charAt(i);
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        i++;
      }
    }

    void expect(char c) {
      if (i >= s.length() || s.charAt(i) != c) throw error("expected '" + c + "'");
      i++;
    }

    Object value() {
      if (i >= s.length()) throw error("unexpected end");
      char c = s.charAt(i);
      switch (c) {
        case '{':
          return object();
        case '[':
          return array();
        case '"':
          return string();
        case 't':
          literal("true");
          return Boolean.TRUE;
        case 'f':
          literal("false");
          return Boolean.FALSE;
        case 'n':
          literal("null");
          return null;
        default:
          if (c == '-' || (c >= '0' && c <= '9')) return number();
          throw error("unexpected '" + c + "'");
      }
    }

    void literal(String word) {
      if (!s.startsWith(word, i)) throw error("expected " + word);
      i += word.length();
    }

    Map<String, Object> object() {
      Map<String, Object> m = new LinkedHashMap<>();
      expect('{');
      ws();
      if (i < s.length() && s.charAt(i) == '}') {
        i++;
        return m;
      }
      while (true) {
        ws();
        String k = string();
        ws();
        expect(':');
        ws();
        m.put(k, value());
        ws();
        if (i < s.length() && s.charAt(i) == ',') {
          i++;
          continue;
        }
        expect('}');
        return m;
      }
    }

    List<Object> array() {
      List<Object> a = new ArrayList<>();
      expect('[');
      ws();
      if (i < s.length() && s.charAt(i) == ']') {
        i++;
        return a;
      }
      while (true) {
        ws();
        a.add(value());
        ws();
        if (i < s.length() && s.charAt(i) == ',') {
          i++;
          continue;
        }
        expect(']');
        return a;
      }
    }

    String string() {
      expect('"');
      StringBuilder b = new StringBuilder();
      while (true) {
        if (i >= s.length()) throw error("unterminated string");
        char c = s.charAt(i++);
        if (c == '"') return b.toString();
        if (c != '\\') {
          b.append(c);
          continue;
        }
        if (i >= s.length()) throw error("unterminated escape");
        char e = s.charAt(i++);
        switch (e) {
          case '"':
          case '\\':
          case '/':
            b.append(e);
            break;
          case 'b':
            b.append('\b');
            break;
          case 'f':
            b.append('\f');
            break;
          case 'n':
            b.append('\n');
            break;
          case 'r':
            b.append('\r');
            break;
          case 't':
            b.append('\t');
            break;
          case 'u':
            if (i + 4 > s.length()) throw error("bad \\u escape");
            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
            i += 4;
            break;
          default:
            throw error("bad escape \\" + e);
        }
      }
    }

    Num number() {
      int start = i;
      if (s.charAt(i) == '-') i++;
      while (i < s.length()) {
        char c = s.charAt(i);
        if ((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
          i++;
        } else {
          break;
        }
      }
      String t = s.substring(start, i);
      if (t.equals("-")) throw error("bad number");
      return new Num(t);
    }
  }

  // --- writing ---------------------------------------------------------------

  /** A JSON string as the C runner writes it: " and \ escaped, control characters as \\u00XX. */
  static void string(StringBuilder out, String s) {
    out.append('"');
    for (int k = 0; k < s.length(); k++) {
      char c = s.charAt(k);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    out.append('"');
  }

  /** A number as the C runner writes it: printf("%.17g"), or "inf" (a string) when not finite. */
  static void number(StringBuilder out, double v) {
    if (Double.isNaN(v) || Double.isInfinite(v)) {
      out.append("\"inf\"");
    } else {
      out.append(formatG17(v));
    }
  }

  /**
   * C's printf("%.17g", v) for a finite v: 17 significant digits (the exact
   * binary value rounded half-even, as glibc does), fixed notation when the
   * decimal exponent X satisfies -4 <= X < 17, otherwise d.ddde+XX; trailing
   * zeros (and a trailing point) removed.
   */
  static String formatG17(double v) {
    if (v == 0) return (1 / v < 0) ? "-0" : "0";
    final int p = 17;
    BigDecimal bd = new BigDecimal(v).round(new MathContext(p, RoundingMode.HALF_EVEN));
    int x = bd.precision() - bd.scale() - 1;
    String sign = bd.signum() < 0 ? "-" : "";
    bd = bd.abs();
    if (x >= -4 && x < p) {
      String t = bd.setScale(p - 1 - x, RoundingMode.UNNECESSARY).toPlainString();
      return sign + stripZeros(t);
    }
    String digits = bd.unscaledValue().toString();
    while (digits.length() < p) digits += "0";
    digits = digits.substring(0, p);
    String mant = stripZeros(digits.charAt(0) + "." + digits.substring(1));
    String exp = String.valueOf(Math.abs(x));
    if (exp.length() < 2) exp = "0" + exp;
    return sign + mant + "e" + (x < 0 ? "-" : "+") + exp;
  }

  private static String stripZeros(String t) {
    if (t.indexOf('.') < 0) return t;
    int end = t.length();
    while (end > 0 && t.charAt(end - 1) == '0') end--;
    if (end > 0 && t.charAt(end - 1) == '.') end--;
    return t.substring(0, end);
  }
}
