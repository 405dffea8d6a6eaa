"""The decoder kernels through the binding: kb.glu on strided views of one
fused gate_up output (no copy), bit-identical to the activation followed by
kb.mul, with its 16-bit variants; kb.add_rmsnorm updating the residual in
place, bit-identical to kb.add followed by kb.rmsnorm, in place on x too."""
import numpy as np
import pytest

import kernelbridge as kb


def f32(*shape, seed=0, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


ACTS = {
    kb.Activation.SILU: kb.silu,
    kb.Activation.GELU: kb.gelu,
    kb.Activation.GELU_TANH: kb.gelu_tanh,
}


@pytest.mark.parametrize("act", sorted(ACTS, key=int))
def test_glu_fused_gate_up_views(act):
    ffn = 1500
    h = f32(3, 2 * ffn, seed=int(act))
    before = h.copy()
    y = kb.glu(h[:, :ffn], h[:, ffn:], act=act)
    want = kb.mul(ACTS[act](np.ascontiguousarray(h[:, :ffn])), np.ascontiguousarray(h[:, ffn:]))
    assert y.shape == (3, ffn) and y.dtype == np.float32
    assert y.tobytes() == want.tobytes()
    assert h.tobytes() == before.tobytes()


def test_glu_none_relu_and_name():
    g, u = f32(4, 9, seed=1), f32(4, 9, seed=2)
    assert kb.glu(g, u, act="none").tobytes() == (g * u).tobytes()
    assert kb.glu(g, u, act=kb.Activation.RELU).tobytes() == (np.maximum(g, 0) * u).tobytes()
    # The default is SwiGLU.
    assert kb.glu(g, u).tobytes() == kb.glu(g, u, act="silu").tobytes()


def test_glu_f16_is_the_f32_kernel_rounded_once():
    h = f32(2, 64, seed=3).astype(np.float16)
    y = kb.glu(h[:, :32], h[:, 32:], act="gelu")
    assert y.dtype == np.float16
    wide = h.astype(np.float32)
    want = kb.glu(wide[:, :32], wide[:, 32:], act="gelu").astype(np.float16)
    assert y.tobytes() == want.tobytes()


def test_glu_bad_act_names_act():
    g = f32(2, 3)
    with pytest.raises(kb.InvalidArgumentError, match="act"):
        kb.glu(g, g.copy(), act=9)


def test_add_rmsnorm_matches_add_then_rmsnorm():
    x, res, w = f32(5, 300, seed=4), f32(5, 300, seed=5, scale=10), f32(300, seed=6, scale=1)
    r1 = res.copy()
    y = kb.add_rmsnorm(x, r1, w, eps=1e-6)
    r2 = kb.add(res, x)
    want = kb.rmsnorm(r2, w, eps=1e-6)
    assert r1.tobytes() == r2.tobytes()
    assert y.tobytes() == want.tobytes()
    # In place: out = x.
    x2, r3 = x.copy(), res.copy()
    assert kb.add_rmsnorm(x2, r3, w, x2, eps=1e-6) is x2
    assert x2.tobytes() == want.tobytes() and r3.tobytes() == r2.tobytes()


def test_add_rmsnorm_residual_may_not_be_x():
    x, w = f32(2, 8), f32(8)
    with pytest.raises(kb.InvalidArgumentError, match="residual"):
        kb.add_rmsnorm(x, x, w, eps=1e-5)
