package org.kernelbridge.examples.textgen;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * The bytes of a command-line argument as the C driver sees them.  The JVM hands main() Strings
 * decoded from the locale's character set, so bytes that are not valid UTF-8 would reach the
 * tokenizer as U+FFFD; on Linux /proc/self/cmdline still holds the raw bytes, whose last entries are
 * the program's arguments.  They are used only when they agree with the Strings (every valid UTF-8
 * entry decodes to its String); otherwise, or without /proc, the String's UTF-8 encoding is used.
 */
final class RawArgs {
  private RawArgs() {}

  static byte[] of(String[] args, int index) {
    byte[] fallback = args[index].getBytes(StandardCharsets.UTF_8);
    List<byte[]> entries;
    try {
      entries = split(Files.readAllBytes(Paths.get("/proc/self/cmdline")));
    } catch (IOException | RuntimeException e) {
      return fallback;
    }
    List<byte[]> mine = match(entries, args);
    return mine == null ? fallback : mine.get(index);
  }

  /** The entries of a NUL-terminated list. */
  static List<byte[]> split(byte[] cmdline) {
    List<byte[]> out = new ArrayList<>();
    int start = 0;
    for (int i = 0; i < cmdline.length; i++) {
      if (cmdline[i] == 0) {
        byte[] e = new byte[i - start];
        System.arraycopy(cmdline, start, e, 0, e.length);
        out.add(e);
        start = i + 1;
      }
    }
    return out;
  }

  /** The last args.length entries, if they are args' bytes; else null. */
  static List<byte[]> match(List<byte[]> entries, String[] args) {
    if (entries.size() < args.length) {
      return null;
    }
    List<byte[]> mine = entries.subList(entries.size() - args.length, entries.size());
    for (int i = 0; i < args.length; i++) {
      String decoded;
      try {
        decoded = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(mine.get(i))).toString();
      } catch (CharacterCodingException e) {
        continue; // not UTF-8: the String holds replacement characters, the bytes are the truth
      }
      if (!decoded.equals(args[i])) {
        return null;
      }
    }
    return mine;
  }
}
