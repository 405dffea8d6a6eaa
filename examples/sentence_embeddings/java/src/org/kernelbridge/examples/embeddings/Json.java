package org.kernelbridge.examples.embeddings;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.LinkedHashMap;

/**
 * A small JSON parser (RFC 8259) for the model's configuration, the safetensors header and input
 * files. Values are {@code null}, {@link Boolean}, {@link Number} (its text), {@link String},
 * {@link List} and {@link Map}. Numbers keep their text, so that integers are read exactly; in an
 * object with a repeated key the last value counts (as in Python and Go); a lone surrogate escape
 * becomes U+FFFD; nesting deeper than 64 levels is refused.
 */
public final class Json {
  private static final int MAX_DEPTH = 64;

  /** A JSON number, as written. */
  public static final class Number {
    public final String text;

    Number(String text) {
      this.text = text;
    }

    /** The value when written without fraction or exponent and within a long, else null. */
    public Long asLong() {
      if (text.indexOf('.') >= 0 || text.indexOf('e') >= 0 || text.indexOf('E') >= 0) {
        return null;
      }
      try {
        return Long.parseLong(text);
      } catch (NumberFormatException e) {
        return null;
      }
    }

    public double asDouble() {
      return Double.parseDouble(text);
    }

    @Override
    public String toString() {
      return text;
    }
  }

  /** A parse error, with the character offset. */
  public static final class ParseException extends Exception {
    private static final long serialVersionUID = 1L;

    ParseException(String message) {
      super(message);
    }
  }

  private final String s;
  private int i;

  private Json(String s) {
    this.s = s;
  }

  /** Parses a complete JSON text. */
  public static Object parse(String text) throws ParseException {
    Json p = new Json(text);
    Object v = p.value(0);
    p.ws();
    if (p.i != text.length()) {
      throw p.error("unexpected text after the value");
    }
    return v;
  }

  /** The value as JSON-like text, shortened, for error messages. */
  public static String brief(Object v) {
    String t;
    if (v == null) {
      t = "nothing";
    } else if (v instanceof String) {
      t = "\"" + v + "\"";
    } else if (v instanceof List) {
      t = "an array";
    } else if (v instanceof Map) {
      t = "an object";
    } else {
      t = v.toString();
    }
    return t.codePointCount(0, t.length()) > 40 ? t.substring(0, t.offsetByCodePoints(0, 40)) + "..." : t;
  }

  private ParseException error(String what) {
    return new ParseException(what + " at character " + i);
  }

  private void ws() {
    while (i < s.length() && (s.charAt(i) == ' ' || s.charAt(i) == '\t' || s.charAt(i) == '\n' || s.charAt(i) == '\r')) {
      i++;
    }
  }

  private boolean eat(String lit) {
    if (s.startsWith(lit, i)) {
      i += lit.length();
      return true;
    }
    return false;
  }

  private Object value(int depth) throws ParseException {
    if (depth > MAX_DEPTH) {
      throw error("nesting too deep");
    }
    ws();
    if (i >= s.length()) {
      throw error("unexpected end");
    }
    char c = s.charAt(i);
    if (c == '{') {
      return object(depth);
    } else if (c == '[') {
      return array(depth);
    } else if (c == '"') {
      return string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      return number();
    } else if (eat("true")) {
      return Boolean.TRUE;
    } else if (eat("false")) {
      return Boolean.FALSE;
    } else if (eat("null")) {
      return null;
    }
    throw error("unexpected character");
  }

  private Map<String, Object> object(int depth) throws ParseException {
    i++;
    Map<String, Object> members = new LinkedHashMap<>();
    ws();
    if (eat("}")) {
      return members;
    }
    while (true) {
      ws();
      if (i >= s.length() || s.charAt(i) != '"') {
        throw error("expected a string key");
      }
      String key = string();
      ws();
      if (!eat(":")) {
        throw error("expected ':'");
      }
      Object v = value(depth + 1);
      members.remove(key); // the last of repeated keys counts
      members.put(key, v);
      ws();
      if (eat("}")) {
        return members;
      }
      if (!eat(",")) {
        throw error("expected ',' or '}'");
      }
    }
  }

  private List<Object> array(int depth) throws ParseException {
    i++;
    List<Object> items = new ArrayList<>();
    ws();
    if (eat("]")) {
      return items;
    }
    while (true) {
      items.add(value(depth + 1));
      ws();
      if (eat("]")) {
        return items;
      }
      if (!eat(",")) {
        throw error("expected ',' or ']'");
      }
    }
  }

  private int digits() {
    int start = i;
    while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
      i++;
    }
    return i - start;
  }

  private Number number() throws ParseException {
    int start = i;
    eat("-");
    if (eat("0")) {
      if (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
        throw error("leading zero in a number");
      }
    } else if (digits() == 0) {
      throw error("expected digits");
    }
    if (eat(".") && digits() == 0) {
      throw error("expected digits after '.'");
    }
    if (eat("e") || eat("E")) {
      if (!eat("+")) {
        eat("-");
      }
      if (digits() == 0) {
        throw error("expected exponent digits");
      }
    }
    return new Number(s.substring(start, i));
  }

  private int hex4() throws ParseException {
    if (i + 4 > s.length()) {
      throw error("short \\u escape");
    }
    int v = 0;
    for (int k = 0; k < 4; k++) {
      int d = Character.digit(s.charAt(i + k), 16);
      if (d < 0) {
        throw error("bad \\u escape");
      }
      v = v * 16 + d;
    }
    i += 4;
    return v;
  }

  private String string() throws ParseException {
    i++; // the opening quote
    StringBuilder out = new StringBuilder();
    while (true) {
      if (i >= s.length()) {
        throw error("unterminated string");
      }
      char c = s.charAt(i++);
      if (c == '"') {
        return out.toString();
      } else if (c < 0x20) {
        throw error("control character in a string");
      } else if (c != '\\') {
        out.append(c);
        continue;
      }
      if (i >= s.length()) {
        throw error("unterminated string");
      }
      char e = s.charAt(i++);
      switch (e) {
        case '"': out.append('"'); break;
        case '\\': out.append('\\'); break;
        case '/': out.append('/'); break;
        case 'b': out.append('\b'); break;
        case 'f': out.append('\f'); break;
        case 'n': out.append('\n'); break;
        case 'r': out.append('\r'); break;
        case 't': out.append('\t'); break;
        case 'u': out.appendCodePoint(unicodeEscape()); break;
        default: throw error("bad escape");
      }
    }
  }

  /** After "\\u": one code point, joining a surrogate pair; a lone surrogate gives U+FFFD. */
  private int unicodeEscape() throws ParseException {
    int hi = hex4();
    if (hi >= 0xD800 && hi < 0xDC00 && s.startsWith("\\u", i)) {
      int save = i;
      i += 2;
      int lo = hex4();
      if (lo >= 0xDC00 && lo < 0xE000) {
        return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
      }
      i = save; // not a pair: the second escape stands on its own
    }
    return (hi >= 0xD800 && hi < 0xE000) ? 0xFFFD : hi;
  }
}
