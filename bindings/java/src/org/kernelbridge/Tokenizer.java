package org.kernelbridge;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A SentencePiece-style ("llama") vocabulary and its tokenizer ({@code kb_tokenizer},
 * docs/tokenizer.md): the token ids of a text as llama.cpp gives them, and the text of ids.  The C
 * library does the work, so every binding gives the same ids.
 *
 * <pre>{@code
 * try (Tokenizer tok = new Tokenizer(pieces, scores, types, 1, 2, 0, true, false, true)) {
 *   int[] ids = tok.tokenize("Hello world", true, false);
 *   String text = tok.decode(ids, true, false);
 * }
 * }</pre>
 *
 * <p>Immutable and thread-safe; {@link #close()} waits for the calls in progress, is idempotent,
 * and later calls throw {@link IllegalStateException}.  Failures are {@link
 * KernelBridgeException}s whose message names the argument.  Hand-written (tools/kbgen lists its
 * functions in HANDWRITTEN): the raw layer's functions take the vocabulary as a byte blob and
 * offsets, built here from strings.
 */
public final class Tokenizer implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  /** Owns the native pointer; runs at most once (close or Cleaner). */
  private static final class Owner implements Runnable {
    final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    long address;

    Owner(long address) {
      this.address = address;
    }

    @Override
    public void run() {
      lock.writeLock().lock();
      try {
        if (address != 0) KernelBridgeNative.kb_tokenizer_destroy(address);
        address = 0;
      } finally {
        lock.writeLock().unlock();
      }
    }
  }

  private final Owner owner;
  private final Cleaner.Cleanable cleanable;
  private final boolean addSpacePrefix;

  /**
   * Builds a tokenizer (kb_tokenizer_create).
   *
   * @param pieces the token strings in id order (GGUF tokenizer.ggml.tokens)
   * @param scores one score per token (tokenizer.ggml.scores)
   * @param types one type per token (tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control, 4
   *     user-defined, 5 unused, 6 byte)
   * @param bosId the BOS token, -1 for none
   * @param eosId the EOS token, -1 for none
   * @param unkId the unknown token, -1 for none
   * @param addBos whether tokenize adds BOS (with addSpecial)
   * @param addEos whether tokenize adds EOS (with addSpecial)
   * @param addSpacePrefix whether a space is put before the text
   * @throws KernelBridgeException for an invalid vocabulary, naming the argument
   */
  public Tokenizer(String[] pieces, float[] scores, int[] types, long bosId, long eosId, long unkId, boolean addBos,
      boolean addEos, boolean addSpacePrefix) {
    Objects.requireNonNull(pieces, "pieces");
    Objects.requireNonNull(scores, "scores");
    Objects.requireNonNull(types, "types");
    NativeLoader.load();
    byte[][] encoded = new byte[pieces.length][];
    long total = 0;
    for (int i = 0; i < pieces.length; i++) {
      encoded[i] = Objects.requireNonNull(pieces[i], "pieces[i]").getBytes(StandardCharsets.UTF_8);
      total += encoded[i].length;
    }
    if (total > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("kb_tokenizer_create: the pieces take more than 2^31 bytes");
    }
    byte[] blob = new byte[(int) total];
    int[] offsets = new int[pieces.length + 1];
    for (int i = 0, at = 0; i < pieces.length; i++) {
      System.arraycopy(encoded[i], 0, blob, at, encoded[i].length);
      at += encoded[i].length;
      offsets[i + 1] = at;
    }
    if (types.length != scores.length) {
      throw new IllegalArgumentException("kb_tokenizer_create: types and scores have different lengths");
    }
    final long[] out = new long[1];
    KernelBridgeNative.kb_tokenizer_create(scores.length, blob.length, blob, offsets.length, offsets, scores, types,
        bosId, eosId, unkId, addBos, addEos, addSpacePrefix, out);
    this.owner = new Owner(out[0]);
    this.cleanable = CLEANER.register(this, owner);
    this.addSpacePrefix = addSpacePrefix;
  }

  /** Locks the tokenizer for one call and returns its address; {@link #done()} unlocks. */
  private long use() {
    owner.lock.readLock().lock();
    if (owner.address == 0) {
      owner.lock.readLock().unlock();
      throw new IllegalStateException("Tokenizer is closed");
    }
    return owner.address;
  }

  private void done() {
    owner.lock.readLock().unlock();
  }

  /** Whether {@link #close()} has freed the native object. */
  public boolean isClosed() {
    owner.lock.readLock().lock();
    try {
      return owner.address == 0;
    } finally {
      owner.lock.readLock().unlock();
    }
  }

  /** @return the vocabulary size */
  public long nTokens() {
    final long a = use();
    try {
      return KernelBridgeNative.kb_tokenizer_n_tokens(a);
    } finally {
      done();
    }
  }

  /** @return the BOS token id, -1 for none */
  public long bos() {
    final long a = use();
    try {
      return KernelBridgeNative.kb_tokenizer_bos(a);
    } finally {
      done();
    }
  }

  /** @return the EOS token id, -1 for none */
  public long eos() {
    final long a = use();
    try {
      return KernelBridgeNative.kb_tokenizer_eos(a);
    } finally {
      done();
    }
  }

  /**
   * The token ids of text, as llama.cpp's llama_tokenize (kb_tokenize).
   *
   * @param text the text (encoded as UTF-8)
   * @param addSpecial add the vocabulary's BOS / EOS
   * @param parseSpecial find control tokens in the text too
   * @return the ids
   */
  public int[] tokenize(String text, boolean addSpecial, boolean parseSpecial) {
    return tokenize(Objects.requireNonNull(text, "text").getBytes(StandardCharsets.UTF_8), addSpecial, parseSpecial);
  }

  /**
   * The token ids of any bytes (kb_tokenize).
   *
   * @param text the bytes
   * @param addSpecial add the vocabulary's BOS / EOS
   * @param parseSpecial find control tokens in the text too
   * @return the ids
   */
  public int[] tokenize(byte[] text, boolean addSpecial, boolean parseSpecial) {
    Objects.requireNonNull(text, "text");
    final long a = use();
    try {
      // Most text needs fewer tokens than bytes: one call, else a second one
      // with the count the first reported.
      int[] ids = new int[text.length + 2];
      final long[] count = new long[1];
      KernelBridgeNative.kb_tokenize(a, text.length, text, addSpecial, parseSpecial, ids.length, ids, count);
      if (count[0] > ids.length) {
        if (count[0] > Integer.MAX_VALUE - 8) throw new OutOfMemoryError("kb_tokenize: too many tokens");
        ids = new int[(int) count[0]];
        KernelBridgeNative.kb_tokenize(a, text.length, text, addSpecial, parseSpecial, ids.length, ids, count);
      }
      return count[0] == ids.length ? ids : Arrays.copyOf(ids, (int) count[0]);
    } finally {
      done();
    }
  }

  /**
   * The bytes a token stands for (kb_tokenizer_piece); a byte token's byte may be part of a UTF-8
   * character, see {@link Stream}.
   *
   * @param id the token
   * @param special show control tokens' text
   * @return the bytes
   */
  public byte[] piece(long id, boolean special) {
    final long a = use();
    try {
      byte[] buf = new byte[64];
      final long[] n = new long[1];
      KernelBridgeNative.kb_tokenizer_piece__i8(a, id, special, buf.length, buf, n);
      if (n[0] > buf.length) {
        buf = new byte[(int) n[0]];
        KernelBridgeNative.kb_tokenizer_piece__i8(a, id, special, buf.length, buf, n);
      }
      return Arrays.copyOf(buf, (int) n[0]);
    } finally {
      done();
    }
  }

  /**
   * The bytes of a token sequence, as llama.cpp's llama_detokenize (kb_detokenize).
   *
   * @param ids the tokens
   * @param removeSpecial drop a leading BOS and trailing EOS
   * @param unparseSpecial show control tokens' text
   * @return the bytes
   */
  public byte[] detokenize(int[] ids, boolean removeSpecial, boolean unparseSpecial) {
    Objects.requireNonNull(ids, "ids");
    final long a = use();
    try {
      final long[] n = new long[1];
      KernelBridgeNative.kb_detokenize(a, ids.length, ids, removeSpecial, unparseSpecial, 0, null, n);
      if (n[0] > Integer.MAX_VALUE - 8) throw new OutOfMemoryError("kb_detokenize: text too long");
      byte[] out = new byte[(int) n[0]];
      if (out.length > 0) {
        KernelBridgeNative.kb_detokenize(a, ids.length, ids, removeSpecial, unparseSpecial, out.length, out, n);
      }
      return out;
    } finally {
      done();
    }
  }

  /**
   * {@link #detokenize} as a String (invalid UTF-8 becomes U+FFFD).
   *
   * @param ids the tokens
   * @param removeSpecial drop a leading BOS and trailing EOS
   * @param unparseSpecial show control tokens' text
   * @return the text
   */
  public String decode(int[] ids, boolean removeSpecial, boolean unparseSpecial) {
    return new String(detokenize(ids, removeSpecial, unparseSpecial), StandardCharsets.UTF_8);
  }

  /**
   * A decoder for tokens that arrive one at a time (generation).
   *
   * @param special show control tokens' text
   * @return a new stream
   */
  public Stream stream(boolean special) {
    return new Stream(this, special);
  }

  /**
   * Turns token ids that arrive one at a time into text: {@link #feed} returns the text complete
   * so far and keeps back the bytes of a UTF-8 character split across byte tokens until the rest
   * arrives; {@link #flush} returns what is left.  The first piece loses its leading space when
   * the vocabulary adds a space prefix, as {@link #decode} does.  Not thread-safe.
   */
  public static final class Stream {
    private final Tokenizer tok;
    private final boolean special;
    private boolean first = true;
    private byte[] pending = new byte[0];

    Stream(Tokenizer tok, boolean special) {
      this.tok = tok;
      this.special = special;
    }

    /**
     * Adds one token.
     *
     * @param id the token
     * @return the text that is now complete
     */
    public String feed(long id) {
      byte[] piece = tok.piece(id, special);
      int skip = 0;
      if (first) {
        first = false;
        if (tok.addSpacePrefix && piece.length > 0 && piece[0] == ' ') skip = 1;
      }
      byte[] all = Arrays.copyOf(pending, pending.length + piece.length - skip);
      System.arraycopy(piece, skip, all, pending.length, piece.length - skip);
      int cut = incompleteTail(all);
      pending = Arrays.copyOfRange(all, cut, all.length);
      return new String(all, 0, cut, StandardCharsets.UTF_8);
    }

    /** @return the bytes still held back, decoded (an incomplete character as U+FFFD) */
    public String flush() {
      String out = new String(pending, StandardCharsets.UTF_8);
      pending = new byte[0];
      return out;
    }

    /** Where a UTF-8 sequence begun but not finished by the last bytes of p starts, or p.length. */
    static int incompleteTail(byte[] p) {
      for (int k = 1; k <= 3 && k <= p.length; k++) {
        int b = p[p.length - k] & 0xFF;
        if (b < 0x80) break;
        if (b >= 0xC0) {
          int need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
          if (need > k) return p.length - k;
          break;
        }
      }
      return p.length;
    }
  }

  /** Frees the native object after the calls in progress; idempotent. */
  @Override
  public void close() {
    cleanable.clean();
  }
}
