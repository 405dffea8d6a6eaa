"""The encoder: token ids of a batch -> L2-normalised mean-pooled embeddings.

Every arithmetic operation on tensors is a kernelbridge call, in the order
the README's "The computation" section specifies, so that the four
languages produce the same bits.  Python only lays out token ids, lengths
and the pooling weights.
"""
import numpy as np

import kernelbridge as kb

NONE = kb.Activation.NONE
GELU = kb.Activation.GELU


class Encoder:
    def __init__(self, cfg, weights, ctx):
        self.cfg, self.w, self.ctx = cfg, weights, ctx
        h = cfg.hidden_size
        self.eps = float(np.float32(cfg.layer_norm_eps))
        # L2 normalisation as RMSNorm: x / sqrt(mean(x^2) + eps) * (1 / sqrt(h)).
        self.l2_weight = np.full(h, np.float32(1.0 / np.sqrt(np.float64(h))), dtype=np.float32)
        self.l2_eps = float(np.float32(1e-24 / h))

    def embed(self, batch_ids):
        """batch_ids: lists of token ids -> float32 array [len(batch_ids), hidden]."""
        cfg, w, ctx = self.cfg, self.w, self.ctx
        b = len(batch_ids)
        lengths = np.array([len(ids) for ids in batch_ids], dtype=np.int32)
        s = int(lengths.max())
        rows, h = b * s, cfg.hidden_size
        ids = np.zeros((b, s), dtype=np.int32)  # padding: id 0 ([PAD])
        for r, seq in enumerate(batch_ids):
            ids[r, : len(seq)] = seq
        ids = ids.reshape(rows)
        positions = np.tile(np.arange(s, dtype=np.int32), b)
        types = np.zeros(rows, dtype=np.int32)

        x = kb.embedding(ids, w.word, ctx=ctx)
        t = kb.embedding(types, w.token_type, ctx=ctx)
        kb.add(x, t, out=x, ctx=ctx)
        kb.embedding(positions, w.position, out=t, ctx=ctx)
        kb.add(x, t, out=x, ctx=ctx)
        hid = kb.layernorm(x, w.ln_w, w.ln_b, eps=self.eps, ctx=ctx)

        q = np.empty((rows, h), np.float32)
        k = np.empty_like(q)
        v = np.empty_like(q)
        att = np.empty_like(q)
        ff = np.empty((rows, cfg.intermediate_size), np.float32)
        heads, d = cfg.num_attention_heads, cfg.head_dim
        for L in w.layers:
            kb.linear(hid, L.q_w, L.q_b, out=q, act=NONE, ctx=ctx)
            kb.linear(hid, L.k_w, L.k_b, out=k, act=NONE, ctx=ctx)
            kb.linear(hid, L.v_w, L.v_b, out=v, act=NONE, ctx=ctx)
            kb.attention_ex(q.reshape(b, s, heads, d), k.reshape(b, s, heads, d), v.reshape(b, s, heads, d),
                            lengths, None, out=att.reshape(b, s, heads, d), seq_major=True,
                            mask_batch=1, mask_heads=1, mask_q=1, ctx=ctx)
            kb.linear(att, L.o_w, L.o_b, out=q, act=NONE, ctx=ctx)
            kb.add(q, hid, out=q, ctx=ctx)
            kb.layernorm(q, L.ln1_w, L.ln1_b, out=x, eps=self.eps, ctx=ctx)
            kb.linear(x, L.ff1_w, L.ff1_b, out=ff, act=GELU, ctx=ctx)
            kb.linear(ff, L.ff2_w, L.ff2_b, out=q, act=NONE, ctx=ctx)
            kb.add(q, x, out=q, ctx=ctx)
            kb.layernorm(q, L.ln2_w, L.ln2_b, out=hid, eps=self.eps, ctx=ctx)

        pool = pooling_matrix(lengths, s)
        mean = kb.gemm(pool, hid, ctx=ctx)
        return kb.rmsnorm(mean, self.l2_weight, eps=self.l2_eps, ctx=ctx)


def pooling_matrix(lengths, s):
    """[b, b*s]: row r holds float32(1 / lengths[r]) over its own tokens, 0 elsewhere."""
    b = len(lengths)
    p = np.zeros((b, b * s), dtype=np.float32)
    for r, n in enumerate(lengths):
        p[r, r * s : r * s + int(n)] = np.float32(1.0 / float(n))
    return p
