"""The model's JSON configuration files, checked."""
import json
import os

from .errors import ModelError

REQUIRED_INTS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "max_position_embeddings", "type_vocab_size")


def read_json(path, required):
    """The JSON object in path; None when the file is absent and not required."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        if required:
            raise ModelError(f"{path}: missing") from None
        return None
    except OSError as e:
        raise ModelError(f"{path}: cannot read: {e.strerror}") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ModelError(f"{path}: not a JSON object")
    return doc


class Config:
    """Sizes of the encoder (config.json) and the tokeniser's limits."""

    def __init__(self, model_dir):
        path = os.path.join(model_dir, "config.json")
        doc = read_json(path, True)
        for key in REQUIRED_INTS:
            v = doc.get(key)
            if type(v) is not int or not 0 < v <= 1 << 30:
                raise ModelError(f"{path}: {key} must be a positive integer, got {v!r}")
            setattr(self, key, v)
        eps = doc.get("layer_norm_eps")
        if type(eps) not in (int, float) or not 0 <= eps < 1:
            raise ModelError(f"{path}: layer_norm_eps must be a number in [0, 1), got {eps!r}")
        # float64 from the JSON text, then rounded once to float32 (every language).
        self.layer_norm_eps = float(eps)
        if doc.get("hidden_act") != "gelu":
            raise ModelError(f"{path}: hidden_act must be \"gelu\", got {doc.get('hidden_act')!r}")
        if doc.get("position_embedding_type", "absolute") != "absolute":
            raise ModelError(f"{path}: position_embedding_type must be \"absolute\"")
        if self.hidden_size % self.num_attention_heads:
            raise ModelError(f"{path}: hidden_size {self.hidden_size} is not a multiple of "
                             f"num_attention_heads {self.num_attention_heads}")
        self.head_dim = self.hidden_size // self.num_attention_heads

        st_path = os.path.join(model_dir, "sentence_bert_config.json")
        st = read_json(st_path, False)
        self.max_seq_length = self.max_position_embeddings
        if st is not None and "max_seq_length" in st:
            v = st["max_seq_length"]
            if type(v) is not int or not 2 <= v <= self.max_position_embeddings:
                raise ModelError(f"{st_path}: max_seq_length must be an integer in "
                                 f"[2, {self.max_position_embeddings}], got {v!r}")
            self.max_seq_length = v

        tc_path = os.path.join(model_dir, "tokenizer_config.json")
        tc = read_json(tc_path, False)
        if tc is not None and tc.get("do_lower_case", True) is not True:
            raise ModelError(f"{tc_path}: do_lower_case is not true; only uncased tokenisers are supported")

        pool_path = os.path.join(model_dir, "1_Pooling", "config.json")
        pool = read_json(pool_path, False)
        if pool is not None and pool.get("pooling_mode_mean_tokens") is not True:
            raise ModelError(f"{pool_path}: pooling_mode_mean_tokens is not true; only mean pooling is supported")
