"""A Llama-architecture decoder (dense, or with experts as Mixtral) read
from a GGUF file and run on kernelbridge's kernels.

The same kernels, in the same order and with the same arguments, as the C
driver's c/model.c, so the logits are the same bits:
  h = rmsnorm(x) * attn_norm
  q, k, v = h Wq^T, h Wk^T, h Wv^T; rope on q and k (adjacent pairs, as
    GGUF's permuted q / k weights need)
  append k, v to the cache; a = attention of q over the cache (causal,
    aligned bottom-right)
  x += a Wo^T; h = rmsnorm(x) * ffn_norm            (add_rmsnorm)
  dense:   f = (silu(h Wg^T) * (h Wu^T)) Wd^T       (linear_glu_w, linear_w)
  experts: softmax of h Wr^T, top experts_used, renormalised; f = the
           weighted sum of those experts' SwiGLU blocks (moe_route, moe_experts)
  x += f, fused into the next layer's (or the output) norm.
Logits = (rmsnorm(x) * output_norm) Wout^T; Wout = token_embd when the file
has no output.weight.

Every buffer is allocated once, at load: a forward call passes views of
them to the kernels (numpy arrays are used in place), so decoding a token
allocates nothing but the views.
"""

import numpy as np

import kernelbridge as kb

from .vocab import ModelError

# The weight formats the kernels take (GGML type numbers = kb.Dtype values).
_WEIGHT_TYPES = (kb.Dtype.F32, kb.Dtype.F16, kb.Dtype.BF16, kb.Dtype.Q8_0, kb.Dtype.Q4_0)


class Weight:
    """A tensor as the weight kernels take it: its Dtype and bytes."""

    def __init__(self, dtype, data):
        self.dtype = dtype
        self.data = data

    def f32(self):
        return self.data.view(np.float32)


class Layer:
    pass


def _load(g, names, name, shape, f32_only=False):
    """Tensor name (one of the file's tensor names), checked to have shape
    (row-major) and a type the kernels take (float32 only when f32_only: the
    norms)."""
    if name not in names:
        raise ModelError("the model has no tensor '%s'" % name)
    got = g.tensor_shape(name)
    if len(got) != len(shape):
        raise ModelError("tensor '%s' has %d dimensions, expected %d" % (name, len(got), len(shape)))
    for axis, (have, want) in enumerate(zip(got, shape)):
        if have != want:
            raise ModelError("tensor '%s' has size %d on axis %d, expected %d" % (name, have, axis, want))
    t = g.tensor_type(name)
    if t != kb.Dtype.F32 and (f32_only or t not in _WEIGHT_TYPES):
        raise ModelError("tensor '%s' has GGML type %d, which this example %s" % (
            name, int(t), "needs as F32" if f32_only else "does not run (F32, F16, BF16, Q8_0 and Q4_0 it does)"))
    return Weight(kb.Dtype(t), g.read_tensor(name))


class Model:
    """The hyperparameters, weights, KV cache and scratch of a model, and its
    forward pass.  max_rows: the most tokens one forward call takes."""

    def __init__(self, g, max_rows, ctx):
        self.ctx = ctx
        if "general.architecture" not in g:
            raise ModelError("the model has no key 'general.architecture'")
        arch = g.get_bytes("general.architecture")
        if arch != b"llama":
            raise ModelError("architecture '%s' is not supported (only 'llama')" % arch.decode("utf-8", "replace"))

        def key(name, default=None):
            k = "llama." + name
            if k not in g:
                if default is None:
                    raise ModelError("the model has no key '%s'" % k)
                return default
            return g.get_int(k)

        self.hidden = key("embedding_length")
        self.layers = key("block_count")
        self.ffn = key("feed_forward_length")
        self.heads = key("attention.head_count")
        self.kv_heads = key("attention.head_count_kv", self.heads)
        self.context = key("context_length")
        self.experts = key("expert_count", 0)
        self.experts_used = key("expert_used_count", 0)
        self.eps = g.get_float("llama.attention.layer_norm_rms_epsilon") \
            if "llama.attention.layer_norm_rms_epsilon" in g else float(np.float32(1e-5))
        self.rope_theta = g.get_float("llama.rope.freq_base") if "llama.rope.freq_base" in g else 10000.0
        if (self.heads <= 0 or self.kv_heads <= 0 or self.hidden <= 0 or self.hidden % self.heads != 0
                or self.heads % self.kv_heads != 0 or self.layers <= 0 or self.ffn <= 0 or self.context <= 0
                or self.layers > 4096):
            raise ModelError("inconsistent hyperparameters: hidden %d, heads %d, kv heads %d, layers %d, ffn %d, "
                             "context %d" % (self.hidden, self.heads, self.kv_heads, self.layers, self.ffn,
                                             self.context))
        if self.experts < 0 or (self.experts > 0 and not 0 < self.experts_used <= self.experts):
            raise ModelError("expert_used_count %d of expert_count %d" % (self.experts_used, self.experts))
        self.head_dim = self.hidden // self.heads
        self.rotary_dim = key("rope.dimension_count", self.head_dim)
        names = set(g.tensor_names())
        if "token_embd.weight" not in names:
            raise ModelError("the model has no tensor 'token_embd.weight'")
        self.vocab = g.tensor_shape("token_embd.weight")[0]

        hd, kvd, ffn = self.hidden, self.kv_heads * self.head_dim, self.ffn
        self.embed = _load(g, names, "token_embd.weight", (self.vocab, hd))
        self.out_norm = _load(g, names, "output_norm.weight", (hd,), True)
        self.output = (_load(g, names, "output.weight", (self.vocab, hd)) if "output.weight" in names
                       else self.embed)
        self.layer = []
        for i in range(self.layers):
            y = Layer()
            p = "blk.%d." % i
            y.attn_norm = _load(g, names, p + "attn_norm.weight", (hd,), True)
            y.wq = _load(g, names, p + "attn_q.weight", (hd, hd))
            y.wk = _load(g, names, p + "attn_k.weight", (kvd, hd))
            y.wv = _load(g, names, p + "attn_v.weight", (kvd, hd))
            y.wo = _load(g, names, p + "attn_output.weight", (hd, hd))
            y.ffn_norm = _load(g, names, p + "ffn_norm.weight", (hd,), True)
            if self.experts > 0:
                e = self.experts
                y.router = _load(g, names, p + "ffn_gate_inp.weight", (e, hd), True)
                y.gate = _load(g, names, p + "ffn_gate_exps.weight", (e, ffn, hd))
                y.up = _load(g, names, p + "ffn_up_exps.weight", (e, ffn, hd))
                y.down = _load(g, names, p + "ffn_down_exps.weight", (e, hd, ffn))
                if not y.gate.dtype == y.up.dtype == y.down.dtype:
                    raise ModelError("layer %d: the experts' tensors differ in type" % i)
            else:
                y.gate = _load(g, names, p + "ffn_gate.weight", (ffn, hd))
                y.up = _load(g, names, p + "ffn_up.weight", (ffn, hd))
                y.down = _load(g, names, p + "ffn_down.weight", (hd, ffn))
                if y.gate.dtype != y.up.dtype:
                    raise ModelError("layer %d: ffn_gate and ffn_up differ in type" % i)
            y.attn_norm_f32 = y.attn_norm.f32()
            y.ffn_norm_f32 = y.ffn_norm.f32()
            self.layer.append(y)
        self.out_norm_f32 = self.out_norm.f32()

        # The KV cache, [layer][1, context, kv_heads, head_dim] (seq_major).
        shape = (self.layers, 1, self.context, self.kv_heads, self.head_dim)
        self.k_cache = np.zeros(shape, np.float32)
        self.v_cache = np.zeros(shape, np.float32)
        self.cached = 0
        r = self.scratch_rows = max_rows
        self.x = np.zeros((r, hd), np.float32)
        self.h = np.zeros((r, hd), np.float32)
        self.q = np.zeros((1, r, self.heads, self.head_dim), np.float32)
        self.k = np.zeros((1, r, self.kv_heads, self.head_dim), np.float32)
        self.v = np.zeros((1, r, self.kv_heads, self.head_dim), np.float32)
        self.attn = np.zeros((1, r, self.heads, self.head_dim), np.float32)
        self.o = np.zeros((r, hd), np.float32)
        self.g = np.zeros((r, ffn), np.float32)
        self.route_logits = np.zeros((r, max(self.experts, 1)), np.float32)
        self.route_ids = np.zeros((r, max(self.experts_used, 1)), np.int32)
        self.route_w = np.zeros((r, max(self.experts_used, 1)), np.float32)
        self.pos = np.zeros((1, r), np.int32)
        self.at = np.zeros(1, np.int32)
        self.length = np.zeros(1, np.int32)

    def _linear(self, x, w, out):
        kb.linear_w(x, w.data, out=out, weight_type=w.dtype, ctx=self.ctx)

    def forward(self, tokens, out, all_logits=False):
        """Runs the token ids (an int32 array of n <= scratch_rows) at positions
        cached .. cached + n - 1, appends them to the cache and writes the
        logits of the last one (all_logits: of every one, [n, vocab]) to out."""
        n = len(tokens)
        if not 0 < n <= self.scratch_rows:
            raise ModelError("%d tokens in one step (1 to %d)" % (n, self.scratch_rows))
        if self.cached + n > self.context:
            raise ModelError("%d tokens after %d do not fit in the model's context of %d"
                             % (n, self.cached, self.context))
        bad = (tokens < 0) | (tokens >= self.vocab)
        if bad.any():
            raise ModelError("token id %d is not in [0, %d)" % (tokens[np.argmax(bad)], self.vocab))
        ctx, hd, eps = self.ctx, self.hidden, self.eps
        pos = self.pos[:, :n]
        pos[0] = np.arange(self.cached, self.cached + n, dtype=np.int32)
        x, h, o, g = self.x[:n], self.h[:n], self.o[:n], self.g[:n]
        q, k, v, attn = self.q[:, :n], self.k[:, :n], self.v[:, :n], self.attn[:, :n]
        q2, k2, v2, attn2 = q.reshape(n, -1), k.reshape(n, -1), v.reshape(n, -1), attn.reshape(n, -1)
        kb.embedding_w(tokens, self.embed.data, out=x, vocab=self.vocab, table_type=self.embed.dtype, ctx=ctx)
        kb.rmsnorm(x, self.layer[0].attn_norm_f32, out=h, eps=eps, ctx=ctx)
        self.at[0] = self.cached
        self.length[0] = self.cached + n
        for i, y in enumerate(self.layer):
            kc, vc = self.k_cache[i], self.v_cache[i]
            self._linear(h, y.wq, q2)
            self._linear(h, y.wk, k2)
            self._linear(h, y.wv, v2)
            kb.rope_ex(pos, q, k, rotary_dim=self.rotary_dim, style=kb.RopeStyle.ADJACENT, theta=self.rope_theta,
                       ctx=ctx)
            kb.kv_cache_append(k, v, self.at, kc, vc, seq_major=True, ctx=ctx)
            kb.attention_ex(q, kc, vc, self.length, out=attn, seq_major=True, causal=True, causal_bottom_right=True,
                            ctx=ctx)
            self._linear(attn2, y.wo, o)
            kb.add_rmsnorm(o, x, y.ffn_norm_f32, out=h, eps=eps, ctx=ctx)
            if self.experts > 0:
                rl, ids, w = self.route_logits[:n], self.route_ids[:n], self.route_w[:n]
                self._linear(h, y.router, rl)
                kb.moe_route(rl, out=(ids, w), routing=kb.MoeRouting.SOFTMAX_TOPK_NORM, ctx=ctx)
                kb.moe_experts(h, ids, w, y.gate.data, y.up.data, y.down.data, out=o, ffn=self.ffn,
                               experts=self.experts, weight_type=y.gate.dtype, ctx=ctx)
            else:
                kb.linear_glu_w(h, y.gate.data, y.up.data, out=g, weight_type=y.gate.dtype, ctx=ctx)
                self._linear(g, y.down, o)
            norm = self.layer[i + 1].attn_norm_f32 if i + 1 < self.layers else self.out_norm_f32
            kb.add_rmsnorm(o, x, norm, out=h, eps=eps, ctx=ctx)
        self.cached += n
        self._linear(h if all_logits else h[n - 1:], self.output, out)
