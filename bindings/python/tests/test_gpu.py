"""The CUDA path of the Python binding.  Needs a CUDA device (compute
capability 8.0+, a CUDA 13 driver) and the backend library
libkernelbridge_cuda.so ($KB_CUDA_LIBRARY; //bindings/python:python_cuda_test
sets it to the one Bazel built).  Without them every GPU test is skipped
with the library's reason, and test_unavailable_reason checks that reason.

Tolerances are docs/cuda.md's (GPU result against the CPU kernel on the same
inputs).
"""

import numpy as np
import pytest

import kernelbridge as kb


def _probe():
    """None when a CUDA context can be made on device 0, else why not."""
    try:
        with kb.Context("cuda"):
            return None
    except kb.BackendUnavailableError as e:
        return e.message


REASON = _probe()
gpu = pytest.mark.skipif(REASON is not None, reason=f"no CUDA device: {REASON}")

RNG = np.random.default_rng(31)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


@pytest.fixture
def ctx():
    with kb.Context("cuda", 0) as c:
        yield c


def dev(ctx, a):
    return kb.Buffer.from_numpy(ctx, a)


# --- comparison helpers (docs/cuda.md) --------------------------------------------------


def ulps(got, want):
    """Distance in float32 units in the last place (0 for NaN == NaN)."""
    g = np.ascontiguousarray(got, np.float32).view(np.int32).astype(np.int64)
    w = np.ascontiguousarray(want, np.float32).view(np.int32).astype(np.int64)
    # Map the sign-magnitude bit patterns onto a monotonic integer line.
    g = np.where(g < 0, -(g & 0x7FFFFFFF), g)
    w = np.where(w < 0, -(w & 0x7FFFFFFF), w)
    d = np.abs(g - w)
    both_nan = np.isnan(got) & np.isnan(want)
    return np.where(both_nan, 0, d)


def assert_ulps(got, want, n, floor=0.0):
    got = got.numpy() if isinstance(got, kb.Buffer) else got
    assert got.shape == want.shape and got.dtype == want.dtype
    assert (np.isnan(got) == np.isnan(want)).all()
    bad = (ulps(got, want) > n) & ~(np.abs(got.astype(np.float64) - want) <= floor)
    assert not bad.any(), (got[bad][:5], want[bad][:5])


def assert_bitwise(got, want):
    got = got.numpy() if isinstance(got, kb.Buffer) else got
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)) or (
        np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)])
    )


# --- availability -------------------------------------------------------------------------


def test_unavailable_reason():
    """Without a usable device the message says which part is missing; with
    one, everything agrees that CUDA is there."""
    if REASON is None:
        assert kb.cuda.is_available() and kb.cuda.device_count() >= 1 and kb.cuda.unavailable_reason() is None
        return
    print(f"CUDA unavailable: {REASON}")
    assert REASON.startswith("kb_context_create: ")
    assert any(m in REASON for m in ("libkernelbridge_cuda.so", "NVIDIA driver", "CUDA device", "compute capability",
                                     "CUDA 13")), REASON
    with pytest.raises(kb.BackendUnavailableError):
        kb.Context("cuda", 0)
    assert not kb.cuda.is_available() and kb.cuda.device_count() == 0


# --- devices and contexts ---------------------------------------------------------------


@gpu
def test_device_queries():
    n = kb.cuda.device_count()
    assert n >= 1
    for i in range(n):
        assert kb.cuda.device_name(i)
        major, minor = kb.cuda.compute_capability(i)
        assert (major, minor) >= (8, 0) and 0 <= minor <= 9
        total, free = kb.cuda.total_memory(i), kb.cuda.free_memory(i)
        assert total > 0 and 0 <= free <= total
    with pytest.raises(kb.InvalidArgumentError, match="kb_cuda_device_name"):
        kb.cuda.device_name(n)


@gpu
def test_contexts():
    for c in (kb.Context("cuda"), kb.Context("cuda:0"), kb.Context("cuda", 0), kb.Context(kb.Backend.CUDA)):
        with c:
            assert c.backend is kb.Backend.CUDA and c.device == 0 and c.is_cuda
            assert "cuda" in repr(c)
            c.synchronize()
    auto = kb.Context("auto")
    assert auto.backend is kb.Backend.CUDA and auto.device == 0
    with pytest.raises(kb.InvalidArgumentError, match="kb_context_create_cuda"):
        kb.Context("cuda", kb.cuda.device_count())


# --- device buffers -----------------------------------------------------------------------


@gpu
def test_device_buffer_round_trip_and_ops(ctx):
    x = f32(4, 5)
    b = dev(ctx, x)
    assert b.device == 0 and b.is_cuda and b.context is ctx and "cuda:0" in repr(b)
    assert np.array_equal(b.numpy(), x)
    with pytest.raises(TypeError, match="never copied to the host implicitly"):
        np.asarray(b)
    b.fill(0, offset=4, nbytes=8)
    want = x.copy()
    want.reshape(-1)[1:3] = 0
    assert np.array_equal(b.numpy(), want)
    c = b.copy()
    assert c.device == 0 and np.array_equal(c.numpy(), want)
    d = kb.Buffer.zeros(ctx, (4, 5))
    d.copy_from(b, offset=20, src_offset=0, nbytes=40)
    assert np.array_equal(d.numpy().reshape(-1)[5:15], want.reshape(-1)[:10])
    out = np.zeros(3, np.float32)
    b.download(out, offset=8)
    assert np.array_equal(out, want.reshape(-1)[2:5])
    with pytest.raises(kb.InvalidArgumentError, match="outside the buffer"):
        b.upload(np.ones(3, np.float32), offset=72)
    assert np.array_equal(b.numpy(), want)
    host = kb.Buffer(None, (4, 5))
    with pytest.raises(kb.InvalidArgumentError, match="copies between kinds"):
        host.copy_from(b)


@gpu
def test_cuda_array_interface(ctx):
    b = dev(ctx, f32(3, 4))
    cai = b.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 4) and cai["typestr"] == "<f4"
    assert cai["data"] == (b.address, False) and cai["strides"] is None and cai["stream"] is None


@gpu
def test_buffer_outlives_context():
    c = kb.Context("cuda")
    b = dev(c, f32(3))
    c.close()
    with pytest.raises(kb.InvalidArgumentError, match="made on is closed"):
        b.numpy()
    with kb.Context("cuda") as other:
        assert b.numpy(ctx=other).shape == (3,)


# --- kernels ------------------------------------------------------------------------------


@gpu
def test_elementwise_and_rowwise_vs_cpu(ctx):
    x, y = f32(7, 300, scale=3.0), f32(7, 300)
    assert_bitwise(kb.add(dev(ctx, x), dev(ctx, y), ctx=ctx), kb.add(x, y))
    assert_bitwise(kb.mul(dev(ctx, x), dev(ctx, y), ctx=ctx), kb.mul(x, y))
    assert_bitwise(kb.scale(dev(ctx, x), alpha=0.7, ctx=ctx), kb.scale(x, alpha=0.7))
    bias = f32(300)
    assert_bitwise(kb.add_bias(dev(ctx, x), dev(ctx, bias), ctx=ctx), kb.add_bias(x, bias))
    for fn in (kb.silu, kb.gelu, kb.gelu_tanh):
        assert_ulps(fn(dev(ctx, x), ctx=ctx), fn(x), 1)
    assert_ulps(kb.softmax(dev(ctx, x), ctx=ctx), kb.softmax(x), 2, 1e-37)
    assert_ulps(kb.log_softmax(dev(ctx, x), ctx=ctx), kb.log_softmax(x), 2, 1e-37)
    w = f32(300)
    assert_ulps(kb.rmsnorm(dev(ctx, x), dev(ctx, w), eps=1e-5, ctx=ctx), kb.rmsnorm(x, w, eps=1e-5), 2)
    assert_ulps(kb.layernorm(dev(ctx, x), dev(ctx, w), dev(ctx, bias), ctx=ctx), kb.layernorm(x, w, bias), 2, 1e-6)
    assert_ulps(kb.layernorm(dev(ctx, x), None, None, ctx=ctx), kb.layernorm(x, None, None), 2, 1e-6)


@gpu
def test_in_place_and_out_on_device(ctx):
    x = f32(5, 64)
    b = dev(ctx, x)
    assert kb.softmax(b, out=b, ctx=ctx) is b
    assert_ulps(b.numpy(), kb.softmax(x), 2, 1e-37)
    out = kb.Buffer(ctx, (5, 64))
    assert kb.silu(dev(ctx, x), out=out, ctx=ctx) is out
    new = kb.silu(dev(ctx, x), ctx=ctx)
    assert isinstance(new, kb.Buffer) and new.device == 0 and new.context is ctx


@gpu
def test_gemm_attention_and_friends(ctx):
    m, n, k = 33, 17, 50
    a, b, c = f32(m, k), f32(n, k), f32(m, n)
    got = kb.gemm(dev(ctx, a), dev(ctx, b), dev(ctx, c), trans_b=True, alpha=0.5, beta=2.0, ctx=ctx)
    want = kb.gemm(a, b, c.copy(), trans_b=True, alpha=0.5, beta=2.0)
    bound = (k + 2) * 2.0**-23 * (0.5 * (np.abs(a) @ np.abs(b).T) + np.abs(2.0 * c))
    assert (np.abs(got.numpy().astype(np.float64) - want) <= bound).all()
    fresh = kb.gemm(dev(ctx, a), dev(ctx, b), trans_b=True, ctx=ctx)
    assert isinstance(fresh, kb.Buffer) and fresh.shape == (m, n) and fresh.device == 0
    q, kk, v = f32(2, 4, 9, 64), f32(2, 2, 11, 64), f32(2, 2, 11, 64)
    got = kb.attention(dev(ctx, q), dev(ctx, kk), dev(ctx, v), causal=True, ctx=ctx).numpy()
    want = kb.attention(q, kk, v, causal=True)
    assert (np.abs(got - want) <= 2e-5 + 1e-4 * np.abs(want)).all()
    ids, table = np.array([3, 0, 2], np.int32), f32(4, 8)
    assert_bitwise(kb.embedding(dev(ctx, ids), dev(ctx, table), ctx=ctx), kb.embedding(ids, table))
    logits = f32(6, 1000, scale=2.0)
    assert_bitwise(kb.argmax(dev(ctx, logits), ctx=ctx), kb.argmax(logits))
    assert_bitwise(kb.sample(dev(ctx, logits), seed=5, ctx=ctx), kb.sample(logits, seed=5))
    assert_bitwise(kb.topk_sample(dev(ctx, logits), k=10, seed=5, ctx=ctx), kb.topk_sample(logits, k=10, seed=5))
    assert_bitwise(kb.topp_sample(dev(ctx, logits), p=0.9, seed=5, ctx=ctx), kb.topp_sample(logits, p=0.9, seed=5))
    targets = np.array([1, -100, 999, 0, 5, 7], np.int32)
    losses, mean = kb.cross_entropy(dev(ctx, logits), dev(ctx, targets), ctx=ctx)
    wl, wm = kb.cross_entropy(logits, targets)
    assert np.allclose(losses.numpy(), wl, rtol=4 * 2.0**-23, atol=1e-6)
    assert np.allclose(mean.numpy(), wm, rtol=4 * 2.0**-23, atol=1e-6)


@gpu
@pytest.mark.parametrize("dt,r", [("f16", 2e-3), ("bf16", 1.6e-2)])
def test_reduced_precision_on_device(ctx, dt, r):
    def to16(a):
        if dt == "f16":
            return a.astype(np.float16)
        return (a.view(np.uint32) >> 16).astype(np.uint16)  # truncation is fine for inputs

    def widen(a):
        return a.astype(np.float32) if dt == "f16" else (a.astype(np.uint32) << 16).view(np.float32)

    x = to16(f32(4, 128, scale=2.0))
    for name, atol in (("silu", 1e-3), ("add", 0.0), ("softmax", 1e-6)):
        fn = getattr(kb, f"{name}_{dt}")
        args = (x, x) if name == "add" else (x,)
        got = fn(*[dev(ctx, a) for a in args], ctx=ctx)
        assert isinstance(got, kb.Buffer) and got.dtype == x.dtype
        want = getattr(kb, name)(*[widen(a) for a in args])
        assert (np.abs(widen(got.numpy()) - want) <= atol + r * np.abs(want)).all(), name


# --- memory kinds ------------------------------------------------------------------------


@gpu
def test_wrong_memory_kinds_are_refused(ctx):
    x = f32(2, 3)
    with pytest.raises(kb.InvalidArgumentError, match=r"softmax: x is host memory \(a numpy array\) but ctx is a CUDA "
                                                      r"context on device 0"):
        kb.softmax(x, ctx=ctx)
    with pytest.raises(kb.InvalidArgumentError, match=r"x is host memory \(a Buffer\)"):
        kb.softmax(kb.Buffer.from_numpy(None, x), ctx=ctx)
    with pytest.raises(kb.InvalidArgumentError, match="out is host memory"):
        kb.softmax(dev(ctx, x), out=np.zeros((2, 3), np.float32), ctx=ctx)
    with pytest.raises(kb.InvalidArgumentError, match=r"x is memory of CUDA device 0 \(a Buffer\) but ctx is a CPU"):
        kb.softmax(dev(ctx, x))


class ForeignCAI:
    """Another library's CUDA array: only __cuda_array_interface__."""

    def __init__(self, buf):
        self.buf = buf  # keeps the memory alive
        self.__cuda_array_interface__ = dict(buf.__cuda_array_interface__)


@gpu
def test_foreign_cuda_arrays_zero_copy(ctx):
    x = f32(3, 8)
    src = ForeignCAI(dev(ctx, x))
    got = kb.softmax(src, ctx=ctx)
    assert isinstance(got, kb.Buffer)
    assert_ulps(got, kb.softmax(x), 2, 1e-37)
    target = dev(ctx, np.zeros((3, 8), np.float32))
    out = ForeignCAI(target)
    assert kb.silu(src, out=out, ctx=ctx) is out
    assert_ulps(target.numpy(), kb.silu(x), 3)
    with pytest.raises(kb.InvalidArgumentError, match="CPU context"):
        kb.silu(src)


@gpu
def test_torch_and_cupy_interop(ctx):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.randn(4, 16, device="cuda")
    torch.cuda.synchronize()  # kernelbridge runs on its own stream
    y = kb.softmax(t, ctx=ctx)
    back = torch.as_tensor(y, device="cuda")  # through y's __cuda_array_interface__, no copy
    assert back.data_ptr() == y.address
    assert torch.allclose(back, torch.softmax(t, dim=1), rtol=1e-6, atol=1e-7)

    class OnlyDLPack:
        def __init__(self, tensor):
            self.tensor = tensor

        def __dlpack__(self, **kw):
            return self.tensor.__dlpack__()

        def __dlpack_device__(self):
            return self.tensor.__dlpack_device__()

    z = kb.softmax(OnlyDLPack(t), ctx=ctx)
    assert torch.allclose(torch.as_tensor(z, device="cuda"), back)


@gpu
def test_torch_bfloat16_tensors(ctx):
    """PyTorch describes bfloat16 as raw bytes ("<V2") in its
    __cuda_array_interface__; the binding then takes the tensor through DLPack,
    which names the type."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.randn(4, 64, device="cuda").to(torch.bfloat16)
    out = torch.empty_like(t)
    torch.cuda.synchronize()
    assert kb.silu_bf16(t, out=out, ctx=ctx) is out
    want = torch.nn.functional.silu(t.float())
    assert torch.allclose(out.float(), want, rtol=1.6e-2, atol=1e-3)
