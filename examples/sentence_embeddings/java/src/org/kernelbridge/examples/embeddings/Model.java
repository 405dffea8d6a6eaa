package org.kernelbridge.examples.embeddings;

import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.kernelbridge.Backend;
import org.kernelbridge.Context;

/** A loaded model: configuration, tokeniser and encoder from one model folder. */
public final class Model implements AutoCloseable {
  final Config config;
  private final WordPiece tokenizer;
  private final Context ctx;
  private final Encoder encoder;

  public Model(Path dir, int threads) throws ModelException {
    if (!Files.isDirectory(dir)) {
      throw new ModelException(dir + ": not a directory (the model folder holding model.safetensors)");
    }
    config = new Config(dir);
    tokenizer = new WordPiece(Vocab.read(dir.resolve("vocab.txt"), config.vocabSize), config.maxSeqLength);
    Weights weights = new Weights(dir, config);
    ctx = new Context(Backend.CPU, threads);
    encoder = new Encoder(config, weights, ctx);
  }

  public int hidden() {
    return config.hidden;
  }

  public List<int[]> tokenize(List<String> texts) {
    List<int[]> out = new ArrayList<>(texts.size());
    for (String t : texts) {
      out.add(tokenizer.encode(t));
    }
    return out;
  }

  /** texts.size() unit vectors of hidden() floats, row after row. */
  public FloatBuffer embed(List<String> texts) throws ModelException {
    if (texts.isEmpty()) {
      throw new ModelException("no sentences to embed");
    }
    return encoder.embed(tokenize(texts));
  }

  /** Cosine similarities: the embeddings are unit vectors, so E E^T. */
  public FloatBuffer similarity(FloatBuffer embeddings, int n) {
    return encoder.similarity(embeddings, n);
  }

  @Override
  public void close() {
    ctx.close();
  }
}
