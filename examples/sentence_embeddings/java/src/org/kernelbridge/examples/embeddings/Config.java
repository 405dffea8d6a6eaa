package org.kernelbridge.examples.embeddings;

import java.nio.file.Path;
import java.util.Map;

/** The model's JSON configuration files, checked. */
final class Config {
  final int vocabSize, hidden, layers, heads, intermediate, maxPositions, typeVocab, headDim;
  final int maxSeqLength;
  final double layerNormEps;

  Config(Path dir) throws ModelException {
    Path path = dir.resolve("config.json");
    Map<String, Object> doc = ModelFiles.readJsonObject(path, true);
    vocabSize = positive(doc, "vocab_size", path);
    hidden = positive(doc, "hidden_size", path);
    layers = positive(doc, "num_hidden_layers", path);
    heads = positive(doc, "num_attention_heads", path);
    intermediate = positive(doc, "intermediate_size", path);
    maxPositions = positive(doc, "max_position_embeddings", path);
    typeVocab = positive(doc, "type_vocab_size", path);
    Object eps = doc.get("layer_norm_eps");
    double e = eps instanceof Json.Number ? ((Json.Number) eps).asDouble() : Double.NaN;
    if (!(e >= 0 && e < 1)) {
      throw new ModelException(path + ": layer_norm_eps must be a number in [0, 1), got " + Json.brief(eps));
    }
    layerNormEps = e;
    if (!"gelu".equals(doc.get("hidden_act"))) {
      throw new ModelException(path + ": hidden_act must be \"gelu\", got " + Json.brief(doc.get("hidden_act")));
    }
    if (doc.containsKey("position_embedding_type") && !"absolute".equals(doc.get("position_embedding_type"))) {
      throw new ModelException(path + ": position_embedding_type must be \"absolute\"");
    }
    if (hidden % heads != 0) {
      throw new ModelException(path + ": hidden_size " + hidden + " is not a multiple of num_attention_heads " + heads);
    }
    headDim = hidden / heads;

    int maxSeq = maxPositions;
    Path stPath = dir.resolve("sentence_bert_config.json");
    Map<String, Object> st = ModelFiles.readJsonObject(stPath, false);
    if (st != null && st.containsKey("max_seq_length")) {
      Long v = ModelFiles.asLong(st.get("max_seq_length"));
      if (v == null || v < 2 || v > maxPositions) {
        throw new ModelException(stPath + ": max_seq_length must be an integer in [2, " + maxPositions + "], got "
            + Json.brief(st.get("max_seq_length")));
      }
      maxSeq = (int) (long) v;
    }
    maxSeqLength = maxSeq;

    Path tcPath = dir.resolve("tokenizer_config.json");
    Map<String, Object> tc = ModelFiles.readJsonObject(tcPath, false);
    if (tc != null && tc.containsKey("do_lower_case") && !Boolean.TRUE.equals(tc.get("do_lower_case"))) {
      throw new ModelException(tcPath + ": do_lower_case is not true; only uncased tokenisers are supported");
    }
    Path poolPath = dir.resolve("1_Pooling").resolve("config.json");
    Map<String, Object> pool = ModelFiles.readJsonObject(poolPath, false);
    if (pool != null && !Boolean.TRUE.equals(pool.get("pooling_mode_mean_tokens"))) {
      throw new ModelException(poolPath + ": pooling_mode_mean_tokens is not true; only mean pooling is supported");
    }
  }

  private static int positive(Map<String, Object> doc, String key, Path path) throws ModelException {
    Long v = ModelFiles.asLong(doc.get(key));
    if (v == null || v <= 0 || v > (1 << 30)) {
      throw new ModelException(path + ": " + key + " must be a positive integer, got " + Json.brief(doc.get(key)));
    }
    return (int) (long) v;
  }
}
