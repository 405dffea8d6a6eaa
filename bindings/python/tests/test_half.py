"""The float16 and bfloat16 kernels against independent references.

The header's CPU contract: kb_<op>_f16 / kb_<op>_bf16 is kb_<op> on the
inputs widened to float32, rounded once to the dtype (nearest, ties to even;
NaN stays NaN).  The references here widen with numpy (float16) or a shift
(bfloat16), call the float32 kernel, and round with numpy's float32 ->
float16 conversion (itself round-to-nearest-even) or with the bfloat16
rounding written below; the results must match bit for bit.
"""

import numpy as np
import pytest

import kernelbridge as kb

RNG = np.random.default_rng(2024)


# --- bfloat16 by hand -----------------------------------------------------------------


def bf16_round(x):
    """float32 -> bfloat16 bits (uint16), round to nearest, ties to even."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    upper = bits >> 16
    lower = bits & 0xFFFF
    up = (lower > 0x8000) | ((lower == 0x8000) & ((upper & 1) == 1))
    rounded = (upper + up).astype(np.uint16)
    nan = np.isnan(np.asarray(x, np.float32))
    return np.where(nan, (upper | 0x40).astype(np.uint16), rounded)  # NaN stays (quiet) NaN


def bf16_widen(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def test_bf16_rounding_helper():
    assert bf16_round(np.float32([1.0]))[0] == 0x3F80
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (down).
    assert bf16_round(np.float32([1 + 2**-8]))[0] == 0x3F80
    # 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up.
    assert bf16_round(np.float32([1 + 3 * 2**-8]))[0] == 0x3F82
    assert bf16_round(np.float32([3.4e38]))[0] == 0x7F80  # overflows to inf
    assert np.isnan(bf16_widen(bf16_round(np.float32([np.nan]))))[0]


# --- inputs -----------------------------------------------------------------------------


def f16(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float16)


def bf16(*shape, scale=1.0):
    return bf16_round((RNG.standard_normal(shape) * scale).astype(np.float32))


def widen(a, dt):
    return a.astype(np.float32) if dt == "f16" else bf16_widen(a)


def narrow(a, dt):
    if dt == "bf16":
        return bf16_round(a)
    with np.errstate(over="ignore"):  # float32 beyond 65504 rounds to inf, as intended
        return np.asarray(a, np.float32).astype(np.float16)


def make(dt, *shape, scale=1.0):
    return f16(*shape, scale=scale) if dt == "f16" else bf16(*shape, scale=scale)


def bits(a):
    a = np.asarray(a)
    return a.view(np.uint16)


def assert_bitwise(got, want):
    """Bit for bit (the random inputs here give no NaN; test_special_values
    covers NaN, whose payload may differ)."""
    assert got.shape == want.shape
    np.testing.assert_array_equal(bits(got), bits(want))


DTYPES = ["f16", "bf16"]


def kernel(name, dt):
    return getattr(kb, f"{name}_{dt}")


# --- the kernels -----------------------------------------------------------------------


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", ["silu", "gelu", "gelu_tanh"])
def test_activations(dt, name):
    x = make(dt, 3, 37, scale=3.0)
    assert_bitwise(kernel(name, dt)(x), narrow(getattr(kb, name)(widen(x, dt)), dt))


@pytest.mark.parametrize("dt", DTYPES)
def test_binary_scale_bias(dt):
    a, b = make(dt, 4, 9), make(dt, 4, 9)
    wa, wb = widen(a, dt), widen(b, dt)
    assert_bitwise(kernel("add", dt)(a, b), narrow(kb.add(wa, wb), dt))
    assert_bitwise(kernel("mul", dt)(a, b), narrow(kb.mul(wa, wb), dt))
    assert_bitwise(kernel("scale", dt)(a, alpha=0.3), narrow(kb.scale(wa, alpha=0.3), dt))
    bias = make(dt, 9)
    assert_bitwise(kernel("add_bias", dt)(a, bias), narrow(kb.add_bias(wa, widen(bias, dt)), dt))


@pytest.mark.parametrize("dt", DTYPES)
def test_rowwise(dt):
    x = make(dt, 5, 40, scale=4.0)
    wx = widen(x, dt)
    assert_bitwise(kernel("softmax", dt)(x), narrow(kb.softmax(wx), dt))
    assert_bitwise(kernel("log_softmax", dt)(x), narrow(kb.log_softmax(wx), dt))
    w, b = make(dt, 40), make(dt, 40)
    ww, wb = widen(w, dt), widen(b, dt)
    assert_bitwise(kernel("rmsnorm", dt)(x, w, eps=1e-5), narrow(kb.rmsnorm(wx, ww, eps=1e-5), dt))
    assert_bitwise(kernel("layernorm", dt)(x, w, b), narrow(kb.layernorm(wx, ww, wb), dt))
    assert_bitwise(kernel("layernorm", dt)(x, None, None, eps=1e-3), narrow(kb.layernorm(wx, None, None, eps=1e-3), dt))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm(dt, trans_a, trans_b):
    m, n, k = 5, 7, 11
    a = make(dt, *((k, m) if trans_a else (m, k)))
    b = make(dt, *((n, k) if trans_b else (k, n)))
    c = make(dt, m, n)
    wa, wb, wc = widen(a, dt), widen(b, dt), widen(c, dt)
    assert_bitwise(kernel("gemm", dt)(a, b, trans_a=trans_a, trans_b=trans_b),
                   narrow(kb.gemm(wa, wb, trans_a=trans_a, trans_b=trans_b), dt))
    c2 = c.copy()
    assert kernel("gemm", dt)(a, b, c2, alpha=0.5, beta=-2.0, trans_a=trans_a, trans_b=trans_b) is c2
    assert_bitwise(c2, narrow(kb.gemm(wa, wb, wc, alpha=0.5, beta=-2.0, trans_a=trans_a, trans_b=trans_b), dt))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_attention(dt, causal):
    q, k, v = make(dt, 2, 4, 3, 8), make(dt, 2, 2, 5, 8), make(dt, 2, 2, 5, 8)
    want = narrow(kb.attention(widen(q, dt), widen(k, dt), widen(v, dt), causal=causal, scale=0.2), dt)
    assert_bitwise(kernel("attention", dt)(q, k, v, causal=causal, scale=0.2), want)


@pytest.mark.parametrize("dt", DTYPES)
def test_special_values(dt):
    vals = np.float32([0.0, -0.0, 1.0, -1.0, 65504.0, 1e-7, np.inf, -np.inf, np.nan, 300.0, -300.0, 1e30])
    x = narrow(vals, dt)
    for name in ("silu", "gelu", "scale"):
        kw = {"alpha": 1e4} if name == "scale" else {}
        got = bits(kernel(name, dt)(x, **kw))
        want = bits(narrow(getattr(kb, name)(widen(x, dt), **kw), dt))
        wf = widen(want, dt) if dt == "bf16" else want.view(np.float16).astype(np.float32)
        gf = widen(got, dt) if dt == "bf16" else got.view(np.float16).astype(np.float32)
        nan = np.isnan(wf)
        assert (np.isnan(gf) == nan).all()
        np.testing.assert_array_equal(got[~nan], want[~nan])


# --- dtypes accepted, dtypes returned ---------------------------------------------------


def test_f16_accepts_float16_and_uint16_bits():
    x = f16(10)
    y = kb.silu_f16(x)
    assert y.dtype == np.float16
    yb = kb.silu_f16(x.view(np.uint16))
    assert yb.dtype == np.uint16 and np.array_equal(yb, y.view(np.uint16))
    # out= may be either spelling.
    out = np.empty(10, np.uint16)
    assert kb.silu_f16(x, out=out) is out and np.array_equal(out, y.view(np.uint16))
    with pytest.raises(TypeError, match=r"silu_f16: x must have dtype float16 \(or uint16 holding float16 bits\), "
                                        r"got <f4"):
        kb.silu_f16(x.astype(np.float32))


def test_bf16_takes_uint16_bits():
    x = bf16(10)
    y = kb.silu_bf16(x)
    assert y.dtype == np.uint16
    with pytest.raises(TypeError, match="silu_bf16: x must have dtype uint16 holding bfloat16 bits"):
        kb.silu_bf16(x.view(np.float16))
    with pytest.raises(TypeError, match="silu_bf16: x must have dtype uint16"):
        kb.silu_bf16(bf16_widen(x))


def test_bf16_ml_dtypes_when_installed():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = bf16(10)
    xb = x.view(ml_dtypes.bfloat16)
    y = kb.silu_bf16(xb)
    assert y.dtype == ml_dtypes.bfloat16 and np.array_equal(y.view(np.uint16), kb.silu_bf16(x))


def test_half_in_place_and_on_buffers():
    x = f16(3, 8)
    want = kb.softmax_f16(x)
    buf = kb.Buffer.from_numpy(None, x)
    got = kb.softmax_f16(buf)
    assert isinstance(got, kb.Buffer) and got.dtype == np.float16
    assert np.array_equal(got.numpy().view(np.uint16), want.view(np.uint16))
    assert kb.softmax_f16(x, out=x) is x  # alias(x)
    assert np.array_equal(x.view(np.uint16), want.view(np.uint16))
    a = bf16(4, 3)
    c = kb.gemm_bf16(kb.Buffer.from_numpy(None, a), a, trans_b=True)
    assert isinstance(c, kb.Buffer) and c.dtype == np.uint16 and c.shape == (4, 4)
    assert np.array_equal(c.numpy(), kb.gemm_bf16(a, a, trans_b=True))


def test_half_bad_input_names_the_argument_and_writes_nothing():
    """Shape checks of the binding and value checks of the C library reach
    the 16-bit kernels with the dtype function's name; out is untouched."""
    x = f16(2, 3)
    out = np.full((2, 3), 7, np.uint16)
    with pytest.raises(kb.ShapeMismatchError, match=r"add_f16: b has shape \(3, 2\), expected \(2, 3\)"):
        kb.add_f16(x, f16(3, 2), out=out)
    with pytest.raises(kb.ShapeMismatchError, match="rmsnorm_f16: weight"):
        kb.rmsnorm_f16(x, f16(4), eps=1e-5, out=out)
    with pytest.raises(kb.InvalidArgumentError, match="kb_rmsnorm_bf16: eps must be >= 0, got -1"):
        kb.rmsnorm_bf16(x.view(np.uint16), bf16(3), eps=-1.0, out=out)
    with pytest.raises(kb.InvalidArgumentError, match="kb_scale_bf16: alpha must be finite, got nan"):
        kb.scale_bf16(x.view(np.uint16), alpha=float("nan"), out=out)
    assert np.all(out == 7)


# --- 16-bit embedding, argmax and samplers ----------------------------------------------
# Their contract is the float32 kernel on the exactly widened values: rows
# copied bit for bit, and the same index / token as the float32 call.


def logits16(dt, rows, cols):
    x = f16(rows, cols, scale=3.0) if dt == "f16" else bf16(rows, cols, scale=3.0)
    x = x.view(np.uint16).copy()
    x[:, 1::7] = 0xFC00 if dt == "f16" else 0xFF80  # -inf: never sampled
    return x if dt == "bf16" else x.view(np.float16)


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_embedding_16bit_copies_rows(dt):
    table = (f16(11, 5) if dt == "f16" else bf16(11, 5)).view(np.uint16).copy()
    table[3, 2] = 0x7C01 if dt == "f16" else 0x7F81  # a signalling NaN pattern is copied too
    ids = np.array([3, 0, 10, 3], np.int32)
    got = getattr(kb, "embedding_" + dt)(ids, table)
    assert got.dtype == np.uint16 and np.array_equal(got, table[ids])
    if dt == "f16":
        # float16 arrays through the float32 name run the variant.
        got16 = kb.embedding(ids, table.view(np.float16))
        assert got16.dtype == np.float16 and np.array_equal(got16.view(np.uint16), table[ids])
    out = np.full((2, 5), 9, np.uint16)
    with pytest.raises(kb.InvalidArgumentError, match=rf"kb_embedding_{dt}: ids\[1\] = 11 is out of range \[0, 11\)"):
        getattr(kb, "embedding_" + dt)(np.array([0, 11], np.int32), table, out=out)
    assert np.all(out == 9)


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_argmax_16bit_is_f32_argmax_of_widened(dt):
    x = logits16(dt, 9, 5000).view(np.uint16)
    x[2, 4100] = x[2, 7] = 0x4F00 if dt == "f16" else 0x4400  # a tie across the kernel's blocks: 7 wins
    x[4, 4200] = 0x7E00 if dt == "f16" else 0x7FC0  # NaN wins
    got = getattr(kb, "argmax_" + dt)(x)
    want = kb.argmax(widen(x, dt) if dt == "bf16" else x.view(np.float16).astype(np.float32))
    assert got.dtype == np.int32 and np.array_equal(got, want)
    assert got[2] == 7 and got[4] == 4200
    if dt == "f16":
        assert np.array_equal(kb.argmax(x.view(np.float16)), want)


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_samplers_16bit_match_f32_on_widened_logits(dt):
    x = logits16(dt, 16, 700)
    xf = widen(x, dt) if dt == "bf16" else x.astype(np.float32)
    tokens = set()
    for seed in range(30):
        t = (0.5, 1.0, 1.7)[seed % 3]
        got = getattr(kb, "sample_" + dt)(x, temperature=t, seed=seed)
        assert np.array_equal(got, kb.sample(xf, temperature=t, seed=seed))
        k = 1 + seed * 13 % 700
        got = getattr(kb, "topk_sample_" + dt)(x, k=k, temperature=t, seed=seed)
        assert np.array_equal(got, kb.topk_sample(xf, k=k, temperature=t, seed=seed))
        p = (0.1, 0.7, 1.0)[seed % 3]
        got = getattr(kb, "topp_sample_" + dt)(x, p=p, temperature=t, seed=seed)
        assert np.array_equal(got, kb.topp_sample(xf, p=p, temperature=t, seed=seed))
        tokens.update(got.tolist())
    assert len(tokens) > 20  # the draws vary: the comparison is not vacuous


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_samplers_16bit_bad_inputs(dt):
    x = logits16(dt, 2, 8).view(np.uint16)
    out = np.full(2, -5, np.int32)
    bad = x.copy()
    bad[1, 3] = 0x7C00 if dt == "f16" else 0x7F80
    with pytest.raises(kb.InvalidArgumentError, match=rf"kb_sample_{dt}: logits row 1 holds \+inf"):
        getattr(kb, "sample_" + dt)(bad, seed=1, out=out)
    bad[1, :] = 0xFC00 if dt == "f16" else 0xFF80
    with pytest.raises(kb.InvalidArgumentError, match=rf"kb_topk_sample_{dt}: logits row 1 is all -inf"):
        getattr(kb, "topk_sample_" + dt)(bad, k=2, seed=1, out=out)
    with pytest.raises(kb.InvalidArgumentError, match=rf"kb_topk_sample_{dt}: k must be <= cols \(8\), got 9"):
        getattr(kb, "topk_sample_" + dt)(x, k=9, seed=1, out=out)
    with pytest.raises(kb.InvalidArgumentError, match=rf"kb_topp_sample_{dt}: p must be in \(0, 1\], got 0"):
        getattr(kb, "topp_sample_" + dt)(x, p=0.0, seed=1, out=out)
    with pytest.raises(kb.InvalidArgumentError, match=rf"kb_sample_{dt}: temperature must be finite and > 0"):
        getattr(kb, "sample_" + dt)(x, temperature=0.0, seed=1, out=out)
    assert np.all(out == -5)
