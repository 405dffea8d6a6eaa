"""Weights in storage formats (kb_dtype) from Python: kernelbridge.QTensor,
quantize / dequantize, and linear / embedding with a QTensor weight, which
run the generated linear_w / embedding_w.

Expectations are independent of the library: the formats' step sizes and
error bounds computed here in float64 (docs/kernels.md, "Weights in storage
formats"), numpy's own float16 conversion, and, when the `gguf` package is
importable (it is not a dependency of these tests), its numpy codecs.
"""

import copy
import pickle

import numpy as np
import pytest

import kernelbridge as kb
from kernelbridge import _kernels

D = kb.Dtype
FORMATS = [D.F32, D.F16, D.BF16, D.Q8_0, D.Q4_0]
BLOCKED = [D.Q8_0, D.Q4_0]
# Bytes per 32 elements of each format (the header's table).
BYTES_PER_32 = {D.F32: 128, D.F16: 64, D.BF16: 64, D.Q8_0: 34, D.Q4_0: 18}


def f32(*shape, seed=0):
    return np.random.default_rng([seed, *shape]).standard_normal(shape).astype(np.float32)


def widen_bf16(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def block_scales(x, dtype):
    """Per element, the float64 scale d of its block of 32 (before the
    binary16 rounding of the stored scale): Q8_0 max|x| / 127, Q4_0 the
    element of largest magnitude / -8 (signed)."""
    b = x.astype(np.float64).reshape(x.shape[0], -1, 32)
    if dtype == D.Q8_0:
        d = np.abs(b).max(axis=-1) / 127
    else:
        first = np.abs(b).argmax(axis=-1)
        d = np.take_along_axis(b, first[..., None], axis=-1)[..., 0] / -8
    return np.repeat(d, 32, axis=-1)


# --- the enum and byte counts ---------------------------------------------------------------


def test_dtype_is_ggmls_type_numbers():
    assert {m.name: int(m) for m in D} == {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 8, "BF16": 30}
    assert D(30) is D.BF16 and issubclass(D, int)


@pytest.mark.parametrize("dtype", FORMATS)
def test_dtype_bytes(dtype):
    for rows, cols in ((3, 64), (1, 32), (0, 96), (5, 0)):
        assert kb.dtype_bytes(dtype, rows, cols) == rows * cols // 32 * BYTES_PER_32[dtype]
    assert kb.dtype_bytes(dtype.name.lower(), 2, 32) == kb.dtype_bytes(int(dtype), 2, 32) == 2 * BYTES_PER_32[dtype]


def test_dtype_bytes_errors_name_the_argument():
    with pytest.raises(kb.InvalidArgumentError, match="cols must be a multiple of 32 for Q4_0.*got 33"):
        kb.dtype_bytes(D.Q4_0, 2, 33)
    assert kb.dtype_bytes(D.F16, 2, 33) == 132  # float formats take any cols
    with pytest.raises(kb.InvalidArgumentError, match=r"dtype must be a kernelbridge.Dtype \(F32 = 0.*got 3"):
        kb.dtype_bytes(3, 2, 32)
    with pytest.raises(kb.InvalidArgumentError, match="dtype must be one of 'f32', 'f16', 'q4_0', 'q8_0', 'bf16'"):
        kb.dtype_bytes("q5_0", 2, 32)
    with pytest.raises(kb.InvalidArgumentError, match="rows must be >= 0, got -1"):
        kb.dtype_bytes(D.F32, -1, 32)
    with pytest.raises(TypeError, match="cols must be an int"):
        kb.dtype_bytes(D.F32, 1, 32.0)
    with pytest.raises(kb.OutOfMemoryError, match="overflows"):
        kb.dtype_bytes(D.F32, 1 << 62, 64)


# --- quantize / dequantize ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FORMATS)
def test_round_trip_within_the_formats_step(dtype):
    x = f32(5, 96) * 3
    q = kb.quantize(x, dtype)
    assert isinstance(q, kb.QTensor) and q.dtype is dtype and q.shape == (5, 96)
    assert q.nbytes == 5 * 96 // 32 * BYTES_PER_32[dtype] and q.data.dtype == np.uint8 and q.data.ndim == 1
    back = q.dequantize()
    assert back.dtype == np.float32 and back.shape == x.shape
    assert kb.dequantize(q).tobytes() == back.tobytes()
    err = np.abs(back.astype(np.float64) - x)
    if dtype == D.F32:
        assert back.tobytes() == x.tobytes()
    elif dtype == D.F16:
        assert back.tobytes() == x.astype(np.float16).astype(np.float32).tobytes()  # numpy rounds to nearest even
    elif dtype == D.BF16:
        assert (err <= np.abs(x) * 2.0**-8).all()  # half a bfloat16 ulp
        assert not (err == 0).all()
    elif dtype == D.Q8_0:
        # Half a step of the block's scale, plus the scale's binary16 rounding times |q| <= 127.
        d = block_scales(x, dtype)
        assert (err <= d * (0.5 + 127 * 2.0**-11 + 2.0**-20)).all()
        assert err.max() > d.max() * 0.2  # really quantized
    else:
        # Q4_0: q = min(15, trunc(x / d + 8.5)): half a step, but a whole one
        # where the clamp to 15 bites (x / d >= 7.5, the far side of the
        # block's extreme); the binary16 scale times |q - 8| <= 8.
        d = block_scales(x, dtype)
        t = x / d
        bound = np.abs(d) * (np.where(t >= 7.5, 1.0, 0.5) + 8 * 2.0**-11 + 2.0**-20)
        assert (err <= bound).all()
        assert err.max() > np.abs(d).max() * 0.2


def test_quantize_rows_convention_and_out():
    x = f32(2, 3, 64)
    q = kb.quantize(x, D.Q8_0)
    assert q.shape == (6, 64) and q.data.tobytes() == kb.quantize(x.reshape(6, 64), D.Q8_0).data.tobytes()
    assert kb.quantize(x[0, 0], D.Q8_0).shape == (1, 64)
    for out in (np.empty(q.nbytes, np.uint8), np.empty((6, 68), np.uint8), bytearray(q.nbytes)):
        r = kb.quantize(x, D.Q8_0, out=out)
        assert bytes(out) == q.data.tobytes()
        assert np.shares_memory(r.data, np.asarray(out))  # the QTensor views out, no copy
    # The generated function returns the bytes themselves.
    y = _kernels.quantize(x, type=D.Q8_0, y_bytes=q.nbytes)
    assert y.dtype == np.uint8 and y.shape == (q.nbytes,) and y.tobytes() == q.data.tobytes()
    z = bytearray(q.nbytes)
    assert _kernels.quantize(x, z, type="q8_0") is z and bytes(z) == q.data.tobytes()


def test_dequantize_bytes_form():
    q = kb.quantize(f32(4, 64), D.Q4_0)
    want = q.dequantize()
    assert kb.dequantize(q.data, type=D.Q4_0, rows=4, cols=64).tobytes() == want.tobytes()
    out = np.full((4, 64), np.nan, np.float32)
    assert kb.dequantize(bytes(q.data), out, type=2) is out and out.tobytes() == want.tobytes()  # sizes from out
    assert q.dequantize(out=np.empty((4, 64), np.float32)).tobytes() == want.tobytes()
    with pytest.raises(TypeError, match="type= must be given"):
        kb.dequantize(q.data, rows=4, cols=64)
    with pytest.raises(TypeError, match="rows must be given"):
        kb.dequantize(q.data, type=D.Q4_0)
    with pytest.raises(TypeError, match="x is a QTensor"):
        kb.dequantize(q, type=D.Q4_0)


@pytest.mark.parametrize("dtype", FORMATS)
def test_the_gguf_packages_codecs_agree_bit_for_bit(dtype):
    """The gguf package's numpy quantize / dequantize (llama.cpp's Python
    port): the same bytes, and the same floats from its bytes."""
    gguf = pytest.importorskip("gguf")
    from gguf import quants

    gtype = gguf.GGMLQuantizationType[dtype.name]
    x = f32(6, 128) * 5
    theirs = np.ascontiguousarray(quants.quantize(x, gtype))
    assert kb.quantize(x, dtype).data.tobytes() == theirs.tobytes()
    q = kb.QTensor(dtype, x.shape, theirs)  # their array, used as it is
    assert q.dequantize().tobytes() == quants.dequantize(theirs, gtype).astype(np.float32).tobytes()


# --- QTensor --------------------------------------------------------------------------------


def test_data_is_used_in_place_and_read_only():
    w = f32(3, 64)
    q8 = kb.quantize(w, D.Q8_0)
    raw = np.frombuffer(q8.data.tobytes(), np.uint8).copy()
    q = kb.QTensor("q8_0", [3, 64], raw)
    assert np.shares_memory(q.data, raw) and raw.flags.writeable and not q.data.flags.writeable
    with pytest.raises(ValueError):
        q.data[0] = 1
    with pytest.raises(AttributeError):
        q.dtype = D.F32
    with pytest.raises(AttributeError):
        q._shape = (1, 1)
    raw[2] ^= 1  # the owner of the bytes may change them: the QTensor sees it
    assert q.data[2] == raw[2]
    assert repr(q) == "QTensor(Q8_0, shape=(3, 64), 204 bytes)"
    c = copy.copy(q)
    assert c.dtype is q.dtype and c.shape == q.shape and np.shares_memory(c.data, raw)
    p = pickle.loads(pickle.dumps(q))
    assert p.dtype is q.dtype and p.shape == q.shape and p.data.tobytes() == raw.tobytes()


def test_data_of_any_buffer_and_dtype(tmp_path):
    """A GGUF tensor is bytes at some offset of a file: a memory map of it,
    unaligned, gives the same results as the array the bytes came from."""
    w, x = f32(4, 96), f32(2, 96, seed=1)
    q = kb.quantize(w, D.Q4_0)
    want = kb.linear(x, q)
    path = tmp_path / "model.bin"
    path.write_bytes(b"GGUF+3" + q.data.tobytes() + b"tail")
    mm = np.memmap(path, np.uint8, mode="r")
    forms = [mm[6:6 + q.nbytes], bytes(q.data), bytearray(q.data), memoryview(bytes(q.data)),
             q.data.reshape(4, -1), kb.Buffer.from_numpy(None, q.data)]
    for data in forms:
        got = kb.QTensor(D.Q4_0, (4, 96), data)
        assert kb.linear(x, got).tobytes() == want.tobytes(), type(data)
    assert np.shares_memory(kb.QTensor(D.Q4_0, (4, 96), forms[0]).data, mm)
    # float16 weights as numpy float16: the array's bytes, whatever its dtype.
    w16 = w.astype(np.float16)
    assert kb.QTensor(D.F16, w.shape, w16).dequantize().tobytes() == w16.astype(np.float32).tobytes()


def test_qtensor_argument_errors_name_the_argument():
    data = kb.quantize(f32(3, 64), D.Q4_0).data
    with pytest.raises(kb.ShapeMismatchError, match=r"data has 107 bytes, expected 108 \(shape \(3, 64\) as Q4_0\)"):
        kb.QTensor(D.Q4_0, (3, 64), data[:107])
    with pytest.raises(kb.InvalidArgumentError, match=r"QTensor: shape \[3, 48\] as Q8_0: cols must be a multiple of 32"):
        kb.QTensor(D.Q8_0, (3, 48), np.zeros(3 * 51, np.uint8))
    with pytest.raises(kb.InvalidArgumentError, match="QTensor: dtype must be a kernelbridge.Dtype.*got 3"):
        kb.QTensor(3, (3, 64), data)
    with pytest.raises(kb.InvalidArgumentError, match="QTensor: dtype must be one of"):
        kb.QTensor("q4_1", (3, 64), data)
    with pytest.raises(TypeError, match=r"QTensor: shape must be \(rows, cols\)"):
        kb.QTensor(D.Q4_0, 192, data)
    with pytest.raises(kb.InvalidArgumentError, match=r"QTensor: shape\[0\] \(rows\) must be >= 0"):
        kb.QTensor(D.Q4_0, (-3, 64), data)
    with pytest.raises(TypeError, match="QTensor: data must be a numpy array or an object exposing the buffer"):
        kb.QTensor(D.Q4_0, (3, 64), list(data))
    with pytest.raises(kb.InvalidArgumentError, match="QTensor: data must be C-contiguous"):
        kb.QTensor(D.F32, (2, 3), np.zeros((3, 2), np.float32).T)
    for bad in (data[:107], np.zeros(5, object)):
        with pytest.raises(kb.Error):
            kb.QTensor(D.Q4_0, (3, 64), bad)


# --- linear ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FORMATS)
def test_linear_with_a_qtensor_is_linear_w(dtype):
    x, w, b = f32(4, 64), f32(5, 64, seed=1), f32(5, seed=2)
    q = kb.quantize(w, dtype)
    got = kb.linear(x, q, b, act="gelu")
    want = kb.linear_w(x, q.data, b, weight_type=dtype, out_features=5, act=kb.Activation.GELU)
    assert got.dtype == np.float32 and got.shape == (4, 5) and got.tobytes() == want.tobytes()
    out = np.full((4, 5), np.nan, np.float32)
    assert kb.linear(x, q, b, out, act="gelu") is out and out.tobytes() == want.tobytes()


def test_float_qtensors_are_kb_linear_on_the_widened_weights():
    x, w, b = f32(3, 40), f32(6, 40, seed=1), f32(6, seed=2)
    assert kb.linear(x, kb.QTensor(D.F32, w.shape, w), b).tobytes() == kb.linear(x, w, b).tobytes()
    w16 = w.astype(np.float16)
    got = kb.linear(x, kb.QTensor(D.F16, w.shape, w16), b, act="silu")
    assert got.tobytes() == kb.linear(x, w16.astype(np.float32), b, act="silu").tobytes()
    wb = (w.view(np.uint32) >> 16).astype(np.uint16)  # bfloat16 by truncation
    assert kb.linear(x, kb.QTensor(D.BF16, w.shape, wb)).tobytes() == kb.linear(x, widen_bf16(wb)).tobytes()
    # kb.linear on arrays is unchanged (float16 arrays still run linear_f16).
    assert kb.linear(x.astype(np.float16), w16).dtype == np.float16


@pytest.mark.parametrize("dtype", BLOCKED)
def test_quantized_linear_within_its_error_bound(dtype):
    """Against the float64 product of the dequantized weights and x, within
    docs/kernels.md's bound: half a quantization step of each activation
    times the weights, plus float32 roundings."""
    x, w = f32(7, 256) * 2, f32(9, 256, seed=1)
    q = kb.quantize(w, dtype)
    wd = q.dequantize().astype(np.float64)
    got = kb.linear(x, q).astype(np.float64)
    want = x.astype(np.float64) @ wd.T
    blocks = x.astype(np.float64).reshape(7, -1, 32)
    dx = np.abs(blocks).max(axis=-1) / 127  # [rows, nb]
    aw = np.abs(wd).reshape(9, -1, 32)  # [out, nb, 32]
    nb = blocks.shape[1]
    half_steps = np.einsum("rb,obe->ro", dx / 2 * (1 + 2.0**-20), aw)
    roundings = (nb / 8 + 5) * 2.0**-23 * np.einsum("obe,rbe->ro", aw, np.abs(blocks) + dx[..., None])
    assert (np.abs(got - want) <= half_steps + roundings).all()
    assert not (got == want).all()


def test_linear_rows_over_leading_axes():
    w, b = f32(5, 64, seed=1), f32(5, seed=2)
    q = kb.quantize(w, D.Q8_0)
    x = f32(2, 3, 64)
    flat = kb.linear(x.reshape(6, 64), q, b)
    y = kb.linear(x, q, b)
    assert y.shape == (2, 3, 5) and y.tobytes() == flat.tobytes()
    one = kb.linear(x[1, 2], q, b)
    assert one.shape == (5,) and one.tobytes() == flat[5].tobytes()  # a row's result does not depend on the others
    out = np.empty((2, 3, 5), np.float32)
    assert kb.linear(x, q, b, out) is out and out.tobytes() == flat.tobytes()


def test_linear_errors_name_the_argument_and_leave_out_unchanged():
    x, w = f32(2, 64), f32(3, 64, seed=1)
    q = kb.quantize(w, D.Q4_0)
    out = np.full((2, 3), 7, np.float32)

    def unchanged():
        return (out == 7).all()

    with pytest.raises(kb.ShapeMismatchError, match=r"linear: x has shape \(2, 32\), expected \(\.\.\., 64\)"):
        kb.linear(x[:, :32].copy(), q, out=out)
    assert unchanged()
    with pytest.raises(kb.ShapeMismatchError, match="out"):
        kb.linear(x, q, out=np.empty((2, 4), np.float32))
    with pytest.raises(kb.ShapeMismatchError, match="bias"):
        kb.linear(x, q, f32(4), out=out)
    assert unchanged()
    with pytest.raises(TypeError, match="x must have dtype float32"):
        kb.linear(x.astype(np.float64), q, out=out)
    # The generated function: the library's checks, with its messages.
    with pytest.raises(kb.ShapeMismatchError, match=r"weight_bytes must be 108 \(weight \[3, 64\] as Q4_0\), got 107"):
        kb.linear_w(x, q.data[:107], weight_type=D.Q4_0, out=out)
    assert unchanged()
    with pytest.raises(kb.InvalidArgumentError, match="weight_type must be a kb_dtype.*got 3"):
        kb.linear_w(x, q.data, weight_type=3, out=out)
    assert unchanged()
    for bad in (-1, 1 << 40):  # no C enum holds these: refused before C, by name
        with pytest.raises(kb.InvalidArgumentError, match=f"weight_type must be a Dtype .*got {bad}"):
            kb.linear_w(x, q.data, weight_type=bad, out=out)
        with pytest.raises(kb.InvalidArgumentError, match=f"act must be an Activation .*got {bad}"):
            kb.linear(x, q, out=out, act=bad)
    assert unchanged()
    with pytest.raises(kb.InvalidArgumentError, match="in_features must be a multiple of 32 for Q8_0"):
        kb.linear_w(f32(2, 48), np.zeros(3 * 51, np.uint8), weight_type=D.Q8_0, out=out)
    assert unchanged()
    with pytest.raises(TypeError, match="out_features must be given"):
        kb.linear_w(x, q.data, weight_type=D.Q4_0)
    with pytest.raises(TypeError, match="weight must have dtype uint8"):
        kb.linear_w(x, w, weight_type=D.F32, out_features=3)
    with pytest.raises(kb.InvalidArgumentError, match="out_features must be >= 0"):
        kb.linear_w(x, q.data, weight_type=D.Q4_0, out_features=-3)
    # F32 / F16 bytes are an array of elements: one byte past an aligned
    # address is refused, naming weight (a block format may start anywhere).
    for dtype, align in ((D.F32, 4), (D.F16, 2)):
        raw = kb.quantize(w, dtype).data
        buf = np.zeros(raw.nbytes + 64, np.uint8)
        start = (-buf.ctypes.data) % 64 + 1
        buf[start:start + raw.nbytes] = raw
        off = kb.QTensor(dtype, (3, 64), buf[start:start + raw.nbytes])
        with pytest.raises(kb.InvalidArgumentError, match=f"kb_linear_w: weight must be aligned to {align} bytes"):
            kb.linear(x, off, out=out)
        assert unchanged()


# --- embedding -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FORMATS)
def test_embedding_rows_are_the_dequantized_rows(dtype):
    table = f32(7, 64) * 4
    q = kb.quantize(table, dtype)
    ids = np.array([3, 0, 6, 3, 1], np.int32)
    got = kb.embedding(ids, q)
    assert got.dtype == np.float32 and got.shape == (5, 64)
    assert got.tobytes() == q.dequantize()[ids].tobytes()
    assert got.tobytes() == kb.embedding_w(ids, q.data, vocab=7, dim=64, table_type=dtype).tobytes()
    if dtype == D.F32:
        assert got.tobytes() == kb.embedding(ids, table).tobytes()


def test_embedding_errors_leave_out_unchanged():
    q = kb.quantize(f32(7, 32), D.Q8_0)
    out = np.full((2, 32), 7, np.float32)
    for ids in ([0, 7], [-1, 2]):
        with pytest.raises(kb.InvalidArgumentError, match=r"ids\[[01]\] = -?\d+ is out of range \[0, 7\)"):
            kb.embedding(np.array(ids, np.int32), q, out)
        assert (out == 7).all()
    with pytest.raises(kb.ShapeMismatchError, match="out"):
        kb.embedding(np.array([0, 1], np.int32), q, np.empty((2, 31), np.float32))
    with pytest.raises(kb.ShapeMismatchError, match="table_bytes must be 238"):
        kb.embedding_w(np.array([0, 1], np.int32), q.data[:-1], out, vocab=7, table_type=D.Q8_0)
    assert (out == 7).all()
    with pytest.raises(TypeError):
        kb.embedding_w(np.array([0, 1], np.int32), q.data, table_type=D.Q8_0, dim=32)  # vocab is required


# --- quantize errors --------------------------------------------------------------------------


def test_quantize_errors_leave_out_unchanged():
    out = np.full(2 * 34, 7, np.uint8)
    bad = f32(2, 32)
    bad[1, 5] = np.nan
    with pytest.raises(kb.InvalidArgumentError, match=r"x\[1, 5\] is nan: Q8_0 cannot hold it"):
        kb.quantize(bad, D.Q8_0, out=out)
    assert (out == 7).all()
    with pytest.raises(kb.InvalidArgumentError, match=r"quantize: x \[2, 48\] as Q8_0: cols must be a multiple of 32"):
        kb.quantize(f32(2, 48), D.Q8_0)
    with pytest.raises(kb.ShapeMismatchError, match="out has 67 bytes, expected 68"):
        kb.quantize(f32(2, 32), D.Q8_0, out=np.zeros(67, np.uint8))
    with pytest.raises(kb.InvalidArgumentError, match="out is read-only"):
        kb.quantize(f32(2, 32), D.Q8_0, out=bytes(68))
    with pytest.raises(kb.InvalidArgumentError, match="out must be C-contiguous"):
        kb.quantize(f32(2, 32), D.Q8_0, out=np.zeros((68, 2), np.uint8)[:, 0])
    with pytest.raises(kb.InvalidArgumentError, match="dtype must be a kernelbridge.Dtype"):
        kb.quantize(f32(2, 32), 9, out=out)
    with pytest.raises(TypeError, match="y_bytes must be given"):
        _kernels.quantize(f32(2, 32), type=D.Q8_0)
    assert (out == 7).all()


# --- byte tensors of the generated functions --------------------------------------------------


def test_byte_tensors_take_any_buffer():
    """bytes, bytearray, memoryview, uint8 arrays of any shape or layout and
    host Buffers all pass the same bytes (a non-contiguous input is copied)."""
    x = f32(3, 64, seed=4)
    q = kb.quantize(f32(2, 64), D.Q8_0)
    want = kb.linear_w(x, q.data, weight_type=D.Q8_0, out_features=2)
    spread = np.zeros(2 * q.nbytes, np.uint8)
    spread[::2] = q.data
    forms = [bytes(q.data), bytearray(q.data), memoryview(bytearray(q.data)), q.data.reshape(2, -1),
             spread[::2], kb.Buffer.from_numpy(None, q.data.reshape(4, -1))]
    for w in forms:
        got = kb.linear_w(x, w, weight_type=D.Q8_0, out_features=2)
        assert isinstance(got, kb.Buffer) == isinstance(w, kb.Buffer)  # a new output follows the inputs' kind
        assert np.asarray(got).tobytes() == want.tobytes(), type(w)
    with pytest.raises(TypeError, match="weight must be an array"):
        kb.linear_w(x, 17, weight_type=D.Q8_0, out_features=2)
