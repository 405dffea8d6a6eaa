"""An independent float64 implementation of the all-MiniLM-L6-v2 sentence
encoder, the golden reference of the examples' tests.

Written from the definitions, not from the examples: BERT (Devlin et al.,
2019) as in the published checkpoint (post-layer-norm residual blocks,
exact erf GELU, absolute position embeddings), sentence-transformers' mean
pooling over the attention mask followed by L2 normalisation.  Everything
is float64 and one sentence is encoded at a time, so there is no padding.
It uses only numpy and takes token ids (the shared token-id file's), not
text.
"""
import json
import math
import os
import struct

import numpy as np


def erf(x):
    """erf in float64 from the series erf(x) = 2x/sqrt(pi) exp(-x^2) sum_n (2x^2)^n / (2n+1)!!
    (all terms positive, so no cancellation); |x| >= 6 gives +-1 (erfc(6) < 3e-17)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.minimum(np.abs(x), 6.0).ravel()
    two_a2 = 2.0 * a * a
    term = np.ones_like(a)
    total = np.ones_like(a)
    live = np.arange(a.size)  # elements whose series has not converged yet
    n = 0
    while live.size:
        n += 1
        t = term[live] * (two_a2[live] / (2 * n + 1))
        term[live] = t
        total[live] += t
        live = live[t > 1e-17 * total[live]]
    r = (2.0 / math.sqrt(math.pi) * a * np.exp(-a * a) * total).reshape(x.shape)
    return np.where(np.abs(x) >= 6.0, 1.0, r) * np.sign(x)


def load_tensors(path):
    """name -> float64 array for every F32 tensor of a safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    (hlen,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8 : 8 + hlen])
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        lo, hi = info["data_offsets"]
        arr = np.frombuffer(blob[base + lo : base + hi], dtype="<f4")
        out[name] = arr.astype(np.float64).reshape(info["shape"])
    return out


class Bert:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = json.load(f)
        self.t = load_tensors(os.path.join(model_dir, "model.safetensors"))

    def _layer_norm(self, x, prefix):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        y = (x - mu) / np.sqrt(var + self.cfg["layer_norm_eps"])
        return y * self.t[prefix + ".weight"] + self.t[prefix + ".bias"]

    def _dense(self, x, prefix):
        return x @ self.t[prefix + ".weight"].T + self.t[prefix + ".bias"]

    def _self_attention(self, x, prefix):
        n = x.shape[0]
        nh = self.cfg["num_attention_heads"]
        dh = self.cfg["hidden_size"] // nh

        q = self._dense(x, prefix + ".query")
        k = self._dense(x, prefix + ".key")
        v = self._dense(x, prefix + ".value")
        out = np.empty_like(q)
        for h in range(nh):  # head h owns columns [h*dh, (h+1)*dh)
            cols = slice(h * dh, (h + 1) * dh)
            scores = q[:, cols] @ k[:, cols].T / math.sqrt(dh)
            scores -= scores.max(axis=-1, keepdims=True)
            p = np.exp(scores)
            p /= p.sum(axis=-1, keepdims=True)
            out[:, cols] = p @ v[:, cols]
        return out

    def hidden_states(self, ids):
        """The last layer's output for one sentence's token ids: [n, hidden]."""
        t = self.t
        n = len(ids)
        x = (t["embeddings.word_embeddings.weight"][ids]
             + t["embeddings.position_embeddings.weight"][:n]
             + t["embeddings.token_type_embeddings.weight"][0])
        x = self._layer_norm(x, "embeddings.LayerNorm")
        for i in range(self.cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}"
            a = self._self_attention(x, p + ".attention.self")
            x = self._layer_norm(self._dense(a, p + ".attention.output.dense") + x, p + ".attention.output.LayerNorm")
            inner = self._dense(x, p + ".intermediate.dense")
            inner = 0.5 * inner * (1.0 + erf(inner / math.sqrt(2.0)))
            x = self._layer_norm(self._dense(inner, p + ".output.dense") + x, p + ".output.LayerNorm")
        return x

    def sentence_embedding(self, ids):
        """Mean over the tokens, then divided by its Euclidean norm."""
        mean = self.hidden_states(ids).mean(axis=0)
        return mean / max(np.linalg.norm(mean), 1e-12)

    def embed(self, batch_ids):
        return np.stack([self.sentence_embedding(ids) for ids in batch_ids])
