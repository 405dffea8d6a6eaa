"""The encoder: token ids of a batch -> L2-normalised mean-pooled embeddings.

Every arithmetic operation on tensors is a kernelbridge call, in the order
the README's "The computation" section specifies, so that the four
languages produce the same bits.  Python only lays out token ids, lengths,
row indices and the pooling weights (layout.py).
"""
import numpy as np

import kernelbridge as kb

from .layout import Layout

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
        lay = Layout(batch_ids)
        n, h, b, s = lay.n, cfg.hidden_size, lay.b, lay.s
        types = np.zeros(n, dtype=np.int32)

        # Rows of real tokens only ("packed", n rows), except around attention,
        # which reads the padded batch [b, s, heads, head_dim].
        x = kb.embedding(lay.ids, w.word, ctx=ctx)
        t = kb.embedding(types, w.token_type, ctx=ctx)
        kb.add(x, t, out=x, ctx=ctx)
        kb.embedding(lay.positions, w.position, out=t, ctx=ctx)
        kb.add(x, t, out=x, ctx=ctx)
        hid = kb.layernorm(x, w.ln_w, w.ln_b, eps=self.eps, ctx=ctx)

        q = np.empty((n, h), np.float32)
        k = np.empty_like(q)
        v = np.empty_like(q)
        a = np.empty_like(q)
        ff = np.empty((n, cfg.intermediate_size), np.float32)
        heads, d = cfg.num_attention_heads, cfg.head_dim
        qp = np.empty((b, s, heads, d), np.float32)
        kp = np.empty_like(qp)
        vp = np.empty_like(qp)
        ap = np.empty_like(qp)
        for L in w.layers:
            kb.linear(hid, L.q_w, L.q_b, out=q, act=NONE, ctx=ctx)
            kb.linear(hid, L.k_w, L.k_b, out=k, act=NONE, ctx=ctx)
            kb.linear(hid, L.v_w, L.v_b, out=v, act=NONE, ctx=ctx)
            kb.embedding(lay.to_padded, q, out=qp.reshape(b * s, h), ctx=ctx)
            kb.embedding(lay.to_padded, k, out=kp.reshape(b * s, h), ctx=ctx)
            kb.embedding(lay.to_padded, v, out=vp.reshape(b * s, h), ctx=ctx)
            kb.attention_ex(qp, kp, vp, lay.lengths, None, out=ap, seq_major=True, ctx=ctx)
            kb.embedding(lay.to_packed, ap.reshape(b * s, h), out=a, ctx=ctx)
            kb.linear(a, L.o_w, L.o_b, out=q, act=NONE, ctx=ctx)
            kb.add(q, hid, out=q, ctx=ctx)
            kb.layernorm(q, L.ln1_w, L.ln1_b, out=x, eps=self.eps, ctx=ctx)
            kb.linear(x, L.ff1_w, L.ff1_b, out=ff, act=GELU, ctx=ctx)
            kb.linear(ff, L.ff2_w, L.ff2_b, out=q, act=NONE, ctx=ctx)
            kb.add(q, x, out=q, ctx=ctx)
            kb.layernorm(q, L.ln2_w, L.ln2_b, out=hid, eps=self.eps, ctx=ctx)

        mean = kb.gemm(lay.pooling(), hid, ctx=ctx)
        return kb.rmsnorm(mean, self.l2_weight, eps=self.l2_eps, ctx=ctx)
