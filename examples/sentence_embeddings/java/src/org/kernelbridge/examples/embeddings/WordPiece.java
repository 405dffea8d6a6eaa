package org.kernelbridge.examples.embeddings;

import java.text.Normalizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * BERT's uncased WordPiece tokeniser; the steps are those of the README ("Tokenisation") and of
 * python/sentence_embeddings/wordpiece.py. Character data comes from the JDK (Character,
 * java.text.Normalizer).
 */
final class WordPiece {
  static final String[] SPECIAL_TOKENS = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  private static final int MAX_WORD_CHARS = 100;
  private static final int[][] CJK_RANGES = {
    {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xF900, 0xFAFF}, {0x20000, 0x2A6DF},
    {0x2A700, 0x2B73F}, {0x2B740, 0x2B81F}, {0x2B920, 0x2CEAF}, {0x2F800, 0x2FA1F},
  };

  private final Map<String, Integer> vocab;
  private final int maxLen;
  private final int unk, cls, sep;
  private final Map<Integer, int[]> stripCache = new HashMap<>();

  WordPiece(Map<String, Integer> vocab, int maxLen) {
    this.vocab = vocab;
    this.maxLen = maxLen;
    this.unk = vocab.get("[UNK]");
    this.cls = vocab.get("[CLS]");
    this.sep = vocab.get("[SEP]");
  }

  /** The White_Space property. */
  static boolean isWhitespace(int c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x85 || c == 0xA0 || c == 0x1680
        || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F
        || c == 0x3000;
  }

  static boolean isControl(int c) {
    if (c == '\t' || c == '\n' || c == '\r') {
      return false;
    }
    int t = Character.getType(c);
    return t == Character.CONTROL || t == Character.FORMAT || t == Character.PRIVATE_USE;
  }

  static boolean isCjk(int c) {
    for (int[] r : CJK_RANGES) {
      if (c >= r[0] && c <= r[1]) {
        return true;
      }
    }
    return false;
  }

  static boolean isPunct(int c) {
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) {
      return true;
    }
    switch (Character.getType(c)) {
      case Character.CONNECTOR_PUNCTUATION:
      case Character.DASH_PUNCTUATION:
      case Character.START_PUNCTUATION:
      case Character.END_PUNCTUATION:
      case Character.INITIAL_QUOTE_PUNCTUATION:
      case Character.FINAL_QUOTE_PUNCTUATION:
      case Character.OTHER_PUNCTUATION:
        return true;
      default:
        return false;
    }
  }

  /** c's canonical decomposition without nonspacing marks. */
  private int[] stripped(int c) {
    int[] out = stripCache.get(c);
    if (out == null) {
      String nfd = Normalizer.normalize(new String(Character.toChars(c)), Normalizer.Form.NFD);
      out = nfd.codePoints().filter(d -> Character.getType(d) != Character.NON_SPACING_MARK).toArray();
      stripCache.put(c, out);
    }
    return out;
  }

  /** Clean-up, spaces around CJK ideographs, accents stripped, lower case: code points. */
  private int[] normalize(String text) {
    int[] cps = text.codePoints().toArray();
    int[] out = new int[cps.length * 3 + 8];
    int n = 0;
    for (int c : cps) {
      if (c == 0 || c == 0xFFFD || isControl(c)) {
        continue;
      }
      if (isWhitespace(c)) {
        out[n++] = ' ';
        continue;
      }
      int[] s = c < 0x80 ? new int[] {c} : stripped(c);
      if (n + s.length + 2 > out.length) {
        out = Arrays.copyOf(out, 2 * out.length + s.length + 2);
      }
      boolean cjk = isCjk(c);
      if (cjk) {
        out[n++] = ' ';
      }
      for (int d : s) {
        out[n++] = Character.toLowerCase(d);
      }
      if (cjk) {
        out[n++] = ' ';
      }
    }
    return Arrays.copyOf(out, n);
  }

  /** Words between spaces, each punctuation character a word of its own: [start, end) pairs. */
  private static List<int[]> splitWords(int[] text) {
    List<int[]> words = new ArrayList<>();
    int start = -1;
    for (int i = 0; i < text.length; i++) {
      int c = text[i];
      if (c == ' ' || isPunct(c)) {
        if (start >= 0) {
          words.add(new int[] {start, i});
          start = -1;
        }
        if (c != ' ') {
          words.add(new int[] {i, i + 1});
        }
      } else if (start < 0) {
        start = i;
      }
    }
    if (start >= 0) {
      words.add(new int[] {start, text.length});
    }
    return words;
  }

  /** Appends the pieces of text[from, to), or [UNK]. */
  private void addWord(List<Integer> out, int[] text, int from, int to) {
    if (to - from > MAX_WORD_CHARS) {
      out.add(unk);
      return;
    }
    int n = out.size();
    for (int start = from; start < to; ) {
      Integer found = null;
      int end = to;
      for (; end > start; end--) {
        String piece = new String(text, start, end - start);
        found = vocab.get(start > from ? "##" + piece : piece);
        if (found != null) {
          break;
        }
      }
      if (found == null) {
        out.subList(n, out.size()).clear();
        out.add(unk);
        return;
      }
      out.add(found);
      start = end;
    }
  }

  /** [CLS] ids... [SEP], at most maxLen ids. */
  int[] encode(String text) {
    List<Integer> ids = new ArrayList<>();
    int from = 0;
    while (true) {
      int at = text.length();
      String tok = null;
      for (int i = text.indexOf('[', from); i >= 0; i = text.indexOf('[', i + 1)) {
        for (String t : SPECIAL_TOKENS) {
          if (text.startsWith(t, i)) {
            tok = t;
            break;
          }
        }
        if (tok != null) {
          at = i;
          break;
        }
      }
      int[] norm = normalize(text.substring(from, at));
      for (int[] w : splitWords(norm)) {
        addWord(ids, norm, w[0], w[1]);
      }
      if (tok == null) {
        break;
      }
      ids.add(vocab.get(tok));
      from = at + tok.length();
    }
    int n = Math.min(ids.size(), maxLen - 2);
    int[] out = new int[n + 2];
    out[0] = cls;
    for (int i = 0; i < n; i++) {
      out[i + 1] = ids.get(i);
    }
    out[n + 1] = sep;
    return out;
  }
}
