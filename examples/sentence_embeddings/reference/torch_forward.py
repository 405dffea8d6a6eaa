"""all-MiniLM-L6-v2 with PyTorch operations: the benchmark's peer
(bench.sh), written from the BERT definition with torch.nn.functional
(float32, a padded batch with an attention mask, mean pooling, L2
normalisation).  Optional: nothing requires PyTorch; reference_test checks
it against the float64 reference when it is installed.
"""
import json
import mmap
import os
import struct

import torch
import torch.nn.functional as F


class TorchMiniLM:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = json.load(f)
        path = os.path.join(model_dir, "model.safetensors")
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        (n,) = struct.unpack("<Q", self._map[:8])
        header = json.loads(self._map[8 : 8 + n])
        self.t = {}
        for name, info in header.items():
            if name == "__metadata__" or info["dtype"] != "F32":
                continue
            lo, hi = info["data_offsets"]
            data = bytearray(self._map[8 + n + lo : 8 + n + hi])  # a writable copy for torch
            self.t[name] = torch.frombuffer(data, dtype=torch.float32).reshape(info["shape"])

    @torch.inference_mode()
    def embed(self, batch_ids):
        """Lists of token ids -> float32 tensor [len(batch_ids), hidden] of unit rows."""
        t, cfg = self.t, self.cfg
        b = len(batch_ids)
        s = max(len(x) for x in batch_ids)
        ids = torch.zeros(b, s, dtype=torch.long)
        mask = torch.zeros(b, s, dtype=torch.bool)
        for i, x in enumerate(batch_ids):
            ids[i, : len(x)] = torch.tensor(x)
            mask[i, : len(x)] = True
        eps = cfg["layer_norm_eps"]
        h = cfg["hidden_size"]
        nh = cfg["num_attention_heads"]
        x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.token_type_embeddings.weight"][0]
        x = x + t["embeddings.position_embeddings.weight"][:s]
        x = F.layer_norm(x, (h,), t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)
        attn_mask = mask[:, None, None, :]  # keys of each sentence
        for i in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}."

            def lin(z, name):
                return F.linear(z, t[p + name + ".weight"], t[p + name + ".bias"])

            def heads(z):
                return z.view(b, s, nh, h // nh).transpose(1, 2)

            q, k, v = (heads(lin(x, "attention.self." + n)) for n in ("query", "key", "value"))
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask).transpose(1, 2).reshape(b, s, h)
            x = F.layer_norm(lin(a, "attention.output.dense") + x, (h,),
                             t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"], eps)
            f = F.gelu(lin(x, "intermediate.dense"))
            x = F.layer_norm(lin(f, "output.dense") + x, (h,),
                             t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"], eps)
        m = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, p=2, dim=1)
