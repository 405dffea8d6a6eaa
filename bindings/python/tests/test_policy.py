"""The binding's rules for arrays, aliasing and errors (docs/python.md)."""

import array

import numpy as np
import pytest

import kernelbridge as kb


def x32(*shape):
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 7 - 1


# --- what is accepted -------------------------------------------------------------


def test_no_copy_for_contiguous_float32_out():
    x = x32(8)
    y = np.empty_like(x)
    assert kb.silu(x, y) is y
    assert kb.silu(x, out=y) is y


def test_buffer_protocol_and_array_interface():
    want = kb.silu(x32(6))
    assert np.array_equal(kb.silu(array.array("f", x32(6).tolist())), want)
    assert np.array_equal(kb.silu(memoryview(x32(6))), want)

    class Iface:
        def __init__(self, arr):
            self.arr = arr
            self.__array_interface__ = arr.__array_interface__

    assert np.array_equal(kb.silu(Iface(x32(6))), want)
    # out= may be any writable buffer; it is written in place and returned.
    buf = array.array("f", [0.0] * 6)
    assert kb.silu(x32(6), out=buf) is buf
    assert np.array_equal(np.asarray(buf), want)


def test_wrong_dtype_is_type_error_naming_argument():
    with pytest.raises(TypeError, match=r"silu: x must have dtype float32, got <f8"):
        kb.silu(np.zeros(3))
    with pytest.raises(TypeError, match=r"embedding: ids must have dtype int32"):
        kb.embedding(np.zeros(2, np.int64), np.zeros((3, 2), np.float32))
    with pytest.raises(TypeError, match=r"out must have dtype float32"):
        kb.silu(x32(3), out=np.zeros(3, np.float64))
    with pytest.raises(TypeError):
        kb.silu([1.0, 2.0])  # a list is float64 once converted
    with pytest.raises(TypeError, match="must be an array"):
        kb.silu(object())
    # Byte-swapped float32 is not float32 in the machine's order.
    with pytest.raises(TypeError):
        kb.silu(np.zeros(3, ">f4"))
    err = pytest.raises(TypeError, kb.silu, np.zeros(3)).value
    assert isinstance(err, kb.InvalidArgumentError) and err.status == kb.Status.INVALID_ARGUMENT


def test_non_contiguous_input_is_copied():
    base = x32(6, 8)
    view = base[:, ::2]
    assert not view.flags.c_contiguous
    assert np.array_equal(kb.softmax(view), kb.softmax(np.ascontiguousarray(view)))
    rev = x32(10)[::-1]
    assert np.array_equal(kb.silu(rev), kb.silu(rev.copy()))
    assert np.array_equal(kb.gemm(base.T, base, alpha=1, beta=0), kb.gemm(base, base, alpha=1, beta=0, trans_a=True))


def test_non_contiguous_out_is_value_error():
    out = np.zeros((6, 16), np.float32)[:, ::2]
    with pytest.raises(ValueError, match="out must be C-contiguous"):
        kb.softmax(x32(6, 8), out=out)
    assert not out.any()
    # gemm's C has a row stride (ld): row-strided views are written in place,
    # but the elements of a row must be adjacent.
    c = np.zeros((4, 8), np.float32)[:, ::2]
    with pytest.raises(ValueError, match="c must have unit stride along its last axis"):
        kb.gemm(x32(4, 3), x32(3, 4), c, alpha=1, beta=0)
    assert not c.any()


def test_read_only_out_is_value_error():
    out = np.zeros(4, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        kb.silu(x32(4), out=out)
    # A read-only input is fine.
    x = x32(4)
    x.flags.writeable = False
    assert kb.silu(x).shape == (4,)


def test_shape_mismatch_shows_shapes():
    with pytest.raises(ValueError, match=r"add: b has shape \(4,\), expected \(3,\)") as e:
        kb.add(x32(3), x32(4))
    assert isinstance(e.value, kb.ShapeMismatchError) and e.value.status == kb.Status.SHAPE_MISMATCH
    with pytest.raises(kb.ShapeMismatchError, match=r"gemm: b has shape \(4, 2\), expected \(3, 2\)"):
        kb.gemm(x32(2, 3), x32(4, 2), alpha=1, beta=0)
    with pytest.raises(kb.ShapeMismatchError, match=r"softmax: x must have at least 1 dimension .*got shape \(\)"):
        kb.softmax(np.zeros((), np.float32))
    with pytest.raises(kb.ShapeMismatchError, match=r"gemm: a must have 2 dimensions, got shape \(5,\)"):
        kb.gemm(x32(5), x32(5, 2))
    with pytest.raises(kb.ShapeMismatchError, match=r"out has shape \(3, 4\), expected \(4, 3\)"):
        kb.softmax(x32(4, 3), out=np.zeros((3, 4), np.float32))
    with pytest.raises(kb.ShapeMismatchError, match=r"weight has shape \(5,\), expected \(4,\)"):
        kb.rmsnorm(x32(2, 4), x32(5), eps=1e-5)


def test_misaligned_memory():
    raw = bytearray(4 * 17 + 1)
    mis = np.frombuffer(raw, np.float32, count=16, offset=1)
    assert not mis.flags.aligned
    mis[...] = x32(16)
    want = kb.silu(x32(16))
    assert np.array_equal(kb.silu(mis), want)
    raw2 = bytearray(4 * 17 + 3)
    out = np.frombuffer(raw2, np.float32, count=16, offset=3)
    assert not out.flags.aligned
    assert kb.silu(x32(16), out=out) is out
    assert np.array_equal(out, want)
    # In place on misaligned memory (alias allowed).
    assert kb.silu(mis, out=mis) is mis
    assert np.array_equal(mis, want)
    # A misaligned inout.
    c = np.frombuffer(bytearray(4 * 4 + 2), np.float32, count=4, offset=2).reshape(2, 2)
    c[...] = 1
    kb.gemm(np.eye(2, dtype=np.float32), np.eye(2, dtype=np.float32), c, alpha=1, beta=1)
    assert np.array_equal(c, [[2, 1], [1, 2]])


# --- aliasing -----------------------------------------------------------------------------


def test_alias_allowed_in_place():
    x = x32(3, 5)
    want = kb.softmax(x)
    assert kb.softmax(x, out=x) is x
    assert np.array_equal(x, want)
    a, b = x32(7), x32(7) + 1
    want = kb.add(a, b)
    kb.add(a, b, out=b)
    assert np.array_equal(b, want)


def test_partial_overlap_is_value_error():
    buf = x32(10)
    before = buf.copy()
    with pytest.raises(ValueError, match="overlap"):
        kb.silu(buf[:8], out=buf[2:])
    assert np.array_equal(buf, before)


def test_overlap_without_alias_is_value_error():
    table = x32(4, 3)
    with pytest.raises(ValueError, match="overlap"):
        kb.embedding(np.array([0, 1, 2, 3], np.int32), table, out=table)
    logits = x32(3, 4)
    with pytest.raises(ValueError, match="overlap") as e:
        kb.argmax(logits, out=logits[0, :3].view(np.int32))
    assert e.value.status == kb.Status.INVALID_ARGUMENT
    p = x32(6)
    with pytest.raises(ValueError, match="overlap"):
        kb.adamw_step(p, p, np.zeros(6, np.float32), np.zeros(6, np.float32), lr=0.1, beta1=0.9, beta2=0.99,
                      eps=1e-8, weight_decay=0.0, step=1)


def test_overlap_detected_for_copied_inputs():
    # x is non-contiguous, so Python copies it; the overlap with out is still an error.
    buf = x32(12)
    with pytest.raises(ValueError, match="overlap"):
        kb.silu(buf[::2], out=buf[:6])


# --- errors --------------------------------------------------------------------------


def test_error_hierarchy():
    assert issubclass(kb.InvalidArgumentError, kb.Error) and issubclass(kb.InvalidArgumentError, ValueError)
    assert issubclass(kb.ShapeMismatchError, ValueError)
    assert issubclass(kb.OutOfMemoryError, MemoryError)
    for status, cls in kb._model.ERRORS.items():
        assert cls.status == status and cls.__name__.endswith("Error")
    assert {s.name for s in kb.Status} >= {"OK", "INVALID_ARGUMENT", "SHAPE_MISMATCH", "BACKEND_UNAVAILABLE"}


def test_library_error_has_status_and_message():
    with pytest.raises(kb.InvalidArgumentError) as e:
        kb.rmsnorm(x32(2, 3), x32(3), eps=-1.0)
    assert e.value.status is kb.Status.INVALID_ARGUMENT
    assert "kb_rmsnorm" in str(e.value) and "eps" in e.value.message
    with pytest.raises(kb.InvalidArgumentError, match="kb_embedding"):
        kb.embedding(np.array([5], np.int32), x32(3, 2))
    with pytest.raises(kb.InvalidArgumentError, match="row 1"):
        kb.sample(np.array([[0, 1], [np.nan, 0]], np.float32), temperature=1.0, seed=1)


def test_nothing_written_on_error():
    out = np.full(3, 42, np.float32)
    with pytest.raises(kb.InvalidArgumentError):
        kb.topk_sample(x32(3, 4), k=9, temperature=1.0, seed=0, out=out.view(np.int32))
    assert np.array_equal(out, np.full(3, 42, np.float32))
    y = np.full((2, 3), 7, np.float32)
    with pytest.raises(kb.InvalidArgumentError):
        kb.layernorm(x32(2, 3), eps=float("nan"), out=y)
    assert (y == 7).all()


def test_scalar_types():
    with pytest.raises(TypeError):
        kb.scale(x32(3), alpha="2")
    with pytest.raises(OverflowError):
        kb.sample(x32(1, 3), temperature=1.0, seed=-1)
    with pytest.raises(TypeError):
        kb.softmax(x32(1, 3), bogus=1)


def test_multiple_outputs_out_tuple():
    logits, targets = x32(3, 4), np.array([0, 1, 2], np.int32)
    losses = np.empty(3, np.float32)
    res = kb.cross_entropy(logits, targets, ignore_index=-100, out=(losses, None))
    assert res[0] is losses and res[1].shape == (1,)
    with pytest.raises(TypeError, match="tuple of 2"):
        kb.cross_entropy(logits, targets, ignore_index=-100, out=losses)
