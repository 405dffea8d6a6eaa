package org.kernelbridge.examples.textgen;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import org.kernelbridge.Backend;
import org.kernelbridge.Context;
import org.kernelbridge.Gguf;
import org.kernelbridge.KernelBridgeException;
import org.kernelbridge.Tokenizer;

/**
 * Text generation from a GGUF model on kernelbridge's kernels: the Java port of the C driver
 * (../c/main.c), with the same options, the same kernel calls and byte-identical standard output.
 *
 * <pre>
 * generate --model FILE (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N]
 *          [--temperature T] [--top-k K | --top-p P] [--seed S] [--threads N]
 *          [--print-ids] [--print-prompt-ids] [--logits-out FILE]
 * </pre>
 *
 * Exit status 0, 1 for a problem with the model, the prompt or a kernel call ("error: ..." naming
 * it), 2 for bad options.  The JVM decodes arguments with the locale's character set: the launcher
 * sets a UTF-8 locale, and the prompt's bytes are taken from /proc/self/cmdline (RawArgs), so that
 * the tokenizer sees the bytes C would see even where they are not valid UTF-8.
 */
public final class Main {
  private Main() {}

  private static int run(String[] args, Options o, PrintStream err) throws GenerateException, IOException {
    try (Context ctx = context(o.threads);
        Gguf g = open(ctx, o.model);
        Tokenizer tok = Vocabulary.fromGguf(g)) {
      // The prompt: its ids, with BOS as the vocabulary says.
      int[] prompt;
      if (o.prompt != null) {
        try {
          prompt = tok.tokenize(RawArgs.of(args, o.promptArg), true, false);
        } catch (KernelBridgeException e) {
          throw new GenerateException(e.getMessage());
        }
      } else {
        prompt = Options.parseIds(o.promptIds);
      }
      int nPrompt = prompt.length;
      if (nPrompt == 0) {
        throw new GenerateException("the prompt has no tokens");
      }
      Output out = new Output(tok);
      if (o.printPromptIds) {
        out.text(Output.ids(prompt, 0, nPrompt) + "\n");
      }
      Model m = new Model(g);
      Decoder d = new Decoder(ctx, m, nPrompt);
      if (nPrompt + o.maxTokens > m.context) {
        throw new GenerateException(nPrompt + " prompt tokens + " + o.maxTokens
            + " new ones exceed the model's context of " + m.context);
      }
      int logitRows = o.logitsOut != null ? nPrompt : 1;
      ByteBuffer logitBytes = Decoder.bytes(4L * m.vocab * logitRows);
      FloatBuffer logits = logitBytes.asFloatBuffer();
      long t0 = System.nanoTime();
      d.prefill(prompt, o.logitsOut != null, logits);
      double tPrefill = (System.nanoTime() - t0) * 1e-9;
      if (o.logitsOut != null) {
        writeLogits(o.logitsOut, logitBytes);
      }
      // The last prompt token's logits, then each decode step's (the first vocab floats).
      FloatBuffer first = logits.slice(0, m.vocab);
      FloatBuffer last = logits.slice((logitRows - 1) * m.vocab, m.vocab);
      Sampler sampler = new Sampler(ctx, m.vocab, o);
      long eos = tok.eos();
      // max_tokens <= context here, so the generated ids fit an int[].
      int[] generated = new int[(int) Math.max(o.maxTokens, 0)];
      int produced = 0;
      double tDecode = 0;
      for (long step = 0; step < o.maxTokens; step++) {
        int next = sampler.pick(last, step);
        generated[produced++] = next;
        if (next == eos) {
          break;
        }
        if (!o.printIds) {
          out.piece(next);
        }
        if (step + 1 == o.maxTokens) {
          break;
        }
        long t1 = System.nanoTime();
        d.step(next, first);
        tDecode += (System.nanoTime() - t1) * 1e-9;
        last = first;
      }
      if (o.printIds) {
        out.text(Output.ids(generated, 0, produced));
      }
      out.text("\n");
      out.flush();
      int decoded = produced > 1 ? produced - 1 : 0;
      err.println(String.format(Locale.ROOT, "prefill: %d tokens, %.1f tokens/s; decode: %d tokens, %.1f tokens/s",
          nPrompt, nPrompt / tPrefill, decoded, produced > 1 && tDecode > 0 ? decoded / tDecode : 0.0));
      return 0;
    }
  }

  private static Context context(long threads) throws GenerateException {
    try {
      return new Context(Backend.CPU, (int) threads);
    } catch (KernelBridgeException e) {
      throw new GenerateException(e.getMessage());
    }
  }

  private static Gguf open(Context ctx, String path) throws GenerateException {
    try {
      return Gguf.open(ctx, path);
    } catch (KernelBridgeException e) {
      throw new GenerateException(e.getMessage());
    }
  }

  /** The prompt's logits as float32 little-endian [prompt tokens, vocab]. */
  private static void writeLogits(String path, ByteBuffer bytes) throws GenerateException {
    ByteBuffer b = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    b.clear();
    try (FileChannel f = FileChannel.open(Paths.get(path), StandardOpenOption.WRITE, StandardOpenOption.CREATE,
        StandardOpenOption.TRUNCATE_EXISTING)) {
      while (b.hasRemaining()) {
        f.write(b);
      }
    } catch (IOException | RuntimeException e) {
      throw new GenerateException("cannot write " + path);
    }
  }

  public static void main(String[] args) {
    PrintStream err = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
    int status;
    try {
      Options o = Options.parse(args);
      status = run(args, o, err);
    } catch (UsageException e) {
      err.println("error: " + e.getMessage());
      err.println(Options.USAGE);
      status = 2;
    } catch (GenerateException e) {
      err.println("error: " + e.getMessage());
      status = 1;
    } catch (IOException e) {
      err.println("error: writing the output: " + e.getMessage());
      status = 1;
    } catch (KernelBridgeException e) {
      err.println("error: kernelbridge: " + e.getMessage());
      status = 1;
    } catch (OutOfMemoryError e) {
      err.println("error: out of memory: " + e.getMessage());
      status = 1;
    } catch (RuntimeException e) {
      // A bug, not a user's mistake: still one line and status 1, never a stack trace.
      err.println("error: internal: " + e);
      status = 1;
    }
    System.exit(status);
  }
}
