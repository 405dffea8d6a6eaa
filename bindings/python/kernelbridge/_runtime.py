"""Support code of the generated kernel wrappers: dtypes, argument coercion,
memory kinds, Context and Buffer.

Hand-written; the wrappers in _kernels.py and the C API functions in
_capi.py are generated from the header.  Each generated wrapper hands the
common case (C-contiguous, aligned numpy arrays of the right dtypes on a CPU
context) to the C extension _fastcall (see fast() below and docs/python.md,
"Two paths per call"); everything else takes the wrapper's generated Python
path, which calls the functions here.

Memory kinds.  A tensor argument is one of
  * a numpy array (or anything numpy views without a copy: buffer protocol,
    __array_interface__, CPU DLPack tensors): host memory;
  * a Buffer: host memory (made on a CPU context) or device memory of one
    CUDA device (made on a CUDA context);
  * a Foreign record (_interop) for __cuda_array_interface__ / CUDA DLPack
    objects: device memory, passed without a copy.
A CPU context takes host memory only, a CUDA context device memory of its
device only; anything else is an InvalidArgumentError naming the argument,
raised before the C library is called.  Device memory is never copied to
the host implicitly, host memory never to the device.
"""

import collections
import os
import threading
import weakref

import numpy as np

from . import _capi, _interop
from ._interop import BF16, F16, F32, I32, U16, ArgumentTypeError  # noqa: F401 (dtypes for _kernels)
from ._model import Backend, Error, ERRORS, InvalidArgumentError, ShapeMismatchError, Status  # noqa: F401
from ._native import ffi, lib

nd = np.ndarray
U8 = np.dtype(np.uint8)
FA = ffi.typeof("float[]")
IA = ffi.typeof("int32_t[]")
HA = ffi.typeof("uint16_t[]")
BA = ffi.typeof("uint8_t[]")
NULL = ffi.NULL
from_buffer = ffi.from_buffer
copyto = np.copyto
check = _capi.check


class Kind:
    """What a tensor of one header dtype accepts: its numpy dtypes and the
    words error messages use for them."""

    __slots__ = ("dtypes", "what")

    def __init__(self, dtypes, what):
        self.dtypes = tuple(d for d in dtypes if d is not None)
        self.what = what


K_F32 = Kind((F32,), "float32")
K_I32 = Kind((I32,), "int32")
K_F16 = Kind((F16, U16), "float16 (or uint16 holding float16 bits)")
K_BF16 = Kind((U16, BF16), "uint16 holding bfloat16 bits" + (" or bfloat16" if BF16 is not None else ""))
# Raw bytes (u8 tensors): numpy arrays must say so; other dtypes' bytes are a view away.
K_U8 = Kind((U8,), "uint8 (raw bytes; array.view(numpy.uint8) gives another dtype's bytes)")


# --- arguments ------------------------------------------------------------------------


def _resolve(obj, name, fn):
    """obj as memory: a numpy array (host), a Buffer or a Foreign."""
    if isinstance(obj, nd):
        return obj
    if isinstance(obj, Buffer):
        return obj._pin(fn, name)
    if obj is None:
        raise ArgumentTypeError(f"{fn}: {name} must be an array, got None")
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        cai = None
    has_dlpack = hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")
    # A typestr of raw bytes ("<V2", how PyTorch describes bfloat16) names no
    # element type; DLPack names it (kDLBfloat), so it wins when offered.
    if cai is not None and not (has_dlpack and _interop.cai_untyped(cai)):
        return _interop.from_cai(obj, cai, name, fn)
    if has_dlpack:
        return _interop.from_dlpack(obj, name, fn)
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
        return np.asarray(obj)
    try:
        memoryview(obj).release()
    except TypeError:
        raise ArgumentTypeError(
            f"{fn}: {name} must be an array (numpy array, kernelbridge.Buffer, buffer, __array_interface__, "
            f"__cuda_array_interface__ or __dlpack__), got {type(obj).__name__}"
        ) from None
    return np.asarray(obj)


def _check_dtype(dtype, kind, name, fn):
    if dtype not in kind.dtypes or not dtype.isnative:
        raise ArgumentTypeError(f"{fn}: {name} must have dtype {kind.what}, got {dtype.str} ({dtype.name})")


def _check_ndim(shape, ndim, name, fn):
    """ndim: an exact count, -1 for any, or (k,) for at least k (row-wise
    kernels: leading axes are rows)."""
    if type(ndim) is tuple:
        if len(shape) < ndim[0]:
            raise ShapeMismatchError(
                f"{fn}: {name} must have at least {ndim[0]} dimension{'s' if ndim[0] != 1 else ''} "
                f"(leading axes are rows), got shape {tuple(shape)}"
            )
    elif ndim >= 0 and len(shape) != ndim:
        raise ShapeMismatchError(f"{fn}: {name} must have {ndim} dimensions, got shape {tuple(shape)}")


def _check_memory(m, kind, name, fn, ndim, written):
    """Checks of a Buffer or Foreign argument (nothing can be copied)."""
    _check_dtype(m.dtype, kind, name, fn)
    _check_ndim(m.shape, ndim, name, fn)
    if written and m.readonly:
        raise InvalidArgumentError(f"{fn}: {name} is read-only ({m.what})")
    if m.address % m.dtype.itemsize:
        raise InvalidArgumentError(
            f"{fn}: {name} is not aligned to its element size ({m.what} at address {m.address:#x})"
        )


def to_input(obj, kind, name, fn, ndim):
    """An input for C: a Buffer or Foreign as is; a numpy array of the right
    dtype (else TypeError), C-contiguous and aligned (a copy when it is not)."""
    arr = _resolve(obj, name, fn)
    if not isinstance(arr, nd):
        _check_memory(arr, kind, name, fn, ndim, False)
        return arr
    _check_dtype(arr.dtype, kind, name, fn)
    _check_ndim(arr.shape, ndim, name, fn)
    flags = arr.flags
    if not (flags.c_contiguous and flags.aligned):
        arr = np.array(arr, dtype=arr.dtype, order="C", copy=True)
    return arr


# --- byte tensors (u8) -------------------------------------------------------------------


def _resolve_bytes(obj, name, fn):
    """obj as memory for a u8 tensor: like _resolve, except that a plain
    buffer object (bytes, bytearray, memoryview, mmap, array.array, ...) is
    its bytes whatever its format, used in place (numpy would give bytes a
    string dtype and a memoryview its own format)."""
    if isinstance(obj, (nd, Buffer)) or obj is None:
        return _resolve(obj, name, fn)
    for attr in ("__cuda_array_interface__", "__dlpack__", "__array_interface__", "__array__"):
        if hasattr(obj, attr):
            return _resolve(obj, name, fn)
    try:
        view = memoryview(obj)
    except TypeError:
        return _resolve(obj, name, fn)  # raises: not an array
    with view:
        if not view.c_contiguous:
            raise InvalidArgumentError(f"{fn}: {name} is a non-contiguous buffer; pass its bytes (bytes({name}))")
    return np.frombuffer(obj, U8)


def _flat(m):
    """A Buffer or Foreign of uint8 as one axis of bytes (same memory)."""
    if len(m.shape) == 1:
        return m
    if isinstance(m, Buffer):
        return m._view((m.size,), m.dtype)
    return _interop.Foreign((m.size,), m.dtype, m.address, m.dev, m.readonly, m.owner, m.what)


def bytes_in(obj, name, fn):
    """A u8 input: a uint8 array (numpy, Buffer, foreign memory) of any shape
    or a buffer object, as one axis of its bytes (a copy only for a
    non-contiguous numpy array)."""
    if type(obj) is nd and obj.dtype is U8 and obj.ndim == 1 and obj.flags.c_contiguous:
        return obj  # the common case first
    m = _resolve_bytes(obj, name, fn)
    if not isinstance(m, nd):
        _check_memory(m, K_U8, name, fn, -1, False)
        return _flat(m)
    _check_dtype(m.dtype, K_U8, name, fn)
    return np.ascontiguousarray(m.reshape(-1))  # a 1-D strided view stays strided under reshape


def bytes_out(obj, name, fn, nbytes):
    """A u8 output: (one axis of its bytes, None); it is written in place, so
    it must be writable and C-contiguous, and hold nbytes bytes (None:
    any count, the caller checks it later)."""
    m = _resolve_bytes(obj, name, fn)
    if not isinstance(m, nd):
        _check_memory(m, K_U8, name, fn, -1, True)
        m = _flat(m)
    else:
        _check_dtype(m.dtype, K_U8, name, fn)
        if not m.flags.writeable:
            raise InvalidArgumentError(f"{fn}: {name} is read-only; out arrays must be writable")
        if not m.flags.c_contiguous:
            raise InvalidArgumentError(
                f"{fn}: {name} must be C-contiguous (out arrays are written in place); "
                "pass numpy.ascontiguousarray(...) and use the result"
            )
        m = m.reshape(-1)
    if nbytes is not None and m.shape[0] != nbytes:
        bytes_error(fn, name, m.shape[0], nbytes)
    return m, None


def bytes_error(fn, name, got, want):
    raise ShapeMismatchError(f"{fn}: {name} has {got} bytes, expected {want}")


# --- sizes given as arguments ------------------------------------------------------------


def size_arg(value, name, fn):
    """A size passed as a keyword (one no array determines): an int >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"{fn}: {name} must be an int (a size), got {type(value).__name__}")
    if value < 0:
        raise InvalidArgumentError(f"{fn}: {name} must be >= 0, got {value}")
    return int(value)


def given_size(fn, name, sources):
    """A size left out (None) that only optional tensors give: axis `axis`
    of the first of sources ((label, tensor or None, axis, ndim), ...) the
    caller passed; an error naming the size when none was."""
    for label, t, axis, ndim in sources:
        if t is not None:
            _check_ndim(t.shape, ndim, label, fn)
            return t.shape[axis]
    labels = [label for label, _, _, _ in sources]
    given = " and ".join(labels) + (" is" if len(labels) == 1 else " are")
    raise ArgumentTypeError(f"{fn}: {name} must be given: no other argument determines it when {given} None")


def _writable(obj, kind, name, fn, what, ndim):
    arr = _resolve(obj, name, fn)
    if not isinstance(arr, nd):
        _check_memory(arr, kind, name, fn, ndim, True)
        return arr
    _check_dtype(arr.dtype, kind, name, fn)
    if not arr.flags.writeable:
        raise InvalidArgumentError(f"{fn}: {name} is read-only; {what} arrays must be writable")
    if not arr.flags.c_contiguous:
        raise InvalidArgumentError(
            f"{fn}: {name} must be C-contiguous ({what} arrays are written in place); "
            "pass numpy.ascontiguousarray(...) and use the result"
        )
    return arr


def inout(obj, kind, name, fn, ndim):
    """An inout argument: (memory for C, numpy array to copy the result back into or None)."""
    arr = _writable(obj, kind, name, fn, "inout", ndim)
    if not isinstance(arr, nd):
        return arr, None
    _check_ndim(arr.shape, ndim, name, fn)
    if arr.flags.aligned:
        return arr, None
    return np.array(arr, dtype=arr.dtype, order="C", copy=True), arr


def out(obj, kind, name, fn, shape):
    """An out= argument of the given shape (None: any; the caller checks it
    once the sizes are known): (memory for C, copy-back target or None)."""
    arr = _writable(obj, kind, name, fn, "out", -1)
    if shape is not None and tuple(arr.shape) != shape:
        shape_error(fn, name, arr.shape, shape)
    if not isinstance(arr, nd) or arr.flags.aligned:
        return arr, None
    return np.empty(arr.shape, arr.dtype), arr


# --- enums, 16-bit dispatch ------------------------------------------------------------


def enum_arg(cls, value, name, fn):
    """An enum argument as its int: a member, an int (the C library checks
    its range; one no C enum holds is refused here), or a member's name in
    any case ("gelu")."""
    if isinstance(value, int) and not isinstance(value, bool):
        # The int32 range, or its non-negative half for an enum without
        # negative values (cffi makes it unsigned: it would raise OverflowError).
        lo = 0 if min(m.value for m in cls) >= 0 else -(1 << 31)
        if not lo <= value <= 0x7FFFFFFF:
            members = ", ".join(f"{m.value} {m.name.lower()}" for m in cls)
            article = "an" if cls.__name__[0] in "AEIOU" else "a"
            raise InvalidArgumentError(f"{fn}: {name} must be {article} {cls.__name__} ({members}), got {value}")
        return int(value)
    if isinstance(value, str):
        try:
            return int(cls[value.strip().upper()])
        except KeyError:
            names = ", ".join(repr(m.name.lower()) for m in cls)
            raise InvalidArgumentError(f"{fn}: {name} must be one of {names} (or a {cls.__name__}), got {value!r}") from None
    raise ArgumentTypeError(f"{fn}: {name} must be a {cls.__name__}, an int or a name, got {type(value).__name__}")


def half_kind(obj):
    """"f16" or "bf16" when obj is a float16 or bfloat16 tensor (numpy array,
    Buffer, or foreign memory of that dtype), else None.  uint16 bit
    patterns are neither: their format is not known."""
    try:
        dtype = obj.dtype if isinstance(obj, (nd, Buffer)) else _resolve(obj, "x", "").dtype
    except Exception:
        return None
    if not isinstance(dtype, np.dtype):
        return None
    if dtype == F16:
        return "f16"
    if BF16 is not None and dtype == BF16:
        return "bf16"
    return None


# --- strided tensors (ld / stride annotations) -------------------------------------------


def dense_layout(shape):
    """(ld, stride) of a C-contiguous array of the given shape: the row
    stride of its last two axes and, for 3 axes, the distance between
    items (in elements)."""
    ld = shape[-1] or 1
    stride = shape[-2] * shape[-1] if len(shape) == 3 else None
    return ld, stride


def _layout(arr):
    """(ld, stride) of a numpy array the C API can read in place: unit
    stride along the last axis, non-negative row and item strides that are
    multiples of the item size, a row stride of at least the row length, an
    aligned first element.  None for any other layout.  Axes of length 1 get
    the dense value (numpy gives them any stride)."""
    flags = arr.flags  # a new object on every access: read it once
    if flags.c_contiguous or arr.size == 0:
        return dense_layout(arr.shape) if flags.aligned else None
    item = arr.itemsize
    shape, strides = arr.shape, arr.strides
    if shape[-1] > 1 and strides[-1] != item:
        return None
    cols = shape[-1]
    if shape[-2] > 1:
        if strides[-2] < 0 or strides[-2] % item or strides[-2] // item < max(1, cols):
            return None
        ld = strides[-2] // item
    else:
        ld = max(1, cols)
    stride = None
    if len(shape) == 3:
        if shape[0] > 1:
            if strides[0] < 0 or strides[0] % item:
                return None
            stride = strides[0] // item
        else:
            stride = shape[1] * shape[2]
    if not flags.aligned:
        return None
    return ld, stride


def strided_in(obj, kind, name, fn, ndim):
    """An input with a layout (ld, stride): (memory, ld, stride, slow).  A
    numpy array is used in place when the C API can describe its strides,
    else copied; Buffers and foreign memory must be C-contiguous."""
    if type(obj) is nd and obj.dtype is kind.dtypes[0] and obj.ndim == ndim:
        flags = obj.flags  # the common case first: a dense, aligned array
        if flags.c_contiguous and flags.aligned:
            return (obj,) + dense_layout(obj.shape) + (False,)
    arr = _resolve(obj, name, fn)
    if not isinstance(arr, nd):
        _check_memory(arr, kind, name, fn, ndim, False)
        return (arr,) + dense_layout(arr.shape) + (True,)
    _check_dtype(arr.dtype, kind, name, fn)
    _check_ndim(arr.shape, ndim, name, fn)
    lay = _layout(arr)
    if lay is not None:
        return (arr,) + lay + (False,)
    arr = np.array(arr, dtype=arr.dtype, order="C", copy=True)
    return (arr,) + dense_layout(arr.shape) + (True,)


def strided_inout(obj, kind, name, fn, ndim):
    """An inout with a layout: (memory, copy-back target or None, ld,
    stride, slow).  Written in place when the C API can describe its
    strides (only its elements are written, never the gaps between rows or
    items); a misaligned array goes through an aligned copy; any other
    layout is refused (it cannot be written in place)."""
    if type(obj) is nd and obj.dtype is kind.dtypes[0] and obj.ndim == ndim:
        flags = obj.flags  # the common case first: a dense, aligned, writable array
        if flags.c_contiguous and flags.aligned and flags.writeable:
            return (obj, None) + dense_layout(obj.shape) + (False,)
    arr = _resolve(obj, name, fn)
    if not isinstance(arr, nd):
        _check_memory(arr, kind, name, fn, ndim, True)
        return (arr, None) + dense_layout(arr.shape) + (True,)
    _check_dtype(arr.dtype, kind, name, fn)
    _check_ndim(arr.shape, ndim, name, fn)
    if not arr.flags.writeable:
        raise InvalidArgumentError(f"{fn}: {name} is read-only; inout arrays must be writable")
    lay = _layout(arr)
    if lay is not None:
        return (arr, None) + lay + (False,)
    if not arr.flags.aligned and arr.flags.c_contiguous:
        tmp = np.array(arr, dtype=arr.dtype, order="C", copy=True)
        return (tmp, arr) + dense_layout(tmp.shape) + (True,)
    raise InvalidArgumentError(
        f"{fn}: {name} must have unit stride along its last axis and non-negative row and item strides "
        f"(multiples of its item size, rows not overlapping) to be written in place; got strides {arr.strides}"
    )


_POINTER_TYPES = {}


def strided_pointer(ctype, arr):
    """The C pointer of a numpy array's first element, whatever its strides
    (the caller keeps arr alive during the call)."""
    if arr.flags.c_contiguous:
        # The common case, through the buffer protocol: about 8x cheaper
        # than building __array_interface__ (a dict) on every call.
        return from_buffer(ctype, arr)
    ptype = _POINTER_TYPES.get(ctype)
    if ptype is None:
        ptype = _POINTER_TYPES[ctype] = ffi.getctype(ctype.item, "*")
    return ffi.cast(ptype, arr.__array_interface__["data"][0])


def new_output(ctx, shape, dtype, given, zero=False):
    """A new output: a Buffer on ctx when a given tensor is a Buffer or
    foreign memory, else a numpy array."""
    for t in given:
        if t is not None and not isinstance(t, nd):
            buf = Buffer(ctx, shape, dtype)
            if zero:
                buf.fill(0)
            return buf
    return (np.zeros if zero else np.empty)(shape, dtype)


def _context_words(dev):
    return "a CPU context" if dev < 0 else f"a CUDA context on device {dev}"


def pointer(t, ctype, writable, name, fn, dev):
    """The C pointer of a resolved tensor, after checking that its memory is
    of the kind the context (CUDA device dev, or -1: CPU) can use."""
    if isinstance(t, nd):
        if dev >= 0:
            raise InvalidArgumentError(
                f"{fn}: {name} is host memory (a numpy array) but ctx is {_context_words(dev)}; kernels on a CUDA "
                f"context take device memory: pass kernelbridge.Buffer.from_numpy(ctx, array) or a CUDA array"
            )
        if not t.flags.c_contiguous:  # a strided tensor used in place
            return strided_pointer(ctype, t)
        return from_buffer(ctype, t, writable)
    tdev = t._dev if isinstance(t, Buffer) else t.dev
    if dev < 0:
        if tdev != -1:
            where = f"memory of CUDA device {tdev}" if tdev >= 0 else "CUDA memory"
            raise InvalidArgumentError(
                f"{fn}: {name} is {where} ({_describe(t)}) but ctx is a CPU context (the default context when "
                f"ctx= is not given); pass ctx=<a kernelbridge.Context('cuda', device)>"
            )
    elif tdev == -1:
        raise InvalidArgumentError(
            f"{fn}: {name} is host memory ({_describe(t)}) but ctx is {_context_words(dev)}; kernels on a CUDA "
            f"context take device memory of that device"
        )
    elif tdev >= 0 and tdev != dev:
        raise InvalidArgumentError(
            f"{fn}: {name} is memory of CUDA device {tdev} ({_describe(t)}) but ctx is {_context_words(dev)}"
        )
    return t.ptr


def _describe(t):
    if isinstance(t, Buffer):
        return "a Buffer"
    return "a " + t.what


def out_tuple_error(fn, count, value):
    raise ArgumentTypeError(f"{fn}: out must be None or a tuple of {count} arrays (or None), got {type(value).__name__}")


def shape_error(fn, name, got, want):
    raise ShapeMismatchError(f"{fn}: {name} has shape {tuple(got)}, expected {tuple(want)}")


def _same_view(a, b):
    ia, ib = a.__array_interface__, b.__array_interface__
    return ia["data"][0] == ib["data"][0] and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype


def _host_view(obj):
    """A numpy view of the caller's object when it is host memory Python can
    see (for the overlap check), else None (device memory never overlaps
    host copies; the library checks the pointers it receives)."""
    if isinstance(obj, nd):
        return obj
    if isinstance(obj, Buffer):
        return None if obj._closed or obj._dev != -1 else obj._host_array()
    try:
        if getattr(obj, "__cuda_array_interface__", None) is not None:
            return None
    except Exception:
        return None
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        try:
            return np.from_dlpack(obj) if obj.__dlpack_device__()[0] == _interop.DL_CPU else None
        except Exception:
            return None
    try:
        return np.asarray(obj)
    except Exception:
        return None


def overlaps(fn, items):
    """Overlap rules of the header for host arrays the library cannot see
    directly (Python copied them).

    items: (name, caller's object, what C gets, written, aliases).  A written
    array may be the very same array as an input named in its aliases; any
    other overlap fails.  When C gets every argument itself (no numpy
    conversion or copy), the library's own check covers everything.
    """
    for _, obj, t, _, _ in items:
        if obj is not None and t is not obj and isinstance(t, nd):
            break
    else:
        return
    arrays = []
    for name, obj, _, written, aliases in items:
        if obj is None:
            continue
        arr = _host_view(obj)
        if arr is not None:
            arrays.append((name, arr, written, aliases))
    for i, (name, arr, written, aliases) in enumerate(arrays):
        if not written or arr.size == 0:
            continue
        for j, (other, oarr, _, _) in enumerate(arrays):
            if i == j or oarr.size == 0:
                continue
            try:
                shared = np.shares_memory(arr, oarr, max_work=1 << 16)
            except np.exceptions.TooHardError if hasattr(np, "exceptions") else Exception:
                shared = np.may_share_memory(arr, oarr)
            if not shared:
                continue
            if other in aliases and _same_view(arr, oarr):
                continue
            if other in aliases:
                raise InvalidArgumentError(
                    f"{fn}: {name} partially overlaps {other} (only the exact same array is allowed)"
                )
            raise InvalidArgumentError(f"{fn}: {name} must not overlap {other}")


# --- errors -------------------------------------------------------------------------


def error_for(status, message):
    cls = ERRORS.get(status, Error)
    return cls(message, status)


# --- contexts ---------------------------------------------------------------------------

_BACKENDS = {"cpu": Backend.CPU, "cuda": Backend.CUDA, "auto": Backend.AUTO}


def _parse_backend(backend, device):
    """(Backend, device or None) from Context's arguments."""
    if isinstance(backend, Backend):
        return backend, device
    if not isinstance(backend, str):
        raise ArgumentTypeError(
            f"Context: backend must be 'cpu', 'cuda', 'cuda:N', 'auto' or a Backend, got {backend!r} "
            "(the thread count is the keyword argument threads=)"
        )
    text = backend.strip().lower()
    if text.startswith("cuda:"):
        try:
            index = int(text[5:])
        except ValueError:
            raise InvalidArgumentError(f"Context: bad CUDA device in {backend!r}") from None
        if device is not None and device != index:
            raise InvalidArgumentError(f"Context: backend {backend!r} and device={device} disagree")
        return Backend.CUDA, index
    try:
        return _BACKENDS[text], device
    except KeyError:
        raise InvalidArgumentError(f"Context: backend must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {backend!r}") from None


def _index(value, what):
    if isinstance(value, bool) or not (isinstance(value, int) or hasattr(value, "__index__")):
        raise ArgumentTypeError(f"{what} must be an int, got {type(value).__name__}")
    return int(value.__index__())


class Context:
    """Backend, device, CPU thread count and last error message for kernel calls.

    Context(backend="cpu", device=None, *, threads=0):
      backend  "cpu", "cuda", "cuda:N" (device N), "auto" (CUDA device 0 when
               usable, else the CPU) or a Backend;
      device   the CUDA device for backend "cuda" (default 0);
      threads  CPU threads a kernel may use (0: one per online CPU); results
               never depend on it.
    A CUDA context that cannot be made (no backend library, driver or device)
    raises BackendUnavailableError saying what is missing.  A context may be
    used by several threads at once: on the CPU, one call at a time uses its
    worker threads and the others run on their own thread (same results);
    on CUDA, calls take turns on its stream.  Kernels called without ctx= use
    the calling thread's default (CPU) context.  Use it as a context manager
    or call close(), which waits for calls in other threads to return (calls
    made after it raise InvalidArgumentError); the handle is also freed when
    the object is garbage-collected.
    """

    def __init__(self, backend="cpu", device=None, *, threads=0):
        self._ptr = None
        self._addr = 0  # the handle's address for the fast path: 0 when closed or CUDA
        self._device = -1
        self._cuda = False
        backend, device = _parse_backend(backend, device)
        threads = _index(threads, "Context: threads")
        if threads < 0:
            raise InvalidArgumentError(f"Context: threads must be >= 0, got {threads}")
        if device is not None:
            device = _index(device, "Context: device")
            if backend is not Backend.CUDA:
                raise InvalidArgumentError(f"Context: device= needs backend 'cuda', got {backend.name.lower()!r}")
            if device < 0:
                raise InvalidArgumentError(f"Context: device must be >= 0, got {device}")
            if threads:
                raise InvalidArgumentError("Context: threads= cannot be combined with device= (CUDA kernels do not "
                                           "use CPU threads)")
            ptr = _capi.context_create_cuda(device)
        else:
            ptr = _capi.context_create(backend, threads)
        self._ptr = ptr
        # Frees the handle exactly once: on close(), on garbage collection or at exit.
        self._finalizer = weakref.finalize(self, lib.kb_context_destroy, ptr)
        self._device = lib.kb_context_device(ptr)
        self._cuda = self._device >= 0
        self._addr = 0 if self._cuda else int(ffi.cast("uintptr_t", ptr))

    def close(self):
        """Frees the context; calling it again does nothing.  Buffers made on
        it stay valid (their operations then need ctx=)."""
        if self._ptr is not None:
            self._addr = 0
            self._ptr = None
            self._finalizer()

    @property
    def closed(self):
        return self._ptr is None

    def _handle(self):
        if self._ptr is None:
            closed("Context")
        return self._ptr

    @property
    def backend(self):
        """The Backend the context runs on (never AUTO)."""
        return Backend(lib.kb_context_backend(self._handle()))

    @property
    def device(self):
        """The CUDA device of the context; None for a CPU context."""
        self._handle()
        return self._device if self._cuda else None

    @property
    def is_cuda(self):
        return self._cuda

    @property
    def threads(self):
        """Number of CPU threads kernels on this context may use."""
        return lib.kb_context_num_threads(self._handle())

    @property
    def last_error(self):
        """Message of the calling thread's last failed call on this context ("" after
        a success); threads sharing a context each see their own."""
        return ffi.string(lib.kb_context_last_error(self._handle())).decode("utf-8", "replace")

    def synchronize(self):
        """Waits for the work queued on the context's CUDA stream (kernels
        already wait before returning); nothing on a CPU context."""
        _capi.context_synchronize(self._handle())

    def __enter__(self):
        self._handle()
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self._ptr is None:
            return "<kernelbridge.Context closed>"
        if self._cuda:
            return f"<kernelbridge.Context backend=cuda device={self._device}>"
        return f"<kernelbridge.Context backend=cpu threads={self.threads}>"


def closed(fn):
    raise InvalidArgumentError(f"{fn}: the context is closed")


# Per-thread default contexts: a Context may be shared by threads, but with
# one of its own per thread (one worker thread each, as a NULL context in C)
# each caller keeps its own core busy.  Freed with the thread.
tls = threading.local()


def default_context():
    """The calling thread's default Context (CPU; created on first use)."""
    ctx = getattr(tls, "ctx", None)
    if ctx is None or ctx.closed:
        ctx = Context()
        tls.ctx = ctx
    return ctx


def default_ptr():
    return default_context()._ptr


# --- the fast path ---------------------------------------------------------------------

# kernelbridge._fastcall (bindings/python/src/fastcall.c) runs the common case
# of a kernel call in C: numpy arrays, C-contiguous and aligned, of the
# kernel's dtypes, on a CPU context.  It returns SLOW for anything else, and
# the generated wrapper goes on in Python.  Without the extension every call
# takes the Python path (same results, more overhead).
try:
    from . import _fastcall
except ImportError:  # pragma: no cover (the wheel always has it)
    _fastcall = None

if _fastcall is not None:
    SLOW = _fastcall.SLOW
    # KB_PYTHON_FASTCALL=0: every call takes the Python path (for comparing the two).
    _fastcall.set_enabled(os.environ.get("KB_PYTHON_FASTCALL", "1") != "0")
else:
    SLOW = object()


def always_slow(*args):
    """The fast path of a kernel without one: every call takes the Python path."""
    return SLOW


def fast_dtypes(rows):
    """Tells the fast path the numpy dtypes of each dtype kind of its specs
    (rows in the specs' kind order, generated in _kernels; the first of a row
    is a new array's dtype).  BF16 is None without ml_dtypes."""
    if _fastcall is not None:
        _fastcall.setup(tls, tuple(tuple(d for d in row if d is not None) for row in rows))


def fast(key, spec):
    """The fast path of one kernel: key names its shim in _native (the C
    function and its parameter types, so a stale build finds none), spec is
    its contract in fastcall.c's terms.  A function returning SLOW when
    there is no extension or no shim."""
    if _fastcall is None:
        return always_slow
    shim = lib.kbpy_fast_shim(key.encode())
    if not shim:
        return always_slow
    return _fastcall.Kernel(shim, spec)


# What a generated Python path needs to know of the kernel it runs for: the
# public name (in messages), the C function, the kind, cffi array type and
# new-array dtype of the tensors whose dtype differs between float32 and
# 16-bit variants, and (float32 kernels) dtype name -> the 16-bit function.
Variant = collections.namedtuple("Variant", "name c kind array dtype half")


def fast_enabled(flag):
    """Turns the fast path on or off for the whole process (for tests that
    compare it with the Python path); returns the previous setting."""
    if _fastcall is None:
        return False
    return _fastcall.set_enabled(flag)


def fast_calls():
    """Kernel calls completed on the fast path so far (tests)."""
    return 0 if _fastcall is None else _fastcall.calls()


# --- buffers ---------------------------------------------------------------------------


class _Memory:
    """One kb_buffer.  Freed (kb_buffer_destroy) when the last Buffer or numpy
    view using it lets go of it, or at exit."""

    __slots__ = ("handle", "address", "ptr", "nbytes", "dev", "finalizer", "__weakref__")

    def __init__(self, handle):
        self.handle = handle
        self.finalizer = weakref.finalize(self, lib.kb_buffer_destroy, handle)
        self.address = _capi.buffer_data(handle)
        self.ptr = ffi.cast("void *", self.address)
        self.nbytes = _capi.buffer_size(handle)
        self.dev = _capi.buffer_device(handle)


class _HostView:
    """The owner numpy sees behind np.asarray(host_buffer): keeps the memory alive."""

    __slots__ = ("__array_interface__", "memory")

    def __init__(self, memory, shape, dtype):
        self.memory = memory
        self.__array_interface__ = {
            "shape": shape,
            "typestr": dtype.str,
            "descr": dtype.descr,
            "data": (memory.address, False),
            "strides": None,
            "version": 3,
        }


def _shape_tuple(shape, what):
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(_index(d, what) for d in shape)
    except TypeError:
        raise ArgumentTypeError(f"{what} must be an int or a sequence of ints, got {type(shape).__name__}") from None
    if any(d < 0 for d in shape):
        raise InvalidArgumentError(f"{what} must not be negative, got {shape}")
    return shape


def _dtype(dtype, what):
    try:
        dtype = np.dtype(dtype)
    except TypeError as e:
        raise ArgumentTypeError(f"{what}: {e}") from None
    if dtype.hasobject or dtype.itemsize == 0:
        raise ArgumentTypeError(f"{what}: a Buffer holds plain numbers, not {dtype}")
    return dtype


def _ctx_ptr(ctx, what):
    if ctx is None:
        return default_ptr()
    if not isinstance(ctx, Context):
        raise ArgumentTypeError(f"{what}: ctx must be a kernelbridge.Context or None, got {type(ctx).__name__}")
    if ctx._ptr is None:
        closed(what)
    return ctx._ptr


class Buffer:
    """A dense row-major array in memory kernelbridge kernels can use.

    Buffer(ctx, shape, dtype=numpy.float32) allocates it, uninitialised
    (also Buffer.empty, Buffer.zeros, Buffer.from_numpy): device memory when
    ctx is a CUDA context, 64-byte aligned host memory for a CPU context or
    None (the calling thread's default context).  Kernels take Buffers
    wherever they take arrays, without copies, and return new outputs as
    Buffers on the call's context when an argument is one.

    Data moves only when asked: numpy() and download() copy to the host,
    upload() and from_numpy() from it; offsets and sizes of these are in
    bytes.  A device Buffer exposes __cuda_array_interface__ (version 3), so
    CuPy, PyTorch or Numba can use it without a copy; numpy.asarray() of a
    host Buffer is a view (no copy); numpy.asarray() of a device Buffer
    raises TypeError.

    Operations use ctx= when given, else the context the Buffer was made on
    (a host Buffer made with ctx=None uses the calling thread's default
    context).  close() (or leaving a with block) frees the memory once no
    view (reshape(), view(), numpy view) uses it any more; a Buffer exported
    through __cuda_array_interface__ is freed when it is garbage-collected,
    since the consumer holds the Buffer object.
    """

    def __init__(self, ctx, shape, dtype=np.float32):
        shape = _shape_tuple(shape, "Buffer: shape")
        dtype = _dtype(dtype, "Buffer")
        nbytes = dtype.itemsize
        for d in shape:
            nbytes *= d
        if nbytes >= 1 << 63:
            raise error_for(Status.OUT_OF_MEMORY, f"Buffer: {shape} x {dtype} is {nbytes} bytes")
        ctxp = _ctx_ptr(ctx, "Buffer")
        memory = _Memory(_capi.buffer_create(ctxp, nbytes))
        self._init(memory, shape, dtype, ctx)

    def _init(self, memory, shape, dtype, ctx):
        self._memory = memory
        self._closed = False
        self._exported = False
        self._ctx = ctx
        self.shape = shape
        self.dtype = dtype
        size = 1
        for d in shape:
            size *= d
        self.size = size
        self._dev = memory.dev
        self.ptr = memory.ptr
        self.address = memory.address
        self.readonly = False

    @classmethod
    def empty(cls, ctx, shape, dtype=np.float32):
        """A new Buffer, contents undefined."""
        return cls(ctx, shape, dtype)

    @classmethod
    def zeros(cls, ctx, shape, dtype=np.float32):
        """A new Buffer of zero bytes."""
        buf = cls(ctx, shape, dtype)
        buf.fill(0)
        return buf

    @classmethod
    def from_numpy(cls, ctx, array):
        """A new Buffer on ctx holding a copy of a host array (its shape and dtype)."""
        if isinstance(array, Buffer) or getattr(array, "__cuda_array_interface__", None) is not None:
            raise ArgumentTypeError("Buffer.from_numpy: array must be host memory (numpy array or array-like); "
                                    "use Buffer.copy() for a Buffer")
        if not isinstance(array, nd) and hasattr(array, "__dlpack__") and hasattr(array, "__dlpack_device__"):
            if array.__dlpack_device__()[0] != _interop.DL_CPU:
                raise ArgumentTypeError("Buffer.from_numpy: array is not host memory (DLPack device "
                                        f"{tuple(array.__dlpack_device__())})")
            array = np.from_dlpack(array)
        arr = np.ascontiguousarray(array)
        buf = cls(ctx, arr.shape, arr.dtype)
        buf.upload(arr)
        return buf

    # --- properties ---

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def device(self):
        """The CUDA device holding the memory; None for host memory."""
        return self._dev if self._dev >= 0 else None

    @property
    def is_cuda(self):
        return self._dev >= 0

    @property
    def context(self):
        """The Context the Buffer was made on (None: the default context)."""
        return self._ctx

    @property
    def closed(self):
        return self._closed

    # --- protocols ---

    @property
    def __cuda_array_interface__(self):
        if self._dev < 0:
            raise AttributeError("a host Buffer has no __cuda_array_interface__ (numpy.asarray(buffer) is a view)")
        self._check_open("__cuda_array_interface__")
        self._exported = True
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.address, False),
            "strides": None,
            "version": 3,
            # Kernels and Buffer operations wait for their work before
            # returning: nothing is pending on any stream.
            "stream": None,
        }

    def __array__(self, dtype=None, copy=None):
        if self._dev >= 0:
            raise TypeError(
                f"Buffer: memory of CUDA device {self._dev} is never copied to the host implicitly; call .numpy() "
                "for a host copy"
            )
        arr = self._host_array()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError("Buffer: a dtype conversion needs a copy")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def _host_array(self):
        """A numpy view of a host Buffer's memory (keeps the memory alive)."""
        self._check_open("numpy view")
        if self.nbytes == 0:
            return np.empty(self.shape, self.dtype)
        return np.asarray(_HostView(self._memory, self.shape, self.dtype))

    # --- data movement ---

    def _check_open(self, what):
        if self._closed:
            raise InvalidArgumentError(f"Buffer.{what}: the Buffer is closed")

    def _held(self, what):
        """The memory, for one operation: the caller keeps it in a local, so
        it outlives the C call even if another thread closes the Buffer
        meanwhile (close() only drops the Buffer's own reference)."""
        memory = self._memory  # one read: close() may run in another thread
        if self._closed or memory is None:
            raise InvalidArgumentError(f"Buffer.{what}: the Buffer is closed")
        return memory

    def _pin(self, fn, name):
        """For one kernel call: a copy of this Buffer object holding its
        memory (the call uses the copy's pointer), so that the memory outlives
        the call even if another thread closes the Buffer meanwhile."""
        pin = Buffer.__new__(Buffer)
        pin.__dict__.update(self.__dict__)  # one step under the GIL: a consistent copy
        if pin._closed or pin._memory is None:
            raise InvalidArgumentError(f"{fn}: {name} is a closed Buffer")
        return pin

    def _op_ctx(self, ctx, what):
        """The kb_context * for an operation on this buffer."""
        self._check_open(what)
        if ctx is not None:
            ptr = _ctx_ptr(ctx, f"Buffer.{what}")
            if self._dev >= 0 and ctx._device != self._dev:
                raise InvalidArgumentError(
                    f"Buffer.{what}: the Buffer is memory of CUDA device {self._dev} but ctx is "
                    f"{_context_words(ctx._device)}"
                )
            return ptr
        if self._ctx is not None and self._ctx._ptr is not None:
            return self._ctx._ptr
        if self._dev < 0:
            return default_ptr()
        raise InvalidArgumentError(
            f"Buffer.{what}: the context this Buffer was made on is closed; pass ctx=<a CUDA Context on "
            f"device {self._dev}>"
        )

    def _range(self, what, offset, nbytes, name="offset", limit=None):
        limit = self.nbytes if limit is None else limit
        offset = _index(offset, f"Buffer.{what}: {name}")
        nbytes = _index(nbytes, f"Buffer.{what}: nbytes")
        if offset < 0 or nbytes < 0 or offset + nbytes > limit:
            raise InvalidArgumentError(
                f"Buffer.{what}: {name} {offset} with {nbytes} bytes is outside the buffer ({limit} bytes)"
            )
        return offset, nbytes

    def upload(self, src, *, offset=0, ctx=None):
        """Copies the bytes of a host array (numpy array of this Buffer's dtype,
        or bytes-like) into the Buffer, starting at byte offset."""
        self._check_open("upload")
        if isinstance(src, Buffer) or getattr(src, "__cuda_array_interface__", None) is not None:
            raise ArgumentTypeError("Buffer.upload: src must be host memory; use copy_from() for a Buffer")
        if isinstance(src, nd):
            if src.dtype != self.dtype:
                raise ArgumentTypeError(
                    f"Buffer.upload: src has dtype {src.dtype}, the Buffer {self.dtype} (use .view() to reinterpret)"
                )
            src = np.ascontiguousarray(src)
            nbytes = src.nbytes
        else:
            try:
                with memoryview(src) as mv:
                    nbytes = mv.nbytes
                    contiguous = mv.c_contiguous
            except TypeError:
                raise ArgumentTypeError(f"Buffer.upload: src must be a numpy array or bytes-like, got {type(src).__name__}") from None
            if not contiguous:
                src = np.ascontiguousarray(src)
        offset, nbytes = self._range("upload", offset, nbytes)
        ctxp = self._op_ctx(ctx, "upload")
        memory = self._held("upload")
        if nbytes:
            _capi.buffer_upload(ctxp, memory.handle, offset, nbytes, src)

    def download(self, out, *, offset=0, ctx=None):
        """Copies len(out) bytes of the Buffer, starting at byte offset, into
        out (a writable C-contiguous numpy array of this Buffer's dtype, or a
        writable bytes-like object); returns out."""
        self._check_open("download")
        if isinstance(out, nd):
            if out.dtype != self.dtype:
                raise ArgumentTypeError(f"Buffer.download: out has dtype {out.dtype}, the Buffer {self.dtype}")
            if not (out.flags.c_contiguous and out.flags.writeable):
                raise InvalidArgumentError("Buffer.download: out must be a writable C-contiguous array")
            nbytes = out.nbytes
        else:
            try:
                with memoryview(out) as mv:
                    nbytes = mv.nbytes
                    if mv.readonly or not mv.c_contiguous:
                        raise InvalidArgumentError("Buffer.download: out must be writable and contiguous")
            except TypeError:
                raise ArgumentTypeError(f"Buffer.download: out must be a numpy array or bytes-like, got {type(out).__name__}") from None
        offset, nbytes = self._range("download", offset, nbytes)
        ctxp = self._op_ctx(ctx, "download")
        memory = self._held("download")
        if nbytes:
            _capi.buffer_download(ctxp, memory.handle, offset, nbytes, out)
        return out

    def numpy(self, *, ctx=None):
        """A new numpy array holding a copy of the Buffer."""
        arr = np.empty(self.shape, self.dtype)
        return self.download(arr, ctx=ctx)

    def fill(self, value, *, offset=0, nbytes=None, ctx=None):
        """Sets nbytes bytes (default: to the end) from byte offset to the byte
        value (0..255), as memset: fill(0) zeroes the Buffer."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ArgumentTypeError(f"Buffer.fill: value is a byte (an int in [0, 255]), got {type(value).__name__}")
        if not 0 <= value <= 255:
            raise InvalidArgumentError(f"Buffer.fill: value must be in [0, 255], got {value}")
        self._check_open("fill")
        offset = _index(offset, "Buffer.fill: offset")
        if nbytes is None:
            nbytes = max(self.nbytes - offset, 0)
        offset, nbytes = self._range("fill", offset, nbytes)
        ctxp = self._op_ctx(ctx, "fill")
        memory = self._held("fill")
        if nbytes:
            _capi.buffer_fill(ctxp, memory.handle, offset, nbytes, int(value))

    def copy_from(self, src, *, offset=0, src_offset=0, nbytes=None, ctx=None):
        """Copies nbytes bytes (default: the rest of src) of Buffer src, from
        byte src_offset, into this Buffer at byte offset.  Both must be of
        the same kind (host, or the same CUDA device); the ranges must not
        overlap unless they are identical."""
        if not isinstance(src, Buffer):
            raise ArgumentTypeError(f"Buffer.copy_from: src must be a Buffer, got {type(src).__name__} "
                                    "(upload() copies host arrays)")
        self._check_open("copy_from")
        if src._closed:
            raise InvalidArgumentError("Buffer.copy_from: src is a closed Buffer")
        if src._dev != self._dev:
            raise InvalidArgumentError(
                f"Buffer.copy_from: src is {'host memory' if src._dev < 0 else f'memory of CUDA device {src._dev}'}, "
                f"this Buffer {'host memory' if self._dev < 0 else f'memory of CUDA device {self._dev}'}; "
                "copies between kinds go through numpy() and upload()"
            )
        src_offset = _index(src_offset, "Buffer.copy_from: src_offset")
        if nbytes is None:
            nbytes = max(src.nbytes - src_offset, 0)
        src_offset, nbytes = src._range("copy_from", src_offset, nbytes, "src_offset")
        offset, nbytes = self._range("copy_from", offset, nbytes)
        ctxp = self._op_ctx(ctx, "copy_from")
        memory, src_memory = self._held("copy_from"), src._held("copy_from")
        if nbytes:
            _capi.buffer_copy(ctxp, memory.handle, offset, src_memory.handle, src_offset, nbytes)

    def copy(self, *, ctx=None):
        """A new Buffer (same kind, context, shape and dtype) holding a copy."""
        self._check_open("copy")
        if ctx is None and self._ctx is not None and self._ctx._ptr is None and self._dev >= 0:
            self._op_ctx(None, "copy")  # raises: the context is closed
        new = Buffer(ctx if ctx is not None else self._ctx, self.shape, self.dtype)
        new.copy_from(self, ctx=ctx)
        return new

    # --- views ---

    def _view(self, shape, dtype):
        self._check_open("view")
        v = Buffer.__new__(Buffer)
        v._init(self._memory, shape, dtype, self._ctx)
        v._exported = self._exported
        return v

    def reshape(self, *shape):
        """A Buffer of another shape with the same memory (no copy); one
        dimension may be -1 (inferred)."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        try:
            shape = tuple(_index(d, "Buffer.reshape: shape") for d in shape)
        except TypeError:
            raise ArgumentTypeError("Buffer.reshape: shape must be ints") from None
        if shape.count(-1) > 1 or any(d < -1 for d in shape):
            raise InvalidArgumentError(f"Buffer.reshape: bad shape {shape}")
        if -1 in shape:
            known = 1
            for d in shape:
                if d != -1:
                    known *= d
            if known == 0 or self.size % known:
                raise ShapeMismatchError(f"Buffer.reshape: cannot reshape {self.shape} into {shape}")
            shape = tuple(self.size // known if d == -1 else d for d in shape)
        size = 1
        for d in shape:
            size *= d
        if size != self.size:
            raise ShapeMismatchError(f"Buffer.reshape: cannot reshape {self.shape} ({self.size} elements) into {shape}")
        return self._view(shape, self.dtype)

    def view(self, dtype):
        """The same memory as another dtype of the same size (e.g. float16 as
        uint16 bits), no copy."""
        dtype = _dtype(dtype, "Buffer.view")
        if dtype.itemsize != self.dtype.itemsize:
            raise InvalidArgumentError(f"Buffer.view: {dtype} has {dtype.itemsize} bytes per element, "
                                       f"{self.dtype} {self.dtype.itemsize}")
        return self._view(self.shape, dtype)

    # --- lifetime ---

    def close(self):
        """Releases the memory (see the class docs); calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        if not self._exported:
            self._memory = None

    def __enter__(self):
        self._check_open("__enter__")
        return self

    def __exit__(self, *exc):
        self.close()

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d Buffer")
        return self.shape[0]

    def __repr__(self):
        where = "host" if self._dev < 0 else f"cuda:{self._dev}"
        state = " closed" if self._closed else ""
        return f"<kernelbridge.Buffer shape={self.shape} dtype={self.dtype} {where}{state}>"
