"""Foreign memory: __dlpack__ (numpy's own DLPack export, wrapped so that
only the protocol is visible), DLPack capsules read directly, and
__cuda_array_interface__ objects, which a CPU context must refuse without
calling the library."""

import ctypes

import numpy as np
import pytest

import kernelbridge as kb
from kernelbridge import _interop

RNG = np.random.default_rng(7)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


class DLPackOnly:
    """Exposes an array through DLPack and nothing else."""

    def __init__(self, arr, device=None):
        self.arr = arr
        self.device = device
        self.calls = 0

    def __dlpack__(self, **kwargs):
        self.calls += 1
        return self.arr.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device or self.arr.__dlpack_device__()


class CAI:
    """A __cuda_array_interface__ producer (no real CUDA memory behind it)."""

    def __init__(self, shape, typestr="<f4", address=0x7F0000000000, strides=None, readonly=False):
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (address, readonly),
            "strides": strides,
            "version": 3,
            "stream": None,
        }


# --- DLPack, CPU ---------------------------------------------------------------------


def test_dlpack_cpu_inputs_are_zero_copy_numpy():
    x = f32(4, 6)
    src = DLPackOnly(x)
    assert not hasattr(src, "__array_interface__") and not hasattr(src, "__array__")
    assert np.array_equal(kb.softmax(src), kb.softmax(x))
    assert src.calls >= 1
    # Results are numpy arrays (CPU DLPack memory is viewed as numpy).
    assert type(kb.silu(DLPackOnly(x))) is np.ndarray


def test_dlpack_cpu_out_is_written_in_place():
    x = f32(8)
    y = np.zeros(8, np.float32)
    out = DLPackOnly(y)
    assert kb.silu(x, out=out) is out
    assert np.array_equal(y, kb.silu(x))
    # In place through DLPack, alias(x): the same memory both ways.
    kb.silu(DLPackOnly(x), out=DLPackOnly(x))
    assert np.array_equal(x, y)


def test_buffer_from_dlpack_cpu_object():
    x = f32(2, 3)
    b = kb.Buffer.from_numpy(None, DLPackOnly(x))
    assert b.shape == (2, 3) and np.array_equal(b.numpy(), x)
    with pytest.raises(TypeError, match="not host memory"):
        kb.Buffer.from_numpy(None, FakeCudaDLPack(x))


def test_dlpack_dtype_checked():
    with pytest.raises(TypeError, match="x must have dtype float32, got <f8"):
        kb.silu(DLPackOnly(np.zeros(3)))
    assert np.array_equal(kb.silu_f16(DLPackOnly(np.ones(3, np.float16))), kb.silu_f16(np.ones(3, np.float16)))


def test_capsule_reader_on_numpy_capsule():
    x = f32(3, 5)
    capsule = x.__dlpack__()  # legacy "dltensor" capsule
    t = _interop.capsule_tensor(capsule, x, "x", "test")
    assert t.shape == (3, 5) and t.dtype == np.float32 and t.dev == _interop.HOST
    assert t.address == x.__array_interface__["data"][0] and t.nbytes == 60
    # A strided view's capsule carries strides: refused (never copied implicitly).
    with pytest.raises(kb.InvalidArgumentError, match="C-contiguous"):
        _interop.capsule_tensor(f32(4, 6)[:, ::2].__dlpack__(), None, "x", "test")
    with pytest.raises(TypeError, match="DLPack dtype"):
        _interop.capsule_tensor(np.zeros(2, np.complex64).__dlpack__(), None, "x", "test")


# --- a CUDA DLPack capsule, made by hand ------------------------------------------------


class FakeCudaDLPack:
    """A legacy DLPack capsule claiming CUDA device 0.  Its data pointer is
    real host memory, so a binding that wrongly passed it on would compute
    instead of raising (and not crash)."""

    def __init__(self, arr):
        self.arr = arr
        self.shape = (ctypes.c_int64 * arr.ndim)(*arr.shape)
        self.managed = _interop._DLManagedTensor()
        t = self.managed.dl_tensor
        t.data = arr.__array_interface__["data"][0]
        t.device.device_type = _interop.DL_CUDA
        t.device.device_id = 0
        t.ndim = arr.ndim
        t.dtype.code, t.dtype.bits, t.dtype.lanes = 2, 32, 1
        t.shape = self.shape
        t.strides = None
        t.byte_offset = 0

    def __dlpack__(self, **kwargs):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.managed), b"dltensor", None)

    def __dlpack_device__(self):
        return (_interop.DL_CUDA, 0)


def test_cuda_dlpack_on_cpu_context_is_refused():
    x = f32(2, 3)
    y = np.full((2, 3), 5, np.float32)
    with pytest.raises(kb.InvalidArgumentError, match=r"softmax: x is memory of CUDA device 0 \(a DLPack tensor\) but "
                                                      r"ctx is a CPU context") as e:
        kb.softmax(FakeCudaDLPack(x), out=y)
    assert e.value.status is kb.Status.INVALID_ARGUMENT
    with pytest.raises(kb.InvalidArgumentError, match="out is memory of CUDA device 0"):
        kb.softmax(x, out=FakeCudaDLPack(y))
    assert (y == 5).all()


# --- __cuda_array_interface__ ------------------------------------------------------------


def test_cai_on_cpu_context_is_refused_naming_the_argument():
    for ctx in (None, kb.Context()):
        with pytest.raises(kb.InvalidArgumentError, match=r"silu: x is CUDA memory \(a __cuda_array_interface__ "
                                                          r"object\) but ctx is a CPU context"):
            kb.silu(CAI((4,)), ctx=ctx)
    out = np.zeros((2, 3), np.float32)
    with pytest.raises(kb.InvalidArgumentError, match="weight is CUDA memory"):
        kb.rmsnorm(f32(2, 3), CAI((3,)), eps=1e-5, out=out)
    with pytest.raises(kb.InvalidArgumentError, match="out is CUDA memory"):
        kb.softmax(f32(2, 3), out=CAI((2, 3)))
    assert not out.any()


def test_cai_checks_before_memory_kind():
    # typestr must match the kernel's dtype.
    with pytest.raises(TypeError, match=r"silu: x must have dtype float32, got <f8"):
        kb.silu(CAI((4,), "<f8"))
    with pytest.raises(TypeError, match=r"silu_f16: x must have dtype float16"):
        kb.silu_f16(CAI((4,), "<f4"))
    # Shapes are checked too.
    with pytest.raises(kb.ShapeMismatchError, match=r"add: b has shape \(5,\), expected \(4,\)"):
        kb.add(CAI((4,)), CAI((5,)))
    # C-contiguous is required: device memory is never copied.
    with pytest.raises(kb.InvalidArgumentError, match="x must be C-contiguous"):
        kb.softmax(CAI((2, 3), strides=(4, 8)))
    # Contiguous strides spelled out are fine (then the memory kind is refused).
    with pytest.raises(kb.InvalidArgumentError, match="CPU context"):
        kb.softmax(CAI((2, 3), strides=(12, 4)))
    with pytest.raises(kb.InvalidArgumentError, match="read-only"):
        kb.silu(f32(4), out=CAI((4,), readonly=True))
    with pytest.raises(kb.InvalidArgumentError, match="not aligned"):
        kb.silu(CAI((4,), address=0x7F0000000002))


def test_device_buffer_semantics_without_a_device():
    """Device Buffers need a GPU; their host-side rules are checked on a
    Buffer stand-in claiming device 0."""
    b = kb.Buffer.from_numpy(None, f32(4))
    b._dev = 0  # pretend: memory of CUDA device 0 (only Python-side checks below)
    with pytest.raises(TypeError, match="never copied to the host implicitly"):
        np.asarray(b)
    cai = b.__cuda_array_interface__
    assert cai["version"] == 3 and cai["data"] == (b.address, False) and cai["typestr"] == "<f4"
    assert cai["shape"] == (4,) and cai["strides"] is None
    with pytest.raises(kb.InvalidArgumentError, match=r"x is memory of CUDA device 0 \(a Buffer\) but ctx is a CPU"):
        kb.silu(b)
    with pytest.raises(kb.InvalidArgumentError, match="copies between kinds"):
        kb.Buffer(None, 4).copy_from(b)
    b._dev = -1
