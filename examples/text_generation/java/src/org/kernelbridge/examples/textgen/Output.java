package org.kernelbridge.examples.textgen;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Tokenizer;

/**
 * Standard output as raw bytes: the generated text is the bytes of each token's piece
 * (kb_tokenizer_piece, special = false), written and flushed as each token comes.  Pieces are never
 * decoded to a String: a byte-fallback token may hold part of a UTF-8 character.
 */
final class Output {
  private final OutputStream out = new FileOutputStream(FileDescriptor.out);
  private final Tokenizer tok;
  /** Each id's piece, fetched on the id's first use so that later steps allocate nothing. */
  private final byte[][] pieces;

  Output(Tokenizer tok) {
    this.tok = tok;
    this.pieces = new byte[(int) Math.min(tok.nTokens(), Integer.MAX_VALUE)][];
  }

  /** Writes id's piece and flushes; an id the vocabulary lacks writes nothing, as in C. */
  void piece(int id) throws IOException {
    if (id < 0 || id >= pieces.length) {
      return;
    }
    byte[] p = pieces[id];
    if (p == null) {
      try {
        p = tok.piece(id, false);
      } catch (KernelBridgeException e) {
        p = new byte[0];
      }
      pieces[id] = p;
    }
    out.write(p);
    out.flush();
  }

  void text(String s) throws IOException {
    out.write(s.getBytes(StandardCharsets.UTF_8));
  }

  /** Comma-separated ids, as C's printf("%s%d", i ? "," : "", id). */
  static String ids(int[] ids, int from, int to) {
    StringBuilder b = new StringBuilder();
    for (int i = from; i < to; i++) {
      if (i > from) {
        b.append(',');
      }
      b.append(ids[i]);
    }
    return b.toString();
  }

  void flush() throws IOException {
    out.flush();
  }
}
