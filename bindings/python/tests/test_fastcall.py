"""The C fast path (src/fastcall.c): it runs the common case of every kernel
whose contract it covers, gives the same bits and the same objects back as the
Python path, declines everything else to that path, and hands every library
error to it."""

import os
import threading

import numpy as np
import pytest

import kernelbridge as kb
from kernelbridge import _kernels, _runtime

pytestmark = pytest.mark.skipif(
    _runtime._fastcall is None or os.environ.get("KB_PYTHON_FASTCALL") == "0", reason="the fast path is off"
)

def f32(*shape, seed=0):
    """The same array for the same shape and seed (both paths see the same inputs)."""
    return np.random.default_rng([seed, *shape]).standard_normal(shape).astype(np.float32)


def both(call):
    """call() on the fast path and on the Python path: (fast result, Python
    result, fast calls made while running the first)."""
    kb.default_context()  # a thread's first call makes it, on the Python path
    before = _runtime.fast_calls()
    fast = call()
    made = _runtime.fast_calls() - before
    was = _runtime.fast_enabled(False)
    try:
        slow = call()
    finally:
        _runtime.fast_enabled(was)
    return fast, slow, made


def same(a, b):
    if a is None or b is None:
        return a is b
    if isinstance(a, tuple) or isinstance(b, tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same(p, q) for p, q in zip(a, b))
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def rope_ex(with_k=True, dtype=np.float32, **kw):
    """kb.rope_ex on fresh q [2, 3, 4, 8] (and k [2, 3, 2, 8]) rotated in
    place: the rotated arrays, so that both paths' results are compared."""
    q = f32(2, 3, 4, 8).astype(dtype)
    k = f32(2, 3, 2, 8, seed=1).astype(dtype) if with_k else None
    assert kb.rope_ex(np.array([[0, 1, 2], [7, 4000, 9]], np.int32), q, k, rotary_dim=6, **kw) is None
    return (q, k) if with_k else q


x24, w4 = f32(2, 3, 4), f32(4)
ids = np.array([2, 0, 1, 2], np.int32)
# Weights in storage formats (u8 tensors): [3, 64] as Q8_0 (204 bytes) and Q4_0 (108).
Q8, Q4 = kb.quantize(f32(3, 64), kb.Dtype.Q8_0), kb.quantize(f32(3, 64), kb.Dtype.Q4_0)
CASES = {
    "silu": lambda: kb.silu(x24),
    "gelu": lambda: kb.gelu(x24),
    "gelu_tanh": lambda: kb.gelu_tanh(x24),
    "add": lambda: kb.add(x24, x24),
    "mul": lambda: kb.mul(x24, x24),
    "scale": lambda: kb.scale(x24, alpha=0.5),
    "scale int alpha": lambda: kb.scale(x24, alpha=3),
    "add_bias": lambda: kb.add_bias(x24, w4),
    "softmax": lambda: kb.softmax(x24),
    "softmax 1-D": lambda: kb.softmax(w4),
    "log_softmax": lambda: kb.log_softmax(x24),
    "rmsnorm": lambda: kb.rmsnorm(x24, w4, eps=1e-5),
    "layernorm": lambda: kb.layernorm(x24, w4, w4),
    "layernorm no affine": lambda: kb.layernorm(x24),
    "embedding": lambda: kb.embedding(ids, f32(3, 5)),
    "rope": lambda: kb.rope(f32(3, 2, 8), np.arange(3, dtype=np.int32)),
    "attention": lambda: kb.attention(f32(1, 2, 3, 4), f32(1, 2, 5, 4), f32(1, 2, 5, 4), causal=True),
    "cross_entropy_backward": lambda: kb.cross_entropy_backward(f32(3, 7), np.array([1, -100, 6], np.int32)),
    "argmax": lambda: kb.argmax(x24),
    "sample": lambda: kb.sample(x24, seed=7),
    "topk_sample": lambda: kb.topk_sample(x24, k=2, seed=7),
    "topp_sample": lambda: kb.topp_sample(x24, p=0.9, seed=2**64 - 1),
    "linear": lambda: kb.linear(x24, f32(5, 4), f32(5)),
    "cross_entropy": lambda: kb.cross_entropy(f32(3, 7), np.array([1, -100, 6], np.int32)),
    "linear act int": lambda: kb.linear(x24, f32(5, 4), act=int(kb.Activation.GELU)),
    "linear act member": lambda: kb.linear(x24, f32(5, 4), act=kb.Activation.SILU),
    "gemm": lambda: kb.gemm(f32(3, 4), f32(4, 5)),
    "gemm trans": lambda: kb.gemm(f32(4, 3), f32(5, 4), trans_a=True, trans_b=True, alpha=2),
    "gemm into c": lambda: kb.gemm(f32(3, 4), f32(4, 5), f32(3, 5), beta=0.5),
    "gemm_batched": lambda: kb.gemm_batched(f32(2, 3, 4), f32(2, 5, 4), trans_b=True),
    "gemm empty k": lambda: kb.gemm(f32(3, 0), f32(0, 5)),
    "attention_ex": lambda: kb.attention_ex(f32(1, 2, 3, 4), f32(1, 1, 5, 4), f32(1, 1, 5, 4), causal=True),
    "attention_ex seq-major, mask, lengths": lambda: kb.attention_ex(
        f32(2, 3, 2, 4), f32(2, 5, 2, 4), f32(2, 5, 2, 4), np.array([5, 2], np.int32), f32(1, 1, 3, 5), seq_major=True
    ),
    "rope_ex": lambda: rope_ex(),
    "rope_ex k None, adjacent, llama3": lambda: rope_ex(
        False, style=kb.RopeStyle.ADJACENT, scaling=kb.RopeScaling.LLAMA3, theta=500000.0, factor=8.0,
        original_max_position=64,
    ),
    "rope_ex f16": lambda: rope_ex(dtype=np.float16, scaling="linear", factor=2.0),
    "silu f16": lambda: kb.silu(x24.astype(np.float16)),
    "softmax bf16 bits": lambda: kb.softmax_bf16(np.full((2, 4), 0x3F80, np.uint16)),
    "add f16 as uint16": lambda: kb.add_f16(np.ones(5, np.uint16), np.ones(5, np.uint16)),
    "quantize": lambda: _kernels.quantize(f32(3, 64), type=kb.Dtype.Q8_0, y_bytes=204),
    "quantize into 2-D out": lambda: _kernels.quantize(f32(3, 64), np.empty((3, 36), np.uint8), type=2),
    "quantize rows": lambda: _kernels.quantize(f32(2, 3, 32), type=1, y_bytes=384),
    "quantize QTensor": lambda: kb.quantize(f32(3, 64), kb.Dtype.Q4_0).data,
    "dequantize": lambda: _kernels.dequantize(Q8.data, type=8, rows=3, cols=64),
    "dequantize into out": lambda: _kernels.dequantize(Q8.data, np.empty((3, 64), np.float32), type=kb.Dtype.Q8_0),
    "dequantize QTensor": lambda: Q4.dequantize(),
    "linear_w": lambda: kb.linear_w(f32(2, 64), Q8.data, weight_type=kb.Dtype.Q8_0, out_features=3),
    "linear_w out_features from bias": lambda: kb.linear_w(f32(5, 64), Q4.data, f32(3), weight_type=2, act=4),
    "linear_w 2-D bytes": lambda: kb.linear_w(f32(1, 64), Q8.data.reshape(3, -1), weight_type=8, out_features=3),
    "linear QTensor": lambda: kb.linear(f32(2, 3, 64), Q4, f32(3), act=kb.Activation.RELU),
    "embedding_w": lambda: kb.embedding_w(ids, Q4.data, vocab=3, dim=64, table_type=kb.Dtype.Q4_0),
    "embedding QTensor": lambda: kb.embedding(ids, Q8),
    # gate and up carry a row stride (ld): exactly 2-D, no leading axes.
    "glu": lambda: kb.glu(x24[0], x24[1]),
    "glu gelu": lambda: kb.glu(x24[0], x24[1], act=kb.Activation.GELU),
    "add_rmsnorm": lambda: kb.add_rmsnorm(x24, x24 * 2, w4, eps=1e-5),
    "moe_route": lambda: kb.moe_route(f32(3, 8), top_k=2, routing=kb.MoeRouting.TOPK_SOFTMAX),
    "moe_route f16": lambda: kb.moe_route(f32(3, 8).astype(np.float16), top_k=2, routing=0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_common_case_is_fast_and_identical(name):
    fast, slow, made = both(CASES[name])
    assert made == 1, f"{name}: the fast path was not taken"
    assert same(fast, slow), name


def _slow(call):
    was = _runtime.fast_enabled(False)
    try:
        return call()
    finally:
        _runtime.fast_enabled(was)


def test_out_is_returned_and_written_in_place():
    x = f32(4, 6)
    out = np.empty_like(x)
    before = _runtime.fast_calls()
    r = kb.softmax(x, out=out)
    assert r is out and _runtime.fast_calls() == before + 1
    assert same(out, _slow(lambda: kb.softmax(x)))
    # In place (alias(x)).
    y = x.copy()
    assert kb.softmax(y, out=y) is y and same(y, out)


def test_adamw_updates_in_place_and_returns_none():
    p, g, m, v = (f32(10, seed=i) for i in range(4))
    ref = [a.copy() for a in (p, g, m, v)]
    before = _runtime.fast_calls()
    assert kb.adamw_step(p, g, m, v, step=3) is None
    assert _runtime.fast_calls() == before + 1
    rp, rg, rm, rv = ref
    _slow(lambda: kb.adamw_step(rp, rg, rm, rv, step=3))
    for a, b in zip((p, m, v), (rp, rm, rv)):
        assert same(a, b)


# Each of these goes to the Python path, which gives the same result as
# before (or raises its usual error).
DECLINED = {
    "non-contiguous": lambda: kb.silu(f32(4, 6)[:, ::2]),
    "list": lambda: kb.silu([1.0, 2.0]),
    "float64": lambda: kb.silu(np.ones(3)),
    "Fortran order": lambda: kb.softmax(np.asfortranarray(f32(3, 4))),
    "numpy scalar eps": lambda: kb.rmsnorm(f32(2, 4), f32(4), eps=np.float32(1e-5)),
    "flag as numpy bool": lambda: kb.attention(f32(1, 1, 2, 4), f32(1, 1, 2, 4), f32(1, 1, 2, 4), causal=np.True_),
    "act as string": lambda: kb.linear(f32(2, 4), f32(3, 4), act="gelu"),
    "read-only out": lambda: kb.silu(f32(3), out=_readonly(np.empty(3, np.float32))),
    "subclass": lambda: kb.silu(np.ones(3, np.float32).view(np.matrix)),
    "bytes object": lambda: kb.linear_w(f32(2, 64), bytes(Q8.data), weight_type=8, out_features=3),
    "bytearray out": lambda: _kernels.quantize(f32(3, 64), bytearray(204), type=8),
    "dtype as name": lambda: kb.linear_w(f32(2, 64), Q8.data, weight_type="q8_0", out_features=3),
    "no size given": lambda: kb.linear_w(f32(2, 64), Q8.data, weight_type=8),
    "int8 bytes": lambda: kb.linear_w(f32(2, 64), Q8.data.view(np.int8), weight_type=8, out_features=3),
}


def _readonly(a):
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_other_arguments_take_the_python_path(name):
    before = _runtime.fast_calls()
    try:
        fast = DECLINED[name]()
    except Exception as e:  # the Python path's own error, the same both ways
        with pytest.raises(type(e), match=str(e).split(":")[0]):
            _slow(DECLINED[name])
        fast = None
    else:
        assert same(np.asarray(fast), np.asarray(_slow(DECLINED[name])))
    assert _runtime.fast_calls() == before, f"{name}: taken by the fast path"


def test_shape_errors_are_raised_by_the_python_path():
    before = _runtime.fast_calls()
    with pytest.raises(kb.ShapeMismatchError, match="weight"):
        kb.rmsnorm(f32(2, 4), f32(5), eps=1e-5)
    with pytest.raises(kb.ShapeMismatchError, match="out"):
        kb.add(f32(3), f32(3), out=np.empty(4, np.float32))
    assert _runtime.fast_calls() == before


def test_library_errors_come_from_the_python_path_and_change_nothing():
    """ids out of range: the kernel fails on the fast path, which declines;
    the Python path calls it again and raises the library's error."""
    table = f32(3, 4)
    out = np.full((2, 4), 7, np.float32)
    before = _runtime.fast_calls()
    with pytest.raises(kb.InvalidArgumentError, match="embedding"):
        kb.embedding(np.array([0, 3], np.int32), table, out=out)
    assert (out == 7).all() and _runtime.fast_calls() == before


def test_contexts():
    x = f32(8)
    ctx = kb.Context(threads=1)
    fast, slow, made = both(lambda: kb.silu(x, ctx=ctx))
    assert made == 1 and same(fast, slow)
    ctx.close()
    before = _runtime.fast_calls()
    with pytest.raises(kb.InvalidArgumentError, match="closed"):
        kb.silu(x, ctx=ctx)
    assert _runtime.fast_calls() == before


def test_a_new_thread_gets_its_default_context_then_runs_fast():
    x, got = f32(8), []

    def run():
        before = _runtime.fast_calls()
        got.append(kb.silu(x))  # creates the thread's default context (Python path)
        got.append(kb.silu(x))
        got.append(_runtime.fast_calls() - before)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert got[2] == 1 and same(got[0], got[1])


def test_a_stale_extension_finds_no_shim():
    """The key names the C function and its parameter types: a kernel whose
    signature changed finds no shim and always takes the Python path."""
    fn = _runtime.fast("kb_add/cnt", ("add", (), (), 0, 0, (), -1, (), 0))
    assert fn(None) is _runtime.SLOW
    assert _kernels._fast_add is not fn and repr(_kernels._fast_add) == "<kernelbridge fast path of add>"


def test_bad_specs_are_rejected():
    shim = _runtime.lib.kbpy_fast_shim(b"kb_silu/cntt")
    assert shim
    Kernel = _runtime._fastcall.Kernel
    ok = ("silu", ((0, 0, 0, 1, (0,), -1), (0, 1, 0, 1, (0,), -1)),
          ((0, 0, "c"), (1, 0, "n"), (2, 0, "t"), (2, 1, "t")), 1, 0, (), 1, (), 0)
    bad = [
        ok[:1] + (((0, 0, 0, 9, (0,), -1), ok[1][1]),) + ok[2:],  # no rule 9
        ok[:1] + (((5, 0, 0, 0, (0,), -1), ok[1][1]),) + ok[2:],  # no dtype kind 5
        ok[:1] + (((4, 0, 0, 4, (0, 0), -1), ok[1][1]),) + ok[2:],  # a byte tensor has one axis, its size
        ok[:1] + (((0, 0, 0, 1, (3,), -1), ok[1][1]),) + ok[2:],  # axis names dim 3 of 1
        ok[:1] + (((0, 0, 0, 0, ((5, 0, 0),), -1), ok[1][1]),) + ok[2:],  # flag 5 of 0 scalars
        ok[:2] + (ok[2] + ((2, 5, "t"),),) + ok[3:],  # tensor 5 of 2
        ok[:6] + (2,) + ok[7:],  # result 2 of 2
        ok[:7] + ((4,), 0),  # absent-zero dim 4 of 1
        ok[:8] + (1,),  # one packed output
        ok[:8] + (3,),  # 3 packed outputs of 2 tensors
        ok[:8],  # 8 fields
    ]
    for spec in bad:
        with pytest.raises(ValueError):
            Kernel(shim, spec)
    with pytest.raises(TypeError):
        Kernel(0, None)
    k = Kernel(shim, ok)
    with pytest.raises(TypeError, match="3 arguments"):
        k(None, x24)


def test_no_references_leak():
    """Every path through the fast path (success with a given or a new
    output, declining before and after making an output, a failed status)
    leaves the arguments' reference counts as they were."""
    import sys

    x, w = f32(4, 8), f32(8)
    out = np.empty_like(x)
    ctx = kb.Context()
    ids, table, eout = np.array([0, 9], np.int32), f32(3, 8), np.empty((2, 8), np.float32)
    objs = (x, w, out, ctx, ids, table, eout)
    before = [sys.getrefcount(o) for o in objs]
    for _ in range(200):
        kb.rmsnorm(x, w, eps=1e-5, ctx=ctx)  # new output
        kb.rmsnorm(x, w, out, eps=1e-5, ctx=ctx)  # given output
        try:
            kb.rmsnorm(x, f32(9), eps=1e-5, ctx=ctx)  # declines on the shapes
        except kb.ShapeMismatchError:
            pass
        try:
            kb.embedding(ids, table, eout, ctx=ctx)  # the kernel fails: declines after the call
        except kb.InvalidArgumentError:
            pass
        try:
            kb.embedding(ids, table, ctx=ctx)  # fails after making the output
        except kb.InvalidArgumentError:
            pass
    assert [sys.getrefcount(o) for o in objs] == before


def test_outputs_made_for_a_failed_call_are_freed():
    """A call that fails after the fast path made its output frees it: 300
    failed calls with a 512 KiB output each would hold 150 MiB otherwise
    (numpy reports its array memory to tracemalloc)."""
    import tracemalloc

    ids, table = np.array([0, 9], np.int32), f32(3, 65536)
    kb.default_context()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(300):
            with pytest.raises(kb.InvalidArgumentError):
                kb.embedding(ids, table)
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 16 << 20, grown


def _outcome(call):
    """What a call does: ("ok", result bits / None, whether it returned out) or
    ("error", exception type, message)."""
    try:
        r = call()
    except Exception as e:  # noqa: BLE001 (compared, not handled)
        return ("error", type(e), str(e))
    if r is None:
        return ("ok", None)
    if isinstance(r, tuple):
        return ("ok", tuple(_outcome(lambda: a) for a in r))
    a = np.asarray(r)
    return ("ok", a.dtype.str, a.shape, a.tobytes())


def test_random_arguments_behave_the_same_on_both_paths():
    """Differential test: random kernels, dtypes, layouts, shapes (matching
    or not), scalar types, contexts and outputs; with the fast path on and
    off every call returns the same bits or raises the same error."""
    rng = np.random.default_rng(7)
    live, closed = kb.Context(), kb.Context()
    closed.close()

    def arr(shape, kind):
        dtype = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32}[kind]
        a = (rng.standard_normal(shape) * 2).astype(dtype)
        layout = rng.integers(0, 5)
        if layout == 1 and a.ndim >= 2:
            a = np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2)  # same shape, Fortran-like
        elif layout == 2:
            a = np.repeat(a, 2, axis=-1)[..., ::2]  # same values, strided
        elif layout == 3:
            a.flags.writeable = False
        return a

    def dim(n):
        return n if rng.random() < 0.85 else n + 1  # sometimes a mismatch

    def pick(common, rare):
        """Mostly one of common, sometimes (15%) one of rare."""
        choices = rare if rare and rng.random() < 0.15 else common
        return choices[rng.integers(0, len(choices))]

    def nbytes(dt, rows, cols):
        try:
            return kb.dtype_bytes(dt, rows, cols)
        except kb.Error:
            return rows * cols

    def raw(dt, rows, cols):
        """Random bytes of a [rows, cols] tensor stored as dt (sometimes a
        byte more), as one of the forms a u8 tensor takes."""
        b = rng.integers(0, 256, size=dim(nbytes(dt, rows, cols)), dtype=np.uint8)
        return pick([b, b.reshape(1, -1)], [bytes(b), b.view(np.int8), np.repeat(b, 2)[::2], b.astype(np.float32)])

    def scalar(v):
        return [v, float(v), np.float32(v), int(v) if float(v).is_integer() else v, "x"][rng.integers(0, 5)] \
            if rng.random() < 0.2 else v

    kinds = ["f32"] * 6 + ["f64", "f16", "i32"]
    for trial in range(400):
        k = kinds[rng.integers(0, len(kinds))]
        r, c = int(rng.integers(1, 5)), int(rng.integers(1, 20))
        ctx = [None, None, live, closed][rng.integers(0, 4)]
        which = rng.integers(0, 13)
        x = arr((r, c), k)
        out = [None, None, np.empty((r, dim(c)), np.float32), arr((r, c), "f32")][rng.integers(0, 4)]
        if which == 0:
            calls = lambda: kb.silu(x, out, ctx=ctx)
        elif which == 1:
            y = arr((r, dim(c)), k)
            calls = lambda: kb.add(x, y, out, ctx=ctx)
        elif which == 2:
            calls = lambda: kb.softmax(x, out, ctx=ctx)
        elif which == 3:
            w = arr((dim(c),), k)
            eps = scalar(1e-5)
            calls = lambda: kb.rmsnorm(x, w, out, eps=eps, ctx=ctx)
        elif which == 4:
            w = [None, arr((dim(c),), k)][rng.integers(0, 2)]
            calls = lambda: kb.layernorm(x, w, None, out, ctx=ctx)
        elif which == 5:
            b = arr((dim(c), int(rng.integers(1, 6))), k)
            ta = bool(rng.integers(0, 2))
            a = np.ascontiguousarray(x.T) if ta and x.flags.writeable else x
            alpha = scalar(1.0)
            calls = lambda: kb.gemm(a, b, trans_a=ta, alpha=alpha, ctx=ctx)
        elif which == 6:
            wt = arr((int(rng.integers(1, 6)), dim(c)), k)
            act = [0, 1, kb.Activation.GELU, "silu", 9][rng.integers(0, 5)]
            calls = lambda: kb.linear(x, wt, None, act=act, ctx=ctx)
        elif which == 7:
            ids = np.asarray(rng.integers(-1, 4, size=r), dtype=[np.int32, np.int64][rng.integers(0, 2)])
            table = arr((3, c), k)
            calls = lambda: kb.embedding(ids, table, ctx=ctx)
        elif which == 8:
            calls = lambda: kb.argmax(x, ctx=ctx)
        elif which in (10, 11, 12):
            # The storage-format kernels: u8 tensors of every form and byte
            # count, formats known or not, sizes given, derived or missing.
            cols = pick([32, 64], [33])
            dt = pick([kb.Dtype.Q8_0, kb.Dtype.Q4_0, 2, 8, 0, 1, 30], [3, "q4_0"])
            o = int(rng.integers(1, 4))
            xin = arr((r, cols), k)
            if which == 10:
                w = raw(dt, o, cols)
                bias = pick([None, arr((dim(o),), k)], [])
                outw = pick([None, None, np.empty((r, dim(o)), np.float32)], [])
                of = pick([o, dim(o)], [None])
                calls = lambda: kb.linear_w(xin, w, bias, outw, out_features=of, weight_type=dt, ctx=ctx)
            elif which == 11 and rng.random() < 0.5:
                n = nbytes(dt, r, cols)
                outq = pick([None, np.empty(dim(n), np.uint8)], [bytearray(n)])
                yb = pick([n], [None, n + 1])
                calls = lambda: _kernels.quantize(xin, outq, type=dt, y_bytes=yb, ctx=ctx)
            elif which == 11:
                xb = raw(dt, r, cols)
                outd = pick([None, np.empty((r, dim(cols)), np.float32)], [])
                rr, cc = pick([r], [None]), pick([cols], [None, cols + 1])
                calls = lambda: _kernels.dequantize(xb, outd, type=dt, rows=rr, cols=cc, ctx=ctx)
            else:
                ids = np.asarray(pick([rng.integers(0, 3, size=r)], [rng.integers(-1, 4, size=r)]),
                                 dtype=pick([np.int32], [np.int64]))
                tb = raw(dt, 3, cols)
                vocab, dm = pick([3], [4]), pick([cols], [None])
                oute = pick([None, np.empty((r, dim(cols)), np.float32)], [])
                calls = lambda: kb.embedding_w(ids, tb, oute, vocab=vocab, dim=dm, table_type=dt, ctx=ctx)
        else:
            tg = np.asarray(rng.integers(-1, c + 1, size=dim(r)), dtype=np.int32)
            outs = [None, (None, None), (np.empty(r, np.float32), None), (None, np.empty(1, np.float32)),
                    (np.empty(r, np.float32),), [None, None]][rng.integers(0, 6)]
            ii = scalar(-1)
            calls = lambda: kb.cross_entropy(x, tg, outs, ignore_index=ii, ctx=ctx)
        fast = _outcome(calls)
        slow = _outcome(lambda: _slow(calls))
        assert fast == slow, (trial, which, k, fast[:2], slow[:2])
