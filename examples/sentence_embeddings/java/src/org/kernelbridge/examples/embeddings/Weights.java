package org.kernelbridge.examples.embeddings;

import java.nio.FloatBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The encoder's tensors from model.safetensors, by name, with their shapes checked. */
final class Weights {
  /** One encoder layer's tensors. */
  static final class Layer {
    FloatBuffer qW, qB, kW, kB, vW, vB, oW, oB, ln1W, ln1B, ff1W, ff1B, ff2W, ff2B, ln2W, ln2B;
  }

  final FloatBuffer word, position, tokenType, lnW, lnB;
  final List<Layer> layers = new ArrayList<>();

  Weights(Path dir, Config c) throws ModelException {
    SafeTensors st = new SafeTensors(dir.resolve("model.safetensors"));
    long h = c.hidden, in = c.intermediate;
    word = st.float32("embeddings.word_embeddings.weight", c.vocabSize, h);
    position = st.float32("embeddings.position_embeddings.weight", c.maxPositions, h);
    tokenType = st.float32("embeddings.token_type_embeddings.weight", c.typeVocab, h);
    lnW = st.float32("embeddings.LayerNorm.weight", h);
    lnB = st.float32("embeddings.LayerNorm.bias", h);
    for (int n = 0; n < c.layers; n++) {
      String p = "encoder.layer." + n + ".";
      Layer l = new Layer();
      l.qW = st.float32(p + "attention.self.query.weight", h, h);
      l.qB = st.float32(p + "attention.self.query.bias", h);
      l.kW = st.float32(p + "attention.self.key.weight", h, h);
      l.kB = st.float32(p + "attention.self.key.bias", h);
      l.vW = st.float32(p + "attention.self.value.weight", h, h);
      l.vB = st.float32(p + "attention.self.value.bias", h);
      l.oW = st.float32(p + "attention.output.dense.weight", h, h);
      l.oB = st.float32(p + "attention.output.dense.bias", h);
      l.ln1W = st.float32(p + "attention.output.LayerNorm.weight", h);
      l.ln1B = st.float32(p + "attention.output.LayerNorm.bias", h);
      l.ff1W = st.float32(p + "intermediate.dense.weight", in, h);
      l.ff1B = st.float32(p + "intermediate.dense.bias", in);
      l.ff2W = st.float32(p + "output.dense.weight", h, in);
      l.ff2B = st.float32(p + "output.dense.bias", h);
      l.ln2W = st.float32(p + "output.LayerNorm.weight", h);
      l.ln2B = st.float32(p + "output.LayerNorm.bias", h);
      layers.add(l);
    }
  }
}
