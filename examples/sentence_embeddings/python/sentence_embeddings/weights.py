"""The encoder's tensors from model.safetensors, by name, with their shapes checked."""
import os

from .safetensors import SafeTensors


class Layer:
    pass


class Weights:
    def __init__(self, model_dir, cfg):
        st = SafeTensors(os.path.join(model_dir, "model.safetensors"))
        h, i = cfg.hidden_size, cfg.intermediate_size
        self.word = st.float32("embeddings.word_embeddings.weight", (cfg.vocab_size, h))
        self.position = st.float32("embeddings.position_embeddings.weight", (cfg.max_position_embeddings, h))
        self.token_type = st.float32("embeddings.token_type_embeddings.weight", (cfg.type_vocab_size, h))
        self.ln_w = st.float32("embeddings.LayerNorm.weight", (h,))
        self.ln_b = st.float32("embeddings.LayerNorm.bias", (h,))
        self.layers = []
        for n in range(cfg.num_hidden_layers):
            p = f"encoder.layer.{n}."
            L = Layer()
            L.q_w = st.float32(p + "attention.self.query.weight", (h, h))
            L.q_b = st.float32(p + "attention.self.query.bias", (h,))
            L.k_w = st.float32(p + "attention.self.key.weight", (h, h))
            L.k_b = st.float32(p + "attention.self.key.bias", (h,))
            L.v_w = st.float32(p + "attention.self.value.weight", (h, h))
            L.v_b = st.float32(p + "attention.self.value.bias", (h,))
            L.o_w = st.float32(p + "attention.output.dense.weight", (h, h))
            L.o_b = st.float32(p + "attention.output.dense.bias", (h,))
            L.ln1_w = st.float32(p + "attention.output.LayerNorm.weight", (h,))
            L.ln1_b = st.float32(p + "attention.output.LayerNorm.bias", (h,))
            L.ff1_w = st.float32(p + "intermediate.dense.weight", (i, h))
            L.ff1_b = st.float32(p + "intermediate.dense.bias", (i,))
            L.ff2_w = st.float32(p + "output.dense.weight", (h, i))
            L.ff2_b = st.float32(p + "output.dense.bias", (h,))
            L.ln2_w = st.float32(p + "output.LayerNorm.weight", (h,))
            L.ln2_b = st.float32(p + "output.LayerNorm.bias", (h,))
            self.layers.append(L)
