"""kernelbridge.Buffer on CPU contexts: data movement, ranges, lifetime, and
kernels on Buffers (bit-identical to the same kernels on numpy arrays)."""

import gc

import numpy as np
import pytest

import kernelbridge as kb

RNG = np.random.default_rng(99)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.fixture
def ctx():
    with kb.Context(threads=2) as c:
        yield c


# --- data movement ----------------------------------------------------------------


def test_round_trip_and_properties(ctx):
    x = f32(3, 5)
    b = kb.Buffer.from_numpy(ctx, x)
    assert b.shape == (3, 5) and b.dtype == np.float32 and b.ndim == 2 and b.size == 15 and b.nbytes == 60
    assert b.itemsize == 4 and len(b) == 3
    assert b.device is None and not b.is_cuda and b.context is ctx and not b.closed
    assert b.address % 64 == 0  # host buffers are 64-byte aligned
    got = b.numpy()
    assert got.dtype == np.float32 and np.array_equal(got, x) and not np.shares_memory(got, x)
    assert "host" in repr(b)
    # Host buffers have no __cuda_array_interface__; numpy sees them without a copy.
    assert not hasattr(b, "__cuda_array_interface__")
    view = np.asarray(b)
    assert view.__array_interface__["data"][0] == b.address and np.array_equal(view, x)
    view[0, 0] = 42
    assert b.numpy()[0, 0] == 42


def test_default_context_and_dtypes():
    for dtype in (np.float32, np.int32, np.float16, np.uint16, np.uint8, np.float64):
        a = (np.arange(12) % 7).astype(dtype).reshape(3, 4)
        b = kb.Buffer.from_numpy(None, a)
        assert b.dtype == dtype and b.context is None
        assert np.array_equal(b.numpy(), a)
    e = kb.Buffer(None, 0)
    assert e.shape == (0,) and e.nbytes == 0 and e.numpy().shape == (0,)
    assert kb.Buffer.empty(None, (2, 0, 3)).size == 0
    assert kb.Buffer(None, (), np.float32).shape == ()


def test_upload_download_with_offsets(ctx):
    b = kb.Buffer.zeros(ctx, 8, np.float32)
    assert not b.numpy().any()
    b.upload(np.array([1, 2], np.float32), offset=8)
    assert b.numpy().tolist() == [0, 0, 1, 2, 0, 0, 0, 0]
    b.upload(bytes(np.array([5], np.float32).tobytes()), offset=28)  # bytes-like: raw bytes
    out = np.zeros(3, np.float32)
    assert b.download(out, offset=20) is out
    assert out.tolist() == [0, 0, 5]
    raw = bytearray(8)
    b.download(raw, offset=8)
    assert np.frombuffer(raw, np.float32).tolist() == [1, 2]
    # A non-contiguous source is made contiguous (host to host).
    b.upload(np.arange(16, dtype=np.float32)[::2])
    assert b.numpy().tolist() == list(range(0, 16, 2))


def test_fill_and_copy(ctx):
    b = kb.Buffer(ctx, 4, np.int32)
    b.fill(0)
    b.fill(1, offset=4, nbytes=4)
    assert b.numpy().tolist() == [0, 0x01010101, 0, 0]
    b.fill(255, offset=12)
    assert b.numpy().tolist() == [0, 0x01010101, 0, -1]
    c = b.copy()
    assert c is not b and c.context is ctx and np.array_equal(c.numpy(), b.numpy())
    d = kb.Buffer.zeros(ctx, 6, np.int32)
    d.copy_from(b, offset=8, src_offset=4, nbytes=8)
    assert d.numpy().tolist() == [0, 0, 0x01010101, 0, 0, 0]
    d.copy_from(c)  # the whole of src (16 bytes) at offset 0
    assert d.numpy().tolist()[:4] == b.numpy().tolist()
    d.copy_from(d, offset=0, src_offset=0, nbytes=8)  # identical ranges are allowed


def test_out_of_range_raises_naming_argument_and_writes_nothing(ctx):
    b = kb.Buffer.from_numpy(ctx, np.arange(4, dtype=np.float32))
    before = b.numpy()
    cases = [
        (lambda: b.upload(np.ones(2, np.float32), offset=12), "offset 12 with 8 bytes"),
        (lambda: b.upload(np.ones(2, np.float32), offset=-4), "offset -4"),
        (lambda: b.fill(7, offset=17), "offset 17"),
        (lambda: b.fill(7, offset=8, nbytes=9), "offset 8 with 9 bytes"),
        (lambda: b.download(np.zeros(5, np.float32)), "offset 0 with 20 bytes"),
        (lambda: b.copy_from(b, offset=8, src_offset=0, nbytes=12), "offset 8 with 12 bytes"),
        (lambda: b.copy_from(b, src_offset=20, nbytes=1), "src_offset 20"),
    ]
    for call, text in cases:
        with pytest.raises(kb.InvalidArgumentError, match=text) as e:
            call()
        assert isinstance(e.value, ValueError) and "outside the buffer (16 bytes)" in str(e.value)
        assert np.array_equal(b.numpy(), before)
    out = np.full(5, 9, np.float32)
    with pytest.raises(kb.InvalidArgumentError):
        b.download(out)
    assert (out == 9).all()
    with pytest.raises(ValueError, match=r"\[0, 255\]"):
        b.fill(256)
    with pytest.raises(TypeError, match="byte"):
        b.fill(1.0)


def test_dtype_and_kind_checks(ctx):
    b = kb.Buffer(ctx, 4, np.float32)
    with pytest.raises(TypeError, match="src has dtype float64"):
        b.upload(np.ones(4))
    with pytest.raises(TypeError, match="out has dtype int32"):
        b.download(np.zeros(4, np.int32))
    with pytest.raises(TypeError, match="copy_from"):
        b.upload(kb.Buffer(ctx, 4))
    with pytest.raises(TypeError, match="src must be a Buffer"):
        b.copy_from(np.zeros(4, np.float32))
    with pytest.raises(TypeError):
        kb.Buffer(ctx, 4, object)
    with pytest.raises(ValueError, match="must not be negative"):
        kb.Buffer(ctx, (2, -1))
    with pytest.raises(TypeError, match="ctx must be a kernelbridge.Context"):
        kb.Buffer("cpu", 4)
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        b.download(ro)


def test_views_share_memory(ctx):
    b = kb.Buffer.from_numpy(ctx, np.arange(6, dtype=np.float16))
    r = b.reshape(2, 3)
    assert r.shape == (2, 3) and r.address == b.address
    assert b.reshape((3, -1)).shape == (3, 2)
    with pytest.raises(kb.ShapeMismatchError):
        b.reshape(4, 2)
    bits = b.view(np.uint16)
    assert np.array_equal(bits.numpy(), np.arange(6, dtype=np.float16).view(np.uint16))
    with pytest.raises(ValueError, match="bytes per element"):
        b.view(np.float32)
    r.fill(0, offset=0, nbytes=2)
    assert b.numpy()[0] == 0


def test_close_and_use_after_close(ctx):
    b = kb.Buffer.from_numpy(ctx, f32(4))
    with b as same:
        assert same is b
    assert b.closed and "closed" in repr(b)
    b.close()  # idempotent
    for call in (b.numpy, lambda: b.fill(0), lambda: b.upload(np.ones(4, np.float32)), b.copy, lambda: b.reshape(2, 2)):
        with pytest.raises(kb.InvalidArgumentError, match="closed"):
            call()
    with pytest.raises(kb.InvalidArgumentError, match="x is a closed Buffer"):
        kb.silu(b, ctx=ctx)
    with pytest.raises(kb.InvalidArgumentError, match="out is a closed Buffer"):
        kb.silu(f32(4), out=b, ctx=ctx)
    other = kb.Buffer(ctx, 4)
    with pytest.raises(kb.InvalidArgumentError, match="src is a closed Buffer"):
        other.copy_from(b)


def test_numpy_view_keeps_memory_alive(ctx):
    b = kb.Buffer.from_numpy(ctx, np.arange(1000, dtype=np.float32))
    view = np.asarray(b)
    memory = b._memory
    b.close()
    del b
    gc.collect()
    assert memory.finalizer.alive  # the view still uses it
    assert view[999] == 999
    del view, memory
    gc.collect()


def test_memory_freed_on_close_and_gc(ctx):
    b = kb.Buffer(ctx, 16)
    fin = b._memory.finalizer
    b.close()
    assert not fin.alive
    b = kb.Buffer(ctx, 16)
    fin = b._memory.finalizer
    del b
    gc.collect()
    assert not fin.alive


def test_buffer_outlives_its_context():
    ctx = kb.Context()
    b = kb.Buffer.from_numpy(ctx, np.arange(3, dtype=np.float32))
    ctx.close()
    # A host buffer then works with the calling thread's default context (or ctx=).
    assert b.numpy().tolist() == [0, 1, 2]
    b.fill(0)
    with kb.Context() as other:
        b.upload(np.ones(3, np.float32), ctx=other)
        assert kb.silu(b, ctx=other).numpy().tolist() == kb.silu(np.ones(3, np.float32)).tolist()


# --- kernels on buffers ----------------------------------------------------------------


def _bits(a):
    a = np.asarray(a.numpy() if isinstance(a, kb.Buffer) else a)
    return a.view(np.uint8)


def _same(got, want):
    assert isinstance(got, kb.Buffer)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(_bits(got), _bits(want))


def test_kernels_on_buffers_equal_numpy_bit_for_bit(ctx):
    B = lambda a: kb.Buffer.from_numpy(ctx, a)  # noqa: E731
    x, w, bias = f32(5, 33), f32(33), f32(33)
    for fn in (kb.silu, kb.gelu, kb.gelu_tanh, kb.softmax, kb.log_softmax):
        _same(fn(B(x), ctx=ctx), fn(x, ctx=ctx))
    _same(kb.add(B(x), B(x * 2), ctx=ctx), kb.add(x, x * 2, ctx=ctx))
    _same(kb.scale(B(x), alpha=-1.5, ctx=ctx), kb.scale(x, alpha=-1.5, ctx=ctx))
    _same(kb.add_bias(B(x), B(bias), ctx=ctx), kb.add_bias(x, bias, ctx=ctx))
    _same(kb.rmsnorm(B(x), B(w), eps=1e-6, ctx=ctx), kb.rmsnorm(x, w, eps=1e-6, ctx=ctx))
    _same(kb.layernorm(B(x), None, B(bias), ctx=ctx), kb.layernorm(x, None, bias, ctx=ctx))
    a, b = f32(7, 4), f32(6, 4)
    _same(kb.gemm(B(a), B(b), trans_b=True, ctx=ctx), kb.gemm(a, b, trans_b=True, ctx=ctx))
    q, k, v = f32(1, 4, 3, 8), f32(1, 2, 5, 8), f32(1, 2, 5, 8)
    _same(kb.attention(B(q), B(k), B(v), causal=True, ctx=ctx), kb.attention(q, k, v, causal=True, ctx=ctx))
    ids, table = np.array([2, 0, 1], np.int32), f32(3, 4)
    _same(kb.embedding(B(ids), B(table), ctx=ctx), kb.embedding(ids, table, ctx=ctx))
    _same(kb.argmax(B(x), ctx=ctx), kb.argmax(x, ctx=ctx))
    _same(kb.sample(B(x), seed=3, ctx=ctx), kb.sample(x, seed=3, ctx=ctx))
    logits, targets = f32(4, 6), np.array([1, -100, 5, 0], np.int32)
    got = kb.cross_entropy(B(logits), B(targets), ctx=ctx)
    want = kb.cross_entropy(logits, targets, ctx=ctx)
    _same(got[0], want[0])
    _same(got[1], want[1])
    # Elementwise kernels keep any shape on Buffers too.
    x3 = f32(2, 3, 4)
    _same(kb.silu(B(x3), ctx=ctx), kb.silu(x3, ctx=ctx))


def test_new_outputs_are_buffers_on_the_call_context(ctx):
    x = f32(2, 3)
    y = kb.softmax(kb.Buffer.from_numpy(ctx, x), ctx=ctx)
    assert isinstance(y, kb.Buffer) and y.context is ctx and y.device is None
    # One Buffer among numpy arguments is enough.
    z = kb.add(x, kb.Buffer.from_numpy(ctx, x), ctx=ctx)
    assert isinstance(z, kb.Buffer)
    # Without ctx=, a host Buffer works on the default context.
    assert isinstance(kb.silu(kb.Buffer.from_numpy(None, x)), kb.Buffer)
    # gemm's omitted C is a zero-filled Buffer.
    c = kb.gemm(kb.Buffer.from_numpy(ctx, f32(2, 3)), f32(3, 4), beta=1.0, ctx=ctx)
    assert isinstance(c, kb.Buffer) and c.shape == (2, 4)
    # Numpy in, numpy out.
    assert type(kb.softmax(x, ctx=ctx)) is np.ndarray


def test_buffers_as_out_and_inout_in_place(ctx):
    x = f32(3, 4)
    buf = kb.Buffer.from_numpy(ctx, x)
    assert kb.softmax(buf, out=buf, ctx=ctx) is buf  # alias(x): in place
    assert np.array_equal(buf.numpy(), kb.softmax(x))
    out = kb.Buffer(ctx, (3, 4))
    assert kb.silu(x, out=out, ctx=ctx) is out  # numpy in, Buffer out (both host)
    assert np.array_equal(out.numpy(), kb.silu(x))
    a, b = f32(3, 2), f32(2, 4)
    c = kb.Buffer.from_numpy(ctx, np.ones((3, 4), np.float32))
    assert kb.gemm(a, b, c, beta=1.0, ctx=ctx) is c
    assert np.array_equal(c.numpy(), kb.gemm(a, b, np.ones((3, 4), np.float32), beta=1.0))
    p, g = kb.Buffer.from_numpy(ctx, np.ones(5, np.float32)), np.full(5, 0.5, np.float32)
    m, v = kb.Buffer.zeros(ctx, 5), kb.Buffer.zeros(ctx, 5)
    assert kb.adamw_step(p, g, m, v, step=1, ctx=ctx) is None
    pn = np.ones(5, np.float32)
    kb.adamw_step(pn, g, np.zeros(5, np.float32), np.zeros(5, np.float32), step=1)
    assert np.array_equal(p.numpy(), pn)


def test_buffer_argument_checks_name_the_argument(ctx):
    x = kb.Buffer.from_numpy(ctx, f32(2, 3))
    with pytest.raises(kb.ShapeMismatchError, match=r"add: b has shape \(3, 2\), expected \(2, 3\)"):
        kb.add(x, kb.Buffer(ctx, (3, 2)), ctx=ctx)
    with pytest.raises(kb.ShapeMismatchError, match=r"softmax: out has shape \(6,\), expected \(2, 3\)"):
        kb.softmax(x, out=kb.Buffer(ctx, 6), ctx=ctx)
    with pytest.raises(kb.ShapeMismatchError, match="softmax: x must have at least 1 dimension"):
        kb.softmax(kb.Buffer(ctx, ()), ctx=ctx)
    # Leading axes are rows: a [6] Buffer is one row of 6.
    assert kb.softmax(x.reshape(6), ctx=ctx).shape == (6,)
    with pytest.raises(TypeError, match=r"silu: x must have dtype float32, got <i4"):
        kb.silu(kb.Buffer(ctx, 3, np.int32), ctx=ctx)
    # A float16 Buffer runs silu_f16 (and gives a float16 Buffer).
    h = kb.silu(kb.Buffer.from_numpy(ctx, f32(3).astype(np.float16)), ctx=ctx)
    assert isinstance(h, kb.Buffer) and h.dtype == np.float16
    with pytest.raises(TypeError, match="out must have dtype float32"):
        kb.silu(x, out=kb.Buffer(ctx, (2, 3), np.int32), ctx=ctx)
    with pytest.raises(TypeError, match="ids must have dtype int32"):
        kb.embedding(kb.Buffer(ctx, 2, np.int64), f32(3, 2), ctx=ctx)
    out = kb.Buffer.from_numpy(ctx, np.full((2, 3), 7, np.float32))
    with pytest.raises(kb.InvalidArgumentError, match="eps"):
        kb.layernorm(x, eps=-1.0, out=out, ctx=ctx)
    assert (out.numpy() == 7).all()


def test_overlap_with_buffers_is_checked(ctx):
    buf = kb.Buffer.from_numpy(ctx, f32(6))
    before = buf.numpy()
    # x is a reversed numpy view of the Buffer's memory: Python copies it, so
    # the library cannot see the overlap with out; the wrapper does.
    with pytest.raises(ValueError, match="out partially overlaps x"):
        kb.silu(np.asarray(buf)[::-1], out=buf, ctx=ctx)
    table = kb.Buffer.from_numpy(ctx, f32(3, 4))
    with pytest.raises(ValueError, match="overlap"):
        kb.embedding(np.array([0], np.int32), table, out=np.asarray(table)[1:2], ctx=ctx)
    assert np.array_equal(buf.numpy(), before)
