"""Foreign memory for kernel arguments: __cuda_array_interface__ and DLPack.

Hand-written.  Neither protocol is copied: a foreign object becomes a Foreign
record (shape, dtype, address, device) whose address is handed to the C
library as is, while the object is kept alive for the call.  CPU DLPack
tensors become numpy arrays (numpy.from_dlpack, zero-copy) and follow the
numpy rules.

DLPack capsules of other devices are read with ctypes.pythonapi (the capsule
API is part of CPython's C API; cffi cannot call it with the GIL held).  The
capsule is never renamed ("consumed"): it stays owned by its producer and
its destructor releases the tensor once the call no longer needs it.
"""

import ctypes

import numpy as np

from ._model import InvalidArgumentError
from ._native import ffi

F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)
F16 = np.dtype(np.float16)
U16 = np.dtype(np.uint16)
try:  # bfloat16 as a numpy dtype, when ml_dtypes (JAX's dtype package) is installed
    import ml_dtypes as _ml_dtypes

    BF16 = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    BF16 = None

# Device ids of Foreign.dev besides a CUDA ordinal.
HOST = -1
CUDA_UNKNOWN = -2  # CUDA memory of a device the protocol does not name (__cuda_array_interface__)

# DLPack device types (dlpack.h, DLDeviceType).
DL_CPU = 1
DL_CUDA = 2
DL_CUDA_HOST = 3
DL_CUDA_MANAGED = 13


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An array argument has the wrong dtype or type (a TypeError and an InvalidArgumentError)."""


class Foreign:
    """Memory described by a foreign protocol, passed to C without a copy."""

    __slots__ = ("shape", "size", "dtype", "nbytes", "ptr", "address", "dev", "readonly", "owner", "what")

    def __init__(self, shape, dtype, address, dev, readonly, owner, what):
        self.shape = shape
        size = 1
        for d in shape:
            size *= d
        self.size = size
        self.dtype = dtype
        self.nbytes = size * dtype.itemsize
        self.address = address
        self.ptr = ffi.cast("void *", address)
        self.dev = dev
        self.readonly = readonly
        self.owner = owner  # keeps the producer's memory alive during the call
        self.what = what

    def where(self):
        if self.dev == HOST:
            return "host memory"
        if self.dev == CUDA_UNKNOWN:
            return "CUDA memory"
        return f"memory of CUDA device {self.dev}"


def _c_contiguous(shape, strides_bytes, itemsize):
    """True when strides (in bytes) are those of a dense row-major array
    (axes of length 1 may have any stride)."""
    expected = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides_bytes)):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def _dtype_of_typestr(typestr, name, fn):
    try:
        return np.dtype(typestr)
    except TypeError:
        raise ArgumentTypeError(f"{fn}: {name} has an unknown __cuda_array_interface__ typestr {typestr!r}") from None


def cai_untyped(cai):
    """True when a __cuda_array_interface__ gives raw bytes ('V') as its typestr."""
    typestr = cai.get("typestr") if isinstance(cai, dict) else None
    return isinstance(typestr, str) and typestr[1:2] == "V"


def from_cai(obj, cai, name, fn):
    """A Foreign for an object exposing __cuda_array_interface__ (versions 0-3)."""
    if not isinstance(cai, dict):
        raise ArgumentTypeError(f"{fn}: {name}.__cuda_array_interface__ must be a dict, got {type(cai).__name__}")
    try:
        shape = tuple(int(d) for d in cai["shape"])
        typestr = cai["typestr"]
        address, readonly = cai["data"]
    except (KeyError, TypeError, ValueError) as e:
        raise ArgumentTypeError(f"{fn}: {name} has a malformed __cuda_array_interface__ ({e!r})") from None
    if cai.get("mask") is not None:
        raise InvalidArgumentError(f"{fn}: {name} is a masked CUDA array; masks are not supported")
    dtype = _dtype_of_typestr(typestr, name, fn)
    strides = cai.get("strides")
    if strides is not None and not _c_contiguous(shape, tuple(int(s) for s in strides), dtype.itemsize):
        raise InvalidArgumentError(
            f"{fn}: {name} must be C-contiguous (__cuda_array_interface__ strides {tuple(strides)} for shape "
            f"{shape}); device memory is never copied implicitly: make a contiguous copy first"
        )
    return Foreign(shape, dtype, int(address or 0), CUDA_UNKNOWN, bool(readonly), obj, "__cuda_array_interface__ object")


# --- DLPack ---------------------------------------------------------------------


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    # dl_tensor first: the legacy ("dltensor") capsule's layout.
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_CAPSULE_API = []


def _capsule_api():
    """(PyCapsule_IsValid, PyCapsule_GetPointer) through ctypes.pythonapi,
    looked up on first use (they hold the GIL, unlike cffi calls)."""
    if not _CAPSULE_API:
        is_valid = ctypes.pythonapi.PyCapsule_IsValid
        is_valid.restype = ctypes.c_int
        is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
        pointer = ctypes.pythonapi.PyCapsule_GetPointer
        pointer.restype = ctypes.c_void_p
        pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        _CAPSULE_API[:] = [is_valid, pointer]
    return _CAPSULE_API

# DLPack (code, bits) -> numpy dtype; kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4.
_DL_DTYPES = {(0, 32): I32, (1, 16): U16, (2, 32): F32, (2, 16): F16, (4, 16): BF16 if BF16 is not None else U16}


def capsule_tensor(capsule, owner, name, fn):
    """A Foreign for a legacy DLPack capsule (named "dltensor"); owner keeps
    the capsule (and so the producer's memory) alive."""
    is_valid, pointer = _capsule_api()
    if not is_valid(capsule, b"dltensor"):
        raise ArgumentTypeError(f"{fn}: {name}.__dlpack__() did not return an unconsumed DLPack capsule")
    t = _DLManagedTensor.from_address(pointer(capsule, b"dltensor")).dl_tensor
    dev_type, dev_id = t.device.device_type, t.device.device_id
    code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
    dtype = _DL_DTYPES.get((code, bits)) if lanes == 1 else None
    if dtype is None:
        raise ArgumentTypeError(f"{fn}: {name} has DLPack dtype (code {code}, bits {bits}, lanes {lanes}), "
                                "which no kernelbridge kernel takes")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[i] * dtype.itemsize for i in range(t.ndim))
        if not _c_contiguous(shape, strides, dtype.itemsize):
            raise InvalidArgumentError(
                f"{fn}: {name} must be C-contiguous (DLPack strides {tuple(t.strides[i] for i in range(t.ndim))} "
                f"elements for shape {shape}); device memory is never copied implicitly"
            )
    if dev_type in (DL_CPU, DL_CUDA_HOST):
        dev = HOST
    elif dev_type in (DL_CUDA, DL_CUDA_MANAGED):
        dev = dev_id
    else:
        raise InvalidArgumentError(f"{fn}: {name} is DLPack memory of device type {dev_type}; kernelbridge "
                                   "takes CPU and CUDA memory")
    address = (t.data or 0) + t.byte_offset
    return Foreign(shape, dtype, address, dev, False, (owner, capsule), "DLPack tensor")


def from_dlpack(obj, name, fn):
    """An object with __dlpack__: a numpy array (zero-copy) for CPU memory, a
    Foreign for CUDA memory."""
    try:
        dev_type = obj.__dlpack_device__()[0]
    except Exception as e:  # a producer bug: report it as the argument's
        raise ArgumentTypeError(f"{fn}: {name}.__dlpack_device__() failed: {e}") from None
    if dev_type == DL_CPU:
        try:
            return np.from_dlpack(obj)
        except (TypeError, ValueError, BufferError, RuntimeError):
            pass  # e.g. a dtype numpy lacks (bfloat16): read the capsule directly
    if dev_type not in (DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED):
        raise InvalidArgumentError(f"{fn}: {name} is DLPack memory of device type {dev_type}; kernelbridge "
                                   "takes CPU and CUDA memory")
    try:
        capsule = obj.__dlpack__()
    except Exception as e:
        raise ArgumentTypeError(f"{fn}: {name}.__dlpack__() failed: {e}") from None
    return capsule_tensor(capsule, obj, name, fn)
