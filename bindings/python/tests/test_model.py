"""The model-ready API in Python: rows over leading axes, fused linear,
batched gemm on strided views, attention with PyTorch's arguments, and
float16 / bfloat16 dispatch.  Expected values are float64 numpy written here
from the header's definitions, or (for bit-exact properties) the 2-D /
float32 / explicit-variant call the feature must reproduce."""

import math

import numpy as np
import pytest

import kernelbridge as kb

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(99)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACTS = {
    "none": lambda y: y,
    "relu": lambda y: np.maximum(y, 0),
    "gelu": lambda y: 0.5 * y * (1 + np.vectorize(math.erf)(y / math.sqrt(2))),
    "gelu_tanh": lambda y: 0.5 * y * (1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y**3))),
    "silu": lambda y: y * sigmoid(y),
}


# --- rows over leading axes ---------------------------------------------------------


@pytest.mark.parametrize("lead", [(), (1,), (2, 3), (2, 1, 3), (0, 4)])
def test_rowwise_kernels_take_leading_axes(lead):
    x = f32(*lead, 7, scale=2.0)
    flat = x.reshape(-1, 7)
    w, b = f32(7), f32(7)
    for got, want in [
        (kb.softmax(x), kb.softmax(flat)),
        (kb.log_softmax(x), kb.log_softmax(flat)),
        (kb.rmsnorm(x, w, eps=1e-5), kb.rmsnorm(flat, w, eps=1e-5)),
        (kb.layernorm(x, w, b), kb.layernorm(flat, w, b)),
        (kb.add_bias(x, b), kb.add_bias(flat, b)),
    ]:
        assert got.shape == x.shape
        same_bits(got.reshape(-1, 7), want)


def test_row_outputs_keep_the_leading_shape():
    x = f32(2, 3, 11)
    assert kb.argmax(x).shape == (2, 3)
    np.testing.assert_array_equal(kb.argmax(x), np.argmax(x, axis=-1))
    assert kb.argmax(x[0, 0]).shape == ()  # one row: a 0-d result, as numpy's argmax
    tokens = kb.sample(x, temperature=1.0, seed=5)
    assert tokens.shape == (2, 3)
    same_bits(tokens.reshape(-1), kb.sample(x.reshape(6, 11), temperature=1.0, seed=5))
    targets = RNG.integers(0, 11, (2, 3)).astype(np.int32)
    losses, mean = kb.cross_entropy(x, targets)
    flat_losses, flat_mean = kb.cross_entropy(x.reshape(6, 11), targets.reshape(6))
    assert losses.shape == (2, 3)
    same_bits(losses.reshape(6), flat_losses)
    same_bits(mean, flat_mean)


def test_row_shape_errors_name_the_argument():
    with pytest.raises(kb.ShapeMismatchError, match=r"softmax: x must have at least 1 dimension"):
        kb.softmax(np.float32(1.0).reshape(()))
    x = f32(2, 3, 5)
    out = np.full((6, 5), 7.0, np.float32)
    with pytest.raises(kb.ShapeMismatchError, match=r"softmax: out has shape \(6, 5\), expected \(2, 3, 5\)"):
        kb.softmax(x, out=out)
    assert (out == 7.0).all()
    with pytest.raises(kb.ShapeMismatchError, match=r"cross_entropy: targets has shape \(6,\), expected \(2, 3\)"):
        kb.cross_entropy(x, np.zeros(6, np.int32))


# --- linear -------------------------------------------------------------------------------


@pytest.mark.parametrize("act", list(ACTS))
def test_linear_matches_reference(act):
    x, w, b = f32(2, 5, 9), f32(4, 9, scale=0.3), f32(4)
    y = kb.linear(x, w, b, act=act)
    want = ACTS[act](x.astype(np.float64) @ w.T.astype(np.float64) + b)
    assert y.shape == (2, 5, 4) and y.dtype == np.float32
    np.testing.assert_allclose(y, want, rtol=2e-5, atol=2e-6)
    # The member, its value and its name are the same argument.
    member = getattr(kb.Activation, act.upper())
    same_bits(kb.linear(x, w, b, act=member), y)
    same_bits(kb.linear(x, w, b, act=int(member)), y)


def test_linear_defaults_and_bad_act():
    x, w = f32(3, 6), f32(2, 6)
    same_bits(kb.linear(x, w), kb.linear(x, w, None, act=kb.Activation.NONE))
    np.testing.assert_allclose(kb.linear(x, w), x.astype(np.float64) @ w.T, rtol=2e-6, atol=1e-6)
    y = np.full((3, 2), 5.0, np.float32)
    with pytest.raises(kb.InvalidArgumentError, match=r"linear: act must be one of 'none', 'relu'"):
        kb.linear(x, w, out=y, act="tanh")
    with pytest.raises(kb.InvalidArgumentError, match=r"kb_linear: act must be a kb_activation"):
        kb.linear(x, w, out=y, act=7)
    with pytest.raises(TypeError, match=r"linear: act must be a Activation, an int or a name"):
        kb.linear(x, w, out=y, act=1.5)
    assert (y == 5.0).all()


# --- rope_ex -------------------------------------------------------------------------------


def test_rope_ex_is_rope_in_ropes_case_and_rotates_k_too():
    q, k = f32(2, 3, 4, 16), f32(2, 3, 2, 16)
    pos = np.array([[0, 1, 2], [50, 51, 4096]], np.int32)
    want_q = kb.rope(q.reshape(6, 4, 16), pos.reshape(6), theta=500000.0).reshape(q.shape)
    want_k = kb.rope(k.reshape(6, 2, 16), pos.reshape(6), theta=500000.0).reshape(k.shape)
    q2, k2 = q.copy(), k.copy()
    assert kb.rope_ex(pos, q2, k2, rotary_dim=16, theta=500000.0) is None
    same_bits(q2, want_q)
    same_bits(k2, want_k)
    q3 = q.copy()
    kb.rope_ex(pos, q3, rotary_dim=16, theta=500000.0)  # k None: only q
    same_bits(q3, want_q)


def test_rope_ex_partial_adjacent_llama3_against_numpy():
    q, pos = f32(1, 2, 3, 10), np.array([[3, 9000]], np.int32)
    y = q.copy()
    kb.rope_ex(pos, y, rotary_dim=6, style="adjacent", scaling="llama3", theta=10000.0, factor=8.0,
               low_freq_factor=1.0, high_freq_factor=4.0, original_max_position=512)
    # The header's formula, written out in float64: wavelengths 2 pi, 135
    # and 2922 fall in each band (below 512 / 4, between, above 512 / 1).
    inv = 1.0 / 10000.0 ** (np.arange(3) * 2 / 6)
    wl = 2 * math.pi / inv
    smooth = (512 / wl - 1.0) / 3.0
    inv = np.where(wl > 512, inv / 8, np.where(wl < 128, inv, (1 - smooth) * inv / 8 + smooth * inv))
    assert wl[0] < 128 < wl[1] < 512 < wl[2]
    want = q.astype(np.float64)
    ang = pos[0, :, None] * inv[None, :]
    u, v = want[0, :, :, 0:6:2], want[0, :, :, 1:6:2]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    want[0, :, :, 0:6:2], want[0, :, :, 1:6:2] = u * c - v * s, v * c + u * s
    np.testing.assert_allclose(y, want, rtol=2e-7, atol=1e-7)
    same_bits(y[..., 6:], q[..., 6:])  # past rotary_dim: untouched


def test_rope_ex_16_bit_is_the_float32_result_rounded_and_errors_name_the_argument():
    pos = np.array([[0, 7]], np.int32)
    q = f32(1, 2, 2, 8).astype(BF16)
    want = q.astype(np.float32)
    kb.rope_ex(pos, want, rotary_dim=8, scaling="linear", factor=2.0)
    y = q.copy()
    kb.rope_ex(pos, y, rotary_dim=8, scaling="linear", factor=2.0)
    same_bits(y, want.astype(BF16))
    with pytest.raises(kb.ShapeMismatchError, match=r"kb_rope_ex_bf16: rotary_dim must be even, got 3"):
        kb.rope_ex(pos, y, rotary_dim=3)
    with pytest.raises(kb.InvalidArgumentError, match=r"kb_rope_ex: low_freq_factor \(4\) must be < high_freq_factor"):
        kb.rope_ex(pos, y.astype(np.float32), rotary_dim=8, scaling="llama3", low_freq_factor=4.0)
    with pytest.raises(kb.InvalidArgumentError, match=r"kb_rope_ex_bf16: positions\[1\] must be >= 0, got -1"):
        kb.rope_ex(np.array([[0, -1]], np.int32), q, rotary_dim=8)
    same_bits(y, want.astype(BF16))


# --- gemm_batched on strided views -------------------------------------------------------


def test_gemm_batched_broadcast_and_strided_views():
    a = f32(3, 4, 5)
    w = f32(5, 6)
    want = a.astype(np.float64) @ w.astype(np.float64)
    # One weight for every item: a zero-stride view, read in place.
    c = kb.gemm_batched(a, np.broadcast_to(w, (3, 5, 6)))
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    # Row-strided and item-strided views of bigger arrays, written in place:
    # the elements between rows and items stay as they were.
    big_a = np.full((3, 6, 9), np.nan, np.float32)
    big_a[:, :4, :5] = a
    big_c = np.full((4, 5, 8), -7.0, np.float32)
    view = big_c[::1, :4, 1:7][:3]
    kb.gemm_batched(big_a[:, :4, :5], np.broadcast_to(w, (3, 5, 6)), view)
    same_bits(view, c)
    mask = np.ones(big_c.shape, bool)
    mask[:3, :4, 1:7] = False
    assert (big_c[mask] == -7.0).all()


def test_gemm_batched_transposed_views_and_gemm_views():
    a, b = f32(2, 5, 3), f32(2, 4, 5)
    # trans_a / trans_b read A^T and B^T from the stored layout
    c = kb.gemm_batched(a, b, trans_a=True, trans_b=True, alpha=0.5)
    want = 0.5 * np.einsum("bka,bnk->ban", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    # kb.gemm takes row-strided views too, written in place.
    big = np.full((6, 10), 3.0, np.float32)
    kb.gemm(a[0].T.copy(), b[0].T.copy(), big[1:4, 2:6])
    np.testing.assert_allclose(big[1:4, 2:6], a[0].T.astype(np.float64) @ b[0].T, rtol=1e-5, atol=1e-5)
    assert (big[0] == 3.0).all() and (big[:, :2] == 3.0).all() and (big[:, 6:] == 3.0).all()


def test_gemm_batched_errors_leave_c_untouched():
    a, b = f32(2, 3, 4), f32(2, 4, 5)
    c = np.full((2, 3, 5), 9.0, np.float32)
    with pytest.raises(kb.ShapeMismatchError, match=r"gemm_batched: b has shape"):
        kb.gemm_batched(a, f32(3, 4, 5), c)
    with pytest.raises(kb.InvalidArgumentError, match=r"gemm_batched: c must have unit stride along its last axis"):
        kb.gemm_batched(a, b, np.full((2, 3, 10), 0.0, np.float32)[:, :, ::2])
    # Items of C that overlap (a zero item stride on a written array): the
    # library refuses it, naming stride_c.
    base = np.zeros(15, np.float32)
    overlapping = np.lib.stride_tricks.as_strided(base, (2, 3, 5), (0, 20, 4))
    with pytest.raises(kb.ShapeMismatchError, match=r"kb_gemm_batched: stride_c must be >= 15"):
        kb.gemm_batched(a, b, overlapping)
    assert (base == 0).all()
    ro = c.copy()
    ro.setflags(write=False)
    with pytest.raises(kb.InvalidArgumentError, match=r"gemm_batched: c is read-only"):
        kb.gemm_batched(a, b, ro)
    assert (c == 9.0).all()


# --- attention -------------------------------------------------------------------------------


def attention_ref(q, k, v, mask=None, lengths=None, causal=False, bottom_right=False, scale=None):
    """float64, [B, H, S, E] layout; rows without keys are zeros."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    bsz, heads, sq, e = q.shape
    kvh, skv = k.shape[1], k.shape[2]
    sc = 1 / math.sqrt(e) if scale is None else scale
    out = np.zeros(q.shape)
    for b in range(bsz):
        n = skv if lengths is None else lengths[b]
        for h in range(heads):
            kh = h // (heads // kvh)
            for i in range(sq):
                lim = n
                if causal:
                    lim = min(n, max(0, i + 1 + n - sq if bottom_right else i + 1))
                s = q[b, h, i] @ k[b, kh, :lim].T * sc
                if mask is not None:
                    s = s + np.broadcast_to(mask, (bsz, heads, sq, skv))[b, h, i, :lim]
                keep = s != -np.inf
                if not keep.any():
                    continue
                p = np.exp(s[keep] - s[keep].max())
                out[b, h, i] = (p / p.sum()) @ v[b, kh, :lim][keep]
    return out


def test_sdpa_padding_mask_bool_and_lengths_agree():
    q, k, v = f32(2, 4, 3, 8), f32(2, 2, 5, 8), f32(2, 2, 5, 8)
    keep = np.ones((2, 5), bool)
    keep[1, 3:] = False
    got = kb.scaled_dot_product_attention(q, k, v, keep[:, None, None, :])
    np.testing.assert_allclose(got, attention_ref(q, k, v, lengths=[5, 3]), rtol=1e-5, atol=1e-6)
    # kv_lengths skips the same keys; the additive form is the same mask.
    same_bits(kb.scaled_dot_product_attention(q, k, v, kv_lengths=[5, 3]), got)
    additive = np.where(keep, 0.0, -np.inf).astype(np.float32)[:, None, None, :]
    same_bits(kb.scaled_dot_product_attention(q, k, v, additive), got)
    # A broadcast view of the mask is not copied but gives the same result.
    same_bits(kb.scaled_dot_product_attention(q, k, v, np.broadcast_to(additive, (2, 4, 3, 5))), got)


@pytest.mark.parametrize("shape", [(5,), (3, 5), (4, 3, 5), (1, 4, 1, 5), (2, 1, 3, 1)])
def test_sdpa_mask_shapes_broadcast_like_pytorch(shape):
    q, k, v = f32(2, 4, 3, 8), f32(2, 4, 5, 8), f32(2, 4, 5, 8)
    m = f32(*shape)
    want = attention_ref(q, k, v, mask=m.reshape((1,) * (4 - len(shape)) + shape).astype(np.float64))
    np.testing.assert_allclose(kb.scaled_dot_product_attention(q, k, v, m), want, rtol=1e-5, atol=1e-6)


def test_sdpa_causal_alignments_and_masked_rows():
    q, k, v = f32(1, 2, 3, 8), f32(1, 2, 6, 8), f32(1, 2, 6, 8)
    top = kb.scaled_dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(top, attention_ref(q, k, v, causal=True), rtol=1e-5, atol=1e-6)
    bottom = kb.scaled_dot_product_attention(q, k, v, is_causal=True, bottom_right=True)
    np.testing.assert_allclose(bottom, attention_ref(q, k, v, causal=True, bottom_right=True), rtol=1e-5, atol=1e-6)
    # A row whose keys are all masked gives zeros.
    m = np.zeros((1, 1, 3, 6), np.float32)
    m[0, 0, 1, :] = -np.inf
    out = kb.scaled_dot_product_attention(q, k, v, m)
    assert (out[0, :, 1] == 0).all() and (out[0, :, 0] != 0).any()


def test_sdpa_seq_major_layout_needs_no_transpose():
    q, k, v = f32(2, 3, 4, 8), f32(2, 5, 2, 8), f32(2, 5, 2, 8)  # [B, S, H, E]
    out = kb.scaled_dot_product_attention(q, k, v, seq_major=True, is_causal=True, bottom_right=True)
    head_major = kb.scaled_dot_product_attention(*(np.ascontiguousarray(t.transpose(0, 2, 1, 3)) for t in (q, k, v)),
                                                 is_causal=True, bottom_right=True)
    same_bits(np.ascontiguousarray(out.transpose(0, 2, 1, 3)), head_major)


def test_sdpa_dtypes_follow_query():
    q, k, v = f32(1, 2, 3, 8), f32(1, 2, 4, 8), f32(1, 2, 4, 8)
    keep = np.array([True, True, False, True])
    for dt, variant in ((np.float16, kb.attention_ex_f16), (BF16, kb.attention_ex_bf16)):
        h = [t.astype(dt) for t in (q, k, v)]
        got = kb.scaled_dot_product_attention(*h, keep)
        assert got.dtype == np.dtype(dt)
        mask = np.where(keep, 0.0, -np.inf).astype(dt).reshape(1, 1, 1, 4)
        same_bits(got, variant(*h, mask=mask))


def test_sdpa_errors_name_the_argument():
    q, k, v = f32(1, 2, 3, 8), f32(1, 2, 4, 8), f32(1, 2, 4, 8)
    out = np.full(q.shape, 4.0, np.float32)
    cases = [
        (dict(attn_mask=np.zeros((2, 4), np.float32)), kb.ShapeMismatchError, "attn_mask of shape"),
        (dict(attn_mask=np.zeros((4,), np.float64)), TypeError, "attn_mask must be bool or have query's dtype"),
        (dict(attn_mask=np.zeros((1, 1, 1, 1, 4), np.float32)), kb.ShapeMismatchError, "1 to 4 dimensions"),
        (dict(dropout_p=0.1), kb.UnsupportedError, "dropout_p must be 0"),
        (dict(scale=0.0), kb.InvalidArgumentError, "scale=0 is not supported"),
        (dict(bottom_right=True), kb.InvalidArgumentError, "causal_bottom_right needs causal"),
        (dict(kv_lengths=[5]), kb.InvalidArgumentError, r"kv_lengths\[0\] = 5 is out of range"),
        (dict(kv_lengths=[1, 2]), kb.ShapeMismatchError, "kv_lengths must have shape"),
    ]
    for kwargs, exc, text in cases:
        with pytest.raises(exc, match=text):
            kb.scaled_dot_product_attention(q, k, v, out=out, **kwargs)
        assert (out == 4.0).all()
    with pytest.raises(kb.ShapeMismatchError, match="value has shape"):
        kb.scaled_dot_product_attention(q, k, f32(1, 2, 5, 8))
    with pytest.raises(kb.ShapeMismatchError, match="query must have 4 dimensions"):
        kb.scaled_dot_product_attention(q[0], k, v)
    with pytest.raises(TypeError, match="query is uint16"):
        kb.scaled_dot_product_attention(*(t.view(np.uint16)[..., ::2] for t in (q, k, v)))


def test_attention_ex_mask_dims_come_from_the_mask():
    q, k, v = f32(2, 2, 3, 4), f32(2, 1, 5, 4), f32(2, 1, 5, 4)
    m = f32(2, 1, 3, 5)
    got = kb.attention_ex(q, k, v, mask=m)
    np.testing.assert_allclose(got, attention_ref(q, k, v, mask=m.astype(np.float64)), rtol=1e-5, atol=1e-6)
    with pytest.raises(kb.ShapeMismatchError, match=r"kb_attention_ex: mask_q must be 1 or seq_q \(3\), got 2"):
        kb.attention_ex(q, k, v, mask=f32(2, 1, 2, 5))


# --- float16 / bfloat16 dispatch ------------------------------------------------------------


def test_float32_kernels_run_the_16_bit_variant_for_16_bit_arrays():
    x = f32(3, 5, scale=2.0)
    w = f32(5)
    for dt, suffix in ((np.float16, "f16"), (BF16, "bf16")):
        h = x.astype(dt)
        same_bits(kb.silu(h), getattr(kb, "silu_" + suffix)(h))
        same_bits(kb.add(h, h), getattr(kb, "add_" + suffix)(h, h))
        same_bits(kb.rmsnorm(h, w.astype(dt), eps=1e-5), getattr(kb, "rmsnorm_" + suffix)(h, w.astype(dt), eps=1e-5))
        same_bits(kb.gemm(h, h.T.copy()), getattr(kb, "gemm_" + suffix)(h, h.T.copy()))
        same_bits(kb.linear(h, h, act="gelu"), getattr(kb, "linear_" + suffix)(h, h, act="gelu"))
        assert kb.silu(h).dtype == np.dtype(dt)
    # float16 results are the float32 kernel on the widened input, rounded once.
    same_bits(kb.silu(x.astype(np.float16)), kb.silu(x.astype(np.float16).astype(np.float32)).astype(np.float16))
    # uint16 bits have no format to dispatch on.
    with pytest.raises(TypeError, match="silu: x must have dtype float32"):
        kb.silu(x.astype(np.float16).view(np.uint16))
    # A float16 array mixed into a float32 call is named.
    with pytest.raises(TypeError, match="rmsnorm: weight must have dtype float32"):
        kb.rmsnorm(x, w.astype(np.float16), eps=1e-5)


# --- the transformer block of docs/python.md -------------------------------------------------


def encoder_layer(x, keep, p, heads):
    """x: [B, S, D] float32; keep: [B, S] bool (True: a real token).  As in
    docs/python.md: no reshape copies (reshape of a contiguous array is a view)."""
    B, S, D = x.shape
    q = kb.linear(x, p["wq"], p["bq"])
    k = kb.linear(x, p["wk"], p["bk"])
    v = kb.linear(x, p["wv"], p["bv"])
    split = (B, S, heads, D // heads)
    a = kb.scaled_dot_product_attention(q.reshape(split), k.reshape(split), v.reshape(split),
                                        keep[:, None, None, :], seq_major=True)
    h = kb.linear(a.reshape(B, S, D), p["wo"], p["bo"])
    h = kb.layernorm(kb.add(h, x), p["g1"], p["n1"], eps=1e-12)
    f = kb.linear(kb.linear(h, p["w1"], p["b1"], act="gelu"), p["w2"], p["b2"])
    return kb.layernorm(kb.add(f, h), p["g2"], p["n2"], eps=1e-12)


def encoder_layer_ref(x, keep, p, heads):
    x = x.astype(np.float64)
    P = {k: v.astype(np.float64) for k, v in p.items()}
    B, S, D = x.shape
    E = D // heads

    def lin(t, w, b):
        return t @ w.T + b

    def ln(t, g, n):
        mu = t.mean(-1, keepdims=True)
        var = ((t - mu) ** 2).mean(-1, keepdims=True)
        return (t - mu) / np.sqrt(var + 1e-12) * g + n

    q, k, v = (lin(x, P["w" + c], P["b" + c]).reshape(B, S, heads, E).transpose(0, 2, 1, 3) for c in "qkv")
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(E) + np.where(keep, 0.0, -np.inf)[:, None, None, :]
    w = np.exp(s - s.max(-1, keepdims=True))
    a = (w / w.sum(-1, keepdims=True)) @ v
    h = ln(lin(a.transpose(0, 2, 1, 3).reshape(B, S, D), P["wo"], P["bo"]) + x, P["g1"], P["n1"])
    f = lin(ACTS["gelu"](lin(h, P["w1"], P["b1"])), P["w2"], P["b2"])
    return ln(f + h, P["g2"], P["n2"])


def test_transformer_block_of_the_docs():
    B, S, D, F, heads = 2, 5, 16, 32, 4
    shapes = {"wq": (D, D), "wk": (D, D), "wv": (D, D), "wo": (D, D), "w1": (F, D), "w2": (D, F),
              "bq": (D,), "bk": (D,), "bv": (D,), "bo": (D,), "b1": (F,), "b2": (D,),
              "g1": (D,), "n1": (D,), "g2": (D,), "n2": (D,)}
    p = {k: f32(*s, scale=0.3) for k, s in shapes.items()}
    x = f32(B, S, D)
    keep = np.ones((B, S), bool)
    keep[1, 3:] = False  # the second sentence has two padding tokens
    got = encoder_layer(x, keep, p, heads)
    assert got.shape == (B, S, D) and got.dtype == np.float32
    np.testing.assert_allclose(got, encoder_layer_ref(x, keep, p, heads), rtol=1e-4, atol=1e-4)
