package org.kernelbridge.examples.embeddings;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** vocab.txt: one token per line, its id the line number (from 0). */
final class Vocab {
  private Vocab() {}

  static Map<String, Integer> read(Path path, int vocabSize) throws ModelException {
    String text = ModelFiles.utf8(ModelFiles.read(path));
    if (text == null) {
      throw new ModelException(path + ": not UTF-8");
    }
    String[] lines = text.split("\n", -1);
    int n = lines.length;
    if (lines[n - 1].isEmpty()) {
      n--; // the newline ending the last line
    }
    if (n != vocabSize) {
      throw new ModelException(path + ": " + n + " tokens, config.json says vocab_size " + vocabSize);
    }
    Map<String, Integer> vocab = new HashMap<>(2 * n);
    for (int i = 0; i < n; i++) {
      vocab.put(lines[i], i); // a repeated token keeps its last id
    }
    for (String tok : WordPiece.SPECIAL_TOKENS) {
      if (!vocab.containsKey(tok)) {
        throw new ModelException(path + ": special token " + tok + " is missing");
      }
    }
    return vocab;
  }
}
