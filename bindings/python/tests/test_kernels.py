"""Every kernel against an independent numpy float64 reference written here
from the documented semantics (core/include/kernelbridge.h, docs/kernels.md)."""

import math

import numpy as np
import pytest

import kernelbridge as kb

RNG = np.random.default_rng(1234)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def close(got, want, rtol=2e-6, atol=1e-6):
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol)


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


# --- elementwise ------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0,), (1,), (37,), (3, 5), (2, 3, 4)])
def test_activations(shape):
    x = f32(*shape, scale=3.0)
    d = x.astype(np.float64)
    close(kb.silu(x), d / (1 + np.exp(-d)))
    close(kb.gelu(x), 0.5 * d * (1 + erf(d / math.sqrt(2))))
    close(kb.gelu_tanh(x), 0.5 * d * (1 + np.tanh(math.sqrt(2 / math.pi) * (d + 0.044715 * d**3))))
    assert kb.silu(x).shape == shape


def test_binary_and_scale():
    a, b = f32(4, 6), f32(4, 6)
    close(kb.add(a, b), a.astype(np.float64) + b)
    close(kb.mul(a, b), a.astype(np.float64) * b)
    close(kb.scale(a, alpha=-2.5), -2.5 * a.astype(np.float64))


def test_add_bias():
    x, bias = f32(5, 7), f32(7)
    close(kb.add_bias(x, bias), x.astype(np.float64) + bias)


# --- row-wise -----------------------------------------------------------------------


def ref_softmax(x):
    d = x.astype(np.float64)
    e = np.exp(d - d.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_softmax_family():
    x = f32(6, 33, scale=4.0)
    close(kb.softmax(x), ref_softmax(x))
    d = x.astype(np.float64)
    m = d.max(axis=1, keepdims=True)
    close(kb.log_softmax(x), d - m - np.log(np.exp(d - m).sum(axis=1, keepdims=True)), atol=1e-5)
    big = np.array([[1e4, 1e4 - 1, -1e4]], np.float32)
    close(kb.softmax(big), ref_softmax(big))
    assert kb.softmax(np.zeros((0, 4), np.float32)).shape == (0, 4)


def test_norms():
    x, w, b = f32(4, 16), f32(16), f32(16)
    d = x.astype(np.float64)
    close(kb.rmsnorm(x, w, eps=1e-5), d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5) * w, rtol=1e-5)
    mean = d.mean(axis=1, keepdims=True)
    var = ((d - mean) ** 2).mean(axis=1, keepdims=True)
    norm = (d - mean) / np.sqrt(var + 1e-5)
    close(kb.layernorm(x, w, b, eps=1e-5), norm * w + b, rtol=1e-5, atol=1e-5)
    close(kb.layernorm(x, None, None, eps=1e-5), norm, rtol=1e-5, atol=1e-5)
    close(kb.layernorm(x, eps=1e-5), norm, rtol=1e-5, atol=1e-5)


# --- gemm --------------------------------------------------------------------------


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_gemm(trans_a, trans_b):
    m, n, k = 7, 5, 9
    a = f32(k, m) if trans_a else f32(m, k)
    b = f32(n, k) if trans_b else f32(k, n)
    c = f32(m, n)
    oa = a.astype(np.float64).T if trans_a else a.astype(np.float64)
    ob = b.astype(np.float64).T if trans_b else b.astype(np.float64)
    want = 1.5 * oa @ ob - 0.5 * c
    got = c.copy()
    res = kb.gemm(a, b, got, alpha=1.5, beta=-0.5, trans_a=trans_a, trans_b=trans_b)
    assert res is got
    close(got, want, rtol=1e-5, atol=1e-5)
    # c omitted: a new zero-filled C, so beta does not matter.
    close(kb.gemm(a, b, alpha=1.0, beta=3.0, trans_a=trans_a, trans_b=trans_b), oa @ ob, rtol=1e-5, atol=1e-5)


def test_gemm_beta_zero_ignores_nan():
    a, b = f32(3, 4), f32(4, 2)
    c = np.full((3, 2), np.nan, np.float32)
    kb.gemm(a, b, c, alpha=1.0, beta=0.0)
    close(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_gemm_empty():
    assert kb.gemm(np.zeros((0, 3), np.float32), np.zeros((3, 4), np.float32), alpha=1, beta=0).shape == (0, 4)
    out = kb.gemm(np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32), alpha=1, beta=0)
    assert out.shape == (2, 3) and not out.any()


# --- transformer blocks ----------------------------------------------------------------


def test_embedding():
    table = f32(10, 4)
    ids = np.array([3, 0, 9, 3], np.int32)
    got = kb.embedding(ids, table)
    assert np.array_equal(got, table[ids])


def test_rope():
    seq, heads, hd = 5, 3, 8
    x = f32(seq, heads, hd)
    pos = np.array([0, 1, 2, 7, 100], np.int32)
    theta = 10000.0
    h = hd // 2
    d = x.astype(np.float64)
    i = np.arange(h)
    ang = pos[:, None].astype(np.float64) * theta ** (-2.0 * i / hd)  # [seq, h]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    want = np.empty_like(d)
    want[..., :h] = d[..., :h] * cos - d[..., h:] * sin
    want[..., h:] = d[..., h:] * cos + d[..., :h] * sin
    close(kb.rope(x, pos, theta=theta), want, rtol=1e-5, atol=1e-5)


def ref_attention(q, k, v, causal, scale):
    b, hq, sq, hd = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    scale = scale or 1 / math.sqrt(hd)
    out = np.empty((b, hq, sq, hd))
    for bi in range(b):
        for h in range(hq):
            kh = h // (hq // hkv)
            s = q[bi, h].astype(np.float64) @ k[bi, kh].astype(np.float64).T * scale
            if causal:
                s = np.where(np.arange(skv)[None, :] <= np.arange(sq)[:, None], s, -np.inf)
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            out[bi, h] = p @ v[bi, kh]
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_attention(causal):
    q, k, v = f32(2, 4, 5, 8), f32(2, 2, 6, 8), f32(2, 2, 6, 8)
    close(kb.attention(q, k, v, causal=causal, scale=0.0), ref_attention(q, k, v, causal, 0.0), rtol=1e-5, atol=1e-5)
    close(kb.attention(q, k, v, causal=causal, scale=0.3), ref_attention(q, k, v, causal, 0.3), rtol=1e-5, atol=1e-5)


# --- training ----------------------------------------------------------------------


def test_cross_entropy():
    logits = f32(6, 5, scale=2.0)
    targets = np.array([0, 4, -100, 2, 2, 1], np.int32)
    d = logits.astype(np.float64)
    m = d.max(axis=1)
    lse = m + np.log(np.exp(d - m[:, None]).sum(axis=1))
    keep = targets != -100
    want = np.where(keep, lse - d[np.arange(6), np.where(keep, targets, 0)], 0.0)
    losses, mean = kb.cross_entropy(logits, targets, ignore_index=-100)
    close(losses, want, rtol=1e-5, atol=1e-5)
    assert mean.shape == (1,)
    close(mean, [want[keep].mean()], rtol=1e-5)
    _, mean = kb.cross_entropy(logits, np.full(6, -1, np.int32), ignore_index=-1)
    assert np.isnan(mean[0])

    grad = kb.cross_entropy_backward(logits, targets, ignore_index=-100, dloss=2.0)
    onehot = np.zeros_like(d)
    onehot[np.arange(6)[keep], targets[keep]] = 1
    want_grad = np.where(keep[:, None], 2.0 * (ref_softmax(logits) - onehot) / keep.sum(), 0.0)
    close(grad, want_grad, rtol=1e-5, atol=1e-6)


def test_adamw_step():
    n = 50
    params, grads, m, v = f32(n), f32(n), f32(n) * 0.1, np.abs(f32(n)) * 0.01
    lr, b1, b2, eps, wd, step = 1e-2, 0.9, 0.999, 1e-8, 0.01, 3
    p, g, md, vd = (a.astype(np.float64) for a in (params, grads, m, v))
    p = p * (1 - lr * wd)
    md = b1 * md + (1 - b1) * g
    vd = b2 * vd + (1 - b2) * g * g
    p = p - (lr / (1 - b1**step)) * md / (np.sqrt(vd) / math.sqrt(1 - b2**step) + eps)
    res = kb.adamw_step(params, grads, m, v, lr=lr, beta1=b1, beta2=b2, eps=eps, weight_decay=wd, step=step)
    assert res is None
    close(params, p, rtol=1e-5, atol=1e-6)
    close(m, md, rtol=1e-5, atol=1e-7)
    close(v, vd, rtol=1e-5, atol=1e-9)


# --- decoding ------------------------------------------------------------------------

M32 = 0xFFFFFFFF


def philox(counter, key):
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
    return c0, c1, c2, c3


def test_philox_known_answer():
    assert philox((0, 0, 0, 0), (0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)


def ref_sample(x, seed, kind, k=None, p=None, T=1.0):
    out = []
    for r, row in enumerate(x.astype(np.float64)):
        u = (philox((r & M32, r >> 32, 0, 0), (seed & M32, seed >> 32))[0] >> 8) * 2.0**-24
        cand = np.arange(len(row)) if kind == "sample" else np.argsort(-row, kind="stable")
        if kind == "topk":
            cand = cand[:k]
        w = np.exp((row[cand] - row.max()) / T)
        s = np.cumsum(w)
        n = len(cand)
        if kind == "topp":
            n = int(np.argmax(s >= p * s[-1])) + 1
        out.append(int(cand[int(np.argmax(s[:n] > u * s[n - 1]))]))
    return np.array(out, np.int32)


def test_argmax():
    x = f32(5, 9)
    x[2, 4] = np.nan
    x[3, :] = 1.0
    got = kb.argmax(x)
    assert got.dtype == np.int32
    assert np.array_equal(got, np.argmax(x, axis=1))


def test_moe_route():
    x = f32(6, 16)
    x[1, :] = 0.5  # ties: lowest index first
    x[2, ::2] = -np.inf
    order = np.array([sorted(range(16), key=lambda i: (-float(r[i]), i))[:4] for r in x])
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    for routing in kb.MoeRouting:
        ids, w = kb.moe_route(x, top_k=4, routing=routing)
        assert ids.dtype == np.int32 and w.dtype == np.float32 and ids.shape == w.shape == (6, 4)
        assert np.array_equal(ids, order)
        sel = np.take_along_axis(e, order, axis=1)
        den = e.sum(axis=1, keepdims=True) if routing == kb.MoeRouting.SOFTMAX_TOPK else sel.sum(axis=1, keepdims=True)
        assert np.allclose(w, sel / den, rtol=1e-6, atol=0)
        # float16 logits: the float32 call on the widened logits, same bytes.
        h = x.astype(np.float16)
        hi, hw = kb.moe_route(h, top_k=4, routing=routing)
        fi, fw = kb.moe_route(h.astype(np.float32), top_k=4, routing=routing)
        assert hw.dtype == np.float32 and np.array_equal(hi, fi) and hw.tobytes() == fw.tobytes()
    # routing by name, top_k from out.
    ids, w = np.empty((6, 3), np.int32), np.empty((6, 3), np.float32)
    assert kb.moe_route(x, (ids, w), routing="softmax_topk_norm")[0] is ids
    assert np.array_equal(ids, order[:, :3])
    x[3, 5] = np.nan
    with pytest.raises(kb.InvalidArgumentError, match=r"logits\[3, 5\] is NaN"):
        kb.moe_route(x, top_k=2, routing="topk_softmax")


def test_sampling():
    x = f32(64, 12, scale=2.0)
    seed = 0x123456789ABCDEF
    assert np.array_equal(kb.sample(x, temperature=0.8, seed=seed), ref_sample(x, seed, "sample", T=0.8))
    assert np.array_equal(kb.topk_sample(x, k=3, temperature=1.3, seed=seed), ref_sample(x, seed, "topk", k=3, T=1.3))
    assert np.array_equal(kb.topp_sample(x, p=0.7, temperature=1.0, seed=seed), ref_sample(x, seed, "topp", p=0.7))
    # The row, not the batch, selects the random number.
    assert kb.sample(x[5:6], temperature=0.8, seed=seed)[0] != -1


def test_free_functions():
    assert kb.version_number() == kb.VERSION_NUMBER
    assert kb.version_string() == kb.__version__
    assert kb.status_string(kb.Status.SHAPE_MISMATCH) == "SHAPE_MISMATCH"
    assert kb.status_string(999) == "UNKNOWN"


def test_defaults_follow_the_header():
    # gemm: alpha=1, beta=0 (C is not read, so NaN in it must not leak).
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    c = np.full((3, 5), np.nan, dtype=np.float32)
    got = kb.gemm(a, b, c)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-6)
    # cross_entropy: ignore_index=-100 skips the row.
    logits = rng.standard_normal((2, 3)).astype(np.float32)
    losses, mean = kb.cross_entropy(logits, np.array([1, -100], dtype=np.int32))
    assert losses[1] == 0.0 and mean[0] == losses[0]
    # layernorm: eps=1e-05.
    x = rng.standard_normal((2, 6)).astype(np.float32)
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(kb.layernorm(x), want, rtol=1e-5, atol=1e-6)
    # Scalars without a default stay required.
    with pytest.raises(TypeError):
        kb.scale(x)
